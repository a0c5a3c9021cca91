"""Ahead-of-time export: a model to a folder that C++ runs without Python.

`tc.aot.export(model, example_inputs, folder)` exports the model with
`torch.export` (its parameters and buffers become the graph's inputs),
compiles the whole graph with tc's CPU pipeline for this host's CPU, and
writes:

* `model.so`: the kernels (a shared library, linked with the system's C
  compiler driver, `$CC` or `cc`);
* `model.plan`: the host program (launches, BLAS GEMMs, the arena);
* `weights.bin`: the parameters, buffers and constants, 64-byte aligned;
* `model.manifest`: the graph's arguments (user inputs, and weights with
  their offsets in weights.bin) and outputs, with dtypes and shapes.

The C++ API of `include/tc/AOT/Model.h` (library `libtc_aot`) loads the
folder and runs it. There is no eager fallback at run time, so export
fails, with the compiler's diagnostics, when tc cannot compile every op;
the same goes for random ops and programs that update buffers (export
the model in `eval()` mode).
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import subprocess
from typing import Any, Sequence

import torch

__all__ = ["AOTError", "export"]

#: The manifest's first line (lib/AOT/Model.cpp checks it).
MANIFEST_VERSION = "tc-aot-model-1"

_DTYPE_NAMES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
    torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "bool",
}


class AOTError(RuntimeError):
    """A model tc cannot export, and why."""


def _linker() -> str:
    from tc import compiler

    linker = compiler.build.find_linker()
    if linker is None:
        raise AOTError("no C compiler driver ($CC, cc, clang or gcc) to "
                       "link model.so with")
    return linker


def _dims(shape: Sequence[int]) -> str:
    return "".join(f" {int(size)}" for size in shape)


def _tensor_bytes(tensor: torch.Tensor) -> bytes:
    tensor = tensor.detach().contiguous()
    return ctypes.string_at(tensor.data_ptr(),
                            tensor.numel() * tensor.element_size())


def export(model: torch.nn.Module, example_inputs: Sequence[Any],
           folder: str | os.PathLike, *, options: str = "") -> pathlib.Path:
    """Exports `model` called on `example_inputs` (CPU tensors) to `folder`
    (created; files in it are replaced). `options` are tc-cpu-pipeline's.
    Returns the folder. Raises `AOTError` on what tc cannot export."""
    from torch.export.graph_signature import InputKind, OutputKind

    from tc import compiler, decompositions
    from tc.importer import Unsupported, import_graph

    native = compiler.extension.load_native()
    if native is None:
        raise AOTError(f"tc's native extension is not built: "
                       f"{compiler.native_error()}")
    for x in example_inputs:
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            raise AOTError(f"ahead-of-time export is for the CPU; an input "
                           f"is on {x.device}")

    ep = torch.export.export(model, tuple(example_inputs))
    ep = ep.run_decompositions(decompositions.core_aten_decompositions())
    signature = ep.graph_signature
    state = ep.state_dict
    constants = getattr(ep, "constants", {})
    bad = [spec.kind.name for spec in signature.output_specs
           if spec.kind != OutputKind.USER_OUTPUT]
    if bad:
        raise AOTError(f"the program updates its state ({', '.join(bad)}); "
                       f"export the model in eval() mode")

    gm = ep.graph_module
    # Checks of a tensor's dtype and shape (a `.to()`): the manifest fixes
    # both, and the graph is compiled for them.
    for node in list(gm.graph.nodes):
        if node.target is torch.ops.aten._assert_tensor_metadata.default:
            gm.graph.erase_node(node)
    gm.recompile()
    try:
        imported = import_graph(gm, "main", lift_get_attrs=True)
    except Unsupported as error:
        raise AOTError(f"tc cannot import the exported graph: {error}") \
            from None
    if imported.seed_index is not None:
        raise AOTError("the graph draws random numbers, which the "
                       "ahead-of-time runtime does not seed")
    if imported.lifted_attrs:
        raise AOTError("the exported graph reads module attributes "
                       f"({', '.join(imported.lifted_attrs)}) that "
                       "torch.export did not lift to inputs")
    if any(alias is not None for alias in imported.outputs_alias_inputs):
        raise AOTError("an output is one of the graph's inputs; return a "
                       "copy (.clone()) instead")
    for shape, dtype in imported.input_specs + imported.output_specs:
        if dtype not in _DTYPE_NAMES:
            raise AOTError(f"dtype {dtype} is not supported by the "
                           "ahead-of-time runtime")

    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    obj = folder / "model.o"
    try:
        native.export_cpu(imported.text, options, str(obj),
                          str(folder / "model.plan"))
    except RuntimeError as error:
        raise AOTError(f"tc could not compile the exported graph:\n{error}") \
            from None
    link = subprocess.run([_linker(), "-shared", "-o",
                           str(folder / "model.so"), str(obj), "-lm"],
                          capture_output=True, text=True)
    obj.unlink()
    if link.returncode != 0:
        raise AOTError(f"linking model.so failed:\n{link.stderr}")

    lines = [MANIFEST_VERSION]
    weights = bytearray()
    for spec, (shape, dtype) in zip(signature.input_specs,
                                    imported.input_specs):
        name = spec.arg.name
        if spec.kind == InputKind.USER_INPUT:
            lines.append(f"argument input {name} {_DTYPE_NAMES[dtype]}"
                         f"{_dims(shape)}")
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER,
                         InputKind.CONSTANT_TENSOR):
            tensor = (state[spec.target] if spec.target in state
                      else constants[spec.target])
        else:
            raise AOTError(f"input kind {spec.kind.name} cannot be exported")
        weights += bytes(-len(weights) % 64)
        lines.append(f"argument weight {name} {_DTYPE_NAMES[dtype]} "
                     f"{len(weights)}{_dims(shape)}")
        weights += _tensor_bytes(tensor)
    for spec, (shape, dtype) in zip(signature.output_specs,
                                    imported.output_specs):
        name = getattr(spec.arg, "name", "output")
        lines.append(f"output {name} {_DTYPE_NAMES[dtype]}{_dims(shape)}")
    (folder / "weights.bin").write_bytes(bytes(weights))
    (folder / "model.manifest").write_text("\n".join(lines) + "\n")
    return folder
