// REQUIRES: ptxas
// RUN: tc-opt %s --tc-cuda-pipeline | FileCheck %s

// With ptxas, the default format is a cubin: an ELF for sm_90 holding
// every kernel of the graph, next to the host schedule (GEMM + epilogue).
// CHECK: kernel.gemm
// CHECK: kernel.launch @tc_kernels::@mlp_fused_maximum_0
// CHECK-SAME: row_epilogue
// CHECK: gpu.binary @tc_kernels
// CHECK-SAME: bin = "\7FELF\02\01\01
fx.graph @mlp(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<8x3xf32> {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %mm = fx.call_function "aten::addmm"(%b, %x, %t) : (tensor<3xf32>, tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %r = fx.call_function "aten::relu"(%mm) : (tensor<8x3xf32>) -> tensor<8x3xf32>
  fx.output %r : tensor<8x3xf32>
}
