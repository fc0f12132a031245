"""The repository can be reused and cited: an OSI licence, and a CITATION.cff that validates against
the Citation File Format 1.2.0 schema that the cffconvert package ships (cffconvert 2.0's own
validator pins jsonschema<4, which the book's environment cannot hold, so its schema is read by path
and checked with the installed jsonschema) and that cites the five papers."""

import copy
import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def validator():
    spec = importlib.util.find_spec("cffconvert")
    assert spec is not None, "cffconvert is not installed (requirements-nodeps.txt)"
    schema = Path(spec.submodule_search_locations[0]) / "schemas" / "1.2.0" / "schema.json"
    return jsonschema.Draft7Validator(json.loads(schema.read_text()))


def cff():
    return yaml.safe_load((REPO / "CITATION.cff").read_text())


def test_citation_cff_validates():
    errors = [f"{list(e.path)}: {e.message}" for e in validator().iter_errors(cff())]
    assert not errors, errors


@pytest.mark.parametrize("breakage", ["no authors", "bad version"])
def test_the_validator_rejects_a_broken_file(breakage):
    doc = copy.deepcopy(cff())
    if breakage == "no authors":
        del doc["authors"]
    else:
        doc["cff-version"] = "9.9"
    assert list(validator().iter_errors(doc))


def test_cites_the_five_papers_and_names_the_licence():
    doc = cff()
    bib = (REPO / "book" / "references.bib").read_text()
    titles = [r["title"] for r in doc["references"]]
    assert len(titles) == 5
    for t in titles:  # the same papers as the book's bibliography
        assert t.split(":")[0].split()[0] in bib, t
    assert doc["license"] == "MIT"
    assert "MIT License" in (REPO / "LICENSE").read_text()
