// REQUIRES: libdevice
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline="checks=true" | FileCheck %s
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa checks=true" | FileCheck %s --check-prefix=PTX
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa" | FileCheck %s --check-prefix=OFF

// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline="checks=true miscompile-pass-for-testing=tc-lower-kernel-to-gpu" | FileCheck %s --check-prefix=OOB

// TC_CUDA_CHECKS=1 (the pipeline's `checks`): each kernel checks at entry
// that its buffers have the alignment it assumes, and before each access
// of a buffer argument that the element is inside it. A violation prints
// the kernel, the argument and the address or element, and records the
// first one in the module's tc_check_record (a flag, the kernel's id, the
// kind, the argument, the element or address), which the runtime reads
// after the run and raises; nothing traps (no sticky CUDA error). A
// misaligned kernel returns at entry; an out-of-bounds load reads element
// 0 instead and an out-of-bounds store is skipped; a float store checks
// for a NaN. The alignment is then
// checked, not assumed (no `.align 16` on the params); LLVM folds the
// bounds checks it proves (this gather clamps its index), so the PTX
// keeps the three alignment checks.

// CHECK: memref.global "public" @tc_check_record : memref<5xi64> = dense<0>
// CHECK: gpu.func @gather_fused_gather_0
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: arith.remui %{{.*}}, %c16
// CHECK: scf.if
// CHECK: gpu.printf "tc check: kernel gather_fused_gather_0: argument #0 at address %llu is not 16-byte aligned
// CHECK: memref.get_global @tc_check_record
// CHECK: memref.atomic_rmw ori
// CHECK-NOT: llvm.intr.trap
// CHECK: cf.cond_br %{{.*}}, ^[[EXIT:bb[0-9]+]], ^[[BODY:bb[0-9]+]]
// CHECK: ^[[EXIT]]:
// CHECK-NEXT: gpu.return
// CHECK: arith.cmpi uge, %{{.*}}, %c40
// CHECK: gpu.printf "tc check: kernel gather_fused_gather_0: argument #0: element %lld out of [0, 40)
// CHECK: %[[OUT:.*]] = arith.select %{{.*}}, %c0, %{{.*}} : index
// CHECK: memref.load %arg0[%[[OUT]],
// CHECK: arith.cmpf uno
// CHECK: gpu.printf "tc check: kernel gather_fused_gather_0: argument #2: element %lld was written a NaN
// CHECK: arith.cmpi uge, %{{.*}}, %c24
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg2[

// PTX: .visible .global .align 8 .b8 tc_check_record[40];
// PTX: vprintf
// PTX-NOT: .ptr .align 16
// PTX: atom.global.or.b64
// PTX-NOT: trap;
// OFF-NOT: vprintf
// OFF-NOT: tc_check_record

// The planted out-of-bounds access (a test option): the kernel's first
// load of a buffer, the index's, reads 6 elements further, past the end;
// its check stands.
// OOB: %[[PAST:.*]] = arith.addi %{{.*}}, %c6 : index
// OOB: arith.cmpi uge, %[[PAST]], %c6
// OOB: gpu.printf "tc check: kernel gather_fused_gather_0: argument #1: element %lld out of [0, 6)

fx.graph @gather(%x: tensor<10x4xf32>, %i: tensor<6xi64>) -> tensor<6x4xf32> {
  %0 = fx.call_function "aten::embedding"(%x, %i) : (tensor<10x4xf32>, tensor<6xi64>) -> tensor<6x4xf32>
  fx.output %0 : tensor<6x4xf32>
}
