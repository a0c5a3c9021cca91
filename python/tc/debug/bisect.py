"""Numerics bisection: the first pass after which tc's result leaves eager's.

Every stage of tc is MLIR text that `tc-opt` runs. `bisect` compiles an
ATen graph for the inputs' device (the CPU or a CUDA GPU) and compares
the result with eager's at torch's tolerance, in two ways:

1. The optional passes (canonicalization, CSE, the channels-last layout,
   reassociated and split reductions, moved index checks, deduplicated
   kernels: those whose absence changes no result) are bisected as LLVM's
   -opt-bisect-limit does: the pipeline option `bisect-limit=N` runs only
   the first N of them, and the smallest N that gives another result names
   the N-th (`tc-opt --dump-pass-pipeline` tells which pass that is).
2. When the result is wrong with no optional pass at all, the fault is in
   a required pass: the pipeline runs with its required passes alone
   (`bisect-limit=0`, `tc-opt --mlir-print-ir-after-all`), and the IR
   after each pass is run from there on a reference path, the CPU
   pipeline's later stages with required passes only, one kernel per op
   (`fuse-nothing`) and no test option
   (`start-stage=`, the stage after the IR's level: prim IR through
   fusion and the CPU lowering, planned kernels through the CPU lowering,
   loop nests to LLVM), on the CPU, against eager. The first pass whose
   IR computes another result there is named, with its IR before and
   after and the `tc-opt` command that shows them. A GPU's lowering has
   no reference (its IR runs on the device only): a fault after its
   kernel stage names the passes from there on. The reference path is
   trusted: when it computes another result from the graph itself (a
   fault in a required pass every path runs: the decomposition or a
   kernel's own code), that is what the report says.

A result is wrong when it leaves eager's at torch's tolerance and is
further from the float64 truth than eager's own (tc.debug.accuracy). The
report names the pass, the ops it added and removed, and the largest
difference from eager's result per output.

    report = tc.debug.bisect(fn, x)
    print(report)

Needs `tc-opt` (a checkout build, or the wheel's console script).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile
from typing import Any, Callable

import torch
import torch.fx

import tc
from tc import importer
from tc.debug import accuracy
from tc.compiler import CompiledFunction, build, extension

_DUMP = re.compile(r"^// -----// IR Dump After (\S+) \(([^)]*)\).*//----- //$",
                   re.MULTILINE)


@dataclasses.dataclass
class Bisection:
    """What `bisect` found."""
    #: The pipeline's passes, in order (their pipeline texts).
    passes: list[str]
    #: The first pass after which the result differs from eager's; "later
    #: stages" when a required pass after decomposition is at fault; None
    #: when tc's result is eager's.
    first_wrong: str | None
    #: The largest absolute difference from eager's result there.
    difference: float = 0.0
    #: The pass's input and output IR (a required decomposition pass), and
    #: the tc-opt command that reproduces it.
    before: pathlib.Path | None = None
    after: pathlib.Path | None = None
    command: str = ""
    #: For an optional pass: the bisect limit that runs it (one less runs
    #: the pipeline without it and gives eager's result).
    limit: int | None = None
    #: The largest absolute difference from eager's result per output
    #: (None: that output is right).
    differences: list[float | None] = dataclasses.field(default_factory=list)
    #: The ops the pass added (positive) and removed (negative), by name.
    changed_ops: dict[str, int] = dataclasses.field(default_factory=dict)
    #: Whether eager's float64 result judged the differences.
    float64: bool = False
    #: For a required pass: the passes the fault may be in, in order (one
    #: when located exactly; more where the IR between them cannot run on
    #: the reference path: a GPU's code).
    candidates: list[str] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        if self.first_wrong is None:
            return "tc's result is eager's after every pass"
        where = (f"optional pass {self.limit} of the pipeline"
                 if self.limit is not None else "")
        files = (f"before: {self.before}, after: {self.after}"
                 if self.after is not None else "")
        outputs = ", ".join(f"#{i}: {d:.3g}" for i, d in
                            enumerate(self.differences) if d is not None)
        changed = ", ".join(f"{n:+d} {op}" for op, n in
                            sorted(self.changed_ops.items()))
        named = self.first_wrong
        if len(self.candidates) > 1:
            named = (f"one of {', '.join(self.candidates)} (the IR between "
                     "them runs on the device only)")
        return "; ".join(part for part in (
            f"first wrong: {named} (largest difference "
            f"{self.difference:.3g}; by output {outputs or '-'}"
            + (", float64 reference" if self.float64 else "") + ")",
            where, f"ops changed: {changed}" if changed else "", files,
            f"rerun: {self.command}") if part)


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


_OP = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_]\w*\.[\w.]+)"?[\s(<{]')


def _ops(text: str) -> dict[str, int]:
    """How many of each op an IR text holds (by name)."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        match = _OP.match(line)
        if match:
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts


def _changed_ops(before: str, after: str) -> dict[str, int]:
    """The ops `after` has more (positive) or fewer (negative) of."""
    old, new = _ops(before), _ops(after)
    return {op: new.get(op, 0) - old.get(op, 0) for op in set(old) | set(new)
            if new.get(op, 0) != old.get(op, 0)}


def _leaves(pipeline: str) -> list[str]:
    """The passes of a textual pipeline, nested ones in order
    (`builtin.module(a{x=1}, func.func(b, c))` -> `a{x=1}`, `b`, `c`)."""
    leaves = []
    for item in _top_level(pipeline):
        paren, brace = item.find("("), item.find("{")
        if paren >= 0 and (brace < 0 or paren < brace):
            leaves += _leaves(item)
        else:
            leaves.append(item)
    return leaves


def _dump(tc_opt: pathlib.Path, flag: str) -> str:
    """The pipeline `tc-opt <flag>` runs, as text (`--dump-pass-pipeline`)."""
    described = subprocess.run(
        [str(tc_opt), "-", flag, "--dump-pass-pipeline"],
        input="module {}", capture_output=True, text=True, check=True)
    # "Pass Manager with N passes:", then the pipeline over several lines.
    return " ".join(described.stderr.strip().splitlines()[1:])


def _pipeline(tc_opt: pathlib.Path, flag: str) -> list[str]:
    """The passes `tc-opt <flag>` runs, nested ones in order."""
    return _leaves(_dump(tc_opt, flag))


def _added(shorter: list[str], longer: list[str]) -> str:
    """The pass `longer` runs that `shorter` does not (the first)."""
    for index, name in enumerate(longer):
        if index >= len(shorter) or shorter[index] != name:
            return name
    raise ValueError("the two pipelines run the same passes")


def bisect(fn: Callable | torch.fx.GraphModule, *inputs: Any,
           folder: str | pathlib.Path | None = None) -> Bisection:
    """Bisects tc's compile of `fn` (a function or module of tensors, or
    an ATen FX graph) for its inputs' device on `inputs`; the IR files go
    to `folder` (a new temporary folder by default)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = fn if isinstance(fn, torch.fx.GraphModule) else make_fx(fn)(*inputs)
    devices = {v.device for v in inputs if isinstance(v, torch.Tensor)}
    device = devices.pop() if len(devices) == 1 else torch.device("cpu")
    if device.type not in ("cpu", "cuda") or devices:
        raise ValueError("tc.debug.bisect takes inputs on one device, the "
                         "CPU or a CUDA (or ROCm) GPU, as tc compiles for")
    tc_opt = tc.tc_opt_path()
    if not tc_opt.exists():
        raise FileNotFoundError(f"tc-opt is not built ({tc_opt})")
    folder = pathlib.Path(folder or tempfile.mkdtemp(prefix="tc-bisect-"))
    folder.mkdir(parents=True, exist_ok=True)
    imported = importer.import_graph(gm, extension.GRAPH_NAME,
                                     lift_get_attrs=True)
    _, flag, options = build.target_pipeline(device, imported.text)
    flag_name = flag.split("=", 1)[0]
    expected = gm(*inputs)
    expected64 = accuracy.float64_reference(gm, inputs)
    graph = folder / "0-fx.mlir"
    graph.write_text(imported.text)

    def wrong(text: str, limit: int | None = None
              ) -> list[float | None] | None:
        variant = "" if limit is None else f"bisect-limit={limit}"
        native = build.compile_module(text, device, False, variant)
        actual = CompiledFunction(native, imported, gm, device)(*inputs)
        return accuracy.differences(actual, expected, expected64)

    def limited(limit: int) -> str:
        return f"{flag_name}={options} bisect-limit={limit}"

    passes = _pipeline(tc_opt, limited(-1))
    whole = wrong(imported.text)
    if whole is None:
        return Bisection(passes, None)
    if wrong(imported.text, 0) is None:
        # The smallest limit that gives another result: limit `right`
        # gives eager's, `bad` does not.
        right, bad = 0, len(passes) - len(_pipeline(tc_opt, limited(0)))
        while bad - right > 1:
            middle = (right + bad) // 2
            if wrong(imported.text, middle) is None:
                right = middle
            else:
                bad = middle
        item = _added(_pipeline(tc_opt, limited(right)),
                      _pipeline(tc_opt, limited(bad)))
        name = item.split("{", 1)[0]
        command = (f"{shlex.quote(str(tc_opt))} {graph} "
                   f"{shlex.quote(limited(bad))} "
                   f"--mlir-print-ir-before={name} "
                   f"--mlir-print-ir-after={name} -o /dev/null")
        differences = wrong(imported.text, bad) or []
        before, after = _optional_pass_irs(
            tc_opt, imported.text, limited(right), limited(bad), folder)
        return Bisection(
            passes, name, accuracy.largest(differences), before or graph,
            after, command, limit=bad, differences=differences,
            changed_ops=_changed_ops(before.read_text(), after.read_text())
            if before and after else {}, float64=expected64 is not None)
    reference = _Reference(gm, imported, inputs, expected, expected64)
    report = _required_pass(tc_opt, imported.text,
                            f"{flag_name}={options} bisect-limit=0", passes,
                            reference, folder, whole)
    report.float64 = expected64 is not None
    return report


def _ir_dumps(tc_opt: pathlib.Path, text: str, flag: str
              ) -> list[tuple[str, str]]:
    """(pass, module IR after it) for every pass `tc-opt <flag>` runs."""
    dumped = subprocess.run(
        [str(tc_opt), "-", flag, "--mlir-print-ir-after-all",
         "--mlir-print-ir-module-scope", "--mlir-disable-threading",
         "-o", "/dev/null"], input=text, capture_output=True,
        text=True, check=True).stderr
    marks = list(_DUMP.finditer(dumped))
    return [(m.group(2), dumped[m.end():(marks[i + 1].start()
                                         if i + 1 < len(marks)
                                         else len(dumped))].strip() + "\n")
            for i, m in enumerate(marks)]


def _optional_pass_irs(tc_opt: pathlib.Path, text: str, right: str,
                       bad: str, folder: pathlib.Path
                       ) -> tuple[pathlib.Path | None, pathlib.Path | None]:
    """The input and output IR of the optional pass that limit `bad` adds
    to limit `right`: where the two pipelines' passes first differ."""
    try:
        without, with_it = (_ir_dumps(tc_opt, text, right),
                            _ir_dumps(tc_opt, text, bad))
    except subprocess.CalledProcessError:
        return None, None
    before_ir = text
    for index, (name, ir) in enumerate(with_it):
        if index >= len(without) or without[index][0] != name:
            before = folder / f"optional-{index}-before.mlir"
            after = folder / f"optional-{index}-{name}.mlir"
            before.write_text(before_ir)
            after.write_text(ir)
            return before, after
        before_ir = ir
    return None, None


#: The stage a reference run starts at, by the level of the IR it takes.
_NEXT_STAGE = {"fx": "prim", "prim": "kernel", "kernel": "lowered",
               "lowered": "binary"}
#: The reference path: the CPU pipeline's required passes, one kernel per
#: op (its result does not depend on fusion), without any test option (the
#: last of a repeated option wins).
_REFERENCE_OPTIONS = ("bisect-limit=0 fuse-nothing=true checks=false "
                      "miscompile-for-testing= miscompile-pass-for-testing= "
                      "crash-for-testing=")


def _level(ir: str) -> str | None:
    """The level of a module's IR: "fx", "prim", "kernel" (planned
    kernels), "lowered" (the CPU's loop nests), or None (LLVM or a GPU's
    code: no reference runs it)."""
    if "fx.graph" in ir:
        return "fx"
    if "gpu.module" in ir or "llvm.func" in ir:
        return None
    if "kernel.schedule" not in ir:
        return "prim"
    if re.search(r"^\s*kernel\.kernel @", ir, re.MULTILINE):
        return "kernel"
    return "lowered"


def _on_cpu(value: Any) -> Any:
    return value.cpu() if isinstance(value, torch.Tensor) else value


def _outputs_on_cpu(value: Any) -> Any:
    """A graph's result (a tensor or a sequence of them) on the CPU."""
    if isinstance(value, (tuple, list)):
        return type(value)(_on_cpu(v) for v in value)
    return _on_cpu(value)


class _Reference:
    """Runs a module of any level from there on the reference path, on the
    CPU, and judges its result against eager's (`tc.debug.accuracy`)."""

    def __init__(self, gm: torch.fx.GraphModule, imported: Any,
                 inputs: tuple, expected: Any, expected64: Any):
        import copy
        self.gm = copy.deepcopy(gm)
        for name, value in list(vars(self.gm).items()):
            if isinstance(value, torch.Tensor):
                setattr(self.gm, name, value.cpu())
        self.gm = self.gm.cpu()
        self.imported = imported
        self.inputs = [_on_cpu(v) for v in inputs]
        self.expected = _outputs_on_cpu(expected)
        self.expected64 = (_outputs_on_cpu(expected64)
                           if expected64 is not None else None)

    def __call__(self, ir: str, level: str
                 ) -> tuple[bool, list[float | None] | None]:
        """(whether it ran, its differences from eager's: None if
        right)."""
        cpu = torch.device("cpu")
        variant = f"{_REFERENCE_OPTIONS} start-stage={_NEXT_STAGE[level]}"
        try:
            native = build.compile_module(ir, cpu, False, variant)
            actual = CompiledFunction(native, self.imported, self.gm,
                                      cpu)(*self.inputs)
        except Exception:  # this IR cannot run on the reference path
            return False, None
        return True, accuracy.differences(actual, self.expected,
                                          self.expected64)


def _required_pass(tc_opt: pathlib.Path, text: str, flag: str,
                   passes: list[str], reference: _Reference,
                   folder: pathlib.Path, whole: list[float | None]
                   ) -> Bisection:
    """The first required pass after which the IR computes another result
    on the reference path (see the module's comment)."""
    before = folder / "0-fx.mlir"
    ran, differences = reference(text, "fx")
    if ran and differences is not None:
        return Bisection(passes, "the reference path",
                         accuracy.largest(differences), before, None,
                         f"{shlex.quote(str(tc_opt))} {before} "
                         f"--tc-cpu-pipeline={shlex.quote(_REFERENCE_OPTIONS)}",
                         differences=differences)
    try:
        dumps = _ir_dumps(tc_opt, text, flag)
    except subprocess.CalledProcessError:
        dumps = []
    # The passes that changed the IR since the last IR that ran right on
    # the reference path (`before`), in order.
    pending: list[str] = []
    previous = before_ir = text
    for index, (name, ir) in enumerate(dumps):
        if ir == previous:
            continue
        previous = ir
        if not pending or pending[-1] != name:
            pending.append(name)
        level = _level(ir)
        if level is None:
            # A GPU's code (or LLVM's) from here on: no reference runs it.
            for later, later_ir in dumps[index + 1:]:
                if later_ir != previous and later not in pending:
                    pending.append(later)
                previous = later_ir
            break
        ran, differences = reference(ir, level)
        if not ran:
            continue
        after = folder / f"{index + 1}-{name}.mlir"
        after.write_text(ir)
        if differences is None:
            before, before_ir, pending = after, ir, []
            continue
        return Bisection(passes, pending[0], accuracy.largest(differences),
                         before, after,
                         _show_command(tc_opt, folder, flag, pending[0]),
                         differences=differences,
                         changed_ops=_changed_ops(before_ir, ir),
                         candidates=pending)
    # Right on the reference path as far as it runs the IR: the fault is in
    # the passes after that, which run on the device alone.
    first = pending[0] if pending else "later stages"
    return Bisection(passes, first, accuracy.largest(whole), before, None,
                     _show_command(tc_opt, folder, flag, first)
                     if pending else "", differences=whole,
                     candidates=pending)


def _show_command(tc_opt: pathlib.Path, folder: pathlib.Path, flag: str,
                  name: str) -> str:
    """The tc-opt command that prints pass `name`'s input and output IR in
    the pipeline of `flag` on the saved graph."""
    return (f"{shlex.quote(str(tc_opt))} {folder / '0-fx.mlir'} "
            f"{shlex.quote(flag)} --mlir-print-ir-before={name} "
            f"--mlir-print-ir-after={name} -o /dev/null")


def main(argv: list[str]) -> int:
    """`python -m tc bisect repro.py [folder]`: bisects the graph of a repro
    script tc.debug.write_repro wrote (its `Repro` module on its `inputs()`,
    seeded as the script seeds them); prints the report and exits 1 when a
    pass is named."""
    import runpy

    if not argv or argv[0] in ("-h", "--help"):
        print(main.__doc__)
        return 0 if argv else 2
    script = runpy.run_path(argv[0], run_name="tc_repro")
    if not callable(script.get("Repro")) or not callable(
            script.get("inputs")):
        print(f"{argv[0]} is not a repro script tc.debug.write_repro wrote "
              "(it defines no Repro module and inputs())", file=sys.stderr)
        return 2
    inputs = script["inputs"]()
    report = bisect(script["Repro"](), *inputs,
                    folder=argv[1] if len(argv) > 1 else None)
    print(report)
    return 1 if report.first_wrong else 0
