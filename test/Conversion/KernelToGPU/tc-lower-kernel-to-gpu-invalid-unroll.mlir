// RUN: tc-opt %s -tc-lower-kernel-to-gpu="thread-unroll=0" -verify-diagnostics

// expected-error @below {{thread-unroll must be at least 1, not 0}}
module {
  kernel.kernel @k(%x: memref<4xf32>, %out: memref<4xf32>) attributes {domain = array<i64: 4>} {
    %i = kernel.index 0
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
    kernel.return
  }
}
