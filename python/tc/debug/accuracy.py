"""When a compiled result is wrong: eager's result at torch's tolerance,
and the float64 truth.

A result is wrong when it leaves eager's at torch's tolerance for its
dtype and is also further from the float64 truth than eager's own result:
the graph run by eager with its floats in float64 (inputs, the tensors it
holds, dtype arguments), where its ops take float64; else eager's result
alone decides. Float32 ops summed in another order round differently, not
wrongly: a result no more than FLOAT64_SLACK times as far from float64 as
eager's is right (the rule of Inductor's accuracy minifier, for want of
which accuracy repros of reordered sums fail, pytorch#113180). Bisection
(tc.debug.bisect) and the minifier's accuracy check (tc.debug.mismatches,
TC_REPRO=accuracy) judge by it.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.fx

__all__ = ["FLOAT64_SLACK", "differences", "float64_graph", "float64_inputs",
           "float64_reference", "largest"]

#: How much further from the float64 truth than eager's own result a
#: result may be and still be right (Inductor's accuracy check uses 2).
FLOAT64_SLACK = 2.0


def _outputs(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference (NaN against a number: inf)."""
    diff = (a.double() - b.double()).abs().nan_to_num(float("inf"))
    return float(diff.max()) if diff.numel() else 0.0


def _output_difference(a: Any, e: Any, r: Any) -> float | None:
    """None when output `a` is right against eager's `e` (and float64's
    `r`, or None), else its largest difference from `e`."""
    if not isinstance(e, torch.Tensor):
        return None if a == e else float("inf")
    if not isinstance(a, torch.Tensor) or a.shape != e.shape \
            or a.dtype != e.dtype:
        return float("inf")
    try:
        torch.testing.assert_close(a, e, equal_nan=True)
        return None
    except AssertionError:
        pass
    if isinstance(r, torch.Tensor) and r.shape == e.shape \
            and e.is_floating_point():
        # Both rounded: right when no further from the truth than eager.
        if _distance(a, r) <= FLOAT64_SLACK * _distance(e, r):
            return None
    return _distance(a, e)


def differences(actual: Any, expected: Any, expected64: Any = None
                ) -> list[float | None] | None:
    """None when `actual` is `expected` (eager's result) at torch's
    tolerance or, with `expected64` (eager's in float64), no further from
    it than FLOAT64_SLACK times eager's own distance; else each output's
    largest absolute difference from eager's (None for a right one; inf
    for a shape or dtype mismatch)."""
    actual, expected = _outputs(actual), _outputs(expected)
    if len(actual) != len(expected):
        return [float("inf")]
    wide = _outputs(expected64) if expected64 is not None else []
    if len(wide) != len(expected):
        wide = [None] * len(expected)
    differences = [_output_difference(a, e, r)
                   for a, e, r in zip(actual, expected, wide)]
    return None if all(d is None for d in differences) else differences


def largest(differences: list[float | None]) -> float:
    return max((d for d in differences if d is not None), default=0.0)


_LOW_FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def float64_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` with its floats in float64: the tensors it holds and
    its dtype arguments (its inputs are widened by `float64_inputs`)."""
    import copy

    def widen(value: Any) -> Any:
        return torch.float64 if value in _LOW_FLOATS else value

    graph = copy.deepcopy(gm)
    for node in graph.graph.nodes:
        node.args = torch.fx.node.map_aggregate(node.args, widen)
        node.kwargs = torch.fx.node.map_aggregate(node.kwargs, widen)
        if node.op == "get_attr":
            owner, _, name = node.target.rpartition(".")
            module = graph.get_submodule(owner) if owner else graph
            value = getattr(module, name)
            if isinstance(value, torch.Tensor) \
                    and value.dtype in _LOW_FLOATS:
                wide = value.detach().double()
                if isinstance(value, torch.nn.Parameter):
                    wide = torch.nn.Parameter(wide, value.requires_grad)
                setattr(module, name, wide)
    graph.recompile()
    return graph


def float64_inputs(inputs: Sequence[Any]) -> list[Any]:
    """`inputs` with their low-precision floats in float64 (a tensor that
    requires grad gives a float64 leaf that requires grad)."""
    return [v.detach().double().requires_grad_(v.requires_grad)
            if isinstance(v, torch.Tensor) and v.dtype in _LOW_FLOATS
            else v for v in inputs]


def float64_reference(gm: torch.fx.GraphModule, inputs: Sequence[Any]
                      ) -> Any:
    """Eager's result of `gm` with its floats in float64 (inputs, tensor
    attributes, dtype arguments); None where an op does not take
    float64."""
    try:
        graph = float64_graph(gm)
        with torch.no_grad():
            return graph(*float64_inputs(inputs))
    except Exception:  # an op without float64: eager's result decides
        return None
