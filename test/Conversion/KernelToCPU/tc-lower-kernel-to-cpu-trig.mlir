// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// An f32 sine written out: k = roundeven(x * 2/pi), r = x - k * pi/2 with
// pi/2 in three f32 parts, each subtracted by a fused multiply-add (Cody
// and Waite's reduction: MLIR's approximation reduces in one f32 step, off
// by 7e-3 at 1e5); k's quadrant picks the sine or cosine polynomial's
// coefficients and the sign; x itself where x is +-0. A tangent stays
// libm's call, which reduces its own argument.
// CHECK-LABEL: func.func @trig
// CHECK-DAG: %[[P3:.*]] = arith.constant -1.77635684E-15 : f32
// CHECK-DAG: %[[P2:.*]] = arith.constant -4.37113883E-8 : f32
// CHECK-DAG: %[[P1:.*]] = arith.constant 1.57079637 : f32
// CHECK-DAG: %[[INV:.*]] = arith.constant 0.636619746 : f32
// CHECK: %[[X:.*]] = memref.load
// CHECK: %[[Q:.*]] = arith.mulf %[[X]], %[[INV]] : f32
// CHECK: %[[K:.*]] = math.roundeven %[[Q]] : f32
// CHECK: %[[NK:.*]] = arith.negf %[[K]] : f32
// CHECK: %[[R1:.*]] = math.fma %[[NK]], %[[P1]], %[[X]] : f32
// CHECK: %[[R2:.*]] = math.fma %[[NK]], %[[P2]], %[[R1]] : f32
// CHECK: %[[R:.*]] = math.fma %[[NK]], %[[P3]], %[[R2]] : f32
// CHECK: %[[QI:.*]] = arith.fptosi %[[K]] : f32 to i32
// CHECK: %[[QUAD:.*]] = arith.andi %[[QI]], %c3_i32 : i32
// CHECK: %[[R2:.*]] = arith.mulf %[[R]], %[[R]] : f32
// CHECK-COUNT-5: math.fma %[[R2]]
// CHECK: %[[V:.*]] = arith.mulf
// CHECK: %[[NEG:.*]] = arith.negf %[[V]] : f32
// CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[NEG]], %[[V]] : f32
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[X]]
// CHECK: arith.select %[[Z]], %[[X]], %[[S]] : f32
// CHECK-NOT: math.sin
// CHECK-NOT: f64
// CHECK: math.tan %{{.*}} : f32
// CHECK: return
kernel.kernel @trig(%x: memref<8xf32>, %s: memref<8xf32>, %t: memref<8xf32>) attributes {domain = array<i64: 8>} {
  %i = kernel.index 0
  %a = memref.load %x[%i] : memref<8xf32>
  %b = math.sin %a : f32
  memref.store %b, %s[%i] : memref<8xf32>
  %c = math.tan %a : f32
  memref.store %c, %t[%i] : memref<8xf32>
  kernel.return
}
