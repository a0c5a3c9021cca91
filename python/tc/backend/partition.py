"""Which nodes tc compiles and how they group: the supported nodes' runs
in the graph's order, each compiled as a subgraph, the rest left to eager;
and the guard that reruns a graph in eager when its compiled code fails."""

from __future__ import annotations

import copy
import logging
import operator
from typing import Any, Callable

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import (CapabilityBasedPartitioner,
                                               Partition)
from torch.fx.passes.operator_support import OperatorSupportBase

import tc
from tc import attention, compat, compiler, layouts, logs
from tc.compiler import CompileError
from tc.importer import Unsupported, qualified_name, user_location
from tc.support import VIEW_OPS, is_supported
from tc.backend import common

logger = logging.getLogger("tc")
_fallbacks = logs.channel_logger("fallbacks")


class Support(OperatorSupportBase):
    """Operator support for the partitioner, remembering why not."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: dict[torch.fx.Node, str] = {}

    def is_node_supported(self, submodules: Any,
                          node: torch.fx.Node) -> bool:
        ok, reason = is_supported(node)
        if not ok:
            self.reasons[node] = reason
        return ok


def is_view(node: torch.fx.Node) -> bool:
    return ((isinstance(node.target, torch._ops.OpOverload)
             and qualified_name(node.target) in VIEW_OPS)
            or node.meta.get(attention.EAGER_VIEW, False))


def _is_compute(node: torch.fx.Node) -> bool:
    return (node.op == "call_function" and node.target is not operator.getitem
            and not is_view(node))


#: Ops returning views of their first argument's elements, one or several
#: (read through getitem), that `trim(..., slices=True)` leaves to eager.
_SLICES = {"aten::slice.Tensor", "aten::select.int", "aten::narrow",
           "aten::split.Tensor", "aten::split_with_sizes", "aten::unbind.int"}


def _is_slice(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        node = node.args[0]
        if not isinstance(node, torch.fx.Node) or node.op != "call_function":
            return False
    return (isinstance(node.target, torch._ops.OpOverload)
            and qualified_name(node.target) in _SLICES)


def _reaches_output(node: torch.fx.Node) -> bool:
    """Whether `node` is a graph output, directly or through views."""
    stack, seen = [node], set()
    while stack:
        node = stack.pop()
        for user in node.users:
            if user.op == "output":
                return True
            if user not in seen and (is_view(user) or _is_slice(user)):
                seen.add(user)
                stack.append(user)
    return False


def trim(nodes: Any, slices: bool = False) -> None:
    """Leaves views that only feed eager code (e.g. returned views) to eager.

    Eager keeps them views instead of copies; a partition left with no
    compute op is emptied. With `slices`, slices and splits that only feed
    eager code (a fused projection's q, k and v on their way to eager
    attention) go too, so the partition returns the tensor they slice
    instead of a copy of each slice; not those that are the graph's
    outputs (their views of one tensor would alias each other, where the
    partition's copies did not).
    """
    members = set(nodes)

    def leaves(node: torch.fx.Node) -> list[torch.fx.Node]:
        """The nodes that go with `node` (a split goes with all its
        pieces or stays with all: the partition cannot return the split
        itself); none when `node` stays."""
        group = [node]
        if node.target is operator.getitem and _is_slice(node):
            group = list(node.args[0].users)
        if any(u in members and u not in group
               for n in group for u in n.users):
            return []
        if is_view(node) or (slices and _is_slice(node) and not any(
                _reaches_output(n) for n in group)):
            return group
        return []

    changed = True
    while changed:
        changed = False
        for node in list(members):
            if node not in members:
                continue
            for gone in leaves(node):
                members.discard(gone)
                changed = True
    if not any(_is_compute(n) and not (slices and _is_slice(n))
               for n in members):
        members.clear()
    for node in list(nodes):
        if node not in members:
            if isinstance(nodes, dict):
                del nodes[node]
            else:
                nodes.discard(node)


def fused_subgraphs(fused: torch.fx.GraphModule
                    ) -> list[tuple[torch.fx.Node, torch.fx.GraphModule]]:
    """The partitioner's subgraphs in `fused`, with the nodes calling
    them."""
    found = []
    for node in fused.graph.nodes:
        if node.op == "call_module":
            sub = fused.get_submodule(node.target)
            if isinstance(sub, torch.fx.GraphModule):
                found.append((node, sub))
    return found


def op_nodes(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """The ATen op nodes of a graph (getitem selections excluded)."""
    return [n for n in graph.nodes
            if n.op == "call_function" and n.target is not operator.getitem]


def describe(node: torch.fx.Node) -> str:
    target = (qualified_name(node.target)
              if isinstance(node.target, torch._ops.OpOverload)
              else getattr(node.target, "__name__", str(node.target)))
    where = user_location(node)
    suffix = f", {where[0]}:{where[1]}" if where else ""
    return f"{target} (node '{node.name}'{suffix})"


class Guarded:
    """A graph compiled by tc, with its eager graph to fall back on.

    Should the compiled code raise at run time, the graph switches to eager
    for good (and says so).
    """

    def __init__(self, compiled: Callable[..., Any],
                 eager: Callable[..., Any], name: str):
        self.compiled = compiled
        self.eager = eager
        self.name = name
        self.failed = False

    def read_flags_early(self, outputs: list[int]) -> bool:
        """The compiled function's `read_flags_early`, where it has one."""
        read = getattr(self.compiled, "read_flags_early", None)
        return read is not None and read(outputs)

    def __call__(self, *args: Any) -> Any:
        if not self.failed:
            try:
                return self.compiled(*args)
            except Exception as error:  # never break the user's program
                if common.is_input_error(error):
                    raise
                self.failed = True
                common.runtime_fallback(
                    f"compiled subgraph {self.name}", error)
        return self.eager(*args)


class TcSubgraph(torch.nn.Module):
    """A subgraph compiled by tc (a compiled function, or a training
    segment's `training_graph.TrainingGraph`), in place of the partitioner's
    submodule."""

    def __init__(self, compiled: Callable[..., Any],
                 eager: torch.fx.GraphModule, name: str):
        super().__init__()
        self.eager = eager
        self.guarded = Guarded(compiled, eager, name)

    def forward(self, *args: Any) -> Any:
        return self.guarded(*args)


def _all_supported(gm: torch.fx.GraphModule) -> bool:
    """Whether tc compiles every op of `gm` as one graph: each op supported,
    some compute, and no view left to eager (one feeding no op: `trim`)."""
    return why_not_whole(gm) is None


def why_not_whole(gm: torch.fx.GraphModule) -> str | None:
    """Why tc cannot compile `gm` as one graph (one line), or None when it
    can (`_all_supported`)."""
    ops = op_nodes(gm.graph)
    members = set(ops)
    if not any(_is_compute(n) for n in ops):
        return "the graph computes nothing"
    for node in ops:
        supported, why = is_supported(node)
        if not supported:
            return f"{describe(node)}: {why}"
        if is_view(node) and not any(u in members for u in node.users):
            return f"{describe(node)}: a view that only the caller reads"
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    leaves: list[Any] = []
    torch.fx.node.map_aggregate(output.args[0], leaves.append)
    if any(not isinstance(value, torch.fx.Node) for value in leaves):
        # AOTAutograd's backward returns None for an input without a
        # gradient: the partitioner's graph returns it around tc's code.
        return "an output is not a tensor"
    return None


def partition_and_compile(gm: torch.fx.GraphModule,
                          settings: common.Settings) -> Callable:
    if not op_nodes(gm.graph):
        # Nothing to compute (Dynamo makes an output that is a view of an
        # input itself, `x.T`): nothing runs in eager either.
        tc.counters["graphs_compiled"] += 1
        return gm
    # The common case needs no partitioner: one graph, all compiled, called
    # without the partitioned module around it (less to build and to run).
    if _all_supported(gm):
        return _compile_whole_graph(gm, settings)

    work = compat.graph_module(gm, copy.deepcopy(gm.graph))
    support = Support()
    partitioner = CapabilityBasedPartitioner(
        work, support, allows_single_node_partition=True)
    partitions = runs_in_order(work.graph, support)
    for partition in partitions:
        trim(partition.nodes, slices=True)
    partitions = [p for p in partitions if len(p.nodes) > 0]

    in_partition = {n for p in partitions for n in p.nodes}
    eager_ops = 0
    for node in op_nodes(work.graph):
        if node in in_partition:
            continue
        eager_ops += 1
        reason = support.reasons.get(node)
        if reason is None:
            reason = ("view op feeding only eager code stays a view"
                      if is_view(node) else "not grouped into a subgraph")
        _fallbacks.info("eager: %s: %s", describe(node), reason)

    compiled_any = False
    if partitions:
        fused = partitioner.fuse_partitions(partitions)
        # On a GPU every subgraph's compile starts before the first is
        # waited for: the distinct ones compile at once. (The CPU's
        # compiles use every core already.)
        at_once = not settings.autotune and _on_cuda(gm)
        parts = [(node, sub, op_nodes(sub.graph),
                  start_subgraph(sub, settings, True) if at_once else None)
                 for node, sub in fused_subgraphs(fused)]
        for node, sub, ops, started in parts:
            compiled = compile_subgraph(sub, node.target, ops, settings,
                                        compile=started)
            if compiled is None:
                eager_ops += len(ops)
                continue
            setattr(fused, node.target,
                    TcSubgraph(compiled, sub, node.target))
            compiled_any = True
            tc.counters["subgraphs_compiled"] += 1
            tc.counters["kernels"] += compiled.num_kernels
            tc.counters["ops_compiled"] += len(ops)
    tc.counters["ops_eager"] += eager_ops
    if not compiled_any:
        tc.counters["fallback_graphs"] += 1
        return gm
    tc.counters["graphs_compiled"] += 1
    return fused


def runs_in_order(graph: torch.fx.Graph, support: "Support"
                  ) -> list[Partition]:
    """The subgraphs of a graph that tc compiles in parts: the runs of
    supported ops between eager ones, in the graph's order. Runs of one
    order never form a cycle, and each value is computed where the graph
    computes it. The capability partitioner merges compute into any
    neighbour it does not depend on: in a backward that AOTAutograd's
    partitioner gave recomputed activations, every layer's recomputation
    went into the first subgraph, all held until their layers' turn
    (GPT-2's training step: 2 GB more at its peak on the H100); in a graph
    with collectives (`schedule_collectives` issued each early and waits
    late), compute that does not need a collective's result would run
    before it is issued or after it is waited for, not while it is in
    flight."""
    runs: list[Partition] = []
    current: list[torch.fx.Node] = []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if support.is_node_supported({}, node):
            current.append(node)
        elif current:
            runs.append(Partition(id=len(runs), nodes=current))
            current = []
    if current:
        runs.append(Partition(id=len(runs), nodes=current))
    return runs


def _compile_whole_graph(gm: torch.fx.GraphModule,
                         settings: common.Settings) -> Callable:
    """Compiles all of `gm` as one tc graph, or (after logging) leaves it
    to eager."""
    ops = op_nodes(gm.graph)
    compiled = compile_subgraph(gm, "graph", ops, settings)
    if compiled is None:
        tc.counters["ops_eager"] += len(ops)
        tc.counters["fallback_graphs"] += 1
        return gm
    tc.counters["subgraphs_compiled"] += 1
    tc.counters["kernels"] += compiled.num_kernels
    tc.counters["ops_compiled"] += len(ops)
    tc.counters["graphs_compiled"] += 1
    return Guarded(compiled, gm, "graph")


def _on_cuda(gm: torch.fx.GraphModule) -> bool:
    """Whether `gm` computes on a CUDA device (not a ROCm one)."""
    try:
        device = compiler.graph_device(gm)
    except Exception:  # mixed devices: each subgraph says so itself
        return False
    return device.type == "cuda" and torch.version.hip is None


def start_subgraph(sub: torch.fx.GraphModule, settings: common.Settings,
                   at_once: bool) -> Callable[[], Any]:
    """What `compile_subgraph(sub, ...)` compiles `sub` with: its inputs
    and outputs laid out as `layouts` reads and writes them in place, and
    with `at_once` its native compile started now (`compiler.start_graph`;
    an error in the import is raised by the call, where compile_subgraph
    logs it), else compiled when called."""
    try:
        work, permutations = layouts.read_in_place(sub)
        work, written = layouts.write_in_place(work)
        if at_once:
            wait = compiler.start_graph(work,
                                        dump_stages=settings.dump_stages)
        else:
            def wait() -> Any:
                return compiler.compile_graph(
                    work, dump_stages=settings.dump_stages)
    except Exception as error:  # compile_subgraph logs it
        return common.raising(error)

    def finish() -> Any:
        compiled = wait()
        if any(p is not None for p in permutations):
            compiled.read_inputs_permuted(permutations)
        if any(p is not None for p in written):
            compiled.write_outputs_permuted(written)
        return compiled
    return finish


def compile_subgraph(sub: torch.fx.GraphModule, name: str,
                     ops: list[torch.fx.Node], settings: common.Settings,
                     compile: Callable[[], Any] | None = None) -> Any:
    """Compiles one subgraph (with `compile` when given, else
    `compiler.compile_graph`); None (after logging) if tc cannot."""
    try:
        if compile is not None:
            compiled = compile()
        elif settings.autotune:
            compiled = compiler.compile_graph(
                sub, dump_stages=settings.dump_stages, autotune=True)
        else:
            compiled = start_subgraph(sub, settings, at_once=False)()
        if settings.reduce_overhead:
            functions = ([compiled.forward, compiled.backward]
                         if isinstance(compiled, compiler.TrainingFunctions)
                         else [compiled])
            for function in functions:
                function.stage_inputs()
        return compiled
    except CompileError as error:
        first_line = (error.message.strip().splitlines() or ["?"])[0]
        command = error.command
        if not error.native_missing:
            logger.warning(
                "tc: subgraph %s (%d ops) runs in eager: %s%s", name,
                len(ops), first_line,
                f"; reproduce with: {command}" if command else "")
        elif not common.warned_native_missing:
            common.warned_native_missing.append(True)
            logger.warning("tc: %s; every graph runs in eager", first_line)
        tc.counters["compile_failures"] += 1
        _fallbacks.info(
            "subgraph %s failed to compile:\n%s\nreproduce with: %s\n"
            "IR:\n%s", name, error.message, command or "(IR not written)",
            error.ir or "(none)")
        reason = f"in subgraph {name}, which tc failed to compile"
    except Unsupported as error:
        logger.warning("tc: subgraph %s (%d ops) runs in eager: cannot "
                       "import it: %s", name, len(ops), error)
        reason = f"in subgraph {name}, which tc cannot import: {error}"
    except Exception as error:  # tc must never break the user's program
        tc.counters["compile_failures"] += 1
        logger.warning("tc: internal error compiling subgraph %s; it runs "
                       "in eager: %s: %s", name, type(error).__name__, error)
        _fallbacks.info("internal error compiling subgraph %s", name,
                        exc_info=error)
        reason = f"in subgraph {name}: internal error in tc"
    for node in ops:
        _fallbacks.info("eager: %s: %s", describe(node), reason)
    return None
