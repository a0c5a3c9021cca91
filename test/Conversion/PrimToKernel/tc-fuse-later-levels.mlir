// RUN: tc-opt %s -tc-fuse | FileCheck %s

// A module at a later level (the loop nests the CPU lowering made of a
// kernel: memrefs and indices) goes through tc-fuse unchanged, as it does
// when a later stage's IR is fed to the whole pipeline again (numerics
// bisection); tc-fuse once crashed on it.

// CHECK-LABEL: func.func @lowered_kernel
// CHECK-SAME: memref<16xf32>
// CHECK: memref.store
func.func @lowered_kernel(%out: memref<16xf32>, %begin: index, %end: index) {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %begin to %end step %c1 {
    memref.store %zero, %out[%i] : memref<16xf32>
  }
  return
}
