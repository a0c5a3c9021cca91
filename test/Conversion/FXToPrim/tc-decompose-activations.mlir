// RUN: tc-opt %s -tc-decompose -split-input-file | FileCheck %s

// gelu (exact): x * 0.5 * (1 + erf(x / sqrt(2))).
// CHECK-LABEL: func.func @gelu
// CHECK: %[[C:.*]] = prim.constant dense<0.707106769> : tensor<8xf32>
// CHECK: %[[S:.*]] = prim.mul %{{.*}}, %[[C]]
// CHECK: %[[E:.*]] = prim.erf %[[S]]
// CHECK: prim.add %{{.*}}, %[[E]]
fx.graph @gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::gelu"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}

// -----

// gelu(approximate="tanh") uses tanh of the cubic polynomial.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: prim.constant dense<4.471500e-02>
// CHECK: prim.constant dense<0.797884583>
// CHECK: prim.tanh
// CHECK-NOT: prim.erf
fx.graph @gelu_tanh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::gelu"(%x) {args = {approximate = "tanh"}} : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}

// -----

// sigmoid: 1 / (1 + exp(-x)).
// CHECK-LABEL: func.func @sigmoid
// CHECK: %[[N:.*]] = prim.neg
// CHECK: %[[E:.*]] = prim.exp %[[N]]
// CHECK: %[[D:.*]] = prim.add %{{.*}}, %[[E]]
// CHECK: prim.div %{{.*}}, %[[D]]
fx.graph @sigmoid(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::sigmoid"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}

// -----

// relu of an integer tensor compares with an integer zero.
// CHECK-LABEL: func.func @relu_int
// CHECK: %[[Z:.*]] = prim.constant dense<0> : tensor<8xi32>
// CHECK: prim.maximum %{{.*}}, %[[Z]] : tensor<8xi32>
fx.graph @relu_int(%x: tensor<8xi32>) -> tensor<8xi32> {
  %0 = fx.call_function "aten::relu"(%x) : (tensor<8xi32>) -> tensor<8xi32>
  fx.output %0 : tensor<8xi32>
}

// -----

// clamp: a maximum with the lower bound, a minimum with the upper one;
// an absent bound adds nothing.
// CHECK-LABEL: func.func @clamp
// CHECK: %[[LO:.*]] = prim.constant dense<-5.000000e-01> : tensor<8xf32>
// CHECK: %[[M:.*]] = prim.maximum %{{.*}}, %[[LO]]
// CHECK: %[[HI:.*]] = prim.constant dense<2.000000e+00> : tensor<8xf32>
// CHECK: prim.minimum %[[M]], %[[HI]]
// CHECK-LABEL: func.func @clamp_min
// CHECK: prim.maximum
// CHECK-NOT: prim.minimum
fx.graph @clamp(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::clamp"(%x) {args = {min = -5.000000e-01 : f64, max = 2.000000e+00 : f64}} : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}
fx.graph @clamp_min(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = fx.call_function "aten::clamp"(%x) {args = {min = 0.000000e+00 : f64}} : (tensor<8xf32>) -> tensor<8xf32>
  fx.output %0 : tensor<8xf32>
}
