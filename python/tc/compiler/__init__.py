"""The bridge to tc's native compiler (the `tc._tc` extension).

`compile_graph(gm)` imports an ATen FX graph into the fx dialect, compiles
it with the native extension (`_tc.compile`) and returns a Python callable
that runs the result on CPU tensors.

The extension is a nanobind module built into `tc.build_dir() / "python" /
"tc"` (or installed next to this file). Its interface:

* `_tc.compile(ir: str, dump_stages: bool) -> CompiledGraph`, raising
  `RuntimeError` with the diagnostics on failure;
* `CompiledGraph.run(pointers: list[int]) -> None`, where `pointers` holds
  the data pointers of the inputs, then the outputs, then the arena (0 when
  the arena is empty); an output that is a graph input gets that input's
  own pointer;
* `_tc.compile(..., cache_dir)` caches the native code and host program in
  `cache_dir` and loads them from there in later processes
  (`CompiledGraph.from_cache`); `compile_cuda` and `compile_rocm` take a
  `cache_dir` too (the host program and the kernels' binaries);
* `CompiledGraph.arena_bytes`, `.intermediate_bytes`, `.num_kernels` (ints)
  and `.stage_ir` (`dict[str, str]`, filled when compiled with
  `dump_stages`).

The extension is loaded lazily: this package imports without it. Its
layers, each importing only those before it: `extension` (loading the
native extensions, `CompileError`), `function` (`CompiledFunction`),
`build` (IR to a native program, the caches), `autotune`
(`mode="max-autotune"`), `training` (`compile_training`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.fx

from tc import logs
from tc.compiler import autotune as tuner
from tc.compiler import build, extension, training
from tc.compiler.build import clear_cache, wait_for_cache_links
from tc.compiler.extension import (CompileError, cuda_attention_unavailable,
                                   decomposition_limits,
                                   decomposition_table, dump_ir,
                                   graph_device, native_available,
                                   native_error)
from tc.compiler.function import CompiledFunction
from tc.compiler.pools import cuda_graphs_enabled
from tc.compiler.training import (PendingTraining, TrainingFunctions,
                                 compile_training, start_training)
from tc.importer import import_graph

__all__ = ["CompileError", "CompiledFunction", "TrainingFunctions",
           "clear_cache", "compile_graph", "compile_training",
           "PendingTraining", "start_graph", "start_training",
           "cuda_attention_unavailable", "cuda_graphs_enabled",
           "decomposition_limits",
           "decomposition_table", "dump_ir",
           "graph_device", "native_available", "native_error",
           "wait_for_cache_links"]


def compile_graph(gm: torch.fx.GraphModule, *,
                  dump_stages: bool = False,
                  requires_grad: Sequence[bool] = (),
                  autotune: bool = False,
                  symbol: Any = None) -> "CompiledFunction":
    """Compiles an ATen FX graph with tc; returns a callable running it.

    The graph runs where its tensors are: on the CPU, or on a GPU (through
    the CUDA pipeline and runtime, or the ROCm ones when PyTorch is a ROCm
    build). The callable takes the graph's
    placeholders and returns what the graph's output node returns (one
    tensor, a tuple or a list). `get_attr` tensors are read from `gm` at
    each call. With `dump_stages` (or the `output_code` log channel) the
    compiler keeps each stage's IR. Raises `CompileError` when the native
    compiler fails or is absent, and `tc.importer.Unsupported` when the
    graph cannot be imported.

    With `requires_grad` (a flag per placeholder) the compiled function is
    the joint forward + backward graph (`tc-autodiff`): it takes the
    placeholders, then a cotangent per floating-point output, and returns
    the outputs, then the gradient of each marked placeholder.

    A graph with random ops (`tc.importer.RANDOM_OPS`) also takes a seed,
    by keyword (`seed=`, a 0-d int64 tensor on the graph's device); without
    one, each call draws a fresh seed from PyTorch's generator
    (`CompiledFunction.draw_seed`). A joint graph called with the seed
    its forward got draws the same random numbers (a dropout's same mask).

    With `autotune` (mode="max-autotune") a GPU graph is compiled under
    each of tc's schedule candidates, and its first call times them and
    keeps the fastest (`tc.compiler.autotune`; with `symbol`, at the first
    call's size).

    With `symbol` (a sympy symbol of the graph's fake tensors' shape
    environment), dimensions that are that symbol become the graph's
    symbolic size (docs/DynamicShapes.md): one compiled CPU or CUDA
    function serves every value of it, read from the inputs' shapes at each
    call.
    """
    device = graph_device(gm)
    imported = import_graph(gm, extension.GRAPH_NAME, lift_get_attrs=True,
                            requires_grad=requires_grad, symbol=symbol)
    _check_symbolic(symbol, device, requires_grad)
    if any(requires_grad):
        imported = training.joint_signature(imported, requires_grad)
    text = imported.text
    if logs.enabled("graph_code"):
        logs.channel_logger("graph_code").info("fx graph:\n%s", text)
    if autotune and not any(requires_grad):
        return tuner.compile_graph(gm, imported, device, dump_stages)
    native = build.compile_module(text, device, dump_stages)
    return CompiledFunction(native, imported, gm, device)


def _check_symbolic(symbol: Any, device: torch.device,
                    requires_grad: Sequence[bool] = ()) -> None:
    """Raises CompileError where a graph with the symbolic size `symbol`
    cannot be compiled: training, and devices other than the CPU and
    NVIDIA's GPUs."""
    if symbol is not None and (
            any(requires_grad) or device.type not in ("cpu", "cuda")
            or (device.type == "cuda" and torch.version.hip is not None)):
        raise CompileError("tc compiles the symbolic size for CPU and CUDA "
                           "inference graphs only")


def start_graph(gm: torch.fx.GraphModule, *,
                dump_stages: bool = False,
                symbol: Any = None) -> Callable[[], "CompiledFunction"]:
    """`compile_graph(gm, dump_stages=..., symbol=...)` with its native
    compile started in a worker thread (`build.start_module`): calling the
    result waits for it. A graph compiled in parts starts every part
    before it waits, so that the distinct parts compile at once. Import
    errors raise here, compile errors from the wait."""
    device = graph_device(gm)
    imported = import_graph(gm, extension.GRAPH_NAME, lift_get_attrs=True,
                            symbol=symbol)
    _check_symbolic(symbol, device)
    if logs.enabled("graph_code"):
        logs.channel_logger("graph_code").info("fx graph:\n%s",
                                               imported.text)
    wait = build.start_module(imported.text, device, dump_stages)
    return lambda: CompiledFunction(wait(), imported, gm, device)
