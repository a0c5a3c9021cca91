"""What tc keeps in memory across calls: what AOTAutograd's training graphs
save for the backward, and how long the backward holds it. (What tc holds
between calls on CUDA, nothing by default and stable buffers in
reduce-overhead mode, is test_cuda.py's.)"""

import weakref

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import tc
import tc.backend
import tc.compiler
import tc.backend.segments

pytestmark = pytest.mark.requires_native


@pytest.mark.parametrize("views", [False, True])
def test_boxed_graph_frees_each_input_after_its_last_use(views):
    """AOTAutograd hands a compiled graph its inputs (the backward: the
    saved activations) in a list it owns. A graph made boxed empties the
    list and drops each input after its last use: an activation the
    backward needs only at its start is freed before the rest runs. With
    `views` the graph's outputs include views (`_OutputViews`, as Llama's
    backward): its core runs boxed too, and the views still see the inputs
    they read."""
    alive = {}

    def probe(x):
        alive["first"] = alive["ref"]() is not None
        return x

    graph = torch.fx.Graph()
    first, second = graph.placeholder("first"), graph.placeholder("second")
    early = graph.call_function(torch.ops.aten.add.Tensor, (first, 1.0))
    late = graph.call_function(probe, (graph.call_function(
        torch.ops.aten.mul.Tensor, (second, early)),))
    if views:
        graph.output((graph.call_function(torch.ops.aten.t.default, (late,)),
                      graph.call_function(torch.ops.aten.t.default,
                                          (second,))))
    else:
        graph.output((late,))
    gm = torch.fx.GraphModule({}, graph)
    if views:
        split = tc.backend.views.split_output_views(gm)
        assert split is not None and split.views
        gm = tc.backend.views.OutputViews(split, split.core)
    boxed = tc.backend.views.make_boxed(gm)
    assert boxed._boxed_call

    a, b = torch.randn(4, 3), torch.randn(4, 3)
    expected = b * (a + 1.0)
    alive["ref"] = weakref.ref(a)
    args = [a, b]
    del a
    out = boxed(args)
    if views:
        torch.testing.assert_close(out[0], expected.t())
        assert out[1].data_ptr() == b.data_ptr()
    else:
        torch.testing.assert_close(out[0], expected)
    assert args == []
    assert alive["first"] is False, "the first input outlived its last use"


def _gpt2_like_head():
    class Head(nn.Module):
        """GPT-2's last layer norm, LM head and loss, as transformers
        writes them (an op by op tanh GELU before them)."""

        def __init__(self, vocab=1001, width=64):
            super().__init__()
            self.fc = nn.Linear(width, width)
            self.ln = nn.LayerNorm(width)
            self.lm = nn.Linear(width, vocab, bias=False)

        def forward(self, h, labels):
            g = self.fc(h)
            g = 0.5 * g * (1.0 + torch.tanh(
                0.7978845608 * (g + 0.044715 * torch.pow(g, 3.0))))
            logits = self.lm(self.ln(g)).float()
            labels = F.pad(labels, (0, 1), value=-100)[..., 1:]
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   labels.reshape(-1), ignore_index=-100)
    return Head()


def test_aot_training_saves_half_logits(fresh_tc, monkeypatch):
    """A training graph AOTAutograd splits (here: made to, as attention
    does on CUDA) saves what a min-cut over bytes picks: the bf16 logits
    and their row statistics, not the f32 log-softmax (twice the bytes),
    and no GELU intermediates; nll_loss's gradient (a scatter of one class
    per row) compiles. Loss and gradients match eager's."""
    monkeypatch.setattr(tc.backend.partition, "why_not_whole",
                        lambda gm: "split for the test")
    monkeypatch.setattr(tc.backend.segments, "compile_segments",
                        lambda *args: None)  # AOTAutograd's split
    saved = []
    compile_graph = tc.backend.pipeline.compile_aten_graph

    def record(gm, example_inputs, settings):
        output = next(n for n in gm.graph.nodes if n.op == "output")
        saved.append([n.meta.get("val") for n in output.args[0]
                      if isinstance(n, torch.fx.Node)
                      and n.op != "placeholder"])
        return compile_graph(gm, example_inputs, settings)
    monkeypatch.setattr(tc.backend.pipeline, "compile_aten_graph", record)

    torch.manual_seed(0)
    model = _gpt2_like_head()
    reference = _gpt2_like_head()
    reference.load_state_dict(model.state_dict())
    h = torch.randn(4, 32, 64)
    labels = torch.randint(0, 1001, (4, 32))
    labels[0, :5] = -100
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = torch.compile(model, backend="tc")(h, labels)
        expected = reference(h, labels)
    loss.backward()
    expected.backward()
    torch.testing.assert_close(loss, expected, atol=2e-2, rtol=2e-2)
    for p, r in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, r.grad, atol=2e-2, rtol=2e-2)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    forward = saved[0]
    logits_sized = [v for v in forward if isinstance(v, torch.Tensor)
                    and v.dim() >= 2 and v.shape[-1] == 1001]
    assert [v.dtype for v in logits_sized] == [torch.bfloat16], \
        [(v.shape, v.dtype) for v in forward]
    wide = [v for v in forward if isinstance(v, torch.Tensor)
            and v.dim() == 3 and v.shape[-1] == 64]
    # The GELU's input (from which the backward recomputes the rest);
    # the default partitioner saved each of its steps as well.
    assert len(wide) <= 2, [(v.shape, v.dtype) for v in forward]


@pytest.mark.parametrize("dim", [1, 0])
def test_scatter_of_one_update_per_column_compiles_at_any_size(
        fresh_tc, dim):
    """nll_loss's gradient at GPT-2's vocabulary: scatter(zeros, 1, target,
    v) with one class per row is a select per position, compiled at any
    size (it used to count as 4096 x 50257 pairs, over the dense-scatter
    limit, and run in eager)."""
    rows, classes = 512, 50257
    target = torch.randint(0, classes, (rows, 1))
    x = torch.randn(rows, classes)
    if dim == 0:
        x, target = x.t().contiguous(), target.t().contiguous()

    def f(x, t):
        return x.scatter(dim, t, -1.0) * 3, \
            x.scatter_add(dim, t, torch.ones_like(t, dtype=x.dtype))
    got = torch.compile(f, backend="tc")(x, target)
    for g, e in zip(got, f(x, target)):
        torch.testing.assert_close(g, e)
    assert tc.counters["kernels"] > 0, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
