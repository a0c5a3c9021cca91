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
  device with an event recorded after each (`checks.DeferredCheck`), and
  each replay reads them as soon as the graph has set them and raises
  eager's error. The host waits for the replay's first kernels only, not
  the whole graph, so the next call's host work overlaps this one's GPU
  work.
* A call's host work is what a short step's time is: its key reads only
  the inputs whose sizes vary (Dynamo's guards hold the others'), and the
  addresses of the rest in one pass.
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
    which inputs it reads in place, and its index checks."""

    def __init__(self, in_place: list[bool]):
        self.graph = torch.cuda.CUDAGraph()
        #: Per tensor input (ShapeGraphs.tensors): read in place.
        self.in_place = in_place
        self.inputs: list[Any] = []
        #: The addresses of the tensor inputs read in place, in order.
        self.pointers: list[int] = []
        #: (buffer, position) of each input copied in before a replay.
        self.copies: list[tuple[torch.Tensor, int]] = []
        self.outputs: list[Any] = []
        self.spec: Any = None
        self.checks: list[checks.DeferredCheck] = []


class ShapeGraphs:
    """`run` (a CUDA inference graph compiled in parts) replayed as one
    CUDA graph per size of its inputs on device `index`; `written` holds
    the positions of the inputs it writes in place, `varying` those whose
    sizes vary (None: any input's): Dynamo's guards hold the others'
    sizes, strides, dtypes and devices, so a call's key reads only these.
    See the module's docstring."""

    def __init__(self, run: Callable[..., Any], written: set[int],
                 index: int, varying: Sequence[int] | None = None):
        self.run = run
        self.written = written
        self.index = index
        self.varying = None if varying is None else set(varying)
        self.graphs: dict[tuple, _Graph] = {}
        #: The sizes seen once (the next call of one captures it).
        self.seen: set[tuple] = set()
        #: The tensor inputs' positions, what a key reads (tensors whose
        #: sizes vary, and numbers), and the previous call's addresses.
        self.tensors: list[int] | None = None
        self.keyed: list[tuple[int, bool]] = []
        self.previous: list[int] | None = None
        self.captures = 0
        self.off = False
        self.pool = None
        #: Where index checks' flags are read during a replay.
        self.reader: torch.cuda.Stream | None = None

    def __call__(self, *args: Any) -> Any:
        if self.off or torch.cuda.is_current_stream_capturing() or (
                torch.is_grad_enabled() and any(
                    isinstance(a, torch.Tensor) and a.requires_grad
                    for a in args)):
            return self.run(*args)
        if self.tensors is None:
            self._positions(args)
        key = self._key(args)
        if key is None:
            return self.run(*args)
        pointers = [args[i].data_ptr() for i in self.tensors]
        previous, self.previous = self.previous, pointers
        graph = self.graphs.get(key)
        if graph is not None and [
                p for p, inside in zip(pointers, graph.in_place)
                if inside] != graph.pointers:
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
            in_place = [p == q for p, q in zip(pointers, previous)]
            if any(not inside for i, inside in zip(self.tensors, in_place)
                   if i in self.written):
                return self.run(*args)  # a written input moved
            graph = self._capture(args, in_place)
            if graph is None:
                return self.run(*args)
            self.graphs[key] = graph
        return self._replay(graph, args)

    def _positions(self, args: Sequence[Any]) -> None:
        """Which inputs are tensors, and which a call's key reads."""
        self.tensors = [i for i, a in enumerate(args)
                        if isinstance(a, torch.Tensor)]
        self.keyed = [(i, isinstance(a, torch.Tensor))
                      for i, a in enumerate(args)
                      if not isinstance(a, torch.Tensor) or
                      self.varying is None or i in self.varying]

    def _key(self, args: Sequence[Any]) -> tuple | None:
        """The sizes and strides of the inputs whose sizes vary, and the
        numbers; None when such a tensor is not on the graph's device."""
        key = []
        for i, tensor in self.keyed:
            a = args[i]
            if tensor:
                if not a.is_cuda or a.get_device() != self.index:
                    return None
                key.append((a.shape, a.stride()))
            else:
                key.append(a)
        return tuple(key)

    def _warm(self, args: Sequence[Any]) -> Any:
        """The chain, on the capture stream."""
        stream = step_graphs.capture_stream(self.index)
        current = torch.cuda.current_stream(self.index)
        stream.wait_stream(current)
        with torch.cuda.stream(stream):
            result = self.run(*args)
        current.wait_stream(stream)
        return result

    def _capture(self, args: Sequence[Any], in_place: list[bool]
                 ) -> _Graph | None:
        """This size's graph, or None (after a log line, and no capture
        from then on) where the chain cannot be captured."""
        self.captures += 1
        graph = _Graph(in_place)
        graph.inputs = list(args)
        for i, inside in zip(self.tensors, in_place):
            a = args[i]
            if inside:
                graph.pointers.append(a.data_ptr())
                continue
            static = torch.empty_strided(a.shape, a.stride(),
                                         dtype=a.dtype, device=a.device)
            static.copy_(a)
            graph.inputs[i] = static
            graph.copies.append((static, i))
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
            graph.checks = list(deferred)
            current.wait_stream(stream)
            if tc.counters["runtime_fallbacks"] != fallbacks:
                raise step_graphs.NotCapturable("a part fell back to "
                                                "eager")
            leaves, graph.spec = pytree.tree_flatten(result)
            why = step_graphs.aliasing(
                [a for a in graph.inputs if isinstance(a, torch.Tensor)],
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
            for static, i in graph.copies:
                static.copy_(args[i])
        graph.graph.replay()
        tc.counters["shape_graph_replays"] += 1
        if graph.checks:
            if self.reader is None:
                self.reader = torch.cuda.Stream(self.index)
            for check in graph.checks:
                if check.failed(self.reader):
                    raise common.input_error(check.error)
        with pools.allocating_in_pool(self.index):
            outputs = [o.clone() if isinstance(o, torch.Tensor) else o
                       for o in graph.outputs]
        return pytree.tree_unflatten(outputs, graph.spec)


def applies(index: int | None) -> bool:
    """Whether a graph in parts on device `index` (None: not CUDA) replays
    per size: on NVIDIA GPUs with CUDA graphs on (TC_CUDA_GRAPHS)."""
    return (index is not None and torch.version.hip is None
            and pools.cuda_graphs_enabled())
