#!/usr/bin/env bash
# Builds what tc needs on the GPU machine (Python 3.12, torch 2.11, a CUDA
# toolkit, no LLVM/MLIR, no network) and packs it into one archive:
#
#   build-gpu/tc-gpu.tar.xz    tc's Python package, its native extensions
#                              for CPython 3.12 with MLIR, LLVM and OpenBLAS
#                              linked in statically (tc._runtime: OpenBLAS
#                              only), and the GPU test and
#                              benchmark scripts' dependencies.
#
# Then `utils/gpu/run.sh` (on the GPU machine) unpacks it and runs the GPU
# tests and the benchmark. Needs utils/setup.sh to have run, and a Python
# 3.12 with headers: $TC_PYTHON312, else pyenv's 3.12.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

py312="${TC_PYTHON312:-}"
if [[ -z "$py312" ]]; then
  py312="$(ls -d "$HOME"/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | tail -1 || true)"
fi
[[ -x "$py312" ]] || { echo "need a Python 3.12 (set TC_PYTHON312)" >&2; exit 1; }
"$py312" -c "import nanobind" 2>/dev/null || "$py312" -m pip install -q nanobind

build=build-gpu
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S . -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DTC_STATIC_LLVM=ON -DTC_STATIC_BLAS=ON \
    -DPython3_EXECUTABLE="$py312" -DPython_EXECUTABLE="$py312"
fi
ninja -C "$build" -j2 _tc _runtime

stage="$build/stage"
rm -rf "$stage"
mkdir -p "$stage/site"
cp -r python/tc "$stage/site/"
find "$stage/site" -name __pycache__ -prune -exec rm -rf {} +
ext=$(ls "$build"/python/tc/_tc.cpython-312-*.so)
for module in "$ext" "$build"/python/tc/_runtime.cpython-312-*.so; do
  cp "$module" "$stage/site/tc/"
  strip --strip-unneeded "$stage/site/tc/$(basename "$module")"
done
# The entry point that registers backend="tc" with torch.compile.
version=$(sed -n 's/^version = "\(.*\)"/\1/p' python/pyproject.toml)
dist="$stage/site/tc-${version}.dist-info"
mkdir -p "$dist"
printf 'Metadata-Version: 2.1\nName: tc\nVersion: %s\n' "$version" >"$dist/METADATA"
printf '[torch_dynamo_backends]\ntc = tc.backend:tc_backend\n' >"$dist/entry_points.txt"
tar -C "$stage" -cf - site | xz -6 -T2 >"$build/tc-gpu.tar.xz"
ls -la "$build/tc-gpu.tar.xz" "$stage/site/tc/$(basename "$ext")"
