#!/usr/bin/env bash
# Builds tc's wheel for the GPU machine (CPython 3.12, torch 2.11, a CUDA
# toolkit, no LLVM/MLIR, no network):
#
#   dist-gpu/tc-<version>-cp312-cp312-linux_x86_64.whl
#
# the wheel `pip wheel ./python` builds (python/setup.py: CMake in
# build-wheel-cp312/, MLIR, LLVM and OpenBLAS linked into the extensions),
# with a Python 3.12: $TC_PYTHON312, else pyenv's. Carry dist-gpu to the
# GPU machine; `utils/gpu/run.sh` there installs the wheel with pip into a
# folder of its own and runs the GPU tests and benchmarks. Needs
# utils/setup.sh to have run (the system's LLVM/MLIR, clang, Ninja).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

py312="${TC_PYTHON312:-}"
if [[ -z "$py312" ]]; then
  py312="$(ls -d "$HOME"/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -1 || true)"
fi
[[ -x "$py312" ]] || { echo "need a Python 3.12 (set TC_PYTHON312)" >&2; exit 1; }

rm -rf dist-gpu
"$py312" -m pip wheel -q --no-deps -w dist-gpu ./python
ls -la dist-gpu/*.whl
