// RUN: tc-opt %s -tc-fuse="split-concatenations=true" -canonicalize -split-input-file | FileCheck %s --check-prefix=SPLIT
// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s --check-prefix=SELECT

// A kernel whose point reads a concatenation along the last dimension at
// the inner loop's index runs one inner loop per range of the parts, each
// reading its part alone (split-concatenations, the CPU's choice); without
// it one loop reads every part at each point and selects one.

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
// SPLIT-NEXT: %[[AT:.*]] = arith.addi %[[J]], %c3
// SPLIT-NEXT: %[[B:.*]] = memref.load %[[Y]][%[[ROW]], %[[J]]]
// SPLIT-NEXT: %[[N:.*]] = arith.negf %[[B]]
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

// -----

// Read through elementwise ops and a broadcast that keeps the last
// dimension (a rotary embedding's rotated half times the sine): the loop
// splits at the halves, each range reading one half and the sine.
// SPLIT-LABEL: kernel.kernel @rotary_fused_neg_slice_concatenate_mul_0
// SPLIT-SAME: (%[[Q:.*]]: memref<2x4x8xf32>, %[[S:.*]]: memref<4x8xf32>, %[[R:.*]]: memref<2x4x8xf32>)
// SPLIT: kernel.loop %c4
// SPLIT-NEXT: ^bb0(%[[I:.*]]: index):
// SPLIT-NEXT: %[[UP:.*]] = arith.addi %[[I]], %c4
// SPLIT-NEXT: memref.load %[[Q]][%{{.*}}, %{{.*}}, %[[UP]]]
// SPLIT-NEXT: arith.negf
// SPLIT-NEXT: memref.load %[[S]][%{{.*}}, %[[I]]]
// SPLIT-NEXT: arith.mulf
// SPLIT-NEXT: memref.store
// SPLIT: kernel.loop %c4
// SPLIT-NEXT: ^bb0(%[[J:.*]]: index):
// SPLIT-NEXT: %[[AT:.*]] = arith.addi %[[J]], %c4
// SPLIT-NEXT: memref.load %[[Q]][%{{.*}}, %{{.*}}, %[[J]]]
// SPLIT-NEXT: memref.load %[[S]][%{{.*}}, %[[AT]]]
// SPLIT-NEXT: arith.mulf
// SPLIT-NEXT: memref.store
// SPLIT-NOT: arith.select
// SPLIT: kernel.return
func.func @rotary(%q: tensor<2x4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %lo = prim.slice %q, start [0, 0, 0], limit [2, 4, 4], strides [1, 1, 1] : tensor<2x4x8xf32>
  %hi = prim.slice %q, start [0, 0, 4], limit [2, 4, 8], strides [1, 1, 1] : tensor<2x4x8xf32>
  %neg = prim.neg %hi : tensor<2x4x4xf32>
  %rot = prim.concatenate %neg, %lo dim 2 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %s = prim.broadcast_in_dim %sin, shape [2, 4, 8], dims [1, 2] : tensor<4x8xf32>
  %r = prim.mul %rot, %s : tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}
