"""How tc classifies ATen schema types.

The fx dialect's verifier checks `fx.call_function` against a table of
ATen schemas (lib/Dialect/FX/IR/ATenSchemas.inc) in which every argument
has a *kind*: `T`, `T?`, `T[]`, `T?[]` for tensors, `i`, `f`, `b`, `s`,
`str`, `dtype` and their lists for the rest, `other` for what the IR does
not check. `utils/gen_aten_schemas.py` writes the table with `arg_kind`,
and the importer encodes arguments with it, so both agree by construction.
"""

from __future__ import annotations

import re

__all__ = ["arg_kind"]

_SCALAR_KINDS = {
    "Tensor": "T", "int": "i", "SymInt": "i", "float": "f", "bool": "b",
    "number": "s", "Scalar": "s", "str": "str", "ScalarType": "dtype",
}


def _strip_optional(type_str: str) -> tuple[str, bool]:
    match = re.fullmatch(r"Optional\[(.*)\]", type_str)
    return (match.group(1), True) if match else (type_str, False)


def arg_kind(type_str: str) -> tuple[str, bool]:
    """The table's kind for a schema type (`str(arg.real_type)`), and
    whether the argument is optional."""
    inner, optional = _strip_optional(type_str)
    if inner == "Tensor":
        return ("T?" if optional else "T"), optional
    list_match = re.fullmatch(r"List\[(.*)\]", inner)
    if list_match:
        elem, elem_optional = _strip_optional(list_match.group(1))
        if elem == "Tensor":
            return ("T?[]" if elem_optional else "T[]"), optional
        code = _SCALAR_KINDS.get(elem)
        if code in ("i", "f", "b", "s") and not elem_optional:
            return code + "[]", optional
        return "other", optional
    return _SCALAR_KINDS.get(inner, "other"), optional
