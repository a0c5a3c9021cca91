// RUN: tc-opt %s -tc-decompose -split-input-file -verify-diagnostics | FileCheck %s

// tc::attention (the backend's form of PyTorch's fused attention) is one
// prim.attention: the default scale is 1 / sqrt(head features), is_causal
// its `causal`, grouped-query heads as they are.
// CHECK-LABEL: func.func @causal
// CHECK: %[[O:.*]] = prim.attention %arg0, %arg1, %arg1 scale 1.250000e-01 causal : tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16> -> tensor<2x8x16x64xbf16>
// CHECK: return %[[O]]
fx.graph @causal(%q: tensor<2x8x16x64xbf16>, %kv: tensor<2x2x16x64xbf16>) -> tensor<2x8x16x64xbf16> {
  %0 = fx.call_function "tc::attention"(%q, %kv, %kv) {args = {dropout_p = 0.0 : f64, is_causal = true, enable_gqa = true}, tensor_arg_sizes = array<i32: 1, 1, 1, 0>} : (tensor<2x8x16x64xbf16>, tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>) -> tensor<2x8x16x64xbf16>
  fx.output %0 : tensor<2x8x16x64xbf16>
}

// -----

// A padding mask (batch, 1, 1, keys) becomes a bias of the operands' type
// spanning the queries, one per batch row and shared by the heads; a
// boolean mask is 0 where it keeps a key and -inf where it drops one.
// CHECK-LABEL: func.func @padding
// CHECK: %[[Z:.*]] = prim.constant dense<0.000000e+00> : tensor<2x1x1x16xf16>
// CHECK: %[[NINF:.*]] = prim.constant dense<0xFC00> : tensor<2x1x1x16xf16>
// CHECK: %[[B:.*]] = prim.where %arg1, %[[Z]], %[[NINF]]
// CHECK: %[[BB:.*]] = prim.broadcast_in_dim %[[B]], shape [2, 1, 16, 16], dims [0, 1, 2, 3]
// CHECK: prim.attention %arg0, %arg0, %arg0 bias %[[BB]] scale 5.000000e-01 : {{.*}}, tensor<2x1x16x16xf16> -> tensor<2x4x16x8xf16>
fx.graph @padding(%q: tensor<2x4x16x8xf16>, %m: tensor<2x1x1x16xi1>) -> tensor<2x4x16x8xf16> {
  %0 = fx.call_function "tc::attention"(%q, %q, %q, %m) {args = {dropout_p = 0.0 : f64, is_causal = false, scale = 0.5 : f64, enable_gqa = false}} : (tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>, tensor<2x1x1x16xi1>) -> tensor<2x4x16x8xf16>
  fx.output %0 : tensor<2x4x16x8xf16>
}

// -----

fx.graph @dropout(%q: tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16> {
  // expected-error @+1 {{cannot decompose 'tc::attention': attention dropout is not supported}}
  %0 = fx.call_function "tc::attention"(%q, %q, %q) {args = {dropout_p = 0.1 : f64, is_causal = false, enable_gqa = false}, tensor_arg_sizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>) -> tensor<1x2x4x8xbf16>
  fx.output %0 : tensor<1x2x4x8xbf16>
}

// -----

fx.graph @float(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{cannot decompose 'tc::attention': only f16 and bf16 attention is a library call}}
  %0 = fx.call_function "tc::attention"(%q, %q, %q) {args = {dropout_p = 0.0 : f64, is_causal = false, enable_gqa = false}, tensor_arg_sizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  fx.output %0 : tensor<1x2x4x8xf32>
}

// -----

// A bias over 77 keys is padded to 80 columns: whole 16-byte rows, as
// cuDNN reads them (the padding is never read).
// CHECK-LABEL: func.func @odd_keys
// CHECK: %[[P:.*]] = prim.pad %arg1, low [0, 0, 0, 0], high [0, 0, 0, 3], interior [0, 0, 0, 0], value 0.000000e+00 : tensor<1x8x77x77xbf16>
// CHECK: prim.attention %arg0, %arg0, %arg0 bias %[[P]] scale 1.250000e-01 : {{.*}}, tensor<1x8x77x80xbf16> -> tensor<1x8x77x64xbf16>
fx.graph @odd_keys(%q: tensor<1x8x77x64xbf16>, %b: tensor<1x8x77x77xbf16>) -> tensor<1x8x77x64xbf16> {
  %0 = fx.call_function "tc::attention"(%q, %q, %q, %b) {args = {dropout_p = 0.0 : f64, is_causal = false, enable_gqa = false}} : (tensor<1x8x77x64xbf16>, tensor<1x8x77x64xbf16>, tensor<1x8x77x64xbf16>, tensor<1x8x77x77xbf16>) -> tensor<1x8x77x64xbf16>
  fx.output %0 : tensor<1x8x77x64xbf16>
}
