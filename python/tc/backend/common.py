"""What every part of the backend shares: its settings (torch.compile's
`mode` and `options`), the log of internal errors and run-time fallbacks,
and the vote that keeps ranks of a distributed job deciding alike."""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import compat, distributed, logs


logger = logging.getLogger("tc")
_fallbacks = logs.channel_logger("fallbacks")


def _spell_complex_infinities() -> None:
    """FX writes a complex constant with a NaN or infinite part as
    `(nan+nanj)` in a graph's code, and `nanj` (`infj`) was undefined
    there: a decomposition's complex NaN (logaddexp's) made the graph fail
    when it ran in eager. Defines them as FX defines `nan` and `inf` (the
    hook is FX's internal one; without it, nothing changes)."""
    register = compat.get("fx_custom_builtin")
    if register is None:
        return
    register("nanj", "nanj = complex(0, float('nan'))", complex(0, math.nan))
    register("infj", "infj = complex(0, float('inf'))", complex(0, math.inf))


_spell_complex_infinities()

warned_native_missing: list[bool] = []

#: torch.compile modes tc implements.
#: On CUDA every mode replays a graph's launch sequence as a CUDA graph
#: once its buffers repeat. By default the buffers come from PyTorch's
#: allocator and nothing is held between calls; "reduce-overhead" keeps the
#: arena and the outputs at stable addresses of tc's own and copies an
#: input whose address changed into a buffer of tc's own, so that the graph
#: replays whatever tensors the caller passes (CompiledFunction.stage_inputs).
#: "max-autotune" times each GPU graph under tc's schedule candidates and
#: keeps the fastest (tc.compiler.autotune), with reduce-overhead's input
#: staging; "max-autotune-no-cudagraphs" tunes without it.
SUPPORTED_MODES = ("default", "reduce-overhead", "max-autotune",
                   "max-autotune-no-cudagraphs")
#: Keys of torch.compile's `options` that tc understands.
SUPPORTED_OPTIONS = {"dump_stages": bool}


@dataclasses.dataclass
class Settings:
    dump_stages: bool = False
    reduce_overhead: bool = False
    autotune: bool = False


#: Non-empty while `tc_backend` runs: compile decisions made inside it are
#: agreed by its own call of `agree`, once per Dynamo graph (nested calls
#: would pair differently on ranks whose paths differ).
in_backend: list[bool] = []


def agree(ok: bool, what: str, gm: torch.fx.GraphModule,
          inputs: Sequence[Any]) -> bool:
    """`tc.distributed.agree` on one compile decision, counted. One process
    agrees with itself: a piece that failed to compile already runs in
    eager, the rest stays compiled."""
    if distributed.world() == 1:
        return True
    agreed = distributed.agree(ok, what, distributed.fingerprint(gm, inputs))
    if ok and not agreed:
        tc.counters["rank_fallbacks"] += 1
        tc.counters["fallback_graphs"] += 1
    return agreed


def parse_kwargs(kwargs: dict[str, Any]) -> Settings:
    kwargs = dict(kwargs)
    mode = kwargs.pop("mode", None) or "default"
    options = kwargs.pop("options", None) or {}
    for key in kwargs:
        logger.warning("tc backend: argument '%s' is not supported; "
                       "ignored", key)
    if mode not in SUPPORTED_MODES:
        logger.warning("tc backend: mode '%s' is not a mode tc knows; "
                       "compiling as mode='default'", mode)
    settings = Settings(
        reduce_overhead=mode in ("reduce-overhead", "max-autotune"),
        autotune=mode.startswith("max-autotune"))
    if not isinstance(options, dict):
        logger.warning("tc backend: options must be a dict, got %s; "
                       "ignored", type(options).__name__)
        return settings
    for key, value in options.items():
        expected = SUPPORTED_OPTIONS.get(key)
        if expected is None:
            logger.warning("tc backend: option '%s' is not supported yet; "
                           "ignored (supported: %s)", key,
                           ", ".join(SUPPORTED_OPTIONS))
        elif not isinstance(value, expected):
            logger.warning("tc backend: option '%s' expects a %s, got %r; "
                           "ignored", key, expected.__name__, value)
        else:
            setattr(settings, key, value)
    return settings


def dynamic_reason(example_inputs: Sequence[Any]) -> str | None:
    """Why the inputs are symbolic (dynamic shapes), or None."""
    symbolic = (torch.SymInt, torch.SymFloat, torch.SymBool)
    for i, value in enumerate(example_inputs):
        if isinstance(value, symbolic):
            return f"input #{i} is a symbolic scalar ({value})"
        if isinstance(value, torch.Tensor):
            sizes = list(value.shape)
            try:
                sizes += list(value.stride())
            except RuntimeError:  # e.g. sparse tensors have no strides
                pass
            if any(isinstance(s, torch.SymInt) for s in sizes):
                return (f"input #{i} has a symbolic shape "
                        f"{tuple(value.shape)} (dynamic shapes)")
    return None


def raising(error: BaseException) -> Callable[[], Any]:
    """A compile step that raises `error` when called: a part whose compile
    failed while it started fails where its compile is waited for (and
    logged, as `partition.compile_subgraph` logs)."""
    def fail() -> Any:
        raise error
    return fail


def internal_error(what: str, error: BaseException) -> None:
    tc.counters["fallback_graphs"] += 1
    tc.counters["compile_failures"] += 1
    logger.warning("tc: internal error while %s; the graph runs in eager: "
                   "%s: %s", what, type(error).__name__, error)
    _fallbacks.info("internal error while %s", what, exc_info=error)


#: The attribute that marks an error as eager's for the caller's input (an
#: index out of range, checks.InputIndexChecks): raised to the caller as
#: eager raises it, not a failure of the compiled code.
_INPUT_ERROR = "tc_input_error"


def input_error(error: BaseException) -> BaseException:
    """A fresh copy of eager's `error`, marked as the input's fault."""
    fresh = type(error)(*error.args)
    setattr(fresh, _INPUT_ERROR, True)
    return fresh


def is_input_error(error: BaseException) -> bool:
    """Whether `error` is eager's for the input (input_error)."""
    return getattr(error, _INPUT_ERROR, False)


def runtime_fallback(what: str, error: BaseException) -> None:
    """Records that `what`, compiled by tc, raised `error` when it ran and
    runs in eager from now on: a warning, a `fallbacks` log line and
    `tc.counters["runtime_fallbacks"]`, which every check that tc compiled
    a graph reads (the eager run is not tc's)."""
    tc.counters["runtime_fallbacks"] += 1
    logger.warning("tc: %s failed at run time and runs in eager from now "
                   "on: %s", what, error)
    _fallbacks.info("eager at run time: %s: %s: %s", what,
                    type(error).__name__, error)
