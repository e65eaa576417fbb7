"""Read scalebook's docstrings as the Markdown-flavoured text they are written in.

The package's docstrings follow Markdown habits: `code` in single backticks, indented blocks of
formulas or examples with no `::` before them, `bytes_` and `|Y|` in running text. reStructuredText
(which autodoc parses them as) reads those as references, block quotes and substitutions and
warns, which the book's build (`-W -n`) turns into errors. This extension rewrites each docstring
of a `scalebook` object before autodoc parses it; the docstrings themselves stay as they are:

- a Markdown code span becomes an inline literal (one with backticks inside becomes a `:code:` role
  with the backticks escaped);
- an indented block after a blank line, not already introduced by `::`, becomes a literal block;
- outside literals, `|` and a trailing `_` after a word are escaped (no substitutions, no link targets).

Loaded from `_config.yml` (`sphinx: local_extensions`).
"""
from __future__ import annotations

import re

_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_ROLE_BEFORE = re.compile(r":[\w:.+-]+:$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _escape_text(text: str) -> str:
    text = text.replace("|", r"\|")
    return re.sub(r"(?<=\w)_(?=\W|$)", r"\\_", text)


def _inline(line: str) -> str:
    """Code spans to RST literals; `|` and trailing underscores escaped elsewhere."""
    out, pos = [], 0
    for m in _SPAN.finditer(line):
        before = line[pos:m.start()]
        if _ROLE_BEFORE.search(before):  # already an RST role such as :class:`Chip`
            out.append(_escape_text(before[: _ROLE_BEFORE.search(before).start()]))
            out.append(_ROLE_BEFORE.search(before).group(0) + m.group(0))
            pos = m.end()
            continue
        out.append(_escape_text(before))
        if before[-1:].isalnum():
            out.append("\\ ")  # RST needs a break before inline markup; '\ ' is an invisible one
        body = m.group(2).strip() if len(m.group(1)) > 1 else m.group(2)
        if "`" in body or body != body.strip():
            body = body.strip().replace("\\", "\\\\").replace("`", "\\`")
            out.append(f":code:`{body}`")
        else:
            out.append(f"``{body}``")
        if line[m.end():m.end() + 1].isalnum():
            out.append("\\ ")  # and after it: ``HloCollective``\ s
        pos = m.end()
    out.append(_escape_text(line[pos:]))
    return "".join(out)


_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)]|#\.)\s")


def _paragraphs(lines: list[str]):
    """(blank lines before, lines) for each run of non-blank lines; trailing blanks last."""
    blanks, para = [], []
    for line in lines:
        if line.strip():
            para.append(line)
        else:
            if para:
                yield blanks, para
                blanks, para = [], []
            blanks.append(line)
    if para:
        yield blanks, para
    elif blanks:
        yield blanks, []


def markdownish_to_rst(lines: list[str]) -> list[str]:
    """The rewritten docstring (a list of lines, as autodoc passes it)."""
    out: list[str] = []
    literal_base = None  # indent of the text that opened the current literal block
    text_indent = 0  # indent of the last paragraph of running text
    after_colons = False  # that paragraph ended with '::' (RST opens a literal block itself)
    for blanks, para in _paragraphs(lines):
        out.extend(blanks)
        if not para:
            continue
        first = _indent(para[0])
        if literal_base is not None and first > literal_base:
            out.extend(para)  # still inside the literal block
            continue
        literal_base = None
        if out and first > text_indent:
            # an indented block after running text: formulas or an example, shown as they are
            if not after_colons:
                out.extend([" " * text_indent + "::", ""])
            out.extend(para)
            literal_base, after_colons = text_indent, False
            continue
        if not _LIST_ITEM.match(para[0]) and any(_indent(line) > first for line in para[1:]):
            # code written flush with the text (it would read as a block quote): literal too
            if not after_colons:
                out.extend([" " * first + "::", ""])
            out.extend("    " + line for line in para)
            literal_base, after_colons = first, False
            continue
        out.extend(_inline(line) for line in para)
        text_indent, after_colons = first, para[-1].rstrip().endswith("::")
    return out


def _process(app, what, name, obj, options, lines) -> None:
    if name.startswith("scalebook"):
        lines[:] = markdownish_to_rst(list(lines))


def setup(app):
    app.connect("autodoc-process-docstring", _process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
