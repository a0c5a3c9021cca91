"""Graphs with symbolic shapes: one compile per concrete shape (`PerShape`),
or one for every batch size (`tc.backend.symbolic`) or row count
(`tc.backend.symbolic_rows`) where tc can."""

from __future__ import annotations

import copy
import operator
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import distributed, logs
from tc.backend import common, pipeline, symbolic, symbolic_rows

_fallbacks = logs.channel_logger("fallbacks")
_recompiles = logs.channel_logger("recompiles")


class PerShape:
    """A graph with symbolic shapes (`dynamic=True`, or Dynamo's automatic
    dynamic after a size changed), compiled by tc once per concrete shape.

    tc's code has static shapes, so each new combination of input shapes
    (and symbolic scalars' values) is traced and compiled when it first
    arrives, and kept: Dynamo calls the backend once, and no size change
    makes the graph fall back to eager. After MAX_SHAPES compilations, new
    shapes run in eager (with a log line; each such call counted in
    `tc.counters["shape_cap_fallbacks"]`).
    """

    #: The most shapes one graph is compiled for.
    MAX_SHAPES = 16

    def __init__(self, gm: torch.fx.GraphModule, settings: common.Settings):
        self.gm = gm
        self.settings = settings
        self.compiled: dict[tuple, Callable] = {}
        self.logged_limit = False
        # Inputs that are numbers passed as 0-d tensors (.item() only):
        # specialized to their values like the sizes.
        self.items = symbolic.item_placeholders(gm)
        # One compile for every batch size (docs/DynamicShapes.md), per
        # value of the graph's other sizes; None where it failed. Symbolic
        # sizes in several leading dimensions (batch and sequence length)
        # are tried as rows first (symbolic_rows.SymbolicRows), once.
        # A graph with collectives: not compiled whole (a run-time failure
        # would rerun it in eager, collectives included), per shape only.
        whole = not distributed.has_collectives(gm.graph)
        self.rows = symbolic_rows.SymbolicRows.of(gm) if whole else None
        self.rows_compiled: dict[tuple, Callable] = {}
        self.batch = symbolic.SymbolicBatch.of(gm) if whole else None
        self.symbolic: dict[tuple, Callable | None] = {}
        self.varying = sorted(set(_varying_inputs(gm)) | self.items)

    def _key(self, args: Sequence[Any]) -> tuple:
        """What tells one specialization from another: the inputs whose
        sizes vary (`varying`); Dynamo's guards fix the others' shapes,
        dtypes and devices (a specialization's own input checks catch a
        caller that bypasses them). A decoder's step has ~200 inputs, its
        weights among them: keyed in full, the key took 0.4 ms a call."""
        items = self.items
        return (torch.is_grad_enabled(), *(
            ("item", a.item()) if i in items else
            (tuple(a.shape), a.stride(), a.dtype, a.device, a.requires_grad)
            if isinstance(a, torch.Tensor) else (type(a), a)
            for i, a in ((i, args[i]) for i in self.varying)))

    def _specialize(self, args: Sequence[Any]) -> Callable:
        """The graph compiled for `args`: its non-tensor inputs (the
        symbolic sizes' values) become constants, and the tensors' shapes
        are traced as they are."""
        graph = copy.deepcopy(self.gm.graph)
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        tensors = [i for i, a in enumerate(args)
                   if isinstance(a, torch.Tensor) and i not in self.items]
        for i, (node, value) in enumerate(zip(placeholders, args)):
            if i in self.items:
                for user in list(node.users):
                    user.replace_all_uses_with(value.item())
                    graph.erase_node(user)
                graph.erase_node(node)
                continue
            if isinstance(value, torch.Tensor):
                continue
            for user in list(node.users):
                user.args, user.kwargs = torch.fx.node.map_arg(
                    (user.args, user.kwargs),
                    lambda n: value if n is node else n)
            graph.erase_node(node)
        fixed = torch.fx.GraphModule(self.gm, graph)
        run = pipeline.to_aten(fixed, [args[i]
                               for i in tensors], self.settings)
        if len(tensors) == len(args):
            return run
        if not tensors:
            return lambda *given: run()
        pick = operator.itemgetter(*tensors)
        if len(tensors) == 1:
            return lambda *given: run(pick(given))
        return lambda *given: run(*pick(given))

    def __call__(self, *args: Any) -> Any:
        if self.rows is not None:
            key = self.rows.key(args)
            if key is not None:
                run = self.rows_compiled.get(key)
                if run is None:
                    run = self.rows.compile(args, self.settings)
                    if run is None:
                        self.rows = None  # not row-wise: the other paths
                    else:
                        self.rows_compiled[key] = run
                if run is not None:
                    return run(*args)
        if self.batch is not None:
            key = self.batch.key(args)
            if key is not None:
                if key not in self.symbolic:
                    self.symbolic[key] = self.batch.compile(args,
                                                            self.settings)
                run = self.symbolic[key]
                if run is not None:
                    return run(*args)
        key = self._key(args)
        run = self.compiled.get(key)
        if run is None:
            if len(self.compiled) >= self.MAX_SHAPES:
                tc.counters["shape_cap_fallbacks"] += 1
                _recompiles.info("graph runs in eager for input shapes %s: "
                                 "tc compiled it for %d shapes already",
                                 _shapes(args), self.MAX_SHAPES)
                if not self.logged_limit:
                    self.logged_limit = True
                    _fallbacks.info("graph runs in eager for new shapes: "
                                    "tc compiled it for %d shapes already",
                                    self.MAX_SHAPES)
                return self.gm.forward(*args)
            tc.counters["shape_specializations"] += 1
            _recompiles.info("graph compiled again for input shapes %s "
                             "(shape %d of at most %d; its symbolic sizes "
                             "are not compiled symbolically)", _shapes(args),
                             len(self.compiled) + 1, self.MAX_SHAPES)
            try:
                run = self._specialize(args)
            except Exception as error:  # never break the user's program
                common.internal_error("compiling a graph for one shape", error)
                run = self.gm.forward
            self.compiled[key] = run
        return run(*args)


def _varying_inputs(gm: torch.fx.GraphModule) -> list[int]:
    """The positions of `gm`'s placeholders whose values can differ from
    call to call in more than their data: numbers (symbolic scalars) and
    tensors with a symbolic size or stride, and any placeholder without
    an example value."""
    varying = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        value = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(value, torch.Tensor) and all(
                isinstance(s, int) for s in (*value.shape, *value.stride())):
            continue
        varying.append(i)
    return varying


def _shapes(args: Sequence[Any]) -> str:
    """The tensor inputs' shapes and the numbers, for a log line."""
    return ", ".join(str(list(a.shape)) if isinstance(a, torch.Tensor)
                     else repr(a) for a in args)
