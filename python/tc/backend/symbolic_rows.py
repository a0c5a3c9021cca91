"""One compile for every row count: graphs whose symbolic leading sizes
(batch and sequence length) are rows of row-wise ops (`SymbolicRows`,
docs/DynamicShapes.md)."""

from __future__ import annotations

import functools
import logging
import math
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

import tc
from tc import compiler, logs
from tc.compiler import CompileError, CompiledFunction
from tc.importer import Unsupported
from tc.backend import (checks, common, partition, shape_graphs, size_masks,
                        symbolic, tracing)

logger = logging.getLogger("tc")
_fallbacks = logs.channel_logger("fallbacks")


class SymbolicRows(symbolic.SymbolicBatch):
    """Symbolic sizes in several leading dimensions (a batch and a sequence
    length, `[B, S, H]`, both varying or only `S`), compiled once as one:
    the graph on rows `[B * S, H]` (tc.rows), whose leading size `N` is
    tc's symbolic size. Inputs are viewed as rows and outputs back at each
    call. For graphs whose ops each act on one row (elementwise math,
    reductions, softmax and layer norm over trailing dimensions, a
    Linear's product); anything else (attention's products over `S`, a
    reduction over the rows) raises NotRowwise at compile, and the graph
    keeps the other paths (symbolic.SymbolicBatch, then per shape).
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
        # time): tensors with rows and their ranks; other tensors with
        # sizes of the prefix (positions `[S]`: not rows), with the
        # prefix's index or the size of each dimension; ints that are a
        # size of the prefix, and which; numbers passed as 0-d tensors;
        # other scalars (sizes other than the rows' among them).
        kinds = [kind for kind, _ in placeholders]
        symbolic = [(i, dims) for i, (kind, dims) in enumerate(placeholders)
                    if kind == "tensor"
                    and not all(isinstance(d, int) for d in dims)]
        self._with_rows = [(i, len(dims)) for i, dims in symbolic
                           if tuple(dims[:len(prefix)]) == prefix]
        self._positional = [
            (i, [d if isinstance(d, int) else ("prefix", prefix.index(d))
                 for d in dims])
            for i, dims in symbolic if tuple(dims[:len(prefix)]) != prefix]
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
    def of(cls, gm: torch.fx.GraphModule) -> "SymbolicRows | None":
        """The rows of `gm`, when its first tensor input with symbolic
        sizes has more than its leading one (`[B, S, H]`, `[4, S, H]`),
        and every input with symbolic sizes has the same leading ones and
        static others."""
        found = symbolic.symbolic_placeholders(gm)
        if found is None:
            return None
        placeholders, grad_inputs = found
        values = [n.meta.get("example_value") for n in gm.graph.nodes
                  if n.op == "placeholder"]
        shapes = [(dims, not value.is_floating_point())
                  for (kind, dims), value in zip(placeholders, values)
                  if kind == "tensor"
                  and not all(isinstance(d, int) for d in dims)]
        if not shapes:
            return None
        # The prefix ends at the last symbolic size before the last
        # dimension of some input: the last dimension of a floating-point
        # input is its features, symbolic only because nothing fixed them
        # (dynamic=True), and specialized; a mask's `[B, S]` has no
        # features. Integer and boolean tensors (token ids, an attention
        # mask) have none: each of their elements is a row.

        def end(shape: tuple[list, bool]) -> int:
            dims, whole = shape
            return max((i for i, d in enumerate(dims if whole else dims[:-1])
                        if not isinstance(d, int)), default=-1)
        widest = max(shapes, key=end)
        last = end(widest)
        if last < 1:
            return None
        prefix = tuple(widest[0][:last + 1])
        shapes = [dims for dims, _ in shapes]
        symbols = [d for d in prefix if not isinstance(d, int)]
        if not all(d.is_Symbol for d in symbols) or len(set(symbols)) != len(
                symbols):
            return None  # a size computed or repeated: not rows
        for dims in shapes:
            if tuple(dims[:len(prefix)]) == prefix:
                if any(d in symbols for d in dims[len(prefix):]):
                    return None
            elif not all(isinstance(d, int) or d in symbols for d in dims):
                return None  # a size other than the prefix's
        return cls(gm, prefix, placeholders, grad_inputs)

    def key(self, args: Sequence[Any]) -> tuple | None:
        """As symbolic.SymbolicBatch.key, with the rows' leading sizes in place
        of
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
        for i, dims in self._positional:
            arg = args[i]
            if not isinstance(arg, torch.Tensor) or arg.dim() != len(dims):
                return None
            for size, d in zip(arg.shape, dims):
                if size != (d if isinstance(d, int) else lead[d[1]]):
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

    def compile(self, args: Sequence[Any], settings: common.Settings
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
        from tc.rows import NotRowwise, collapse, is_attention

        traced, rows, lead = self._trace_prefix(args)
        if self._positional:
            self.partial = (traced, rows, lead)
            raise Unsupported("not row-wise: an input has sizes of the "
                              "rows but is not rows")
        if any(is_attention(n) for n in traced.graph.nodes):
            # Never row-wise: no trace of the whole on rows to find so.
            self.partial = (traced, rows, lead)
            raise Unsupported("not row-wise: the graph has attention")
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
        symbolic.finish_symbolic_trace(collapsed, symbol)
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
                    if kind == "tensor" and tuple(dims[:count]) == self.prefix)

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
                elif tuple(dims[:count]) != self.prefix:  # positions
                    fakes.append(torch.empty(
                        [sizes[self.prefix.index(d)] if d in self.prefix
                         else d for d in dims], dtype=arg.dtype,
                        device=arg.device))
                else:
                    fakes.append(torch.empty(
                        [*sizes, *arg.shape[count:]], dtype=arg.dtype,
                        device=arg.device))
            traced = symbolic.symbolic_trace(tracing.gm_forward(gm), fakes)
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
        self.row_guards = symbolic.guards_on(env, ours, probes)
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
            traced = symbolic.symbolic_trace(replay(), fakes)
        if not env.replace(symbol).is_Symbol:
            raise Unsupported(f"the rows' trace specialized N to "
                              f"{env.replace(symbol)}")
        self.total_guards += symbolic.guards_on(env, symbol, self.total_probes)
        self.holds.clear()
        return traced, symbol

    def _compile_parts(self, traced: torch.fx.GraphModule, rows: Any,
                       lead: tuple, settings: common.Settings
                       ) -> Callable | None:
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

        from tc.rows import (attention_call, expand_positions, is_attention,
                             rowwise_nodes)

        expand_positions(traced, rows)
        # Inputs the graph writes in place (a cache), before its ops move
        # into the parts' submodules.
        written = tracing.written_placeholders(traced)
        total = math.prod(lead)
        inputs = [n.meta["val"] for n in traced.graph.nodes
                  if n.op == "placeholder"
                  and isinstance(n.meta.get("val"), torch.Tensor)]
        env = ShapeEnv()
        with FakeTensorMode(shape_env=env), enable_python_dispatcher():
            n = env.create_symintnode(env.create_symbol(
                total, ConstantSource("tc_rows_n")), hint=total)
            fakes = [None if form is _POSITIONS else torch.empty(
                [n, *form[1]] if form else list(v.shape), dtype=v.dtype,
                device=v.device)
                for v, form in ((v, _form_or_positions(rows, v))
                                for v in inputs)]
            reasons = rowwise_nodes(traced, rows, fakes)

        class Support(OperatorSupportBase):
            def is_node_supported(self, submodules: Any,
                                  node: torch.fx.Node) -> bool:
                return node.op == "call_function" and node not in reasons

        partitioner = CapabilityBasedPartitioner(
            traced, Support(), allows_single_node_partition=True)
        partitions = partitioner.propose_partitions()
        for part in partitions:
            _trim_static(part.nodes, rows)
            partition.trim(part.nodes, slices=True)
        partitions = [p for p in partitions if len(p.nodes) > 0]
        if not partitions:
            logger.debug("tc: no row-wise part of the graph computes; %s",
                         self.OTHERWISE)
            return None
        in_partition = {n for p in partitions for n in p.nodes}
        eager = [n for n in partition.op_nodes(traced.graph)
                 if n not in in_partition
                 and isinstance(n.target, torch._ops.OpOverload)]
        for node in eager:
            reasons.setdefault(node, "a view feeding only eager code stays "
                               "a view" if partition.is_view(
                                   node) else "static, "
                               "feeding only eager code")

        fused = partitioner.fuse_partitions(partitions)
        state = _RowsState(self._with_rows[0][0], len(self.prefix))
        # Attention kept whole runs as PyTorch's function, not through the
        # custom op's dispatch (microseconds a call); with a mask computed
        # from the sizes alone, classified once per size
        # (size_masks.SizeMaskedAttention).
        for node in fused.graph.nodes:
            if node.op == "call_function" and is_attention(node):
                node.target = attention_call
                if size_masks.sizes_only(node.args[3]):
                    node.target = size_masks.SizeMaskedAttention(
                        attention_call, state).__call__
        fused.recompile()
        compiled_ops = 0

        def left_to_eager(ops: list, error: Exception) -> None:
            reason = getattr(error, "reason", None) or str(error)
            reason = reason.splitlines()[0]
            for op in ops:
                if isinstance(op.target, torch._ops.OpOverload):
                    eager.append(op)
                    reasons[op] = f"its part did not compile: {reason}"

        # Every part's native compile starts before any is waited for: the
        # distinct ones compile at once, the repeated ones (a transformer's
        # layers) once (compiler.start_graph).
        started = []
        traces: dict = {}
        for node, sub in partition.fused_subgraphs(fused):
            ops = partition.op_nodes(sub.graph)
            try:
                finish = self._start_part(sub, rows, total, state, settings,
                                          traces)
            except (Unsupported, CompileError) as error:
                left_to_eager(ops, error)
                continue
            started.append((node, sub, ops, finish))
        for node, sub, ops, finish in started:
            try:
                run, compiled = finish()
            except (Unsupported, CompileError) as error:
                left_to_eager(ops, error)
                continue
            setattr(fused, node.target, partition.TcSubgraph(
                run, sub, node.target))
            compiled_ops += len(ops)
            tc.counters["subgraphs_compiled"] += 1
            tc.counters["kernels"] += compiled.num_kernels
        if not compiled_ops:
            logger.debug("tc: no row-wise part of the graph compiled; %s",
                         self.OTHERWISE)
            return None
        for node in eager:
            _fallbacks.info("eager: %s: not row-wise (%s); one compile "
                            "serves every sequence length", partition.describe(
                                node),
                            reasons[node])
        tc.counters["symbolic_graphs"] += 1
        tc.counters["graphs_compiled"] += 1
        tc.counters["ops_compiled"] += compiled_ops
        tc.counters["ops_eager"] += len(eager)
        kept = [i for i, (kind, dims) in enumerate(self.placeholders)
                if kind == "tensor" or (kind == "int" and dims in self.prefix)]

        first = kept.index(state.first)

        def chain(*args: Any) -> Any:
            state.lead = tuple(args[first].shape[:state.count])
            return fused(*args)
        index = _cuda_index(traced)
        if shape_graphs.applies(index):
            varying = [k for k, i in enumerate(kept)
                       if self.placeholders[i][0] == "tensor" and not all(
                           isinstance(d, int)
                           for d in self.placeholders[i][1])]
            chain = shape_graphs.ShapeGraphs(chain, written, index, varying)

        def run(*given: Any) -> Any:
            return chain(*(given[i] for i in kept))
        return partition.Guarded(run, self.gm.forward,
                                 "with the symbolic rows, in parts")

    def _start_part(self, sub: torch.fx.GraphModule, rows: Any,
                    total: int, state: "_RowsState",
                    settings: common.Settings, traces: dict
                    ) -> Callable[[], tuple[Callable, CompiledFunction]]:
        """Part `sub` of a graph (_compile_parts) traced on rows and its
        compile started; what waits for it returns what runs the part on
        its inputs, and the compiled function. `traces` holds the traces
        on rows of the parts so far by their structure (_structure): a
        transformer's repeated layers are traced once."""
        from tc.rows import NotRowwise, collapse

        inputs = [n.meta["val"] for n in sub.graph.nodes
                  if n.op == "placeholder"
                  and isinstance(n.meta.get("val"), torch.Tensor)]
        forms = [rows.form(v) for v in inputs]
        if all(form is None for form in forms):
            raise Unsupported("no input has rows")
        structure = _structure(sub)
        traced = traces.get(structure) if structure is not None else None
        if traced is None:
            try:
                collapsed, symbol = self._trace_rows(
                    lambda: collapse(sub, rows), inputs, rows, total)
            except NotRowwise as error:
                raise Unsupported(f"not row-wise: {error}") from None
            symbolic.finish_symbolic_trace(collapsed, symbol)
            index_checks = checks.InputIndexChecks.of(collapsed)
            traced = (collapsed, symbol, index_checks)
            if structure is not None:
                traces[structure] = traced
        collapsed, symbol, index_checks = traced
        if settings.autotune:
            wait = functools.partial(
                compiler.compile_graph, collapsed,
                dump_stages=settings.dump_stages, symbol=symbol,
                autotune=True)
        else:
            wait = compiler.start_graph(
                collapsed, dump_stages=settings.dump_stages, symbol=symbol)
        output = next(n for n in sub.graph.nodes if n.op == "output")
        outputs_rows = _output_rows(output, rows)
        tensors = [i for i, n in enumerate(
            n for n in sub.graph.nodes if n.op == "placeholder")
            if isinstance(n.meta.get("val"), torch.Tensor)]

        def finish() -> tuple[Callable, CompiledFunction]:
            compiled = wait()
            if not compiled.symbolic:
                raise Unsupported("compiled without the symbolic size")
            if settings.reduce_overhead:
                compiled.stage_inputs()
            call = _RowsCall(checks.InputIndexChecks(compiled, index_checks)
                             if index_checks else compiled,
                             [f[0] if f else None for f in forms],
                             outputs_rows, len(rows.prefix), state)
            return (lambda *given: call(*(given[i] for i in tensors)),
                    compiled)
        return finish


def _cuda_index(traced: torch.fx.GraphModule) -> int | None:
    """The CUDA device of `traced`'s tensor inputs, or None (on the CPU,
    or on several devices)."""
    devices = {n.meta["val"].device for n in traced.graph.nodes
               if n.op == "placeholder"
               and isinstance(n.meta.get("val"), torch.Tensor)}
    if len(devices) != 1:
        return None
    device = devices.pop()
    if device.type != "cuda":
        return None
    return torch.cuda.current_device() if device.index is None \
        else device.index


def _structure(sub: torch.fx.GraphModule) -> tuple | None:
    """What tells part `sub` of a graph in parts from another, as its trace
    on rows sees it: each node's op, target, arguments (other nodes by
    position) and value's shapes, strides and dtypes. None for a part
    with attributes (constants whose values the structure does not
    hold)."""
    positions: dict[torch.fx.Node, int] = {}
    items = []
    for node in sub.graph.nodes:
        if node.op == "get_attr":
            return None
        positions[node] = len(positions)
        values = torch.utils._pytree.tree_leaves(node.meta.get("val"))
        target = "" if node.op == "placeholder" else str(node.target)
        items.append((node.op, target, repr(torch.fx.node.map_arg(
            (node.args, node.kwargs), lambda n: ("node", positions[n]))),
            tuple((str(v.shape), str(v.stride()), v.dtype, str(v.device))
                  if isinstance(v, torch.Tensor) else repr(v)
                  for v in values)))
    return tuple(items)


#: The form (_form_or_positions) of an input with sizes of the rows that
#: is not rows (positions `[S]`, a `[1, S]` table's slice).
_POSITIONS = object()


def _form_or_positions(rows: Any, value: torch.Tensor) -> Any:
    from tc.rows import NotRowwise
    try:
        return rows.form(value)
    except NotRowwise:
        return _POSITIONS


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
    (SymbolicRows._compile_parts), which each part's _RowsCall views its
    outputs back to (its inputs may be rows merged into one dimension)."""

    def __init__(self, first: int, count: int):
        #: The position of a graph input with the prefix, and its length.
        self.first = first
        self.count = count
        self.lead: tuple = ()


class _RowsCall:
    """Runs a graph compiled on rows (SymbolicRows): each input with rows
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
