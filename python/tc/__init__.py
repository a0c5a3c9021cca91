"""tc: an MLIR-based compiler for PyTorch programs.

The compiler lives in C++ (the build tree's libraries, tools and the `_tc`
extension); this package locates them and connects `torch.compile` to them:

    torch.compile(model, backend="tc")

`tc.backend` is the torch.compile backend, `tc.importer` turns ATen FX
graphs into the `fx` dialect, `tc.compiler` calls the native compiler and
runs what it returns. `tc.counters` counts what tc compiled; `TC_LOGS` (or
`tc.set_logs`) shows it.
"""

from __future__ import annotations

import collections
import os
import pathlib

from tc.logs import set_logs
from tc.logs import init_from_env as _init_logs

__version__ = "0.1.0"

__all__ = ["build_dir", "cache_dir", "compile_exported", "counters",
           "reset_counters", "set_logs", "tc_opt_path", "tool_path"]

_SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]

#: What tc did since the last `reset_counters()`:
#: graphs_compiled: ATen graphs of which tc compiled at least one subgraph;
#: subgraphs_compiled: subgraphs tc compiled; kernels: kernels in them;
#: ops_compiled / ops_eager: ATen ops compiled by tc / left to eager;
#: fallback_graphs: graphs that ran entirely in eager;
#: aten_one_pass / aten_aot_autograd: Dynamo graphs lowered to ATen by tc's
#: one-pass trace / by AOTAutograd (aten_direct: of the one-pass ones,
#: those written without tracing, see `tc.direct`); training_graphs: graphs whose backward
#: tc's own autodiff (tc-autodiff) makes; guard_reruns: calls of a compiled
#: graph whose value guard failed, rerun in eager (`tc.backend`);
#: shape_specializations: compilations of a graph with symbolic shapes for
#: one concrete shape (`tc.backend.shapes.PerShape`); shape_cap_fallbacks:
#: calls of such a graph run in eager because it was compiled for
#: `PerShape.MAX_SHAPES` shapes already; symbolic_graphs: graphs
#: compiled once for every batch size (the symbolic size,
#: docs/DynamicShapes.md); runtime_fallbacks: compiled graphs that raised
#: when they ran and run in eager from then on
#: (`tc.backend.common.runtime_fallback`; a graph counted as compiled did
#: not run as tc's once this is not 0);
#: compile_failures: graphs or subgraphs tc failed to compile (an error in
#: tc, not an op it does not support), which run in eager; rank_fallbacks:
#: graphs this rank compiled but runs in eager because another rank could
#: not compile them (`tc.distributed.agree`); library_convolutions: calls
#: of PyTorch's convolution kernels made by tc's CPU graphs, library_gemms:
#: of PyTorch's matrix products (`tc.library`);
#: causal_masks: fused attentions whose constant causal mask tc replaced by
#: their `is_causal` flag; contiguous_masks: CUDA attention masks tc copies
#: to a contiguous last dimension, which PyTorch's fused kernels need
#: (`tc.attention`); aligned_biases: biases of fused attentions run in
#: eager padded to the strides PyTorch's kernels need
#: (`tc.attention.aligned_biases`); library_attentions: fused attentions
#: of CUDA inference graphs that run inside tc's program as one cuDNN
#: call (`tc.attention.library_attentions`); step_graph_captures,
#: step_graph_replays: captures and replays (forward and backward each) of
#: the CUDA graphs of whole training steps compiled in segments, in
#: reduce-overhead mode, and step_graph_uncaptured: calls of such a step
#: run segment by segment because the previous replay's backward had not
#: run (`tc.backend.step_graphs`); shape_graph_captures,
#: shape_graph_replays: captures and replays of the CUDA graphs of CUDA
#: inference graphs compiled in parts with symbolic sizes, one per size, and
#: shape_graph_uncaptured: calls of such a graph run part by part past the
#: sizes it captures (`tc.backend.shape_graphs`).
counters: collections.Counter[str] = collections.Counter()

_COUNTER_KEYS = ("graphs_compiled", "subgraphs_compiled", "kernels",
                 "ops_compiled", "ops_eager", "fallback_graphs",
                 "disk_cache_hits", "aten_one_pass", "aten_aot_autograd",
                 "aten_direct", "training_graphs", "guard_reruns",
                 "shape_specializations", "shape_cap_fallbacks",
                 "symbolic_graphs", "runtime_fallbacks", "compile_failures",
                 "rank_fallbacks", "library_convolutions", "library_gemms",
                 "causal_masks", "contiguous_masks", "aligned_biases",
                 "library_attentions", "step_graph_captures",
                 "step_graph_replays", "step_graph_uncaptured",
                 "shape_graph_captures", "shape_graph_replays",
                 "shape_graph_uncaptured")


def reset_counters() -> None:
    """Zeroes `tc.counters` (in place)."""
    counters.clear()
    for key in _COUNTER_KEYS:
        counters[key] = 0


def build_dir() -> pathlib.Path:
    """The CMake build directory: $TC_BUILD_DIR, or build/ of the checkout."""
    return pathlib.Path(os.environ.get("TC_BUILD_DIR", _SOURCE_ROOT / "build"))


def tool_path(name: str) -> pathlib.Path:
    """Path of tc's command-line tool `name` ("tc-opt", "tc-translate"):
    the build's, else the console script an installed wheel put beside
    the interpreter (or on PATH); the build's path when there is none."""
    built = build_dir() / "bin" / name
    if built.is_file():
        return built
    import shutil
    import sysconfig
    script = pathlib.Path(sysconfig.get_path("scripts")) / name
    if script.is_file():
        return script
    found = shutil.which(name)
    return pathlib.Path(found) if found else built


def tc_opt_path() -> pathlib.Path:
    """Path of the tc-opt tool (`tool_path`)."""
    return tool_path("tc-opt")


def cache_dir() -> pathlib.Path:
    """tc's cache directory: $TC_CACHE_DIR, else $XDG_CACHE_HOME/tc, else
    ~/.cache/tc. Not created here."""
    explicit = os.environ.get("TC_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg).expanduser() if xdg else (
        pathlib.Path.home() / ".cache")
    return base / "tc"


reset_counters()
_init_logs()


def compile_exported(ep):
    """Compiles a `torch.export.ExportedProgram`; see `tc.export`."""
    from tc.export import compile_exported as _compile_exported

    return _compile_exported(ep)
