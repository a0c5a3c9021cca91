"""Where tc's native code is, without importing torch: the extension
modules (`tc._tc`, `tc._runtime`) in the package's folder (an installed
wheel) or the checkout's build (`tc.build_dir()`), and how to load one.

`tc.compiler.extension` loads them for the compiler; `tc.tools` (the
`tc-opt` console script) and `python -m tc` load them from here.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import pathlib
import sys
from types import ModuleType

import tc


def extension_dirs() -> list[pathlib.Path]:
    """Where the extensions are looked for: the tc package's folder
    (installed), then the checkout's build."""
    return [pathlib.Path(tc.__file__).resolve().parent,
            tc.build_dir() / "python" / "tc"]


def extension_path(name: str) -> pathlib.Path | None:
    """Where the extension module `tc.<name>` was built, if it was."""
    for directory in extension_dirs():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = directory / f"{name}{suffix}"
            if path.is_file():
                return path
    return None


def load_extension(name: str) -> ModuleType:
    """Imports the extension `tc.<name>` from where it was built; raises
    ImportError when it is absent or broken."""
    qualified = f"tc.{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    path = extension_path(name)
    if path is None:
        raise ImportError(f"tc native extension not built (no {name} "
                          "module in " + ", ".join(
                              str(d) for d in extension_dirs()) + ")")
    try:
        loader = importlib.machinery.ExtensionFileLoader(qualified, str(path))
        spec = importlib.util.spec_from_file_location(qualified, str(path),
                                                      loader=loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        loader.exec_module(module)
    except Exception as error:  # a broken build must not kill us
        sys.modules.pop(qualified, None)
        raise ImportError(f"loading {path} failed: {error}") from None
    return module


def build_info() -> dict[str, str]:
    """What the native build is (tcBuildInfo: `llvm`, `linkage`,
    `assertions`, `compiler`, `nvptx`, `amdgpu`); raises ImportError
    without tc._tc."""
    text = load_extension("_tc").build_info()
    return dict(line.split("=", 1) for line in text.splitlines() if line)
