"""tc.direct: Dynamo graphs of plain tensor math written to ATen untraced.

Each case compiles with backend="tc" under no_grad and checks that the graph
took the direct path (or, for the declined cases, the make_fx path), that
tc compiled every op, and that the result equals eager's on random inputs.
"""

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
    lambda x: x.view(-1, 2).cos(),   # a view the table does not know
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


def test_training_graphs_are_not_written_directly():
    torch.manual_seed(0)
    w = torch.randn(5, requires_grad=True)
    x = torch.randn(3, 5)
    tc.reset_counters()
    torch._dynamo.reset()
    out = torch.compile(lambda a, b: (a * b).tanh().sum(dim=1),
                        backend="tc")(x, w)
    out.sum().backward()
    assert tc.counters["aten_direct"] == 0
    expected = torch.autograd.grad((x * w).tanh().sum(), w)[0]
    torch.testing.assert_close(w.grad, expected, rtol=1e-5, atol=1e-6)
