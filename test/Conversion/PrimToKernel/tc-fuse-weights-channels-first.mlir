// RUN: tc-opt %s -tc-fuse="weights-channels-first=true" -split-input-file | FileCheck %s
// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s --check-prefix=OFF

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
