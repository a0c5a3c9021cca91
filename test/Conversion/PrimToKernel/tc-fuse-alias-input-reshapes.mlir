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

// -----

// A weight standardization's rows: [8, 4, 3, 3] weights summed as [8, 36].
// With alias-input-reshapes the kernel reads an alias of the weights in
// that shape, one index per row; through the reshape (without), each
// point's row index is divided back into [4, 3, 3] (no vector loop on the
// CPU). A reshape that only splits or drops dimensions divides nothing and
// stays inline.
// CHECK-LABEL: kernel.kernel @merged_rows_fused_reduce
// CHECK-NOT: arith.divui
// CHECK: memref.load %{{.*}} : memref<8x36xf32>
// CHECK-LABEL: kernel.schedule @merged_rows
// CHECK-SAME: (%[[W:.*]]: memref<8x4x3x3xf32>, %[[V:.*]]: memref<8x4xf32>
// CHECK: %[[A:.*]] = kernel.alias %[[W]] : memref<8x4x3x3xf32> to memref<8x36xf32>
// CHECK: kernel.launch @merged_rows_fused_reduce{{.*}}(%[[A]],
// CHECK-NOT: kernel.alias
// CHECK: kernel.launch @merged_rows_fused_exp{{.*}}(%[[V]],
// COPY-LABEL: kernel.kernel @merged_rows_fused_reduce
// COPY: arith.divui
// COPY-LABEL: kernel.schedule @merged_rows
// COPY-NOT: kernel.alias
func.func @merged_rows(%w: tensor<8x4x3x3xf32>, %v: tensor<8x4xf32>) -> (tensor<8xf32>, tensor<8x1x2x2xf32>) {
  %r = prim.reshape %w, shape [8, 36] : tensor<8x4x3x3xf32>
  %s = prim.reduce sum %r, dims [1] : tensor<8x36xf32>
  %q = prim.reshape %v, shape [8, 1, 2, 2] : tensor<8x4xf32>
  %e = prim.exp %q : tensor<8x1x2x2xf32>
  return %s, %e : tensor<8xf32>, tensor<8x1x2x2xf32>
}

// -----

// A computed value returned only in another shape (a GEMM's rows returned
// as [B, S, H]): the GEMM writes the output's buffer through an alias, and
// no kernel copies the reshape (with or without alias-input-reshapes).
// CHECK-LABEL: kernel.schedule @rows_returned_reshaped
// CHECK-SAME: (%[[X:.*]]: memref<32x16xf32>, %[[W:.*]]: memref<16x16xf32>, %[[O:.*]]: memref<4x8x16xf32>)
// CHECK: %[[A:.*]] = kernel.alias %[[O]] : memref<4x8x16xf32> to memref<32x16xf32>
// CHECK: kernel.gemm %[[X]], %[[W]], %[[A]]
// CHECK-NOT: kernel.launch
// CHECK: kernel.return
// COPY-LABEL: kernel.schedule @rows_returned_reshaped
// COPY: kernel.alias
// COPY-NOT: kernel.launch
// COPY: kernel.return
func.func @rows_returned_reshaped(%x: tensor<32x16xf32>, %w: tensor<16x16xf32>) -> tensor<4x8x16xf32> {
  %p = prim.dot %x, %w, batch [] x [], contract [1] x [0] : tensor<32x16xf32>, tensor<16x16xf32>
  %r = prim.reshape %p, shape [4, 8, 16] : tensor<32x16xf32>
  return %r : tensor<4x8x16xf32>
}
