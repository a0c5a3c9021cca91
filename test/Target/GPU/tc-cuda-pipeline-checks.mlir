// REQUIRES: libdevice
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline="checks=true" | FileCheck %s
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa checks=true" | FileCheck %s --check-prefix=PTX
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa" | FileCheck %s --check-prefix=OFF

// TC_CUDA_CHECKS=1 (the pipeline's `checks`): each kernel checks at entry
// that its buffers have the alignment it assumes, and before each access
// of a buffer argument that the element is inside it; a violation prints
// the kernel, the argument and the address or element, then traps. The
// alignment is then checked, not assumed (no `.align 16` on the params);
// LLVM folds the bounds checks it proves (this gather clamps its index),
// so the PTX keeps the three alignment checks.

// CHECK: gpu.func @gather_fused_gather_0
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: arith.remui %{{.*}}, %c16
// CHECK: scf.if
// CHECK: gpu.printf "tc check: kernel gather_fused_gather_0: argument #0 at address %llu is not 16-byte aligned
// CHECK: llvm.intr.trap
// CHECK: arith.cmpi uge, %{{.*}}, %c40
// CHECK: gpu.printf "tc check: kernel gather_fused_gather_0: argument #0: element %lld out of [0, 40)

// PTX: vprintf
// PTX-NOT: .ptr .align 16
// PTX-SAME: trap;
// OFF-NOT: vprintf

fx.graph @gather(%x: tensor<10x4xf32>, %i: tensor<6xi64>) -> tensor<6x4xf32> {
  %0 = fx.call_function "aten::embedding"(%x, %i) : (tensor<10x4xf32>, tensor<6xi64>) -> tensor<6x4xf32>
  fx.output %0 : tensor<6x4xf32>
}
