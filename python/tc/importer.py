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

import dataclasses
import functools
import linecache
import operator
import re
from typing import Any, Sequence

import torch
import torch.fx

from tc.fx_text import Unsupported, mlir_element_type, qualified_name
from tc.fx_text import (SYMBOL, arg_kind_of, attribute, is_symbolic,
                        scalar_overload, spell_scalar, spell_string,
                        symbolic_dim, tensor_spec, tensor_type)

__all__ = [
    "RANDOM_OPS",
    "ImportedGraph",
    "Unsupported",
    "import_graph",
    "mlir_element_type",
    "qualified_name",
    "user_location",
]

#: ATen ops that draw random numbers. A graph holding one gets an extra
#: trailing argument, its seed (a 0-d int64 tensor marked `tc.rng_seed`),
#: which tc's counter-based generator uses; the caller passes a fresh one
#: per call (`tc.compiler.CompiledFunction` draws it from PyTorch's
#: generator).
RANDOM_OPS: frozenset[str] = frozenset({
    "aten::native_dropout", "aten::rand", "aten::rand_like", "aten::randn",
    "aten::randn_like",
    "aten::uniform", "aten::normal_functional", "aten::exponential",
    "aten::log_normal", "aten::cauchy", "aten::geometric",
    "aten::bernoulli.p", "aten::normal.Tensor_Tensor",
    "aten::normal.Tensor_float", "aten::normal.float_Tensor",
    "aten::normal.float_float", "aten::randint", "aten::randint.low",
    "aten::randint_like", "aten::randint_like.low_dtype",
    "aten::rrelu_with_noise_functional"})

_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_TORCH_DIR = str(torch.__file__).rsplit("/", 1)[0] + "/"


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
    #: The arguments the graph stores a value into (`copy_` of an input:
    #: a buffer updated in place, such as a KV cache), in the order of the
    #: graph's trailing results that hold those values (`tc.written`); the
    #: compiled program writes them, and returns the other results.
    written_inputs: list[int] = dataclasses.field(default_factory=list)


def copy_into_input_problem(node: torch.fx.Node) -> str | None:
    """Why `copy_` node `node` cannot be a write into a graph input (see
    `_Importer.copy_into_argument`), or None: it must copy a value of the
    input's shape, dtype and device into a placeholder that nothing reads
    after it."""
    dst, src = (list(node.args) + [None, None])[:2]
    if (len(node.args) != 2 or node.kwargs.get("non_blocking")
            or not isinstance(dst, torch.fx.Node)
            or not isinstance(src, torch.fx.Node)
            or dst.op != "placeholder"):
        return "copy_ into something other than a graph input"
    a, b = dst.meta.get("val"), src.meta.get("val")
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
            and a.shape == b.shape and a.dtype == b.dtype
            and a.device == b.device):
        return "copy_ of a value of another shape, dtype or device"
    if any(user > node for user in dst.users):
        return "the input is read after the copy_ into it"
    return None


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
    token = SYMBOL.set(symbol)
    try:
        return _Importer(gm, name, lift_get_attrs, requires_grad).run()
    finally:
        SYMBOL.reset(token)


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
        # (argument index, value reference) per `copy_` into an argument.
        self.written: list[tuple[int, str]] = []

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
        label = spell_string(name or node.name)
        where = user_location(node)
        if where is None:
            return f"loc({label})"
        file, line, col = where
        return f"loc({label}({spell_string(file)}:{line}:{col}))"

    # Nodes ----------------------------------------------------------------

    def define(self, node: torch.fx.Node, val: Any) -> tuple[str, Any]:
        """A fresh SSA name for `node`'s single tensor value, and its spec."""
        spec = tensor_spec(node, val)
        ref = "%" + self.fresh(node.name)
        self.values[node] = ref
        self.types[ref] = tensor_type(spec)
        return ref, spec

    def add_argument(self, node: torch.fx.Node, fx_name: str,
                     val: Any = None) -> None:
        ref, spec = self.define(node, val)
        index = len(self.input_names)
        marked = (", tc.requires_grad" if index < len(self.requires_grad)
                  and self.requires_grad[index] else "")
        self.args.append(f"{ref}: {tensor_type(spec)} {{fx.name = "
                         f"{spell_string(fx_name)}{marked}}} "
                         f"{self.location(node)}")
        self.input_names.append(fx_name)
        self.input_specs.append(spec)
        self.input_refs.append(ref)

    def add_seed_argument(self) -> None:
        """The graph's random seed: a trailing `tensor<i64>` argument."""
        ref = "%" + self.fresh("tc_seed")
        spec: tuple[tuple[int, ...], torch.dtype] = ((), torch.int64)
        self.types[ref] = tensor_type(spec)
        self.seed_index = len(self.input_names)
        self.args.append(f'{ref}: {tensor_type(spec)} {{fx.name = "tc_seed", '
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
        self.body.append(f"{ref} = fx.get_attr {kind} "
                         f"{spell_string(target)} : "
                         f"{tensor_type(spec)} {self.location(node)}")

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
        if is_symbolic(value) or not isinstance(value, (bool, int, float)):
            raise Unsupported(f"argument '{arg_name}' expects a tensor, got "
                              f"{value!r}", node)
        dtype = ("i1" if isinstance(value, bool) else
                 "i64" if isinstance(value, int) else "f64")
        name = self.fresh(f"{node.name}_{arg_name}")
        self.body.append(
            f'%{name} = fx.call_function "aten::scalar_tensor"() '
            f"{{args = {{dtype = {dtype}, s = {spell_scalar(value)}}}, "
            f"name = {spell_string(name)}}} : () -> tensor<{dtype}> "
            f"{self.location(node, name)}")
        self.types["%" + name] = f"tensor<{dtype}>"
        return "%" + name

    def call_function(self, node: torch.fx.Node) -> None:
        if node.target is operator.getitem:
            return self.getitem(node)
        if (node.target is torch.ops.aten.sym_size.int
                and symbolic_dim(node.meta.get("val")) is not None):
            # A size read for another op's size list (which says -1 for
            # the symbolic size): no value of the fx graph.
            return
        op = node.target
        if op is torch.ops.aten.copy_.default:
            return self.copy_into_argument(node)
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
                   if arg_kind_of(a)[0] in ("T", "T?") and a.name in bound
                   and isinstance(bound[a.name], (bool, int, float))}
        if numbers:
            sibling = scalar_overload(op, schema.arguments, numbers)
            if sibling is not None:
                op, schema = sibling, sibling._schema
        target = qualified_name(op)

        operands: list[str] = []
        sizes: list[int] = []
        has_list = False
        attrs: list[str] = []
        for arg in schema.arguments:
            kind, optional = arg_kind_of(arg)
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
                        else spell_string(arg.name)
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
                    attr = attribute(value, kind)
                except Unsupported as error:
                    raise Unsupported(f"argument '{arg.name}': "
                                      f"{error.reason}", node) from None
                key = arg.name if _BARE_ID.match(arg.name) \
                    else spell_string(arg.name)
                attrs.append(f"{key} = {attr}" if attr else key)

        # Results.
        val = node.meta.get("val")
        multi = isinstance(val, (list, tuple))
        vals = list(val) if multi else [val]
        if any(v is None for v in vals):
            raise Unsupported("an output of the op is None", node)
        specs = [tensor_spec(node, v) for v in vals]

        attr_dict = []
        if attrs:
            attr_dict.append("args = {" + ", ".join(attrs) + "}")
        attr_dict.append(f"name = {spell_string(node.name)}")
        zero_before_present = any(
            s == 0 and any(sizes[i + 1:]) for i, s in enumerate(sizes))
        if has_list or zero_before_present:
            attr_dict.append("tensor_arg_sizes = array<i32: "
                             + ", ".join(map(str, sizes)) + ">")

        name = self.fresh(node.name)
        result_types = [tensor_type(s) for s in specs]
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
            f"{lhs + ' = ' if lhs else ''}fx.call_function "
            f"{spell_string(target)}"
            f"({', '.join(operands)}) {{{', '.join(attr_dict)}}} : "
            f"({operand_types}) -> {results} {self.location(node)}")

    def copy_into_argument(self, node: torch.fx.Node) -> None:
        """`copy_(x, v)` of a graph input `x` (AOTAutograd's form of an
        input the graph updates): `v` becomes a trailing result the
        program stores into `x`'s buffer, and the node's value is `v`."""
        problem = copy_into_input_problem(node)
        if problem is not None:
            raise Unsupported(problem, node)
        dst, src = node.args
        ref = self.values.get(dst)
        index = self.input_refs.index(ref) if ref in self.input_refs else -1
        if index < 0 or any(i == index for i, _ in self.written):
            raise Unsupported("copy_ into a graph input twice", node)
        value = self.operand(node, src)
        self.written.append((index, value))
        self.values[node] = value

    def getitem(self, node: torch.fx.Node) -> None:
        source, index = node.args
        refs = self.values.get(source) if isinstance(source, torch.fx.Node) \
            else None
        if not isinstance(refs, list) or not isinstance(index, int):
            raise Unsupported("getitem of something other than the results "
                              "of a multi-output op", node)
        if not -len(refs) <= index < len(refs):
            raise Unsupported(f"result index {index} out of range", node)
        tensor_spec(node)  # the selected result must be a supported tensor too
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
            specs.append(tensor_spec(item))
            aliases.append(self.input_refs.index(ref)
                           if ref in self.input_refs else None)

        # The values stored into arguments, after the returned results.
        args = list(self.args)
        for k, (index, ref) in enumerate(self.written, start=len(refs)):
            refs.append(ref)
            args[index] = args[index].replace(
                "} loc(", f", tc.written = {k} : i64}} loc(", 1)
        types = [tensor_type(s) for s in specs] + [
            self.types[ref] for _, ref in self.written]
        name = (self.name if _BARE_ID.match(self.name)
                else spell_string(self.name))
        # The device the graph runs on, where eager's semantics differ by
        # device (tc-decompose reads it: a half sum's scalar is rounded to
        # the half type by eager's CPU kernels, kept in f32 by its GPU ones).
        device = next((v.device.type for n in self.gm.graph.nodes
                       for v in [n.meta.get("val")]
                       if isinstance(v, torch.Tensor)), "cpu")
        lines = ["module {" if device == "cpu" else
                 f"module attributes {{tc.device = "
                 f"{spell_string(device)}}} {{"]
        signature = f"  fx.graph @{name}(" + ", ".join(args) + ")"
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
            written_inputs=[index for index, _ in self.written],
        )
