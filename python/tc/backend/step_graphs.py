"""A training graph compiled in segments, replayed as two CUDA graphs a
step in reduce-overhead mode: one for its forward, one for its backward.

A graph cut at PyTorch's fused attention (`tc.backend.segments`) runs as
a chain of calls from Python: each segment's tc forward (a CUDA graph of
its own), the attention in eager between them, and in the backward
autograd's chain of tc's backward programs and the attention's backward.
A ViT or BERT of 12 layers is 26 programs and 24 attention calls a step,
about 17 ms of host time on the H200; a small model's step is that host
time (DeiT-tiny: 17.3 ms a step, Inductor's reduce-overhead 8.9 ms).

`StepGraphs` captures the chain instead, as
`torch.cuda.make_graphed_callables` captures a module: the forward once
as one CUDA graph (tc's programs issue their launches into it, the
attention its kernels), and the backward as another, autograd's backward
of that forward taken with `torch.autograd.grad` inside the capture. One
`autograd.Function` then replays them: a step costs two replays and the
copies below, whatever the depth.

What keeps the results eager's:

* Inputs at the address the previous call had them (parameters, buffers,
  a batch the caller reuses) are read in place; the others are copied
  into the graph's own buffers before each replay. An input read in place
  that moves later is copied from then on (the graphs are captured
  again, at most `_MAX_CAPTURES` times; then the chain runs uncaptured).
* Outputs and gradients are copied out of the graphs' memory, which the
  next replay overwrites: the caller may keep them across steps.
* A forward replays only once the previous replay's backward ran (two
  forwards before a backward, as in gradient accumulation over one
  graph: the second runs uncaptured), and a backward whose saved values
  a later forward replay overwrote raises instead of returning another
  step's gradients (`retain_graph` across steps). Backward twice with
  `retain_graph` replays the backward twice: the capture kept every saved
  value.
* An input whose every path reaches outputs without a gradient gets
  None, as in eager (`training_graph.output_reach`).

Capture needs tensors only (no symbolic size), grad mode, outputs that
alias no input and no other output, and no capture of the caller's
around the call; otherwise, or when a capture fails, the chain runs as
before, and a `fallbacks` log line says why.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.autograd.function import once_differentiable

import tc
from tc import logs
from tc.backend import training_graph
from tc.compiler import pools

_fallbacks = logs.channel_logger("fallbacks")

#: Captures of one graph before it stays uncaptured (inputs read in place
#: that keep moving: each capture copies more of them).
_MAX_CAPTURES = 3

#: The stream each device's captures run on (one per device: the programs
#: captured there share that stream's arena only at capture time).
_capture_streams: dict[int, torch.cuda.Stream] = {}


def capture_stream(index: int) -> torch.cuda.Stream:
    stream = _capture_streams.get(index)
    if stream is None:
        stream = _capture_streams[index] = torch.cuda.Stream(index)
    return stream


class _Captured:
    """One capture: the forward and backward graphs, the buffers they read
    and write, and which inputs they read in place."""

    def __init__(self, in_place: list[bool]):
        self.in_place = in_place
        self.inputs: list[torch.Tensor] = []
        self.outputs: list[torch.Tensor] = []
        self.differentiable: list[bool] = []
        self.grad_outputs: list[torch.Tensor] = []
        self.gradients: list[torch.Tensor | None] = []
        self.forward = torch.cuda.CUDAGraph()
        self.backward = torch.cuda.CUDAGraph()
        self.sequence = "tuple"
        #: Each forward replay's number: the backward of an older one finds
        #: its saved values overwritten. (A later capture has buffers of
        #: its own: it overwrites nothing of this one's.)
        self.generation = 0


class StepGraphs:
    """`run` (a training graph's segments, `segments.compile_segments`)
    replayed as a forward and a backward CUDA graph on device `index`
    (see the module's docstring); `eager` is the traced graph, whose
    inputs are `run`'s."""

    def __init__(self, run: Callable[..., Any], eager: torch.fx.GraphModule,
                 index: int):
        self.run = run
        self.index = index
        inputs = sum(1 for n in eager.graph.nodes if n.op == "placeholder")
        self.reaches = training_graph.output_reach(eager, inputs)
        self.previous: list[int] | None = None
        self.captured: _Captured | None = None
        self.captures = 0
        self.off = False
        #: The latest forward replay whose backward has not run yet.
        self.pending: weakref.ref | None = None
        self._leaves: list[bool] = []
        owner = self

        class Function(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                return owner._forward(ctx, args)

            @staticmethod
            @once_differentiable
            def backward(ctx, *grads):
                return owner._backward(ctx, grads)

        self.function = Function

    # -- calls -------------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        if (self.off or not torch.is_grad_enabled()
                or torch.cuda.is_current_stream_capturing()):
            return self.run(*args)
        pointers = self._pointers(args)
        if pointers is None:
            self._stop("an input is not a tensor on the graph's device")
            return self.run(*args)
        previous, self.previous = self.previous, pointers
        captured = self.captured
        if captured is not None:
            moved = [i for i, (inside, p) in enumerate(
                zip(captured.in_place, pointers))
                if inside and p != captured.inputs[i].data_ptr()]
            if moved:
                self._release()
                captured = None
                # Copied from now on.
                previous = [0 if i in moved else p
                            for i, p in enumerate(previous or pointers)]
        if captured is None:
            if previous is None or not any(
                    a.requires_grad for a in args):
                return self.run(*args)
            if self.captures >= _MAX_CAPTURES:
                self._stop(f"inputs read in place moved after "
                           f"{self.captures} captures")
                return self.run(*args)
            in_place = [p == q for p, q in zip(pointers, previous)]
            if not self._capture(args, in_place):
                return self.run(*args)
        if self.pending is not None and self.pending() is not None:
            # The previous replay's backward has not run: its saved values
            # must stay.
            tc.counters["step_graph_uncaptured"] += 1
            return self.run(*args)
        # Gradients of leaves (parameters) go to AccumulateGrad as they
        # are: it copies a tensor that something else holds (the graph's
        # buffer) or adds it to `.grad`; others are copied here.
        self._leaves = [a.is_leaf for a in args]
        outputs = self.function.apply(*args)
        return list(outputs) if self.captured.sequence == "list" else outputs

    def _pointers(self, args: Sequence[Any]) -> list[int] | None:
        pointers = []
        for a in args:
            if (not isinstance(a, torch.Tensor) or not a.is_cuda
                    or a.get_device() != self.index):
                return None
            pointers.append(a.data_ptr())
        return pointers

    def _stop(self, why: str) -> None:
        self.off = True
        self._release()
        _fallbacks.info("training graph in segments: no step graphs (%s); "
                        "its segments replay one by one", why)

    def _release(self) -> None:
        self.captured = None
        self.pending = None

    # -- capture -----------------------------------------------------------

    def _capture(self, args: Sequence[torch.Tensor],
                 in_place: list[bool]) -> bool:
        """Captures the forward and backward graphs for calls like `args`
        with `in_place` inputs read where they are; False (after a log
        line, and no capture from then on) where that fails."""
        self.captures += 1
        captured = _Captured(in_place)
        for a, inside in zip(args, in_place):
            if inside:
                static = a.detach()
            else:
                static = torch.empty_strided(a.shape, a.stride(),
                                             dtype=a.dtype, device=a.device)
                static.copy_(a.detach())
            captured.inputs.append(static.requires_grad_(a.requires_grad))
        wanting = [x for x in captured.inputs if x.requires_grad]
        stream = capture_stream(self.index)
        current = torch.cuda.current_stream(self.index)
        try:
            # A warm run on the capture stream first: what a first call on
            # a stream sets up (a library's workspace, tc's arena for the
            # stream) is not allowed inside the capture.
            fallbacks = tc.counters["runtime_fallbacks"]
            stream.wait_stream(current)
            with torch.cuda.stream(stream):
                outputs, wanted = self._outputs(self.run(*captured.inputs))
                torch.autograd.grad(
                    wanted, wanting, [torch.ones_like(o) for o in wanted],
                    allow_unused=True)
                del outputs, wanted
            current.wait_stream(stream)
            torch.cuda.synchronize(self.index)
            if tc.counters["runtime_fallbacks"] != fallbacks:
                raise NotCapturable("a segment fell back to eager")
            pool = torch.cuda.graph_pool_handle()
            with torch.cuda.graph(captured.forward, pool=pool,
                                  stream=stream):
                result = self.run(*captured.inputs)
            outputs, wanted = self._outputs(result)
            captured.sequence = "list" if isinstance(result, list) else "tuple"
            why = aliasing(captured.inputs, outputs)
            if why is not None:
                raise NotCapturable(why)
            captured.outputs = [o.detach() for o in outputs]
            captured.differentiable = [o.requires_grad for o in outputs]
            captured.grad_outputs = [torch.empty_like(o) for o in wanted]
            with torch.cuda.graph(captured.backward, pool=pool,
                                  stream=stream):
                # Every saved value stays (retain_graph): a second backward
                # of one forward replays this graph again on them.
                gradients = torch.autograd.grad(
                    wanted, wanting, captured.grad_outputs,
                    retain_graph=True, allow_unused=True)
            gradients = iter(gradients)
            captured.gradients = [next(gradients) if x.requires_grad
                                  else None for x in captured.inputs]
            del result, outputs, wanted, gradients
        except Exception as error:  # never the user's step: uncaptured
            current.wait_stream(stream)
            self._stop(f"{type(error).__name__}: {error}")
            return False
        self.captured = captured
        tc.counters["step_graph_captures"] += 1
        return True

    @staticmethod
    def _outputs(result: Any) -> tuple[list[torch.Tensor],
                                       list[torch.Tensor]]:
        """`run`'s result as a list of tensors, and those of them with a
        gradient; raises NotCapturable for anything else."""
        if not isinstance(result, (tuple, list)) or not all(
                isinstance(o, torch.Tensor) for o in result):
            raise NotCapturable("the graph returns more than tensors")
        return list(result), [o for o in result if o.requires_grad]

    # -- replays -----------------------------------------------------------

    def _forward(self, ctx: Any, args: Sequence[torch.Tensor]
                 ) -> tuple[torch.Tensor, ...]:
        captured = self.captured
        with torch.no_grad():
            for static, a, inside in zip(captured.inputs, args,
                                         captured.in_place):
                if not inside:
                    static.copy_(a)
        captured.forward.replay()
        captured.generation += 1
        tc.counters["step_graph_replays"] += 1
        ctx.captured, ctx.generation = captured, captured.generation
        # The autograd graph of this call holds the token; while it lives
        # and its backward has not run, the next call runs uncaptured.
        ctx.token = _Token()
        self.pending = weakref.ref(ctx.token)
        ctx.requires = [a.requires_grad for a in args]
        ctx.leaves = self._leaves
        with pools.allocating_in_pool(self.index):
            outputs = tuple(o.clone() for o in captured.outputs)
        ctx.mark_non_differentiable(*[
            o for o, d in zip(outputs, captured.differentiable) if not d])
        ctx.set_materialize_grads(False)
        return outputs

    def _backward(self, ctx: Any, grads: Sequence[torch.Tensor | None]
                  ) -> tuple[torch.Tensor | None, ...]:
        captured = ctx.captured
        if ctx.generation != captured.generation:
            raise RuntimeError(
                "tc: this step's saved values were overwritten by a later "
                "step of the same compiled training graph (a backward "
                "through an older step, e.g. with retain_graph=True); run "
                "the backward before the next step's forward")
        used = 0
        wanted = [g for g, d in zip(grads, captured.differentiable) if d]
        with torch.no_grad():
            for static, g in zip(captured.grad_outputs, wanted):
                if g is None:
                    static.zero_()
                else:
                    static.copy_(g)
        for i, g in enumerate(grads):
            if g is not None:
                used |= 1 << i
        captured.backward.replay()
        tc.counters["step_graph_replays"] += 1
        if self.pending is not None and self.pending() is ctx.token:
            self.pending = None
        result = []
        with pools.allocating_in_pool(self.index):
            for gradient, reach, requires, leaf in zip(
                    captured.gradients, self.reaches, ctx.requires,
                    ctx.leaves):
                if not requires or gradient is None or not reach & used:
                    result.append(None)
                else:
                    result.append(gradient if leaf else gradient.clone())
        return tuple(result)


def aliasing(inputs: Sequence[torch.Tensor],
             outputs: Sequence[torch.Tensor]) -> str | None:
    """Why copying `outputs` out of a CUDA graph would change what the
    caller sees (an output sharing memory with an input or another
    output), or None."""
    seen = {x.untyped_storage().data_ptr() for x in inputs}
    for o in outputs:
        storage = o.untyped_storage().data_ptr()
        if storage in seen:
            return "an output shares memory with an input or an output"
        seen.add(storage)
    return None


class _Token:
    """Held by one forward replay's autograd graph (see `pending`)."""


class NotCapturable(Exception):
    pass


def applies(index: int | None, settings: Any) -> bool:
    """Whether a training graph in segments on device `index` (None: not
    CUDA) replays as step graphs: in reduce-overhead mode (`settings`)
    with CUDA graphs on."""
    return (index is not None and settings.reduce_overhead
            and pools.cuda_graphs_enabled())
