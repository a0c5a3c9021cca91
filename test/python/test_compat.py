"""tc.compat: the torch releases tc supports, and each PyTorch interface it
uses where a torch has it, with the fallback it takes where one does not
(run here by hiding the interface)."""

import pytest
import torch

import tc
import tc.backend
import tc.precompile
from tc import compat

pytestmark = pytest.mark.requires_native


@pytest.mark.parametrize("version, supported", [
    ("2.10.2", False), ("2.11.0+cu130", True), ("2.13.0+cpu", True),
    ("2.14.1", True), ("2.14.2", False), ("2.15.0.dev20261101", False),
    ("3.0.0", False)])
def test_supported_releases(version, supported):
    assert compat.torch_supported(version) is supported


def test_this_torch_is_supported_and_has_every_interface():
    """CI runs on 2.13 and 2.14.1, the GPU machine on 2.11: each has every
    interface tc probes for (a new torch that drops one fails here, not
    silently slower)."""
    assert compat.torch_supported(), torch.__version__
    missing = [name for name, has in compat.features().items()
               if not has and (torch.cuda.is_available()
                               or not compat.FEATURES[name].gpu)]
    assert not missing, missing


@pytest.fixture
def without(monkeypatch):
    """Hides FEATURES[name] from tc, as on a torch without it; at the end,
    checks that tc asked for it (the fallback ran)."""
    asked = []
    hidden = []

    def hide(name):
        assert name in compat.FEATURES
        hidden.append(name)
        real = compat.get

        def get(n):
            asked.append(n)
            return None if n == name else real(n)
        monkeypatch.setattr(compat, "get", get)
    yield hide
    torch._dynamo.reset()
    for name in hidden:
        assert name in asked, f"tc never asked for {name}"


def _autocast_region(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
    return torch.relu(y).float() * 2


@pytest.mark.parametrize("hidden", [False, True])
def test_autocast_region_without_its_markers_goes_through_aot_autograd(
        without, hidden):
    if hidden:
        without("autocast_markers")
    torch.manual_seed(0)
    x, w = torch.randn(32, 48), torch.randn(48, 16)
    torch._dynamo.reset()
    tc.reset_counters()
    got = torch.compile(_autocast_region, backend="tc")(x, w)
    torch.testing.assert_close(got, _autocast_region(x, w))
    assert tc.counters["aten_aot_autograd" if hidden else "aten_one_pass"] \
        == 1, dict(tc.counters)
    assert tc.counters["ops_compiled"] > 0
    assert tc.counters["runtime_fallbacks"] == 0


def test_training_without_min_cut_partition(without):
    """AOTAutograd's default partition (a no_grad region on a parameter
    sends the graph to AOTAutograd): eager's gradient."""
    without("min_cut_partition")
    torch.manual_seed(0)
    w = torch.randn(32, 8, requires_grad=True)

    def f(x):
        with torch.no_grad():
            scale = w.abs().amax()
        return (torch.tanh(x @ w) / scale).sum()

    x = torch.randn(16, 32)
    torch._dynamo.reset()
    tc.reset_counters()
    (grad,) = torch.autograd.grad(torch.compile(f, backend="tc")(x), w)
    (expected,) = torch.autograd.grad(f(x), w)
    torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-6)
    assert tc.counters["aten_aot_autograd"] == 1, dict(tc.counters)
    assert tc.counters["ops_compiled"] > 0
    assert tc.counters["runtime_fallbacks"] == 0


def test_decomposition_table_without_preserved_cia_ops(without):
    """Which composite ops the table covers is read from the table: the
    same answers for the ops tc asks about."""
    from tc.decompositions import DecomposedOps
    table = DecomposedOps()
    names = ["aten.gelu.default", "aten.linear.default", "aten.silu.default"]
    before = [table._decomposes(n) for n in names]
    without("preserved_cia_ops")
    assert [DecomposedOps()._decomposes(n) for n in names] == before


def test_precompile_without_backend_artifacts(without):
    tc.precompile._artifact_class.cache_clear()
    try:
        without("precompile_cache")
        assert tc.precompile._artifact_class() is None
        assert not tc.precompile.enabled()
    finally:
        tc.precompile._artifact_class.cache_clear()


def test_complex_constants_without_fx_builtin_hook(without):
    without("fx_custom_builtin")
    tc.backend.common._spell_complex_infinities()  # nothing to register


@pytest.mark.parametrize("hidden", [False, True])
def test_graph_modules_with_and_without_lazy_code(without, hidden):
    """tc's rewritten graphs write their Python code when first needed
    (where torch has lazy graph modules) or at once: the same results, and
    a lazy one's code is there when asked for."""
    if hidden:
        without("lazy_graph_module")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                              torch.nn.LayerNorm(32)).eval()
    x = torch.randn(8, 16)
    torch._dynamo.reset()
    tc.reset_counters()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(net, backend="tc")(x),
                                   net(x))
    assert tc.counters["aten_direct"] == 1, dict(tc.counters)
    assert tc.counters["ops_compiled"] > 0
    gm = compat.graph_module(net, torch.fx.symbolic_trace(net).graph)
    lazy = compat.get("lazy_graph_module")
    assert (lazy is not None and isinstance(gm, lazy)) is not hidden
    assert "forward" in gm.code and "getattr(self, \"2\")" in gm.code
    torch.testing.assert_close(gm(x), net(x))
