// RUN: tc-opt %s -tc-fuse | FileCheck %s --check-prefix=POINTS
// RUN: tc-opt %s -tc-fuse=loop-past-unit-dims | FileCheck %s --check-prefix=LOOP

// A 1x1 convolution's weight standardized per output channel (NFNet's
// ScaledStdConv2d): [O, C, 1, 1]. By default the kernel's inner loop runs
// over the last dimension, here one point, under a domain of every (o, c);
// with loop-past-unit-dims (the CPU's choice) the loop runs over the C
// channels, which vectorizes, and the unit dimensions are indexed at 0.
// POINTS: kernel.kernel @weights_fused{{.*}} attributes {domain = array<i64: 64, 32, 1>}
// POINTS: kernel.loop %c1
// LOOP: kernel.kernel @weights_fused{{.*}} attributes {domain = array<i64: 64>}
// LOOP: kernel.loop %c32
// LOOP: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %c0, %c0] : memref<64x32x1x1xf32>
func.func @weights(%w: tensor<64x32x1x1xf32>, %g: tensor<64x1x1x1xf32>) -> tensor<64x32x1x1xf32> {
  %b = prim.broadcast_in_dim %g, shape [64, 32, 1, 1], dims [0, 1, 2, 3] : tensor<64x1x1x1xf32>
  %y = prim.mul %w, %b : tensor<64x32x1x1xf32>
  return %y : tensor<64x32x1x1xf32>
}
