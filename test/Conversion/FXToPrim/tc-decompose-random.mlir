// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// Dropout keeps an element where a uniform number from the graph's seed is
// below 1 - p and scales it by 1 / (1 - p), as mask * x * scale. Each random
// op draws at its own counters: the second starts where the first's 32
// elements end.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {fx.name = "x"}, %[[SEED:.*]]: tensor<i64> {fx.name = "seed", tc.rng_seed})
// CHECK: %[[O0:.*]] = prim.constant dense<0> : tensor<i64>
// CHECK: %[[U:.*]] = prim.random uniform %[[SEED]], %[[O0]], shape [4, 8] : f32
// CHECK: %[[KEEP:.*]] = prim.constant dense<0.699999988> : tensor<4x8xf32>
// CHECK: %[[M:.*]] = prim.compare lt, %[[U]], %[[KEEP]] : tensor<4x8xf32>
// CHECK: %[[MF:.*]] = prim.convert %[[M]] to f32 : tensor<4x8xi1>
// CHECK: %[[MX:.*]] = prim.mul %[[MF]], %[[X]]
// CHECK: %[[S:.*]] = prim.constant dense<1.42857146> : tensor<4x8xf32>
// CHECK: %[[Y:.*]] = prim.mul %[[MX]], %[[S]]
// CHECK: %[[O1:.*]] = prim.constant dense<32> : tensor<i64>
// CHECK: %[[U2:.*]] = prim.random uniform %[[SEED]], %[[O1]], shape [2, 3] : f32
// CHECK: return %[[Y]], %[[M]], %[[U2]]
fx.graph @dropout(%x: tensor<4x8xf32> {fx.name = "x"}, %seed: tensor<i64> {fx.name = "seed", tc.rng_seed}) -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<2x3xf32>) {
  %0:2 = fx.call_function "aten::native_dropout"(%x) {args = {p = 3.000000e-01 : f64, train = true}} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  %1 = fx.call_function "aten::rand"() {args = {size = array<i64: 2, 3>, dtype = f32}} : () -> tensor<2x3xf32>
  fx.output %0#0, %0#1, %1 : tensor<4x8xf32>, tensor<4x8xi1>, tensor<2x3xf32>
}

// -----

// Half-precision dropout draws f32 numbers (f16's 11 bits would quantize
// 1 - p); p = 0 and evaluation are the identity and draw nothing.
// CHECK-LABEL: func.func @dropout_f16
// CHECK: prim.random uniform %{{.*}}, %{{.*}}, shape [16] : f32
// CHECK-NOT: prim.random
fx.graph @dropout_f16(%x: tensor<16xf16>, %seed: tensor<i64> {tc.rng_seed}) -> (tensor<16xf16>, tensor<16xf16>, tensor<16xf16>) {
  %0:2 = fx.call_function "aten::native_dropout"(%x) {args = {p = 5.000000e-01 : f64, train = true}} : (tensor<16xf16>) -> (tensor<16xf16>, tensor<16xi1>)
  %1:2 = fx.call_function "aten::native_dropout"(%x) {args = {p = 0.000000e+00 : f64, train = true}} : (tensor<16xf16>) -> (tensor<16xf16>, tensor<16xi1>)
  %2:2 = fx.call_function "aten::native_dropout"(%x) {args = {p = 5.000000e-01 : f64, train = false}} : (tensor<16xf16>) -> (tensor<16xf16>, tensor<16xi1>)
  fx.output %0#0, %1#0, %2#0 : tensor<16xf16>, tensor<16xf16>, tensor<16xf16>
}

// -----

fx.graph @no_seed(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot decompose 'aten::native_dropout': random ops need the graph's seed: an argument of type 'tensor<i64>' marked tc.rng_seed}}
  %0:2 = fx.call_function "aten::native_dropout"(%x) {args = {p = 5.000000e-01 : f64, train = true}} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  fx.output %0#0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #1 marked tc.rng_seed must be a 'tensor<i64>'}}
fx.graph @bad_seed(%x: tensor<4xf32>, %seed: tensor<2xi64> {tc.rng_seed}) -> tensor<4xf32> {
  %0 = fx.call_function "aten::neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}
