"""benchmarks/bench_dynamic.py's real-model workloads (dynamic_workloads):
a decoder's prefill at two prompt lengths with dynamic=True, eager and tc
in one process: each length's output agrees with eager's, one compile
serves both, and the row has the issue's columns (compiles per Dynamo
graph, first and steady totals)."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "benchmarks"))
import dynamic_workloads  # noqa: E402


def test_prefill_row_has_the_columns_and_agrees():
    row = dynamic_workloads.run("prefill", ["eager", "tc"],
                                torch.device("cpu"), batch=1, calls=1,
                                rounds=1, small=True, lengths=(5, 9))
    assert row["lengths"] == [5, 9]
    assert row["tc_ok"], row["tc_errors"]
    assert max(row["tc_errors"]) < 1e-3
    for backend in ("eager", "tc"):
        assert len(row[f"{backend}_first_s"]) == 2
        assert len(row[f"{backend}_steady_ms"]) == 2
        assert row[f"{backend}_steady_total_ms"] > 0
    # tc compiled what Dynamo gave it once, for both lengths: the parts on
    # rows by tc's kernels, attention and the cache's writes in eager
    # between them (counted in ops_eager, each logged); nothing else left
    # to eager, no compile per length.
    assert row["tc_dynamo_graphs"] >= 1
    assert row["tc_compiles"] == row["tc_dynamo_graphs"]
    assert row["tc_compiles_per_graph"] == 1.0
    counters = row["tc_counters"]
    assert counters.get("symbolic_graphs", 0) == row["tc_dynamo_graphs"]
    assert counters.get("kernels", 0) > 0
    assert counters["ops_compiled"] > counters.get("ops_eager", 0)
    for counter in ("fallback_graphs", "runtime_fallbacks",
                    "shape_cap_fallbacks", "shape_specializations"):
        assert counters.get(counter, 0) == 0, counter
