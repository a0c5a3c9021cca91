// RUN: tc-opt %s -tc-decompose -split-input-file | FileCheck %s

// Rounding toward zero: the floor of the magnitude, the sign put back.
// CHECK-LABEL: func.func @trunc
// CHECK: %[[A:.*]] = prim.abs %arg0
// CHECK: %[[F:.*]] = prim.floor %[[A]]
// CHECK: %[[N:.*]] = prim.compare lt, %arg0
// CHECK: %[[M:.*]] = prim.neg %[[F]]
// CHECK: prim.where %[[N]], %[[M]], %[[F]]
fx.graph @trunc(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::trunc"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// floor of an integer tensor is the tensor.
// CHECK-LABEL: func.func @floor_int
// CHECK-NOT: prim.floor
// CHECK: return %arg0
fx.graph @floor_int(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = fx.call_function "aten::floor"(%x) : (tensor<4xi64>) -> tensor<4xi64>
  fx.output %0 : tensor<4xi64>
}

// -----

// log2 as log times 1/ln 2; sign and the inverse trigonometric functions
// map to their prims.
// CHECK-LABEL: func.func @unary
// CHECK: %[[L:.*]] = prim.log %arg0
// CHECK: prim.mul %[[L]], %{{.*}}
// CHECK: prim.sign %arg0
// CHECK: prim.acos %arg0
fx.graph @unary(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = fx.call_function "aten::log2"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = fx.call_function "aten::sign"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = fx.call_function "aten::acos"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  fx.output %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A bf16 layer norm is computed in f32 (PyTorch's opmath type) and rounded
// to bf16 once.
// CHECK-LABEL: func.func @layer_norm_bf16
// CHECK: %[[X:.*]] = prim.convert %arg0 to f32 : tensor<2x8xbf16>
// CHECK: prim.reduce sum %[[X]]
// CHECK: prim.rsqrt %{{.*}} : tensor<2x1xf32>
// CHECK: %[[Y:.*]] = prim.convert %{{.*}} to bf16 : tensor<2x8xf32>
// CHECK: return %[[Y]]
fx.graph @layer_norm_bf16(%x: tensor<2x8xbf16>) -> (tensor<2x8xbf16>, tensor<2x1xf32>, tensor<2x1xf32>) {
  %0:3 = fx.call_function "aten::native_layer_norm"(%x) {args = {normalized_shape = array<i64: 8>, eps = 1.0e-05 : f64}, tensor_arg_sizes = array<i32: 1, 0, 0>} : (tensor<2x8xbf16>) -> (tensor<2x8xbf16>, tensor<2x1xf32>, tensor<2x1xf32>)
  fx.output %0#0, %0#1, %0#2 : tensor<2x8xbf16>, tensor<2x1xf32>, tensor<2x1xf32>
}

// -----

// torch.full(..., 6, dtype=bool) is all true: any nonzero value converts to
// true, not its lowest bit.
// CHECK-LABEL: func.func @full_bool
// CHECK: prim.constant dense<true> : tensor<10xi1>
fx.graph @full_bool() -> tensor<10xi1> {
  %0 = fx.call_function "aten::full"() {args = {size = array<i64: 10>, fill_value = 6 : i64, dtype = i1}} : () -> tensor<10xi1>
  fx.output %0 : tensor<10xi1>
}

// -----

// leaky_relu keeps positive values and scales the rest (NaN stays NaN);
// clamp with tensor bounds is a maximum, then a minimum.
// CHECK-LABEL: func.func @leaky_clamp
// CHECK: %[[POS:.*]] = prim.compare gt, %arg0
// CHECK: %[[SC:.*]] = prim.mul %arg0
// CHECK: prim.where %[[POS]], %arg0, %[[SC]]
// CHECK: %[[LO:.*]] = prim.maximum %arg0, %arg1
// CHECK: prim.minimum %[[LO]], %arg2
fx.graph @leaky_clamp(%x: tensor<4xf32>, %lo: tensor<4xf32>, %hi: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = fx.call_function "aten::leaky_relu"(%x) {args = {negative_slope = 2.0e-01 : f64}} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = fx.call_function "aten::clamp.Tensor"(%x, %lo, %hi) {tensor_arg_sizes = array<i32: 1, 1, 1>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  fx.output %0, %1 : tensor<4xf32>, tensor<4xf32>
}
