"""The library calls tc's CPU graphs make into PyTorch: convolutions and
large matrix products.

tc's CPU pipeline keeps a convolution and its gradients as library calls
(`kernel.conv`, expand-convolutions=false) rather than window copies and a
matrix product: on the CPU the kernels eager itself uses (oneDNN) are
several times faster than tc's im2col products. The CPU runtime runs each
call through `convolution` below (set when tc._tc loads, see
tc.compiler), with torch tensors viewing the graph's buffers, the way
Inductor's CPU code calls its extern kernels; tc's kernels before and after
the call (bias, batch norm, activations) stay fused. Likewise each
`kernel.gemm` of at least `tc::host::kLibraryGemmFlops` runs through `gemm`
below (PyTorch's BLAS, MKL on x86, as Inductor's `extern_kernels.mm`),
its epilogue kernel after it; smaller ones stay on OpenBLAS. The C++ side:
`tcSetCPUConvolution`, `tcSetCPUGemm` (include/tc-c/Compiler.h).
"""

from __future__ import annotations

import torch

import tc

__all__ = ["FORWARD", "GEMM_PROFILER_NAME", "INPUT_GRADIENT", "PROFILER_NAME",
           "PROFILER_NAMES", "WEIGHT_GRADIENT", "convolution", "gemm"]

#: The call's kind (kernel::ConvKind): which buffer it writes.
FORWARD, INPUT_GRADIENT, WEIGHT_GRADIENT = 0, 1, 2

#: The profiler's name for one call: PyTorch's ops under it are tc's
#: library calls, not ops left to eager.
PROFILER_NAME = "tc.library.convolution"
GEMM_PROFILER_NAME = "tc.library.gemm"
#: Both: what a profile shows tc's library calls under.
PROFILER_NAMES = (PROFILER_NAME, GEMM_PROFILER_NAME)


def convolution(kind: int, x: torch.Tensor, w: torch.Tensor, y: torch.Tensor,
                stride: list[int], padding: list[int], dilation: list[int],
                groups: int, may_return: bool = False) -> torch.Tensor | None:
    """One library convolution: FORWARD writes `y` = conv(x, w); a gradient
    kind writes `x`'s (INPUT_GRADIENT) or `w`'s (WEIGHT_GRADIENT) buffer
    from the output's gradient in `y`. Called from tc's CPU runtime.

    With `may_return` (the buffer it writes is an intermediate of the
    graph) it returns PyTorch's result instead of copying it into the
    buffer, when that result has the buffer's shape, dtype and strides: tc
    then reads it in the buffer's place for the rest of the graph's run
    (the copy was a tenth of ResNet-50's time on two cores, and evicted the
    result from the cache before its consumer read it). Else returns None."""
    tc.counters["library_convolutions"] += 1
    # The graph decided its types: a user's autocast region must not cast
    # the call's operands. (The views of the graph's buffers need no grad
    # mode: they do not require grad, so no result records a graph.)
    if torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            return _convolution(kind, x, w, y, stride, padding, dilation,
                                groups, may_return)
    return _convolution(kind, x, w, y, stride, padding, dilation, groups,
                        may_return)


def _convolution(kind: int, x: torch.Tensor, w: torch.Tensor,
                 y: torch.Tensor, stride: list[int], padding: list[int],
                 dilation: list[int], groups: int,
                 may_return: bool) -> torch.Tensor | None:
    if _profiling():
        with torch.profiler.record_function(PROFILER_NAME):
            return _run(kind, x, w, y, stride, padding, dilation, groups,
                        may_return)
    return _run(kind, x, w, y, stride, padding, dilation, groups, may_return)


def _run(kind: int, x: torch.Tensor, w: torch.Tensor, y: torch.Tensor,
         stride: list[int], padding: list[int], dilation: list[int],
         groups: int, may_return: bool) -> torch.Tensor | None:
    zeros = [0] * len(stride)
    if kind == FORWARD:
        result = torch.convolution(x, w, None, stride, padding, dilation,
                                   False, zeros, groups)
        written = y
    else:
        # The gradient needs only the shape of the buffer it writes.
        mask = [kind == INPUT_GRADIENT, kind == WEIGHT_GRADIENT, False]
        grads = torch.ops.aten.convolution_backward(
            y, x, w, None, stride, padding, dilation, False, zeros, groups,
            mask)
        result, written = ((grads[0], x) if kind == INPUT_GRADIENT
                           else (grads[1], w))
    if (may_return and result.dtype == written.dtype
            and result.shape == written.shape
            and result.stride() == written.stride()
            and result.storage_offset() == 0
            and result.data_ptr() % _ALIGNMENT == 0):
        return result
    written.copy_(result)
    return None


def gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
         bias: torch.Tensor | None, trans_a: bool, trans_b: bool) -> None:
    """One library product: `out` = op(a) op(b) (+ `bias` on every row),
    each a (batch, rows, columns) tensor viewing the graph's buffers as
    stored, op transposing the last two dimensions where `trans_a` /
    `trans_b` say. Called from tc's CPU runtime."""
    tc.counters["library_gemms"] += 1
    if trans_a:
        a = a.transpose(1, 2)
    if trans_b:
        b = b.transpose(1, 2)
    if torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            _gemm(a, b, out, bias)
        return
    _gemm(a, b, out, bias)


def _gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
          bias: torch.Tensor | None) -> None:
    if _profiling():
        with torch.profiler.record_function(GEMM_PROFILER_NAME):
            _run_gemm(a, b, out, bias)
        return
    _run_gemm(a, b, out, bias)


def _run_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
              bias: torch.Tensor | None) -> None:
    if a.shape[0] == 1:
        a, b, out = a[0], b[0], out[0]
        if bias is None:
            torch.mm(a, b, out=out)
        else:
            torch.addmm(bias, a, b, out=out)
    elif bias is None:
        torch.bmm(a, b, out=out)
    else:
        torch.baddbmm(bias, a, b, out=out)


#: Whether PyTorch's profiler records ops now (the name it gives the call
#: costs microseconds per call otherwise spent for nothing).
_profiling = getattr(torch.autograd, "_profiler_enabled", lambda: True)

#: The alignment tc's CPU kernels may assume of a buffer (bytes): a returned
#: result must have it (PyTorch's CPU allocator gives 64).
_ALIGNMENT = 64
