"""tc.rows: a graph over `[B, S, ...]` tensors whose batch and sequence
sizes are symbolic, replayed on rows `[N, ...]` with `N = B * S` (the one
symbolic size tc compiles with), and the ops that cannot be.

The backend's use of it (dynamic attention in parts, sequence means) is
in test_backend.py; these check the module on graphs traced here."""

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.source import ConstantSource
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

from tc.rows import NotRowwise, Rows, collapse, rowwise_nodes


def _symbols(*hints):
    """A fake mode whose shape environment has a symbol per hint, and
    those symbols' sizes."""
    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    symbols = [env.create_symbol(h, ConstantSource(f"d{i}"),
                                 dynamic_dim=DimDynamic.DYNAMIC)
               for i, h in enumerate(hints)]
    sizes = [env.create_symintnode(s, hint=h)
             for s, h in zip(symbols, hints)]
    return mode, symbols, sizes


def _trace(fn, shapes):
    """`fn` traced on fakes of `shapes` (symbols B = 3 and S = 5 as "B",
    "S"), with the Rows of the prefix (B, S)."""
    mode, (b, s), (bs, ss) = _symbols(3, 5)
    names = {"B": bs, "S": ss}
    with mode:
        fakes = [torch.empty(*[names.get(d, d) for d in shape])
                 for shape in shapes]
        traced = make_fx(fn)(*fakes)
    return traced, Rows((b, s))


def _on_rows(traced, rows, shapes):
    """`collapse(traced, rows)` traced on fakes of `shapes` with the rows'
    symbol N = 15 for "N"."""
    mode, _, (n,) = _symbols(15)
    with mode:
        fakes = [torch.empty(*[n if d == "N" else d for d in shape])
                 for shape in shapes]
        return make_fx(collapse(traced, rows))(*fakes)


def _layer(x, w, b):
    return F.linear(F.layer_norm(x, (8,)), w, b).relu()


def _outputs(gm):
    """The fake values `gm` returns."""
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return [n.meta["val"] for n in (out if isinstance(out, (tuple, list))
                                    else (out,))]


def test_forms_of_row_tensors():
    traced, rows = _trace(lambda x, y: (x * 2, y + 1, x.reshape(-1, 8)),
                          [("B", "S", 8), (4, 8)])
    prefixed, static, merged = _outputs(traced)
    assert rows.form(prefixed) == (2, (8,))
    assert rows.form(static) is None
    assert rows.form(merged) == (1, (8,))
    swapped, swapped_rows = _trace(lambda x: x.transpose(0, 1) * 1,
                                   [("B", "S", 8)])
    with pytest.raises(NotRowwise):
        swapped_rows.form(_outputs(swapped)[0])


def test_a_rowwise_layer_on_rows_computes_the_same():
    torch.manual_seed(0)
    traced, rows = _trace(_layer, [("B", "S", 8), (16, 8), (16,)])
    on_rows = _on_rows(traced, rows, [("N", 8), (16, 8), (16,)])
    shape = tuple(_outputs(on_rows)[0].shape)
    assert isinstance(shape[0], torch.SymInt) and shape[1:] == (16,), shape
    x, w, b = torch.randn(3, 5, 8), torch.randn(16, 8), torch.randn(16)
    expected = _layer(x, w, b)
    got = on_rows(x.reshape(15, 8), w, b)
    got = got[0] if isinstance(got, (tuple, list)) else got
    torch.testing.assert_close(got.reshape(3, 5, 16), expected)


def test_a_softmax_over_the_sequence_is_not_rowwise():
    def over_sequence(x, w, b):
        return torch.softmax(_layer(x, w, b), dim=1)

    traced, rows = _trace(over_sequence, [("B", "S", 8), (16, 8), (16,)])
    with pytest.raises(NotRowwise):
        _on_rows(traced, rows, [("N", 8), (16, 8), (16,)])
    mode, _, (n,) = _symbols(15)
    with mode:
        fakes = [torch.empty(n, 8), torch.empty(16, 8), torch.empty(16)]
        reasons = rowwise_nodes(traced, rows, fakes)
    softmax = [node for node in reasons if "softmax" in str(node.target)]
    assert softmax, reasons
    assert not [node for node in reasons if "layer_norm" in str(node.target)
                or "addmm" in str(node.target)], reasons
