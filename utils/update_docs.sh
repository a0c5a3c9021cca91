#!/usr/bin/env bash
# Regenerates the dialect reference docs from ODS and copies them to
# docs/Dialects/ (test/python/test_generated.py fails when they are stale).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${TC_BUILD_DIR:-$ROOT/build}"
ninja -C "$BUILD" tc-doc >/dev/null
for doc in FXDialect PrimDialect KernelDialect; do
  cp "$BUILD/docs/Dialects/$doc.md" "$ROOT/docs/Dialects/$doc.md"
done
