"""One-row products on the GPU as tc's own kernels (tc-skinny-products):
odd and real sizes (rows that are and are not whole 16-byte groups of a
warp, the warp-per-row schedule of 2048+ rows), bf16, fp16 and f32, a
bias, weight-only int8; eager's results, no GEMM in the schedule.
Skipped without a CUDA device."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tc
import tc.compiler

has_cuda = torch.cuda.is_available()
pytestmark = [pytest.mark.requires_native,
              pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]


@pytest.fixture
def kernels_logged(request):
    import tc.logs
    tc.logs.set_logs("output_code")
    request.addfinalizer(tc.logs.set_logs)
    tc.compiler.build.cache.clear()


def _kernels() -> str:
    return "".join(native.stage_ir.get("kernel", "")
                   for native in tc.compiler.build.cache.values())


def _check(model: nn.Module, x: torch.Tensor, **tolerance) -> None:
    torch._dynamo.reset()
    tc.reset_counters()
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="tc", fullgraph=True)(x)
    torch.testing.assert_close(got, want, **tolerance)
    assert tc.counters["ops_eager"] == 0
    assert tc.counters["runtime_fallbacks"] == 0
    assert "kernel.gemm" not in _kernels()


class Gated(nn.Module):
    def __init__(self, dim: int, hidden: int, bias: bool):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=bias)
        self.w3 = nn.Linear(dim, hidden, bias=bias)
        self.w2 = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x):
        return x + self.w2(F.silu(self.w1(x)) * self.w3(x))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16,
                                   torch.float32])
@pytest.mark.parametrize("dim,hidden", [(1000, 1001), (2048, 5632),
                                        (4100, 2056)])
def test_one_row_products(kernels_logged, dtype, dim, hidden):
    torch.manual_seed(0)
    model = Gated(dim, hidden, bias=dim == 1000).cuda().to(dtype).eval()
    x = torch.randn(1, 1, dim, device="cuda", dtype=dtype)
    tolerance = ({"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32
                 else {"rtol": 5e-2, "atol": 5e-2})
    _check(model, x, **tolerance)


class Int8Linear(nn.Module):
    def __init__(self, out_features: int, in_features: int):
        super().__init__()
        self.register_buffer("weight", torch.randint(
            -128, 128, (out_features, in_features), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(out_features) / 256)

    def forward(self, x):
        return F.linear(x, self.weight.to(x.dtype)) * self.scales.to(x.dtype)


def test_int8_weights(kernels_logged):
    torch.manual_seed(1)
    model = nn.Sequential(Int8Linear(5632, 2048), nn.SiLU(),
                          Int8Linear(2048, 5632)).cuda().eval()
    x = torch.randn(1, 2048, device="cuda", dtype=torch.bfloat16)
    _check(model, x, rtol=5e-2, atol=5e-2)
    assert "5632x2048xi8" in _kernels()
