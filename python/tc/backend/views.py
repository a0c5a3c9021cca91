"""Graphs that return views of their inputs or intermediates: compiled
without the views, which are made again on the outputs as eager makes
them; and the boxed calling convention AOTAutograd uses."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Callable

import torch
import torch.fx

import tc
from tc.backend import common, partition, tracing


def make_boxed(fn: Callable) -> Callable:
    """`fn` in AOTAutograd's boxed calling convention: one list argument,
    which the callee owns (AOTAutograd hands the backward its saved
    activations this way and keeps no other reference). A graph module
    (a partitioned graph, or one left to eager) reads its inputs out of the
    list and empties it, so that each input is freed after its last use
    in the graph: a backward then lets go of each saved activation as it
    goes, as Inductor's does, instead of holding them all to its end. A
    graph with output views (`OutputViews`) passes the list on to its
    core."""
    if isinstance(fn, torch.fx.GraphModule):
        taking = _taking_list(fn)

        def boxed(args: list[Any]) -> Any:
            return taking(args)
    elif isinstance(fn, OutputViews):
        boxed = fn.boxed()
    else:
        def boxed(args: list[Any]) -> Any:
            return fn(*args)
    boxed._boxed_call = True  # type: ignore[attr-defined]
    return boxed


def _clear_list(values: list[Any]) -> None:
    values.clear()


def _taking_list(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` as a module taking its inputs as one list, which it empties
    after reading them (FX's generated code drops each value after its
    last use)."""
    graph = torch.fx.Graph()
    values = graph.placeholder("args")
    given: dict[torch.fx.Node, torch.fx.Node] = {}
    for index, node in enumerate(n for n in gm.graph.nodes
                                 if n.op == "placeholder"):
        given[node] = graph.call_function(operator.getitem, (values, index))
        given[node].meta = dict(node.meta)
    graph.call_function(_clear_list, (values,))
    graph.output(graph.graph_copy(gm.graph, given))
    return torch.fx.GraphModule(gm, graph)


@dataclasses.dataclass
class _ViewSplit:
    """An ATen graph cut before the views that produce its outputs."""
    #: The graph without those views; it returns a tuple of `core_outputs`.
    core: torch.fx.GraphModule
    #: The original graph's nodes that `core` returns, in its order.
    core_outputs: list[torch.fx.Node]
    placeholders: list[torch.fx.Node]
    #: The views (and `getitem`s of multi-result views), in graph order.
    views: list[torch.fx.Node]
    #: The original output structure, of original nodes.
    output: Any


def is_output_view(node: torch.fx.Node) -> bool:
    """Whether `node` is a view of one tensor (its first argument) that
    can be replayed on a value computed elsewhere."""
    if (node.op != "call_function" or not tracing.returns_alias(node)
            or not all(r.alias_info is not None
                       for r in node.target._schema.returns)):
        return False
    if not node.args or not isinstance(node.args[0], torch.fx.Node):
        return False
    others: list[torch.fx.Node] = []
    torch.fx.node.map_arg((node.args[1:], node.kwargs), others.append)
    return not others


def split_output_views(gm: torch.fx.GraphModule) -> _ViewSplit | None:
    """Splits off the views that only produce `gm`'s outputs, or None when
    there are none.

    Eager returns such an output as a view: of an input (writing through
    it writes the input) or of an intermediate (with the view's strides).
    Compiled into a kernel, the view would be a copy; instead, tc compiles
    the rest of the graph, and the views are applied to its results and the
    inputs at run time (`OutputViews`): metadata only, no kernel.
    """
    graph = gm.graph
    output = next(n for n in graph.nodes if n.op == "output")
    views: set[torch.fx.Node] = set()
    for node in reversed(list(graph.nodes)):
        if not node.users or not all(u is output or u in views
                                     for u in node.users):
            continue
        if node.op == "call_function" and node.target is operator.getitem:
            source = node.args[0]
            if isinstance(source, torch.fx.Node) and is_output_view(source):
                views.add(node)
        elif is_output_view(node):
            views.add(node)
    # A getitem of a view some compute also reads is a result of the core.
    views -= {n for n in views if n.target is operator.getitem
              and n.args[0] not in views}
    if not views:
        return None

    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    core_outputs: list[torch.fx.Node] = []

    def need(node: torch.fx.Node) -> None:
        if (node not in views and node.op != "placeholder"
                and node not in core_outputs):
            core_outputs.append(node)

    for node in views:
        torch.fx.node.map_arg((node.args, node.kwargs), need)
    torch.fx.node.map_arg(output.args[0], need)

    core_graph = torch.fx.Graph()
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    core_graph.graph_copy(graph, mapping)
    core_graph.output(tuple(mapping[n] for n in core_outputs))
    for node in reversed(list(graph.nodes)):
        if node in views:
            core_graph.erase_node(mapping[node])
    core = torch.fx.GraphModule(gm, core_graph)
    ordered = [n for n in graph.nodes if n in views]
    return _ViewSplit(core, core_outputs, placeholders, ordered,
                      output.args[0])


class OutputViews:
    """Runs a split graph: its core (compiled by tc, or None when the graph
    is only views), then the views on the core's results and the inputs."""

    def __init__(self, split: _ViewSplit, core: Callable | None):
        self.split = split
        self.run_core = core
        # The inputs that the views or the output read themselves.
        read: set[torch.fx.Node] = set()
        for node in split.views:
            read.update(node.all_input_nodes)
        torch.fx.node.map_arg(split.output, read.add)
        self._read = [p in read for p in split.placeholders]

    def __call__(self, *args: Any) -> Any:
        env: dict[torch.fx.Node, Any] = dict(zip(self.split.placeholders,
                                                 args))
        if self.run_core is not None:
            env.update(zip(self.split.core_outputs, self.run_core(*args)))
        return self._views(env)

    def read_flags_early(self, outputs: list[int]) -> bool:
        """The core's `read_flags_early` for `outputs` (places in the
        graph's outputs: index checks' flags, which the core computes):
        a graph returning views (an LM head's logits) reads its flags as
        early as one without."""
        read = getattr(self.run_core, "read_flags_early", None)
        if read is None or not isinstance(self.split.output, (tuple, list)):
            return False
        places = []
        for i in outputs:
            node = self.split.output[i] if 0 <= i < len(
                self.split.output) else None
            at = [j for j, n in enumerate(self.split.core_outputs)
                  if n is node]
            if not at:
                return False
            places.append(at[0])
        return read(places)

    def boxed(self) -> Callable[[list[Any]], Any]:
        """The call in AOTAutograd's boxed convention (`make_boxed`): the
        core takes the list and empties it, and only the inputs that the
        views read stay referenced, so a backward with output views frees
        each saved activation after its last use too."""
        core = (make_boxed(self.run_core) if self.run_core is not None
                else _clear_list)

        def call(args: list[Any]) -> Any:
            env: dict[torch.fx.Node, Any] = {
                p: a for p, a, read in zip(self.split.placeholders, args,
                                           self._read) if read}
            results = core(args)
            if self.run_core is not None:
                env.update(zip(self.split.core_outputs, results))
            return self._views(env)
        return call

    def _views(self, env: dict[torch.fx.Node, Any]) -> Any:
        for node in self.split.views:
            node_args, node_kwargs = torch.fx.node.map_arg(
                (node.args, node.kwargs), env.__getitem__)
            env[node] = node.target(*node_args, **node_kwargs)
        return torch.fx.node.map_arg(self.split.output, env.__getitem__)


def compile_with_output_views(split: _ViewSplit,
                              settings: common.Settings) -> Callable:
    """`OutputViews` for `split`, its core compiled as any graph is."""
    count = sum(1 for n in split.views if n.target is not operator.getitem)
    if not split.core_outputs:
        # Only views: nothing to compute.
        tc.counters["graphs_compiled"] += 1
        tc.counters["ops_compiled"] += count
        return OutputViews(split, None)
    compiled_before = tc.counters["graphs_compiled"]
    core = partition.partition_and_compile(split.core, settings)
    if tc.counters["graphs_compiled"] > compiled_before:
        tc.counters["ops_compiled"] += count
    else:
        tc.counters["ops_eager"] += count
    return OutputViews(split, core)
