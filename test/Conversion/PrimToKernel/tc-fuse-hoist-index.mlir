// RUN: tc-opt %s -tc-fuse | FileCheck %s

// Rows written through a reshape ([2, 16, 1000] as [32, 1000], as a
// language model's logits are): the row's coordinates (row / 16, row % 16) depend on
// the kernel's row alone, so they are computed before the row's loop, and
// so is the row's sum that reads at them. Computed where the loop first
// needed them, they put the reduction inside the loop: 1000 sums of 1000
// elements per row (cross-entropy's backward at a 32k vocabulary took half
// a second on the H100).
// CHECK-LABEL: kernel.kernel @rows_fused
// CHECK: %[[ROW:.*]] = kernel.index 0
// CHECK-DAG: arith.remui %[[ROW]]
// CHECK-DAG: arith.divui %[[ROW]]
// CHECK: %[[SUM:.*]] = kernel.reduce add
// CHECK: kernel.loop
// CHECK-NOT: kernel.reduce
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// CHECK: kernel.return
func.func @rows(%x: tensor<32x1000xf32>) -> tensor<32x1000xf32> {
  %r = prim.reshape %x, shape [2, 16, 1000] : tensor<32x1000xf32>
  %e = prim.exp %r : tensor<2x16x1000xf32>
  %s = prim.reduce sum %e, dims [2] : tensor<2x16x1000xf32>
  %b = prim.broadcast_in_dim %s, shape [2, 16, 1000], dims [0, 1] : tensor<2x16xf32>
  %d = prim.div %e, %b : tensor<2x16x1000xf32>
  %o = prim.reshape %d, shape [32, 1000] : tensor<2x16x1000xf32>
  return %o : tensor<32x1000xf32>
}
