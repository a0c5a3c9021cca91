#!/usr/bin/env bash
#===- utils/test.sh - run every tc test -----------------------------------===//
#
# Runs the lit suite (test/) and the pytest suites (test/python/), then prints
# one summary line: "summary: N passed, M failed".
#
#===----------------------------------------------------------------------===//
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${TC_BUILD_DIR:-$ROOT/build}"
VENV="${TC_VENV:-$ROOT/.venv}"
REPORTS="$BUILD/test-reports"
mkdir -p "$REPORTS"
rm -f "$REPORTS"/*.xml

# Bring the build up to date first: a stale tc-opt tests nothing.
ninja -C "$BUILD" -j"${TC_JOBS:-2}" all tc-doc >/dev/null || {
  echo "build failed"; echo "summary: 0 passed, 1 failed"; exit 1; }

echo "== lit (test/)"
"$VENV/bin/python" /usr/lib/llvm-22/bin/lit -sv "$BUILD/test" \
  --xunit-xml-output "$REPORTS/lit.xml"
lit_rc=$?

echo "== pytest (test/python/)"
"$VENV/bin/python" -m pytest -q "$ROOT/test/python" \
  --junitxml "$REPORTS/pytest.xml"
py_rc=$?

# The wheel (utils/setup.sh, step 5) in its own venv with another torch: no
# checkout on the path, no build folder. `python -m tc` must find the
# wheel's static native build; the seed, backend, compat and package tests
# run against it, and stop rather than skip without native code.
wheel_rc=0
WHEEL_VENV="${TC_WHEEL_VENV:-$ROOT/.venv-wheel}"
if [ "${TC_SKIP_WHEEL:-0}" != 1 ] && [ -x "$WHEEL_VENV/bin/python" ]; then
  echo "== wheel ($("$WHEEL_VENV/bin/python" -c 'import torch; print("torch", torch.__version__)' 2>&1), $WHEEL_VENV)"
  away="$(mktemp -d)"
  (cd "$away" && env -u PYTHONPATH TC_BUILD_DIR="$away/no-build" \
     TC_CACHE_DIR="$away/cache" TC_TEST_NEEDS_NATIVE=1 bash -c '
    set -e
    "$0/bin/python" -m tc | tee report.txt
    grep -q "static linkage" report.txt
    "$0/bin/python" -c "import tc, sys; sys.exit(tc.__file__.startswith(sys.argv[1]))" "$1/python"
    # Relocatable: no path of the checkout (a run path, a default folder)
    # inside the extensions.
    "$0/bin/python" -c "import sys, tc.native as n; sys.exit(any(sys.argv[1].encode() in n.extension_path(m).read_bytes() for m in (\"_tc\", \"_runtime\")))" "$1"
    "$0/bin/tc-opt" --show-dialects | grep -q prim
    "$0/bin/python" -m pytest -q -p no:cacheprovider \
      "$1"/test/python/{test_seeds,backend/test_backend,test_compat,test_package}.py \
      --junitxml "$2/wheel.xml"' "$WHEEL_VENV" "$ROOT" "$REPORTS")
  wheel_rc=$?
  rm -rf "$away"
  if [ "$wheel_rc" -ne 0 ] && [ ! -f "$REPORTS/wheel.xml" ]; then
    echo '<testsuite name="wheel"><testcase classname="wheel" name="setup"><failure message="the wheel check failed before its tests"/></testcase></testsuite>' >"$REPORTS/wheel.xml"
  fi
fi

# A bounded, reproducible libFuzzer session over tc's parser and pipelines
# (tools/tc-fuzz, built with ASan+UBSan in build-asan/ by utils/setup.sh;
# utils/sanitize.sh says more). TC_SKIP_FUZZ=1 skips it.
fuzz_rc=0
if [ "${TC_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzz (tc-fuzz under ASan+UBSan, ${TC_FUZZ_RUNS:-30000} inputs, seed 1)"
  TC_FUZZ_SEED=1 TC_FUZZ_RUNS="${TC_FUZZ_RUNS:-30000}" \
    bash "$ROOT/utils/sanitize.sh" fuzz >"$REPORTS/fuzz.log" 2>&1
  fuzz_rc=$?
  grep -E "^(stat::number_of_executed_units|SUMMARY)|Test unit written" \
    "$REPORTS/fuzz.log" || true
  "$VENV/bin/python" - "$REPORTS" "$fuzz_rc" <<'PY'
import pathlib, sys
from xml.sax.saxutils import escape
reports, rc = pathlib.Path(sys.argv[1]), int(sys.argv[2])
log = (reports / "fuzz.log").read_text(errors="replace")[-4000:]
failure = (f'<failure message="tc-fuzz failed">{escape(log)}</failure>'
           if rc else "")
(reports / "fuzz.xml").write_text(
    f'<testsuite name="fuzz"><testcase classname="fuzz" name="tc-fuzz">'
    f"{failure}</testcase></testsuite>\n")
PY
fi

"$VENV/bin/python" - "$REPORTS" <<'PY'
import pathlib, sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for report in sorted(pathlib.Path(sys.argv[1]).glob("*.xml")):
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
print(f"summary: {passed} passed, {failed} failed, {skipped} skipped")
PY
[ "$lit_rc" -eq 0 ] && [ "$py_rc" -eq 0 ] && [ "$wheel_rc" -eq 0 ] &&
  [ "$fuzz_rc" -eq 0 ]
