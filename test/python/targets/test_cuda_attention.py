"""Fused attention inside tc's CUDA programs (prim.attention, one cuDNN
call): BERT's, ViT's, GPT-2's and Llama's shapes, bf16 and fp16, causal,
padding masks, additive biases, grouped-query heads and odd sequence
lengths, compared with PyTorch's own attention on random inputs.

Each case checks that the attention ran inside tc's program: the graph is
one subgraph with no op in eager (`ops_eager == 0`), the attention was
handed to tc (`library_attentions`), nothing fell back at run time. The
error allowed is measured, not guessed: tc's error against a float32
attention may exceed eager's own by at most a factor of two, plus a floor
of a few units in the last place of the dtype. Skipped without a CUDA
device.
"""

import copy

import pytest
import torch
import torch.nn.functional as F

import tc

has_cuda = torch.cuda.is_available()
pytestmark = [pytest.mark.requires_native,
              pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]

#: (batch, heads, key/value heads, queries, keys, head features): BERT,
#: ViT-B/16's 197 tokens, CLIP's 77, Llama-style grouped-query heads of
#: 128 features, a long causal sequence, one query over a cache.
SHAPES = [(2, 12, 12, 128, 128, 64), (4, 12, 12, 197, 197, 64),
          (2, 8, 8, 77, 77, 64), (1, 32, 8, 512, 512, 128),
          (1, 12, 12, 1024, 1024, 64), (2, 16, 16, 1, 300, 64)]
#: The floor of the allowed error, per dtype (a few ulps at 1).
FLOOR = {torch.bfloat16: 2e-2, torch.float16: 3e-3}


def _reference_error(fn, args, exact_fn):
    """(eager's error, tc's output's error, tc's output), each against
    `exact_fn` (`fn` in float32) on the arguments in float32."""
    exact = exact_fn(*(a.float() if a.is_floating_point() else a
                       for a in args))
    eager = fn(*args)
    compiled = torch.compile(fn, backend="tc")(*args)
    error = (eager.float() - exact).abs().max().item()
    tc_error = (compiled.float() - exact).abs().max().item()
    return error, tc_error, compiled


def _check(fn, args, dtype, graphs=1, exact_fn=None):
    torch._dynamo.reset()
    tc.reset_counters()
    error, tc_error, out = _reference_error(fn, args, exact_fn or fn)
    assert torch.isfinite(out).all()
    assert tc_error <= 2 * error + FLOOR[dtype], (tc_error, error)
    counters = dict(tc.counters)
    assert counters["library_attentions"] == graphs, counters
    assert counters["ops_eager"] == 0, counters
    assert counters["subgraphs_compiled"] == graphs, counters
    assert counters["fallback_graphs"] == 0, counters
    assert counters["runtime_fallbacks"] == 0, counters
    return out


def _qkv(batch, heads, kv_heads, queries, keys, dim, dtype):
    def randn(*shape):
        return torch.randn(*shape, device="cuda", dtype=dtype)
    return (randn(batch, heads, queries, dim), randn(batch, kv_heads, keys, dim),
            randn(batch, kv_heads, keys, dim))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", SHAPES)
def test_attention(fresh_tc, dtype, shape):
    batch, heads, kv_heads, queries, keys, dim = shape
    q, k, v = _qkv(*shape, dtype)
    gqa = kv_heads != heads
    _check(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, enable_gqa=gqa) * 2, (q, k, v), dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[2], SHAPES[4]])
def test_causal(fresh_tc, dtype, shape):
    q, k, v = _qkv(*shape, dtype)
    _check(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.3) + 1, (q, k, v), dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[1], SHAPES[2]])
def test_padding_mask(fresh_tc, dtype, shape):
    """Hugging Face's padding mask: (batch, 1, 1, keys) booleans, some
    keys of each row dropped."""
    batch, heads, kv_heads, queries, keys, dim = shape
    q, k, v = _qkv(*shape, dtype)
    keep = torch.ones(batch, 1, 1, keys, dtype=torch.bool, device="cuda")
    keep[0, ..., keys // 2:] = False
    _check(lambda q, k, v, m: F.scaled_dot_product_attention(
        q, k, v, attn_mask=m), (q, k, v, keep), dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_additive_bias(fresh_tc, dtype):
    """A float bias per head (a relative-position bias: T5's, Swin's)."""
    q, k, v = _qkv(2, 8, 8, 77, 77, 64, dtype)
    bias = torch.randn(1, 8, 77, 77, device="cuda", dtype=dtype)
    _check(lambda q, k, v, b: F.scaled_dot_product_attention(
        q, k, v, attn_mask=b), (q, k, v, bias), dtype)


class _Block(torch.nn.Module):
    """Self-attention as BERT writes it: one QKV projection, heads split,
    attention, heads merged, the output projection and a residual."""

    def __init__(self, width=768, heads=12):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)

    def forward(self, x, mask):
        b, s, w = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, -1).permute(
            2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return x + self.out(a.transpose(1, 2).reshape(b, s, w))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_block_is_one_program(fresh_tc, dtype):
    """A whole attention block is one tc program, replayed as one CUDA
    graph: later calls with new values give new results."""
    block = _Block().cuda().to(dtype).eval()
    x = torch.randn(4, 128, 768, device="cuda", dtype=dtype)
    mask = torch.ones(4, 1, 1, 128, dtype=torch.bool, device="cuda")
    mask[1, ..., 100:] = False
    exact = copy.deepcopy(block).float()
    with torch.no_grad():
        _check(block, (x, mask), dtype, exact_fn=exact)
        compiled = torch.compile(block, backend="tc")
        for _ in range(3):
            x = torch.randn_like(x)
            torch.testing.assert_close(compiled(x, mask), block(x, mask),
                                       atol=FLOOR[dtype] * 4, rtol=2e-2)
    assert tc.counters["runtime_fallbacks"] == 0


def _attention_calls(fn, *args):
    """Compiles and runs `fn` with the kernel stage's IR kept (one fresh
    compile); its output and its kernel.attention lines."""
    import tc.compiler
    import tc.logs
    torch._dynamo.reset()
    tc.compiler.build.cache.clear()
    tc.logs.set_logs("output_code")
    try:
        with torch.no_grad():
            out = torch.compile(fn, backend="tc")(*args)
    finally:
        tc.logs.set_logs()
    kernels = "".join(native.stage_ir.get("kernel", "")
                      for native in tc.compiler.build.cache.values())
    return out, [line for line in kernels.splitlines()
                 if "kernel.attention" in line]


class _PerHeadBlock(torch.nn.Module):
    """Self-attention as Hugging Face's BERT writes it: a projection per
    operand, each [B, S, H, D] permuted to [B, H, S, D]."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.out = (torch.nn.Linear(width, width)
                                            for _ in range(4))

    def forward(self, x):
        b, s, w = x.shape

        def split(t):
            return t.view(b, s, self.heads, -1).transpose(1, 2)
        a = F.scaled_dot_product_attention(split(self.q(x)),
                                           split(self.k(x)),
                                           split(self.v(x)))
        return x + self.out(a.transpose(1, 2).reshape(b, s, w))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("block,shape", [
    ("packed", (3, 197, 768, 12)),   # ViT-B's packed QKV, odd batch
    ("packed", (2, 77, 1024, 16)),   # CLIP-L's text tower width
    ("per_head", (5, 128, 768, 12)),  # BERT-base
    ("per_head", (2, 200, 512, 8)),
])
def test_block_reads_and_writes_heads_in_place(fresh_tc, dtype, block,
                                               shape):
    """The attention reads its query, key and value heads where the
    projections wrote them and writes its heads back in rows (views of
    the buffers, `query_view` ... `out_view`: no copy kernels), with
    eager's results at real widths, odd batches and sequence lengths."""
    batch, seq, width, heads = shape
    torch.manual_seed(0)
    model = (_Block(width, heads) if block == "packed"
             else _PerHeadBlock(width, heads)).cuda().to(dtype).eval()
    x = torch.randn(batch, seq, width, device="cuda", dtype=dtype)
    args = (x,)
    if block == "packed":  # with a padding mask, a row of keys cut short
        mask = torch.ones(batch, 1, 1, seq, dtype=torch.bool, device="cuda")
        mask[-1, ..., seq // 2:] = False
        args = (x, mask)
    tc.reset_counters()
    out, calls = _attention_calls(model, *args)
    assert len(calls) == 1, calls
    for view in ("query_view", "key_view", "value_view", "out_view"):
        assert view in calls[0], calls[0]
    with torch.no_grad():
        exact = copy.deepcopy(model).float()(x.float(), *args[1:])
        eager = model(*args)
    error = (eager.float() - exact).abs().max().item()
    tc_error = (out.float() - exact).abs().max().item()
    assert tc_error <= 2 * error + FLOOR[dtype], (tc_error, error)
    assert tc.counters["library_attentions"] == 1, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)


def test_viewed_attention_from_disk_cache(fresh_tc):
    """A program whose attention reads and writes through views comes back
    from the disk cache (the views serialized) and computes the same."""
    import tc.compiler
    model = _PerHeadBlock(512, 8).cuda().to(torch.bfloat16).eval()
    x = torch.randn(3, 77, 512, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        first = torch.compile(model, backend="tc")(x)
        torch._dynamo.reset()
        tc.compiler.clear_cache()
        tc.reset_counters()
        second = torch.compile(model, backend="tc")(x)
    assert tc.counters["disk_cache_hits"] == 1, dict(tc.counters)
    assert tc.counters["library_attentions"] == 1, dict(tc.counters)
    torch.testing.assert_close(second, first, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_attention_of_a_graph_through_aot_autograd(fresh_tc, dtype):
    """A graph that updates an input in place goes through AOTAutograd (its
    inference compiler): its attention is still a library call in tc's
    program (MobileBERT's 24 ran in eager, one segment each, when a
    mutation sent its graph there), and the input is updated."""
    def fn(q, k, v, count):
        count.add_(1)
        return F.scaled_dot_product_attention(q, k, v) * 2

    q, k, v = _qkv(2, 4, 4, 128, 128, 32, dtype)
    count = torch.zeros(1, device="cuda")
    with torch.no_grad():
        _check(fn, (q, k, v, count), dtype,
               exact_fn=lambda q, k, v, _: F.scaled_dot_product_attention(
                   q, k, v) * 2)
    # Eager's call and tc's each counted once.
    assert count.item() == 2
    assert tc.counters["aten_aot_autograd"] == 1


def test_float32_attention_stays_in_eager(fresh_tc):
    """cuDNN's fused attention takes half precision only: a float32 one
    runs as PyTorch's, between tc's parts, and says so."""
    q, k, v = (t.float() for t in _qkv(1, 4, 4, 64, 64, 32, torch.bfloat16))
    fn = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v) * 2, backend="tc")
    torch.testing.assert_close(fn(q, k, v),
                               F.scaled_dot_product_attention(q, k, v) * 2)
    assert tc.counters["library_attentions"] == 0


def test_attention_from_disk_cache(fresh_tc):
    """A program with an attention comes back from the disk cache (its
    step serialized and read again) and computes the same."""
    import tc.compiler
    q, k, v = _qkv(2, 8, 8, 77, 77, 64, torch.bfloat16)
    keep = torch.ones(2, 1, 1, 77, dtype=torch.bool, device="cuda")
    keep[1, ..., 40:] = False

    def fn(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m) * 2

    first = torch.compile(fn, backend="tc")(q, k, v, keep)
    torch._dynamo.reset()
    tc.compiler.clear_cache()
    tc.reset_counters()
    second = torch.compile(fn, backend="tc")(q, k, v, keep)
    assert tc.counters["disk_cache_hits"] == 1, dict(tc.counters)
    assert tc.counters["library_attentions"] == 1, dict(tc.counters)
    torch.testing.assert_close(second, first, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("upcast", [False, True])
def test_written_out_attention_runs_fused(fresh_tc, dtype, upcast):
    """Attention written out as products, a scaled mask and a softmax (a
    model without a fused path: MegatronBERT's at 16 x 512 tokens, 16
    heads of 64) runs as one fused attention in tc's program, with a
    padding mask; eager's results within the measured error."""
    import sys
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
    from test_attention import _WrittenAttention
    torch.manual_seed(0)
    module = _WrittenAttention(width=1024, heads=16, upcast=upcast).cuda()
    module = module.to(dtype).eval()
    x = torch.randn(16, 512, 1024, device="cuda", dtype=dtype)
    mask = torch.zeros(16, 1, 1, 512, device="cuda", dtype=dtype)
    mask[:, :, :, 400:] = torch.finfo(dtype).min  # right padding
    exact = copy.deepcopy(module).float()
    with torch.no_grad():
        _check(module, (x, mask), dtype, exact_fn=exact)
