// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// Convolutions and their gradients are library calls on buffers: their
// operands are realized, and what reads their results is a kernel of its
// own (one for the ReLU and its gradient's mask, siblings that both read
// the convolution's result). Each kernel.conv names the forward's input,
// weight and output buffers and which of them it writes.
// CHECK-LABEL: kernel.schedule @train
// CHECK-SAME: (%[[X:[^:]*]]: memref<2x3x8x8xf32>, %[[W:[^:]*]]: memref<4x3x3x3xf32>, %[[G:[^:]*]]: memref<2x4x8x8xf32>, %[[OY:[^:]*]]: memref<2x4x8x8xf32>, %[[ODX:[^:]*]]: memref<2x3x8x8xf32>, %[[ODW:[^:]*]]: memref<4x3x3x3xf32>)
// CHECK: %[[C:.*]] = memref.alloc() : memref<2x4x8x8xf32>
// CHECK: kernel.conv forward %[[X]], %[[W]], %[[C]] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
// CHECK: %[[GR:.*]] = memref.alloc() : memref<2x4x8x8xf32>
// CHECK: kernel.launch @train_fused_{{.*}}(%[[C]], %[[G]], %[[GR]], %[[OY]])
// CHECK-DAG: kernel.conv backward_input %[[ODX]], %[[W]], %[[GR]] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
// CHECK-DAG: kernel.conv backward_weight %[[X]], %[[ODW]], %[[GR]] stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
func.func @train(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) {
  %c = prim.convolution %x, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  %zero = prim.constant dense<0.0> : tensor<2x4x8x8xf32>
  %y = prim.maximum %c, %zero : tensor<2x4x8x8xf32>
  %pos = prim.compare gt, %c, %zero : tensor<2x4x8x8xf32>
  %gr = prim.where %pos, %g, %zero : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %dx = prim.convolution_backward_input %gr, %w, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  %dw = prim.convolution_backward_weight %gr, %x, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32> -> tensor<4x3x3x3xf32>
  return %y, %dx, %dw : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
}
