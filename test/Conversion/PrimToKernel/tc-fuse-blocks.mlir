// RUN: tc-opt %s -tc-fuse | FileCheck %s

// A long 1-d output is split into 4096-element blocks, which become the
// kernel's domain, so its points can be shared among threads; the element
// index is block * 4096 (once per block, outside the loop) + the inner
// loop's index.
// CHECK-LABEL: kernel.kernel @long_fused_exp_0
// CHECK-SAME: attributes {domain = array<i64: 16>}
// CHECK-DAG: %[[C4096:.*]] = arith.constant 4096 : index
// CHECK-DAG: %[[B:.*]] = kernel.index 0
// CHECK: %[[BASE:.*]] = arith.muli %[[B]], %[[C4096]]
// CHECK: kernel.loop %[[C4096]]
// CHECK-NEXT: ^bb0(%[[J:.*]]: index):
// CHECK: %[[I:.*]] = arith.addi %[[BASE]], %[[J]]
// CHECK: memref.load %{{.*}}[%[[I]]]
func.func @long(%x: tensor<65536xf32>) -> tensor<65536xf32> {
  %0 = prim.exp %x : tensor<65536xf32>
  return %0 : tensor<65536xf32>
}

// A short one stays a single row.
// CHECK-LABEL: kernel.kernel @short_fused_exp_0
// CHECK-SAME: attributes {domain = array<i64>}
func.func @short(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %0 = prim.exp %x : tensor<1000xf32>
  return %0 : tensor<1000xf32>
}
