"""tc's cost model (tc/Conversion/FXToPrim/CostModel.h through tc.cost) and
the algorithms it judges: an op whose tc code would be slower than eager's
kernel runs in eager with a `fallbacks` line that says so; one it keeps is
compiled and gives eager's results. Sorts are checked against eager's
values and indices (stable order, ties, NaN), on the CPU and on a CUDA
device where there is one."""

import logging

import pytest
import torch

import tc
import tc.compiler
from tc import cost

pytestmark = pytest.mark.requires_native


@pytest.fixture(autouse=True, params=[
    "cpu", pytest.param("cuda", marks=pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a CUDA device"))])
def device(request):
    torch.set_default_device(request.param)
    try:
        yield request.param
    finally:
        torch.set_default_device(None)


def _query(op, shapes, ints, target):
    kinds = {name: "f" for name in shapes}
    runtime = tc.compiler.extension.load_runtime()
    return runtime.op_cost(op, shapes, kinds, ints, target, 4)


def _compiled_fully() -> bool:
    """tc ran the whole graph: its kernels or its library calls (a cuDNN
    convolution in tc's plan), no op in eager, no fallback or rerun."""
    c = tc.counters
    return (c["graphs_compiled"] > 0 and c["ops_eager"] == 0
            and c["fallback_graphs"] == 0
            and c["runtime_fallbacks"] == 0 and c["guard_reruns"] == 0)


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _run(fn, *args):
    """fn through tc (counters reset) and the `fallbacks` lines it logged."""
    torch._dynamo.reset()
    tc.reset_counters()
    lines = _Lines()
    logger = logging.getLogger("tc.fallbacks")
    logger.addHandler(lines)
    tc.set_logs("fallbacks")
    try:
        out = torch.compile(fn, backend="tc", dynamic=False)(*args)
    finally:
        tc.set_logs()
        logger.removeHandler(lines)
    return out, lines.lines


def test_model_prefers_eager_as_work_grows():
    """Per target, a dense sort's estimate grows with n^2 per row where
    eager's grows with n log n: small rows stay with tc, long ones go to
    eager, and past the decomposition's cap the reason says so."""
    for target in ("cpu", "gpu"):
        small = _query("aten::sort", {"self": [8, 16], "result": [8, 16]},
                       {"dim": -1}, target)
        tc_s, eager_s, algorithm, reason, cap = small
        assert tc_s < eager_s and reason == "" and cap == ""
        assert "sort" in algorithm
        long = _query("aten::sort", {"self": [256, 4096],
                                     "result": [256, 4096]}, {"dim": -1},
                      target)
        assert long[0] > long[1] and long[4] != ""
        assert "more than tc's decompositions take" in long[3]
    # An op it has no model for: None (its tc code is a pass over its data).
    assert _query("aten::add.Tensor", {"self": [4], "result": [4]}, {},
                  "cpu") is None


def test_cpu_float_atomics_are_slower_than_eager_scatter():
    """Float scatter-adds on the CPU are compare-and-swap loops: the model
    sends them to eager there and keeps them on GPUs."""
    shapes = {"self": [65536, 64], "values": [200000, 64],
              "indices.0": [200000], "result": [65536, 64]}
    kinds = {"self": "f", "values": "f", "indices.0": "i", "result": "f"}
    runtime = tc.compiler.extension.load_runtime()
    cpu = runtime.op_cost("aten::index_put", shapes, kinds,
                          {"accumulate": 1}, "cpu", 4)
    gpu = runtime.op_cost("aten::index_put", shapes, kinds,
                          {"accumulate": 1}, "gpu", 4)
    assert "cost model" in cpu[3]
    assert gpu[3] == ""


def test_slow_scan_runs_in_eager_with_the_models_reason():
    """A cumsum over 1024-long rows: tc's dense scan is O(n^2) per row
    where eager's is O(n), so the model leaves it to eager and says so;
    the result is eager's."""
    x = torch.randn(16, 1024)
    out, lines = _run(lambda x: torch.cumsum(x, 1), x)
    torch.testing.assert_close(out, torch.cumsum(x, 1))
    assert tc.counters["ops_eager"] == 1
    assert any("cost model" in line for line in lines), lines


def test_model_off_compiles_what_the_decomposition_takes(monkeypatch):
    """TC_COST_MODEL=0 (for measuring the model) keeps the scan with tc:
    the model, not a missing lowering, sent it to eager above."""
    monkeypatch.setenv("TC_COST_MODEL", "0")
    x = torch.randn(16, 1024)
    out, _ = _run(lambda x: torch.cumsum(x, 1), x)
    torch.testing.assert_close(out, torch.cumsum(x, 1))
    assert _compiled_fully()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16,
                                   torch.int64])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_eager_values_and_stable_indices(dtype, descending):
    """tc's sort (places, then a scatter of positions and a gather) on rows
    with many ties and, for floats, NaN and -0.0: eager's stable values
    and indices, along either dimension."""
    torch.manual_seed(0)
    x = torch.randint(-6, 6, (9, 33)).to(dtype)
    if dtype.is_floating_point:
        x = x / 4
        x[0, 3] = x[4, 7] = float("nan")
        x[2, 5] = -0.0
    for dim in (1, 0):
        def fn(x, dim=dim):
            return torch.sort(x, dim=dim, descending=descending,
                              stable=True)
        (values, indices), _ = _run(fn, x)
        assert _compiled_fully()
        expected = fn(x)
        torch.testing.assert_close(values, expected.values, equal_nan=True)
        assert torch.equal(indices, expected.indices)
        # -0.0 keeps its sign (values are gathered, not summed).
        assert torch.equal(values.signbit(), expected.values.signbit())


def test_topk_and_kthvalue_match_eager():
    torch.manual_seed(1)
    x = torch.randn(12, 40)
    (values, indices), _ = _run(lambda x: torch.topk(x, 5, dim=1), x)
    assert _compiled_fully()
    expected = torch.topk(x, 5, dim=1)
    torch.testing.assert_close(values, expected.values)
    assert torch.equal(indices, expected.indices)
    (values, indices), _ = _run(lambda x: torch.kthvalue(x, 7, dim=0), x)
    expected = torch.kthvalue(x, 7, dim=0)
    torch.testing.assert_close(values, expected.values)
    assert torch.equal(indices, expected.indices)


def test_node_estimate_reads_a_traced_node():
    """tc.cost.node_estimate binds an FX node's arguments by its schema."""
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(lambda x: torch.sort(x, 1), tracing_mode="fake")(
        torch.randn(4, 2048))
    found = [cost.node_estimate(n) for n in graph.graph.nodes]
    found = [f for f in found if f]
    assert len(found) == 1 and "sort" in found[0][2]


@pytest.mark.parametrize("transposed", [False, True])
def test_small_grouped_convolution_is_compiled(transposed):
    """Grouped convolutions: on the CPU tc writes them as products batched
    over the groups (on GPUs cuDNN takes them); small ones are compiled and
    give eager's values, transposed too."""
    import torch.nn.functional as F

    torch.manual_seed(2)
    if transposed:
        x, w = torch.randn(2, 4, 5, 5), torch.randn(4, 3, 3, 3)

        def fn(x, w):
            return F.conv_transpose2d(x, w, groups=2, stride=2, padding=1,
                                      output_padding=1)
    else:
        x, w = torch.randn(2, 6, 7, 7), torch.randn(9, 2, 3, 3)

        def fn(x, w):
            return F.conv2d(x, w, groups=3, padding=1, stride=(1, 2))
    out, _ = _run(fn, x, w)
    assert _compiled_fully(), dict(tc.counters)
    torch.testing.assert_close(out, fn(x, w))


def test_large_grouped_convolution_is_a_library_call(device):
    """A ResNeXt-sized grouped convolution: on the CPU tc's graph calls
    PyTorch's kernel (tc.library; tc's batched products were 6x slower),
    no op is left to eager (GPUs' cuDNN calls: test_cuda)."""
    if device != "cpu":
        pytest.skip("GPUs run convolutions as cuDNN's")
    import torch.nn.functional as F

    x, w = torch.randn(2, 256, 28, 28), torch.randn(256, 8, 3, 3)
    out, _ = _run(lambda x, w: F.conv2d(x, w, groups=32, padding=1), x, w)
    torch.testing.assert_close(out, F.conv2d(x, w, groups=32, padding=1))
    assert _compiled_fully(), dict(tc.counters)
    assert tc.counters["library_convolutions"] == 1


def test_searchsorted_with_a_sorter():
    torch.manual_seed(3)
    seq = torch.randn(3, 10)
    sorter = torch.argsort(seq, -1)
    values = torch.randn(3, 7)

    def fn(seq, values, sorter):
        return torch.searchsorted(seq, values, sorter=sorter, right=True)
    out, _ = _run(fn, seq, values, sorter)
    assert _compiled_fully()
    assert torch.equal(out, fn(seq, values, sorter))


def test_gpu_scan_along_contiguous_rows_has_no_row_latency():
    """On a GPU, a cumsum along the innermost dimension is a block's
    reduction per element (every row contiguous): its estimate is the
    steps alone, where one along a strided dimension also pays a thread's
    serial walk (30 ns an element) of its chunk and of the chunks' totals
    (a row of 512 is blocked: 32 chunks of 16, 48 elements walked)."""
    rows = _query("aten::cumsum", {"self": [4, 512], "result": [4, 512]},
                  {"dim": 1}, "gpu")
    strided = _query("aten::cumsum", {"self": [512, 4], "result": [512, 4]},
                     {"dim": 0}, "gpu")
    assert rows[0] < 1e-6 < 48 * 30e-9 <= strided[0] < 2e-6, (rows, strided)
    assert rows[1] == strided[1]
    assert "blocked scan" in rows[2]


def test_long_scans_are_blocked():
    """A cumsum of a long row is blocked (limits::scanChunk): about
    2 n^(3/2) steps a row where the dense scan takes n^2, so a position
    count over 32 x 512 tokens (RoBERTa's) stays in tc's graph on a GPU
    (a split costs more than eager's kernel saves); a short row is dense."""
    long = _query("aten::cumsum", {"self": [32, 512], "result": [32, 512]},
                  {"dim": 1}, "gpu")
    assert long[0] < long[1] and not long[3], long
    short = _query("aten::cumsum", {"self": [32, 64], "result": [32, 64]},
                   {"dim": 1}, "gpu")
    assert "dense scan" in short[2], short
