"""Numerics bisection: the first pass after which tc's result leaves eager's.

Every stage of tc is MLIR text that `tc-opt` runs. `bisect` imports an ATen
graph, runs the decomposition stage pass by pass (`tc-opt
--mlir-print-ir-after-all`), and compiles the IR after each pass through
the rest of the CPU pipeline (the runtime takes fx or prim input: the
stage's passes have nothing left to do on their own output), runs it on the
inputs and compares with eager at torch's tolerance. The first pass whose
output computes another result is named, with its IR before and after and
the `tc-opt` command that runs that pass alone; when every pass of the
stage is right but the whole compile is not, the fault is in a later stage
(fusion, loops, LLVM) and the command runs the fusion stage on the prim IR.

    report = tc.debug.bisect(fn, x)
    print(report)

CPU only for now; needs `tc-opt` (a checkout build).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex
import subprocess
import tempfile
from typing import Any, Callable

import torch
import torch.fx

import tc
from tc import importer
from tc.compiler import CompiledFunction, build, extension

_DUMP = re.compile(r"^// -----// IR Dump After (\S+) \(([^)]*)\).*//----- //$",
                   re.MULTILINE)


@dataclasses.dataclass
class Bisection:
    """What `bisect` found."""
    #: The decomposition stage's passes, in order (their pipeline texts).
    passes: list[str]
    #: The first pass after which the result differs from eager's; "later
    #: stages" when the decomposition is right but the whole compile is
    #: not; None when tc's result is eager's.
    first_wrong: str | None
    #: The largest absolute difference from eager's result there.
    difference: float = 0.0
    #: The pass's input and output IR, and the tc-opt command that runs the
    #: pass on the input.
    before: pathlib.Path | None = None
    after: pathlib.Path | None = None
    command: str = ""

    def __str__(self) -> str:
        if self.first_wrong is None:
            return "tc's result is eager's after every pass"
        return (f"first wrong: {self.first_wrong} (largest difference "
                f"{self.difference:.3g}); before: {self.before}, after: "
                f"{self.after}; rerun: {self.command}")


def _top_level(pipeline: str) -> list[str]:
    """The top-level items of a textual pass pipeline
    (`builtin.module(a{x=1}, func.func(b), c)` -> `a{x=1}`,
    `func.func(b)`, `c`)."""
    inner = pipeline[pipeline.index("(") + 1:pipeline.rindex(")")]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(inner[start:i].strip())
            start = i + 1
    items.append(inner[start:].strip())
    return [item for item in items if item]


def _difference(actual: Any, expected: Any) -> float | None:
    """None when `actual` is `expected` at torch's tolerance, else the
    largest absolute difference (inf for a shape or dtype mismatch)."""
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
        return None
    except AssertionError:
        pass
    pairs = zip(actual, expected) if isinstance(expected, (tuple, list)) \
        else [(actual, expected)]
    largest = 0.0
    for a, e in pairs:
        if not isinstance(a, torch.Tensor) or a.shape != e.shape:
            return float("inf")
        diff = (a.double() - e.double()).abs().nan_to_num(float("inf"))
        largest = max(largest, float(diff.max()) if diff.numel() else 0.0)
    return largest


def bisect(fn: Callable | torch.fx.GraphModule, *inputs: Any,
           folder: str | pathlib.Path | None = None) -> Bisection:
    """Bisects tc's CPU compile of `fn` (a function or module of tensors,
    or an ATen FX graph) on `inputs`; the IR files go to `folder` (a new
    temporary folder by default)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = fn if isinstance(fn, torch.fx.GraphModule) else make_fx(fn)(*inputs)
    if any(isinstance(v, torch.Tensor) and v.device.type != "cpu"
           for v in inputs):
        raise NotImplementedError("tc.debug.bisect runs the CPU pipeline")
    tc_opt = tc.tc_opt_path()
    if not tc_opt.exists():
        raise FileNotFoundError(f"tc-opt is not built ({tc_opt})")
    folder = pathlib.Path(folder or tempfile.mkdtemp(prefix="tc-bisect-"))
    folder.mkdir(parents=True, exist_ok=True)
    imported = importer.import_graph(gm, extension.GRAPH_NAME,
                                     lift_get_attrs=True)
    device = torch.device("cpu")
    _, _, options = build.target_pipeline(device, imported.text)
    expected = gm(*inputs)

    def wrong(text: str) -> float | None:
        native = build.compile_module(text, device, False)
        actual = CompiledFunction(native, imported, gm, device)(*inputs)
        return _difference(actual, expected)

    whole = wrong(imported.text)
    stage = f'--tc-decompose-pipeline={options}'
    described = subprocess.run(
        [str(tc_opt), "-", stage, "--dump-pass-pipeline"],
        input="module {}", capture_output=True, text=True)
    # "Pass Manager with N passes:", then the pipeline over several lines.
    passes = _top_level(
        " ".join(described.stderr.strip().splitlines()[1:]))
    if whole is None:
        return Bisection(passes, None)
    dumped = subprocess.run(
        [str(tc_opt), "-", stage, "--mlir-print-ir-after-all",
         "--mlir-print-ir-module-scope", "--mlir-disable-threading",
         "-o", "/dev/null"], input=imported.text, capture_output=True,
        text=True, check=True).stderr
    marks = list(_DUMP.finditer(dumped))
    irs = [dumped[m.end():(marks[i + 1].start() if i + 1 < len(marks)
                           else len(dumped))].strip() + "\n"
           for i, m in enumerate(marks)]
    before = folder / "0-fx.mlir"
    before.write_text(imported.text)
    for index, (mark, text) in enumerate(zip(marks, irs)):
        after = folder / f"{index + 1}-{mark.group(2)}.mlir"
        after.write_text(text)
        difference = wrong(text)
        if difference is not None:
            item = passes[index] if index < len(passes) else mark.group(2)
            command = (f"{shlex.quote(str(tc_opt))} {before} --pass-pipeline="
                       f"{shlex.quote(f'builtin.module({item})')}")
            return Bisection(passes, mark.group(2), difference, before,
                             after, command)
        before = after
    command = (f"{shlex.quote(str(tc_opt))} {before} "
               f"--tc-fuse-pipeline={shlex.quote(options)}")
    return Bisection(passes, "later stages", whole, before, None, command)
