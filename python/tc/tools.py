"""tc's command-line tools as console scripts of the installed package.

`tc-opt`: MLIR's opt driver with tc's dialects, passes and pipelines
(docs/Usage.md); `tc-translate`: MLIR's translation driver with
`--mlir-to-llvmir`. Both run inside the `tc._tc` extension, so that a
wheel ships one copy of MLIR and LLVM; a checkout's build has the same
tools in build/bin.
"""

from __future__ import annotations

import sys


def _run(tool: str, driver: str) -> int:
    from tc.native import load_extension
    try:
        native = load_extension("_tc")
    except ImportError as error:
        print(f"{tool}: {error}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    return getattr(native, driver)([tool, *sys.argv[1:]])


def tc_opt() -> int:
    """The `tc-opt` console script."""
    return _run("tc-opt", "opt_main")


def tc_translate() -> int:
    """The `tc-translate` console script: `--mlir-to-llvmir`, the step
    after tc-opt in a reproducer of a failed LLVM IR translation."""
    return _run("tc-translate", "translate_main")


if __name__ == "__main__":
    sys.exit(tc_opt())
