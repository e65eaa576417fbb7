"""book/references.bib parses as BibTeX, one entry per `@`, so the site build cannot stop on it."""
import re
from pathlib import Path

import pytest

BIB = Path(__file__).resolve().parents[1] / 'book' / 'references.bib'


def test_every_entry_of_the_bibliography_parses():
    database = pytest.importorskip("pybtex.database")
    text = BIB.read_text(encoding="utf-8")
    db = database.parse_string(text, "bibtex")
    assert len(db.entries) == len(re.findall(r"^@\w+\{", text, re.M))


def test_every_entry_closes_before_the_next_begins():
    depth = 0
    for n, line in enumerate(BIB.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("@"):
            assert depth == 0, f"entry before line {n} is not closed"
        depth += line.count("{") - line.count("}")
    assert depth == 0
