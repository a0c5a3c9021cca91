"""Imports ATen-level torch.fx graphs into tc's `fx` MLIR dialect.

The input is a graph as AOTAutograd produces it: placeholders, `get_attr`
nodes, `call_function` nodes whose targets are ATen `OpOverload`s (plus
`operator.getitem` selecting results of multi-output ops) and one output
node. Every value carries a FakeTensor in `node.meta["val"]`, which gives
the static shapes and dtypes of the emitted tensor types.

The result is MLIR text in the generic-free custom syntax of the dialect:

    module {
      fx.graph @main(%x: tensor<3x3xf32> {fx.name = "x"} loc("x")) -> (...) {
        %sin = fx.call_function "aten::sin"(%x) {name = "sin"}
            : (tensor<3x3xf32>) -> tensor<3x3xf32> loc("sin")
        fx.output %sin : tensor<3x3xf32>
      }
    }

Anything the dialect cannot express raises `Unsupported`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import linecache
import math
import operator
import re
import struct
from typing import Any, Sequence

import torch
import torch.fx

from tc.aten_schema import arg_kind

__all__ = [
    "RANDOM_OPS",
    "ImportedGraph",
    "Unsupported",
    "import_graph",
    "mlir_element_type",
    "qualified_name",
    "user_location",
]

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

#: ATen ops that draw random numbers. A graph holding one gets an extra
#: trailing argument, its seed (a 0-d int64 tensor marked `tc.rng_seed`),
#: which tc's counter-based generator uses; the caller passes a fresh one
#: per call (`tc.compiler.CompiledFunction` draws it from PyTorch's
#: generator).
RANDOM_OPS: frozenset[str] = frozenset({
    "aten::native_dropout", "aten::rand", "aten::randn", "aten::randn_like",
    "aten::uniform", "aten::normal_functional", "aten::exponential",
    "aten::log_normal", "aten::cauchy", "aten::geometric",
    "aten::bernoulli.p", "aten::normal.Tensor_Tensor",
    "aten::normal.Tensor_float", "aten::normal.float_Tensor",
    "aten::normal.float_float", "aten::randint", "aten::randint.low",
    "aten::randint_like", "aten::randint_like.low_dtype",
    "aten::rrelu_with_noise_functional"})

# Schema types, classified as utils/gen_aten_schemas.py does for the
# verifier's table.
_TENSOR_KINDS = ("T", "T?", "T[]", "T?[]")
_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_TORCH_DIR = str(torch.__file__).rsplit("/", 1)[0] + "/"


class Unsupported(Exception):
    """A node (or graph) that the fx dialect cannot express."""

    def __init__(self, reason: str, node: torch.fx.Node | None = None):
        self.reason = reason
        self.node = node
        where = ""
        if node is not None:
            where = f"node '{node.name}' ({_describe_target(node)}): "
        super().__init__(where + reason)


@dataclasses.dataclass
class ImportedGraph:
    """The fx-dialect text of a graph and what a runtime needs to call it."""

    #: The MLIR module text (one `fx.graph`).
    text: str
    #: Symbol name of the `fx.graph`.
    name: str
    #: FX names of the graph's arguments, in order (placeholders, then any
    #: lifted `get_attr` targets).
    input_names: list[str]
    #: (shape, dtype) of every argument.
    input_specs: list[tuple[tuple[int, ...], torch.dtype]]
    #: (shape, dtype) of every result.
    output_specs: list[tuple[tuple[int, ...], torch.dtype]]
    #: Per result: the index of the argument it is, or None when computed.
    outputs_alias_inputs: list[int | None]
    #: How the FX output node returns its values: "single", "tuple", "list".
    output_structure: str
    #: `get_attr` targets of the graph and their kind ("parameter",
    #: "buffer", "constant").
    get_attrs: dict[str, str]
    #: The `get_attr` targets passed as trailing graph arguments (when
    #: imported with `lift_get_attrs=True`), in argument order.
    lifted_attrs: list[str]
    #: The index of the random seed argument (after the placeholders and
    #: lifted attributes), or None when the graph draws no random numbers.
    seed_index: int | None = None


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


def user_location(node: torch.fx.Node) -> tuple[str, int, int] | None:
    """(file, line, column) of the user code that produced `node`.

    Taken from `node.meta["stack_trace"]`: the innermost frame outside of
    torch itself (or the innermost frame when all are inside torch). The
    column is 1-based, 0 when unknown.
    """
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = trace.splitlines()
    frames = []
    for i, text in enumerate(lines):
        match = _FRAME.search(text)
        if not match:
            continue
        col = 0
        # Frame lines are followed by the stripped source line (indented
        # by 4) and, on Python >= 3.11, a line of `~` and `^` under the
        # expression.
        marker = lines[i + 2] if i + 2 < len(lines) else ""
        if marker.strip() and set(marker.strip()) <= {"^", "~"}:
            start = len(marker) - len(marker.lstrip()) - 4
            source = linecache.getline(match["file"], int(match["line"]))
            if start >= 0 and source:
                col = start + len(source) - len(source.lstrip()) + 1
        frames.append((match["file"], int(match["line"]), col))
    if not frames:
        return None
    for frame in reversed(frames):
        if not frame[0].startswith(_TORCH_DIR):
            return frame
    return frames[-1]


def import_graph(gm: torch.fx.GraphModule, name: str = "main", *,
                 lift_get_attrs: bool = False,
                 requires_grad: Sequence[bool] = (),
                 symbol: Any = None) -> ImportedGraph:
    """Imports an ATen-level FX graph as fx-dialect MLIR text.

    With `lift_get_attrs`, `get_attr` nodes become trailing graph arguments
    instead of `fx.get_attr` ops (the compiler takes parameters and
    constants as inputs); `ImportedGraph.lifted_attrs` lists their targets.
    `requires_grad[i]` marks argument `i` `tc.requires_grad`: the compiler
    then builds the joint forward + backward graph (`tc-autodiff`).

    `symbol` (a sympy symbol of the graph's shape environment) is the
    graph's symbolic size: a dimension that is exactly `symbol` becomes `?`
    (-1 in the specs; docs/DynamicShapes.md), a size list argument holding
    it says -1. Any other symbolic size is `Unsupported`.
    Raises `Unsupported` for anything the dialect cannot express.
    """
    token = _SYMBOL.set(symbol)
    try:
        return _Importer(gm, name, lift_get_attrs, requires_grad).run()
    finally:
        _SYMBOL.reset(token)


#: The graph's symbolic size while a graph is imported (import_graph).
_SYMBOL: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "tc_symbol", default=None)


def _symbolic_dim(value: Any) -> int | None:
    """-1 for a SymInt that is the graph's symbolic size, its value for a
    SymInt that is a constant, None for anything else."""
    if not isinstance(value, torch.SymInt):
        return None
    expr = value.node.expr
    symbol = _SYMBOL.get()
    if symbol is not None and expr == symbol:
        return -1
    if getattr(expr, "is_number", False):
        return int(expr)
    return None


# ============================================================================
# Implementation
# ============================================================================


def _describe_target(node: torch.fx.Node) -> str:
    if isinstance(node.target, torch._ops.OpOverload):
        return qualified_name(node.target)
    if node.op == "call_function":
        return getattr(node.target, "__name__", str(node.target))
    return f"{node.op} {node.target}"


def _arg_kind(arg: Any) -> tuple[str, bool]:
    """The verifier's kind of a schema argument, and whether it is optional."""
    return arg_kind(str(arg.real_type))


def _string(value: str) -> str:
    """An MLIR string literal."""
    out = []
    for byte in value.encode("utf-8"):
        char = chr(byte)
        if char in '"\\' or not (32 <= byte < 127):
            out.append(f"\\{byte:02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _float(value: float) -> str:
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


def _int(value: int) -> str:
    if not -(2**63) <= value < 2**63:
        raise Unsupported(f"integer {value} does not fit in i64")
    return f"{value} : i64"


def _is_symbolic(value: Any) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _scalar(value: Any) -> str:
    """An attribute for a Python bool, int or float."""
    dim = _symbolic_dim(value)
    if dim is not None:
        return _int(dim)
    if _is_symbolic(value):
        raise Unsupported(f"symbolic scalar {value} is not supported")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return _float(value)
    raise Unsupported(f"{type(value).__name__} value {value!r} is not a "
                      "supported scalar")


def _enum_name(value: Any) -> str:
    text = str(value)
    return text[len("torch."):] if text.startswith("torch.") else text


def _attribute(value: Any, kind: str) -> str:
    """The attribute for a non-tensor argument of schema kind `kind`."""
    if value is None:
        return ""  # a unit attribute: the key alone
    if isinstance(value, (list, tuple)) and any(
            _symbolic_dim(v) is not None for v in value):
        # A size list with the graph's symbolic size (a view's): -1 there,
        # as PyTorch infers it; the result type says the rest.
        value = [v if _symbolic_dim(v) is None else _symbolic_dim(v)
                 for v in value]
    if _is_symbolic(value):
        raise Unsupported(f"symbolic value {value} is not supported")
    if isinstance(value, torch.dtype):
        return mlir_element_type(value)
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return _string(str(value) if isinstance(value, torch.device)
                       else _enum_name(value))
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        if kind == "i[]" and all(isinstance(v, int) and not isinstance(v, bool)
                                 for v in value):
            if not value:
                return "array<i64>"
            for v in value:
                _int(v)
            return "array<i64: " + ", ".join(str(v) for v in value) + ">"
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if kind == "i[]" and type(value) is int:  # `int[1] dim` given as 1
        return f"array<i64: {_int(value).split()[0]}>"
    if isinstance(value, (bool, int, float)):
        return _scalar(value)
    raise Unsupported(f"{type(value).__name__} argument {value!r} is not "
                      "supported")


def _tensor_val(node: torch.fx.Node, val: Any = None) -> torch.Tensor:
    val = node.meta.get("val") if val is None else val
    if not isinstance(val, torch.Tensor):
        raise Unsupported("value is not a tensor (meta['val'] is "
                          f"{type(val).__name__})", node)
    return val


def _spec(node: torch.fx.Node,
          val: Any = None) -> tuple[tuple[int, ...], torch.dtype]:
    val = _tensor_val(node, val)
    if val.layout != torch.strided:
        raise Unsupported(f"layout {val.layout} is not supported", node)
    shape = []
    for d in val.shape:
        if type(d) is not int:
            d = _symbolic_dim(d)
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


def _type(spec: tuple[tuple[int, ...], torch.dtype]) -> str:
    shape, dtype = spec
    dims = "".join("?x" if d == -1 else f"{d}x" for d in shape)
    return f"tensor<{dims}{DTYPE_TO_MLIR[dtype]}>"


def _scalar_overload(op: torch._ops.OpOverload, schema_args: Sequence[Any],
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
                _arg_kind(a) == (("s", False) if b.name in scalar_args
                                 else _arg_kind(b)))
               for a, b in zip(args, schema_args)):
            return candidate
    return None


class _Importer:
    def __init__(self, gm: torch.fx.GraphModule, name: str,
                 lift_get_attrs: bool, requires_grad: Sequence[bool] = ()):
        self.gm = gm
        self.name = name
        self.lift = lift_get_attrs
        self.requires_grad = list(requires_grad)
        self.used_names: set[str] = set()
        # Node -> SSA reference, or list of references for multi-results.
        self.values: dict[torch.fx.Node, str | list[str]] = {}
        self.types: dict[str, str] = {}
        self.body: list[str] = []
        self.args: list[str] = []
        self.input_names: list[str] = []
        self.input_specs: list[tuple[tuple[int, ...], torch.dtype]] = []
        self.input_refs: list[str] = []
        self.get_attrs: dict[str, str] = {}
        self.lifted: list[str] = []
        self.seed_index: int | None = None

    # Names and locations --------------------------------------------------

    def fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_$.]", "_", hint) or "v"
        if base[0].isdigit():
            base = "_" + base
        name, i = base, 0
        while name in self.used_names:
            i += 1
            name = f"{base}_{i}"
        self.used_names.add(name)
        return name

    @staticmethod
    def location(node: torch.fx.Node, name: str | None = None) -> str:
        label = _string(name or node.name)
        where = user_location(node)
        if where is None:
            return f"loc({label})"
        file, line, col = where
        return f"loc({label}({_string(file)}:{line}:{col}))"

    # Nodes ----------------------------------------------------------------

    def define(self, node: torch.fx.Node, val: Any) -> tuple[str, Any]:
        """A fresh SSA name for `node`'s single tensor value, and its spec."""
        spec = _spec(node, val)
        ref = "%" + self.fresh(node.name)
        self.values[node] = ref
        self.types[ref] = _type(spec)
        return ref, spec

    def add_argument(self, node: torch.fx.Node, fx_name: str,
                     val: Any = None) -> None:
        ref, spec = self.define(node, val)
        index = len(self.input_names)
        marked = (", tc.requires_grad" if index < len(self.requires_grad)
                  and self.requires_grad[index] else "")
        self.args.append(f"{ref}: {_type(spec)} {{fx.name = "
                         f"{_string(fx_name)}{marked}}} "
                         f"{self.location(node)}")
        self.input_names.append(fx_name)
        self.input_specs.append(spec)
        self.input_refs.append(ref)

    def add_seed_argument(self) -> None:
        """The graph's random seed: a trailing `tensor<i64>` argument."""
        ref = "%" + self.fresh("tc_seed")
        spec: tuple[tuple[int, ...], torch.dtype] = ((), torch.int64)
        self.types[ref] = _type(spec)
        self.seed_index = len(self.input_names)
        self.args.append(f'{ref}: {_type(spec)} {{fx.name = "tc_seed", '
                         f'tc.rng_seed}} loc("tc_seed")')
        self.input_names.append("tc_seed")
        self.input_specs.append(spec)
        self.input_refs.append(ref)

    def attr_kind(self, target: str) -> str:
        for kind, getter in (("parameter", self.gm.get_parameter),
                             ("buffer", self.gm.get_buffer)):
            try:
                getter(target)
                return kind
            except (AttributeError, TypeError):
                pass
        return "constant"

    def get_attr(self, node: torch.fx.Node) -> None:
        target = str(node.target)
        # The fx verifier's rule: dotted segments of letters, digits and _
        # (Sequential children are named "0", "1", ...).
        if not all(part and all(c.isalnum() or c == "_" for c in part)
                   for part in target.split(".")):
            raise Unsupported(f"get_attr target '{target}' is not a dotted "
                              "attribute path", node)
        kind = self.attr_kind(target)
        self.get_attrs[target] = kind
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):  # the attribute itself, then
            try:
                val = functools.reduce(getattr, target.split("."), self.gm)
            except AttributeError:
                raise Unsupported(f"module has no attribute '{target}'",
                                  node) from None
        if self.lift:
            self.lifted.append(target)
            self.add_argument(node, node.name, val)
            return
        ref, spec = self.define(node, val)
        self.body.append(f"{ref} = fx.get_attr {kind} {_string(target)} : "
                         f"{_type(spec)} {self.location(node)}")

    def operand(self, node: torch.fx.Node, value: Any) -> str:
        if not isinstance(value, torch.fx.Node):
            raise Unsupported(f"expected a tensor, got {value!r}", node)
        ref = self.values.get(value)
        if ref is None:
            raise Unsupported(f"uses '{value.name}', which is not a tensor "
                              "value of the graph", node)
        if isinstance(ref, list):
            raise Unsupported(f"uses all results of '{value.name}' at once",
                              node)
        return ref

    def scalar_tensor(self, node: torch.fx.Node, arg_name: str,
                      value: Any) -> str:
        """A 0-d tensor holding a Python number passed for a Tensor argument.

        PyTorch wraps such numbers in 0-d tensors of dtype double, long or
        bool that do not take part in type promotion against dimensioned
        tensors; the op's result type, from the FX graph, stays PyTorch's.
        """
        if _is_symbolic(value) or not isinstance(value, (bool, int, float)):
            raise Unsupported(f"argument '{arg_name}' expects a tensor, got "
                              f"{value!r}", node)
        dtype = ("i1" if isinstance(value, bool) else
                 "i64" if isinstance(value, int) else "f64")
        name = self.fresh(f"{node.name}_{arg_name}")
        self.body.append(
            f'%{name} = fx.call_function "aten::scalar_tensor"() '
            f"{{args = {{dtype = {dtype}, s = {_scalar(value)}}}, "
            f"name = {_string(name)}}} : () -> tensor<{dtype}> "
            f"{self.location(node, name)}")
        self.types["%" + name] = f"tensor<{dtype}>"
        return "%" + name

    def call_function(self, node: torch.fx.Node) -> None:
        if node.target is operator.getitem:
            return self.getitem(node)
        if (node.target is torch.ops.aten.sym_size.int
                and _symbolic_dim(node.meta.get("val")) is not None):
            # A size read for another op's size list (which says -1 for
            # the symbolic size): no value of the fx graph.
            return
        op = node.target
        if not isinstance(op, torch._ops.OpOverload):
            raise Unsupported("target is not an ATen operator overload", node)
        schema = op._schema
        positional = [a for a in schema.arguments if not a.kwarg_only]
        if len(node.args) > len(positional):
            raise Unsupported("more positional arguments than the schema "
                              "has", node)
        bound = {a.name: v for a, v in zip(positional, node.args)}
        names = {a.name for a in schema.arguments}
        for key, value in node.kwargs.items():
            if key not in names:
                raise Unsupported(f"unknown keyword argument '{key}'", node)
            bound[key] = value

        # Python numbers given for Tensor arguments (`add.Tensor(x, 1)`):
        # use the Scalar overload when there is one, else 0-d tensors.
        numbers = {a.name for a in schema.arguments
                   if _arg_kind(a)[0] in ("T", "T?") and a.name in bound
                   and isinstance(bound[a.name], (bool, int, float))}
        if numbers:
            sibling = _scalar_overload(op, schema.arguments, numbers)
            if sibling is not None:
                op, schema = sibling, sibling._schema
        target = qualified_name(op)

        operands: list[str] = []
        sizes: list[int] = []
        has_list = False
        attrs: list[str] = []
        for arg in schema.arguments:
            kind, optional = _arg_kind(arg)
            present = arg.name in bound
            value = bound.get(arg.name)
            if kind in ("T", "T?"):
                if value is None:
                    if kind == "T" and present:
                        raise Unsupported(f"tensor argument '{arg.name}' is "
                                          "None", node)
                    if kind == "T" and not arg.has_default_value():
                        raise Unsupported(f"missing tensor argument "
                                          f"'{arg.name}'", node)
                    sizes.append(0)
                elif isinstance(value, torch.fx.Node):
                    operands.append(self.operand(node, value))
                    sizes.append(1)
                else:
                    operands.append(self.scalar_tensor(node, arg.name, value))
                    sizes.append(1)
            elif kind in ("T[]", "T?[]"):
                if value is None:
                    sizes.append(0)
                    continue
                if not isinstance(value, (list, tuple)):
                    raise Unsupported(f"argument '{arg.name}' expects a "
                                      "list of tensors", node)
                if any(v is None for v in value):
                    if kind != "T?[]":
                        raise Unsupported(f"argument '{arg.name}' holds "
                                          "None entries", node)
                    # The present entries, marked in `args`.
                    key = arg.name if _BARE_ID.match(arg.name) \
                        else _string(arg.name)
                    attrs.append(f"{key} = array<i1: " + ", ".join(
                        "false" if v is None else "true"
                        for v in value) + ">")
                    value = [v for v in value if v is not None]
                operands.extend(self.operand(node, v) for v in value)
                sizes.append(len(value))
                has_list = True
            elif present:
                if value is None and not optional:
                    raise Unsupported(f"argument '{arg.name}' is None", node)
                # Sizes computed in the graph (`aten.sym_size.int`) are
                # their values: the symbolic size, or constants.
                value = torch.fx.node.map_arg(
                    value, lambda n: n.meta.get("val", n))
                try:
                    attr = _attribute(value, kind)
                except Unsupported as error:
                    raise Unsupported(f"argument '{arg.name}': "
                                      f"{error.reason}", node) from None
                key = arg.name if _BARE_ID.match(arg.name) \
                    else _string(arg.name)
                attrs.append(f"{key} = {attr}" if attr else key)

        # Results.
        val = node.meta.get("val")
        multi = isinstance(val, (list, tuple))
        vals = list(val) if multi else [val]
        if any(v is None for v in vals):
            raise Unsupported("an output of the op is None", node)
        specs = [_spec(node, v) for v in vals]

        attr_dict = []
        if attrs:
            attr_dict.append("args = {" + ", ".join(attrs) + "}")
        attr_dict.append(f"name = {_string(node.name)}")
        zero_before_present = any(
            s == 0 and any(sizes[i + 1:]) for i, s in enumerate(sizes))
        if has_list or zero_before_present:
            attr_dict.append("tensor_arg_sizes = array<i32: "
                             + ", ".join(map(str, sizes)) + ">")

        name = self.fresh(node.name)
        result_types = [_type(s) for s in specs]
        if multi:
            refs = [f"%{name}#{i}" for i in range(len(specs))]
            lhs = f"%{name}:{len(specs)}" if specs else ""
            self.values[node] = refs
        else:
            refs = ["%" + name]
            lhs = "%" + name
            self.values[node] = refs[0]
        for ref, t in zip(refs, result_types):
            self.types[ref] = t
        operand_types = ", ".join(self.types[o] for o in operands)
        results = (result_types[0] if len(result_types) == 1
                   else "(" + ", ".join(result_types) + ")")
        self.body.append(
            f"{lhs + ' = ' if lhs else ''}fx.call_function {_string(target)}"
            f"({', '.join(operands)}) {{{', '.join(attr_dict)}}} : "
            f"({operand_types}) -> {results} {self.location(node)}")

    def getitem(self, node: torch.fx.Node) -> None:
        source, index = node.args
        refs = self.values.get(source) if isinstance(source, torch.fx.Node) \
            else None
        if not isinstance(refs, list) or not isinstance(index, int):
            raise Unsupported("getitem of something other than the results "
                              "of a multi-output op", node)
        if not -len(refs) <= index < len(refs):
            raise Unsupported(f"result index {index} out of range", node)
        _spec(node)  # the selected result must be a supported tensor too
        self.values[node] = refs[index]

    # Graph ----------------------------------------------------------------

    def run(self) -> ImportedGraph:
        nodes = list(self.gm.graph.nodes)
        # Arguments first: placeholders, then lifted attributes.
        for node in nodes:
            if node.op == "placeholder":
                self.add_argument(node, node.name)
        for node in nodes:
            if node.op == "get_attr":
                self.get_attr(node)
        if any(node.op == "call_function"
               and isinstance(node.target, torch._ops.OpOverload)
               and qualified_name(node.target) in RANDOM_OPS
               for node in nodes):
            self.add_seed_argument()
        output_node = None
        for node in nodes:
            if node.op == "call_function":
                self.call_function(node)
            elif node.op == "output":
                output_node = node
            elif node.op not in ("placeholder", "get_attr"):
                raise Unsupported(f"'{node.op}' nodes are not supported",
                                  node)
        if output_node is None:
            raise Unsupported("graph has no output node")
        return self.finish(output_node)

    def finish(self, output_node: torch.fx.Node) -> ImportedGraph:
        result = output_node.args[0] if output_node.args else None
        if isinstance(result, tuple):
            structure, items = "tuple", list(result)
        elif isinstance(result, list):
            structure, items = "list", list(result)
        else:
            structure, items = "single", [result]
        refs, specs, aliases = [], [], []
        for item in items:
            if not isinstance(item, torch.fx.Node):
                raise Unsupported(f"graph output {item!r} is not a tensor",
                                  output_node)
            ref = self.operand(output_node, item)
            refs.append(ref)
            specs.append(_spec(item))
            aliases.append(self.input_refs.index(ref)
                           if ref in self.input_refs else None)

        types = [_type(s) for s in specs]
        name = self.name if _BARE_ID.match(self.name) else _string(self.name)
        # The device the graph runs on, where eager's semantics differ by
        # device (tc-decompose reads it: a half sum's scalar is rounded to
        # the half type by eager's CPU kernels, kept in f32 by its GPU ones).
        device = next((v.device.type for n in self.gm.graph.nodes
                       for v in [n.meta.get("val")]
                       if isinstance(v, torch.Tensor)), "cpu")
        lines = ["module {" if device == "cpu" else
                 f"module attributes {{tc.device = {_string(device)}}} {{"]
        signature = f"  fx.graph @{name}(" + ", ".join(self.args) + ")"
        if types:
            signature += " -> (" + ", ".join(types) + ")"
        lines.append(signature + " {")
        lines.extend("    " + line for line in self.body)
        output = "    fx.output"
        if refs:
            output += " " + ", ".join(refs) + " : " + ", ".join(types)
        lines.append(output)
        lines.append("  }")
        lines.append("}")
        return ImportedGraph(
            text="\n".join(lines) + "\n",
            name=self.name,
            input_names=self.input_names,
            input_specs=self.input_specs,
            output_specs=specs,
            outputs_alias_inputs=aliases,
            output_structure=structure,
            get_attrs=self.get_attrs,
            lifted_attrs=self.lifted,
            seed_index=self.seed_index,
        )
