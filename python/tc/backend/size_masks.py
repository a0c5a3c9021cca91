"""Attention masks that a graph compiled in parts computes from its sizes
alone (docs/DynamicShapes.md).

A language model under `torch.compile` builds its attention mask in the
graph: GPT-2's causal mask from `arange` comparisons, BERT's of all ones
when no padding mask is given. In a static graph tc evaluates such a mask
at compile time (`tc.attention.causal_masks`); in a graph compiled once
for every sequence length it is a function of the length, which the
attention between the parts (`symbolic_rows.SymbolicRows._compile_parts`)
received as a `[B, 1, S, S]` tensor: PyTorch's fused kernels then read it
and compute every block, where `is_causal=True` skips half of them and no
mask lets the flash kernel run.

`SizeMaskedAttention` runs such an attention. A mask that depends on no
tensor input of the graph (`sizes_only`) is the same at every call of one
size: the first call of a size reads it once (one copy to the host) and
classifies it, as every query attending to every key (no mask), the
causal pattern with as many queries as keys (`is_causal`), or anything
else (the mask as it is); later calls of that size use the class. Inside
a CUDA graph capture nothing is read: a size not classified yet keeps its
mask.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.fx

#: Sizes classified per attention before the oldest are forgotten.
_MAX_SIZES = 64

#: Float mask values at or below this block a key: added to a score, the
#: softmax's exponential is exactly 0 (PyTorch and Hugging Face fill with
#: -inf or the dtype's minimum).
_BLOCKED = -1e30


#: Ops that read a tensor's sizes, not its data.
_SIZE_OPS = (torch.ops.aten.sym_size.int, torch.ops.aten.sym_numel.default,
             torch.ops.aten.sym_stride.int)


def sizes_only(mask: Any) -> bool:
    """Whether fx node `mask` is computed from no tensor input of its
    graph (from sizes and constants only) by deterministic, functional
    ATen ops and size arithmetic: the same at every call of one size."""
    if not isinstance(mask, torch.fx.Node):
        return False
    seen = set()
    worklist = [mask]
    while worklist:
        node = worklist.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.op == "placeholder":
            if isinstance(node.meta.get("val"), torch.Tensor):
                return False
        elif node.op == "call_function":
            target = node.target
            if target in _SIZE_OPS:
                continue  # a tensor's size, not its data
            if isinstance(target, torch._ops.OpOverload) and (
                    target._schema.is_mutable
                    or torch.Tag.nondeterministic_seeded in target.tags):
                return False
        elif node.op != "get_attr":
            return False  # a part of tc's, a module: not looked into
        worklist.extend(node.all_input_nodes)
    return True


def classify(mask: torch.Tensor, queries: int, keys: int) -> str:
    """"none" where every query attends to every key, "causal" where the
    mask is the causal pattern of as many queries as keys, else "mask".
    Reads the device once."""
    if mask.dtype == torch.bool:
        attend = mask
        valid = torch.ones((), dtype=torch.bool, device=mask.device)
    elif mask.is_floating_point():
        attend = mask == 0
        valid = (attend | (mask <= _BLOCKED)).all()
    else:
        return "mask"
    flags = [valid, attend.all()]
    if queries == keys and mask.shape[-2:] == (queries, keys):
        causal = torch.ones(queries, keys, dtype=torch.bool,
                            device=mask.device).tril()
        flags.append((attend == causal).all())
    values = torch.stack(flags).tolist()
    if not values[0]:
        return "mask"
    if values[1]:
        return "none"
    if len(values) > 2 and values[2]:
        return "causal"
    return "mask"


class SizeMaskedAttention:
    """Runs a `tc::attention` node whose mask `sizes_only` computes
    (see the module's docstring); `state.lead` holds the call's sizes."""

    def __init__(self, run: Any, state: Any):
        self.run = run
        self.state = state
        self.kinds: dict[tuple, str] = {}

    def __call__(self, query: torch.Tensor, key: torch.Tensor,
                 value: torch.Tensor, attn_mask: Optional[torch.Tensor],
                 dropout_p: float, is_causal: bool, scale: Optional[float],
                 enable_gqa: bool) -> torch.Tensor:
        if attn_mask is not None and not is_causal:
            size = (self.state.lead, tuple(attn_mask.shape), attn_mask.dtype,
                    str(attn_mask.device))
            kind = self.kinds.get(size)
            if kind is None and not (
                    attn_mask.is_cuda
                    and torch.cuda.is_current_stream_capturing()):
                if len(self.kinds) >= _MAX_SIZES:
                    self.kinds.pop(next(iter(self.kinds)))
                kind = self.kinds[size] = classify(
                    attn_mask, query.shape[-2], key.shape[-2])
            if kind == "none":
                attn_mask = None
            elif kind == "causal":
                attn_mask, is_causal = None, True
        return self.run(query, key, value, attn_mask, dropout_p, is_causal,
                        scale, enable_gqa)
