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
from typing import Any

import torch
import torch.fx

import tc
from tc import compiler, logs
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
        native = compiler._compile_module(text, device, dump_stages)
        return compiler.CompiledFunction(native, imported, gm, device)

    record = _record_path(text, device)
    chosen = _read_record(record)
    if chosen is not None:
        native = compiler._compile_module(text, device, dump_stages, chosen)
        tc.counters["autotune_cached"] += 1
        return _Autotuned({chosen: compiler.CompiledFunction(
            native, imported, gm, device)}, record, imported)

    candidates: dict[str, compiler.CompiledFunction] = {}
    for variant in CANDIDATES:
        try:
            native = compiler._compile_module(text, device, dump_stages,
                                              variant)
        except compiler.CompileError as error:
            if not variant:
                raise  # the default must compile
            logger.info("tc: max-autotune candidate '%s' does not compile: "
                        "%s", variant, error.message.strip()
                        .splitlines()[0] if error.message.strip() else "?")
            continue
        candidates[variant] = compiler.CompiledFunction(native, imported, gm,
                                                        device)
    return _Autotuned(candidates, record, imported)


def _record_path(text: str, device: torch.device):
    _, _, options = compiler._pipeline(device, text)
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
    picks it (when more than one compiled)."""

    def __init__(self, candidates: dict[str, Any], record, imported):
        self._candidates = candidates
        self._choice = "" if "" in candidates else next(iter(candidates))
        self._tuned = len(candidates) == 1
        self._record = record
        self._imported = imported

    @property
    def choice(self) -> str:
        """The chosen candidate's options ("" for the default schedule)."""
        return self._choice

    def stage_inputs(self) -> None:
        for function in self._candidates.values():
            function.stage_inputs()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._candidates[self._choice], name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._tuned:
            self._tuned = True
            self._tune(args)
        return self._candidates[self._choice](*args, **kwargs)

    def _tune(self, args: tuple) -> None:
        device = self._candidates[self._choice].device
        default = self._candidates[self._choice]
        seed = default.draw_seed()
        extra = {} if seed is None else {"seed": seed}

        def copies():
            return [a.clone() if isinstance(a, torch.Tensor) else a
                    for a in args]

        with torch.no_grad():
            reference = _tensors(default(*copies(), **extra))
            times: dict[str, float] = {}
            for variant, function in self._candidates.items():
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
        if not times:
            return
        self._choice = min(times, key=times.get)
        tc.counters["autotuned_graphs"] += 1
        logs.channel_logger("compile_time").info(
                    "max-autotune chose '%s' (%s)",
                    self._choice or "default", ", ".join(
                        f"{v or 'default'} {t * 1e3:.3f} ms"
                        for v, t in sorted(times.items(),
                                           key=lambda item: item[1])))
        # The others' kernels and buffers are not needed any more.
        self._candidates = {self._choice: self._candidates[self._choice]}
        try:
            self._record.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._record.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps({
                "choice": self._choice,
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
