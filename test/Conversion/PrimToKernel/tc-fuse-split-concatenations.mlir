// RUN: tc-opt %s -tc-fuse="split-concatenations=true" -split-input-file | FileCheck %s --check-prefix=SPLIT
// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s --check-prefix=SELECT

// A kernel that stores a concatenation along the last dimension runs one
// inner loop per part, each reading its part alone and storing at the
// part's offset (split-concatenations, the CPU's choice); without it one
// loop reads every part at each point and selects one.

// SPLIT-LABEL: kernel.kernel @last_fused_exp_neg_concatenate_0
// SPLIT-SAME: (%[[X:.*]]: memref<4x3xf32>, %[[Y:.*]]: memref<4x5xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// SPLIT: %[[ROW:.*]] = kernel.index 0
// SPLIT: kernel.loop %c3
// SPLIT-NEXT: ^bb0(%[[I:.*]]: index):
// SPLIT-NEXT: %[[A:.*]] = memref.load %[[X]][%[[ROW]], %[[I]]]
// SPLIT-NEXT: %[[E:.*]] = math.exp %[[A]]
// SPLIT-NEXT: memref.store %[[E]], %[[OUT]][%[[ROW]], %[[I]]]
// SPLIT: kernel.loop %c5
// SPLIT-NEXT: ^bb0(%[[J:.*]]: index):
// SPLIT-NEXT: %[[B:.*]] = memref.load %[[Y]][%[[ROW]], %[[J]]]
// SPLIT-NEXT: %[[N:.*]] = arith.negf %[[B]]
// SPLIT-NEXT: %[[AT:.*]] = arith.addi %[[J]], %c3
// SPLIT-NEXT: memref.store %[[N]], %[[OUT]][%[[ROW]], %[[AT]]]
// SPLIT-NOT: arith.select
// SPLIT: kernel.return

// SELECT-LABEL: kernel.kernel @last_fused_exp_neg_concatenate_0
// SELECT: kernel.loop %c8
// SELECT: math.exp
// SELECT: arith.negf
// SELECT: arith.select
func.func @last(%x: tensor<4x3xf32>, %y: tensor<4x5xf32>) -> tensor<4x8xf32> {
  %e = prim.exp %x : tensor<4x3xf32>
  %n = prim.neg %y : tensor<4x5xf32>
  %c = prim.concatenate %e, %n dim 1 : tensor<4x3xf32>, tensor<4x5xf32>
  return %c : tensor<4x8xf32>
}

// -----

// Along a leading dimension the parts are chosen per row: one loop.
// SPLIT-LABEL: kernel.kernel @leading_fused_exp_neg_concatenate_0
// SPLIT: kernel.loop %c3
// SPLIT: arith.select
// SPLIT-NOT: kernel.loop
// SPLIT: kernel.return
func.func @leading(%x: tensor<2x3xf32>, %y: tensor<4x3xf32>) -> tensor<6x3xf32> {
  %e = prim.exp %x : tensor<2x3xf32>
  %n = prim.neg %y : tensor<4x3xf32>
  %c = prim.concatenate %e, %n dim 0 : tensor<2x3xf32>, tensor<4x3xf32>
  return %c : tensor<6x3xf32>
}
