// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A pointwise chain is one kernel over rows with an inner loop.
// CHECK-LABEL: kernel.kernel @pointwise_fused_sin_cos_add_0
// CHECK-SAME: (%[[X:.*]]: memref<3x5xf32>, %[[Y:.*]]: memref<3x5xf32>, %[[OUT:.*]]: memref<3x5xf32>) attributes {domain = array<i64: 3>}
// CHECK: %[[I:.*]] = kernel.index 0
// CHECK: kernel.loop
// CHECK-NEXT: ^bb0(%[[J:.*]]: index):
// CHECK: %[[A:.*]] = memref.load %[[X]][%[[I]], %[[J]]]
// CHECK: math.sin %[[A]]
// CHECK: math.cos
// CHECK: %[[S:.*]] = arith.addf
// CHECK: memref.store %[[S]], %[[OUT]][%[[I]], %[[J]]]
// CHECK-LABEL: kernel.schedule @pointwise
// CHECK-SAME: (%[[SX:.*]]: memref<3x5xf32>, %[[SY:.*]]: memref<3x5xf32>, %[[SOUT:.*]]: memref<3x5xf32>)
// CHECK-NEXT: kernel.launch @pointwise_fused_sin_cos_add_0(%[[SX]], %[[SY]], %[[SOUT]])
// CHECK-NEXT: kernel.return
func.func @pointwise(%x: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = prim.sin %x : tensor<3x5xf32>
  %1 = prim.cos %y : tensor<3x5xf32>
  %2 = prim.add %0, %1 : tensor<3x5xf32>
  return %2 : tensor<3x5xf32>
}

// -----

// A manual softmax is one kernel: two row reductions and a pointwise pass,
// the reductions computed once per row, outside the inner loop. The sum's
// exp(x - max) is stored into the output row as it is reduced, and the
// final pass reads it back instead of computing exp again.
// CHECK-LABEL: kernel.kernel @softmax_fused
// CHECK-SAME: (%{{.*}}: memref<4x16xf32>, %[[OUT:.*]]: memref<4x16xf32>) attributes {domain = array<i64: 4>}
// CHECK: %[[MAX:.*]] = kernel.reduce max
// CHECK: %[[SUM:.*]] = kernel.reduce add
// CHECK: arith.subf %{{.*}}, %[[MAX]]
// CHECK: %[[E:.*]] = math.exp
// CHECK: memref.store %[[E]], %[[OUT]]
// CHECK: kernel.yield %[[E]]
// CHECK: kernel.loop
// CHECK: %[[ROW:.*]] = memref.load %[[OUT]]
// CHECK: arith.divf %[[ROW]], %[[SUM]]
// CHECK-NOT: kernel.kernel
// CHECK-LABEL: kernel.schedule @softmax
// CHECK-NEXT: kernel.launch
// CHECK-NEXT: kernel.return
func.func @softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %max = prim.reduce max %x, dims [1] : tensor<4x16xf32>
  %maxk = prim.reshape %max, shape [4, 1] : tensor<4xf32>
  %maxb = prim.broadcast_in_dim %maxk, shape [4, 16], dims [0, 1] : tensor<4x1xf32>
  %shifted = prim.sub %x, %maxb : tensor<4x16xf32>
  %e = prim.exp %shifted : tensor<4x16xf32>
  %sum = prim.reduce sum %e, dims [1] : tensor<4x16xf32>
  %sumb = prim.broadcast_in_dim %sum, shape [4, 16], dims [0] : tensor<4xf32>
  %r = prim.div %e, %sumb : tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// Linear + ReLU: a GEMM whose epilogue adds the bias, reading the
// transposed weight in place, then a ReLU kernel.
// CHECK-LABEL: kernel.kernel @linear_relu_fused
// CHECK: arith.maximumf
// CHECK-LABEL: kernel.schedule @linear_relu
// CHECK-SAME: (%[[X:.*]]: memref<8x4xf32>, %[[W:.*]]: memref<3x4xf32>, %[[B:.*]]: memref<3xf32>, %[[OUT:.*]]: memref<8x3xf32>)
// CHECK: %[[T:.*]] = memref.alloc() : memref<8x3xf32>
// CHECK: kernel.gemm %[[X]], %[[W]], %[[T]] bias %[[B]] {transpose_b}
// The ReLU reads only its own row of the product: a row epilogue.
// CHECK: kernel.launch @linear_relu_fused{{.*}}(%[[T]], %[[OUT]]) {row_epilogue}
func.func @linear_relu(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<8x3xf32> {
  %wt = prim.permute %w, [1, 0] : tensor<3x4xf32>
  %mm = prim.dot %x, %wt, batch [] x [], contract [1] x [0] : tensor<8x4xf32>, tensor<4x3xf32>
  %bb = prim.broadcast_in_dim %b, shape [8, 3], dims [1] : tensor<3xf32>
  %add = prim.add %mm, %bb : tensor<8x3xf32>
  %zero = prim.constant dense<0.0> : tensor<8x3xf32>
  %r = prim.maximum %add, %zero : tensor<8x3xf32>
  return %r : tensor<8x3xf32>
}

// -----

// A reduction that two outputs read is realized once, not recomputed for
// each; the two, pointwise of the same type and both reading it, are one
// kernel (siblings), which reads it once.
// CHECK-LABEL: kernel.kernel @shared_fused_reduce_0
// CHECK: kernel.reduce add
// CHECK-LABEL: kernel.kernel @shared_fused_exp_1
// CHECK-NOT: kernel.reduce
// CHECK: math.exp
// CHECK: math.sin
// CHECK-LABEL: kernel.schedule @shared
// CHECK-SAME: (%{{.*}}: memref<4x8xf32>, %[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>)
// CHECK: %[[S:.*]] = memref.alloc() : memref<4xf32>
// CHECK: kernel.launch @shared_fused_reduce_0(%{{.*}}, %[[S]])
// CHECK-NEXT: kernel.launch @shared_fused_exp_1(%[[S]], %[[B]], %[[A]])
// CHECK-NEXT: kernel.return
func.func @shared(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = prim.reduce sum %x, dims [1] : tensor<4x8xf32>
  %a = prim.exp %s : tensor<4xf32>
  %b = prim.sin %s : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Permutes, slices and non-trivial reshapes are index arithmetic; an
// output that is an input is copied; a full reduction is a 0-d kernel.
// CHECK-LABEL: kernel.kernel @indexing_fused_add_0
// CHECK: memref.load %{{.*}}[%[[J:.*]], %[[I:.*]]] : memref<6x4xf32>
// CHECK-LABEL: kernel.kernel @indexing_fused_slice_neg_1
// CHECK: arith.muli %{{.*}}, %c2
// CHECK-LABEL: kernel.kernel @indexing_fused_reduce
// CHECK-SAME: attributes {domain = array<i64>}
// CHECK: kernel.reduce add
// CHECK: kernel.reduce add
// CHECK-LABEL: kernel.kernel @indexing_copy
// CHECK-LABEL: kernel.schedule @indexing
func.func @indexing(%x: tensor<4x6xf32>, %y: tensor<6x4xf32>) -> (tensor<4x6xf32>, tensor<4x3xf32>, tensor<f32>, tensor<4x6xf32>) {
  %t = prim.permute %y, [1, 0] : tensor<6x4xf32>
  %p = prim.add %x, %t : tensor<4x6xf32>
  %s = prim.slice %x, start [0, 0], limit [4, 6], strides [1, 2] : tensor<4x6xf32>
  %n = prim.neg %s : tensor<4x3xf32>
  %f = prim.reduce sum %x, dims [0, 1] : tensor<4x6xf32>
  return %p, %n, %f, %x : tensor<4x6xf32>, tensor<4x3xf32>, tensor<f32>, tensor<4x6xf32>
}

// -----

// A consumer that reads the product across rows (here transposed) is no
// row epilogue.
// CHECK-LABEL: kernel.schedule @transposed_consumer
// CHECK: kernel.gemm
// CHECK-NEXT: kernel.launch
// CHECK-NOT: row_epilogue
// CHECK-SAME: : memref<8x8xf32>, memref<8x8xf32>
func.func @transposed_consumer(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %mm = prim.dot %a, %b, batch [] x [], contract [1] x [0] : tensor<8x8xf32>, tensor<8x8xf32>
  %t = prim.permute %mm, [1, 0] : tensor<8x8xf32>
  %n = prim.neg %t : tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}
