// REQUIRES: libdevice
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa" | FileCheck %s

// A graph with the symbolic size (a `?` batch, docs/DynamicShapes.md)
// through the whole CUDA pipeline: one compile for every batch size. The
// kernels take the size after their buffers (a 64-bit parameter), the
// launches size their grids by it, and the arena grows by it.

// CHECK: kernel.schedule @mlp
// CHECK-SAME: tc.arena_bytes_per_symbol = 80 : i64
// CHECK: kernel.symbol : index
// CHECK: kernel.gemm
// CHECK: kernel.launch @tc_kernels::@mlp_fused_maximum_0(%{{.*}}, %{{.*}}) {block = 256 : i64, row_epilogue, threads_per_symbol = 8 : i64}
// CHECK: kernel.buffer %{{.*}}[0 + 64 * s]
// CHECK: kernel.launch @tc_kernels::@mlp_fused_sin_1(%{{.*}}, %{{.*}}) {block = 256 : i64, threads_per_symbol = 4 : i64}
// The softmax runs a block per row: as many blocks as the size.
// CHECK: kernel.launch @tc_kernels::@mlp_fused_sub_exp_reduce_div_2(%{{.*}}, %{{.*}}) {block = 32 : i64, grid_per_symbol = 1 : i64, row_epilogue}
// CHECK: gpu.binary @tc_kernels
// CHECK-SAME: mlp_fused_sin_1(\0A\09.param .u64 .ptr .align 16 mlp_fused_sin_1_param_0,\0A\09.param .u64 .ptr .align 16 mlp_fused_sin_1_param_1,\0A\09.param .u64 mlp_fused_sin_1_param_2\0A)
fx.graph @mlp(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %mm = fx.call_function "aten::addmm"(%b, %x, %t) : (tensor<8xf32>, tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %r = fx.call_function "aten::relu"(%mm) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %m = fx.call_function "aten::mm"(%r, %w) : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %g = fx.call_function "aten::sin"(%m) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %mm2 = fx.call_function "aten::addmm"(%b, %g, %t) : (tensor<8xf32>, tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %s = fx.call_function "aten::_softmax"(%mm2) {args = {dim = -1 : i64, half_to_float = false}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  fx.output %s, %r : tensor<?x8xf32>, tensor<?x8xf32>
}
