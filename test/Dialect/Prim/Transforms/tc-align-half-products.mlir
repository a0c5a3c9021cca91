// RUN: tc-opt %s -split-input-file -tc-align-half-products | FileCheck %s

// GPT-2's LM head in bf16: logits = x @ wte^T with a vocabulary of 50257.
// The result's rows (n) pad to 50264: the weight pads under its transpose
// (the GEMM still reads it transposed), the product is sliced back.
// CHECK-LABEL: func.func @lm_head
// CHECK: %[[W:.*]] = prim.pad %arg1, low [0, 0], high [7, 0], interior [0, 0], value 0.000000e+00 : tensor<50257x768xbf16>
// CHECK: %[[WT:.*]] = prim.permute %[[W]], [1, 0] : tensor<50264x768xbf16>
// CHECK: %[[P:.*]] = prim.dot %arg0, %[[WT]], batch [] x [], contract [1] x [0] : tensor<4096x768xbf16>, tensor<768x50264xbf16>
// CHECK: %[[S:.*]] = prim.slice %[[P]], start [0, 0], limit [4096, 50257], strides [1, 1] : tensor<4096x50264xbf16>
// CHECK: return %[[S]]
func.func @lm_head(%x: tensor<4096x768xbf16>, %w: tensor<50257x768xbf16>) -> tensor<4096x50257xbf16> {
  %wt = prim.permute %w, [1, 0] : tensor<50257x768xbf16>
  %0 = prim.dot %x, %wt, batch [] x [], contract [1] x [0] : tensor<4096x768xbf16>, tensor<768x50257xbf16>
  return %0 : tensor<4096x50257xbf16>
}

// -----

// The LM head compiled once for every number of rows (the graph's symbolic
// size, costed at its hint of 1024): n pads as above, the rows stay `?`,
// and the slice takes them whole.
// CHECK-LABEL: func.func @lm_head_symbolic_rows
// CHECK: %[[W:.*]] = prim.pad %arg1, low [0, 0], high [7, 0], interior [0, 0], value 0.000000e+00 : tensor<50257x768xbf16>
// CHECK: %[[WT:.*]] = prim.permute %[[W]], [1, 0] : tensor<50264x768xbf16>
// CHECK: %[[P:.*]] = prim.dot %arg0, %[[WT]], batch [] x [], contract [1] x [0] : tensor<?x768xbf16>, tensor<768x50264xbf16>
// CHECK: %[[S:.*]] = prim.slice %[[P]], start [0, 0], limit [?, 50257], strides [1, 1] : tensor<?x50264xbf16>
// CHECK: return %[[S]] : tensor<?x50257xbf16>
func.func @lm_head_symbolic_rows(%x: tensor<?x768xbf16>, %w: tensor<50257x768xbf16>) -> tensor<?x50257xbf16> {
  %wt = prim.permute %w, [1, 0] : tensor<50257x768xbf16>
  %0 = prim.dot %x, %wt, batch [] x [], contract [1] x [0] : tensor<?x768xbf16>, tensor<768x50257xbf16>
  return %0 : tensor<?x50257xbf16>
}

// -----

// With symbolic rows, a k that needs padding would pad the rows' operand:
// left as it is.
// CHECK-LABEL: func.func @symbolic_rows_unaligned_k
// CHECK-NOT: prim.pad
// CHECK: prim.dot %arg0, %arg1
func.func @symbolic_rows_unaligned_k(%x: tensor<?x50257xbf16>, %w: tensor<50257x768xbf16>) -> tensor<?x768xbf16> {
  %0 = prim.dot %x, %w, batch [] x [], contract [1] x [0] : tensor<?x50257xbf16>, tensor<50257x768xbf16>
  return %0 : tensor<?x768xbf16>
}

// -----

// Its input gradient, dlogits @ wte: k (50257) is the lhs's leading
// dimension; both operands pad along it with zeros, which add nothing.
// CHECK-LABEL: func.func @lm_head_input_grad
// CHECK: %[[G:.*]] = prim.pad %arg0, low [0, 0], high [0, 7], interior [0, 0], value 0.000000e+00 : tensor<4096x50257xbf16>
// CHECK: %[[W:.*]] = prim.pad %arg1, low [0, 0], high [7, 0], interior [0, 0], value 0.000000e+00 : tensor<50257x768xbf16>
// CHECK: %[[P:.*]] = prim.dot %[[G]], %[[W]], batch [] x [], contract [1] x [0] : tensor<4096x50264xbf16>, tensor<50264x768xbf16>
// CHECK-NOT: prim.slice
// CHECK: return %[[P]]
func.func @lm_head_input_grad(%g: tensor<4096x50257xbf16>, %w: tensor<50257x768xbf16>) -> tensor<4096x768xbf16> {
  %0 = prim.dot %g, %w, batch [] x [], contract [1] x [0] : tensor<4096x50257xbf16>, tensor<50257x768xbf16>
  return %0 : tensor<4096x768xbf16>
}

// -----

// Its weight gradient, dlogits^T @ x: the transposed lhs's leading
// dimension is m (50257), which pads under the transpose; k (4096) is
// aligned.
// CHECK-LABEL: func.func @lm_head_weight_grad
// CHECK: %[[G:.*]] = prim.pad %arg0, low [0, 0], high [0, 7], interior [0, 0], value 0.000000e+00 : tensor<4096x50257xbf16>
// CHECK: %[[GT:.*]] = prim.permute %[[G]], [1, 0] : tensor<4096x50264xbf16>
// CHECK: %[[P:.*]] = prim.dot %[[GT]], %arg1, batch [] x [], contract [1] x [0] : tensor<50264x4096xbf16>, tensor<4096x768xbf16>
// CHECK: prim.slice %[[P]], start [0, 0], limit [50257, 768], strides [1, 1] : tensor<50264x768xbf16>
func.func @lm_head_weight_grad(%g: tensor<4096x50257xbf16>, %x: tensor<4096x768xbf16>) -> tensor<50257x768xbf16> {
  %gt = prim.permute %g, [1, 0] : tensor<4096x50257xbf16>
  %0 = prim.dot %gt, %x, batch [] x [], contract [1] x [0] : tensor<50257x4096xbf16>, tensor<4096x768xbf16>
  return %0 : tensor<50257x768xbf16>
}

// -----

// Left alone: aligned products, small ones, f32 ones, and an odd m that
// is no leading dimension (the rows of an untransposed lhs).
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT: prim.pad
// CHECK-NOT: prim.slice
func.func @unchanged(%a: tensor<4096x768xbf16>, %b: tensor<768x3072xbf16>, %c: tensor<8x5xbf16>, %d: tensor<5x7xbf16>, %e: tensor<4096x769xf32>, %f: tensor<769x4095xf32>, %g: tensor<4097x768xf16>) -> (tensor<4096x3072xbf16>, tensor<8x7xbf16>, tensor<4096x4095xf32>, tensor<4097x3072xf16>) {
  %0 = prim.dot %a, %b, batch [] x [], contract [1] x [0] : tensor<4096x768xbf16>, tensor<768x3072xbf16>
  %1 = prim.dot %c, %d, batch [] x [], contract [1] x [0] : tensor<8x5xbf16>, tensor<5x7xbf16>
  %2 = prim.dot %e, %f, batch [] x [], contract [1] x [0] : tensor<4096x769xf32>, tensor<769x4095xf32>
  %bh = prim.convert %b to f16 : tensor<768x3072xbf16>
  %3 = prim.dot %g, %bh, batch [] x [], contract [1] x [0] : tensor<4097x768xf16>, tensor<768x3072xf16>
  return %0, %1, %2, %3 : tensor<4096x3072xbf16>, tensor<8x7xbf16>, tensor<4096x4095xf32>, tensor<4097x3072xf16>
}

// -----

// A batched product pads k and n in each batch; one of attention's
// score products over 77 positions (CLIP's text length) does not: its
// copies would take longer than the slow kernels lose.
// CHECK-LABEL: func.func @batched
// CHECK: prim.pad %arg0, low [0, 0, 0], high [0, 0, 1], interior [0, 0, 0]
// CHECK: prim.pad %arg1, low [0, 0, 0], high [0, 1, 4], interior [0, 0, 0]
// CHECK: prim.dot {{.*}} : tensor<16x1024x1024xf16>, tensor<16x1024x1000xf16>
// CHECK: prim.slice {{.*}} limit [16, 1024, 996]
// CHECK: prim.dot %arg2, %arg3, batch [0] x [0], contract [2] x [1] : tensor<2048x77x64xf16>, tensor<2048x64x77xf16>
// CHECK-NOT: prim.pad
func.func @batched(%a: tensor<16x1024x1023xf16>, %b: tensor<16x1023x996xf16>, %q: tensor<2048x77x64xf16>, %k: tensor<2048x64x77xf16>) -> (tensor<16x1024x996xf16>, tensor<2048x77x77xf16>) {
  %0 = prim.dot %a, %b, batch [0] x [0], contract [2] x [1] : tensor<16x1024x1023xf16>, tensor<16x1023x996xf16>
  %1 = prim.dot %q, %k, batch [0] x [0], contract [2] x [1] : tensor<2048x77x64xf16>, tensor<2048x64x77xf16>
  return %0, %1 : tensor<16x1024x996xf16>, tensor<2048x77x77xf16>
}
