"""The `torch.compile` backend: `torch.compile(model, backend="tc")`.

Dynamo hands the backend a Python-level FX graph. The backend lowers it to
ATen with AOTAutograd (core ATen decompositions), and for each ATen graph
(forward, and backward when training):

1. marks the nodes tc supports (`tc.support.is_supported`);
2. groups them into subgraphs: the runs of supported ops between eager
   ones, in the graph's order (`_runs_in_order`);
3. compiles each subgraph with `tc.compiler.compile_graph`; everything
   else, and every subgraph tc fails to compile, runs in eager PyTorch.

tc never makes the user's program fail: an unexpected error inside tc is
logged and the graph runs in eager. What happened is counted in
`tc.counters` and shown by the log channels (`TC_LOGS=fallbacks,...`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import math
import operator
import os
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import (CapabilityBasedPartitioner,
                                                Partition)
from torch.fx.passes.operator_support import OperatorSupportBase

import tc
from tc import attention, compiler, distributed, layouts, logs
from tc.compiler import CompileError, CompiledFunction
from tc.decompositions import (aten_op, core_aten_decompositions,
                                decomposed_ops, explicit_decompositions,
                                forward_decompositions,
                                joint_decompositions)
from tc.importer import Unsupported, qualified_name, user_location
from tc.support import VALUE_GUARDS, VIEW_OPS, is_supported

__all__ = ["tc_backend"]

logger = logging.getLogger("tc")
_fallbacks = logs.channel_logger("fallbacks")


def _spell_complex_infinities() -> None:
    """FX writes a complex constant with a NaN or infinite part as
    `(nan+nanj)` in a graph's code, and `nanj` (`infj`) was undefined
    there: a decomposition's complex NaN (logaddexp's) made the graph fail
    when it ran in eager. Defines them as FX defines `nan` and `inf` (the
    hook is FX's internal one; without it, nothing changes)."""
    register = getattr(torch.fx.graph, "_register_custom_builtin", None)
    if register is None:
        return
    register("nanj", "nanj = complex(0, float('nan'))", complex(0, math.nan))
    register("infj", "infj = complex(0, float('inf'))", complex(0, math.inf))


_spell_complex_infinities()

_warned_native_missing: list[bool] = []

#: torch.compile modes tc implements.
#: On CUDA every mode replays a graph's launch sequence as a CUDA graph
#: once its buffers repeat. By default the buffers come from PyTorch's
#: allocator and nothing is held between calls; "reduce-overhead" keeps the
#: arena and the outputs at stable addresses of tc's own and copies an
#: input whose address changed into a buffer of tc's own, so that the graph
#: replays whatever tensors the caller passes (CompiledFunction.stage_inputs).
#: "max-autotune" times each GPU graph under tc's schedule candidates and
#: keeps the fastest (tc.autotune), with reduce-overhead's input staging;
#: "max-autotune-no-cudagraphs" tunes without it.
SUPPORTED_MODES = ("default", "reduce-overhead", "max-autotune",
                   "max-autotune-no-cudagraphs")
#: Keys of torch.compile's `options` that tc understands.
SUPPORTED_OPTIONS = {"dump_stages": bool}


@dataclasses.dataclass
class _Settings:
    dump_stages: bool = False
    reduce_overhead: bool = False
    autotune: bool = False


def tc_backend(gm: torch.fx.GraphModule,
               example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """torch.compile backend compiling ATen subgraphs with tc.

    Takes torch.compile's `mode` (see SUPPORTED_MODES; others run as
    "default") and `options`
    (`{"dump_stages": True}` keeps the IR of every compiler stage, as the
    `output_code` channel does).
    """
    failures = tc.counters["compile_failures"]
    _in_backend.append(True)
    try:
        settings = _parse_kwargs(kwargs)
        dynamic = _dynamic_reason(example_inputs)
        if dynamic:
            logger.debug("tc: %s: one compile for every batch size where "
                         "tc can, else per shape", dynamic)
            return _PerShape(gm, settings)

        from tc import precompile
        if precompile.enabled():  # PyTorch's precompile cache is on
            precompile.record(gm, example_inputs, kwargs)
        compiled = _to_aten(gm, example_inputs, settings)
    except Exception as error:  # tc must never break the user's program
        if "DataDependent" in type(error).__name__:
            # An op whose result depends on tensor values (narrow at a
            # tensor position, nonzero, ...): not a bug, a limit.
            _fallbacks.info("graph runs in eager: it needs tensor data at "
                            "compile time (%s: %s)", type(error).__name__,
                            str(error).splitlines()[0])
            tc.counters["fallback_graphs"] += 1
            compiled = gm.forward
        else:
            _internal_error("lowering a graph to ATen", error)
            compiled = gm.forward
    finally:
        _in_backend.pop()
    # Under torch.distributed, every rank compiles the same graphs here (the
    # per-shape path above compiles at run time, per rank's shapes).
    if not _agree(tc.counters["compile_failures"] == failures,
                  "a graph", gm, example_inputs):
        return gm.forward
    return compiled


#: Non-empty while `tc_backend` runs: compile decisions made inside it are
#: agreed by its own call of `_agree`, once per Dynamo graph (nested calls
#: would pair differently on ranks whose paths differ).
_in_backend: list[bool] = []


def _agree(ok: bool, what: str, gm: torch.fx.GraphModule,
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


class _PerShape:
    """A graph with symbolic shapes (`dynamic=True`, or Dynamo's automatic
    dynamic after a size changed), compiled by tc once per concrete shape.

    tc's code has static shapes, so each new combination of input shapes
    (and symbolic scalars' values) is traced and compiled when it first
    arrives, and kept: Dynamo calls the backend once, and no size change
    makes the graph fall back to eager. After MAX_SHAPES compilations, new
    shapes run in eager (with a log line).
    """

    #: The most shapes one graph is compiled for.
    MAX_SHAPES = 16

    def __init__(self, gm: torch.fx.GraphModule, settings: _Settings):
        self.gm = gm
        self.settings = settings
        self.compiled: dict[tuple, Callable] = {}
        self.logged_limit = False
        # Inputs that are numbers passed as 0-d tensors (.item() only):
        # specialized to their values like the sizes.
        self.items = _item_placeholders(gm)
        # One compile for every batch size (docs/DynamicShapes.md), per
        # value of the graph's other sizes; None where it failed. Symbolic
        # sizes in several leading dimensions (batch and sequence length)
        # are tried as rows first (_SymbolicRows), once.
        # A graph with collectives: not compiled whole (a run-time failure
        # would rerun it in eager, collectives included), per shape only.
        whole = not distributed.has_collectives(gm.graph)
        self.rows = _SymbolicRows.of(gm) if whole else None
        self.rows_compiled: dict[tuple, Callable] = {}
        self.batch = _SymbolicBatch.of(gm) if whole else None
        self.symbolic: dict[tuple, Callable | None] = {}

    def _key(self, args: Sequence[Any]) -> tuple:
        return (torch.is_grad_enabled(), *(
            ("item", a.item()) if i in self.items else
            (tuple(a.shape), a.stride(), a.dtype, a.device, a.requires_grad)
            if isinstance(a, torch.Tensor) else (type(a), a)
            for i, a in enumerate(args)))

    def _specialize(self, args: Sequence[Any]) -> Callable:
        """The graph compiled for `args`: its non-tensor inputs (the
        symbolic sizes' values) become constants, and the tensors' shapes
        are traced as they are."""
        graph = copy.deepcopy(self.gm.graph)
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        tensors = [i for i, a in enumerate(args)
                   if isinstance(a, torch.Tensor) and i not in self.items]
        for i, (node, value) in enumerate(zip(placeholders, args)):
            if i in self.items:
                for user in list(node.users):
                    user.replace_all_uses_with(value.item())
                    graph.erase_node(user)
                graph.erase_node(node)
                continue
            if isinstance(value, torch.Tensor):
                continue
            for user in list(node.users):
                user.args, user.kwargs = torch.fx.node.map_arg(
                    (user.args, user.kwargs),
                    lambda n: value if n is node else n)
            graph.erase_node(node)
        fixed = torch.fx.GraphModule(self.gm, graph)
        run = _to_aten(fixed, [args[i] for i in tensors], self.settings)
        return lambda *given: run(*(given[i] for i in tensors))

    def __call__(self, *args: Any) -> Any:
        if self.rows is not None:
            key = self.rows.key(args)
            if key is not None:
                run = self.rows_compiled.get(key)
                if run is None:
                    run = self.rows.compile(args, self.settings)
                    if run is None:
                        self.rows = None  # not row-wise: the other paths
                    else:
                        self.rows_compiled[key] = run
                if run is not None:
                    return run(*args)
        if self.batch is not None:
            key = self.batch.key(args)
            if key is not None:
                if key not in self.symbolic:
                    self.symbolic[key] = self.batch.compile(args,
                                                            self.settings)
                run = self.symbolic[key]
                if run is not None:
                    return run(*args)
        key = self._key(args)
        run = self.compiled.get(key)
        if run is None:
            if len(self.compiled) >= self.MAX_SHAPES:
                if not self.logged_limit:
                    self.logged_limit = True
                    _fallbacks.info("graph runs in eager for new shapes: "
                                    "tc compiled it for %d shapes already",
                                    self.MAX_SHAPES)
                return self.gm.forward(*args)
            tc.counters["shape_specializations"] += 1
            try:
                run = self._specialize(args)
            except Exception as error:  # never break the user's program
                _internal_error("compiling a graph for one shape", error)
                run = self.gm.forward
            self.compiled[key] = run
        return run(*args)


#: Whether CUDA tensors are NVIDIA's (tc compiles the symbolic size for
#: CPU and CUDA tensors, not ROCm's).
_CUDA_NOT_HIP = torch.version.hip is None


def _is_item_placeholder(node: torch.fx.Node) -> bool:
    """Whether placeholder `node` is a number Dynamo passes as a 0-d tensor
    (a module's eps under dynamic=True), read only through `.item()`."""
    value = node.meta.get("example_value")
    return (isinstance(value, torch.Tensor) and value.dim() == 0
            and bool(node.users) and all(
                u.op == "call_method" and u.target == "item"
                for u in node.users))


def _item_placeholders(gm: torch.fx.GraphModule) -> set[int]:
    """The positions of `gm`'s placeholders that _is_item_placeholder."""
    return {i for i, node in enumerate(
        n for n in gm.graph.nodes if n.op == "placeholder")
        if _is_item_placeholder(node)}


class _SymbolicBatch:
    """The batch size of a Dynamo graph with symbolic shapes, as tc's
    symbolic size (docs/DynamicShapes.md): one CPU or CUDA compile serves
    every batch size, with the graph's other sizes specialized to their
    values.

    The batch is the Dynamo symbol that is the leading size of the first
    tensor input that has a symbolic one. The graph is traced to ATen under
    a shape environment of tc's own in which only the dimensions that are
    that symbol are dynamic, so no other size can leak into the compiled
    code. A graph tc cannot compile this way (an op without a symbolic
    decomposition, a reduction over the batch, a ROCm or training graph)
    keeps the per-shape path, with a debug log line saying why.
    """

    #: Batch sizes the trace must hold for (guards PyTorch added while
    #: tracing are checked at these values too, and at each new size).
    PROBES = (2, 3, 5, 7, 9, 17, 33, 1000, 65537)
    #: How the logs name a graph compiled this way, and what happens to
    #: one that is not.
    DESCRIPTION = "with the symbolic batch"
    OTHERWISE = "compiling per shape"

    def __init__(self, gm: torch.fx.GraphModule, symbol: Any,
                 placeholders: list[tuple[str, Any]], grad_inputs: bool):
        self.gm = gm
        self.symbol = symbol
        # Per placeholder: ("tensor", [expr or int per dim]), ("int", expr)
        # or ("other", None).
        self.placeholders = placeholders
        # Whether some input requires grad (Dynamo guards that per tensor).
        self.grad_inputs = grad_inputs
        # What key() reads on every call, computed once (comparing sizes
        # with sympy expressions costs microseconds each, and a call's
        # host time is what a small graph's time is): per tensor
        # placeholder its rank, the positions of the batch in its shape,
        # and whether any size is symbolic (Dynamo's guards already hold a
        # static tensor's sizes, dtype and device: key() skips it); per int
        # placeholder whether it is the batch.
        self._batch_dims = [
            (len(dims), tuple(i for i, d in enumerate(dims) if d == symbol),
             not all(isinstance(d, int) for d in dims))
            if kind == "tensor" else (kind == "int" and dims == symbol)
            for kind, dims in placeholders]
        self.guards: list[Any] = []
        self.checked: dict[int, bool] = {}

    @classmethod
    def of(cls, gm: torch.fx.GraphModule) -> "_SymbolicBatch | None":
        found = _symbolic_placeholders(gm)
        if found is None:
            return None
        placeholders, grad_inputs = found
        symbol = next((dims[0] for kind, dims in placeholders
                       if kind == "tensor" and dims
                       and getattr(dims[0], "is_Symbol", False)), None)
        if symbol is None:
            return None
        return cls(gm, symbol, placeholders, grad_inputs)

    def key(self, args: Sequence[Any]) -> tuple | None:
        """What a compile is specialized to (None: not for this call): the
        symbolic inputs' sizes other than the batch (Dynamo's guards hold
        the rest: static sizes, dtypes, devices). A batch below 2 (which
        Dynamo specializes too), a ROCm or an autograd call take the
        per-shape path."""
        if len(args) != len(self.placeholders) or (
                self.grad_inputs and torch.is_grad_enabled()):
            return None
        batch = None
        key: list[Any] = []
        for (kind, _), batch_dims, arg in zip(self.placeholders,
                                             self._batch_dims, args):
            if kind == "tensor":
                rank, positions, symbolic = batch_dims
                if not symbolic:
                    continue  # Dynamo's guards hold it
                if not isinstance(arg, torch.Tensor) or arg.dim() != rank:
                    return None
                shape = arg.shape
                if positions:
                    sizes = list(shape)
                    for position in positions:
                        if batch is None:
                            batch = sizes[position]
                        elif sizes[position] != batch:
                            return None
                        sizes[position] = None
                    shape = tuple(sizes)
                key.append(shape)
            elif kind == "int" and batch_dims:
                if batch not in (None, arg):
                    return None
                batch = arg
                key.append(None)
            elif kind == "item":
                if not isinstance(arg, torch.Tensor) or arg.numel() != 1:
                    return None
                key.append(("item", arg.item()))
            else:
                key.append(arg if isinstance(arg, (int, float, bool))
                           else type(arg))
        if batch is None or batch < 2 or not self._holds(batch):
            return None
        return tuple(key)

    def _holds(self, batch: int) -> bool:
        """Whether the guards of the traces so far hold at `batch`."""
        ok = self.checked.get(batch)
        if ok is None:
            ok = all(bool(guard(batch)) for guard in self.guards)
            self.checked[batch] = ok
        return ok

    def compile(self, args: Sequence[Any], settings: _Settings
                ) -> Callable | None:
        """One compile for every batch size, at the sizes of `args`; None
        (with a debug log line) where tc cannot."""
        try:
            traced, symbol = self._trace(args)
            compiled = compiler.compile_graph(
                traced, dump_stages=settings.dump_stages, symbol=symbol,
                autotune=settings.autotune)
            if settings.reduce_overhead:
                compiled.stage_inputs()
        except (Unsupported, CompileError) as error:
            reason = getattr(error, "reason", None) or str(error)
            logger.debug("tc: no compile %s for this graph (%s); %s",
                         self.DESCRIPTION, reason.splitlines()[0],
                         self._otherwise())
            return None
        except Exception as error:  # never break the user's program
            logger.debug("tc: the compile %s failed (%s: %s); %s",
                         self.DESCRIPTION, type(error).__name__, error,
                         self._otherwise())
            return None
        if not compiled.symbolic:
            logger.debug("tc: the graph compiled without a symbolic size; "
                         "%s", self._otherwise())
            return None
        tc.counters["symbolic_graphs"] += 1
        tc.counters["graphs_compiled"] += 1
        tc.counters["subgraphs_compiled"] += 1
        tc.counters["kernels"] += compiled.num_kernels
        tc.counters["ops_compiled"] += sum(
            1 for n in traced.graph.nodes if n.op == "call_function")
        tensors = [i for i, (kind, _) in enumerate(self.placeholders)
                   if kind == "tensor"]
        run = self._runner(compiled)
        if len(tensors) != len(self.placeholders):
            inner = run

            def run(*given: Any) -> Any:
                return inner(*(given[i] for i in tensors))
        # A run-time error (a GPU's) switches the graph to eager for good.
        return _Guarded(run, self.gm.forward, self.DESCRIPTION)

    def _runner(self, compiled: CompiledFunction) -> Callable:
        """What runs `compiled` on the graph's tensor inputs."""
        return compiled

    def _otherwise(self) -> str:
        """What the log says happens to a graph not compiled this way."""
        return self.OTHERWISE

    def _trace(self, args: Sequence[Any]) -> tuple[Any, Any]:
        """The graph traced to core ATen with the batch as the one dynamic
        size, and the batch's symbol in that trace. Raises Unsupported
        when the trace specialized the batch or computes with sizes."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import (
            DimDynamic, ShapeEnv, StatelessSymbolicContext)

        gm, kept = self._specialized(args, lambda dims: dims == self.symbol)

        env = ShapeEnv()
        fake_mode = FakeTensorMode(shape_env=env)
        fakes: list[Any] = []
        batch_size = None
        with fake_mode:
            for kind, dims, arg in kept:
                if kind == "tensor":
                    dynamic = [DimDynamic.DUCK if d == self.symbol
                               else DimDynamic.STATIC for d in dims]
                    fakes.append(fake_mode.from_tensor(
                        arg, symbolic_context=StatelessSymbolicContext(
                            dynamic_sizes=dynamic)))
                    if batch_size is None and DimDynamic.DUCK in dynamic:
                        batch_size = fakes[-1].shape[dynamic.index(
                            DimDynamic.DUCK)]
                else:
                    fakes.append(arg)
            if not isinstance(batch_size, torch.SymInt):
                raise Unsupported("the batch size did not trace as a symbol")
            # A symbolic scalar input that is the batch: the same symbol.
            fakes = [batch_size if kind == "int" else fake
                     for (kind, _, _), fake in zip(kept, fakes)]
            traced = _symbolic_trace(gm_forward(gm), fakes)
        symbol = batch_size.node.expr
        if not getattr(symbol, "is_Symbol", False):
            raise Unsupported(f"the trace specialized the batch size to "
                              f"{symbol}")
        self.guards.extend(_guards_on(env, symbol, self.PROBES))
        self.checked.clear()
        _finish_symbolic_trace(traced, symbol)
        return traced, symbol

    def _specialized(self, args: Sequence[Any], keeps: Callable[[Any], bool]
                     ) -> tuple[torch.fx.GraphModule, list]:
        """The graph with its scalar inputs other than the symbolic sizes
        (`keeps(expr)`) and its numbers passed as 0-d tensors specialized
        to their values in `args` (the key holds them), as _PerShape does;
        and the (kind, dims, arg) of each input kept."""
        graph = copy.deepcopy(self.gm.graph)
        kept = []
        for node, (kind, dims), arg in zip(
                [n for n in graph.nodes if n.op == "placeholder"],
                self.placeholders, args):
            if kind == "tensor" or (kind == "int" and keeps(dims)):
                kept.append((kind, dims, arg))
                continue
            if kind == "item":
                for user in list(node.users):
                    user.replace_all_uses_with(arg.item())
                    graph.erase_node(user)
                graph.erase_node(node)
                continue
            for user in list(node.users):
                user.args, user.kwargs = torch.fx.node.map_arg(
                    (user.args, user.kwargs),
                    lambda n, node=node, arg=arg: arg if n is node else n)
            graph.erase_node(node)
        return torch.fx.GraphModule(self.gm, graph), kept


class _SymbolicRows(_SymbolicBatch):
    """Symbolic sizes in several leading dimensions (a batch and a sequence
    length, `[B, S, H]`, both varying or only `S`), compiled once as one:
    the graph on rows `[B * S, H]` (tc.rows), whose leading size `N` is
    tc's symbolic size. Inputs are viewed as rows and outputs back at each
    call. For graphs whose ops each act on one row (elementwise math,
    reductions, softmax and layer norm over trailing dimensions, a
    Linear's product); anything else (attention's products over `S`, a
    reduction over the rows) raises NotRowwise at compile, and the graph
    keeps the other paths (_SymbolicBatch, then per shape).
    """

    #: Values of each symbol of the prefix the traces must hold for.
    PROBES = (2, 3, 5, 9, 17, 1000)
    DESCRIPTION = "with the symbolic rows"
    OTHERWISE = "trying the symbolic batch, then per shape"

    def __init__(self, gm: torch.fx.GraphModule, prefix: tuple,
                 placeholders: list[tuple[str, Any]], grad_inputs: bool):
        super().__init__(gm, None, placeholders, grad_inputs)
        #: The leading sizes (Dynamo's symbols and ints) that are the rows.
        self.prefix = prefix
        # What key() reads, by kind (its time is a small graph's host
        # time): tensors with rows and their ranks; ints that are a size
        # of the prefix, and which; numbers passed as 0-d tensors; other
        # scalars (sizes other than the rows' among them).
        kinds = [kind for kind, _ in placeholders]
        self._with_rows = [
            (i, len(dims)) for i, (kind, dims) in enumerate(placeholders)
            if kind == "tensor" and not all(isinstance(d, int)
                                            for d in dims)]
        self._prefix_ints = [(i, prefix.index(dims))
                             for i, (kind, dims) in enumerate(placeholders)
                             if kind == "int" and dims in prefix]
        self._items = [i for i, kind in enumerate(kinds) if kind == "item"]
        self._scalars = [i for i, (kind, dims) in enumerate(placeholders)
                         if kind == "other" or (kind == "int"
                                                and dims not in prefix)]
        # The prefix's static sizes, and where its symbols are.
        self._static = [(j, d) for j, d in enumerate(prefix)
                        if isinstance(d, int)]
        self._symbolic = [j for j, d in enumerate(prefix)
                          if not isinstance(d, int)]
        # Guards of the two traces: on the prefix's symbols and on N.
        self.row_guards: list[Any] = []
        self.total_guards: list[Any] = []
        self.holds: dict[tuple, bool] = {}
        self.total_probes: list[int] = []
        # A graph whose whole is not row-wise, kept for _compile_parts:
        # (its trace on the prefix, its Rows, the prefix's sizes).
        self.partial: tuple | None = None

    @classmethod
    def of(cls, gm: torch.fx.GraphModule) -> "_SymbolicRows | None":
        """The rows of `gm`, when its first tensor input with symbolic
        sizes has more than its leading one (`[B, S, H]`, `[4, S, H]`),
        and every input with symbolic sizes has the same leading ones and
        static others."""
        found = _symbolic_placeholders(gm)
        if found is None:
            return None
        placeholders, grad_inputs = found
        shapes = [dims for kind, dims in placeholders if kind == "tensor"
                  and not all(isinstance(d, int) for d in dims)]
        if not shapes:
            return None
        # The prefix ends at the last symbolic size before the last
        # dimension of some input: the last dimension of the highest-rank
        # input is its features, symbolic only because nothing fixed them
        # (dynamic=True), and specialized; a mask's `[B, S]` has no
        # features.
        def end(dims: list) -> int:
            return max((i for i, d in enumerate(dims[:-1])
                        if not isinstance(d, int)), default=-1)
        widest = max(shapes, key=end)
        if end(widest) < 1:
            return None
        prefix = tuple(widest[:end(widest) + 1])
        symbols = [d for d in prefix if not isinstance(d, int)]
        if not all(d.is_Symbol for d in symbols) or len(set(symbols)) != len(
                symbols):
            return None  # a size computed or repeated: not rows
        for dims in shapes:
            if tuple(dims[:len(prefix)]) != prefix or any(
                    d in symbols for d in dims[len(prefix):]):
                return None
        return cls(gm, prefix, placeholders, grad_inputs)

    def key(self, args: Sequence[Any]) -> tuple | None:
        """As _SymbolicBatch.key, with the rows' leading sizes in place of
        the batch: every input with rows has the same, each symbolic one
        is at least 2, and the traces' guards hold at them. The key holds
        the other sizes of the inputs with rows, numbers passed as 0-d
        tensors and other scalars (Dynamo's guards hold the rest)."""
        if len(args) != len(self.placeholders) or (
                self.grad_inputs and torch.is_grad_enabled()):
            return None
        count = len(self.prefix)
        lead = None
        key: list[Any] = []
        for i, rank in self._with_rows:
            arg = args[i]
            if not isinstance(arg, torch.Tensor) or arg.dim() != rank:
                return None
            shape = arg.shape
            if lead is None:
                lead = shape[:count]
            elif shape[:count] != lead:
                return None
            key.append(shape[count:])
        if lead is None:
            return None
        for i, j in self._prefix_ints:
            if args[i] != lead[j]:
                return None
        for j, size in self._static:
            if lead[j] != size:
                return None
        for j in self._symbolic:
            if lead[j] < 2:
                return None
        for i in self._items:
            arg = args[i]
            if not isinstance(arg, torch.Tensor) or arg.numel() != 1:
                return None
            key.append(("item", arg.item()))
        for i in self._scalars:
            arg = args[i]
            key.append(arg if isinstance(arg, (int, float, bool))
                       else type(arg))
        if not self._holds(tuple(lead)):
            return None
        return tuple(key)

    def _holds(self, lead: Any) -> bool:
        ok = self.holds.get(lead)
        if ok is None:
            ok = all(bool(g(*lead)) for g in self.row_guards) and all(
                bool(g(math.prod(lead))) for g in self.total_guards)
            self.holds[lead] = ok
        return ok

    def _runner(self, compiled: CompiledFunction) -> Callable:
        return _RowsCall(compiled, self.inputs_rows, self.outputs_rows,
                         len(self.prefix))

    def _otherwise(self) -> str:
        if self.partial is not None:
            return ("compiling its row-wise parts on rows, the rest in "
                    "eager")
        return self.OTHERWISE

    def compile(self, args: Sequence[Any], settings: _Settings
                ) -> Callable | None:
        """The whole graph on rows; else, when only some of its ops are
        row-wise (attention's products over the sequence), those parts on
        rows and the others in eager (_compile_parts); else None."""
        self.partial = None
        run = super().compile(args, settings)
        if run is None and self.partial is not None:
            traced, rows, lead = self.partial
            self.partial = None
            try:
                run = self._compile_parts(traced, rows, lead, settings)
            except Exception as error:  # never break the user's program
                logger.debug("tc: the compile of the row-wise parts failed "
                             "(%s: %s); %s", type(error).__name__, error,
                             self.OTHERWISE)
                run = None
        return run

    def _trace(self, args: Sequence[Any]) -> tuple[Any, Any]:
        """The graph traced to core ATen with the prefix's sizes symbolic
        (_trace_prefix), then replayed on rows (tc.rows.collapse) and
        traced again with N as the one symbolic size. A graph that is not
        row-wise raises Unsupported, and is kept for _compile_parts."""
        from tc.rows import NotRowwise, collapse

        traced, rows, lead = self._trace_prefix(args)
        total = math.prod(lead)
        placeholders = [n.meta["val"] for n in traced.graph.nodes
                        if n.op == "placeholder"
                        and isinstance(n.meta.get("val"), torch.Tensor)]
        self.inputs_rows = [(rows.form(v) or (None,))[0]
                            for v in placeholders]
        try:
            collapsed, symbol = self._trace_rows(
                lambda: collapse(traced, rows), placeholders, rows, total)
        except NotRowwise as error:
            self.partial = (traced, rows, lead)
            raise Unsupported(f"not row-wise: {error}") from None
        output = next(n for n in traced.graph.nodes if n.op == "output")
        self.outputs_rows = _output_rows(output, rows)
        _finish_symbolic_trace(collapsed, symbol)
        return collapsed, symbol

    def _trace_prefix(self, args: Sequence[Any]) -> tuple[Any, Any, tuple]:
        """The graph traced to core ATen with a symbol of tc's own for
        each size of the prefix; with its Rows and the prefix's sizes in
        `args`. Sets the guards on the prefix."""
        from torch._dynamo.source import ConstantSource
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

        from tc.rows import Rows, keep_attention

        gm, kept = self._specialized(args, lambda dims: dims in self.prefix)
        keep_attention(gm)
        count = len(self.prefix)
        lead = next(tuple(arg.shape[:count]) for kind, dims, arg in kept
                    if kind == "tensor"
                    and not all(isinstance(d, int) for d in dims))

        # Not duck-sized: a batch and a length may be equal. A size Dynamo
        # keeps static (the batch, when only the length varies) is a
        # symbol too: the rows do not depend on it, and a trace with it
        # static may specialize the sizes it multiplies (`2 * S` rows of a
        # Linear). Its guards are checked at its value only.
        env = ShapeEnv()
        fake_mode = FakeTensorMode(shape_env=env)
        with fake_mode:
            ours = tuple(env.create_symbol(
                value, ConstantSource(f"tc_rows_{i}"),
                dynamic_dim=DimDynamic.DYNAMIC) for i, value in enumerate(
                lead))
            sizes = [env.create_symintnode(symbol, hint=value)
                     for symbol, value in zip(ours, lead)]
            fakes = []
            for kind, dims, arg in kept:
                if kind == "int":
                    fakes.append(sizes[self.prefix.index(dims)])
                elif all(isinstance(d, int) for d in dims):
                    fakes.append(_static_fake(fake_mode, arg))
                else:
                    fakes.append(torch.empty(
                        [*sizes, *arg.shape[count:]], dtype=arg.dtype,
                        device=arg.device))
            traced = _symbolic_trace(gm_forward(gm), fakes)
        # A size Dynamo keeps static may come out of the trace specialized
        # to its value; a symbolic one may not.
        traced_prefix = []
        for symbol, dynamo in zip(ours, self.prefix):
            value = env.replace(symbol)
            if value.is_Integer and isinstance(dynamo, int):
                traced_prefix.append(int(value))
            elif not value.is_Symbol:
                raise Unsupported(f"the trace specialized {symbol} to "
                                  f"{value}")
            else:
                traced_prefix.append(value)
        probes = [tuple(p for _ in ours) for p in self.PROBES]
        probes += [tuple(self.PROBES[(i + j) % len(self.PROBES)]
                         for j in range(len(ours)))
                   for i in range(len(self.PROBES))]
        probes = [tuple(d if isinstance(d, int) else p
                        for d, p in zip(self.prefix, probe))
                  for probe in probes]
        self.row_guards = _guards_on(env, ours, probes)
        self.total_probes = [math.prod(p) for p in probes]
        self.total_guards = []
        self.holds.clear()
        return traced, Rows(traced_prefix), lead

    def _trace_rows(self, replay: Callable[[], Callable], inputs: list,
                    rows: Any, total: int) -> tuple[Any, Any]:
        """Traces `replay()` (a tc.rows replay) on fake tensors for the
        original tensors `inputs` (fake ones of the prefix trace): one
        `[N, *rest]` with N = `total` symbolic for each with rows, static
        others. Returns the trace and N's symbol; adds the guards on
        N."""
        from torch._dynamo.source import ConstantSource
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

        env = ShapeEnv()
        fake_mode = FakeTensorMode(shape_env=env)
        with fake_mode:
            symbol = env.create_symbol(total, ConstantSource("tc_rows_n"),
                                       dynamic_dim=DimDynamic.DYNAMIC)
            n = env.create_symintnode(symbol, hint=total)
            fakes = []
            for value in inputs:
                form = rows.form(value)
                shape = list(value.shape) if form is None else [n, *form[1]]
                fakes.append(torch.empty(shape, dtype=value.dtype,
                                         device=value.device))
            traced = _symbolic_trace(replay(), fakes)
        if not env.replace(symbol).is_Symbol:
            raise Unsupported(f"the rows' trace specialized N to "
                              f"{env.replace(symbol)}")
        self.total_guards += _guards_on(env, symbol, self.total_probes)
        self.holds.clear()
        return traced, symbol

    def _compile_parts(self, traced: torch.fx.GraphModule, rows: Any,
                       lead: tuple, settings: _Settings) -> Callable | None:
        """One compile for every size of the prefix, of a graph only some
        of whose ops are row-wise: the partitioner groups those
        (tc.rows.rowwise_nodes) into subgraphs, each compiled on rows with
        its own N; the others (attention's products and softmax over the
        sequence, a mean over it) run in eager between them, with a log
        line each. None, with a debug line, when no part compiles."""
        from torch._dispatch.python import enable_python_dispatcher
        from torch._dynamo.source import ConstantSource
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        from tc.rows import attention_call, is_attention, rowwise_nodes

        total = math.prod(lead)
        inputs = [n.meta["val"] for n in traced.graph.nodes
                  if n.op == "placeholder"
                  and isinstance(n.meta.get("val"), torch.Tensor)]
        env = ShapeEnv()
        with FakeTensorMode(shape_env=env), enable_python_dispatcher():
            n = env.create_symintnode(env.create_symbol(
                total, ConstantSource("tc_rows_n")), hint=total)
            fakes = [torch.empty([n, *form[1]] if form else list(v.shape),
                                 dtype=v.dtype, device=v.device)
                     for v, form in ((v, rows.form(v)) for v in inputs)]
            reasons = rowwise_nodes(traced, rows, fakes)

        class Support(OperatorSupportBase):
            def is_node_supported(self, submodules: Any,
                                  node: torch.fx.Node) -> bool:
                return node.op == "call_function" and node not in reasons

        partitioner = CapabilityBasedPartitioner(
            traced, Support(), allows_single_node_partition=True)
        partitions = partitioner.propose_partitions()
        for partition in partitions:
            _trim_static(partition.nodes, rows)
            _trim(partition.nodes)
        partitions = [p for p in partitions if len(p.nodes) > 0]
        if not partitions:
            logger.debug("tc: no row-wise part of the graph computes; %s",
                         self.OTHERWISE)
            return None
        in_partition = {n for p in partitions for n in p.nodes}
        eager = [n for n in _op_nodes(traced.graph) if n not in in_partition
                 and isinstance(n.target, torch._ops.OpOverload)]
        for node in eager:
            reasons.setdefault(node, "a view feeding only eager code stays "
                               "a view" if _is_view(node) else "static, "
                               "feeding only eager code")

        fused = partitioner.fuse_partitions(partitions)
        # Attention kept whole runs as PyTorch's function, not through the
        # custom op's dispatch (microseconds a call).
        for node in fused.graph.nodes:
            if node.op == "call_function" and is_attention(node):
                node.target = attention_call
        fused.recompile()
        state = _RowsState(self._with_rows[0][0], len(self.prefix))
        compiled_ops = 0
        for node, sub in _fused_subgraphs(fused):
            ops = _op_nodes(sub.graph)
            try:
                run, compiled = self._compile_part(sub, rows, total, state,
                                                   settings)
            except (Unsupported, CompileError) as error:
                reason = getattr(error, "reason", None) or str(error)
                reason = reason.splitlines()[0]
                for op in ops:
                    if isinstance(op.target, torch._ops.OpOverload):
                        eager.append(op)
                        reasons[op] = f"its part did not compile: {reason}"
                continue
            setattr(fused, node.target, _TcSubgraph(run, sub, node.target))
            compiled_ops += len(ops)
            tc.counters["subgraphs_compiled"] += 1
            tc.counters["kernels"] += compiled.num_kernels
        if not compiled_ops:
            logger.debug("tc: no row-wise part of the graph compiled; %s",
                         self.OTHERWISE)
            return None
        for node in eager:
            _fallbacks.info("eager: %s: not row-wise (%s); one compile "
                            "serves every sequence length", _describe(node),
                            reasons[node])
        tc.counters["symbolic_graphs"] += 1
        tc.counters["graphs_compiled"] += 1
        tc.counters["ops_compiled"] += compiled_ops
        tc.counters["ops_eager"] += len(eager)
        kept = [i for i, (kind, dims) in enumerate(self.placeholders)
                if kind == "tensor" or (kind == "int" and dims in self.prefix)]

        def run(*given: Any) -> Any:
            state.lead = tuple(given[state.first].shape[:state.count])
            return fused(*(given[i] for i in kept))
        return _Guarded(run, self.gm.forward, "with the symbolic rows, in "
                        "parts")

    def _compile_part(self, sub: torch.fx.GraphModule, rows: Any,
                      total: int, state: "_RowsState", settings: _Settings
                      ) -> tuple[Callable, CompiledFunction]:
        """Part `sub` of a graph (_compile_parts) compiled on rows: what
        runs it on its inputs, and the compiled function."""
        from tc.rows import NotRowwise, collapse

        inputs = [n.meta["val"] for n in sub.graph.nodes
                  if n.op == "placeholder"
                  and isinstance(n.meta.get("val"), torch.Tensor)]
        forms = [rows.form(v) for v in inputs]
        if all(form is None for form in forms):
            raise Unsupported("no input has rows")
        try:
            collapsed, symbol = self._trace_rows(
                lambda: collapse(sub, rows), inputs, rows, total)
        except NotRowwise as error:
            raise Unsupported(f"not row-wise: {error}") from None
        _finish_symbolic_trace(collapsed, symbol)
        compiled = compiler.compile_graph(
            collapsed, dump_stages=settings.dump_stages, symbol=symbol,
            autotune=settings.autotune)
        if not compiled.symbolic:
            raise Unsupported("compiled without the symbolic size")
        if settings.reduce_overhead:
            compiled.stage_inputs()
        output = next(n for n in sub.graph.nodes if n.op == "output")
        call = _RowsCall(compiled, [f[0] if f else None for f in forms],
                         _output_rows(output, rows), len(rows.prefix), state)
        tensors = [i for i, n in enumerate(
            n for n in sub.graph.nodes if n.op == "placeholder")
            if isinstance(n.meta.get("val"), torch.Tensor)]
        return (lambda *given: call(*(given[i] for i in tensors))), compiled


def _trim_static(nodes: Any, rows: Any) -> None:
    """Leaves the ops of a part of the graph (_compile_parts) whose results
    have no rows (a constant, a weight's transpose) and feed only eager
    code to eager: compiled, they would be outputs of the part."""
    def static(node: torch.fx.Node) -> bool:
        value = node.meta.get("val")
        values = value if isinstance(value, (tuple, list)) else [value]
        return all(not isinstance(v, torch.Tensor) or rows.form(v) is None
                   for v in values)

    changed = True
    while changed:
        changed = False
        for node in list(nodes):
            if static(node) and not any(u in nodes for u in node.users):
                if isinstance(nodes, dict):
                    del nodes[node]
                else:
                    nodes.discard(node)
                changed = True


def _output_rows(output: torch.fx.Node, rows: Any) -> list[int | None]:
    """Per output of a graph on the prefix: how many leading dimensions
    are rows (tc.rows.Rows.form), 0 for a static tensor, None for a
    number."""
    return [None if not isinstance(v, torch.Tensor) else
            (rows.form(v) or (0,))[0]
            for v in (n.meta.get("val") if isinstance(n, torch.fx.Node)
                      else n for n in _flat_outputs(output.args[0]))]


def _symbolic_trace(fn: Callable, fakes: Sequence[Any]
                    ) -> torch.fx.GraphModule:
    """`fn` traced to core ATen (make_fx) on fake tensors with symbolic
    sizes. PyTorch's Python dispatcher is on, as in make_fx's own symbolic
    mode: composite ops then take their Python decompositions, which keep
    sizes symbolic, where some C++ ones read concrete sizes (torch 2.11's
    matmul of two 3-d tensors specialized the batch and the length)."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch.fx.experimental.proxy_tensor import make_fx

    with enable_python_dispatcher():
        return make_fx(fn, decomposition_table=core_aten_decompositions()
                       )(*fakes)


def _static_fake(fake_mode: Any, tensor: torch.Tensor) -> Any:
    """`tensor` as a fake tensor of `fake_mode` with static sizes."""
    from torch.fx.experimental.symbolic_shapes import (
        DimDynamic, StatelessSymbolicContext)
    return fake_mode.from_tensor(tensor, symbolic_context=(
        StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.STATIC] * tensor.dim())))


def _flat_outputs(outputs: Any) -> list[Any]:
    if isinstance(outputs, (tuple, list)):
        return [leaf for item in outputs for leaf in _flat_outputs(item)]
    return [outputs]


class _RowsState:
    """The prefix's sizes of the current call of a graph compiled in parts
    (_SymbolicRows._compile_parts), which each part's _RowsCall views its
    outputs back to (its inputs may be rows merged into one dimension)."""

    def __init__(self, first: int, count: int):
        #: The position of a graph input with the prefix, and its length.
        self.first = first
        self.count = count
        self.lead: tuple = ()


class _RowsCall:
    """Runs a graph compiled on rows (_SymbolicRows): each input with rows
    viewed `[N, *rest]`, each output viewed back to the leading sizes of
    the call (`[B, S, *rest]`), or kept `[N, *rest]` where the original
    merged them too. `inputs_rows` holds, per input, how many of its
    leading dimensions are rows (None: a static tensor); the leading sizes
    are the first input's, or `state`'s when given."""

    def __init__(self, compiled: Callable, inputs_rows: list[int | None],
                 outputs_rows: list[int | None], count: int,
                 state: _RowsState | None = None):
        self.compiled = compiled
        self.inputs_rows = inputs_rows
        self.outputs_rows = outputs_rows
        self.count = count
        self.state = state
        self.first = inputs_rows.index(count) if state is None else None

    def __call__(self, *tensors: Any) -> Any:
        if self.state is None:
            lead = tuple(tensors[self.first].shape[:self.count])
        else:
            lead = self.state.lead
        total = math.prod(lead)
        flat = [t if k is None else t.reshape(total, *t.shape[k:])
                for t, k in zip(tensors, self.inputs_rows)]
        result = self.compiled(*flat)
        if isinstance(result, (tuple, list)):
            back = [self._back(r, k, lead)
                    for r, k in zip(result, self.outputs_rows)]
            return type(result)(back)
        return self._back(result, self.outputs_rows[0], lead)

    def _back(self, value: Any, rows: int | None, lead: tuple) -> Any:
        if rows == self.count and isinstance(value, torch.Tensor):
            return value.view(*lead, *value.shape[1:])
        return value


def _symbolic_placeholders(gm: torch.fx.GraphModule
                           ) -> tuple[list[tuple[str, Any]], bool] | None:
    """Per placeholder of a Dynamo graph with symbolic shapes: ("tensor",
    [int or sympy expression per dim]), ("int", expression), ("item",
    None) for a number passed as a 0-d tensor, or ("other", None); and
    whether some tensor input requires grad. None when a tensor is on a
    device the symbolic size does not cover (ROCm's)."""
    placeholders: list[tuple[str, Any]] = []
    grad_inputs = False
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if _is_item_placeholder(node):
            placeholders.append(("item", None))
        elif isinstance(value, torch.Tensor):
            if not (value.device.type == "cpu" or value.device.type
                    == "cuda" and _CUDA_NOT_HIP):
                return None
            grad_inputs |= value.requires_grad
            placeholders.append(("tensor", [
                _size_expr(d) for d in value.shape]))
        elif isinstance(value, torch.SymInt):
            placeholders.append(("int", value.node.expr))
        else:
            placeholders.append(("other", None))
    return placeholders, grad_inputs


def _size_expr(size: Any) -> Any:
    """A size of Dynamo's example value: an int, or a sympy expression
    when symbolic (a SymInt with a constant expression is its int)."""
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        return int(expr) if expr.is_Integer else expr
    return size


def _guards_on(env: Any, symbols: Any, probes: Sequence[Any]
               ) -> list[Callable[..., Any]]:
    """The guards a trace's shape environment `env` added on `symbols`
    (one sympy symbol or a tuple), as functions of their values; raises
    Unsupported when one involves another symbol or fails at a probe (a
    value, or a tuple of values)."""
    symbols = symbols if isinstance(symbols, tuple) else (symbols,)
    guards = []
    for guard in env.guards:
        expr = guard.expr
        if not expr.free_symbols & set(symbols):
            continue
        if expr.free_symbols - set(symbols):
            raise Unsupported(f"the trace guards on {expr}")
        guards.append(lambda *values, expr=expr: expr.subs(
            dict(zip(symbols, values))))
    for probe in probes:
        values = probe if isinstance(probe, tuple) else (probe,)
        if not all(bool(guard(*values)) for guard in guards):
            raise Unsupported(f"the trace's guards fail at sizes {probe}")
    return guards


def _finish_symbolic_trace(traced: torch.fx.GraphModule, symbol: Any
                           ) -> None:
    """What every symbolic trace goes through before tc imports it: one
    product per Linear on n-d rows, no dead code, the batch read from a
    tensor's shape, and no scalar input left."""
    _products_of_merged_rows(traced.graph, symbol)
    traced.graph.eliminate_dead_code()
    _batch_from_tensors(traced.graph, symbol)
    # The compiled function takes the tensors: scalar inputs (sizes) must
    # be unused by then.
    for node in list(traced.graph.nodes):
        if node.op == "placeholder" and not isinstance(
                node.meta.get("val"), torch.Tensor):
            if node.users:
                raise Unsupported(f"the graph computes with the size "
                                  f"{node.name}")
            traced.graph.erase_node(node)
    traced.recompile()


def _products_of_merged_rows(graph: torch.fx.Graph,
                             symbol: Any = None) -> None:
    """A float product of a view that merges an n-d tensor's leading
    dimensions into rows, viewed back (how PyTorch decomposes a `Linear`
    on a 3-d input: `[s, 4, 32] -> [4s, 32]`, `addmm`, `-> [s, 4, 16]`),
    becomes one `aten.matmul` of the n-d input (plus the bias), which is
    one GEMM in tc (an n-d by 2-d `kernel.gemm`). With the graph's
    symbolic size `symbol` (the leading dimension) this is what keeps the
    sizes `s` itself, never a multiple of it (docs/DynamicShapes.md);
    without, it keeps the n-d shape for what follows (a layer norm's
    reductions over the last dimension stay one per row)."""
    from torch._dispatch.python import enable_python_dispatcher

    aten = torch.ops.aten

    def leading_is_batch(val: Any) -> bool:
        if not (isinstance(val, torch.Tensor) and val.dim() >= 1
                and val.dtype.is_floating_point):
            return False
        first, rest = val.shape[0], val.shape[1:]
        if symbol is None:
            return all(isinstance(d, int) for d in val.shape)
        return (isinstance(first, torch.SymInt)
                and first.node.expr == symbol
                and all(isinstance(d, int) for d in rest))

    for view in list(graph.nodes):
        if view.op != "call_function" or view.target not in (
                aten.view.default, aten._unsafe_view.default,
                aten.reshape.default):
            continue
        source = view.args[0]
        merged = view.meta.get("val")
        if not (isinstance(source, torch.fx.Node)
                and leading_is_batch(source.meta.get("val"))
                and isinstance(merged, torch.Tensor) and merged.dim() == 2
                and source.meta["val"].dim() >= 3
                and isinstance(merged.shape[1], int)
                and merged.shape[1] == source.meta["val"].shape[-1]):
            continue
        fake_mode = getattr(source.meta["val"], "fake_mode", None)
        if fake_mode is None:
            continue
        for product in list(view.users):
            if product.target is aten.mm.default and product.args[0] is view:
                rhs, bias = product.args[1], None
            elif (product.target is aten.addmm.default
                  and product.args[1] is view and not product.kwargs):
                rhs, bias = product.args[2], product.args[0]
            else:
                continue
            backs = list(product.users)
            if not backs or not all(
                    back.op == "call_function" and back.target in (
                        aten.view.default, aten._unsafe_view.default,
                        aten.reshape.default)
                    and leading_is_batch(back.meta.get("val"))
                    and back.meta["val"].dim() == source.meta["val"].dim()
                    and tuple(back.meta["val"].shape[1:-1])
                    == tuple(source.meta["val"].shape[1:-1])
                    and (symbol is not None or back.meta["val"].shape[0]
                         == source.meta["val"].shape[0])
                    for back in backs):
                continue
            with graph.inserting_before(product):
                matmul = graph.call_function(aten.matmul.default,
                                             (source, rhs))
                # (The Python dispatcher: PyTorch's C++ matmul reads
                # concrete sizes in torch 2.11; _symbolic_trace.)
                with fake_mode, enable_python_dispatcher():
                    matmul.meta["val"] = aten.matmul.default(
                        source.meta["val"], rhs.meta["val"])
                result = matmul
                if bias is not None:
                    result = graph.call_function(aten.add.Tensor,
                                                 (matmul, bias))
                    with fake_mode:
                        result.meta["val"] = aten.add.Tensor(
                            matmul.meta["val"], bias.meta["val"])
            for back in backs:
                back.replace_all_uses_with(result)


def _batch_from_tensors(graph: torch.fx.Graph, symbol: Any) -> None:
    """Uses of a scalar input that is the batch (Dynamo passes it for
    `x.view(x.shape[0], -1)`, `flatten`) read it from a tensor input's
    shape instead (`aten.sym_size.int`, which the importer turns into the
    symbolic size): the compiled function takes tensors only."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    source = None
    for node in placeholders:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            for dim, size in enumerate(val.shape):
                if isinstance(size, torch.SymInt) and \
                        size.node.expr == symbol:
                    source = (node, dim, size)
                    break
        if source is not None:
            break
    if source is None:
        return
    tensor, dim, size = source
    for node in placeholders:
        val = node.meta.get("val")
        if not (isinstance(val, torch.SymInt) and val.node.expr == symbol
                and node.users):
            continue
        with graph.inserting_after(placeholders[-1]):
            read = graph.call_function(torch.ops.aten.sym_size.int,
                                       (tensor, dim))
        read.meta["val"] = size
        node.replace_all_uses_with(read)


def gm_forward(gm: torch.fx.GraphModule) -> Callable:
    """`gm` as make_fx traces it: its forward, positional."""
    return lambda *args: gm.forward(*args)


def _to_aten(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
             settings: _Settings) -> Callable:
    """Lowers Dynamo's graph to ATen and compiles what it gets.

    A graph without mutations is traced once to core ATen
    (`_trace_one_pass`); for training, tc differentiates it itself
    (`_compile_training`). Anything else goes through AOTAutograd, which
    handles mutations and aliasing and splits training graphs into forward
    and backward.
    """
    training = torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad
        for x in example_inputs)
    _dropout_as_native(gm)
    traced = _trace_one_pass(gm, example_inputs, direct=not training)
    if traced is not None:
        tc.counters["causal_masks"] += attention.causal_masks_as_flags(traced)
    if traced is not None and not training:
        tc.counters["aten_one_pass"] += 1
        _products_of_merged_rows(traced.graph)
        traced.graph.eliminate_dead_code(is_impure_node=lambda node: (
            node.is_impure() or (node.op == "call_function"
                                 and node.target in _ERROR_CHECKS)))
        traced.recompile()
        runner = _compile_aten_runner(traced, settings, inference=True)
        if runner is traced:
            # Nothing compiled: run the ops the user wrote, not the ATen
            # graph's decompositions of them (index_add traced to
            # index_put ran at 2.4x eager's index_add on the CPU).
            return gm.forward
        return runner
    if traced is not None:
        runner = _compile_training(traced, example_inputs, settings)
        if runner is not None:
            tc.counters["aten_one_pass"] += 1
            return runner
    tc.counters["aten_aot_autograd"] += 1

    # Through Dynamo's `aot_autograd` backend helper, not
    # `aot_module_simplified` directly: DDPOptimizer reads the helper's
    # counter to know that the piece's first call returns fake tensors
    # (AOTAutograd's output-stride propagation) and makes that call itself.
    from torch._dynamo.backends.common import aot_autograd

    extra = {}
    if training:
        # What the backward reads: a minimum cut over bytes, recomputing
        # cheap pointwise chains (tc-partition's rule; Inductor's
        # partitioner). AOTAutograd's default saves every intermediate the
        # backward reads: GPT-2's tanh GELU, written out op by op, left
        # 1.8 GB more saved than Inductor's on the H100.
        try:
            from torch._functorch.partitioners import \
                min_cut_rematerialization_partition
            extra["partition_fn"] = min_cut_rematerialization_partition
        except ImportError:
            pass
    aten_compiler = functools.partial(_compile_aten_graph, settings=settings)
    return aot_autograd(
        fw_compiler=aten_compiler, bw_compiler=aten_compiler,
        decompositions=(joint_decompositions() if training
                        else core_aten_decompositions()),
        **extra)(gm, example_inputs)


def _native_dropout(input: torch.Tensor, p: float) -> torch.Tensor:
    return torch.ops.aten.native_dropout(input, p, True)[0]


def _dropout_as_native(gm: torch.fx.GraphModule) -> None:
    """Rewrites Dynamo's training-mode dropouts to `aten::native_dropout`.

    On the CPU, `F.dropout` traces to an in-place `bernoulli_` on a fresh
    tensor (AOTAutograd's territory, and a random op tc cannot see as one);
    `native_dropout` is the same function as one functional ATen op, which
    tc decomposes into its counter-based random numbers. In-place and
    evaluation-mode dropouts are left alone.
    """
    targets = {torch.nn.functional.dropout: ("p", "training", "inplace"),
               torch.dropout: ("p", "train")}
    changed = False
    for node in gm.graph.nodes:
        names = (targets.get(node.target)
                 if node.op == "call_function" else None)
        if names is None or not node.args:
            continue
        bound = dict(zip(names, node.args[1:]))
        bound.update(node.kwargs)
        p = bound.get("p", 0.5)
        training = bound.get("training", bound.get("train", True))
        if (training is not True or bound.get("inplace", False) is not False
                or not isinstance(p, (int, float))):
            continue
        node.target = _native_dropout
        node.args = (node.args[0], float(p))
        node.kwargs = {}
        changed = True
    if changed:
        gm.recompile()


#: Python operators that update their first operand in place.
_IN_PLACE_OPERATORS = frozenset((
    operator.setitem, operator.iadd, operator.isub, operator.imul,
    operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow,
    operator.iand, operator.ior, operator.ixor, operator.ilshift,
    operator.irshift, operator.imatmul))


def _mutates_in_place(node: torch.fx.Node) -> bool:
    """Whether a Dynamo graph node writes into an existing tensor: an
    in-place method or function (`add_`, `torch._foreach_mul_`), an
    augmented assignment or item assignment, `inplace=True` or `out=`, or an
    ATen overload with a mutable schema."""
    if node.op not in ("call_method", "call_function"):
        return False
    if "out" in node.kwargs or node.kwargs.get("inplace") is True:
        return True
    target = node.target
    if node.op == "call_function":
        if target in _IN_PLACE_OPERATORS:
            return True
        if isinstance(target, torch._ops.OpOverload):
            return target._schema.is_mutable
        if isinstance(target, torch._ops.OpOverloadPacket):
            return any(getattr(target, name)._schema.is_mutable
                       for name in target.overloads())
        target = getattr(target, "__name__", "")
    return (isinstance(target, str) and target.endswith("_")
            and not target.endswith("__"))


def _mutated_operands(node: torch.fx.Node) -> list[Any]:
    """The operands an in-place node may write: its first (a list of them
    for the `_foreach` ops) and its `out=`."""
    first = node.args[0] if node.args else None
    operands = list(first) if isinstance(first, (list, tuple)) else [first]
    out = node.kwargs.get("out")
    operands += list(out) if isinstance(out, (list, tuple)) else [out]
    return operands


#: Dynamo graph targets that change global state (grad mode, autocast):
#: AOTAutograd knows how to keep their effect; tc's own trace would lose it.
_GLOBAL_STATE_TARGETS = ("_set_grad_enabled", "autocast", "set_autocast",
                         "_enter_", "_exit_")


#: Entering and leaving an autocast region: traced through (see
#: `_trace_one_pass`).
_AUTOCAST_TARGETS = tuple(
    getattr(torch.amp.autocast_mode, name)
    for name in ("_enter_autocast", "_exit_autocast")
    if hasattr(torch.amp.autocast_mode, name))


def _trace_one_pass(gm: torch.fx.GraphModule,
                    example_inputs: Sequence[Any], direct: bool = False
                    ) -> torch.fx.GraphModule | None:
    """Dynamo's graph traced to core ATen in one pass, or None.

    AOTAutograd traces an inference graph twice (once to collect metadata
    about mutations and aliasing, once to capture) and wraps the result in
    runtime wrappers; a graph that mutates nothing and touches no global
    state needs one trace of `make_fx` under Dynamo's fake mode (the forward
    only: below autograd). That is a large part of a small graph's compile
    time. None means "use AOTAutograd" (mutations, global state, anything
    odd). With `direct` (inference), the graph is first written to ATen
    node by node (`tc.direct`, counted as `aten_direct`), tracing alone
    only the nodes it has no rule for.
    """
    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        return None
    gm = _without_inert_grad_modes(gm, example_inputs)
    if gm is None:
        logger.debug("tc: the graph switches grad mode around values with "
                     "gradients; using AOTAutograd")
        return None
    # Values that are, or may view, the graph's tensor attributes: real
    # tensors during the trace (an optimizer's state, which Dynamo does not
    # lift to inputs), which an in-place op would update for real before
    # the trace gives up on it. AOTAutograd traces such graphs on fakes.
    attributes: set[torch.fx.Node] = set()
    for node in gm.graph.nodes:
        if node.op == "get_attr" or (
                node.args and isinstance(node.args[0], torch.fx.Node)
                and node.args[0] in attributes):
            attributes.add(node)
        if _mutates_in_place(node) and any(
                arg in attributes for arg in _mutated_operands(node)):
            logger.debug("tc: %s updates a tensor attribute; using "
                         "AOTAutograd", node.name)
            return None
        if node.op in ("call_module", "call_method"):
            continue
        if node.target in _AUTOCAST_TARGETS:
            # The trace runs under the autocast state the graph sets: its
            # casts become explicit `_to_copy`s in the ATen graph.
            continue
        if node.op == "call_function":
            name = getattr(node.target, "__name__", str(node.target))
            module = getattr(node.target, "__module__", "") or ""
            if (any(key in name for key in _GLOBAL_STATE_TARGETS)
                    or "higher_order" in str(node.target)
                    or module.startswith(("torch.autograd", "torch.amp",
                                          "torch._functorch"))):
                logger.debug("tc: %s touches global state; using "
                             "AOTAutograd", node.name)
                return None

    from torch._guards import TracingContext, detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    fake_mode = detect_fake_mode(example_inputs)
    if fake_mode is None:
        context = TracingContext.try_get()
        fake_mode = context.fake_mode if context is not None else None
    if fake_mode is None:
        fake_mode = FakeTensorMode()
    traced = written = None
    if direct:
        from tc.direct import direct_aten

        written = direct_aten(gm, decomposed_ops(), core_aten_decompositions,
                              explicit_decompositions)
        if written is not None:
            tc.counters["aten_direct"] += 1
    grad_enabled = torch.is_grad_enabled()
    try:
        if written is None:
            with fake_mode:
                inputs = [fake_mode.from_tensor(x, static_shapes=True)
                          for x in example_inputs]
                traced = make_fx(gm, decomposition_table=(
                    core_aten_decompositions() if direct
                    else forward_decompositions()))(*inputs)
    except Exception as error:  # AOTAutograd may still manage
        logger.debug("tc: one-pass ATen trace failed (%s: %s); using "
                     "AOTAutograd", type(error).__name__, error)
        return None
    finally:
        torch.set_grad_enabled(grad_enabled)
    graph = written[1] if written is not None else traced.graph
    # Under grad mode the trace also records what autograd would save
    # (aliases of outputs nobody reads): drop it. Error checks have no
    # users but must stay (torch 2.11's node purity does not know them).
    graph.eliminate_dead_code(is_impure_node=lambda node: (
        node.is_impure() or (node.op == "call_function" and (
            node.target in _ERROR_CHECKS or (
                isinstance(node.target, torch._ops.OpOverload)
                and node.target._schema.is_mutable)))))
    if direct:
        # `nn.ReLU(inplace=True)` (torchvision's ResNets): out of place.
        _functionalize_inplace_intermediates(graph)
    elif not _functionalize_buffer_updates(traced):
        logger.debug("tc: the one-pass ATen trace updates buffers tc "
                     "cannot write back; using AOTAutograd")
        return None
    for node in graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        if node.target is operator.getitem:
            continue
        if (node.op != "call_function"
                or not isinstance(node.target, torch._ops.OpOverload)
                or node.target._schema.is_mutable
                or (node.target is torch.ops.aten.native_batch_norm.default
                    and len(node.args) >= 6 and node.args[5] is True
                    and node.args[3] is not None)):
            # A mutation (a batch norm's running statistics among them):
            # AOTAutograd functionalizes it.
            logger.debug("tc: the one-pass ATen trace has %s %s; using "
                         "AOTAutograd", node.op, node.target)
            return None
    _scalar_clamp_bounds(graph)
    if written is not None:  # its Python code, written once
        return torch.fx.GraphModule(written[0], graph)
    traced.recompile()
    return traced


#: clamp_min's and clamp_max's Tensor overloads: which of clamp's bounds
#: they set.
_SCALAR_CLAMPS = {torch.ops.aten.clamp_min.Tensor: "min",
                  torch.ops.aten.clamp_max.Tensor: "max"}


def _scalar_clamp_bounds(graph: torch.fx.Graph) -> bool:
    """Rewrites `clamp_min.Tensor(x, scalar_tensor(c))` (clamp_max too) to
    `clamp(x, min=c)`; whether it changed anything. A decomposition's
    Python number (cosine_similarity's eps) is a wrapped number while it
    is traced, which does not promote x's dtype, but the traced
    `scalar_tensor` is a 0-d f32 tensor that does when the node runs in
    eager: a bf16 cosine similarity of 0-d tensors came back in f32."""
    changed = False
    for node in graph.nodes:
        side = _SCALAR_CLAMPS.get(node.target)
        if side is None or len(node.args) != 2 or node.kwargs:
            continue
        bound = node.args[1]
        if not (isinstance(bound, torch.fx.Node)
                and bound.op == "call_function"
                and bound.target is torch.ops.aten.scalar_tensor.default
                and bound.args and isinstance(bound.args[0], (int, float))):
            continue
        node.target = torch.ops.aten.clamp.default
        node.args = ((node.args[0], bound.args[0]) if side == "min"
                     else (node.args[0], None, bound.args[0]))
        if not bound.users:
            graph.erase_node(bound)
        changed = True
    return changed


def _without_inert_grad_modes(gm: torch.fx.GraphModule,
                              example_inputs: Sequence[Any]
                              ) -> torch.fx.GraphModule | None:
    """`gm`, or a copy without its grad-mode switches when they change
    nothing, or None when they matter.

    A function under `torch.no_grad()` inside the model (Hugging Face's
    rotary embeddings) puts `_set_grad_enabled(False)` ... `(True)` in
    Dynamo's graph. The one-pass trace runs below autograd and would lose
    them; when nothing computed with gradients off depends on a tensor
    that requires grad (the rotary tables: a buffer and positions), they
    have no effect and are dropped. Otherwise AOTAutograd keeps them."""
    switches = [n for n in gm.graph.nodes
                if n.op == "call_function"
                and n.target is torch._C._set_grad_enabled]
    if not switches:
        return gm
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    tracked = {n for n, x in zip(placeholders, example_inputs)
               if isinstance(x, torch.Tensor) and x.requires_grad}
    enabled = torch.is_grad_enabled()
    for node in gm.graph.nodes:
        if node in switches:
            if len(node.args) != 1 or not isinstance(node.args[0], bool):
                return None
            enabled = node.args[0]
            continue
        if node.op == "get_attr":
            value = getattr(gm, node.target, None)
            if isinstance(value, torch.Tensor) and value.requires_grad:
                tracked.add(node)
        if any(a in tracked for a in node.all_input_nodes):
            if not enabled:
                return None  # a value computed from one that has gradients
            tracked.add(node)
    if enabled != torch.is_grad_enabled():
        return None  # the graph leaves grad mode changed
    copy_ = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    for node in list(copy_.graph.nodes):
        if (node.op == "call_function"
                and node.target is torch._C._set_grad_enabled):
            copy_.graph.erase_node(node)
    copy_.recompile()
    return copy_


#: The key of `GraphModule.meta` that lists the inputs a training graph
#: updates in place: their new values are its last outputs.
_MUTATED_INPUTS = "tc_mutated_inputs"


def _functionalize_buffer_updates(traced: torch.fx.GraphModule) -> bool:
    """Rewrites the in-place updates training makes to its buffers (batch
    norm's running statistics, its `num_batches_tracked += 1`) into values
    the graph returns after its own outputs; `traced.meta[_MUTATED_INPUTS]`
    lists the inputs they replace, which the caller writes back as eager
    does. False when the graph's output is not a tuple or list (nowhere to
    add them); other mutations are left for the caller's check.
    """
    graph = traced.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    updates: dict[torch.fx.Node, torch.fx.Node] = {}
    aten = torch.ops.aten
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if (node.target is aten.add_.Tensor and node.args
                and node.args[0] in placeholders
                and node.args[0] not in updates
                and not node.args[0].meta["val"].requires_grad):
            buffer = node.args[0]
            with graph.inserting_before(node):
                new = graph.call_function(aten.add.Tensor, node.args,
                                          node.kwargs)
            new.meta = dict(node.meta)
            node.replace_all_uses_with(new)
            graph.erase_node(node)
            updates[buffer] = new
        elif (node.target is aten.native_batch_norm.default
              and len(node.args) >= 6 and node.args[5] is True
              and node.args[3] in placeholders
              and node.args[4] in placeholders
              and node.args[3] not in updates
              and node.args[4] not in updates):
            with graph.inserting_before(node):
                new = graph.call_function(
                    aten._native_batch_norm_legit_functional.default,
                    node.args, node.kwargs)
            buffers = node.args[3], node.args[4]
            new.meta = dict(node.meta)
            new.meta["val"] = (*node.meta["val"],
                               *(b.meta["val"].clone() for b in buffers))
            node.replace_all_uses_with(new)
            graph.erase_node(node)
            with graph.inserting_after(new):
                for index, buffer in ((4, buffers[1]), (3, buffers[0])):
                    item = graph.call_function(operator.getitem, (new, index))
                    item.meta["val"] = new.meta["val"][index]
                    updates[buffer] = item
    _functionalize_inplace_intermediates(graph)
    if not updates:
        return True
    output = next(n for n in graph.nodes if n.op == "output")
    results = output.args[0]
    if not isinstance(results, (tuple, list)):
        return False
    order = [p for p in placeholders if p in updates]
    output.args = (type(results)([*results, *(updates[p] for p in order)]),)
    traced.meta[_MUTATED_INPUTS] = [placeholders.index(p) for p in order]
    return True


def _returns_alias(node: Any) -> bool:
    """Whether `node` is a view: an op whose result aliases an input
    (`view`, `t`, `slice`, `select`, `diagonal`, `split`, ...; not an
    in-place op, whose result is its mutated input)."""
    target = getattr(node, "target", None)
    if (not isinstance(target, torch._ops.OpOverload)
            or target._schema.is_mutable):
        return False
    return any(r.alias_info is not None for r in target._schema.returns)


def _functionalize_inplace_intermediates(graph: torch.fx.Graph) -> None:
    """Rewrites in-place ops on intermediate values (`relu_` of
    `nn.ReLU(inplace=True)`) into their out-of-place form; later readers of
    the old value read the new one. Only where no view aliases the value
    (a view would see the update): other in-place ops stay, and the
    caller's check sends the graph to AOTAutograd."""
    order = {node: i for i, node in enumerate(graph.nodes)}
    for node in list(graph.nodes):
        target = node.target
        if (node.op != "call_function"
                or not isinstance(target, torch._ops.OpOverload)
                or not target._schema.is_mutable
                or not target.__name__.split(".")[0].endswith("_")):
            continue
        packet = getattr(torch.ops.aten,
                         target.__name__.split(".")[0][:-1], None)
        functional = getattr(packet, target._overloadname, None)
        value = node.args[0] if node.args else None
        if (functional is None or not isinstance(value, torch.fx.Node)
                or value.op != "call_function" or _returns_alias(value)
                or any(_returns_alias(user) for user in value.users)):
            continue
        with graph.inserting_before(node):
            new = graph.call_function(functional, node.args, node.kwargs)
        new.meta = dict(node.meta)
        order[new] = order[node]
        node.replace_all_uses_with(new)
        for user in list(value.users):
            if user is not node and user is not new and \
                    order.get(user, -1) > order[node]:
                user.replace_input_with(value, new)
        graph.erase_node(node)


# ============================================================================
# Arguments
# ============================================================================


def _parse_kwargs(kwargs: dict[str, Any]) -> _Settings:
    kwargs = dict(kwargs)
    mode = kwargs.pop("mode", None) or "default"
    options = kwargs.pop("options", None) or {}
    for key in kwargs:
        logger.warning("tc backend: argument '%s' is not supported; "
                       "ignored", key)
    if mode not in SUPPORTED_MODES:
        logger.warning("tc backend: mode '%s' is not a mode tc knows; "
                       "compiling as mode='default'", mode)
    settings = _Settings(
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


def _dynamic_reason(example_inputs: Sequence[Any]) -> str | None:
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


def _internal_error(what: str, error: BaseException) -> None:
    tc.counters["fallback_graphs"] += 1
    tc.counters["compile_failures"] += 1
    logger.warning("tc: internal error while %s; the graph runs in eager: "
                   "%s: %s", what, type(error).__name__, error)
    _fallbacks.info("internal error while %s", what, exc_info=error)


# ============================================================================
# Partitioning and compiling one ATen graph
# ============================================================================


def _make_boxed(fn: Callable) -> Callable:
    """`fn` in AOTAutograd's boxed calling convention: one list argument,
    which the callee owns (AOTAutograd hands the backward its saved
    activations this way and keeps no other reference). A graph module
    (a partitioned graph, or one left to eager) reads its inputs out of the
    list and empties it, so that each input is freed after its last use
    in the graph: a backward then lets go of each saved activation as it
    goes, as Inductor's does, instead of holding them all to its end. A
    graph with output views (`_OutputViews`) passes the list on to its
    core."""
    if isinstance(fn, torch.fx.GraphModule):
        taking = _taking_list(fn)

        def boxed(args: list[Any]) -> Any:
            return taking(args)
    elif isinstance(fn, _OutputViews):
        boxed = fn.boxed()
    else:
        def boxed(args: list[Any]) -> Any:
            return fn(*args)
    boxed._boxed_call = True  # type: ignore[attr-defined]
    return boxed


def _clear_list(values: list[Any]) -> None:
    values.clear()


def _taking_list(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` as a module taking its inputs as one list, which it empties
    after reading them (FX's generated code drops each value after its
    last use)."""
    graph = torch.fx.Graph()
    values = graph.placeholder("args")
    given: dict[torch.fx.Node, torch.fx.Node] = {}
    for index, node in enumerate(n for n in gm.graph.nodes
                                 if n.op == "placeholder"):
        given[node] = graph.call_function(operator.getitem, (values, index))
        given[node].meta = dict(node.meta)
    graph.call_function(_clear_list, (values,))
    graph.output(graph.graph_copy(gm.graph, given))
    return torch.fx.GraphModule(gm, graph)


def _compile_aten_graph(gm: torch.fx.GraphModule,
                        example_inputs: Sequence[Any],
                        settings: _Settings) -> Callable:
    """AOTAutograd's fw/bw compiler: an ATen graph to a boxed callable."""
    failures = tc.counters["compile_failures"]
    runner = _compile_aten_runner(gm, settings)
    # The backward is compiled when it first runs, after `tc_backend`:
    # every rank whose forward compiled (all of them, or none: agreed) gets
    # here, and agrees here.
    if not _in_backend and not _agree(
            tc.counters["compile_failures"] == failures,
            "an AOTAutograd backward", gm, example_inputs):
        runner = gm
    return _make_boxed(runner)


def _half_product_padding(*args: Any) -> tuple[int, int, int] | None:
    """tc._tc.half_product_padding, loading the compiler only when a graph
    has a product to ask about (a warm process runs cached graphs without
    it)."""
    native = compiler._load_native()
    return native.half_product_padding(*args) if native is not None else None


def _compile_aten_runner(gm: torch.fx.GraphModule, settings: _Settings,
                         inference: bool = False) -> Callable:
    """An ATen graph to a callable taking the graph's inputs.
    `inference`: the graph is not a training graph's forward or backward
    (whose outputs autograd and the next graph read: there, a padded
    product returned as a view costs a copy on each side)."""
    try:
        _prims_as_aten(gm)
        if distributed.has_collectives(gm.graph):
            if any(n.op == "call_function"
                   and isinstance(n.target, torch._ops.OpOverload)
                   and qualified_name(n.target) in VALUE_GUARDS
                   for n in gm.graph.nodes):
                # A failed guard reruns the whole graph in eager: its
                # collectives would be issued twice.
                _fallbacks.info("graph with collectives runs in eager: an "
                                "op in it needs a value guard, whose rerun "
                                "would issue the collectives twice")
                tc.counters["fallback_graphs"] += 1
                return gm
            if distributed.schedule_collectives(gm.graph):
                gm.recompile()
        guarded = _add_value_guards(gm)
        if guarded is not None:
            return _ValueGuards(
                _compile_aten_runner(guarded.graph, settings, inference), gm,
                guarded)
        checked = _hoist_error_checks(gm)
        if checked is not None:
            return _HostChecks(
                _compile_aten_runner(checked.graph, settings, inference),
                checked)
        if inference and torch.version.hip is None:
            layouts.pad_returned_products(gm, _half_product_padding,
                                          _is_output_view)
        split = _split_output_views(gm)
        if split is not None:
            return _compile_with_output_views(split, settings)
        return _partition_and_compile(gm, settings)
    except Exception as error:  # tc must never break the user's program
        _internal_error("compiling an ATen graph", error)
        return gm


def _prims_as_aten(gm: torch.fx.GraphModule) -> None:
    """Rewrites the `prims` ops PyTorch's decompositions leave (logspace's
    `prims.pow`) as the ATen ops computing the same: their operands have
    one dtype already, so ATen's type promotion changes nothing."""
    changed = False
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not \
                torch.ops.prims.pow.default or len(node.args) != 2:
            continue
        base, exponent = node.args
        if isinstance(base, torch.fx.Node):
            node.target = (torch.ops.aten.pow.Tensor_Tensor
                           if isinstance(exponent, torch.fx.Node)
                           else torch.ops.aten.pow.Tensor_Scalar)
        elif isinstance(exponent, torch.fx.Node):
            node.target = torch.ops.aten.pow.Scalar
        changed = True
    if changed:
        gm.recompile()


def _with_extra_outputs(gm: torch.fx.GraphModule, extra: Callable
                        ) -> tuple[torch.fx.GraphModule, int | None]:
    """A copy of `gm` that returns a tuple of gm's outputs followed by the
    nodes `extra(graph, mapping)` adds to the copy (`mapping`: gm's nodes
    to the copy's); and how many outputs gm has (None when it returns one
    value, not a tuple or list). A training graph's new values of the
    inputs it updates (`_MUTATED_INPUTS`, its last outputs) stay last,
    after the added nodes, and are not counted."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = output.args[0]
    single = not isinstance(results, (tuple, list))
    own = (results,) if single else tuple(results)
    mutated = len(gm.meta.get(_MUTATED_INPUTS, ()))
    graph = torch.fx.Graph()
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.graph_copy(gm.graph, mapping)
    added = tuple(extra(graph, mapping))
    copied = tuple(torch.fx.node.map_arg(own, mapping.__getitem__))
    kept = len(copied) - mutated
    graph.output(copied[:kept] + added + copied[kept:])
    module = torch.fx.GraphModule(gm, graph)
    module.meta.update(gm.meta)
    return module, None if single and not mutated else kept


def _own_outputs(outputs: Sequence[Any], count: int | None) -> Any:
    """What the original graph returns, from a `_with_extra_outputs`
    copy's `outputs`."""
    return outputs[0] if count is None else tuple(outputs[:count])


@dataclasses.dataclass
class _Guards:
    """An ATen graph with value guards (`tc.support.VALUE_GUARDS`)."""
    #: The graph; it returns the original outputs, then one bool per guard
    #: (true: some value is beyond what tc computes).
    graph: torch.fx.GraphModule
    #: What each guard checks, for the log.
    what: list[str]
    #: How many outputs the original graph has (None: one, not a tuple).
    num_outputs: int | None


def _add_value_guards(gm: torch.fx.GraphModule) -> _Guards | None:
    """Adds a guard per op of VALUE_GUARDS (None when there is none): a
    bool output that is true when an operand has a value tc's
    decomposition does not compute exactly (a polynomial's degree above
    the recurrence tc unrolls). `_ValueGuards` then reruns the graph in
    eager."""
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"
             and isinstance(n.target, torch._ops.OpOverload)
             and qualified_name(n.target) in VALUE_GUARDS
             and not n.meta.get("tc_guarded")]
    if not nodes:
        return None
    what: list[str] = []

    def guards(graph, mapping):
        for node in nodes:
            operand, bound = VALUE_GUARDS[qualified_name(node.target)]
            names = (a.name for a in node.target._schema.arguments)
            args = dict(zip(names, node.args))
            args.update(node.kwargs)
            value = args.get(operand)
            mapping[node].meta["tc_guarded"] = True
            if not isinstance(value, torch.fx.Node):
                continue  # a number: tc.support checked it
            with graph.inserting_after(mapping[node]):
                over = graph.call_function(torch.ops.aten.gt.Scalar,
                                           (mapping[value], bound))
                over.meta["val"] = value.meta.get("val") > bound
            with graph.inserting_after(over):
                flag = graph.call_function(torch.ops.aten.any.default,
                                           (over,))
                flag.meta["val"] = over.meta["val"].any()
            what.append(f"{node.name}: {operand} above {bound}")
            yield flag

    copied, count = _with_extra_outputs(gm, lambda g, m: list(guards(g, m)))
    return _Guards(copied, what, count)


class _ValueGuards:
    """Runs a graph compiled with value guards; when one fails, the graph
    runs in eager (the compiled results are dropped) and the log says so,
    once."""

    def __init__(self, run: Callable, eager: Callable, guards: _Guards):
        self.run = run
        self.eager = eager
        self.what = guards.what
        self.num_outputs = guards.num_outputs
        self.logged = False

    def __call__(self, *args: Any) -> Any:
        outputs = self.run(*args)
        failed = [w for w, flag in zip(self.what,
                                       outputs[self.num_outputs or 1:])
                  if bool(flag)]
        if not failed:
            return _own_outputs(outputs, self.num_outputs)
        tc.counters["guard_reruns"] += 1
        if not self.logged:
            self.logged = True
            _fallbacks.info("graph runs in eager for these inputs: %s "
                            "(tc computes up to that bound)",
                            "; ".join(failed))
        return self.eager(*args)


#: Ops that only check values and raise eager's error (no result): tc
#: runs them on the host after the compiled graph, on results it returns.
_ERROR_CHECKS = (torch.ops.aten._linalg_check_errors.default,)


@dataclasses.dataclass
class _Checks:
    """An ATen graph without its error checks (`_ERROR_CHECKS`)."""
    #: The graph; it returns the original outputs, then one value per
    #: check: the tensor the check reads.
    graph: torch.fx.GraphModule
    #: The checks' ops and their arguments other than that tensor.
    checks: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]
    #: How many outputs the original graph has (None: one, not a tuple).
    num_outputs: int | None


def _hoist_error_checks(gm: torch.fx.GraphModule) -> _Checks | None:
    """Moves `gm`'s error checks after the graph (None when it has none).

    `_linalg_check_errors(info, api_name, is_matrix)` raises eager's
    error when a factorization's `info` is nonzero; the rest of the graph
    does not depend on it. tc compiles the graph with each `info` as an
    extra output, and `_HostChecks` runs the checks on them, raising the
    same errors (after the whole graph rather than before its later ops:
    the graph is functional, so nothing else is observable).
    """
    checks = [n for n in gm.graph.nodes if n.op == "call_function"
              and n.target in _ERROR_CHECKS and not n.users
              and n.args and isinstance(n.args[0], torch.fx.Node)]
    divisions = _integer_divisions_on_cpu(gm)
    indexings = _checked_indexings(gm)
    if not checks and not divisions and not indexings:
        return None

    def infos(graph, mapping):
        for node in checks:
            graph.erase_node(mapping[node])
        flags = []
        for node in divisions:
            # Whether any divisor is 0: what eager's CPU kernel raises on.
            divisor = node.args[1]
            mapping[node].meta["tc_checked"] = True
            with graph.inserting_after(mapping[node]):
                zero = graph.call_function(torch.ops.aten.eq.Scalar,
                                           (mapping[divisor], 0))
                zero.meta["val"] = divisor.meta["val"] == 0
            with graph.inserting_after(zero):
                flag = graph.call_function(torch.ops.aten.any.default,
                                           (zero,))
                flag.meta["val"] = zero.meta["val"].any()
            flags.append(flag)
        for node, index, low, size, _ in indexings:
            mapping[node].meta["tc_checked"] = True
            flags.append(_add_out_of_range_flag(graph, mapping[node],
                                                mapping[index], index, low,
                                                size))
        return [mapping[n.args[0]] for n in checks] + flags

    copied, count = _with_extra_outputs(gm, infos)
    return _Checks(copied,
                   [(n.target, n.args[1:], dict(n.kwargs)) for n in checks]
                   + [(_raise_zero_division, (), {}) for _ in divisions]
                   + [(_raise_out_of_range, (error,), {})
                      for *_, error in indexings],
                   count)


def _checks_indices(device: torch.device) -> bool:
    """Whether tc checks the indices of gathers and indexings on `device`
    (see `_checked_indexings`): always on the CPU; on a GPU unless
    `TC_INDEX_CHECKS=0` (the check's flag is read on the host after the
    graph, which waits for the GPU once a call)."""
    return device.type == "cpu" or os.environ.get(
        "TC_INDEX_CHECKS", "1") != "0"


def _checked_indexings(gm: torch.fx.GraphModule) -> list[tuple]:
    """`gm`'s gathers and indexings by index tensors (`_checks_indices`):
    (node, index node, lowest valid index, size of the indexed dimension,
    the error eager raises out of range). tc's kernels clamp; eager raises
    (on the CPU; on a GPU its kernels assert on the device, which ends the
    process's CUDA context: tc raises the CPU's error instead)."""
    aten = torch.ops.aten
    found = []
    for node in gm.graph.nodes:
        if (node.op != "call_function" or node.meta.get("tc_checked")
                or not isinstance(node.meta.get("val"), torch.Tensor)
                or not _checks_indices(node.meta["val"].device)):
            continue
        source = node.args[0] if node.args else None
        shape = (source.meta.get("val").shape if isinstance(
            source, torch.fx.Node) and isinstance(source.meta.get("val"),
                                                  torch.Tensor) else None)
        if shape is None:
            continue
        uses: list[tuple[Any, int, int]] = []  # (index, low, dim)
        out_of_range = IndexError("index out of range in self")
        if node.target is aten.embedding.default:
            uses = [(node.args[1], 0, 0)]
        elif node.target is aten.index_select.default:
            uses = [(node.args[2], 0, node.args[1])]
        elif node.target is aten.gather.default:
            uses = [(node.args[2], 0, node.args[1])]
        elif node.target is aten.index.Tensor or (
                node.target is aten.index_put.default
                and is_supported(node)[0]):
            # (An index_put tc leaves to eager raises there itself.)
            uses = [(index, None, dim) for dim, index in
                    enumerate(node.args[1]) if index is not None]
        for index, low, dim in uses:
            if not isinstance(index, torch.fx.Node):
                continue
            value = index.meta.get("val")
            if (not isinstance(value, torch.Tensor) or value.dtype not in
                    (torch.int64, torch.int32) or not isinstance(dim, int)):
                continue
            size = shape[dim % len(shape)] if len(shape) else 1
            if not isinstance(size, int):
                continue
            error = out_of_range
            if node.target is aten.gather.default:
                error = RuntimeError(f"index out of bounds for dimension "
                                     f"{dim} with size {size}")
            elif node.target in (aten.index.Tensor, aten.index_put.default):
                error = IndexError(f"index out of bounds for dimension "
                                   f"{dim} with size {size}")
            found.append((node, index, -size if low is None else low, size,
                          error))
    return found


def _add_out_of_range_flag(graph: torch.fx.Graph, after: torch.fx.Node,
                           index: torch.fx.Node, original: torch.fx.Node,
                           low: int, size: int) -> torch.fx.Node:
    """Nodes after `after` computing whether any element of `index` lies
    outside [low, size), as one maximum of index integers (a reduction that
    splits across threads and vectorises):

        c = clamp(index, low - 1, size)
        out of range  <=>  max |2 c - (low + size - 1)| > size - 1 - low

    (the clamp keeps it from overflowing, and in i32 for any index size
    below 2^31; each node has one user, so the chain fuses into the
    reduction's pass). Reducing compared flags instead made a CPU gather
    by a [32, 50257] index 2x slower than eager's; a minimum and a maximum
    fused into one kernel that did not split, 1000x on an H100.
    tc-fuse-index-checks then moves the check into the kernel that loads
    every index anyway (the gather's), which sets the flag where one fails:
    no second pass over the indices."""
    aten = torch.ops.aten
    value = original.meta["val"]
    if value.numel() > 0:
        def add(op, args, val):
            node = graph.call_function(op, args)
            node.meta["val"] = val
            return node
        with graph.inserting_after(after):
            clamped = add(aten.clamp.default, (index, low - 1, size),
                          value.clamp(low - 1, size))
        with graph.inserting_after(clamped):
            twice = add(aten.mul.Scalar, (clamped, 2),
                        clamped.meta["val"] * 2)
        with graph.inserting_after(twice):
            centred = add(aten.sub.Scalar, (twice, low + size - 1),
                          twice.meta["val"] - (low + size - 1))
        with graph.inserting_after(centred):
            distance = add(aten.abs.default, (centred,),
                           centred.meta["val"].abs())
        if size - low + 2 < 2**31:
            # In i32: GPUs reduce 32-bit values across a block (a 64-bit
            # reduction ran on one thread: 1000x on an H100).
            with graph.inserting_after(distance):
                narrow = graph.call_function(aten._to_copy.default,
                                             (distance,),
                                             {"dtype": torch.int32})
                narrow.meta["val"] = distance.meta["val"].to(torch.int32)
            distance = narrow
        with graph.inserting_after(distance):
            largest = add(aten.amax.default, (distance,),
                          distance.meta["val"].amax())
        with graph.inserting_after(largest):
            flag = add(aten.gt.Scalar, (largest, size - 1 - low),
                       largest.meta["val"] > size - 1 - low)
        return flag
    with graph.inserting_after(after):
        below = graph.call_function(aten.lt.Scalar, (index, low))
        below.meta["val"] = value < low
    with graph.inserting_after(below):
        above = graph.call_function(aten.ge.Scalar, (index, size))
        above.meta["val"] = value >= size
    with graph.inserting_after(above):
        outside = graph.call_function(aten.logical_or.default,
                                      (below, above))
        outside.meta["val"] = below.meta["val"] | above.meta["val"]
    with graph.inserting_after(outside):
        flag = graph.call_function(aten.any.default, (outside,))
        flag.meta["val"] = outside.meta["val"].any()
    return flag


def _raise_out_of_range(flag: torch.Tensor, error: Exception) -> None:
    """Eager's error (on the CPU) for an index out of range."""
    if bool(flag):
        raise type(error)(*error.args)


#: Integer ops whose CPU kernel in eager raises ZeroDivisionError when a
#: divisor is 0 (on CUDA eager returns a value, as tc's kernels do).
_INTEGER_DIVISIONS = (torch.ops.aten.div.Tensor_mode,
                      torch.ops.aten.remainder.Tensor,
                      torch.ops.aten.fmod.Tensor,
                      torch.ops.aten.floor_divide.default)


def _integer_divisions_on_cpu(gm: torch.fx.GraphModule
                              ) -> list[torch.fx.Node]:
    """`gm`'s integer divisions by a tensor, on the CPU."""
    found = []
    for node in gm.graph.nodes:
        if (node.op != "call_function" or node.target not in
                _INTEGER_DIVISIONS or len(node.args) < 2
                or not isinstance(node.args[1], torch.fx.Node)
                or node.meta.get("tc_checked")):
            continue
        value, divisor = node.meta.get("val"), node.args[1].meta.get("val")
        if (isinstance(value, torch.Tensor)
                and isinstance(divisor, torch.Tensor)
                and value.device.type == "cpu"
                and not (value.is_floating_point() or value.is_complex()
                         or value.dtype == torch.bool)):
            found.append(node)
    return found


def _raise_zero_division(flag: torch.Tensor) -> None:
    """Eager's error for an integer division by zero on the CPU."""
    if bool(flag):
        raise RuntimeError("ZeroDivisionError")


class _HostChecks:
    """Runs a graph compiled without its error checks, then the checks."""

    def __init__(self, run: Callable, checked: _Checks):
        self.run = run
        self.checks = checked.checks
        self.num_outputs = checked.num_outputs

    def __call__(self, *args: Any) -> Any:
        outputs = self.run(*args)
        for value, (check, rest, kwargs) in zip(
                outputs[self.num_outputs or 1:], self.checks):
            check(value, *rest, **kwargs)
        return _own_outputs(outputs, self.num_outputs)


@dataclasses.dataclass
class _ViewSplit:
    """An ATen graph cut before the views that produce its outputs."""
    #: The graph without those views; it returns a tuple of `core_outputs`.
    core: torch.fx.GraphModule
    #: The original graph's nodes that `core` returns, in its order.
    core_outputs: list[torch.fx.Node]
    placeholders: list[torch.fx.Node]
    #: The views (and `getitem`s of multi-result views), in graph order.
    views: list[torch.fx.Node]
    #: The original output structure, of original nodes.
    output: Any


def _is_output_view(node: torch.fx.Node) -> bool:
    """Whether `node` is a view of one tensor (its first argument) that
    can be replayed on a value computed elsewhere."""
    if (node.op != "call_function" or not _returns_alias(node)
            or not all(r.alias_info is not None
                       for r in node.target._schema.returns)):
        return False
    if not node.args or not isinstance(node.args[0], torch.fx.Node):
        return False
    others: list[torch.fx.Node] = []
    torch.fx.node.map_arg((node.args[1:], node.kwargs), others.append)
    return not others


def _split_output_views(gm: torch.fx.GraphModule) -> _ViewSplit | None:
    """Splits off the views that only produce `gm`'s outputs, or None when
    there are none.

    Eager returns such an output as a view: of an input (writing through
    it writes the input) or of an intermediate (with the view's strides).
    Compiled into a kernel, the view would be a copy; instead, tc compiles
    the rest of the graph, and the views are applied to its results and the
    inputs at run time (`_OutputViews`): metadata only, no kernel.
    """
    graph = gm.graph
    output = next(n for n in graph.nodes if n.op == "output")
    views: set[torch.fx.Node] = set()
    for node in reversed(list(graph.nodes)):
        if not node.users or not all(u is output or u in views
                                     for u in node.users):
            continue
        if node.op == "call_function" and node.target is operator.getitem:
            source = node.args[0]
            if isinstance(source, torch.fx.Node) and _is_output_view(source):
                views.add(node)
        elif _is_output_view(node):
            views.add(node)
    # A getitem of a view some compute also reads is a result of the core.
    views -= {n for n in views if n.target is operator.getitem
              and n.args[0] not in views}
    if not views:
        return None

    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    core_outputs: list[torch.fx.Node] = []

    def need(node: torch.fx.Node) -> None:
        if (node not in views and node.op != "placeholder"
                and node not in core_outputs):
            core_outputs.append(node)

    for node in views:
        torch.fx.node.map_arg((node.args, node.kwargs), need)
    torch.fx.node.map_arg(output.args[0], need)

    core_graph = torch.fx.Graph()
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    core_graph.graph_copy(graph, mapping)
    core_graph.output(tuple(mapping[n] for n in core_outputs))
    for node in reversed(list(graph.nodes)):
        if node in views:
            core_graph.erase_node(mapping[node])
    core = torch.fx.GraphModule(gm, core_graph)
    ordered = [n for n in graph.nodes if n in views]
    return _ViewSplit(core, core_outputs, placeholders, ordered,
                      output.args[0])


class _OutputViews:
    """Runs a split graph: its core (compiled by tc, or None when the graph
    is only views), then the views on the core's results and the inputs."""

    def __init__(self, split: _ViewSplit, core: Callable | None):
        self.split = split
        self.run_core = core
        # The inputs that the views or the output read themselves.
        read: set[torch.fx.Node] = set()
        for node in split.views:
            read.update(node.all_input_nodes)
        torch.fx.node.map_arg(split.output, read.add)
        self._read = [p in read for p in split.placeholders]

    def __call__(self, *args: Any) -> Any:
        env: dict[torch.fx.Node, Any] = dict(zip(self.split.placeholders,
                                                 args))
        if self.run_core is not None:
            env.update(zip(self.split.core_outputs, self.run_core(*args)))
        return self._views(env)

    def boxed(self) -> Callable[[list[Any]], Any]:
        """The call in AOTAutograd's boxed convention (`_make_boxed`): the
        core takes the list and empties it, and only the inputs that the
        views read stay referenced, so a backward with output views frees
        each saved activation after its last use too."""
        core = (_make_boxed(self.run_core) if self.run_core is not None
                else _clear_list)

        def call(args: list[Any]) -> Any:
            env: dict[torch.fx.Node, Any] = {
                p: a for p, a, read in zip(self.split.placeholders, args,
                                           self._read) if read}
            results = core(args)
            if self.run_core is not None:
                env.update(zip(self.split.core_outputs, results))
            return self._views(env)
        return call

    def _views(self, env: dict[torch.fx.Node, Any]) -> Any:
        for node in self.split.views:
            node_args, node_kwargs = torch.fx.node.map_arg(
                (node.args, node.kwargs), env.__getitem__)
            env[node] = node.target(*node_args, **node_kwargs)
        return torch.fx.node.map_arg(self.split.output, env.__getitem__)


def _compile_with_output_views(split: _ViewSplit,
                               settings: _Settings) -> Callable:
    """`_OutputViews` for `split`, its core compiled as any graph is."""
    count = sum(1 for n in split.views if n.target is not operator.getitem)
    if not split.core_outputs:
        # Only views: nothing to compute.
        tc.counters["graphs_compiled"] += 1
        tc.counters["ops_compiled"] += count
        return _OutputViews(split, None)
    compiled_before = tc.counters["graphs_compiled"]
    core = _partition_and_compile(split.core, settings)
    if tc.counters["graphs_compiled"] > compiled_before:
        tc.counters["ops_compiled"] += count
    else:
        tc.counters["ops_eager"] += count
    return _OutputViews(split, core)


class _Support(OperatorSupportBase):
    """Operator support for the partitioner, remembering why not."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: dict[torch.fx.Node, str] = {}

    def is_node_supported(self, submodules: Any,
                          node: torch.fx.Node) -> bool:
        ok, reason = is_supported(node)
        if not ok:
            self.reasons[node] = reason
        return ok


def _is_view(node: torch.fx.Node) -> bool:
    return (isinstance(node.target, torch._ops.OpOverload)
            and qualified_name(node.target) in VIEW_OPS)


def _is_compute(node: torch.fx.Node) -> bool:
    return (node.op == "call_function" and node.target is not operator.getitem
            and not _is_view(node))


def _trim(nodes: Any) -> None:
    """Leaves views that only feed eager code (e.g. returned views) to eager.

    Eager keeps them views instead of copies; a partition left with no
    compute op is emptied.
    """
    members = set(nodes)
    changed = True
    while changed:
        changed = False
        for node in list(members):
            if _is_view(node) and not any(u in members for u in node.users):
                members.discard(node)
                changed = True
    if not any(_is_compute(n) for n in members):
        members.clear()
    for node in list(nodes):
        if node not in members:
            if isinstance(nodes, dict):
                del nodes[node]
            else:
                nodes.discard(node)


def _fused_subgraphs(fused: torch.fx.GraphModule
                     ) -> list[tuple[torch.fx.Node, torch.fx.GraphModule]]:
    """The partitioner's subgraphs in `fused`, with the nodes calling
    them."""
    found = []
    for node in fused.graph.nodes:
        if node.op == "call_module":
            sub = fused.get_submodule(node.target)
            if isinstance(sub, torch.fx.GraphModule):
                found.append((node, sub))
    return found


def _op_nodes(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """The ATen op nodes of a graph (getitem selections excluded)."""
    return [n for n in graph.nodes
            if n.op == "call_function" and n.target is not operator.getitem]


def _describe(node: torch.fx.Node) -> str:
    target = (qualified_name(node.target)
              if isinstance(node.target, torch._ops.OpOverload)
              else getattr(node.target, "__name__", str(node.target)))
    where = user_location(node)
    suffix = f", {where[0]}:{where[1]}" if where else ""
    return f"{target} (node '{node.name}'{suffix})"


class _Guarded:
    """A graph compiled by tc, with its eager graph to fall back on.

    Should the compiled code raise at run time, the graph switches to eager
    for good (and says so).
    """

    def __init__(self, compiled: Callable[..., Any],
                 eager: Callable[..., Any], name: str):
        self.compiled = compiled
        self.eager = eager
        self.name = name
        self.failed = False

    def __call__(self, *args: Any) -> Any:
        if not self.failed:
            try:
                return self.compiled(*args)
            except Exception as error:  # never break the user's program
                self.failed = True
                runtime_fallback(f"compiled subgraph {self.name}", error)
        return self.eager(*args)


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


class _TcSubgraph(torch.nn.Module):
    """A subgraph compiled by tc (a compiled function, or a training
    segment's `_TrainingGraph`), in place of the partitioner's
    submodule."""

    def __init__(self, compiled: Callable[..., Any],
                 eager: torch.fx.GraphModule, name: str):
        super().__init__()
        self.eager = eager
        self.guarded = _Guarded(compiled, eager, name)

    def forward(self, *args: Any) -> Any:
        return self.guarded(*args)


def _all_supported(gm: torch.fx.GraphModule) -> bool:
    """Whether tc compiles every op of `gm` as one graph: each op supported,
    some compute, and no view left to eager (one feeding no op: `_trim`)."""
    return _why_not_whole(gm) is None


def _why_not_whole(gm: torch.fx.GraphModule) -> str | None:
    """Why tc cannot compile `gm` as one graph (one line), or None when it
    can (`_all_supported`)."""
    ops = _op_nodes(gm.graph)
    members = set(ops)
    if not any(_is_compute(n) for n in ops):
        return "the graph computes nothing"
    for node in ops:
        supported, why = is_supported(node)
        if not supported:
            return f"{_describe(node)}: {why}"
        if _is_view(node) and not any(u in members for u in node.users):
            return f"{_describe(node)}: a view that only the caller reads"
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    leaves: list[Any] = []
    torch.fx.node.map_aggregate(output.args[0], leaves.append)
    if any(not isinstance(value, torch.fx.Node) for value in leaves):
        # AOTAutograd's backward returns None for an input without a
        # gradient: the partitioner's graph returns it around tc's code.
        return "an output is not a tensor"
    return None


def _partition_and_compile(gm: torch.fx.GraphModule,
                           settings: _Settings) -> Callable:
    if not _op_nodes(gm.graph):
        # Nothing to compute (Dynamo makes an output that is a view of an
        # input itself, `x.T`): nothing runs in eager either.
        tc.counters["graphs_compiled"] += 1
        return gm
    # The common case needs no partitioner: one graph, all compiled, called
    # without the partitioned module around it (less to build and to run).
    if _all_supported(gm):
        return _compile_whole_graph(gm, settings)

    work = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    support = _Support()
    partitioner = CapabilityBasedPartitioner(
        work, support, allows_single_node_partition=True)
    partitions = _runs_in_order(work.graph, support)
    for partition in partitions:
        _trim(partition.nodes)
    partitions = [p for p in partitions if len(p.nodes) > 0]

    in_partition = {n for p in partitions for n in p.nodes}
    eager_ops = 0
    for node in _op_nodes(work.graph):
        if node in in_partition:
            continue
        eager_ops += 1
        reason = support.reasons.get(node)
        if reason is None:
            reason = ("view op feeding only eager code stays a view"
                      if _is_view(node) else "not grouped into a subgraph")
        _fallbacks.info("eager: %s: %s", _describe(node), reason)

    compiled_any = False
    if partitions:
        fused = partitioner.fuse_partitions(partitions)
        for node, sub in _fused_subgraphs(fused):
            ops = _op_nodes(sub.graph)
            compiled = _compile_subgraph(sub, node.target, ops, settings)
            if compiled is None:
                eager_ops += len(ops)
                continue
            setattr(fused, node.target,
                    _TcSubgraph(compiled, sub, node.target))
            compiled_any = True
            tc.counters["subgraphs_compiled"] += 1
            tc.counters["kernels"] += compiled.num_kernels
            tc.counters["ops_compiled"] += len(ops)
    tc.counters["ops_eager"] += eager_ops
    if not compiled_any:
        tc.counters["fallback_graphs"] += 1
        return gm
    tc.counters["graphs_compiled"] += 1
    return fused


def _runs_in_order(graph: torch.fx.Graph, support: "_Support"
                   ) -> list[Partition]:
    """The subgraphs of a graph that tc compiles in parts: the runs of
    supported ops between eager ones, in the graph's order. Runs of one
    order never form a cycle, and each value is computed where the graph
    computes it. The capability partitioner merges compute into any
    neighbour it does not depend on: in a backward that AOTAutograd's
    partitioner gave recomputed activations, every layer's recomputation
    went into the first subgraph, all held until their layers' turn
    (GPT-2's training step: 2 GB more at its peak on the H100); in a graph
    with collectives (`schedule_collectives` issued each early and waits
    late), compute that does not need a collective's result would run
    before it is issued or after it is waited for, not while it is in
    flight."""
    runs: list[Partition] = []
    current: list[torch.fx.Node] = []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if support.is_node_supported({}, node):
            current.append(node)
        elif current:
            runs.append(Partition(id=len(runs), nodes=current))
            current = []
    if current:
        runs.append(Partition(id=len(runs), nodes=current))
    return runs


def _compile_whole_graph(gm: torch.fx.GraphModule,
                         settings: _Settings) -> Callable:
    """Compiles all of `gm` as one tc graph, or (after logging) leaves it
    to eager."""
    ops = _op_nodes(gm.graph)
    compiled = _compile_subgraph(gm, "graph", ops, settings)
    if compiled is None:
        tc.counters["ops_eager"] += len(ops)
        tc.counters["fallback_graphs"] += 1
        return gm
    tc.counters["subgraphs_compiled"] += 1
    tc.counters["kernels"] += compiled.num_kernels
    tc.counters["ops_compiled"] += len(ops)
    tc.counters["graphs_compiled"] += 1
    return _Guarded(compiled, gm, "graph")


# ============================================================================
# Training with tc's own autodiff
# ============================================================================


def _compile_training(gm: torch.fx.GraphModule,
                      example_inputs: Sequence[Any],
                      settings: _Settings) -> Callable | None:
    """A training graph compiled with tc's autodiff, or None (after a log
    line) for AOTAutograd to take.

    tc-autodiff makes the joint forward + backward graph; tc-partition
    splits it into a forward that also returns what the backward needs and
    a backward that recomputes the rest (cheap pointwise work) from that,
    choosing by a min-cut over bytes as AOTAutograd's rematerializing
    partitioner does. `loss.backward()` then runs tc kernels only. A graph
    whose only ops tc does not compile are PyTorch's fused attention is
    compiled in segments around them (`tc.segments`); graphs with another
    op tc cannot compile, mutations or outputs that alias inputs go to
    AOTAutograd.
    """
    checked = _hoist_error_checks(gm)
    if checked is not None:
        # Out-of-range indices and error checks: their flags are extra
        # outputs (no gradient), checked after the forward.
        runner = _compile_training(checked.graph, example_inputs, settings)
        return None if runner is None else _HostChecks(runner, checked)
    why = _why_not_whole(gm)
    nodes = list(gm.graph.nodes)
    if why is not None or any(n.op == "get_attr" for n in nodes):
        # Attention left to eager, views the caller reads, or tensor
        # constants (which tc's training graphs take as inputs).
        from tc.segments import compile_segments
        segments = compile_segments(gm, example_inputs, settings)
        if segments is not None:
            return segments
        _fallbacks.info("training graph: AOTAutograd splits it into forward "
                        "and backward, for tc does not compile all of it "
                        "(%s)", why or "tensor constants in a segment")
        return None
    marks = [x.requires_grad and x.is_floating_point()
             for x in example_inputs]
    ops = _op_nodes(gm.graph)
    functions = _compile_split(gm, ops, settings, marks)
    if functions is None:
        return None
    if any(a is not None
           for a in functions.forward.imported.outputs_alias_inputs):
        _fallbacks.info("training graph returns an input; AOTAutograd "
                        "handles the aliasing")
        return None
    if logs.enabled("memory"):
        bytes_ = functions.saved_bytes
        logs.channel_logger("memory").info(
            "training graph: the backward keeps %d bytes (%d of inputs, "
            "%d of outputs, %d of %d saved intermediates); forward arena "
            "%d bytes, backward arena %d bytes", sum(bytes_.values()),
            bytes_["input"], bytes_["output"], bytes_["extra"],
            sum(1 for kind, _ in functions.saved if kind == "extra"),
            functions.forward.arena_bytes, functions.backward.arena_bytes)
    tc.counters["graphs_compiled"] += 1
    tc.counters["subgraphs_compiled"] += 2
    tc.counters["training_graphs"] += 1
    tc.counters["kernels"] += (functions.forward.num_kernels
                               + functions.backward.num_kernels)
    tc.counters["ops_compiled"] += len(ops)
    return _TrainingGraph(functions, marks, gm,
                          gm.meta.get(_MUTATED_INPUTS, []))


def _compile_split(gm: torch.fx.GraphModule, ops: list[torch.fx.Node],
                   settings: _Settings, marks: Sequence[bool]
                   ) -> compiler.TrainingFunctions | None:
    """The forward and backward functions of a training graph, or None
    (after logging, as `_compile_subgraph`)."""
    if settings.autotune:
        logger.info("tc: mode='max-autotune' compiles training graphs with "
                    "the default schedule")
    return _compile_subgraph(
        gm, "training", ops, settings,
        compile=lambda: compiler.compile_training(
            gm, marks, dump_stages=settings.dump_stages))


class _TrainingGraph:
    """Calls a training graph through an autograd.Function of tc's forward
    and backward functions. Should the forward fail at run time (a GPU
    error, say), the traced ATen graph runs in eager under autograd from
    then on."""

    def __init__(self, functions: compiler.TrainingFunctions,
                 marks: list[bool], eager: torch.fx.GraphModule,
                 mutated: list[int],
                 differentiable: Sequence[bool] | None = None):
        self.functions = functions
        self.marks = marks
        self.eager = eager
        # Inputs the graph updates (batch norm's running statistics): their
        # new values are the last outputs, written back after each call.
        self.mutated = mutated
        self.failed = False
        forward = functions.forward
        specs = forward.imported.output_specs[:functions.num_outputs]
        self.output_specs = specs
        self.float_outputs = [dtype.is_floating_point for _, dtype in specs]
        # Float outputs that carry no gradient (`differentiable`, by the
        # caller's analysis) are marked non-differentiable too.
        self.no_gradient = [
            not f or (differentiable is not None and not differentiable[i])
            for i, f in enumerate(self.float_outputs)]
        self.structure = functions.output_structure
        owner = self

        class Function(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                # Random ops: the forward's seed is its last input, saved
                # like any other the backward reads (a dropout's mask is
                # recomputed from it rather than saved).
                forward = owner.functions.forward
                seed = forward.draw_seed()
                results = forward(*args, seed=seed)
                count = owner.functions.num_outputs
                outputs, extras = results[:count], results[count:]
                # Inputs written back after this call are saved as they
                # were.
                inputs = list(args) + ([seed] if seed is not None else [])
                sources = {"input": inputs, "output": outputs,
                           "extra": extras}
                ctx.save_for_backward(*[
                    args[n].clone() if kind == "input" and n in owner.mutated
                    else sources[kind][n]
                    for kind, n in owner.functions.saved])
                ctx.mark_non_differentiable(*[
                    o for o, no in zip(outputs, owner.no_gradient) if no])
                return tuple(outputs)

            @staticmethod
            @torch._disable_dynamo
            def backward(ctx, *grads):
                # Autograd calls this from the user's frame: a
                # `loss.backward()` inside a compiled function (a graph
                # break) would otherwise have Dynamo trace tc's own
                # runtime. Outputs the loss does not use get no gradient: zeros.
                device = owner.functions.forward.device
                cotangents = [
                    g if g is not None else torch.zeros(
                        shape, dtype=dtype, device=device)
                    for g, (shape, dtype), f in zip(
                        grads, owner.output_specs, owner.float_outputs)
                    if f]
                gradients = iter(owner.functions.backward(
                    *ctx.saved_tensors, *cotangents))
                return tuple(next(gradients) if m else None
                             for m in owner.marks)

        self.function = Function

    def __call__(self, *args: Any) -> Any:
        if not self.failed:
            try:
                outputs = self.function.apply(*args)
                if self.structure == "single":
                    return outputs[0]
                return self._write_back(args, outputs)
            except Exception as error:  # e.g. a GPU error: eager from now on
                self.failed = True
                runtime_fallback("compiled training graph", error)
        return self._write_back(args, self.eager(*args))

    def _write_back(self, args: Sequence[Any], outputs: Sequence[Any]) -> Any:
        """The user's outputs, after copying the updated inputs' new
        values (the last outputs) into them."""
        count = len(outputs) - len(self.mutated)
        if self.mutated:
            # One multi-tensor copy (a launch or two), not one per input.
            with torch.no_grad():
                torch._foreach_copy_([args[i] for i in self.mutated],
                                     list(outputs[count:]))
        outputs = outputs[:count]
        return list(outputs) if self.structure == "list" else tuple(outputs)

def _compile_subgraph(sub: torch.fx.GraphModule, name: str,
                      ops: list[torch.fx.Node], settings: _Settings,
                      compile: Callable[[], Any] | None = None) -> Any:
    """Compiles one subgraph (with `compile` when given, else
    `compiler.compile_graph`); None (after logging) if tc cannot."""
    try:
        if compile is not None:
            compiled = compile()
        elif settings.autotune:
            compiled = compiler.compile_graph(
                sub, dump_stages=settings.dump_stages, autotune=True)
        else:
            work, permutations = layouts.read_in_place(sub)
            work, written = layouts.write_in_place(work)
            compiled = compiler.compile_graph(
                work, dump_stages=settings.dump_stages)
            if any(p is not None for p in permutations):
                compiled.read_inputs_permuted(permutations)
            if any(p is not None for p in written):
                compiled.write_outputs_permuted(written)
        if settings.reduce_overhead:
            functions = ([compiled.forward, compiled.backward]
                         if isinstance(compiled, compiler.TrainingFunctions)
                         else [compiled])
            for function in functions:
                function.stage_inputs()
        return compiled
    except CompileError as error:
        first_line = (error.message.strip().splitlines() or ["?"])[0]
        command = error.command
        if not error.native_missing:
            logger.warning(
                "tc: subgraph %s (%d ops) runs in eager: %s%s", name,
                len(ops), first_line,
                f"; reproduce with: {command}" if command else "")
        elif not _warned_native_missing:
            _warned_native_missing.append(True)
            logger.warning("tc: %s; every graph runs in eager", first_line)
        tc.counters["compile_failures"] += 1
        _fallbacks.info(
            "subgraph %s failed to compile:\n%s\nreproduce with: %s\n"
            "IR:\n%s", name, error.message, command or "(IR not written)",
            error.ir or "(none)")
        reason = f"in subgraph {name}, which tc failed to compile"
    except Unsupported as error:
        logger.warning("tc: subgraph %s (%d ops) runs in eager: cannot "
                       "import it: %s", name, len(ops), error)
        reason = f"in subgraph {name}, which tc cannot import: {error}"
    except Exception as error:  # tc must never break the user's program
        tc.counters["compile_failures"] += 1
        logger.warning("tc: internal error compiling subgraph %s; it runs "
                       "in eager: %s: %s", name, type(error).__name__, error)
        _fallbacks.info("internal error compiling subgraph %s", name,
                        exc_info=error)
        reason = f"in subgraph {name}: internal error in tc"
    for node in ops:
        _fallbacks.info("eager: %s: %s", _describe(node), reason)
    return None
