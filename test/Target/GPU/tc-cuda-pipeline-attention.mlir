// REQUIRES: libdevice
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa" | FileCheck %s

// An attention block's middle on CUDA: the fused QKV product (cuBLAS), a
// padding mask as a bias of the operands' type (one kernel), and the
// attention itself, one cuDNN call inside the program that reads its
// query, key and value heads where the product wrote them and writes its
// heads back in rows, straight into the graph's output (views, no copy):
// the graph is one program, with no attention left to eager between
// parts.
// CHECK-LABEL: kernel.schedule @attn
// CHECK: kernel.gemm %arg0, %arg1, %[[QKV:[0-9]+]]
// CHECK-NEXT: kernel.buffer
// CHECK-NEXT: kernel.launch @tc_kernels::@attn_fused_where_0(%arg2, %[[B:[0-9]+]])
// CHECK-NEXT: kernel.attention %[[QKV]], %[[QKV]], %[[QKV]], %arg3 bias %[[B]] scale 1.250000e-01 query_view [0, 2, 4, 16, 64, 12288, 64, 768, 1] key_view [0, 2, 4, 16, 64, 12288, 64, 768, 1] value_view [0, 2, 4, 16, 64, 12288, 64, 768, 1] out_view [0, 2, 4, 16, 64, 4096, 64, 256, 1] : memref<2x16x768xbf16>, memref<2x16x768xbf16>, memref<2x16x768xbf16>, memref<2x16x256xbf16>, memref<2x1x16x16xbf16>
// CHECK-NEXT: kernel.return
fx.graph @attn(%x: tensor<2x16x256xbf16>, %w: tensor<256x768xbf16>, %m: tensor<2x1x1x16xi1>) -> tensor<2x16x256xbf16> {
  %qkv = fx.call_function "aten::matmul"(%x, %w) : (tensor<2x16x256xbf16>, tensor<256x768xbf16>) -> tensor<2x16x768xbf16>
  %q0 = fx.call_function "aten::slice.Tensor"(%qkv) {args = {dim = 2, start = 0, end = 256, step = 1}} : (tensor<2x16x768xbf16>) -> tensor<2x16x256xbf16>
  %q1 = fx.call_function "aten::view"(%q0) {args = {size = array<i64: 2, 16, 4, 64>}} : (tensor<2x16x256xbf16>) -> tensor<2x16x4x64xbf16>
  %q = fx.call_function "aten::permute"(%q1) {args = {dims = array<i64: 0, 2, 1, 3>}} : (tensor<2x16x4x64xbf16>) -> tensor<2x4x16x64xbf16>
  %o = fx.call_function "tc::attention"(%q, %q, %q, %m) {args = {dropout_p = 0.0 : f64, is_causal = false, enable_gqa = false}} : (tensor<2x4x16x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x4x16x64xbf16>, tensor<2x1x1x16xi1>) -> tensor<2x4x16x64xbf16>
  %o1 = fx.call_function "aten::permute"(%o) {args = {dims = array<i64: 0, 2, 1, 3>}} : (tensor<2x4x16x64xbf16>) -> tensor<2x16x4x64xbf16>
  %o2 = fx.call_function "aten::reshape"(%o1) {args = {shape = array<i64: 2, 16, 256>}} : (tensor<2x16x4x64xbf16>) -> tensor<2x16x256xbf16>
  fx.output %o2 : tensor<2x16x256xbf16>
}
