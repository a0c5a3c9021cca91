// RUN: tc-opt %s -tc-autodiff -canonicalize -cse -tc-partition -canonicalize -cse -split-input-file -verify-diagnostics | FileCheck %s

// A chain of cheap pointwise ops: saving its input (256 bytes) and
// recomputing the chain in the backward beats saving the intermediates.
// CHECK-LABEL: func.func @chain_forward
// CHECK-SAME: (%[[X:.*]]: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) attributes {tc.saved_bytes = 256 : i64}
// CHECK: return %{{.*}}, %[[X]] : tensor<64xf32>, tensor<64xf32>
// CHECK-LABEL: func.func @chain_backward
// CHECK-SAME: (%[[SX:.*]]: tensor<64xf32>, %[[G:.*]]: tensor<64xf32>) -> tensor<64xf32>
// CHECK: prim.exp %[[SX]]
// CHECK: prim.sin
// CHECK: prim.mul %[[G]]
func.func @chain(%x: tensor<64xf32> {tc.requires_grad}) -> tensor<64xf32> {
  %0 = prim.exp %x : tensor<64xf32>
  %1 = prim.sin %0 : tensor<64xf32>
  %2 = prim.cos %1 : tensor<64xf32>
  return %2 : tensor<64xf32>
}

// -----

// ReLU of a matrix product: the product is not recomputed (a GEMM); the
// backward needs only where it was not positive, so the bool mask (1 byte per
// element) is saved instead of the float product (4 bytes), and x for the
// weight gradient.
// CHECK-LABEL: func.func @relu_dot_forward
// CHECK-SAME: -> (tensor<8x32xf32>, tensor<8x16xf32>, tensor<8x32xi1>) attributes {tc.saved_bytes = 768 : i64}
// CHECK: %[[DOT:.*]] = prim.dot
// CHECK: %[[MASK:.*]] = prim.compare le, %[[DOT]]
// CHECK: return %{{.*}}, %arg0, %[[MASK]]
// CHECK-LABEL: func.func @relu_dot_backward
// CHECK-SAME: (%[[SX:.*]]: tensor<8x16xf32>, %[[SMASK:.*]]: tensor<8x32xi1>, %[[G:.*]]: tensor<8x32xf32>) -> tensor<16x32xf32>
// CHECK-NOT: prim.dot %[[SX]], %{{.*}}, batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x32xf32>
// CHECK: prim.where %[[SMASK]], %{{.*}}, %[[G]]
// CHECK: prim.dot
// CHECK-NEXT: return
func.func @relu_dot(%x: tensor<8x16xf32>, %w: tensor<16x32xf32> {tc.requires_grad}) -> tensor<8x32xf32> {
  %0 = prim.dot %x, %w, batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x32xf32>
  %zero = prim.constant dense<0.0> : tensor<8x32xf32>
  %1 = prim.maximum %0, %zero : tensor<8x32xf32>
  return %1 : tensor<8x32xf32>
}

// -----

// A reduction is not recomputed either: its result is saved when the
// backward needs it (softmax-like: y = exp(x - max) needs the max).
// CHECK-LABEL: func.func @reduction_forward
// CHECK: %[[MAX:.*]] = prim.reduce max
// CHECK: return %{{.*}}, %{{.*}}, %[[MAX]]
func.func @reduction(%x: tensor<4x8xf32> {tc.requires_grad}) -> tensor<4x8xf32> {
  %m = prim.reduce max %x, dims [1] : tensor<4x8xf32>
  %b = prim.broadcast_in_dim %m, shape [4, 8], dims [0] : tensor<4xf32>
  %d = prim.sub %x, %b : tensor<4x8xf32>
  %e = prim.exp %d : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// Dropout: the counter-based numbers are a function of the seed argument,
// so the backward recomputes the mask from the seed (8 bytes saved) instead
// of keeping it (32 bytes of bool).
// CHECK-LABEL: func.func @dropout_forward
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32>, %[[SEED:.*]]: tensor<i64>) -> (tensor<4x8xf32>, tensor<i64>) attributes {tc.saved_bytes = 8 : i64}
// CHECK: return %{{.*}}, %[[SEED]]
// CHECK-LABEL: func.func @dropout_backward
// CHECK-SAME: (%[[S:.*]]: tensor<i64>, %[[G:.*]]: tensor<4x8xf32>)
// CHECK: prim.random uniform %[[S]]
// CHECK: prim.where %{{.*}}, %[[G]]
func.func @dropout(%x: tensor<4x8xf32> {tc.requires_grad}, %seed: tensor<i64>) -> tensor<4x8xf32> {
  %o = prim.constant dense<5> : tensor<i64>
  %u = prim.random uniform %seed, %o, shape [4, 8] : f32
  %k = prim.constant dense<0.7> : tensor<4x8xf32>
  %m = prim.compare lt, %u, %k : tensor<4x8xf32>
  %z = prim.constant dense<0.0> : tensor<4x8xf32>
  %y = prim.where %m, %x, %z : tensor<4x8xi1>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The backward keeps the joint graph's order: w2's gradient is computed
// where the cotangent is ready, not sunk to the return after w1's (which
// would keep every cotangent it reads alive through the rest of the
// backward). Only the recomputed tanh moves, to its first use.
// CHECK-LABEL: func.func @two_layers_backward
// CHECK-SAME: (%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<32x4xf32>, %[[H:.*]]: tensor<8x32xf32>, %[[G:.*]]: tensor<8x4xf32>)
// CHECK: %[[T:.*]] = prim.tanh %[[H]]
// CHECK: %[[TT:.*]] = prim.permute %[[T]], [1, 0]
// CHECK: %[[GW2:.*]] = prim.dot %[[TT]], %[[G]]
// CHECK: prim.mul %[[T]], %[[T]]
// CHECK: %[[GW1:.*]] = prim.dot
// CHECK-NEXT: return %[[GW1]], %[[GW2]]
func.func @two_layers(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32> {tc.requires_grad}, %w2: tensor<32x4xf32> {tc.requires_grad}) -> tensor<8x4xf32> {
  %h = prim.dot %x, %w1, batch [] x [], contract [1] x [0] : tensor<8x16xf32>, tensor<16x32xf32>
  %t = prim.tanh %h : tensor<8x32xf32>
  %y = prim.dot %t, %w2, batch [] x [], contract [1] x [0] : tensor<8x32xf32>, tensor<32x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Max pooling: the backward scatters the cotangent to the positions of the
// maxima, which are saved (1 byte per window, the positions are not
// recomputed from the 16x larger input); the input itself is not saved.
// CHECK-LABEL: func.func @max_pool_forward
// CHECK-SAME: -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi8>) attributes {tc.saved_bytes = 32 : i64}
// CHECK: %[[K:.*]] = prim.window_argmax
// CHECK: return %{{.*}}, %[[K]]
// CHECK-LABEL: func.func @max_pool_backward
// CHECK-SAME: (%[[K:.*]]: tensor<1x2x4x4xi8>, %[[G:.*]]: tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
// CHECK: %[[DX:.*]] = prim.window_scatter %[[G]][%[[K]]], window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<1x2x4x4xf32>, tensor<1x2x4x4xi8> -> tensor<1x2x8x8xf32>
// CHECK: return %[[DX]]
func.func @max_pool(%x: tensor<1x2x8x8xf32> {tc.requires_grad}) -> tensor<1x2x4x4xf32> {
  %k = prim.window_argmax %x, window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<1x2x8x8xf32> -> tensor<1x2x4x4xi8>
  %y = prim.window_gather %x[%k], window [2, 2], strides [2, 2], padding [0, 0], dilation [1, 1] : tensor<1x2x8x8xf32>, tensor<1x2x4x4xi8> -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// A product returned in another shape (an LM head's logits, [B * S, V]
// rows returned as [B, S, V]) that the backward reads (here for the sine's
// gradient): the output is saved (kept by reference, nothing extra
// returned) and reshaped back in the backward, where saving the product
// too had the forward write the same elements twice.
// CHECK-LABEL: func.func @returned_reshaped_forward
// CHECK-SAME: -> (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>)
// CHECK: %[[R:.*]] = prim.reshape
// CHECK: return %[[R]], %{{.*}}, %arg1, %[[R]] : tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>
// CHECK-LABEL: func.func @returned_reshaped_backward
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32>, %[[SR:.*]]: tensor<2x4x8xf32>, %{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<8x8xf32>)
// CHECK: %[[P:.*]] = prim.reshape %[[SR]], shape [8, 8] : tensor<2x4x8xf32>
// CHECK: prim.cos %[[P]]
func.func @returned_reshaped(%x: tensor<8x4xf32> {tc.requires_grad}, %w: tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>) {
  %p = prim.dot %x, %w, batch [] x [], contract [1] x [0] : tensor<8x4xf32>, tensor<4x8xf32>
  %r = prim.reshape %p, shape [2, 4, 8] : tensor<8x8xf32>
  %s = prim.sin %p : tensor<8x8xf32>
  return %r, %s : tensor<2x4x8xf32>, tensor<8x8xf32>
}

// -----

// A layer norm's centered rows are as large as its input: saving them
// writes a tensor the forward would not otherwise write, where the input is
// kept anyway and its row sums are small. The input and the two row sums
// are saved, the centered rows recomputed in the backward (the forward's
// norm then stays one kernel: see tc-fuse-multiple-outputs.mlir).
// CHECK-LABEL: func.func @layer_norm_forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[SUM:.*]] = prim.reduce sum %[[X]]
// CHECK: %[[SQUARES:.*]] = prim.reduce sum
// CHECK: return %{{.*}}, %[[X]], %[[SUM]], %[[SQUARES]]
// CHECK-LABEL: func.func @layer_norm_backward
// CHECK-SAME: (%[[SX:.*]]: tensor<4x8xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4x8xf32>)
// CHECK: prim.sub %[[SX]]
func.func @layer_norm(%x: tensor<4x8xf32> {tc.requires_grad}) -> tensor<4x8xf32> {
  %n = prim.constant dense<8.0> : tensor<4xf32>
  %eps = prim.constant dense<1.0e-5> : tensor<4xf32>
  %s = prim.reduce sum %x, dims [1] : tensor<4x8xf32>
  %mean = prim.div %s, %n : tensor<4xf32>
  %bm = prim.broadcast_in_dim %mean, shape [4, 8], dims [0] : tensor<4xf32>
  %c = prim.sub %x, %bm : tensor<4x8xf32>
  %sq = prim.mul %c, %c : tensor<4x8xf32>
  %ss = prim.reduce sum %sq, dims [1] : tensor<4x8xf32>
  %var = prim.div %ss, %n : tensor<4xf32>
  %ve = prim.add %var, %eps : tensor<4xf32>
  %r = prim.rsqrt %ve : tensor<4xf32>
  %br = prim.broadcast_in_dim %r, shape [4, 8], dims [0] : tensor<4xf32>
  %y = prim.mul %c, %br : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
