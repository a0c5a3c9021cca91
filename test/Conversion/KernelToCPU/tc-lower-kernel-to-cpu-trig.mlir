// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// An f32 sine written out: k = roundeven(x / pi), r = x - k * pi with pi
// in three f32 parts, each subtracted by a fused multiply-add (Cody and
// Waite's reduction: MLIR's approximation reduces in one f32 step, off by
// 7e-3 at 1e5); sin(r) = r + r^3 P(r^2), one odd polynomial, whose sign
// bit k's parity flips; x itself where x is +-0. A tangent stays libm's
// call, which reduces its own argument.
// CHECK-LABEL: func.func @trig
// CHECK-DAG: %[[P3:.*]] = arith.constant -3.55271368E-15 : f32
// CHECK-DAG: %[[P2:.*]] = arith.constant -8.74227765E-8 : f32
// CHECK-DAG: %[[P1:.*]] = arith.constant 3.14159274 : f32
// CHECK-DAG: %[[INV:.*]] = arith.constant 0.318309873 : f32
// CHECK: %[[X:.*]] = memref.load
// CHECK: %[[Q:.*]] = arith.mulf %[[X]], %[[INV]] : f32
// CHECK: %[[K:.*]] = math.roundeven %[[Q]] : f32
// CHECK: %[[NK:.*]] = arith.negf %[[K]] : f32
// CHECK: %[[R1:.*]] = math.fma %[[NK]], %[[P1]], %[[X]] : f32
// CHECK: %[[R2:.*]] = math.fma %[[NK]], %[[P2]], %[[R1]] : f32
// CHECK: %[[R:.*]] = math.fma %[[NK]], %[[P3]], %[[R2]] : f32
// CHECK: %[[S:.*]] = arith.mulf %[[R]], %[[R]] : f32
// CHECK-COUNT-4: math.fma %[[S]]
// CHECK: %[[R3:.*]] = arith.mulf %[[R]], %[[S]] : f32
// CHECK: %[[V:.*]] = math.fma %[[R3]], %{{.*}}, %[[R]] : f32
// CHECK: %[[KI:.*]] = arith.fptosi %[[K]] : f32 to i32
// CHECK: %[[ODD:.*]] = arith.andi %[[KI]], %c1_i32 : i32
// CHECK: %[[SIGN:.*]] = arith.shli %[[ODD]], %c31_i32 : i32
// CHECK: %[[BITS:.*]] = arith.bitcast %[[V]] : f32 to i32
// CHECK: %[[FLIPPED:.*]] = arith.xori %[[BITS]], %[[SIGN]] : i32
// CHECK: %[[SIN:.*]] = arith.bitcast %[[FLIPPED]] : i32 to f32
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[X]]
// CHECK: arith.select %[[Z]], %[[X]], %[[SIN]] : f32
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
