"""tc.direct: Dynamo graphs of plain tensor math written to ATen untraced.

Each case compiles with backend="tc" under no_grad and checks that the graph
took the direct path (or, for the declined cases, the make_fx path), that
tc compiled every op, and that the result equals eager's on random inputs.
"""

import contextlib
import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tc
import tc.compiler

pytestmark = pytest.mark.skipif(not tc.compiler.native_available(),
                                reason="tc native extension not built")


def gelu_manual(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) *
                                     (x + 0.044715 * torch.pow(x, 3))))


def softmax_manual(x):
    x_max = x.max(dim=1)[0][:, None]
    e = torch.exp(x - x_max)
    return e / e.sum(dim=1)[:, None]


def methods(x, y):
    return (x.exp().mul(y) - y.sum(dim=-1, keepdim=True)).div(2.0) \
        + torch.maximum(x, y).sigmoid() + x.mean(1).unsqueeze(1) \
        + torch.amax(y, dim=0) + x ** 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)
        self.norm = nn.LayerNorm(32)

    def forward(self, x):
        h = F.gelu(self.fc(x), approximate="tanh") + F.relu(x)
        return torch.softmax(self.norm(h), dim=-1)


def _run(fn, *args):
    tc.reset_counters()
    torch._dynamo.reset()
    with torch.no_grad():
        expected = fn(*args)
        got = torch.compile(fn, backend="tc")(*args)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["ops_compiled"] > 0
    assert tc.counters["runtime_fallbacks"] == 0
    return dict(tc.counters)


@pytest.mark.parametrize("fn,shapes", [
    (gelu_manual, [(1000,)]),
    (softmax_manual, [(16, 33)]),
    (methods, [(8, 5), (8, 5)]),
    (Block(), [(4, 32)]),
])
def test_written_directly(fn, shapes):
    torch.manual_seed(0)
    counters = _run(fn, *[torch.randn(*s) for s in shapes])
    assert counters["aten_direct"] == 1
    assert counters["aten_one_pass"] == 1


@pytest.mark.parametrize("fn", [
    lambda x: 1 - x.sin(),           # scalar on the left of a subtraction
    lambda x: x.sum(),               # a reduction without dims
    lambda x: F.silu(x) * 2,         # silu decomposes under make_fx
    lambda x: x[1:, ::2].cos(),      # slicing
    lambda x: torch.stack([x, x.t().reshape(6, 4)]).sum(0),
])
def test_nodes_without_a_rule_are_traced_alone(fn):
    # The graph is still written node by node; the nodes the table has no
    # rule for are traced by make_fx alone and spliced in.
    torch.manual_seed(0)
    counters = _run(fn, torch.randn(6, 4))
    assert counters["aten_direct"] == 1
    assert counters["aten_one_pass"] == 1


@pytest.mark.parametrize("fn", [
    lambda x: (x * 2).add_(1).cos(),  # a mutation inside a node traced alone
])
def test_declined_graphs_are_traced(fn):
    torch.manual_seed(0)
    counters = _run(fn, torch.randn(6, 4))
    assert counters["aten_direct"] == 0
    assert counters["aten_one_pass"] == 1


def test_integer_promotion_matches_eager():
    # int64 / int and int64 * float promote to float: Dynamo's example
    # values and the ATen ops agree, so the graph is written directly.
    x = torch.randint(-50, 50, (7, 3))
    counters = _run(lambda a: a / 3 + a * 0.5, x)
    assert counters["aten_direct"] == 1


def test_training_graphs_are_written_directly():
    torch.manual_seed(0)
    w = torch.randn(5, requires_grad=True)
    x = torch.randn(3, 5)
    tc.reset_counters()
    torch._dynamo.reset()
    out = torch.compile(lambda a, b: (a * b).tanh().sum(dim=1),
                        backend="tc")(x, w)
    out.sum().backward()
    assert tc.counters["aten_direct"] == 1
    assert tc.counters["training_graphs"] == 1
    assert tc.counters["runtime_fallbacks"] == 0
    expected = torch.autograd.grad((x * w).tanh().sum(), w)[0]
    torch.testing.assert_close(w.grad, expected, rtol=1e-5, atol=1e-6)


def test_training_under_autocast_is_written_with_its_casts():
    # Under autocast the linear layers run in bf16 and the layer norm in
    # f32: casts only the nodes traced alone write down. The written graph
    # is differentiated by tc; loss and gradients are eager's.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128),
                          nn.Linear(128, 32))
    reference = copy.deepcopy(model)
    x = torch.randn(4, 16, 64)
    tc.reset_counters()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="tc")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = compiled(x)
        expected = reference(x)
    assert got.dtype == expected.dtype == torch.bfloat16
    torch.testing.assert_close(got, expected)
    got.float().square().mean().backward()
    expected.float().square().mean().backward()
    for a, b in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=2e-2, atol=2e-3)
    assert tc.counters["aten_direct"] == 1
    assert tc.counters["training_graphs"] == 1
    # (The output's reshape stays a view of tc's result.)
    assert tc.counters["ops_compiled"] >= 10
    assert tc.counters["runtime_fallbacks"] == 0


class Attention(nn.Module):
    """A GPT-style block: embedding, fused QKV split into heads, causal
    attention, heads merged, residual and layer norm, a GELU MLP."""

    def __init__(self, width=64, heads=4, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.emb = nn.Embedding(100, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(),
                                 nn.Linear(2 * width, width), nn.Dropout(dropout))

    def layer(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2)
                   for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        x = self.norm(x + self.out(y))
        return x + self.mlp(x)

    def forward(self, ids):
        x = self.emb(ids)
        for _ in range(3):  # repeated layers: one trace of the attention
            x = self.layer(x)
        return x.reshape(-1, x.shape[-1]).flatten()


class Conv(nn.Module):
    """A ResNet-style block in eval mode."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        y = self.relu(self.bn(self.conv(x)))
        y += self.conv(x)
        y = F.adaptive_avg_pool2d(F.max_pool2d(y, 2), 1)
        return self.fc(torch.flatten(y, 1))


def _graphs(module, *inputs, training=False, autocast=False):
    """The ATen graphs of `module`'s one Dynamo graph: written directly,
    and traced whole by make_fx (under no_grad, or as a training graph's
    forward; under the CPU's bf16 autocast if `autocast`)."""
    import tc.backend
    import tc.direct

    graphs = {}

    def backend(gm, example_inputs):
        tc.reset_counters()
        graphs["direct"] = tc.backend.tracing.trace_one_pass(
            gm, example_inputs, direct=True, training=training)
        graphs["written"] = tc.counters["aten_direct"]
        original = tc.direct.direct_aten
        tc.direct.direct_aten = lambda *args: None
        try:
            graphs["make_fx"] = tc.backend.tracing.trace_one_pass(
                gm, example_inputs, direct=True, training=training)
        finally:
            tc.direct.direct_aten = original
        return gm.forward

    torch._dynamo.reset()
    grad = contextlib.nullcontext() if training else torch.no_grad()
    cast = (torch.autocast("cpu", dtype=torch.bfloat16) if autocast
            else contextlib.nullcontext())
    with grad, cast:
        torch.compile(module, backend=backend)(*inputs)
    return graphs


def _ops(graph):
    import collections
    return collections.Counter(str(node.target) for node in graph.graph.nodes
                               if node.op == "call_function")


@pytest.mark.parametrize("module,make_input", [
    (Attention, lambda: torch.randint(0, 100, (2, 16))),
    (Conv, lambda: torch.randn(2, 3, 16, 16)),
])
def test_models_are_written_as_make_fx_traces_them(module, make_input):
    # Node by node, the graph holds the ATen ops make_fx's trace of the
    # whole graph holds, and computes eager's values.
    torch.manual_seed(0)
    model = module().eval()
    x = make_input()
    graphs = _graphs(model, x)
    assert graphs["written"] == 1
    assert _ops(graphs["direct"]) == _ops(graphs["make_fx"])
    counters = _run(model, x)
    assert counters["aten_direct"] == 1


@pytest.mark.parametrize("training,autocast", [
    (True, False), (False, True), (True, True)])
def test_training_and_autocast_graphs_are_written_as_make_fx_traces_them(
        training, autocast):
    # A training graph's forward, and a graph under the caller's autocast:
    # the nodes autocast casts are traced alone under it, and the graph
    # holds the ATen ops (casts included) of make_fx's whole trace.
    torch.manual_seed(0)
    model = Attention(dropout=0.0).train(training)
    graphs = _graphs(model, torch.randint(0, 100, (2, 16)),
                     training=training, autocast=autocast)
    assert graphs["written"] == 1
    assert _ops(graphs["direct"]) == _ops(graphs["make_fx"])
    if autocast:
        assert _ops(graphs["direct"])["aten._to_copy.default"] > 0


def test_nodes_traced_alone_see_eagers_requires_grad(monkeypatch):
    # A training graph's attention is traced alone on the values of nodes
    # spliced from other traces (the split of the fused QKV), whose fake
    # values carry no requires_grad: CUDA's attention then left out the
    # log-sum-exp its backward reads, and every gradient came out NaN.
    import torch.fx.experimental.proxy_tensor as proxy_tensor

    flags = []
    make_fx = proxy_tensor.make_fx

    def recording(fn, *args, **kwargs):
        traced = make_fx(fn, *args, **kwargs)

        def trace(*values):
            flags.append([v.requires_grad for v in values
                          if isinstance(v, torch.Tensor)
                          and v.is_floating_point()])
            return traced(*values)
        return trace

    monkeypatch.setattr(proxy_tensor, "make_fx", recording)
    torch.manual_seed(0)
    graphs = _graphs(Attention(dropout=0.0).train(),
                     torch.randint(0, 100, (2, 16)), training=True)
    assert graphs["written"] == 1
    # The attention's query, key and value (the first trace is the
    # split's, on the fused projection, which requires grad too).
    assert [True, True, True] in flags
    assert all(all(f) for f in flags)


def test_repeated_layers_trace_their_attention_once(monkeypatch):
    import torch.fx.experimental.proxy_tensor as proxy_tensor

    calls = []
    make_fx = proxy_tensor.make_fx

    def counting(*args, **kwargs):
        calls.append(1)
        return make_fx(*args, **kwargs)

    monkeypatch.setattr(proxy_tensor, "make_fx", counting)
    torch.manual_seed(0)
    graphs = _graphs(Attention().eval(), torch.randint(0, 100, (2, 16)))
    assert graphs["written"] == 1
    # The first layer's split and attention are traced alone, once each
    # (the other two layers replay them), and the whole graph once for
    # the comparison.
    assert len(calls) == 3


def test_graphs_under_autocast_are_written_with_its_casts():
    # Under the caller's autocast an op's dtype comes from the dispatcher's
    # casts, which only a trace writes down: a graph written by the rules
    # alone gave f32 where eager gives bf16.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(),
                          nn.Linear(128, 32)).eval()
    x = torch.randn(4, 16, 64)
    tc.reset_counters()
    torch._dynamo.reset()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        expected = model(x)
        got = torch.compile(model, backend="tc")(x)
    assert got.dtype == expected.dtype == torch.bfloat16
    torch.testing.assert_close(got, expected)
    assert tc.counters["aten_direct"] == 1
    assert tc.counters["aten_one_pass"] == 1
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["runtime_fallbacks"] == 0


def test_an_autocast_region_leaves_eagers_autocast_as_it_was():
    """A graph entering autocast itself is traced whole, not node by node:
    traced alone, its entering node ran and its leaving node did not, and
    eager's autocast then kept its casts of weights forever (an SGD
    step under autocast after it did not change eager's products)."""
    def region(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
        return torch.relu(y).float() * 2

    torch.manual_seed(0)
    x, w = torch.randn(32, 48), torch.randn(48, 16)
    tc.reset_counters()
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(region, backend="tc")(x, w),
                               region(x, w))
    assert tc.counters["aten_direct"] == 0
    assert tc.counters["aten_one_pass"] == 1
    assert tc.counters["ops_compiled"] > 0
    # Eager's autocast casts a weight that changed since its last region.
    weight = torch.randn(48, 16, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        before = x @ weight
    with torch.no_grad():
        weight.add_(1.0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        after = x @ weight
    torch.testing.assert_close(after.float(), before.float() + x.sum(
        1, keepdim=True).expand_as(after), rtol=2e-2, atol=0.5)
    assert not torch.equal(after, before)
