// RUN: tc-opt %s -tc-lower-kernel-to-gpu -canonicalize | FileCheck %s
// RUN: tc-opt %s -tc-lower-kernel-to-gpu="thread-unroll=1" -canonicalize | FileCheck %s --check-prefix=ONE

// A column reduction over a channels-last tensor's 196 pixels: a thread per
// (image, channel), each folding its column alone. By default the loop is
// unrolled by 4 (four loads of one iteration issued before they are
// combined, in order); thread-unroll=1 keeps one load per iteration.
// CHECK-LABEL: gpu.func @columns
// CHECK: scf.for %{{.*}} = %c0 to %c196 step %c4 iter_args
// CHECK-COUNT-4: memref.load %arg0
// CHECK-NOT: memref.load %arg0
// CHECK: scf.yield
// ONE-LABEL: gpu.func @columns
// ONE: scf.for %{{.*}} = %c0 to %c196 step %c1 iter_args
// ONE-COUNT-1: memref.load %arg0
// ONE-NOT: memref.load %arg0
// ONE: scf.yield
kernel.kernel @columns(%x: memref<8x196x1280xbf16>, %out: memref<8x1280xf32>) attributes {domain = array<i64: 8, 1280>} {
  %n = kernel.index 0
  %c = kernel.index 1
  %c196 = arith.constant 196 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c196 init %zero : f32 {
  ^bb0(%p: index):
    %v = memref.load %x[%n, %p, %c] : memref<8x196x1280xbf16>
    %w = arith.extf %v : bf16 to f32
    %s = arith.mulf %w, %w : f32
    kernel.yield %s : f32
  }
  memref.store %sum, %out[%n, %c] : memref<8x1280xf32>
  kernel.return
}
