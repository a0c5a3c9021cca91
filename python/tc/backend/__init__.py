"""The `torch.compile` backend: `torch.compile(model, backend="tc")`.

Dynamo hands the backend a Python-level FX graph. The backend lowers it to
ATen with AOTAutograd (core ATen decompositions), and for each ATen graph
(forward, and backward when training):

1. marks the nodes tc supports (`tc.support.is_supported`);
2. groups them into subgraphs: the runs of supported ops between eager
   ones, in the graph's order (`_runs_in_order`);
3. compiles each subgraph with `tc.compiler.compile_graph`; everything
   else, and every subgraph tc fails to compile, runs in eager PyTorch.

tc never makes the user's program fail: an unexpected error inside tc is
logged and the graph runs in eager. What happened is counted in
`tc.counters` and shown by the log channels (`TC_LOGS=fallbacks,...`).
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import logs
from tc import precompile
from tc.backend import common, pipeline, shapes

__all__ = ["tc_backend"]

logger = logging.getLogger("tc")
_fallbacks = logs.channel_logger("fallbacks")


def tc_backend(gm: torch.fx.GraphModule,
               example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """torch.compile backend compiling ATen subgraphs with tc.

    Takes torch.compile's `mode` (see SUPPORTED_MODES; others run as
    "default") and `options`
    (`{"dump_stages": True}` keeps the IR of every compiler stage, as the
    `output_code` channel does).
    """
    failures = tc.counters["compile_failures"]
    eager = (tc.counters["ops_eager"], tc.counters["fallback_graphs"])
    common.in_backend.append(True)
    try:
        settings = common.parse_kwargs(kwargs)
        dynamic = common.dynamic_reason(example_inputs)
        if dynamic:
            logger.debug("tc: %s: one compile for every batch size where "
                         "tc can, else per shape", dynamic)
            return shapes.PerShape(gm, settings)

        if precompile.enabled():  # PyTorch's precompile cache is on
            precompile.record(gm, example_inputs, kwargs)
        compiled = pipeline.to_aten(gm, example_inputs, settings)
    except Exception as error:  # tc must never break the user's program
        if any(kind in type(error).__name__
               for kind in ("DataDependent", "DynamicOutputShape")):
            # An op whose result depends on tensor values (narrow at a
            # tensor position, nonzero, ...): not a bug, a limit.
            _fallbacks.info("graph runs in eager: it needs tensor data at "
                            "compile time (%s: %s)", type(error).__name__,
                            str(error).splitlines()[0])
            tc.counters["fallback_graphs"] += 1
            compiled = gm.forward
        else:
            common.internal_error("lowering a graph to ATen", error)
            compiled = gm.forward
    finally:
        common.in_backend.pop()
    # Under torch.distributed, every rank compiles the same graphs here (the
    # per-shape path above compiles at run time, per rank's shapes).
    if not common.agree(tc.counters["compile_failures"] == failures,
                        "a graph", gm, example_inputs):
        return gm.forward
    if os.environ.get("TC_REPRO"):
        # Repros of what failed, from the first call (docs/Debugging.md).
        from tc.debug import repro_on_failure
        fell_back = eager != (tc.counters["ops_eager"],
                              tc.counters["fallback_graphs"])
        return repro_on_failure(gm, compiled, os.environ["TC_REPRO"],
                                fell_back)
    return compiled


# Artifacts of PyTorch's precompile cache are rebuilt by this backend.
precompile.set_backend(tc_backend)
