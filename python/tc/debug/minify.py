"""The graph minifier: the smallest run of a graph's ops that still fails.

A graph that tc compiles to a wrong result (or fails to compile, or leaves
to eager) is cut down to the shortest contiguous run of its ops with the
same failure: the run's inputs are the values it reads from before it
(computed by running the whole graph in eager, so the run sees the numbers
it saw in the graph), its outputs every value it computes that no op of
the run reads. A failure that one op causes stays in every run holding
that op, so two binary searches find the run's last op and then its first
(`minify`); `write_repro` writes the run as a standalone script that fails
the same way (`python repro.py`).

    gm, inputs = tc.debug.minify(gm, inputs, tc.debug.mismatches)
    tc.debug.write_repro(gm, inputs, "repro.py")
"""

from __future__ import annotations

import pathlib
import time
from typing import Any, Callable, Sequence

import torch
import torch.fx

from tc.debug import accuracy

#: A failure test: true when tc fails on the graph and inputs.
Failure = Callable[[torch.fx.GraphModule, Sequence[Any]], bool]

_OPS = ("call_function", "call_method", "call_module")


def _tc_compile(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable:
    return _backend()(gm, list(inputs))


def trains(inputs: Sequence[Any]) -> bool:
    """Whether a graph called on `inputs` is trained: some input requires
    grad (tc compiles its forward and backward)."""
    return any(isinstance(v, torch.Tensor) and v.requires_grad
               for v in inputs)


def outputs_and_gradients(fn: Callable, inputs: Sequence[Any]
                          ) -> list[Any]:
    """`fn`'s outputs on fresh leaves like `inputs` (those that require
    grad still do), then the gradients of those leaves for the outputs'
    seeded random cotangents (zeros where unused): what a training step
    reads of a graph."""
    leaves = [v.detach().clone().requires_grad_(v.requires_grad)
              if isinstance(v, torch.Tensor) else v for v in inputs]
    out = fn(*leaves)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    differentiable = [o for o in outs
                      if isinstance(o, torch.Tensor) and o.requires_grad]
    wanted = [v for v in leaves
              if isinstance(v, torch.Tensor) and v.requires_grad]
    grads: list[Any] = []
    if differentiable and wanted:
        seeded = torch.Generator().manual_seed(0)
        cotangents = [torch.randn(o.shape, generator=seeded).to(o)
                      for o in differentiable]
        found = torch.autograd.grad(differentiable, wanted, cotangents,
                                    allow_unused=True)
        grads = [torch.zeros_like(v) if g is None else g
                 for v, g in zip(wanted, found)]
    return [o.detach() if isinstance(o, torch.Tensor) else o
            for o in outs] + grads


def mismatches(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> bool:
    """Whether tc's result is wrong: off eager's beyond torch's tolerance
    for the dtypes and further from the float64 truth than eager's
    (tc.debug.accuracy; a compile error counts as a failure too). A
    trained graph (`trains`) is judged by its outputs and its inputs'
    gradients (`outputs_and_gradients`)."""
    if trains(inputs):
        return _gradients_mismatch(gm, inputs)
    expected = gm(*inputs)
    try:
        actual = _tc_compile(gm, inputs)(*inputs)
    except Exception:  # noqa: BLE001 - any error is the failure
        return True
    if accuracy.differences(actual, expected) is None:
        return False
    return accuracy.differences(
        actual, expected, accuracy.float64_reference(gm, inputs)) is not None


def _gradients_mismatch(gm: torch.fx.GraphModule,
                        inputs: Sequence[Any]) -> bool:
    expected = outputs_and_gradients(gm, inputs)
    try:
        actual = outputs_and_gradients(_tc_compile(gm, inputs), inputs)
    except Exception:  # noqa: BLE001 - any error is the failure
        return True
    if accuracy.differences(actual, expected) is None:
        return False
    try:
        wide = outputs_and_gradients(accuracy.float64_graph(gm),
                                     accuracy.float64_inputs(inputs))
    except Exception:  # noqa: BLE001 - an op without float64
        wide = None
    return accuracy.differences(actual, expected, wide) is not None


def falls_back(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> bool:
    """Whether tc leaves some of the graph to eager (an op it does not
    compile, a compile error)."""
    import tc
    before = (tc.counters["ops_eager"], tc.counters["fallback_graphs"])
    _tc_compile(gm, inputs)(*inputs)
    return (tc.counters["ops_eager"],
            tc.counters["fallback_graphs"]) != before


def _values(gm: torch.fx.GraphModule, inputs: Sequence[Any]
            ) -> dict[torch.fx.Node, Any]:
    """Every node's value in an eager run of `gm` on `inputs`."""
    values: dict[torch.fx.Node, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            values[n] = result = super().run_node(n)
            return result

    Recorder(gm).run(*inputs)
    return values


def _run_of(gm: torch.fx.GraphModule, ops: list[torch.fx.Node],
            values: dict[torch.fx.Node, Any]
            ) -> tuple[torch.fx.GraphModule, list[Any]]:
    """The graph of `ops` (a contiguous run of gm's ops) and its inputs."""
    inside = set(ops)
    graph = torch.fx.Graph()
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    inputs: list[Any] = []

    def argument(node: torch.fx.Node) -> torch.fx.Node:
        if node not in mapping:
            mapping[node] = graph.placeholder(f"in{len(inputs)}")
            inputs.append(values[node])
        return mapping[node]

    for op in ops:
        for used in op.all_input_nodes:
            if used not in inside:
                argument(used)
        mapping[op] = graph.node_copy(op, lambda n: mapping[n])
    outputs = [mapping[op] for op in ops
               if not any(user in inside for user in op.users)
               and isinstance(values.get(op), torch.Tensor)]
    graph.output(tuple(outputs))
    return torch.fx.GraphModule(gm, graph), inputs


def minify(gm: torch.fx.GraphModule, inputs: Sequence[Any],
           fails: Failure = mismatches, max_seconds: float = 60.0
           ) -> tuple[torch.fx.GraphModule, list[Any]]:
    """The shortest run of `gm`'s ops on which `fails` holds, with its
    inputs (gm and its inputs themselves when `fails` does not hold on the
    whole graph as a run). Searches for the run's last op, then its first,
    by halving; stops refining after `max_seconds`."""
    ops = [n for n in gm.graph.nodes if n.op in _OPS]
    values = _values(gm, inputs)
    deadline = time.monotonic() + max_seconds

    def failing(lo: int, hi: int) -> bool:
        if hi <= lo:
            return False
        run, run_inputs = _run_of(gm, ops[lo:hi], values)
        return fails(run, run_inputs)

    lo, hi = 0, len(ops)
    if not failing(lo, hi):
        return gm, list(inputs)
    # The smallest end that still fails, then the largest start.
    low, high = lo + 1, hi
    while low < high and time.monotonic() < deadline:
        mid = (low + high) // 2
        if failing(lo, mid):
            high = mid
        else:
            low = mid + 1
    hi = high
    low, high = lo, hi - 1
    while low < high and time.monotonic() < deadline:
        mid = (low + high + 1) // 2
        if failing(mid, hi):
            low = mid
        else:
            high = mid - 1
    lo = low
    return _run_of(gm, ops[lo:hi], values)


def _spell_input(value: Any) -> str:
    """Python that makes a random value like `value` (shape, dtype, strides,
    device), or the value itself when it is no tensor."""
    if not isinstance(value, torch.Tensor):
        return repr(value)
    shape, dtype = tuple(value.shape), str(value.dtype)
    device = f"'{value.device}'"
    storage = sum((s - 1) * st for s, st in zip(value.shape, value.stride())
                  ) + 1 if value.numel() else 0
    if value.dtype.is_floating_point or value.dtype.is_complex:
        base = f"torch.randn({storage}, dtype={dtype}, device={device})"
    elif value.dtype == torch.bool:
        base = f"torch.rand({storage}, device={device}) < 0.5"
    else:
        low = int(value.min()) if value.numel() else 0
        high = int(value.max()) + 1 if value.numel() else 1
        base = (f"torch.randint({low}, {high}, ({storage},), dtype={dtype}, "
                f"device={device})")
    spelled = f"({base}).as_strided({shape}, {tuple(value.stride())})"
    return spelled + ".requires_grad_()" if value.requires_grad else spelled


def _write_mlir(gm: torch.fx.GraphModule, inputs: Sequence[Any],
                path: pathlib.Path) -> str:
    """Writes `gm`'s ATen graph on `inputs` to `path` as tc's fx dialect
    (inputs that require grad marked `tc.requires_grad`: the compiler
    builds the joint forward and backward) and returns the `tc-opt`
    command that compiles it for the inputs' device; "" when it cannot."""
    from torch.fx.experimental.proxy_tensor import make_fx

    import tc
    from tc import importer
    from tc.compiler import build
    try:
        aten = make_fx(gm)(*inputs)
        grads = [isinstance(v, torch.Tensor) and v.requires_grad
                 for v in inputs]
        text = importer.import_graph(aten, "main", lift_get_attrs=True,
                                     requires_grad=grads if any(grads)
                                     else ()).text
        devices = {v.device for v in inputs if isinstance(v, torch.Tensor)}
        device = devices.pop() if len(devices) == 1 else torch.device("cpu")
        _, flag, _ = build.target_pipeline(device, text)
    except Exception:  # noqa: BLE001 - the script is the repro; this helps
        return ""
    path.write_text(text)
    return f"{tc.tc_opt_path()} {path} {flag}"


def write_repro(gm: torch.fx.GraphModule, inputs: Sequence[Any],
                path: str | pathlib.Path, what: str = "tc's result differs "
                "from eager's") -> pathlib.Path:
    """Writes `gm` as a standalone script that hands it to tc's backend (as
    Dynamo does) on random inputs like `inputs` and raises (exit status 1)
    when `what` happens again: tc's result differs from eager's, or tc
    leaves ops to eager; beside it, the graph in tc's fx dialect (`.mlir`)
    and, in the script's docstring, the `tc-opt` command that compiles
    it."""
    path = pathlib.Path(path)
    command = _write_mlir(gm, inputs, path.with_suffix(".mlir"))
    compiled_by = (f"""

The graph in tc's fx dialect is {path.with_suffix('.mlir').name} beside this
script; tc-opt compiles it (pass by pass with --mlir-print-ir-after-all):

    {command}""" if command else "")
    code = gm.code.strip("\n")
    body = "\n".join("    " + line for line in code.splitlines())
    args = ",\n        ".join(_spell_input(v) for v in inputs)
    text = f'''"""{what}: a repro written by tc.debug.write_repro.

    python {pathlib.Path(path).name}

Hands the graph below to tc's torch.compile backend as Dynamo would (an FX
graph and example inputs) on random inputs of the recorded shapes, dtypes
and strides (those that required grad still do: tc compiles the forward
and the backward, and their gradients are compared too), and fails when
tc's result differs from eager's or tc leaves an op to eager.{compiled_by}
"""

import operator  # noqa: F401 - the graph's code may use it
import os

# The repro checks tc itself: TC_REPRO (which wrote it) would run a wrong
# graph in eager and hide the failure.
os.environ.pop("TC_REPRO", None)

import torch
from torch import device  # noqa: F401 - the graph's code may use it

import tc
import tc.backend


class Repro(torch.nn.Module):
{body}


def inputs():
    return [
        {args},
    ]


if __name__ == "__main__":
    torch.manual_seed(0)
    args = inputs()
    graph = torch.fx.symbolic_trace(Repro())
    if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        # A training graph: its outputs and its inputs' gradients.
        from tc.debug.minify import outputs_and_gradients
        expected = outputs_and_gradients(graph, args)
        actual = outputs_and_gradients(tc.backend.tc_backend(graph, args),
                                       args)
    else:
        expected = graph(*args)
        actual = tc.backend.tc_backend(graph, args)(*args)
    torch.testing.assert_close(actual, expected, equal_nan=True)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["fallback_graphs"] == 0, dict(tc.counters)
    print("tc matches eager")
'''
    path.write_text(text)
    return path


def _backend() -> Callable:
    """The backend registered as "tc" (tc.backend.tc_backend), looked up
    through Dynamo so that this module imports no layer above it."""
    import torch._dynamo
    return torch._dynamo.lookup_backend("tc")
