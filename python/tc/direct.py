"""Dynamo's graph to core ATen without tracing, for simple inference graphs.

`make_fx` re-runs a Dynamo graph under fake tensors through PyTorch's
dispatcher, proxy mode and decomposition table: ~1-2 ms per node, most of
a small graph's compile on a GPU (a manual GeLU: 15 ms of tc's ~50). Dynamo
has already run every node on fake tensors and kept the result in
`node.meta["example_value"]`, so for a graph of plain tensor math the ATen
graph can be written directly: each node of a known table maps to the core
ATen op `make_fx` would produce.

The mapping is checked, not trusted: every new node's value is computed by
running its ATen op on fake tensors, and a mapped node's shape, dtype and
strides must equal Dynamo's example value; any difference, unknown target
or unusual argument returns None and the caller traces with `make_fx` as
before. Only graphs without mutation, aliasing of inputs by outputs or
global state reach here (the caller's checks).
"""

from __future__ import annotations

import logging
import math
import operator
from typing import Any, Callable, Container

import torch
import torch.fx
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor

aten = torch.ops.aten
_debug = logging.getLogger("tc").debug

#: Unary functions and methods: Dynamo target or method name -> ATen op.
_UNARY: dict[Any, Any] = {}
for _name in ("sin", "cos", "tan", "exp", "log", "tanh", "sigmoid", "sqrt",
              "rsqrt", "abs", "neg", "relu", "erf", "reciprocal", "exp2",
              "log2", "floor", "ceil", "sign"):
    _op = getattr(aten, _name).default
    _UNARY[getattr(torch, _name)] = _op
    _UNARY[_name] = _op  # call_method
_UNARY[F.relu] = aten.relu.default
_UNARY[operator.neg] = aten.neg.default

#: Binary arithmetic: Dynamo target -> (ATen op, commutative).
_BINARY: dict[Any, tuple[Any, bool]] = {
    operator.add: (aten.add.Tensor, True),
    torch.add: (aten.add.Tensor, True),
    operator.mul: (aten.mul.Tensor, True),
    torch.mul: (aten.mul.Tensor, True),
    operator.sub: (aten.sub.Tensor, False),
    torch.sub: (aten.sub.Tensor, False),
    operator.truediv: (aten.div.Tensor, False),
    torch.div: (aten.div.Tensor, False),
    torch.maximum: (aten.maximum.default, False),
    torch.minimum: (aten.minimum.default, False),
}
_BINARY_METHODS = {"add": operator.add, "mul": operator.mul,
                   "sub": operator.sub, "div": operator.truediv}


class _Unmapped(Exception):
    """The graph holds something this table does not map."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and (
        not isinstance(x, float) or math.isfinite(x))


class _Builder:
    def __init__(self, fake_mode, decompositions: Container[str]) -> None:
        self.graph = torch.fx.Graph()
        self.env: dict[torch.fx.Node, Any] = {}
        self.fake_mode = fake_mode
        self.decompositions = decompositions

    def val(self, x: Any) -> Any:
        return x.meta["val"] if isinstance(x, torch.fx.Node) else x

    def call(self, op: Callable, *args: Any, **kwargs: Any) -> torch.fx.Node:
        if str(op) in self.decompositions:  # make_fx would decompose it
            raise _Unmapped(f"{op} decomposes")
        with self.fake_mode:
            value = op(*[self.val(a) for a in args], **kwargs)
        node = self.graph.call_function(op, tuple(args), kwargs)
        node.meta["val"] = value
        return node

    def tensor(self, x: Any) -> torch.fx.Node:
        if not isinstance(x, torch.fx.Node):
            raise _Unmapped(f"argument {x!r} is not a tensor")
        mapped = self.env[x]
        if not isinstance(mapped, torch.fx.Node) or not isinstance(
                mapped.meta.get("val"), torch.Tensor):
            raise _Unmapped("argument is not a tensor")
        return mapped

    def arg(self, x: Any) -> Any:
        if isinstance(x, torch.fx.Node):
            return self.tensor(x)
        if _is_number(x):
            return x
        raise _Unmapped(f"argument {x!r}")


def _dims(dim: Any) -> list[int]:
    if isinstance(dim, int) and not isinstance(dim, bool):
        return [dim]
    if isinstance(dim, (list, tuple)) and all(
            isinstance(d, int) and not isinstance(d, bool) for d in dim):
        return list(dim)
    raise _Unmapped(f"dim {dim!r}")


def _unsqueeze_index(index: Any, rank: int) -> int | None:
    """`x[:, None]`-style indexing: the dim a single None inserts."""
    if not isinstance(index, tuple):
        index = (index,)
    full = slice(None, None, None)
    nones = [i for i, item in enumerate(index) if item is None]
    if len(nones) != 1 or any(item != full for i, item in enumerate(index)
                              if i != nones[0]):
        return None
    if sum(1 for item in index if item == full) > rank:
        return None
    return nones[0]


def _map_node(b: _Builder, node: torch.fx.Node) -> Any:
    target, args, kwargs = node.target, node.args, dict(node.kwargs)
    if node.op == "call_method":
        if target in _UNARY and len(args) == 1 and not kwargs:
            return b.call(_UNARY[target], b.tensor(args[0]))
        if target in _BINARY_METHODS and len(args) == 2 and not kwargs:
            target = _BINARY_METHODS[target]
        elif target in ("sum", "mean", "amax", "max"):
            return _reduction(b, target, args, kwargs)
        elif target == "unsqueeze" and len(args) == 2 and not kwargs:
            return b.call(aten.unsqueeze.default, b.tensor(args[0]),
                          _dims(args[1])[0])
        elif target == "pow" and len(args) == 2 and not kwargs:
            target = operator.pow
        else:
            raise _Unmapped(f"method {target}")
    if kwargs.get("inplace") is False:  # F.relu(x, inplace=False)
        del kwargs["inplace"]
    if target in _UNARY and len(args) == 1 and not kwargs:
        return b.call(_UNARY[target], b.tensor(args[0]))
    if target is F.gelu and len(args) == 1 and set(kwargs) <= {"approximate"}:
        approximate = kwargs.get("approximate", "none")
        if approximate not in ("none", "tanh"):
            raise _Unmapped(f"gelu approximate={approximate!r}")
        return b.call(aten.gelu.default, b.tensor(args[0]),
                      approximate=approximate)
    if target in _BINARY and len(args) == 2 and not kwargs:
        op, commutative = _BINARY[target]
        lhs, rhs = args
        if not isinstance(lhs, torch.fx.Node):
            if not commutative:
                raise _Unmapped("scalar on the left of a non-commutative op")
            lhs, rhs = rhs, lhs
        if not isinstance(rhs, torch.fx.Node) and op in (
                aten.maximum.default, aten.minimum.default):
            raise _Unmapped("maximum/minimum with a scalar")
        return b.call(op, b.tensor(lhs), b.arg(rhs))
    if target in (operator.pow, torch.pow) and len(args) == 2 and not kwargs:
        if not _is_number(args[1]) or not isinstance(args[0], torch.fx.Node):
            raise _Unmapped("pow of anything but tensor ** number")
        return b.call(aten.pow.Tensor_Scalar, b.tensor(args[0]), args[1])
    if target in (torch.sum, torch.mean, torch.amax):
        return _reduction(b, target.__name__, args, kwargs)
    if target is torch.unsqueeze and len(args) == 2 and not kwargs:
        return b.call(aten.unsqueeze.default, b.tensor(args[0]),
                      _dims(args[1])[0])
    if target is operator.getitem and len(args) == 2:
        source = b.env.get(args[0]) if isinstance(args[0], torch.fx.Node) \
            else None
        if isinstance(source, tuple):  # a multi-result op's result
            if not isinstance(args[1], int):
                raise _Unmapped("tuple index")
            return source[args[1]]
        tensor = b.tensor(args[0])
        dim = _unsqueeze_index(args[1], tensor.meta["val"].dim())
        if dim is None:
            raise _Unmapped(f"index {args[1]!r}")
        return b.call(aten.unsqueeze.default, tensor, dim)
    if target is F.layer_norm:
        return _layer_norm(b, args, kwargs)
    if target is F.linear:
        return _linear(b, args, kwargs)
    if target in (F.softmax, torch.softmax):
        return _softmax(b, args, kwargs)
    raise _Unmapped(f"{node.op} {getattr(target, '__name__', target)}")


def _reduction(b: _Builder, name: str, args: tuple, kwargs: dict) -> Any:
    args = list(args)
    x = b.tensor(args.pop(0))
    dim = kwargs.pop("dim", args.pop(0) if args else None)
    keepdim = kwargs.pop("keepdim", args.pop(0) if args else False)
    if kwargs or args or not isinstance(keepdim, bool) or dim is None:
        raise _Unmapped(f"{name} arguments")
    if name == "max":  # max(dim) -> (values, indices)
        if not isinstance(dim, int):
            raise _Unmapped("max over several dims")
        node = b.call(aten.max.dim, x, dim, keepdim)
        return tuple(b.call(operator.getitem, node, i) for i in range(2))
    op = {"sum": aten.sum.dim_IntList, "mean": aten.mean.dim,
          "amax": aten.amax.default}[name]
    return b.call(op, x, _dims(dim), keepdim)


def _layer_norm(b: _Builder, args: tuple, kwargs: dict) -> Any:
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    values = dict(zip(names, args))
    values.update(kwargs)
    if set(values) - set(names):
        raise _Unmapped("layer_norm arguments")
    shape = values.get("normalized_shape")
    if not isinstance(shape, (list, tuple)):
        shape = _dims(shape)
    eps = values.get("eps", 1e-5)
    weight, bias = values.get("weight"), values.get("bias")
    node = b.call(aten.native_layer_norm.default, b.tensor(values["input"]),
                  list(shape), b.tensor(weight) if weight is not None
                  else None, b.tensor(bias) if bias is not None else None,
                  float(eps))
    return b.call(operator.getitem, node, 0)


def _linear(b: _Builder, args: tuple, kwargs: dict) -> Any:
    names = ("input", "weight", "bias")
    values = dict(zip(names, args))
    values.update(kwargs)
    x, weight = b.tensor(values["input"]), b.tensor(values["weight"])
    if x.meta["val"].dim() != 2:
        raise _Unmapped("linear of a non-matrix input")
    wt = b.call(aten.permute.default, weight, [1, 0])
    if values.get("bias") is None:
        return b.call(aten.mm.default, x, wt)
    return b.call(aten.addmm.default, b.tensor(values["bias"]), x, wt)


def _softmax(b: _Builder, args: tuple, kwargs: dict) -> Any:
    args = list(args)
    x = b.tensor(args.pop(0))
    dim = kwargs.pop("dim", args.pop(0) if args else None)
    kwargs.pop("_stacklevel", None)
    if args or kwargs.pop("dtype", None) is not None or kwargs or \
            not isinstance(dim, int):
        raise _Unmapped("softmax arguments")
    return b.call(aten._softmax.default, x, dim, False)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return (a.shape == b.shape and a.dtype == b.dtype
                and a.device == b.device and a.stride() == b.stride())
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(map(_same, a, b))
    return False


def direct_aten(gm: torch.fx.GraphModule,
                decompositions: Container[str]) -> torch.fx.GraphModule | None:
    """`gm` (Dynamo's graph) as a core ATen graph, or None (trace it).

    `decompositions` names (`str(op)`) the ops of the table `make_fx` would
    use: such an op is not written directly (the graph is traced instead). New values are computed
    in the fake mode of Dynamo's example values.
    """
    modes = {id(node.meta["example_value"].fake_mode): node.meta[
        "example_value"].fake_mode for node in gm.graph.nodes
        if node.op == "placeholder" and isinstance(
            node.meta.get("example_value"), FakeTensor)}
    if len(modes) != 1:
        return None
    b = _Builder(next(iter(modes.values())), decompositions)
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
                mapped = _map_node(b, node)
                expected = node.meta.get("example_value")
                got = (tuple(n.meta["val"] for n in mapped)
                       if isinstance(mapped, tuple) else mapped.meta["val"])
                if not _same(got, expected):
                    _debug("not written directly: %s gives %s, Dynamo %s",
                           node.format_node(), got, expected)
                    return None
                for new in (mapped if isinstance(mapped, tuple)
                            else (mapped,)):
                    if "stack_trace" in node.meta:
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
    except _Unmapped as why:
        _debug("not written directly: %s", why)
        return None
    except Exception as error:  # a fake-tensor error: let make_fx decide
        _debug("not written directly: %s: %s", type(error).__name__, error)
        return None
    b.graph.eliminate_dead_code()
    return torch.fx.GraphModule(torch.nn.Module(), b.graph)
