"""`TC_REPRO`: minified repros from a user's run, with no change to the
program. With `TC_REPRO=accuracy` the first call of each graph tc compiled
also runs the graph in eager; with `TC_REPRO=1` a graph of which tc left
ops to eager is looked at. Where tc's result differs (or ops fell back),
the graph is minified (tc.debug.minify) and its repro written to
`$TC_REPRO_DIR` (default `tc_repro/`), with a warning naming the file; a
graph whose result differs runs in eager from then on (a run-time
fallback), that call included. A graph whose inputs require grad
(training) is judged by its outputs and its inputs' gradients
(tc.debug.minify.outputs_and_gradients: its forward and backward run
again, in eager and with tc, on copies of the inputs)."""

from __future__ import annotations

import itertools
import logging
import os
import pathlib
from typing import Any, Callable

import torch
import torch.fx

import tc
from tc.debug.minify import falls_back, minify, mismatches, write_repro

logger = logging.getLogger("tc")

#: True while a repro is being made: the minifier's own compiles are not
#: checked again.
_active = False
_numbers = itertools.count()


def repro_on_failure(gm: torch.fx.GraphModule, compiled: Callable,
                     mode: str, fell_back: bool) -> Callable:
    """`compiled`, whose first call (outside a repro's own compiles) writes
    a repro of `gm` when it fails as `mode` says: "accuracy", a result (or
    a training graph's gradients) unlike eager's; else ops left to eager
    (`fell_back`: tc's compile of gm left some)."""
    if _active:
        return compiled
    checked = wrong = False

    def run(*args: Any) -> Any:
        nonlocal checked, wrong
        if wrong:
            return gm(*args)
        if checked:
            return compiled(*args)
        checked = True
        saved = [a.detach().clone().requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) else a for a in args]
        if mode == "accuracy":
            if _write(gm, saved, mismatches,
                      "tc's result differs from eager's"):
                # Never a wrong result: eager's, now and from now on.
                wrong = True
                tc.counters["runtime_fallbacks"] += 1
                return gm(*args)
        elif fell_back:
            _write(gm, saved, falls_back, "tc leaves an op to eager")
        return compiled(*args)

    return run


def _write(gm: torch.fx.GraphModule, inputs: list, fails: Callable,
           what: str) -> bool:
    """Whether `fails` holds on gm; if so, writes the minified repro."""
    global _active
    _active = True
    try:
        if not fails(gm, inputs):
            return False
        small, small_inputs = minify(gm, inputs, fails)
        folder = pathlib.Path(os.environ.get("TC_REPRO_DIR", "tc_repro"))
        folder.mkdir(parents=True, exist_ok=True)
        path = write_repro(small, small_inputs,
                           folder / f"repro_{next(_numbers)}.py", what)
        ops = sum(n.op in ("call_function", "call_method", "call_module")
                  for n in small.graph.nodes)
        logger.warning("tc: TC_REPRO: %s; a graph of %d ops that shows it "
                       "is in %s", what, ops, path)
        return True
    except Exception as error:  # noqa: BLE001 - never break the run
        logger.warning("tc: TC_REPRO: no repro written: %s: %s",
                       type(error).__name__, error)
        return False
    finally:
        _active = False
