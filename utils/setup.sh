#!/usr/bin/env bash
#===- utils/setup.sh - set up a machine for tc and build it ---------------===//
#
# One command from a fresh clone to a built tc:
#   1. Debian packages: LLVM/MLIR 22, clang, lld, Ninja, ccache, the ROCm
#      device libraries, HIP's headers and OpenBLAS (skipped when already
#      installed);
#   2. a Python venv in .venv with torch==2.13.0, lit, pytest, nanobind, numpy;
#   3. configure (build/, Ninja, clang, ccache) and build with -j2;
#   4. the tc Python package, installed editable into the venv.
# Running it again only rebuilds what changed.
#
#===----------------------------------------------------------------------===//
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${TC_BUILD_DIR:-$ROOT/build}"
VENV="${TC_VENV:-$ROOT/.venv}"
JOBS="${TC_JOBS:-2}"
LLVM_PREFIX=/usr/lib/llvm-22

log() { printf '[setup] %s\n' "$*"; }

#--- 1. System packages ------------------------------------------------------
PACKAGES=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22
          lld-22 ninja-build ccache rocm-device-libs libamdhip64-dev
          libopenblas-dev libclang-rt-22-dev)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
else
  log "system packages present"
fi

#--- 2. Python environment ---------------------------------------------------
PYTHON="${TC_PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
REQS="$ROOT/utils/requirements.txt"
STAMP="$VENV/.tc-requirements.sha"
want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  log "installing Python requirements"
  "$VENV/bin/pip" install -q -r "$REQS"
  echo "$want" > "$STAMP"
else
  log "Python requirements present"
fi

#--- 3. Configure and build --------------------------------------------------
if [ ! -f "$BUILD/build.ninja" ]; then
  log "configuring $BUILD"
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
    -DLLVM_USE_LINKER=lld \
    -DLLVM_ENABLE_ASSERTIONS=ON \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DPython3_EXECUTABLE="$VENV/bin/python" \
    -DPython_EXECUTABLE="$VENV/bin/python" >/dev/null
fi
log "building (ninja -j$JOBS)"
ninja -C "$BUILD" -j"$JOBS" all tc-doc | grep -vE '^\[[0-9]+/[0-9]+\]' || true
test -x "$BUILD/bin/tc-opt"
# The fuzzer utils/test.sh runs: tc built with ASan, UBSan and libFuzzer in
# build-asan/ (utils/sanitize.sh).
log "building the fuzzer (build-asan/, ASan+UBSan)"
TC_JOBS="$JOBS" bash "$ROOT/utils/sanitize.sh" build-fuzz |
  grep -vE '^\[[0-9]+/[0-9]+\]' || true
test -x "$ROOT/build-asan/bin/tc-fuzz"

#--- 4. The Python package ---------------------------------------------------
if ! "$VENV/bin/python" -c "import tc" >/dev/null 2>&1; then
  log "installing the tc Python package (editable)"
  "$VENV/bin/pip" install -q --no-build-isolation -e "$ROOT/python"
fi
log "done: tc-opt is $BUILD/bin/tc-opt; run utils/test.sh"
