// RUN: tc-opt %s -split-input-file | FileCheck %s

// Non-tensor arguments of every kind the schema language has.
// CHECK-LABEL: fx.graph @arguments
fx.graph @arguments(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<8x4xf32>, tensor<4x8xf16>, tensor<4x8xf32>) {
  // int[], bool and a dtype.
  // CHECK: "aten::sum.dim_IntList"(%{{.*}}) {args = {dim = array<i64: 1>, dtype = f32, keepdim = false}}
  %s = fx.call_function "aten::sum.dim_IntList"(%x) {args = {dim = array<i64: 1>, keepdim = false, dtype = f32}}
      : (tensor<4x8xf32>) -> tensor<4xf32>
  // ints.
  // CHECK: "aten::transpose.int"
  %t = fx.call_function "aten::transpose.int"(%x) {args = {dim0 = 0 : i64, dim1 = 1 : i64}}
      : (tensor<4x8xf32>) -> tensor<8x4xf32>
  // An optional argument set to None.
  // CHECK: "aten::_to_copy"(%{{.*}}) {args = {dtype = f16, layout}}
  %h = fx.call_function "aten::_to_copy"(%x) {args = {dtype = f16, layout}}
      : (tensor<4x8xf32>) -> tensor<4x8xf16>
  // A string and a float given as an int.
  // CHECK: "aten::gelu"(%{{.*}}) {args = {approximate = "tanh"}}
  %g = fx.call_function "aten::gelu"(%x) {args = {approximate = "tanh"}}
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  fx.output %s, %t, %h, %g : tensor<4xf32>, tensor<8x4xf32>, tensor<4x8xf16>, tensor<4x8xf32>
}

// -----

// Tensor lists and absent optional tensors use tensor_arg_sizes.
// CHECK-LABEL: fx.graph @lists
fx.graph @lists(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>, %w: tensor<4xf32>) -> (tensor<5x4xf32>, tensor<2x4xf32>) {
  // CHECK: "aten::cat"(%{{.*}}, %{{.*}}) {args = {dim = 0 : i64}, tensor_arg_sizes = array<i32: 2>}
  %c = fx.call_function "aten::cat"(%a, %b) {args = {dim = 0 : i64}, tensor_arg_sizes = array<i32: 2>}
      : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  // weight given, bias None.
  // CHECK: "aten::native_layer_norm"
  %ln:3 = fx.call_function "aten::native_layer_norm"(%a, %w) {args = {normalized_shape = [4], eps = 1.0e-05 : f64}, tensor_arg_sizes = array<i32: 1, 1, 0>}
      : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  fx.output %c, %ln#0 : tensor<5x4xf32>, tensor<2x4xf32>
}

// -----

// Trailing optional tensors may simply be left out (linear without bias),
// and an op returning Tensor[] takes any number of results.
// CHECK-LABEL: fx.graph @optional
fx.graph @optional(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  // CHECK: "aten::linear"(%{{.*}}, %{{.*}}) :
  %y = fx.call_function "aten::linear"(%x, %w) : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  // CHECK: "aten::split.Tensor"
  %s:2 = fx.call_function "aten::split.Tensor"(%x) {args = {split_size = 1 : i64}}
      : (tensor<2x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
  fx.output %y : tensor<2x3xf32>
}
