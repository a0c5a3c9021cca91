"""Row collapsing: symbolic sizes in several leading dimensions as one.

tc's symbolic size is one leading dimension (docs/DynamicShapes.md). A
graph on `[B, S, H]` tensors whose batch `B` and sequence length `S` both
vary (or only `S`, with `B` fixed) has its symbolic sizes in a block of
leading dimensions, the *prefix* `P = (B, S)`. When every op of the graph
treats each row of that block on its own (elementwise math, reductions,
softmax and layer norm over the trailing dimensions, a `Linear`'s product
with a weight), the graph computes the same as the graph on `[N, H]`
tensors, `N = B * S`: every tensor `[*P, *rest]` (or `[B * S, *rest]`,
the view PyTorch makes for a `Linear`) is viewed as `[N, *rest]`, and `N`
is the one symbolic size. `collapse` writes that graph.

The rewrite is checked, not trusted: each op is replayed on the collapsed
tensors (under `make_fx`, which records the new graph), and each result's
shape must be the collapsed shape of the original's; an op this module
does not know, a size computed from the prefix other than by a view, or a
dimension argument inside the prefix raises NotRowwise, and the caller
keeps its other paths.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Sequence

import sympy
import torch
import torch.fx
import torch.utils._pytree

aten = torch.ops.aten


class NotRowwise(Exception):
    """The graph is not one of independent rows; the message says where."""


#: Ops whose `dim` argument is one dimension or a list of them; each must
#: be a trailing dimension (not in the prefix). A missing or empty list
#: (a reduction over everything) is refused.
_DIM_OPS = {
    aten.sum.dim_IntList, aten.mean.dim, aten.amax.default,
    aten.amin.default, aten.var.correction, aten.var_mean.correction,
    aten.prod.dim_int, aten._softmax.default, aten._log_softmax.default,
    aten.argmax.default, aten.argmin.default, aten.cumsum.default,
    aten.max.dim, aten.min.dim, aten.any.dim, aten.select.int,
    aten.slice.Tensor, aten.split.Tensor, aten.split_with_sizes.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default,
    aten.cat.default,
}
#: Views whose size argument is recomputed from the result's shape.
_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
#: Unary ops that keep the shape without being tagged pointwise.
_SAME_SHAPE = {aten._to_copy.default, aten.alias.default,
               aten.detach.default, aten.lift_fresh_copy.default}
#: Nodes that compute sizes (SymInts) rather than tensors.
_SIZE_OPS = {aten.sym_size.int, aten.sym_numel.default, operator.mul,
             operator.add, operator.sub, operator.floordiv, operator.mod}


class _Size:
    """A size computed from the prefix: usable only by a view, whose size
    the collapsed graph takes from the result's shape."""


_SIZE = _Size()


def _expr(size: Any) -> Any:
    """A size as an int or a sympy expression."""
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        return int(expr) if expr.is_Integer else expr
    return int(size)


class Rows:
    """The prefix of leading sizes (ints and sympy symbols) of a graph's
    traced values, and the shapes of its tensors viewed as rows."""

    def __init__(self, prefix: Sequence[Any]):
        self.prefix = tuple(prefix)
        self.total = sympy.expand(sympy.Mul(*self.prefix))

    def form(self, value: Any) -> tuple[int, tuple[int, ...]] | None:
        """For a tensor of the original graph: None when its sizes are all
        static, else (k, rest): its first k dimensions are the rows (the
        prefix, or their product as one) and `rest` its static others."""
        dims = [_expr(d) for d in value.shape]
        if all(isinstance(d, int) for d in dims):
            return None
        k = len(self.prefix)
        if tuple(dims[:k]) == self.prefix and all(
                isinstance(d, int) for d in dims[k:]):
            return k, tuple(dims[k:])
        if dims and not isinstance(dims[0], int) and sympy.expand(
                dims[0] - self.total) == 0 and all(
                isinstance(d, int) for d in dims[1:]):
            return 1, tuple(dims[1:])
        raise NotRowwise(f"a tensor of shape {tuple(dims)} is not rows of "
                         f"{self.prefix} and static sizes")


def collapse(traced: torch.fx.GraphModule, rows: Rows
             ) -> Callable[..., Any]:
    """A function of `traced`'s tensor inputs viewed as rows (`[N, *rest]`
    for a row tensor, as is for a static one) that computes `traced`'s
    outputs viewed as rows, op by op. Call it under `make_fx` with fake
    inputs whose leading size is the symbol N; raises NotRowwise (while
    called) where the graph is not row-wise."""

    def run(*inputs: Any) -> Any:
        return _Replay(traced, rows, inputs).run()

    return run


#: The arguments of scaled_dot_product_attention after the tensors, with
#: their defaults.
_ATTENTION_ARGS = (("attn_mask", None), ("dropout_p", 0.0),
                   ("is_causal", False), ("scale", None),
                   ("enable_gqa", False))
_attention_op: Any = None


def attention_op() -> Any:
    """`tc::attention`, PyTorch's scaled_dot_product_attention as an op of
    its own: make_fx keeps it one node (no decomposition into products, a
    mask and a softmax), and eager runs PyTorch's fused kernels."""
    global _attention_op
    if _attention_op is None:
        @torch.library.custom_op("tc::attention", mutates_args=())
        def attention(query: torch.Tensor, key: torch.Tensor,
                      value: torch.Tensor, attn_mask: Optional[torch.Tensor],
                      dropout_p: float, is_causal: bool,
                      scale: Optional[float], enable_gqa: bool
                      ) -> torch.Tensor:
            return attention_call(query, key, value, attn_mask, dropout_p,
                                  is_causal, scale, enable_gqa)

        @attention.register_fake
        def _(query, key, value, attn_mask, dropout_p, is_causal, scale,
              enable_gqa):
            return query.new_empty((*query.shape[:-1], value.shape[-1]))

        _attention_op = torch.ops.tc.attention.default
    return _attention_op


def attention_call(query: torch.Tensor, key: torch.Tensor,
                   value: torch.Tensor, attn_mask: Optional[torch.Tensor],
                   dropout_p: float, is_causal: bool, scale: Optional[float],
                   enable_gqa: bool) -> torch.Tensor:
    """What runs a `tc::attention` node in eager: PyTorch's
    scaled_dot_product_attention, without the custom op's dispatch. A GPU
    mask whose last dimension is not contiguous (an `expand` along the
    keys, as Hugging Face's mask code writes one) is copied contiguous:
    PyTorch's fused kernels take no other, and its math path computes
    bf16 attention as f32 products (tc.attention.contiguous_masks does
    the same for graphs compiled whole)."""
    if attn_mask is not None and attn_mask.is_cuda and \
            attn_mask.stride(-1) != 1 and attn_mask.shape[-1] != 1:
        attn_mask = attn_mask.contiguous()
    return torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
        is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def is_attention(node: torch.fx.Node) -> bool:
    """Whether `node` is a `tc::attention` (keep_attention)."""
    return _attention_op is not None and node.target is _attention_op


def keep_attention(gm: torch.fx.GraphModule) -> int:
    """Makes each call of scaled_dot_product_attention in Dynamo's graph
    `gm` one `tc::attention` node, whose arguments other than tensors are
    constants; returns how many. Attention is never row-wise: kept whole,
    it runs between the row-wise parts as PyTorch's fused kernel rather
    than as some twenty ops (_SymbolicRows._compile_parts)."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not sdpa:
            continue
        if len(node.args) < 3 or len(node.args) > 3 + len(_ATTENTION_ARGS):
            continue
        named = dict(_ATTENTION_ARGS)
        for (name, _), value in zip(_ATTENTION_ARGS, node.args[3:]):
            named[name] = value
        if set(node.kwargs) - set(named):
            continue
        named.update(node.kwargs)
        # A mask is a tensor of the graph or none; the others are
        # constants (a symbolic scale or flag is left to the decomposition).
        mask = named.pop("attn_mask")
        if mask is not None and not isinstance(mask, torch.fx.Node):
            continue
        if any(isinstance(v, torch.fx.Node) for v in named.values()):
            continue
        named["attn_mask"] = mask
        args = (*node.args[:3], *(named[name] for name, _ in _ATTENTION_ARGS))
        with gm.graph.inserting_before(node):
            kept = gm.graph.call_function(attention_op(), args)
        kept.meta = dict(node.meta)
        node.replace_all_uses_with(kept)
        gm.graph.erase_node(node)
        count += 1
    if count:
        gm.recompile()
    return count


def expand_positions(traced: torch.fx.GraphModule, rows: Rows) -> int:
    """Makes each operand of an elementwise op on rows that varies along
    the prefix's sizes but is not rows (a rotary table indexed by the
    positions, `[S, 1, D]` against `[B, S, H, D]`) an explicit `expand` to
    the rows' leading sizes. The expand takes sizes of the rows: it runs
    in eager (rowwise_nodes), and its result is rows that the op, on rows,
    takes; without it the op and all that follows it ran in eager.
    Returns how many expands it added."""
    k = len(rows.prefix)
    source = next((n for n in traced.graph.nodes if n.op == "placeholder"
                   and isinstance(n.meta.get("val"), torch.Tensor)
                   and _rows_of(rows, n.meta["val"]) == k), None)
    if source is None:
        return 0
    sizes: dict[int, torch.fx.Node] = {}

    def size(j: int) -> torch.fx.Node:
        if j not in sizes:
            with traced.graph.inserting_after(source):
                node = traced.graph.call_function(aten.sym_size.int,
                                                  (source, j))
            node.meta["val"] = source.meta["val"].shape[j]
            sizes[j] = node
        return sizes[j]

    count = 0
    for node in list(traced.graph.nodes):
        target = node.target
        if node.op != "call_function" or not isinstance(
                target, torch._ops.OpOverload) or not (
                torch.Tag.pointwise in target.tags) or \
                _rows_of(rows, node.meta.get("val")) != k:
            continue
        out = node.meta["val"]
        for operand in node.all_input_nodes:
            value = operand.meta.get("val")
            shape = _positions_shape(rows, value, out.dim())
            if shape is None:
                continue
            args = [size(i) if isinstance(d, int) and i < k else -1
                    for i, d in enumerate(shape)]
            with traced.graph.inserting_before(node):
                expand = traced.graph.call_function(aten.expand.default,
                                                    (operand, args))
            expand.meta["val"] = value.expand(
                [out.shape[i] if i < k else -1 for i in range(out.dim())])
            node.replace_input_with(operand, expand)
            count += 1
    if count:
        traced.graph.lint()
        traced.recompile()
    return count


def _rows_of(rows: Rows, value: Any) -> int | None:
    """How many leading dimensions of tensor `value` are rows (Rows.form),
    None for a static tensor, a tensor that is not rows, or no tensor."""
    if not isinstance(value, torch.Tensor):
        return None
    try:
        form = rows.form(value)
    except NotRowwise:
        return None
    return None if form is None else form[0]


def _positions_shape(rows: Rows, value: Any, rank: int) -> list | None:
    """The shape of tensor `value` aligned to `rank` dimensions when it
    varies along the prefix's sizes but is not rows: each of its
    dimensions in the prefix's place is 1 (an int in the result, which
    expand_positions makes the row's size) or the prefix's size there, the
    others static. None otherwise."""
    if not isinstance(value, torch.Tensor) or value.dim() > rank:
        return None
    dims = [_expr(d) for d in value.shape]
    if all(isinstance(d, int) for d in dims):
        return None
    try:
        rows.form(value)
        return None
    except NotRowwise:
        pass
    k = len(rows.prefix)
    shape: list = [1] * (rank - len(dims)) + dims
    for i, d in enumerate(shape):
        if i < k:
            if d != 1 and d != rows.prefix[i]:
                return None
        elif not isinstance(d, int):
            return None
    return shape


def rowwise_nodes(traced: torch.fx.GraphModule, rows: Rows,
                  inputs: Sequence[Any]) -> dict[torch.fx.Node, str]:
    """The ops of `traced` that do not replay on rows, each with the
    reason; the others do. `inputs` are fake tensors as `collapse` takes
    them (`[N, *rest]`). Unlike `collapse`, the replay goes on past an op
    that is not row-wise: its result stands in as a fresh tensor of its
    rows' shape (an input of what follows) where it has one, and as
    nothing (its users are not row-wise either) where it has none. The
    row-wise ops form the parts tc compiles on rows; the others run in
    eager between them."""
    return _Classify(traced, rows, inputs).classify()


class _Missing:
    """A value with no rows' shape (`[B, H, S, S]` attention scores): no
    row-wise op can take it."""


_MISSING = _Missing()


class _Replay:
    def __init__(self, traced: torch.fx.GraphModule, rows: Rows,
                 inputs: Sequence[Any]):
        self.traced = traced
        self.rows = rows
        self.inputs = list(inputs)
        self.values: dict[torch.fx.Node, Any] = {}
        self.n: Any = None  # N, the collapsed size (a SymInt)

    def run(self) -> Any:
        inputs = iter(self.inputs)
        for node in self.traced.graph.nodes:
            if node.op in ("placeholder", "get_attr"):
                self._input(node, inputs)
                self._check(node, self.values[node])
            elif node.op == "call_function":
                result = self._call(node)
                self._check(node, result)
                self.values[node] = result
            elif node.op == "output":
                return torch.fx.node.map_arg(node.args[0],
                                             lambda n: self.values[n])
            else:
                raise NotRowwise(f"{node.op} node '{node.name}'")
        raise NotRowwise("the graph has no output")

    # -- helpers ---------------------------------------------------------

    def _input(self, node: torch.fx.Node, inputs: Any) -> None:
        """The value of placeholder or get_attr `node`: the next of
        `inputs` for a tensor (the first with rows gives N), _SIZE for a
        size."""
        if node.op == "get_attr":
            self.values[node] = getattr(self.traced, node.target)
            return
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor):
            self.values[node] = _SIZE
            return
        given = next(inputs)
        if self.rows.form(value) is not None and self.n is None:
            self.n = given.shape[0]
        self.values[node] = given

    def _value(self, node: Any) -> Any:
        return self.values[node] if isinstance(node, torch.fx.Node) \
            else node

    def _args(self, node: torch.fx.Node) -> tuple[tuple, dict]:
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs),
                                             self._value)
        if any(a is _SIZE for a in _leaves((args, kwargs))):
            raise NotRowwise(f"'{node.name}' ({node.target}) computes with "
                             f"a size of the rows")
        return args, kwargs

    def _form(self, node: Any) -> tuple[int, tuple[int, ...]] | None:
        value = node.meta.get("val") if isinstance(node, torch.fx.Node) \
            else None
        if not isinstance(value, torch.Tensor):
            return None
        return self.rows.form(value)

    def _rows_shape(self, value: torch.Tensor) -> list[Any]:
        form = self.rows.form(value)
        if form is None:
            return list(value.shape)
        if self.n is None:
            raise NotRowwise("no input is a row tensor")
        return [self.n, *form[1]]

    def _fit(self, node: Any, rest_rank: int) -> Any:
        """Operand `node` as it broadcasts against rows with `rest_rank`
        trailing dimensions: a static tensor loses its leading 1s beyond
        them (a `[1, 1, H]` bias is `[H]`); one that varies along the
        prefix is refused."""
        value = self._value(node)
        if not isinstance(node, torch.fx.Node) or not isinstance(
                node.meta.get("val"), torch.Tensor):
            return value
        original = node.meta["val"]
        if self.rows.form(original) is not None:
            return value
        shape = list(original.shape)
        if len(shape) <= rest_rank:
            return value
        lead = shape[:len(shape) - rest_rank]
        if any(d != 1 for d in lead):
            raise NotRowwise(f"'{node.name}' of shape {tuple(shape)} "
                             f"varies along the rows")
        return value.reshape(shape[len(shape) - rest_rank:])

    def _check(self, node: torch.fx.Node, result: Any) -> None:
        """The replayed result has the rows' shape of the original's."""
        original = node.meta.get("val")
        pairs = list(zip(_leaves(original), _leaves(result)))
        if len(_leaves(original)) != len(_leaves(result)):
            raise NotRowwise(f"'{node.name}' changed its number of results")
        for before, after in pairs:
            if not isinstance(before, torch.Tensor):
                continue
            if not isinstance(after, torch.Tensor) or \
                    before.dtype != after.dtype:
                raise NotRowwise(f"'{node.name}' changed its result")
            expected = [_expr(d) for d in self._rows_shape(before)]
            if [_expr(d) for d in after.shape] != expected:
                raise NotRowwise(
                    f"'{node.name}' ({node.target}) gives shape "
                    f"{tuple(after.shape)} on rows, not {tuple(expected)}")

    # -- ops -------------------------------------------------------------

    def _call(self, node: torch.fx.Node) -> Any:
        target = node.target
        if target is operator.getitem:
            source, index = node.args
            return self._value(source)[index]
        value = node.meta.get("val")
        if target in _SIZE_OPS or isinstance(value, (torch.SymInt, int)):
            return _SIZE
        inputs = [a for a in _leaves((node.args, node.kwargs))
                  if isinstance(a, torch.fx.Node)
                  and isinstance(a.meta.get("val"), torch.Tensor)]
        row_inputs = [a for a in inputs if self._form(a) is not None]
        outputs = [v for v in _leaves(value) if isinstance(v, torch.Tensor)]
        row_outputs = [v for v in outputs if self.rows.form(v) is not None]
        if target in _VIEWS or target is aten.expand.default:
            return self._view(node, row_inputs)
        if target is aten.full.default and row_outputs:
            kwargs = _by_name(target, node.args, node.kwargs)
            kwargs["size"] = self._rows_shape(value)
            return _call_by_name(target, kwargs)
        if not row_inputs and not row_outputs:
            args, kwargs = self._args(node)
            return target(*args, **kwargs)
        if not isinstance(target, torch._ops.OpOverload):
            raise NotRowwise(f"'{node.name}' calls {target}")
        if torch.Tag.pointwise in target.tags or target in _SAME_SHAPE:
            return self._pointwise(node, value)
        if target in _DIM_OPS:
            return self._dims(node)
        if target in (aten.mm.default, aten.addmm.default):
            return self._product(node)
        if target is aten.native_layer_norm.default:
            return self._layer_norm(node)
        if target is aten.embedding.default:
            return self._embedding(node)
        raise NotRowwise(f"'{node.name}': {target} on rows")

    def _view(self, node: torch.fx.Node, row_inputs: list) -> Any:
        source = node.args[0]
        value = node.meta["val"]
        form = self.rows.form(value)
        if form is None:
            if row_inputs:
                raise NotRowwise(f"'{node.name}' views rows as a static "
                                 f"shape")
            args, kwargs = self._args(node)
            return node.target(*args, **kwargs)
        shape = self._rows_shape(value)
        if node.target is aten.expand.default:
            operand = self._fit(source, len(form[1]))
            return operand.expand(shape)
        if not row_inputs:
            raise NotRowwise(f"'{node.name}' views a static tensor as rows")
        return self._value(source).reshape(shape)

    def _pointwise(self, node: torch.fx.Node, value: Any) -> Any:
        form = self.rows.form(value)
        if form is None:
            raise NotRowwise(f"'{node.name}' makes a static tensor of rows")
        rest_rank = len(form[1])
        args, kwargs = torch.fx.node.map_arg(
            (node.args, node.kwargs), lambda n: self._fit(n, rest_rank))
        if any(a is _SIZE for a in _leaves((args, kwargs))):
            raise NotRowwise(f"'{node.name}' computes with a size")
        return node.target(*args, **kwargs)

    def _dims(self, node: torch.fx.Node) -> Any:
        target = node.target
        args, kwargs = self._args(node)
        kwargs = _by_name(target, args, kwargs)
        first = next(a for a in _leaves((node.args, node.kwargs))
                     if isinstance(a, torch.fx.Node)
                     and isinstance(a.meta.get("val"), torch.Tensor)
                     and self._form(a) is not None)
        k, rest = self._form(first)
        rank = k + len(rest)
        if target is aten.unsqueeze.default:
            rank += 1
        dim = kwargs.get("dim")
        if dim is None or (isinstance(dim, (list, tuple)) and not dim):
            raise NotRowwise(f"'{node.name}' reduces over the rows")

        if target is aten.slice.Tensor and self._whole(node, kwargs, k):
            return self._value(first)

        def moved(d: int) -> int:
            d = d % rank
            if d < k:
                raise NotRowwise(f"'{node.name}' ({target}) works along "
                                 f"dimension {d}, one of the rows")
            return d - k + 1

        kwargs["dim"] = ([moved(d) for d in dim]
                         if isinstance(dim, (list, tuple)) else moved(dim))
        if target is aten.cat.default:
            forms = {self._form(t) for t in node.kwargs.get(
                "tensors", node.args[0])}
            if None in forms or len({f[0] for f in forms}) != 1:
                raise NotRowwise(f"'{node.name}' joins rows of different "
                                 f"forms")
        return _call_by_name(target, kwargs)

    def _whole(self, node: torch.fx.Node, kwargs: dict[str, Any],
               k: int) -> bool:
        """Whether slice `node` (arguments `kwargs`) takes the whole of a
        dimension of the rows (`x[:, :, :4]` slices the first two whole):
        then it is its input."""
        source = node.args[0]
        dim = kwargs.get("dim", 0) % source.meta["val"].dim()
        if dim >= k or kwargs.get("step", 1) != 1 or kwargs.get(
                "start") not in (None, 0):
            return False
        before = _expr(source.meta["val"].shape[dim])
        after = _expr(node.meta["val"].shape[dim])
        return before == after

    def _product(self, node: torch.fx.Node) -> Any:
        if node.target is aten.mm.default:
            lhs, rhs = node.args
            bias = None
        else:
            bias, lhs, rhs = node.args[:3]
            if node.args[3:] or node.kwargs:
                raise NotRowwise(f"'{node.name}' scales its product")
        if self._form(lhs) is None or self._form(rhs) is not None or (
                bias is not None and self._form(bias) is not None):
            raise NotRowwise(f"'{node.name}' multiplies along the rows")
        if bias is None:
            return aten.mm.default(self._value(lhs), self._value(rhs))
        return aten.addmm.default(self._fit(bias, 1), self._value(lhs),
                                  self._value(rhs))

    def _embedding(self, node: torch.fx.Node) -> Any:
        """A table's rows looked up by indices that are rows: one row of
        the table per index, a row of the result each."""
        weight, indices = node.args[:2]
        if self._form(weight) is not None or self._form(indices) is None:
            raise NotRowwise(f"'{node.name}' looks up rows of a varying "
                             f"table or a table of indices")
        args, kwargs = self._args(node)
        return node.target(*args, **kwargs)

    def _layer_norm(self, node: torch.fx.Node) -> Any:
        source, normalized, weight, bias, eps = node.args
        k, rest = self._form(source)
        if len(normalized) > len(rest) or any(
                self._form(t) is not None for t in (weight, bias)
                if t is not None):
            raise NotRowwise(f"'{node.name}' normalizes along the rows")
        return aten.native_layer_norm.default(
            self._value(source), list(normalized), self._value(weight),
            self._value(bias), eps)


class _Classify(_Replay):
    def _input(self, node: torch.fx.Node, inputs: Any) -> None:
        """As _Replay's; an input with sizes of the rows that is not rows
        (positions `[S]`, given as None) is _MISSING: no row-wise op takes
        it."""
        value = node.meta.get("val")
        if node.op == "placeholder" and isinstance(value, torch.Tensor):
            try:
                self.rows.form(value)
            except NotRowwise:
                next(inputs)
                self.values[node] = _MISSING
                return
        super()._input(node, inputs)

    def classify(self) -> dict[torch.fx.Node, str]:
        reasons: dict[torch.fx.Node, str] = {}
        inputs = iter(self.inputs)
        for node in self.traced.graph.nodes:
            if node.op in ("placeholder", "get_attr"):
                self._input(node, inputs)
            elif node.op == "call_function":
                self.values[node] = self._classify(node, reasons)
        return reasons

    def _classify(self, node: torch.fx.Node,
                  reasons: dict[torch.fx.Node, str]) -> Any:
        value = node.meta.get("val")
        if node.target is operator.getitem:
            # With the op it selects from.
            source, index = node.args
            if source in reasons:
                reasons[node] = reasons[source]
            return self.values[source][index]
        if node.target in _SIZE_OPS or isinstance(value,
                                                  (torch.SymInt, int)):
            reasons[node] = "computes a size"
            return _SIZE
        try:
            for arg in _leaves((node.args, node.kwargs)):
                if isinstance(arg, torch.fx.Node) and any(
                        v is _MISSING for v in _leaves(self.values[arg])):
                    raise NotRowwise(f"takes '{arg.name}', which is not "
                                     f"rows")
            result = self._call(node)
            self._check(node, result)
            return result
        except NotRowwise as error:
            reasons[node] = str(error)
        except Exception as error:  # a fake op's own error: not row-wise
            reasons[node] = f"{type(error).__name__}: {error}"
        return torch.utils._pytree.tree_map(self._stand_in, value)

    def _stand_in(self, value: Any) -> Any:
        """For a result of an op that is not row-wise: a fresh tensor of
        its rows' shape, or _MISSING."""
        if not isinstance(value, torch.Tensor):
            return _SIZE if isinstance(value, torch.SymInt) else value
        try:
            shape = self._rows_shape(value)
        except NotRowwise:
            return _MISSING
        return torch.empty(shape, dtype=value.dtype, device=value.device)


def _by_name(target: Any, args: Sequence[Any], kwargs: dict[str, Any]
             ) -> dict[str, Any]:
    """The arguments of a call of op `target`, by their schema's names."""
    named = dict(kwargs)
    for argument, value in zip(target._schema.arguments, args):
        named[argument.name] = value
    return named


def _call_by_name(target: Any, kwargs: dict[str, Any]) -> Any:
    """Calls op `target` with arguments by name (_by_name): positional
    ones in order."""
    args = []
    rest = dict(kwargs)
    for argument in target._schema.arguments:
        if argument.kwarg_only or argument.name not in rest:
            break
        args.append(rest.pop(argument.name))
    return target(*args, **rest)


def _leaves(tree: Any) -> list[Any]:
    """The leaves of nested tuples, lists and dicts."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _leaves(item)]
    return [tree]
