#!/usr/bin/env bash
#===- utils/setup.sh - set up a machine for tc and build it ---------------===//
#
# One command from a fresh clone to a built tc:
#   1. Debian packages: LLVM/MLIR 22, clang, lld, Ninja, ccache, the ROCm
#      device libraries, HIP's headers and OpenBLAS (skipped when already
#      installed);
#   2. a Python venv in .venv with torch==2.13.0, lit, pytest, nanobind, numpy;
#   3. configure (build/, Ninja, clang, ccache) and build with -j2;
#   4. the tc Python package, installed editable into the venv;
#   5. tc's wheel (dist/), installed into a second venv with torch 2.14.1.
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
#--- 5. The wheel, and a second venv that tests it ---------------------------
# `pip wheel ./python` (python/setup.py: CMake in build-wheel-cp3XX/, which
# shares ccache's objects with build/; MLIR, LLVM and OpenBLAS linked in)
# into dist/, then installed into $TC_WHEEL_VENV (.venv-wheel) with another
# torch ($TC_WHEEL_TORCH, 2.14.1) and no checkout: utils/test.sh runs the
# seed, backend and package tests there. TC_SKIP_WHEEL=1 skips both.
if [ "${TC_SKIP_WHEEL:-0}" != 1 ]; then
  WHEEL_VENV="${TC_WHEEL_VENV:-$ROOT/.venv-wheel}"
  WHEEL_TORCH="${TC_WHEEL_TORCH:-2.14.1}"
  log "building the wheel (dist/)"
  rm -f "$ROOT"/dist/tc-*.whl
  TC_JOBS="$JOBS" "$VENV/bin/pip" wheel -q --no-build-isolation --no-deps \
    -w "$ROOT/dist" "$ROOT/python"
  wheel="$(ls "$ROOT"/dist/tc-*.whl)"
  if [ ! -x "$WHEEL_VENV/bin/python" ]; then
    log "creating $WHEEL_VENV"
    "$PYTHON" -m venv "$WHEEL_VENV"
  fi
  stamp="$WHEEL_VENV/.tc-torch"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$WHEEL_TORCH" ]; then
    log "installing torch==$WHEEL_TORCH into $WHEEL_VENV"
    # (This machine's pip lists index folders it lacks: not an error.)
    "$WHEEL_VENV/bin/pip" install -q "torch==$WHEEL_TORCH" pytest \
      expecttest numpy 2>&1 | { grep -v "neither a file nor a directory" || true; }
    [ "${PIPESTATUS[0]}" -eq 0 ]
    echo "$WHEEL_TORCH" > "$stamp"
  fi
  log "installing $(basename "$wheel") into $WHEEL_VENV"
  "$WHEEL_VENV/bin/pip" install -q --force-reinstall --no-deps "$wheel"
fi
log "done: tc-opt is $BUILD/bin/tc-opt; run utils/test.sh"
