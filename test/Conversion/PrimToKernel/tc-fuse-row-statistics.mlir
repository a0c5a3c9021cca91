// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A training forward's layer norm returns its row sums for the backward
// (tc-partition saves them: tc-partition.mlir @layer_norm). The norm's
// kernel computes them at each row anyway and stores them there: one
// kernel, not a kernel per sum and one for the rows.
// CHECK-LABEL: kernel.kernel @main_fused_div_add_rsqrt_mul_0
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[S:.*]]: memref<4xf32>, %[[SS:.*]]: memref<4xf32>, %[[Y:.*]]: memref<4x8xf32>)
// CHECK: %[[ROW:.*]] = kernel.index 0
// CHECK: %[[SUM:.*]] = kernel.reduce add
// CHECK: memref.store %[[SUM]], %[[S]][%[[ROW]]]
// CHECK: %[[SQUARES:.*]] = kernel.reduce add
// CHECK: memref.store %[[SQUARES]], %[[SS]][%[[ROW]]]
// CHECK: kernel.loop
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK-LABEL: kernel.schedule @main
// CHECK-SAME: (%[[AX:.*]]: memref<4x8xf32>, %[[AY:.*]]: memref<4x8xf32>, %[[AS:.*]]: memref<4xf32>, %[[ASS:.*]]: memref<4xf32>)
// CHECK-NEXT: kernel.launch @main_fused_div_add_rsqrt_mul_0(%[[AX]], %[[AS]], %[[ASS]], %[[AY]])
// CHECK-NEXT: kernel.return
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %n = prim.constant dense<8.0> : tensor<4xf32>
  %eps = prim.constant dense<1.0e-5> : tensor<4xf32>
  %s = prim.reduce sum %x, dims [1] : tensor<4x8xf32>
  %mean = prim.div %s, %n : tensor<4xf32>
  %bm = prim.broadcast_in_dim %mean, shape [4, 8], dims [0] : tensor<4xf32>
  %c = prim.sub %x, %bm : tensor<4x8xf32>
  %sq = prim.mul %c, %c : tensor<4x8xf32>
  %ss = prim.reduce sum %sq, dims [1] : tensor<4x8xf32>
  %var = prim.div %ss, %n : tensor<4xf32>
  %ve = prim.add %var, %eps : tensor<4xf32>
  %r = prim.rsqrt %ve : tensor<4xf32>
  %br = prim.broadcast_in_dim %r, shape [4, 8], dims [0] : tensor<4xf32>
  %y = prim.mul %c, %br : tensor<4x8xf32>
  return %y, %s, %ss : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A sum read along the kernel's columns (one element per row, but not the
// row's own: y[i, j] = x[j, i] + s[j]) would be computed inside the row's
// loop: it keeps its own kernel, which the other reads.
// CHECK-LABEL: kernel.kernel @main_fused_reduce_0
// CHECK-LABEL: kernel.kernel @main_fused_add_1
// CHECK-LABEL: kernel.schedule @main
// CHECK: kernel.launch @main_fused_reduce_0
// CHECK: kernel.launch @main_fused_add_1
func.func @main(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  %s = prim.reduce sum %x, dims [1] : tensor<4x4xf32>
  %t = prim.permute %x, [1, 0] : tensor<4x4xf32>
  %b = prim.broadcast_in_dim %s, shape [4, 4], dims [1] : tensor<4xf32>
  %y = prim.add %t, %b : tensor<4x4xf32>
  return %y, %s : tensor<4x4xf32>, tensor<4xf32>
}
