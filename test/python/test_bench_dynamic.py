"""benchmarks/bench_dynamic.py's real-model workloads (dynamic_workloads):
a decoder's prefill at two prompt lengths with dynamic=True, eager and tc
in one process: each length's output agrees with eager's, and the row has
the issue's columns (compiles per Dynamo graph, first and steady totals)."""

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
    # tc compiled what Dynamo gave it, and says how often per graph.
    assert row["tc_dynamo_graphs"] >= 1
    assert row["tc_compiles"] >= 1
    assert row["tc_compiles_per_graph"] == (row["tc_compiles"]
                                            / row["tc_dynamo_graphs"])
    # tc's kernels ran: no op, graph or call left to eager.
    assert row["tc_counters"].get("kernels", 0) > 0
    for counter in ("ops_eager", "fallback_graphs", "runtime_fallbacks",
                    "shape_cap_fallbacks"):
        assert row["tc_counters"].get(counter, 0) == 0, counter
