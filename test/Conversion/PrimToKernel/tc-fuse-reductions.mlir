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

// -----

// A layer norm over the channels of a channels-last view whose result is
// permuted back to channels-first (`LayerNorm2d`): the output kernel
// iterates the channels in its domain, so inlined, the row's mean would be
// computed again for each of them. It is realized by a kernel of its own
// (a domain of the rows), which the output kernel loads.
// CHECK-LABEL: kernel.kernel @norm2d_fused_reduce_0
// CHECK-SAME: memref<2x6x6xf32>) attributes {domain = array<i64: 2, 6>}
// CHECK: kernel.loop
// CHECK: kernel.reduce add %c8
// CHECK-LABEL: kernel.kernel @norm2d_fused_div_sub_1
// CHECK-SAME: attributes {domain = array<i64: 2, 8, 6>}
// CHECK-NOT: kernel.reduce
// CHECK: memref.load %{{.*}} : memref<2x6x6xf32>
// CHECK-NOT: kernel.reduce
// CHECK: kernel.return
// CHECK-LABEL: kernel.schedule @norm2d
// CHECK: kernel.launch @norm2d_fused_reduce_0
// CHECK: kernel.launch @norm2d_fused_div_sub_1
func.func @norm2d(%x: tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> {
  %n = prim.constant dense<8.0> : tensor<2x6x6x1xf32>
  %0 = prim.permute %x, [0, 2, 3, 1] : tensor<2x8x6x6xf32>
  %1 = prim.reduce sum %0, dims [3] : tensor<2x6x6x8xf32>
  %2 = prim.reshape %1, shape [2, 6, 6, 1] : tensor<2x6x6xf32>
  %3 = prim.div %2, %n : tensor<2x6x6x1xf32>
  %4 = prim.broadcast_in_dim %3, shape [2, 6, 6, 8], dims [0, 1, 2, 3] : tensor<2x6x6x1xf32>
  %5 = prim.sub %0, %4 : tensor<2x6x6x8xf32>
  %6 = prim.permute %5, [0, 3, 1, 2] : tensor<2x6x6x8xf32>
  return %6 : tensor<2x8x6x6xf32>
}

// -----

// The same statistics, where the normalized rows are realized before the
// permute reads them (a product's operand: ConvBERT's layer norms feed
// the next layer's projections and, transposed, its convolution): the
// permute's kernel reads the buffer and computes no statistics, so the
// reduction stays in the kernel that writes the rows, one kernel where
// there were three (sum, variance, normalized rows).
// CHECK-LABEL: kernel.kernel @norm_feeding_product_fused_reduce_div_sub_0
// CHECK-SAME: attributes {domain = array<i64: 2, 6>}
// CHECK: kernel.reduce add %c8
// CHECK: kernel.loop %c8
// CHECK: memref.store
// CHECK-LABEL: kernel.kernel @norm_feeding_product_copy_1
// CHECK-NOT: kernel.reduce
// CHECK-LABEL: kernel.schedule @norm_feeding_product
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: kernel.launch @norm_feeding_product_fused_reduce_div_sub_0
// CHECK-NEXT: kernel.gemm
// CHECK-NEXT: kernel.launch @norm_feeding_product_copy_1
// CHECK-NEXT: kernel.return
func.func @norm_feeding_product(%x: tensor<2x6x8xf32>, %w: tensor<8x4xf32>) -> (tensor<2x6x4xf32>, tensor<2x8x6xf32>) {
  %n = prim.constant dense<8.0> : tensor<2x6x1xf32>
  %1 = prim.reduce sum %x, dims [2] : tensor<2x6x8xf32>
  %2 = prim.reshape %1, shape [2, 6, 1] : tensor<2x6xf32>
  %3 = prim.div %2, %n : tensor<2x6x1xf32>
  %4 = prim.broadcast_in_dim %3, shape [2, 6, 8], dims [0, 1, 2] : tensor<2x6x1xf32>
  %5 = prim.sub %x, %4 : tensor<2x6x8xf32>
  %6 = prim.dot %5, %w, batch [] x [], contract [2] x [0] : tensor<2x6x8xf32>, tensor<8x4xf32>
  %7 = prim.permute %5, [0, 2, 1] : tensor<2x6x8xf32>
  return %6, %7 : tensor<2x6x4xf32>, tensor<2x8x6xf32>
}
