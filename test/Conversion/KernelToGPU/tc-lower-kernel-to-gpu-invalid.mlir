// RUN: tc-opt %s -tc-lower-kernel-to-gpu="max-block-size=100" -verify-diagnostics

// expected-error @below {{max-block-size must be a multiple of 32 in [32, 1024], not 100}}
module {
  kernel.kernel @k(%x: memref<4xf32>, %out: memref<4xf32>) attributes {domain = array<i64: 4>} {
    %i = kernel.index 0
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
    kernel.return
  }
}
