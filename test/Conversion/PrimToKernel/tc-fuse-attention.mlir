// RUN: tc-opt %s -tc-fuse | FileCheck %s

// A fused attention is a library call on buffers: its operands are
// realized (here the query's scaling and the bias's broadcast, each a
// kernel), its result too, and what reads it is a kernel of its own.
// CHECK-LABEL: kernel.schedule @attend
// CHECK-SAME: (%[[Q:[^:]*]]: memref<2x4x16x8xbf16>, %[[K:[^:]*]]: memref<2x4x16x8xbf16>, %[[M:[^:]*]]: memref<2x1x1x16xbf16>, %[[OUT:[^:]*]]: memref<2x4x16x8xbf16>)
// CHECK: %[[QS:.*]] = memref.alloc() : memref<2x4x16x8xbf16>
// CHECK: kernel.launch @attend_{{.*}}(%[[Q]], %[[QS]])
// CHECK: %[[B:.*]] = memref.alloc() : memref<2x1x16x16xbf16>
// CHECK: kernel.launch @attend_{{.*}}(%[[M]], %[[B]])
// CHECK: %[[O:.*]] = memref.alloc() : memref<2x4x16x8xbf16>
// CHECK: kernel.attention %[[QS]], %[[K]], %[[K]], %[[O]] bias %[[B]] scale 2.500000e-01 : memref<2x4x16x8xbf16>, memref<2x4x16x8xbf16>, memref<2x4x16x8xbf16>, memref<2x4x16x8xbf16>, memref<2x1x16x16xbf16>
// CHECK: kernel.launch @attend_{{.*}}(%[[O]], %[[OUT]])
func.func @attend(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x16x8xbf16>, %m: tensor<2x1x1x16xbf16>) -> tensor<2x4x16x8xbf16> {
  %two = prim.constant dense<2.0> : tensor<2x4x16x8xbf16>
  %qs = prim.mul %q, %two : tensor<2x4x16x8xbf16>
  %b = prim.broadcast_in_dim %m, shape [2, 1, 16, 16], dims [0, 1, 2, 3] : tensor<2x1x1x16xbf16>
  %o = prim.attention %qs, %k, %k bias %b scale 0.25 : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x1x16x16xbf16> -> tensor<2x4x16x8xbf16>
  %r = prim.exp %o : tensor<2x4x16x8xbf16>
  return %r : tensor<2x4x16x8xbf16>
}
