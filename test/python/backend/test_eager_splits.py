"""tc.backend.eager_splits: a tensor's parts for eager attention, split in
eager, their gradients joined without a copy where they are one tensor's
parts already."""

import operator

import torch
import torch.fx

from tc.backend import eager_splits

aten = torch.ops.aten


def _qkv(requires_grad=True):
    # [3, batch, heads, length, dim] as a permuted view of one GEMM's
    # [batch, length, 3, heads, dim] result, as a transformer splits it.
    qkv = torch.randn(2, 5, 3, 4, 8).permute(2, 0, 3, 1, 4)
    return qkv.detach().requires_grad_(requires_grad)


def test_parts_of_one_tensor_join_without_a_copy():
    # The memory-efficient attention's backward writes the three
    # gradients into one [batch, length, 3, heads, dim] buffer.
    x = _qkv()
    q, k, v = eager_splits.split(x, 0)
    for part, want in zip((q, k, v), x.unbind(0)):
        assert part.data_ptr() == want.data_ptr()
        assert part.stride() == want.stride()
    chunk = torch.randn(2, 5, 3, 4, 8)
    grads = [chunk.select(2, i).transpose(1, 2) for i in range(3)]
    (joined,) = torch.autograd.grad((q, k, v), (x,), grads)
    torch.testing.assert_close(joined, torch.stack(grads), rtol=0, atol=0)
    assert joined.untyped_storage().data_ptr() == \
        chunk.untyped_storage().data_ptr()


def test_separate_gradients_join_in_the_forward_layout():
    # Gradients of three tensors (cuDNN's, the CPU's): joined in the
    # forward tensor's (dense, permuted) layout, which the permute before
    # the split turns back into a contiguous one.
    x = _qkv()
    parts = eager_splits.split(x, 0)
    grads = [torch.randn(2, 4, 5, 8) for _ in range(3)]
    (joined,) = torch.autograd.grad(parts, (x,), grads)
    torch.testing.assert_close(joined, torch.stack(grads), rtol=0, atol=0)
    assert joined.stride() == x.stride()
    assert joined.permute(1, 3, 0, 2, 4).is_contiguous()


def test_missing_gradient_is_zero():
    x = _qkv()
    q, k, v = eager_splits.split(x, 0)
    grad = torch.randn(2, 4, 5, 8)
    (joined,) = torch.autograd.grad((q * grad).sum(), (x,))
    torch.testing.assert_close(joined[0], grad, rtol=0, atol=0)
    torch.testing.assert_close(joined[1], torch.zeros_like(grad), rtol=0,
                               atol=0)


def test_overlapping_or_shuffled_parts_are_not_taken_as_one():
    chunk = torch.randn(2, 5, 3, 4, 8)
    parts = [chunk.select(2, i) for i in (0, 2, 1)]
    assert eager_splits._parts_of_one(parts, 0) is None
    same = [chunk.select(2, 0)] * 3
    assert eager_splits._parts_of_one(same, 0) is None
    assert eager_splits._parts_of_one([chunk[0], None], 0) is None


def _eager(*args):
    return args[0]


def _graph(parts: int, reader):
    """x [3, 2, 4] split along 0 into `parts` of its 3 parts (slice and
    squeeze each), each read by `reader`."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.randn(3, 2, 4)
    outs = []
    for i in range(parts):
        s = graph.call_function(aten.slice.Tensor, (x, 0, i, i + 1))
        s.meta["val"] = x.meta["val"][i:i + 1]
        q = graph.call_function(aten.squeeze.dims, (s, [0]))
        q.meta["val"] = s.meta["val"].squeeze(0)
        outs.append(graph.call_function(reader, (q,)))
    graph.output(tuple(outs))
    return graph


def test_a_whole_split_read_by_eager_ops_becomes_one_call():
    graph = _graph(3, _eager)
    assert eager_splits.rewrite(graph, (_eager,)) == 1
    targets = [n.target for n in graph.nodes if n.op == "call_function"]
    assert targets.count(eager_splits.split) == 1
    assert aten.slice.Tensor not in targets
    assert aten.squeeze.dims not in targets
    assert targets.count(operator.getitem) == 3
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    x = torch.randn(3, 2, 4)
    for got, want in zip(gm(x), x.unbind(0)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_partial_splits_and_compute_readers_stay():
    assert eager_splits.rewrite(_graph(2, _eager), (_eager,)) == 0
    assert eager_splits.rewrite(_graph(3, torch.tanh), (_eager,)) == 0
