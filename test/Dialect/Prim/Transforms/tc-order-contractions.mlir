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

// -----

// A linear layer's weight gradient, (x^T g)^T: the product is computed
// transposed, g^T x, the permute of x folding away and g read with the
// GEMM's transpose flag; no transposing copy of the [out, in] result.
// CHECK-LABEL: func.func @weight_gradient
// CHECK: %[[GT:.*]] = prim.permute %arg1, [1, 0] : tensor<64x32xf32>
// CHECK: %[[P:.*]] = prim.dot %[[GT]], %arg0, batch [] x [], contract [1] x [0] : tensor<32x64xf32>, tensor<64x16xf32>
// CHECK: return %[[P]] : tensor<32x16xf32>
func.func @weight_gradient(%x: tensor<64x16xf32>, %g: tensor<64x32xf32>) -> tensor<32x16xf32> {
  %xt = prim.permute %x, [1, 0] : tensor<64x16xf32>
  %p = prim.dot %xt, %g, batch [] x [], contract [1] x [0] : tensor<16x64xf32>, tensor<64x32xf32>
  %w = prim.permute %p, [1, 0] : tensor<16x32xf32>
  return %w : tensor<32x16xf32>
}

// -----

// Batched: each batch's product transposed, operands swapped.
// CHECK-LABEL: func.func @batched_transposed
// CHECK: %[[BT:.*]] = prim.permute %arg1, [0, 2, 1] : tensor<4x8x5xf32>
// CHECK: %[[AT:.*]] = prim.permute %arg0, [0, 2, 1] : tensor<4x3x8xf32>
// CHECK: %[[P:.*]] = prim.dot %[[BT]], %[[AT]], batch [0] x [0], contract [2] x [1] : tensor<4x5x8xf32>, tensor<4x8x3xf32>
// CHECK: return %[[P]] : tensor<4x5x3xf32>
func.func @batched_transposed(%a: tensor<4x3x8xf32>, %b: tensor<4x8x5xf32>) -> tensor<4x5x3xf32> {
  %p = prim.dot %a, %b, batch [0] x [0], contract [2] x [1] : tensor<4x3x8xf32>, tensor<4x8x5xf32>
  %t = prim.permute %p, [0, 2, 1] : tensor<4x3x5xf32>
  return %t : tensor<4x5x3xf32>
}

// -----

// A product also read as it is keeps its form: computing both layouts
// would take two GEMMs.
// CHECK-LABEL: func.func @read_both_ways
// CHECK: %[[P:.*]] = prim.dot %arg0, %arg1
// CHECK: prim.permute %[[P]], [1, 0]
func.func @read_both_ways(%a: tensor<3x8xf32>, %b: tensor<8x5xf32>) -> (tensor<3x5xf32>, tensor<5x3xf32>) {
  %p = prim.dot %a, %b, batch [] x [], contract [1] x [0] : tensor<3x8xf32>, tensor<8x5xf32>
  %t = prim.permute %p, [1, 0] : tensor<3x5xf32>
  return %p, %t : tensor<3x5xf32>, tensor<5x3xf32>
}
