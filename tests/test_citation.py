"""CITATION.cff: valid Citation File Format 1.2.0 that names this version and repository."""
import re

import yaml

import scalebook
from notebook_tools import ROOT

CFF = ROOT / "CITATION.cff"


def cff():
    return yaml.safe_load(CFF.read_text(encoding="utf-8"))


def test_citation_parses_with_the_required_keys():
    data = cff()
    # the keys CFF 1.2.0 requires, and the ones this project promises
    assert {"cff-version", "message", "title", "authors"} <= set(data)
    assert {"version", "license", "repository-code"} <= set(data)
    assert data["cff-version"] == "1.2.0"
    assert data["authors"] == [{"name": "The scalebook authors"}]
    assert isinstance(data["title"], str) and data["title"].strip()


def test_citation_version_is_the_package_version():
    assert str(cff()["version"]) == scalebook.__version__


def test_citation_license_and_repository_match_the_project():
    data = cff()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'license = {{ text = "{data["license"]}" }}' in pyproject
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert data["repository-code"] == config["repository"]["url"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(data["date-released"]))


def test_changelog_names_this_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[?{re.escape(scalebook.__version__)}\]?", text, re.M)
