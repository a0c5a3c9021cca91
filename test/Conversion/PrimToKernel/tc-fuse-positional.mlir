// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A value computed from positions alone (iotas, a logarithm of their
// distance, a gather from a small table: T5's relative position bias) that
// two kernels read is realized once, by a kernel of its own; the two
// reductions then load it instead of computing the logarithm and the
// gather again at every point of each of their passes.

// CHECK-LABEL: kernel.kernel @bias_fused_
// CHECK-SAME: memref<8x4xf32>, %[[B:.*]]: memref<4x64x64xf32>)
// CHECK: math.log
// CHECK: memref.load %{{.*}} : memref<8x4xf32>
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[B]]
// CHECK-LABEL: kernel.kernel @bias_fused_
// CHECK-NOT: math.log
// CHECK: kernel.reduce max
// CHECK: memref.load %{{.*}} : memref<4x64x64xf32>
// CHECK-LABEL: kernel.kernel @bias_fused_
// CHECK-NOT: math.log
// CHECK: kernel.reduce add
// CHECK: memref.load %{{.*}} : memref<4x64x64xf32>
func.func @bias(%t: tensor<8x4xf32>, %x: tensor<2x4x64x64xf32>, %y: tensor<2x4x64x64xf32>) -> (tensor<2x4x64xf32>, tensor<2x4x64xf32>) {
  %r = prim.iota shape [64, 64], dim 0 : i64
  %c = prim.iota shape [64, 64], dim 1 : i64
  %d = prim.sub %c, %r : tensor<64x64xi64>
  %a = prim.abs %d : tensor<64x64xi64>
  %f = prim.convert %a to f32 : tensor<64x64xi64>
  %l = prim.log %f : tensor<64x64xf32>
  %i = prim.convert %l to i64 : tensor<64x64xf32>
  %g = prim.gather %t[%i], dim 0 : tensor<8x4xf32>, tensor<64x64xi64>
  %p = prim.permute %g, [2, 0, 1] : tensor<64x64x4xf32>
  %e = prim.exp %p : tensor<4x64x64xf32>
  %bb = prim.broadcast_in_dim %e, shape [2, 4, 64, 64], dims [1, 2, 3] : tensor<4x64x64xf32>
  %s1 = prim.add %x, %bb : tensor<2x4x64x64xf32>
  %m1 = prim.reduce max %s1, dims [3] : tensor<2x4x64x64xf32>
  %s2 = prim.add %y, %bb : tensor<2x4x64x64xf32>
  %m2 = prim.reduce sum %s2, dims [3] : tensor<2x4x64x64xf32>
  return %m1, %m2 : tensor<2x4x64xf32>, tensor<2x4x64xf32>
}

// -----

// Read by one kernel, the same value stays inline: no kernel of its own.
// CHECK-LABEL: kernel.kernel @alone_fused_
// CHECK-SAME: (%{{.*}}: memref<2x4x64x64xf32>, %{{.*}}: memref<8x4xf32>, %{{.*}}: memref<2x4x64xf32>)
// CHECK: kernel.reduce max
// CHECK: math.log
// CHECK-NOT: kernel.kernel
func.func @alone(%t: tensor<8x4xf32>, %x: tensor<2x4x64x64xf32>) -> tensor<2x4x64xf32> {
  %r = prim.iota shape [64, 64], dim 0 : i64
  %c = prim.iota shape [64, 64], dim 1 : i64
  %d = prim.sub %c, %r : tensor<64x64xi64>
  %a = prim.abs %d : tensor<64x64xi64>
  %f = prim.convert %a to f32 : tensor<64x64xi64>
  %l = prim.log %f : tensor<64x64xf32>
  %i = prim.convert %l to i64 : tensor<64x64xf32>
  %g = prim.gather %t[%i], dim 0 : tensor<8x4xf32>, tensor<64x64xi64>
  %p = prim.permute %g, [2, 0, 1] : tensor<64x64x4xf32>
  %e = prim.exp %p : tensor<4x64x64xf32>
  %bb = prim.broadcast_in_dim %e, shape [2, 4, 64, 64], dims [1, 2, 3] : tensor<4x64x64xf32>
  %s1 = prim.add %x, %bb : tensor<2x4x64x64xf32>
  %m1 = prim.reduce max %s1, dims [3] : tensor<2x4x64x64xf32>
  return %m1 : tensor<2x4x64xf32>
}
