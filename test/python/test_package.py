"""The tc package is installed and finds the build's tools."""

import os
import pathlib
import subprocess

import tc


def test_tc_opt_lists_the_tc_dialects():
    out = subprocess.run([str(tc.tc_opt_path()), "--show-dialects"],
                         capture_output=True, text=True, check=True).stdout
    dialects = out.split(":", 1)[1].strip().split(",")
    for dialect in ("fx", "prim", "kernel"):
        assert dialect in dialects


def test_an_installed_copy_finds_its_extensions(tmp_path):
    """Laid out as the GPU package and an installed tc are (the extensions
    inside the tc folder, no checkout's build), tc loads its native code:
    the extension search once looked in tc/compiler/ once the compiler
    became a package, and every compile of the GPU package fell back.
    A graph compiles there and matches eager."""
    import shutil
    import sys

    import tc.compiler
    site = tmp_path / "site"
    shutil.copytree(pathlib.Path(tc.__file__).parent, site / "tc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("_tc", "_runtime"):
        path = tc.compiler.extension.extension_path(name)
        assert path is not None, f"{name} is not built"
        shutil.copy(path, site / "tc")
    script = (
        "import torch, tc, tc.compiler as c, tc.support as s\n"
        "x = torch.randn(64, 33)\n"
        "f = torch.compile(lambda x: torch.sin(x) * 2 + 1, backend='tc')\n"
        "torch.testing.assert_close(f(x), torch.sin(x) * 2 + 1)\n"
        "assert tc.counters['graphs_compiled'] == 1, dict(tc.counters)\n"
        "assert tc.counters['runtime_fallbacks'] == 0, dict(tc.counters)\n"
        "print(c.native_available(), c.native_error(), "
        "len(s.SUPPORTED_OPS) > 0, c.__file__)")
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True,
        check=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site),
             "TC_BUILD_DIR": str(tmp_path / "no-build"),
             "TC_CACHE_DIR": str(tmp_path / "cache")}).stdout.split()
    assert out[0] == "True" and out[-2] == "True", out
    assert out[-1].startswith(str(site)), out
