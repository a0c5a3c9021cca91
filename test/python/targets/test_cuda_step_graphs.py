"""Training graphs compiled in segments around PyTorch's fused attention,
replayed in reduce-overhead mode as one CUDA graph for the forward and one
for the backward (`tc.backend.step_graphs`): losses, outputs kept across
steps and gradients are eager's, step after step, with inputs read in
place or copied, dropout drawing new masks each replay, two forwards
before a backward, an output the loss does not use, and a backward taken
twice. Skipped without a CUDA device.
"""

import copy

import pytest
import torch
import torch.nn.functional as F

import tc

has_cuda = torch.cuda.is_available()
pytestmark = [pytest.mark.requires_native,
              pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]

WIDTH, HEADS, LENGTH = 256, 4, 128


class Block(torch.nn.Module):
    """Two pre-norm attention blocks and a head: three segments around two
    fused attentions (bf16 autocast)."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.ModuleDict(dict(
                norm=torch.nn.LayerNorm(WIDTH),
                qkv=torch.nn.Linear(WIDTH, 3 * WIDTH),
                proj=torch.nn.Linear(WIDTH, WIDTH),
                up=torch.nn.Linear(WIDTH, 2 * WIDTH),
                down=torch.nn.Linear(2 * WIDTH, WIDTH)))
            for _ in range(2))
        self.head = torch.nn.Linear(WIDTH, 8)
        self.aux = torch.nn.Linear(WIDTH, 8)  # reaches the unused output
        self.dropout = dropout

    def forward(self, x):
        batch = x.shape[0]
        for layer in self.layers:
            q, k, v = layer.qkv(layer.norm(x)).view(
                batch, LENGTH, 3, HEADS, -1).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + layer.proj(a.transpose(1, 2).reshape(x.shape))
            h = F.gelu(layer.up(x))
            x = x + layer.down(F.dropout(h, self.dropout, self.training))
        logits = self.head(x)
        return logits.float().square().mean(), logits, self.aux(x.detach())


def _run(fn, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return fn(x)


def _pair(dropout=0.0):
    torch.manual_seed(0)
    model = Block(dropout).cuda()
    reference = copy.deepcopy(model)
    return model, reference, torch.compile(model, backend="tc",
                                           mode="reduce-overhead")


def _assert_grads_match(model, reference):
    for (name, p), q in zip(model.named_parameters(),
                            reference.parameters()):
        if q.grad is None:
            assert p.grad is None, name
            continue
        error = (p.grad - q.grad).float().norm() / q.grad.float().norm()
        assert error < 2e-2, (name, error.item())


def _assert_compiled_by_step_graphs(replays, captures=1):
    assert tc.counters["training_graphs"] == 1, dict(tc.counters)
    assert tc.counters["step_graph_captures"] == captures, dict(tc.counters)
    assert tc.counters["step_graph_replays"] >= replays, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    assert tc.counters["aten_aot_autograd"] == 0, dict(tc.counters)


def test_steps_match_eager_with_outputs_kept(fresh_tc):
    """Six SGD steps, a new batch each after two steps on one batch (read
    in place by the first capture; the second, once it moved, copies
    it): each step's loss, its logits kept
    until the end, and its gradients are eager's; the unused output's
    parameters get no gradient, as in eager."""
    model, reference, compiled = _pair()
    opts = [torch.optim.SGD(m.parameters(), lr=0.1)
            for m in (model, reference)]
    first = torch.randn(4, LENGTH, WIDTH, device="cuda")
    kept = []
    for step in range(6):
        x = first if step < 2 else torch.randn_like(first)
        got = _run(compiled, x)
        want = _run(reference, x)
        got[0].backward()
        want[0].backward()
        kept.append((got[1], want[1].detach()))
        torch.testing.assert_close(got[0], want[0], rtol=2e-2, atol=1e-3)
        _assert_grads_match(model, reference)
        assert model.aux.weight.grad is None
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
    for got, want in kept:
        torch.testing.assert_close(got, want, rtol=5e-2, atol=5e-2)
    assert not torch.equal(kept[-1][0], kept[-2][0])
    _assert_compiled_by_step_graphs(replays=2 * 5, captures=2)


def test_dropout_draws_new_masks_each_replay(fresh_tc):
    """With dropout, two steps on the same batch and weights give other
    losses (new random numbers each replay), and each gradient is the one
    of its own step's loss: the loss scaled by 2 doubles it."""
    model, _, compiled = _pair(dropout=0.3)
    x = torch.randn(4, LENGTH, WIDTH, device="cuda")
    losses = []
    for _ in range(4):
        loss = _run(compiled, x)[0]
        loss.backward()
        losses.append(loss.item())
        model.zero_grad(set_to_none=True)
    assert len(set(losses)) == 4, losses
    _assert_compiled_by_step_graphs(replays=2 * 3)


def test_two_forwards_before_a_backward(fresh_tc):
    """Two forwards, then one backward of their sum (gradient accumulation
    over one graph): the second forward runs uncaptured, the gradients are
    eager's; the next steps replay again."""
    model, reference, compiled = _pair()
    a, b = (torch.randn(4, LENGTH, WIDTH, device="cuda") for _ in range(2))
    for _ in range(3):
        for fn, m in ((compiled, model), (reference, reference)):
            (_run(fn, a)[0] + _run(fn, b)[0]).backward()
        _assert_grads_match(model, reference)
        for m in (model, reference):
            m.zero_grad(set_to_none=True)
    assert tc.counters["step_graph_uncaptured"] >= 1, dict(tc.counters)
    _assert_compiled_by_step_graphs(replays=2)


def test_backward_twice_and_backward_of_an_older_step(fresh_tc):
    """A backward taken twice (retain_graph) accumulates twice eager's
    gradient; a backward of a step whose saved values a later replay of
    the same graphs overwrote raises instead of returning the later step's
    gradients."""
    model, reference, compiled = _pair()
    x = torch.randn(4, LENGTH, WIDTH, device="cuda")
    for _ in range(2):  # the second call captures
        _run(compiled, x)[0].backward()
    model.zero_grad(set_to_none=True)
    loss = _run(compiled, x)[0]
    loss.backward(retain_graph=True)
    loss.backward()
    want = _run(reference, x)[0]
    want.backward(retain_graph=True)
    want.backward()
    _assert_grads_match(model, reference)
    older = _run(compiled, x)[0]
    older.backward(retain_graph=True)
    _run(compiled, x)[0].backward()
    with pytest.raises(RuntimeError, match="overwritten"):
        older.backward()
