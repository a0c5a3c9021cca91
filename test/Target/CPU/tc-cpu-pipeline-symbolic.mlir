// RUN: tc-opt %s --tc-decompose-pipeline | FileCheck %s --check-prefix=PRIM
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline | FileCheck %s --check-prefix=KERNEL
// RUN: tc-opt %s --tc-cpu-pipeline | FileCheck %s --check-prefix=CPU

// A graph with the symbolic size (a `?` batch, docs/DynamicShapes.md)
// through the CPU pipeline: prim ops keep the `?`, splats and biases are
// broadcast to it, kernels run over a domain whose first extent is the
// symbolic size, and memory planning places the symbolic buffers by their
// bytes per unit of the size, after the static ones.

// PRIM-LABEL: func.func @mlp(%{{.*}}: tensor<?x4xf32>, %{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
// PRIM: %[[ZERO:.*]] = prim.constant dense<0.000000e+00> : tensor<f32>
// PRIM: prim.dot %{{.*}}, %{{.*}}, batch [] x [], contract [1] x [0] : tensor<?x4xf32>, tensor<4x8xf32>
// PRIM: prim.broadcast_in_dim %{{.*}}, shape [?, 8], dims [1] : tensor<8xf32>
// PRIM: prim.broadcast_in_dim %[[ZERO]], shape [?, 8], dims [] : tensor<f32>
// PRIM: prim.reduce max %{{.*}}, dims [1] {prim.stop_gradient} : tensor<?x8xf32>
// PRIM: prim.reshape %{{.*}}, shape [?, 1] : tensor<?xf32>

// KERNEL: kernel.kernel @mlp_fused_maximum_0(%{{.*}}: memref<?x8xf32>, %{{.*}}: memref<?x8xf32>) attributes {domain = array<i64: -9223372036854775808>}
// KERNEL: kernel.schedule @mlp(%{{.*}}: memref<?x4xf32>, %{{.*}}: memref<8x4xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<?x8xf32>)
// KERNEL-SAME: tc.arena_bytes = 0 : i64, tc.arena_bytes_per_symbol = 80 : i64
// KERNEL: %[[ARENA:.*]] = kernel.arena : memref<?xi8>
// KERNEL: %[[A:.*]] = kernel.buffer %[[ARENA]][0] : memref<?xi8> to memref<?x8xf32>
// KERNEL: kernel.gemm %{{.*}}, %{{.*}}, %[[A]] bias %{{.*}} {transpose_b} : memref<?x4xf32>, memref<8x4xf32>, memref<?x8xf32>, memref<8xf32>
// KERNEL: %[[B:.*]] = kernel.buffer %[[ARENA]][0] : memref<?xi8> to memref<?x4xf32>
// KERNEL: %[[C:.*]] = kernel.buffer %[[ARENA]][0 + 64 * s] : memref<?xi8> to memref<?x4xf32>
// KERNEL: kernel.launch @mlp_fused_sin_1(%[[B]], %[[C]])

// The kernels take bare pointers and a row range, whatever the size.
// CPU: llvm.func @mlp_fused_maximum_0(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %{{.*}}: i64)
// CPU-SAME: tc.domain = array<i64: -9223372036854775808>, tc.points = 8 : i64
// CPU: kernel.schedule @mlp
// CPU-SAME: tc.arena_bytes_per_symbol = 80 : i64
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
