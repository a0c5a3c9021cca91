// RUN: tc-opt %s -tc-lower-kernel-to-gpu -verify-diagnostics

// GPU kernels are compiled per shape: a kernel with the graph's symbolic
// size is rejected with a diagnostic (the backend compiles per shape).
// expected-error @+1 {{has the graph's symbolic size: GPU kernels need static shapes}}
kernel.kernel @symbolic(%a: memref<?x4xf32>, %b: memref<?x4xf32>) attributes {domain = array<i64: -9223372036854775808>} {
  %i = kernel.index 0
  %c4 = arith.constant 4 : index
  kernel.loop %c4 {
  ^bb0(%j: index):
    %x = memref.load %a[%i, %j] : memref<?x4xf32>
    memref.store %x, %b[%i, %j] : memref<?x4xf32>
  }
  kernel.return
}
