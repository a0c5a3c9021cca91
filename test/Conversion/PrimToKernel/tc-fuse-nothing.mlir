// RUN: tc-opt %s --tc-fuse | FileCheck %s --check-prefix=FUSED
// RUN: tc-opt %s --tc-fuse=fuse-nothing=true | FileCheck %s --check-prefix=NOTHING
// RUN: tc-opt %s --tc-fuse=miscompile-for-testing=true | FileCheck %s --check-prefix=PLANTED

// fuse-nothing realizes every value, one kernel per op: tc.debug.bisect's
// reference path, whose result does not depend on fusion.
// FUSED-COUNT-1: kernel.kernel @
// FUSED-NOT: kernel.kernel @
// NOTHING: kernel.kernel @main_fused_sin_0
// NOTHING: kernel.kernel @main_fused_mul_1
// NOTHING: kernel.kernel @main_fused_add_2
// NOTHING: kernel.launch @main_fused_sin_0
// NOTHING: kernel.launch @main_fused_mul_1
// NOTHING: kernel.launch @main_fused_add_2

// The planted wrong rewrite (tests only): every float a kernel stores gets
// 1 added.
// PLANTED: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// PLANTED: %[[V:.*]] = arith.addf %{{.*}}, %[[ONE]] : f32
// PLANTED: memref.store %[[V]]
func.func @main(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %0 = prim.sin %x : tensor<64xf32>
  %1 = prim.mul %0, %y : tensor<64xf32>
  %2 = prim.add %1, %x : tensor<64xf32>
  return %2 : tensor<64xf32>
}
