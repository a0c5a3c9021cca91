"""Which ATen nodes tc compiles.

`SUPPORTED_OPS` names the ATen overloads tc's decomposition handles (its
C++ table, read through tc._runtime), in PyTorch's schema spelling (`aten::add.Tensor`; the default overload has no
suffix: `aten::sin`). `is_supported` checks one FX node of an ATen graph
against it and against the dtypes and shapes tc compiles; the backend's
partitioner groups the supported nodes into subgraphs for tc and leaves the
rest to eager PyTorch.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import torch.fx

from tc import cost
from tc.attention import LIBRARY_ATTENTION
from tc.compiler import decomposition_limits, decomposition_table
from tc.fx_text import arg_kind_of, attribute
from tc.importer import (Unsupported, copy_into_input_problem,
                         qualified_name)

__all__ = ["SUPPORTED_DTYPES", "SUPPORTED_OPS", "VIEW_OPS", "is_supported"]

# The sizes tc-decompose takes, from its own table
# (tc/Conversion/FXToPrim/Limits.h, which says what each bounds). Without
# tc's native code every bound is 0: nothing it bounds is compiled.
_LIMITS = decomposition_limits()

#: The largest max-pooling window (points) tc compiles.
MAX_POOL_POSITIONS = _LIMITS.get("MAX_POOL_POSITIONS", 0)

#: The most scores (queries x keys) per batch row and head of a CPU
#: attention tc writes out as products and a softmax; a longer one runs as
#: PyTorch's CPU flash attention (tc.decompositions).
MAX_CPU_ATTENTION_SCORES = _LIMITS.get("MAX_CPU_ATTENTION_SCORES", 0)

#: The most weights (input x output size) of a dimension of an anti-aliased
#: resize tc compiles.
MAX_RESAMPLE_WEIGHTS = _LIMITS.get("MAX_RESAMPLE_WEIGHTS", 0)

#: ATen overloads tc compiles: tc-decompose's table
#: (tc/Conversion/FXToPrim/Decompositions.def, `tc-opt
#: --tc-list-decompositions`); empty without tc's native code.
SUPPORTED_OPS: frozenset[str] = frozenset(decomposition_table())

#: The largest matrix dimension tc unrolls a factorization or solve for;
#: larger ones run in eager.
LINALG_MAX_SIZE = _LIMITS.get("LINALG_MAX_SIZE", 0)

#: Ops that only reshape or re-stride their input. A subgraph does not
#: start or end with them (eager keeps them views), and one made only of
#: them is not worth a kernel.
VIEW_OPS: set[str] = {
    "aten::t", "aten::permute", "aten::view", "aten::_unsafe_view",
    "aten::reshape", "aten::expand", "aten::unsqueeze", "aten::squeeze.dim",
    "aten::squeeze.dims", "aten::squeeze", "aten::transpose.int",
    "aten::alias", "aten::diagonal", "aten::as_strided", "aten::unfold",
}

#: Tensor dtypes tc compiles.
SUPPORTED_DTYPES: set[torch.dtype] = {
    torch.float32, torch.float16, torch.bfloat16, torch.float64,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.bool,
}


#: The highest degree of the Hermite, Laguerre and Legendre polynomials tc
#: computes (their recurrences unroll).
MAX_POLYNOMIAL_DEGREE = _LIMITS.get("MAX_POLYNOMIAL_DEGREE", 0)

#: Ops computed exactly only for some values of a tensor operand: the op's
#: name -> (the operand, the largest value). The backend adds a check of
#: the operand to the graph and reruns it in eager when it fails.
VALUE_GUARDS = {
    f"aten::special_{kind}_polynomial_{letter}": ("n", MAX_POLYNOMIAL_DEGREE)
    for kind, letter in (("hermite", "h"), ("hermite", "he"),
                         ("laguerre", "l"), ("legendre", "p"))
}

#: Bessel functions whose series tc sums accurately to single precision
#: only: float64 ones run in eager.
_SINGLE_PRECISION_BESSEL = {
    "aten::special_bessel_j0", "aten::special_bessel_j1",
    "aten::special_bessel_y0", "aten::special_bessel_y1"}

#: Complex dtypes, which only COMPLEX_OPS take (tc-decompose computes on
#: (real, imaginary) pairs).
COMPLEX_DTYPES: set[torch.dtype] = {torch.complex64, torch.complex128}

#: The ops tc decomposes for complex operands and results.
COMPLEX_OPS = {
    "aten::_to_copy", "aten::clone", "aten::alias", "aten::lift_fresh_copy",
    "aten::resolve_conj", "aten::resolve_neg", "aten::_conj", "aten::conj",
    "aten::_conj_physical", "aten::conj_physical", "aten::complex",
    "aten::polar", "aten::view_as_real", "aten::view_as_complex",
    "aten::real", "aten::imag", "aten::abs", "aten::angle",
    "aten::add.Tensor",
    "aten::sub.Tensor", "aten::mul.Tensor", "aten::div.Tensor",
    "aten::_fft_r2c",
    "aten::_fft_c2c", "aten::_fft_c2r",
    # Ops that only move elements: each part separately.
    "aten::slice.Tensor", "aten::constant_pad_nd", "aten::permute",
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::expand",
    "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim",
    "aten::squeeze.dims", "aten::cat", "aten::select.int", "aten::flip",
    "aten::roll", "aten::t", "aten::transpose.int", "aten::index_select",
    "aten::repeat", "aten::slice_scatter", "aten::select_scatter",
}


def _empty_byte_result(name: str, index: Any, val: Any) -> bool:
    """Whether result `index` of op `name` is the empty uint8 "reserve"
    of the functional batch norm (cuDNN's workspace, empty on the CPU):
    no data, so its dtype does not matter."""
    return (name == "aten::_batch_norm_with_update_functional"
            and index == 3 and isinstance(val, torch.Tensor)
            and val.numel() == 0)


def _tensor_ok(val: Any, what: str,
               complex_ok: bool = False) -> tuple[bool, str]:
    """Whether `val` (a node's meta['val']) is a tensor tc handles, and
    if not, why."""
    if not isinstance(val, torch.Tensor):
        return False, f"{what} is not a tensor ({type(val).__name__})"
    if val.dtype not in SUPPORTED_DTYPES and not (
            complex_ok and val.dtype in COMPLEX_DTYPES):
        return False, f"{what} has unsupported dtype {val.dtype}"
    if val.layout != torch.strided:
        return False, f"{what} has unsupported layout {val.layout}"
    if val.device.type not in ("cpu", "cuda"):
        return False, (f"{what} is on {val.device}; tc compiles for the CPU "
                       "and CUDA devices")
    if not all(type(d) is int for d in val.shape):
        return False, (f"{what} has symbolic shape {tuple(val.shape)}; tc "
                       "compiles static shapes")
    return True, ""


def _copy_into_input(node: torch.fx.Node) -> tuple[bool, str]:
    """`copy_(x, v)` into a graph input, which the compiled program writes
    (importer's copy_into_argument)."""
    problem = copy_into_input_problem(node)
    if problem is not None:
        return False, problem
    return _tensor_ok(node.args[0].meta.get("val"), "argument 'self'")


def is_supported(node: torch.fx.Node) -> tuple[bool, str]:
    """Whether tc compiles `node`, and if not, why (one line)."""
    if node.op != "call_function":
        return False, f"'{node.op}' nodes run in eager"
    if node.target is operator.getitem:
        source = node.args[0]
        if not isinstance(source, torch.fx.Node):
            return False, "getitem of a non-node"
        if not is_supported(source)[0]:
            return False, "selects a result of an op tc does not compile"
        if _empty_byte_result(qualified_name(source.target)
                              if isinstance(source.target,
                                            torch._ops.OpOverload) else "",
                              node.args[1], node.meta.get("val")):
            return True, ""
        return _tensor_ok(node.meta.get("val"), "result", complex_ok=True)
    if not isinstance(node.target, torch._ops.OpOverload):
        return False, "target is not an ATen operator overload"
    if node.target is torch.ops.aten.copy_.default:
        return _copy_into_input(node)
    name = qualified_name(node.target)
    if name not in SUPPORTED_OPS:
        return False, f"{name} is not supported by tc yet"
    if name == "tc::attention" and not node.meta.get(LIBRARY_ATTENTION):
        # (tc.rows.keep_attention's: PyTorch's kernel between tc's parts.)
        return False, "attention runs in eager between tc's parts"
    if name == "aten::matmul":
        # What the backend writes for a Linear on an n-d input (PyTorch
        # decomposes other matmuls before tc sees them).
        lhs, rhs = (a.meta.get("val") if isinstance(a, torch.fx.Node)
                    else None for a in node.args[:2])
        if not (isinstance(lhs, torch.Tensor) and isinstance(
                rhs, torch.Tensor) and lhs.dim() >= 3 and rhs.dim() == 2
                and lhs.dtype.is_floating_point):
            return False, "aten::matmul other than n-d by 2-d float"
    complex_ok = name in COMPLEX_OPS

    # Results.
    val = node.meta.get("val")
    vals = list(val) if isinstance(val, (list, tuple)) else [val]
    for i, v in enumerate(vals):
        if _empty_byte_result(name, i, v):
            continue
        ok, reason = _tensor_ok(v, "result" if len(vals) == 1
                                else f"result #{i}", complex_ok)
        if not ok:
            return ok, reason
    # Operands and the other arguments.
    schema = node.target._schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    bound = {a.name: v for a, v in zip(positional, node.args)}
    bound.update(node.kwargs)
    for arg in schema.arguments:
        if arg.name not in bound:
            continue
        value = bound[arg.name]
        kind, _ = arg_kind_of(arg)
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, torch.fx.Node):
                ok, reason = _tensor_ok(v.meta.get("val"),
                                        f"argument '{arg.name}'", complex_ok)
                if not ok:
                    return ok, reason
        if kind.startswith("T"):
            if any(isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool))
                   for v in values):
                return False, f"argument '{arg.name}' is symbolic"
            continue
        try:
            attribute(value, kind)
        except Unsupported as error:
            return False, f"argument '{arg.name}': {error.reason}"
    if name in ("aten::max_pool2d_with_indices",
                "aten::max_pool3d_with_indices"):
        spatial = 2 if name == "aten::max_pool2d_with_indices" else 3
        kernel = list(bound.get("kernel_size") or [1])
        if len(kernel) == 1:
            kernel *= spatial
        if math.prod(kernel) > MAX_POOL_POSITIONS:
            return False, (f"max pooling windows of more than "
                           f"{MAX_POOL_POSITIONS} points are not supported")
    if name in ("aten::_embedding_bag_forward_only", "aten::_embedding_bag"):
        if any(user.op != "call_function" or user.target is not
               operator.getitem or user.args[1] != 0 for user in node.users):
            return False, ("only embedding_bag's bags are supported (not "
                           "its bookkeeping results)")
        # Both flags change only the gradient, which the forward-only op
        # has none of.
        if name == "aten::_embedding_bag" and (
                bound.get("scale_grad_by_freq") or bound.get("sparse")):
            return False, ("sparse and scale_grad_by_freq embedding bags "
                           "are not supported yet")
    if name in ("aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor",
                "aten::div.Tensor") \
            and any(isinstance(v, torch.Tensor) and v.dtype in COMPLEX_DTYPES
                    for v in vals) and any(
                isinstance(bound.get(key), complex)
                for key in ("other", "alpha")):
        return False, ("complex arithmetic with a complex scalar or alpha "
                       "is not supported yet")
    if name == "aten::constant_pad_nd" and bound.get("value", 0) != 0 and \
            any(isinstance(v, torch.Tensor) and v.dtype in COMPLEX_DTYPES
                for v in vals):
        return False, "complex padding with a value other than 0"
    if name == "aten::histc" and isinstance(val, torch.Tensor) and \
            val.dtype in (torch.float16, torch.bfloat16):
        # Eager counts in the half type itself (its CPU counts stop at 256
        # or 4096 per bin); tc's exact counts would differ.
        return False, "histc of half types counts as eager's kernel does"
    if name in _SINGLE_PRECISION_BESSEL and isinstance(val, torch.Tensor) \
            and val.dtype == torch.float64:
        # The power series to |x| = 20 cancel: errors of 4e-7 at values
        # near 0.17 in f64 (found by the conformance sweep); f32 is fine.
        return False, ("Bessel functions in float64: tc's series are "
                       "accurate to single precision only")
    if name.split(".")[0] in VALUE_GUARDS:
        degree = bound.get("n")
        if isinstance(degree, (int, float)) and not (
                degree <= MAX_POLYNOMIAL_DEGREE):
            return False, (f"polynomials of degree above "
                           f"{MAX_POLYNOMIAL_DEGREE} are not supported")
        if any(isinstance(v, torch.Tensor) and not v.is_floating_point()
               for v in vals):
            return False, "integer polynomials are not supported"
    if name == "aten::round.decimals" and isinstance(val, torch.Tensor) \
            and val.device.type != "cpu" and val.dtype in (torch.float16,
                                                           torch.bfloat16):
        # tc rounds as eager's CPU kernel does (scale, round, unscale in
        # f32); on an H100 2% of eager's CUDA results differ from that, up
        # to 8% relative, for a reason not found yet.
        return False, ("round(x, decimals) of half types on a GPU differs "
                       "from eager's CUDA kernel")
    if name == "aten::segment_reduce" and bound.get("indices") is not None:
        return False, "segment_reduce by indices is not supported"
    if name == "aten::embedding" and (bound.get("sparse")
                                      or bound.get("scale_grad_by_freq")):
        return False, ("sparse and scale_grad_by_freq embeddings are not "
                       "supported yet")
    if name in ("aten::index.Tensor", "aten::_unsafe_index.Tensor",
                "aten::index_put", "aten::_unsafe_index_put"):
        given = [i for i in bound.get("indices") or [] if i is not None]
        for index in given:
            index = index.meta.get("val") \
                if isinstance(index, torch.fx.Node) else None
            if isinstance(index, torch.Tensor) and index.dtype == \
                    torch.bool and len(given) == 1 and "put" in name:
                continue  # x[mask] = v: static shapes (MasksAndSegments)
            if isinstance(index, torch.Tensor) and not (
                    index.dtype in (torch.int64, torch.int32)):
                return False, (f"{index.dtype} (mask) indices are not "
                               "supported")
    if name == "aten::polygamma" and not 0 <= bound.get("n", 0) <= 30:
        return False, "polygamma of order above 30 is not supported"
    if name in _LINALG_OPS:
        for value in bound.values():
            value = value.meta.get("val") \
                if isinstance(value, torch.fx.Node) else None
            if isinstance(value, torch.Tensor) and value.dim() >= 2 and max(
                    value.shape[-2:]) > LINALG_MAX_SIZE:
                return False, (f"{name} of matrices larger than "
                               f"{LINALG_MAX_SIZE} (tc unrolls them)")
    reason = cost.eager_reason(name, bound, val)
    if reason:
        return False, reason
    if name in ("aten::as_strided", "aten::as_strided_copy",
                "aten::as_strided_scatter"):
        # tc's view reads the input's own elements: its storage must be
        # exactly those, in order.
        base = bound.get("self")
        base = base.meta.get("val") if isinstance(base, torch.fx.Node) \
            else None
        if (not isinstance(base, torch.Tensor) or not base.is_contiguous()
                or base.storage_offset() != 0
                or base.untyped_storage().nbytes()
                != base.numel() * base.element_size()):
            return False, ("as_strided of a tensor that does not own its "
                           "contiguous storage")
    if name in ("aten::avg_pool2d", "aten::avg_pool3d"):
        kernel = list(bound.get("kernel_size") or [1])
        if len(kernel) == 1:
            kernel *= 2 if name == "aten::avg_pool2d" else 3
        if math.prod(kernel) > MAX_POOL_POSITIONS:
            return False, (f"average pooling windows of more than "
                           f"{MAX_POOL_POSITIONS} points are not supported")
    if name.startswith("aten::_upsample_") and name.endswith(
            ("_aa", "_aa_backward")):
        source = bound.get("self", bound.get("grad_output"))
        source = source.meta.get("val") \
            if isinstance(source, torch.fx.Node) else None
        if isinstance(source, torch.Tensor) and isinstance(val, torch.Tensor) \
                and source.dim() == 4 and val.dim() == 4 and any(
                    source.shape[d] * val.shape[d] > MAX_RESAMPLE_WEIGHTS
                    for d in (2, 3)):
            return False, (f"anti-aliased resizes with more than "
                           f"{MAX_RESAMPLE_WEIGHTS} weights per dimension "
                           "are not supported")
    if name == "aten::convolution":
        if isinstance(val, torch.Tensor) and not val.dtype.is_floating_point:
            return False, "integer convolutions are not supported"
    return True, ""


_LINALG_OPS = {name for name in SUPPORTED_OPS
               if "linalg" in name or name.startswith(("aten::lu_",
                                                       "aten::geqrf",
                                                       "aten::ormqr",
                                                       "aten::cholesky",
                                                       "aten::triangular"))}
