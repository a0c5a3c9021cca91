#!/usr/bin/env python3
"""Generates lib/Dialect/FX/IR/ATenSchemas.inc from PyTorch's schema registry.

The fx dialect verifies every `fx.call_function` against this table. Run

    python utils/gen_aten_schemas.py            # rewrite the table
    python utils/gen_aten_schemas.py --check    # exit 1 when it is stale

with the PyTorch version the project pins (utils/setup.sh installs it).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import torch

# The kind of each argument is decided in one place, shared with the importer.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
from tc.aten_schema import arg_kind  # noqa: E402

OUTPUT = (pathlib.Path(__file__).resolve().parent.parent / "lib" / "Dialect" /
          "FX" / "IR" / "ATenSchemas.inc")

def schema_fields(schema) -> tuple[str, str]:
    """A schema's arguments and returns as the table spells them."""
    args = []
    for arg in schema.arguments:
        kind, optional = arg_kind(str(arg.real_type))
        flags = ("o" if optional else "") + (
            "d" if arg.has_default_value() else "")
        args.append(f"{arg.name}:{kind}:{flags}")
    rets = [arg_kind(str(ret.real_type))[0] for ret in schema.returns]
    return " ".join(args), " ".join(rets)


def schema_entries() -> list[str]:
    seen = set()
    lines = []
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        name = schema.name
        if schema.overload_name:
            name += "." + schema.overload_name
        if name in seen:
            continue
        seen.add(name)
        args, rets = schema_fields(schema)
        lines.append(f'TC_ATEN_SCHEMA("{name}", "{args}", "{rets}")')
    lines.sort()
    return lines


def render() -> str:
    version = torch.__version__.split("+")[0]
    header = [
        "//===- ATenSchemas.inc - generated ATen schema table -----*- C++ -*-===//",
        "//",
        "// GENERATED FILE, DO NOT EDIT: regenerate with",
        "//   python utils/gen_aten_schemas.py",
        f"// from PyTorch {version}'s schema registry.",
        "//",
        "// TC_ATEN_SCHEMA(qualified name, arguments, returns): each argument is",
        "// name:kind:flags (flags: o = optional, d = has a default).",
        "//",
        "//===----------------------------------------------------------------------===//",
        "",
        f'TC_ATEN_TORCH_VERSION("{version}")',
    ]
    return "\n".join(header + schema_entries()) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the checked-in table is stale")
    parser.add_argument("-o", "--output", type=pathlib.Path, default=OUTPUT)
    opts = parser.parse_args()
    text = render()
    if opts.check:
        current = opts.output.read_text() if opts.output.exists() else ""
        if current != text:
            print(f"{opts.output} is stale: run utils/gen_aten_schemas.py",
                  file=sys.stderr)
            return 1
        return 0
    opts.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
