// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A computed value the graph returns twice (a training backward's gradient
// of two inputs that are one tensor: LayoutLM's position tables read
// through one index) is computed once, into the first output, and copied
// into the second. Recomputing it point by point, as an input returned
// again is, has no form for a scatter-add or a product (tc-fuse failed on
// them), and would repeat a reduction.

// CHECK-LABEL: kernel.kernel @scatter_twice_fused_scatter_add_0
// CHECK-LABEL: kernel.kernel @scatter_twice_fused_scatter_add_1
// CHECK-LABEL: kernel.kernel @scatter_twice_copy_2
// CHECK-SAME: (%[[FIRST:.*]]: memref<1000x64xf32>, %[[SECOND:.*]]: memref<1000x64xf32>)
// CHECK: %[[V:.*]] = memref.load %[[FIRST]]
// CHECK: memref.store %[[V]], %[[SECOND]]
// CHECK-LABEL: kernel.schedule @scatter_twice
// CHECK-SAME: %[[OUT0:[a-z0-9]+]]: memref<1000x64xf32>, %[[OUT1:[a-z0-9]+]]: memref<1000x64xf32>)
// CHECK: kernel.launch @scatter_twice_fused_scatter_add_0(%[[OUT0]])
// CHECK: kernel.launch @scatter_twice_fused_scatter_add_1(%{{.*}}, %{{.*}}, %[[OUT0]])
// CHECK: kernel.launch @scatter_twice_copy_2(%[[OUT0]], %[[OUT1]])
func.func @scatter_twice(%rows: tensor<128x64xf32>, %indices: tensor<128xi64>) -> (tensor<1000x64xf32>, tensor<1000x64xf32>) {
  %sum = prim.scatter_add %rows[%indices] : tensor<128x64xf32>, tensor<128xi64> -> tensor<1000x64xf32>
  return %sum, %sum : tensor<1000x64xf32>, tensor<1000x64xf32>
}

// -----

// CHECK-LABEL: kernel.kernel @product_twice_copy_0
// CHECK-LABEL: kernel.schedule @product_twice
// CHECK-SAME: %[[OUT0:[a-z0-9]+]]: memref<8x3xf32>, %[[OUT1:[a-z0-9]+]]: memref<8x3xf32>)
// CHECK: kernel.gemm %{{.*}}, %{{.*}}, %[[OUT0]]
// CHECK: kernel.launch @product_twice_copy_0(%[[OUT0]], %[[OUT1]])
func.func @product_twice(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>) {
  %mm = prim.dot %x, %w, batch [] x [], contract [1] x [0] : tensor<8x4xf32>, tensor<4x3xf32>
  return %mm, %mm : tensor<8x3xf32>, tensor<8x3xf32>
}

// -----

// A reduction returned twice is reduced once.
// CHECK-LABEL: kernel.kernel @sum_twice_fused_reduce_0
// CHECK: kernel.reduce
// CHECK-LABEL: kernel.kernel @sum_twice_copy_1
// CHECK-NOT: kernel.reduce
// CHECK: kernel.return
// CHECK-LABEL: kernel.schedule @sum_twice
// CHECK-SAME: %[[OUT0:[a-z0-9]+]]: memref<8xf32>, %[[OUT1:[a-z0-9]+]]: memref<8xf32>)
// CHECK: kernel.launch @sum_twice_fused_reduce_0(%{{.*}}, %[[OUT0]])
// CHECK: kernel.launch @sum_twice_copy_1(%[[OUT0]], %[[OUT1]])
func.func @sum_twice(%x: tensor<8x4xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = prim.reduce sum %x, dims [1] : tensor<8x4xf32>
  return %s, %s : tensor<8xf32>, tensor<8xf32>
}
