"""Training graphs: compiled whole by tc's own autodiff, in segments
around ops tc leaves to eager (`tc.backend.segments`), or not at all."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import logs
from tc.backend import (checks, common, partition, segments, tracing,
                        training_graph)

_fallbacks = logs.channel_logger("fallbacks")


def compile_training(gm: torch.fx.GraphModule,
                     example_inputs: Sequence[Any],
                     settings: common.Settings) -> Callable | None:
    """A training graph compiled with tc's autodiff, or None (after a log
    line) for AOTAutograd to take.

    tc-autodiff makes the joint forward + backward graph; tc-partition
    splits it into a forward that also returns what the backward needs and
    a backward that recomputes the rest (cheap pointwise work) from that,
    choosing by a min-cut over bytes as AOTAutograd's rematerializing
    partitioner does. `loss.backward()` then runs tc kernels only. A graph
    whose only ops tc does not compile are PyTorch's fused attention is
    compiled in segments around them (`tc.segments`); graphs with another
    op tc cannot compile, mutations or outputs that alias inputs go to
    AOTAutograd.
    """
    checked = checks.hoist_error_checks(gm)
    if checked is not None:
        # Out-of-range indices and error checks: their flags are extra
        # outputs (no gradient), checked after the forward.
        runner = compile_training(checked.graph, example_inputs, settings)
        return None if runner is None else checks.HostChecks(runner, checked)
    why = partition.why_not_whole(gm)
    nodes = list(gm.graph.nodes)
    if why is not None or any(n.op == "get_attr" for n in nodes):
        # Attention left to eager, views the caller reads, or tensor
        # constants (which tc's training graphs take as inputs).
        compiled = segments.compile_segments(gm, example_inputs, settings)
        if compiled is not None:
            return compiled
        _fallbacks.info("training graph: AOTAutograd splits it into forward "
                        "and backward, for tc does not compile all of it "
                        "(%s)", why or "tensor constants in a segment")
        return None
    marks = [x.requires_grad and x.is_floating_point()
             for x in example_inputs]
    ops = partition.op_nodes(gm.graph)
    functions = training_graph.compile_split(gm, ops, settings, marks)
    if functions is None:
        return None
    if any(a is not None
           for a in functions.forward.imported.outputs_alias_inputs):
        _fallbacks.info("training graph returns an input; AOTAutograd "
                        "handles the aliasing")
        return None
    if logs.enabled("memory"):
        bytes_ = functions.saved_bytes
        logs.channel_logger("memory").info(
            "training graph: the backward keeps %d bytes (%d of inputs, "
            "%d of outputs, %d of %d saved intermediates); forward arena "
            "%d bytes, backward arena %d bytes", sum(bytes_.values()),
            bytes_["input"], bytes_["output"], bytes_["extra"],
            sum(1 for kind, _ in functions.saved if kind == "extra"),
            functions.forward.arena_bytes, functions.backward.arena_bytes)
    tc.counters["graphs_compiled"] += 1
    tc.counters["subgraphs_compiled"] += 2
    tc.counters["training_graphs"] += 1
    tc.counters["kernels"] += (functions.forward.num_kernels
                               + functions.backward.num_kernels)
    tc.counters["ops_compiled"] += len(ops)
    return training_graph.TrainingGraph(
        functions, marks, gm, gm.meta.get(tracing.MUTATED_INPUTS, []))
