// RUN: tc-opt %s -split-input-file -tc-order-contractions | FileCheck %s

// XLNet's output projection, einsum("ibnd,hnd->ibh", attn, o): PyTorch's
// decomposition merges the contracted d and n in that order, where the
// weight o [h, n, d] stores n then d. Both operands now merge n then d:
// the weight is its rows [h, n * d] transposed (read in place with the
// GEMM's transpose flag), the attention's copy reads d innermost.
// CHECK-LABEL: func.func @projection
// CHECK: %[[A:.*]] = prim.permute %arg0, [2, 0, 1, 4, 3] : tensor<2x16x128x1x64xf32>
// CHECK: %[[A2:.*]] = prim.reshape %[[A]], shape [1, 256, 1024] : tensor<128x2x16x64x1xf32>
// CHECK: %[[W:.*]] = prim.reshape %arg1, shape [1, 1024, 1024] : tensor<1024x16x64x1x1xf32>
// CHECK: %[[W2:.*]] = prim.permute %[[W]], [0, 2, 1] : tensor<1x1024x1024xf32>
// CHECK: prim.dot %[[A2]], %[[W2]], batch [0] x [0], contract [2] x [1]
func.func @projection(%attn: tensor<2x16x128x1x64xf32>, %o: tensor<1024x16x64x1x1xf32>) -> tensor<1x256x1024xf32> {
  %a = prim.permute %attn, [2, 0, 4, 1, 3] : tensor<2x16x128x1x64xf32>
  %a2 = prim.reshape %a, shape [1, 256, 1024] : tensor<128x2x64x16x1xf32>
  %w = prim.permute %o, [2, 1, 0, 3, 4] : tensor<1024x16x64x1x1xf32>
  %w2 = prim.reshape %w, shape [1, 1024, 1024] : tensor<64x16x1024x1x1xf32>
  %p = prim.dot %a2, %w2, batch [0] x [0], contract [2] x [1] : tensor<1x256x1024xf32>, tensor<1x1024x1024xf32>
  return %p : tensor<1x256x1024xf32>
}

// -----

// Already in the weight's order; each operand is a reshape of its input
// transposed: both read in place (the GEMM's transpose flags).
// CHECK-LABEL: func.func @ordered
// CHECK: %[[X:.*]] = prim.reshape %arg0, shape [32, 16] : tensor<4x8x16xf32>
// CHECK: %[[XT:.*]] = prim.permute %[[X]], [1, 0] : tensor<32x16xf32>
// CHECK: %[[W:.*]] = prim.reshape %arg1, shape [32, 32] : tensor<32x4x8xf32>
// CHECK: %[[WT:.*]] = prim.permute %[[W]], [1, 0] : tensor<32x32xf32>
// CHECK: prim.dot %[[XT]], %[[WT]]
func.func @ordered(%x: tensor<4x8x16xf32>, %w: tensor<32x4x8xf32>) -> tensor<16x32xf32> {
  %a = prim.permute %x, [2, 0, 1] : tensor<4x8x16xf32>
  %a2 = prim.reshape %a, shape [16, 32] : tensor<16x4x8xf32>
  %w1 = prim.permute %w, [1, 2, 0] : tensor<32x4x8xf32>
  %w2 = prim.reshape %w1, shape [32, 32] : tensor<4x8x32xf32>
  %p = prim.dot %a2, %w2, batch [] x [], contract [1] x [0] : tensor<16x32xf32>, tensor<32x32xf32>
  return %p : tensor<16x32xf32>
}

// -----

// A permute read by something else too: left alone (a second copy).
// CHECK-LABEL: func.func @shared
// CHECK: prim.permute %arg1, [2, 1, 0] : tensor<32x4x8xf32>
// CHECK-NOT: prim.permute %arg1
func.func @shared(%x: tensor<16x8x4xf32>, %w: tensor<32x4x8xf32>) -> (tensor<16x32xf32>, tensor<8x4x32xf32>) {
  %a2 = prim.reshape %x, shape [16, 32] : tensor<16x8x4xf32>
  %w1 = prim.permute %w, [2, 1, 0] : tensor<32x4x8xf32>
  %w2 = prim.reshape %w1, shape [32, 32] : tensor<8x4x32xf32>
  %p = prim.dot %a2, %w2, batch [] x [], contract [1] x [0] : tensor<16x32xf32>, tensor<32x32xf32>
  return %p, %w1 : tensor<16x32xf32>, tensor<8x4x32xf32>
}
