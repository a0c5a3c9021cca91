"""tc.layouts: graphs that take and return eager's layouts without copies
(the CUDA-only rewrites are checked on fake CUDA tensors and run on the
CPU; test_cuda_sizes runs them on the GPU)."""

from typing import Callable

import pytest
import torch
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import tc.backend
import tc.compiler
from tc import layouts

native = tc.compiler.extension.load_native()
needs_native = pytest.mark.skipif(native is None,
                                  reason="tc native extension not built")


def _logits(x, w):
    return (x @ w.t()).view(4, -1, w.shape[0])


def _fake_cuda_graph(fn, *shapes, dtype=torch.bfloat16):
    with FakeTensorMode():
        args = [torch.empty(s, device="cuda", dtype=dtype) for s in shapes]
        return make_fx(fn)(*args)


def _padding(pads):
    """A stand-in for the native decision returning `pads`, and its calls."""
    calls = []

    def padding(*args):
        calls.append(args)
        return pads
    return calls, padding


@needs_native
def test_native_padding_is_the_pass_choice():
    """The one decision, in C++ (tc-align-half-products): GPT-2's LM head
    pads its 50257 columns by 7; an aligned or a small product is left."""
    m, k = 4096, 768
    pad = native.half_product_padding
    assert pad(m, k, 50257, False, True, 2, m * 50257, m * k,
               k * 50257) == (0, 0, 7)
    assert pad(m, k, 50264, False, True, 2, m * 50264, m * k,
               k * 50264) is None
    assert pad(8, 16, 17, False, True, 2, 8 * 17, 8 * 16, 16 * 17) is None
    # Electra's LM head (k = 128): the slice's copy would cost more than
    # the aligned kernel saves; returned as a view, the pads pay.
    m, k, n = 32768, 128, 30522
    args = (m, k, n, False, True, 2, m * n, m * k, k * n)
    assert pad(*args) is None
    assert pad(*args, True) == (0, 0, 6)


def test_returned_product_is_padded_and_viewed():
    """A returned half-precision product on CUDA becomes a view of a
    product with padded columns (strides as Inductor returns them); the
    graph computes the same values."""
    n = 1001
    gm = _fake_cuda_graph(_logits, (1024, 768), (n, 768))
    calls, padding = _padding((0, 0, 7))
    assert layouts.pad_returned_products(gm, padding,
                                         tc.backend.views.is_output_view)
    assert calls == [(1024, 768, n, False, True, 2, 1024 * n, 1024 * 768,
                      768 * n, True)]
    targets = [node.target for node in gm.graph.nodes
               if node.op == "call_function"]
    assert torch.ops.aten.constant_pad_nd.default in targets
    # No node left without a use (a dead transpose would run in eager).
    assert all(node.users for node in gm.graph.nodes
               if node.op == "call_function")
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    assert out.meta["val"].stride() == (256 * (n + 7), n + 7, 1)
    split = tc.backend.views.split_output_views(gm)
    assert split is not None
    (core_out,) = split.core_outputs
    assert core_out.target is torch.ops.aten.mm.default
    assert tuple(core_out.meta["val"].shape) == (1024, n + 7)

    # The rewritten graph on real (CPU) tensors: eager's values.
    x = torch.randn(1024, 768, dtype=torch.bfloat16)
    w = torch.randn(n, 768, dtype=torch.bfloat16)
    got = gm(x, w)
    assert got.stride() == (256 * (n + 7), n + 7, 1)
    torch.testing.assert_close(got, _logits(x, w))


def _rows_by_weight(n: int, bias: bool) -> torch.fx.GraphModule:
    """What the backend's one-pass trace keeps of `F.linear` in inference
    on fake bf16 CUDA tensors: `aten.matmul` of [4, 256, 768] rows by a
    transposed [n, 768] weight, then (with `bias`) `add` of an [n] bias."""
    graph = torch.fx.Graph()
    x, w = graph.placeholder("x"), graph.placeholder("w")
    b = graph.placeholder("b") if bias else None
    t = graph.call_function(torch.ops.aten.permute.default, (w, [1, 0]))
    p = graph.call_function(torch.ops.aten.matmul.default, (x, t))
    out = graph.call_function(torch.ops.aten.add.Tensor, (p, b)) if bias \
        else p
    graph.output((out,))
    with FakeTensorMode():
        def empty(*shape):
            return torch.empty(*shape, device="cuda", dtype=torch.bfloat16)
        x.meta["val"], w.meta["val"] = empty(4, 256, 768), empty(n, 768)
        t.meta["val"] = w.meta["val"].permute(1, 0)
        p.meta["val"] = x.meta["val"] @ t.meta["val"]
        if bias:
            b.meta["val"] = empty(n)
            out.meta["val"] = p.meta["val"] + b.meta["val"]
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def test_returned_matmul_of_rows_is_padded():
    """`aten.matmul` of a batch of rows by a transposed weight (what the
    backend's one-pass trace keeps of `F.linear` in inference, GPT-2's LM
    head) is padded as `mm` is."""
    n = 1001
    gm = _rows_by_weight(n, bias=False)
    calls, padding = _padding((0, 0, 7))
    assert layouts.pad_returned_products(gm, padding,
                                         tc.backend.views.is_output_view)
    assert calls == [(1024, 768, n, False, True, 2, 1024 * n, 1024 * 768,
                      768 * n, True)]
    xs = torch.randn(4, 256, 768, dtype=torch.bfloat16)
    ws = torch.randn(n, 768, dtype=torch.bfloat16)
    (got,) = gm(xs, ws)
    assert got.stride() == (256 * (n + 7), n + 7, 1)
    torch.testing.assert_close(got, xs @ ws.t())


def _check_padded_linear(gm: torch.fx.GraphModule, n: int,
                         reference: Callable) -> None:
    """`gm`, a Linear of [4, 256, 768] rows by an [n, 768] weight and an
    [n] bias rewritten with 7 padded columns: the weight and the bias
    padded, a view of the padded result returned, `reference`'s values
    (eager's for the graph before the rewrite)."""
    pads = [node for node in gm.graph.nodes
            if node.target is torch.ops.aten.constant_pad_nd.default]
    assert len(pads) == 2  # the weight's rows and the bias
    xs = torch.randn(4, 256, 768, dtype=torch.bfloat16)
    ws = torch.randn(n, 768, dtype=torch.bfloat16)
    bs = torch.randn(n, dtype=torch.bfloat16)
    (got,) = gm(xs, ws, bs)
    assert got.stride() == (256 * (n + 7), n + 7, 1)
    torch.testing.assert_close(got, reference(xs, ws, bs))


def test_returned_matmul_plus_bias_is_padded():
    """A masked LM head (`F.linear` with a bias: `matmul` then `add` of the
    bias, LayoutLM's and BERT's): the bias is padded with zeros and added
    to the padded product, and the graph returns a view of that sum, so no
    copy slices the logits."""
    n = 1001
    gm = _rows_by_weight(n, bias=True)
    calls, padding = _padding((0, 0, 7))
    assert layouts.pad_returned_products(gm, padding,
                                         tc.backend.views.is_output_view)
    _check_padded_linear(gm, n, lambda x, w, b: x @ w.t() + b)


def test_returned_addmm_is_padded():
    """`addmm` of a Linear with a bias between views of its rows (what the
    direct import writes of an LM head with a bias, Electra's and
    ConvBERT's): the weight and the bias are padded, `addmm` adds the
    padded bias, and the graph returns a view of its result."""
    n = 1001
    graph = torch.fx.Graph()
    x, w, b = (graph.placeholder(name) for name in ("x", "w", "b"))
    rows = graph.call_function(torch.ops.aten.view.default, (x, [-1, 768]))
    t = graph.call_function(torch.ops.aten.permute.default, (w, [1, 0]))
    p = graph.call_function(torch.ops.aten.addmm.default, (b, rows, t))
    out = graph.call_function(torch.ops.aten.view.default, (p, [4, 256, n]))
    graph.output((out,))
    with FakeTensorMode():
        def empty(*shape):
            return torch.empty(*shape, device="cuda", dtype=torch.bfloat16)
        x.meta["val"], w.meta["val"], b.meta["val"] = (
            empty(4, 256, 768), empty(n, 768), empty(n))
        for node in (rows, t, p, out):
            args = torch.fx.node.map_arg(node.args, lambda a: a.meta["val"])
            node.meta["val"] = node.target(*args)
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    calls, padding = _padding((0, 0, 7))
    assert layouts.pad_returned_products(gm, padding,
                                         tc.backend.views.is_output_view)
    assert calls == [(1024, 768, n, False, True, 2, 1024 * n, 1024 * 768,
                      768 * n, True)]
    _check_padded_linear(gm, n, torch.nn.functional.linear)


def test_products_that_stay():
    """Not rewritten: a product something else reads, one on the CPU, an
    f32 one, and one the native decision leaves."""
    def read(x, w):
        p = x @ w.t()
        return p, p.sum()

    def never(*args):
        raise AssertionError("asked for a product it must not pad")
    cases = [_fake_cuda_graph(read, (64, 32), (33, 32)),
             _fake_cuda_graph(_logits, (64, 32), (33, 32),
                              dtype=torch.float32)]
    with FakeTensorMode():
        args = [torch.empty(64, 32, dtype=torch.bfloat16),
                torch.empty(33, 32, dtype=torch.bfloat16)]
        cases.append(make_fx(_logits)(*args))
    for gm in cases:
        assert not layouts.pad_returned_products(
            gm, never, tc.backend.views.is_output_view)
    gm = _fake_cuda_graph(_logits, (64, 32), (33, 32))
    assert not layouts.pad_returned_products(
        gm, lambda *a: None, tc.backend.views.is_output_view)


def test_output_views_read_flags_early_through_the_core():
    """A graph returning views (an LM head's logits) and an index check's
    flag: the flag's place among the graph's outputs is mapped to its
    place among the core's, where the core reads flags early (CUDA: the
    call returns before the whole graph has run); a flag the core does
    not compute is not read early."""
    def f(x, i):
        return (x @ x).view(-1), i.sum() > 3, x.t()

    gm = make_fx(f)(torch.randn(4, 4), torch.arange(3))
    split = tc.backend.views.split_output_views(gm)
    assert split is not None
    asked = []

    class Core:
        def __call__(self, *args):
            raise AssertionError("not run here")

        def read_flags_early(self, outputs):
            asked.append(outputs)
            return True

    viewed = tc.backend.views.OutputViews(split, Core())
    flag = split.output[1]
    assert viewed.read_flags_early([1])
    assert asked == [[split.core_outputs.index(flag)]]
    assert not viewed.read_flags_early([2])  # a view of an input
    assert not tc.backend.views.OutputViews(
        split, lambda *a: a).read_flags_early([1])  # a core without it


@needs_native
@pytest.mark.parametrize("equation, shapes, kernels", [
    # XLNet's output projection: the weight [h, n, d] read in place
    # (transposed), the attention already in its order.
    ("ibnd,hnd->ibh", [(16, 2, 4, 8), (32, 4, 8)], 0),
    # The attention in another order: one copy, of it, not of the weight.
    ("bnid,hnd->ibh", [(2, 4, 16, 8), (32, 4, 8)], 1),
])
def test_einsum_contracts_in_the_weights_order(equation, shapes, kernels,
                                               fresh_tc, compiled_functions):
    """An einsum contracting several dimensions merges them in the
    weight's memory order (tc-order-contractions), whatever the order of
    their labels: no copy of the weight at each call, eager's values."""
    torch.manual_seed(0)
    args = [torch.randn(*shape) for shape in shapes]

    def f(a, w):
        return torch.einsum(equation, a, w)

    with torch.no_grad():
        got = torch.compile(f, backend="tc")(*args)
    torch.testing.assert_close(got, f(*args), rtol=1e-4, atol=1e-4)
    (function,) = [f for f in compiled_functions()
                   if [tuple(shape) for shape, _ in f.imported.input_specs]
                   == [tuple(shape) for shape in shapes]]
    assert function.num_kernels == kernels, function.num_kernels
