"""torch.compile(backend="tc"): partitioning, fallbacks, logs, counters."""

import copy
import logging
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import tc
import tc.backend
import tc.compiler

from batch_model import (SEQUENCES, AttentionBlock, BatchModel,
                         MaskedTokens, TokenEncoder, TokenMLP,
                         assert_compiled_once_symbolic,
                         masked_tokens_inputs)


def foo(x, y):  # seed 000
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


def mlp():  # seed 004
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(100, 200), nn.ReLU(), nn.Linear(200, 10))


@pytest.fixture
def no_native(monkeypatch):
    """Makes tc behave as if the native extension were not built."""
    monkeypatch.setattr(tc.compiler.extension, "_native", None)
    monkeypatch.setattr(tc.compiler.extension, "_native_error",
                        "tc native extension not built (test)")
    monkeypatch.setattr(tc.backend.common, "warned_native_missing", [])


class _FailingNative:
    """A native module whose compiler always reports an error."""

    @staticmethod
    def compile(ir, dump_stages, cache_dir="", options=""):
        raise RuntimeError("loc(\"sin\"): error: boom from the compiler")


class _EagerCompiled:
    """Stands in for a compiled subgraph by running it eagerly."""

    num_kernels = 1

    def __init__(self, gm):
        self.gm = gm

    def __call__(self, *args):
        return self.gm(*args)


def _fake_compile(compiled):
    def compile_graph(gm, dump_stages=False):
        tc.importer.import_graph(gm, lift_get_attrs=True)  # must import
        compiled.append(gm)
        return _EagerCompiled(gm)
    return compile_graph


def test_entry_point_is_discoverable():
    code = ("import sys, torch._dynamo\n"
            "from torch._dynamo.backends.registry import lookup_backend\n"
            "assert 'tc' in torch._dynamo.list_backends()\n"
            "assert 'tc' not in sys.modules\n"
            "fn = lookup_backend('tc')\n"
            "print(fn.__module__, fn.__name__)\n")
    result = subprocess.run([sys.executable, "-c", code],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["tc.backend", "tc_backend"]


def test_falls_back_to_eager_without_native(fresh_tc, no_native, tc_logs):
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    out = torch.compile(foo, backend="tc")(x, y)
    torch.testing.assert_close(out, foo(x, y))
    assert tc.counters["subgraphs_compiled"] == 0
    assert tc.counters["fallback_graphs"] == 1
    assert tc.counters["ops_eager"] == 3
    assert "not built" in tc_logs.text
    for op in ("aten::sin", "aten::cos", "aten::add.Tensor"):
        assert f"eager: {op} (node" in tc_logs.text


def test_compile_error_is_logged_with_ir_and_repro(fresh_tc, monkeypatch,
                                                   tc_logs):
    monkeypatch.setattr(tc.compiler.extension, "_native", _FailingNative())
    monkeypatch.setattr(tc.compiler.extension, "_native_error", None)
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    out = torch.compile(foo, backend="tc")(x, y)
    torch.testing.assert_close(out, foo(x, y))
    assert tc.counters["fallback_graphs"] == 1
    text = tc_logs.text
    assert "boom from the compiler" in text
    assert "--tc-cpu-pipeline" in text
    assert 'fx.call_function "aten::sin"' in text  # the IR
    dumped = list((fresh_tc / "ir").glob("*.mlir"))
    assert len(dumped) == 1
    assert str(dumped[0]) in text
    assert dumped[0].read_text().startswith("module {")


def test_internal_error_runs_eager(fresh_tc, monkeypatch, tc_logs):
    def broken(gm, settings):
        raise ValueError("bug in tc")

    monkeypatch.setattr(tc.backend.partition, "partition_and_compile", broken)
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    torch.testing.assert_close(torch.compile(foo, backend="tc")(x, y),
                               foo(x, y))
    assert tc.counters["fallback_graphs"] == 1
    assert "internal error" in tc_logs.text
    assert "bug in tc" in tc_logs.text


def test_partitions_around_unsupported_ops(fresh_tc, monkeypatch, tc_logs):
    compiled = []
    monkeypatch.setattr(tc.compiler, "compile_graph", _fake_compile(compiled))

    def fn(x):
        a = torch.sin(x) * 2
        b = torch.special.airy_ai(a)  # not supported: splits the graph
        return torch.cos(b) + 1, a.t()

    x = torch.randn(4, 4)
    out = torch.compile(fn, backend="tc")(x)
    for got, want in zip(out, fn(x)):
        torch.testing.assert_close(got, want)
    assert tc.counters["subgraphs_compiled"] == 2 == len(compiled)
    assert tc.counters["graphs_compiled"] == 1
    # sin, mul, cos, add, and the returned view `t`, which tc applies to
    # its result of `a` (a view with eager's strides, not a copy).
    assert tc.counters["ops_compiled"] == 5
    assert tc.counters["ops_eager"] == 1
    assert out[1].stride() == (1, 4)
    assert "eager: aten::special_airy_ai (node 'special_airy_ai'" in tc_logs.text
    assert "is not supported by tc yet" in tc_logs.text


def _record_compiled(monkeypatch):
    """The CompiledFunctions tc makes from now on, in order."""
    functions = []
    compile_graph = tc.compiler.compile_graph

    def record(gm, **kwargs):
        functions.append(compile_graph(gm, **kwargs))
        return functions[-1]
    monkeypatch.setattr(tc.compiler, "compile_graph", record)
    return functions


class _Ops(TorchDispatchMode):
    """Records the ATen ops that run while it is on (`seen`)."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_permuted_input_is_read_in_place(fresh_tc, monkeypatch):
    """A subgraph input that an eager op hands over transposed (here: an
    elementwise op keeps its input's strides) is read in its memory order
    and permuted inside the compiled graph, not copied to a contiguous
    tensor before the call; called with another layout, the compiled
    function copies and still agrees with eager."""
    functions = _record_compiled(monkeypatch)
    def f(x, w):
        t = torch.special.airy_ai(x.transpose(1, 2))  # eager, transposed
        return (t * 2).relu() @ w

    x, w = torch.randn(4, 8, 16), torch.randn(8, 5)
    compiled = torch.compile(f, backend="tc")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, w), f(x, w))
        with _Ops() as ops:
            torch.testing.assert_close(compiled(x, w), f(x, w))
    assert tc.counters["kernels"] > 0 and tc.counters["ops_eager"] == 2
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    assert not [op for op in ops.seen if "copy" in op or "clone" in op], \
        ops.seen
    (function,) = functions
    assert function._input_permutations == [(0, 2, 1), None]
    t = torch.special.airy_ai(x.transpose(1, 2)).contiguous()
    torch.testing.assert_close(function(t, w), (t * 2).relu() @ w)


def test_permuted_output_keeps_eager_strides(fresh_tc, monkeypatch):
    """A subgraph output that eager lays out transposed (an elementwise op
    of a transposed input keeps its strides) is written in that memory
    order and returned with eager's strides: the eager op after it and the
    next subgraph get the layout they would in eager, and nothing is
    copied between them."""
    functions = _record_compiled(monkeypatch)
    def f(x, w):
        a = torch.sin(x.transpose(1, 2)) * 3  # eager: transposed strides
        t = torch.special.airy_ai(a)          # eager keeps them
        return (t + a).relu() @ w, a

    x, w = torch.randn(4, 8, 16), torch.randn(8, 5)
    compiled = torch.compile(f, backend="tc")
    with torch.no_grad():
        want = f(x, w)
        compiled(x, w)
        with _Ops() as ops:
            got = compiled(x, w)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e)
    assert got[1].stride() == want[1].stride() == (128, 1, 16)
    assert tc.counters["kernels"] > 0 and tc.counters["ops_eager"] == 1
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    assert not [op for op in ops.seen if "copy" in op or "clone" in op], \
        ops.seen
    assert functions[0]._output_inverses == [(0, 2, 1)]


def test_weight_gradients_come_back_in_the_weights_layout(fresh_tc,
                                                         monkeypatch):
    """Around an op left to eager, AOTAutograd's forward saves each
    autocast weight as `t(t(w))` for the backward: written as eager lays
    it out, the backward reads it in place, and each weight's gradient
    reaches autograd in its parameter's layout; no copy in the backward
    (Llama's training step on the H100 made 57 weight-sized copies)."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(64, 48, bias=False)
            self.b = torch.nn.Linear(48, 40, bias=False)

        def forward(self, x):
            return self.b(torch.sin(self.a(x)))

    # sin stands in for an op tc leaves to eager (attention on the GPU).
    supported = tc.backend.partition.is_supported
    monkeypatch.setattr(
        tc.backend.partition, "is_supported",
        lambda node: ((False, "left to eager by the test")
                      if "sin" in str(node.target) else supported(node)))
    torch.manual_seed(0)
    net = Net()
    ref = copy.deepcopy(net)
    x = torch.randn(32, 64)
    compiled = torch.compile(net, backend="tc")
    for model in (ref, compiled):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
        out = out.float().square().sum()
        with _Ops() as ops:
            out.backward()
    assert tc.counters["ops_eager"] >= 1 and tc.counters["kernels"] > 0
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    assert not [op for op in ops.seen if "clone" in op or "contiguous" in op
                or "copy_.default" in op], ops.seen
    for mine, theirs in zip(net.parameters(), ref.parameters()):
        assert mine.grad.stride() == theirs.grad.stride()
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=2e-2,
                                   atol=2e-2)


def test_subgraphs_are_runs_in_graph_order(fresh_tc, monkeypatch):
    """Subgraphs are the runs of supported ops between eager ones, in the
    graph's order: `cos`, which does not depend on the first eager op,
    stays after it, not merged into the subgraph of `sin` before it (as
    the capability partitioner merges independent subgraphs: a backward's
    recomputed activations were all computed at its start and held until
    their use)."""
    compiled = []
    monkeypatch.setattr(tc.compiler, "compile_graph", _fake_compile(compiled))

    def fn(x, y):
        a = torch.special.airy_ai(torch.sin(x) * 2)  # eager: a split
        c = torch.special.airy_ai(torch.cos(y) * 3)
        return a + c

    x, y = torch.randn(4, 4), torch.randn(4, 4)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(fn, backend="tc")(x, y),
                                   fn(x, y))
    ops = [" ".join(str(n.target) for n in gm.graph.nodes
                    if n.op == "call_function") for gm in compiled]
    assert len(ops) == 3, ops
    assert "sin" in ops[0] and "cos" not in ops[0], ops
    assert "cos" in ops[1] and "add" in ops[2], ops


def test_data_dependent_graph_falls_back_with_a_log_line(fresh_tc, tc_logs,
                                                        caplog):
    """A graph that needs tensor values to trace (narrow at a position held
    in a tensor) runs in eager: a `fallbacks` line, no internal-error
    warning, eager's result."""
    def fn(x, start):
        return torch.narrow(x, 1, start, 2) * 2

    x, start = torch.randn(4, 5), torch.tensor(2)
    with caplog.at_level("WARNING", logger="tc"):
        out = torch.compile(fn, backend="tc")(x, start)
    torch.testing.assert_close(out, fn(x, start))
    assert "needs tensor data at compile time" in tc_logs.text
    assert "internal error" not in tc_logs.text
    assert tc.counters["fallback_graphs"] >= 1


@pytest.mark.requires_native
def test_mode_max_autotune_on_cpu_compiles_as_default(fresh_tc, tc_logs,
                                                      monkeypatch):
    from tc.compiler import autotune

    monkeypatch.setattr(autotune, "_logged_cpu", [])
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    out = torch.compile(foo, backend="tc", mode="max-autotune")(x, y)
    torch.testing.assert_close(out, foo(x, y))
    assert "compiles CPU graphs as mode='default'" in tc_logs.text
    assert tc.counters["subgraphs_compiled"] == 1
    assert tc.counters["ops_eager"] == 0


def test_autotune_keeps_the_fastest_correct_candidate(fresh_tc, tc_logs):
    """The tuner on stand-in candidates: a slow default, a wrong one
    (rejected, whatever its speed), a fast one (kept); the choice goes to
    disk and a later compile reads it. The caller's tensors are untouched
    (each candidate runs on copies)."""
    import time as clock

    from tc.compiler import autotune

    class Candidate:
        device = torch.device("cpu")

        def __init__(self, delay, wrong=False):
            self.delay, self.wrong, self.calls = delay, wrong, 0

        def draw_seed(self):
            return None

        def __call__(self, x):
            self.calls += 1
            clock.sleep(self.delay)
            x.add_(1)  # an in-place update of an input
            return (x * 2 + (1 if self.wrong else 0),)

    record = tc.cache_dir() / "autotune" / "graph.json"
    candidates = {"": Candidate(0.002), "vector-width=2": Candidate(0.0),
                  "max-block-size=256": Candidate(0.0002)}
    wrong = candidates["vector-width=2"]
    wrong.wrong = True
    tuned = autotune._Autotuned(candidates, record, make=lambda c: c)
    x = torch.randn(8)
    before = x.clone()
    tuned(x.clone())
    assert tuned.choice == "max-block-size=256"
    assert "computes other results than the default" in tc_logs.text
    assert "max-autotune chose 'max-block-size=256'" in tc_logs.text
    assert tc.counters["autotuned_graphs"] == 1
    assert autotune._read_record(record) == "max-block-size=256"
    torch.testing.assert_close(x, before)
    calls = wrong.calls
    tuned(x)
    assert wrong.calls == calls  # the chosen one runs from now on


def test_unknown_option_is_logged(fresh_tc, no_native, tc_logs):
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    torch.compile(foo, backend="tc", options={"triton.cudagraphs": True})(
        x, y)
    assert "option 'triton.cudagraphs' is not supported yet" in tc_logs.text


def _counting_backend(calls):
    def backend(gm, example_inputs, **kwargs):
        calls.append(gm)
        return tc.backend.tc_backend(gm, example_inputs, **kwargs)
    return backend


def _batch_graph(x, w):
    return torch.relu(x @ w).sum(1) + torch.sin(x).mean(1)


BATCHES = (3, 5, 7, 9, 17, 33)


@pytest.mark.parametrize("graph", ["functional", "module"])
def test_dynamic_true_compiles_once_for_every_batch(fresh_tc, graph):
    """dynamic=True: Dynamo calls the backend once and tc compiles once,
    with the batch as the graph's symbolic size (docs/DynamicShapes.md);
    every batch size gets eager's results from that one compile."""
    calls = []
    if graph == "module":
        model = BatchModel().eval()
        fn = torch.compile(model, backend=_counting_backend(calls),
                           dynamic=True)
        reference = model
        w = None
    else:
        fn = torch.compile(_batch_graph, backend=_counting_backend(calls),
                           dynamic=True)
        w = torch.randn(8, 4)
        reference = _batch_graph
    with torch.no_grad():
        for batch in BATCHES + (5,):
            x = torch.randn(batch, 8)
            args = (x,) if w is None else (x, w)
            torch.testing.assert_close(fn(*args), reference(*args))
    assert len(calls) == 1
    assert_compiled_once_symbolic(tc.counters)


def test_symbolic_graph_ir_has_the_symbolic_size(fresh_tc, tc_logs):
    """The compiled graph really is symbolic: its fx text has `?` batch
    dimensions, and its kernels were compiled once."""
    fn = torch.compile(_batch_graph, backend="tc", dynamic=True)
    w = torch.randn(8, 4)
    for batch in (3, 4):
        x = torch.randn(batch, 8)
        torch.testing.assert_close(fn(x, w), _batch_graph(x, w))
    assert "tensor<?x8xf32>" in tc_logs.text
    assert "tensor<3x8xf32>" not in tc_logs.text
    assert tc.counters["symbolic_graphs"] == 1


def test_automatic_dynamic_compiles_once_more(fresh_tc):
    """Without dynamic=, Dynamo compiles the first size statically, and
    recompiles with a symbolic batch when it changes: tc compiles that one
    once for every later size."""
    calls = []
    fn = torch.compile(_batch_graph, backend=_counting_backend(calls))
    w = torch.randn(8, 4)
    for batch in BATCHES:
        x = torch.randn(batch, 8)
        torch.testing.assert_close(fn(x, w), _batch_graph(x, w))
    assert len(calls) == 2
    assert tc.counters["graphs_compiled"] == 2
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0


def _two_batched_inputs(x, y):
    return torch.where(x > 0, torch.clamp(x, -0.5, 0.5),
                       y.exp()).log_softmax(-1)


def test_dynamic_inputs_share_the_batch(fresh_tc):
    """Two inputs with the same symbolic batch: one symbol in tc's trace
    (no guard that they are equal), one compile, eager's results."""
    fn = torch.compile(_two_batched_inputs, backend="tc", dynamic=True)
    for batch in BATCHES:
        x, y = torch.randn(batch, 8), torch.randn(batch, 8)
        torch.testing.assert_close(fn(x, y), _two_batched_inputs(x, y))
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["shape_specializations"] == 0


class _FlattenHead(torch.nn.Module):
    """A classifier head reading the batch size: `x.view(x.shape[0], -1)`
    (Dynamo passes the size as a scalar input), then `flatten(1)`."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4 * 8, 16)
        self.second = torch.nn.Linear(16, 5)

    def forward(self, x):
        h = self.first(torch.relu(x * 2).view(x.shape[0], -1))
        return torch.softmax(self.second(torch.sigmoid(h)[:, :, None]
                                         .flatten(1)), -1)


def _column_slices(x):
    a, b = x.chunk(2, dim=1)
    return torch.sigmoid(a) * b[:, None, :].flatten(1) + x[:, 1:3].sum(
        -1, keepdim=True) - x[:, 5, None]


def test_dynamic_slices(fresh_tc):
    """Slices, splits and selects of the feature dimensions and whole
    slices of the batch (`x[:, i:j]`, `chunk`, `x[:, 5]`, `x[:, None]`)
    compile once for every batch size."""
    fn = torch.compile(_column_slices, backend="tc", dynamic=True)
    for batch in BATCHES:
        x = torch.randn(batch, 8)
        torch.testing.assert_close(fn(x), _column_slices(x))
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["shape_specializations"] == 0
    assert tc.counters["ops_eager"] == 0


def test_dynamic_view_by_the_batch_size(fresh_tc):
    """A graph that computes a view's size from the batch (a scalar input
    of Dynamo's graph) compiles once: the size is read from a batched
    input's shape."""
    model = _FlattenHead().eval()
    fn = torch.compile(model, backend="tc", dynamic=True)
    with torch.no_grad():
        for batch in BATCHES:
            x = torch.randn(batch, 4, 8)
            torch.testing.assert_close(fn(x), model(x))
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["shape_specializations"] == 0
    assert tc.counters["ops_eager"] == 0


def test_dynamic_linear_on_3d_inputs(fresh_tc, tc_logs):
    """A Linear on a 3-d input with a symbolic batch (the tokens fixed)
    compiles once for every batch size: the merged view, GEMM and view
    back are one n-d by 2-d product."""
    model = TokenMLP().eval()
    fn = torch.compile(model, backend="tc")
    with torch.no_grad():
        for batch in BATCHES:
            x = torch.randn(batch, 4, 16)
            torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(fn(x), model(x))
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["shape_specializations"] == 0
    assert '"aten::matmul"' in tc_logs.text
    assert "tensor<?x4x16xf32>" in tc_logs.text


def test_linear_on_3d_input_is_one_product(fresh_tc, tc_logs):
    """Static shapes too: a Linear on a 3-d input is one n-d by 2-d
    product (not a view merging the rows, a GEMM and a view back), so the
    layer norm after it reduces once per row (with the merged view its
    reductions ran once per element: 80x eager's time at [64, 16, 1024])."""
    model = TokenMLP().eval()
    fn = torch.compile(model, backend="tc")
    with torch.no_grad():
        x = torch.randn(6, 4, 16)
        torch.testing.assert_close(fn(x), model(x))
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["ops_eager"] == 0
    assert '"aten::matmul"' in tc_logs.text
    assert '"aten::addmm"' not in tc_logs.text


def test_dynamic_batch_and_sequence_compile_once(fresh_tc, tc_logs):
    """dynamic=True on [batch, sequence, features] inputs: a batch and a
    sequence length that both vary (equal to each other too) compile once,
    as rows `[B * S, features]` with one symbolic size; eager's results,
    outputs with the sequence, merged with the batch, and sliced."""
    calls = []
    model = MaskedTokens().eval()
    fn = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for batch, length in SEQUENCES + ((3, 5),):
            args = masked_tokens_inputs(batch, length)
            torch.testing.assert_close(fn(*args), model(*args))
    assert len(calls) == 1
    assert_compiled_once_symbolic(tc.counters)
    assert "tensor<?x8xf32>" in tc_logs.text  # the rows, N = B * S
    assert "tensor<?xf32>" in tc_logs.text  # the mask


def _mask_first(mask, x):
    return torch.where(mask[..., None], torch.sigmoid(x), x * 0.5).softmax(
        -1) * mask.unsqueeze(-1).float()


def test_dynamic_sequence_with_the_mask_first(fresh_tc):
    """The rows come from the widest input: a `[B, S]` mask before the
    `[B, S, H]` tensor (under dynamic=True all three sizes of `x` are
    symbolic; H, its features, is specialized)."""
    fn = torch.compile(_mask_first, backend="tc", dynamic=True)
    for batch, length in SEQUENCES:
        x = torch.randn(batch, length, 8)
        mask = torch.rand(batch, length) > 0.5
        torch.testing.assert_close(fn(mask, x), _mask_first(mask, x))
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["ops_eager"] == 0


def test_automatic_dynamic_sequence_length(fresh_tc):
    """Without dynamic=: the first length compiles statically; when the
    sequence length changes (the batch fixed at 2), Dynamo makes it
    symbolic and tc compiles once for every later length."""
    calls = []
    model = TokenMLP().eval()
    fn = torch.compile(model, backend=_counting_backend(calls))
    with torch.no_grad():
        for length in (3, 5, 7, 9, 17, 33, 2):
            x = torch.randn(2, length, 16)
            torch.testing.assert_close(fn(x), model(x))
    assert tc.counters["ops_eager"] == 0
    assert len(calls) == 2
    assert tc.counters["graphs_compiled"] == 2
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["shape_specializations"] == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_channel_layer_norm_matches_eager(fresh_tc, dtype):
    """`LayerNorm2d` (a layer norm over the channels of a channels-last
    view, permuted back), odd sizes: its row statistics are realized by a
    kernel of their own (tc-fuse), the rest reads them."""
    torch.manual_seed(0)
    x = torch.randn(3, 37, 9, 11, dtype=dtype)
    w, b = torch.randn(37, dtype=dtype), torch.randn(37, dtype=dtype)

    def norm2d(x, w, b):
        y = F.layer_norm(x.permute(0, 2, 3, 1), (37,), w, b, 1e-6)
        return y.permute(0, 3, 1, 2) + x

    got = torch.compile(norm2d, backend="tc")(x, w, b)
    torch.testing.assert_close(got, norm2d(x, w, b))
    assert tc.counters["kernels"] >= 2
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0


def test_dynamic_attention_compiles_once_in_parts(fresh_tc, caplog):
    """A transformer block whose batch and sequence length both vary:
    attention's products and softmax over the sequence are not row-wise,
    so they run in eager between the parts tc compiles on rows (layer
    norms, projections, GeLU, residuals). One compile serves every (B, S),
    with eager's results, and the log names each op left to eager (attention as one tc::attention)."""
    caplog.set_level(logging.INFO, logger="tc.fallbacks")
    calls = []
    model = AttentionBlock().eval()
    fn = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for batch, length in SEQUENCES:
            x = torch.randn(batch, length, 32)
            torch.testing.assert_close(fn(x), model(x))
    assert len(calls) == 1
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["shape_specializations"] == 0
    assert tc.counters["subgraphs_compiled"] == 2  # before and after
    assert tc.counters["ops_compiled"] >= 20
    assert tc.counters["ops_eager"] > 0
    assert "eager: tc::attention" in caplog.text  # one fused op
    assert "eager: aten::addmm" not in caplog.text
    assert "failed at run time" not in caplog.text


def test_dynamic_token_ids_compile_once_in_parts(fresh_tc, caplog):
    """Token ids `[B, S]` have no features: each id is a row, and their
    embedding compiles on rows. Positions (a buffer's `[:, :S]`, an input
    `[S]`) are sizes of the rows but not rows: their lookups run in eager.
    One compile serves every (B, S), lengths past 64 among them, with
    eager's results; an id out of the table's range raises eager's
    IndexError."""
    caplog.set_level(logging.INFO, logger="tc.fallbacks")
    calls = []
    model = TokenEncoder().eval()
    fn = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for batch, length in (*SEQUENCES, (2, 64)):
            ids = torch.randint(0, 50, (batch, length))
            positions = torch.randint(0, 64, (length,))
            torch.testing.assert_close(fn(ids, positions),
                                       model(ids, positions))
        assert len(calls) == 1
        assert tc.counters["symbolic_graphs"] == 1
        assert tc.counters["graphs_compiled"] == 1
        assert tc.counters["shape_specializations"] == 0
        assert tc.counters["subgraphs_compiled"] >= 2
        assert "eager: aten::embedding (node 'embedding')" not in caplog.text
        assert "failed at run time" not in caplog.text
        ids[0, 1] = 50
        with pytest.raises(IndexError):
            fn(ids, positions)


def test_dynamic_repeated_layers_trace_once(fresh_tc, monkeypatch):
    """Parts of a graph in parts with the same structure (a transformer's
    repeated layers) are traced on rows once: three blocks give four
    parts, the two between attentions alike, and three traces (none of
    the whole graph, which attention makes not row-wise), with eager's
    results."""
    from tc.backend import symbolic_rows
    traces = []
    real = symbolic_rows.SymbolicRows._trace_rows

    def counted(self, *args, **kwargs):
        traces.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(symbolic_rows.SymbolicRows, "_trace_rows", counted)
    model = nn.Sequential(AttentionBlock(), AttentionBlock(),
                          AttentionBlock()).eval()
    fn = torch.compile(model, backend="tc", dynamic=True)
    with torch.no_grad():
        for batch, length in SEQUENCES[:3]:
            x = torch.randn(batch, length, 32)
            torch.testing.assert_close(fn(x), model(x))
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["subgraphs_compiled"] == 4
    assert len(traces) == 3


class _SizeMasks(nn.Module):
    """Attention with masks a graph computes from its sizes alone (a causal
    one from `arange`, boolean and additive, and one of all ones) and one
    from its input (not classified)."""

    def __init__(self, width: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x, padding):
        batch, length, width = x.shape
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).split(width, dim=-1))
        i = torch.arange(length)
        causal = (i[None, :] <= i[:, None])[None, None].expand(
            batch, 1, length, length)
        additive = torch.zeros(batch, 1, length, length).masked_fill(
            ~causal, float("-inf"))
        everyone = torch.ones(batch, 1, length, length, dtype=torch.bool)
        given = padding[:, None, None, :].expand(batch, 1, length, length)
        outs = [F.scaled_dot_product_attention(q, k, v, attn_mask=m)
                for m in (causal, additive, everyone, given)]
        return sum(o.transpose(1, 2).reshape(batch, length, width)
                   for o in outs)


def test_dynamic_size_masks_classified_once_per_size(fresh_tc, monkeypatch):
    """In a graph compiled once in parts, an attention mask computed from
    the sizes alone is read once per size and run as what it is (causal:
    `is_causal`; all ones: no mask); a mask from an input is never read.
    Eager's results at every size."""
    from tc.backend import size_masks
    kinds = []
    real = size_masks.classify

    def recorded(mask, queries, keys):
        kinds.append(real(mask, queries, keys))
        return kinds[-1]

    monkeypatch.setattr(size_masks, "classify", recorded)
    # What PyTorch's attention is handed: (a mask?, is_causal) per call.
    import tc.rows
    handed = []
    attention = tc.rows.attention_call

    def handing(q, k, v, mask, dropout_p, is_causal, *rest):
        handed.append((mask is not None, is_causal))
        return attention(q, k, v, mask, dropout_p, is_causal, *rest)

    monkeypatch.setattr(tc.rows, "attention_call", handing)
    torch.manual_seed(0)
    model = _SizeMasks().eval()
    fn = torch.compile(model, backend="tc", dynamic=True)
    sizes = ((2, 5), (3, 9), (2, 5))
    with torch.no_grad():
        for batch, length in sizes:
            x = torch.randn(batch, length, 32)
            padding = torch.rand(batch, length) > 0.3
            padding[:, 0] = True
            torch.testing.assert_close(fn(x, padding), model(x, padding))
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["symbolic_graphs"] == 1
    # Two sizes, three masks from sizes each; the repeated size reads none.
    assert sorted(kinds) == sorted(["causal", "causal", "none"] * 2)
    # Each call: the two causal masks as is_causal, the one of all ones
    # dropped, the input's padding mask handed on.
    assert sorted(handed) == sorted(
        [(False, True), (False, True), (False, False), (True, False)]
        * len(sizes))


def test_size_masks_only_deterministic_masks_of_sizes():
    """`sizes_only` takes a mask computed from sizes by deterministic ops,
    not one that reads a tensor input or draws random numbers (classified
    once, it would be reused at the size's later calls)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from tc.backend import size_masks

    def masks(x):
        n = x.shape[0]
        i = torch.arange(n)
        return (i[None, :] <= i[:, None], x > 0,
                torch.rand(n, n) > 0.5, torch.ones(n, n, dtype=torch.bool))

    gm = make_fx(masks, tracing_mode="symbolic")(torch.randn(4, 4))
    outputs = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    assert [size_masks.sizes_only(m) for m in outputs] == [
        True, False, False, True]


def test_dynamic_attention_part_that_fails_runs_eager(fresh_tc, caplog,
                                                       monkeypatch):
    """A part on rows that tc fails to compile (here: the first one, made
    to fail) runs in eager with the others' eager ops, each op logged with
    the reason; the other part stays compiled, once for every (B, S)."""
    caplog.set_level(logging.INFO, logger="tc.fallbacks")
    real = tc.compiler.start_graph
    calls = []

    def first_fails(*args, **kwargs):
        calls.append(1)
        wait = real(*args, **kwargs)
        if len(calls) > 1:
            return wait

        def failed():
            raise tc.compiler.CompileError("made to fail")
        return failed

    monkeypatch.setattr(tc.compiler, "start_graph", first_fails)
    model = AttentionBlock().eval()
    fn = torch.compile(model, backend="tc", dynamic=True)
    with torch.no_grad():
        for batch, length in SEQUENCES[:3]:
            x = torch.randn(batch, length, 32)
            torch.testing.assert_close(fn(x), model(x))
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["subgraphs_compiled"] == 1
    assert "its part did not compile: made to fail" in caplog.text
    assert "eager: aten::native_layer_norm" in caplog.text


def _pooled(x):
    return torch.tanh(x).mean(1) * 2


def test_dynamic_sequence_mean_in_parts(fresh_tc, caplog):
    """A mean over the sequence is not row-wise: it runs in eager, after
    the part before it compiled on rows, once for every (B, S)."""
    caplog.set_level(logging.INFO, logger="tc.fallbacks")
    fn = torch.compile(_pooled, backend="tc", dynamic=True)
    for batch, length in SEQUENCES[:4]:
        x = torch.randn(batch, length, 8)
        torch.testing.assert_close(fn(x), _pooled(x))
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["ops_compiled"] == 1  # tanh
    assert tc.counters["ops_eager"] == 2  # the mean, and what takes it
    assert "eager: aten::mean.dim" in caplog.text


def _attention(x):
    return torch.softmax(x @ x.transpose(1, 2), -1) @ x


def test_dynamic_sequence_not_rowwise(fresh_tc, caplog):
    """A graph with no row-wise part that computes (attention on its
    input) is not compiled as rows: it keeps the symbolic batch with the
    length specialized, or per shape, and the debug log says why; eager's
    results, nothing in eager."""
    caplog.set_level(logging.DEBUG, logger="tc")
    fn = torch.compile(_attention, backend="tc", dynamic=True)
    for batch, length in SEQUENCES[:4]:
        x = torch.randn(batch, length, 8)
        torch.testing.assert_close(fn(x), _attention(x))
    assert "no compile with the symbolic rows" in caplog.text
    assert "no row-wise part" in caplog.text
    assert tc.counters["graphs_compiled"] == 4
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0


class _CenteredNorm(torch.nn.Module):
    """A layer norm (whose eps Dynamo passes as a 0-d tensor read by
    .item() under dynamic=True), centred over the batch."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        y = self.norm(x)
        return y - y.mean(0)


def test_dynamic_per_shape_reads_numbers_passed_as_tensors(fresh_tc):
    """The per-shape path (a reduction over the batch) specializes a
    number passed as a 0-d tensor (a layer norm's eps) to its value, as
    it does sizes: every shape compiles, none runs in eager."""
    model = _CenteredNorm().eval()
    fn = torch.compile(model, backend="tc", dynamic=True)
    with torch.no_grad():
        for batch in (3, 5, 7):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(fn(x), model(x))
    assert tc.counters["shape_specializations"] == 3
    assert tc.counters["graphs_compiled"] == 3
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["ops_eager"] == 0


def _reduce_over_batch(x, w):
    # A reduction over the batch: not what the symbolic size supports yet.
    return torch.relu(x @ w).sum(0) + torch.sin(x).mean(0).sum()


def test_dynamic_shapes_compile_per_shape(fresh_tc):
    """A graph the symbolic size does not cover (a reduction over the
    batch) is compiled per batch size as it arrives, with eager's results,
    and reused when a size comes back."""
    calls = []
    fn = torch.compile(_reduce_over_batch, backend=_counting_backend(calls),
                       dynamic=True)
    w = torch.randn(8, 4)
    for batch in BATCHES + (5,):
        x = torch.randn(batch, 8)
        torch.testing.assert_close(fn(x, w), _reduce_over_batch(x, w))
    assert len(calls) == 1
    assert tc.counters["symbolic_graphs"] == 0
    assert tc.counters["shape_specializations"] == 6
    assert tc.counters["graphs_compiled"] == 6
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0


def test_dynamic_shapes_beyond_the_limit_run_eager(fresh_tc, tc_logs,
                                                   monkeypatch):
    monkeypatch.setattr(tc.backend.shapes.PerShape, "MAX_SHAPES", 2)
    fn = torch.compile(_reduce_over_batch, backend="tc", dynamic=True)
    w = torch.randn(8, 4)
    for batch in (3, 5, 7, 9):
        x = torch.randn(batch, 8)
        torch.testing.assert_close(fn(x, w), _reduce_over_batch(x, w))
    assert tc.counters["shape_specializations"] == 2
    assert tc.counters["shape_cap_fallbacks"] == 2
    assert "tc compiled it for 2 shapes already" in tc_logs.text
    # TC_LOGS=recompiles: each shape's compile and each eager run.
    assert tc_logs.text.count("graph compiled again for input shapes") == 2
    assert "shape 2 of at most 2" in tc_logs.text
    assert tc_logs.text.count("graph runs in eager for input shapes") == 2
    assert "[9, 8]" in tc_logs.text


def test_set_logs_and_env(monkeypatch, capsys):
    tc.set_logs("fallbacks,memory")
    try:
        assert tc.logs.enabled("fallbacks") and tc.logs.enabled("memory")
        assert not tc.logs.enabled("graph_code")
        tc.logs.channel_logger("fallbacks").info("hello")
        assert "[tc:fallbacks] hello" in capsys.readouterr().err
    finally:
        tc.set_logs()
    assert not tc.logs.enabled("fallbacks")
    code = ("import tc, tc.logs\n"
            "print(tc.logs.enabled('graph_code'), "
            "tc.logs.enabled('memory'))\n")
    result = subprocess.run([sys.executable, "-c", code], text=True,
                            capture_output=True,
                            env={"TC_LOGS": "graph_code", "PATH": "",
                                 "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.stdout.split() == ["True", "False"], result.stderr


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("TC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tc.cache_dir() == tmp_path / "tc"
    monkeypatch.setenv("TC_CACHE_DIR", str(tmp_path / "x"))
    assert tc.cache_dir() == tmp_path / "x"


# ============================================================================
# End to end, with the native compiler.
# ============================================================================


@pytest.mark.requires_native
def test_foo_compiles(fresh_tc, tc_logs):
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    out = torch.compile(foo, backend="tc")(x, y)
    torch.testing.assert_close(out, foo(x, y))
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["subgraphs_compiled"] == 1
    assert tc.counters["ops_compiled"] == 3
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["kernels"] >= 1
    assert 'fx.graph @main' in tc_logs.text  # graph_code
    assert "arena peak" in tc_logs.text  # memory
    assert "cpu graph compiled in" in tc_logs.text  # compile_time


@pytest.mark.requires_native
@pytest.mark.runtime_fallback
@pytest.mark.parametrize("partitioned", [False, True])
def test_run_time_failure_switches_to_eager(fresh_tc, monkeypatch, caplog,
                                            partitioned):
    """A compiled graph that raises when it runs (a GPU error, say) gives
    eager's result, says so once, and stays in eager. Both the whole-graph
    path and a partitioned graph (around an op tc leaves to eager)."""
    from tc.compiler import CompiledFunction

    def broken(self, *args):
        raise RuntimeError("injected launch failure")

    monkeypatch.setattr(CompiledFunction, "__call__", broken)

    def f(x, y):
        z = torch.sin(x) + y
        if partitioned:
            z = torch.special.airy_ai(z)
        return z * 2

    compiled = torch.compile(f, backend="tc")
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    with caplog.at_level(logging.WARNING, logger="tc"):
        torch.testing.assert_close(compiled(x, y), f(x, y))
        torch.testing.assert_close(compiled(x, y), f(x, y))
    assert tc.counters["subgraphs_compiled"] == (2 if partitioned else 1)
    failures = [r for r in caplog.records
                if "failed at run time" in r.getMessage()]
    # Once per compiled subgraph, not once per call, and counted.
    assert len(failures) == tc.counters["subgraphs_compiled"]
    assert tc.counters["runtime_fallbacks"] == len(failures)
    assert all("injected launch failure" in r.getMessage() for r in failures)


@pytest.mark.requires_native
def test_mlp_inference_and_training(fresh_tc):
    model = mlp()
    compiled = torch.compile(model, backend="tc")
    x = torch.randn(32, 100)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert tc.counters["subgraphs_compiled"] >= 1

    out = compiled(x)
    out.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for got, want in zip(grads, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, want)


@pytest.mark.requires_native
def test_inference_graph_is_traced_in_one_pass(fresh_tc):
    """Without autograd, Dynamo's graph goes to ATen in one trace (not
    through AOTAutograd); outputs that are inputs or views of inputs stay
    what eager returns."""
    def f(x, y):
        return x, x.t(), torch.sin(x) * y

    compiled = torch.compile(f, backend="tc")
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    with torch.no_grad():
        got = compiled(x, y)
    expected = f(x, y)
    assert tc.counters["aten_one_pass"] == 1
    assert tc.counters["aten_aot_autograd"] == 0
    assert tc.counters["subgraphs_compiled"] == 1
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert got[0] is x or got[0].data_ptr() == x.data_ptr()
    assert got[1].data_ptr() == x.data_ptr()  # still a view, as in eager


@pytest.mark.requires_native
def test_mutating_graph_goes_through_aot_autograd(fresh_tc):
    """An in-place update of an input needs AOTAutograd's functionalization:
    the input is updated as in eager, and tc still compiles the math."""
    def f(x, y):
        x.mul_(2)
        return torch.cos(x) + y

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    x_eager = x.clone()
    compiled = torch.compile(f, backend="tc")
    with torch.no_grad():
        got = compiled(x, y)
        expected = f(x_eager, y)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x, x_eager)
    assert tc.counters["aten_one_pass"] == 0
    assert tc.counters["aten_aot_autograd"] == 1
    assert tc.counters["subgraphs_compiled"] >= 1



@pytest.mark.requires_native
def test_inplace_relu_of_an_intermediate_is_traced_in_one_pass(fresh_tc):
    """`nn.ReLU(inplace=True)` on intermediates (torchvision's ResNets)
    mutates nothing the caller sees: the inference graph is traced once
    (its `relu_` written out of place), not sent to AOTAutograd, and a
    later reader of the value (the residual add) reads the updated one."""
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.norm = torch.nn.BatchNorm2d(8)
            self.relu = torch.nn.ReLU(inplace=True)

        def forward(self, x):
            y = self.norm(self.conv(x))
            z = self.relu(y)
            return self.relu(z + y)

    model = Block().eval()
    torch.nn.init.normal_(model.norm.bias)
    x = torch.randn(2, 8, 6, 6)
    with torch.no_grad():
        got = torch.compile(model, backend="tc")(x)
        expected = model(x)
    torch.testing.assert_close(got, expected)
    assert tc.counters["aten_one_pass"] == 1
    assert tc.counters["aten_aot_autograd"] == 0
    assert tc.counters["ops_eager"] == 0


@pytest.mark.requires_native
def test_inplace_add_on_a_products_view_is_traced_in_one_pass(fresh_tc):
    """`h = x.matmul(w); h += b` (MobileBERT's LM head): the 3-d product is
    a `view` of a 2-d `mm` nothing else reads, so the update is written out
    of place and the graph traced once (through AOTAutograd its attention
    ran in eager on CUDA)."""
    def f(x, w, b):
        h = x.matmul(w)
        h += b
        return h * 2

    args = (torch.randn(2, 3, 4), torch.randn(4, 5), torch.randn(5))
    got = torch.compile(f, backend="tc")(*args)
    torch.testing.assert_close(got, f(*args))
    assert tc.counters["aten_one_pass"] == 1
    assert tc.counters["aten_aot_autograd"] == 0
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["guard_reruns"] == 0


@pytest.mark.requires_native
def test_inplace_update_of_a_split_piece_updates_its_base(fresh_tc):
    """A piece of `split` views its base: `relu_` on it changes what a
    later reader of the base reads. Written out of place, the base would
    keep its old values (it did: tc returned them): such a graph goes to
    AOTAutograd, which functionalizes views."""
    def f(x):
        t = x * 2
        a, _ = t.split(2)
        a.relu_()
        return t + 1

    x = torch.randn(4, 3)
    got = torch.compile(f, backend="tc")(x)
    torch.testing.assert_close(got, f(x))
    assert tc.counters["aten_aot_autograd"] == 1
    assert tc.counters["subgraphs_compiled"] >= 1
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["runtime_fallbacks"] == 0


@pytest.mark.requires_native
def test_training_graph_is_differentiated_by_tc(fresh_tc):
    """A training graph tc compiles whole is traced once and differentiated
    by tc (tc-autodiff), not split by AOTAutograd."""
    def f(x):
        return torch.tanh(x).sum()

    x = torch.randn(4, 8, requires_grad=True)
    torch.compile(f, backend="tc")(x).backward()
    x_ref = x.detach().clone().requires_grad_()
    f(x_ref).backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-5, atol=1e-6)
    assert tc.counters["aten_one_pass"] == 1
    assert tc.counters["aten_aot_autograd"] == 0
    assert tc.counters["training_graphs"] == 1


@pytest.mark.requires_native
def test_whole_training_step_compiled(fresh_tc):
    """`loss.backward()` and the optimizer's step inside the compiled
    function (seed 002's pattern): Dynamo breaks the graph at the backward,
    and autograd then calls tc's backward from the user's frame. Dynamo
    used to trace tc's runtime there and hand it a mangled pointer list
    (a TypeError, or a crash). Three steps match eager's parameters."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(),
                          nn.Linear(32, 4))
    ref = copy.deepcopy(model)

    def make_step(m):
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    compiled, eager = torch.compile(make_step(model), backend="tc"), \
        make_step(ref)
    for _ in range(3):
        x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
        torch.testing.assert_close(compiled(x, y), eager(x, y),
                                   rtol=1e-4, atol=1e-5)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    assert tc.counters["training_graphs"] == 1
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["ops_eager"] == 0


@pytest.mark.requires_native
def test_graph_of_gemms_only_compiles(fresh_tc):
    """A graph with no kernel to generate (only library GEMMs, here with a
    transposed operand) compiles and runs (it used to crash the CPU
    runtime's object cache and fall back to eager)."""
    def f(x, g):
        return x.t() @ g

    x, g = torch.randn(5, 7), torch.randn(5, 3)
    torch.testing.assert_close(torch.compile(f, backend="tc")(x, g), f(x, g),
                               rtol=1e-5, atol=1e-5)
    assert tc.counters["subgraphs_compiled"] == 1
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["kernels"] == 0


@pytest.mark.requires_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 8])
def test_products_of_few_rows(fresh_tc, dtype, rows):
    """Products of a few rows (a decode step, a classifier at a small
    batch) split B's columns over the threads, as matrix-vector products
    up to 4 rows: with a bias and a ReLU after them, a transposed left
    operand, B read either way, a batch of them; eager's results."""
    torch.manual_seed(0)
    w, bias = torch.randn(1000, 512, dtype=dtype), torch.randn(1000,
                                                               dtype=dtype)

    def f(x, xt, b, p, q):
        return (torch.relu(F.linear(x, w, bias)), xt.t() @ b,
                torch.bmm(p, q))

    x = torch.randn(rows, 512, dtype=dtype)
    xt = torch.randn(512, rows, dtype=dtype)
    b = torch.randn(512, 1000, dtype=dtype)
    p = torch.randn(3, rows, 256, dtype=dtype)
    q = torch.randn(3, 256, 640, dtype=dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else {}
    for got, want in zip(torch.compile(f, backend="tc")(x, xt, b, p, q),
                         f(x, xt, b, p, q)):
        torch.testing.assert_close(got, want, **tol)
    assert tc.counters["subgraphs_compiled"] == 1
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["ops_eager"] == 0


@pytest.mark.requires_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_max_pool_indices_and_ties(fresh_tc, dtype):
    """Max pooling's values, indices and gradient, as eager's, compiled by
    tc: ties in a window pick the first maximum, NaN wins its window, ceil
    mode adds a partial last window, and a window of -inf still picks its
    first point."""
    def f(x):
        values, indices = F.max_pool2d(x, 3, 2, 1, ceil_mode=True,
                                       return_indices=True)
        return values * 2, indices

    torch.manual_seed(0)
    x = torch.randint(-3, 4, (2, 3, 10, 9)).to(dtype)
    x[0, 0, 4, 4] = float("nan")
    x[1, 2, :3, :3] = float("-inf")
    compiled = torch.compile(f, backend="tc")
    got_x = x.clone().requires_grad_()
    want_x = x.clone().requires_grad_()
    got, want = compiled(got_x), f(want_x)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["training_graphs"] == 1  # tc's own backward
    torch.testing.assert_close(got[0], want[0], equal_nan=True)
    assert torch.equal(got[1], want[1])
    cotangent = torch.randn(want[0].shape).to(dtype)
    (got[0] * cotangent).nansum().backward()
    (want[0] * cotangent).nansum().backward()
    torch.testing.assert_close(got_x.grad, want_x.grad, equal_nan=True)


@pytest.mark.requires_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_max_pool_values_alone(fresh_tc, dtype, layout):
    """Inference max pooling (no indices read): the values as a chain of
    maxima, at a ResNet stem's pooling size, from channels-first or
    channels-last memory (the latter pooled channels-last without a
    convolution in the graph); NaN wins its window, a window of -inf stays
    -inf, ceil mode's partial windows."""
    def f(x):
        return torch.relu(F.max_pool2d(x, 3, 2, 1)), F.max_pool2d(
            x[:, :, :15, :13], 3, 2, 0, ceil_mode=True)

    torch.manual_seed(0)
    x = torch.randn(4, 64, 56, 57).to(dtype)
    x[0, 3, 10, 10] = float("nan")
    x[1, 5, :3, :3] = float("-inf")
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        got = torch.compile(f, backend="tc")(x)
        want = f(x)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["kernels"] > 0
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, equal_nan=True, rtol=0, atol=0)
        assert g.stride() == w.stride()


@pytest.mark.requires_native
@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_global_average_pooling(fresh_tc, layout):
    """ResNet-50's head: a global average pool of a [N, 2048, 7, 7]
    activation to [N, 2048, 1, 1] (on the CPU a column reduction over the
    channels-last rows, its unit dimensions moving no point), then
    flattened; eager's values, compiled."""
    def f(x):
        return torch.flatten(F.adaptive_avg_pool2d(torch.relu(x), 1), 1)

    torch.manual_seed(0)
    x = torch.randn(8, 2048, 7, 7)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    got = torch.compile(f, backend="tc")(x)
    torch.testing.assert_close(got, f(x), rtol=1e-5, atol=1e-5)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["kernels"] > 0


def test_fullgraph_names_the_graph_break(fresh_tc):
    """fullgraph=True is torch.compile's: a graph break is an error that
    names it, before tc sees a graph; without it, each side of the break is
    a tc graph with eager's results."""
    def f(x):
        y = torch.sin(x) * 2
        torch._dynamo.graph_break()
        return torch.relu(y) + x

    x = torch.randn(8, 16)
    with pytest.raises(Exception, match="graph_break"):
        torch.compile(f, backend="tc", fullgraph=True)(x)
    assert tc.counters["graphs_compiled"] == 0

    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend="tc")(x), f(x))
    assert tc.counters["graphs_compiled"] == 2
    assert tc.counters["ops_eager"] == 0

    # A graph without breaks compiles whole under fullgraph=True.
    torch._dynamo.reset()
    tc.reset_counters()
    g = torch.compile(lambda x: torch.relu(torch.sin(x) * 2) + x,
                      backend="tc", fullgraph=True)
    torch.testing.assert_close(g(x), torch.relu(torch.sin(x) * 2) + x)
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["ops_eager"] == 0


@pytest.mark.requires_native
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", ["gelu", "gelu_tanh", "sigmoid"])
def test_half_precision_math_rounds_once(fresh_tc, dtype, op):
    """gelu and sigmoid in bf16/fp16 are computed in f32 and rounded once,
    as eager's kernels do, so they match eager at the dtype's own tolerance
    (decomposed in the dtype, each of their prims rounded: 1 to 2 units in
    the last place off, and a relative error of 1 near zero)."""
    fn = {"gelu": torch.nn.functional.gelu,
          "gelu_tanh": lambda x: torch.nn.functional.gelu(
              x, approximate="tanh"),
          "sigmoid": torch.sigmoid}[op]
    x = torch.randn(64, 257).to(dtype)
    torch.testing.assert_close(torch.compile(fn, backend="tc")(x), fn(x))
    assert tc.counters["ops_eager"] == 0


def test_cpu_arena_is_kept_between_runs(fresh_tc):
    """A CPU graph's arena is one block per thread, kept for the next run
    (no fresh pages at every call) and grown for a larger graph; results
    stay eager's from run to run."""
    import tc.compiler

    w = torch.randn(64, 96)

    def f(x):
        return (x @ w).relu().sum(0)

    compiled = torch.compile(f, backend="tc")
    x = torch.randn(256, 64)
    torch.testing.assert_close(compiled(x), f(x))
    block = tc.compiler.function.cpu_arenas.block
    assert block is not None and block.numel() >= 256 * 96 * 4
    pointer, size = block.data_ptr(), block.numel()
    y = torch.randn(256, 64) * 3 + 1
    torch.testing.assert_close(compiled(y), f(y))
    assert tc.compiler.function.cpu_arenas.block.data_ptr() == pointer
    big = torch.randn(4096, 64)
    torch.testing.assert_close(compiled(big), f(big), rtol=1e-4, atol=1e-3)
    assert tc.compiler.function.cpu_arenas.block.numel() > size
    assert tc.counters["runtime_fallbacks"] == 0


@pytest.mark.requires_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_concatenation_along_last_dim_of_computed_parts(fresh_tc, dtype):
    """A concatenation along the last dimension of computed parts (a
    rotary embedding's halves, parts of odd widths, an empty one), stored
    or read by elementwise ops and broadcasts (the rotated half times the
    sine, two concatenations with different parts), gives eager's values:
    on the CPU the inner loop splits at the parts' boundaries."""
    torch.manual_seed(0)

    def f(x, y, z):
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        sine = torch.sin(x[0]) if x.is_floating_point() else x[0] * 3
        parts = torch.cat([y * 3, (z - 1)[..., :0], z * y[..., :5], y + 1],
                          dim=-1)
        other = torch.cat([y[:, :7], z, y + 2, y[:, 7:] - y[:, :6]], dim=-1)
        return (rotated, x * 2 + rotated * sine, parts, parts * other,
                torch.cat([x, x * 2], dim=1))

    if dtype.is_floating_point:
        x, y = torch.randn(3, 7, 64, dtype=dtype), torch.randn(5, 13,
                                                               dtype=dtype)
        z = torch.randn(5, 5, dtype=dtype)
    else:
        x = torch.randint(-9, 9, (3, 7, 64), dtype=dtype)
        y = torch.randint(-9, 9, (5, 13), dtype=dtype)
        z = torch.randint(-9, 9, (5, 5), dtype=dtype)
    for got, want in zip(torch.compile(f, backend="tc")(x, y, z), f(x, y, z)):
        torch.testing.assert_close(got, want)
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["kernels"] > 0


@pytest.mark.requires_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_eval_batch_norm_relu_max_pool(fresh_tc, dtype):
    """A ResNet stem's batch norm (evaluation), ReLU and max pooling,
    channels-last: batch norm as eager's CPU kernel computes it (per
    channel scale and shift), the pooling window's maximum rounded once in
    bf16; eager's values at the dtype's tolerance, NaN where eager has
    it."""
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(64).eval().to(dtype)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(-2, 2)
        bn.bias.uniform_(-1, 1)

    def f(x):
        return F.max_pool2d(torch.relu(bn(x)), 3, 2, 1)

    x = torch.randn(2, 64, 29, 30).to(dtype)
    x[0, 3, 10, 10] = float("nan")
    x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        got, want = torch.compile(f, backend="tc")(x), f(x)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["kernels"] > 0


def _scalar_graph(returned_cpu: bool = False, wide_cpu: bool = False):
    """A graph on the meta device (standing for a GPU: eager takes a 0-d
    CPU tensor beside either as a scalar) computing 0-d CPU tensors from
    constants, as DeBERTa-v2's attention scale and position buckets do."""
    from torch.fx.experimental.proxy_tensor import make_fx
    import tc.decompositions

    def f(x):
        scale = torch.sqrt(torch.tensor(x.size(-1), dtype=torch.float) * 3)
        y = x / scale.to(dtype=x.dtype)
        z = torch.log(torch.tensor(511 / 128)) * x + torch.scalar_tensor(2.0)
        if wide_cpu:
            z = z + torch.ones(3).sum()
        return (y, z, scale) if returned_cpu else (y, z)

    x = torch.randn(4, 64, device="meta")
    table = tc.decompositions.core_aten_decompositions()
    return make_fx(f, decomposition_table=table)(x), x


def test_cpu_scalars_move_to_the_graph_device():
    """The 0-d CPU values a device graph computes from constants move to
    its device (constants, factories and the ops between), so the graph
    imports; one returning such a value, or with a CPU value of more than
    one element, is left as it is."""
    from tc.backend.tracing import cpu_scalars_on_graph_device

    def devices(gm):
        return {n.meta["val"].device for n in gm.graph.nodes
                if isinstance(n.meta.get("val"), torch.Tensor)}

    gm, x = _scalar_graph()
    assert devices(gm) == {torch.device("cpu"), torch.device("meta")}
    assert cpu_scalars_on_graph_device(gm, gm.graph) == 8
    gm.recompile()
    assert devices(gm) == {torch.device("meta")}
    assert all(o.device.type == "meta" for o in gm(x))
    for kind in ("returned_cpu", "wide_cpu"):
        gm, _ = _scalar_graph(**{kind: True})
        assert cpu_scalars_on_graph_device(gm, gm.graph) == 0, kind
        assert torch.device("cpu") in devices(gm)
