"""tc's cost model, asked about one FX node.

The model itself is C++ (tc/Conversion/FXToPrim/CostModel.h, through
tc._runtime): for the ops whose tc code is not a pass over their data
(dense sorts, scans and scatters, atomic histograms, DFT products) it
estimates tc's time and eager's on the node's device and says when tc's
would be slower. This module only describes the node to it: the shapes of
its tensor arguments, which hold floats or bools, and its integer
arguments.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.fx

from tc.compiler.extension import load_runtime as _load_runtime

__all__ = ["estimate", "eager_reason", "node_estimate"]


def _kind(value: torch.Tensor) -> str:
    if value.dtype.is_complex:
        return "c"
    if value.dtype.is_floating_point:
        return "f"
    return "b" if value.dtype == torch.bool else "i"


def _static(value: torch.Tensor) -> bool:
    return all(type(d) is int for d in value.shape)


def _query(name: str, bound: dict[str, Any], result: Any):
    """The arguments of tc._runtime.op_cost for a node, or None when its
    result is not a tensor."""
    if isinstance(result, (list, tuple)) and result:
        result = result[0]
    if not isinstance(result, torch.Tensor) or not _static(result):
        return None
    shapes: dict[str, list[int]] = {"result": [int(d) for d in result.shape]}
    kinds: dict[str, str] = {"result": _kind(result)}
    ints: dict[str, int] = {}

    def add(key: str, value: Any) -> None:
        if isinstance(value, torch.fx.Node):
            value = value.meta.get("val")
        if isinstance(value, torch.Tensor) and _static(value):
            shapes[key] = [int(d) for d in value.shape]
            kinds[key] = _kind(value)
        elif isinstance(value, bool):
            ints[key] = int(value)
        elif isinstance(value, int) and -2**63 <= value < 2**63:
            ints[key] = value

    for key, value in bound.items():
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                add(f"{key}.{i}", item)
        else:
            add(key, value)
    target = "cpu" if result.device.type == "cpu" else "gpu"
    return name, shapes, kinds, ints, target, result.element_size()


def estimate(name: str, bound: dict[str, Any], result: Any):
    """(tc seconds, eager seconds, tc's algorithm, why it is left to eager
    or "", why tc's decomposition cannot take it or "") for a node the
    model knows, else None."""
    query = _query(name, bound, result)
    runtime = _load_runtime()
    if query is None or runtime is None or not hasattr(runtime, "op_cost"):
        return None
    return runtime.op_cost(*query)


def eager_reason(name: str, bound: dict[str, Any], result: Any) -> str:
    """Why the cost model leaves this node to eager ("" when tc keeps it).
    `TC_COST_MODEL=0` (for measuring the model) keeps every node that tc's
    decompositions take, however slow."""
    found = estimate(name, bound, result)
    if not found:
        return ""
    return found[4] if os.environ.get("TC_COST_MODEL") == "0" else found[3]


def node_estimate(node: torch.fx.Node):
    """`estimate` for an ATen node of an FX graph (its arguments bound by
    its schema), or None."""
    if node.op != "call_function" or not isinstance(
            node.target, torch._ops.OpOverload):
        return None
    from tc.importer import qualified_name
    schema = node.target._schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    bound = {a.name: v for a, v in zip(positional, node.args)}
    bound.update(node.kwargs)
    return estimate(qualified_name(node.target), bound, node.meta.get("val"))
