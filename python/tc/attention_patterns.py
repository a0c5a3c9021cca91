"""Attention written out as products and a softmax, found in an ATen graph.

Models without a fused attention path (Hugging Face's "eager" attention:
MegatronBERT, LayoutLM, ConvBERT and others) compute

    probs = softmax(q @ k^T * scale + bias)        (maybe in float32)
    out = probs @ v

which core ATen traces as two batched products over [batch x heads]
views, a scale (`div` or `mul` by a number), an additive bias and
`_softmax` along the keys. Compiled as written, the scores and the
probabilities are [batch, heads, queries, keys] tensors written and read
again (MegatronBERT at 16 x 512 tokens on the H200: 4.2 ms of a 16 ms
step, where the fused attention takes 2.0). `find` recognizes the pattern
from its `_softmax` node and says what the fused attention takes: query,
key and value as [batch, heads, tokens, features] views, the bias and the
scale. `tc.attention.written_attentions` then makes it one
`tc::attention`, as Inductor's pattern matcher makes such a chain
PyTorch's fused attention.

Every node of the chain from the products to the output must be read by
the chain alone (a model returning its attention probabilities keeps
them), and the softmax must run along the keys.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import torch
import torch.fx

aten = torch.ops.aten

_VIEWS = (aten.view.default, aten._unsafe_view.default,
          aten.reshape.default)


@dataclasses.dataclass
class Written:
    """An attention `find` recognized."""
    #: [batch, heads, queries, features] (the key as [.., keys, features]:
    #: `key_transposed` says whether a permute must make it so).
    query: torch.fx.Node
    key: torch.fx.Node
    key_transposed: bool
    value: torch.fx.Node
    bias: torch.fx.Node | None
    scale: float
    #: The [batch, heads, queries, value features] result the fused
    #: attention replaces, and the chain's nodes up to it (erased after).
    output: torch.fx.Node
    chain: list[torch.fx.Node]


def _val(node: Any) -> torch.Tensor | None:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def _is(node: Any, *targets: Any) -> bool:
    return (isinstance(node, torch.fx.Node) and node.op == "call_function"
            and node.target in targets)


def _only_user(node: torch.fx.Node) -> torch.fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _convert(node: Any) -> bool:
    """Whether `node` only changes its input's dtype."""
    return (_is(node, aten._to_copy.default) and len(node.args) == 1
            and set(node.kwargs) <= {"dtype"})


def _batched_operand(view: Any, chain: list) -> torch.fx.Node | None:
    """The 4-d operand of a product's [batch x heads, ...] view:
    view(clone(expand(x))) with an expand that broadcasts nothing."""
    if not _is(view, *_VIEWS) or len(view.users) != 1:
        return None
    chain.append(view)
    inner = view.args[0]
    if _is(inner, aten.clone.default) and len(inner.users) == 1:
        chain.append(inner)
        inner = inner.args[0]
    if _is(inner, aten.expand.default) and len(inner.users) == 1:
        source = inner.args[0]
        if _val(source) is None or _val(inner) is None or \
                _val(source).shape != _val(inner).shape:
            return None
        chain.append(inner)
        inner = source
    value = _val(inner)
    return inner if value is not None and value.dim() == 4 else None


def find(softmax: torch.fx.Node) -> Written | None:
    """The written-out attention around `_softmax` node `softmax`, or
    None."""
    if not _is(softmax, aten._softmax.default):
        return None
    scores_val = _val(softmax)
    if scores_val is None or scores_val.dim() != 4 or \
            softmax.args[1] not in (-1, 3):
        return None
    chain: list[torch.fx.Node] = [softmax]
    # Forward: [convert], expand, view, bmm with v, view to 4-d.
    node = _only_user(softmax)
    if _convert(node):
        chain.append(node)
        node = _only_user(node)
    if _is(node, aten.expand.default):
        if _val(node) is None or _val(node).shape != scores_val.shape:
            return None
        chain.append(node)
        node = _only_user(node)
    if not _is(node, *_VIEWS) or len(node.users) != 1:
        return None
    chain.append(node)
    product = _only_user(node)
    if not _is(product, aten.bmm.default) or product.args[0] is not node:
        return None
    chain.append(product)
    value = _batched_operand(product.args[1], chain)
    output = _only_user(product)
    if value is None or not _is(output, *_VIEWS) or _val(output) is None \
            or _val(output).dim() != 4:
        return None
    # Backward: [convert], [add bias], [scale], [convert], view of bmm.
    node = softmax.args[0]
    if _convert(node) and len(node.users) == 1:
        chain.append(node)
        node = node.args[0]
    bias = None
    if _is(node, aten.add.Tensor) and len(node.users) == 1 and \
            len(node.args) == 2 and not node.kwargs:  # (no alpha)
        chain.append(node)
        first, second = node.args
        # The scores are the operand with the full 4-d shape that reaches
        # a product; the other is the bias.
        if _scores_side(second) and not _scores_side(first):
            first, second = second, first
        if not isinstance(second, torch.fx.Node):
            return None
        node, bias = first, second
    scale = 1.0
    if _is(node, aten.div.Tensor, aten.mul.Tensor) and \
            len(node.users) == 1 and isinstance(node.args[1], numbers.Real) \
            and not isinstance(node.args[1], bool) and node.args[1] != 0:
        chain.append(node)
        factor = float(node.args[1])
        scale = 1.0 / factor if node.target is aten.div.Tensor else factor
        node = node.args[0]
    if _convert(node) and len(node.users) == 1:
        chain.append(node)
        node = node.args[0]
    if not _is(node, *_VIEWS) or len(node.users) != 1:
        return None
    chain.append(node)
    scores = node.args[0]
    if not _is(scores, aten.bmm.default) or len(scores.users) != 1:
        return None
    chain.append(scores)
    query = _batched_operand(scores.args[0], chain)
    key_t = _batched_operand(scores.args[1], chain)
    if query is None or key_t is None:
        return None
    # The key enters transposed: [batch, heads, features, keys].
    key, transposed = key_t, True
    if _is(key_t, aten.permute.default) and len(key_t.users) == 1 and \
            list(key_t.args[1]) == [0, 1, 3, 2]:
        chain.append(key_t)
        key, transposed = key_t.args[0], False
    return Written(query, key, transposed, value, bias, scale, output,
                   chain)


def _scores_side(node: Any) -> bool:
    """Whether `node` is the scores' side of the bias add (a scale, a
    convert or a view of a product)."""
    while isinstance(node, torch.fx.Node) and (
            _convert(node) or _is(node, aten.div.Tensor, aten.mul.Tensor)):
        node = node.args[0]
    return _is(node, *_VIEWS) and _is(node.args[0], aten.bmm.default)
