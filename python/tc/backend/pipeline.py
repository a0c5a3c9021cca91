"""A Dynamo graph through the backend's stages: ATen tracing, then
inference graphs through checks, views and partitioning, and training
graphs through `tc.backend.training`."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import attention, compat, compiler, distributed, layouts, logs
from tc.decompositions import core_aten_decompositions, joint_decompositions
from tc.importer import qualified_name
from tc.support import VALUE_GUARDS
from tc.backend import checks, common, partition, tracing, training, views

_fallbacks = logs.channel_logger("fallbacks")


def to_aten(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
            settings: common.Settings) -> Callable:
    """Lowers Dynamo's graph to ATen and compiles what it gets.

    A graph without mutations is traced once to core ATen
    (`tracing.trace_one_pass`); for training, tc differentiates it itself
    (`training.compile_training`). Anything else goes through AOTAutograd,
    which handles mutations and aliasing and splits training graphs into
    forward and backward.
    """
    is_training = torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad
        for x in example_inputs)
    tracing.dropout_as_native(gm)
    tc.counters["contiguous_masks"] += attention.contiguous_masks(gm)
    traced = tracing.trace_one_pass(gm, example_inputs, direct=True,
                                    training=is_training)
    if traced is not None and is_training:
        # Evaluated once and given as `is_causal`; the fused attentions
        # between tc's segments get their output gradient laid out as
        # their output (`segments._call_attention`), without which five
        # causal LMs trained to wrong gradients on the H200 with the flag.
        tc.counters["causal_masks"] += attention.causal_masks_as_flags(traced)
    if traced is not None and not is_training:
        _library_attentions(traced)
    if traced is not None:
        tc.counters["aligned_biases"] += attention.aligned_biases(
            traced, partition.is_view)
    if traced is not None and not is_training:
        tc.counters["aten_one_pass"] += 1
        tracing.products_of_merged_rows(traced.graph)
        traced.graph.eliminate_dead_code(is_impure_node=lambda node: (
            node.is_impure() or (node.op == "call_function"
                                 and node.target in tracing.ERROR_CHECKS)))
        traced.recompile()
        runner = _compile_aten_runner(traced, settings, inference=True)
        if runner is traced:
            # Nothing compiled: run the ops the user wrote, not the ATen
            # graph's decompositions of them (index_add traced to
            # index_put ran at 2.4x eager's index_add on the CPU).
            return gm.forward
        return runner
    if traced is not None:
        runner = training.compile_training(traced, example_inputs, settings)
        if runner is not None:
            tc.counters["aten_one_pass"] += 1
            return runner
    tc.counters["aten_aot_autograd"] += 1

    # Through Dynamo's `aot_autograd` backend helper, not
    # `aot_module_simplified` directly: DDPOptimizer reads the helper's
    # counter to know that the piece's first call returns fake tensors
    # (AOTAutograd's output-stride propagation) and makes that call itself.
    from torch._dynamo.backends.common import aot_autograd

    extra = {}
    if is_training:
        # What the backward reads: a minimum cut over bytes, recomputing
        # cheap pointwise chains (tc-partition's rule; Inductor's
        # partitioner). AOTAutograd's default saves every intermediate the
        # backward reads: GPT-2's tanh GELU, written out op by op, left
        # 1.8 GB more saved than Inductor's on the H100.
        min_cut = compat.get("min_cut_partition")
        if min_cut is not None:
            extra["partition_fn"] = min_cut
    aten_compiler = functools.partial(compile_aten_graph, settings=settings)
    if not is_training:
        extra["inference_compiler"] = functools.partial(
            compile_aten_graph, settings=settings, inference=True)
        # An input the graph updates (a KV cache's `k[:, :, pos] = v`, a
        # buffer's `copy_`) stays a `copy_` at the graph's end, which tc
        # compiles as a write into the input's buffer (importer's
        # copy_into_argument): AOTAutograd's own copy after the graph would
        # be a pass over the whole buffer in eager.
        extra["keep_inference_input_mutations"] = True
    return aot_autograd(
        fw_compiler=aten_compiler, bw_compiler=aten_compiler,
        decompositions=(joint_decompositions() if is_training
                        else core_aten_decompositions()),
        **extra)(gm, example_inputs)


def _library_attentions(gm: torch.fx.GraphModule) -> None:
    """An inference graph's constant causal masks as flags, then its
    attentions, written out or fused, as tc's library calls
    (tc.attention)."""
    tc.counters["causal_masks"] += attention.causal_masks_as_flags(gm)
    tc.counters["library_attentions"] += (attention.written_attentions(gm)
                                          + attention.library_attentions(gm))


def compile_aten_graph(gm: torch.fx.GraphModule,
                       example_inputs: Sequence[Any],
                       settings: common.Settings,
                       inference: bool = False) -> Callable:
    """AOTAutograd's fw/bw compiler (`inference`: its inference compiler,
    for a graph without gradients, whose fused attentions become library
    calls as the one-pass trace's do): an ATen graph to a boxed callable."""
    failures = tc.counters["compile_failures"]
    if inference:
        _library_attentions(gm)
    runner = _compile_aten_runner(gm, settings)
    # The backward is compiled when it first runs, after `tc_backend`:
    # every rank whose forward compiled (all of them, or none: agreed) gets
    # here, and agrees here.
    if not common.in_backend and not common.agree(
            tc.counters["compile_failures"] == failures,
            "an AOTAutograd backward", gm, example_inputs):
        runner = gm
    return views.make_boxed(runner)


def _half_product_padding(*args: Any) -> tuple[int, int, int] | None:
    """tc._tc.half_product_padding, loading the compiler only when a graph
    has a product to ask about (a warm process runs cached graphs without
    it)."""
    native = compiler.extension.load_native()
    return native.half_product_padding(*args) if native is not None else None


def _compile_aten_runner(gm: torch.fx.GraphModule, settings: common.Settings,
                         inference: bool = False) -> Callable:
    """An ATen graph to a callable taking the graph's inputs.
    `inference`: the graph is not a training graph's forward or backward
    (whose outputs autograd and the next graph read: there, a padded
    product returned as a view costs a copy on each side)."""
    try:
        _prims_as_aten(gm)
        if distributed.has_collectives(gm.graph):
            if any(n.op == "call_function"
                   and isinstance(n.target, torch._ops.OpOverload)
                   and qualified_name(n.target) in VALUE_GUARDS
                   for n in gm.graph.nodes):
                # A failed guard reruns the whole graph in eager: its
                # collectives would be issued twice.
                _fallbacks.info("graph with collectives runs in eager: an "
                                "op in it needs a value guard, whose rerun "
                                "would issue the collectives twice")
                tc.counters["fallback_graphs"] += 1
                return gm
            if distributed.schedule_collectives(gm.graph):
                gm.recompile()
        guarded = checks.add_value_guards(gm)
        if guarded is not None:
            return checks.ValueGuards(
                _compile_aten_runner(guarded.graph, settings, inference), gm,
                guarded)
        checked = checks.hoist_error_checks(gm)
        if checked is not None:
            return checks.HostChecks(
                _compile_aten_runner(checked.graph, settings, inference),
                checked)
        if inference and torch.version.hip is None:
            layouts.pad_returned_products(gm, _half_product_padding,
                                          views.is_output_view)
        split = views.split_output_views(gm)
        if split is not None:
            return views.compile_with_output_views(split, settings)
        return partition.partition_and_compile(gm, settings)
    except Exception as error:  # tc must never break the user's program
        common.internal_error("compiling an ATen graph", error)
        return gm


def _prims_as_aten(gm: torch.fx.GraphModule) -> None:
    """Rewrites the `prims` ops PyTorch's decompositions leave (logspace's
    `prims.pow`) as the ATen ops computing the same: their operands have
    one dtype already, so ATen's type promotion changes nothing."""
    changed = False
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not \
                torch.ops.prims.pow.default or len(node.args) != 2:
            continue
        base, exponent = node.args
        if isinstance(base, torch.fx.Node):
            node.target = (torch.ops.aten.pow.Tensor_Tensor
                           if isinstance(exponent, torch.fx.Node)
                           else torch.ops.aten.pow.Tensor_Scalar)
        elif isinstance(exponent, torch.fx.Node):
            node.target = torch.ops.aten.pow.Scalar
        changed = True
    if changed:
        gm.recompile()
