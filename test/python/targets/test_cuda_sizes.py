"""Every GPU kernel kind at real model sizes, in bf16 and fp16, with odd
sizes, odd offsets and views: what BERT, ViT, GPT-2 and Llama run.

Small shapes never reached the paths that broke at real sizes (a
misaligned shared-memory read in row reductions of 6 or more warps killed
the CUDA context of every bf16 transformer). Each case compares tc with
eager on random inputs at the dtype's tolerance and checks that tc's
kernels ran (no op in eager, no run-time fallback: the conftest fixture
fails a test on one). Skipped without a CUDA device.
"""

import pytest
import torch
import torch.nn.functional as F

import tc

has_cuda = torch.cuda.is_available()
pytestmark = [pytest.mark.requires_native,
              pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]

DTYPES = [torch.bfloat16, torch.float16]
#: (rows, width): BERT/GPT-2's 768 at 4096 tokens, Llama's 1024 and 4096,
#: and odd ones (rows and widths no block or vector width divides).
ROWS = [(4096, 768), (2048, 1024), (512, 4096), (1000, 771), (333, 97)]


def check(fn, *args, atol=None, rtol=None):
    """Compiles `fn` with tc, compares with eager, checks that tc ran it."""
    torch._dynamo.reset()
    tc.reset_counters()
    expected = fn(*args)
    actual = torch.compile(fn, backend="tc")(*args)
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)
    assert tc.counters["kernels"] > 0, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["fallback_graphs"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    return actual


def randn(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,width", ROWS)
def test_residual_layer_norm(fresh_tc, dtype, rows, width):
    """Row reductions (mean, variance) of 1 to 32 warps: the shape that
    crashed BERT."""
    x, r = randn(rows, width, dtype=dtype), randn(rows, width, dtype=dtype)
    w, b = randn(width, dtype=dtype), randn(width, dtype=dtype)
    check(lambda x, r, w, b: F.layer_norm(x + r, (width,), w, b, 1e-12),
          x, r, w, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,width", ROWS)
def test_rms_norm_silu_gate(fresh_tc, dtype, rows, width):
    """Llama's RMSNorm then a SiLU-gated product, in one graph. The f32
    mean of squares is summed in another order than eager's, its rounding
    to the dtype can land one unit in the last place away, and the four
    fp16 ops after it (PyTorch decomposes silu into sigmoid and a product)
    each round what they get: both dtypes are compared at 4 ulps (seen on
    the H100: 1 fp16 element in 2M at 2.4 ulps; 1 or 2 bf16 elements in
    3M at 2.2-3.2 ulps for 4 of 30 seeds, on the CPU too)."""
    x, g = randn(rows, width, dtype=dtype), randn(rows, width, dtype=dtype)
    w = randn(width, dtype=dtype)

    def f(x, g, w):
        v = x.float()
        v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)
        return F.silu(w * v.to(x.dtype)) * g
    check(f, x, g, w, atol=1e-5,
          rtol=4e-3 if dtype == torch.float16 else 3.2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,width", ROWS)
def test_softmax_rows(fresh_tc, dtype, rows, width):
    x = randn(rows, width, dtype=dtype)
    check(lambda x: torch.softmax(x * 0.125, dim=-1), x)


@pytest.mark.parametrize("dtype", [torch.float32] + DTYPES)
@pytest.mark.parametrize("rows,width", [(32 * 12 * 128, 128), (16384, 256),
                                        (8192, 64), (4100, 97), (65536, 49),
                                        (32768, 7), (65536, 20),
                                        (16388, 49)])
def test_short_rows_a_warp_each(fresh_tc, dtype, rows, width):
    """Rows one warp covers run four to a block, a warp each (BERT's
    attention rows: 128 wide at 32 x 12 x 128 rows, with its padding mask;
    rows of 256 half-precision elements; an odd width), and shorter rows
    share a warp, 8 or 16 lanes each (Swin's 49-wide window rows, 7 and 20
    wide ones; 16388 rows, which no block of 16 rows divides, a warp
    each): a masked softmax and a layer norm, two reductions a row each."""
    x = randn(rows, width, dtype=dtype)
    keep = torch.rand(rows // 4, 1, width, device="cuda") > 0.1
    keep[..., 0] = True
    weight, bias = randn(width, dtype=dtype), randn(width, dtype=dtype)

    def f(x, keep, weight, bias):
        scores = x.view(rows // 4, 4, width).float() * 0.125
        probs = torch.softmax(scores.masked_fill(~keep, float("-inf")), -1)
        norm = F.layer_norm(x, (width,), weight, bias)
        return probs.to(dtype).view(rows, width), norm

    check(f, x, keep, weight, bias)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,seq,channels,taps", [(8, 512, 384, 9),
                                                     (3, 77, 96, 7)])
def test_dynamic_convolution(fresh_tc, dtype, batch, seq, channels, taps):
    """ConvBERT's dynamic convolution: each token's window of `taps`
    positions (an unfold) weighted by its own softmax weights per head, a
    batched matrix-vector product of a 9-long contraction. Real sizes and
    odd ones."""
    heads = 6
    width = channels // heads
    x = randn(batch, seq, channels, dtype=dtype)
    logits = randn(batch, seq, heads * taps, dtype=dtype)

    def f(x, logits):
        weights = torch.softmax(logits.view(-1, taps, 1), dim=1)
        windows = F.unfold(x.transpose(1, 2).unsqueeze(-1), [taps, 1],
                           padding=[(taps - 1) // 2, 0])
        windows = windows.transpose(1, 2).reshape(batch, -1, channels, taps)
        windows = windows.reshape(-1, width, taps)
        return torch.matmul(windows, weights).view(batch, seq, channels)

    check(f, x, logits, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,width", ROWS[:2] + ROWS[3:])
def test_column_sum(fresh_tc, dtype, rows, width):
    """A reduction over the rows (a bias's gradient), in two stages."""
    x = randn(rows, width, dtype=dtype)
    check(lambda x: x.float().sum(0).to(x.dtype), x, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 1024, 1024), (8, 512, 768),
                                   (3, 333, 97)])
def test_weight_gradient_over_batch_and_sequence(fresh_tc, dtype, shape):
    """RMSNorm's weight gradient over (batch, sequence): a sum over two
    leading dimensions, split into partial sums over the flattened rows
    (left nested, 1024 threads summed 4096 rows each: 1 ms a layer)."""
    g, g2, x = (randn(*shape, dtype=dtype) for _ in range(3))
    check(lambda g, g2, x: ((g + g2) * x).sum((0, 1)), g, g2, x,
          atol=1e-1 * shape[0] ** 0.5, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 1024, 1024), (8, 512, 768),
                                   (3, 333, 97)])
def test_norm_weight_gradient_with_row_statistic(fresh_tc, dtype, shape):
    """RMSNorm's (and layer norm's) weight gradient: the sum over rows of
    dy * x * rstd reads a per-row statistic along its index. It is a column
    sum split in partials all the same (taken for a row reduction, it ran a
    block per column striding down 4096 rows: 160 us a layer of Llama's
    backward, 315 GB/s)."""
    g = randn(*shape, dtype=dtype)
    x = torch.randn(*shape, device="cuda")
    rstd = torch.rand(*shape[:-1], 1, device="cuda") + 0.5
    check(lambda g, x, rstd: (g.float() * (x * rstd)).sum((0, 1)),
          g, x, rstd, atol=1e-1 * shape[0] ** 0.5, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64, 96, 56, 56), (32, 384, 14, 14),
                                   (3, 77, 27, 29)])
def test_channel_layer_norm(fresh_tc, dtype, shape):
    """A layer norm over the channels of an NCHW tensor, permuted back
    (ConvNeXt's, Swin's and MobileViT's `LayerNorm2d`): its row statistics
    are a kernel of their own, read across the channels by a thread per
    point (inlined, every channel recomputed them: 3.5 ms a layer of
    ConvNeXt-V2 on the H200)."""
    x = randn(*shape, dtype=dtype)
    w, b = randn(shape[1], dtype=dtype), randn(shape[1], dtype=dtype)

    def norm2d(x, w, b):
        y = F.layer_norm(x.permute(0, 2, 3, 1), (shape[1],), w, b, 1e-6)
        return y.permute(0, 3, 1, 2) * 2 + x
    check(norm2d, x, w, b, atol=5e-2, rtol=2e-2)


@pytest.mark.parametrize("shape", [(8, 512, 768), (3, 333, 97)])
def test_dropout_before_layer_norm_training(fresh_tc, shape):
    """A residual dropout before a layer norm, forward and backward
    (GPT-2's and T5's blocks with their configs' dropout): the kernels that
    read the graph's seed run a thread group per row (they ran one per
    sequence: 468 ms a DistilGPT-2 step). Checked by the kept fraction
    and against eager with the mask the gradients show."""
    x = (randn(*shape, dtype=torch.float32) + 3).requires_grad_()
    r = randn(*shape, dtype=torch.float32)
    w = (randn(shape[-1], dtype=torch.float32) + 1).requires_grad_()

    def block(x, r, w):
        h = r + F.dropout(x, 0.1, training=True)
        return F.layer_norm(h, (shape[-1],), w, None, 1e-5)
    torch._dynamo.reset()
    tc.reset_counters()
    out = torch.compile(block, backend="tc")(x, r, w)
    out.backward(torch.ones_like(out), retain_graph=True)
    assert tc.counters["training_graphs"] == 1, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    # The mask from the gradients: x's is 0 exactly where dropped, and, by
    # a rounding that cancels exactly, at a kept element now and then (a
    # whole row of the comparison would then differ). A second gradient
    # from random cotangents does not vanish there too.
    grad, weight_grad = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    out.backward(torch.randn_like(out))
    kept = (grad != 0) | (x.grad != 0)
    x.grad, w.grad = grad, weight_grad
    fraction = kept.float().mean().item()
    assert abs(fraction - 0.9) < 6 * (0.09 / kept.numel()) ** 0.5
    # Eager with that mask, forward and backward.
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone()
    w2.requires_grad_()
    h = r + x2 * kept / 0.9
    expected = F.layer_norm(h, (shape[-1],), w2, None, 1e-5)
    expected.backward(torch.ones_like(expected))
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(x.grad, x2.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(w.grad, w2.grad, atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [1, 3, 8])
def test_pointwise_on_views(fresh_tc, dtype, offset):
    """GELU on a column slice starting `offset` elements in (an input at
    an odd address) and on a transposed view."""
    x = randn(4096, 769 + offset, dtype=dtype)
    check(lambda x: F.gelu(x[:, offset:offset + 769]), x)
    check(lambda x: F.gelu(x.t()) * 2, randn(768, 1001, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", [(4096, 768, 3072), (4096, 1024, 1024),
                                   (1000, 771, 97)])
def test_linear_gelu_epilogue(fresh_tc, dtype, m, k, n):
    """A half-precision GEMM (cuBLAS, f32 accumulation) with its bias and a
    GELU after it."""
    x, w, b = (randn(m, k, dtype=dtype), randn(n, k, dtype=dtype) * 0.05,
               randn(n, dtype=dtype))
    check(lambda x, w, b: F.gelu(F.linear(x, w, b)), x, w, b,
          atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_products(fresh_tc, dtype):
    """Batched half-precision products around a softmax (attention written
    out, GPT-2's heads: 12 x 64 at 256 tokens)."""
    q, k, v = (randn(16 * 12, 256, 64, dtype=dtype) for _ in range(3))

    def f(q, k, v):
        return torch.softmax(q @ k.transpose(1, 2) * 0.125, dim=-1) @ v
    check(f, q, k, v, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_and_gradient(fresh_tc, dtype):
    """GPT-2's token embedding (50257 x 768) at 8 x 512 tokens, repeated
    tokens included: the lookup and the table's gradient, a scatter-add of
    4096 rows (no one-hot product over the vocabulary)."""
    table = (randn(50257, 768, dtype=dtype) * 0.02).requires_grad_()
    ref = table.detach().clone().requires_grad_()
    ids = torch.randint(0, 50257, (8, 512), device="cuda")
    ids[0, :64] = 11
    fn = torch.compile(lambda t, i: F.embedding(i, t) * 2, backend="tc")
    out = fn(table, ids)
    expected = F.embedding(ids, ref) * 2
    torch.testing.assert_close(out, expected)
    upstream = randn(*out.shape, dtype=dtype)
    out.backward(upstream)
    expected.backward(upstream)
    torch.testing.assert_close(table.grad, ref.grad, atol=2e-2, rtol=2e-2)
    assert tc.counters["training_graphs"] == 1, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lm_head_odd_vocabulary(fresh_tc, dtype):
    """GPT-2's LM head (4096 tokens x 768 -> 50257) and its gradients:
    rows of 50257 half-precision elements are no multiple of 16 bytes, so
    tc-align-half-products pads the GEMMs' operands and slices the results
    (cuBLAS's aligned kernels instead of its slow ones). The weight's
    gradient sums over 4096 tokens."""
    x = (randn(4096, 768, dtype=dtype)).requires_grad_()
    w = (randn(50257, 768, dtype=dtype) * 0.02).requires_grad_()
    xr, wr = (t.detach().clone().requires_grad_() for t in (x, w))
    fn = torch.compile(lambda x, w: x @ w.t(), backend="tc")
    out = fn(x, w)
    expected = xr @ wr.t()
    torch.testing.assert_close(out, expected, atol=2e-2, rtol=2e-2)
    upstream = randn(*out.shape, dtype=dtype) * 0.01
    out.backward(upstream)
    expected.backward(upstream)
    torch.testing.assert_close(x.grad, xr.grad, atol=5e-2, rtol=2e-2)
    torch.testing.assert_close(w.grad, wr.grad, atol=5e-2, rtol=2e-2)
    assert tc.counters["training_graphs"] == 1, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lm_head_logits_are_a_padded_view(fresh_tc, dtype):
    """Inference: the LM head's logits come back as a view of a product
    padded to 50264 columns (no slice copy), as Inductor returns them,
    with eager's values; a view after it (`view(-1, 50257)`) works."""
    x = randn(16, 256, 768, dtype=dtype)
    w = randn(50257, 768, dtype=dtype) * 0.02
    with torch.no_grad():
        out = check(lambda x, w: F.linear(x, w), x, w, atol=2e-2, rtol=2e-2)
    assert out.stride() == (256 * 50264, 50264, 1)
    torch.testing.assert_close(out.view(-1, 50257), (x @ w.t()).view(-1, 50257),
                               atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_lm_head_with_bias_is_a_padded_view(fresh_tc, dtype):
    """A masked LM head (BERT's, LayoutLM's: 30522 columns and a bias):
    the bias is added in the product's epilogue to a product padded to
    30528 columns, and the logits come back as a view of it."""
    x = randn(16, 512, 768, dtype=dtype)
    w = randn(30522, 768, dtype=dtype) * 0.02
    b = randn(30522, dtype=dtype)
    with torch.no_grad():
        out = check(lambda x, w, b: F.linear(x, w, b), x, w, b, atol=2e-2,
                    rtol=2e-2)
    assert out.stride() == (512 * 30528, 30528, 1)


def test_histc_runs_in_eager(fresh_tc):
    """A million values into 100 bins: tc's histogram counts with global
    atomics, 11x eager's time on the H200 (eager counts each block's values
    in shared memory first), so the support check leaves it to eager."""
    x = randn(1 << 20, dtype=torch.float32)
    torch._dynamo.reset()
    tc.reset_counters()
    got = torch.compile(lambda x: torch.histc(x, 100, -3, 3),
                        backend="tc")(x)
    assert torch.equal(got, torch.histc(x, 100, -3, 3))
    assert tc.counters["kernels"] == 0 and tc.counters["ops_eager"] == 1


def test_quotient_deciding_an_index(fresh_tc):
    """Nearest upsampling and floor division of floats: a quotient rounded
    to an integer (an index, a bin) must be eager's IEEE quotient (tc's
    approximate division put histc's values at a bin edge in the next
    bin)."""
    x = randn(8, 64, 37, 53, dtype=torch.float32)
    check(lambda x: F.interpolate(x, size=(61, 97), mode="nearest"), x,
          atol=0, rtol=0)
    a = randn(1 << 20, dtype=torch.float32) * 100
    b = randn(1 << 20, dtype=torch.float32).abs() + 0.1
    check(lambda a, b: torch.floor_divide(a, b), a, b, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulating_index_put(fresh_tc, dtype):
    """An embedding's gradient as AOTAutograd writes it (index_put with
    accumulate) at GPT-2's vocabulary and 8192 tokens: a scatter-add of the
    rows, summed in f32 and rounded once."""
    g = randn(8192, 768, dtype=dtype)
    i = torch.randint(0, 50257, (8192,), device="cuda")
    i[::3] = 7  # a row many tokens share
    got = check(lambda g, i: torch.ops.aten.embedding_dense_backward(
        g, i, 50257, -1, False), g, i, atol=0.1, rtol=0.02)
    exact = torch.ops.aten.embedding_dense_backward(g.double(), i, 50257, -1,
                                                    False)
    torch.testing.assert_close(got, exact.to(dtype))


# Convolutions: half-precision 2-d convolutions run channels-last on cuDNN
# (tc-channels-last-convolutions), with the batch norms, activations,
# pooling and residual adds between them.


def channels_last_convolutions(fn, *args):
    """Compiles `fn` with the kernel stage's IR kept; how many library
    convolutions ran channels-last and how many did not."""
    import tc.compiler
    import tc.logs
    torch._dynamo.reset()
    tc.compiler.build.cache.clear()
    tc.logs.set_logs("output_code")
    try:
        out = torch.compile(fn, backend="tc")(*args)
        if out.requires_grad:  # a training graph's backward half too
            out.backward()
    finally:
        tc.logs.set_logs()
    kernels = "".join(native.stage_ir.get("kernel", "")
                      for native in tc.compiler.build.cache.values())
    calls = [line for line in kernels.splitlines() if "kernel.conv" in line]
    last = sum("channels_last" in line for line in calls)
    return last, len(calls) - last


def bottleneck(width, out, stride, dtype):
    """A ResNet-50 bottleneck block (eval mode): 1x1, 3x3 (strided), 1x1,
    batch norms, ReLUs and the projected shortcut."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(out, width, 1, bias=False)
            self.b1 = nn.BatchNorm2d(width)
            self.c2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.b2 = nn.BatchNorm2d(width)
            self.c3 = nn.Conv2d(width, out, 1, bias=False)
            self.b3 = nn.BatchNorm2d(out)
            self.down = nn.Sequential(
                nn.Conv2d(out, out, 1, stride, bias=False),
                nn.BatchNorm2d(out))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = torch.relu(self.b2(self.c2(y)))
            return torch.relu(self.b3(self.c3(y)) + self.down(x))

    torch.manual_seed(0)
    block = Block().cuda().to(dtype).eval()
    for bn in (block.b1, block.b2, block.b3, block.down[1]):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return block


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,width,out,size,stride", [
    (32, 64, 256, 56, 1), (16, 128, 512, 28, 2), (8, 96, 200, 15, 2)],
    ids=["layer1", "layer2", "odd"])
def test_bottleneck_channels_last(fresh_tc, dtype, batch, width, out, size,
                                  stride):
    """ResNet-50's bottleneck at its real sizes (and odd ones), in eval
    mode: eager's output at the dtype's tolerance (cuDNN picks other
    algorithms for the two layouts), every convolution channels-last."""
    block = bottleneck(width, out, stride, dtype).requires_grad_(False)
    x = randn(batch, out, size, size, dtype=dtype)
    check(block, x, atol=0.05, rtol=0.02)
    assert channels_last_convolutions(block, x) == (4, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_stem_and_pooling_channels_last(fresh_tc, dtype):
    """ResNet's stem: a 7x7 stride-2 convolution of 3 channels (no multiple
    of 8), batch norm, ReLU, 3x3 max pooling, then a global average and a
    linear layer, on a sliced (offset) input."""
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.MaxPool2d(3, 2, 1), nn.Conv2d(64, 64, 3, 1, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).cuda().to(dtype).eval().requires_grad_(False)
    x = randn(16, 3, 225, 224, dtype=dtype)[:, :, 1:]
    check(model, x, atol=0.05, rtol=0.02)
    assert channels_last_convolutions(model, x) == (2, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("groups", [4, 96], ids=["grouped", "depthwise"])
def test_grouped_convolutions(fresh_tc, dtype, groups):
    """Grouped and depthwise convolutions (ResNeXt's, MobileNet's) with a
    SiLU, on cuDNN, channels-last (cuDNN's plan timed among its
    candidates)."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(96, 96, 3, 1, 1, groups=groups).cuda().to(dtype)
    conv.requires_grad_(False)
    x = randn(16, 96, 31, 29, dtype=dtype)
    check(lambda x: F.silu(conv(x)), x, atol=0.05, rtol=0.02)
    assert channels_last_convolutions(lambda x: F.silu(conv(x)), x) == (1, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pixels", [14, 7])
def test_global_response_norm(fresh_tc, dtype, pixels):
    """ConvNeXt-V2's GRN on a channels-last [N, H, W, C] activation: the
    L2 norm over the pixels is a reduction each thread runs alone down a
    column (unrolled by tc-lower-kernel-to-gpu's thread-unroll, 196 and 49
    iterations), then normalized by its mean over the channels."""
    torch.manual_seed(0)
    gamma, beta = randn(1280, dtype=dtype), randn(1280, dtype=dtype)

    def grn(x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return x + gamma * (x * nx) + beta

    x = randn(16, pixels, pixels, 1280, dtype=dtype)
    # Eager rounds x * nx (up to ~16) to bf16 before adding beta: one bf16
    # step there is 0.0625, which a result near 0 keeps (28 of 4M elements
    # differed by that one step on the H200).
    check(grn, x, atol=0.13 if dtype == torch.bfloat16 else 0.05, rtol=0.02)

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("include_pad", [False, True])
def test_inception_pooling_branch(fresh_tc, dtype, include_pad):
    """Inception's pooling branch beside a convolution branch at its
    35x35 size: a 3x3 average pooling with a zero border (read in place by
    the pooling's kernel, channels-last) and the branches joined along the
    channels (a channels-last concatenation)."""
    torch.manual_seed(0)
    a = torch.nn.Conv2d(192, 64, 1).cuda().to(dtype).requires_grad_(False)
    b = torch.nn.Conv2d(192, 32, 1).cuda().to(dtype).requires_grad_(False)

    def block(x):
        pooled = F.avg_pool2d(x, 3, 1, 1, count_include_pad=include_pad)
        return torch.cat([F.relu(a(x)), F.relu(b(pooled))], dim=1)

    x = randn(32, 192, 35, 35, dtype=dtype)
    check(block, x, atol=0.05, rtol=0.02)

def test_cudnn_untimed_plan(fresh_tc, monkeypatch):
    """TC_CUDNN_TUNE=0 takes cuDNN's first candidate untimed (plans are
    shared per process: a shape no other test plans)."""
    monkeypatch.setenv("TC_CUDNN_TUNE", "0")
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(40, 40, 3, 1, 1, groups=5).cuda().bfloat16()
    conv.requires_grad_(False)
    x = randn(7, 40, 19, 17, dtype=torch.bfloat16)
    check(lambda x: F.gelu(conv(x)), x, atol=0.05, rtol=0.02)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bottleneck_training_channels_last(fresh_tc, dtype):
    """The bottleneck in training mode (batch statistics), forward and
    backward: both convolution gradients channels-last too. Eager's loss,
    and gradients as close to an f32 copy's as eager's half-precision
    ones are (batch norm's gradients sum 12544 positions, rounded in
    another order)."""
    import copy
    block = bottleneck(64, 256, 1, dtype).train()
    reference = copy.deepcopy(block).float()
    x = randn(16, 256, 28, 28, dtype=dtype).requires_grad_()
    x32 = x.detach().float().requires_grad_()
    reference(x32).float().square().mean().backward()
    exact = [p.grad for p in (x32, *reference.parameters())]
    params = [x, *block.parameters()]

    def loss(x):
        return block(x).float().square().mean()

    def error(got, want):
        return float((got.float() - want).norm() / want.norm())

    expected = loss(x)
    expected.backward()
    eager = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    torch._dynamo.reset()
    tc.reset_counters()
    got = torch.compile(loss, backend="tc")(x)
    got.backward()
    torch.testing.assert_close(got, expected, atol=0.02, rtol=0.02)
    for p, e, want in zip(params, eager, exact):
        assert error(p.grad, want) <= 2 * error(e, want) + 0.01, (
            tuple(p.shape), error(p.grad, want), error(e, want))
    assert tc.counters["training_graphs"] == 1, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    # 4 forward convolutions, 4 weight and 4 input gradients.
    assert channels_last_convolutions(loss, x) == (12, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_activation_pooled_channels_last(fresh_tc, dtype):
    """An NF-ResNet transition at its first stage's size: a SiLU activation
    scaled by a squeeze-and-excitation gate (a 1x1 convolution's output,
    [N, C, 1, 1], expanded over the maps), then a 2x2 average pooling of
    the shortcut (ceil_mode, no padding counted) and its 1x1 convolution.
    The pooling reads the gated activation channels-last in its own
    kernel; every convolution runs channels-last."""
    torch.manual_seed(0)
    se = torch.nn.Conv2d(256, 256, 1).cuda().to(dtype).requires_grad_(False)
    proj = torch.nn.Conv2d(256, 512, 1).cuda().to(dtype)
    proj.requires_grad_(False)
    main = torch.nn.Conv2d(256, 256, 3, 1, 1).cuda().to(dtype)
    main.requires_grad_(False)

    def block(x):
        y = F.silu(main(x))
        y = y * torch.sigmoid(se(y.mean((2, 3), keepdim=True))) * 0.98
        pooled = F.avg_pool2d(y, 2, 2, ceil_mode=True,
                              count_include_pad=False)
        return proj(pooled)

    x = randn(8, 256, 56, 56, dtype=dtype)
    check(block, x, atol=0.05, rtol=0.02)
    assert channels_last_convolutions(block, x) == (3, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_then_token_mean(fresh_tc, dtype):
    """A transformer's pooled head (Swin's, at batch 128): a layer norm
    over the channels, then the mean over the 49 tokens. The norm's row
    statistics are a kernel of their own; inlined into the mean's kernel,
    which iterates the channels, each row's were computed 1024 times."""
    x = randn(128, 49, 1024, dtype=dtype)
    w, b = randn(1024, dtype=dtype), randn(1024, dtype=dtype)
    check(lambda x, w, b: F.layer_norm(x, (1024,), w, b).mean(1), x, w, b,
          atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("rows,length", [(32, 512), (8, 4096), (7, 1000)])
def test_blocked_position_count(fresh_tc, rows, length):
    """RoBERTa's position ids: a cumsum of the padding mask along 512 to
    4096 tokens (blocked: chunks' prefixes plus the chunks' totals before
    them), exact in int64, inside tc's graph (a split into two graphs
    around eager's kernel cost more than the kernel)."""
    ids = torch.randint(0, 1000, (rows, length), device="cuda")
    ids[:, length - length // 7:] = 1  # right padding

    def positions(ids):
        mask = ids.ne(1).int()
        return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1
    assert torch.equal(check(positions, ids), positions(ids))


@pytest.mark.parametrize("dtype", DTYPES)
def test_blocked_scans_of_floats(fresh_tc, dtype):
    """A cumsum of a long row and along a strided dimension, and a
    cumprod, in half precision: blocked in f32 and rounded once, so at
    least as close to the exact scan (float64) as eager's, whose CUDA scan
    of 2049 half elements is several units in the last place off."""
    def closer_than_eager(fn, x):
        torch._dynamo.reset()
        tc.reset_counters()
        exact = fn(x.double())
        actual = torch.compile(fn, backend="tc")(x)
        assert tc.counters["kernels"] > 0, dict(tc.counters)
        assert tc.counters["ops_eager"] == 0, dict(tc.counters)
        assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
        error = (actual.double() - exact).abs().max().item()
        eager = (fn(x).double() - exact).abs().max().item()
        # One rounding of the exact value's magnitude at most, or eager's.
        bound = exact.abs().max().item() * 2.0 ** -(
            8 if dtype == torch.bfloat16 else 11)
        assert error <= max(bound, eager), (error, eager, bound)

    x = randn(6, 2049, dtype=dtype)
    closer_than_eager(lambda x: torch.cumsum(x, -1), x)
    closer_than_eager(lambda x: torch.cumsum(x.t(), 0) * 2, x)
    y = 1 + randn(5, 300, dtype=dtype) / 300
    closer_than_eager(lambda y: torch.cumprod(y, 1), y)
