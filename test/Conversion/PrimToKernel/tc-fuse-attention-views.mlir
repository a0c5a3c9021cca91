// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// A packed QKV projection (ViT's): the product of an n-d input, its bias,
// [B, S, 3, H, D] permuted to [3, B, H, S, D], one slice per operand. The
// attention reads each operand where the projection wrote it (an offset
// and strides into one buffer), so no slice is a kernel; the sum is
// realized anyway, so the bias is the GEMM's epilogue, not a pass of its
// own.
// CHECK-LABEL: kernel.schedule @packed
// CHECK-SAME: (%[[X:[^:]*]]: memref<2x16x32xbf16>, %[[W:[^:]*]]: memref<96x32xbf16>, %[[BIAS:[^:]*]]: memref<96xbf16>, %[[OUT:[^:]*]]: memref<2x16x32xbf16>)
// CHECK-NOT: kernel.launch
// CHECK: %[[QKV:.*]] = memref.alloc() : memref<2x16x96xbf16>
// CHECK: kernel.gemm %[[X]], %[[W]], %[[QKV]] bias %[[BIAS]] {transpose_b}
// CHECK-NOT: kernel.launch
// CHECK: kernel.attention %[[QKV]], %[[QKV]], %[[QKV]], %[[OUT]] scale 0.35355339059327379
// CHECK-SAME: query_view [0, 2, 4, 16, 8, 1536, 8, 96, 1]
// CHECK-SAME: key_view [32, 2, 4, 16, 8, 1536, 8, 96, 1]
// CHECK-SAME: value_view [64, 2, 4, 16, 8, 1536, 8, 96, 1]
// CHECK-SAME: out_view [0, 2, 4, 16, 8, 512, 8, 32, 1]
// CHECK-NOT: kernel.launch
func.func @packed(%x: tensor<2x16x32xbf16>, %w: tensor<96x32xbf16>, %bias: tensor<96xbf16>) -> tensor<2x16x32xbf16> {
  %wt = prim.permute %w, [1, 0] : tensor<96x32xbf16>
  %d = prim.dot %x, %wt, batch [] x [], contract [2] x [0] : tensor<2x16x32xbf16>, tensor<32x96xbf16>
  %b = prim.broadcast_in_dim %bias, shape [2, 16, 96], dims [2] : tensor<96xbf16>
  %s = prim.add %d, %b : tensor<2x16x96xbf16>
  %r = prim.reshape %s, shape [2, 16, 3, 4, 8] : tensor<2x16x96xbf16>
  %p = prim.permute %r, [2, 0, 3, 1, 4] : tensor<2x16x3x4x8xbf16>
  %q5 = prim.slice %p, start [0, 0, 0, 0, 0], limit [1, 2, 4, 16, 8], strides [1, 1, 1, 1, 1] : tensor<3x2x4x16x8xbf16>
  %k5 = prim.slice %p, start [1, 0, 0, 0, 0], limit [2, 2, 4, 16, 8], strides [1, 1, 1, 1, 1] : tensor<3x2x4x16x8xbf16>
  %v5 = prim.slice %p, start [2, 0, 0, 0, 0], limit [3, 2, 4, 16, 8], strides [1, 1, 1, 1, 1] : tensor<3x2x4x16x8xbf16>
  %q = prim.reshape %q5, shape [2, 4, 16, 8] : tensor<1x2x4x16x8xbf16>
  %k = prim.reshape %k5, shape [2, 4, 16, 8] : tensor<1x2x4x16x8xbf16>
  %v = prim.reshape %v5, shape [2, 4, 16, 8] : tensor<1x2x4x16x8xbf16>
  %o = prim.attention %q, %k, %v scale 0.35355339059327379 : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16> -> tensor<2x4x16x8xbf16>
  %op = prim.permute %o, [0, 2, 1, 3] : tensor<2x4x16x8xbf16>
  %or = prim.reshape %op, shape [2, 16, 32] : tensor<2x16x4x8xbf16>
  return %or : tensor<2x16x32xbf16>
}

// -----

// BERT's: one projection per operand, [B, S, H, D] permuted to [B, H, S,
// D], read in place. A chain the call cannot view whole (here the value's
// head dimension strided by 2: its rows are not contiguous) is viewed
// from the farthest value it can: the slice is realized (a copy), its
// permute is not.
// CHECK-LABEL: kernel.schedule @per_head
// CHECK-SAME: (%[[K:[^:]*]]: memref<2x16x32xbf16>, %[[V:[^:]*]]: memref<2x16x64xbf16>, %[[Q:[^:]*]]: memref<2x4x16x8xbf16>
// CHECK: %[[VC:.*]] = memref.alloc() : memref<2x16x4x8xbf16>
// CHECK: kernel.launch @per_head_{{.*}}(%[[V]], %[[VC]])
// CHECK: kernel.attention %[[Q]], %[[K]], %[[VC]], %{{.*}} scale 1.250000e-01
// CHECK-SAME: key_view [0, 2, 4, 16, 8, 512, 8, 32, 1]
// CHECK-SAME: value_view [0, 2, 4, 16, 8, 512, 8, 32, 1]
func.func @per_head(%k: tensor<2x16x32xbf16>, %v: tensor<2x16x64xbf16>, %q: tensor<2x4x16x8xbf16>) -> tensor<2x4x16x8xbf16> {
  %kr = prim.reshape %k, shape [2, 16, 4, 8] : tensor<2x16x32xbf16>
  %kp = prim.permute %kr, [0, 2, 1, 3] : tensor<2x16x4x8xbf16>
  %vr = prim.reshape %v, shape [2, 16, 4, 16] : tensor<2x16x64xbf16>
  %vs = prim.slice %vr, start [0, 0, 0, 0], limit [2, 16, 4, 16], strides [1, 1, 1, 2] : tensor<2x16x4x16xbf16>
  %vp = prim.permute %vs, [0, 2, 1, 3] : tensor<2x16x4x8xbf16>
  %o = prim.attention %q, %kp, %vp scale 0.125 : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16> -> tensor<2x4x16x8xbf16>
  return %o : tensor<2x4x16x8xbf16>
}
