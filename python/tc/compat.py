"""What tc takes from PyTorch that not every supported version has.

tc runs on torch 2.11 through 2.14.1 (`SUPPORTED_TORCH`: 2.11 on the GPU
machine, 2.13 in CI's main suite, 2.14.1 in CI's wheel check) and keeps to
public APIs where PyTorch has them. Where it uses something a version may
lack, the probe lives here, by name (`FEATURES`), with what tc does
without it; the code that needs it asks here, `python -m tc` prints which
ones this torch has, and test/python/test_compat.py runs each fallback.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, NamedTuple

import torch

#: The torch releases tc is tested with (oldest, newest).
SUPPORTED_TORCH = ("2.11", "2.14.1")


def release(version: str) -> tuple[int, ...]:
    """(2, 14, 1) from "2.14.1+cpu", (2, 15, 0) from "2.15.0.dev20261101"."""
    match = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if not match:
        return ()
    return tuple(int(part) for part in match.groups() if part is not None)


def torch_supported(version: str | None = None) -> bool:
    """Whether `version` (this torch's by default) lies within
    SUPPORTED_TORCH, by release number."""
    low, high = (release(v) for v in SUPPORTED_TORCH)
    this = release(version or torch.__version__)
    return low <= this[:len(low)] and this <= high


class Feature(NamedTuple):
    """A PyTorch interface tc uses where it exists."""
    #: What it is, in PyTorch.
    what: str
    #: What tc does on a torch without it.
    without: str
    #: Returns the interface, or None on a torch without it.
    probe: Callable[[], Any]
    #: Whether only GPU graphs use it.
    gpu: bool = False


def _precompile_artifact():
    try:
        from torch._dynamo.precompile_context import BackendCacheArtifact
    except ImportError:
        return None
    return BackendCacheArtifact


def _fx_custom_builtin():
    return getattr(torch.fx.graph, "_register_custom_builtin", None)


def _autocast_markers():
    import torch.amp.autocast_mode as mode
    markers = tuple(getattr(mode, name) for name in
                    ("_enter_autocast", "_exit_autocast")
                    if hasattr(mode, name))
    return markers or None


def _min_cut_partition():
    try:
        from torch._functorch.partitioners import \
            min_cut_rematerialization_partition
    except ImportError:
        return None
    return min_cut_rematerialization_partition


def _preserved_cia_ops():
    try:
        from torch._export.utils import _is_preservable_cia_op
        from torch.export.decomp_utils import PRESERVED_ATEN_CIA_OPS
    except ImportError:
        return None
    return _is_preservable_cia_op, PRESERVED_ATEN_CIA_OPS


def _lazy_graph_module():
    try:
        from torch.fx._lazy_graph_module import _LazyGraphModule
    except ImportError:
        return None
    return _LazyGraphModule


def _raw_cuda_stream():
    return getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _cuda_mem_pool():
    """A maker of `torch.cuda.MemPool`s that PyTorch's other allocations
    may use when they would otherwise run out of memory (where this torch
    has that option)."""
    pool = getattr(torch.cuda, "MemPool", None)
    if pool is None or not hasattr(torch.cuda, "use_mem_pool"):
        return None
    import inspect
    try:
        takes = "use_on_oom" in inspect.signature(pool).parameters
    except (TypeError, ValueError):
        takes = False
    return (lambda: pool(use_on_oom=True)) if takes else pool


FEATURES: dict[str, Feature] = {
    "precompile_cache": Feature(
        "torch._dynamo.precompile_context.BackendCacheArtifact",
        "tc's graphs are not kept in PyTorch's precompile cache "
        "(TORCH_CACHING_PRECOMPILE): a new process traces again",
        _precompile_artifact),
    "fx_custom_builtin": Feature(
        "torch.fx.graph._register_custom_builtin",
        "a complex NaN or infinite constant in a graph's code stays "
        "undefined there (the graph runs in eager if it needs one)",
        _fx_custom_builtin),
    "autocast_markers": Feature(
        "torch.amp.autocast_mode._enter_autocast / _exit_autocast",
        "graphs with an autocast region go through AOTAutograd instead of "
        "tc's one-pass trace",
        _autocast_markers),
    "min_cut_partition": Feature(
        "torch._functorch.partitioners.min_cut_rematerialization_partition",
        "training graphs lowered by AOTAutograd save every intermediate "
        "their backward reads (more memory)",
        _min_cut_partition),
    "preserved_cia_ops": Feature(
        "torch._export.utils._is_preservable_cia_op, "
        "torch.export.decomp_utils.PRESERVED_ATEN_CIA_OPS",
        "which composite ops a decomposition table covers is read from the "
        "table itself",
        _preserved_cia_ops),
    "lazy_graph_module": Feature(
        "torch.fx._lazy_graph_module._LazyGraphModule",
        "each graph tc rewrites writes its Python code at once (about "
        "0.2 s for a BERT-base graph), not only when it runs in eager",
        _lazy_graph_module),
    "raw_cuda_stream": Feature(
        "torch._C._cuda_getCurrentRawStream",
        "each CUDA graph call asks torch.cuda.current_stream() (slower on "
        "the host)",
        _raw_cuda_stream, gpu=True),
    "cuda_mem_pool": Feature(
        "torch.cuda.MemPool, torch.cuda.use_mem_pool",
        "tc's CUDA graphs allocate from PyTorch's shared cache, where "
        "other allocations move their buffers and replays wait for a new "
        "capture",
        _cuda_mem_pool, gpu=True),
}


@functools.lru_cache(maxsize=None)
def get(name: str) -> Any:
    """FEATURES[name]'s interface on this torch, or None without it."""
    return FEATURES[name].probe()


def graph_module(root: Any, graph: torch.fx.Graph) -> torch.fx.GraphModule:
    """`torch.fx.GraphModule(root, graph)`, whose Python code is written
    when first needed (it runs in eager, its code is read) where this torch
    has FEATURES["lazy_graph_module"]: most graphs tc builds are compiled,
    never run as Python."""
    cls = get("lazy_graph_module") or torch.fx.GraphModule
    return cls(root, graph)


def features() -> dict[str, bool]:
    """Which FEATURES this torch has."""
    return {name: get(name) is not None for name in FEATURES}
