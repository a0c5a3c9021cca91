// RUN: tc-opt %s -tc-lower-kernel-to-gpu="vector-width=3" -verify-diagnostics

// expected-error @below {{vector-width must be 1, 2 or 4, not 3}}
module {
  kernel.kernel @k(%x: memref<4xf32>, %out: memref<4xf32>) attributes {domain = array<i64: 4>} {
    %i = kernel.index 0
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
    kernel.return
  }
}
