// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// avg_pool2d: one strided slice per kernel position of the padded input,
// summed, divided by eager's per-position count (from iotas).
// CHECK-LABEL: func.func @avg_pool2d
// CHECK: %[[PAD:.*]] = prim.pad %{{.*}}, low [0, 0, 1, 1], high [0, 0, 0, 0], interior [0, 0, 0, 0], value 0.000000e+00 : tensor<1x2x5x5xf32>
// CHECK-COUNT-4: prim.slice %[[PAD]]
// CHECK: prim.iota shape [3], dim 0 : i64
// CHECK: %[[ROWS:.*]] = prim.broadcast_in_dim %{{.*}}, shape [1, 2, 3, 3], dims [2] : tensor<3xf32>
// CHECK: %[[COLS:.*]] = prim.broadcast_in_dim %{{.*}}, shape [1, 2, 3, 3], dims [3] : tensor<3xf32>
// CHECK: %[[COUNT:.*]] = prim.mul %[[ROWS]], %[[COLS]]
// CHECK: prim.div %{{.*}}, %[[COUNT]] : tensor<1x2x3x3xf32>
fx.graph @avg_pool2d(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = fx.call_function "aten::avg_pool2d"(%x) {args = {kernel_size = [2, 2], stride = [2, 2], padding = [1, 1], count_include_pad = false}} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  fx.output %0 : tensor<1x2x3x3xf32>
}

// -----

// A transposed convolution: the input dilated by the stride and padded,
// the kernel's channels swapped and its window flipped, a stride-1
// convolution.
// CHECK-LABEL: func.func @conv_transpose
// CHECK: %[[DIL:.*]] = prim.pad %{{.*}}, low [0, 0, 1], high [0, 0, 2], interior [0, 0, 1], value 0.000000e+00 : tensor<1x2x4xf32>
// CHECK: %[[SWAP:.*]] = prim.permute %{{.*}}, [1, 0, 2] : tensor<2x3x3xf32>
// CHECK: %[[FLIP:.*]] = prim.gather %[[SWAP]][%{{.*}}], dim 2 : tensor<3x2x3xf32>, tensor<3xi64>
// CHECK: prim.convolution %[[DIL]], %[[FLIP]], stride [1], padding [0], dilation [1], groups 1 : tensor<1x2x10xf32>, tensor<3x2x3xf32>
fx.graph @conv_transpose(%x: tensor<1x2x4xf32>, %w: tensor<2x3x3xf32>) -> tensor<1x3x8xf32> {
  %0 = fx.call_function "aten::convolution"(%x, %w) {args = {stride = [2], padding = [1], dilation = [1], transposed = true, output_padding = [1], groups = 1 : i64}, tensor_arg_sizes = array<i32: 1, 1, 0>} : (tensor<1x2x4xf32>, tensor<2x3x3xf32>) -> tensor<1x3x8xf32>
  fx.output %0 : tensor<1x3x8xf32>
}

// -----

// _adaptive_avg_pool3d: each spatial dimension contracted with its
// averaging matrix.
// CHECK-LABEL: func.func @adaptive_avg_pool3d
// CHECK-COUNT-3: prim.dot
fx.graph @adaptive_avg_pool3d(%x: tensor<1x2x3x4x5xf32>) -> tensor<1x2x2x2x2xf32> {
  %0 = fx.call_function "aten::_adaptive_avg_pool3d"(%x) {args = {output_size = [2, 2, 2]}} : (tensor<1x2x3x4x5xf32>) -> tensor<1x2x2x2x2xf32>
  fx.output %0 : tensor<1x2x2x2x2xf32>
}

// -----

// histc: each value's bin in the input's float type, then a scatter-add of
// ones there (values outside the range at `bins`, which it drops).
// CHECK-LABEL: func.func @histc
// CHECK: prim.floor %{{.*}} : tensor<6xf32>
// CHECK: %[[OUT:.*]] = prim.constant dense<4> : tensor<6xi64>
// CHECK: %[[BIN:.*]] = prim.where %{{.*}}, %{{.*}}, %[[OUT]]
// CHECK: prim.scatter_add %{{.*}}[%[[BIN]]] : tensor<6xf32>, tensor<6xi64> -> tensor<4xf32>
// CHECK-NOT: tensor<4x6
fx.graph @histc(%x: tensor<2x3xf32>) -> tensor<4xf32> {
  %0 = fx.call_function "aten::histc"(%x) {args = {bins = 4 : i64, min = 0.0 : f64, max = 1.0 : f64}} : (tensor<2x3xf32>) -> tensor<4xf32>
  fx.output %0 : tensor<4xf32>
}

// -----

// Grouped and transposed: the kernel's channels swap within each group,
// (C_in, C_out / G, k) -> (G, C_in / G, C_out / G, k) -> (C_out, C_in / G, k).
// CHECK-LABEL: func.func @grouped_transposed
// CHECK: %[[G:.*]] = prim.reshape %{{.*}}, shape [2, 1, 1, 3] : tensor<2x1x3xf32>
// CHECK: %[[S:.*]] = prim.permute %[[G]], [0, 2, 1, 3] : tensor<2x1x1x3xf32>
// CHECK: prim.reshape %[[S]], shape [2, 1, 3]
// CHECK: prim.convolution %{{.*}}, %{{.*}}, stride [1], padding [0], dilation [1], groups 2 : tensor<1x2x8xf32>, tensor<2x1x3xf32>
fx.graph @grouped_transposed(%x: tensor<1x2x4xf32>, %w: tensor<2x1x3xf32>) -> tensor<1x2x6xf32> {
  %0 = fx.call_function "aten::convolution"(%x, %w) {args = {stride = [1], padding = [0], dilation = [1], transposed = true, output_padding = [0], groups = 2 : i64}, tensor_arg_sizes = array<i32: 1, 1, 0>} : (tensor<1x2x4xf32>, tensor<2x1x3xf32>) -> tensor<1x2x6xf32>
  fx.output %0 : tensor<1x2x6xf32>
}

// -----

// adaptive_max_pool2d: every position against every window; the maximum,
// and the first position holding it (the last NaN).
// CHECK-LABEL: func.func @adaptive_max_pool2d
// CHECK: %[[V:.*]] = prim.reduce max %{{.*}}, dims [3, 4] : tensor<2x2x2x5x3xf32>
// CHECK: %[[FIRST:.*]] = prim.reduce min %{{.*}}, dims [3, 4] : tensor<2x2x2x5x3xi64>
// CHECK: %[[LAST:.*]] = prim.reduce max %{{.*}}, dims [3, 4] : tensor<2x2x2x5x3xi64>
// CHECK: prim.where %{{.*}}, %[[LAST]], %[[FIRST]]
fx.graph @adaptive_max_pool2d(%x: tensor<2x5x3xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xi64>) {
  %0:2 = fx.call_function "aten::adaptive_max_pool2d"(%x) {args = {output_size = [2, 2]}} : (tensor<2x5x3xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xi64>)
  fx.output %0#0, %0#1 : tensor<2x2x2xf32>, tensor<2x2x2xi64>
}

// -----

// histogram with given edges: a value's bin is the number of edges at or
// below it, less one (the last bin closed), counted per bin.
// CHECK-LABEL: func.func @histogram_edges
// CHECK: %[[LE:.*]] = prim.compare le, %{{.*}}, %{{.*}} : tensor<6x4xf32>
// CHECK: %[[BELOW:.*]] = prim.reduce sum %{{.*}}, dims [1] : tensor<6x4xi64>
// CHECK: %[[BIN:.*]] = prim.minimum %{{.*}}, %{{.*}} : tensor<6xi64>
// CHECK: prim.reduce sum %{{.*}}, dims [1] : tensor<3x6xf32>
fx.graph @histogram_edges(%x: tensor<6xf32>, %edges: tensor<4xf32>) -> (tensor<3xf32>, tensor<4xf32>) {
  %0:2 = fx.call_function "aten::histogram.bins_tensor"(%x, %edges) {tensor_arg_sizes = array<i32: 1, 1, 0>} : (tensor<6xf32>, tensor<4xf32>) -> (tensor<3xf32>, tensor<4xf32>)
  fx.output %0#0, %0#1 : tensor<3xf32>, tensor<4xf32>
}
