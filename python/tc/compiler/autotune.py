"""mode="max-autotune": tc picks a GPU graph's schedule by timing it.

tc's GPU schedule has knobs (tc-cuda-pipeline's and tc-rocm-pipeline's
options): how many consecutive elements a thread handles, the largest
thread block of a row kernel and of a reducing one, whether unrolling may
copy trigonometry. The defaults are good on average; the best setting
depends on the graph's shapes and the GPU. Under max-autotune a graph is
compiled once per candidate (`CANDIDATES`), and its first call

1. runs every candidate on copies of the call's inputs (the caller's
   tensors are not touched, so graphs that update inputs in place are
   safe), with the same seed for random ops;
2. rejects a candidate whose outputs differ from the default schedule's
   beyond rounding (it is logged: that is a tc bug);
3. times the rest on the GPU and keeps the fastest, the default included:
   the tuned graph is never slower than the default by more than timing
   noise.

The choice is written under `tc.cache_dir()/autotune`, keyed on the graph,
the GPU, the pipeline options and the candidate list: a later process
compiles the chosen candidate alone (from the GPU disk cache when it is
warm) and times nothing.

A graph with the symbolic size (dynamic=True, docs/DynamicShapes.md) is
tuned at its first call's size, and the choice serves every size: the
record is keyed on the symbolic graph. The best candidate can differ at a
size far from the first (how many blocks a few rows fill); such a size is
not tuned again.

The whole graph gets one candidate (the options apply to every kernel);
choosing per kernel is future work. CPU graphs and training graphs compile
as mode="default" (with a log line): tc has no CPU schedule candidates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from typing import Any, Callable

import torch
import torch.fx

import tc
from tc import logs
from tc.compiler import build, extension
from tc.compiler.function import CompiledFunction
from tc.importer import ImportedGraph

logger = logging.getLogger("tc")

#: Schedule candidates: tc-cuda-pipeline (or tc-rocm-pipeline) options added
#: to the defaults; "" is the default schedule.
CANDIDATES = ("", "vector-width=2", "vector-width=1", "max-block-size=256",
              "max-block-size=512", "max-reduction-block-size=256",
              "max-reduction-block-size=1024", "replicate-trig=false")

#: How long each candidate is timed for (seconds, after warming up).
_TIME_BUDGET = 0.05
_logged_cpu: list[bool] = []


def compile_graph(gm: torch.fx.GraphModule, imported: ImportedGraph,
                  device: torch.device, dump_stages: bool) -> Any:
    """The graph compiled under max-autotune: a CompiledFunction-like
    object that tunes at its first call (see the module's docstring)."""
    text = imported.text
    if device.type != "cuda":
        if not _logged_cpu:
            _logged_cpu.append(True)
            logger.warning("tc: mode='max-autotune' compiles CPU graphs as "
                           "mode='default' (no CPU schedule candidates)")
        native = build.compile_module(text, device, dump_stages)
        return CompiledFunction(native, imported, gm, device)

    def make(native: Any) -> CompiledFunction:
        return CompiledFunction(native, imported, gm, device)

    record = _record_path(text, device)
    chosen = _read_record(record)
    if chosen is not None:
        native = build.compile_module(text, device, dump_stages, chosen)
        tc.counters["autotune_cached"] += 1
        return _Autotuned({chosen: native}, record, make)

    candidates: dict[str, Any] = {}
    for variant in CANDIDATES:
        try:
            candidates[variant] = build.compile_module(
                text, device, dump_stages, variant)
        except extension.CompileError as error:
            if not variant:
                raise  # the default must compile
            logger.info("tc: max-autotune candidate '%s' does not compile: "
                        "%s", variant, error.message.strip()
                        .splitlines()[0] if error.message.strip() else "?")
    return _Autotuned(candidates, record, make)


def _record_path(text: str, device: torch.device):
    _, _, options = build.target_pipeline(device, text)
    key = hashlib.sha256()
    for part in ("tc-autotune-1", torch.cuda.get_device_name(device),
                 options, "\n".join(CANDIDATES), text):
        data = part.encode()
        key.update(len(data).to_bytes(8, "little"))
        key.update(data)
    return tc.cache_dir() / "autotune" / f"{key.hexdigest()}.json"


def _read_record(path) -> str | None:
    try:
        choice = json.loads(path.read_text())["choice"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return choice if choice in CANDIDATES else None


class _Autotuned:
    """Forwards to the chosen candidate's CompiledFunction; the first call
    picks it (when more than one compiled). Each candidate is tried through
    a CompiledFunction of its own, dropped afterwards: the function kept
    starts fresh (CUDA graphs and reduce-overhead's staging buffers are
    made for the caller's tensors, not the tuning copies)."""

    #: A candidate replaces the default only when this much faster: timing
    #: noise alone does not move a graph off the default schedule.
    MIN_GAIN = 0.03

    def __init__(self, natives: dict[str, Any], record,
                 make: Callable[[Any], Any]):
        """`natives`: each candidate's compiled graph; `make` wraps one in
        a CompiledFunction."""
        self._natives = natives
        self._record = record
        self._make = make
        self._choice = "" if "" in natives else next(iter(natives))
        self._function = self._make(natives[self._choice])
        self._staged = False
        if len(natives) == 1:
            self._natives = {}  # nothing to tune

    @property
    def choice(self) -> str:
        """The chosen candidate's options ("" for the default schedule)."""
        return self._choice

    def stage_inputs(self) -> None:
        self._staged = True
        self._function.stage_inputs()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._natives:
            natives, self._natives = self._natives, {}
            self._tune(natives, args)
        return self._function(*args, **kwargs)

    def _tune(self, natives: dict[str, Any], args: tuple) -> None:
        default = self._make(natives[self._choice])
        device = default.device
        seed = default.draw_seed()
        extra = {} if seed is None else {"seed": seed}

        def copies():
            return [a.clone() if isinstance(a, torch.Tensor) else a
                    for a in args]

        with torch.no_grad():
            reference = _tensors(default(*copies(), **extra))
            times: dict[str, float] = {}
            for variant, native in natives.items():
                function = default if variant == self._choice else \
                    self._make(native)
                inputs = copies()
                try:
                    outputs = _tensors(function(*inputs, **extra))
                    if variant and not _same(outputs, reference):
                        logger.warning(
                            "tc: max-autotune candidate '%s' computes other "
                            "results than the default schedule; not used",
                            variant)
                        continue
                    times[variant] = _time(function, inputs, extra, device)
                except Exception as error:  # a candidate must not break us
                    logger.warning("tc: max-autotune candidate '%s' failed "
                                   "to run: %s", variant, error)
            # The default again, last: the first candidate timed pays for
            # a GPU still raising its clocks (it read 0.039 against every
            # other's 0.026 ms on the H100), which alone moved graphs off
            # the default schedule.
            if self._choice in times:
                try:
                    times[self._choice] = min(times[self._choice], _time(
                        default, copies(), extra, device))
                except Exception as error:  # timed once: keep that
                    logger.debug("tc: max-autotune's second timing of the "
                                 "default failed: %s", error)
        if not times:
            return
        best = min(times, key=times.get)
        if self._choice in times and \
                times[best] > times[self._choice] * (1 - self.MIN_GAIN):
            best = self._choice
        tc.counters["autotuned_graphs"] += 1
        logs.channel_logger("compile_time").info(
            "max-autotune chose '%s' (%s)", best or "default", ", ".join(
                f"{v or 'default'} {t * 1e3:.3f} ms"
                for v, t in sorted(times.items(), key=lambda item: item[1])))
        if best != self._choice:
            self._choice = best
            self._function = self._make(natives[best])
            if self._staged:
                self._function.stage_inputs()
        try:
            self._record.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._record.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps({
                "choice": best,
                "milliseconds": {v or "default": t * 1e3
                                 for v, t in times.items()}}) + "\n")
            tmp.replace(self._record)
        except OSError:
            pass


def _tensors(outputs: Any) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [o for o in outputs if isinstance(o, torch.Tensor)]


def _same(outputs: list[torch.Tensor],
          reference: list[torch.Tensor]) -> bool:
    """Equal up to the rounding another summation order gives."""
    if len(outputs) != len(reference):
        return False
    for out, ref in zip(outputs, reference):
        if out.shape != ref.shape or out.dtype != ref.dtype:
            return False
        if out.is_floating_point() or out.is_complex():
            if not torch.allclose(out, ref, rtol=1e-3, atol=1e-3,
                                  equal_nan=True):
                return False
        elif not torch.equal(out, ref):
            return False
    return True


def _time(function: Any, inputs: list, extra: dict,
          device: torch.device) -> float:
    """Seconds per call, the best of three rounds after warming up (CUDA
    graph capture included)."""
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(3):
        function(*inputs, **extra)
    sync()
    start = time.perf_counter()
    function(*inputs, **extra)
    sync()
    once = max(time.perf_counter() - start, 1e-6)
    reps = max(3, min(200, int(_TIME_BUDGET / 3 / once)))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(reps):
            function(*inputs, **extra)
        sync()
        best = min(best, (time.perf_counter() - start) / reps)
    return best
