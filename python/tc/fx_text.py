"""How values and types are spelled in the `fx` dialect's text: MLIR
attributes for Python scalars, lists and dtypes, tensor types for FX
values, and `Unsupported` for what the dialect cannot express (the
importer's vocabulary, `tc.importer`)."""

from __future__ import annotations

import contextvars
import math
import struct
from typing import Any, Sequence

import torch
import torch.fx

from tc.aten_schema import arg_kind


#: torch dtypes the dialect has element types for.
DTYPE_TO_MLIR: dict[torch.dtype, str] = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "ui8",
    torch.bool: "i1",
    # (real, imaginary) pairs in the prim dialect: tc-decompose's
    # ComplexAndFFT.cpp.
    torch.complex64: "complex<f32>",
    torch.complex128: "complex<f64>",
}


class Unsupported(Exception):
    """A node (or graph) that the fx dialect cannot express."""

    def __init__(self, reason: str, node: torch.fx.Node | None = None):
        self.reason = reason
        self.node = node
        where = ""
        if node is not None:
            where = f"node '{node.name}' ({_describe_target(node)}): "
        super().__init__(where + reason)


def qualified_name(op: torch._ops.OpOverload) -> str:
    """The schema name of an overload: `aten::add.Tensor`, `aten::sin`."""
    schema = op._schema
    if schema.overload_name:
        return f"{schema.name}.{schema.overload_name}"
    return schema.name


def mlir_element_type(dtype: torch.dtype) -> str:
    """The MLIR element type of a torch dtype, or raise Unsupported."""
    try:
        return DTYPE_TO_MLIR[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} is not supported") from None


#: The graph's symbolic size while a graph is imported (import_graph).
SYMBOL: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "tc_symbol", default=None)


def symbolic_dim(value: Any) -> int | None:
    """-1 for a SymInt that is the graph's symbolic size, its value for a
    SymInt that is a constant, None for anything else."""
    if not isinstance(value, torch.SymInt):
        return None
    expr = value.node.expr
    symbol = SYMBOL.get()
    if symbol is not None and expr == symbol:
        return -1
    if getattr(expr, "is_number", False):
        return int(expr)
    return None


def _describe_target(node: torch.fx.Node) -> str:
    if isinstance(node.target, torch._ops.OpOverload):
        return qualified_name(node.target)
    if node.op == "call_function":
        return getattr(node.target, "__name__", str(node.target))
    return f"{node.op} {node.target}"


def arg_kind_of(arg: Any) -> tuple[str, bool]:
    """The verifier's kind of a schema argument, and whether it is optional."""
    return arg_kind(str(arg.real_type))


def spell_string(value: str) -> str:
    """An MLIR string literal."""
    out = []
    for byte in value.encode("utf-8"):
        char = chr(byte)
        if char in '"\\' or not (32 <= byte < 127):
            out.append(f"\\{byte:02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def spell_float(value: float) -> str:
    """An f64 attribute holding `value` exactly."""
    value = float(value)
    if math.isfinite(value):
        mantissa, _, exponent = repr(value).partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        literal = mantissa + (f"e{exponent}" if exponent else "")
    else:
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        literal = f"0x{bits:016X}"
    return f"{literal} : f64"


def spell_int(value: int) -> str:
    if not -(2**63) <= value < 2**63:
        raise Unsupported(f"integer {value} does not fit in i64")
    return f"{value} : i64"


def is_symbolic(value: Any) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


def spell_scalar(value: Any) -> str:
    """An attribute for a Python bool, int or float."""
    dim = symbolic_dim(value)
    if dim is not None:
        return spell_int(dim)
    if is_symbolic(value):
        raise Unsupported(f"symbolic scalar {value} is not supported")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return spell_int(value)
    if isinstance(value, float):
        return spell_float(value)
    raise Unsupported(f"{type(value).__name__} value {value!r} is not a "
                      "supported scalar")


def _enum_name(value: Any) -> str:
    text = str(value)
    return text[len("torch."):] if text.startswith("torch.") else text


def attribute(value: Any, kind: str) -> str:
    """The attribute for a non-tensor argument of schema kind `kind`."""
    if value is None:
        return ""  # a unit attribute: the key alone
    if isinstance(value, (list, tuple)) and any(
            symbolic_dim(v) is not None for v in value):
        # A size list with the graph's symbolic size (a view's): -1 there,
        # as PyTorch infers it; the result type says the rest.
        value = [v if symbolic_dim(v) is None else symbolic_dim(v)
                 for v in value]
    if is_symbolic(value):
        raise Unsupported(f"symbolic value {value} is not supported")
    if isinstance(value, torch.dtype):
        return mlir_element_type(value)
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return spell_string(str(value) if isinstance(value, torch.device)
                            else _enum_name(value))
    if isinstance(value, str):
        return spell_string(value)
    if isinstance(value, (list, tuple)):
        if kind == "i[]" and all(isinstance(v, int) and not isinstance(v, bool)
                                 for v in value):
            if not value:
                return "array<i64>"
            for v in value:
                spell_int(v)
            return "array<i64: " + ", ".join(str(v) for v in value) + ">"
        return "[" + ", ".join(spell_scalar(v) for v in value) + "]"
    if kind == "i[]" and type(value) is int:  # `int[1] dim` given as 1
        return f"array<i64: {spell_int(value).split()[0]}>"
    if isinstance(value, (bool, int, float)):
        return spell_scalar(value)
    raise Unsupported(f"{type(value).__name__} argument {value!r} is not "
                      "supported")


def _tensor_val(node: torch.fx.Node, val: Any = None) -> torch.Tensor:
    val = node.meta.get("val") if val is None else val
    if not isinstance(val, torch.Tensor):
        raise Unsupported("value is not a tensor (meta['val'] is "
                          f"{type(val).__name__})", node)
    return val


def tensor_spec(node: torch.fx.Node,
                val: Any = None) -> tuple[tuple[int, ...], torch.dtype]:
    val = _tensor_val(node, val)
    if val.layout != torch.strided:
        raise Unsupported(f"layout {val.layout} is not supported", node)
    shape = []
    for d in val.shape:
        if type(d) is not int:
            d = symbolic_dim(d)
            if d is None:
                raise Unsupported(f"symbolic shape {tuple(val.shape)} is not "
                                  "supported (tc compiles static shapes and "
                                  "one symbolic batch size)", node)
        shape.append(d)
    if shape.count(-1) > 1 or (-1 in shape and shape[0] != -1):
        raise Unsupported(f"shape {tuple(val.shape)}: tc takes the symbolic "
                          "size as a leading dimension only", node)
    if val.dtype not in DTYPE_TO_MLIR:
        raise Unsupported(f"dtype {val.dtype} is not supported", node)
    return tuple(shape), val.dtype


def tensor_type(spec: tuple[tuple[int, ...], torch.dtype]) -> str:
    shape, dtype = spec
    dims = "".join("?x" if d == -1 else f"{d}x" for d in shape)
    return f"tensor<{dims}{DTYPE_TO_MLIR[dtype]}>"


def scalar_overload(op: torch._ops.OpOverload, schema_args: Sequence[Any],
                    scalar_args: set[str]) -> torch._ops.OpOverload | None:
    """The `Scalar` sibling of `op` taking `scalar_args` as Scalars.

    `aten.add.Tensor(x, 1)` is `aten.add.Scalar(x, 1)`; only siblings named
    `Scalar` or `Tensor_Scalar` whose other arguments match are considered.
    """
    packet = getattr(torch.ops.aten, op._schema.name.split("::")[-1], None)
    if packet is None or not op._schema.name.startswith("aten::"):
        return None
    for overload in ("Scalar", "Tensor_Scalar"):
        candidate = getattr(packet, overload, None)
        if candidate is None or candidate is op:
            continue
        args = candidate._schema.arguments
        if len(args) != len(schema_args):
            continue
        if all(a.name == b.name and (
                arg_kind_of(a) == (("s", False) if b.name in scalar_args
                                   else arg_kind_of(b)))
               for a, b in zip(args, schema_args)):
            return candidate
    return None
