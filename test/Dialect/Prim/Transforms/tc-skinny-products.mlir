// RUN: tc-opt %s -split-input-file -tc-skinny-products | FileCheck %s
// RUN: tc-opt %s -split-input-file '-tc-skinny-products=max-rows=0' | FileCheck %s --check-prefix=OFF

// One row by a linear layer's [N, K] weight (read transposed): a multiply
// of the row and the weight, each broadcast along the other's free
// dimension, summed over K in f32 and rounded to bf16 once.
// CHECK-LABEL: func.func @one_row
// CHECK: %[[X:.*]] = prim.convert %arg0 to f32 : tensor<1x256xbf16>
// CHECK: %[[XB:.*]] = prim.broadcast_in_dim %[[X]], shape [1, 64, 256], dims [0, 2]
// CHECK: %[[W:.*]] = prim.convert %arg1 to f32 : tensor<64x256xbf16>
// CHECK: %[[WB:.*]] = prim.broadcast_in_dim %[[W]], shape [1, 64, 256], dims [1, 2]
// CHECK: %[[P:.*]] = prim.mul %[[XB]], %[[WB]]
// CHECK: %[[S:.*]] = prim.reduce sum %[[P]], dims [2] : tensor<1x64x256xf32>
// CHECK: %[[R:.*]] = prim.convert %[[S]] to bf16 : tensor<1x64xf32>
// CHECK: return %[[R]]
// OFF-LABEL: func.func @one_row
// OFF: prim.dot
func.func @one_row(%x: tensor<1x256xbf16>, %w: tensor<64x256xbf16>) -> tensor<1x64xbf16> {
  %t = prim.permute %w, [1, 0] : tensor<64x256xbf16>
  %0 = prim.dot %x, %t, batch [] x [], contract [1] x [0] : tensor<1x256xbf16>, tensor<256x64xbf16>
  return %0 : tensor<1x64xbf16>
}

// -----

// A [B, S, K] activation of one row in all (a decode step's [1, 1, K]):
// the row reshaped to [1, K], the sums back to [1, 1, N]; f32 needs no
// conversion.
// CHECK-LABEL: func.func @flattened
// CHECK: %[[X:.*]] = prim.reshape %arg0, shape [1, 512] : tensor<1x1x512xf32>
// CHECK: prim.broadcast_in_dim %[[X]], shape [1, 32, 512], dims [0, 2]
// CHECK: prim.broadcast_in_dim %arg1, shape [1, 32, 512], dims [1, 2]
// CHECK: %[[S:.*]] = prim.reduce sum
// CHECK: prim.reshape %[[S]], shape [1, 1, 32] : tensor<1x32xf32>
func.func @flattened(%x: tensor<1x1x512xf32>, %w: tensor<32x512xf32>) -> tensor<1x1x32xf32> {
  %t = prim.permute %w, [1, 0] : tensor<32x512xf32>
  %0 = prim.dot %x, %t, batch [] x [], contract [2] x [0] : tensor<1x1x512xf32>, tensor<512x32xf32>
  return %0 : tensor<1x1x32xf32>
}

// -----

// Stay GEMMs: two rows (more than max-rows), a [K, N] weight (each output
// a strided column), a short contraction (below min-depth), a batched
// product, and integers.
// CHECK-LABEL: func.func @stay
// CHECK-COUNT-5: prim.dot
// CHECK-NOT: prim.reduce
func.func @stay(%x2: tensor<2x256xf32>, %w: tensor<64x256xf32>, %kn: tensor<256x64xf32>, %x1: tensor<1x256xf32>, %short: tensor<1x64xf32>, %w64: tensor<64x64xf32>, %b: tensor<4x1x256xf32>, %bw: tensor<4x256x8xf32>, %i: tensor<1x256xi32>, %iw: tensor<256x8xi32>) -> (tensor<2x64xf32>, tensor<1x64xf32>, tensor<1x64xf32>, tensor<4x1x8xf32>, tensor<1x8xi32>) {
  %t = prim.permute %w, [1, 0] : tensor<64x256xf32>
  %0 = prim.dot %x2, %t, batch [] x [], contract [1] x [0] : tensor<2x256xf32>, tensor<256x64xf32>
  %1 = prim.dot %x1, %kn, batch [] x [], contract [1] x [0] : tensor<1x256xf32>, tensor<256x64xf32>
  %s = prim.permute %w64, [1, 0] : tensor<64x64xf32>
  %2 = prim.dot %short, %s, batch [] x [], contract [1] x [0] : tensor<1x64xf32>, tensor<64x64xf32>
  %3 = prim.dot %b, %bw, batch [0] x [0], contract [2] x [1] : tensor<4x1x256xf32>, tensor<4x256x8xf32>
  %4 = prim.dot %i, %iw, batch [] x [], contract [1] x [0] : tensor<1x256xi32>, tensor<256x8xi32>
  return %0, %1, %2, %3, %4 : tensor<2x64xf32>, tensor<1x64xf32>, tensor<1x64xf32>, tensor<4x1x8xf32>, tensor<1x8xi32>
}

// -----

// A bf16 bias (a linear layer's, computed after the product) joins the f32
// sums before their one rounding, as a GEMM's epilogue adds it.
// CHECK-LABEL: func.func @bias
// CHECK: %[[B:.*]] = prim.slice %arg2
// CHECK: %[[S:.*]] = prim.reduce sum %{{.*}}, dims [2] : tensor<1x64x256xf32>
// CHECK: %[[BW:.*]] = prim.convert %[[B]] to f32 : tensor<64xbf16>
// CHECK: %[[BB:.*]] = prim.broadcast_in_dim %[[BW]], shape [1, 64], dims [1]
// CHECK: %[[A:.*]] = prim.add %[[S]], %[[BB]] : tensor<1x64xf32>
// CHECK: %[[R:.*]] = prim.convert %[[A]] to bf16 : tensor<1x64xf32>
// CHECK: return %[[R]]
func.func @bias(%x: tensor<1x256xbf16>, %w: tensor<64x256xbf16>, %bs: tensor<128xbf16>) -> tensor<1x64xbf16> {
  %t = prim.permute %w, [1, 0] : tensor<64x256xbf16>
  %0 = prim.dot %x, %t, batch [] x [], contract [1] x [0] : tensor<1x256xbf16>, tensor<256x64xbf16>
  %b = prim.slice %bs, start [0], limit [64], strides [1] : tensor<128xbf16>
  %bb = prim.broadcast_in_dim %b, shape [1, 64], dims [1] : tensor<64xbf16>
  %1 = prim.add %0, %bb : tensor<1x64xbf16>
  return %1 : tensor<1x64xbf16>
}
