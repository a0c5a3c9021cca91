"""tc on NVIDIA GPUs: the CUDA pipeline and runtime against eager PyTorch.

Tests marked `cuda` need a CUDA device and are skipped elsewhere (CI runs on
CPUs; run them on the GPU machine with `utils/gpu/run.sh`). The others check
what needs no GPU: that the CUDA pipeline compiles graphs to PTX.
"""

import gc
import logging
import os

import pytest
import torch

import tc

from batch_model import (SEQUENCES, AttentionBlock, BatchModel,
                         MaskedTokens, TokenEncoder, TokenMLP,
                         assert_compiled_once_symbolic,
                         masked_tokens_inputs)

pytestmark = pytest.mark.requires_native

RTOL, ATOL = 1e-5, 1e-5
has_cuda = torch.cuda.is_available()
cuda = pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def exact_fp32():
    """fp32 GEMMs in full precision on both sides (no TF32)."""
    if not has_cuda:
        yield
        return
    old = (torch.backends.cuda.matmul.allow_tf32,
           torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    yield
    (torch.backends.cuda.matmul.allow_tf32,
     torch.backends.cudnn.allow_tf32) = old


def close(actual, expected, rtol=RTOL, atol=ATOL):
    assert actual.device == expected.device
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


def assert_all_compiled():
    assert tc.counters["ops_compiled"] > 0, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["fallback_graphs"] == 0, dict(tc.counters)


def softmax(x):
    m = x.max(dim=-1, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


def gelu(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def sin_cos(x, y):
    return torch.sin(x) + torch.cos(y)


SOFTMAX_FX = """
fx.graph @softmax(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %max = fx.call_function "aten::amax"(%x) {args = {dim = array<i64: -1>, keepdim = true}} : (tensor<64x1024xf32>) -> tensor<64x1xf32>
  %sub = fx.call_function "aten::sub.Tensor"(%x, %max) : (tensor<64x1024xf32>, tensor<64x1xf32>) -> tensor<64x1024xf32>
  %exp = fx.call_function "aten::exp"(%sub) : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %sum = fx.call_function "aten::sum.dim_IntList"(%exp) {args = {dim = array<i64: -1>, keepdim = true}} : (tensor<64x1024xf32>) -> tensor<64x1xf32>
  %div = fx.call_function "aten::div.Tensor"(%exp, %sum) : (tensor<64x1024xf32>, tensor<64x1xf32>) -> tensor<64x1024xf32>
  fx.output %div : tensor<64x1024xf32>
}
"""


def test_cuda_pipeline_compiles_without_a_gpu():
    """The CUDA pipeline needs no GPU: the softmax becomes one PTX kernel
    with block reductions, and the host program launches it."""
    import tc.compiler
    native = tc.compiler.extension.load_native()
    try:
        from tc.targets import cuda as tc_cuda
        toolkit, libdevice, _ = tc_cuda.toolchain()
    except RuntimeError as error:
        pytest.skip(str(error))
    compiled = native.compile_cuda(
        SOFTMAX_FX, f"chip=sm_90 format=isa toolkit={toolkit} "
        f"link={libdevice}", True)
    assert compiled.target == "cuda"
    assert compiled.num_kernels == 1
    schedule = compiled.stage_ir["schedule"]
    assert "kernel.launch @tc_kernels::@softmax_fused" in schedule
    assert "grid = 64" in schedule and "block = 256" in schedule
    assert "gpu.shuffle" in compiled.stage_ir["gpu"]


def _ptx_options() -> str:
    """The CUDA pipeline's options for PTX for the H100 with this machine's
    toolchain (skips the test without one)."""
    try:
        from tc.targets import cuda as tc_cuda
        toolkit, libdevice, _ = tc_cuda.toolchain()
    except RuntimeError as error:
        pytest.skip(str(error))
    return f"chip=sm_90 format=isa toolkit={toolkit} link={libdevice}"


def test_cuda_disk_cache(tmp_path):
    """A compile with a cache folder stores the host program and the
    kernels' binaries; the next compile of the same graph and options (in
    any process) loads them without running the pipeline. Other options
    miss. Needs no GPU."""
    import tc.compiler
    native = tc.compiler.extension.load_native()
    options = _ptx_options()
    cache = str(tmp_path / "cuda")
    first = native.compile_cuda(SOFTMAX_FX, options, False, cache)
    assert not first.from_cache
    assert len(list((tmp_path / "cuda").glob("*.gpu"))) == 1
    second = native.compile_cuda(SOFTMAX_FX, options, False, cache)
    assert second.from_cache
    assert second.num_kernels == first.num_kernels == 1
    assert second.arena_bytes == first.arena_bytes
    other = native.compile_cuda(SOFTMAX_FX, options + " max-block-size=512",
                                False, cache)
    assert not other.from_cache
    # A damaged entry is a miss, recompiled and rewritten.
    for entry in (tmp_path / "cuda").glob("*.gpu"):
        entry.write_bytes(entry.read_bytes()[:100])
    again = native.compile_cuda(SOFTMAX_FX, options, False, cache)
    assert not again.from_cache and again.num_kernels == 1
    assert native.compile_cuda(SOFTMAX_FX, options, False, cache).from_cache


def test_cuda_disk_cache_is_keyed_on_structure(tmp_path):
    """Graphs that differ only in value names, `name` attributes and
    locations (a model's identical layers, as the importer writes them)
    share a cache entry: the second is loaded, not compiled. A graph with
    another op misses. Needs no GPU."""
    import re

    import tc.compiler
    native = tc.compiler.extension.load_native()
    options = _ptx_options()
    cache = str(tmp_path / "cuda")

    def layer(i):
        """SOFTMAX_FX as layer i's subgraph: its own SSA names, `name`
        attributes and locations."""
        text = re.sub(r"%([a-z]+)", rf"%\1_{i}", SOFTMAX_FX)
        text = text.replace(") : (", f') {{name = "op_{i}"}} : (').replace(
            "keepdim = true}} :", f'keepdim = true}}, name = "op_{i}"}} :')
        return re.sub(r"(-> tensor<[0-9x]+xf32>)\n",
                      rf'\1 loc("op_{i}"("model.py":{i}:4))\n', text)

    assert layer(1).count("loc(") == 5 and layer(1).count("op_1") == 10
    first = native.compile_cuda(layer(1), options, False, cache)
    assert not first.from_cache
    second = native.compile_cuda(layer(2), options, False, cache)
    assert second.from_cache and second.num_kernels == first.num_kernels
    # Another op is another graph.
    changed = SOFTMAX_FX.replace('"aten::exp"', '"aten::sin"')
    assert changed != SOFTMAX_FX
    assert not native.compile_cuda(changed, options, False, cache).from_cache
    # So is another string argument of an op (names only are ignored).
    gelu = """
fx.graph @g(%x: tensor<64x1024xf32> {fx.name = "x"}) -> tensor<64x1024xf32> {
  %g = fx.call_function "aten::gelu"(%x) {args = {approximate = "tanh"}, name = "g"} : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  fx.output %g : tensor<64x1024xf32>
}
"""
    assert not native.compile_cuda(gelu, options, False, cache).from_cache
    exact = gelu.replace('"tanh"', '"none"').replace('"g"', '"h"')
    assert not native.compile_cuda(exact, options, False, cache).from_cache
    assert native.compile_cuda(gelu.replace('"g"', '"h"'), options, False,
                               cache).from_cache


# A graph with the symbolic size (a `?` batch, docs/DynamicShapes.md).
SYMBOLIC_FX = """
fx.graph @mlp(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %mm = fx.call_function "aten::addmm"(%b, %x, %t) : (tensor<8xf32>, tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %r = fx.call_function "aten::relu"(%mm) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %m = fx.call_function "aten::mm"(%r, %w) : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %g = fx.call_function "aten::sin"(%m) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %mm2 = fx.call_function "aten::addmm"(%b, %g, %t) : (tensor<8xf32>, tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %s = fx.call_function "aten::_softmax"(%mm2) {args = {dim = -1 : i64, half_to_float = false}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  fx.output %s, %r : tensor<?x8xf32>, tensor<?x8xf32>
}
"""


def test_cuda_symbolic_size_compiles_without_a_gpu(tmp_path):
    """A graph with the symbolic size compiles once for the GPU: kernels
    take the size after their buffers, launches size their grids by it, the
    arena grows with it; the disk cache keeps all of that. Needs no GPU."""
    import tc.compiler
    native = tc.compiler.extension.load_native()
    options = _ptx_options()
    compiled = native.compile_cuda(SYMBOLIC_FX, options, True)
    assert compiled.symbolic
    assert compiled.arena_bytes_per_symbol > 0
    schedule = compiled.stage_ir["schedule"]
    assert "_per_symbol = " in schedule, schedule
    assert " * s]" in schedule, schedule
    assert "memref<2147483647x" in compiled.stage_ir["gpu"]
    assert "{llvm.align = 16 : i64, llvm.noalias}, %arg2: index)" in \
        compiled.stage_ir["gpu"]
    cache = str(tmp_path / "cuda")
    first = native.compile_cuda(SYMBOLIC_FX, options, False, cache)
    second = native.compile_cuda(SYMBOLIC_FX, options, False, cache)
    assert not first.from_cache and second.from_cache
    assert second.symbolic
    assert (second.arena_bytes_per_symbol == first.arena_bytes_per_symbol
            == compiled.arena_bytes_per_symbol)
    assert second.arena_bytes == first.arena_bytes


def test_cuda_pipeline_errors_are_diagnostics():
    import tc.compiler
    native = tc.compiler.extension.load_native()
    with pytest.raises(RuntimeError, match="invalid CUDA pipeline options"):
        native.compile_cuda(SOFTMAX_FX, "chip=sm_90 no-such-option=1")


@cuda
@pytest.mark.parametrize("fn,shape", [
    (softmax, (64, 1000)),
    (softmax, (3, 7)),
    (gelu, (1000, 257)),
    (lambda x: torch.relu(x) * 2 - x.sum(dim=0), (129, 65)),
    (lambda x: x.sum(dim=0), (4096, 300)),
    (lambda x: x.amax(dim=-1), (33, 4097)),
    (lambda x: x.sum(), (1000, 100)),
    (lambda x: x.mean(dim=-1), (512, 768)),
    # Split reductions (tc-split-reductions): nested full reductions,
    # column reductions, reductions with an epilogue, integer sums.
    (lambda x: x.sum(), (8, 256, 512)),
    (lambda x: x.amax(), (2048, 2048)),
    (lambda x: x.mean(dim=0), (8192, 64)),
    (lambda x: x.amin(dim=0) * 2, (100000, 3)),
    (lambda x: (x > 0).sum(), (4096, 1024)),
])
def test_cuda_kernels_match_eager(fresh_tc, fn, shape):
    x = torch.randn(*shape, device="cuda")
    compiled = torch.compile(fn, backend="tc")
    # Sums of 1e5 terms differ by summation order (fp32): ~1e-7 * sqrt(n).
    atol = 1e-3 if x.numel() >= 100_000 and fn(x).dim() == 0 else 1e-4
    close(compiled(x), fn(x), rtol=1e-5, atol=atol)
    assert_all_compiled()
    assert tc.counters["kernels"] >= 1


@cuda
def test_cuda_full_sum_is_split(fresh_tc):
    """A full sum of 4M elements runs as a partial kernel over 256 chunks
    and a final one, not as one thread block."""
    x = torch.randn(4096, 1024, device="cuda")
    compiled = torch.compile(lambda t: t.sum(), backend="tc")
    close(compiled(x), x.sum(), rtol=1e-5, atol=2e-2)
    assert_all_compiled()
    assert tc.counters["kernels"] == 2


@cuda
def test_cuda_sin_cos(fresh_tc):
    x, y = (torch.randn(1 << 20, device="cuda") for _ in range(2))
    close(torch.compile(sin_cos, backend="tc")(x, y), sin_cos(x, y))
    assert_all_compiled()
    assert tc.counters["kernels"] == 1


@cuda
def test_cuda_residual_layernorm(fresh_tc):
    ln = torch.nn.LayerNorm(1024).cuda()
    torch.nn.init.normal_(ln.weight)
    torch.nn.init.normal_(ln.bias)
    fn = lambda x, r: ln(x + r)  # noqa: E731
    x, r = (torch.randn(256, 1024, device="cuda") for _ in range(2))
    with torch.no_grad():
        close(torch.compile(fn, backend="tc")(x, r), fn(x, r), atol=1e-4)
    assert_all_compiled()


@cuda
@pytest.mark.parametrize("batch", [1, 128, 1000])
def test_cuda_mlp(fresh_tc, batch):
    """Seed 004's MLP: GEMMs through cuBLAS (bias included), ReLU kernels."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10)).cuda()
    x = torch.randn(batch, 784, device="cuda")
    with torch.no_grad():
        close(torch.compile(model, backend="tc")(x), model(x), atol=1e-4)
    assert_all_compiled()


@cuda
def test_cuda_decoder_trains_in_segments_around_attention(fresh_tc):
    """A Llama-sized decoder layer pair (hidden 1024, 16 heads, 4 x 512
    tokens) in a bf16 autocast training step: tc's autodiff per segment,
    PyTorch's fused attention (flash / cuDNN) forward and backward in eager
    between them, no AOTAutograd. The loss and each parameter's gradient
    match eager's bf16 step to within bf16's rounding (relative to the
    gradient's norm)."""
    import torch.nn.functional as F

    width, heads, vocab = 1024, 16, 4000

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, width)
            self.layers = torch.nn.ModuleList(
                torch.nn.ModuleDict(dict(
                    norm1=torch.nn.LayerNorm(width),
                    qkv=torch.nn.Linear(width, 3 * width),
                    proj=torch.nn.Linear(width, width),
                    norm2=torch.nn.LayerNorm(width),
                    up=torch.nn.Linear(width, 4 * width),
                    down=torch.nn.Linear(4 * width, width)))
                for _ in range(2))
            self.head = torch.nn.Linear(width, vocab, bias=False)

        def forward(self, ids):
            h = self.embed(ids)
            batch, length = ids.shape
            for layer in self.layers:
                q, k, v = layer.qkv(layer.norm1(h)).view(
                    batch, length, 3, heads, -1).permute(2, 0, 3, 1, 4)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                h = h + layer.proj(a.transpose(1, 2).reshape(h.shape))
                h = h + layer.down(F.gelu(layer.up(layer.norm2(h))))
            logits = self.head(h)
            return F.cross_entropy(logits.view(-1, vocab).float(),
                                   ids.view(-1))

    torch.manual_seed(0)
    model = Decoder().cuda()
    reference = Decoder().cuda()
    reference.load_state_dict(model.state_dict())
    ids = torch.randint(0, vocab, (4, 512), device="cuda")
    compiled = torch.compile(model, backend="tc")
    for fn in (compiled, reference):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fn(ids)
        loss.backward()
        if fn is compiled:
            got = loss.detach()
    close(got, loss.detach(), rtol=2e-2, atol=2e-2)
    for (name, p), q in zip(model.named_parameters(),
                            reference.parameters()):
        error = (p.grad - q.grad).float().norm() / q.grad.float().norm()
        assert error < 3e-2, (name, error.item())
    assert tc.counters["training_graphs"] == 1, dict(tc.counters)
    assert tc.counters["aten_aot_autograd"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["subgraphs_compiled"] == 6, dict(tc.counters)


@cuda
def test_cuda_graph_with_cpu_scalars_compiles_whole(fresh_tc):
    """DeBERTa-v2's attention divides its scores by
    `sqrt(torch.tensor(d))` and its position buckets take the logarithm of
    a `torch.tensor`: 0-d CPU tensors beside CUDA ones, which eager takes
    as scalars. tc moves them to the GPU (the graph mixed devices and ran
    wholly in eager) and compiles the graph whole, with eager's values."""
    def f(q, k, rel):
        scale = torch.sqrt(torch.tensor(q.size(-1), dtype=torch.float) * 3)
        scores = q @ k.transpose(-1, -2) / scale.to(dtype=q.dtype)
        mid = 128
        inside = (rel < mid) & (rel > -mid)
        position = torch.where(inside, torch.tensor(mid - 1).type_as(rel),
                               torch.abs(rel))
        log_position = torch.ceil(
            torch.log(position / mid)
            / torch.log(torch.tensor((512 - 1) / mid)) * (mid - 1)) + mid
        bucket = torch.where(position <= mid, rel.type_as(log_position),
                             log_position * torch.sign(rel))
        return scores.softmax(-1), bucket

    torch.manual_seed(0)
    q, k = (torch.randn(2, 4, 64, 32, device="cuda", dtype=torch.bfloat16)
            for _ in range(2))
    positions = torch.arange(64, device="cuda") * 8
    rel = positions[:, None] - positions[None, :]
    got = torch.compile(f, backend="tc")(q, k, rel)
    want = f(q, k, rel)
    close(got[0], want[0], rtol=2e-2, atol=2e-2)
    # (A bucket's ceil may round the other way on a last-bit difference.)
    close(got[1], want[1], rtol=0, atol=1.0)
    assert_all_compiled()
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)


@cuda
@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("training", [False, True])
def test_cuda_causal_mask_runs_as_causal_attention(fresh_tc, training,
                                                    packed):
    """A causal mask built in the model (as Hugging Face's models build
    theirs under torch.compile) reaches PyTorch's fused attention as
    `is_causal=True` (tc.attention), in GPT-2's sizes and bf16: the output
    and, in a training step, the gradients are eager's (masked attention)
    to within bf16's rounding. Unpacked: separate query, key and value
    projections and an output projection (RoBERTa's layout), whose
    attention's output gradient tc's backward hands over in another layout
    than the output's (`segments._call_attention`)."""
    import torch.nn.functional as F

    batch, heads, length, width = 16, 12, 256, 768

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if packed:
                self.qkv = torch.nn.Linear(width, 3 * width)
            else:
                self.q, self.k, self.v, self.out = (
                    torch.nn.Linear(width, width) for _ in range(4))

        def split(self, t):
            return t.view(batch, length, heads, -1).transpose(1, 2)

        def forward(self, x):
            if packed:
                q, k, v = self.qkv(x).view(batch, length, 3, heads,
                                           -1).permute(2, 0, 3, 1, 4)
            else:
                q, k, v = (self.split(f(x)) for f in (self.q, self.k, self.v))
            positions = torch.arange(length, device=x.device)
            mask = positions[None, :] <= positions[:, None]
            mask = mask[None, None].expand(batch, 1, length, length)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            if packed:
                return out
            return self.out(out.transpose(1, 2).reshape(batch, length, -1))

    torch.manual_seed(0)
    model = Attention().cuda().to(torch.bfloat16)
    x = torch.randn(batch, length, width, device="cuda",
                    dtype=torch.bfloat16, requires_grad=training)
    compiled = torch.compile(model, backend="tc")
    if training:
        grads = []
        for fn in (compiled, model):
            x.grad = None
            model.zero_grad()
            fn(x).float().square().mean().backward()
            grads.append([x.grad] + [p.grad for p in model.parameters()])
        for got, want in zip(*grads):
            error = (got - want).float().norm() / want.float().norm()
            assert error < 2e-2, error.item()
    else:
        with torch.no_grad():
            close(compiled(x), model(x), rtol=2e-2, atol=2e-2)
    assert tc.counters["causal_masks"] == 1, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    assert tc.counters["subgraphs_compiled"] >= 1, dict(tc.counters)


@cuda
def test_cuda_mask_expanded_along_keys_runs_fused_attention(fresh_tc):
    """A mask expanded along the keys (stride 0 in its last dimension, as
    Hugging Face's mask code writes a bidirectional one without padding)
    is copied to a contiguous one (tc.attention.contiguous_masks), so
    PyTorch's fused attention takes it: no f32 matrix product of the math
    path in tc's kernels, eager's output to within bf16's rounding, at
    ALBERT's head size. (Such a mask keeps or drops whole rows; the
    lengths keep every row, whose fully masked softmax PyTorch's kernels
    need not agree on.)"""
    import tc.compiler
    import tc.logs
    import torch.nn.functional as F

    batch, heads, length, width = 4, 12, 384, 64

    def attend(q, k, v, lengths):
        keep = torch.arange(length, device=q.device) < lengths[:, None]
        mask = keep[:, None, :, None].expand(batch, 1, length, length)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, heads, length, width, device="cuda",
                           dtype=torch.bfloat16) for _ in range(3))
    lengths = torch.full((batch,), length, device="cuda")
    tc.compiler.build.cache.clear()
    tc.logs.set_logs("output_code")
    try:
        got = torch.compile(attend, backend="tc")(q, k, v, lengths)
    finally:
        tc.logs.set_logs()
    close(got, attend(q, k, v, lengths), rtol=2e-2, atol=2e-2)
    assert tc.counters["contiguous_masks"] == 1, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    kernels = "".join(native.stage_ir.get("kernel", "")
                      for native in tc.compiler.build.cache.values())
    wide = [line for line in kernels.splitlines()
            if "kernel.gemm" in line and "f32>" in line]
    assert not wide, wide


@cuda
def test_cuda_training_through_tc_autodiff(fresh_tc):
    """3 SGD steps of Linear/GELU/LayerNorm/Linear on the GPU: the backward
    is tc's joint graph (cuBLAS GEMMs, split column reductions for the
    biases), and losses and weights are eager's."""
    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(256, 512), torch.nn.GELU(),
            torch.nn.LayerNorm(512), torch.nn.Linear(512, 10)).cuda()

    torch.manual_seed(1)
    x = torch.randn(64, 256, device="cuda")
    target = torch.randn(64, 10, device="cuda")
    reference, model = make(), make()
    compiled = torch.compile(model, backend="tc")
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.05)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(3):
        for net, fn, o in ((reference, reference, opt_ref),
                           (model, compiled, opt)):
            loss = ((fn(x) - target) ** 2).mean()
            o.zero_grad()
            loss.backward()
            o.step()
    for p_ref, p in zip(reference.parameters(), model.parameters()):
        close(p, p_ref, rtol=1e-4, atol=1e-5)
    assert tc.counters["training_graphs"] == 1


_FIRST_ON_AUTOGRAD_THREAD = """
import torch, tc
torch.manual_seed(0)
w = torch.randn(256, 256, device="cuda", requires_grad=True)
x = torch.randn(64, 256, device="cuda")
# A freed block in the caching allocator: the backward's allocations reuse
# it, so they make no CUDA call on autograd's device thread either.
block = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
del block
f = torch.compile(lambda x, w: torch.tanh(x @ w).sum(), backend="tc")
f(x, w).backward()
expected, = torch.autograd.grad(torch.tanh(x @ w).sum(), w)
torch.testing.assert_close(w.grad, expected, rtol=1e-4, atol=1e-4)
assert tc.counters["training_graphs"] == 1, dict(tc.counters)
assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
"""


@cuda
def test_cuda_backward_first_on_autograd_thread():
    """A process whose first CUDA work on autograd's device thread is tc's
    compiled backward (device 0: PyTorch's device guard makes no CUDA call
    there, so the thread has no current context until tc makes PyTorch's
    primary context current): the gradient is eager's and ran in tc's
    kernels, not in eager after a run-time fallback."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
               CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES",
                                                   "0"))
    proc = subprocess.run([sys.executable, "-c", _FIRST_ON_AUTOGRAD_THREAD],
                          capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


@cuda
def test_cuda_half_precision(fresh_tc):
    """fp16 kernels compute in fp16, as eager's ops round each result: they
    agree to one fp16 ulp (4e-3 between 2 and 4)."""
    x = torch.randn(1024, 512, device="cuda", dtype=torch.float16)
    fn = lambda x: torch.sigmoid(x) * x + 1  # noqa: E731
    close(torch.compile(fn, backend="tc")(x), fn(x), rtol=2e-3, atol=4e-3)
    assert_all_compiled()


@cuda
def test_cuda_runs_on_current_stream(fresh_tc):
    """Launches go to PyTorch's current stream, ordered with its work."""
    x = torch.randn(2048, 2048, device="cuda")
    compiled = torch.compile(softmax, backend="tc")
    compiled(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = x * 3  # queued on `stream`, read by tc's kernel on `stream`
        out = compiled(y)
    stream.synchronize()
    close(out, softmax(x * 3))


@cuda
def test_cuda_misaligned_view(fresh_tc):
    """A view at an offset that breaks 16-byte alignment still runs (the
    kernels use vector accesses; tc copies such an input)."""
    base = torch.randn(64 * 1024 + 1, device="cuda")
    x = base[1:].view(64, 1024)
    close(torch.compile(softmax, backend="tc")(x), softmax(x))
    assert_all_compiled()


@cuda
def test_cuda_resnet18_sgd_steps_match_eager(fresh_tc):
    """Seed 002's ResNet-18 (test/python/resnet.py), 2 SGD steps with
    momentum at batch 4, 64x64 on the GPU, compiled whole by tc (forward and
    tc-partition's backward): eager's losses, weights and running
    statistics. TF32 is off on both sides."""
    import copy

    import torch.nn.functional as F
    from resnet import ResNet18

    matmul_tf32 = torch.backends.cuda.matmul.allow_tf32
    cudnn_tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        torch.manual_seed(0)
        model = ResNet18(num_classes=10).cuda()
        reference = copy.deepcopy(model)
        x = torch.randn(4, 3, 64, 64, device="cuda")
        y = torch.randint(0, 10, (4,), device="cuda")
        compiled = torch.compile(lambda x, y: F.cross_entropy(model(x), y),
                                 backend="tc")
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        opt_ref = torch.optim.SGD(reference.parameters(), lr=0.01,
                                  momentum=0.9)
        for _ in range(2):
            for fn, o in ((lambda x, y: F.cross_entropy(reference(x), y),
                           opt_ref), (compiled, opt)):
                loss = fn(x, y)
                o.zero_grad()
                loss.backward()
                o.step()
        for (name, got), expected in zip(model.state_dict().items(),
                                         reference.state_dict().values()):
            torch.testing.assert_close(got, expected, rtol=5e-3, atol=1e-4,
                                       msg=name)
        assert tc.counters["training_graphs"] == 1
        assert tc.counters["aten_aot_autograd"] == 0
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
        torch.backends.cudnn.allow_tf32 = cudnn_tf32


@cuda
@pytest.mark.parametrize("make", [
    lambda: torch.nn.Conv2d(8, 16, 3, padding=1),
    lambda: torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
    lambda: torch.nn.Conv2d(8, 16, (3, 1), stride=(2, 1), padding=(0, 2),
                            dilation=(1, 2)),
    lambda: torch.nn.Conv1d(8, 16, 5, stride=2, padding=2),
], ids=["same", "strided", "mixed", "1d"])
def test_cuda_convolutions_run_on_cudnn(fresh_tc, make):
    """Convolutions and both their gradients are cuDNN calls (kernel.conv,
    not im2col): eager's output and gradients, TF32 off on both sides."""
    import tc.compiler
    cudnn_tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        torch.manual_seed(0)
        conv = make().cuda()
        spatial = (17, 15) if isinstance(conv, torch.nn.Conv2d) else (19,)
        x = torch.randn(4, 8, *spatial, device="cuda", requires_grad=True)

        def f(x):
            return torch.tanh(conv(x))

        expected = f(x)
        cotangent = torch.randn_like(expected)
        expected.backward(cotangent)
        tensors = (x, *conv.parameters())
        grads = [t.grad.clone() for t in tensors]
        for t in tensors:
            t.grad = None
        got = torch.compile(f, backend="tc")(x)
        got.backward(cotangent)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
        for g, t in zip(grads, tensors):
            torch.testing.assert_close(t.grad, g, rtol=1e-4, atol=1e-4)
        assert tc.counters["training_graphs"] == 1
        assert any("prim.convolution_backward_weight" in key[0]
                   and "expand-convolutions=false" in key[2]
                   for key in tc.compiler.build.cache)
        # All three run on execution plans of cuDNN's graph API (planned at
        # compile time), not its legacy calls.
        assert sum(native.num_convolution_plans
                   for native in tc.compiler.build.cache.values()) == 3
        for native in tc.compiler.build.cache.values():
            assert {"prim", "schedule", "cudnn", "load"} <= set(
                native.compile_seconds)
    finally:
        torch.backends.cudnn.allow_tf32 = cudnn_tf32


@cuda
def test_cuda_dropout_mask_and_gradient(fresh_tc):
    """Dropout on the GPU (tc's Philox numbers in the kernel): the kept
    fraction within 6 standard deviations of 1 - p, kept values exactly
    x / (1 - p), a fresh mask per call, and the backward's mask is the
    forward's: x.grad = mask * scale * upstream."""
    import math

    import torch.nn.functional as F

    p = 0.3
    fn = torch.compile(lambda x: F.dropout(x, p, training=True),
                       backend="tc")
    x = (torch.rand(1024, 1024, device="cuda") + 1).requires_grad_()
    y = fn(x)
    keep = y != 0
    n = x.numel()
    assert abs(keep.float().mean().item() - (1 - p)) < 6 * math.sqrt(
        p * (1 - p) / n)
    scale = torch.tensor(1 / (1 - p), dtype=torch.float32, device="cuda")
    assert torch.equal(y[keep], x.detach()[keep] * scale)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    assert torch.equal(x.grad, keep * scale * upstream)
    assert not torch.equal(fn(x) != 0, keep)
    assert tc.counters["training_graphs"] >= 1


@cuda
def test_cuda_embedding_forward_and_gradient(fresh_tc):
    """nn.Embedding on the GPU with repeated indices: rows and the weight's
    gradient (accumulated over repeats) match eager."""
    torch.manual_seed(0)
    table = torch.randn(50, 16, device="cuda", requires_grad=True)
    ref = table.detach().clone().requires_grad_()
    idx = torch.randint(0, 50, (8, 12), device="cuda")
    idx[0, :4] = 7
    out = torch.compile(lambda t, i: torch.nn.functional.embedding(i, t)
                        * 2, backend="tc")(table, idx)
    expected = torch.nn.functional.embedding(idx, ref) * 2
    close(out, expected)
    upstream = torch.randn_like(out)
    out.backward(upstream)
    expected.backward(upstream)
    close(table.grad, ref.grad, rtol=1e-5, atol=1e-5)
    assert tc.counters["training_graphs"] == 1


@cuda
def test_cuda_graph_replay(fresh_tc):
    """Once a call passes the same buffers as the call before it, the launch
    sequence (kernels, a cuBLAS GEMM, a cuDNN convolution) is captured as a
    CUDA graph and replayed: eager's results each time, including after the
    input changes in place (the replay reads memory when it runs) and for a
    new input tensor (which runs the sequence directly)."""
    import tc.compiler
    cudnn_tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(4, 8, 3, padding=1).cuda()
        linear = torch.nn.Linear(8 * 6 * 6, 16).cuda()

        def f(x):
            y = torch.relu(conv(x)).flatten(1)
            return torch.softmax(linear(y), dim=-1) * 3.0

        compiled = torch.compile(f, backend="tc")
        x = torch.randn(2, 4, 6, 6, device="cuda")

        def replays():
            return sum(g.graph_replays for g in tc.compiler.build.cache.values()
                       if hasattr(g, "graph_replays"))

        with torch.no_grad():
            for _ in range(4):
                torch.testing.assert_close(compiled(x), f(x), rtol=1e-4,
                                           atol=1e-5)
            assert tc.counters["graphs_compiled"] == 1
            assert replays() >= 1, "the same buffers never replayed a graph"
            before = replays()
            x.copy_(torch.randn_like(x))
            torch.testing.assert_close(compiled(x), f(x), rtol=1e-4,
                                       atol=1e-5)
            assert replays() == before + 1
            other = torch.randn(2, 4, 6, 6, device="cuda")
            torch.testing.assert_close(compiled(other), f(other), rtol=1e-4,
                                       atol=1e-5)
    finally:
        torch.backends.cudnn.allow_tf32 = cudnn_tf32


@cuda
def test_graphs_that_are_not_replayed_stop_being_captured(fresh_tc):
    """Buffers that come back once and then move on (FSDP2's re-gathered
    parameters) made every second call capture a CUDA graph that was never
    replayed: a Llama training step under FSDP2 ran 30% slower than with
    replay off. After a few such captures the sequence is issued directly
    for a while; a steady pattern afterwards is captured and replayed
    again; results stay eager's."""
    import tc.compiler
    torch.manual_seed(0)
    weight = torch.randn(256, 256, device="cuda")

    def f(x):
        return torch.tanh(x @ weight) * 2.0 + x

    compiled = torch.compile(f, backend="tc")
    inputs = [torch.randn(64, 256, device="cuda") for _ in range(24)]
    with torch.no_grad():
        for x in inputs:
            for _ in range(2):  # these buffers twice, then never again
                close(compiled(x), f(x), rtol=1e-4, atol=1e-4)
    graphs = [g for g in tc.compiler.build.cache.values()
              if hasattr(g, "graph_captures")]
    assert tc.counters["graphs_compiled"] == 1 and len(graphs) == 1
    assert graphs[0].graph_replays == 0
    assert 1 <= graphs[0].graph_captures <= 8, graphs[0].graph_captures
    # The pause ends: the same buffers call after call replay a graph.
    x = inputs[0]
    with torch.no_grad():
        for _ in range(200):
            out = compiled(x)
    close(out, f(x), rtol=1e-4, atol=1e-4)
    assert graphs[0].graph_replays >= 100, graphs[0].graph_replays


def _replays_of_the_one_graph() -> int:
    """The CUDA graph replays of the test's one compiled graph."""
    import tc.compiler
    graphs = [g for g in tc.compiler.build.cache.values()
              if hasattr(g, "graph_replays")]
    assert len(graphs) == 1
    return graphs[0].graph_replays


def _in_tcs_pool(tensor: torch.Tensor) -> bool:
    """Whether `tensor`'s memory lies in tc's pool of its device."""
    from tc.compiler import pools
    pool = pools._pools.get(tensor.get_device())
    assert pool is not None, "tc made no pool"
    address = tensor.untyped_storage().data_ptr()
    return any(s["address"] <= address < s["address"] + s["total_size"]
               for s in pool.snapshot())


@cuda
def test_graph_outputs_come_from_tcs_pool(fresh_tc):
    """A CUDA graph's outputs come from tc's own memory pool
    (tc.compiler.pools): an allocation elsewhere in the process that takes
    the block of an output the caller freed (an optimizer's, a data
    loader's) does not move the next call's output, and the graph keeps
    replaying. From PyTorch's shared cache, every call here saw new
    buffers and none replayed."""
    torch.manual_seed(0)
    weight = torch.randn(256, 256, device="cuda")

    def f(x):
        return torch.tanh(x @ weight) * 2.0 + x

    compiled = torch.compile(f, backend="tc")
    x = torch.randn(64, 256, device="cuda")
    held = []
    with torch.no_grad():
        for _ in range(20):
            out = compiled(x)
            close(out, f(x), rtol=1e-4, atol=1e-4)
            assert _in_tcs_pool(out)
            del out
            # Takes the output's freed block where both share a cache.
            held.append(torch.empty(64, 256, device="cuda"))
    assert not any(_in_tcs_pool(h) for h in held)
    replays = _replays_of_the_one_graph()
    assert replays >= 15, replays


@cuda
def test_random_graphs_replay_with_their_seed_from_tcs_pool(fresh_tc):
    """A graph with dropout takes a fresh seed tensor each call; drawn from
    PyTorch's shared cache, a small allocation elsewhere that took the
    freed seed's block moved the next one, and no call replayed. From tc's
    pool the graph replays, and each replay still draws new numbers (the
    mask changes from call to call, keeps about 1 - p of the elements,
    scaled by 1 / (1 - p))."""
    torch.manual_seed(0)

    def f(x):
        return torch.nn.functional.dropout(x, 0.25, training=True) * 2.0

    compiled = torch.compile(f, backend="tc")
    x = torch.rand(256, 512, device="cuda") + 1.0
    held, masks = [], []
    with torch.no_grad():
        for _ in range(20):
            out = compiled(x)
            kept = out != 0
            masks.append(kept)
            close(out[kept], (x * 2.0 / 0.75)[kept], rtol=1e-5, atol=1e-5)
            assert abs(kept.float().mean().item() - 0.75) < 0.02
            del out
            held.append(torch.zeros((), dtype=torch.int64, device="cuda"))
    assert all(not torch.equal(a, b) for a, b in zip(masks, masks[1:]))
    # The seed is drawn again in place once the call is done with it: one
    # call to see the buffers, one to capture, every other one replays.
    replays = _replays_of_the_one_graph()
    assert replays >= 17, replays


@cuda
def test_a_seed_a_pending_backward_reads_is_not_drawn_again(fresh_tc):
    """Seeds are redrawn in place only when nothing holds them: two
    forwards of a dropout graph before either backward each keep their
    own seed, and each backward recomputes its own forward's mask (the
    gradient is 1 / (1 - p) where that forward kept the element, else
    0)."""
    torch.manual_seed(0)

    def f(x):
        return torch.nn.functional.dropout(x, 0.5, training=True).sum()

    compiled = torch.compile(f, backend="tc")
    for _ in range(3):
        xs = [torch.rand(512, 256, device="cuda", requires_grad=True)
              for _ in range(3)]
        losses = [compiled(x) for x in xs]
        kept = []
        for x, loss in zip(reversed(xs), reversed(losses)):
            (grad,) = torch.autograd.grad(loss, x)
            kept_here = grad != 0
            kept.append(kept_here)
            close(grad[kept_here], torch.full_like(grad[kept_here], 2.0))
            # The loss is the sum of the kept elements, scaled: the mask
            # the backward recomputed is the forward's.
            close(loss, (x.detach() * 2.0)[kept_here].sum(), rtol=1e-4,
                  atol=1e-2)
        assert not torch.equal(kept[0], kept[1])
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)


@cuda
def test_eager_ops_between_training_segments_use_tcs_pool(fresh_tc):
    """In a training graph compiled in segments around PyTorch's fused
    attention, the attention (run in eager between the segments) allocates
    from tc's pool too, so the next segment's input stays where it was;
    loss and gradients stay eager's."""
    import torch.nn.functional as F
    torch.manual_seed(0)
    proj = torch.nn.Linear(64, 3 * 64).cuda().half()
    head = torch.nn.Linear(64, 8).cuda().half()

    def f(x):
        q, k, v = proj(x).view(2, 128, 3, 4, 16).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = head(attended.transpose(1, 2).reshape(2, 128, 64))
        return y.float().square().mean(), attended

    compiled = torch.compile(f, backend="tc")
    x = torch.randn(2, 128, 64, device="cuda", dtype=torch.half)
    for _ in range(3):
        loss, attended = compiled(x)
        assert _in_tcs_pool(attended)
        grads = torch.autograd.grad(loss, list(proj.parameters()))
        want_loss, want_attended = f(x)
        want = torch.autograd.grad(want_loss, list(proj.parameters()))
        close(loss, want_loss, rtol=2e-3, atol=1e-4)
        close(attended, want_attended, rtol=2e-3, atol=2e-3)
        for got, exp in zip(grads, want):
            close(got, exp, rtol=2e-2, atol=2e-3)
    assert tc.counters["training_graphs"] == 1, dict(tc.counters)
    assert tc.counters["ops_eager"] > 0, dict(tc.counters)  # the attention
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)


@cuda
def test_index_flags_are_read_before_the_graph_ends(fresh_tc,
                                                    compiled_functions):
    """An embedding's index check sets a flag in the gather, the graph's
    first kernel; the host reads it back as soon as the gather has run, so
    a call returns while the rest of the graph still runs on the GPU
    (reading it after the graph made every call wait for the whole graph).
    Replayed as a CUDA graph, a token out of range still raises eager's
    IndexError, and the next call in range gives eager's values."""
    torch.manual_seed(0)
    table = torch.randn(1000, 2048, device="cuda")
    weights = [torch.randn(2048, 2048, device="cuda") / 45 for _ in range(24)]

    def f(tokens):
        x = torch.nn.functional.embedding(tokens, table)
        for w in weights:  # ~40 ms of fp32 products after the gather
            x = torch.tanh(x @ w)
        return x.sum(-1)

    tokens = torch.randint(0, 1000, (8, 512), device="cuda")
    gc.collect()
    earlier = {id(o) for o in compiled_functions()}  # other tests' graphs
    compiled = torch.compile(f, backend="tc")
    with torch.no_grad():
        close(compiled(tokens), f(tokens), rtol=1e-4, atol=1e-4)
        for _ in range(3):  # the same buffers: captured, then replayed
            compiled(tokens)
        assert_all_compiled()
        functions = [o for o in compiled_functions() if id(o) not in earlier]
        assert len(functions) == 1 and functions[0]._early
        torch.cuda.synchronize()
        compiled(tokens)
        assert not torch.cuda.current_stream().query(), (
            "the call waited for the whole graph")
        replays = functions[0].graph_replays
        assert replays >= 1
        tokens[3, 100] = 1000  # in place: the same buffers, a replay
        with pytest.raises(IndexError):
            compiled(tokens)
        assert functions[0].graph_replays == replays + 1
        tokens[3, 100] = 999
        close(compiled(tokens), f(tokens), rtol=1e-4, atol=1e-4)
    assert tc.counters["runtime_fallbacks"] == 0


@cuda
def test_default_mode_holds_no_memory_between_calls(fresh_tc):
    """By default the arena and the outputs come from PyTorch's allocator:
    once the caller drops what a call returned, nothing tc allocated stays
    allocated (no shared arena, no output pool), and a steady loop, which
    the allocator serves at the same addresses, still replays the launch
    sequence as a CUDA graph."""
    import tc.compiler

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 256)).cuda()
    x = torch.randn(512, 256, device="cuda")
    compiled = torch.compile(model, backend="tc")
    with torch.no_grad():
        model(x)  # eager's first product allocates cuBLAS's workspace
    gc.collect()  # what earlier tests left: freed now, not in the loop
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    with torch.no_grad():
        for _ in range(5):
            out = compiled(x)
            close(out, model(x), rtol=1e-4, atol=1e-5)
            del out
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == baseline
    assert not tc.compiler.function.arenas
    assert tc.counters["graphs_compiled"] == 1
    assert sum(getattr(native, "graph_replays", 0)
               for native in tc.compiler.build.cache.values()) >= 1


_BACKWARD_FIRST = """
import torch, tc
torch.manual_seed(0)
x = torch.randn(512, 512, device="cuda", requires_grad=True)
w = torch.randn(512, 512, device="cuda", requires_grad=True)
def f(x, w):
    return ((x @ w).relu() * 0.5).sin().sum()
loss = torch.compile(f, backend="tc")(x, w)
loss.backward()
gx, gw = x.grad, w.grad
x.grad = w.grad = None
f(x, w).backward()
torch.testing.assert_close(gx, x.grad, rtol=1e-4, atol=1e-4)
torch.testing.assert_close(gw, w.grad, rtol=1e-4, atol=1e-4)
assert tc.counters["training_graphs"] == 1, dict(tc.counters)
assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
print("ok")
"""


@cuda
def test_backward_first_in_autograd_thread(tmp_path):
    """In a fresh process the backward of a graph tc trained runs in
    autograd's device thread, whose first CUDA work can be tc's launch (its
    memory coming from blocks the forward freed, so no CUDA call before
    it): no CUDA context is current there yet, and the runtime makes the
    graph's current instead of failing the user's backward (memory_phases
    on GPT-2 hit this on the H200)."""
    import subprocess
    import sys
    result = subprocess.run(
        [sys.executable, "-c", _BACKWARD_FIRST], capture_output=True,
        text=True, timeout=300,
        env={**os.environ, "TC_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0 and "ok" in result.stdout, \
        result.stdout + result.stderr


@cuda
def test_cuda_graph_replay_in_training(fresh_tc):
    """mode="reduce-overhead": a training loop replays CUDA graphs for both
    halves, the saved values living in the forward's pooled blocks and the
    arena shared, so that the kernels see the same addresses each step.
    The replays give eager's losses and weights, also when several
    forwards run before one backward (gradient accumulation: the pool hands
    each its own block, or fresh tensors when all are held) and when each
    step's batch is a new tensor."""
    import copy

    import torch.nn.functional as F

    import tc.compiler

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10),
    ).cuda()
    reference = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    compiled = torch.compile(lambda x, y: F.cross_entropy(model(x), y),
                             backend="tc", mode="reduce-overhead")
    batches = [(torch.randn(4, 3, 8, 8, device="cuda"),
                torch.randint(0, 10, (4,), device="cuda")) for _ in range(3)]

    def replays():
        return sum(getattr(native, "graph_replays", 0)
                   for native in tc.compiler.build.cache.values())

    def step(fn, o, micro):
        o.zero_grad(set_to_none=True)
        losses = [fn(x, y) for x, y in micro]
        sum(losses).backward()
        o.step()
        return torch.stack([loss.detach() for loss in losses])

    schedule = ([batches[:1]] * 6            # the same batch: replays
                + [batches[:3]] * 2          # three forwards, one backward
                + [[b] for b in batches] * 2)  # a new batch each step
    for i, micro in enumerate(schedule):
        expected = step(lambda x, y: F.cross_entropy(reference(x), y),
                        opt_ref, micro)
        got = step(compiled, opt, micro)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5,
                                   msg=f"step {i}")
        if i == 5:
            # Each half is captured once it sees the same buffers again
            # (the loss alternates between two of its pool's tensors).
            assert replays() >= 2, "no CUDA graph replayed in a steady loop"
    for (name, got), want in zip(model.state_dict().items(),
                                 reference.state_dict().values()):
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-5, msg=name)
    assert tc.counters["training_graphs"] == 1
    assert tc.counters["aten_aot_autograd"] == 0


@cuda
def test_cuda_graph_inside_the_callers_capture(fresh_tc):
    """A compiled graph called inside the caller's own torch.cuda.graph
    capture issues its launches into that graph (tc neither captures nor
    replays a graph of its own there, nor hands out its pooled memory):
    replaying the caller's graph gives eager's results for new input
    values."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(16, 8).cuda()

    def f(x):
        return torch.softmax(torch.relu(linear(x)), dim=-1) * 2.0

    compiled = torch.compile(f, backend="tc")
    x = torch.randn(4, 16, device="cuda")
    with torch.no_grad():
        for _ in range(3):  # compiled, planned and replayed by tc
            close(compiled(x), f(x))
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream), torch.cuda.graph(graph):
            out = compiled(x)
        torch.cuda.current_stream().wait_stream(stream)
        for _ in range(2):
            x.copy_(torch.randn_like(x))
            graph.replay()
            close(out, f(x))
    assert tc.counters["graphs_compiled"] == 1


@cuda
def test_cuda_reduce_overhead_replays_new_inputs(fresh_tc):
    """mode="reduce-overhead": a fresh input tensor at each call is copied
    into tc's own buffer, so the CUDA graph replays on every later call
    with eager's results; an input the graph updates in place is updated
    in the caller's tensor."""
    import tc.compiler

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 8)).cuda()

    def replays():
        return sum(getattr(native, "graph_replays", 0)
                   for native in tc.compiler.build.cache.values())

    compiled = torch.compile(model, backend="tc", mode="reduce-overhead")
    with torch.no_grad():
        # The first input stays alive: a later one the allocator put at its
        # address would run from there, not from tc's buffer, and the
        # count below would depend on the allocator.
        first = None
        for i in range(6):
            x = torch.randn(16, 32, device="cuda")  # a new address each time
            first = x if first is None else first
            close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        assert replays() >= 3, "fresh inputs did not replay the graph"

        def update(acc, x):
            acc.add_(x * 2)
            return acc.sum()

        step = torch.compile(update, backend="tc", mode="reduce-overhead")
        acc, ref = torch.zeros(64, device="cuda"), torch.zeros(64,
                                                               device="cuda")
        for _ in range(4):
            x = torch.randn(64, device="cuda")
            close(step(acc, x), update(ref, x), rtol=1e-5, atol=1e-4)
            close(acc, ref)
    assert tc.counters["fallback_graphs"] == 0


@cuda
def test_cuda_max_autotune_dynamic(fresh_tc, tc_logs):
    """mode="max-autotune" with dynamic=True: the symbolic compile is tuned
    once, at the first call's batch size, and the chosen schedule serves
    every batch size with eager's results; its record is on disk."""
    torch.manual_seed(0)
    model = BatchModel(64, 256).cuda().eval()
    fn = torch.compile(model, backend="tc", dynamic=True,
                       mode="max-autotune")
    with torch.no_grad():
        for batch in (256, 3, 17, 1000):
            x = torch.randn(batch, 64, device="cuda")
            close(fn(x), model(x), rtol=1e-4, atol=1e-4)
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["autotuned_graphs"] == 1
    assert "max-autotune chose" in tc_logs.text
    assert len(list((tc.cache_dir() / "autotune").glob("*.json"))) == 1


@cuda
def test_cuda_max_autotune(fresh_tc, tc_logs):
    """mode="max-autotune": each candidate schedule compiles, the first
    call times them on the GPU and keeps one whose results are eager's;
    an input updated in place is updated once (candidates run on copies);
    a second process (here: a fresh Dynamo and in-memory cache) reads the
    choice from disk and times nothing."""
    import torch._dynamo
    import tc.compiler

    torch.manual_seed(0)

    def f(x, w, acc):
        acc.add_(1)
        h = torch.nn.functional.layer_norm(x @ w, (x.shape[-1],))
        return torch.softmax(torch.sin(h) * 3, dim=-1), h.sum(0)

    x = torch.randn(512, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda")
    acc = torch.zeros(4, device="cuda")
    compiled = torch.compile(f, backend="tc", mode="max-autotune")
    with torch.no_grad():
        out = compiled(x, w, acc)
        expected = f(x, w, torch.zeros(4, device="cuda"))
        for a, e in zip(out, expected):
            close(a, e, rtol=1e-4, atol=1e-4)
        close(acc, torch.ones(4, device="cuda"))
        assert tc.counters["autotuned_graphs"] == 1
        assert tc.counters["ops_eager"] == 0
        assert "max-autotune chose" in tc_logs.text
        records = list((tc.cache_dir() / "autotune").glob("*.json"))
        assert len(records) == 1

        torch._dynamo.reset()
        tc.compiler.clear_cache()
        tc.reset_counters()
        again = torch.compile(f, backend="tc", mode="max-autotune")
        for a, e in zip(again(x, w, acc), expected):
            close(a, e, rtol=1e-4, atol=1e-4)
        close(acc, torch.full((4,), 2.0, device="cuda"))
        assert tc.counters["autotune_cached"] == 1
        assert tc.counters["autotuned_graphs"] == 0


class _SlicedHead(torch.nn.Module):
    """Slices of the features, a view sized by the batch, a GEMM."""

    def __init__(self):
        super().__init__()
        self.out = torch.nn.Linear(2 * 32, 10)

    def forward(self, x):  # [B, 4, 32]
        y = torch.sigmoid(x[:, 1:3]) * x[:, None, 0].flatten(1)[:, None]
        return self.out(y.view(x.shape[0], -1)).relu()


@cuda
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_dynamic_slices_and_views(fresh_tc, mode):
    """dynamic=True on the GPU with slices of the features and a view
    sized by the batch: one compile, eager's results at every size."""
    torch.manual_seed(0)
    model = _SlicedHead().cuda().eval()
    fn = torch.compile(model, backend="tc", dynamic=True,
                       mode=None if mode == "default" else mode)
    with torch.no_grad():
        for batch in (3, 5, 7, 9, 17, 33, 200):
            for _ in range(2):
                x = torch.randn(batch, 4, 32, device="cuda")
                close(fn(x), model(x), rtol=1e-4, atol=1e-5)
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["ops_eager"] == 0


@cuda
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_dynamic_linear_on_3d_inputs(fresh_tc, mode):
    """A symbolic batch (mark_dynamic) on the GPU with Linear layers on
    [batch, tokens, features] inputs: one GEMM per Linear whose rows are 8
    per unit of the batch, one compile, eager's results at every size."""
    torch.manual_seed(0)
    model = TokenMLP(64, 256).cuda().eval()
    fn = torch.compile(model, backend="tc",
                       mode=None if mode == "default" else mode)
    with torch.no_grad():
        batches = (3, 5, 7, 9, 17, 33, 300)
        for batch in batches:
            for _ in range(2):
                x = torch.randn(batch, 8, 64, device="cuda")
                torch._dynamo.mark_dynamic(x, 0)
                close(fn(x), model(x), rtol=1e-4, atol=1e-5)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1


@cuda
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_dynamic_batch_and_sequence(fresh_tc, mode):
    """dynamic=True on the GPU with a batch and a sequence length that
    both vary: one compile (the graph on rows, N = B * S), eager's results
    at every size, twice each (the second from a CUDA graph)."""
    torch.manual_seed(0)
    model = MaskedTokens().cuda().eval()
    fn = torch.compile(model, backend="tc", dynamic=True,
                       mode=None if mode == "default" else mode)
    with torch.no_grad():
        for batch, length in SEQUENCES + ((40, 100),):
            for _ in range(2):
                args = masked_tokens_inputs(batch, length, "cuda")
                for got, want in zip(fn(*args), model(*args)):
                    close(got, want, rtol=1e-4, atol=1e-5)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["fallback_graphs"] == 0
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1


@cuda
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_dynamic_attention_in_parts(fresh_tc, caplog, mode):
    """A transformer block on the GPU with a batch and a sequence length
    that both vary: one compile, its row-wise parts on rows, attention in
    eager between them (PyTorch's own kernels); eager's results at every
    size, twice each (the second from the parts' CUDA graphs)."""
    torch.manual_seed(0)
    model = AttentionBlock().cuda().eval()
    fn = torch.compile(model, backend="tc", dynamic=True,
                       mode=None if mode == "default" else mode)
    with torch.no_grad():
        for batch, length in SEQUENCES + ((40, 100),):
            for _ in range(2):
                x = torch.randn(batch, length, 32, device="cuda")
                close(fn(x), model(x), rtol=1e-4, atol=1e-4)
    assert tc.counters["symbolic_graphs"] == 1
    assert tc.counters["graphs_compiled"] == 1
    assert tc.counters["subgraphs_compiled"] == 2
    assert tc.counters["shape_specializations"] == 0
    assert tc.counters["ops_eager"] > 0
    assert "failed at run time" not in caplog.text


class _CacheWriter(torch.nn.Module):
    """A prefill's pattern: keys written into a cache buffer at the
    prompt's positions (`index_put_` in place), then computed on."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)
        self.register_buffer("cache", torch.zeros(2, 128, 32))

    def forward(self, x, positions):
        k = self.proj(x)
        self.cache[:, positions] = k
        return torch.tanh(k) * 2


@cuda
def test_cuda_dynamic_parts_replay_one_graph_per_size(fresh_tc):
    """A graph compiled once in parts (token ids, positions, attention in
    eager) replays as one CUDA graph per (B, S) from its second call at
    that size (tc.backend.shape_graphs): fresh ids at every call give
    eager's results; an id out of range at a captured size raises eager's
    IndexError from the replay's flags, and the next call still replays;
    a cache the graph writes in place holds eager's values."""
    torch.manual_seed(0)
    model = TokenEncoder().cuda().eval()
    fn = torch.compile(model, backend="tc", dynamic=True)
    sizes = ((3, 5), (2, 9), (4, 33), (2, 64))
    with torch.no_grad():
        for batch, length in sizes:
            for _ in range(3):
                ids = torch.randint(0, 50, (batch, length), device="cuda")
                positions = torch.randint(0, 64, (length,), device="cuda")
                close(fn(ids, positions), model(ids, positions),
                      rtol=1e-4, atol=1e-4)
        assert tc.counters["graphs_compiled"] == 1
        assert tc.counters["symbolic_graphs"] == 1
        assert tc.counters["shape_graph_captures"] == len(sizes)
        assert tc.counters["shape_graph_replays"] == 2 * len(sizes)
        bad = ids.clone()
        bad[1, 3] = 50
        # Each replay's own flag is read (checks.DeferredCheck), not an
        # earlier replay's: good and bad ids in turn at one size.
        for _ in range(2):
            with pytest.raises(IndexError):
                fn(bad, positions)
            close(fn(ids, positions), model(ids, positions), rtol=1e-4,
                  atol=1e-4)
        assert tc.counters["shape_graph_replays"] == 2 * len(sizes) + 4
        assert tc.counters["runtime_fallbacks"] == 0

        torch._dynamo.reset()
        writer = _CacheWriter().cuda()
        reference = _CacheWriter().cuda()
        reference.load_state_dict(writer.state_dict())
        fn = torch.compile(writer, backend="tc", dynamic=True)
        for length in (5, 9, 9, 9, 17, 17, 17):
            x = torch.randn(2, length, 32, device="cuda")
            positions = torch.randperm(128, device="cuda")[:length]
            close(fn(x, positions), reference(x, positions), rtol=1e-4,
                  atol=1e-4)
            close(writer.cache, reference.cache, rtol=1e-4, atol=1e-4)
        assert tc.counters["shape_graph_replays"] > 2 * len(sizes) + 4


@cuda
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_cuda_dynamic_true_compiles_once_for_every_batch(fresh_tc, mode):
    """dynamic=True on the GPU: Dynamo calls the backend once and tc
    compiles once, with the batch as the graph's symbolic size
    (docs/DynamicShapes.md); every batch size gets eager's results from
    that one compile, and in reduce-overhead mode each size's CUDA graph
    replays (fresh inputs at each call) with eager's results too."""
    import tc.compiler

    torch.manual_seed(0)
    model = BatchModel(64, 256).cuda().eval()
    calls = []

    def backend(gm, example_inputs, **kwargs):
        calls.append(gm)
        return tc.backend.tc_backend(gm, example_inputs, **kwargs)

    fn = torch.compile(model, backend=backend, dynamic=True,
                       mode=None if mode == "default" else mode)

    def replays():
        return sum(getattr(native, "graph_replays", 0)
                   for native in tc.compiler.build.cache.values())

    batches = (3, 5, 7, 9, 17, 33, 5, 1000, 3)
    repeats = 4 if mode == "reduce-overhead" else 1
    first = None
    with torch.no_grad():
        for batch in batches:
            for _ in range(repeats):
                x = torch.randn(batch, 64, device="cuda")
                # The first input stays alive: no later one reuses its
                # address, which reduce-overhead reads in place (later
                # inputs are copied into a buffer per shape).
                first = x if first is None else first
                close(fn(x), model(x), rtol=1e-4, atol=1e-5)
    assert len(calls) == 1
    assert_compiled_once_symbolic(tc.counters)
    if mode == "reduce-overhead" and tc.compiler.cuda_graphs_enabled():
        # Each size's graph is captured at its second call and replayed by
        # its third and fourth (the first size's is captured at its third:
        # its first input is read in place, the others are copied).
        assert replays() >= 2 * (len(batches) - 1) + 1, replays()


@cuda
@pytest.mark.runtime_fallback
def test_cuda_checks_catch_an_out_of_bounds_access_without_a_sticky_error(
        fresh_tc, monkeypatch, caplog):
    """TC_CUDA_CHECKS=1 with an out-of-bounds read planted in every kernel
    (a test option of tc-lower-kernel-to-gpu): the kernel records the
    violation and skips the access, the runtime raises naming the kernel,
    the argument and the element, the graph runs in eager (a counted
    run-time fallback), and the process's CUDA context lives on: PyTorch's
    own kernels and a clean tc compile run after it."""
    monkeypatch.setenv("TC_CUDA_CHECKS", "1")
    monkeypatch.setenv("TC_CUDA_OPTIONS",
                       "miscompile-pass-for-testing=tc-lower-kernel-to-gpu")

    def f(x, y):
        return torch.sin(x) * 2 + y

    x = torch.randn(1000, 64, device="cuda")
    y = torch.randn(1000, 64, device="cuda")
    with caplog.at_level(logging.WARNING, logger="tc"):
        out = torch.compile(f, backend="tc")(x, y)
        torch.cuda.synchronize()
    torch.testing.assert_close(out, f(x, y))
    assert tc.counters["runtime_fallbacks"] == 1, dict(tc.counters)
    failures = [r.getMessage() for r in caplog.records
                if "failed at run time" in r.getMessage()]
    assert len(failures) == 1, failures
    assert "tc check failed: kernel main_fused" in failures[0], failures
    assert "argument #" in failures[0] and "out of bounds" in failures[0]
    # No sticky error: the context still runs PyTorch's kernels and tc's.
    torch.testing.assert_close((x @ y.T).sum().cpu(),
                               (x.cpu() @ y.cpu().T).sum(),
                               rtol=1e-3, atol=1e-1)
    monkeypatch.delenv("TC_CUDA_OPTIONS")
    torch._dynamo.reset()
    tc.compiler.clear_cache()
    torch.testing.assert_close(torch.compile(f, backend="tc")(x, y), f(x, y))
    assert tc.counters["runtime_fallbacks"] == 1



@cuda
def test_cuda_tc_logs_kernels_profiles_the_second_run(fresh_tc, tc_logs):
    """TC_LOGS=kernels on a GPU: the second run of a compiled graph is
    issued step by step between CUDA events, each kernel by its name (what
    it fused), each GEMM by its sizes, with its buffers' bytes and the
    bandwidth they make; that run's results are eager's, and the runs
    after it replay as before. A transformer's MLP block in bf16 at
    BERT-base's width over 4096 rows."""
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.LayerNorm(768), torch.nn.Linear(768, 3072),
        torch.nn.GELU(), torch.nn.Linear(3072, 768)).cuda().bfloat16().eval()

    def f(x):
        return x + block(x)

    compiled = torch.compile(f, backend="tc")
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(4096, 768, device="cuda", dtype=torch.bfloat16)
            torch.testing.assert_close(compiled(x), f(x), rtol=2e-2,
                                       atol=5e-2)
    assert_all_compiled()
    assert tc.counters["runtime_fallbacks"] == 0
    profiles = [r.getMessage() for r in tc_logs.records
                if r.name == "tc.kernels"]
    assert len(profiles) == 1, profiles
    head, *rows = profiles[0].splitlines()
    assert head.startswith("graph ") and " on cuda" in head, head
    assert any(row.endswith("gemm 4096x3072x768") for row in rows), rows
    assert any(row.endswith("gemm 4096x768x3072") for row in rows), rows
    assert any(" main_fused_" in row for row in rows), rows
    # Every buffer is static: each step has bytes and a bandwidth, and the
    # shares add up to the whole.
    assert all(" MB " in row and " GB/s " in row for row in rows), rows
    assert sum(float(row.split()[2].rstrip("%")) for row in rows) == \
        pytest.approx(100, abs=1)
    # The GEMMs move at least their operands: 4096 x 768 bf16 in, 4096 x
    # 3072 out, 768 x 3072 weights.
    gemm = next(row for row in rows if row.endswith("gemm 4096x3072x768"))
    assert float(gemm.split()[3]) >= 2 * (4096 * 768 + 4096 * 3072
                                          + 768 * 3072) / 1e6 - 0.01
