# RUN: %PYTHON %s | FileCheck %s
# RUN: %PYTHON %s | tc-opt | FileCheck %s --check-prefix=VERIFIED

# The importer turns ATen FX graphs into the fx dialect: one op per node,
# FX names as SSA names, schema argument names for non-tensor arguments.

import math

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from tc.importer import import_graph


def show(fn, *args):
    print(import_graph(make_fx(fn)(*args), fn.__name__).text)


def foo(x, y):
    return torch.sin(x) + torch.cos(y)


# CHECK-LABEL: fx.graph @foo
# CHECK-SAME: (%[[X:.*]]: tensor<3x3xf32> {fx.name = "x_1"}
# CHECK: %[[SIN:.*]] = fx.call_function "aten::sin"(%[[X]])
# CHECK: %[[COS:.*]] = fx.call_function "aten::cos"
# CHECK: %[[ADD:.*]] = fx.call_function "aten::add.Tensor"(%[[SIN]], %[[COS]])
# CHECK: fx.output %[[ADD]] : tensor<3x3xf32>
# VERIFIED: fx.graph @foo
show(foo, torch.randn(3, 3), torch.randn(3, 3))


def gelu(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) *
                                     (x + 0.044715 * torch.pow(x, 3))))


# Python numbers in tensor slots become the Scalar overloads.
# CHECK-LABEL: fx.graph @gelu
# CHECK: fx.call_function "aten::mul.Scalar"(%{{.*}}) {args = {other = 0.5 : f64}
# CHECK: fx.call_function "aten::pow.Tensor_Scalar"(%{{.*}}) {args = {exponent = 3 : i64}
# CHECK: fx.call_function "aten::tanh"
# CHECK: fx.call_function "aten::add.Scalar"(%{{.*}}) {args = {other = 1 : i64}
# VERIFIED: fx.graph @gelu
show(gelu, torch.randn(8))


def softmax(x):
    x_max = x.max(dim=1)[0]
    x = x - x_max[:, None]
    numerator = torch.exp(x)
    return numerator / numerator.sum(dim=1)[:, None]


# Multi-result ops and list arguments.
# CHECK-LABEL: fx.graph @softmax
# CHECK: %[[MAX:.*]]:2 = fx.call_function "aten::max.dim"(%{{.*}}) {args = {dim = 1 : i64}
# CHECK: fx.call_function "aten::sum.dim_IntList"(%{{.*}}) {args = {dim = array<i64: 1>}
# VERIFIED: fx.graph @softmax
show(softmax, torch.randn(4, 16))
