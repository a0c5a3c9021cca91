// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// A convolution is prim.convolution, its bias an add over channels (the
// im2col expansion is tc-expand-convolutions', run by targets without a
// library convolution).
// CHECK-LABEL: func.func @conv
// CHECK: %[[C:.*]] = prim.convolution %arg0, %arg1, stride [2, 2], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x3x5x5xf32>, tensor<4x3x2x2xf32>
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %arg2, shape [2, 4, 3, 3], dims [1]
// CHECK: prim.add %[[C]], %[[B]]
fx.graph @conv(%x: tensor<2x3x5x5xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x3xf32> {
  %0 = fx.call_function "aten::convolution"(%x, %w, %b) {args = {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, transposed = false, output_padding = array<i64: 0, 0>, groups = 1 : i64}} : (tensor<2x3x5x5xf32>, tensor<4x3x2x2xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  fx.output %0 : tensor<2x4x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @grouped
// CHECK: prim.convolution %arg0, %arg1, stride [1, 1], padding [0, 0], dilation [1, 1], groups 2
fx.graph @grouped(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = fx.call_function "aten::convolution"(%x, %w) {args = {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, transposed = false, output_padding = array<i64: 0, 0>, groups = 2 : i64}} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  fx.output %0 : tensor<1x4x3x3xf32>
}

// -----

// The result's spatial size must be what the window gives.
fx.graph @wrong_size(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32> {
  // expected-error @+1 {{does not match the input}}
  %0 = fx.call_function "aten::convolution"(%x, %w) {args = {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, transposed = false, output_padding = array<i64: 0, 0>, groups = 1 : i64}} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
  fx.output %0 : tensor<1x3x5x5xf32>
}

// -----

// constant_pad_nd: (before, after) pairs from the last dimension backwards.
// CHECK-LABEL: func.func @pad
// CHECK: prim.pad %arg0, low [0, 2, 1], high [0, 0, -1], interior [0, 0, 0], value 1.500000e+00 : tensor<2x3x4xf32>
fx.graph @pad(%x: tensor<2x3x4xf32>) -> tensor<2x5x4xf32> {
  %0 = fx.call_function "aten::constant_pad_nd"(%x) {args = {pad = array<i64: 1, -1, 2, 0>, value = 1.5 : f64}} : (tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
  fx.output %0 : tensor<2x5x4xf32>
}
