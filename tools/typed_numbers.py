#!/usr/bin/env python3
"""List numbers typed by hand in the prose of MyST notebooks (a reviewer's aid, not a test).

    python tools/typed_numbers.py chapters/01-rooflines.md exercises/01-rooflines.md

Prints every number in Markdown cells outside math, code spans and glue roles. A number that
defines a question ("a 4x2 mesh", "27 billion parameters") may stay; a hardware figure or a
computed result belongs in a code cell and is glued (AUTHORING.md, "Numbers in the prose").
"""
from __future__ import annotations

import re
import sys

import jupytext

_STRIP = [
    (re.compile(r"\$\$.*?\$\$", re.S), ""),
    (re.compile(r"\$[^$\n]*\$"), ""),
    (re.compile(r"\{[\w:-]+\}`[^`]*`"), ""),
    (re.compile(r"`[^`]*`"), ""),
    (re.compile(r"^[`:]{3,}.*$", re.M), ""),
    (re.compile(r"^\s*\d+\.\s", re.M), ""),  # numbered lists
]
_NUMBER = re.compile(r"(?<![\w.-])\d[\d,.]*(?:\s?(?:%|GB/s|TB/s|GB|TB|MB|ms|us|µs|s|[TGP]FLOP/s|FLOPs?|bytes|bits?))?(?![\w])")


def typed_numbers(path: str) -> list[tuple[str, str]]:
    """(number, line) for each number typed in the Markdown of the notebook at `path`."""
    found = []
    for cell in jupytext.read(path, fmt="md:myst").cells:
        if cell.cell_type != "markdown":
            continue
        text = cell.source
        for pattern, repl in _STRIP:
            text = pattern.sub(repl, text)
        for line in text.splitlines():
            for m in _NUMBER.finditer(line):
                if not re.fullmatch(r"\d", m.group(0)):
                    found.append((m.group(0), line.strip()))
    return found


def main(argv: list[str]) -> int:
    for path in argv:
        for number, line in typed_numbers(path):
            print(f"{path}: {number!r}: {line[:120]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
