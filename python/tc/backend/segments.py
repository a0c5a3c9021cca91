"""Training graphs around PyTorch's fused attention: tc's autodiff per
segment, the attention in eager.

A transformer's training graph holds one op tc does not compile: PyTorch's
fused scaled-dot-product attention (`_scaled_dot_product_cudnn_attention`
and its flash / memory-efficient siblings), which eager runs as a library
kernel with its own backward. Without this module such a graph goes to
AOTAutograd, whose joint trace and min-cut partition of the whole model
cost more than Dynamo's own trace (a Llama-style decoder's first step on
the H100: Dynamo alone 2.0 s, with AOTAutograd 4.7 s).

Here the forward graph, traced once (`_trace_one_pass`), is cut at the
attention ops into segments: the runs of ops between them, in the graph's
order (`partition.runs_in_order`). Each segment is a training graph of its
own, compiled by tc-autodiff and tc-partition and called through an
`autograd.Function` (`training_graph.TrainingGraph`); the attention ops and the
views around them run in eager, under autograd, between the segments. The
backward is then autograd's chain of tc's backward functions and
PyTorch's attention backward. Identical layers give identical segments,
which the structural cache compiles once.

Only the attention ops may stay in eager: a graph with any other op tc
does not compile, a mutated input or a segment tc cannot compile as a
training graph goes to AOTAutograd as before (None).
"""

from __future__ import annotations

import copy
import dataclasses
import operator
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import compat, logs
from tc.backend import (eager_splits, partition, step_graphs, tracing,
                        training_graph)
from tc.compiler import pools

_fallbacks = logs.channel_logger("fallbacks")

aten = torch.ops.aten

#: Ops that run in eager between segments: differentiable in eager (their
#: backward is PyTorch's), and worth a library kernel.
_EAGER_WITH_AUTOGRAD = tuple(
    getattr(aten, name).default for name in (
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention_for_cpu")
    if hasattr(aten, name))


#: Eager attentions whose query, key and value, parts of one tensor, are
#: split in eager (`eager_splits`), and whose output the next segment reads
#: in place: PyTorch's memory-efficient kernel, whose [batch, length,
#: heads, dim] gradients and output tc otherwise copied (72 and 36 copies
#: a BEiT-base training step). cuDNN's takes its inputs as separate dense
#: tensors better: DeiT-base's training step on the H200 took 1.3 ms
#: longer with its query, key and value split in eager.
_SPLIT_FOR = tuple(
    getattr(aten, name).default
    for name in ("_scaled_dot_product_efficient_attention",)
    if hasattr(aten, name))


def _attention_output_read_in_place(arg: Any) -> bool:
    """Whether segment argument `arg` is the output of an attention of
    `_SPLIT_FOR` (the memory-efficient kernel's, in [batch, length,
    heads, dim] order): the segment reads it in place
    (`training_graph._read_in_place`)."""
    return (isinstance(arg, torch.fx.Node) and arg.target is operator.getitem
            and arg.args[1] == 0 and isinstance(arg.args[0], torch.fx.Node)
            and arg.args[0].target in _SPLIT_FOR)


def _carries_gradient(node: torch.fx.Node,
                      marked: set[torch.fx.Node]) -> bool:
    """Whether op `node`'s value carries a gradient, given which nodes'
    do: a floating-point value computed from one that does (a superset of
    autograd's answer, which is safe)."""
    if not any(a in marked for a in node.all_input_nodes):
        return False
    return training_graph.may_carry_gradient(node.meta.get("val"))


def _output_marks(sub: torch.fx.GraphModule, marks: Sequence[bool]
                  ) -> list[bool]:
    """Which outputs of segment `sub` carry a gradient, given which of its
    inputs do (`marks`)."""
    marked: set[torch.fx.Node] = set()
    flags = iter(marks)
    for node in sub.graph.nodes:
        if node.op == "placeholder":
            if next(flags):
                marked.add(node)
        elif node.op == "call_function" and _carries_gradient(node, marked):
            marked.add(node)
        elif node.op == "output":
            results = node.args[0]
            results = (results if isinstance(results, (tuple, list))
                       else (results,))
            return [r in marked for r in results]
    return []


def compile_segments(gm: torch.fx.GraphModule,
                     example_inputs: Sequence[Any],
                     settings: Any) -> Callable[..., Any] | None:
    """`gm` (a traced training graph) as tc segments around its attention
    ops, or None when it is not such a graph or a segment does not
    compile."""

    if gm.meta.get(tracing.MUTATED_INPUTS):
        return None
    index = next((x.get_device() for x in example_inputs
                  if isinstance(x, torch.Tensor) and x.is_cuda), None)
    stepping = step_graphs.applies(index, settings)
    if stepping:
        # The step graphs hold the memory their replays use; the segments,
        # which run uncaptured only before the capture or beside it, hold
        # none between calls (default mode's buffers).
        settings = dataclasses.replace(settings, reduce_overhead=False)
    support = partition.Support()
    ops = partition.op_nodes(gm.graph)
    eager = [n for n in ops if not support.is_node_supported({}, n)]
    if any(n.target not in _EAGER_WITH_AUTOGRAD for n in eager):
        return None

    work = compat.graph_module(gm, copy.deepcopy(gm.graph))
    constants = _lift_constants(work)
    if eager_splits.rewrite(work.graph, _SPLIT_FOR):
        work.recompile()
    partitions = partition.runs_in_order(work.graph, support)
    for part in partitions:
        # A selection from an eager op's results belongs with that op.
        for node in list(part.nodes):
            if (node.target is operator.getitem
                    and node.args[0] not in part.nodes):
                part.remove_node(node)
        partition.trim(part.nodes)
    partitions = [p for p in partitions if len(p.nodes) > 0]
    if not partitions:
        return None
    in_partition = {n for p in partitions for n in p.nodes}
    eager_ops = [n for n in partition.op_nodes(work.graph)
                 if n not in in_partition]

    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    fused = CapabilityBasedPartitioner(
        work, support, allows_single_node_partition=True
    ).fuse_partitions(partitions)
    # Which values carry a gradient, segment by segment: a segment's
    # output carries one only if it depends on an input that does (an
    # attention mask computed from the inputs must not: the fused
    # attention refuses a mask that requires grad).
    marked: set[torch.fx.Node] = set()
    inputs = iter([*example_inputs, *constants])
    module_marks: dict[torch.fx.Node, list[bool]] = {}
    compiled = []
    for node in fused.graph.nodes:
        if node.op == "placeholder":
            x = next(inputs)
            if (isinstance(x, torch.Tensor) and x.requires_grad
                    and x.is_floating_point()):
                marked.add(node)
        elif node.op == "call_module":
            sub = fused.get_submodule(node.target)
            marks = [isinstance(a, torch.fx.Node) and a in marked
                     for a in node.args]
            outputs = _output_marks(sub, marks)
            module_marks[node] = outputs
            sub_ops = partition.op_nodes(sub.graph)
            # Every segment's compile starts before the first is waited
            # for: the distinct ones compile at once.
            in_place = [_attention_output_read_in_place(a) for a in node.args]
            pending = training_graph.start_split(sub, sub_ops, settings,
                                                 marks, in_place)
            if pending is None or any(
                    a is not None
                    for a in pending.forward_imported.outputs_alias_inputs):
                return None
            compiled.append((node, sub, sub_ops, marks, outputs, pending,
                             in_place))
            if pending.output_structure == "single" and outputs[0]:
                marked.add(node)
        elif node.op == "call_function":
            source = node.args[0] if node.args else None
            if node.target is operator.getitem and source in module_marks:
                if module_marks[source][node.args[1]]:
                    marked.add(node)
            elif _carries_gradient(node, marked):
                marked.add(node)

    for i, (node, sub, sub_ops, marks, outputs, pending,
            in_place) in enumerate(compiled):
        functions = training_graph.compile_split(sub, sub_ops, settings,
                                                 marks, pending=pending,
                                                 in_place=in_place)
        if functions is None:
            return None
        compiled[i] = (node, sub, sub_ops, marks, outputs, functions)
    for node, sub, sub_ops, marks, outputs, functions in compiled:
        # (_TrainingGraph falls back to the segment in eager on its own.)
        setattr(fused, node.target, partition.TcSubgraph(
            training_graph.TrainingGraph(functions, marks, sub, [],
                                         differentiable=outputs),
            sub, node.target))
        tc.counters["subgraphs_compiled"] += 2
        tc.counters["kernels"] += (functions.forward.num_kernels
                                   + functions.backward.num_kernels)
        tc.counters["ops_compiled"] += len(sub_ops)
    for node in eager_ops:
        reason = (
            "one tensor's parts for the attention, split in eager"
            if node.target is eager_splits.split
            else support.reasons.get(node) or (
                "view op feeding only eager code stays a view"
                if partition.is_view(node) else "between tc's segments"))
        _fallbacks.info("eager: %s: %s", partition.describe(node),
                        reason)
    tc.counters["ops_eager"] += len(eager_ops)
    _attention_gradients_like_outputs(fused)
    tc.counters["graphs_compiled"] += 1
    tc.counters["training_graphs"] += 1
    # Should the whole raise at run time (an eager op refusing what a
    # segment gave it), the traced graph runs in eager under autograd from
    # then on, and says so.
    # On CUDA the eager ops between the segments allocate from tc's pool
    # too (tc.compiler.pools): the segments' inputs then stay where the
    # previous step had them, and their CUDA graphs replay.
    if index is None:
        run = lambda *args: fused(*args, *constants)  # noqa: E731
    else:
        def run(*args):
            with pools.allocating_in_pool(index):
                return fused(*args, *constants)
    if stepping:
        # In reduce-overhead mode the chain replays as one CUDA graph for
        # the forward and one for the backward.
        run = step_graphs.StepGraphs(run, gm, index)
    return partition.Guarded(run, gm, "training graph (segments)")


def _attention_gradients_like_outputs(gm: torch.fx.GraphModule) -> None:
    """Makes each eager fused CUDA attention of `gm` (the segments' graph)
    take the gradient of its output laid out as that output (see
    `_call_attention`; the CPU's flash attention takes any layout)."""
    changed = False
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if isinstance(value, (tuple, list)) and value:
            value = value[0]
        if (node.op == "call_function" and node.target in _EAGER_WITH_AUTOGRAD
                and isinstance(value, torch.Tensor) and value.is_cuda):
            node.args = (node.target, *node.args)
            node.target = _call_attention
            changed = True
    if changed:
        gm.recompile()


def _call_attention(op: Any, *args: Any, **kwargs: Any) -> Any:
    """Fused attention `op`, whose backward receives its output's gradient
    with the output's strides, as eager's autograd hands it over.

    tc's backward of the segment that reads the attention's output returns
    that gradient in the layout the trace gave the segment's input, which
    need not be the output's own; PyTorch passes a gradient of other
    strides to cuDNN as it is. On the H200 (torch 2.11, cuDNN 9.19)
    RoBERTa as a causal LM with its mask as `is_causal` (two layers, batch
    32 x 512) then got gradients 0.26 off float32's (relative, over all
    parameters; eager's: 0.006) with the right loss; with this copy, where
    the strides differ, 0.006."""
    results = op(*args, **kwargs)
    output = results[0]
    if output.requires_grad:
        strides = output.stride()
        output.register_hook(
            lambda grad: grad if grad.stride() == strides
            else torch.empty_strided(grad.shape, strides, dtype=grad.dtype,
                                     device=grad.device).copy_(grad))
    return results


def _lift_constants(gm: torch.fx.GraphModule) -> list[torch.Tensor]:
    """Makes each `get_attr` of `gm` (a tensor constant the trace kept) a
    trailing placeholder, as tc's training graphs take every tensor as an
    input; returns the constants, which the caller passes after the
    graph's own inputs."""
    graph = gm.graph
    last = [n for n in graph.nodes if n.op == "placeholder"][-1]
    constants = []
    for node in [n for n in graph.nodes if n.op == "get_attr"]:
        value = getattr(gm, node.target)
        with graph.inserting_after(last):
            lifted = graph.placeholder(f"constant_{len(constants)}")
        lifted.meta = dict(node.meta)
        lifted.meta.setdefault("val", value)
        node.replace_all_uses_with(lifted)
        graph.erase_node(node)
        constants.append(value)
        last = lifted
    gm.recompile()
    return constants
