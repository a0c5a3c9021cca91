// REQUIRES: rocm-device-libs
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline --tc-rocm-binary-pipeline="format=isa chip=gfx942" | FileCheck %s --check-prefix=ISA
// RUN: tc-opt %s --tc-rocm-pipeline="chip=gfx942" | FileCheck %s --check-prefix=HSACO
// RUN: tc-opt %s --tc-rocm-pipeline="chip=gfx90a" | FileCheck %s --check-prefix=HSACO
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline | tc-opt --pass-pipeline="builtin.module(rocdl-attach-target{chip=gfx942},gpu.module(convert-scf-to-cf,convert-gpu-to-rocdl{chipset=gfx942 use-bare-ptr-memref-call-conv=1}))" | FileCheck %s --check-prefix=ROCDL

// The same fused softmax for AMD GPUs.

// ROCDL: gpu.module @tc_kernels
// ROCDL: llvm.func @softmax_fused_{{.*}}(%{{.*}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias})
// ROCDL-SAME: rocdl.kernel
// ROCDL-DAG: rocdl.workgroup.id.x
// ROCDL-DAG: rocdl.workitem.id.x
// ROCDL: rocdl.ds_bpermute
// ROCDL: rocdl.barrier

// ISA: .amdgcn_target \22amdgcn-amd-amdhsa--gfx942
// ISA-SAME: softmax_fused_
// ISA-SAME: ds_bpermute_b32
// ISA-SAME: s_barrier

// An AMDGPU code object: ELF64, OS ABI AMDGPU_HSA (64, '@'), machine
// EM_AMDGPU (0xE0).
// HSACO: gpu.binary @tc_kernels
// HSACO-SAME: #rocdl.target<O = 3, chip = "gfx{{942|90a}}">
// HSACO-SAME: bin = "\7FELF\02\01\01@{{.*}}\E0\00

fx.graph @softmax(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %max = fx.call_function "aten::amax"(%x) {args = {dim = array<i64: -1>, keepdim = true}} : (tensor<64x1024xf32>) -> tensor<64x1xf32>
  %sub = fx.call_function "aten::sub.Tensor"(%x, %max) : (tensor<64x1024xf32>, tensor<64x1xf32>) -> tensor<64x1024xf32>
  %exp = fx.call_function "aten::exp"(%sub) : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %sum = fx.call_function "aten::sum.dim_IntList"(%exp) {args = {dim = array<i64: -1>, keepdim = true}} : (tensor<64x1024xf32>) -> tensor<64x1xf32>
  %div = fx.call_function "aten::div.Tensor"(%exp, %sum) : (tensor<64x1024xf32>, tensor<64x1xf32>) -> tensor<64x1024xf32>
  fx.output %div : tensor<64x1024xf32>
}
