"""Compiled graphs are cached on disk under TC_CACHE_DIR, across processes."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

pytestmark = pytest.mark.requires_native

PROGRAM = textwrap.dedent("""
    import json, sys, torch, tc
    torch.manual_seed(0)
    def f(x, y):
        return torch.softmax(torch.sin(x) + y, dim=-1) * 2
    x, y = torch.randn(64, 48), torch.randn(64, 48)
    out = torch.compile(f, backend="tc")(x, y)
    torch.testing.assert_close(out, f(x, y), rtol=1e-5, atol=1e-5)
    print(json.dumps(dict(tc.counters, compiler_loaded="tc._tc" in sys.modules)))
""")


def run(cache_dir, program=PROGRAM, **environ):
    env = dict(os.environ, TC_CACHE_DIR=str(cache_dir), **environ)
    result = subprocess.run([sys.executable, "-c", program], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    import json
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_second_process_loads_from_cache(tmp_path):
    """The warm process runs the cached graph without loading the
    compiler (tc._tc): tc._runtime loads the entry's shared library."""
    cold = run(tmp_path)
    assert cold["subgraphs_compiled"] == 1
    assert cold["disk_cache_hits"] == 0
    assert cold["compiler_loaded"]
    assert list((tmp_path / "cpu").glob("*.0.o"))
    assert list((tmp_path / "cpu").glob("*.plan"))
    # Linked in the background; the cold process waits for it at exit.
    assert list((tmp_path / "cpu").glob("*.so"))
    warm = run(tmp_path)
    assert warm["subgraphs_compiled"] == 1
    assert warm["disk_cache_hits"] == 1
    assert not warm["compiler_loaded"]


SYMBOLIC_PROGRAM = textwrap.dedent("""
    import json, sys, torch, tc
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(),
                            torch.nn.Linear(32, 4)).eval()
    fn = torch.compile(m, backend="tc", dynamic=True)
    with torch.no_grad():
        for batch in (3, 11, 40):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(fn(x), m(x), rtol=1e-5, atol=1e-5)
    print(json.dumps(dict(tc.counters, compiler_loaded="tc._tc" in sys.modules)))
""")


def test_symbolic_graph_loads_from_cache(tmp_path):
    """A graph compiled with the symbolic batch size is one cache entry,
    which a warm process runs at every batch size without the compiler."""
    cold = run(tmp_path, SYMBOLIC_PROGRAM)
    assert cold["symbolic_graphs"] == 1
    assert cold["disk_cache_hits"] == 0
    assert len(list((tmp_path / "cpu").glob("*.plan"))) == 1
    warm = run(tmp_path, SYMBOLIC_PROGRAM)
    assert warm["symbolic_graphs"] == 1
    assert warm["disk_cache_hits"] == 1
    assert not warm["compiler_loaded"]


def test_entry_without_library_loads_through_the_jit(tmp_path):
    """Without the linked library (no C compiler, a link still running)
    the entry's objects load into tc._tc's JIT; a damaged library too."""
    run(tmp_path)
    (library,) = (tmp_path / "cpu").glob("*.so")
    library.unlink()
    warm = run(tmp_path)
    assert warm["disk_cache_hits"] == 1
    assert warm["compiler_loaded"]
    library.write_bytes(b"not a shared library")
    warm = run(tmp_path)
    assert warm["disk_cache_hits"] == 1
    assert warm["compiler_loaded"]


def test_kernels_compile_in_parallel_parts(tmp_path):
    """A graph of several kernels is compiled as several objects, on
    several threads, and they load together."""
    program = PROGRAM.replace(
        "torch.softmax(torch.sin(x) + y, dim=-1) * 2",
        "torch.softmax(torch.sin(x) + y, dim=-1) @ torch.cos(y).T "
        "+ torch.log_softmax(y, dim=0).sum(1, keepdim=True)")
    for threads in ("2", "1"):  # the parts do not depend on the threads
        result = run(tmp_path / threads, program,
                     TC_COMPILE_THREADS=threads)
        assert result["kernels"] >= 3, result
    parts = sorted(p.name.split(".", 1)[1]
                   for p in (tmp_path / "2" / "cpu").glob("*.o"))
    assert len(parts) >= 3, parts
    assert parts == sorted(p.name.split(".", 1)[1]
                           for p in (tmp_path / "1" / "cpu").glob("*.o"))
    warm = run(tmp_path / "2", program)
    assert warm["disk_cache_hits"] == 1
    assert not warm["compiler_loaded"]
    next((tmp_path / "2" / "cpu").glob("*.so")).unlink()
    warm = run(tmp_path / "2", program)
    assert warm["disk_cache_hits"] == 1 and warm["compiler_loaded"]


def test_corrupt_cache_entry_is_recompiled(tmp_path):
    run(tmp_path)
    for plan in (tmp_path / "cpu").glob("*.plan"):
        plan.write_text("garbage")
    again = run(tmp_path)
    assert again["subgraphs_compiled"] == 1
    assert again["disk_cache_hits"] == 0


def test_decomposed_ops_are_answered_without_the_table():
    """Writing a graph directly asks, per op, whether PyTorch's table
    decomposes it. The answers, computed without building the table (slow
    on a cold start), agree with the table on every ATen op."""
    from torch._export.utils import _materialize_cpp_cia_ops

    from tc import decompositions

    decompositions.core_aten_decompositions.cache_clear()
    decompositions.decomposed_ops.cache_clear()
    answers = decompositions.DecomposedOps()
    assert not decompositions.core_aten_decompositions.cache_info().currsize
    table = {str(op) for op in decompositions.core_aten_decompositions()}
    assert "aten.addmm.default" not in answers  # core ATen: kept
    assert "aten.silu.default" in answers  # decomposed by PyTorch's table
    _materialize_cpp_cia_ops()
    checked = 0
    for base in torch.ops.aten:
        packet = getattr(torch.ops.aten, base)
        for overload in packet.overloads():
            name = str(getattr(packet, overload))
            assert (name in answers) == (name in table), name
            checked += 1
    assert checked > 2000


def test_the_forward_table_is_answered_without_the_table():
    """A training graph's trace asks the same per op of the forward table
    (the whole table less the inference-only decompositions)."""
    from tc import decompositions

    forward = decompositions.forward_decompositions()
    explicit = decompositions.explicit_forward_decompositions()
    assert set(explicit) <= set(forward)
    checked = 0
    for op in decompositions.core_aten_decompositions():
        if getattr(op, "namespace", None) != "aten":
            continue
        assert decompositions.table_decomposes(op, False), op
        assert decompositions.table_decomposes(op, True) == (op in forward), op
        checked += 1
    assert checked > 500
    mm = torch.ops.aten.mm.default
    assert not decompositions.table_decomposes(mm, True)


TRAINING_PROGRAM = textwrap.dedent("""
    import json, torch, tc, tc.decompositions as d
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                            torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16)
    loss = torch.compile(m, backend="tc")(x).square().mean()
    loss.backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).square().mean().backward()
    for g, p in zip(grads, m.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
    print(json.dumps(dict(tc.counters, built=[
        f.cache_info().currsize for f in (d.forward_decompositions,
                                          d.core_aten_decompositions)])))
""")


def test_a_training_trace_builds_no_whole_table(tmp_path):
    """make_fx traces a training graph's forward with the table's explicit
    part; the whole table (0.1-0.2 s to build) only where that trace keeps
    an op the table decomposes. A small model's first training step builds
    neither table, and its gradients are eager's."""
    result = run(tmp_path, TRAINING_PROGRAM)
    assert result["training_graphs"] == 1, result
    assert result["aten_one_pass"] == 1, result
    assert result["ops_eager"] == 0 and result["fallback_graphs"] == 0
    assert result["runtime_fallbacks"] == 0, result
    assert result["built"] == [0, 0], result


PRECOMPILE_PROGRAM = textwrap.dedent("""
    import json, os, sys, time, torch, torch._dynamo, tc
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10)).eval()
    x = torch.randn(32, 64)
    with torch.no_grad():
        start = time.perf_counter()
        fn = torch.compile(m, backend="tc")
        wrapped = time.perf_counter() - start
        start = time.perf_counter()
        out = fn(x)
        first = time.perf_counter() - start
        torch.testing.assert_close(out, m(x), rtol=1e-5, atol=1e-5)
    if os.environ.get("SAVE") == "1":
        torch.compiler.save_cache_artifacts()
    hits = torch._dynamo.utils.counters["dynamo_cache"]["dynamo_cache_hit"]
    print(json.dumps(dict(tc.counters, first_call_s=first,
                          torch_compile_s=wrapped, precompile_hits=hits,
                          compiler_loaded="tc._tc" in sys.modules)))
""")


def test_precompile_cache_skips_dynamo_in_a_warm_process(tmp_path):
    """With PyTorch's precompile cache (TORCH_CACHING_PRECOMPILE=1, saved
    by torch.compiler.save_cache_artifacts()), a warm process installs
    Dynamo's bytecode and tc's artifact at torch.compile: tc's backend
    rebuilds the graph from its disk cache (no compiler), and the first
    call runs tc's code without Dynamo's trace, with eager's results."""
    environ = dict(TORCH_CACHING_PRECOMPILE="1",
                   TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    cold = run(tmp_path, PRECOMPILE_PROGRAM, SAVE="1", **environ)
    assert cold["precompile_hits"] == 0
    assert cold["graphs_compiled"] == 1
    warm = run(tmp_path, PRECOMPILE_PROGRAM, **environ)
    assert warm["precompile_hits"] == 1
    assert warm["graphs_compiled"] == 1
    assert warm["disk_cache_hits"] == 1
    assert warm["ops_eager"] == 0 and warm["fallback_graphs"] == 0
    assert not warm["compiler_loaded"]
    # No trace: the first call is the compiled graph's run (milliseconds;
    # Dynamo's capture of this model takes 0.15-0.7 s).
    assert warm["first_call_s"] < 0.1, warm



def test_identical_graphs_share_one_compile(fresh_tc):
    # Two graphs that differ only in names and source lines (a model's
    # identical layers) run one CPU program, each on its own buffers.
    import tc.compiler

    def f(a):
        return torch.sin(a * 2) + a.exp()

    def g(b):
        return torch.sin(b * 2) + b.exp()

    x, y = torch.randn(300), torch.randn(300)
    got_f = torch.compile(f, backend="tc")(x)
    got_g = torch.compile(g, backend="tc")(y)
    torch.testing.assert_close(got_f, f(x))
    torch.testing.assert_close(got_g, g(y))
    compiled = list(tc.compiler.build.cache.values())
    assert len(compiled) == 2 and compiled[0] is compiled[1]
    assert tc.counters["graphs_compiled"] == 2
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["runtime_fallbacks"] == 0


def test_graphs_of_other_structure_do_not_share(fresh_tc):
    import tc.compiler

    x = torch.randn(300)
    torch.compile(lambda a: torch.sin(a * 2), backend="tc")(x)
    got = torch.compile(lambda a: torch.sin(a * 3), backend="tc")(x)
    torch.testing.assert_close(got, torch.sin(x * 3))
    compiled = list(tc.compiler.build.cache.values())
    assert len(compiled) == 2 and compiled[0] is not compiled[1]


PROFILED = textwrap.dedent("""
    import torch, tc
    torch.manual_seed(0)
    def f(x, y):
        h = torch.softmax(torch.sin(x) + y, dim=-1)
        return h @ y.T, (x * y).sum(0)
    x, y = torch.randn(256, 96), torch.randn(256, 96)
    # Eager's reference from its second call: in about one process of
    # five, eager's first product (h @ y.T) came out 8.6e-5 from its later
    # ones (the BLAS's first call), where tc's results stay put.
    f(x, y)
    expected = f(x, y)
    compiled = torch.compile(f, backend="tc")
    for _ in range(3):
        torch.testing.assert_close(compiled(x, y), expected)
""")


def test_tc_logs_kernels_profiles_a_warm_run_cold_and_cached(tmp_path):
    """TC_LOGS=kernels: the second call of a CPU graph is timed step by
    step (each kernel by its name, the GEMM by its sizes) with its
    buffers' bytes and the page faults during it (their sum in the
    header), once, in the process that compiled it and in one that loads
    it from the disk cache (tc._runtime)."""
    for process in ("cold", "warm"):
        env = dict(os.environ, TC_CACHE_DIR=str(tmp_path), TC_LOGS="kernels")
        result = subprocess.run([sys.executable, "-c", PROFILED], env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        profiles = [line for line in result.stderr.splitlines()
                    if line.startswith("[tc:kernels] graph ")]
        assert len(profiles) == 1, (process, result.stderr)
        rows = [line for line in result.stderr.splitlines()
                if line.startswith("  ") and " ms " in line]
        assert any(row.endswith("gemm 256x256x96") for row in rows), rows
        assert any(" main_fused_" in row for row in rows), rows
        # Every step's buffers are static here: bytes and a bandwidth.
        assert all(" MB " in row and " GB/s " in row for row in rows), rows
        faults = [int(row.split()[7]) for row in rows]
        assert all(row.split()[8] == "faults" for row in rows), rows
        total = int(profiles[0].split(" ms, ")[1].split()[0])
        assert min(faults) >= 0 and sum(faults) == total, (profiles, rows)
        assert sum(float(row.split()[2].rstrip("%")) for row in rows) == \
            pytest.approx(100, abs=1)
