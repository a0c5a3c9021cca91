// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// An f32 sine's argument is reduced by whole turns before the f32
// polynomial (whose own one-step f32 reduction is off by 7e-3 at 1e5):
// r = x - roundeven(x / 2pi) * 2pi with 2pi in three f32 parts, each
// subtracted by a fused multiply-add (Cody and Waite's reduction, at f32's
// vector width); the polynomial takes |r| and the result is negated for a
// negative r (not a copysign: |r| may exceed pi by a little, where the
// polynomial's value is negative), x itself where x is +-0.
// A tangent stays libm's call, which reduces its own argument.
// CHECK-LABEL: func.func @trig
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[P3:.*]] = arith.constant -7.10542735E-15 : f32
// CHECK-DAG: %[[P2:.*]] = arith.constant -1.74845553E-7 : f32
// CHECK-DAG: %[[P1:.*]] = arith.constant 6.28318548 : f32
// CHECK-DAG: %[[INV:.*]] = arith.constant 0.159154937 : f32
// CHECK: %[[X:.*]] = memref.load
// CHECK: %[[Q:.*]] = arith.mulf %[[X]], %[[INV]] : f32
// CHECK: %[[K:.*]] = math.roundeven %[[Q]] : f32
// CHECK: %[[NK:.*]] = arith.negf %[[K]] : f32
// CHECK: %[[R1:.*]] = math.fma %[[NK]], %[[P1]], %[[X]] : f32
// CHECK: %[[R2:.*]] = math.fma %[[NK]], %[[P2]], %[[R1]] : f32
// CHECK: %[[R:.*]] = math.fma %[[NK]], %[[P3]], %[[R2]] : f32
// CHECK: math.absf %[[R]] : f32
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[R]], %[[ZERO]] : f32
// CHECK: %[[MINUS:.*]] = arith.negf %[[POLY:.*]] : f32
// CHECK: %[[S:.*]] = arith.select %[[NEG]], %[[MINUS]], %[[POLY]] : f32
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[X]], %[[ZERO]]
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
