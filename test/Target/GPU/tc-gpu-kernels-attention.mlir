// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline -verify-diagnostics | FileCheck %s

// The kernel pipelines take kernel.attention on any GPU target; it is the
// ROCm and CPU runtimes that refuse it when they read the schedule (the
// backend makes tc::attention for CUDA graphs only).
// CHECK: kernel.attention
fx.graph @attn(%q: tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16> {
  %o = fx.call_function "tc::attention"(%q, %q, %q) {args = {dropout_p = 0.0 : f64, is_causal = true, enable_gqa = false}, tensor_arg_sizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16>
  fx.output %o : tensor<1x2x8x64xf16>
}
