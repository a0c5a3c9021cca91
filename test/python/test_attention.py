"""tc.attention: a constant causal mask handed to PyTorch's fused attention
becomes its `is_causal` flag; any other bias stays.

The graphs are written by hand (the fused ops run on GPUs only; the
rewrite reads the graph and evaluates the mask, never the attention). The
GPU test of the whole path, eager's results included, is
test_cuda.py::test_cuda_causal_mask_runs_as_causal_attention.
"""

import operator

import pytest
import torch
import torch.fx

from tc import attention

aten = torch.ops.aten
B, H, S, D = 2, 4, 8, 16


def _node(graph, target, args, kwargs=None):
    """A call of `target`, its value (the `val` meta tc's passes read)
    computed from its arguments'."""
    node = graph.call_function(target, args, kwargs or {})
    vals = torch.fx.node.map_arg((args, kwargs or {}),
                                 lambda n: n.meta["val"])
    node.meta["val"] = target(*vals[0], **vals[1])
    return node


def _graph(mask: str, op=aten._scaled_dot_product_cudnn_attention.default):
    """An attention whose additive bias is built as `mask` says."""
    graph = torch.fx.Graph()
    q, k, v = (graph.placeholder(name) for name in "qkv")
    for p in (q, k, v):
        p.meta["val"] = torch.randn(B, H, S, D)
    keep = _node(graph, aten.ones.default, ([S, S],), {"dtype": torch.bool})
    keep = _node(graph, aten.tril.default,
                 (keep, -1 if mask == "diagonal masked" else 0))
    if mask == "input":
        # A padding mask from the graph's inputs: not a constant.
        pad = graph.placeholder("pad")
        pad.meta["val"] = torch.ones(S, S, dtype=torch.bool)
        keep = _node(graph, aten.logical_and.default, (keep, pad))
    zeros = _node(graph, aten.zeros.default, ([S, S],))
    if mask == "random":
        zeros = _node(graph, aten.rand.default, ([S, S],))
    # PyTorch's boolean masks become -65504 (float16's lowest) whatever
    # the dtype.
    lowest = {"lowest": torch.finfo(torch.float32).min,
              "fp16 lowest": -65504.0,
              "not low enough": -1e4}.get(mask, float("-inf"))
    fill = _node(graph, aten.full.default, ([S, S], lowest))
    bias = _node(graph, aten.where.self, (keep, zeros, fill))
    bias = _node(graph, aten.expand.default, (bias, [B, 1, S, S]))
    out = graph.call_function(op, (q, k, v, bias, False), {"scale": 0.25})
    graph.output((graph.call_function(lambda t: t[0], (out,)),))
    return torch.fx.GraphModule(torch.nn.Module(), graph), out


@pytest.mark.parametrize("op", [
    aten._scaled_dot_product_cudnn_attention.default,
    aten._scaled_dot_product_efficient_attention.default])
@pytest.mark.parametrize("mask", ["causal", "lowest", "fp16 lowest"])
def test_constant_causal_mask_becomes_the_flag(op, mask):
    gm, node = _graph(mask, op)
    assert attention.causal_masks_as_flags(gm) == 1
    assert node.args[3] is None
    assert node.kwargs["is_causal"] is True
    assert node.kwargs["scale"] == 0.25
    # The mask's ops are gone; the attention and its inputs stay.
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert aten.tril.default not in targets
    assert aten.where.self not in targets
    assert op in targets


@pytest.mark.parametrize("mask", ["diagonal masked", "input", "random",
                                  "not low enough"])
def test_other_masks_stay(mask):
    gm, node = _graph(mask)
    before = [(n.target, n.args, dict(n.kwargs)) for n in gm.graph.nodes]
    assert attention.causal_masks_as_flags(gm) == 0
    assert [(n.target, n.args, dict(n.kwargs))
            for n in gm.graph.nodes] == before
    assert isinstance(node.args[3], torch.fx.Node)


def test_already_causal_and_unbiased_attentions_stay():
    gm, node = _graph("causal")
    node.args = node.args[:3] + (None, False)
    assert attention.causal_masks_as_flags(gm) == 0
    gm, node = _graph("causal")
    node.kwargs = {**node.kwargs, "is_causal": True}
    assert attention.causal_masks_as_flags(gm) == 0


def test_masks_under_a_fake_mode_stay():
    """Compiled under a fake mode (DDP's graph splitter calls backends
    so), the mask evaluates to fake tensors with no values: it stays, and
    the rewrite raises nothing."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    gm, node = _graph("causal")
    with FakeTensorMode():
        assert attention.causal_masks_as_flags(gm) == 0
    assert isinstance(node.args[3], torch.fx.Node)


def _masked_graph(mask_value: torch.Tensor, keyword: bool):
    """Dynamo's form: scaled_dot_product_attention called on placeholders
    whose `example_value` is set, the mask as argument or keyword."""
    import torch.nn.functional as F
    graph = torch.fx.Graph()
    q, k, v, mask = (graph.placeholder(name) for name in ("q", "k", "v", "m"))
    for p in (q, k, v):
        p.meta["example_value"] = torch.randn(B, H, S, D, device="meta")
    mask.meta["example_value"] = mask_value
    sdpa = F.scaled_dot_product_attention
    out = (graph.call_function(sdpa, (q, k, v), {"attn_mask": mask})
           if keyword else graph.call_function(sdpa, (q, k, v, mask)))
    graph.output((out,))
    return torch.fx.GraphModule(torch.nn.Module(), graph), out


@pytest.mark.parametrize("keyword", [False, True])
def test_mask_expanded_along_keys_is_made_contiguous(keyword):
    """A GPU mask whose last stride is not 1 (an expand along the keys)
    is read through one `contiguous` copy, which PyTorch's fused kernels
    take; a contiguous mask, and a CPU one, stay as they are. (Meta
    tensors stand in for a GPU's: this machine may have none.)"""
    expanded = torch.ones(B, 1, S, 1, dtype=torch.bool,
                          device="meta").expand(B, 1, S, S)
    gm, out = _masked_graph(expanded, keyword)
    assert attention.contiguous_masks(gm) == 1
    mask = out.kwargs["attn_mask"] if keyword else out.args[3]
    assert mask.op == "call_method" and mask.target == "contiguous"
    assert mask.meta["example_value"].stride()[-1] == 1
    for value in (torch.ones(B, 1, S, S, dtype=torch.bool, device="meta"),
                  torch.ones(B, 1, S, 1, dtype=torch.bool).expand(
                      B, 1, S, S)):
        gm, out = _masked_graph(value, keyword)
        assert attention.contiguous_masks(gm) == 0


@pytest.mark.requires_native
@pytest.mark.parametrize("queries,keys", [(64, 64), (160, 160), (161, 160),
                                          (200, 300)])
def test_cpu_attention_length_decides_who_runs_it(fresh_tc, queries, keys):
    """A CPU attention of at most MAX_CPU_ATTENTION_SCORES scores per row
    and head is compiled as products and a softmax; a longer one runs as
    PyTorch's flash kernel between tc's parts (the whole score matrix
    written out took up to 1.9x its time). Both give eager's results."""
    import tc
    from tc.support import MAX_CPU_ATTENTION_SCORES
    q = torch.randn(2, 4, queries, 32)
    k, v = torch.randn(2, 4, keys, 32), torch.randn(2, 4, keys, 32)

    def fn(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v) * 2

    torch.testing.assert_close(torch.compile(fn, backend="tc")(q, k, v),
                               fn(q, k, v))
    assert tc.counters["graphs_compiled"] == 1, dict(tc.counters)
    long = queries * keys > MAX_CPU_ATTENTION_SCORES
    assert (tc.counters["ops_eager"] > 0) == long, dict(tc.counters)
    assert tc.counters["library_attentions"] == 0


class _WrittenAttention(torch.nn.Module):
    """Attention as models without a fused path write it (Hugging Face's
    "eager" attention): products, a scale, an additive mask, a softmax
    (optionally in float32, `upcast`)."""

    def __init__(self, width=64, heads=4, upcast=False, divide=True,
                 alpha=1.0):
        super().__init__()
        self.heads, self.upcast, self.divide = heads, upcast, divide
        self.alpha = alpha
        self.qkv = torch.nn.Linear(width, 3 * width)

    def forward(self, x, mask, probs_too=False):
        b, s, w = x.shape
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, -1))
        d = q.shape[-1]
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / d ** 0.5 if self.divide else scores * d ** -0.5
        scores = (scores + mask if self.alpha == 1.0
                  else torch.add(scores, mask, alpha=self.alpha))
        probs = (torch.softmax(scores.float(), -1).to(x.dtype)
                 if self.upcast else torch.softmax(scores, -1))
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, w)
        return (out, probs) if probs_too else out


def _traced_softmaxes(module, *args):
    """The `_softmax` nodes of the ATen graph tc compiles for `module`."""
    import tc.backend.pipeline as pipeline
    found = []
    original = pipeline._library_attentions

    def spy(gm):
        found.extend(n for n in gm.graph.nodes
                     if n.target is aten._softmax.default)
        return original(gm)
    pipeline._library_attentions = spy
    try:
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(module, backend="tc")(*args)
    finally:
        pipeline._library_attentions = original
    return found


@pytest.mark.parametrize("upcast,divide", [(False, True), (True, False)])
def test_written_attention_is_found(fresh_tc, upcast, divide):
    """tc.attention_patterns finds the query, key, value, bias and scale
    of an attention written out (the scale a division or a product, the
    softmax in float32 or not); a model that also returns the
    probabilities keeps them written out."""
    from tc.attention_patterns import find
    x, mask = torch.randn(2, 16, 64), torch.randn(2, 1, 1, 16)
    module = _WrittenAttention(upcast=upcast, divide=divide).eval()
    [softmax] = _traced_softmaxes(module, x, mask)
    found = find(softmax)
    assert found is not None
    assert found.scale == pytest.approx(16 ** -0.5)
    assert found.bias is not None and found.bias.op == "placeholder"
    for operand in (found.query, found.key, found.value):
        assert tuple(operand.meta["val"].shape) == (2, 4, 16, 16)
    assert tuple(found.output.meta["val"].shape) == (2, 4, 16, 16)
    [softmax] = _traced_softmaxes(module, x, mask, True)
    assert find(softmax) is None
    # A mask scaled by the add's alpha: the bias is the scaled mask (or
    # nothing is found), never the mask itself.
    scaled = _WrittenAttention(upcast=upcast, divide=divide, alpha=2.0)
    [softmax] = _traced_softmaxes(scaled.eval(), x, mask)
    found = find(softmax)
    assert found is None or found.bias.op != "placeholder", found.bias


def _is_view(node):
    from tc.backend import partition
    return partition.is_view(node)


def _biased_graph(keys: int, device: str, expand: bool = False,
                  padded: int | None = None):
    """A memory-efficient attention of `keys` keys and a dense bias, its
    values fake tensors on `device` (no GPU needed). With `expand`, the
    bias of one image is expanded over the batch; with `padded`, it is a
    slice of one `padded` keys wide (as `scaled_dot_product_attention`
    pads one)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    graph = torch.fx.Graph()
    q, k, v, bias = (graph.placeholder(name) for name in ("q", "k", "v", "b"))
    with FakeTensorMode() as mode:
        q.meta["val"] = torch.randn(B, H, keys, D, device=device,
                                    dtype=torch.bfloat16)
        k.meta["val"] = v.meta["val"] = q.meta["val"]
        bias.meta["val"] = torch.randn(1, H, keys, padded or keys,
                                       device=device, dtype=torch.bfloat16)
    if padded:
        bias = graph.call_function(aten.slice.Tensor, (bias, -1, 0, keys))
        with mode:
            bias.meta["val"] = aten.slice.Tensor(bias.args[0].meta["val"],
                                                 -1, 0, keys)
    if expand:
        bias = graph.call_function(aten.expand.default,
                                   (bias, [B, H, keys, keys]))
        with mode:
            bias.meta["val"] = aten.expand.default(
                bias.args[0].meta["val"], [B, H, keys, keys])
    out = graph.call_function(
        aten._scaled_dot_product_efficient_attention.default,
        (q, k, v, bias, True))
    graph.output((graph.call_function(lambda t: t[0], (out,)),))
    return torch.fx.GraphModule(torch.nn.Module(), graph), out


def test_unaligned_cuda_bias_is_padded_and_sliced():
    # 197 keys (a ViT's 14 x 14 patches and a class token): strides of
    # 197 and 197 * 197 elements, which the memory-efficient kernel
    # refuses. The bias becomes a view of a padded copy, its strides
    # multiples of 8 (as scaled_dot_product_attention pads) and its values
    # the same.
    gm, node = _biased_graph(197, "cuda")
    old = node.args[3]
    assert attention.aligned_biases(gm, _is_view) == 1
    view = node.args[3]
    assert view.target is aten.slice.Tensor
    padded = view.args[0]
    assert padded.target is aten.constant_pad_nd.default
    assert padded.args == (old, [0, 3])
    val = view.meta["val"]
    assert tuple(val.shape) == (1, H, 197, 197)
    assert val.stride()[:-1] == (H * 197 * 200, 197 * 200, 200)
    assert val.stride(-1) == 1
    # The slice stays a view in eager (a tc copy would be dense again).
    assert _is_view(view) and not _is_view(padded)
    # Aligned now: a second pass leaves it.
    assert attention.aligned_biases(gm, _is_view) == 0


def test_expanded_bias_is_padded_before_the_expand():
    # A batch-1 bias expanded over the batch: padded after the expand, tc
    # would write it once per image; padded before, it stays one image's
    # bias read through a stride-0 view.
    gm, node = _biased_graph(197, "cuda", expand=True)
    old = node.args[3]
    source = old.args[0]
    assert attention.aligned_biases(gm, _is_view) == 1
    expand = node.args[3]
    assert expand.target is aten.expand.default
    view = expand.args[0]
    assert view.target is aten.slice.Tensor
    assert view.args[0].target is aten.constant_pad_nd.default
    assert view.args[0].args == (source, [0, 3])
    val = expand.meta["val"]
    assert tuple(val.shape) == (B, H, 197, 197)
    assert val.stride() == (0, 197 * 200, 200, 1)
    assert _is_view(expand) and _is_view(view)
    assert old not in gm.graph.nodes
    assert attention.aligned_biases(gm, _is_view) == 0


def test_bias_padded_by_attention_itself_is_padded_where_tc_writes_it():
    # scaled_dot_product_attention's own padding (197 keys in rows of 200,
    # a slice of a constant_pad_nd) expanded over the batch: aligned as
    # traced, but tc computes the slice, dense again (strides of 197: the
    # memory-efficient kernel raised). Padded again before the expand,
    # the slice left to eager: one image's padded bias, read through views.
    gm, node = _biased_graph(197, "cuda", expand=True, padded=200)
    old = node.args[3]
    assert old.meta["val"].stride() == (0, 197 * 200, 200, 1)
    assert attention.aligned_biases(gm, _is_view) == 1
    expand = node.args[3]
    assert expand.target is aten.expand.default
    view = expand.args[0]
    assert view.meta.get(attention.EAGER_VIEW)
    assert view.args[0].target is aten.constant_pad_nd.default
    assert view.args[0].args[0].target is aten.slice.Tensor
    assert expand.meta["val"].stride() == (0, 197 * 200, 200, 1)
    assert attention.aligned_biases(gm, _is_view) == 0


@pytest.mark.parametrize("keys, device", [(208, "cuda"), (200, "cuda"),
                                          (197, "cpu")])
def test_aligned_or_cpu_bias_stays(keys, device):
    gm, node = _biased_graph(keys, device)
    old = node.args[3]
    assert attention.aligned_biases(gm, _is_view) == 0
    assert node.args[3] is old


def _grouped_graph(bias_shape, causal=False, queries=1):
    """An attention over keys and values whose 2 heads are each repeated
    4 times (repeat_interleave as an ATen graph writes it)."""
    graph = torch.fx.Graph()
    q = graph.placeholder("q")
    q.meta["val"] = torch.randn(B, 8, queries, D)
    kv = []
    for name in "kv":
        x = graph.placeholder(name)
        x.meta["val"] = torch.randn(B, 2, S, D)
        x = _node(graph, aten.unsqueeze.default, (x, 2))
        x = _node(graph, aten.expand.default, (x, [B, 2, 4, S, D]))
        x = _node(graph, aten.clone.default, (x,))
        kv.append(_node(graph, aten.view.default, (x, [B, 8, S, D])))
    bias = None
    if bias_shape is not None:
        bias = graph.placeholder("bias")
        bias.meta["val"] = torch.randn(bias_shape)
    out = graph.call_function(
        aten._scaled_dot_product_cudnn_attention.default,
        (q, *kv, bias, False), {"is_causal": causal})
    item = graph.call_function(operator.getitem, (out, 0))
    item.meta["val"] = torch.empty(B, 8, queries, D)
    graph.output((item,))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


@pytest.mark.parametrize("bias_shape,queries", [
    (None, 1), ((1, 1, 1, S), 1), ((B, 1, 1, S), 3)])
def test_repeated_key_heads_are_read_once(monkeypatch, bias_shape, queries):
    # (The cuDNN check needs a GPU; the rewrite itself does not. A device
    # of 16 SMs: 2 x 2 (batch, key head) pairs fill it.)
    monkeypatch.setattr(attention, "_why_not_call", lambda *a: None)
    monkeypatch.setattr(attention, "_sm_count", lambda device: 16)
    gm = _grouped_graph(bias_shape, queries=queries)
    assert attention.library_attentions(gm) == 1
    nodes = list(gm.graph.nodes)
    assert not any(n.target in (aten.expand.default, aten.clone.default)
                   for n in nodes)
    fused = next(n for n in nodes if n.meta.get(attention.LIBRARY_ATTENTION))
    folded, key, value = fused.args[:3]
    assert tuple(folded.meta["val"].shape) == (B, 2, 4 * queries, D)
    assert key.op == value.op == "placeholder"
    _same_as_repeated_heads(gm, bias_shape, queries)


def _same_as_repeated_heads(gm, bias_shape, queries):
    """`gm` (a rewritten `_grouped_graph`) gives the attention over the
    repeated heads' values."""
    q = torch.randn(B, 8, queries, D)
    k, v = torch.randn(B, 2, S, D), torch.randn(B, 2, S, D)
    args = [q, k, v]
    mask = None
    if bias_shape is not None:
        mask = torch.randn(bias_shape)
        args.append(mask)
    want = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(4, 1), v.repeat_interleave(4, 1),
        attn_mask=mask)
    torch.testing.assert_close(gm(*args)[0], want)


@pytest.mark.parametrize("bias_shape,causal", [
    ((1, 8, 1, S), False), ((1, 1, 2, S), False), (None, True)])
def test_repeated_key_heads_stay_with_per_head_bias_or_causal(
        monkeypatch, bias_shape, causal):
    monkeypatch.setattr(attention, "_why_not_call", lambda *a: None)
    monkeypatch.setattr(attention, "_sm_count", lambda device: 16)
    gm = _grouped_graph(bias_shape, causal,
                        queries=2 if bias_shape == (1, 1, 2, S) else 1)
    assert attention.library_attentions(gm) == 1
    assert any(n.target is aten.expand.default for n in gm.graph.nodes)


@pytest.mark.parametrize("bias_shape", [None, (1, 1, 1, S)])
def test_grouped_heads_unfolded_when_too_few_fill_the_device(monkeypatch,
                                                            bias_shape):
    # 2 x 2 (batch, key head) pairs on 132 SMs: folded, the kernel would
    # leave most SMs idle; the query keeps its 8 heads, which read the 2
    # unrepeated key/value heads as grouped-query attention (no copy).
    monkeypatch.setattr(attention, "_why_not_call", lambda *a: None)
    monkeypatch.setattr(attention, "_sm_count", lambda device: 132)
    gm = _grouped_graph(bias_shape)
    assert attention.library_attentions(gm) == 1
    nodes = list(gm.graph.nodes)
    assert not any(n.target in (aten.expand.default, aten.clone.default)
                   for n in nodes)
    fused = next(n for n in nodes if n.meta.get(attention.LIBRARY_ATTENTION))
    query, key, value = fused.args[:3]
    assert query.op == key.op == value.op == "placeholder"
    assert fused.args[-1] is True  # enable_gqa
    _same_as_repeated_heads(gm, bias_shape, 1)
