// RUN: tc-opt %s --tc-decompose-pipeline | FileCheck %s --check-prefix=PRIM
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline | FileCheck %s --check-prefix=KERNEL
// RUN: tc-opt %s --tc-cpu-pipeline | FileCheck %s --check-prefix=CPU

// A Linear on a 3-d input with the symbolic batch (docs/DynamicShapes.md):
// the backend writes PyTorch's view [?, 4, 32] -> [4?, 32], addmm, view
// back as one aten::matmul of the 3-d input (tc's sizes are the symbolic
// size itself, never a multiple of it). It is one prim.dot, and one GEMM
// whose rows are the input's leading dimensions (4 per unit of the size).

// PRIM: prim.dot %{{.*}}, %{{.*}}, batch [] x [], contract [2] x [0] : tensor<?x4x32xf32>, tensor<32x16xf32>

// KERNEL: kernel.schedule @linear3d
// KERNEL-SAME: tc.arena_bytes_per_symbol = 256 : i64
// KERNEL: kernel.gemm %arg0, %arg1, %[[P:.*]] {transpose_b} : memref<?x4x32xf32>, memref<16x32xf32>, memref<?x4x16xf32>
// KERNEL: kernel.launch @linear3d_fused_add_maximum_0(%[[P]], %arg2, %arg3)

// CPU: kernel.schedule @linear3d
// CPU: kernel.gemm
fx.graph @linear3d(%x: tensor<?x4x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<?x4x16xf32> {
  %t = fx.call_function "aten::permute"(%w) {args = {dims = array<i64: 1, 0>}} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %mm = fx.call_function "aten::matmul"(%x, %t) : (tensor<?x4x32xf32>, tensor<32x16xf32>) -> tensor<?x4x16xf32>
  %y = fx.call_function "aten::add.Tensor"(%mm, %b) : (tensor<?x4x16xf32>, tensor<16xf32>) -> tensor<?x4x16xf32>
  %r = fx.call_function "aten::relu"(%y) : (tensor<?x4x16xf32>) -> tensor<?x4x16xf32>
  fx.output %r : tensor<?x4x16xf32>
}
