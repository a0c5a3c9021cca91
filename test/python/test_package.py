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
    """Laid out as an installed wheel is (the extensions inside the tc
    folder, no checkout's build), tc loads its native code:
    the extension search once looked in tc/compiler/ once the compiler
    became a package, and every compile of the GPU package fell back.
    A graph compiles there and matches eager."""
    import shutil
    import sys

    import tc.native
    site = tmp_path / "site"
    shutil.copytree(pathlib.Path(tc.__file__).parent, site / "tc",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("_tc", "_runtime"):
        path = tc.native.extension_path(name)
        assert path is not None, f"{name} is not built"
        shutil.copy(path, site / "tc")
    # The entry point that registers backend="tc", as an installed tc has.
    import importlib.metadata
    dist = site / f"tc-{tc.__version__}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: tc\nVersion: {tc.__version__}\n")
    (dist / "entry_points.txt").write_text(
        importlib.metadata.distribution("tc").read_text("entry_points.txt"))
    script = (
        "import torch, tc, tc.compiler as c, tc.support as s\n"
        "x = torch.randn(64, 33)\n"
        "f = torch.compile(lambda x: torch.sin(x) * 2 + 1, backend='tc')\n"
        "torch.testing.assert_close(f(x), torch.sin(x) * 2 + 1)\n"
        "assert tc.counters['graphs_compiled'] == 1, dict(tc.counters)\n"
        "assert tc.counters['runtime_fallbacks'] == 0, dict(tc.counters)\n"
        "print(c.native_available(), c.native_error(), "
        "len(s.SUPPORTED_OPS) > 0, c.__file__)")
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site),
             "TC_BUILD_DIR": str(tmp_path / "no-build"),
             "TC_CACHE_DIR": str(tmp_path / "cache")})
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout.split()
    assert out[0] == "True" and out[-2] == "True", out
    assert out[-1].startswith(str(site)), out


def _console_tc_opt(*args, **kwargs):
    """The `tc-opt` console script's function (tc.tools.tc_opt), run as
    the script runs it."""
    import sys
    return subprocess.run(
        [sys.executable, "-c",
         "import sys, tc.tools; sys.exit(tc.tools.tc_opt())", *args],
        capture_output=True, text=True, **kwargs)


def test_the_console_script_is_tc_opt():
    """The wheel's `tc-opt` runs tc-opt's driver inside tc._tc: the same
    output as the build's tool, and its errors and exit status."""
    source = ("fx.graph @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
              "  %0 = fx.call_function \"aten::gelu\"(%x) : "
              "(tensor<8xf32>) -> tensor<8xf32>\n"
              "  fx.output %0 : tensor<8xf32>\n}\n")
    flags = ["--tc-decompose"]
    script = _console_tc_opt(*flags, input=source, check=True).stdout
    tool = subprocess.run([str(tc.tc_opt_path()), *flags], input=source,
                          capture_output=True, text=True, check=True).stdout
    assert script == tool and "prim.erf" in script, script
    listed = _console_tc_opt("--tc-list-decompositions", check=True).stdout
    assert "aten::sin Elementwise" in listed
    bad = _console_tc_opt("--no-such-flag")
    assert bad.returncode != 0 and "no-such-flag" in bad.stderr


def _python_m_tc(**env):
    import sys
    return subprocess.run([sys.executable, "-m", "tc"], capture_output=True,
                          text=True, env={**os.environ, **env})


def test_python_m_tc_reports_the_build_torch_and_fallbacks():
    import torch
    run = _python_m_tc()
    assert run.returncode == 0, run.stderr
    out = run.stdout
    for expected in (f"tc {tc.__version__}", "native build: LLVM 22",
                     f"torch {torch.__version__}", "within the releases",
                     f"cache: {tc.cache_dir()}", "precompile_cache yes",
                     "falls back"):
        assert expected in out, out
    off = _python_m_tc(TC_DISABLE_NATIVE="1")
    assert off.returncode == 1
    assert "every graph runs in eager" in off.stdout, off.stdout


def test_tc_translate_turns_the_lowered_cpu_graph_into_llvm_ir():
    """tc-translate (the build's tool; a wheel's console script runs the
    same driver) is the second half of a reproducer for a failed LLVM IR
    translation: tc-opt's CPU pipeline, then `--mlir-to-llvmir`."""
    import sys
    source = ("fx.graph @main(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
              "  %0 = fx.call_function \"aten::sin\"(%x) : "
              "(tensor<8xf32>) -> tensor<8xf32>\n"
              "  fx.output %0 : tensor<8xf32>\n}\n")
    lowered = subprocess.run([str(tc.tc_opt_path()), "--tc-cpu-pipeline"],
                             input=source, capture_output=True, text=True,
                             check=True).stdout
    for command in ([str(tc.tool_path("tc-translate"))],
                    [sys.executable, "-c", "import sys, tc.tools; "
                     "sys.exit(tc.tools.tc_translate())"]):
        run = subprocess.run([*command, "--mlir-to-llvmir"], input=lowered,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert "define " in run.stdout, run.stdout[:2000]
        bad = subprocess.run([*command, "--mlir-to-llvmir"],
                             input="func.func @f() { %0 = arith.constant",
                             capture_output=True, text=True)
        assert bad.returncode != 0 and "error" in bad.stderr
