"""The decomposition tables of tc's ATen traces.

`core_aten_decompositions()` is what tc's traces decompose: PyTorch's core
ATen table, PyTorch's decompositions of a few ops outside it that reach ops
tc compiles, some wrapped for tc (0-d results, GPU-only),
and none of an op tc lowers whole (`tc.support.SUPPORTED_OPS`).
`joint_decompositions()` and `forward_decompositions()` are its variants
for AOTAutograd's joint traces and for a training graph's forward;
`decomposed_ops()` answers "does the table decompose this op" without
building it and `explicit_decompositions()` is the table less what make_fx
decomposes anyway (what `tc.direct` needs).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from tc import compat
from tc.importer import qualified_name
from tc.support import MAX_CPU_ATTENTION_SCORES, SUPPORTED_OPS

__all__ = ["DecomposedOps", "aten_op", "core_aten_decompositions",
           "decomposed_ops", "explicit_decompositions",
           "explicit_forward_decompositions", "forward_decompositions",
           "joint_decompositions", "table_decomposes"]


#: Ops outside the core ATen set whose PyTorch decompositions reach ops tc
#: compiles (each measured on the OpInfo sweep, test/conformance/sweep.py).
#: Not every decomposition qualifies: some lower to a prim of the same name,
#: mutate (`diagonal_scatter`), read tensor data at trace time
#: (`bucketize`), turn views into copies, or break fake tensors
#: (`lift_fresh`).
_EXTRA_DECOMPOSITIONS = (
    "addmv", "dist", "elu", "hardtanh", "ldexp.Tensor", "linalg_vector_norm",
    "narrow_copy", "permute_copy", "unbind_copy.int", "view_copy",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "_adaptive_avg_pool2d",
    "native_group_norm", "pow.Scalar", "slice_scatter",
    "upsample_bilinear2d.vec", "upsample_bilinear2d",
    "upsample_trilinear3d", "upsample_bicubic2d", "grid_sampler_2d",
    "max_pool2d_with_indices_backward",
)


@functools.lru_cache(maxsize=1)
def core_aten_decompositions() -> dict:
    """The decomposition table of tc's ATen traces, built once per process
    (building it takes ~0.2 s, a large part of a small graph's compile):
    PyTorch's core ATen table, plus PyTorch's decompositions of the ops in
    `_EXTRA_DECOMPOSITIONS`. An op tc lowers itself keeps its one node (a
    decomposition would only add work)."""
    from torch._decomp import core_aten_decompositions

    return _with_tc_entries(core_aten_decompositions())


@functools.lru_cache(maxsize=1)
def explicit_decompositions() -> dict:
    """`core_aten_decompositions()` less its CompositeImplicitAutograd
    ops' own kernels, built in milliseconds: PyTorch's core list and tc's
    entries. make_fx runs a CompositeImplicitAutograd op's own kernel
    whether or not the table names it, so a trace with this table differs
    from one with the whole table only where it leaves an op the whole
    table decomposes (`decomposed_ops()` tells; `tc.direct` checks)."""
    from torch._decomp import _core_aten_decompositions_post_autograd

    return _with_tc_entries(dict(_core_aten_decompositions_post_autograd()))


def _with_tc_entries(table: Any) -> Any:
    """`table` with `_EXTRA_DECOMPOSITIONS` added and tc's wrappers."""
    from torch._decomp import decomposition_table

    for name in _EXTRA_DECOMPOSITIONS:
        op = aten_op(name)
        if (op is None or op in table or op not in decomposition_table
                or qualified_name(op) in SUPPORTED_OPS):
            continue
        table[op] = decomposition_table[op]
    for name in _GPU_ONLY_DECOMPOSITIONS:
        op = aten_op(name)
        if op in table:
            table[op] = _off_the_cpu(table[op])
    for name in _ZERO_DIM_RESULT_DECOMPOSITIONS:
        op = aten_op(name)
        if op in table:
            table[op] = _zero_dim_result(table[op])
    op = aten_op("_scaled_dot_product_flash_attention_for_cpu")
    if op in table:
        table[op] = _short_attention_only(table[op])
    op = aten_op("slice_scatter")
    if op in table:
        table[op] = _in_input_layout(table[op])
    return table


def _in_input_layout(decomposition: Callable) -> Callable:
    """PyTorch's decomposition of `slice_scatter` (a `where` over the
    input and the padded source), computed in the memory order of an
    input that is a dense permuted view, so that its result has the
    input's strides as eager's kernel's does (a clone of the input, then a
    copy into the slice). AOTAutograd's functionalization writes an
    assignment into a slice of a view as `slice_scatter` on that view and
    views the result back to its base: from a contiguous result the view
    back to the base's shape fails (Longformer's masking of its
    transposed band of scores, whose training graph then ran in eager)."""
    from tc.layouts import dense_permutation

    def decompose(input: Any, src: Any, dim: int = 0, *args: Any,
                  **kwargs: Any) -> Any:
        order = dense_permutation(input)
        if order is None or src.dim() != input.dim():
            return decomposition(input, src, dim, *args, **kwargs)
        inverse = sorted(range(len(order)), key=order.__getitem__)
        result = decomposition(input.permute(order), src.permute(order),
                               order.index(dim % input.dim()), *args,
                               **kwargs)
        return result.permute(inverse)
    return decompose


def _short_attention_only(decomposition: Callable) -> Callable:
    """PyTorch's decomposition of its CPU flash attention (products and a
    softmax over the whole score matrix), for at most
    `MAX_CPU_ATTENTION_SCORES` scores per batch row and head; a longer
    attention keeps its node, which runs PyTorch's kernel (tc.support: not
    an op tc compiles)."""
    def decompose(query: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
        scores = query.shape[-2] * key.shape[-2]
        if isinstance(scores, int) and scores > MAX_CPU_ATTENTION_SCORES:
            return NotImplemented
        return decomposition(query, key, *args, **kwargs)
    return decompose


#: Ops whose PyTorch decomposition (and meta function) returns a loss of
#: shape [1] for a 0-d input with reduction="none", where eager's kernel
#: returns a 0-d loss (found by the conformance sweep).
_ZERO_DIM_RESULT_DECOMPOSITIONS = ("multi_margin_loss",
                                   "multilabel_margin_loss_forward")


def _zero_dim_result(decomposition: Callable) -> Callable:
    """`decomposition`, with its first result 0-d where its input is."""
    def decompose(x: Any, *args: Any, **kwargs: Any) -> Any:
        result = decomposition(x, *args, **kwargs)
        if not (isinstance(x, torch.Tensor) and x.dim() == 0):
            return result
        if isinstance(result, torch.Tensor):
            return result.reshape(())
        return (result[0].reshape(()), *result[1:])
    return decompose


#: Ops whose decomposition tc compiles well on a GPU only: on the CPU they
#: keep their node, which runs eager's kernel. embedding_dense_backward
#: becomes zeros and an accumulating index_put, a scatter-add on a GPU
#: (0.60x eager's time on the H200); on the CPU, whose float atomics are
#: compare-and-swap loops, the index_put stays in eager and the pair ran
#: at 2.4x eager's one kernel.
_GPU_ONLY_DECOMPOSITIONS = ("embedding_dense_backward",)


def _off_the_cpu(decomposition: Callable) -> Callable:
    """`decomposition`, except for operands on the CPU (NotImplemented:
    the trace keeps the op)."""
    def decompose(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, torch.Tensor) and a.device.type == "cpu"
               for a in args):
            return NotImplemented
        return decomposition(*args, **kwargs)
    return decompose


#: Ops whose PyTorch decomposition is an inference rewrite: its outputs are
#: not what the op's autograd formula reads. AOTAutograd traces the joint
#: graph with the formula of the op as the user called it, so decomposing
#: such an op's forward hands the backward wrong inputs.
#: `_scaled_dot_product_flash_attention_for_cpu` decomposes to the math
#: attention, whose second output is the probability matrix, and its
#: backward reads that as the log-sum-exp: every gradient through CPU
#: attention came out wrong.
_INFERENCE_ONLY_DECOMPOSITIONS = (
    "_scaled_dot_product_flash_attention_for_cpu",
)
#: Ops that AOTAutograd's joint traces decompose although tc lowers them
#: whole: the min-cut partitioner then sees their reductions and pointwise
#: steps, and saves a softmax's input and row statistics (a bf16 logits
#: buffer) where the whole op would make it save the f32 output (GPT-2's
#: loss: 4096 x 50257 x 4 bytes).
_JOINT_DECOMPOSITIONS = (
    "_log_softmax", "_log_softmax_backward_data", "_softmax",
    "_softmax_backward_data",
)


@functools.lru_cache(maxsize=1)
def joint_decompositions() -> dict:
    """`core_aten_decompositions()` for AOTAutograd's joint (forward and
    backward) traces: without `_INFERENCE_ONLY_DECOMPOSITIONS`, whose ops
    then run in eager, forward and backward alike, and with
    `_JOINT_DECOMPOSITIONS`."""
    from torch._decomp import decomposition_table

    table = dict(core_aten_decompositions())
    for name in _INFERENCE_ONLY_DECOMPOSITIONS:
        table.pop(aten_op(name), None)
    for name in _JOINT_DECOMPOSITIONS:
        op = aten_op(name)
        if op is not None and op in decomposition_table:
            table[op] = decomposition_table[op]
    return table


@functools.lru_cache(maxsize=1)
def forward_decompositions() -> dict:
    """`core_aten_decompositions()` for a training graph's forward, which
    tc differentiates (or AOTAutograd, should tc not take it): without
    `_INFERENCE_ONLY_DECOMPOSITIONS`, whose ops then run in eager under
    autograd (CPU attention, as on the GPU: `tc.backend.segments`)."""
    table = dict(core_aten_decompositions())
    for name in _INFERENCE_ONLY_DECOMPOSITIONS:
        table.pop(aten_op(name), None)
    return table


@functools.lru_cache(maxsize=1)
def explicit_forward_decompositions() -> dict:
    """`explicit_decompositions()` for a training graph's forward: what
    `forward_decompositions()` is to `core_aten_decompositions()`."""
    table = dict(explicit_decompositions())
    for name in _INFERENCE_ONLY_DECOMPOSITIONS:
        table.pop(aten_op(name), None)
    return table


class _ForwardDecomposedOps:
    """`decomposed_ops()` for a training graph's forward: what
    `forward_decompositions()` decomposes, by name."""

    def __init__(self) -> None:
        self._kept = {str(op) for op in map(
            aten_op, _INFERENCE_ONLY_DECOMPOSITIONS) if op is not None}

    def __contains__(self, name: object) -> bool:
        return name not in self._kept and name in decomposed_ops()


@functools.lru_cache(maxsize=1)
def forward_decomposed_ops() -> _ForwardDecomposedOps:
    return _ForwardDecomposedOps()


def table_decomposes(op: Any, training: bool) -> bool:
    """Whether `core_aten_decompositions()` (`forward_decompositions()`
    with `training`) decomposes ATen op `op`, without building it. An op
    of another namespace is never left by a trace with the explicit table
    alone: the whole table adds only CompositeImplicitAutograd ops to it,
    which make_fx decomposes anyway."""
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != "aten":
        return False
    if training and op in {aten_op(n) for n in _INFERENCE_ONLY_DECOMPOSITIONS}:
        return False
    return str(op) in decomposed_ops()


class DecomposedOps:
    """Whether `core_aten_decompositions()` decomposes an op, by its name
    (`str(op)`, "aten.addmm.default"): all that writing a graph directly
    (`tc.direct`) needs to know of the table. Answered per op, without
    building the table: that collects every CompositeImplicitAutograd op of
    every namespace, 0.02 to 0.3 s (on the H100's host), a large part of a
    small graph's cold compile. The table holds PyTorch's core ATen
    decompositions, every ATen op with a CompositeImplicitAutograd kernel
    that export does not preserve, and `_EXTRA_DECOMPOSITIONS`
    (test_cache.py checks the answers against the table)."""

    def __init__(self) -> None:
        from torch._decomp import (_core_aten_decompositions_post_autograd,
                                   decomposition_table)

        self._explicit = {str(op) for op in
                          _core_aten_decompositions_post_autograd()}
        for name in _EXTRA_DECOMPOSITIONS:
            op = aten_op(name)
            if (op is not None and op in decomposition_table
                    and qualified_name(op) not in SUPPORTED_OPS):
                self._explicit.add(str(op))
        self._answers: dict[str, bool] = {}

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        answer = self._answers.get(name)
        if answer is None:
            answer = self._answers[name] = self._decomposes(name)
        return answer

    def _decomposes(self, name: str) -> bool:
        if name in self._explicit:
            return True
        namespace, _, rest = name.partition(".")
        op = aten_op(rest) if namespace == "aten" else None
        helpers = compat.get("preserved_cia_ops")
        if helpers is None:
            op = None
        else:  # PyTorch's private helpers, as its table uses them
            _is_preservable_cia_op, PRESERVED_ATEN_CIA_OPS = helpers
        if op is None:
            # Not an ATen op (or a PyTorch without those helpers): ask the
            # table itself.
            return name in {str(o) for o in core_aten_decompositions()}
        return op not in PRESERVED_ATEN_CIA_OPS and _is_preservable_cia_op(op)


def aten_op(name: str) -> Any:
    """torch.ops.aten.<base>.<overload> for "base.overload" (or "base",
    the default overload); None when there is none."""
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base, None)
    return getattr(packet, overload or "default", None)


@functools.lru_cache(maxsize=1)
def decomposed_ops() -> DecomposedOps:
    return DecomposedOps()
