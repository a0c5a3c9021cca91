// RUN: tc-opt %s -split-input-file -tc-fuse="alias-input-reshapes=true" | FileCheck %s
// RUN: tc-opt %s -split-input-file -tc-fuse | FileCheck %s --check-prefix=COPY

// XLNet's projection: a [64, 4, 16] weight read as [1, 64, 64] by a batched
// product. With alias-input-reshapes (the CPU's) the product reads the
// weight's buffer in that shape; without it, a copy kernel writes it. A
// reshape of a computed value, and a reshaped input that is returned, are
// still written (the output has its own buffer).
// CHECK-LABEL: kernel.schedule @projection
// CHECK-SAME: (%[[X:.*]]: memref<1x32x64xf32>, %[[W:.*]]: memref<64x4x16xf32>, %[[O1:.*]]: memref<1x32x64xf32>, %[[O2:.*]]: memref<64x64xf32>)
// CHECK: %[[A:.*]] = kernel.alias %[[W]] : memref<64x4x16xf32> to memref<1x64x64xf32>
// CHECK: kernel.gemm %[[X]], %[[A]], %[[O1]]
// CHECK: kernel.launch @projection_copy
// COPY-LABEL: kernel.schedule @projection
// COPY-NOT: kernel.alias
// COPY: kernel.launch @projection_copy
// COPY: kernel.gemm
func.func @projection(%x: tensor<1x32x64xf32>, %w: tensor<64x4x16xf32>) -> (tensor<1x32x64xf32>, tensor<64x64xf32>) {
  %w2 = prim.reshape %w, shape [1, 64, 64] : tensor<64x4x16xf32>
  %p = prim.dot %x, %w2, batch [0] x [0], contract [2] x [1] : tensor<1x32x64xf32>, tensor<1x64x64xf32>
  %r = prim.reshape %w, shape [64, 64] : tensor<64x4x16xf32>
  return %p, %r : tensor<1x32x64xf32>, tensor<64x64xf32>
}

// -----

// A returned value (XLNet's hidden state, returned as a memory) read again
// in another shape: its producer writes the output's buffer, and the
// product reads that buffer through an alias.
// CHECK-LABEL: kernel.schedule @returned
// CHECK-SAME: (%[[X:.*]]: memref<4x8x16xf32>, %[[W:.*]]: memref<16x16xf32>, %[[H:.*]]: memref<4x8x16xf32>, %[[P:.*]]: memref<32x16xf32>)
// CHECK: kernel.launch @returned_fused_add{{.*}}(%[[X]], %[[H]])
// CHECK: %[[A:.*]] = kernel.alias %[[H]] : memref<4x8x16xf32> to memref<32x16xf32>
// CHECK: kernel.gemm %[[A]], %[[W]], %[[P]]
func.func @returned(%x: tensor<4x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<4x8x16xf32>, tensor<32x16xf32>) {
  %h = prim.add %x, %x : tensor<4x8x16xf32>
  %r = prim.reshape %h, shape [32, 16] : tensor<4x8x16xf32>
  %p = prim.dot %r, %w, batch [] x [], contract [1] x [0] : tensor<32x16xf32>, tensor<16x16xf32>
  return %h, %p : tensor<4x8x16xf32>, tensor<32x16xf32>
}
