"""tc: an MLIR-based compiler for PyTorch programs.

The compiler lives in C++ (the build tree's libraries and tools); this
package locates them and, in later layers, connects torch.compile to them.
"""

from __future__ import annotations

import os
import pathlib

__version__ = "0.1.0"

_SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_dir() -> pathlib.Path:
    """The CMake build directory: $TC_BUILD_DIR, or build/ of the checkout."""
    return pathlib.Path(os.environ.get("TC_BUILD_DIR", _SOURCE_ROOT / "build"))


def tc_opt_path() -> pathlib.Path:
    """Path of the tc-opt tool of the build."""
    return build_dir() / "bin" / "tc-opt"
