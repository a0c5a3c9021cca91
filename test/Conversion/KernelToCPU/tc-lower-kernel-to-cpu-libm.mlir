// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// f64 erf and erfc have neither MLIR's polynomial (f32's) nor an LLVM
// intrinsic: they call libm's, declared once; f32 erf stays a polynomial.
// CHECK-LABEL: func.func private @erf(f64) -> f64
// CHECK-LABEL: func.func private @erfc(f64) -> f64
// CHECK-LABEL: func.func @f64_erf
// CHECK: %[[E:.*]] = func.call @erf(%{{.*}}) : (f64) -> f64
// CHECK: %[[C:.*]] = func.call @erfc(%{{.*}}) : (f64) -> f64
// CHECK-NOT: math.erf
// CHECK-NOT: func.call @erff
kernel.kernel @f64_erf(%x: memref<8xf64>, %y: memref<8xf32>, %out: memref<8xf64>, %out2: memref<8xf32>) attributes {domain = array<i64: 8>} {
  %i = kernel.index 0
  %v = memref.load %x[%i] : memref<8xf64>
  %e = math.erf %v : f64
  %c = math.erfc %v : f64
  %s = arith.addf %e, %c : f64
  memref.store %s, %out[%i] : memref<8xf64>
  %w = memref.load %y[%i] : memref<8xf32>
  %f = math.erf %w : f32
  memref.store %f, %out2[%i] : memref<8xf32>
  kernel.return
}
