// REQUIRES: libdevice
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa" | FileCheck %s --check-prefix=PTX
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa chip=sm_80" | FileCheck %s --check-prefix=SM80
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa precise-div" | FileCheck %s --check-prefix=PRECISE
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline | FileCheck %s --check-prefix=GPU

// A manual softmax (seed 003) through the whole CUDA pipeline: one fused
// kernel, one block per row, the row's max and sum as block reductions
// (warp shuffles, then shared memory), exp from libdevice.

// The division by the row's sum is PTX's div.full.f32 (tc-nvvm-div-full)
// unless precise-div asks for IEEE division.
// PRECISE: div.rn.f32
// PRECISE-NOT: div.full.f32

// GPU: kernel.schedule @softmax
// GPU: kernel.launch @tc_kernels::@[[K:[a-z_0-9]+]](%{{.*}}, %{{.*}}) {block = 256 : i64, grid = 64 : i64}
// GPU: gpu.module @tc_kernels
// GPU: gpu.func @[[K]]
// GPU-SAME: workgroup(%{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// GPU-COUNT-5: gpu.shuffle xor
// GPU: gpu.barrier
// GPU-COUNT-5: gpu.shuffle xor
// GPU: gpu.barrier
// GPU-NOT: gpu.all_reduce

// PTX: gpu.binary @tc_kernels
// PTX-SAME: #nvvm.target<O = 3, chip = "sm_90"
// PTX-SAME: .target sm_90
// PTX-SAME: .entry softmax_fused_
// PTX-SAME: .maxntid 256, 1, 1
// PTX-SAME: ld.global.nc.v4.b32
// PTX-SAME: shfl.sync.bfly.b32 {{[^,]*}}, {{[^,]*}}, 16, 31, -1
// PTX-SAME: bar.sync
// PTX-SAME: ex2.approx
// PTX-SAME: div.full.f32
// PTX-NOT: div.rn.f32
// PTX-NOT: .extern .func __nv_

// SM80: .target sm_80

fx.graph @softmax(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %max = fx.call_function "aten::amax"(%x) {args = {dim = array<i64: -1>, keepdim = true}} : (tensor<64x1024xf32>) -> tensor<64x1xf32>
  %sub = fx.call_function "aten::sub.Tensor"(%x, %max) : (tensor<64x1024xf32>, tensor<64x1xf32>) -> tensor<64x1024xf32>
  %exp = fx.call_function "aten::exp"(%sub) : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %sum = fx.call_function "aten::sum.dim_IntList"(%exp) {args = {dim = array<i64: -1>, keepdim = true}} : (tensor<64x1024xf32>) -> tensor<64x1xf32>
  %div = fx.call_function "aten::div.Tensor"(%exp, %sum) : (tensor<64x1024xf32>, tensor<64x1xf32>) -> tensor<64x1024xf32>
  fx.output %div : tensor<64x1024xf32>
}
