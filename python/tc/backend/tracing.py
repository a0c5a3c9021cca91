"""From Dynamo's graph to a functional ATen graph: tracing, dropout as
ATen's native op, in-place ops and buffer updates made functional."""

from __future__ import annotations

import copy
from contextlib import nullcontext
import logging
import operator
from typing import Any, Callable, Sequence

import torch
import torch.fx

import tc
from tc import compat
from tc.decompositions import (core_aten_decompositions, decomposed_ops,
                               explicit_decompositions,
                               explicit_forward_decompositions,
                               forward_decomposed_ops,
                               forward_decompositions, table_decomposes)

logger = logging.getLogger("tc")


def products_of_merged_rows(graph: torch.fx.Graph,
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
                # (The Python dispatcher with a symbolic size: PyTorch's
                # C++ matmul reads concrete sizes in torch 2.11;
                # symbolic.symbolic_trace. Without, the C++ op: the
                # Python decomposition took 3 ms a product.)
                with fake_mode, (enable_python_dispatcher()
                                 if symbol is not None else nullcontext()):
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


def gm_forward(gm: torch.fx.GraphModule) -> Callable:
    """`gm` as make_fx traces it: its forward, positional."""
    return lambda *args: gm.forward(*args)


def _native_dropout(input: torch.Tensor, p: float) -> torch.Tensor:
    return torch.ops.aten.native_dropout(input, p, True)[0]


def dropout_as_native(gm: torch.fx.GraphModule) -> None:
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


def _dropout_of(bern: torch.fx.Node, keep: float) -> Any:
    """`(scale, product, source)` where `bern` is the mask of a composite
    dropout, `source * bern.div_(keep)` with the mask of the source's shape
    and dtype (the product broadcasts nothing); None otherwise."""
    aten = torch.ops.aten
    scale = next(iter(bern.users))
    if (scale.target is not aten.div_.Scalar or scale.args != (bern, keep)
            or len(scale.users) != 1):
        return None
    product = next(iter(scale.users))
    if (product.target is not aten.mul.Tensor or product.kwargs
            or len(product.args) != 2 or scale not in product.args):
        return None
    source = product.args[1 - product.args.index(scale)]
    mask = bern.args[0].meta.get("val")
    value = (source.meta.get("val") if isinstance(source, torch.fx.Node)
             else None)
    if not (isinstance(mask, torch.Tensor) and isinstance(value, torch.Tensor)
            and mask.shape == value.shape and mask.dtype == value.dtype):
        return None
    return scale, product, source


def bernoulli_masks_as_dropout(graph: torch.fx.Graph) -> int:
    """Rewrites in-place Bernoulli draws on fresh tensors to functional
    random ops; returns how many it rewrote.

    A dropout that a decomposition calls (the math attention's, which
    `scaled_dot_product_attention` with `dropout_p` traces to where no
    fused kernel takes dropout, as on the CPU) reaches the ATen graph as
    `x * empty_like(x).bernoulli_(q).div_(q)` (`empty_permuted` with x's
    shape once decomposed), an in-place random op on a fresh tensor: the
    one-pass trace took the whole graph to AOTAutograd for it.
    `native_dropout(x, 1 - q, True)[0]` is the same function as one
    functional op, which tc lowers to its counter-based random numbers
    (and differentiates: its mask is recomputed from the seed). Any other
    draw on a fresh tensor (stochastic depth's per-sample mask,
    `x.new_empty((B, 1, 1, 1)).bernoulli_(q)`) becomes `bernoulli.p` of
    it, the in-place ops after it made out of place by
    `_functionalize_inplace_intermediates`."""
    aten = torch.ops.aten
    fresh_tensors = (aten.empty_like.default, aten.empty_permuted.default,
                     aten.empty.memory_format)
    rewritten = 0
    for bern in list(graph.nodes):
        if bern.target is not aten.bernoulli_.float or len(bern.args) != 2:
            continue
        fresh, keep = bern.args
        if (bern.kwargs.get("generator") is not None
                or not isinstance(keep, float) or not 0.0 <= keep <= 1.0
                or not isinstance(fresh, torch.fx.Node)
                or fresh.target not in fresh_tensors
                or len(fresh.users) != 1 or len(bern.users) != 1):
            continue
        dropout = _dropout_of(bern, keep) if keep > 0.0 else None
        if dropout is None:
            with graph.inserting_before(bern):
                draw = graph.call_function(aten.bernoulli.p, (fresh, keep))
            draw.meta = dict(bern.meta)
            bern.replace_all_uses_with(draw)
            graph.erase_node(bern)
            rewritten += 1
            continue
        scale, product, source = dropout
        value = source.meta["val"]
        with graph.inserting_before(product):
            native = graph.call_function(aten.native_dropout.default,
                                         (source, 1.0 - keep, True))
            result = graph.call_function(operator.getitem, (native, 0))
        if product.meta.get("val") is not None:
            result.meta["val"] = product.meta["val"]
            native.meta["val"] = (result.meta["val"],
                                  value.new_empty(value.shape,
                                                  dtype=torch.bool))
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in product.meta:
                native.meta[key] = result.meta[key] = product.meta[key]
        product.replace_all_uses_with(result)
        for node in (product, scale, bern, fresh):
            graph.erase_node(node)
        rewritten += 1
    return rewritten


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




def _make_fx_decomposed(gm: torch.fx.GraphModule, inputs: list,
                        training: bool) -> torch.fx.GraphModule:
    """make_fx of `gm` with tc's table (`forward_decompositions()` for a
    training graph's forward, else `core_aten_decompositions()`), traced
    first with its explicit part, built in milliseconds where the whole
    table takes 0.1-0.2 s once a process (a sizeable part of a training
    graph's first step): the two traces differ only where the first keeps
    an op the whole table decomposes, and then it is traced again."""
    from torch.fx.experimental.proxy_tensor import make_fx

    explicit = (explicit_forward_decompositions() if training
                else explicit_decompositions())
    grad_enabled = torch.is_grad_enabled()
    traced = make_fx(gm, decomposition_table=explicit)(*inputs)
    left = sorted({str(node.target) for node in traced.graph.nodes
                   if node.op == "call_function"
                   and table_decomposes(node.target, training)})
    if not left:
        return traced
    logger.debug("tc: traced again with the whole table: %s", left)
    whole = forward_decompositions() if training \
        else core_aten_decompositions()
    torch.set_grad_enabled(grad_enabled)  # as the first trace began
    return make_fx(gm, decomposition_table=whole)(*inputs)


def trace_one_pass(gm: torch.fx.GraphModule,
                   example_inputs: Sequence[Any], direct: bool = False,
                   training: bool = False) -> torch.fx.GraphModule | None:
    """Dynamo's graph traced to core ATen in one pass, or None.

    AOTAutograd traces an inference graph twice (once to collect metadata
    about mutations and aliasing, once to capture) and wraps the result in
    runtime wrappers; a graph that mutates nothing and touches no global
    state needs one trace of `make_fx` under Dynamo's fake mode (the forward
    only: below autograd). That is a large part of a small graph's compile
    time. None means "use AOTAutograd" (mutations, global state, anything
    odd). With `direct`, the graph is first written to ATen node by node
    (`tc.direct`, counted as `aten_direct`), tracing alone only the nodes
    it has no rule for. With `training`, the graph is a training graph's
    forward, traced with `forward_decompositions()`.
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
        if node.target in (compat.get("autocast_markers") or ()):
            # Entering or leaving an autocast region (tc.compat): the
            # trace runs under the autocast state the graph sets, its
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

    fake_mode = detect_fake_mode(example_inputs)
    if fake_mode is None:
        context = TracingContext.try_get()
        fake_mode = context.fake_mode if context is not None else None
    if fake_mode is None:
        fake_mode = FakeTensorMode()
    traced = written = None
    if direct:
        from tc.direct import direct_aten

        if training:
            written = direct_aten(gm, forward_decomposed_ops(),
                                  forward_decompositions,
                                  explicit_forward_decompositions)
        else:
            written = direct_aten(gm, decomposed_ops(),
                                  core_aten_decompositions,
                                  explicit_decompositions)
        if written is not None:
            tc.counters["aten_direct"] += 1
    grad_enabled = torch.is_grad_enabled()
    try:
        if written is None:
            with fake_mode:
                inputs = [fake_mode.from_tensor(x, static_shapes=True)
                          for x in example_inputs]
                traced = _make_fx_decomposed(gm, inputs, training)
    except Exception as error:  # AOTAutograd may still manage
        logger.debug("tc: one-pass ATen trace failed (%s: %s); using "
                     "AOTAutograd", type(error).__name__, error)
        return None
    finally:
        torch.set_grad_enabled(grad_enabled)
    graph = written[1] if written is not None else traced.graph
    bernoulli_masks_as_dropout(graph)
    # Under grad mode the trace also records what autograd would save
    # (aliases of outputs nobody reads): drop it. Error checks have no
    # users but must stay (torch 2.11's node purity does not know them).
    graph.eliminate_dead_code(is_impure_node=lambda node: (
        node.is_impure() or (node.op == "call_function" and (
            node.target in ERROR_CHECKS or (
                isinstance(node.target, torch._ops.OpOverload)
                and node.target._schema.is_mutable)))))
    # `nn.ReLU(inplace=True)` (torchvision's ResNets) and `x += shortcut`
    # on an intermediate (timm's GhostNet): out of place, training graphs
    # too (tc differentiates the functional graph; with them left in, a
    # training graph went whole to AOTAutograd).
    _functionalize_inplace_intermediates(graph)
    if written is None and training and \
            not _functionalize_buffer_updates(traced):
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
    cpu_scalars_on_graph_device(
        written[0] if written is not None else traced, graph)
    if written is not None:  # its Python code, written once
        return compat.graph_module(written[0], graph)
    traced.recompile()
    return traced


def cpu_scalars_on_graph_device(root: torch.nn.Module,
                                graph: torch.fx.Graph) -> int:
    """Moves the 0-d CPU tensors a GPU graph computes (from constants:
    `torch.tensor(n)`, a scale's `sqrt`) to the graph's device; returns how
    many nodes it moved.

    Eager takes a 0-d CPU tensor beside CUDA ones as a scalar (DeBERTa-v2's
    attention divides by `sqrt(torch.tensor(d))` and takes the logarithm of
    a `torch.tensor` for its position buckets): its value is the same on
    either device, and so is type promotion, which treats 0-d tensors alike
    wherever they live. A graph mixing devices does not import, so such a
    model ran wholly in eager. Only where every CPU value is 0-d, computed
    in the graph (no CPU input) and not returned; otherwise the graph is
    left as it is."""
    values = [(node, node.meta.get("val")) for node in graph.nodes]
    devices = {v.device for _, v in values if isinstance(v, torch.Tensor)}
    cpu = torch.device("cpu")
    if len(devices) != 2 or cpu not in devices:
        return 0
    (device,) = devices - {cpu}
    moved = [(node, v) for node, v in values
             if isinstance(v, torch.Tensor) and v.device == cpu]
    returned = set()
    for node in graph.nodes:
        if node.op == "output":
            returned = set(node.all_input_nodes)
    if any(v.dim() != 0 or node.op == "placeholder" or node in returned
           for node, v in moved):
        return 0
    for node, value in moved:
        if node.op == "get_attr":
            owner, _, name = node.target.rpartition(".")
            module = root.get_submodule(owner) if owner else root
            setattr(module, name, getattr(module, name).to(device))
        else:
            # A factory's device, or a copy's (`_to_copy`), given or not.
            schema = getattr(node.target, "_schema", None)
            names = [a.name for a in schema.arguments] if schema else []
            if "device" in names:
                at = names.index("device")
                if at < len(node.args):
                    node.args = (*node.args[:at], device,
                                 *node.args[at + 1:])
                else:
                    node.kwargs = {**node.kwargs, "device": device}
        node.meta["val"] = value.to(device)
    return len(moved)


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
MUTATED_INPUTS = "tc_mutated_inputs"


def _functionalize_buffer_updates(traced: torch.fx.GraphModule) -> bool:
    """Rewrites the in-place updates training makes to its buffers (batch
    norm's running statistics, its `num_batches_tracked += 1`) into values
    the graph returns after its own outputs; `traced.meta[MUTATED_INPUTS]`
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
    traced.meta[MUTATED_INPUTS] = [placeholders.index(p) for p in order]
    return True


def returns_alias(node: Any) -> bool:
    """Whether `node` is a view: an op whose result aliases an input
    (`view`, `t`, `slice`, `select`, `diagonal`, `split`, ...; not an
    in-place op, whose result is its mutated input)."""
    target = getattr(node, "target", None)
    if (not isinstance(target, torch._ops.OpOverload)
            or target._schema.is_mutable):
        return False
    return any(r.alias_info is not None for r in target._schema.returns)


def written_placeholders(gm: torch.fx.GraphModule) -> set[int]:
    """The positions of `gm`'s placeholders that an op writes in place
    (`index_put_` into a cache), directly or through views."""
    positions = {n: i for i, n in enumerate(
        n for n in gm.graph.nodes if n.op == "placeholder")}
    written = set()
    for node in gm.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(
                target, torch._ops.OpOverload) or \
                not target._schema.is_mutable:
            continue
        for argument, value in zip(target._schema.arguments, node.args):
            if argument.alias_info is None or \
                    not argument.alias_info.is_write:
                continue
            while isinstance(value, torch.fx.Node) and returns_alias(value):
                value = value.args[0]
            if value in positions:
                written.add(positions[value])
    return written


def _aliases(node: Any) -> bool:
    """Whether `node` is a view (`returns_alias`) or an element of one
    (`getitem` of `split`'s or `unbind`'s list)."""
    if getattr(node, "target", None) is operator.getitem:
        node = node.args[0] if node.args else None
    return returns_alias(node)


def _sole_alias(value: torch.fx.Node) -> bool:
    """Whether `value` views an intermediate that nothing else reads: a
    full-range slice (timm's GhostNet's `out[:, :out_chs]` of a
    concatenation of exactly that many channels), the `view` a 3-d
    `matmul` returns of its product (MobileBERT's `hidden += bias` after
    it). Updating it in place updates what no one else sees."""
    base = value.args[0] if value.args else None
    return (value.target is not operator.getitem and returns_alias(value)
            and isinstance(base, torch.fx.Node)
            and base.op == "call_function" and not _aliases(base)
            and len(base.users) == 1)


def _functionalize_inplace_intermediates(graph: torch.fx.Graph) -> None:
    """Rewrites in-place ops on intermediate values (`relu_` of
    `nn.ReLU(inplace=True)`) into their out-of-place form; later readers of
    the old value read the new one. Only where no view aliases the value
    (a view would see the update) and the value is no view but a sole
    alias (`_sole_alias`): other in-place ops stay, and the caller's check
    sends the graph to AOTAutograd."""
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
                or value.op != "call_function"
                or (_aliases(value) and not _sole_alias(value))
                or any(_aliases(user) for user in value.users)):
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


#: Ops that only check values and raise eager's error (no result): tc
#: runs them on the host after the compiled graph, on results it returns.
ERROR_CHECKS = (torch.ops.aten._linalg_check_errors.default,)
