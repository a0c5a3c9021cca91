// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// An f32 sine's argument is reduced by whole turns in f64 before the f32
// polynomial (whose own one-step f32 reduction is off by 7e-3 at 1e5):
// x - roundeven(x / 2pi) * 2pi, rounded back to f32; the polynomial takes
// its magnitude and the sign goes back on (the polynomial of a negative
// argument lost its relative precision near 0), x itself where x is +-0.
// A tangent stays libm's call, which reduces its own argument.
// CHECK-LABEL: func.func @trig
// CHECK-DAG: %[[INV:.*]] = arith.constant 0.15915494309189535 : f64
// CHECK-DAG: %[[TURN:.*]] = arith.constant 6.2831853071795862 : f64
// CHECK: %[[X:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK: %[[Q:.*]] = arith.mulf %[[X]], %[[INV]] : f64
// CHECK: %[[K:.*]] = math.roundeven %[[Q]] : f64
// CHECK: %[[P:.*]] = arith.mulf %[[K]], %[[TURN]] : f64
// CHECK: %[[R:.*]] = arith.subf %[[X]], %[[P]] : f64
// CHECK: %[[N:.*]] = arith.truncf %[[R]] : f64 to f32
// CHECK: math.absf %[[N]] : f32
// CHECK: %[[S:.*]] = math.copysign %{{.*}}, %[[N]] : f32
// CHECK: %[[Z:.*]] = arith.cmpf oeq
// CHECK: arith.select %[[Z]], %{{.*}}, %[[S]] : f32
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
