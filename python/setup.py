"""Builds tc's wheel: the `tc` package with its native extensions, which
CMake builds from this checkout (`pip wheel ./python`).

The extensions (`tc._tc`: the compiler, its runtimes and tc-opt's driver;
`tc._runtime`: cached CPU graphs without the compiler) link MLIR, LLVM,
OpenBLAS and the C++ runtime statically and keep their symbols inside, so
the wheel needs no LLVM where it is installed. The build needs what
utils/setup.sh installs (LLVM/MLIR 22, clang, lld, Ninja, Debian's static
OpenBLAS). The build folder is $TC_WHEEL_BUILD_DIR, else
build-wheel-<python tag>/ of the checkout (cp312 ...), kept between
builds; at the checkout's top, it shares ccache's objects with build/.

An editable install (utils/setup.sh's `pip install -e python`) builds
nothing here: the package finds the checkout's build/ then.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODULES = ("_tc", "_runtime")


class CMakeBuild(build_ext):
    """Configures and builds tc's extensions with CMake, then copies them
    (stripped) where the wheel takes them from."""

    def run(self):
        if getattr(self, "editable_mode", False) or self.inplace:
            return
        tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
        build = pathlib.Path(os.environ.get(
            "TC_WHEEL_BUILD_DIR", ROOT / f"build-wheel-{tag}"))
        llvm = pathlib.Path("/usr/lib/llvm-22")
        subprocess.run([
            "cmake", "-G", "Ninja", "-S", str(ROOT), "-B", str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_C_COMPILER={llvm}/bin/clang",
            f"-DCMAKE_CXX_COMPILER={llvm}/bin/clang++",
            "-DLLVM_USE_LINKER=lld",
            f"-DMLIR_DIR={llvm}/lib/cmake/mlir",
            "-DTC_STATIC_LLVM=ON", "-DTC_STATIC_BLAS=ON",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ], check=True, stdout=subprocess.DEVNULL)
        jobs = os.environ.get("TC_JOBS", "2")
        subprocess.run(["ninja", "-C", str(build), f"-j{jobs}", *MODULES],
                       check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        for ext in self.extensions:
            name = ext.name.split(".")[-1]
            built = build / "python" / "tc" / f"{name}{suffix}"
            target = pathlib.Path(self.get_ext_fullpath(ext.name))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built, target)
            subprocess.run(["strip", "--strip-unneeded", str(target)],
                           check=True)
            target.chmod(0o755)


setup(ext_modules=[Extension(f"tc.{name}", sources=[]) for name in MODULES],
      cmdclass={"build_ext": CMakeBuild})
