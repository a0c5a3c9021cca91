// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// A 2x2 convolution, stride 2, padding 1, as one matrix product (im2col):
// the input is padded once, the strided window of each of the four kernel
// offsets laid out as (N * out, C) rows, the four side by side times the
// weights as (K * C, O); then (N, O, out...) and the bias over channels.
// CHECK-LABEL: func.func @conv
// CHECK: %[[P:.*]] = prim.pad %arg0, low [0, 0, 1, 1], high [0, 0, 1, 1], interior [0, 0, 0, 0]
// CHECK: prim.slice %[[P]], start [0, 0, 0, 0], limit [2, 3, 5, 5], strides [1, 1, 2, 2]
// CHECK: %[[R0:.*]] = prim.reshape %{{.*}}, shape [18, 3]
// CHECK: prim.slice %[[P]], start [0, 0, 0, 1], limit [2, 3, 5, 6], strides [1, 1, 2, 2]
// CHECK: %[[R1:.*]] = prim.reshape %{{.*}}, shape [18, 3]
// CHECK: prim.slice %[[P]], start [0, 0, 1, 0], limit [2, 3, 6, 5], strides [1, 1, 2, 2]
// CHECK: %[[R2:.*]] = prim.reshape %{{.*}}, shape [18, 3]
// CHECK: prim.slice %[[P]], start [0, 0, 1, 1], limit [2, 3, 6, 6], strides [1, 1, 2, 2]
// CHECK: %[[R3:.*]] = prim.reshape %{{.*}}, shape [18, 3]
// CHECK: %[[ROWS:.*]] = prim.concatenate %[[R0]], %[[R1]], %[[R2]], %[[R3]] dim 1
// CHECK: %[[WT:.*]] = prim.permute %arg1, [2, 3, 1, 0]
// CHECK: %[[COLS:.*]] = prim.reshape %[[WT]], shape [12, 4]
// CHECK: %[[D:.*]] = prim.dot %[[ROWS]], %[[COLS]], batch [] x [], contract [1] x [0] : tensor<18x12xf32>, tensor<12x4xf32>
// CHECK-NOT: prim.dot
// CHECK: %[[Y:.*]] = prim.reshape %[[D]], shape [2, 3, 3, 4] : tensor<18x4xf32>
// CHECK: %[[T:.*]] = prim.permute %[[Y]], [0, 3, 1, 2]
// CHECK: %[[B:.*]] = prim.broadcast_in_dim %arg2, shape [2, 4, 3, 3], dims [1]
// CHECK: prim.add %[[T]], %[[B]]
fx.graph @conv(%x: tensor<2x3x5x5xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x3xf32> {
  %0 = fx.call_function "aten::convolution"(%x, %w, %b) {args = {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, transposed = false, output_padding = array<i64: 0, 0>, groups = 1 : i64}} : (tensor<2x3x5x5xf32>, tensor<4x3x2x2xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  fx.output %0 : tensor<2x4x3x3xf32>
}

// -----

fx.graph @grouped(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{cannot decompose 'aten::convolution': grouped convolutions are not supported yet}}
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
