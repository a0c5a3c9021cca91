// RUN: tc-opt %s -tc-fuse -split-input-file | FileCheck %s

// Conversions follow PyTorch: float to int truncates, anything to bool is
// "!= 0", bool to float is unsigned; comparisons of floats are ordered
// except "ne", which is true for NaN.
// CHECK-LABEL: kernel.kernel @dtypes_fused
// CHECK-DAG: arith.fptosi %{{.*}} : f32 to i32
// CHECK-DAG: arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK-DAG: arith.uitofp %{{.*}} : i1 to f16
// CHECK-DAG: arith.truncf %{{.*}} : f32 to f16
// CHECK-DAG: arith.cmpf olt
// CHECK-DAG: arith.select
func.func @dtypes(%x: tensor<4x8xf32>) -> (tensor<4x8xi32>, tensor<4x8xf16>, tensor<4x8xf16>) {
  %i = prim.convert %x to i32 : tensor<4x8xf32>
  %b = prim.convert %x to i1 : tensor<4x8xf32>
  %bf = prim.convert %b to f16 : tensor<4x8xi1>
  %zero = prim.constant dense<0.0> : tensor<4x8xf32>
  %m = prim.compare lt, %x, %zero : tensor<4x8xf32>
  %h = prim.convert %x to f16 : tensor<4x8xf32>
  %hz = prim.constant dense<0.0> : tensor<4x8xf16>
  %w = prim.where %m, %hz, %h : tensor<4x8xi1>, tensor<4x8xf16>
  return %i, %bf, %w : tensor<4x8xi32>, tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// A bf16 sum accumulates in f32 and is rounded once (as eager's CPU and
// GPU reductions of half-precision values do).
// CHECK-LABEL: kernel.kernel @half_sum_fused_reduce_0
// CHECK: %[[S:.*]] = kernel.reduce add %{{.*}} init %{{.*}} : f32
// CHECK: %[[V:.*]] = memref.load %{{.*}} : memref<4x8xbf16>
// CHECK: arith.extf %[[V]] : bf16 to f32
// CHECK: %[[R:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK: memref.store %[[R]]
func.func @half_sum(%x: tensor<4x8xbf16>) -> tensor<4xbf16> {
  %0 = prim.reduce sum %x, dims [1] : tensor<4x8xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// sign is PyTorch's (0 < x) - (x < 0): NaN and zeros give 0.
// CHECK-LABEL: kernel.kernel @sign_fused_sign_0
// CHECK: %[[GT:.*]] = arith.cmpf ogt
// CHECK: %[[LT:.*]] = arith.cmpf olt
// CHECK: %[[REST:.*]] = arith.select %[[LT]], %{{.*}}, %{{.*}} : f32
// CHECK: arith.select %[[GT]], %{{.*}}, %[[REST]] : f32
func.func @sign(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = prim.sign %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An empty result has nothing to compute: no kernel, no launch.
// CHECK-LABEL: kernel.schedule @empty
// CHECK-NOT: kernel.launch
// CHECK: kernel.return
func.func @empty(%x: tensor<2x0xf32>) -> tensor<2x0xf32> {
  %0 = prim.exp %x : tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}
