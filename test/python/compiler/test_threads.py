"""tc's CPU launches run on PyTorch's OpenMP team, sized as PyTorch's ops
are (`torch.set_num_threads`)."""

import os
import textwrap

import pytest
import torch

import tc
import tc.compiler
from test_cache import run

pytestmark = pytest.mark.requires_native


THREADS_PROGRAM = textwrap.dedent("""
    import json, os, torch, tc
    x = torch.randn(1 << 20)
    torch.sin(x)  # PyTorch's OpenMP team starts
    f = lambda x: torch.sin(x) * 2 + 1
    out = torch.compile(f, backend="tc")(x)  # 1M points: a parallel launch
    torch.testing.assert_close(out, f(x))
    print(json.dumps(dict(tc.counters,
                          threads=len(os.listdir("/proc/self/task")))))
""")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                    reason="counts threads in /proc")
def test_cpu_launches_run_on_pytorchs_openmp_team(tmp_path):
    """Where PyTorch's OpenMP runtime is loaded, tc's CPU launches run on
    its team: tc starts no threads of its own, which would fight
    PyTorch's spinning OpenMP threads for the cores between eager ops.
    TC_NUM_THREADS=3 keeps tc's own pool (two workers besides the calling
    thread), the control."""
    shared = run(tmp_path / "shared", THREADS_PROGRAM)
    own = run(tmp_path / "own", THREADS_PROGRAM, TC_NUM_THREADS="3")
    assert shared["kernels"] == own["kernels"] == 1
    assert own["threads"] == shared["threads"] + 2, (shared, own)


@pytest.mark.skipif("TC_NUM_THREADS" in os.environ,
                    reason="TC_NUM_THREADS keeps tc's own pool")
def test_set_num_threads_sizes_tc_launches(fresh_tc):
    """torch.set_num_threads(1) and (2) are honoured: a launch runs on as
    many threads as PyTorch's ops would, and its results do not change."""
    native = tc.compiler.extension.load_native()
    before = torch.get_num_threads()
    f = lambda x: torch.sin(x) * 2 + 1
    x = torch.randn(1 << 20)
    compiled = torch.compile(f, backend="tc")
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            assert native.cpu_threads() == n
            torch.testing.assert_close(compiled(x), f(x))
    finally:
        torch.set_num_threads(before)
    assert tc.counters["kernels"] > 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)


FORK_PROGRAM = textwrap.dedent("""
    import json, os, torch, tc
    f = lambda x: torch.sin(x) * 2 + 1
    x = torch.randn(1 << 20)
    compiled = torch.compile(f, backend="tc")
    compiled(x)  # the parent's launches ran on the OpenMP team
    pid = os.fork()
    if pid == 0:  # a DataLoader worker: one thread, then tc's graph
        torch.set_num_threads(1)
        try:
            torch.testing.assert_close(compiled(x), f(x))
        except AssertionError:
            os._exit(1)
        # tc's kernels ran in the child too, not eager after a failure.
        os._exit(0 if tc.counters["runtime_fallbacks"] == 0 else 2)
    _, status = os.waitpid(pid, 0)
    print(json.dumps(dict(tc.counters, child_status=status)))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_worker_runs_tc_graphs(tmp_path):
    """A forked child (a DataLoader worker, which PyTorch gives one
    thread) runs a graph the parent compiled and ran on the OpenMP team,
    with eager's values and without hanging on the parent's team."""
    result = run(tmp_path, FORK_PROGRAM)
    assert result["child_status"] == 0, result
    assert result["kernels"] == 1


GEMM_KERNELS_PROGRAM = textwrap.dedent("""
    import json
    from tc import doctor, native
    lines, _ = doctor.report()
    print(json.dumps(dict(kernels=native.load_extension("_tc")
                          .cpu_gemm_kernels(),
                          doctor=[l for l in lines if l.startswith("cpu:")])))
""")


def test_doctor_names_the_gemm_kernels_openblas_chose(tmp_path):
    """`python -m tc doctor` says which OpenBLAS kernels tc's CPU GEMMs
    run on, and that $OPENBLAS_CORETYPE chose them where it is set (on
    this project's AVX-512 machine a setting of Haswell halves the GEMMs'
    speed against OpenBLAS's own choice)."""
    forced = run(tmp_path / "forced", GEMM_KERNELS_PROGRAM,
                 OPENBLAS_CORETYPE="Haswell")
    assert forced["kernels"] == "Haswell"
    assert forced["doctor"] == [
        line for line in forced["doctor"]
        if "GEMMs on OpenBLAS's Haswell (OPENBLAS_CORETYPE=Haswell) "
           "kernels" in line]
    assert len(forced["doctor"]) == 1
    own = run(tmp_path / "own", GEMM_KERNELS_PROGRAM, OPENBLAS_CORETYPE="")
    assert own["kernels"] and "OPENBLAS_CORETYPE" not in own["doctor"][0]
    assert f"GEMMs on OpenBLAS's {own['kernels']} kernels" in own["doctor"][0]
