// RUN: tc-opt %s -tc-reassociate-reductions -split-input-file | FileCheck %s

// Batch norm's per-channel sum: rows of H*W first, then the batch.
// CHECK-LABEL: func.func @channels
// CHECK: %[[ROWS:.*]] = prim.reshape %{{.*}}, shape [16, 8, 30] : tensor<16x8x5x6xf32>
// CHECK: %[[R:.*]] = prim.reduce sum %[[ROWS]], dims [2] : tensor<16x8x30xf32>
// CHECK: %[[S:.*]] = prim.reduce sum %[[R]], dims [0] : tensor<16x8xf32>
// CHECK: return %[[S]]
func.func @channels(%x: tensor<16x8x5x6xf32>) -> tensor<8xf32> {
  %0 = prim.reduce sum %x, dims [0, 2, 3] : tensor<16x8x5x6xf32>
  return %0 : tensor<8xf32>
}

// -----

// One trailing dim: no reshape. Max is split the same way.
// CHECK-LABEL: func.func @max_one_trailing
// CHECK-NOT: prim.reshape
// CHECK: %[[R:.*]] = prim.reduce max %{{.*}}, dims [2] : tensor<4x5x6xf32>
// CHECK: prim.reduce max %[[R]], dims [0] : tensor<4x5xf32>
func.func @max_one_trailing(%x: tensor<4x5x6xf32>) -> tensor<5xf32> {
  %0 = prim.reduce max %x, dims [0, 2] : tensor<4x5x6xf32>
  return %0 : tensor<5xf32>
}

// -----

// A trailing block of several dims is read as one row.
// CHECK-LABEL: func.func @trailing_block
// CHECK: %[[ROWS:.*]] = prim.reshape %{{.*}}, shape [4, 30] : tensor<4x5x6xf32>
// CHECK: prim.reduce sum %[[ROWS]], dims [1] : tensor<4x30xf32>
// CHECK-NOT: prim.reduce
func.func @trailing_block(%x: tensor<4x5x6xf32>) -> tensor<4xf32> {
  %0 = prim.reduce sum %x, dims [1, 2] : tensor<4x5x6xf32>
  return %0 : tensor<4xf32>
}

// -----

// Left alone: a row reduction, a column reduction, a middle dimension.
// CHECK-LABEL: func.func @unchanged
// CHECK-NEXT: prim.reduce sum %{{.*}}, dims [1] : tensor<4x5xf32>
// CHECK-NEXT: prim.reduce sum %{{.*}}, dims [0] : tensor<4x5xf32>
// CHECK-NEXT: prim.reduce sum %{{.*}}, dims [1] : tensor<4x5x6xf32>
// CHECK-NEXT: return
func.func @unchanged(%x: tensor<4x5xf32>, %y: tensor<4x5x6xf32>) -> (tensor<4xf32>, tensor<5xf32>, tensor<4x6xf32>) {
  %0 = prim.reduce sum %x, dims [1] : tensor<4x5xf32>
  %1 = prim.reduce sum %x, dims [0] : tensor<4x5xf32>
  %2 = prim.reduce sum %y, dims [1] : tensor<4x5x6xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<5xf32>, tensor<4x6xf32>
}

// -----

// A dynamic trailing block is split but not reshaped.
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: prim.reshape
// CHECK: %[[R:.*]] = prim.reduce sum %{{.*}}, dims [2, 3] : tensor<2x3x?x4xf32>
// CHECK: prim.reduce sum %[[R]], dims [0] : tensor<2x3xf32>
func.func @dynamic(%x: tensor<2x3x?x4xf32>) -> tensor<3xf32> {
  %0 = prim.reduce sum %x, dims [0, 2, 3] : tensor<2x3x?x4xf32>
  return %0 : tensor<3xf32>
}
