"""Render a page's prose with its glued values in place, and read it for self-contradictions.

`tests/test_glued_prose.py` runs these rules over every page. A page's sentences are rendered
as the book shows them: each `{glue:text}` role replaced by its value, formatted as myst-nb
formats it (`make_notebooks.format_glued`), other roles reduced to their text, code cells and
directive options dropped. Glued values are kept marked (``\\x01value\\x02``) so a rule knows
which numbers the package computed; `plain()` removes the marks for messages.

Where the values come from, without running any page:
- the page's entry in `build/glue/` when it is fresh (its fingerprint matches the page and the
  package: `make notebooks`, or `tools/make_notebooks.py PAGE`, writes it);
- otherwise the values recorded in the committed Colab notebook (`scalebook.glued`), which
  `test_generated_notebook_is_up_to_date` keeps in step with the page, completed by a stale
  `build/glue/` entry for the names the notebook does not carry (worked solutions).
A sentence with a glue name found in neither is skipped (`unresolved`). With
SCALEBOOK_GLUED_PROSE_EXECUTE=1 every page is instead read at its current values
(`make_notebooks.glued_values`: the cache when fresh, otherwise the page is run once), so the
worked solutions' prose is checked too; `make notebooks` leaves the same cache behind.

The rules (each returns a message, or None):
- `times_rule`: "N times / Nx faster, larger, more, sooner..." with a glued N <= 1;
- `empty_list_rule`: a glued value that reads as an empty list ("", "none", "[]") in a sentence;
- `only_all_rule`: "only A, B" or "the field narrows" beside "none"/"no chip" for the rest;
- `percent_rule`: a glued share that reads "0%", "0.0%" or "-0%", or a negative share
  ("-3% of ...");
- `hidden_rule`: "hidden"/"hides" and a positive glued time called exposed in one sentence,
  unless the sentence says what part is hidden (partly, rest, remaining, beyond, except, but);
- `comparative_rule`: "a is larger/more/longer/higher than b" (or smaller/less/shorter/lower/
  fewer) with two glued numbers of one kind that say the opposite;
- `count_decimal_rule`: a glued count written with a decimal ("137.0 requests", "4.5 chips"): a
  glued number with a fractional part right before a count noun (requests, chips, GPUs, TPUs,
  layers, tokens, steps, heads, devices, nodes, sequences, hosts, microbatches), unless it is a
  mean ("average", "expected", "yields" just before; "on average" after) or a rate ("per ...",
  "a second" after).
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402

OPEN, CLOSE = "\x01", "\x02"
_G = re.compile(f"{OPEN}([^{CLOSE}]*){CLOSE}")
_CODE_OPEN = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")
_FENCE = re.compile(r"^(`{3,}|:{3,})\{?[\w:-]*\}?.*$")
_ROLE = make_notebooks._ROLE


@dataclass(frozen=True)
class Sentence:
    page: str
    text: str  # with glued values marked

    @property
    def plain(self) -> str:
        return plain(self.text)


def plain(text: str) -> str:
    return _G.sub(lambda m: m.group(1), text)


def glue_values(md: Path) -> dict[str, str]:
    """The page's glued values (see the module docstring), without executing it unless
    SCALEBOOK_GLUED_PROSE_EXECUTE=1."""
    if os.environ.get("SCALEBOOK_GLUED_PROSE_EXECUTE") == "1":
        return make_notebooks.glued_values(md)
    cache = ROOT / make_notebooks.CACHE / (md.parent.name + "-" + md.stem + ".json")
    cached = json.loads(cache.read_text()) if cache.exists() else {}
    if cached and cached.get("fingerprint") == make_notebooks._fingerprint(md):
        return cached["values"]
    return {**cached.get("values", {}), **make_notebooks.committed_glued(md)}


def render(md_text: str, values: dict[str, str], page: str = "") -> tuple[list[Sentence], set[str]]:
    """The page's sentences with glued values marked, and the glue names that had no value."""
    missing: set[str] = set()
    paragraphs, current, in_code = [], [], None
    for line in md_text.splitlines():
        s = line.strip()
        if in_code:
            if s == in_code:
                in_code = None
            continue
        m = _CODE_OPEN.match(s)
        if m:
            in_code = m.group(1)
            continue
        if s.startswith(("---", "#")) or _FENCE.match(s) or re.match(r"^:[\w-]+:", s) or re.match(r"^\([\w.-]+\)=", s):
            paragraphs.append(" ".join(current))
            current = []
            continue
        s = re.sub(r"^(>\s*)+", "", s)
        if not s or s.startswith("|"):
            paragraphs.append(" ".join(current))
            current = []
            continue
        current.append(re.sub(r"^([-*]|\d+\.)\s+", "", s))
    paragraphs.append(" ".join(current))

    def role(m: re.Match) -> str:
        name, body = m.group("role"), m.group("body")
        if name.startswith("glue"):
            key, _, spec = body.partition(":")
            if key not in values:
                missing.add(key)
                return OPEN + "\x03" + CLOSE
            return OPEN + make_notebooks.format_glued(values[key], spec) + CLOSE
        if name.startswith("cite"):
            return "(ref)"
        label = re.match(r"^(.*?)\s*<[^>]*>$", body)
        return label.group(1) if label else body

    out = []
    for p in paragraphs:
        if not p:
            continue
        text = _ROLE.sub(role, p)
        text = re.sub(r"\*\*|(?<!\w)_|_(?!\w)|`", "", text)
        for sent in re.split(r"(?<=[.!?;:])\s+(?=[A-Z(\x01])", text):
            if OPEN in sent and "\x03" not in sent:
                out.append(Sentence(page, sent))
    return out, missing


# ------------------------------------------------------------------ values

_UNITS = {
    "s": ("time", 1), "ms": ("time", 1e-3), "us": ("time", 1e-6), "µs": ("time", 1e-6), "ns": ("time", 1e-9),
    "min": ("time", 60), "h": ("time", 3600), "hours": ("time", 3600), "days": ("time", 86400),
    "B": ("bytes", 1), "kB": ("bytes", 1e3), "MB": ("bytes", 1e6), "GB": ("bytes", 1e9), "TB": ("bytes", 1e12),
    "KiB": ("bytes", 2**10), "MiB": ("bytes", 2**20), "GiB": ("bytes", 2**30),
    "%": ("percent", 1),
}


def number(text: str) -> float | None:
    """The number a glued text starts with ('1,024' -> 1024.0, '-3%' -> -3.0); None if none."""
    m = re.match(r"^\s*([-−+]?\d[\d,]*(?:\.\d+)?)", text)
    if not m:
        return None
    return float(m.group(1).replace(",", "").replace("−", "-"))


def quantity(glued: str, after: str) -> tuple[str, float] | None:
    """(kind, value in base units) of a glued number, reading its unit from the glued text or
    the words right after it ('4.2 MB', or '4.2' then ' MB'); kind '' for a bare number."""
    v = number(glued)
    if v is None:
        return None
    tail = glued[re.match(r"^\s*[-−+]?\d[\d,]*(?:\.\d+)?", glued).end():].strip() or after.lstrip()[:8]
    m = re.match(r"^(µs|us|ns|ms|min|hours|days|h|s|KiB|MiB|GiB|kB|MB|GB|TB|B|%)(?![\w/])", tail)
    if m:
        kind, scale = _UNITS[m.group(1)]
        return kind, v * scale
    if re.match(r"^(TFLOP|GFLOP|PFLOP|FLOP|tokens|GB/s|TB/s|x\b|×)", tail):
        return None  # rates and ratios: compared only through their own words
    return "", v


# ------------------------------------------------------------------ rules

_BIGGER = (r"(?:faster|larger|bigger|more|sooner|higher|longer|greater|cheaper|slower|costlier|heavier|wider"
           r"|less|smaller|fewer|lower|shorter)")


def times_rule(s: Sentence) -> str | None:
    for m in re.finditer(f"{OPEN}([^{CLOSE}]*){CLOSE}\\s*(?:x|×|times)\\b\\s+(?:as\\s+\\w+|{_BIGGER})", s.text):
        v = number(m.group(1))
        if v is not None and v <= 1:
            return f"'{plain(m.group(0))}' with a factor of {m.group(1)} (at most 1)"
    for m in re.finditer(f"{OPEN}([^{CLOSE}]*?)\\s*[x×]{CLOSE}\\s+{_BIGGER}", s.text):
        v = number(m.group(1))
        if v is not None and v <= 1:
            return f"'{plain(m.group(0))}' with a factor of {m.group(1)} (at most 1)"
    return None


_EMPTY = {"", "[]", "()", "set()"}
_NONE = {"none", "None", "nothing", "no chip", "no chips"}


def empty_list_rule(s: Sentence) -> str | None:
    """An empty glued list; or 'none' glued where a list of names belongs ('for none', 'only none',
    'A and none'); 'remat none' (a policy's name) is fine."""
    for m in _G.finditer(s.text):
        g = m.group(1).strip()
        before = plain(s.text[max(0, m.start() - 12):m.start()])
        if g in _EMPTY or (g in _NONE and re.search(r"(\b(for|only|of|and|are|include|includes)|[,:])\s*$", before)):
            return f"a glued value reads as an empty list: {m.group(1)!r}"
    return None


def only_all_rule(s: Sentence) -> str | None:
    t = plain(s.text)
    if re.search(r"\b(only|the field narrows)\b", t, re.I) and re.search(r"\bfor (none|no chip|nothing)\b", t, re.I):
        return "'only'/'the field narrows' while the rest is 'none'"
    return None


_SHARE = r"(?:share|fraction|MFU|HFU|utili[sz]ation|efficiency|busy|idle|of the|of its|of a|of each|of every|of HBM|of peak)"


def percent_rule(s: Sentence) -> str | None:
    for m in _G.finditer(s.text):
        g = m.group(1).strip()
        after = s.text[m.end():m.end() + 40]
        is_pct = g.endswith("%") or after.startswith("%")
        if not is_pct:
            continue
        v = number(g)
        if v is None:
            continue
        if re.fullmatch(r"[-−]?0(\.0+)?%?", g):
            return f"a percentage that reads '{g.rstrip('%')}%'"
        if v < 0 and re.match(r"^%?\s*" + _BIGGER + r"\b", after):
            return f"a negative change called '{plain(after).lstrip('%').split()[0]}': '{g}'"
        before = plain(s.text[max(0, m.start() - 40):m.start()])
        if v < 0 and (re.match(r"^%?\s*" + _SHARE, after) or re.search(_SHARE + r"\W*(is|of|at|reaches)?\s*$", before)):
            return f"a negative share: '{g}'"
    return None


_QUALIFIED = r"\b(part(ly|ially)?|rest|remaining|remainder|beyond|except|but|not|cannot|can't|only|less|more than|of the|until|unless|if|when|would|could|else|left|instead)\b"


def hidden_rule(s: Sentence) -> str | None:
    t = s.text
    if not re.search(r"\b(hidden|hides|hide)\b", plain(t), re.I):
        return None
    for m in _G.finditer(t):
        q = quantity(m.group(1), t[m.end():m.end() + 8])
        if not q or q[0] != "time" or q[1] <= 0:
            continue
        window = plain(t[max(0, m.start() - 30):m.end() + 30])
        if re.search(r"\bexpos", window, re.I) and not re.search(_QUALIFIED, plain(t), re.I):
            return f"'hidden' beside a positive exposed time ({m.group(1)})"
    return None


_MORE = r"(?:larger|bigger|more|higher|longer|greater|above|heavier|wider)"
_LESS = r"(?:smaller|less|lower|shorter|fewer|below|lighter|narrower)"


def comparative_rule(s: Sentence) -> str | None:
    """'a ... is larger than ... b' with a and b glued, of one kind, at most a few words apart."""
    t = s.text
    pat = re.compile(f"{OPEN}([^{CLOSE}]*){CLOSE}([^{OPEN}.;:]{{0,40}}?)\\b({_MORE}|{_LESS})\\s+than\\b([^{OPEN}.;:]{{0,25}}?){OPEN}([^{CLOSE}]*){CLOSE}")
    for m in pat.finditer(t):
        if re.search(r"\b(times|x|×|%|per ?cent|factor)\b|\d", m.group(2)) or re.search(r"\b(times|x|×)\b", m.group(4)):
            continue  # "2x more than", "30% less than": a ratio, not the number itself
        a = quantity(m.group(1), t[m.end(1) + 1:m.end(1) + 9])
        b = quantity(m.group(5), t[m.end(5) + 1:m.end(5) + 9])
        if not a or not b or a[0] != b[0]:
            continue
        more = re.fullmatch(_MORE, m.group(3)) is not None
        if (more and a[1] < b[1]) or (not more and a[1] > b[1]):
            return f"'{plain(m.group(0))}' but {m.group(1)} {'<' if more else '>'} {m.group(5)}"
    return None


# Not tokens: a critical batch or an expected number of accepted tokens is a real number of tokens.
_COUNT_NOUN = (r"(?:requests?|chips?|GPUs?|TPUs?|layers?|steps?|heads?|devices?|nodes?|sequences?"
               r"|hosts?|microbatch(?:es)?)")


def count_decimal_rule(s: Sentence) -> str | None:
    """A count printed with decimals: a glued '137.0' or '4.5' (or '4.0 chips' glued whole)
    directly followed by a count noun. Counts are whole: round them (`units.fmt_count`,
    `:.0f`, `:,`). A mean ('an average of 2.5 tokens', '5.3 nodes on average') or a rate
    ('6.5 requests per second') is not a count and passes."""
    if re.search(r"\bround(s|ed|ing)?\b|\bratio\b|\bspeedup\b", plain(s.text), re.I):
        return None  # an intermediate the sentence then rounds ('50.6 chips ... rounds up to 51'), or a speedup's terms
    pat = re.compile(f"{OPEN}\\s*([-−+]?\\d[\\d,]*\\.\\d+)\\s*(?:{CLOSE}\\s*({_COUNT_NOUN})\\b|({_COUNT_NOUN})\\b[^{CLOSE}]*{CLOSE})")
    for m in pat.finditer(s.text):
        before = plain(s.text[max(0, m.start() - 30):m.start()])
        after = plain(s.text[m.end():m.end() + 20])
        if (re.search(r"\b(average|mean|expected|expects?|yields?)\b", before, re.I)
                or re.match(r"\s*(per\b|/|an? (second|minute|hour|step|round)\b|each\b|on average\b|in expectation\b)", after, re.I)):
            continue  # a mean or a rate, not a count
        return f"a count written with a decimal: '{m.group(1)} {m.group(2) or m.group(3)}'"
    return None


RULES = (times_rule, empty_list_rule, only_all_rule, percent_rule, hidden_rule, comparative_rule,
         count_decimal_rule)


def problems(sentences: list[Sentence]) -> list[str]:
    out = []
    for s in sentences:
        for rule in RULES:
            msg = rule(s)
            if msg:
                out.append(f"{s.page}: {msg}\n    {s.plain[:300]}")
    return out
