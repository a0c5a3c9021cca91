// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A column sum: the output row is the whole column vector, so the
// reduction runs inside the inner loop, over the rows.
// CHECK-LABEL: kernel.kernel @column_sum_fused_reduce_0
// CHECK-SAME: (%[[X:.*]]: memref<16x8xf32>, %[[OUT:.*]]: memref<8xf32>) attributes {domain = array<i64>}
// CHECK: kernel.loop
// CHECK-NEXT: ^bb0(%[[J:.*]]: index):
// CHECK: kernel.reduce add
// CHECK-NEXT: ^bb0(%[[I:.*]]: index):
// CHECK: memref.load %[[X]][%[[I]], %[[J]]]
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[J]]]
func.func @column_sum(%x: tensor<16x8xf32>) -> tensor<8xf32> {
  %0 = prim.reduce sum %x, dims [0] : tensor<16x8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Layer norm of a residual sum in one kernel: the mean and the variance are
// row reductions computed before the row's output loop, and so is rstd; the
// residual sum is kept in the output row by the first reduction and read
// back by the output loop.
// CHECK-LABEL: kernel.kernel @residual_layernorm_fused
// CHECK-SAME: (%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>) attributes {domain = array<i64: 4>}
// CHECK: %[[SUM:.*]] = kernel.reduce add
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: %[[SQ:.*]] = kernel.reduce add
// CHECK: math.rsqrt
// CHECK: kernel.loop
// CHECK: memref.load %[[OUT]]
// CHECK-NOT: kernel.kernel
// CHECK-LABEL: kernel.schedule @residual_layernorm
// CHECK-NEXT: kernel.launch
// CHECK-NEXT: kernel.return
func.func @residual_layernorm(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = prim.add %x, %r : tensor<4x8xf32>
  %s = prim.reduce sum %h, dims [1] : tensor<4x8xf32>
  %n = prim.constant dense<8.0> : tensor<4xf32>
  %mean = prim.div %s, %n : tensor<4xf32>
  %mb = prim.broadcast_in_dim %mean, shape [4, 8], dims [0] : tensor<4xf32>
  %c = prim.sub %h, %mb : tensor<4x8xf32>
  %sq = prim.mul %c, %c : tensor<4x8xf32>
  %ss = prim.reduce sum %sq, dims [1] : tensor<4x8xf32>
  %var = prim.div %ss, %n : tensor<4xf32>
  %eps = prim.constant dense<1.0e-5> : tensor<4xf32>
  %ve = prim.add %var, %eps : tensor<4xf32>
  %rstd = prim.rsqrt %ve : tensor<4xf32>
  %rb = prim.broadcast_in_dim %rstd, shape [4, 8], dims [0] : tensor<4xf32>
  %y = prim.mul %c, %rb : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
