// RUN: tc-opt %s -tc-fuse="weights-channels-first=true" -split-input-file | FileCheck %s
// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: tc-opt %s -tc-fuse="unit-weights-channels-first=true" -split-input-file | FileCheck %s --check-prefix=UNIT

// A channels-last convolution and its input gradient read a graph input's
// weight in PyTorch's layout: no kernel copies the weight to channels-last
// at each call. The input, an activation, is still permuted.
// CHECK-LABEL: kernel.schedule @train
// CHECK-SAME: (%[[X:[^:]*]]: memref<2x3x8x8xf32>, %[[W:[^:]*]]: memref<4x3x3x3xf32>
// CHECK-NOT: kernel.launch {{.*}}memref<4x3x3x3xf32>
// CHECK: kernel.conv forward %{{.*}}, %[[W]], %{{.*}} {{.*}} channels_last weight_channels_first : memref<2x8x8x3xf32>, memref<4x3x3x3xf32>, memref<2x8x8x4xf32>
// CHECK: kernel.conv backward_input %{{.*}}, %[[W]], %{{.*}} {{.*}} channels_last weight_channels_first : memref<2x8x8x3xf32>, memref<4x3x3x3xf32>, memref<2x8x8x4xf32>
// CHECK-NOT: kernel.launch {{.*}}memref<4x3x3x3xf32>
// CHECK: kernel.return
// The default keeps the copy.
// OFF-LABEL: kernel.schedule @train
// OFF: kernel.launch @train_copy_{{[0-9]+}}(%{{.*}}, %[[WL:.*]]) : memref<4x3x3x3xf32>, memref<4x3x3x3xf32>
// OFF: kernel.conv forward %{{.*}}, %[[WL]], %{{.*}} {{.*}} channels_last :
func.func @train(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>) {
  %xl = prim.permute %x, [0, 2, 3, 1] : tensor<2x3x8x8xf32>
  %wl = prim.permute %w, [0, 2, 3, 1] : tensor<4x3x3x3xf32>
  %y = prim.convolution %xl, %wl, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 channels_last : tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>
  %gl = prim.permute %g, [0, 2, 3, 1] : tensor<2x4x8x8xf32>
  %dx = prim.convolution_backward_input %gl, %wl, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 channels_last : tensor<2x8x8x4xf32>, tensor<4x3x3x3xf32> -> tensor<2x8x8x3xf32>
  %yf = prim.permute %y, [0, 3, 1, 2] : tensor<2x8x8x4xf32>
  %dxf = prim.permute %dx, [0, 3, 1, 2] : tensor<2x8x8x3xf32>
  return %yf, %dxf : tensor<2x4x8x8xf32>, tensor<2x3x8x8xf32>
}

// -----

// A permuted weight that something else reads too is computed, and the
// convolution reads that.
// CHECK-LABEL: kernel.schedule @shared
// CHECK: kernel.launch @shared_copy_{{[0-9]+}}(%{{.*}}, %[[WL:.*]]) : memref<4x3x3x3xf32>, memref<4x3x3x3xf32>
// CHECK: kernel.conv forward %{{.*}}, %[[WL]], %{{.*}} {{.*}} channels_last :
func.func @shared(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<2x8x8x4xf32>, tensor<4x3x3x3xf32>) {
  %xl = prim.permute %x, [0, 2, 3, 1] : tensor<2x3x8x8xf32>
  %wl = prim.permute %w, [0, 2, 3, 1] : tensor<4x3x3x3xf32>
  %y = prim.convolution %xl, %wl, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 channels_last : tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>
  return %y, %wl : tensor<2x8x8x4xf32>, tensor<4x3x3x3xf32>
}

// -----

// With unit-weights-channels-first (the CPU's choice), a 1x1 window's
// weight, whose two layouts are the same memory, is read as it is; a 3x3
// window's is copied to channels-last by tc's kernel.
// UNIT-LABEL: kernel.schedule @unit
// UNIT-SAME: (%[[X:[^:]*]]: memref<2x8x6x6xf32>, %[[W1:[^:]*]]: memref<4x8x1x1xf32>, %[[W3:[^:]*]]: memref<4x4x3x3xf32>
// UNIT-NOT: kernel.launch {{.*}}memref<4x8x1x1xf32>
// UNIT: kernel.conv forward %{{.*}}, %[[W1]], %{{.*}} {{.*}} channels_last weight_channels_first : {{.*}}memref<4x8x1x1xf32>
// UNIT: kernel.launch @unit_copy_{{[0-9]+}}(%[[W3]], %[[W3L:.*]]) : memref<4x4x3x3xf32>, memref<4x3x3x4xf32>
// UNIT: kernel.conv forward %{{.*}}, %[[W3L]], %{{.*}} {{.*}} channels_last :
// UNIT-NOT: weight_channels_first
// UNIT: kernel.return
func.func @unit(%x: tensor<2x8x6x6xf32>, %w1: tensor<4x8x1x1xf32>, %w3: tensor<4x4x3x3xf32>) -> tensor<2x6x6x4xf32> {
  %xl = prim.permute %x, [0, 2, 3, 1] : tensor<2x8x6x6xf32>
  %w1l = prim.permute %w1, [0, 2, 3, 1] : tensor<4x8x1x1xf32>
  %y = prim.convolution %xl, %w1l, stride [1, 1], padding [0, 0], dilation [1, 1], groups 1 channels_last : tensor<2x6x6x8xf32>, tensor<4x1x1x8xf32>
  %w3l = prim.permute %w3, [0, 2, 3, 1] : tensor<4x4x3x3xf32>
  %z = prim.convolution %y, %w3l, stride [1, 1], padding [1, 1], dilation [1, 1], groups 1 channels_last : tensor<2x6x6x4xf32>, tensor<4x3x3x4xf32>
  return %z : tensor<2x6x6x4xf32>
}
