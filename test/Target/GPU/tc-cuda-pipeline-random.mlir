// REQUIRES: libdevice
// RUN: tc-opt %s --tc-decompose-pipeline --tc-fuse-pipeline --tc-gpu-kernels-pipeline | FileCheck %s --check-prefix=GPU
// RUN: tc-opt %s --tc-cuda-pipeline="format=isa" | FileCheck %s --check-prefix=PTX

// Dropout after an embedding lookup, for CUDA: one kernel gathers the rows
// and draws each element's Philox number in the thread that uses it (the
// 32x32->64 products become PTX's wide multiplies).

// GPU: gpu.module @tc_kernels
// GPU: gpu.func @[[K:.*]](%{{.*}}: memref<i64> {{.*}}, %{{.*}}: memref<16x32xf32> {{.*}}, %{{.*}}: memref<4x8xi64> {{.*}}, %{{.*}}: memref<4x8x32xf32> {{.*}}) kernel
// GPU: arith.mului_extended
// GPU: arith.uitofp
// GPU: arith.cmpf olt

// PTX: gpu.binary @tc_kernels
// PTX-SAME: mul.wide.u32
// PTX-SAME: cvt.rn.f32.u32
// PTX-SAME: setp.lt.f32
fx.graph @embedding_dropout(%w: tensor<16x32xf32> {fx.name = "w"}, %i: tensor<4x8xi64> {fx.name = "i"}, %seed: tensor<i64> {fx.name = "seed", tc.rng_seed}) -> tensor<4x8x32xf32> {
  %e = fx.call_function "aten::embedding"(%w, %i) : (tensor<16x32xf32>, tensor<4x8xi64>) -> tensor<4x8x32xf32>
  %d:2 = fx.call_function "aten::native_dropout"(%e) {args = {p = 1.000000e-01 : f64, train = true}} : (tensor<4x8x32xf32>) -> (tensor<4x8x32xf32>, tensor<4x8x32xi1>)
  fx.output %d#0 : tensor<4x8x32xf32>
}
