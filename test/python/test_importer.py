"""tc.importer turns ATen FX graphs into fx-dialect text tc-opt verifies."""

import math
import operator
import subprocess

import pytest
import torch
import torch.nn as nn
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import tc
from tc.importer import Unsupported, import_graph, user_location
from tc.fx_text import attribute, spell_float


def aten_graph(fn, *inputs, tracing_mode="real"):
    """The ATen graph of `fn`, as AOTAutograd decomposes it."""
    return make_fx(fn, decomposition_table=core_aten_decompositions(),
                   tracing_mode=tracing_mode, pre_dispatch=False)(*inputs)


def verify(text):
    """Runs tc-opt on `text`; fails the test with its diagnostics."""
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built")
    result = subprocess.run([str(tc.tc_opt_path())], input=text,
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{result.stderr}\n{text}"
    return result.stdout


def foo(x, y):  # seed 000
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


class LinearReLU(nn.Module):  # seed 000's MyModule
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return nn.functional.relu(self.lin(x))


def manual_softmax(x):
    m = x.amax(-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(-1, keepdim=True)


def test_foo():
    gm = aten_graph(foo, torch.randn(3, 3), torch.randn(3, 3))
    imported = import_graph(gm, "foo")
    text = imported.text
    assert 'fx.graph @foo(%x_1: tensor<3x3xf32> {fx.name = "x_1"}' in text
    assert '%sin = fx.call_function "aten::sin"(%x_1) {name = "sin"}' in text
    assert '"aten::cos"(%y_1)' in text
    assert '%add = fx.call_function "aten::add.Tensor"(%sin, %cos)' in text
    assert "fx.output %add : tensor<3x3xf32>" in text
    assert imported.input_names == ["x_1", "y_1"]
    assert imported.output_specs == [((3, 3), torch.float32)]
    assert imported.outputs_alias_inputs == [None]
    assert imported.output_structure == "single"
    printed = verify(text)
    assert '"aten::add.Tensor"(%sin, %cos)' in printed


def test_linear_relu_module():
    gm = aten_graph(LinearReLU(), torch.randn(3, 3))
    imported = import_graph(gm)
    text = imported.text
    assert '"aten::addmm"' in text
    assert '"aten::relu"' in text
    assert "fx.get_attr parameter \"_param_constant0\" : tensor<3x3xf32>" \
        in text
    assert imported.get_attrs == {"_param_constant0": "parameter",
                                  "_param_constant1": "parameter"}
    verify(text)

    lifted = import_graph(gm, lift_get_attrs=True)
    assert "fx.get_attr" not in lifted.text
    assert lifted.lifted_attrs == ["_param_constant0", "_param_constant1"]
    assert lifted.input_names[1:] == ["_param_constant0", "_param_constant1"]
    assert [s for s, _ in lifted.input_specs] == [(3, 3), (3, 3), (3,)]
    verify(lifted.text)


def test_manual_softmax():
    text = import_graph(aten_graph(manual_softmax, torch.randn(4, 8))).text
    assert ('"aten::amax"(%x_1) {args = {dim = array<i64: -1>, '
            "keepdim = true}") in text
    for target in ("aten::sub.Tensor", "aten::exp", "aten::sum.dim_IntList",
                   "aten::div.Tensor"):
        assert f'"{target}"' in text
    verify(text)


def test_layer_norm_multiple_results():
    ln = nn.LayerNorm(8)
    text = import_graph(aten_graph(ln, torch.randn(4, 8))).text
    assert ('%native_layer_norm:3 = fx.call_function '
            '"aten::native_layer_norm"') in text
    assert "eps = 1.0e-05 : f64" in text
    assert "normalized_shape = array<i64: 8>" in text
    assert "%native_layer_norm#0" in text
    verify(text)


def test_absent_optional_tensor_in_the_middle():
    # weight None, bias given: operands need tensor_arg_sizes.
    def fn(x, b):
        return nn.functional.layer_norm(x, (4,), None, b)

    text = import_graph(aten_graph(fn, torch.randn(2, 4),
                                   torch.randn(4))).text
    assert "tensor_arg_sizes = array<i32: 1, 0, 1>" in text
    verify(text)


def test_mlp():  # seed 004
    model = nn.Sequential(nn.Linear(100, 200), nn.ReLU(), nn.Linear(200, 10))
    imported = import_graph(aten_graph(model, torch.randn(32, 100)))
    assert imported.text.count('"aten::addmm"') == 2
    assert '"aten::relu"' in imported.text
    assert imported.output_specs == [((32, 10), torch.float32)]
    verify(imported.text)


def test_scalars_and_other_arguments():
    def fn(x, y):
        a = torch.sin(x) + 1                   # add.Tensor -> add.Scalar
        b = 1 - torch.cos(y) * 2.5             # a number as `self`
        c = torch.where(a > 0, a, 0.0)         # scalar_tensor with options
        d = torch.cat([a, b]).to(torch.float16)
        e = nn.functional.gelu(x, approximate="tanh")
        return c, d, e, (a * float("inf")).sum()

    gm = aten_graph(fn, torch.randn(3, 3), torch.randn(3, 3))
    imported = import_graph(gm)
    text = imported.text
    assert '"aten::add.Scalar"(%sin) {args = {other = 1 : i64}' in text
    assert '"aten::mul.Scalar"(%cos) {args = {other = 2.5 : f64}' in text
    assert ('%sub_self = fx.call_function "aten::scalar_tensor"() '
            "{args = {dtype = i64, s = 1 : i64}") in text
    assert '"aten::sub.Tensor"(%sub_self, %mul)' in text
    assert 'layout = "strided", device = "cpu"' in text
    assert "tensor_arg_sizes = array<i32: 2>" in text
    assert "dtype = f16" in text
    assert 'approximate = "tanh"' in text
    assert "other = 0x7FF0000000000000 : f64" in text
    assert imported.output_structure == "tuple"
    verify(text)


def test_outputs_that_are_inputs():
    def fn(x, y):
        return y, x + 1, x

    imported = import_graph(aten_graph(fn, torch.randn(2), torch.randn(2)))
    assert imported.outputs_alias_inputs == [1, None, 0]
    verify(imported.text)


def test_every_dtype():
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64,
              torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
              torch.bool]
    inputs = [torch.zeros(2, dtype=d) for d in dtypes]
    imported = import_graph(aten_graph(lambda *xs: xs[0].clone(), *inputs))
    for element in ("f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8",
                    "ui8", "i1"):
        assert f"tensor<2x{element}>" in imported.text
    zero_d = import_graph(aten_graph(lambda x: x.sum(), torch.randn(3)))
    assert "-> (tensor<f32>)" in zero_d.text
    verify(imported.text)
    verify(zero_d.text)


def test_complex32_is_unsupported():
    gm = aten_graph(lambda x: x * 2, torch.ones(3, dtype=torch.complex32))
    with pytest.raises(Unsupported, match="complex32"):
        import_graph(gm)


def test_complex64_imports_as_complex_f32():
    gm = aten_graph(lambda x: x * 2, torch.randn(3, dtype=torch.complex64))
    assert "tensor<3xcomplex<f32>>" in import_graph(gm).text


def test_symbolic_shapes_are_unsupported():
    gm = aten_graph(lambda x: x.sin(), torch.randn(3, 4),
                    tracing_mode="symbolic")
    with pytest.raises(Unsupported, match="static shapes"):
        import_graph(gm)


def test_non_aten_target_is_unsupported():
    gm = torch.fx.symbolic_trace(lambda x: operator.neg(x))
    for node in gm.graph.nodes:
        node.meta["val"] = torch.empty(2)
    with pytest.raises(Unsupported, match="not an ATen operator") as info:
        import_graph(gm)
    assert info.value.node is not None


def test_stack_trace_location():
    gm = aten_graph(foo, torch.randn(3, 3), torch.randn(3, 3))
    for node in gm.graph.nodes:
        if node.name == "add":
            node.meta["stack_trace"] = (
                '  File "/src/model.py", line 12, in forward\n'
                "    return a + b\n")
            assert user_location(node) == ("/src/model.py", 12, 0)
    text = import_graph(gm).text
    assert 'loc("add"("/src/model.py":12:0))' in text
    if not tc.tc_opt_path().exists():
        pytest.skip("tc-opt is not built")
    printed = subprocess.run(
        [str(tc.tc_opt_path()), "-mlir-print-debuginfo",
         "-mlir-print-local-scope"], input=text, capture_output=True,
        text=True)
    assert printed.returncode == 0, printed.stderr
    assert 'loc("add"("/src/model.py":12:0))' in printed.stdout


def test_attribute_encoding():
    assert spell_float(1e-05) == "1.0e-05 : f64"
    assert spell_float(0.1) == "0.1 : f64"
    assert spell_float(-2.0) == "-2.0 : f64"
    assert spell_float(1e300) == "1.0e+300 : f64"
    assert spell_float(float("-inf")) == "0xFFF0000000000000 : f64"
    assert spell_float(math.nan).startswith("0x7FF8")
    assert attribute([], "i[]") == "array<i64>"
    assert attribute([1, -2], "i[]") == "array<i64: 1, -2>"
    assert attribute(1, "i[]") == "array<i64: 1>"
    assert attribute([1.5, 2], "f[]") == "[1.5 : f64, 2 : i64]"
    assert attribute(True, "b") == "true"
    assert attribute(None, "other") == ""
    assert attribute(torch.bfloat16, "dtype") == "bf16"
    assert attribute(torch.contiguous_format, "other") == \
        '"contiguous_format"'
    assert attribute('a"b', "str") == '"a\\22b"'
    with pytest.raises(Unsupported):
        attribute(2**64, "i")


def test_get_attr_of_a_sequential_child():
    # FX names Sequential children "0", "1", ...: such paths are valid
    # get_attr targets for the importer as for the fx verifier.
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(3, 3))

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    w = graph.get_attr("layers.0.weight")
    y = graph.call_function(torch.ops.aten.mm.default, (x, w))
    graph.output(y)
    gm = torch.fx.GraphModule(M(), graph)
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "call_function"):
            node.meta["val"] = torch.empty(2, 3)
    text = import_graph(gm, "g").text
    assert 'fx.get_attr parameter "layers.0.weight"' in text
    verify(text)
