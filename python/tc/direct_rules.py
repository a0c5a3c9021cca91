"""The rules of `tc.direct`: a Dynamo graph's node written as the core ATen
ops `make_fx` would trace it to.

`map_node` maps one node of a known target (pointwise math, reductions,
views and reshapes, linear layers, layer and batch norms, 2-d
convolutions, embeddings, eval-mode dropout, in-place ReLU and `+=`) into
a `Builder`'s graph, computing each new node's value on fake tensors; a
node it has no rule for raises `Unmapped` (`tc.direct` then traces it
alone).
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Container

import torch
import torch.fx
import torch.nn.functional as F

__all__ = ["Builder", "Unmapped", "map_node"]

aten = torch.ops.aten

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


class Unmapped(Exception):
    """The graph holds something this table does not map."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and (
        not isinstance(x, float) or math.isfinite(x))


class Builder:
    def __init__(self, fake_mode, decompositions: Container[str],
                 table: Callable[[], dict],
                 explicit: Callable[[], dict],
                 autocast: tuple[tuple[str, torch.dtype], ...] = ()) -> None:
        self.graph = torch.fx.Graph()
        #: (device, dtype) of each autocast the caller runs the graph
        #: under (nodes are traced alone under it).
        self.autocast = autocast
        self.env: dict[torch.fx.Node, Any] = {}
        self.fake_mode = fake_mode
        self.decompositions = decompositions
        self.table = table
        self.explicit = explicit
        #: Tensor constants of nodes traced alone (`torch.tensor(...)`).
        self.root = torch.nn.Module()
        #: Nodes traced alone, by target, constants and tensor metadata.
        self.traces: dict[Any, Any] = {}

    def val(self, x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return [self.val(item) for item in x]
        return x.meta["val"] if isinstance(x, torch.fx.Node) else x

    def call(self, op: Callable, *args: Any, **kwargs: Any) -> torch.fx.Node:
        if isinstance(op, torch._ops.OpOverload) and \
                str(op) in self.decompositions:  # make_fx would decompose it
            raise Unmapped(f"{op} decomposes")
        with self.fake_mode:
            value = op(*[self.val(a) for a in args],
                       **{k: self.val(v) for k, v in kwargs.items()})
        node = self.graph.call_function(op, tuple(args), kwargs)
        node.meta["val"] = value
        return node

    def tensor(self, x: Any) -> torch.fx.Node:
        if not isinstance(x, torch.fx.Node):
            raise Unmapped(f"argument {x!r} is not a tensor")
        mapped = self.env[x]
        if not isinstance(mapped, torch.fx.Node) or not isinstance(
                mapped.meta.get("val"), torch.Tensor):
            raise Unmapped("argument is not a tensor")
        return mapped

    def arg(self, x: Any) -> Any:
        if isinstance(x, torch.fx.Node):
            return self.tensor(x)
        if _is_number(x):
            return x
        raise Unmapped(f"argument {x!r}")


def _dims(dim: Any) -> list[int]:
    if isinstance(dim, int) and not isinstance(dim, bool):
        return [dim]
    if isinstance(dim, (list, tuple)) and all(
            isinstance(d, int) and not isinstance(d, bool) for d in dim):
        return list(dim)
    raise Unmapped(f"dim {dim!r}")


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


def map_node(b: Builder, node: torch.fx.Node) -> Any:
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
        elif target in _SHAPE_METHODS:
            return _shape_op(b, target, args, kwargs)
        else:
            raise Unmapped(f"method {target}")
    if kwargs.get("inplace") is False:  # F.relu(x, inplace=False)
        del kwargs["inplace"]
    if target in _UNARY and len(args) == 1 and not kwargs:
        return b.call(_UNARY[target], b.tensor(args[0]))
    if target is F.gelu and len(args) == 1 and set(kwargs) <= {"approximate"}:
        approximate = kwargs.get("approximate", "none")
        if approximate not in ("none", "tanh"):
            raise Unmapped(f"gelu approximate={approximate!r}")
        return b.call(aten.gelu.default, b.tensor(args[0]),
                      approximate=approximate)
    if target in _BINARY and len(args) == 2 and not kwargs:
        op, commutative = _BINARY[target]
        lhs, rhs = args
        if not isinstance(lhs, torch.fx.Node):
            if not commutative:
                raise Unmapped("scalar on the left of a non-commutative op")
            lhs, rhs = rhs, lhs
        if not isinstance(rhs, torch.fx.Node) and op in (
                aten.maximum.default, aten.minimum.default):
            raise Unmapped("maximum/minimum with a scalar")
        return b.call(op, b.tensor(lhs), b.arg(rhs))
    if target in (operator.pow, torch.pow) and len(args) == 2 and not kwargs:
        if not _is_number(args[1]) or not isinstance(args[0], torch.fx.Node):
            raise Unmapped("pow of anything but tensor ** number")
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
                raise Unmapped("tuple index")
            return source[args[1]]
        tensor = b.tensor(args[0])
        dim = _unsqueeze_index(args[1], tensor.meta["val"].dim())
        if dim is None:
            raise Unmapped(f"index {args[1]!r}")
        return b.call(aten.unsqueeze.default, tensor, dim)
    if target is F.layer_norm:
        return _layer_norm(b, args, kwargs)
    if target is F.linear:
        return _linear(b, args, kwargs)
    if target in (F.softmax, torch.softmax):
        return _softmax(b, args, kwargs)
    if target in _SHAPE_FUNCTIONS:
        return _shape_op(b, _SHAPE_FUNCTIONS[target], args, kwargs)
    if target is F.dropout:
        return _dropout(b, args, kwargs)
    if target is F.embedding:
        return _embedding(b, args, kwargs)
    if target is F.conv2d:
        return _conv2d(b, args, kwargs)
    if target is F.batch_norm:
        return _batch_norm(b, args, kwargs)
    if target is F.relu and kwargs == {"inplace": True} and len(args) == 1:
        return b.call(aten.relu_.default, b.tensor(args[0]))
    if target is operator.iadd and len(args) == 2 and not kwargs and all(
            isinstance(a, torch.fx.Node) for a in args):
        return b.call(aten.add_.Tensor, b.tensor(args[0]), b.tensor(args[1]))
    if target is torch.addmm and len(args) == 3 and not kwargs:
        return b.call(aten.addmm.default, *[b.tensor(a) for a in args])
    if target is torch.cat and len(args) >= 1 and set(kwargs) <= {"dim"}:
        tensors = args[0]
        dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
        if not isinstance(tensors, (list, tuple)) or len(args) > 2:
            raise Unmapped("cat arguments")
        return b.call(aten.cat.default, [b.tensor(t) for t in tensors],
                      _dims(dim)[0])
    raise Unmapped(f"{node.op} {getattr(target, '__name__', target)}")


#: Tensor methods that reshape or view (name -> the `_shape_op` case), and
#: the torch functions of the same meaning.
_SHAPE_METHODS = ("view", "reshape", "transpose", "permute", "contiguous",
                  "expand", "flatten")
_SHAPE_FUNCTIONS = {torch.reshape: "reshape", torch.transpose: "transpose",
                    torch.permute: "permute", torch.flatten: "flatten"}


def _sizes(args: tuple) -> list[int]:
    """`x.view(2, 3)` or `x.view((2, 3))`: the sizes, all ints."""
    sizes = list(args[0]) if len(args) == 1 and isinstance(
        args[0], (list, tuple, torch.Size)) else list(args)
    return _dims(sizes)


def _shape_op(b: Builder, name: str, args: tuple, kwargs: dict) -> Any:
    """Views and copies of one tensor, as make_fx writes them: `view`,
    `reshape` of a tensor that can be viewed, `transpose` (a `permute`),
    `permute`, `contiguous` (nothing, or a contiguous `clone`), `expand`,
    `flatten` (a `view`)."""
    x = b.tensor(args[0])
    value = x.meta["val"]
    rest = args[1:]
    if name in ("view", "reshape"):
        if kwargs or (rest and isinstance(rest[0], torch.dtype)):
            raise Unmapped(f"{name} arguments")
        if name == "reshape" and not value.is_contiguous():
            raise Unmapped("reshape of a tensor that is not contiguous")
        return b.call(aten.view.default, x, _sizes(rest))
    if name == "transpose":
        if kwargs or len(rest) != 2:
            raise Unmapped("transpose arguments")
        rank = value.dim()
        d0, d1 = (d % rank if rank else 0 for d in _dims(list(rest)))
        order = list(range(rank))
        order[d0], order[d1] = order[d1], order[d0]
        return b.call(aten.permute.default, x, order)
    if name == "permute":
        if kwargs:
            raise Unmapped("permute arguments")
        return b.call(aten.permute.default, x, _sizes(rest))
    if name == "contiguous":
        if rest or kwargs:
            raise Unmapped("contiguous with a memory format")
        if value.is_contiguous():
            return x
        return b.call(aten.clone.default, x,
                      memory_format=torch.contiguous_format)
    if name == "expand":
        if kwargs:
            raise Unmapped("expand arguments")
        return b.call(aten.expand.default, x, _sizes(rest))
    # flatten(start_dim=0, end_dim=-1)
    names = ("start_dim", "end_dim")
    values = dict(zip(names, rest))
    values.update(kwargs)
    if set(values) - set(names) or not value.is_contiguous():
        raise Unmapped("flatten arguments")
    rank = max(value.dim(), 1)
    start = _dims(values.get("start_dim", 0))[0] % rank
    end = _dims(values.get("end_dim", -1))[0] % rank
    shape = list(value.shape)
    if value.dim() == 0 or start >= end:
        raise Unmapped("flatten of nothing")
    return b.call(aten.view.default, x,
                  shape[:start] + [-1] + shape[end + 1:])


def _named(args: tuple, kwargs: dict, names: tuple[str, ...]) -> dict:
    values = dict(zip(names, args))
    if len(args) > len(names) or set(kwargs) - set(names) or \
            set(values) & set(kwargs):
        raise Unmapped("arguments")
    values.update(kwargs)
    return values


def _dropout(b: Builder, args: tuple, kwargs: dict) -> Any:
    """Dropout in eval mode is its input (make_fx writes nothing)."""
    values = _named(args, kwargs, ("input", "p", "training", "inplace"))
    if values.get("training", True) is not False:
        raise Unmapped("dropout while training")
    return b.tensor(values["input"])


def _embedding(b: Builder, args: tuple, kwargs: dict) -> Any:
    values = _named(args, kwargs, ("input", "weight", "padding_idx",
                                   "max_norm", "norm_type",
                                   "scale_grad_by_freq", "sparse"))
    if values.get("max_norm") is not None or values.get("sparse"):
        raise Unmapped("embedding with max_norm or sparse")
    padding = values.get("padding_idx")
    weight = b.tensor(values["weight"])
    if padding is None:
        padding = -1
    elif not isinstance(padding, int) or isinstance(padding, bool):
        raise Unmapped("embedding padding_idx")
    elif padding < 0:
        padding += weight.meta["val"].shape[0]
    return b.call(aten.embedding.default, weight, b.tensor(values["input"]),
                  padding, bool(values.get("scale_grad_by_freq", False)))


def _pair(value: Any) -> list[int]:
    pair = _dims(value)
    if len(pair) == 1:
        pair = pair * 2
    if len(pair) != 2:
        raise Unmapped(f"conv2d argument {value!r}")
    return pair


def _conv2d(b: Builder, args: tuple, kwargs: dict) -> Any:
    values = _named(args, kwargs, ("input", "weight", "bias", "stride",
                                   "padding", "dilation", "groups"))
    x = b.tensor(values["input"])
    if x.meta["val"].dim() != 4:
        raise Unmapped("conv2d of an unbatched input")
    bias = values.get("bias")
    groups = values.get("groups", 1)
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise Unmapped("conv2d groups")
    return b.call(aten.convolution.default, x, b.tensor(values["weight"]),
                  b.tensor(bias) if bias is not None else None,
                  _pair(values.get("stride", 1)),
                  _pair(values.get("padding", 0)),
                  _pair(values.get("dilation", 1)), False, [0, 0], groups)


def _batch_norm(b: Builder, args: tuple, kwargs: dict) -> Any:
    """Batch norm in eval mode with running statistics."""
    values = _named(args, kwargs, ("input", "running_mean", "running_var",
                                   "weight", "bias", "training", "momentum",
                                   "eps"))
    if values.get("training", False) is not False or any(
            values.get(key) is None for key in ("running_mean",
                                                "running_var")):
        raise Unmapped("batch norm while training")
    weight, bias = values.get("weight"), values.get("bias")
    node = b.call(aten.native_batch_norm.default,
                  b.tensor(values["input"]),
                  b.tensor(weight) if weight is not None else None,
                  b.tensor(bias) if bias is not None else None,
                  b.tensor(values["running_mean"]),
                  b.tensor(values["running_var"]), False,
                  float(values.get("momentum", 0.1)),
                  float(values.get("eps", 1e-5)))
    return b.call(operator.getitem, node, 0)


def _reduction(b: Builder, name: str, args: tuple, kwargs: dict) -> Any:
    args = list(args)
    x = b.tensor(args.pop(0))
    dim = kwargs.pop("dim", args.pop(0) if args else None)
    keepdim = kwargs.pop("keepdim", args.pop(0) if args else False)
    if kwargs or args or not isinstance(keepdim, bool) or dim is None:
        raise Unmapped(f"{name} arguments")
    if name == "max":  # max(dim) -> (values, indices)
        if not isinstance(dim, int):
            raise Unmapped("max over several dims")
        node = b.call(aten.max.dim, x, dim, keepdim)
        return tuple(b.call(operator.getitem, node, i) for i in range(2))
    op = {"sum": aten.sum.dim_IntList, "mean": aten.mean.dim,
          "amax": aten.amax.default}[name]
    return b.call(op, x, _dims(dim), keepdim)


def _layer_norm(b: Builder, args: tuple, kwargs: dict) -> Any:
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    values = dict(zip(names, args))
    values.update(kwargs)
    if set(values) - set(names):
        raise Unmapped("layer_norm arguments")
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


def _linear(b: Builder, args: tuple, kwargs: dict) -> Any:
    names = ("input", "weight", "bias")
    values = dict(zip(names, args))
    values.update(kwargs)
    x, weight = b.tensor(values["input"]), b.tensor(values["weight"])
    value = x.meta["val"]
    if value.dim() < 2 or (value.dim() > 2 and not value.is_contiguous()):
        raise Unmapped("linear of a vector or of a strided batch")
    batch = list(value.shape[:-1])
    if value.dim() > 2:  # rows of a batch: one matrix product, as make_fx
        x = b.call(aten.view.default, x, [-1, value.shape[-1]])
    wt = b.call(aten.permute.default, weight, [1, 0])
    if values.get("bias") is None:
        out = b.call(aten.mm.default, x, wt)
    else:
        out = b.call(aten.addmm.default, b.tensor(values["bias"]), x, wt)
    if value.dim() > 2:
        out = b.call(aten.view.default, out,
                     batch + [weight.meta["val"].shape[0]])
    return out


def _softmax(b: Builder, args: tuple, kwargs: dict) -> Any:
    args = list(args)
    x = b.tensor(args.pop(0))
    dim = kwargs.pop("dim", args.pop(0) if args else None)
    kwargs.pop("_stacklevel", None)
    if args or kwargs.pop("dtype", None) is not None or kwargs or \
            not isinstance(dim, int):
        raise Unmapped("softmax arguments")
    return b.call(aten._softmax.default, x, dim, False)
