"""Dropout and random numbers (tc's counter-based ones) and embedding lookups
through `torch.compile(backend="tc")`, forward and backward, on the CPU.

tc's random numbers are not eager's: dropout is checked by what a user
relies on (the keep fraction, the exact scale, fresh masks per call,
`torch.manual_seed` reproducibility, the backward using the forward's
mask); embeddings against eager.
"""

import logging
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tc

pytestmark = pytest.mark.requires_native


def _compiled_dropout(p):
    return torch.compile(lambda x: F.dropout(x, p, training=True),
                         backend="tc")


def _all_in_tc():
    assert tc.counters["graphs_compiled"] >= 1
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["aten_aot_autograd"] == 0
    assert tc.counters["runtime_fallbacks"] == 0


# ============================================================================
# Dropout
# ============================================================================


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keep_fraction_and_scale(fresh_tc, p):
    """On 2^20 elements the kept fraction is 1 - p within 6 standard
    deviations; kept elements are exactly x / (1 - p) (eager's scale, in
    f32), dropped ones exactly 0."""
    x = torch.randn(1024, 1024) + 5  # no element is 0 by chance
    y = _compiled_dropout(p)(x)
    _all_in_tc()
    n = x.numel()
    keep = y != 0
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs(keep.float().mean().item() - (1 - p)) < 6 * sigma
    scale = torch.tensor(1 / (1 - p), dtype=torch.float32)
    assert torch.equal(y[keep], x[keep] * scale)
    # Neighbouring elements are independent: the fraction of kept pairs.
    pairs = (keep[:, 1:] & keep[:, :-1]).float().mean().item()
    assert abs(pairs - (1 - p) ** 2) < 0.01


def test_dropout_uniform_numbers(fresh_tc):
    """The numbers behind the mask are uniform on [0, 1): torch.rand in a
    compiled graph has the uniform distribution's deciles and moments."""
    u = torch.compile(lambda x: x + torch.rand(1 << 20), backend="tc")(
        torch.zeros(1 << 20))
    _all_in_tc()
    assert 0 <= u.min().item() and u.max().item() < 1
    assert abs(u.mean().item() - 0.5) < 0.002
    assert abs(u.var().item() - 1 / 12) < 0.002
    counts = torch.histc(u, bins=10, min=0, max=1) / u.numel()
    assert (counts - 0.1).abs().max().item() < 0.003


def test_dropout_p0_is_identity(fresh_tc):
    x = torch.randn(64, 32)
    assert torch.equal(_compiled_dropout(0.0)(x), x)


def test_dropout_masks_differ_per_call_and_follow_manual_seed(fresh_tc):
    x = torch.randn(256, 256) + 5
    f = _compiled_dropout(0.5)
    a, b = f(x) != 0, f(x) != 0
    # Independent masks agree on about half the elements.
    assert abs((a == b).float().mean().item() - 0.5) < 0.02
    torch.manual_seed(123)
    c = f(x)
    torch.manual_seed(123)
    d = f(x)
    assert torch.equal(c, d)
    torch.manual_seed(124)
    assert not torch.equal(f(x), c)
    _all_in_tc()


def test_two_dropouts_in_one_graph_differ(fresh_tc):
    """Each random op of a graph draws from its own counters."""
    x = torch.randn(128, 128) + 5
    f = torch.compile(lambda x: (F.dropout(x, 0.5), F.dropout(x, 0.5)),
                      backend="tc")
    a, b = f(x)
    assert abs(((a != 0) == (b != 0)).float().mean().item() - 0.5) < 0.03
    _all_in_tc()


def test_dropout_gradient_uses_the_forward_mask(fresh_tc):
    """x.grad = mask * scale * upstream, with the forward's mask (tc's joint
    graph recomputes it from the forward's seed)."""
    p = 0.3
    x = (torch.randn(128, 64) + 5).requires_grad_()
    model = torch.compile(lambda x: torch.tanh(F.dropout(x, p) * 2),
                          backend="tc")
    for _ in range(2):  # a second call with another mask
        x.grad = None
        y = model(x)
        upstream = torch.randn_like(y)
        y.backward(upstream)
        kept = y != 0
        scale = torch.tensor(1 / (1 - p))
        expected = kept * scale * 2 * (1 - y.detach() ** 2) * upstream
        torch.testing.assert_close(x.grad, expected, rtol=1e-5, atol=1e-6)
        assert torch.count_nonzero(x.grad[~kept]) == 0
    assert tc.counters["training_graphs"] == 1
    _all_in_tc()


def test_plain_dropout_gradient(fresh_tc):
    """The literal check: x.grad == (y != 0) * scale * upstream."""
    p = 0.4
    x = (torch.randn(64, 64) + 5).requires_grad_()
    y = _compiled_dropout(p)(x)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    scale = torch.tensor(1 / (1 - p))
    assert torch.equal(x.grad, (y != 0) * scale * upstream)
    assert tc.counters["training_graphs"] == 1


def test_attention_dropout_is_compiled_with_its_gradient(fresh_tc, caplog):
    """`scaled_dot_product_attention` with `dropout_p` while training (the
    math attention on the CPU, whose dropout traces to an in-place
    `bernoulli_`) runs through tc's own autodiff, not AOTAutograd. With v
    the identity the output is the dropped-out probability matrix itself,
    which gives the mask: the kept fraction, the scale, and every gradient
    against eager's attention written out with that mask."""
    p, s = 0.3, 16
    q = torch.randn(2, 3, s, s, requires_grad=True)
    k = torch.randn(2, 3, s, s, requires_grad=True)
    v = torch.eye(s).expand(2, 3, s, s).clone().requires_grad_()
    attend = torch.compile(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=p),
        backend="tc")
    caplog.set_level(logging.INFO, logger="tc.fallbacks")
    out = attend(q, k, v)
    upstream = torch.randn_like(out)
    out.backward(upstream)
    assert tc.counters["training_graphs"] == 1
    assert tc.counters["aten_aot_autograd"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["kernels"] > 0
    # Nothing in eager but the view that is the output's shape.
    eager = [r.getMessage() for r in caplog.records if "eager:" in
             r.getMessage()]
    assert len(eager) == tc.counters["ops_eager"] <= 1
    assert all("aten::view" in line for line in eager)
    kept = out.detach() != 0
    fraction = kept.float().mean().item()
    assert abs(fraction - (1 - p)) < 6 * math.sqrt(p * (1 - p) / kept.numel())
    # Eager's attention with the same mask, forward and backward.
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    probs = torch.softmax(q2 @ k2.transpose(-1, -2) / math.sqrt(s), dim=-1)
    expected = (probs * kept / (1 - p)) @ v2
    expected.backward(upstream)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    for got, want in ((q, q2), (k, k2), (v, v2)):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5)


def _drop_path(x, p):
    """timm's stochastic depth: a per-sample mask drawn in place."""
    keep = 1 - p
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
    mask.div_(keep)
    return x * mask


def test_stochastic_depth_trains_in_tc(fresh_tc):
    """A per-sample Bernoulli mask drawn in place on a fresh tensor (timm's
    DropPath) is a functional draw: the training graph is tc's own autodiff,
    not AOTAutograd's. Each sample's branch is kept (scaled by 1 / keep) or
    dropped, at the keep rate; the gradients are eager's with that mask."""
    p = 0.25
    x = torch.randn(2048, 16, requires_grad=True)
    w = torch.randn(16, 16, requires_grad=True)
    step = torch.compile(lambda x, w: x + _drop_path(torch.tanh(x @ w), p),
                         backend="tc")
    y = step(x, w)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    assert tc.counters["training_graphs"] == 1
    _all_in_tc()
    branch = torch.tanh(x.detach() @ w.detach())
    kept = ((y.detach() - x.detach()) != 0).any(1)
    fraction = kept.float().mean().item()
    assert abs(fraction - (1 - p)) < 6 * math.sqrt(p * (1 - p) / len(kept))
    mask = kept.float()[:, None] / (1 - p)
    torch.testing.assert_close(y, x + branch * mask, rtol=1e-5, atol=1e-6)
    x2, w2 = (t.detach().clone().requires_grad_() for t in (x, w))
    (x2 + torch.tanh(x2 @ w2) * mask).backward(upstream)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(w.grad, w2.grad, rtol=1e-4, atol=1e-4)


def test_mlp_with_dropout_trains(fresh_tc):
    """An MLP with nn.Dropout trains a few SGD steps through tc's autodiff:
    finite, decreasing losses; the dropouts are off in eval mode, where
    the compiled model matches eager."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.2),
                          nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2),
                          nn.Linear(64, 10))
    x, target = torch.randn(64, 32), torch.randint(0, 10, (64,))

    @torch.compile(backend="tc")
    def loss_fn(x, target):
        return F.cross_entropy(model(x), target)

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = loss_fn(x, target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]
    assert tc.counters["training_graphs"] == 1
    _all_in_tc()
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="tc")(x),
                                   model(x), rtol=1e-5, atol=1e-6)


# ============================================================================
# Embedding
# ============================================================================


def test_embedding_forward_matches_eager(fresh_tc):
    torch.manual_seed(0)
    weight = torch.randn(50, 16)
    indices = torch.randint(0, 50, (8, 12))
    indices[0, :4] = 7  # repeated
    f = torch.compile(lambda w, i: F.embedding(i, w) * 2, backend="tc")
    assert torch.equal(f(weight, indices), F.embedding(indices, weight) * 2)
    _all_in_tc()


def test_embedding_weight_gradient_accumulates_repeats(fresh_tc):
    torch.manual_seed(1)
    weight = torch.randn(20, 8, requires_grad=True)
    indices = torch.randint(0, 20, (6, 10))
    indices[:, 0] = 3  # one row read six times
    upstream = torch.randn(6, 10, 8)

    def f(w, i):
        return torch.tanh(F.embedding(i, w))

    out = torch.compile(f, backend="tc")(weight, indices)
    out.backward(upstream)
    w_ref = weight.detach().clone().requires_grad_()
    f(w_ref, indices).backward(upstream)
    torch.testing.assert_close(out, f(w_ref, indices), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(weight.grad, w_ref.grad, rtol=1e-5, atol=1e-6)
    assert tc.counters["training_graphs"] == 1
    _all_in_tc()


def test_two_tables_read_through_one_index_train_in_tc(fresh_tc):
    # Both tables' gradients are the same scatter-add of the upstream
    # gradient: the backward returns one computed value twice (LayoutLM's
    # position tables read through one all-zero box). tc-fuse had no
    # kernel for a scatter-add returned again, and the graph ran in eager.
    torch.manual_seed(2)
    a = torch.randn(20, 8, requires_grad=True)
    b = torch.randn(20, 8, requires_grad=True)
    indices = torch.randint(0, 20, (6, 10))
    upstream = torch.randn(6, 10, 8)

    def f(a, b, i):
        return torch.tanh(F.embedding(i, a) + F.embedding(i, b))

    out = torch.compile(f, backend="tc")(a, b, indices)
    out.backward(upstream)
    a_ref, b_ref = (t.detach().clone().requires_grad_() for t in (a, b))
    f(a_ref, b_ref, indices).backward(upstream)
    torch.testing.assert_close(a.grad, a_ref.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b.grad, b_ref.grad, rtol=1e-5, atol=1e-6)
    assert tc.counters["training_graphs"] == 1
    assert tc.counters["compile_failures"] == 0
    _all_in_tc()


def test_embedding_padding_idx_inference(fresh_tc):
    """padding_idx changes only the gradient: without one, tc compiles it."""
    emb = nn.Embedding(10, 4, padding_idx=0)
    indices = torch.tensor([[0, 1, 2], [3, 0, 9]])
    with torch.no_grad():
        out = torch.compile(emb, backend="tc")(indices)
        assert torch.equal(out, emb(indices))
    _all_in_tc()


def test_embedding_padding_idx_training_gives_the_padding_row_no_gradient(
        fresh_tc):
    """tc differentiates an embedding with padding_idx itself: the padding
    row gets no gradient, even where it holds non-zero values, and every
    gradient is eager's."""
    torch.manual_seed(0)
    emb = nn.Embedding(10, 4, padding_idx=3)
    with torch.no_grad():
        emb.weight[3] = 0.5
    reference = nn.Embedding(10, 4, padding_idx=3)
    reference.load_state_dict(emb.state_dict())
    indices = torch.tensor([[3, 1, 2], [3, 3, 9], [1, 0, 3]])
    upstream = torch.randn(3, 3, 4)
    out = torch.compile(emb, backend="tc")(indices)
    out.backward(upstream)
    expected = reference(indices)
    expected.backward(upstream)
    assert torch.equal(out, expected)
    assert torch.count_nonzero(emb.weight.grad[3]) == 0
    torch.testing.assert_close(emb.weight.grad, reference.weight.grad)
    assert tc.counters["training_graphs"] == 1
    assert tc.counters["runtime_fallbacks"] == 0
    _all_in_tc()


class _TokenClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = nn.Embedding(100, 32)
        self.linear = nn.Linear(32, 7)

    def forward(self, tokens):
        return self.linear(self.embedding(tokens))


def test_embedding_model_sgd_steps_match_eager(fresh_tc):
    """Embedding -> Linear -> cross-entropy, 3 SGD steps: eager's losses
    and weights (rel 1e-4), compiled whole by tc with its autodiff."""
    torch.manual_seed(2)
    tokens = torch.randint(0, 100, (16, 12))
    tokens[:, :3] = 5  # repeated indices
    target = torch.randint(0, 7, (16 * 12,))
    reference, model = _TokenClassifier(), _TokenClassifier()

    @torch.compile(backend="tc")
    def loss_fn(tokens, target):
        return F.cross_entropy(model(tokens).reshape(-1, 7), target)

    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.5)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        opt_ref.zero_grad()
        loss_ref = F.cross_entropy(reference(tokens).reshape(-1, 7), target)
        loss_ref.backward()
        opt_ref.step()
        opt.zero_grad()
        loss = loss_fn(tokens, target)
        loss.backward()
        opt.step()
        torch.testing.assert_close(loss, loss_ref, rtol=1e-4, atol=1e-6)
    for p_ref, p in zip(reference.parameters(), model.parameters()):
        torch.testing.assert_close(p, p_ref, rtol=1e-4, atol=1e-6)
    assert tc.counters["training_graphs"] == 1
    _all_in_tc()


def test_importer_adds_the_seed_argument():
    """A graph with a random op takes its seed as a trailing tensor<i64>
    argument marked tc.rng_seed; a graph without one does not."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from tc.importer import import_graph

    x = torch.randn(4, 8)
    gm = make_fx(lambda x: torch.ops.aten.native_dropout(x, 0.5, True)[0])(x)
    imported = import_graph(gm)
    assert imported.seed_index == 1
    assert imported.input_specs[1] == ((), torch.int64)
    assert ('%tc_seed: tensor<i64> {fx.name = "tc_seed", tc.rng_seed}'
            in imported.text)
    plain = import_graph(make_fx(torch.sin)(x))
    assert plain.seed_index is None and "tc.rng_seed" not in plain.text


def _kolmogorov_smirnov(x: torch.Tensor, y: torch.Tensor) -> float:
    """The two-sample Kolmogorov-Smirnov statistic of x and y."""
    x, y = x.double().flatten().sort().values, y.double().flatten().sort(
    ).values
    points = torch.cat([x, y])
    return float((torch.searchsorted(x, points, right=True) / len(x)
                  - torch.searchsorted(y, points, right=True) / len(y))
                 .abs().max())


@pytest.mark.parametrize("name,draw", [
    ("randn", lambda x: torch.randn(x.shape) + x),
    ("randn_like", lambda x: torch.randn_like(x) * 2 - x),
    ("rand_like", lambda x: torch.rand_like(x) * 3 - x),
    ("bernoulli.Tensor", lambda x: torch.bernoulli(torch.sigmoid(
        torch.linspace(-3, 3, x.numel()) + x))),
    ("uniform", lambda x: torch.empty_like(x).uniform_(-2, 3) + x),
    ("normal", lambda x: torch.empty_like(x).normal_(1.5, 0.5) - x),
    ("exponential", lambda x: torch.empty_like(x).exponential_(2.5) + x),
    ("log_normal", lambda x: torch.empty_like(x).log_normal_(0.2, 0.4) + x),
    ("cauchy", lambda x: torch.empty_like(x).cauchy_(1.0, 0.5) + x),
    ("geometric", lambda x: torch.empty_like(x).geometric_(0.3) + x),
    ("bernoulli.p", lambda x: torch.ops.aten.bernoulli.p(x, 0.3) + x),
    ("normal.Tensor_Tensor",
     lambda x: torch.normal(x + 1.0, torch.full_like(x, 0.5) + x)),
    ("normal.float_float",
     lambda x: torch.normal(-1.0, 2.0, size=x.shape) + x),
    ("randint.low", lambda x: torch.randint(-3, 40, x.shape) + x),
    ("randint_like", lambda x: torch.randint_like(x, 7) - x),
    ("rrelu training", lambda x: F.rrelu(
        torch.linspace(-4, 4, x.numel()) + x, 0.1, 0.4, training=True)),
])
def test_random_distributions_match_eager(fresh_tc, name, draw):
    """tc's random ops (counter-based uniform numbers, Box-Muller for the
    normal ones, PyTorch's inverse transforms for the rest) draw eager's
    distributions: a two-sample Kolmogorov-Smirnov test against eager's
    draw at 200k numbers (bound 0.0070: a false alarm about once in 10^4
    runs), compiled by tc, fresh numbers each call."""
    x = torch.zeros(200_000)
    compiled = torch.compile(draw, backend="tc")
    torch.manual_seed(0)
    got = compiled(x)
    again = compiled(x)
    expected = draw(x)
    assert tc.counters["graphs_compiled"] >= 1
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert not torch.equal(got, again)
    assert _kolmogorov_smirnov(got, expected) < 0.0070, name
