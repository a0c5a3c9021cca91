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
[ "$lit_rc" -eq 0 ] && [ "$py_rc" -eq 0 ]
