"""The ROCm path without an AMD GPU: graphs compile to AMDGPU code objects,
running one fails with a clean error, and a ROCm build of PyTorch selects
the ROCm pipeline with the device's gfx name."""

import pytest
import torch

import tc
import tc.compiler
from tc.targets import rocm

from test_cuda import SOFTMAX_FX

MLP_FX = """
fx.graph @mlp(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<32x64xf32>) -> tensor<64x32xf32>
  %y = fx.call_function "aten::addmm"(%b, %x, %t) : (tensor<32xf32>, tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %r = fx.call_function "aten::relu"(%y) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  fx.output %r : tensor<8x32xf32>
}
"""


def compile_rocm(source, options="chip=gfx942"):
    native = tc.compiler.extension.load_native()
    try:
        return native.compile_rocm(source, options, True)
    except RuntimeError as error:
        if "bitcode" in str(error) or "ld.lld" in str(error):
            pytest.skip(f"no AMDGPU device libraries: {error}")
        raise


@pytest.mark.parametrize("chip", ["gfx942", "gfx90a"])
def test_rocm_softmax_compiles_to_a_code_object(chip):
    compiled = compile_rocm(SOFTMAX_FX, f"chip={chip}")
    assert compiled.target == "rocm"
    assert compiled.num_kernels == 1
    schedule = compiled.stage_ir["schedule"]
    assert "kernel.launch @tc_kernels::@softmax_fused" in schedule
    assert "gpu.shuffle" in compiled.stage_ir["gpu"]


def test_rocm_gemm_schedule():
    compiled = compile_rocm(MLP_FX)
    schedule = compiled.stage_ir["schedule"]
    assert "kernel.gemm" in schedule and "bias" in schedule
    assert compiled.num_kernels == 1  # the relu; the GEMM is rocBLAS's


def test_rocm_run_without_a_gpu_is_an_error():
    """No AMD GPU here: the first run fails with an error naming HIP (no
    runtime, no device, or a tc built without HIP's headers), never a
    crash."""
    compiled = compile_rocm(SOFTMAX_FX)
    with pytest.raises(RuntimeError, match="HIP|hip"):
        compiled.run([0, 0, 0])


def test_rocm_pipeline_options(monkeypatch):
    class Props:
        gcnArchName = "gfx942:sramecc+:xnack-"

    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: Props())
    monkeypatch.setenv("TC_ROCM_OPTIONS", "max-block-size=512")
    monkeypatch.setenv("TC_ROCM_PATH", "/nonexistent")
    monkeypatch.delenv("ROCM_PATH", raising=False)
    options = rocm.pipeline_options(torch.device("cuda", 0))
    assert options.startswith("chip=gfx942")
    assert "max-block-size=512" in options
    assert "/nonexistent" not in options


def test_rocm_torch_is_detected(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.2.0", raising=False)
    assert rocm.is_rocm()
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert not rocm.is_rocm()
