// RUN: tc-opt %s -tc-fuse | FileCheck %s

// Rows written through a reshape ([2, 16, 1000] as [32, 1000], as a
// language model's logits are): the row's coordinates (row / 16, row % 16) depend on
// the kernel's row alone, so they are computed before the row's loop, and
// so is the row's sum that reads at them. Computed where the loop first
// needed them, they put the reduction inside the loop: 1000 sums of 1000
// elements per row (cross-entropy's backward at a 32k vocabulary took half
// a second on the H100).
// CHECK-LABEL: kernel.kernel @rows_fused
// CHECK: %[[ROW:.*]] = kernel.index 0
// CHECK-DAG: arith.remui %[[ROW]]
// CHECK-DAG: arith.divui %[[ROW]]
// CHECK: %[[SUM:.*]] = kernel.reduce add
// CHECK: kernel.loop
// CHECK-NOT: kernel.reduce
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// CHECK: kernel.return
func.func @rows(%x: tensor<32x1000xf32>) -> tensor<32x1000xf32> {
  %r = prim.reshape %x, shape [2, 16, 1000] : tensor<32x1000xf32>
  %e = prim.exp %r : tensor<2x16x1000xf32>
  %s = prim.reduce sum %e, dims [2] : tensor<2x16x1000xf32>
  %b = prim.broadcast_in_dim %s, shape [2, 16, 1000], dims [0, 1] : tensor<2x16xf32>
  %d = prim.div %e, %b : tensor<2x16x1000xf32>
  %o = prim.reshape %d, shape [32, 1000] : tensor<2x16x1000xf32>
  return %o : tensor<32x1000xf32>
}

// A 3x3x3 window's argmax rescanned by the gather that reads it, the argmax
// an output too (training): 27 points, each select reading the previous
// best. Hoisting the gather's index walked every path of that chain (2^27:
// max_pool3d with ceil_mode never finished compiling); each op is visited
// once now.
// CHECK-LABEL: kernel.kernel @pool3d_fused_window_gather_1
// CHECK-COUNT-26: arith.cmpf ogt
// CHECK: kernel.return
func.func @pool3d(%x: tensor<1x2x3x6x5xf32>) -> (tensor<1x2x1x3x2xf32>, tensor<1x2x1x3x2xi8>) {
  %0 = prim.window_argmax %x, window [3, 3, 3], strides [2, 2, 2], padding [0, 0, 0], dilation [1, 1, 1] : tensor<1x2x3x6x5xf32> -> tensor<1x2x1x3x2xi8>
  %1 = prim.window_gather %x[%0], window [3, 3, 3], strides [2, 2, 2], padding [0, 0, 0], dilation [1, 1, 1] : tensor<1x2x3x6x5xf32>, tensor<1x2x1x3x2xi8> -> tensor<1x2x1x3x2xf32>
  return %1, %0 : tensor<1x2x1x3x2xf32>, tensor<1x2x1x3x2xi8>
}

// The values alone (inference: nothing else reads the argmax): a chain of
// NaN-propagating maxima, without a bound test of a dimension every window
// keeps inside the input (the last, window 1 and stride 1: a channels-last
// channel, whose clamp kept LLVM from seeing consecutive loads).
// CHECK-LABEL: kernel.kernel @pool_values_fused_window_argmax_window_gather_0
// CHECK-NOT: arith.cmpf
// CHECK-COUNT-9: arith.maximumf
// CHECK-NOT: arith.maximumf
// CHECK: kernel.return
func.func @pool_values(%x: tensor<2x6x5x4xf32>) -> tensor<2x3x3x4xf32> {
  %0 = prim.window_argmax %x, window [3, 3, 1], strides [2, 2, 1], padding [1, 1, 0], dilation [1, 1, 1] : tensor<2x6x5x4xf32> -> tensor<2x3x3x4xi8>
  %1 = prim.window_gather %x[%0], window [3, 3, 1], strides [2, 2, 1], padding [1, 1, 0], dilation [1, 1, 1] : tensor<2x6x5x4xf32>, tensor<2x3x3x4xi8> -> tensor<2x3x3x4xf32>
  return %1 : tensor<2x3x3x4xf32>
}

// A ReLU before the values alone is computed at each window point in the
// pooling's one kernel (as Inductor fuses it), not realized and read back.
// CHECK-LABEL: kernel.kernel @relu_pool_fused_maximum_window_argmax_window_gather_0
// CHECK-NOT: kernel.kernel
// CHECK: kernel.schedule @relu_pool
// CHECK-NEXT: kernel.launch @relu_pool_fused_maximum_window_argmax_window_gather_0
// CHECK-NEXT: kernel.return
func.func @relu_pool(%x: tensor<2x6x5x4xf32>) -> tensor<2x3x3x4xf32> {
  %zero = prim.constant dense<0.0> : tensor<2x6x5x4xf32>
  %r = prim.maximum %x, %zero : tensor<2x6x5x4xf32>
  %0 = prim.window_argmax %r, window [3, 3, 1], strides [2, 2, 1], padding [1, 1, 0], dilation [1, 1, 1] : tensor<2x6x5x4xf32> -> tensor<2x3x3x4xi8>
  %1 = prim.window_gather %r[%0], window [3, 3, 1], strides [2, 2, 1], padding [1, 1, 0], dilation [1, 1, 1] : tensor<2x6x5x4xf32>, tensor<2x3x3x4xi8> -> tensor<2x3x3x4xf32>
  return %1 : tensor<2x3x3x4xf32>
}
