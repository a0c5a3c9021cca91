// RUN: tc-opt %s --tc-cpu-pipeline | FileCheck %s
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-cpu-loops-pipeline --tc-cpu-llvm-pipeline | FileCheck %s

// The whole CPU pipeline, as the Python backend runs it: the kernels end as
// LLVM functions taking bare pointers and a row range; the host program is
// a kernel.schedule with a planned arena.
// CHECK: llvm.func @mlp_fused_maximum_0(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME: tc.domain = array<i64: 8>
// CHECK: llvm.intr.maximum
// CHECK: kernel.schedule @mlp
// CHECK-SAME: tc.arena_bytes = 96 : i64
// CHECK: %[[ARENA:.*]] = kernel.arena : memref<96xi8>
// CHECK: %[[T:.*]] = kernel.buffer %[[ARENA]][0] : memref<96xi8> to memref<8x3xf32>
// CHECK: kernel.gemm %{{.*}}, %{{.*}}, %[[T]] bias %{{.*}} {transpose_b}
// CHECK: kernel.launch @mlp_fused_maximum_0(%[[T]], %{{.*}})
fx.graph @mlp(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<8x3xf32> {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %mm = fx.call_function "aten::addmm"(%b, %x, %t) : (tensor<3xf32>, tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %r = fx.call_function "aten::relu"(%mm) : (tensor<8x3xf32>) -> tensor<8x3xf32>
  fx.output %r : tensor<8x3xf32>
}
