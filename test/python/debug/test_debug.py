"""tc.debug: the graph minifier and the repro scripts it writes, on a
wrong rewrite planted in tc-decompose (`miscompile-for-testing`, a test
option of the CPU pipeline) and on an op tc leaves to eager."""

import importlib
import logging
import os
import subprocess
import sys
import time

import pytest
import torch
import torch.nn.functional as F

import tc
import tc.compiler
import tc.debug

pytestmark = pytest.mark.requires_native

#: tc-cpu-pipeline's options with tc-decompose adding 1 to every float
#: result of aten::erf.
PLANTED = "miscompile-for-testing=aten::erf"


def _blocks(x, w):
    """202 ops: twenty-two blocks of layer norm, product, tanh and sigmoid;
    block 13 adds an erf."""
    for i in range(22):
        h = F.layer_norm(x, (64,))
        h = h @ w[i % 4]
        if i == 13:
            h = h + torch.erf(h) * 0.5
        h = torch.tanh(h) * 0.5 + torch.sigmoid(h)
        x = x + h * 0.1
    return x.sum(-1), x


def _ops(gm):
    return [n for n in gm.graph.nodes
            if n.op in ("call_function", "call_method", "call_module")]


def _inputs():
    torch.manual_seed(0)
    return [torch.randn(32, 64), torch.randn(4, 64, 64) * 0.1]


def test_minifier_finds_a_planted_miscompile(fresh_tc, monkeypatch,
                                             tmp_path):
    monkeypatch.setenv("TC_CPU_OPTIONS", PLANTED)
    gm = torch.fx.symbolic_trace(_blocks)
    inputs = _inputs()
    assert len(_ops(gm)) >= 200, len(_ops(gm))
    assert tc.debug.mismatches(gm, inputs)

    start = time.monotonic()
    small, small_inputs = tc.debug.minify(gm, inputs, tc.debug.mismatches)
    assert time.monotonic() - start < 60
    assert 1 <= len(_ops(small)) <= 5, small.code
    assert "erf" in small.code
    assert tc.debug.mismatches(small, small_inputs)

    # The repro fails alone, in a process of its own, the same way; with
    # the compiler unplanted it passes.
    repro = tc.debug.write_repro(small, small_inputs, tmp_path / "repro.py")
    # Beside it, the graph in the fx dialect and the tc-opt command that
    # compiles it (with the planted option: the erf's result plus 1).
    mlir = tmp_path / "repro.mlir"
    assert "aten::erf" in mlir.read_text()
    if tc.tc_opt_path().exists():
        command = next(line.strip() for line in repro.read_text().splitlines()
                       if line.strip().startswith(str(tc.tc_opt_path())))
        assert str(mlir) in command and PLANTED in command
        compiled = subprocess.run(command, shell=True, capture_output=True,
                                  text=True)
        assert compiled.returncode == 0, compiled.stderr
        assert "llvm.func" in compiled.stdout
    env = dict(os.environ, TC_CACHE_DIR=str(tmp_path / "cache"))
    failed = subprocess.run([sys.executable, str(repro)], env=env,
                            capture_output=True, text=True)
    assert failed.returncode != 0
    assert "AssertionError" in failed.stderr
    env.pop("TC_CPU_OPTIONS")
    passed = subprocess.run([sys.executable, str(repro)], env=env,
                            capture_output=True, text=True)
    assert passed.returncode == 0, passed.stderr
    assert "tc matches eager" in passed.stdout


def test_minify_keeps_a_graph_that_does_not_fail(fresh_tc):
    gm = torch.fx.symbolic_trace(_blocks)
    inputs = _inputs()
    assert not tc.debug.mismatches(gm, inputs)
    small, small_inputs = tc.debug.minify(gm, inputs, tc.debug.mismatches)
    assert small is gm and len(small_inputs) == len(inputs)


def test_minifier_finds_the_op_left_to_eager(fresh_tc, tmp_path):
    def f(x):
        y = torch.tanh(x) * 2 + 1
        z = torch.cumsum(y, 0) - y
        ids = torch.nonzero(z > 0)  # data-dependent shape: eager
        return z.sum() + ids.shape[0], y.exp()

    gm = torch.fx.symbolic_trace(f)
    inputs = [torch.randn(64)]
    assert tc.debug.falls_back(gm, inputs)
    small, small_inputs = tc.debug.minify(gm, inputs, tc.debug.falls_back)
    assert [n.target for n in _ops(small)] == [torch.nonzero]
    repro = tc.debug.write_repro(small, small_inputs, tmp_path / "repro.py",
                                 what="tc leaves an op to eager")
    env = dict(os.environ, TC_CACHE_DIR=str(tmp_path / "cache"))
    failed = subprocess.run([sys.executable, str(repro)], env=env,
                            capture_output=True, text=True)
    assert failed.returncode != 0
    assert "ops_eager" in failed.stderr


def test_tc_repro_writes_a_repro_from_a_users_run(fresh_tc, monkeypatch,
                                                  tmp_path, tc_logs):
    """TC_REPRO=accuracy: no change to the program; the first call of the
    graph also runs it in eager, finds the planted difference and writes
    the minified repro, with a warning naming it; the results are eager's
    from then on (a run-time fallback), never tc's wrong ones."""
    monkeypatch.setenv("TC_CPU_OPTIONS", PLANTED)
    monkeypatch.setenv("TC_REPRO", "accuracy")
    monkeypatch.setenv("TC_REPRO_DIR", str(tmp_path / "repros"))
    x, w = _inputs()
    compiled = torch.compile(_blocks, backend="tc")
    for _ in range(2):
        torch.testing.assert_close(compiled(x, w), _blocks(x, w))
    assert tc.counters["runtime_fallbacks"] == 1
    repros = sorted((tmp_path / "repros").glob("repro_*.py"))
    assert len(repros) == 1, repros
    assert "torch.erf" in repros[0].read_text()
    assert "TC_REPRO" in tc_logs.text and str(repros[0]) in tc_logs.text


def test_tc_repro_leaves_a_correct_run_alone(fresh_tc, monkeypatch,
                                             tmp_path):
    monkeypatch.setenv("TC_REPRO", "accuracy")
    monkeypatch.setenv("TC_REPRO_DIR", str(tmp_path / "repros"))
    x, w = _inputs()
    out = torch.compile(_blocks, backend="tc")(x, w)
    torch.testing.assert_close(out, _blocks(x, w))
    assert not (tmp_path / "repros").exists()


def test_tc_repro_1_writes_a_repro_of_an_op_left_to_eager(
        fresh_tc, monkeypatch, tmp_path):
    """TC_REPRO=1: a graph of which tc leaves an op to eager (svdvals, no
    decomposition) gets a repro of that op alone."""
    monkeypatch.setenv("TC_REPRO", "1")
    monkeypatch.setenv("TC_REPRO_DIR", str(tmp_path / "repros"))

    def f(x):
        return torch.linalg.svdvals(torch.tanh(x) * 2) + x.sum()

    torch.compile(f, backend="tc")(torch.randn(8, 8))
    repros = sorted((tmp_path / "repros").glob("repro_*.py"))
    assert len(repros) == 1, repros
    text = repros[0].read_text()
    assert "svdvals" in text and "tanh" not in text


def _erf_and_sine(x):
    return torch.erf(x) * 2 + torch.sin(x)


def test_bisection_names_the_pass_that_planted_the_wrong_rewrite(
        fresh_tc, monkeypatch, tmp_path):
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built here")
    monkeypatch.setenv("TC_CPU_OPTIONS", PLANTED)
    report = tc.debug.bisect(_erf_and_sine, torch.randn(64),
                             folder=tmp_path)
    assert report.first_wrong == "tc-decompose", str(report)
    assert report.difference == pytest.approx(2.0)
    assert report.differences == [pytest.approx(2.0)]
    assert report.float64
    assert report.before.name == "0-fx.mlir"
    assert "prim.erf" in report.after.read_text()
    # The ops the pass changed: the fx calls became prim ops.
    assert report.changed_ops["prim.erf"] == 1
    assert report.changed_ops["fx.call_function"] < 0
    assert "ops changed:" in str(report) and "+1 prim.erf" in str(report)
    assert report.candidates == ["tc-decompose"]
    # The command prints that pass's input and output IR on the saved
    # graph: in the output, the planted add follows the erf.
    rerun = subprocess.run(report.command, shell=True, capture_output=True,
                           text=True)
    assert rerun.returncode == 0, rerun.stderr
    lines = rerun.stderr.split("IR Dump After", 1)[1].splitlines()
    erf = next(i for i, line in enumerate(lines) if "prim.erf" in line)
    assert "prim.add" in "".join(lines[erf + 1:erf + 3])


@pytest.mark.parametrize("planted, before, after", [
    ("tc-fuse", "prim.erf", "kernel.kernel @"),
    ("tc-lower-kernel-to-cpu", "kernel.kernel @", "tc.domain")])
def test_bisection_names_a_required_pass_after_decomposition(
        fresh_tc, monkeypatch, tmp_path, planted, before, after):
    """A wrong rewrite planted in a required pass after decomposition
    (every float a kernel stores gets 1 added): in tc-fuse (prim to
    kernels) or in the CPU lowering (kernels to loop nests). The IR after
    each required pass runs on the reference path (the later stages, one
    kernel per op, without the planted option), and the first pass whose
    IR computes another result is the planted one; the IR before it runs
    right."""
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built here")
    monkeypatch.setenv("TC_CPU_OPTIONS",
                       f"miscompile-pass-for-testing={planted}")
    report = tc.debug.bisect(_erf_and_sine, torch.randn(64),
                             folder=tmp_path)
    assert report.first_wrong == planted, str(report)
    assert report.candidates == [planted]
    assert report.differences == [pytest.approx(1.0)]
    assert before in report.before.read_text()
    assert after in report.after.read_text()
    assert before not in report.after.read_text()
    rerun = subprocess.run(report.command, shell=True, capture_output=True,
                           text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"({planted})" in rerun.stderr


def test_bisection_of_a_correct_compile_names_no_pass(fresh_tc, tmp_path):
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built here")
    report = tc.debug.bisect(_erf_and_sine, torch.randn(64),
                             folder=tmp_path)
    assert report.first_wrong is None
    assert report.passes[0].startswith("tc-decompose")


def test_accuracy_judges_rounding_by_the_float64_result():
    """A result off eager's by more than torch's tolerance is still right
    when it is no further from the float64 truth than twice eager's own
    distance (both rounded, in another order); further, it is wrong. Each
    output is judged on its own."""
    from tc.debug.accuracy import differences as difference
    truth = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    eager = torch.tensor([1.001, 2.0, 3.0])
    rounded = torch.tensor([0.999, 2.0, 3.0])
    worse = torch.tensor([1.003, 2.0, 3.0])
    assert difference(rounded, eager) == [pytest.approx(2e-3, rel=1e-3)]
    assert difference(rounded, eager, truth) is None
    assert difference(worse, eager, truth) == [pytest.approx(2e-3, rel=1e-3)]
    assert difference((eager, worse), (eager, eager), (truth, truth)) == [
        None, pytest.approx(2e-3, rel=1e-3)]
    assert difference(eager.half(), eager, truth) == [float("inf")]


def test_accuracy_float64_reference_widens_inputs_constants_and_dtypes():
    """Eager's float64 run of an ATen graph: inputs, the tensors it holds
    (a module's parameters) and dtype arguments go to float64."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from tc.debug.accuracy import float64_reference
    torch.manual_seed(0)
    linear = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)

    def f(x):
        return linear(x) + torch.ones(3, dtype=torch.float32)

    wide = float64_reference(make_fx(f)(x), (x,))
    assert wide.dtype == torch.float64
    expected = torch.nn.functional.linear(
        x.double(), linear.weight.double(), linear.bias.double()) + 1
    torch.testing.assert_close(wide, expected, rtol=1e-12, atol=1e-12)


def _sum_twice(x):
    return (x * 2).sum()


def bisect_names_the_planted_split(device: str, monkeypatch, tmp_path,
                                   variable: str) -> None:
    """A wrong rewrite planted in an optional pass of the fusion stage
    (tc-split-reductions leaves out a split sum's last chunk) is named by
    the bisection of the optional passes; the pass's limit is the smallest
    that gives another result, and the command shows the pass's input and
    output. Shared with targets/test_cuda.py (the CUDA pipeline)."""
    monkeypatch.setenv(variable,
                       "miscompile-pass-for-testing=tc-split-reductions")
    # Small integers: every order of summation gives the same sum, so
    # only the planted rewrite changes it.
    x = torch.randint(-8, 8, (1 << 18,), device=device).float()
    report = tc.debug.bisect(_sum_twice, x, folder=tmp_path)
    assert report.first_wrong == "tc-split-reductions", str(report)
    assert report.limit is not None and report.limit > 0
    assert report.difference > 1e-3
    # The pass's input and output IR: it added the partial sums' kernel.
    assert report.after.name.endswith("tc-split-reductions.mlir")
    assert report.changed_ops.get("kernel.kernel", 0) >= 1, str(report)
    assert any(p.startswith("tc-split-reductions") for p in report.passes)
    rerun = subprocess.run(report.command, shell=True, capture_output=True,
                           text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert "IR Dump Before SplitReductionsPass" in rerun.stderr
    assert "_partial" in rerun.stderr.split(
        "IR Dump After SplitReductionsPass")[1]
    # Without the planted rewrite, nothing is wrong.
    monkeypatch.delenv(variable)
    tc.compiler.clear_cache()
    assert tc.debug.bisect(_sum_twice, x, folder=tmp_path).first_wrong \
        is None


def test_bisection_names_a_planted_optional_pass(fresh_tc, monkeypatch,
                                                 tmp_path):
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built here")
    bisect_names_the_planted_split("cpu", monkeypatch, tmp_path,
                                   "TC_CPU_OPTIONS")


def test_bisect_limit_zero_runs_no_optional_pass(tmp_path):
    """`bisect-limit=0` drops every optional pass of the decomposition and
    fusion stages and keeps the required ones; a compile with it gives
    eager's result."""
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built here")
    bisect_module = importlib.import_module("tc.debug.bisect")
    every = bisect_module._pipeline(tc.tc_opt_path(), "--tc-cpu-pipeline")
    none = bisect_module._pipeline(
        tc.tc_opt_path(), "--tc-cpu-pipeline=bisect-limit=0")
    names = [p.split("{", 1)[0] for p in none]
    assert "tc-decompose" in names and "tc-fuse" in names
    assert "tc-plan-memory" in names
    assert "tc-dedup-kernels" not in names
    assert "tc-dedup-kernels" in [p.split("{", 1)[0] for p in every]
    assert len(every) > len(none)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bisection_names_a_planted_optional_pass_on_cuda(
        fresh_tc, monkeypatch, tmp_path):
    """The same on the CUDA pipeline (its split reductions, on the GPU)."""
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not installed here")
    bisect_names_the_planted_split("cuda", monkeypatch, tmp_path,
                                   "TC_CUDA_OPTIONS")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bisection_on_cuda_runs_required_passes_on_the_reference_path(
        fresh_tc, monkeypatch, tmp_path):
    """The CUDA pipeline with a wrong rewrite planted in tc-decompose: the
    prim IR the CUDA pipeline makes runs on the CPU's reference path and
    is named, at a real size (4096 x 768 on the GPU)."""
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not installed here")
    monkeypatch.setenv("TC_CUDA_OPTIONS", PLANTED)
    torch.manual_seed(0)
    x = torch.randn(4096, 768, device="cuda")
    report = tc.debug.bisect(_erf_and_sine, x, folder=tmp_path)
    assert report.first_wrong == "tc-decompose", str(report)
    assert report.candidates == ["tc-decompose"]
    assert report.differences == [pytest.approx(2.0)]


def _sine_plus(x, y):
    return torch.sin(x) * 2 + y


@pytest.mark.requires_native
@pytest.mark.runtime_fallback
def test_cpu_checks_catch_a_planted_out_of_bounds_access(
        fresh_tc, monkeypatch, caplog):
    """TC_CPU_CHECKS=1 with an out-of-bounds read planted in every kernel
    (a test option of tc-add-kernel-checks): the kernel records it and
    reads element 0 instead, the run raises naming the kernel, the
    argument and the element, and the graph runs in eager (counted)."""
    monkeypatch.setenv("TC_CPU_CHECKS", "1")
    monkeypatch.setenv("TC_CPU_OPTIONS",
                       "miscompile-pass-for-testing=tc-add-kernel-checks")
    x, y = torch.randn(100, 64), torch.randn(100, 64)
    with caplog.at_level(logging.WARNING, logger="tc"):
        out = torch.compile(_sine_plus, backend="tc")(x, y)
    torch.testing.assert_close(out, _sine_plus(x, y))
    assert tc.counters["runtime_fallbacks"] == 1, dict(tc.counters)
    failures = [r.getMessage() for r in caplog.records
                if "failed at run time" in r.getMessage()]
    assert len(failures) == 1, failures
    assert "tc check failed: kernel main_fused_sin_mul_add_0: argument #" \
        in failures[0], failures
    assert "is out of bounds (the access was skipped)" in failures[0]


@pytest.mark.requires_native
@pytest.mark.runtime_fallback
@pytest.mark.parametrize("device", [
    "cpu", pytest.param("cuda", marks=pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs CUDA"))])
def test_checks_name_the_kernel_that_wrote_a_nan(fresh_tc, monkeypatch,
                                                 caplog, device):
    """A NaN written by a kernel (log of a negative number) is named after
    the run (TC_CPU_CHECKS / TC_CUDA_CHECKS): the kernel, its output
    argument and the element; the graph runs in eager."""
    monkeypatch.setenv("TC_CPU_CHECKS" if device == "cpu"
                       else "TC_CUDA_CHECKS", "1")
    x = torch.rand(64, device=device) + 0.5
    x[37] = -1.0

    def f(x):
        return torch.log(x) * 3

    with caplog.at_level(logging.WARNING, logger="tc"):
        out = torch.compile(f, backend="tc")(x)
    torch.testing.assert_close(out, f(x), equal_nan=True)
    failures = [r.getMessage() for r in caplog.records
                if "failed at run time" in r.getMessage()]
    assert len(failures) == 1, failures
    assert "tc check failed: kernel main_fused_log_mul" in failures[0], \
        failures
    assert "argument #1: element 37 was written a NaN" in failures[0], \
        failures
    assert tc.counters["runtime_fallbacks"] == 1


@pytest.mark.requires_native
def test_cpu_checks_leave_a_correct_graph_compiled(fresh_tc, monkeypatch):
    """With checks and nothing wrong, tc's kernels give eager's results,
    reductions and GEMMs included, and nothing falls back."""
    monkeypatch.setenv("TC_CPU_CHECKS", "1")

    def f(x, w):
        h = torch.relu(x @ w)
        return torch.softmax(h, dim=-1).sum(0), h.amax()

    x, w = torch.randn(96, 48), torch.randn(48, 80)
    compiled = torch.compile(f, backend="tc")
    for _ in range(2):
        torch.testing.assert_close(compiled(x, w), f(x, w))
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["subgraphs_compiled"] == 1
    # (Compiled with the checks.)
    assert [key[2] for key in tc.compiler.build.cache
            if "checks=true" in key[2]], list(tc.compiler.build.cache)


def test_python_m_tc_bisect_runs_a_repro_script(fresh_tc, monkeypatch,
                                                tmp_path):
    """`python -m tc bisect repro.py`: the minifier's repro script, bisected
    in a process of its own, names the planted pass and exits 1; without
    the plant it names none and exits 0."""
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built here")
    gm = torch.fx.symbolic_trace(_erf_and_sine)
    repro = tc.debug.write_repro(gm, [torch.randn(64)], tmp_path / "r.py")
    env = dict(os.environ, TC_CACHE_DIR=str(tmp_path / "cache"),
               TC_CPU_OPTIONS=PLANTED)
    run = subprocess.run([sys.executable, "-m", "tc", "bisect", str(repro),
                          str(tmp_path / "ir")], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    assert "first wrong: tc-decompose" in run.stdout, run.stdout
    env.pop("TC_CPU_OPTIONS")
    run = subprocess.run([sys.executable, "-m", "tc", "bisect", str(repro)],
                         env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "eager's after every pass" in run.stdout


class _TrainBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.down(torch.erf(self.up(self.norm(x))))


def test_tc_repro_checks_a_training_graph_by_its_gradients(
        fresh_tc, monkeypatch, tmp_path, tc_logs):
    """TC_REPRO=accuracy on training steps (the parameters require grad):
    the first call's forward and backward run again, in eager and with
    tc, on copies of the inputs; the planted difference is found, the
    graph is minified to the erf and written as a repro that compares
    gradients too (it fails alone with the planted option and passes
    without); the steps' losses and gradients are eager's (the graph runs
    in eager from then on)."""
    import copy
    monkeypatch.setenv("TC_CPU_OPTIONS", PLANTED)
    monkeypatch.setenv("TC_REPRO", "accuracy")
    monkeypatch.setenv("TC_REPRO_DIR", str(tmp_path / "repros"))
    torch.manual_seed(0)
    model = _TrainBlock()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="tc")
    for _ in range(2):
        x = torch.randn(8, 16)
        loss = compiled(x).square().mean()
        loss.backward()
        want = reference(x).square().mean()
        want.backward()
        torch.testing.assert_close(loss, want)
    for got, expected in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, expected.grad)
    assert tc.counters["training_graphs"] >= 1, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 1, dict(tc.counters)
    repros = sorted((tmp_path / "repros").glob("repro_*.py"))
    assert len(repros) == 1, repros
    text = repros[0].read_text()
    assert "erf" in text and ".requires_grad_()" in text
    # Its fx-dialect graph marks the input that requires grad: tc-opt
    # builds the joint forward and backward of it.
    assert "tc.requires_grad" in repros[0].with_suffix(".mlir").read_text()
    assert "linear" not in text and "layer_norm" not in text
    assert "TC_REPRO" in tc_logs.text
    env = dict(os.environ, TC_CACHE_DIR=str(tmp_path / "cache"))
    failed = subprocess.run([sys.executable, str(repros[0])], env=env,
                            capture_output=True, text=True)
    assert failed.returncode != 0 and "AssertionError" in failed.stderr
    env.pop("TC_CPU_OPTIONS")
    passed = subprocess.run([sys.executable, str(repros[0])], env=env,
                            capture_output=True, text=True)
    assert passed.returncode == 0, passed.stderr
    assert "tc matches eager" in passed.stdout


def test_tc_repro_leaves_a_correct_training_run_alone(
        fresh_tc, monkeypatch, tmp_path):
    monkeypatch.setenv("TC_REPRO", "accuracy")
    monkeypatch.setenv("TC_REPRO_DIR", str(tmp_path / "repros"))
    torch.manual_seed(0)
    model = _TrainBlock()
    x = torch.randn(8, 16)
    torch.compile(model, backend="tc")(x).square().mean().backward()
    assert tc.counters["training_graphs"] >= 1, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0
    assert not (tmp_path / "repros").exists()
