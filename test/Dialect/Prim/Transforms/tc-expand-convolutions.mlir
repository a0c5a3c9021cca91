// RUN: tc-opt %s -tc-expand-convolutions -split-input-file -verify-diagnostics | FileCheck %s

// A 2x2 convolution, stride 2, padding 1, as one matrix product (im2col):
// the input is padded once, the strided window of each of the four kernel
// offsets laid out as (N * out, C) rows, the four side by side times the
// weights as (K * C, O); then (N, O, out...).
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
// CHECK: return %[[T]]
// CHECK-NOT: prim.convolution
func.func @conv(%x: tensor<2x3x5x5xf32>, %w: tensor<4x3x2x2xf32>) -> tensor<2x4x3x3xf32> {
  %0 = prim.convolution %x, %w, stride [2, 2], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x3x5x5xf32>, tensor<4x3x2x2xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// -----

// Without padding there is no pad; a dilated window starts its offsets
// `dilation` apart.
// CHECK-LABEL: func.func @dilated
// CHECK-NOT: prim.pad
// CHECK: prim.slice %arg0, start [0, 0, 0, 0], limit [1, 2, 1, 5]
// CHECK: prim.slice %arg0, start [0, 0, 2, 0], limit [1, 2, 3, 5]
// CHECK: prim.dot {{.*}} : tensor<5x4xf32>, tensor<4x3xf32>
func.func @dilated(%x: tensor<1x2x3x5xf32>, %w: tensor<3x2x2x1xf32>) -> tensor<1x3x1x5xf32> {
  %0 = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [2, 1], groups 1 : tensor<1x2x3x5xf32>, tensor<3x2x2x1xf32>
  return %0 : tensor<1x3x1x5xf32>
}

// -----

// Grouped: each window's channels split by group, the windows side by side
// per group, one product batched over the groups.
// CHECK-LABEL: func.func @grouped
// CHECK: prim.reshape %{{.*}}, shape [9, 2, 2]
// CHECK: %[[ROWS:.*]] = prim.concatenate %{{.*}} dim 2
// CHECK: %[[BYGROUP:.*]] = prim.permute %[[ROWS]], [1, 0, 2] : tensor<9x2x18xf32>
// CHECK: %[[W:.*]] = prim.reshape %{{.*}}, shape [2, 18, 2]
// CHECK: prim.dot %[[BYGROUP]], %[[W]], batch [0] x [0], contract [2] x [1] : tensor<2x9x18xf32>, tensor<2x18x2xf32>
// CHECK-NOT: prim.convolution
func.func @grouped(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 2 : tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @gradient(%dy: tensor<1x4x3x3xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  // expected-error @+1 {{'prim.convolution_backward_input' op needs a library convolution}}
  %0 = prim.convolution_backward_input %dy, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32> -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}
