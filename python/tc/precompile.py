"""tc in PyTorch's precompile cache: a warm process without Dynamo's trace.

tc's disk cache (`TC_CACHE_DIR`) saves the compiler's work, but a new
process still pays Dynamo's: tracing the Python bytecode into a graph takes
0.15-0.7 s for a small model on a CPU, far more than tc's part (~10 ms).
PyTorch's precompile cache (`TORCH_CACHING_PRECOMPILE=1`, then
`torch.compiler.save_cache_artifacts()` after the warm-up) saves Dynamo's
side: the transformed bytecode and guards, and per graph an artifact from
its backend. A later process with the same setting installs them at
`torch.compile(...)` and runs its first call without tracing.

tc's artifact (`TcArtifact`) is what its backend needs to rebuild the
compiled graph: Dynamo's graph module, the example inputs' and values'
shapes, strides, dtypes and devices, the nodes' stack traces (which name
the IR's locations, part of the disk cache's key), the grad mode and the
backend's options. Loading it calls tc's backend on that graph, which finds
its compiled code in `TC_CACHE_DIR`; a cache that was cleared compiles
again. Only static-shape graphs are recorded (a graph with symbolic sizes
is traced again in the new process), and only ones that pickle; the cache
is PyTorch's feature and keeps its rules (some guards on globals are
dropped, with its warning).
"""

from __future__ import annotations

import functools
import importlib
import logging
import pickle
from typing import Any, Callable, Sequence

import torch
import torch.fx

logger = logging.getLogger("tc")


def enabled() -> bool:
    """Whether Dynamo records precompile artifacts in this process (and
    this torch has the API tc uses)."""
    import torch._dynamo.config as config

    return bool(getattr(config, "caching_precompile", False)) and \
        _artifact_class() is not None


@functools.lru_cache(maxsize=None)
def _artifact_class() -> type | None:
    """TcArtifact, defined on PyTorch's BackendCacheArtifact when first
    needed (importing PyTorch's precompile module costs time that a
    process without the cache should not pay); None on a torch without
    it."""
    from tc import compat
    BackendCacheArtifact = compat.get("precompile_cache")
    if BackendCacheArtifact is None:  # an older torch
        return None
    global TcArtifact

    class TcArtifact(BackendCacheArtifact):  # type: ignore[no-redef]
        """A graph compiled by tc, as PyTorch's precompile cache keeps it
        (see the module's docstring)."""

        def after_deserialization(self) -> Any:
            return _rebuild(self.content)

    TcArtifact.__module__ = __name__
    TcArtifact.__qualname__ = "TcArtifact"
    return TcArtifact


def __getattr__(name: str) -> Any:
    # Unpickling a saved artifact looks up tc.precompile.TcArtifact.
    if name == "TcArtifact":
        artifact = _artifact_class()
        if artifact is not None:
            return artifact
    raise AttributeError(name)


def record(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
           kwargs: dict[str, Any]) -> None:
    """Records tc's artifact for Dynamo's graph `gm` (compiled by tc's
    backend with `example_inputs` and `kwargs`) when the precompile cache
    is on; a graph that cannot be recorded is logged at debug level and
    traced again in the next process."""
    if not enabled():
        return
    backend_id = gm.meta.get("backend_id")
    if not isinstance(backend_id, str):
        return
    inputs = [_spec(x) for x in example_inputs]
    if any(spec is None for spec in inputs):
        logger.debug("tc: precompile: graph %s has non-tensor or symbolic "
                     "inputs; not recorded", backend_id)
        return
    nodes = []
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        spec = _value_spec(value)
        if value is not None and spec is None:
            logger.debug("tc: precompile: graph %s has a value tc cannot "
                         "record (%s); not recorded", backend_id,
                         type(value).__name__)
            return
        nodes.append((node.op, _target_name(node.target), spec,
                      node.meta.get("stack_trace")))
    content = {"graph": gm, "inputs": inputs, "nodes": nodes,
               "kwargs": dict(kwargs), "grad": torch.is_grad_enabled()}
    try:
        pickle.dumps(content)
    except Exception as error:  # the cache must not break the program
        logger.debug("tc: precompile: graph %s does not pickle (%s); not "
                     "recorded", backend_id, error)
        return
    from torch._dynamo.precompile_context import PrecompileContext

    try:
        PrecompileContext.record_artifact(_artifact_class()(
            key=backend_id, content=content))
    except Exception as error:  # another torch's API
        logger.debug("tc: precompile: recording graph %s failed (%s)",
                     backend_id, error)
        return
    logger.debug("tc: precompile: recorded graph %s", backend_id)


#: tc's torch.compile backend, which sets itself here when `tc.backend` is
#: imported (this module sits below it: the backend records artifacts).
_backend: Callable[..., Any] | None = None


def set_backend(backend: Callable[..., Any]) -> None:
    """Makes `backend` the one that rebuilds saved artifacts."""
    global _backend
    _backend = backend


def _rebuild(content: dict[str, Any]) -> Any:
    """The compiled graph of a saved artifact: tc's backend on the rebuilt
    graph (from TC_CACHE_DIR when its entries are there)."""
    if _backend is None:
        # Unpickled before anything named the backend: loading it sets it.
        importlib.import_module("tc.backend")
    gm = content["graph"]
    _restore_meta(gm, content["nodes"])
    inputs = [_tensor(spec) for spec in content["inputs"]]
    with torch.set_grad_enabled(content["grad"]):
        return _backend(gm, inputs, **content["kwargs"])


def _spec(value: Any) -> tuple | None:
    """A static tensor's shape, strides, dtype, device and requires_grad;
    None for anything else."""
    if not isinstance(value, torch.Tensor) or any(
            isinstance(d, torch.SymInt) for d in (*value.shape,
                                                  *value.stride())):
        return None
    return (tuple(value.shape), tuple(value.stride()), value.dtype,
            str(value.device), value.requires_grad)


def _value_spec(value: Any) -> Any:
    """An example value as _spec gives it, through tuples and lists; None
    for what tc does not record."""
    if isinstance(value, (tuple, list)):
        specs = [_value_spec(v) for v in value]
        if any(s is None and v is not None for s, v in zip(specs, value)):
            return None
        return ("seq", specs)
    if isinstance(value, torch.Tensor):
        spec = _spec(value)
        return None if spec is None else ("tensor", spec)
    return None


def _tensor(spec: tuple) -> torch.Tensor:
    """An example input of `spec` (random values: tc compiles from
    shapes, never from an example's values)."""
    shape, stride, dtype, device, requires_grad = spec
    tensor = torch.empty_strided(shape, stride, dtype=dtype, device=device)
    if dtype.is_floating_point:
        tensor.normal_()
    else:
        tensor.zero_()
    return tensor.requires_grad_(requires_grad)


def _target_name(target: Any) -> str:
    """A node's target as the same text in every process."""
    if callable(target):
        return (f"{getattr(target, '__module__', None)}."
                f"{getattr(target, '__qualname__', None)}")
    return str(target)


def _restore_meta(gm: torch.fx.GraphModule, nodes: list[tuple]) -> None:
    """Gives `gm`'s nodes the example values (fake tensors of one fake
    mode) and stack traces they had in the first process. Nodes are
    matched in order (pickling renames some), each by its op and target;
    a graph that does not match keeps no metadata (tc's backend then
    traces it with make_fx)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    graph_nodes = list(gm.graph.nodes)
    if len(graph_nodes) != len(nodes) or any(
            node.op != op or _target_name(node.target) != target
            for node, (op, target, _, _) in zip(graph_nodes, nodes)):
        return
    fake_mode = FakeTensorMode()

    def fake(spec: Any) -> Any:
        if spec is None:
            return None
        kind, value = spec
        if kind == "seq":
            return tuple(fake(v) for v in value)
        shape, stride, dtype, device, requires_grad = value
        with fake_mode:
            tensor = torch.empty_strided(shape, stride, dtype=dtype,
                                         device=device)
        return tensor.requires_grad_(requires_grad) if requires_grad \
            else tensor

    for node, (_, _, spec, trace) in zip(graph_nodes, nodes):
        value = fake(spec)
        if value is not None:
            node.meta["example_value"] = value
        if trace is not None:
            node.meta["stack_trace"] = trace
