"""tc's native extensions: loading `tc._tc` (the compiler) and `tc._runtime`
(cached CPU programs without the compiler), and what a failed compile
raises."""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import pathlib
import sys
import threading
from types import ModuleType

import torch
import torch.fx

import tc
from tc.importer import Unsupported


GRAPH_NAME = "main"


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


_native: ModuleType | None = None
_native_error: str | None = None
_native_lock = threading.Lock()


def _extension_dirs() -> list[pathlib.Path]:
    """Where the extensions are: the tc package's folder (installed), then
    the checkout's build."""
    return [pathlib.Path(tc.__file__).resolve().parent,
            tc.build_dir() / "python" / "tc"]


def extension_path(name: str) -> pathlib.Path | None:
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
    path = extension_path(name)
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


def load_native() -> ModuleType | None:
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
        # CPU graphs' convolutions run as PyTorch's (see
        # build.target_pipeline).
        from tc import library
        _native.set_cpu_convolution(library.convolution)
        return _native


def native_available() -> bool:
    """Whether the native extension `tc._tc` can be loaded."""
    return load_native() is not None


def native_error() -> str | None:
    """Why the native extension is unavailable (None if it is available)."""
    load_native()
    return _native_error


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


_runtime: ModuleType | None = None
_runtime_error: str | None = None


def load_runtime() -> ModuleType | None:
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


def decomposition_table() -> dict[str, dict[str, bool]]:
    """The ATen ops tc's decompositions lower
    (tc/Conversion/FXToPrim/Decompositions.def, through tc._runtime): op ->
    {"symbolic": whether it takes the graph's symbolic size}; empty without
    tc's native code."""
    runtime = load_runtime()
    return {op: dict(properties) for op, properties in
            getattr(runtime, "DECOMPOSITIONS", {}).items()}


def decomposition_limits() -> dict[str, int]:
    """The sizes tc's decompositions take (tc/Conversion/FXToPrim/Limits.h,
    through tc._runtime), by name; empty without tc's native code."""
    runtime = load_runtime()
    return dict(getattr(runtime, "DECOMPOSITION_LIMITS", {}))
