"""The docs' figures stay traceable: every results file a page of docs/ or
the README names (a `*.json`, `*.png`, `*.txt`, `*.log`, `*.jsonl` in
backticks or a link) is under benchmarks/results/, and every measured table
of docs/Performance.md and docs/RealModels.md names one."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# A results file as the docs name it: in backticks, or a link's target.
NAMED = re.compile(r"[`(/]([A-Za-z0-9_.\-]+\.(?:json|jsonl|png|txt|log))[`)]")
# Files named in the docs that are not results.
NOT_RESULTS = {"requirements.txt", "CMakeLists.txt", "conformance.json"}


def _named(doc: pathlib.Path) -> set[str]:
    return {m.group(1) for m in NAMED.finditer(doc.read_text())} \
        - NOT_RESULTS


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_results_file_a_doc_names_exists(doc):
    missing = sorted(n for n in _named(doc) if not (RESULTS / n).is_file())
    assert not missing, f"{doc.name} names results files that are not " \
        f"in benchmarks/results/: {missing}"


def test_the_check_sees_a_missing_file(tmp_path):
    page = tmp_path / "Page.md"
    page.write_text("a figure (`models-cuda-no-such-run.json`)\n")
    assert _named(page) == {"models-cuda-no-such-run.json"}
    assert not (RESULTS / "models-cuda-no-such-run.json").exists()


@pytest.mark.parametrize("name", ["README.md", "docs/Performance.md",
                                  "docs/RealModels.md", "docs/GPU.md",
                                  "docs/Distributed.md"])
def test_measured_pages_name_their_results(name):
    """A page of measurements names at least one results file per
    section that holds a table of numbers."""
    text = (ROOT / name).read_text()
    for section in re.split(r"\n## ", text)[1:]:
        title = section.split("\n", 1)[0]
        rows = [line for line in section.splitlines()
                if line.startswith("|") and re.search(r"\d\.\d", line)]
        if not rows:
            continue
        assert NAMED.search(section) or "results/" in section, \
            f"{name}, section '{title}': a table of figures with no " \
            "results file"
