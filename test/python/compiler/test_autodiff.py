"""tc-autodiff: every gradient rule against torch.autograd.

Each case traces a function to core ATen, compiles the joint forward +
backward graph with tc (`compile_graph(..., requires_grad=...)`: tc's own
reverse mode on the prim dialect, not PyTorch's) and compares the outputs and
the gradients with eager PyTorch and torch.autograd on random inputs and
random cotangents (fp32, rel 1e-4). In float64 the gradients are also checked
against central finite differences of eager PyTorch along a random
direction, which does not trust any autodiff.
"""

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import tc.backend
import tc.compiler

pytestmark = pytest.mark.requires_native


def _positive(*shape):
    return torch.rand(*shape) + 0.5


def _randn(*shape):
    return torch.randn(*shape)


# (name, function, input makers, which inputs require grad)
CASES = [
    ("sin", torch.sin, [(_randn, 4, 8)], None),
    ("cos", torch.cos, [(_randn, 4, 8)], None),
    ("tanh", torch.tanh, [(_randn, 4, 8)], None),
    ("exp", torch.exp, [(_randn, 4, 8)], None),
    ("log", torch.log, [(_positive, 4, 8)], None),
    ("sqrt", torch.sqrt, [(_positive, 4, 8)], None),
    ("rsqrt", torch.rsqrt, [(_positive, 4, 8)], None),
    ("erf", torch.erf, [(_randn, 4, 8)], None),
    ("abs", torch.abs, [(_randn, 4, 8)], None),
    ("neg", torch.neg, [(_randn, 4, 8)], None),
    ("sigmoid", torch.sigmoid, [(_randn, 4, 8)], None),
    ("relu", torch.relu, [(_randn, 4, 8)], None),
    ("gelu", F.gelu, [(_randn, 4, 8)], None),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     [(_randn, 4, 8)], None),
    ("add_broadcast", lambda x, y: x + y, [(_randn, 4, 8), (_randn, 8)],
     None),
    ("sub_broadcast", lambda x, y: x - y, [(_randn, 4, 1), (_randn, 4, 8)],
     None),
    ("mul", lambda x, y: x * y, [(_randn, 4, 8), (_randn, 4, 8)], None),
    ("div", lambda x, y: x / y, [(_randn, 4, 8), (_positive, 4, 8)], None),
    ("scalar_ops", lambda x: (2.5 * x - 1.0) / 3.0 + x * x,
     [(_randn, 4, 8)], None),
    ("pow_cube", lambda x: x ** 3, [(_randn, 4, 8)], None),
    ("pow_fractional", lambda x: x ** 1.5, [(_positive, 4, 8)], None),
    ("maximum", torch.maximum, [(_randn, 4, 8), (_randn, 4, 8)], None),
    ("minimum", torch.minimum, [(_randn, 4, 8), (_randn, 4, 8)], None),
    ("where", lambda x, y: torch.where(x > 0, x, y),
     [(_randn, 4, 8), (_randn, 4, 8)], None),
    ("clamp", lambda x: torch.clamp(x, -0.5, 0.5), [(_randn, 4, 8)], None),
    ("sum_dim", lambda x: x.sum(dim=1), [(_randn, 4, 8)], None),
    ("sum_all", lambda x: x.sum(), [(_randn, 4, 8)], None),
    ("mean", lambda x: x.mean(dim=0, keepdim=True), [(_randn, 4, 8)], None),
    ("amax", lambda x: x.amax(dim=1), [(_randn, 4, 8)], None),
    ("max_dim", lambda x: x.max(dim=1).values, [(_randn, 4, 8)], None),
    ("view_permute", lambda x: x.view(2, 16).t().reshape(4, 8) * x,
     [(_randn, 4, 8)], None),
    ("expand", lambda x: x.unsqueeze(0).expand(3, 4, 8) * 2.0,
     [(_randn, 4, 8)], None),
    ("to_float64", lambda x: x.to(torch.float64).sin(), [(_randn, 4, 8)],
     None),
    ("mm", torch.mm, [(_randn, 5, 7), (_randn, 7, 3)], None),
    ("linear", F.linear, [(_randn, 5, 7), (_randn, 3, 7), (_randn, 3)],
     None),
    ("linear_weights_only", F.linear,
     [(_randn, 5, 7), (_randn, 3, 7), (_randn, 3)], [False, True, True]),
    ("bmm", torch.bmm, [(_randn, 2, 5, 7), (_randn, 2, 7, 3)], None),
    ("softmax", lambda x: torch.softmax(x, dim=-1), [(_randn, 4, 8)], None),
    ("log_softmax", lambda x: torch.log_softmax(x, dim=-1),
     [(_randn, 4, 8)], None),
    ("manual_softmax",
     lambda x: (x - x.max(dim=1, keepdim=True).values).exp()
     / (x - x.max(dim=1, keepdim=True).values).exp().sum(1, keepdim=True),
     [(_randn, 4, 8)], None),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (8,), w, b),
     [(_randn, 4, 8), (_randn, 8), (_randn, 8)], None),
    ("gather", lambda x, i: torch.gather(x, 1, i),
     [(_randn, 4, 8), (lambda *s: torch.randint(0, 8, s), 4, 3)],
     [True, False]),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t),
     [(_randn, 6, 10), (lambda *s: torch.randint(0, 10, s), 6)],
     [True, False]),
    ("slice_strided", lambda x: x[:, 1:7:2] * x[1:3, ::3].sum(),
     [(_randn, 4, 8)], None),
    ("pad", lambda x: F.pad(x, (1, 2, 0, 3)).cos(), [(_randn, 4, 8)], None),
    ("conv2d_3x3", lambda x, w, b: F.conv2d(x, w, b, padding=1),
     [(_randn, 2, 3, 7, 6), (_randn, 4, 3, 3, 3), (_randn, 4)], None),
    ("conv2d_stride2", lambda x, w: F.conv2d(x, w, stride=2, padding=1),
     [(_randn, 2, 3, 9, 8), (_randn, 5, 3, 3, 3)], None),
    ("conv2d_1x1_stride2", lambda x, w: F.conv2d(x, w, stride=2),
     [(_randn, 2, 4, 7, 7), (_randn, 3, 4, 1, 1)], None),
    ("conv2d_7x7_dilated", lambda x, w: F.conv2d(x, w, stride=2, padding=3,
                                                 dilation=2),
     [(_randn, 1, 2, 12, 11), (_randn, 3, 2, 3, 3)], None),
    ("conv2d_input_only", lambda x, w: F.conv2d(x, w, padding=1),
     [(_randn, 1, 2, 5, 5), (_randn, 3, 2, 3, 3)], [True, False]),
    ("max_pool", lambda x: F.max_pool2d(x, 3, 2, 1),
     [(_randn, 2, 3, 9, 8)], None),
    ("max_pool_2x2", lambda x: F.max_pool2d(x, 2), [(_randn, 1, 2, 6, 6)],
     None),
    ("max_pool_ceil_dilated", lambda x: F.max_pool2d(
        x, (2, 3), stride=2, padding=1, dilation=(2, 1), ceil_mode=True),
     [(_randn, 2, 3, 9, 8)], None),
    # Integer-valued inputs tie within windows: the gradient goes to the
    # first maximum of each window, as eager's indices do.
    ("max_pool_ties", lambda x: F.max_pool2d(x, 3, 1, 1),
     [(lambda *s: torch.randint(-2, 3, s).float(), 2, 3, 6, 7)], None),
    ("adaptive_avg_pool", lambda x: F.adaptive_avg_pool2d(x, 1).flatten(1),
     [(_randn, 2, 3, 5, 4)], None),
    ("batch_norm_train", lambda x, w, b: F.batch_norm(
        x, None, None, w, b, training=True),
     [(_randn, 4, 3, 5, 5), (_randn, 3), (_randn, 3)], None),
    ("batch_norm_eval", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b),
     [(_randn, 4, 3, 5, 5), (_randn, 3), (_positive, 3), (_randn, 3),
      (_randn, 3)], [True, False, False, True, True]),
    ("two_outputs", lambda x: (x.sin(), x.cos().sum()), [(_randn, 4, 8)],
     None),
    ("unused_input", lambda x, y: x.exp(), [(_randn, 4), (_randn, 4)],
     None),
]


def _inputs(makers, dtype):
    torch.manual_seed(0)
    inputs = [make(*shape) for make, *shape in makers]
    return [x.to(dtype) if x.is_floating_point() else x for x in inputs]


def _compile_joint(fn, inputs, marks):
    gm = make_fx(fn, decomposition_table=(
        tc.decompositions.core_aten_decompositions()))(*inputs)
    gm.graph.eliminate_dead_code()  # e.g. batch norm's unused empty()
    gm.recompile()
    return tc.compiler.compile_graph(gm, requires_grad=marks)


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


@pytest.mark.parametrize("name,fn,makers,marks", CASES,
                         ids=[c[0] for c in CASES])
def test_gradient_matches_autograd(name, fn, makers, marks):
    inputs = _inputs(makers, torch.float32)
    marks = marks or [True] * len(inputs)
    joint = _compile_joint(fn, inputs, marks)

    expected = _as_tuple(fn(*inputs))
    cotangents = [torch.randn_like(e) for e in expected
                  if e.is_floating_point()]
    got = joint(*inputs, *cotangents)
    outputs, grads = got[:len(expected)], got[len(expected):]
    for out, exp in zip(outputs, expected):
        torch.testing.assert_close(out, exp, rtol=1e-4, atol=1e-5)

    leaves = [x.clone().requires_grad_(m) for x, m in zip(inputs, marks)]
    marked = [x for x in leaves if x.requires_grad]
    reference = torch.autograd.grad(
        _as_tuple(fn(*leaves)), marked, grad_outputs=cotangents,
        allow_unused=True)
    assert len(grads) == len(marked)
    for grad, ref, x in zip(grads, reference, marked):
        ref = torch.zeros_like(x) if ref is None else ref
        torch.testing.assert_close(grad, ref, rtol=1e-4, atol=1e-5)


_CONVOLUTIONS = [c for c in CASES if c[0].startswith("conv")]


@pytest.mark.parametrize("name,fn,makers,marks", _CONVOLUTIONS,
                         ids=[c[0] for c in _CONVOLUTIONS])
def test_expanded_convolution_gradient_matches_autograd(monkeypatch, name, fn,
                                                        makers, marks):
    """Convolutions as tc's own window copies and one product
    (tc-expand-convolutions: ROCm's path, the CPU's with
    TC_CPU_OPTIONS=expand-convolutions=true; by default the CPU calls
    PyTorch's kernels), differentiated through them."""
    monkeypatch.setenv("TC_CPU_OPTIONS", "expand-convolutions=true")
    tc.reset_counters()
    test_gradient_matches_autograd(name, fn, makers, marks)
    assert tc.counters["library_convolutions"] == 0


@pytest.mark.parametrize("name,fn,makers,marks", CASES,
                         ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(name, fn, makers, marks):
    if name in ("relu", "abs", "maximum", "minimum", "where", "clamp",
                "amax", "max_dim", "manual_softmax", "max_pool_ties"):
        pytest.skip("not differentiable everywhere: a finite difference "
                    "across a kink is not a gradient")
    inputs = _inputs(makers, torch.float64)
    marks = marks or [True] * len(inputs)
    joint = _compile_joint(fn, inputs, marks)
    expected = _as_tuple(fn(*inputs))
    cotangents = [torch.randn_like(e) for e in expected]
    grads = joint(*inputs, *cotangents)[len(expected):]

    # <grad, v> against (L(x + eps v) - L(x - eps v)) / 2 eps, where
    # L = sum of cotangent * output.
    directions = [torch.randn_like(x) if m else torch.zeros_like(x)
                  for x, m in zip(inputs, marks)]
    directions = [v if x.is_floating_point() else None
                  for x, v in zip(inputs, directions)]
    eps = 1e-6

    def loss(sign):
        shifted = [x if v is None else x + sign * eps * v
                   for x, v in zip(inputs, directions)]
        return sum((c * o).sum() for c, o in
                   zip(cotangents, _as_tuple(fn(*shifted))))

    numeric = (loss(1) - loss(-1)) / (2 * eps)
    analytic = sum((g * v).sum() for g, v in
                   zip(grads, [v for v, m in zip(directions, marks) if m]))
    torch.testing.assert_close(analytic, numeric, rtol=1e-6, atol=1e-7)


def _with_nans_and_ties(*shape):
    """Random values with NaNs and exact ties with another such input (the
    same seed's zeros) scattered in."""
    x = torch.randn(*shape)
    x.view(-1)[::7] = float("nan")
    x.view(-1)[3::11] = 0.0
    return x


@pytest.mark.parametrize("name,fn,count", [
    ("relu", torch.relu, 1),
    ("maximum", torch.maximum, 2),
    ("minimum", torch.minimum, 2),
], ids=["relu", "maximum", "minimum"])
def test_max_and_min_gradients_at_nans_and_ties(name, fn, count):
    """Eager's rule where the operands do not compare: an operand that is
    NaN (or faces a NaN) takes the gradient (ReLU's threshold_backward
    passes it on), ties split it (ReLU's zero: none), as torch.autograd."""
    torch.manual_seed(0)
    inputs = [_with_nans_and_ties(4, 8) for _ in range(count)]
    joint = _compile_joint(fn, inputs, [True] * count)
    cotangent = torch.randn(4, 8)
    got = joint(*inputs, cotangent)
    torch.testing.assert_close(got[0], fn(*inputs), equal_nan=True)
    leaves = [x.clone().requires_grad_() for x in inputs]
    reference = torch.autograd.grad(fn(*leaves), leaves,
                                    grad_outputs=cotangent)
    for grad, ref in zip(got[1:], reference):
        torch.testing.assert_close(grad, ref, equal_nan=True)
