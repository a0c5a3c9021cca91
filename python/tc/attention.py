"""Causal masks written out as tensors become the fused attention's
`is_causal`; GPU masks expanded along the keys are copied contiguous
(`contiguous_masks`).

A model that builds its causal mask itself hands PyTorch's fused attention
(`_scaled_dot_product_cudnn_attention`, `_efficient_attention`) an
additive bias of zeros on and below the diagonal and -inf above it.
Hugging Face's models do so under `torch.compile` (with torch before 2.14
their mask code cannot tell Dynamo's tracing from an export, so it never
takes its own `is_causal` shortcut): the kernel then reads a batch x
queries x keys bias and computes every block, where `is_causal=True`
skips the blocks above the diagonal, about half of them.

The bias is computed in the graph from constants only (`arange`,
comparisons, `where`): nothing the graph's inputs change. Such a bias is
evaluated here, once, at compile time, on its device; where it is exactly
the causal pattern (`bias[..., i, j]` is 0 for `j <= i` and -inf, or at
most `_MASKED`, above: PyTorch turns a boolean mask into such a bias), the
attention op takes `attn_bias=None, is_causal=True` instead and the mask's
ops are dropped. The two compute the same softmax: a masked score adds
-inf (or underflows to 0 after `exp`) either way, and every row keeps its
diagonal. A bias that depends
on an input (a padding mask), holds random values, is larger than
`_MAX_ELEMENTS` or is anything but the causal pattern is left as it is.

In a CUDA inference graph, a fused attention whose only result read is its
output becomes one `tc::attention` node (`library_attentions`), which tc
compiles as `prim.attention`: a cuDNN call inside tc's program, planned
when the graph compiles. The graph is then one program, replayed as one
CUDA graph, where an attention left to eager cuts it into segments, each a
call of its own from Python (60-70 us of host time per segment on the
H200, and 50-60 us per attention call).
"""

from __future__ import annotations

import contextlib
import operator
from typing import Any, Callable

import torch
import torch.fx

from tc import logs

aten = torch.ops.aten

#: The fused attention ops that take an additive bias and a causal flag,
#: by the names of those arguments in their schemas.
_BIASED = tuple(
    getattr(aten, name).default for name in (
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_efficient_attention")
    if hasattr(aten, name))

#: A bias entry at or below this masks its score: float16's lowest value,
#: which PyTorch writes for a boolean mask's False entries whatever the
#: dtype (in bf16 it rounds to -65536). Such an entry and a skipped one give
#: the same softmax unless the masked score exceeds its row's largest
#: unmasked one by about 65,400, which no finite bf16 or fp16 attention
#: computes meaningfully.
_MASKED = -65504.0

#: The largest bias evaluated at compile time (elements): a sequence of
#: 8192 with one batch row; larger masks stay as the model wrote them.
_MAX_ELEMENTS = 1 << 26


def _argument(node: torch.fx.Node, name: str) -> tuple[int | None, Any]:
    """(position, value) of `node`'s schema argument `name`; position None
    when it is a keyword (or absent: its default)."""
    for i, arg in enumerate(node.target._schema.arguments):
        if arg.name != name:
            continue
        if i < len(node.args):
            return i, node.args[i]
        return None, node.kwargs.get(name, arg.default_value)
    raise KeyError(name)


def _set_argument(node: torch.fx.Node, name: str, value: Any) -> None:
    position, _ = _argument(node, name)
    if position is not None:
        args = list(node.args)
        args[position] = value
        node.args = tuple(args)
    else:
        node.kwargs = {**node.kwargs, name: value}


def _constant_value(gm: torch.fx.GraphModule,
                    node: torch.fx.Node) -> torch.Tensor | None:
    """`node`'s value when it depends on no graph input and its ops are
    deterministic and functional; else None."""
    order: list[torch.fx.Node] = []
    seen: set[torch.fx.Node] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current.op == "get_attr":
            order.append(current)
            continue
        if current.op != "call_function" or not isinstance(
                current.target, torch._ops.OpOverload):
            return None
        schema = current.target._schema
        if (schema.is_mutable
                or torch.Tag.nondeterministic_seeded in current.target.tags):
            return None
        order.append(current)
        stack.extend(current.all_input_nodes)
    values: dict[torch.fx.Node, Any] = {}
    position = {n: i for i, n in enumerate(gm.graph.nodes)}
    try:
        with torch.no_grad():
            for current in sorted(order, key=position.__getitem__):
                if current.op == "get_attr":
                    value: Any = gm
                    for part in current.target.split("."):
                        value = getattr(value, part)
                else:
                    args, kwargs = torch.fx.node.map_arg(
                        (current.args, current.kwargs), values.__getitem__)
                    value = current.target(*args, **kwargs)
                values[current] = value
    except Exception:  # noqa: BLE001 - any failure: the mask stays
        return None
    value = values[node]
    # A fake or otherwise wrapped tensor (a compile under a fake mode, as
    # DDP's graph splitter runs the backend) has no values to check.
    return value if type(value) is torch.Tensor else None


def _is_causal(bias: torch.Tensor, queries: int, keys: int) -> bool:
    """Whether additive `bias` (..., queries, keys) is 0 where key j <= query
    i and at most `_MASKED` elsewhere, in every batch and head."""
    if (bias.dim() < 2 or tuple(bias.shape[-2:]) != (queries, keys)
            or not bias.is_floating_point()):
        return False
    keep = torch.ones(queries, keys, dtype=torch.bool,
                      device=bias.device).tril()
    masked = bias <= _MASKED
    return bool(torch.equal(bias == 0, keep.expand(bias.shape))
                and torch.equal(masked, ~keep.expand(bias.shape)))


def causal_masks_as_flags(gm: torch.fx.GraphModule) -> int:
    """Rewrites `gm`'s fused attentions whose bias is a constant causal
    mask to `is_causal=True` (see the module's docstring); returns how
    many. Recompiles `gm` when it changed it."""
    verdicts: dict[torch.fx.Node, bool] = {}
    rewritten = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _BIASED:
            continue
        _, bias = _argument(node, "attn_bias")
        _, causal = _argument(node, "is_causal")
        _, query = _argument(node, "query")
        _, key = _argument(node, "key")
        if not isinstance(bias, torch.fx.Node) or causal:
            continue
        if bias not in verdicts:
            val = bias.meta.get("val")
            q, k = query.meta.get("val"), key.meta.get("val")
            fits = (isinstance(val, torch.Tensor)
                    and isinstance(q, torch.Tensor)
                    and isinstance(k, torch.Tensor)
                    and all(isinstance(d, int) for d in val.shape)
                    and val.numel() <= _MAX_ELEMENTS)
            value = _constant_value(gm, bias) if fits else None
            verdicts[bias] = value is not None and _is_causal(
                value, q.shape[-2], k.shape[-2])
        if not verdicts[bias]:
            continue
        _set_argument(node, "attn_bias", None)
        _set_argument(node, "is_causal", True)
        rewritten += 1
    if rewritten:
        # The masks' ops that nothing reads now (only those: the graph's
        # other unread nodes, such as error checks, stay).
        dead = [bias for bias, causal in verdicts.items() if causal]
        erased: set[torch.fx.Node] = set()
        while dead:
            node = dead.pop()
            if node in erased or node.users:
                continue
            inputs = node.all_input_nodes
            gm.graph.erase_node(node)
            erased.add(node)
            dead.extend(n for n in inputs if n.op != "placeholder")
        gm.recompile()
    return rewritten


def contiguous_masks(gm: torch.fx.GraphModule) -> int:
    """Makes each GPU attention mask of Dynamo's graph `gm` whose last
    dimension is not contiguous (an `expand` along the keys, as Hugging
    Face's mask code writes a padding mask of all ones) a contiguous copy;
    returns how many. PyTorch's fused attention kernels take only masks
    whose last stride is 1: with any other mask
    `scaled_dot_product_attention` picks its math path, which computes
    bf16 and f16 attention as f32 matrix products (ALBERT's step on the
    H200 spent 12 of 43 ms in them). The copy is batch x queries x keys
    elements once per mask, as Inductor's own layout constraint on the
    mask makes it."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not sdpa:
            continue
        in_args = len(node.args) > 3
        mask = node.args[3] if in_args else node.kwargs.get("attn_mask")
        if not isinstance(mask, torch.fx.Node):
            continue
        value = mask.meta.get("example_value")
        if (not isinstance(value, torch.Tensor) or value.device.type == "cpu"
                or value.dim() == 0 or value.shape[-1] == 1
                or value.stride(-1) == 1):
            continue
        if mask not in copies:
            with gm.graph.inserting_after(mask):
                copy = gm.graph.call_method("contiguous", (mask,))
            copy.meta = {**mask.meta,
                         "example_value": value.contiguous()}
            copies[mask] = copy
        if in_args:
            node.args = (*node.args[:3], copies[mask], *node.args[4:])
        else:
            node.kwargs = {**node.kwargs, "attn_mask": copies[mask]}
    if copies:
        gm.recompile()
    return len(copies)


#: node.meta key of a view a rewrite made for eager code to read (the
#: padded bias's `slice`): the backend's partitioning leaves it to eager,
#: as a view, like the view ops it never compiles alone.
EAGER_VIEW = "tc_eager_view"

#: Elements each stride of a bias handed to PyTorch's fused attention
#: kernels is a multiple of: what `scaled_dot_product_attention`'s own
#: padding gives the memory-efficient kernel (197 keys -> 200 on torch 2.11;
#: the kernel refuses strides of 197).
_BIAS_ALIGNMENT = 8


def _aligned(val: torch.Tensor) -> bool:
    return val.stride(-1) == 1 and all(
        stride % _BIAS_ALIGNMENT == 0
        for stride, size in zip(val.stride()[:-1], val.shape[:-1])
        if size > 1)


def _aligned_as_run(node: torch.fx.Node,
                    is_view: Callable[[torch.fx.Node], bool]) -> bool:
    """Whether the value of `node` is aligned (`_aligned`) as the
    backend's code makes it: the views eager runs (`is_view`) of a value
    tc computes, which tc writes dense (in the trace's layout or a
    contiguous one: both must be aligned), or of an input, as given."""
    views = []
    while (node.op == "call_function" and is_view(node) and node.args
           and isinstance(node.args[0], torch.fx.Node)):
        views.append(node)
        node = node.args[0]
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return False
    bases = [val]
    mode = getattr(val, "fake_mode", None)
    with mode if mode is not None else contextlib.nullcontext():
        if node.op not in ("placeholder", "get_attr"):
            bases.append(torch.empty(val.shape, dtype=val.dtype,
                                     device=val.device))
        for base in bases:
            try:
                for view in reversed(views):
                    base = view.target(base, *view.args[1:], **view.kwargs)
            except (RuntimeError, TypeError, ValueError):
                return False  # (not replayable on a dense base: padded)
            if not _aligned(base):
                return False
    return True


def aligned_biases(gm: torch.fx.GraphModule,
                   is_view: Callable[[torch.fx.Node], bool]) -> int:
    """Gives each CUDA fused attention of ATen graph `gm` that runs in
    eager (`_BIASED`: tc's library attentions are `tc::attention` nodes by
    now) a bias whose strides are multiples of `_BIAS_ALIGNMENT`: a bias
    with others is padded along the keys and sliced back
    (`constant_pad_nd`, which tc computes with the ops before it, then a
    `slice` view left to eager, `EAGER_VIEW`), as
    `scaled_dot_product_attention` pads one itself. The traced graph calls
    the kernels directly, and a bias of 197 keys (BEiT's relative
    positions, written dense by tc) made the memory-efficient attention
    raise at run time (ATen's own padding, a `slice` of a
    `constant_pad_nd`, is no help: tc computes the slice, dense again). A
    bias that is an `expand` (a batch-1 bias read by
    every image) is padded before the expand, which stays a view: padded
    after it, the bias would be written once per image (BEiT's 128 x 12 x
    197 x 208 elements a layer, where eager's are 12 x 197 x 200). Returns
    how many. `is_view`: whether the backend leaves a node to eager as a
    view (`partition.is_view`)."""
    aligned = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _BIASED:
            continue
        bias = _argument(node, "attn_bias")[1]
        val = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
        if (not isinstance(val, torch.Tensor) or val.device.type != "cuda"
                or val.dim() == 0
                or not all(isinstance(d, int) for d in val.shape)
                or (_aligned(val) and _aligned_as_run(bias, is_view))):
            continue
        expanded = None
        if (bias.target is aten.expand.default
                and isinstance(bias.args[0], torch.fx.Node)
                and isinstance(bias.args[0].meta.get("val"), torch.Tensor)
                and bias.args[0].meta["val"].dim() == val.dim()):
            expanded, bias = bias, bias.args[0]
        view = _padded_view(gm, bias, node)
        if expanded is not None:
            with gm.graph.inserting_before(node):
                view = gm.graph.call_function(
                    aten.expand.default, (view, *expanded.args[1:]),
                    dict(expanded.kwargs))
            view.meta[EAGER_VIEW] = True
            source = view.args[0].meta["val"]
            mode = getattr(source, "fake_mode", None)
            with mode if mode is not None else contextlib.nullcontext():
                view.meta["val"] = aten.expand.default(
                    source, *expanded.args[1:])
        _set_argument(node, "attn_bias", view)
        if expanded is not None and not expanded.users:
            gm.graph.erase_node(expanded)
        aligned += 1
    if aligned:
        gm.recompile()
    return aligned


def _padded_view(gm: torch.fx.GraphModule, bias: torch.fx.Node,
                 before: torch.fx.Node) -> torch.fx.Node:
    """`bias` padded along its last dimension to a multiple of
    `_BIAS_ALIGNMENT` and sliced back: a new `slice` node (`EAGER_VIEW`)
    inserted before `before`."""
    val = bias.meta["val"]
    keys = val.shape[-1]
    pad = [0, -keys % _BIAS_ALIGNMENT]
    with gm.graph.inserting_before(before):
        padded = gm.graph.call_function(aten.constant_pad_nd.default,
                                        (bias, pad))
        view = gm.graph.call_function(aten.slice.Tensor,
                                      (padded, -1, 0, keys))
    view.meta[EAGER_VIEW] = True
    mode = getattr(val, "fake_mode", None)
    with mode if mode is not None else contextlib.nullcontext():
        padded.meta["val"] = aten.constant_pad_nd.default(val, pad)
        view.meta["val"] = aten.slice.Tensor(padded.meta["val"], -1, 0,
                                             keys)
    return view


#: The fused attentions of an ATen graph (PyTorch's scaled-dot-product
#: backends on CUDA) that `library_attentions` may hand to tc.
_FUSED = tuple(
    getattr(aten, name).default for name in (
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention")
    if hasattr(aten, name))

#: node.meta key marking a `tc::attention` that tc compiles (the backend's
#: other `tc::attention` nodes, `tc.rows.keep_attention`'s, run in eager).
LIBRARY_ATTENTION = "tc_library_attention"

_logger = logs.channel_logger("fallbacks")


def _schema_value(node: torch.fx.Node, name: str, default: Any) -> Any:
    if not any(a.name == name for a in node.target._schema.arguments):
        return default
    return _argument(node, name)[1]


def _why_not_library(node: torch.fx.Node) -> str | None:
    """Why fused attention `node` cannot be one library call in tc's
    program (None when it can): what cuDNN's fused forward takes."""
    if _schema_value(node, "dropout_p", 0.0) != 0.0:
        return "attention dropout"
    return _why_not_call(
        *(_argument(node, name)[1] for name in ("query", "key", "value")),
        _schema_value(node, "attn_bias", None),
        bool(_schema_value(node, "is_causal", False)),
        _schema_value(node, "scale", None))


def _why_not_call(query: Any, key: Any, value: Any, bias: Any,
                  causal: bool, scale: float | None) -> str | None:
    """Why an attention of these operands (nodes) cannot be one cuDNN call
    in tc's program, or None."""
    from tc.compiler import cuda_attention_unavailable
    q, k, v = (t.meta.get("val") for t in (query, key, value))
    b = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
    if any(not isinstance(t, torch.Tensor) for t in (q, k, v)) or (
            bias is not None and not isinstance(b, torch.Tensor)):
        return "operands without example values"
    if q.device.type != "cuda" or torch.version.hip is not None:
        return "not a CUDA graph"
    if any(t.dim() != 4 or not all(isinstance(d, int) for d in t.shape)
           for t in (q, k, v)):
        return "not static 4-d query, key and value"
    bias_dims = (-1, -1)
    if b is not None:
        if causal:
            return "both a bias and is_causal"
        shape = (1,) * (4 - b.dim()) + tuple(b.shape)
        if (b.dim() > 4 or b.dtype != q.dtype
                or not all(isinstance(d, int) for d in shape)
                or shape[2] not in (1, q.shape[2])
                or shape[3] not in (1, k.shape[2])):
            return "a bias that is not (batch, heads, queries, keys)"
        bias_dims = (1 if shape[0] == 1 else q.shape[0],
                     1 if shape[1] == 1 else q.shape[1])
    if scale is None:
        scale = q.shape[3] ** -0.5
    return cuda_attention_unavailable(
        q.dtype, tuple(q.shape), tuple(k.shape), tuple(v.shape),
        bias_dims, causal, float(scale))


_RESHAPES = (aten.view.default, aten._unsafe_view.default,
             aten.reshape.default)


def _repeated_heads(node: Any) -> tuple[torch.fx.Node, int] | None:
    """(x, r) where `node` is x's heads each repeated r times in place
    (`repeat_interleave(x, r, dim=1)`, Hugging Face's `repeat_kv`: in an
    ATen graph an unsqueeze after the heads, an expand along it, a clone
    and a reshape merging the two), else None."""
    if not isinstance(node, torch.fx.Node) or node.target not in _RESHAPES:
        return None
    inner = node.args[0]
    if isinstance(inner, torch.fx.Node) and inner.target is \
            aten.clone.default:
        inner = inner.args[0]
    if not isinstance(inner, torch.fx.Node) or inner.target is not \
            aten.expand.default:
        return None
    source = inner.args[0]
    if not isinstance(source, torch.fx.Node) or source.target is not \
            aten.unsqueeze.default or source.args[1] != 2:
        return None
    x = source.args[0]
    xv, ev, out = (t.meta.get("val") for t in (x, inner, node))
    if not all(isinstance(t, torch.Tensor) for t in (xv, ev, out)):
        return None
    if xv.dim() != 4 or ev.dim() != 5 or out.dim() != 4:
        return None
    b, h, n, d = xv.shape
    r = ev.shape[2]
    if tuple(ev.shape) != (b, h, r, n, d) or tuple(out.shape) != (
            b, h * r, n, d):
        return None
    return x, r


#: A folded attention needs (batch x key heads) at least 1/4 of the
#: device's SMs (`_shared_key_heads`).
_FOLDED_PROGRAMS_PER_SM = 4


def _sm_count(device: torch.device) -> int:
    """The device's streaming multiprocessors (132 when it cannot say:
    an H100's or H200's)."""
    try:
        return torch.cuda.get_device_properties(device).multi_processor_count
    except (RuntimeError, AssertionError, AttributeError, ValueError):
        return 132


def _shared_key_heads(gm: torch.fx.GraphModule, node: torch.fx.Node,
                      query: torch.fx.Node, key: torch.fx.Node,
                      value: torch.fx.Node, bias: Any, causal: bool
                      ) -> tuple[torch.fx.Node, torch.fx.Node,
                                 torch.fx.Node, int] | None:
    """Grouped-query attention whose keys and values are repeated per
    query head (`_repeated_heads`) computed on the unrepeated ones: the r
    query heads of a key head become r times as many queries of that
    head (`q.reshape(b, h / r, r * t, d)`), which read each key and value
    once, and the output is reshaped back. The same softmax for every
    query; the repeated copies of the cache are not written (a decode
    step's largest pass after its weights). Only without a causal flag and
    with no bias or one that every head and query shares (a decode step's
    mask row): others would need the bias repeated too. Where the folded
    heads are too few programs for the device, the query stays as it is
    and reads the unrepeated keys and values as grouped-query attention
    (cuDNN's own: a program per query head). Returns (query, folded or
    not, key, value, r) or None."""
    kr, vr = _repeated_heads(key), _repeated_heads(value)
    if kr is None or vr is None or kr[1] != vr[1] or causal:
        return None
    (k, r), (v, _) = kr, vr
    kv = k.meta["val"]
    if kv.shape[1] != v.meta["val"].shape[1]:
        return None
    if bias is not None:
        b = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
        if not isinstance(b, torch.Tensor):
            return None
        shape = (1,) * (4 - b.dim()) + tuple(b.shape)
        if shape[1] != 1 or shape[2] != 1:
            return None
    if kv.shape[0] * kv.shape[1] * _FOLDED_PROGRAMS_PER_SM < _sm_count(
            kv.device):
        # Too few (batch, key head) pairs to fill the device folded: the
        # fused kernel runs one program per pair and query block (batch 1
        # with 8 key heads: 8 programs on the H200's 132 SMs took 0.16 ms
        # more a step than the repeated heads' copy and 32 programs).
        # Grouped: a program per query head, and no copy.
        return query, False, k, v, r
    qv = query.meta["val"]
    bsz, heads, t, d = qv.shape
    shape = [bsz, heads // r, r * t, d]
    with gm.graph.inserting_before(node):
        folded = gm.graph.call_function(aten.reshape.default, (query, shape))
    folded.meta["val"] = qv.reshape(shape)
    folded.meta["stack_trace"] = node.meta.get("stack_trace")
    return folded, True, k, v, r


def library_attentions(gm: torch.fx.GraphModule) -> int:
    """Rewrites each fused attention of CUDA inference graph `gm` that
    cuDNN can run, and whose output alone is read, into a `tc::attention`
    node marked LIBRARY_ATTENTION (see the module's docstring); returns
    how many. Others stay as they are, with a log line (TC_LOGS=fallbacks)
    saying why."""
    from tc.rows import attention_op
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _FUSED:
            continue
        users = list(node.users)
        if not users or any(u.target is not operator.getitem
                            or u.args[1] != 0 for u in users):
            continue
        why = _why_not_library(node)
        if why is not None:
            _logger.info("attention stays outside tc's program: %s", why)
            continue
        q, k, v = (_argument(node, name)[1]
                   for name in ("query", "key", "value"))
        bias = _schema_value(node, "attn_bias", None)
        causal = bool(_schema_value(node, "is_causal", False))
        scale = _schema_value(node, "scale", None)
        if scale is None:
            scale = q.meta["val"].shape[3] ** -0.5
        shared = _shared_key_heads(gm, node, q, k, v, bias, causal)
        repeated, folded = [], False
        if shared is not None:
            shared_q, folded, shared_k, shared_v, _ = shared
            if _why_not_call(shared_q, shared_k, shared_v, bias, causal,
                             scale) is None:
                repeated = [k, v]
                q, k, v = shared_q, shared_k, shared_v
            else:
                if folded:
                    gm.graph.erase_node(shared_q)
                folded = False
        heads, kv_heads = q.meta["val"].shape[1], k.meta["val"].shape[1]
        args = (q, k, v, bias, 0.0, causal, scale, kv_heads != heads)
        with gm.graph.inserting_before(node):
            fused = gm.graph.call_function(attention_op(), args)
        fused.meta = dict(users[0].meta)
        fused.meta[LIBRARY_ATTENTION] = True
        result = fused
        if folded:
            out = users[0].meta["val"]
            fused.meta["val"] = q.meta["val"].new_empty(
                (*q.meta["val"].shape[:-1], out.shape[-1]))
            with gm.graph.inserting_after(fused):
                result = gm.graph.call_function(
                    aten.reshape.default, (fused, list(out.shape)))
            result.meta = dict(users[0].meta)
            result.meta["val"] = fused.meta["val"].reshape(out.shape)
        for user in users:
            user.replace_all_uses_with(result)
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
        _erase_unused([n for t in repeated for n in _chain(t)])
        count += 1
    if count:
        gm.recompile()
    return count


def written_attentions(gm: torch.fx.GraphModule) -> int:
    """Rewrites each attention of CUDA inference graph `gm` written out as
    products and a softmax (`tc.attention_patterns`) that cuDNN can run
    into a `tc::attention` node marked LIBRARY_ATTENTION; returns how
    many. Others stay as written, with a log line (TC_LOGS=fallbacks)."""
    from tc.attention_patterns import find
    from tc.rows import attention_op
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not \
                aten._softmax.default:
            continue
        found = find(node)
        if found is None:
            continue
        # On a CUDA device (elsewhere tc compiles the products and the
        # softmax), with as many key and value heads as query heads.
        heads = {t.meta["val"].shape[:2]
                 for t in (found.query, found.key, found.value)}
        if found.query.meta["val"].device.type != "cuda" or len(heads) != 1:
            continue
        with gm.graph.inserting_before(found.output):
            key = found.key
            if found.key_transposed:
                key = gm.graph.call_function(aten.permute.default,
                                             (key, [0, 1, 3, 2]))
                key.meta["val"] = found.key.meta["val"].permute(0, 1, 3, 2)
            why = _why_not_call(found.query, key, found.value, found.bias,
                                False, found.scale)
            if why is not None:
                if key is not found.key:
                    gm.graph.erase_node(key)
                _logger.info("attention written out stays as written: %s",
                             why)
                continue
            fused = gm.graph.call_function(
                attention_op(), (found.query, key, found.value, found.bias,
                                 0.0, False, found.scale, False))
        fused.meta = dict(found.output.meta)
        fused.meta[LIBRARY_ATTENTION] = True
        found.output.replace_all_uses_with(fused)
        _erase_unused([found.output, *found.chain])
        count += 1
    if count:
        gm.recompile()
    return count


def _chain(node: torch.fx.Node) -> list[torch.fx.Node]:
    """A repeat's nodes (`_repeated_heads`), the reshape first."""
    chain = [node]
    while chain[-1].target is not aten.unsqueeze.default:
        chain.append(chain[-1].args[0])
    return chain


def _erase_unused(nodes: list[torch.fx.Node]) -> None:
    """Erases those of `nodes` that nothing reads (users first)."""
    left = list(dict.fromkeys(nodes))
    while True:
        dead = [n for n in left if not n.users]
        if not dead:
            return
        for n in dead:
            n.graph.erase_node(n)
            left.remove(n)
