"""The papermill CI workflow: a job per chapter of the registry, only Makefile targets, all of which exist."""

import json
import re
import subprocess
from pathlib import Path

import yaml

from privtrans.book import chapters

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "book.yml"


def steps(doc):
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def test_every_chapter_of_the_registry_gets_a_job():
    doc = yaml.safe_load(WORKFLOW.read_text())
    matrix = doc["jobs"]["chapter"]["strategy"]["matrix"]["chapter"]
    assert matrix == "${{ fromJSON(needs.chapters.outputs.keys) }}"
    (registry,) = [s for s in doc["jobs"]["chapters"]["steps"] if s.get("id") == "registry"]
    assert "make -s chapters" in registry["run"]
    out = subprocess.run(["make", "-s", "chapters"], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == list(chapters.KEYS)
    runs = [s["run"] for s in doc["jobs"]["chapter"]["steps"] if "run" in s]
    assert runs == ["make chapter CH=${{ matrix.chapter }} PROFILE=${{ env.PROFILE }}"]


def test_the_workflow_calls_only_makefile_targets_that_exist():
    doc = yaml.safe_load(WORKFLOW.read_text())
    targets = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), re.M))
    called = []
    for step in steps(doc):
        run = re.sub(r"\$\{\{.*?\}\}", "EXPR", step.get("run", ""))  # GitHub expressions are values
        for line in filter(None, (ln.strip() for ln in run.splitlines())):
            assert line.startswith(("make ", 'echo "keys=$(make ')), f"a step runs more than make: {line!r}"
            for args in re.findall(r"\bmake\s+([^\n)>]*)", line):
                words = [w for w in args.split() if not w.startswith("-") and "=" not in w]
                assert words, line
                called += words
    assert set(called) == {"chapters", "chapter", "book"} and set(called) <= targets
