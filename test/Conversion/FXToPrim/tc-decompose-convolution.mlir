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

// -----

// Max pooling: the position of each window's maximum, then the value
// there; with the indices unused, no index arithmetic.
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[K:.*]] = prim.window_argmax %arg0, window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1] : tensor<2x3x9x8xf32> -> tensor<2x3x5x4xi8>
// CHECK: %[[Y:.*]] = prim.window_gather %arg0[%[[K]]], window [3, 3], strides [2, 2], padding [1, 1], dilation [1, 1]
// CHECK-NOT: prim.iota
// CHECK: return %[[Y]]
fx.graph @max_pool(%x: tensor<2x3x9x8xf32>) -> tensor<2x3x5x4xf32> {
  %0:2 = fx.call_function "aten::max_pool2d_with_indices"(%x) {args = {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false}} : (tensor<2x3x9x8xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5x4xi64>)
  fx.output %0#0 : tensor<2x3x5x4xf32>
}

// -----

// The indices, as eager's: (oh * 2 - 1 + kh) * 8 + (ow * 2 - 1 + kw) for
// the maximum's window row kh = k / 3 and column kw = k % 3. Ceil mode
// makes a last, partial window (9 rows: 5 windows of 2 at stride 2).
// CHECK-LABEL: func.func @max_pool_indices
// CHECK: %[[K:.*]] = prim.window_argmax %arg0, window [2, 3], strides [2, 2], padding [0, 1], dilation [1, 1] : tensor<3x9x8xf32> -> tensor<3x5x4xi8>
// CHECK: %[[K64:.*]] = prim.convert %[[K]] to i64 : tensor<3x5x4xi8>
// CHECK-DAG: prim.div %[[K64]], %{{.*}} : tensor<3x5x4xi64>
// CHECK-DAG: prim.rem %[[K64]], %{{.*}} : tensor<3x5x4xi64>
// CHECK-DAG: prim.iota shape [3, 5, 4], dim 1 : i64
// CHECK-DAG: prim.iota shape [3, 5, 4], dim 2 : i64
// CHECK: return %{{.*}}, %{{.*}} : tensor<3x5x4xf32>, tensor<3x5x4xi64>
fx.graph @max_pool_indices(%x: tensor<3x9x8xf32>) -> (tensor<3x5x4xf32>, tensor<3x5x4xi64>) {
  %0:2 = fx.call_function "aten::max_pool2d_with_indices"(%x) {args = {kernel_size = array<i64: 2, 3>, stride = array<i64: 2, 2>, padding = array<i64: 0, 1>, dilation = array<i64: 1, 1>, ceil_mode = true}} : (tensor<3x9x8xf32>) -> (tensor<3x5x4xf32>, tensor<3x5x4xi64>)
  fx.output %0#0, %0#1 : tensor<3x5x4xf32>, tensor<3x5x4xi64>
}

// -----

// Windows past 256 points are left to eager.
fx.graph @max_pool_huge(%x: tensor<1x40x40xf32>) -> tensor<1x2x2xf32> {
  // expected-error @+1 {{windows of 400 points are not supported (at most 256)}}
  %0:2 = fx.call_function "aten::max_pool2d_with_indices"(%x) {args = {kernel_size = array<i64: 20, 20>, stride = array<i64: 20, 20>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false}} : (tensor<1x40x40xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x2xi64>)
  fx.output %0#0 : tensor<1x2x2xf32>
}

// -----

// A result that is not the pooling's shape is diagnosed at the op.
fx.graph @max_pool_wrong_size(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x3x3xf32> {
  // expected-error @+1 {{does not match the input 'tensor<1x2x8x8xf32>' and window}}
  %0:2 = fx.call_function "aten::max_pool2d_with_indices"(%x) {args = {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false}} : (tensor<1x2x8x8xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
  fx.output %0#0 : tensor<1x2x3x3xf32>
}
