"""benchmarks/bench_zoo.py's results plumbing: `--reuse` of several files
and `--rejoin` (a run of eager and tc given the other backends' earlier
rows), which the docs' dashboard tables are built with."""

import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "benchmarks"))
import bench_zoo  # noqa: E402

META = {"device": "NVIDIA H200", "torch": "2.11.0+cu130", "build": "old"}


def _row(backend, step_ms, **extra):
    return {"backend": backend, "step_ms": step_ms, "first_step_s": 1.0,
            "peak_mib": 100.0, "agrees": True, **extra}


def _write(path, reports, meta=META):
    path.write_text(json.dumps({"meta": meta, "rows": [], "raw": reports}))
    return path


def test_rejoin_takes_the_other_backends_rows_and_keeps_its_own(tmp_path):
    old = _write(tmp_path / "old.json", [{
        "model": "m", "mode": "train", "build": "old",
        "rows": [_row("eager", 50.0), _row("inductor", 40.0),
                 _row("inductor-ro", 39.0), _row("tc", 60.0),
                 _row("tc-ro", 58.0)]}])
    run = _write(tmp_path / "run.json", [{
        "model": "m", "mode": "train", "build": "new",
        "rows": [_row("eager", 51.0), _row("tc", 44.0)]}],
        meta={**META, "build": "new"})
    out = tmp_path / "out"
    out.mkdir()
    bench_zoo.rejoin(run, str(old), out)
    data = json.loads((out / "zoo-cuda-train-rejoined.json").read_text())
    [row] = data["rows"]
    # The run's own eager and tc; the old file's Inductor columns; not the
    # old file's tc nor tc-ro (another build's).
    assert row["tc_step_ms"] == 44.0 and row["eager_step_ms"] == 51.0
    assert row["inductor_step_ms"] == 40.0
    assert row["vs_inductor"] == pytest.approx(40.0 / 44.0)
    assert row["vs_inductor_ro"] == pytest.approx(39.0 / 44.0)
    assert "tc_ro_step_ms" not in row
    assert row["build"] == "new"
    backends = {r["backend"]: r for r in data["raw"][0]["rows"]}
    assert backends["inductor"]["reused_from"] == "old.json"
    assert "reused_from" not in backends["tc"]
    assert data["meta"]["rejoined"] == "run.json with " + str(old)


def test_reuse_of_several_files_and_of_another_device(tmp_path):
    a = _write(tmp_path / "a.json", [{
        "model": "m", "mode": "infer", "rows": [_row("inductor", 1.0)]}])
    b = _write(tmp_path / "b.json", [{
        "model": "m", "mode": "infer", "rows": [_row("inductor", 2.0)]},
        {"model": "n", "mode": "infer", "rows": [_row("inductor", 3.0)]}])
    found = bench_zoo.reused_rows(f"{a},{b}", META)
    # A later file's report of a model replaces an earlier one's.
    assert found[("m", "infer")]["rows"][0]["step_ms"] == 2.0
    assert found[("n", "infer")]["rows"][0]["reused_from"] == "b.json"
    other = _write(tmp_path / "c.json", [], meta={**META, "device": "H100"})
    with pytest.raises(SystemExit):
        bench_zoo.reused_rows(str(other), META)
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps({"meta": META, "rows": []}))
    with pytest.raises(SystemExit):
        bench_zoo.reused_rows(str(merged), META)
