"""Inputs a graph updates (a KV cache's `k[:, :, pos] = v`, a buffer's
copy_): compiled as writes into the input's buffer, whole graph in tc."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tc


class Cache(nn.Module):
    """A decode step's attention over a static cache, updated in place."""

    def __init__(self, length: int = 32, heads: int = 4, kv_heads: int = 2,
                 dim: int = 16):
        super().__init__()
        self.rep = heads // kv_heads
        self.register_buffer("k", torch.randn(2, kv_heads, length, dim))
        self.register_buffer("v", torch.randn(2, kv_heads, length, dim))

    def forward(self, q, k, v, pos, mask):
        self.k[:, :, pos] = k
        self.v[:, :, pos] = v
        keys = self.k.repeat_interleave(self.rep, 1)
        values = self.v.repeat_interleave(self.rep, 1)
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)


def _inputs(pos, length=32):
    torch.manual_seed(int(pos[0]))
    q = torch.randn(2, 4, len(pos), 16)
    k = torch.randn(2, 2, len(pos), 16)
    v = torch.randn(2, 2, len(pos), 16)
    mask = torch.arange(length)[None, None, None, :] <= pos[-1]
    return q, k, v, pos, mask


def test_cache_update_compiles_in_place():
    torch.manual_seed(0)
    ref = Cache()
    mine = Cache()
    mine.load_state_dict(ref.state_dict())
    compiled = torch.compile(mine, backend="tc")
    tc.reset_counters()
    with torch.no_grad():
        for step in range(3):
            args = _inputs(torch.tensor([5 + step]))
            want = ref(*args)
            got = compiled(*args)
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(mine.k, ref.k)
            torch.testing.assert_close(mine.v, ref.v)
    # One graph, all of it tc's: the updates are not left to eager.
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["subgraphs_compiled"] == 1
    assert tc.counters["runtime_fallbacks"] == 0


def test_two_positions_and_negative_index():
    ref, mine = Cache(), Cache()
    mine.load_state_dict(ref.state_dict())
    compiled = torch.compile(mine, backend="tc")
    with torch.no_grad():
        args = _inputs(torch.tensor([-1, 3]))
        torch.testing.assert_close(compiled(*args), ref(*args))
    torch.testing.assert_close(mine.k, ref.k)


def test_index_out_of_range_raises_as_eager():
    mine = Cache()
    before = mine.k.clone()
    compiled = torch.compile(mine, backend="tc")
    with torch.no_grad():
        compiled(*_inputs(torch.tensor([1])))
        good = mine.k.clone()
        with pytest.raises(IndexError):
            compiled(*_inputs(torch.tensor([40])))
    # Nothing stored for the position out of range.
    torch.testing.assert_close(mine.k, good)
    assert not torch.equal(good, before)


def test_non_contiguous_input_written_back():
    def f(x, y):
        x.mul_(2)
        return (x + y).sum(1)

    base = torch.randn(8, 6)
    x_ref = base.clone().t()
    x_mine = base.clone().t()
    y = torch.randn(6, 8)
    tc.reset_counters()
    got = torch.compile(f, backend="tc")(x_mine, y)
    want = f(x_ref, y)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x_mine, x_ref)
    assert tc.counters["ops_eager"] == 0


def test_scatter_gradients_match_eager():
    # tc's autodiff of a one-index store (prim.scatter): the operand's
    # gradient is the output's with the stored slices zeroed, the values'
    # the output's slices there.
    def f(x, v, idx, w):
        y = x * 2
        y[:, idx] = v
        return (y * w).sum()

    torch.manual_seed(0)
    x = torch.randn(4, 10, 3, requires_grad=True)
    v = torch.randn(4, 2, 3, requires_grad=True)
    idx = torch.tensor([7, -2])
    w = torch.randn(4, 10, 3)
    tc.reset_counters()
    got = torch.compile(f, backend="tc")(x, v, idx, w)
    gx, gv = torch.autograd.grad(got, (x, v))
    want = f(x, v, idx, w)
    wx, wv = torch.autograd.grad(want, (x, v))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(gx, wx)
    torch.testing.assert_close(gv, wv)
    assert tc.counters["ops_eager"] == 0


def test_decoder_prefill_then_decode_matches_eager():
    # bench_decode's decoder at a small size: a 12-token prefill (twelve
    # positions stored at once) and three one-token steps, each compiled
    # whole; logits and every cache eager's.
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parents[3] / "benchmarks"))
    import bench_decode as bd
    config = bd.Config(dim=64, layers=2, heads=4, kv_heads=2, hidden=96,
                       vocab=50)
    torch.manual_seed(0)
    ref = bd.Decoder(config, 2, 32, torch.float32).eval()
    mine = bd.Decoder(config, 2, 32, torch.float32).eval()
    mine.load_state_dict(ref.state_dict())
    compiled = torch.compile(mine, backend="tc", fullgraph=True)
    tokens = torch.randint(0, config.vocab, (2, 12))
    tc.reset_counters()
    with torch.no_grad():
        pos = torch.arange(12)
        for step in range(4):
            want = ref(tokens, pos)
            got = compiled(tokens, pos)
            torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
            for a, b in zip(mine.buffers(), ref.buffers()):
                torch.testing.assert_close(a, b)
            tokens = want[:, -1:].argmax(-1)
            pos = pos[-1:] + 1
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
