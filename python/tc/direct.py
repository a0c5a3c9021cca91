"""Dynamo's graph to core ATen without tracing the whole graph (inference).

`make_fx` re-runs a Dynamo graph under fake tensors through PyTorch's
dispatcher, proxy mode and decomposition table: ~1-2 ms per node, most of
a small graph's compile on a GPU (a manual GeLU: 15 ms of tc's ~50) and
0.3-0.8 s of a transformer's first step. Dynamo has already run every node
on fake tensors and kept the result in `node.meta["example_value"]`, so
the ATen graph can be written node by node: a node of a known table
(`_map_node`: pointwise math, reductions, views, linear layers, layer and
batch norms, convolutions, embeddings, dropout in eval mode) maps to the
core ATen ops `make_fx` would produce; any other node (attention, a
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
import torch.utils._pytree as pytree
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
    def __init__(self, fake_mode, decompositions: Container[str],
                 table: Callable[[], dict],
                 explicit: Callable[[], dict]) -> None:
        self.graph = torch.fx.Graph()
        self.env: dict[torch.fx.Node, Any] = {}
        self.fake_mode = fake_mode
        self.decompositions = decompositions
        self.table = table
        self.explicit = explicit
        #: Tensor constants of nodes traced alone (`torch.tensor(...)`).
        self.root = torch.nn.Module()
        #: Nodes traced alone, by target, constants and tensor metadata.
        self.traces: dict[Any, _Trace] = {}

    def val(self, x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return [self.val(item) for item in x]
        return x.meta["val"] if isinstance(x, torch.fx.Node) else x

    def call(self, op: Callable, *args: Any, **kwargs: Any) -> torch.fx.Node:
        if isinstance(op, torch._ops.OpOverload) and \
                str(op) in self.decompositions:  # make_fx would decompose it
            raise _Unmapped(f"{op} decomposes")
        with self.fake_mode:
            value = op(*[self.val(a) for a in args],
                       **{k: self.val(v) for k, v in kwargs.items()})
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
        elif target in _SHAPE_METHODS:
            return _shape_op(b, target, args, kwargs)
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
            raise _Unmapped("cat arguments")
        return b.call(aten.cat.default, [b.tensor(t) for t in tensors],
                      _dims(dim)[0])
    raise _Unmapped(f"{node.op} {getattr(target, '__name__', target)}")


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


def _shape_op(b: _Builder, name: str, args: tuple, kwargs: dict) -> Any:
    """Views and copies of one tensor, as make_fx writes them: `view`,
    `reshape` of a tensor that can be viewed, `transpose` (a `permute`),
    `permute`, `contiguous` (nothing, or a contiguous `clone`), `expand`,
    `flatten` (a `view`)."""
    x = b.tensor(args[0])
    value = x.meta["val"]
    rest = args[1:]
    if name in ("view", "reshape"):
        if kwargs or (rest and isinstance(rest[0], torch.dtype)):
            raise _Unmapped(f"{name} arguments")
        if name == "reshape" and not value.is_contiguous():
            raise _Unmapped("reshape of a tensor that is not contiguous")
        return b.call(aten.view.default, x, _sizes(rest))
    if name == "transpose":
        if kwargs or len(rest) != 2:
            raise _Unmapped("transpose arguments")
        rank = value.dim()
        d0, d1 = (d % rank if rank else 0 for d in _dims(list(rest)))
        order = list(range(rank))
        order[d0], order[d1] = order[d1], order[d0]
        return b.call(aten.permute.default, x, order)
    if name == "permute":
        if kwargs:
            raise _Unmapped("permute arguments")
        return b.call(aten.permute.default, x, _sizes(rest))
    if name == "contiguous":
        if rest or kwargs:
            raise _Unmapped("contiguous with a memory format")
        if value.is_contiguous():
            return x
        return b.call(aten.clone.default, x,
                      memory_format=torch.contiguous_format)
    if name == "expand":
        if kwargs:
            raise _Unmapped("expand arguments")
        return b.call(aten.expand.default, x, _sizes(rest))
    # flatten(start_dim=0, end_dim=-1)
    names = ("start_dim", "end_dim")
    values = dict(zip(names, rest))
    values.update(kwargs)
    if set(values) - set(names) or not value.is_contiguous():
        raise _Unmapped("flatten arguments")
    rank = max(value.dim(), 1)
    start = _dims(values.get("start_dim", 0))[0] % rank
    end = _dims(values.get("end_dim", -1))[0] % rank
    shape = list(value.shape)
    if value.dim() == 0 or start >= end:
        raise _Unmapped("flatten of nothing")
    return b.call(aten.view.default, x,
                  shape[:start] + [-1] + shape[end + 1:])


def _named(args: tuple, kwargs: dict, names: tuple[str, ...]) -> dict:
    values = dict(zip(names, args))
    if len(args) > len(names) or set(kwargs) - set(names) or \
            set(values) & set(kwargs):
        raise _Unmapped("arguments")
    values.update(kwargs)
    return values


def _dropout(b: _Builder, args: tuple, kwargs: dict) -> Any:
    """Dropout in eval mode is its input (make_fx writes nothing)."""
    values = _named(args, kwargs, ("input", "p", "training", "inplace"))
    if values.get("training", True) is not False:
        raise _Unmapped("dropout while training")
    return b.tensor(values["input"])


def _embedding(b: _Builder, args: tuple, kwargs: dict) -> Any:
    values = _named(args, kwargs, ("input", "weight", "padding_idx",
                                   "max_norm", "norm_type",
                                   "scale_grad_by_freq", "sparse"))
    if values.get("max_norm") is not None or values.get("sparse"):
        raise _Unmapped("embedding with max_norm or sparse")
    padding = values.get("padding_idx")
    weight = b.tensor(values["weight"])
    if padding is None:
        padding = -1
    elif not isinstance(padding, int) or isinstance(padding, bool):
        raise _Unmapped("embedding padding_idx")
    elif padding < 0:
        padding += weight.meta["val"].shape[0]
    return b.call(aten.embedding.default, weight, b.tensor(values["input"]),
                  padding, bool(values.get("scale_grad_by_freq", False)))


def _pair(value: Any) -> list[int]:
    pair = _dims(value)
    if len(pair) == 1:
        pair = pair * 2
    if len(pair) != 2:
        raise _Unmapped(f"conv2d argument {value!r}")
    return pair


def _conv2d(b: _Builder, args: tuple, kwargs: dict) -> Any:
    values = _named(args, kwargs, ("input", "weight", "bias", "stride",
                                   "padding", "dilation", "groups"))
    x = b.tensor(values["input"])
    if x.meta["val"].dim() != 4:
        raise _Unmapped("conv2d of an unbatched input")
    bias = values.get("bias")
    groups = values.get("groups", 1)
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise _Unmapped("conv2d groups")
    return b.call(aten.convolution.default, x, b.tensor(values["weight"]),
                  b.tensor(bias) if bias is not None else None,
                  _pair(values.get("stride", 1)),
                  _pair(values.get("padding", 0)),
                  _pair(values.get("dilation", 1)), False, [0, 0], groups)


def _batch_norm(b: _Builder, args: tuple, kwargs: dict) -> Any:
    """Batch norm in eval mode with running statistics."""
    values = _named(args, kwargs, ("input", "running_mean", "running_var",
                                   "weight", "bias", "training", "momentum",
                                   "eps"))
    if values.get("training", False) is not False or any(
            values.get(key) is None for key in ("running_mean",
                                                "running_var")):
        raise _Unmapped("batch norm while training")
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
    value = x.meta["val"]
    if value.dim() < 2 or (value.dim() > 2 and not value.is_contiguous()):
        raise _Unmapped("linear of a vector or of a strided batch")
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


def _softmax(b: _Builder, args: tuple, kwargs: dict) -> Any:
    args = list(args)
    x = b.tensor(args.pop(0))
    dim = kwargs.pop("dim", args.pop(0) if args else None)
    kwargs.pop("_stacklevel", None)
    if args or kwargs.pop("dtype", None) is not None or kwargs or \
            not isinstance(dim, int):
        raise _Unmapped("softmax arguments")
    return b.call(aten._softmax.default, x, dim, False)


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
#: (the key of `_Builder.traces`).
_KEY_TYPES = (int, float, bool, str, type(None), torch.dtype, torch.device,
              torch.memory_format, torch.layout, slice, type(Ellipsis))


def _trace_node(b: _Builder, node: torch.fx.Node) -> Any:
    """`node` traced alone by `make_fx` (with the decompositions the whole
    graph's trace would use) and spliced into `b.graph`: its result (a
    node, or a tuple of them for a node of several results). A tensor
    argument must be a tensor already written; other arguments are
    constants of the node. A model's repeated layers trace once: a node of
    the same target, constants and tensor metadata as one traced before
    replays that trace (`b.traces`), its values computed again."""
    if node.op not in ("call_function", "call_method"):
        raise _Unmapped(f"{node.op} node")
    leaves, spec = pytree.tree_flatten((node.args, node.kwargs))
    where = [i for i, leaf in enumerate(leaves)
             if isinstance(leaf, torch.fx.Node)]
    inputs = [b.tensor(leaves[i]) for i in where]
    values = [n.meta["val"] for n in inputs]
    key = None
    if all(isinstance(leaf, (torch.fx.Node, *_KEY_TYPES)) for leaf in leaves):
        key = (node.op, node.target, str(spec),
               repr([None if i in where else leaf
                     for i, leaf in enumerate(leaves)]),
               tuple((v.shape, v.stride(), v.storage_offset(), v.dtype,
                      v.device) for v in values))
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

    with b.fake_mode:
        traced = make_fx(run, decomposition_table=b.explicit())(*values)
    left = [str(n.target) for n in traced.graph.nodes
            if isinstance(n.target, torch._ops.OpOverload)
            and str(n.target) in b.decompositions]
    if left:
        # An op the whole table decomposes, which make_fx left whole.
        _debug("%s traced again with the whole table: %s", node.name, left)
        with b.fake_mode:
            traced = make_fx(run, decomposition_table=b.table())(*values)
    entry = _Trace(traced, {})
    result = _splice(b, node, entry, inputs, replay=False)
    if key is not None and all(
            n.op != "call_function" or n.target is operator.getitem
            or isinstance(n.target, torch._ops.OpOverload)
            for n in traced.graph.nodes):
        b.traces[key] = entry
    return result


class _Trace:
    """A node's trace by make_fx, and the names its constants were given
    in the written graph's module."""

    def __init__(self, traced: torch.fx.GraphModule,
                 constants: dict[str, str]) -> None:
        self.traced = traced
        self.constants = constants


def _splice(b: _Builder, node: torch.fx.Node, entry: _Trace,
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
                raise _Unmapped(f"{node.name} mutates ({new.target})")
            if replay:
                args = torch.fx.node.map_arg(new.args, lambda n: env[n])
                kwargs = torch.fx.node.map_arg(new.kwargs, lambda n: env[n])
                env[new] = b.call(new.target, *args, **kwargs)
            else:
                env[new] = b.graph.node_copy(new, lambda n: env[n])
        elif new.op == "output":
            result = new.args[0]
        else:
            raise _Unmapped(f"{new.op} in {node.name}'s trace")
    if isinstance(result, (list, tuple)):
        # (A multi-head attention block returns (output, None).)
        if not all(r is None or isinstance(r, torch.fx.Node)
                   for r in result):
            raise _Unmapped(f"{node.name} returns a non-tensor")
        return tuple(None if r is None else env[r] for r in result)
    if not isinstance(result, torch.fx.Node):
        raise _Unmapped(f"{node.name} returns a non-tensor")
    return env[result]


def direct_aten(gm: torch.fx.GraphModule, decompositions: Container[str],
                table: Callable[[], dict], explicit: Callable[[], dict]
                ) -> torch.fx.GraphModule | None:
    """`gm` (Dynamo's graph) as a core ATen graph, or None (trace it).

    `decompositions` names (`str(op)`) the ops of the table `make_fx` would
    use: such an op is not written directly (its node is traced alone).
    A node is traced alone with `explicit()`, that table less what make_fx
    decomposes anyway, and again with `table()` (slow to build) should it
    leave an op the table decomposes. New values are computed in the fake
    mode of Dynamo's example values.
    """
    modes = {id(node.meta["example_value"].fake_mode): node.meta[
        "example_value"].fake_mode for node in gm.graph.nodes
        if node.op == "placeholder" and isinstance(
            node.meta.get("example_value"), FakeTensor)}
    if len(modes) != 1:
        return None
    b = _Builder(next(iter(modes.values())), decompositions, table,
                 explicit)
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
                try:
                    mapped = _map_node(b, node)
                except _Unmapped as why:
                    _debug("%s traced alone: %s", node.name, why)
                    mapped = _trace_node(b, node)
                    alone += 1
                    layout_free = True
                expected = node.meta.get("example_value")
                got = (tuple(None if n is None else n.meta["val"]
                             for n in mapped)
                       if isinstance(mapped, tuple) else mapped.meta["val"])
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
    except _Unmapped as why:
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
    return torch.fx.GraphModule(b.root, b.graph)
