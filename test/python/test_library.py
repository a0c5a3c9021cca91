"""tc.library's products: a CPU graph's large `kernel.gemm`s run on
PyTorch's BLAS (the library eager calls), its small ones on OpenBLAS, each
with its epilogue kernel fused as before."""

import textwrap

import pytest
import torch
import torch.nn.functional as F

import tc
import tc.compiler
import tc.library
from compiler.test_cache import run

pytestmark = pytest.mark.requires_native


def _compiled_all(library_gemms: int) -> None:
    counters = dict(tc.counters)
    assert counters["kernels"] > 0, counters
    assert counters["ops_eager"] == 0, counters
    assert counters["fallback_graphs"] == 0, counters
    assert counters["runtime_fallbacks"] == 0, counters
    assert counters["library_gemms"] == library_gemms, counters


def _mlp(x, w1, b1, w2):
    # linear with a bias and GELU (the product's epilogue), then a product
    # with a transposed operand.
    return F.gelu(F.linear(x, w1, b1)).t() @ w2


def test_large_products_run_on_pytorchs_blas(fresh_tc):
    """An MLP's products of some million flops and a batched product with
    both operands transposed go to PyTorch's BLAS: eager's results (float32
    and float64), the epilogues fused, nothing left to eager."""
    torch.manual_seed(0)
    x, w1, b1 = torch.randn(203, 384), torch.randn(320, 384), torch.randn(320)
    w2 = torch.randn(203, 96)
    f = torch.compile(_mlp, backend="tc")
    torch.testing.assert_close(f(x, w1, b1, w2), _mlp(x, w1, b1, w2),
                               rtol=1e-4, atol=1e-3)
    _compiled_all(library_gemms=2)

    tc.reset_counters()
    a, b = torch.randn(3, 160, 96, dtype=torch.float64), torch.randn(
        3, 200, 160, dtype=torch.float64)
    g = torch.compile(lambda a, b: torch.bmm(a.transpose(1, 2),
                                             b.transpose(1, 2)) * 2 - 1,
                      backend="tc")
    expected = torch.bmm(a.transpose(1, 2), b.transpose(1, 2)) * 2 - 1
    torch.testing.assert_close(g(a, b), expected)
    _compiled_all(library_gemms=1)


def test_one_address_in_several_layouts(fresh_tc):
    """The tensors viewing a graph's buffers are made once per address,
    layout and type: the same arena addresses read as other shapes and
    dtypes by other graphs' products, one call after another, give each
    product its own operands (eager's results every time)."""
    torch.manual_seed(0)
    cases = [(torch.randn(96, 160), torch.randn(160, 128)),
             (torch.randn(128, 160), torch.randn(160, 96)),
             (torch.randn(96, 160, dtype=torch.float64),
              torch.randn(160, 128, dtype=torch.float64))]
    fns = [torch.compile(lambda x, w: torch.relu(x * 2 + 1) @ w + 3,
                         backend="tc", dynamic=False)
           for _ in cases]
    for _ in range(2):
        for f, (x, w) in zip(fns, cases):
            for values in (x, torch.randn_like(x)):
                torch.testing.assert_close(
                    f(values, w), torch.relu(values * 2 + 1) @ w + 3)
    assert tc.counters["library_gemms"] == 12, dict(tc.counters)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)


def test_small_products_stay_on_openblas(fresh_tc):
    """A product below tc::host::kLibraryGemmFlops (a call into PyTorch
    costs more than it) runs on OpenBLAS: no library call."""
    flops = tc.compiler.extension.load_runtime().LIBRARY_GEMM_FLOPS
    x, w = torch.randn(16, 32), torch.randn(48, 32)
    assert 2 * 16 * 32 * 48 < flops
    f = torch.compile(lambda x, w: torch.relu(x @ w.t()), backend="tc")
    torch.testing.assert_close(f(x, w), torch.relu(x @ w.t()))
    _compiled_all(library_gemms=0)


def test_openblas_gives_the_same_results(fresh_tc):
    """Without the library (set_cpu_gemm(None), what TC_CPU_GEMM=openblas
    does) the same graph runs every product on OpenBLAS, with eager's
    results."""
    native = tc.compiler.extension.load_native()
    torch.manual_seed(1)
    x, w1, b1 = torch.randn(203, 384), torch.randn(320, 384), torch.randn(320)
    w2 = torch.randn(203, 96)
    native.set_cpu_gemm(None)
    try:
        f = torch.compile(_mlp, backend="tc")
        torch.testing.assert_close(f(x, w1, b1, w2), _mlp(x, w1, b1, w2),
                                   rtol=1e-4, atol=1e-3)
    finally:
        native.set_cpu_gemm(tc.library.gemm)
    _compiled_all(library_gemms=0)


@pytest.mark.runtime_fallback
def test_a_failing_library_product_runs_the_graph_in_eager(fresh_tc, caplog):
    """A library product that raises fails the graph's run with its
    message: the graph runs in eager from then on, counted and logged,
    with eager's result (never a half-written buffer)."""
    native = tc.compiler.extension.load_native()
    x, w = torch.randn(256, 256), torch.randn(256, 256)

    def broken(*args):
        raise RuntimeError("no BLAS today")
    native.set_cpu_gemm(broken)
    try:
        f = torch.compile(lambda x, w: torch.tanh(x @ w), backend="tc")
        with caplog.at_level("WARNING"):
            got = f(x, w)
    finally:
        native.set_cpu_gemm(tc.library.gemm)
    torch.testing.assert_close(got, torch.tanh(x @ w))
    assert tc.counters["runtime_fallbacks"] == 1
    assert "no BLAS today" in caplog.text


CACHED_PROGRAM = textwrap.dedent("""
    import json, torch, tc
    torch.manual_seed(0)
    x, w = torch.randn(256, 384), torch.randn(384, 512)
    f = torch.compile(lambda x, w: torch.sigmoid(x @ w), backend="tc")
    torch.testing.assert_close(f(x, w), torch.sigmoid(x @ w))
    print(json.dumps(dict(tc.counters)))
""")


def test_cached_graphs_products_run_on_pytorchs_blas(tmp_path):
    """A process that runs the graph from tc's disk cache (tc._runtime,
    without the compiler) sends its large product to PyTorch's BLAS too."""
    cold = run(tmp_path, CACHED_PROGRAM)
    warm = run(tmp_path, CACHED_PROGRAM)
    assert cold["library_gemms"] == 1 and cold["disk_cache_hits"] == 0
    assert warm["library_gemms"] == 1 and warm["disk_cache_hits"] == 1
    assert warm["runtime_fallbacks"] == 0


def test_openblas_only_by_environment(tmp_path):
    """TC_CPU_GEMM=openblas keeps every product on OpenBLAS (no library
    call), with eager's results; the doctor says so."""
    program = CACHED_PROGRAM.replace(
        "print(json.dumps(dict(tc.counters)))",
        "from tc import doctor\n"
        "lines = [l for l in doctor.report()[0] if l.startswith('cpu:')]\n"
        "print(json.dumps(dict(tc.counters, doctor=lines)))")
    result = run(tmp_path, program, TC_CPU_GEMM="openblas")
    assert result["library_gemms"] == 0 and result["kernels"] > 0
    assert "all of them: TC_CPU_GEMM=openblas" in result["doctor"][0]


@pytest.mark.parametrize("training", [False, True])
def test_squeeze_excite_layers_are_products(fresh_tc, training):
    """A squeeze-and-excitation gate's layers are 1x1 convolutions of the
    pooled 1x1 maps: on the CPU each is a product tc computes (a library
    convolution cost 60-90 us for one on two cores, EfficientNet-B0 has
    32), while the convolution over the maps stays a library call; the
    gated block gives eager's values and, in training, its gradients
    (there the products come after differentiation: the gate's gradients
    stay library convolutions)."""
    torch.manual_seed(0)

    class Gated(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(16, 32, 3, padding=1)
            self.reduce = torch.nn.Conv2d(32, 8, 1)
            self.expand = torch.nn.Conv2d(8, 32, 1)

        def forward(self, x):
            y = torch.nn.functional.silu(self.conv(x))
            s = y.mean((2, 3), keepdim=True)
            gate = torch.sigmoid(self.expand(torch.relu(self.reduce(s))))
            return y * gate

    model = Gated().train(training)
    reference = Gated().train(training)
    reference.load_state_dict(model.state_dict())
    x = torch.randn(2, 16, 12, 12)
    compiled = torch.compile(model, backend="tc")
    with torch.set_grad_enabled(training):
        out = compiled(x)
        expected = reference(x)
        torch.testing.assert_close(out, expected)
        if training:
            out.square().sum().backward()
            expected.square().sum().backward()
            for got, want in zip(model.parameters(), reference.parameters()):
                torch.testing.assert_close(got.grad, want.grad)
    assert tc.counters["ops_eager"] == 0, dict(tc.counters)
    assert tc.counters["fallback_graphs"] == 0, dict(tc.counters)
    assert tc.counters["runtime_fallbacks"] == 0, dict(tc.counters)
    if not training:
        # The 3x3 convolution; the gate's two layers are products.
        assert tc.counters["library_convolutions"] == 1, dict(tc.counters)
