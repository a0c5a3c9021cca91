"""Compiling `torch.export` programs with tc.

`compile_exported(ep)` takes an `ExportedProgram`, reduces it to the core
ATen opset (as `torch.export` does) and compiles it the way the
`torch.compile` backend compiles a graph: the ops tc supports in tc
subgraphs, the rest in eager PyTorch, with the same logs and counters.
Parameters, buffers and lifted constants are passed to the compiled graph
as the program's own tensors, without copies.
"""

from __future__ import annotations

from typing import Any, Callable

import logging

import torch

from tc import backend, decompositions

__all__ = ["compile_exported"]

logger = logging.getLogger("tc")


def _eager(ep: "torch.export.ExportedProgram", why: str) -> Callable:
    logger.warning("tc.compile_exported: %s; the program runs in eager",
                   why)
    return ep.module()


def compile_exported(ep: "torch.export.ExportedProgram") -> Callable:
    """Returns a callable taking the exported program's user inputs."""
    from torch.export.graph_signature import InputKind, OutputKind

    ep = ep.run_decompositions(decompositions.core_aten_decompositions())
    signature = ep.graph_signature
    state = ep.state_dict
    constants = getattr(ep, "constants", {})

    # One slot per placeholder: a bound tensor, or None for a user input.
    bound: list[Any] = []
    for spec in signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            bound.append(None)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            bound.append(state[spec.target] if spec.target in state
                         else constants[spec.target])
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            bound.append(constants[spec.target])
        else:
            return _eager(ep, f"input kind {spec.kind.name} is not "
                              "supported yet")
    user_outputs = [i for i, spec in enumerate(signature.output_specs)
                    if spec.kind == OutputKind.USER_OUTPUT]
    if len(user_outputs) != len(signature.output_specs):
        return _eager(ep, "programs that mutate buffers or inputs are not "
                          "supported yet")

    gm = ep.graph_module
    runner = backend.partition.partition_and_compile(
        gm, backend.common.Settings())
    n_user = sum(slot is None for slot in bound)

    def run(*args: Any) -> Any:
        if len(args) != n_user:
            raise TypeError(f"expected {n_user} inputs, got {len(args)}")
        it = iter(args)
        flat = [next(it) if slot is None else slot for slot in bound]
        outputs = runner(*flat)
        if isinstance(outputs, (list, tuple)):
            outputs = [outputs[i] for i in user_outputs]
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        return outputs

    return run
