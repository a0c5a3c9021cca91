// RUN: tc-opt %s --tc-lower-kernel-to-cpu=miscompile-for-testing=true | FileCheck %s

// The planted wrong rewrite tc.debug.bisect's tests name: every float a
// lowered kernel stores gets 1 added.

// CHECK-LABEL: func.func @copy
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[V:.*]] = memref.load
// CHECK: %[[W:.*]] = arith.addf %[[V]], %[[ONE]]
// CHECK: memref.store %[[W]]
kernel.kernel @copy(%in: memref<8xf32>, %out: memref<8xf32>)
    attributes {domain = array<i64: 8>} {
  %i = kernel.index 0
  %v = memref.load %in[%i] : memref<8xf32>
  memref.store %v, %out[%i] : memref<8xf32>
  kernel.return
}
