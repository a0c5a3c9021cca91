"""Dynamo's graph to core ATen without tracing the whole graph.

`make_fx` re-runs a Dynamo graph under fake tensors through PyTorch's
dispatcher, proxy mode and decomposition table: ~1-2 ms per node, most of
a small graph's compile on a GPU (a manual GeLU: 15 ms of tc's ~50) and
0.3-0.8 s of a transformer's first step. Dynamo has already run every node
on fake tensors and kept the result in `node.meta["example_value"]`, so
the ATen graph can be written node by node: a node of a known table
(`tc.direct_rules.map_node`: pointwise math, reductions, views, linear
layers, layer and batch norms, convolutions, embeddings, dropout in eval
mode) maps to the core ATen ops `make_fx` would produce; any other node
(attention, a
multi-head attention block, constants) is traced alone by `make_fx`, with
the same decomposition table, and its ATen nodes spliced in
(`_trace_node`).

The mapping is checked, not trusted: every new node's value is computed by
running its ATen op on fake tensors, and a mapped node's shape, dtype and
strides must equal Dynamo's example value; any difference, or a node that
neither maps nor traces alone (a mutation inside it, an argument that is
neither a tensor nor a constant) returns None and the caller traces the
whole graph with `make_fx` as before. In-place ops (`nn.ReLU(inplace=True)`,
`out += identity`) are written as the in-place ATen ops, which the caller
rewrites out of place as it does a traced graph's. Only graphs without
global state reach here (the caller's checks); a graph entering an autocast
region of its own is traced whole.

A training graph's forward (tc differentiates the ATen graph itself) is
written the same way, with the forward's decomposition table. Under the
caller's autocast an op's dtype comes from the dispatcher's casts, which a
rule does not write: the rules' values are computed with autocast off, and
a node whose dtype then differs from Dynamo's, or whose rule refuses its
operands, is traced alone under the caller's autocast, which writes its
casts down. (An op autocast casts has operands of its dtype already, or
gets another result dtype without the casts, or refuses operands of two
dtypes; those it widens are widened alike by type promotion.)
"""

from __future__ import annotations

import contextlib
import logging
import operator
from typing import Any, Callable, Container, Iterator

import torch
import torch.fx
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensor

from tc import compat
from tc.direct_rules import Builder, Unmapped, map_node

_debug = logging.getLogger("tc").debug


def _same(a: Any, b: Any, strides: bool = True) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (a.shape == b.shape and a.dtype == b.dtype
                and a.device == b.device
                and (not strides or a.stride() == b.stride()))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(
            _same(x, y, strides) for x, y in zip(a, b))
    return a is None and b is None


#: Constants a node's trace may depend on besides its tensors' metadata
#: (the key of `Builder.traces`).
_KEY_TYPES = (int, float, bool, str, type(None), torch.dtype, torch.device,
              torch.memory_format, torch.layout, slice, type(Ellipsis))


def _trace_node(b: Builder, node: torch.fx.Node) -> Any:
    """`node` traced alone by `make_fx` (with the decompositions the whole
    graph's trace would use) and spliced into `b.graph`: its result (a
    node, or a tuple of them for a node of several results). A tensor
    argument must be a tensor already written; other arguments are
    constants of the node. A model's repeated layers trace once: a node of
    the same target, constants and tensor metadata as one traced before
    replays that trace (`b.traces`), its values computed again."""
    if node.op not in ("call_function", "call_method"):
        raise Unmapped(f"{node.op} node")
    leaves, spec = pytree.tree_flatten((node.args, node.kwargs))
    where = [i for i, leaf in enumerate(leaves)
             if isinstance(leaf, torch.fx.Node)]
    inputs = [b.tensor(leaves[i]) for i in where]
    # Each value requires grad as eager's (Dynamo's example value) does: a
    # trace can depend on it (CUDA attention computes the log-sum-exp its
    # backward reads only for inputs that require grad), and values spliced
    # from traces carry none.
    with b.fake_mode:
        values = [_requiring_grad(n.meta["val"], leaves[i])
                  for n, i in zip(inputs, where)]
    key = None
    if all(isinstance(leaf, (torch.fx.Node, *_KEY_TYPES)) for leaf in leaves):
        key = (node.op, node.target, str(spec),
               repr([None if i in where else leaf
                     for i, leaf in enumerate(leaves)]),
               tuple((v.shape, v.stride(), v.storage_offset(), v.dtype,
                      v.device, v.requires_grad) for v in values))
    entry = b.traces.get(key) if key is not None else None
    if entry is not None:
        return _splice(b, node, entry, inputs, replay=True)

    def run(*values: Any) -> Any:
        filled = list(leaves)
        for i, value in zip(where, values):
            filled[i] = value
        args, kwargs = pytree.tree_unflatten(filled, spec)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        return node.target(*args, **kwargs)

    from torch.fx.experimental.proxy_tensor import make_fx

    # Under the caller's autocast, as the whole graph's trace would run:
    # its casts are written down as `_to_copy` nodes.
    with b.fake_mode, _autocast(b.autocast):
        traced = make_fx(run, decomposition_table=b.explicit())(*values)
    left = [str(n.target) for n in traced.graph.nodes
            if isinstance(n.target, torch._ops.OpOverload)
            and str(n.target) in b.decompositions]
    if left:
        # An op the whole table decomposes, which make_fx left whole.
        _debug("%s traced again with the whole table: %s", node.name, left)
        with b.fake_mode, _autocast(b.autocast):
            traced = make_fx(run, decomposition_table=b.table())(*values)
    entry = _Trace(traced, {})
    result = _splice(b, node, entry, inputs, replay=False)
    if key is not None and all(
            n.op != "call_function" or n.target is operator.getitem
            or isinstance(n.target, torch._ops.OpOverload)
            for n in traced.graph.nodes):
        b.traces[key] = entry
    return result


def _requiring_grad(value: torch.Tensor, node: torch.fx.Node
                    ) -> torch.Tensor:
    """`value` (a written node's), or under grad mode an alias of it that
    requires grad where Dynamo's example value of `node` does and it does
    not. (Without grad mode, values are passed as they are: a parameter's
    requires grad, as in make_fx's trace of the whole graph.)"""
    example = node.meta.get("example_value")
    if (not torch.is_grad_enabled() or value.requires_grad
            or not isinstance(example, torch.Tensor)
            or not example.requires_grad):
        return value
    return value.detach().requires_grad_(True)


class _Trace:
    """A node's trace by make_fx, and the names its constants were given
    in the written graph's module."""

    def __init__(self, traced: torch.fx.GraphModule,
                 constants: dict[str, str]) -> None:
        self.traced = traced
        self.constants = constants


def _splice(b: Builder, node: torch.fx.Node, entry: _Trace,
            inputs: list[torch.fx.Node], replay: bool) -> Any:
    """`entry`'s trace written into `b.graph` on `inputs`: its result.
    With `replay`, each op's value is computed again on these inputs (the
    trace's own values belong to the inputs it was traced on)."""
    env: dict[torch.fx.Node, Any] = {}
    placeholders = iter(inputs)
    result: Any = None
    traced = entry.traced
    for new in traced.graph.nodes:
        if new.op == "placeholder":
            env[new] = next(placeholders)
        elif new.op == "get_attr":
            name = entry.constants.get(new.target)
            if name is None:
                value = getattr(traced, new.target)
                name = f"_traced_constant{len(b.root._buffers)}"
                b.root.register_buffer(name, value)
                entry.constants[new.target] = name
            env[new] = b.graph.get_attr(name)
            env[new].meta["val"] = b.fake_mode.from_tensor(
                getattr(b.root, name), static_shapes=True)
        elif new.op == "call_function":
            if isinstance(new.target, torch._ops.OpOverload) and \
                    new.target._schema.is_mutable:
                raise Unmapped(f"{node.name} mutates ({new.target})")
            if replay:
                args = torch.fx.node.map_arg(new.args, lambda n: env[n])
                kwargs = torch.fx.node.map_arg(new.kwargs, lambda n: env[n])
                env[new] = b.call(new.target, *args, **kwargs)
            else:
                env[new] = b.graph.node_copy(new, lambda n: env[n])
        elif new.op == "output":
            result = new.args[0]
        else:
            raise Unmapped(f"{new.op} in {node.name}'s trace")
    if isinstance(result, (list, tuple)):
        # (A multi-head attention block returns (output, None).)
        if not all(r is None or isinstance(r, torch.fx.Node)
                   for r in result):
            raise Unmapped(f"{node.name} returns a non-tensor")
        return tuple(None if r is None else env[r] for r in result)
    if not isinstance(result, torch.fx.Node):
        raise Unmapped(f"{node.name} returns a non-tensor")
    return env[result]


def _value_of(mapped: Any) -> Any:
    """The value of a written node, or the values of a tuple of them."""
    if isinstance(mapped, tuple):
        return tuple(None if n is None else n.meta["val"] for n in mapped)
    return mapped.meta["val"]


def _has_autocast_region(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph enters an autocast region of its own. Traced
    whole: traced alone, its entering node ran (autocast's nesting count
    went up) and its leaving node, whose argument is no tensor, did not,
    so eager's autocast stopped clearing its cache of cast weights and
    reused stale casts of weights that had changed since."""
    markers = compat.get("autocast_markers") or ()
    return any(node.target in markers for node in gm.graph.nodes)


def _autocast_states(gm: torch.fx.GraphModule
                     ) -> tuple[tuple[str, torch.dtype], ...]:
    """The devices (the CPU, CUDA, the inputs') whose autocast the caller
    runs the graph under, with its dtypes: an op's dtype then comes from
    the dispatcher's casts."""
    devices = {"cpu", "cuda"}
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if node.op == "placeholder" and isinstance(value, torch.Tensor):
            devices.add(value.device.type)
    return tuple((device, torch.get_autocast_dtype(device))
                 for device in sorted(devices)
                 if torch.is_autocast_enabled(device))


@contextlib.contextmanager
def _autocast(states: tuple[tuple[str, torch.dtype], ...],
              enabled: bool = True) -> Iterator[None]:
    """Autocast on (or off) for each of `states`' devices."""
    with contextlib.ExitStack() as stack:
        for device, dtype in states:
            stack.enter_context(torch.autocast(device, dtype=dtype,
                                               enabled=enabled))
        yield


def direct_aten(gm: torch.fx.GraphModule, decompositions: Container[str],
                table: Callable[[], dict], explicit: Callable[[], dict]
                ) -> tuple[torch.nn.Module, torch.fx.Graph] | None:
    """`gm` (Dynamo's graph) as a core ATen graph, or None (trace it): the
    graph and the module holding its constants, from which the caller
    makes a GraphModule once its own rewrites are done (each GraphModule
    writes the graph's Python code: ~30 ms for a transformer's).

    `decompositions` names (`str(op)`) the ops of the table `make_fx` would
    use: such an op is not written directly (its node is traced alone).
    A node is traced alone with `explicit()`, that table less what make_fx
    decomposes anyway, and again with `table()` (slow to build) should it
    leave an op the table decomposes. New values are computed in the fake
    mode of Dynamo's example values.
    """
    if _has_autocast_region(gm):
        return None
    casts = _autocast_states(gm)
    modes = {id(node.meta["example_value"].fake_mode): node.meta[
        "example_value"].fake_mode for node in gm.graph.nodes
        if node.op == "placeholder" and isinstance(
            node.meta.get("example_value"), FakeTensor)}
    if len(modes) != 1:
        return None
    b = Builder(next(iter(modes.values())), decompositions, table,
                 explicit, autocast=casts)
    # Values computed by the rules are the ATen ops' own, without
    # autocast's casts (`_trace_node` runs under them).
    with _autocast(casts, enabled=False):
        return _write(b, gm)


def _write(b: Builder, gm: torch.fx.GraphModule
           ) -> tuple[torch.nn.Module, torch.fx.Graph] | None:
    """`direct_aten`'s graph written by `b`, or None."""
    alone = 0
    #: Written nodes whose strides differ from Dynamo's example values.
    diverged: set[torch.fx.Node] = set()
    try:
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                value = node.meta.get("example_value")
                if not isinstance(value, torch.Tensor) or not all(
                        isinstance(size, int) for size in value.shape):
                    return None  # symbolic shapes: make_fx specializes
                new = b.graph.placeholder(node.name)
                new.meta["val"] = value
                for key in ("stack_trace",):
                    if key in node.meta:
                        new.meta[key] = node.meta[key]
                b.env[node] = new
            elif node.op in ("call_function", "call_method"):
                # Strides may differ from Dynamo's where make_fx's own
                # trace differs from the ops Dynamo ran (CPU attention's
                # decomposition writes a contiguous result where Dynamo
                # saw the fused kernel's layout), and after such a node;
                # elsewhere they must agree, or the rule is wrong.
                layout_free = any(
                    isinstance(arg, torch.fx.Node) and isinstance(
                        b.env.get(arg), torch.fx.Node)
                    and b.env[arg] in diverged for arg in
                    pytree.tree_leaves((node.args, node.kwargs)))
                expected = node.meta.get("example_value")
                try:
                    try:
                        mapped = map_node(b, node)
                    except Unmapped:
                        raise
                    except Exception as error:
                        if not b.autocast:
                            raise
                        # Operands of two dtypes that autocast would cast.
                        raise Unmapped(f"{type(error).__name__}") from None
                    if b.autocast and not _same(_value_of(mapped), expected,
                                           strides=False):
                        # An op autocast casts: only a trace writes its
                        # casts down (the rule's nodes stay, dead).
                        raise Unmapped("autocast's casts")
                except Unmapped as why:
                    _debug("%s traced alone: %s", node.name, why)
                    mapped = _trace_node(b, node)
                    alone += 1
                    layout_free = True
                got = _value_of(mapped)
                if not _same(got, expected, strides=not layout_free):
                    _debug("not written directly: %s gives %s, Dynamo %s",
                           node.format_node(), got, expected)
                    return None
                news = mapped if isinstance(mapped, tuple) else (mapped,)
                if layout_free and not _same(got, expected):
                    diverged.update(n for n in news if n is not None)
                for new in news:
                    if new is not None and "stack_trace" in node.meta:
                        new.meta.setdefault("stack_trace",
                                            node.meta["stack_trace"])
                b.env[node] = mapped
            elif node.op == "output":
                results = node.args[0]
                if not isinstance(results, (tuple, list)):
                    return None
                outs = [b.tensor(r) for r in results]
                b.graph.output(tuple(outs))
            else:
                return None
    except Unmapped as why:
        _debug("not written directly: %s", why)
        return None
    except Exception as error:  # a fake-tensor error: let make_fx decide
        _debug("not written directly: %s: %s", type(error).__name__, error)
        return None
    # Dead nodes (a rule's partial work) stay: the caller's dead-code pass
    # knows which nodes without users must stay (error checks, in-place
    # ops, which it rewrites out of place).
    _debug("written directly, %d of %d nodes traced alone", alone,
           len(gm.graph.nodes))
    return b.root, b.graph
