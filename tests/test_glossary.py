"""Every term a chapter defines is in the glossary (book/glossary.md).

The rule for what counts as a definition, applied to the prose of `chapters/*.md` (code cells,
other fenced blocks, inline code and math removed first):

- A term is defined where the prose emphasises it: in bold (`**term**`) or in italics (`*term*`),
  as the chapters do on a term's first use ("the array is *replicated*") and in the bold leads
  of definition lists ("- **throughput**: output tokens per second per chip").
- Not definitions, and skipped:
  - run-in headings and stressed sentences: a span that ends in '.', ':' or '?' or contains a
    '?' ("**HBM.**", "**What to remember.**", "*what is the largest tensor-parallel degree ...?*");
  - spans built around a glued value (`{glue:text}`);
  - words stressed for emphasis, listed in STRESSED below with the reason.
- Every other span must name a glossary term: compared case-insensitively, without a leading
  "the", singular or plural, or through ALIASES (a chapter's inflection or short form of a term
  whose glossary entry has a fuller name).

A new emphasised term in a chapter therefore fails this test until it is added to the glossary
(or, if it is only stressed, to STRESSED).
"""
import re

import pytest

from notebook_tools import CHAPTERS, ROOT

GLOSSARY = ROOT / "book" / "glossary.md"

#: Emphasis that stresses a word rather than defining a term.
STRESSED = {
    # stressed function words and adverbs: "how long does *one* operation take", "it *is*"
    "one", "could", "does", "can", "is", "not", "just", "every", "twice", "why", "down",
    # stressed phrases: the contrast is in the surrounding sentence, the words are ordinary
    "sent", "in one direction", "per microbatch", "sequences", "shape", "batch", "stored", "used",
    "and of the batch", "only to axes with a wraparound", "one mesh axis", "egress of one gpu",
    # leads of lists of cases or findings, explained by the item itself
    "int8 × int8", "fp8 × fp8",
}

#: A chapter's form of a term -> the glossary term that defines it.
ALIASES = {
    "partial": "partial sum",
    "fuse": "fusion",
    "skewed": "skewed input",
    "auto": "auto axis",
    "explicit": "explicit axis",
    "total": "total parameters",
    "active": "active parameters",
    "bubble": "pipeline bubble",
    "cost": "cost per million tokens",
    "offline": "offline workload",
    "long-context": "long-context workload",
    "time to first token (ttft)": "time to first token",
    "computations": "hlo computation",
    "arguments": "argument bytes",
    "outputs": "output bytes",
    "aliased": "aliased bytes",
    "temporaries": "temporary bytes",
    "donated": "buffer donation",
    "donates": "buffer donation",
    "type": "axis type",
    "local": "local shape",
}

_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\s*(?:\{(?P<name>[\w:-]+)\})?(?P<rest>.*)$")
#: Fenced blocks whose content is not prose (code, math, raw output); other directives
#: (admonitions, exercises, solutions) hold prose and are read.
_NOT_PROSE = {None, "code-cell", "code-block", "code", "math", "raw", "eval-rst", "glue:figure", "glue:math"}
_EMPHASIS = re.compile(r"\*\*(?P<bold>[^*\n]+?)\*\*|(?<![*\w])\*(?!\*)(?P<italic>[^*\n]+?)\*(?![*\w])")


def _without_code_blocks(text: str) -> str:
    """Drop fenced blocks that are not prose, and the fence lines of those that are."""
    kept, skipping, open_fences = [], None, []
    for line in text.splitlines():
        stripped = line.strip()
        if skipping is not None:  # inside code: only its closing fence ends it
            if stripped and set(stripped) == {skipping[0]} and len(stripped) >= len(skipping):
                skipping = None
            continue
        m = _OPEN.match(stripped)
        if not m:
            kept.append(line)
            continue
        fence, name, rest = m.group("fence"), m.group("name"), m.group("rest").strip()
        bare = name is None and not rest
        if bare and open_fences and open_fences[-1][0] == fence[0] and len(fence) >= len(open_fences[-1]):
            open_fences.pop()  # closes a directive that holds prose
        elif name is None and fence[0] == ":":
            pass  # a colon line that closes nothing
        elif name in _NOT_PROSE:
            skipping = fence  # code cell, code block, math: skip to its closing fence
        else:
            open_fences.append(fence)  # admonition, exercise, ...: read what is inside
    return "\n".join(kept)


def prose(text: str) -> str:
    """The chapter's Markdown prose: code cells, code blocks and math removed (directives that
    hold prose, such as admonitions, kept), inline code removed; paragraphs joined onto one line
    so spans may cross line breaks."""
    text = _without_code_blocks(text)
    text = re.sub(r"\$\$.+?\$\$", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"(?<![\\$])\$[^$\n]+?\$", " ", text)
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def emphasised(text: str) -> list[str]:
    return [(m.group("bold") or m.group("italic")).strip() for m in _EMPHASIS.finditer(prose(text))]


def is_definition(span: str) -> bool:
    if not span or span.endswith((".", ":", "?")) or "?" in span or "{glue" in span:
        return False
    return span.lower() not in STRESSED


def glossary_terms() -> set[str]:
    """Term lines of the {glossary} block: unindented, non-blank lines other than options."""
    text = GLOSSARY.read_text(encoding="utf-8")
    block = re.search(r"^```\{glossary\}\n(.*?)^```\s*$", text, re.M | re.S)
    assert block, "book/glossary.md has no ```{glossary} block"
    return {line.strip().lower() for line in block.group(1).splitlines()
            if line.strip() and not line.startswith((" ", ":"))}


def normalise(span: str) -> list[str]:
    s = " ".join(span.lower().split())
    s = s[4:] if s.startswith("the ") else s
    s = ALIASES.get(s, s)
    forms = [s]
    if s.endswith("es"):
        forms.append(s[:-2])
    if s.endswith("s"):
        forms.append(s[:-1])
    return forms


def defined_terms() -> dict[str, set[str]]:
    """Each defined span -> the chapters (file names) it is emphasised in."""
    found: dict[str, set[str]] = {}
    for md in CHAPTERS:
        for span in emphasised(md.read_text(encoding="utf-8")):
            if is_definition(span):
                found.setdefault(span, set()).add(md.name)
    return found


def test_the_rule_finds_the_terms_it_should():
    sample = ("An operation is *memory-bound* when ... the array is *replicated*. **HBM.** Memory.\n\n"
              "- **throughput**: tokens per second\n\nHow long does *one* operation take? "
              "A worked question: *which strategy is best?*\n\n```{code-cell} ipython3\nx = 2 ** 3 * 4\n```\n"
              "Inline `a*b*c` and math $T^*$ and $B^*$ are not emphasis.")
    assert [s for s in emphasised(sample) if is_definition(s)] == ["memory-bound", "replicated", "throughput"]


def test_glossary_has_terms():
    assert len(glossary_terms()) >= 80


def test_every_term_the_chapters_define_is_in_the_glossary():
    terms = glossary_terms()
    found = defined_terms()
    assert len(found) >= 40, "the rule found suspiciously few definitions"
    missing = {span: sorted(where) for span, where in found.items()
               if not any(form in terms for form in normalise(span))}
    assert not missing, ("terms emphasised in the chapters but not in book/glossary.md (add them, or list "
                         f"a merely stressed word in STRESSED): {missing}")


@pytest.mark.parametrize("alias, term", sorted(ALIASES.items()))
def test_every_alias_points_at_a_glossary_term(alias, term):
    assert term in glossary_terms()


def test_stressed_words_are_still_used_as_emphasis():
    """STRESSED stays honest: an entry no chapter emphasises any more is removed."""
    used = {s.lower() for md in CHAPTERS for s in emphasised(md.read_text(encoding="utf-8"))}
    assert not STRESSED - used, sorted(STRESSED - used)


def test_no_term_is_defined_twice():
    """Sphinx warns (and the -W build stops) when two entries share a term."""
    text = GLOSSARY.read_text(encoding="utf-8")
    block = re.search(r"^```\{glossary\}\n(.*?)^```\s*$", text, re.M | re.S).group(1)
    terms = [line.strip() for line in block.splitlines() if line.strip() and not line.startswith((" ", ":"))]
    assert not {t for t in terms if terms.count(t) > 1}
