"""A tensor split into its parts for eager code, whose gradients come back
as one tensor: the query, key and value of an attention.

A transformer computes one tensor of queries, keys and values (one GEMM)
and splits it along a dimension of 3 (`unbind`, which the trace writes as
`slice` and `squeeze` views) for the fused attention, which runs in eager
between tc's segments (`segments`). Left as views in a segment, the split
made tc write each part out as an output of its own (a copy of the
tensor in the forward) and take each part's gradient as an input, which
tc copied to a dense one first (PyTorch's memory-efficient attention
returns them in [batch, length, heads, dim] order: three copies) and its
backward joined again (a third pass): BEiT-base's training step on the
H200 ran 72 such copies.

Here such a split (for the attentions `segments` names: the
memory-efficient one) becomes one eager call (`split`) on the whole
tensor, which the segment then returns as it is (the GEMM's result, no
copy). Its backward (`_Split.backward`) joins the parts' gradients into
one tensor in the forward tensor's layout, which the views before the
split turn back into the GEMM result's (contiguous) without a copy; where
the gradients are parts of one tensor already (a kernel that writes them
so), it returns a view of that tensor instead.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import torch
import torch.fx

aten = torch.ops.aten


def _dense_strides(value: torch.Tensor) -> tuple[int, ...] | None:
    """`value`'s strides when they lay it out densely (some permutation of
    a contiguous tensor's), else None."""
    order = sorted(range(value.dim()),
                   key=lambda d: (value.stride(d), value.shape[d]))
    expected = 1
    for d in order:
        if value.shape[d] != 1 and value.stride(d) != expected:
            return None
        expected *= value.shape[d]
    return tuple(value.stride())


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    strides, expected = [], 1
    for size in reversed(shape):
        strides.append(expected)
        expected *= max(size, 1)
    return tuple(reversed(strides))


class _Split(torch.autograd.Function):
    """`x.unbind(dim)`, whose backward joins the parts' gradients without
    a copy where they are parts of one tensor already."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, dim: int) -> tuple[torch.Tensor,
                                                              ...]:
        ctx.dim = dim
        # The joined gradient's layout: the forward tensor's when dense
        # (the views before the split then give the segment a dense
        # gradient), else a contiguous one's.
        ctx.spec = (x.shape, _dense_strides(x) or _contiguous(x.shape),
                    x.dtype, x.device)
        return tuple(x.select(dim, i) for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, None]:
        joined = _parts_of_one(grads, ctx.dim)
        if joined is not None:
            return joined, None
        shape, strides, dtype, device = ctx.spec
        out = torch.empty_strided(shape, strides, dtype=dtype, device=device)
        for i, grad in enumerate(grads):
            part = out.select(ctx.dim, i)
            if grad is None:
                part.zero_()
            else:
                part.copy_(grad)
        return out, None


def _parts_of_one(grads: Sequence[torch.Tensor | None],
                  dim: int) -> torch.Tensor | None:
    """The tensor whose `select(dim, i)` is `grads[i]` for each i, as a
    view of their storage, or None when they are not such parts (a
    missing one, different storages, strides or steps)."""
    if len(grads) < 2 or any(g is None for g in grads):
        return None
    first = grads[0]
    storage = first.untyped_storage().data_ptr()
    step = grads[1].storage_offset() - first.storage_offset()
    for i, grad in enumerate(grads):
        if (grad.untyped_storage().data_ptr() != storage
                or grad.stride() != first.stride()
                or grad.shape != first.shape or grad.dtype != first.dtype
                or grad.storage_offset() != first.storage_offset() + i * step):
            return None
    if step <= 0:
        return None
    shape = (*first.shape[:dim], len(grads), *first.shape[dim:])
    strides = (*first.stride()[:dim], step, *first.stride()[dim:])
    return first.as_strided(shape, strides, first.storage_offset())


def split(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, ...]:
    """The parts of `x` along `dim` (`x.select(dim, i)`), differentiable
    through `_Split`: the eager call a split for eager code becomes."""
    return _Split.apply(x, dim)


def _part(node: torch.fx.Node, source: torch.fx.Node,
          size: int) -> tuple[int, int, torch.fx.Node] | None:
    """(dim, index, the part's last node) when user `node` of `source`
    takes one index of it along a dimension: a `select`, or a `slice` of
    one index and a `squeeze` of that dimension."""
    rank = source.meta["val"].dim()
    if node.target is aten.select.int and node.args[0] is source:
        dim, index = node.args[1] % rank, node.args[2] % size
        return dim, index, node
    if (node.target is not aten.slice.Tensor or node.args[0] is not source
            or len(node.args) < 4 or len(node.users) != 1
            or (len(node.args) > 4 and node.args[4] != 1)):
        return None
    dim = node.args[1] % rank
    start, end = node.args[2], node.args[3]
    if not (isinstance(start, int) and isinstance(end, int)
            and 0 <= start < size and end == start + 1):
        return None
    [squeeze] = node.users
    dims = (squeeze.args[1] if squeeze.target is aten.squeeze.dims
            else [squeeze.args[1]] if squeeze.target is aten.squeeze.dim
            else None)
    if dims is None or [d % rank for d in dims] != [dim]:
        return None
    return dim, start, squeeze


def rewrite(graph: torch.fx.Graph, eager_ops: Sequence[Any]) -> int:
    """Makes each split of a tensor into all its parts along one
    dimension, whose parts only ops in `eager_ops` read, one `split` call
    before the first of them; returns how many."""
    count = 0
    for source in list(graph.nodes):
        value = source.meta.get("val")
        users = list(source.users)
        if not isinstance(value, torch.Tensor) or len(users) < 2:
            continue
        dims = {_dim_of(u, value.dim()) for u in users}
        if len(dims) != 1 or None in dims:
            continue
        [dim] = dims
        size = value.shape[dim]
        if not isinstance(size, int) or size != len(users):
            continue
        parts = [_part(u, source, size) for u in users]
        if any(p is None for p in parts):
            continue
        by_index = {p[1]: p[2] for p in parts}
        if sorted(by_index) != list(range(size)):
            continue
        readers = [r for p in by_index.values() for r in p.users]
        if not readers or any(r.target not in eager_ops for r in readers):
            continue
        first = min(readers, key=_position(graph))
        with graph.inserting_before(first):
            call = graph.call_function(split, (source, dim))
            call.meta["val"] = tuple(by_index[i].meta.get("val")
                                     for i in range(size))
            for i in range(size):
                item = graph.call_function(operator.getitem, (call, i))
                item.meta = dict(by_index[i].meta)
                by_index[i].replace_all_uses_with(item)
        for user in users:
            last = _part(user, source, size)[2]
            graph.erase_node(last)
            if last is not user:
                graph.erase_node(user)
        count += 1
    return count


def _dim_of(node: torch.fx.Node, rank: int) -> int | None:
    if node.target in (aten.select.int, aten.slice.Tensor) and len(
            node.args) > 1 and isinstance(node.args[1], int):
        return node.args[1] % rank
    return None


def _position(graph: torch.fx.Graph):
    order = {n: i for i, n in enumerate(graph.nodes)}
    return order.__getitem__
