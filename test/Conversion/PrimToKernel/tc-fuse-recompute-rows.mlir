// RUN: tc-opt %s -tc-fuse="cache-rows=false" | FileCheck %s

// Without row caching (the GPU pipelines' choice: a thread block keeps its
// row in registers), the softmax kernel's output loop recomputes
// exp(x - max) instead of reading it back from the output row: the output
// is written once and never read.
// CHECK-LABEL: kernel.kernel @softmax_fused
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK: %[[MAX:.*]] = kernel.reduce max
// CHECK: %[[SUM:.*]] = kernel.reduce add
// CHECK-NOT: memref.store
// CHECK: math.exp
// CHECK: kernel.loop
// CHECK-NOT: memref.load %[[OUT]]
// CHECK: math.exp
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT: memref.load %[[OUT]]
// CHECK-LABEL: kernel.schedule @softmax
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = prim.reduce max %x, dims [1] : tensor<4x8xf32>
  %mb = prim.broadcast_in_dim %m, shape [4, 8], dims [0] : tensor<4xf32>
  %c = prim.sub %x, %mb : tensor<4x8xf32>
  %e = prim.exp %c : tensor<4x8xf32>
  %s = prim.reduce sum %e, dims [1] : tensor<4x8xf32>
  %sb = prim.broadcast_in_dim %s, shape [4, 8], dims [0] : tensor<4xf32>
  %y = prim.div %e, %sb : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// A row's statistics that reach a reduction keeping the last dimension (a
// layer norm's output averaged over its rows: a pooled transformer head)
// are realized: that kernel iterates the columns, so inlined, each row's
// mean would be computed again for every column.
// CHECK-LABEL: kernel.kernel @pooled_norm_fused_reduce_0
// CHECK-SAME: (%{{.*}}: memref<4x8xf32>, %[[MEAN:.*]]: memref<4xf32>)
// CHECK-LABEL: kernel.kernel @pooled_norm_fused_sub_reduce_1
// CHECK-SAME: (%{{.*}}: memref<4x8xf32>, %[[M:.*]]: memref<4xf32>, %{{.*}}: memref<8xf32>)
// CHECK: kernel.reduce add
// CHECK-NOT: kernel.reduce
// CHECK: memref.load %[[M]]
// CHECK-LABEL: kernel.schedule @pooled_norm
func.func @pooled_norm(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %s = prim.reduce sum %x, dims [1] : tensor<4x8xf32>
  %sb = prim.broadcast_in_dim %s, shape [4, 8], dims [0] : tensor<4xf32>
  %c = prim.sub %x, %sb : tensor<4x8xf32>
  %p = prim.reduce sum %c, dims [0] : tensor<4x8xf32>
  return %p : tensor<8xf32>
}

// A reduction spread along a new dimension ahead of the one it keeps (a
// blocked scan's chunk totals [2, 13] spread over [2, 13 (i), 13 (j)] and
// summed over the chunks before each) is realized: inlined, every total
// would be computed again for each chunk i of the row.
// CHECK-LABEL: kernel.kernel @chunk_prefixes_fused_reduce_0
// CHECK-SAME: (%{{.*}}: memref<2x13x8xi64>, %[[TOTALS:.*]]: memref<2x13xi64>)
// CHECK: kernel.reduce add
// CHECK: memref.store %{{.*}}, %[[TOTALS]]
// CHECK-LABEL: kernel.kernel @chunk_prefixes_fused_iota_compare_where_reduce_1
// CHECK-SAME: (%[[READ:.*]]: memref<2x13xi64>, %{{.*}}: memref<2x13xi64>)
// CHECK: kernel.reduce add
// CHECK: memref.load %[[READ]]
// CHECK-NOT: kernel.reduce
func.func @chunk_prefixes(%x: tensor<2x13x8xi64>) -> tensor<2x13xi64> {
  %totals = prim.reduce sum %x, dims [2] : tensor<2x13x8xi64>
  %spread = prim.broadcast_in_dim %totals, shape [2, 13, 13], dims [0, 2] : tensor<2x13xi64>
  %j = prim.iota shape [2, 13, 13], dim 2 : i64
  %i = prim.iota shape [2, 13, 13], dim 1 : i64
  %before = prim.compare lt, %j, %i : tensor<2x13x13xi64>
  %zero = prim.constant dense<0> : tensor<2x13x13xi64>
  %masked = prim.where %before, %spread, %zero : tensor<2x13x13xi1>, tensor<2x13x13xi64>
  %sum = prim.reduce sum %masked, dims [2] : tensor<2x13x13xi64>
  return %sum : tensor<2x13xi64>
}

// Row statistics broadcast back over the rows, then viewed with the rows
// cut (timm's standardized convolution weights, [O, K] rows viewed as
// [O, C, kh, kw]) are realized: the consumer's kernel iterates the view,
// whose points are parts of a row, and each would compute the row's mean
// again.
// CHECK-LABEL: kernel.kernel @standardized_fused_reduce_0
// CHECK-SAME: (%{{.*}}: memref<4x18xf32>, %[[MEAN:.*]]: memref<4xf32>)
// CHECK: kernel.reduce add
// CHECK: kernel.kernel @standardized_fused
// CHECK-SAME: memref<4xf32>
// CHECK-NOT: kernel.reduce
// CHECK-LABEL: kernel.schedule @standardized
func.func @standardized(%w: tensor<4x18xf32>) -> tensor<4x2x3x3xf32> {
  %sum = prim.reduce sum %w, dims [1] : tensor<4x18xf32>
  %sumb = prim.broadcast_in_dim %sum, shape [4, 18], dims [0] : tensor<4xf32>
  %centred = prim.sub %w, %sumb : tensor<4x18xf32>
  %view = prim.reshape %centred, shape [4, 2, 3, 3] : tensor<4x18xf32>
  return %view : tensor<4x2x3x3xf32>
}
