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

The extension is loaded lazily: this module imports without it.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import dataclasses
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import math
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import threading
import time
from types import ModuleType
from typing import Any, Sequence

import torch
import torch.fx

import tc
from tc import logs
from tc.importer import (DTYPE_TO_MLIR, ImportedGraph, Unsupported,
                         import_graph)

__all__ = ["CompileError", "CompiledFunction", "TrainingFunctions",
           "compile_graph", "compile_training",
           "native_available", "native_error"]

_GRAPH_NAME = "main"


class CompileError(Exception):
    """The native compiler rejected a graph (or is not available).

    `ir` is the fx-dialect text that was compiled, `ir_path` the file it
    was dumped to (None if it could not be written), `command` a shell
    command that reproduces the failure.
    """

    def __init__(self, message: str, ir: str | None = None,
                 ir_path: pathlib.Path | None = None, *,
                 native_missing: bool = False,
                 pipeline: str = "--tc-cpu-pipeline"):
        super().__init__(message)
        self.message = message
        self.ir = ir
        self.ir_path = ir_path
        #: The tc-opt pipeline flag that compiles the graph.
        self.pipeline = pipeline
        #: True when the native extension is absent (nothing was compiled).
        self.native_missing = native_missing

    @property
    def command(self) -> str | None:
        if self.ir_path is None:
            return None
        command = f"{tc.tc_opt_path()} {self.pipeline} {self.ir_path}"
        if ("cannot be converted to LLVM IR" in self.message
                and self.pipeline.startswith("--tc-cpu-pipeline")):
            # The pipeline ran; LLVM's translation (the JIT's first step)
            # failed: MLIR's translator reproduces that.
            translate = pathlib.Path("/usr/lib/llvm-22/bin/mlir-translate")
            tool = translate if translate.exists() else "mlir-translate"
            command += f" | {tool} --mlir-to-llvmir"
        return command


# ============================================================================
# The native extension
# ============================================================================

_native: ModuleType | None = None
_native_error: str | None = None
_native_lock = threading.Lock()


def _extension_dirs() -> list[pathlib.Path]:
    return [pathlib.Path(__file__).resolve().parent,
            tc.build_dir() / "python" / "tc"]


def _extension_path(name: str) -> pathlib.Path | None:
    """Where the extension module `tc.<name>` was built, if it was."""
    for directory in _extension_dirs():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = directory / f"{name}{suffix}"
            if path.is_file():
                return path
    return None


def _load_extension(name: str) -> ModuleType:
    """Imports the extension `tc.<name>` from where it was built; raises
    ImportError when it is absent or broken."""
    qualified = f"tc.{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    path = _extension_path(name)
    if path is None:
        raise ImportError(f"tc native extension not built (no {name} "
                          "module in " + ", ".join(
                              str(d) for d in _extension_dirs()) + ")")
    try:
        loader = importlib.machinery.ExtensionFileLoader(qualified, str(path))
        spec = importlib.util.spec_from_file_location(qualified, str(path),
                                                      loader=loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        loader.exec_module(module)
    except Exception as error:  # a broken build must not kill us
        sys.modules.pop(qualified, None)
        raise ImportError(f"loading {path} failed: {error}") from None
    return module


def _load_native() -> ModuleType | None:
    """Loads `tc._tc` once; returns None (see `native_error`) if absent."""
    global _native, _native_error
    with _native_lock:
        if _native is not None or _native_error is not None:
            return _native
        if os.environ.get("TC_DISABLE_NATIVE", "") not in ("", "0"):
            _native_error = "disabled by TC_DISABLE_NATIVE"
            return None
        try:
            _native = _load_extension("_tc")
        except ImportError as error:
            _native_error = str(error)
            return None
        # CPU graphs' convolutions run as PyTorch's (see _pipeline).
        from tc import library
        _native.set_cpu_convolution(library.convolution)
        return _native


def native_available() -> bool:
    """Whether the native extension `tc._tc` can be loaded."""
    return _load_native() is not None


def native_error() -> str | None:
    """Why the native extension is unavailable (None if it is available)."""
    _load_native()
    return _native_error


# ============================================================================
# Compiling
# ============================================================================

# Native compiled graphs by (IR text, dump_stages); failures by IR text.
_cache: dict[tuple[str, bool], Any] = {}
_failures: dict[str, str] = {}
# CPU graphs by their structure (`_tc.graph_structure`: the text without
# value names and locations) and options: a model's identical layers (a
# training graph's segments between its attentions) compile once, as the
# GPU's disk cache has them load once. CPU programs keep no state between
# calls (each call passes its buffers and arena), so graphs share one.
_by_structure: dict[tuple[str, str], Any] = {}
# CPU graphs this process loaded from the disk cache (without the
# compiler, so without their structure yet): (text, options, graph).
_loaded_unkeyed: list[tuple[str, str, Any]] = []


def clear_cache() -> None:
    """Drops the in-memory cache of compiled graphs, the GPU arenas and
    this thread's CPU arena."""
    _cache.clear()
    _cpu_arenas.block = None
    _failures.clear()
    _by_structure.clear()
    _loaded_unkeyed.clear()
    _arenas.clear()


# Free native objects before the interpreter tears the extension down.
atexit.register(clear_cache)


def dump_ir(text: str) -> pathlib.Path | None:
    """Writes `text` under the cache dir; returns the path (None on error)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = tc.cache_dir() / "ir" / f"graph-{digest}.mlir"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError:
        return None
    return path


def graph_device(gm: torch.fx.GraphModule) -> torch.device:
    """The one device the graph's tensors live on (CPU if it has none).

    Raises `Unsupported` for graphs mixing devices.
    """
    devices = {node.meta["val"].device for node in gm.graph.nodes
               if isinstance(node.meta.get("val"), torch.Tensor)}
    if len(devices) > 1:
        raise Unsupported("the graph mixes devices: " +
                          ", ".join(sorted(str(d) for d in devices)))
    return devices.pop() if devices else torch.device("cpu")


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
    (`CompiledFunction.draw_seed`). A joint graph called with the seed its
    forward got draws the same random numbers (a dropout's same mask).

    With `autotune` (mode="max-autotune") a GPU graph is compiled under
    each of tc's schedule candidates, and its first call times them and
    keeps the fastest (`tc.autotune`; with `symbol`, at the first call's
    size).

    With `symbol` (a sympy symbol of the graph's fake tensors' shape
    environment), dimensions that are that symbol become the graph's
    symbolic size (docs/DynamicShapes.md): one compiled CPU or CUDA
    function serves every value of it, read from the inputs' shapes at each
    call.
    """
    device = graph_device(gm)
    imported = import_graph(gm, _GRAPH_NAME, lift_get_attrs=True,
                            requires_grad=requires_grad, symbol=symbol)
    if symbol is not None and (
            any(requires_grad) or device.type not in ("cpu", "cuda")
            or (device.type == "cuda" and torch.version.hip is not None)):
        raise CompileError("tc compiles the symbolic size for CPU and CUDA "
                           "inference graphs only")
    if any(requires_grad):
        imported = _joint_signature(imported, requires_grad)
    text = imported.text
    if logs.enabled("graph_code"):
        logs.channel_logger("graph_code").info("fx graph:\n%s", text)
    if autotune and not any(requires_grad):
        from tc import autotune as tuner

        return tuner.compile_graph(gm, imported, device, dump_stages)
    native = _compile_module(text, device, dump_stages)
    return CompiledFunction(native, imported, gm, device)


def _pipeline(device: torch.device, text: str,
              variant: str = "") -> tuple[str, str, str]:
    """(platform, tc-opt pipeline flag, pipeline options) for `device`;
    a GPU pipeline's options end with `variant` (a schedule candidate's,
    see tc.autotune)."""
    if device.type == "cuda":
        from tc import cuda, rocm
        platform = "rocm" if rocm.is_rocm() else "cuda"
        try:
            options = (rocm.pipeline_options(device) if platform == "rocm"
                       else cuda.pipeline_options(device))
        except RuntimeError as error:
            raise CompileError(str(error), text, dump_ir(text)) from None
        if variant:
            options = f"{options} {variant}"
        return platform, f'--tc-{platform}-pipeline="{options}"', options
    if device.type != "cpu":
        raise Unsupported(f"tc does not compile for {device.type} devices")
    # TC_CPU_OPTIONS: tc-cpu-pipeline's options, such as
    # "expand-convolutions=true" (convolutions as tc's window copies and a
    # matrix product). By default they are library calls into PyTorch's
    # kernels (tc.library, which tc._tc sets when it loads), channels-last
    # with the ops between them (oneDNN's fast layout; the weights are read
    # as they are): "channels-last=off" keeps PyTorch's layout.
    options = os.environ.get("TC_CPU_OPTIONS", "").strip()
    if "channels-last=" not in options:
        options = f"channels-last=all {options}".strip()
    # f16/bf16 convolutions run in their type: oneDNN's bf16 kernels take
    # a half to a third of its f32 ones' time on CPUs with bf16
    # instructions ("half-convolutions=false" widens them to f32).
    if "half-convolutions=" not in options:
        options = f"half-convolutions=true {options}".strip()
    if "expand-convolutions=" not in options:
        options = f"expand-convolutions=false {options}".strip()
    flag = f'--tc-cpu-pipeline="{options}"' if options else "--tc-cpu-pipeline"
    return "cpu", flag, options


def _split_options(options: str) -> str:
    """The options of tc-split-training-pipeline that a target pipeline's
    `options` imply: whether convolutions are expanded before autodiff, and
    which run channels-last (before the partition)."""
    return " ".join(token for token in options.split()
                    if token.startswith(("expand-convolutions=",
                                         "channels-last=")))


# ============================================================================
# The CPU disk cache
# ============================================================================
#
# A CPU graph's entry is `tc.cache_dir()/cpu/<key>`: `<key>.plan` (the host
# program), `<key>.<i>.o` (the kernels, compiled in parallel parts) and
# `<key>.so` (the parts linked into a shared library, in the background,
# after a cold compile). The key is computed here, so that a warm process
# finds its entries without loading tc._tc (MLIR and LLVM: tens of
# milliseconds): tc._runtime, which links the host program's interpreter
# alone, loads `<key>.so` and runs the plan. An entry without its `.so`
# (no C compiler driver to link it, or a link still running) loads through
# tc._tc's JIT instead.

#: Bump when the key changes meaning (the plan's own version is checked
#: when it loads).
_CPU_KEY_FORMAT = "tc-cpu-key-1"
_runtime: ModuleType | None = None
_runtime_error: str | None = None
_links: list[subprocess.Popen] = []


@functools.lru_cache(maxsize=None)
def _host_cpu() -> str:
    """What tc's CPU code depends on in this host: the architecture, the
    CPU model and its feature flags (LLVM compiles for the host's CPU)."""
    parts = [platform.machine()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8",
                  errors="replace") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    break  # the first processor's lines
                name = line.split(":", 1)[0].strip()
                if name in ("vendor_id", "cpu family", "model", "model name",
                            "flags", "CPU implementer", "CPU part",
                            "Features", "isa"):
                    parts.append(line.strip())
    except OSError:
        # platform.processor() runs `uname -p`: only where /proc is absent.
        parts.append(platform.processor())
    return "\n".join(parts)


@functools.lru_cache(maxsize=None)
@functools.lru_cache(maxsize=None)
def _build_identity() -> str:
    """tc's build, as the cache sees it: its extensions' paths, sizes and
    modification times, read once per process (the build it loads: a
    rebuild on disk while a process runs would otherwise have the old code
    write entries under the new build's keys, and read the new build's
    entries, whose kernels it does not know)."""
    parts = []
    for name in ("_tc", "_runtime"):
        path = _extension_path(name)
        if path is not None:
            stat = path.stat()
            parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts)


def _cpu_cache_entry(text: str, options: str) -> pathlib.Path:
    """The disk cache entry of the CPU graph `text` compiled with
    `options`, keyed on both, tc's build and the host CPU."""
    key = hashlib.sha256()
    for part in (_CPU_KEY_FORMAT, _build_identity(), _host_cpu(),
                 os.environ.get("TC_VECTOR_WIDTH", ""), options, text):
        data = part.encode()
        key.update(len(data).to_bytes(8, "little"))
        key.update(data)
    return tc.cache_dir() / "cpu" / key.hexdigest()


def _load_runtime() -> ModuleType | None:
    """Loads `tc._runtime` once; None when it is absent (or tc's native
    code is disabled)."""
    global _runtime, _runtime_error
    with _native_lock:
        if _runtime is None and _runtime_error is None:
            if os.environ.get("TC_DISABLE_NATIVE", "") not in ("", "0"):
                _runtime_error = "disabled by TC_DISABLE_NATIVE"
            else:
                try:
                    _runtime = _load_extension("_runtime")
                except ImportError as error:
                    _runtime_error = str(error)
        return _runtime


def decomposition_limits() -> dict[str, int]:
    """The sizes tc's decompositions take (tc/Conversion/FXToPrim/Limits.h,
    through tc._runtime), by name; empty without tc's native code."""
    runtime = _load_runtime()
    return dict(getattr(runtime, "DECOMPOSITION_LIMITS", {}))


def _load_cached_cpu(entry: pathlib.Path) -> Any | None:
    """The CPU graph of a complete cache entry, run by tc._runtime; None
    when the entry (or its `.so`) is absent or unusable."""
    if not entry.with_suffix(".so").is_file():
        return None
    runtime = _load_runtime()
    return runtime.load_cpu(str(entry)) if runtime is not None else None


def _linker() -> str | None:
    """A C compiler driver to link shared libraries with ($CC, cc, clang
    or gcc), or None."""
    for candidate in (os.environ.get("CC"), "cc", "clang", "gcc"):
        if candidate and shutil.which(candidate):
            return candidate
    return None


def _link_cache_entry(entry: pathlib.Path) -> None:
    """Links a fresh entry's objects into `<entry>.so`, in a background
    process (best effort: without it, warm starts load tc._tc)."""
    global _links
    _links = [link for link in _links if link.poll() is None]
    objects = []
    while (obj := entry.parent / f"{entry.name}.{len(objects)}.o").is_file():
        objects.append(str(obj))
    linker = _linker()
    if not objects or linker is None:
        return
    # Through a temporary name and a rename: a reader never sees half a
    # library.
    tmp = f"{entry}.so.tmp{os.getpid()}"
    script = '"$0" -shared -o "$1" "${@:3}" -lm && mv -f "$1" "$2"'
    try:
        _links.append(subprocess.Popen(
            ["bash", "-c", script, linker, tmp, f"{entry}.so", *objects],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
    except OSError:
        pass


def wait_for_cache_links(timeout: float = 30.0) -> None:
    """Waits for the background links of this process's cache entries (at
    exit too, so that the next process finds them)."""
    deadline = time.monotonic() + timeout
    for link in _links:
        try:
            link.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


atexit.register(wait_for_cache_links)


def _compile_module(text: str, device: torch.device,
                    dump_stages: bool, variant: str = "") -> Any:
    """The native executable of the module `text` (fx or prim dialect) for
    `device` (with a GPU schedule `variant`, see _pipeline), from the
    in-process cache when compiled before."""
    platform, pipeline, options = _pipeline(device, text, variant)
    dump_stages = dump_stages or logs.enabled("output_code")
    # A GPU graph's kernels load into its device's context: one entry per
    # device.
    key = (text, dump_stages, options, str(device))
    compiled = _cache.get(key)
    if compiled is not None:
        return compiled
    start = time.perf_counter()
    entry = _cpu_cache_entry(text, options) if platform == "cpu" else None
    if entry is not None and not dump_stages:
        # A warm start: the graph's kernels and host program from the disk
        # cache, run without loading the compiler.
        compiled = _load_cached_cpu(entry)
        if compiled is not None:
            _loaded_unkeyed.append((text, options, compiled))
            return _compiled(key, compiled, platform, start)
    native = _load_native()
    if native is None:
        raise CompileError(_native_error or "tc native extension not built",
                           text, dump_ir(text), native_missing=True,
                           pipeline=pipeline)
    failure_key = (text, options)
    if failure_key in _failures:
        raise CompileError(_failures[failure_key], text, dump_ir(text),
                           pipeline=pipeline)
    structure = None
    if platform == "cpu" and not dump_stages:
        while _loaded_unkeyed:
            other, other_options, loaded = _loaded_unkeyed.pop()
            _by_structure.setdefault(
                (native.graph_structure(other), other_options), loaded)
        structure = (native.graph_structure(text), options)
        shared = _by_structure.get(structure)
        if shared is not None:
            _cache[key] = shared
            if logs.enabled("compile_time"):
                logs.channel_logger("compile_time").info(
                    "cpu graph shares the compile of an identical one "
                    "(%.3f s)", time.perf_counter() - start)
            return shared
    try:
        # Host programs and kernel binaries persist across processes too
        # (library planning and loading run again).
        gpu_cache = str(tc.cache_dir() / platform)
        if platform == "cuda":
            # The kernels load while compiling, into the context of the
            # current device: the graph's.
            index = device.index
            if index is None or torch.cuda.current_device() == index:
                compiled = native.compile_cuda(text, options, dump_stages,
                                               gpu_cache)
            else:
                with torch.cuda.device(device):
                    compiled = native.compile_cuda(text, options,
                                                   dump_stages, gpu_cache)
        elif platform == "rocm":
            compiled = native.compile_rocm(text, options, dump_stages,
                                           gpu_cache)
        else:
            # Compiled graphs persist in the cache folder across processes.
            compiled = native.compile(text, dump_stages, str(entry or ""),
                                      options)
    except RuntimeError as error:
        _failures[failure_key] = str(error)
        raise CompileError(str(error), text, dump_ir(text),
                           pipeline=pipeline) from None
    if entry is not None and not compiled.from_cache:
        _link_cache_entry(entry)
    if structure is not None:
        _by_structure[structure] = compiled
    return _compiled(key, compiled, platform, start)


def _compiled(key: tuple, compiled: Any, platform: str,
              start: float) -> Any:
    """Keeps a freshly compiled (or loaded) graph in the in-process cache,
    counts and logs it."""
    _cache[key] = compiled
    if compiled.from_cache:
        tc.counters["disk_cache_hits"] += 1
    if logs.enabled("compile_time"):
        phases = dict(compiled.compile_seconds)
        logs.channel_logger("compile_time").info(
            "%s graph compiled in %.3f s%s", platform,
            time.perf_counter() - start,
            "".join(f", {name} {seconds:.3f} s"
                    for name, seconds in phases.items()))

    if logs.enabled("output_code"):
        out = logs.channel_logger("output_code")
        for stage, stage_text in dict(compiled.stage_ir).items():
            out.info("stage %s:\n%s", stage, stage_text)
    if logs.enabled("memory"):
        logs.channel_logger("memory").info(
            "arena peak %d bytes vs %d bytes of intermediates "
            "(%d kernels)", compiled.arena_bytes,
            compiled.intermediate_bytes, compiled.num_kernels)
    return compiled


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
    graph. Errors as `compile_graph`.
    """
    device = graph_device(gm)
    imported = import_graph(gm, _GRAPH_NAME, lift_get_attrs=True,
                            requires_grad=requires_grad)
    _check_training_inputs(imported)
    text = imported.text
    if logs.enabled("graph_code"):
        logs.channel_logger("graph_code").info("fx graph:\n%s", text)
    native = _load_native()
    if native is None:
        raise CompileError(_native_error or "tc native extension not built",
                           text, dump_ir(text), native_missing=True)
    split_options = _split_options(_pipeline(device, text)[2])
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
    # The two halves compile at once: the native compiler releases the GIL.
    # A CUDA worker thread makes the graph's device current first, so that
    # its kernels load (the driver compiles their PTX) in the thread too.
    index = None
    if device.type == "cuda" and torch.version.hip is None:
        index = (device.index if device.index is not None
                 else torch.cuda.current_device())

    def compile_half(text: str) -> Any:
        if index is not None:
            torch.cuda.set_device(index)
        return _compile_module(text, device, dump_stages)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        halves = [pool.submit(compile_half, text)
                  for text in (forward_text, backward_text)]
        forward_native, backward_native = [h.result() for h in halves]
    forward = CompiledFunction(forward_native, forward_imported, gm, device)
    backward = CompiledFunction(backward_native, backward_imported, gm,
                                device)
    return TrainingFunctions(forward, backward, saved, saved_bytes,
                             num_outputs, imported.output_structure)


def _check_training_inputs(imported: ImportedGraph) -> None:
    if imported.lifted_attrs:
        raise Unsupported("training graphs take parameters as inputs; "
                          "this one reads them with get_attr")


def _joint_signature(imported: ImportedGraph,
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


def _resolve_attr(root: torch.nn.Module, target: str) -> torch.Tensor:
    return functools.reduce(getattr, target.split("."), root)


# ============================================================================
# Stable buffers for CUDA graph replay
# ============================================================================
#
# The CUDA runtime replays a graph's launch sequence as a CUDA graph once a
# call passes the same buffers as an earlier call (CUDAExecutable::run).
# By default everything tc allocates (the outputs, the arena) comes from
# PyTorch's caching allocator, as Inductor's buffers do, and goes back to it
# when the caller drops it: a steady loop that the allocator serves at the
# same addresses again replays, and nothing is held between calls (GPT-2's
# training step held 1.1 GB in a shared arena and output pools, and
# replayed nothing: its saved activations moved between steps).
# mode="reduce-overhead" asks for replay first (CompiledFunction.
# stage_inputs): the arena is then one block per device and stream, shared
# by every graph run on that stream (runs on one stream never overlap),
# each output comes from a small pool of the graph's own (_OutputPool), a
# tensor of which is handed out again once nothing else uses it, and
# inputs at new addresses are copied into buffers of the graph's own.
# TC_CUDA_GRAPHS=0 turns replay off.

_MAX_SHARED_ARENAS = 8
#: Staging buffers kept per input of a reduce-overhead graph (one per
#: shape; more than one only with the symbolic size).
_MAX_STAGED_SHAPES = 4
_arenas: dict[tuple[int, int], torch.Tensor] = {}


def cuda_graphs_enabled() -> bool:
    """Whether CUDA graphs replay launch sequences (TC_CUDA_GRAPHS != 0)."""
    return os.environ.get("TC_CUDA_GRAPHS", "1") != "0"


# CPU graphs' arenas: one block per thread, kept between runs (a graph's
# arena is dead once its run returns, and a thread runs one graph at a
# time), grown to the largest arena up to _MAX_KEPT_CPU_ARENA. A fresh
# block of tens of MB per call is fresh pages from the kernel at every
# call: ResNet-50 in bf16 at batch 16 ran 8% slower on two cores. Larger
# arenas are allocated per call, as eager allocates its intermediates.
_cpu_arenas = threading.local()
_MAX_KEPT_CPU_ARENA = 512 << 20


def _cpu_arena(nbytes: int) -> torch.Tensor:
    """A CPU graph's arena of `nbytes` for one run on this thread."""
    if nbytes > _MAX_KEPT_CPU_ARENA:
        return torch.empty(nbytes, dtype=torch.uint8)
    arena = getattr(_cpu_arenas, "block", None)
    if arena is None or arena.numel() < nbytes:
        _cpu_arenas.block = None
        del arena
        arena = torch.empty(nbytes, dtype=torch.uint8)
        _cpu_arenas.block = arena
    return arena


def _shared_arena(index: int, stream: int, nbytes: int) -> torch.Tensor | None:
    """The arena block of device `index` and `stream`, at least `nbytes`
    long (grown, and then at a new address, when a graph needs more); None
    when too many streams have one already."""
    key = (index, stream)
    arena = _arenas.get(key)
    if arena is None and len(_arenas) >= _MAX_SHARED_ARENAS:
        return None
    if arena is None or arena.numel() < nbytes:
        # The old block goes back to the caching allocator first (in stream
        # order: the runs that used it are queued before any new user), so
        # that growing never holds both.
        _arenas.pop(key, None)
        del arena
        arena = torch.empty(nbytes, dtype=torch.uint8,
                            device=torch.device("cuda", index))
        _arenas[key] = arena
    return arena


def _storage_uses(tensor: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata)


class _OutputPool:
    """Up to `capacity` tensors per output of a CUDA graph, each handed out
    again (as a new alias) once no tensor but the pool's own uses its
    memory: a steady loop gets each output at one of a few addresses. An
    output whose tensors are all held elsewhere gets a fresh one."""

    capacity = 2

    def __init__(self, specs: Sequence[tuple[torch.Size, torch.dtype, Any]],
                 device: torch.device):
        self.device = device
        # Per output: [(tensor, its storage's use count in the pool)].
        self.blocks: list[list[tuple[torch.Tensor, int]]] = [
            [] for _ in specs]

    def take(self, index: int, size: torch.Size,
             dtype: torch.dtype) -> torch.Tensor:
        blocks = self.blocks[index]
        for tensor, baseline in blocks:
            if tensor.shape == size and _storage_uses(tensor) == baseline:
                return tensor.detach()
        tensor = torch.empty(size, dtype=dtype, device=self.device)
        if len(blocks) == self.capacity:
            # A graph with the symbolic size: a free block of another size
            # makes room (its memory goes back to the allocator).
            for i, (held, baseline) in enumerate(blocks):
                if _storage_uses(held) == baseline:
                    del blocks[i]
                    break
        if len(blocks) < self.capacity:
            blocks.append((tensor, _storage_uses(tensor)))
            return tensor.detach()
        return tensor


class CompiledFunction:
    """A graph compiled by tc, callable with the graph's inputs."""

    def __init__(self, native: Any, imported: ImportedGraph,
                 gm: torch.fx.GraphModule,
                 device: torch.device = torch.device("cpu")):
        self.native = native
        self.device = device
        self.imported = imported
        self._root = gm
        self._attrs = list(imported.lifted_attrs)
        self._num_placeholders = (len(imported.input_names) - len(self._attrs)
                                  - (imported.seed_index is not None))
        self.arena_bytes = int(native.arena_bytes)
        # What the GPU kernels assume of each buffer (a CPU graph loaded
        # from the disk cache runs without tc._tc, and assumes nothing).
        self._alignment = (int(_load_native().gpu_buffer_alignment)
                           if device.type == "cuda" else 1)
        #: The arena grows by this many bytes per unit of the symbolic size.
        self.arena_bytes_per_symbol = int(
            getattr(native, "arena_bytes_per_symbol", 0))
        #: Whether the graph has the symbolic size (a `?` leading dimension
        #: of some inputs and outputs, docs/DynamicShapes.md).
        self.symbolic = any(-1 in shape for shape, _ in imported.input_specs)
        self.intermediate_bytes = int(native.intermediate_bytes)
        self.num_kernels = int(native.num_kernels)
        # What each call checks and allocates, computed once: calls are on
        # the host's critical path (a training step makes two per graph).
        self._input_checks = [(torch.Size(shape), dtype)
                              for shape, dtype in imported.input_specs]
        # Inputs whose leading dimension is the symbolic size.
        self._symbolic_inputs = [i for i, (shape, _) in enumerate(
            imported.input_specs) if shape and shape[0] == -1]
        # The inputs' and outputs' shapes at recent values of the size.
        self._at_symbols: dict[int, tuple[list, list]] = {}
        self._outputs = [(torch.Size(shape), dtype, alias)
                         for (shape, dtype), alias in zip(
                             imported.output_specs,
                             imported.outputs_alias_inputs)]
        self._cuda = device.type == "cuda"
        self._index = device.index
        self._graphs = (self._cuda and torch.version.hip is None
                        and cuda_graphs_enabled())
        #: mode="reduce-overhead" only (stage_inputs): the outputs' pool;
        #: per input, the address of its first call, its staging buffer,
        #: whether an output aliases it.
        self._pool: _OutputPool | None = None
        self._staging: list[list[Any]] | None = None
        self._input_permutations: list[tuple[int, ...] | None] | None = None
        self._output_inverses: list[tuple[int, ...] | None] | None = None

    def read_inputs_permuted(
            self, permutations: Sequence[tuple[int, ...] | None]) -> None:
        """Placeholder `i` of the compiled graph is the caller's input `i`
        permuted by `permutations[i]` (when not None): the graph was
        rewritten to take a dense permuted input (a transposed view) in its
        memory order and permute it back inside, where the permutation
        fuses into the kernels reading it, instead of a copy into a
        contiguous tensor before each call (layouts.read_in_place). An
        input whose permutation is not contiguous at run time is still
        copied."""
        self._input_permutations = list(permutations)

    def write_outputs_permuted(
            self, permutations: Sequence[tuple[int, ...] | None]) -> None:
        """Output `i` of the compiled graph is the caller's output `i`
        permuted by `permutations[i]` (when not None): the graph was
        rewritten to write an output that eager lays out permuted (a
        transposed weight, an attention input in [B, S, H, D] order) in
        that memory order, and the call returns the view with eager's
        strides (layouts.write_in_place)."""
        self._output_inverses = [
            None if p is None
            else tuple(sorted(range(len(p)), key=p.__getitem__))
            for p in permutations]

    def stage_inputs(self) -> None:
        """mode="reduce-overhead": an input at another address than in the
        function's first call is copied into a buffer of the function's
        own, so that the CUDA graph of the launch sequence replays whatever
        tensors the caller passes (a graph reading the first call's
        addresses, another the buffers); an input at its first
        address, such as a parameter, is read where it is. Inputs that
        outputs alias (written in place) are never staged. The outputs come
        from the graph's pool and the arena is the stream's shared block
        (see "Stable buffers" above). No effect off CUDA graphs."""
        if self._graphs:
            self._pool = _OutputPool(self._outputs, self.device)
            aliased = {alias for *_, alias in self._outputs
                       if alias is not None}
            self._staging = [[None, None, i in aliased]
                             for i in range(len(self._input_checks))]

    @property
    def graph_replays(self) -> int:
        """Calls that replayed a captured CUDA graph (0 off CUDA)."""
        return int(getattr(self.native, "graph_replays", 0))

    @property
    def graph_captures(self) -> int:
        """CUDA graphs captured of the launch sequence (0 off CUDA)."""
        return int(getattr(self.native, "graph_captures", 0))

    @property
    def stage_ir(self) -> dict[str, str]:
        """IR of each compiler stage (when compiled with dump_stages)."""
        return dict(self.native.stage_ir)

    @property
    def ir(self) -> str:
        """The fx-dialect text that was compiled."""
        return self.imported.text

    def draw_seed(self) -> torch.Tensor | None:
        """A fresh seed for a graph with random ops (None for others), from
        PyTorch's default generator of the graph's device: `torch.manual_seed`
        makes the compiled graph's random numbers reproducible."""
        if self.imported.seed_index is None:
            return None
        return torch.randint(-2**63, 2**63 - 1, (), dtype=torch.int64,
                             device=self.device)

    def __call__(self, *args: torch.Tensor,
                 seed: torch.Tensor | None = None) -> Any:
        imported = self.imported
        if len(args) != self._num_placeholders:
            raise TypeError(f"tc graph takes {self._num_placeholders} "
                            f"inputs, got {len(args)}")
        given = list(args)
        if self._input_permutations is not None:
            given = [a if p is None else a.permute(p)
                     for a, p in zip(given, self._input_permutations)]
        if self._attrs:
            given += [_resolve_attr(self._root, t) for t in self._attrs]
        if imported.seed_index is not None:
            given.insert(imported.seed_index,
                         self.draw_seed() if seed is None else seed)
        device, cuda = self.device, self._cuda
        symbol = -1
        checks, outputs_specs = self._input_checks, self._outputs
        if self.symbolic:
            symbol, checks, outputs_specs = self._at_symbol(given)
        # Stable buffers in reduce-overhead mode only; inside the caller's
        # own capture (torch.cuda.graph) they stay unused: the capture's
        # pool provides the memory.
        stable = (self._staging is not None
                  and not torch.cuda.is_current_stream_capturing())
        inputs = []
        pointers = []
        for i, (tensor, (size, dtype)) in enumerate(zip(given, checks)):
            if (not isinstance(tensor, torch.Tensor) or tensor.dtype != dtype
                    or tensor.shape != size or tensor.device != device):
                raise TypeError(
                    f"tc graph input #{i} ({imported.input_names[i]}) "
                    f"expects a {device} tensor of shape {tuple(size)} and "
                    f"dtype {dtype}, got {_describe(tensor)}")
            if not tensor.is_contiguous():
                tensor = tensor.contiguous()
            pointer = tensor.data_ptr()
            if cuda and pointer % self._alignment:
                # GPU kernels assume aligned buffers (vector accesses; the
                # runtime refuses others): a view at an odd offset is
                # copied.
                tensor = tensor.clone()
                pointer = tensor.data_ptr()
            if stable:
                tensor, pointer = self._stage(i, tensor, pointer)
            inputs.append(tensor)
            pointers.append(pointer)

        pool = self._pool if stable else None
        outputs = []
        for i, (size, dtype, alias) in enumerate(outputs_specs):
            if alias is not None:
                outputs.append(given[alias])
                pointers.append(pointers[alias])
                continue
            out = (pool.take(i, size, dtype) if pool is not None
                   else torch.empty(size, dtype=dtype, device=device))
            outputs.append(out)
            pointers.append(out.data_ptr())
        if self._output_inverses is not None:
            outputs = [o if p is None else o.permute(p)
                       for o, p in zip(outputs, self._output_inverses)]
        if cuda:
            index = self._index
            if index is None or torch.cuda.current_device() == index:
                self._run_cuda(pointers, index, stable, symbol)
            else:
                with torch.cuda.device(device):
                    self._run_cuda(pointers, index, stable, symbol)
        else:
            # The arena comes from PyTorch's allocator, like any
            # intermediate of an eager program, and is kept for the
            # thread's next run (_cpu_arena).
            nbytes = self.arena_bytes + self.arena_bytes_per_symbol * max(
                symbol, 0)
            arena = _cpu_arena(nbytes) if nbytes > 0 else None
            pointers.append(arena.data_ptr() if arena is not None else 0)
            if self.symbolic:
                self.native.run(pointers, symbol=symbol)
            else:
                self.native.run(pointers)
        if imported.output_structure == "single":
            return outputs[0]
        if imported.output_structure == "list":
            return outputs
        return tuple(outputs)

    def _at_symbol(self, given: Sequence[Any]) -> tuple[int, list, list]:
        """The symbolic size's value in a call (the leading size of the
        first input that has it), and the inputs' and outputs' shapes at
        that value."""
        first = self._symbolic_inputs[0]
        tensor = given[first]
        if not isinstance(tensor, torch.Tensor) or tensor.dim() == 0:
            raise TypeError(f"tc graph input #{first} "
                            f"({self.imported.input_names[first]}) expects a "
                            f"tensor with a leading batch dimension, got "
                            f"{_describe(tensor)}")
        symbol = tensor.shape[0]
        shapes = self._at_symbols.get(symbol)
        if shapes is not None:
            return symbol, *shapes

        def at(size: torch.Size) -> torch.Size:
            return torch.Size((symbol, *size[1:])) if size and size[0] == -1 \
                else size
        checks = [(at(size), dtype) for size, dtype in self._input_checks]
        outputs = [(at(size), dtype, alias)
                   for size, dtype, alias in self._outputs]
        if len(self._at_symbols) >= 64:
            self._at_symbols.clear()
        self._at_symbols[symbol] = (checks, outputs)
        return symbol, checks, outputs

    def _stage(self, index: int, tensor: torch.Tensor,
               pointer: int) -> tuple[torch.Tensor, int]:
        """Input `index` as the kernels read it (see stage_inputs)."""
        entry = self._staging[index]
        home, buffers, aliased = entry
        if home is None:
            home = entry[0] = pointer
        if pointer == home or aliased:
            return tensor, pointer
        # A buffer per shape (a graph with the symbolic size sees several;
        # the most recent few are kept, each with its own CUDA graph).
        if buffers is None:
            buffers = entry[1] = {}
        buffer = buffers.pop(tensor.shape, None)
        if buffer is None:
            buffer = torch.empty_like(
                tensor, memory_format=torch.contiguous_format)
            while len(buffers) >= _MAX_STAGED_SHAPES:
                del buffers[next(iter(buffers))]
        buffers[tensor.shape] = buffer  # the most recent last
        buffer.copy_(tensor)
        return buffer, buffer.data_ptr()

    def _run_cuda(self, pointers: list[int], index: int | None,
                  stable: bool, symbol: int) -> None:
        """Runs on the current stream of the current device (the graph's)
        with the arena appended to `pointers`: the stream's shared arena
        when `stable` (reduce-overhead, outside a caller's capture), else a
        block from PyTorch's caching allocator. `symbol`
        is the symbolic size's value (-1 without one)."""
        stream = _raw_stream(index)
        arena = None
        nbytes = self.arena_bytes + self.arena_bytes_per_symbol * max(
            symbol, 0)
        if nbytes > 0:
            if stable:
                arena = _shared_arena(
                    torch.cuda.current_device() if index is None else index,
                    stream, nbytes)
            if arena is None:
                # From PyTorch's caching allocator, like any intermediate
                # of an eager program.
                arena = torch.empty(nbytes, dtype=torch.uint8,
                                    device=self.device)
        pointers.append(arena.data_ptr() if arena is not None else 0)
        if self.symbolic:
            self.native.run(pointers, stream, symbol=symbol)
        else:
            self.native.run(pointers, stream)


def _raw_stream(index: int | None) -> int:
    """The current CUDA stream of device `index`, as a pointer (what
    Inductor's generated code asks torch for on every call)."""
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get is not None:
        return get(torch.cuda.current_device() if index is None else index)
    return torch.cuda.current_stream(index).cuda_stream


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return (f"a {value.device.type} tensor of shape {tuple(value.shape)} "
                f"and dtype {value.dtype}")
    return type(value).__name__
