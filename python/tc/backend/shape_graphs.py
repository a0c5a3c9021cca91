"""A CUDA inference graph compiled in parts replayed as one CUDA graph per
size of its inputs (docs/DynamicShapes.md).

A graph with symbolic sequence lengths compiled once in parts
(`symbolic_rows.SymbolicRows._compile_parts`) runs as a chain of calls
from Python: each part's tc program, and attention, views and position
lookups in eager between them. BERT-base is 13 programs and some 150
eager ops a call: about 9 ms of host time on the H200 for 1-3 ms of GPU
work. `ShapeGraphs` captures the chain instead, once per size of the
inputs, as one CUDA graph (tc's programs issue their launches into it,
the eager ops their kernels); a call of a captured size is one replay.

* The first call at a size runs the chain (on the capture stream, where
  what a first call sets up must happen outside a capture); the second
  captures it and replays. At most `MAX_SIZES` sizes are captured per
  graph, all in one memory pool (one replay at a time on one stream: a
  size's intermediates are dead once its replay ends); later sizes run
  the chain, counted in `tc.counters["shape_graph_uncaptured"]`.
* Inputs at the address the previous call had them (parameters, buffers,
  a cache the graph writes) are read in place; the others are copied into
  the graph's own buffers before each replay. An input read in place that
  moves drops that size's graph (captured again, at most `MAX_CAPTURES`
  times in all). An input the graph writes is always the caller's: a call
  where it moved runs the chain.
* Outputs are copied out of the graph's memory, which the next replay
  overwrites; a graph whose outputs alias its inputs or each other is not
  captured.
* Index checks (`checks.InputIndexChecks`) cannot read the device while a
  stream captures: inside the capture they leave their flags on the
  device, and each replay reads them (one copy) and raises eager's error.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

import tc
from tc import logs
from tc.backend import checks, common, step_graphs
from tc.compiler import pools

_fallbacks = logs.channel_logger("fallbacks")

#: The most sizes of one graph captured (each holds its inputs' and
#: outputs' buffers; the pool their intermediates share is the largest's).
MAX_SIZES = 16
#: Captures of one graph in all (sizes, and again where inputs read in
#: place moved) before its calls all run the chain.
MAX_CAPTURES = 2 * MAX_SIZES


class _Graph:
    """One size's capture: its graph, the buffers it reads and writes,
    which inputs it reads in place, and its index checks' flags."""

    def __init__(self, in_place: list[bool]):
        self.graph = torch.cuda.CUDAGraph()
        self.in_place = in_place
        self.inputs: list[Any] = []
        self.pointers: list[int] = []
        self.outputs: list[Any] = []
        self.spec: Any = None
        self.flags: torch.Tensor | None = None
        self.errors: list[BaseException] = []


class ShapeGraphs:
    """`run` (a CUDA inference graph compiled in parts) replayed as one
    CUDA graph per size of its inputs on device `index`; `written` holds
    the positions of the inputs it writes in place. See the module's
    docstring."""

    def __init__(self, run: Callable[..., Any], written: set[int],
                 index: int):
        self.run = run
        self.written = written
        self.index = index
        self.graphs: dict[tuple, _Graph] = {}
        #: The sizes seen once (the next call of one captures it).
        self.seen: set[tuple] = set()
        self.previous: list[int] | None = None
        self.captures = 0
        self.off = False
        self.pool = None

    def __call__(self, *args: Any) -> Any:
        if self.off or torch.cuda.is_current_stream_capturing() or (
                torch.is_grad_enabled() and any(
                    isinstance(a, torch.Tensor) and a.requires_grad
                    for a in args)):
            return self.run(*args)
        pointers = self._pointers(args)
        if pointers is None:
            return self.run(*args)
        key = tuple((tuple(a.shape), a.stride(), a.dtype)
                    if isinstance(a, torch.Tensor) else a for a in args)
        previous, self.previous = self.previous, pointers
        graph = self.graphs.get(key)
        if graph is not None and any(
                inside and p != q for inside, p, q in zip(
                    graph.in_place, pointers, graph.pointers)):
            del self.graphs[key]  # an input read in place moved
            graph = None
        if graph is None:
            if key not in self.seen or previous is None:
                self.seen.add(key)
                return self._warm(args)
            if len(self.graphs) >= MAX_SIZES or \
                    self.captures >= MAX_CAPTURES:
                tc.counters["shape_graph_uncaptured"] += 1
                return self.run(*args)
            in_place = [isinstance(a, torch.Tensor) and p == q
                        for a, p, q in zip(args, pointers, previous)]
            if any(not in_place[i] for i in self.written):
                return self.run(*args)  # a written input moved
            graph = self._capture(args, pointers, in_place)
            if graph is None:
                return self.run(*args)
            self.graphs[key] = graph
        return self._replay(graph, args)

    def _pointers(self, args: Sequence[Any]) -> list[int] | None:
        """Each tensor input's address (0 for a number); None when a
        tensor is not on the graph's device."""
        pointers = []
        for a in args:
            if isinstance(a, torch.Tensor):
                if not a.is_cuda or a.get_device() != self.index:
                    return None
                pointers.append(a.data_ptr())
            else:
                pointers.append(0)
        return pointers

    def _warm(self, args: Sequence[Any]) -> Any:
        """The chain, on the capture stream."""
        stream = step_graphs.capture_stream(self.index)
        current = torch.cuda.current_stream(self.index)
        stream.wait_stream(current)
        with torch.cuda.stream(stream):
            result = self.run(*args)
        current.wait_stream(stream)
        return result

    def _capture(self, args: Sequence[Any], pointers: list[int],
                 in_place: list[bool]) -> _Graph | None:
        """This size's graph, or None (after a log line, and no capture
        from then on) where the chain cannot be captured."""
        self.captures += 1
        graph = _Graph(in_place)
        for a, inside in zip(args, in_place):
            if isinstance(a, torch.Tensor) and not inside:
                static = torch.empty_strided(a.shape, a.stride(),
                                             dtype=a.dtype, device=a.device)
                static.copy_(a)
                graph.inputs.append(static)
            else:
                graph.inputs.append(a)
        graph.pointers = [a.data_ptr() if isinstance(a, torch.Tensor)
                          else 0 for a in graph.inputs]
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        stream = step_graphs.capture_stream(self.index)
        current = torch.cuda.current_stream(self.index)
        fallbacks = tc.counters["runtime_fallbacks"]
        stream.wait_stream(current)
        try:
            with checks.deferred_index_checks() as deferred:
                with torch.cuda.graph(graph.graph, pool=self.pool,
                                      stream=stream):
                    result = self.run(*graph.inputs)
                    if deferred:
                        graph.flags = torch.stack([f for f, _ in deferred])
            graph.errors = [e for _, e in deferred]
            current.wait_stream(stream)
            if tc.counters["runtime_fallbacks"] != fallbacks:
                raise step_graphs.NotCapturable("a part fell back to "
                                                "eager")
            leaves, graph.spec = pytree.tree_flatten(result)
            why = step_graphs.aliasing([a for a in graph.inputs
                             if isinstance(a, torch.Tensor)],
                            [o for o in leaves if isinstance(o, torch.Tensor)])
            if why is not None:
                raise step_graphs.NotCapturable(why)
            graph.outputs = leaves
        except Exception as error:  # never the user's call: the chain
            current.wait_stream(stream)
            self.off = True
            self.graphs.clear()
            _fallbacks.info("graph in parts: no CUDA graph per size (%s: "
                            "%s); its parts run one by one",
                            type(error).__name__, error)
            return None
        tc.counters["shape_graph_captures"] += 1
        return graph

    def _replay(self, graph: _Graph, args: Sequence[Any]) -> Any:
        with torch.no_grad():
            for static, a, inside in zip(graph.inputs, args,
                                         graph.in_place):
                if not inside and isinstance(a, torch.Tensor):
                    static.copy_(a)
        graph.graph.replay()
        tc.counters["shape_graph_replays"] += 1
        if graph.flags is not None:
            for flag, error in zip(graph.flags.tolist(), graph.errors):
                if flag:
                    raise common.input_error(error)
        with pools.allocating_in_pool(self.index):
            outputs = [o.clone() if isinstance(o, torch.Tensor) else o
                       for o in graph.outputs]
        return pytree.tree_unflatten(outputs, graph.spec)


def applies(index: int | None) -> bool:
    """Whether a graph in parts on device `index` (None: not CUDA) replays
    per size: on NVIDIA GPUs with CUDA graphs on (TC_CUDA_GRAPHS)."""
    return (index is not None and torch.version.hip is None
            and pools.cuda_graphs_enabled())
