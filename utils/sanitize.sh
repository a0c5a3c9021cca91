#!/usr/bin/env bash
#===- utils/sanitize.sh - tc under ASan+UBSan, and its fuzzer -----------===//
#
#   bash utils/sanitize.sh test            # the test suite under ASan+UBSan
#   bash utils/sanitize.sh build-fuzz      # builds the fuzzer only
#   bash utils/sanitize.sh fuzz [SECONDS]  # libFuzzer on tc-fuzz (default 60)
#
# Both build tc in build-asan/ (after utils/setup.sh) with AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage instrumentation
# (LLVM_USE_SANITIZER, LLVM_USE_SANITIZE_COVERAGE). MLIR and LLVM are
# Debian's, not instrumented: the sanitizers watch tc's own code, and a
# crash anywhere is still a crash.
#
# `test` runs the lit suite and the pytest suites (the Python interpreter
# loads the ASan runtime first, LD_PRELOAD); leaks are not reported (the
# interpreter keeps objects until exit). UBSan stops at its first report.
#
# `fuzz` runs tools/tc-fuzz (MLIR text through tc's parser and pipelines)
# from a corpus seeded with every .mlir input under test/, split at
# `// -----`. Crashes are written to build-asan/fuzz-crashes/; keep each,
# once fixed, under test/fuzz/ (lit runs tc-fuzz on them in every build).
# $TC_FUZZ_SEED fixes libFuzzer's seed and $TC_FUZZ_RUNS bounds the run by
# inputs rather than time: utils/test.sh runs a bounded, reproducible
# session that way (seed 1) in every test run.
#
#===----------------------------------------------------------------------===//
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${TC_ASAN_BUILD_DIR:-$ROOT/build-asan}"
VENV="${TC_VENV:-$ROOT/.venv}"
LLVM_PREFIX=/usr/lib/llvm-22
JOBS="${TC_JOBS:-2}"
what="${1:-test}"

# Executables link the shared ASan runtime (found by their rpath): `test`
# preloads it into Python, and the tools the tests start inherit that.
RUNTIME_DIR="$(dirname "$("$LLVM_PREFIX/bin/clang" \
  -print-file-name=libclang_rt.asan-x86_64.so)")"
LINK_FLAGS="-shared-libasan -Wl,-rpath,$RUNTIME_DIR"
if ! grep -qs -- "CMAKE_EXE_LINKER_FLAGS:STRING=$LINK_FLAGS" \
    "$BUILD/CMakeCache.txt"; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
    -DLLVM_USE_LINKER=lld \
    -DLLVM_ENABLE_ASSERTIONS=ON \
    -DLLVM_USE_SANITIZER="Address;Undefined" \
    -DLLVM_USE_SANITIZE_COVERAGE=ON \
    -DCMAKE_EXE_LINKER_FLAGS="$LINK_FLAGS" \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DPython3_EXECUTABLE="$VENV/bin/python" \
    -DPython_EXECUTABLE="$VENV/bin/python" >/dev/null
fi

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
case "$what" in
test)
  ninja -C "$BUILD" -j"$JOBS" all tc-doc
  export ASAN_OPTIONS="detect_leaks=0"
  echo "== lit (test/) under ASan+UBSan"
  lit_rc=0
  "$VENV/bin/python" "$LLVM_PREFIX/bin/lit" -sv "$BUILD/test" || lit_rc=$?
  echo "== pytest (test/python/) under ASan+UBSan"
  # pytest captures the tests' stderr: the sanitizers write their reports
  # to files instead, printed below.
  reports="$BUILD/sanitizer-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  # The extension of this build, not build/'s (tc.build_dir()).
  py_rc=0
  ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$reports/asan" \
  UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$reports/ubsan" \
  TC_BUILD_DIR="$BUILD" \
  LD_PRELOAD="$RUNTIME_DIR/libclang_rt.asan-x86_64.so" \
    "$VENV/bin/python" -m pytest -q "$ROOT/test/python" -p no:cacheprovider \
    || py_rc=$?
  for report in "$reports"/*; do
    [ -e "$report" ] || continue
    echo "== sanitizer report $report"
    head -60 "$report"
    py_rc=1
  done
  [ "$lit_rc" -eq 0 ] && [ "$py_rc" -eq 0 ]
  ;;
build-fuzz)
  ninja -C "$BUILD" -j"$JOBS" tc-fuzz
  ;;
fuzz)
  seconds="${2:-60}"
  ninja -C "$BUILD" -j"$JOBS" tc-fuzz
  corpus="$BUILD/fuzz-corpus"
  crashes="$BUILD/fuzz-crashes"
  mkdir -p "$corpus" "$crashes"
  # Seeds: every test input, one file per `// -----` section; and a
  # dictionary of the op names, ATen targets and keywords they use, which
  # libFuzzer splices into its mutations.
  "$VENV/bin/python" - "$ROOT" "$corpus" "$BUILD/fuzz.dict" <<'PY'
import hashlib, pathlib, re, sys
root, corpus = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
tokens = set()
for path in sorted((root / "test").rglob("*.mlir")):
    for section in re.split(r"^// -----\s*$", path.read_text(), flags=re.M):
        text = "\n".join(l for l in section.splitlines()
                         if not l.lstrip().startswith("//")).strip() + "\n"
        if len(text) > 1:
            name = hashlib.sha1(text.encode()).hexdigest()
            (corpus / name).write_text(text)
            tokens.update(re.findall(r"\b(?:fx|prim|kernel|func|gpu)\.\w+"
                                     r"|\"aten::[\w.]+\"", text))
pathlib.Path(sys.argv[3]).write_text("".join(
    '"' + t.strip('"').replace('"', '\\"') + '"\n'
    for t in sorted(tokens)))
PY
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0"
  bounds=(-max_total_time="$seconds")
  [ -n "${TC_FUZZ_SEED:-}" ] && bounds+=(-seed="$TC_FUZZ_SEED")
  [ -n "${TC_FUZZ_RUNS:-}" ] && bounds=(-runs="$TC_FUZZ_RUNS" "${bounds[@]:1}")
  "$BUILD/bin/tc-fuzz" "$corpus" "${bounds[@]}" -dict="$BUILD/fuzz.dict" \
    -max_len=8192 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$crashes/"
  ;;
*)
  echo "usage: $0 test | build-fuzz | fuzz [SECONDS]" >&2
  exit 2
  ;;
esac
