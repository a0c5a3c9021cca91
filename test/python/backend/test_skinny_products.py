"""Products of one row by a linear layer's weight as tc's own reductions
(tc-skinny-products, `skinny-rows=1` by default, set here explicitly): a
decode step's RMS-normed, SiLU-gated MLP and a bias, and weight-only int8
layers, against eager, with no GEMM library call left; on a CUDA device
too (odd and real sizes: rows that are and are not whole 16-byte groups
of a warp, the warp-per-row schedule of 2048+ rows), skipped without
one."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tc
import tc.compiler

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device"))]


def _gemms() -> int:
    """GEMM library calls in the kernel schedules compiled so far."""
    return sum(native.stage_ir.get("kernel", "").count("kernel.gemm")
               for native in tc.compiler.build.cache.values())


class Block(nn.Module):
    def __init__(self, dim: int = 256, hidden: int = 384, bias: bool = False):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-5)
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        h = x + q * torch.sigmoid(k) + v
        n = self.norm(h)
        h = h + self.w2(F.silu(self.w1(n)) * self.w3(n))
        return self.norm(h)


@pytest.fixture
def skinny(monkeypatch, request):
    import tc.logs
    monkeypatch.setenv("TC_CPU_OPTIONS", "skinny-rows=1")
    tc.logs.set_logs("output_code")
    request.addfinalizer(tc.logs.set_logs)
    tc.compiler.build.cache.clear()


def _compiled_like_eager(model: nn.Module, x: torch.Tensor,
                         reference: bool = False, **tolerance) -> None:
    """`model` compiled whole by tc gives eager's result for `x` (with
    `reference`: a result as close to float64's as eager's, for products
    whose sums of thousands of terms cancel to far below the terms, where
    one rounding's difference is more than a tolerance of the result)."""
    torch._dynamo.reset()
    tc.reset_counters()
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="tc", fullgraph=True)(x)
        if reference:
            exact = copy.deepcopy(model).double()(x.double())
    if reference:
        assert got.dtype == want.dtype and got.shape == want.shape
        error = (got.double() - exact).norm()
        assert error <= 2 * (want.double() - exact).norm() + 1e-6 * \
            exact.norm(), (error, (want.double() - exact).norm())
    else:
        torch.testing.assert_close(got, want, **tolerance)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert tc.counters["subgraphs_compiled"] == 1
    # The schedules were read (so that a GEMM count of 0 means none).
    assert all("kernel.schedule" in native.stage_ir.get("kernel", "")
               for native in tc.compiler.build.cache.values())
    assert tc.compiler.build.cache


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [False, True])
def test_one_row_runs_as_reductions(skinny, dtype, bias):
    torch.manual_seed(0)
    _compiled_like_eager(Block(bias=bias).to(dtype).eval(),
                         torch.randn(1, 1, 256, dtype=dtype))
    # Every product is tc's kernels: the schedule calls no GEMM.
    assert _gemms() == 0


def test_two_rows_stay_gemms(skinny):
    torch.manual_seed(1)
    _compiled_like_eager(Block().eval(), torch.randn(2, 1, 256))
    assert _gemms() == 4


class Int8Linear(nn.Module):
    """Weight-only int8 (torchao's idiom): int8 weights and one scale per
    output channel, dequantized in the forward."""

    def __init__(self, out_features: int, in_features: int):
        super().__init__()
        self.register_buffer("weight", torch.randint(
            -128, 128, (out_features, in_features), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(out_features) / 64 + 1e-3)

    def forward(self, x):
        w = self.weight.to(x.dtype) * self.scales.to(x.dtype)[:, None]
        return F.linear(x, w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_int8_weights_are_read_as_int8(skinny, dtype):
    torch.manual_seed(2)
    model = nn.Sequential(Int8Linear(384, 256), nn.SiLU(),
                          Int8Linear(256, 384)).eval()
    x = torch.randn(1, 256, dtype=dtype)
    # Sums of 384 products of magnitudes up to ~2 in another order than
    # BLAS's: float32's tolerance for a matrix product, not for one op.
    tolerance = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}
    _compiled_like_eager(model, x, **tolerance)
    assert _gemms() == 0
    # The dequantized weights are never written: the products' kernels
    # read the int8 weights themselves.
    kernels = "".join(native.stage_ir.get("kernel", "")
                      for native in tc.compiler.build.cache.values())
    assert "xi8>" in kernels
    assert "384x256x" + ("f32" if dtype == torch.float32 else "bf16") \
        not in kernels.replace("memref<", "")


class Gated(nn.Module):
    def __init__(self, dim: int, hidden: int, bias: bool):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=bias)
        self.w3 = nn.Linear(dim, hidden, bias=bias)
        self.w2 = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x):
        return x + self.w2(F.silu(self.w1(x)) * self.w3(x))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
@pytest.mark.parametrize("dim,hidden", [(1000, 1001), (2048, 5632),
                                        (4100, 2056)])
def test_sizes(skinny, device, dtype, dim, hidden):
    torch.manual_seed(0)
    model = Gated(dim, hidden, bias=dim == 1000).to(device, dtype).eval()
    x = torch.randn(1, 1, dim, device=device, dtype=dtype)
    tolerance = ({"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32
                 else {"rtol": 5e-2, "atol": 5e-2})
    _compiled_like_eager(model, x, **tolerance)
    assert _gemms() == 0


@pytest.mark.parametrize("device", DEVICES)
def test_int8_at_a_decoders_size(skinny, device):
    torch.manual_seed(1)
    model = nn.Sequential(Int8Linear(5632, 2048), nn.SiLU(),
                          Int8Linear(2048, 5632)).to(device).eval()
    x = torch.randn(1, 2048, device=device, dtype=torch.bfloat16)
    # Outputs of ~10^3 (bf16's step there: 4 to 32), summed from 5632
    # terms of ~10^1 rounded to bf16 (steps of 0.125); some cancel to ~1,
    # where one different rounding of a hidden value moves them by 0.2.
    _compiled_like_eager(model, x, reference=True)
    assert _gemms() == 0
    assert "5632x2048xi8" in "".join(
        native.stage_ir.get("kernel", "")
        for native in tc.compiler.build.cache.values())

