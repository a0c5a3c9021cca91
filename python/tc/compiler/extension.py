"""tc's native extensions: loading `tc._tc` (the compiler) and `tc._runtime`
(cached CPU programs without the compiler), and what a failed compile
raises."""

from __future__ import annotations

import hashlib
import os
import pathlib
import threading
from types import ModuleType

import torch
import torch.fx

import tc
from tc.importer import Unsupported
from tc.native import load_extension as _load_extension


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
            # failed: tc's translator reproduces that.
            command += f" | {tc.tool_path('tc-translate')} --mlir-to-llvmir"
        return command


_native: ModuleType | None = None
_native_error: str | None = None
_native_lock = threading.Lock()


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
        # CPU graphs' convolutions and large products run as PyTorch's
        # (see build.target_pipeline and tc.library).
        from tc import library
        _native.set_cpu_convolution(library.convolution)
        _native.set_cpu_gemm(library.gemm)
        return _native


def cuda_attention_unavailable(dtype: torch.dtype, query: tuple, key: tuple,
                               value: tuple, bias_dims: tuple[int, int],
                               causal: bool, scale: float) -> str | None:
    """Why cuDNN cannot run a fused attention of these shapes (query
    (B, H, Sq, D), key (B, Hk, Skv, D), value (B, Hk, Skv, Dv)) on the
    current CUDA device as one call in tc's program; None when it can (the
    plan is made now and kept). `bias_dims`: the bias's batch and heads,
    (-1, -1) without one."""
    if dtype not in (torch.float16, torch.bfloat16):
        return f"{dtype} is not f16 or bf16"
    native = load_native()
    if native is None:
        return f"tc's native compiler is unavailable: {_native_error}"
    sizes = [query[0], query[1], key[1], query[2], key[2], query[3],
             value[3]]
    why = native.cuda_attention_unavailable(
        dtype == torch.bfloat16, sizes, list(bias_dims), causal, scale)
    return why or None


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
                else:
                    # Its graphs' large products run as tc._tc's do.
                    from tc import library
                    _runtime.set_cpu_gemm(library.gemm)
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
