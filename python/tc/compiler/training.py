"""Training graphs: tc-autodiff's joint graph split into a forward and a
backward function (`compile_training`)."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Sequence

import torch
import torch.fx

from tc import logs
from tc.fx_text import DTYPE_TO_MLIR
from tc.importer import ImportedGraph, Unsupported, import_graph
from tc.compiler import build
from tc.compiler.extension import (CompileError, GRAPH_NAME, dump_ir,
                                   graph_device, load_native, native_error)
from tc.compiler.function import CompiledFunction


@dataclasses.dataclass
class TrainingFunctions:
    """A training graph split by tc-partition (see `compile_training`)."""

    #: Takes the graph's inputs; returns its outputs, then the extra values
    #: the backward saves.
    forward: "CompiledFunction"
    #: Takes the saved values, then a cotangent per floating-point output;
    #: returns the gradient of each marked input.
    backward: "CompiledFunction"
    #: Per saved value: ("input", n), ("output", n) or ("extra", n).
    saved: list[tuple[str, int]]
    #: Bytes of the saved values, by where they come from.
    saved_bytes: dict[str, int]
    #: Number of graph outputs (the forward's first results).
    num_outputs: int
    #: How the FX graph returns its outputs: "single", "tuple", "list".
    output_structure: str


_LAYOUT_KINDS = {"i": "input", "o": "output", "s": "extra"}


def _tensor_spec(mlir_type: str) -> tuple[tuple[int, ...], torch.dtype]:
    """(shape, dtype) of a static MLIR tensor type, `tensor<2x3xf32>`."""
    body = mlir_type.strip()
    if not (body.startswith("tensor<") and body.endswith(">")):
        raise CompileError(f"tc-partition saved a value of type {mlir_type}")
    *dims, element = body[len("tensor<"):-1].split("x")
    dtypes = {v: k for k, v in DTYPE_TO_MLIR.items()}
    if element not in dtypes or not all(d.isdigit() for d in dims):
        raise CompileError(f"tc-partition saved a value of type {mlir_type}")
    return tuple(int(d) for d in dims), dtypes[element]


def compile_training(gm: torch.fx.GraphModule, requires_grad: Sequence[bool],
                     *, dump_stages: bool = False) -> TrainingFunctions:
    """Compiles a training graph as a forward and a backward function.

    tc-autodiff builds the joint graph for the inputs marked in
    `requires_grad`; tc-partition splits it, saving or recomputing each
    forward value the backward reads by a min-cut over bytes
    (`tc-split-training-pipeline`). Both halves are then compiled like any
    graph, at once. Errors as `compile_graph`.
    """
    return start_training(gm, requires_grad, dump_stages=dump_stages)()


def start_training(gm: torch.fx.GraphModule, requires_grad: Sequence[bool],
                   *, dump_stages: bool = False
                   ) -> "PendingTraining":
    """`compile_training`, with the halves' native compiles started in
    worker threads (`build.start_module`): calling the result waits for
    them. Import and split errors raise here."""
    device = graph_device(gm)
    imported = import_graph(gm, GRAPH_NAME, lift_get_attrs=True,
                            requires_grad=requires_grad)
    _check_training_inputs(imported)
    text = imported.text
    if logs.enabled("graph_code"):
        logs.channel_logger("graph_code").info("fx graph:\n%s", text)
    native = load_native()
    if native is None:
        raise CompileError(native_error() or "tc native extension not built",
                           text, dump_ir(text), native_missing=True)
    split_options = build.split_options(build.target_pipeline(device, text)[2])
    start = time.perf_counter()
    try:
        forward_text, backward_text, layout = native.split_training(
            text, split_options)
    except RuntimeError as error:
        flag = "--tc-split-training-pipeline"
        if split_options:
            flag += f'="{split_options}"'
        raise CompileError(str(error), text, dump_ir(text),
                           pipeline=flag) from None

    if logs.enabled("compile_time"):
        logs.channel_logger("compile_time").info(
            "training graph: autodiff and partition in %.3f s",
            time.perf_counter() - start)
    num_outputs = len(imported.output_specs)
    saved: list[tuple[str, int]] = []
    saved_specs = []
    extra_specs = []
    saved_bytes = {"input": 0, "output": 0, "extra": 0}
    for entry in filter(None, layout.split(",")):
        kind, _, mlir_type = entry.partition(":")
        where, index = _LAYOUT_KINDS[kind[0]], int(kind[1:])
        if where == "input":
            spec = imported.input_specs[index]
        elif where == "output":
            spec = imported.output_specs[index]
        else:
            spec = _tensor_spec(mlir_type)
            if index == len(extra_specs):
                extra_specs.append(spec)
        saved.append((where, index))
        saved_specs.append(spec)
        saved_bytes[where] += math.prod(spec[0]) * spec[1].itemsize

    forward_imported = dataclasses.replace(
        imported, text=forward_text,
        output_specs=imported.output_specs + extra_specs,
        outputs_alias_inputs=(imported.outputs_alias_inputs
                              + [None] * len(extra_specs)),
        output_structure="tuple")
    cotangents = [spec for spec in imported.output_specs
                  if spec[1].is_floating_point]
    gradients = [spec for spec, marked in zip(imported.input_specs,
                                              requires_grad) if marked]
    backward_imported = dataclasses.replace(
        imported, text=backward_text,
        input_names=([f"saved_{i}" for i in range(len(saved))]
                     + [f"cotangent_{i}" for i in range(len(cotangents))]),
        input_specs=saved_specs + cotangents,
        output_specs=gradients,
        outputs_alias_inputs=[None] * len(gradients),
        output_structure="tuple", seed_index=None)
    # The two halves compile at once (and with other graphs' halves: a
    # training graph's segments).
    halves = [build.start_module(text, device, dump_stages)
              for text in (forward_text, backward_text)]

    def finish() -> TrainingFunctions:
        forward_native, backward_native = [wait() for wait in halves]
        forward = CompiledFunction(forward_native, forward_imported, gm,
                                   device)
        backward = CompiledFunction(backward_native, backward_imported, gm,
                                    device)
        return TrainingFunctions(forward, backward, saved, saved_bytes,
                                 num_outputs, imported.output_structure)

    return PendingTraining(finish, forward_imported,
                           imported.output_structure)


class PendingTraining:
    """A training graph whose halves are compiling (`start_training`):
    calling it waits for them and returns the TrainingFunctions; the
    forward's signature is known before."""

    def __init__(self, finish: Callable[[], TrainingFunctions],
                 forward_imported: ImportedGraph, output_structure: str):
        self._finish = finish
        self.forward_imported = forward_imported
        #: The graph's own output structure (TrainingFunctions').
        self.output_structure = output_structure

    def __call__(self) -> TrainingFunctions:
        return self._finish()


def _check_training_inputs(imported: ImportedGraph) -> None:
    if imported.lifted_attrs:
        raise Unsupported("training graphs take parameters as inputs; "
                          "this one reads them with get_attr")


def joint_signature(imported: ImportedGraph,
                    requires_grad: Sequence[bool]) -> ImportedGraph:
    """The calling convention of the joint graph `tc-autodiff` makes of
    `imported` (see compile_graph)."""
    _check_training_inputs(imported)
    cotangents = [spec for spec in imported.output_specs
                  if spec[1].is_floating_point]
    gradients = [spec for spec, marked in zip(imported.input_specs,
                                              requires_grad) if marked]
    return dataclasses.replace(
        imported,
        input_names=imported.input_names + [
            f"cotangent_{i}" for i in range(len(cotangents))],
        input_specs=imported.input_specs + cotangents,
        output_specs=imported.output_specs + gradients,
        outputs_alias_inputs=(imported.outputs_alias_inputs
                              + [None] * len(gradients)),
        output_structure="tuple")
