"""One compile for every batch size: a Dynamo graph's batch as tc's
symbolic size (`SymbolicBatch`, docs/DynamicShapes.md), and the tracing
helpers it shares with `tc.backend.symbolic_rows`."""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import compiler
from tc.compiler import CompileError, CompiledFunction
from tc.decompositions import core_aten_decompositions
from tc.importer import Unsupported
from tc.backend import checks, common, partition, tracing

logger = logging.getLogger("tc")


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


def item_placeholders(gm: torch.fx.GraphModule) -> set[int]:
    """The positions of `gm`'s placeholders that _is_item_placeholder."""
    return {i for i, node in enumerate(
        n for n in gm.graph.nodes if n.op == "placeholder")
        if _is_item_placeholder(node)}


class SymbolicBatch:
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
    def of(cls, gm: torch.fx.GraphModule) -> "SymbolicBatch | None":
        found = symbolic_placeholders(gm)
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

    def compile(self, args: Sequence[Any], settings: common.Settings
                ) -> Callable | None:
        """One compile for every batch size, at the sizes of `args`; None
        (with a debug log line) where tc cannot."""
        try:
            traced, symbol = self._trace(args)
            index_checks = checks.InputIndexChecks.of(traced)
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
        run = self._runner(checks.InputIndexChecks(compiled, index_checks)
                           if index_checks else compiled)
        if len(tensors) != len(self.placeholders):
            inner = run

            def run(*given: Any) -> Any:
                return inner(*(given[i] for i in tensors))
        # A run-time error (a GPU's) switches the graph to eager for good.
        return partition.Guarded(run, self.gm.forward, self.DESCRIPTION)

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
            traced = symbolic_trace(tracing.gm_forward(gm), fakes)
        symbol = batch_size.node.expr
        if not getattr(symbol, "is_Symbol", False):
            raise Unsupported(f"the trace specialized the batch size to "
                              f"{symbol}")
        self.guards.extend(guards_on(env, symbol, self.PROBES))
        self.checked.clear()
        finish_symbolic_trace(traced, symbol)
        return traced, symbol

    def _specialized(self, args: Sequence[Any], keeps: Callable[[Any], bool]
                     ) -> tuple[torch.fx.GraphModule, list]:
        """The graph with its scalar inputs other than the symbolic sizes
        (`keeps(expr)`) and its numbers passed as 0-d tensors specialized
        to their values in `args` (the key holds them), as shapes.PerShape
        does;
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


def symbolic_trace(fn: Callable, fakes: Sequence[Any]
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


def symbolic_placeholders(gm: torch.fx.GraphModule
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


def guards_on(env: Any, symbols: Any, probes: Sequence[Any]
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
        if max(values) <= _ALWAYS_ADMITTED and not all(
                bool(guard(*values)) for guard in guards):
            raise Unsupported(f"the trace's guards fail at sizes {probe}")
    return guards


#: Sizes up to which a symbolic compile must serve every probe: guards that
#: fail there (a size specialized, a divisibility) make the compile not
#: worth having. Larger sizes may fail an upper bound (a sequence length
#: at most a position table's 512 rows): calls of those sizes take the
#: other paths, as every call's sizes are checked against the guards.
_ALWAYS_ADMITTED = 64


def finish_symbolic_trace(traced: torch.fx.GraphModule, symbol: Any
                          ) -> None:
    """What every symbolic trace goes through before tc imports it: one
    product per Linear on n-d rows, no dead code, the batch read from a
    tensor's shape, and no scalar input left."""
    tracing.products_of_merged_rows(traced.graph, symbol)
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
