// RUN: tc-opt %s -tc-expand-convolutions="unit-maps-only=true" | FileCheck %s

// With unit-maps-only (the CPU's fusion stage), a squeeze-and-excitation
// layer, a 1x1 kernel over the pooled 1x1 maps, is one product; a 1x1
// kernel over larger maps, a 3x3 kernel, a grouped or a padded one stay
// library convolutions.
// The weights are a Linear layer's: (O, C) rows, transposed by a permute
// the GEMM reads in place.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK: %[[ROWS:.*]] = prim.reshape %arg0, shape [2, 96]
// CHECK: %[[W:.*]] = prim.reshape %arg1, shape [4, 96]
// CHECK: %[[WT:.*]] = prim.permute %[[W]], [1, 0]
// CHECK: %[[D:.*]] = prim.dot %[[ROWS]], %[[WT]], batch [] x [], contract [1] x [0] : tensor<2x96xf32>, tensor<96x4xf32>
// CHECK: prim.reshape %[[D]], shape [2, 4, 1, 1]
// CHECK-NOT: prim.convolution
func.func @squeeze_excite(%x: tensor<2x96x1x1xf32>, %w: tensor<4x96x1x1xf32>) -> tensor<2x4x1x1xf32> {
  %0 = prim.convolution %x, %w, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x96x1x1xf32>, tensor<4x96x1x1xf32>
  return %0 : tensor<2x4x1x1xf32>
}

// CHECK-LABEL: func.func @others_stay
// CHECK-COUNT-4: prim.convolution
// CHECK-NOT: prim.dot
func.func @others_stay(%x: tensor<2x8x7x7xf32>, %u: tensor<2x8x1x1xf32>,
                       %w1: tensor<4x8x1x1xf32>, %w3: tensor<4x8x3x3xf32>,
                       %wg: tensor<8x4x1x1xf32>)
    -> (tensor<2x4x7x7xf32>, tensor<2x4x5x5xf32>, tensor<2x8x1x1xf32>, tensor<2x4x3x3xf32>) {
  %0 = prim.convolution %x, %w1, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x7x7xf32>, tensor<4x8x1x1xf32>
  %1 = prim.convolution %x, %w3, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 : tensor<2x8x7x7xf32>, tensor<4x8x3x3xf32>
  %2 = prim.convolution %u, %wg, stride [1, 1], padding [0, 0], dilation [1, 1], groups 2 : tensor<2x8x1x1xf32>, tensor<8x4x1x1xf32>
  %3 = prim.convolution %u, %w1, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x8x1x1xf32>, tensor<4x8x1x1xf32>
  return %0, %1, %2, %3 : tensor<2x4x7x7xf32>, tensor<2x4x5x5xf32>, tensor<2x8x1x1xf32>, tensor<2x4x3x3xf32>
}
