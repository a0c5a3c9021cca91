"""How compiled graphs lay out what they take and return: eager's strides,
without copies.

tc's kernels read and write dense row-major buffers. Eager hands over and
expects other layouts: a transposed activation, a weight saved as
`t(t(w))`, the padded logits of a product whose rows cuBLAS wants 16-byte
aligned. The rewrites here make a graph take and return those layouts as
views of dense buffers, so that nothing is copied on either side of a
compiled graph.
"""

from __future__ import annotations

import copy
import operator
from typing import Any, Callable, Sequence

import torch
import torch.fx


def dense_permutation(value: Any) -> tuple[int, ...] | None:
    """The permutation that makes `value`, a non-contiguous tensor whose
    elements fill its memory (a transposed or permuted view), contiguous;
    None for a contiguous tensor or one with gaps or repeats."""
    if (not isinstance(value, torch.Tensor) or value.dim() < 2
            or value.is_contiguous() or value.numel() < 2):
        return None
    order = tuple(sorted(range(value.dim()),
                         key=lambda d: (-value.stride(d), d)))
    return order if value.permute(order).is_contiguous() else None


def read_in_place(sub: torch.fx.GraphModule,
                  only: Sequence[bool] | None = None
                  ) -> tuple[torch.fx.GraphModule,
                             list[tuple[int, ...] | None]]:
    """`sub` taking each input that is a dense permuted view (a transposed
    activation handed over by an eager op, a saved one in a backward) in
    its memory order, with a permute back to its shape inside the graph,
    and each input's permutation (CompiledFunction.read_inputs_permuted).
    Copying such inputs to contiguous tensors took 3 ms of GPT-2's 23 ms
    training step on the H200 (123 copies). Inputs written in place keep
    their layout. `only` (flags by input): the inputs that may be read
    so; by default all."""
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    permutations = []
    flags = ([True] * len(placeholders) if only is None else
             [*only, *[False] * (len(placeholders) - len(only))])
    for node, allowed in zip(placeholders, flags):
        permutation = (dense_permutation(node.meta.get("val"))
                       if allowed else None)
        if permutation is not None and any(
                isinstance(u.target, torch._ops.OpOverload)
                and u.target._schema.is_mutable for u in node.users):
            permutation = None
        permutations.append(permutation)
    if all(p is None for p in permutations):
        return sub, permutations
    graph = copy.deepcopy(sub.graph)
    nodes = [n for n in graph.nodes if n.op == "placeholder"]
    for node, permutation in zip(nodes, permutations):
        if permutation is None:
            continue
        value = node.meta["val"]
        inverse = sorted(range(len(permutation)), key=permutation.__getitem__)
        with graph.inserting_after(node):
            back = graph.call_function(torch.ops.aten.permute.default,
                                       (node, inverse))
        node.replace_all_uses_with(
            back, delete_user_cb=lambda user: user is not back)
        back.meta = {**node.meta, "val": value}
        node.meta = {**node.meta, "val": value.permute(permutation)}
    return torch.fx.GraphModule(sub, graph), permutations


def write_in_place(sub: torch.fx.GraphModule
                    ) -> tuple[torch.fx.GraphModule,
                               list[tuple[int, ...] | None]]:
    """`sub` returning each output that eager lays out as a dense
    permutation (its meta value's strides) in that memory order, and each
    output's permutation (CompiledFunction.write_outputs_permuted), so
    that the call returns eager's strides. Written contiguous, such an
    output came back transposed: autograd copied each weight gradient
    that AOTAutograd saved as `t(t(w))` into its parameter's layout, an
    eager op given a transposed activation copied it or chose another
    layout, and the next subgraph copied that (Llama's training step: 73
    copies). Outputs that are inputs or written in place keep theirs."""
    output = next(n for n in reversed(sub.graph.nodes) if n.op == "output")
    leaves: list[Any] = []
    torch.fx.node.map_aggregate(output.args[0], leaves.append)

    def permutation(node: Any) -> tuple[int, ...] | None:
        if (not isinstance(node, torch.fx.Node) or node.op != "call_function"
                or (isinstance(node.target, torch._ops.OpOverload)
                    and node.target._schema.is_mutable)):
            return None
        return dense_permutation(node.meta.get("val"))

    permutations = [permutation(leaf) for leaf in leaves]
    if all(p is None for p in permutations):
        return sub, permutations
    graph = copy.deepcopy(sub.graph)
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    written: dict[torch.fx.Node, torch.fx.Node] = {}
    leaves = []
    torch.fx.node.map_aggregate(output.args[0], leaves.append)
    for leaf, order in zip(leaves, permutations):
        if order is None or leaf in written:
            continue
        with graph.inserting_before(output):
            dense = graph.call_function(torch.ops.aten.permute.default,
                                        (leaf, list(order)))
        dense.meta = {**leaf.meta, "val": leaf.meta["val"].permute(order)}
        written[leaf] = dense
    # Each output position by its own permutation (a value returned twice
    # is written once).
    positions = iter(range(len(leaves)))

    def replace(value: Any) -> Any:
        index = next(positions)
        return written.get(value, value) if permutations[index] else value

    output.args = (torch.fx.node.map_aggregate(output.args[0], replace),)
    return torch.fx.GraphModule(sub, graph), permutations


#: Products of a matrix (or a batch of rows) by a 2-d matrix.
_PRODUCTS = {torch.ops.aten.mm.default, torch.ops.aten.matmul.default}

#: The permutations that make a 2-d operand's transpose.
_TRANSPOSES = {torch.ops.aten.t.default, torch.ops.aten.permute.default}


def _transposed(node: Any) -> bool:
    """Whether `node` is a transpose of a 2-d value (the GEMM reads the
    value under it transposed, as PrimToKernel does)."""
    if not isinstance(node, torch.fx.Node) or node.target not in _TRANSPOSES:
        return False
    return (node.target is torch.ops.aten.t.default
            or list(node.args[1]) == [1, 0])


def pad_returned_products(gm: torch.fx.GraphModule,
                          padding: Callable[..., Any],
                          is_view: Callable[[torch.fx.Node], bool]) -> bool:
    """Returns each large half-precision `mm` (or `matmul` of rows by a
    matrix, or `addmm` of a Linear's bias) that the graph only returns (through views) as a view of a
    product whose rows are padded to 16 bytes, the strides Inductor
    returns GPT-2's logits with. `padding` is the native
    `half_product_padding`, which decides as tc-align-half-products does
    but without the slice's copy in the cost (Electra's LM head, k = 128:
    too little work per byte to pay for a logits-sized copy, enough to
    pay for the pads); that pass pads such a product too, but slices its
    result back with a copy (for GPT-2's logits, 4096 x 50257 in bf16: 0.17 ms of a 3.6 ms
    step and 400 MB more at the peak). Only the columns are padded here (a
    padded `k` or `m` is left to the pass). For inference graphs only: in
    training, autograd and the graph after the view would copy it to a
    dense tensor on each side (two logits-sized copies in GPT-2's step,
    1 ms on the H100). `is_view(node)`: whether the backend applies
    `node`, a view, to the compiled graph's result. Returns whether the
    graph changed."""
    graph = gm.graph
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    changed = False
    for node in list(graph.nodes):
        if node.target in _PRODUCTS:
            lhs, rhs = node.args
            bias, fused_bias = _bias_add(node), None
        elif _addmm_of_vector(node):
            fused_bias, lhs, rhs = node.args
            bias = None
        else:
            continue
        value = node.meta.get("val")
        if (not isinstance(value, torch.Tensor) or value.device.type != "cuda"
                or value.dtype not in (torch.float16, torch.bfloat16)
                or not _only_returned(node if bias is None else bias, output,
                                       is_view)):
            continue
        lhs_value, rhs_value = lhs.meta["val"], rhs.meta["val"]
        if lhs_value.dim() < 2 or rhs_value.dim() != 2:
            continue
        (k, n), m = rhs_value.shape, lhs_value.numel() // rhs_value.shape[0]
        lhs_t = lhs_value.dim() == 2 and _transposed(lhs)
        rhs_t = _transposed(rhs)
        pads = padding(m, k, n, lhs_t, rhs_t, value.element_size(), m * n,
                       m * k, k * n, True)
        if pads is None or pads[0] or pads[1] or not pads[2]:
            continue
        pad_n = pads[2]
        with graph.inserting_before(node):
            if rhs_t:
                # Pad the stored rows under the transpose: a dense copy.
                under = rhs.args[0]
                padded = _call(graph, torch.ops.aten.constant_pad_nd.default,
                               (under, [0, 0, 0, pad_n], 0.0))
                padded = _call(graph, torch.ops.aten.permute.default,
                               (padded, [1, 0]))
            else:
                padded = _call(graph, torch.ops.aten.constant_pad_nd.default,
                               (rhs, [0, pad_n], 0.0))
            if fused_bias is not None:
                # `addmm` of a Linear with a bias (the direct import's
                # form): its padded bias, zeros in the padded columns.
                product = _call(graph, node.target,
                                (_pad_vector(graph, fused_bias, pad_n),
                                 lhs, padded))
            else:
                product = _call(graph, node.target, (lhs, padded))
            if bias is not None:
                # The bias padded with zeros: the library call's epilogue
                # adds it to the padded rows (LayoutLM's and BERT's masked
                # LM heads: a copy of their logits less).
                product = _call(graph, torch.ops.aten.add.Tensor,
                                (product,
                                 _pad_vector(graph, bias.args[1], pad_n)))
            sliced = _call(graph, torch.ops.aten.slice.Tensor,
                           (product, value.dim() - 1, 0, n))
        if bias is not None:
            bias.replace_all_uses_with(sliced)
            graph.erase_node(bias)
        node.replace_all_uses_with(sliced)
        graph.erase_node(node)
        if rhs_t and not rhs.users:
            graph.erase_node(rhs)  # the transpose read under its pad now
        _refresh_views(sliced, output)
        changed = True
    if changed:
        graph.lint()
        gm.recompile()
    return changed


def _bias_add(product: torch.fx.Node) -> torch.fx.Node | None:
    """The `add` of a bias along the product's columns that is the
    product's only use (a Linear's bias, added after its `matmul`), if
    any."""
    if len(product.users) != 1:
        return None
    add = next(iter(product.users))
    if (add.target is not torch.ops.aten.add.Tensor or add.kwargs
            or len(add.args) != 2 or add.args[0] is not product
            or not isinstance(add.args[1], torch.fx.Node)):
        return None
    value, bias = product.meta.get("val"), add.args[1].meta.get("val")
    if (not isinstance(value, torch.Tensor)
            or not isinstance(bias, torch.Tensor) or bias.dim() != 1
            or bias.shape[0] != value.shape[-1] or bias.dtype != value.dtype
            or add.meta.get("val") is None
            or add.meta["val"].shape != value.shape):
        return None
    return add


def _addmm_of_vector(node: torch.fx.Node) -> bool:
    """Whether `node` is `addmm(bias, lhs, rhs)` with a bias vector along
    the columns, of the product's dtype, and no scaling."""
    if node.target is not torch.ops.aten.addmm.default or node.kwargs \
            or len(node.args) != 3 or not isinstance(node.args[0],
                                                      torch.fx.Node):
        return False
    value, bias = node.meta.get("val"), node.args[0].meta.get("val")
    return (isinstance(value, torch.Tensor)
            and isinstance(bias, torch.Tensor) and bias.dim() == 1
            and bias.shape[0] == value.shape[-1]
            and bias.dtype == value.dtype)


def _pad_vector(graph: torch.fx.Graph, vector: torch.fx.Node,
                pad: int) -> torch.fx.Node:
    """`vector` with `pad` zeros after it."""
    return _call(graph, torch.ops.aten.constant_pad_nd.default,
                 (vector, [0, pad], 0.0))


def _call(graph: torch.fx.Graph, target: Any, args: tuple) -> torch.fx.Node:
    """A node of `target` with its meta value computed on the fake values
    of its arguments."""
    node = graph.call_function(target, args)
    fake = torch.fx.node.map_arg(args, lambda a: a.meta["val"])
    node.meta["val"] = target(*fake)
    return node


def _refresh_views(node: torch.fx.Node, output: torch.fx.Node) -> None:
    """Recomputes the meta values of the views of `node` (their strides
    follow its new ones)."""
    for user in node.users:
        if user is output:
            continue
        args, kwargs = torch.fx.node.map_arg(
            (user.args, user.kwargs), lambda a: a.meta["val"])
        user.meta["val"] = user.target(*args, **kwargs)
        _refresh_views(user, output)


def _only_returned(node: torch.fx.Node, output: torch.fx.Node,
                   is_view: Callable[[torch.fx.Node], bool]) -> bool:
    """Whether every use of `node` is the output, directly or through
    views (which the backend applies to the compiled graph's results)."""
    for user in node.users:
        if user is output:
            continue
        if user.target is operator.getitem or not is_view(user):
            return False
        if (user.args[0] is not node
                or not _only_returned(user, output, is_view)):
            return False
    return True
