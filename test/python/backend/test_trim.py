"""tc.backend.partition.trim: views, and with `slices` slices and splits,
that only feed eager code leave the partition, which returns the tensor
they view instead of a copy of each piece."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from tc.backend import partition

aten = torch.ops.aten


def _graph(f):
    gm = make_fx(f)(torch.randn(6, 8), torch.randn(8, 12))
    by_target: dict = {}
    for node in gm.graph.nodes:
        by_target.setdefault(node.target, []).append(node)
    return gm, by_target


def _pieces(x, w):
    return torch.mm(x, w).split([4, 4, 4], dim=1)


def test_split_feeding_only_eager_code_leaves_the_partition():
    # The partition is the product and its split; the pieces feed eager
    # code (cumsum, standing for attention).
    def f(x, w):
        q, k, v = _pieces(x, w)
        return (q.cumsum(0) + k.cumsum(0) + v.cumsum(0)).sum()
    gm, nodes = _graph(f)
    split = nodes[aten.split_with_sizes.default][0]
    members = {nodes[aten.mm.default][0], split, *split.users}
    kept = set(members)
    partition.trim(kept)
    assert kept == members  # without `slices`: pieces copied out
    partition.trim(members, slices=True)
    assert members == {nodes[aten.mm.default][0]}


def test_split_with_a_piece_computed_inside_stays_whole():
    # q feeds the partition's own tanh: the partition cannot return the
    # split itself, so every piece stays.
    def f(x, w):
        q, k, v = _pieces(x, w)
        return (torch.tanh(q).cumsum(0) + k.cumsum(0) + v.cumsum(0)).sum()
    gm, nodes = _graph(f)
    split = nodes[aten.split_with_sizes.default][0]
    members = {nodes[aten.mm.default][0], split, *split.users,
               nodes[aten.tanh.default][0]}
    want = set(members)
    partition.trim(members, slices=True)
    assert members == want


def test_slices_that_are_outputs_stay_copies():
    # A slice returned (through a view) stays the partition's copy: views
    # of one tensor returned would alias each other where the copies did
    # not. The slice feeding eager code leaves.
    def f(x, w):
        y = torch.mm(x, w)
        return y[:, :4].t(), y[:, 4:].cumsum(0)
    gm, nodes = _graph(f)
    returned, eager = nodes[aten.slice.Tensor]
    members = {nodes[aten.mm.default][0], returned, eager}
    partition.trim(members, slices=True)
    assert members == {nodes[aten.mm.default][0], returned}
