"""What a compiled graph checks at run time: value guards (a value the
compile assumed; a miss reruns the graph in eager) and eager's errors for
bad input (an index out of range, an integer division by zero on the
CPU), hoisted out of the compiled code and raised on the host."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import compat, logs
from tc.importer import qualified_name
from tc.support import VALUE_GUARDS, is_supported
from tc.backend import common, tracing

_fallbacks = logs.channel_logger("fallbacks")


def _with_extra_outputs(gm: torch.fx.GraphModule, extra: Callable
                        ) -> tuple[torch.fx.GraphModule, int | None]:
    """A copy of `gm` that returns a tuple of gm's outputs followed by the
    nodes `extra(graph, mapping)` adds to the copy (`mapping`: gm's nodes
    to the copy's); and how many outputs gm has (None when it returns one
    value, not a tuple or list). A training graph's new values of the
    inputs it updates (`tracing.MUTATED_INPUTS`, its last outputs) stay last,
    after the added nodes, and are not counted."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = output.args[0]
    single = not isinstance(results, (tuple, list))
    own = (results,) if single else tuple(results)
    mutated = len(gm.meta.get(tracing.MUTATED_INPUTS, ()))
    graph = torch.fx.Graph()
    mapping: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.graph_copy(gm.graph, mapping)
    added = tuple(extra(graph, mapping))
    copied = tuple(torch.fx.node.map_arg(own, mapping.__getitem__))
    kept = len(copied) - mutated
    graph.output(copied[:kept] + added + copied[kept:])
    module = compat.graph_module(gm, graph)
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


def add_value_guards(gm: torch.fx.GraphModule) -> _Guards | None:
    """Adds a guard per op of VALUE_GUARDS (None when there is none): a
    bool output that is true when an operand has a value tc's
    decomposition does not compute exactly (a polynomial's degree above
    the recurrence tc unrolls). `ValueGuards` then reruns the graph in
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


class ValueGuards:
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


@dataclasses.dataclass
class _Checks:
    """An ATen graph without its error checks (`tracing.ERROR_CHECKS`)."""
    #: The graph; it returns the original outputs, then one value per
    #: check: the tensor the check reads.
    graph: torch.fx.GraphModule
    #: The checks' ops and their arguments other than that tensor.
    checks: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]
    #: How many outputs the original graph has (None: one, not a tuple).
    num_outputs: int | None
    #: Whether one more output follows the checks' values: whether any
    #: index check failed (their flags or'ed), which the host reads
    #: instead of each flag (`HostChecks`).
    any_out_of_range: bool = False


def hoist_error_checks(gm: torch.fx.GraphModule) -> _Checks | None:
    """Moves `gm`'s error checks after the graph (None when it has none).

    `_linalg_check_errors(info, api_name, is_matrix)` raises eager's
    error when a factorization's `info` is nonzero; the rest of the graph
    does not depend on it. tc compiles the graph with each `info` as an
    extra output, and `HostChecks` runs the checks on them, raising the
    same errors (after the whole graph rather than before its later ops:
    the graph is functional, so nothing else is observable).
    """
    checks = [n for n in gm.graph.nodes if n.op == "call_function"
              and n.target in tracing.ERROR_CHECKS and not n.users
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
        inputs = [n for n in graph.nodes if n.op == "placeholder"]
        moved: set[torch.fx.Node] = set()
        for node, index, low, size, _ in indexings:
            mapping[node].meta["tc_checked"] = True
            copied = mapping[index]
            copied.meta[_RANGES_CHECKED] = (
                *copied.meta.get(_RANGES_CHECKED, ()), (low, size))
            # Checked as early as the index can be computed, not where it
            # is used: a check of an input (Swin's relative position
            # indices, used block after block) runs first, so the host
            # reads its flag early (`HostChecks`) instead of at the graph's
            # end. (Where a kernel loads every index anyway,
            # tc-fuse-index-checks moves the check into it.)
            _hoist(mapping[index], inputs, moved)
            flags.append(_add_out_of_range_flag(graph, mapping[index],
                                                mapping[index], index, low,
                                                size))
        extra = [mapping[n.args[0]] for n in checks] + flags
        if len(indexings) >= 2:
            extra.append(_any_of(graph, flags[len(divisions):]))
        return extra

    copied, count = _with_extra_outputs(gm, infos)
    return _Checks(copied,
                   [(n.target, n.args[1:], dict(n.kwargs)) for n in checks]
                   + [(_raise_zero_division, (), {}) for _ in divisions]
                   + [(_raise_out_of_range, (error,), {})
                      for *_, error in indexings],
                   count, len(indexings) >= 2)


def _any_of(graph: torch.fx.Graph,
            flags: list[torch.fx.Node]) -> torch.fx.Node:
    """A node after the last of `flags` (0-d booleans) that is true where
    any of them is. A decode step of Hugging Face's checks 17 positions
    (one a layer's cache): read one by one, their 17 copies to the host
    took 43 us of GPU time a step, and the host waited for them all."""
    order = {node: i for i, node in enumerate(graph.nodes)}
    at = max(flags, key=order.__getitem__)
    combined = flags[0]
    for flag in flags[1:]:
        with graph.inserting_after(at):
            node = graph.call_function(torch.ops.aten.logical_or.default,
                                       (combined, flag))
        # (The flags' example values can come from different fake modes.)
        node.meta["val"] = flag.meta["val"].new_empty((), dtype=torch.bool)
        at = combined = node
    return combined


def _checks_indices(device: torch.device) -> bool:
    """Whether tc checks the indices of gathers and indexings on `device`
    (see `_checked_indexings`): always on the CPU; on a GPU unless
    `TC_INDEX_CHECKS=0` (the check's flag is read on the host after the
    graph, which waits for the GPU once a call)."""
    return device.type == "cpu" or os.environ.get(
        "TC_INDEX_CHECKS", "1") != "0"


#: node.meta key: the ranges [low, size) a check of the index node's
#: values was added for (`hoist_error_checks`).
_RANGES_CHECKED = "tc_ranges_checked"


def _checked_indexings(gm: torch.fx.GraphModule) -> list[tuple]:
    """`gm`'s gathers and indexings by index tensors (`_checks_indices`):
    (node, index node, lowest valid index, size of the indexed dimension,
    the error eager raises out of range). tc's kernels clamp; eager raises
    (on the CPU; on a GPU its kernels assert on the device, which ends the
    process's CUDA context: tc raises the CPU's error instead)."""
    aten = torch.ops.aten
    found = []
    checked: set[tuple[torch.fx.Node, int, int]] = set()
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
            if _constant_in_range(index, -size if low is None else low,
                                  size):
                continue
            error = out_of_range
            if node.target is aten.gather.default:
                error = RuntimeError(f"index out of bounds for dimension "
                                     f"{dim} with size {size}")
            elif node.target in (aten.index.Tensor, aten.index_put.default):
                error = IndexError(f"index out of bounds for dimension "
                                   f"{dim} with size {size}")
            low = -size if low is None else low
            if ((index, low, size) in checked
                    or (low, size) in index.meta.get(_RANGES_CHECKED, ())):
                # The same check twice (RoBERTa's position ids index a
                # buffer and a table of as many rows), in this graph or
                # by a check added before: the first in the graph's order,
                # whose error eager raises, stands for both.
                continue
            checked.add((index, low, size))
            found.append((node, index, low, size, error))
    return found


#: The most elements of a value that computes a checked index and moves
#: earlier in the graph with it (`_hoist`): index arithmetic, not
#: activations.
_HOISTED_ELEMENTS = 1 << 20


def _hoist(node: torch.fx.Node, inputs: list[torch.fx.Node],
           moved: set[torch.fx.Node]) -> None:
    """Moves `node`, after the values it reads, to just after the last of
    them (or the graph's inputs): as early as the graph can compute it.
    Views of any size and small values move (GPT-Neo's classifier picks
    each row's last token by an index computed from the input ids, which
    the model's code computes after the whole transformer); large values,
    random ops and in-place ops stay where they are."""
    if node in moved or node.op != "call_function":
        return
    target = node.target
    value = node.meta.get("val")
    if not isinstance(target, torch._ops.OpOverload) or \
            target._schema.is_mutable or \
            torch.Tag.nondeterministic_seeded in target.tags:
        return
    if not tracing.returns_alias(node) and (
            not isinstance(value, torch.Tensor)
            or value.numel() > _HOISTED_ELEMENTS):
        return
    moved.add(node)
    for source in node.all_input_nodes:
        _hoist(source, inputs, moved)
    positions = {n: i for i, n in enumerate(node.graph.nodes)}
    anchor = max(node.all_input_nodes + inputs[-1:],
                 key=positions.__getitem__, default=None)
    if anchor is not None and positions[anchor] + 1 < positions[node]:
        anchor.append(node)


#: The most elements a constant index may have for the compile to check
#: it (`_constant_in_range`); larger ones are checked at run time.
_CONSTANT_INDEX_ELEMENTS = 1 << 20

#: The most nodes of a constant index's computation evaluated.
_CONSTANT_INDEX_NODES = 64


def _constant_in_range(index: torch.fx.Node, low: int, size: int) -> bool:
    """Whether `index` is computed from constants alone (`roll`'s and
    `unfold`'s indices: an `arange` and arithmetic) and every element lies
    in [low, size): then no run can fail its check, and none is compiled
    (Swin-B's rolls: 44 checks a step, one of them last in the program,
    whose flag the host waited for). Evaluated on the CPU while compiling;
    indices that read an input or a random op, large ones, and ones that
    fail to evaluate keep their run-time check."""
    order = {}
    stack = [index]
    while stack:
        node = stack.pop()
        if node in order:
            continue
        value = node.meta.get("val")
        if (node.op != "call_function"
                or not isinstance(node.target, torch._ops.OpOverload)
                or torch.Tag.nondeterministic_seeded in node.target.tags
                or (isinstance(value, torch.Tensor)
                    and value.numel() > _CONSTANT_INDEX_ELEMENTS)
                or len(order) >= _CONSTANT_INDEX_NODES):
            return False
        order[node] = None
        stack.extend(node.all_input_nodes)
    positions = {n: i for i, n in enumerate(index.graph.nodes)}
    cpu = torch.device("cpu")

    def on_cpu(a: Any) -> Any:
        return cpu if isinstance(a, torch.device) else a

    values: dict[torch.fx.Node, Any] = {}
    try:
        for node in sorted(order, key=positions.__getitem__):
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs),
                                                 values.__getitem__)
            args = tuple(on_cpu(a) for a in args)
            kwargs = {k: on_cpu(v) for k, v in kwargs.items()}
            values[node] = node.target(*args, **kwargs)
    except Exception:  # left to the run-time check
        return False
    value = values[index]
    if type(value) is not torch.Tensor:  # a fake tensor: no values here
        return False
    return value.numel() == 0 or bool(
        (value.min() >= low) & (value.max() < size))


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


def _raise_out_of_range(flag: torch.Tensor | bool,
                        error: Exception) -> None:
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


class InputIndexChecks:
    """Eager's errors for indices out of range in a graph compiled with a
    symbolic size (tc.backend.symbolic), whose flags would be reductions
    over that size: each index is an input of the graph (token ids, the
    positions a part of the graph takes from eager), checked on the host
    before the compiled code runs, in one reduction and one read of it."""

    def __init__(self, run: Callable, checks: list[tuple]):
        self.run = run
        #: (input position, lowest valid index, size, eager's error).
        self.checks = checks

    @staticmethod
    def of(gm: torch.fx.GraphModule) -> list[tuple]:
        """The checks graph `gm` needs, each on a tensor input's position;
        raises Unsupported when an index is computed in the graph or an
        integer division needs eager's CPU check (the per-shape path
        checks those)."""
        from tc.importer import Unsupported
        if _integer_divisions_on_cpu(gm):
            raise Unsupported("an integer division needs a check")
        tensors = [n for n in gm.graph.nodes if n.op == "placeholder"
                   and isinstance(n.meta.get("val"), torch.Tensor)]
        found = []
        for _, index, low, size, error in _checked_indexings(gm):
            source = index
            while source.op == "call_function" and \
                    source.target in _WHOLE_VIEWS:
                source = source.args[0]
            if source not in tensors:
                raise Unsupported(f"index '{index.name}' is computed in "
                                  f"the graph")
            found.append((tensors.index(source), low, size, error))
        return found

    def __call__(self, *args: Any) -> Any:
        checked = [(args[i], low, size, error)
                   for i, low, size, error in self.checks if args[i].numel()]
        if checked and checked[0][0].is_cuda and \
                torch.cuda.is_current_stream_capturing():
            # No read of the device inside a capture: the flags stay there
            # for the capture's owner (shape_graphs.ShapeGraphs) to read
            # after each replay.
            if _deferred is None:
                raise RuntimeError("tc: an index check cannot run inside "
                                   "this CUDA graph capture")
            for t, low, size, error in checked:
                _deferred.append(DeferredCheck(
                    ((t < low) | (t >= size)).any(), error))
        elif checked:
            # Each index's least and greatest value, read in one copy.
            bounds = torch.cat([torch.stack(torch.aminmax(t))
                                for t, *_ in checked]).tolist()
            for k, (_, low, size, error) in enumerate(checked):
                if bounds[2 * k] < low or bounds[2 * k + 1] >= size:
                    raise common.input_error(error)
        return self.run(*args)


class DeferredCheck:
    """An index check inside a CUDA graph capture (deferred_index_checks):
    its flag stays on the device, and an event the graph records right
    after it (`torch.cuda.Event(external=True)`) lets each replay's flag be
    read as soon as the graph has set it, not after the whole graph: the
    host waits for the first kernels of the replay, and queues the next
    call's work while the rest runs (as a compiled graph's early flag read
    does, `HostChecks`)."""

    def __init__(self, flag: torch.Tensor, error: BaseException):
        self.flag = flag
        self.error = error
        self.event: Any = None
        try:
            event = torch.cuda.Event(external=True)
        except TypeError:  # a PyTorch without events inside graphs
            return
        event.record()
        self.event = event

    def failed(self, stream: Any) -> bool:
        """Whether the last replay's index was out of range, read on
        `stream` (a stream the replay does not run on) once the event has
        passed; without the event, after the whole replay."""
        if self.event is None:
            return bool(self.flag.item())
        self.event.synchronize()
        with torch.cuda.stream(stream):
            return bool(self.flag.item())


#: While a capture of tc's own runs (deferred_index_checks): the index
#: checks inside it.
_deferred: list[DeferredCheck] | None = None


@contextlib.contextmanager
def deferred_index_checks() -> Any:
    """Index checks (InputIndexChecks) inside a CUDA graph capture leave
    their flags on the device, as the DeferredChecks of the list this
    yields."""
    global _deferred
    outer, _deferred = _deferred, []
    try:
        yield _deferred
    finally:
        _deferred = outer


#: Views that keep every element of their input (an index checked through
#: one is its input checked whole, as eager checks it).
_WHOLE_VIEWS = (torch.ops.aten.view.default,
                torch.ops.aten._unsafe_view.default,
                torch.ops.aten.reshape.default,
                torch.ops.aten.unsqueeze.default,
                torch.ops.aten.squeeze.dim,
                torch.ops.aten.expand.default,
                torch.ops.aten.permute.default,
                torch.ops.aten.alias.default)


def _raise_zero_division(flag: torch.Tensor) -> None:
    """Eager's error for an integer division by zero on the CPU."""
    if bool(flag):
        raise RuntimeError("ZeroDivisionError")


class HostChecks:
    """Runs a graph compiled without its error checks, then the checks."""

    def __init__(self, run: Callable, checked: _Checks):
        self.run = run
        self.checks = checked.checks
        self.num_outputs = checked.num_outputs
        self.any_out_of_range = checked.any_out_of_range
        # Index checks' flags come back as bools where the runner reads
        # them as soon as they are set (on a GPU: the embedding's gather,
        # early in the graph), not after the whole graph; where there are
        # several, the one that or's them.
        first = self.num_outputs or 1
        flags = ([first + len(self.checks)] if self.any_out_of_range else
                 [first + i for i, (check, _, _) in enumerate(self.checks)
                  if check is _raise_out_of_range])
        read = getattr(run, "read_flags_early", None)
        if flags and read is not None:
            read(flags)

    def __call__(self, *args: Any) -> Any:
        outputs = self.run(*args)
        values = outputs[self.num_outputs or 1:]
        # With the flags or'ed, each is read only when one is set (to
        # raise the first failing check's error).
        indices_ok = self.any_out_of_range and not bool(
            values[len(self.checks)])
        for value, (check, rest, kwargs) in zip(values, self.checks):
            if indices_ok and check is _raise_out_of_range:
                continue
            check(value, *rest, **kwargs)
        return _own_outputs(outputs, self.num_outputs)
