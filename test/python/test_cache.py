"""Compiled graphs are cached on disk under TC_CACHE_DIR, across processes."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.requires_native

PROGRAM = textwrap.dedent("""
    import json, torch, tc
    torch.manual_seed(0)
    def f(x, y):
        return torch.softmax(torch.sin(x) + y, dim=-1) * 2
    x, y = torch.randn(64, 48), torch.randn(64, 48)
    out = torch.compile(f, backend="tc")(x, y)
    torch.testing.assert_close(out, f(x, y), rtol=1e-5, atol=1e-5)
    print(json.dumps(dict(tc.counters)))
""")


def run(cache_dir):
    env = dict(os.environ, TC_CACHE_DIR=str(cache_dir))
    result = subprocess.run([sys.executable, "-c", PROGRAM], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    import json
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_second_process_loads_from_cache(tmp_path):
    cold = run(tmp_path)
    assert cold["subgraphs_compiled"] == 1
    assert cold["disk_cache_hits"] == 0
    assert list((tmp_path / "cpu").glob("*.o"))
    assert list((tmp_path / "cpu").glob("*.plan"))
    warm = run(tmp_path)
    assert warm["subgraphs_compiled"] == 1
    assert warm["disk_cache_hits"] == 1


def test_corrupt_cache_entry_is_recompiled(tmp_path):
    run(tmp_path)
    for plan in (tmp_path / "cpu").glob("*.plan"):
        plan.write_text("garbage")
    again = run(tmp_path)
    assert again["subgraphs_compiled"] == 1
    assert again["disk_cache_hits"] == 0


def test_decomposed_op_names_are_cached(tmp_path, monkeypatch):
    """Writing a graph directly needs only the names of the ops PyTorch's
    table decomposes: the first process keeps them in the cache
    directory, and a later one reads them without building the table."""
    from tc import backend

    monkeypatch.setenv("TC_CACHE_DIR", str(tmp_path))
    backend._decomposed_ops.cache_clear()
    names = backend._decomposed_ops()
    assert "aten.addmm.default" not in names  # core ATen: kept
    assert "aten.silu.default" in names  # decomposed by PyTorch's table
    assert list((tmp_path / "decompositions").glob("*.txt"))

    backend._decomposed_ops.cache_clear()

    def unbuilt():
        raise AssertionError("the table was built again")

    monkeypatch.setattr(backend, "_core_aten_decompositions", unbuilt)
    try:
        assert backend._decomposed_ops() == names
    finally:
        backend._decomposed_ops.cache_clear()
