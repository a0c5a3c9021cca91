// RUN: tc-opt %s -tc-lower-kernel-to-gpu -canonicalize -split-input-file | FileCheck %s
// RUN: tc-opt %s -tc-lower-kernel-to-gpu="thread-unroll=1" -canonicalize -split-input-file | FileCheck %s --check-prefix=ONE

// A column reduction over a channels-last tensor's 196 pixels: a thread per
// (image, channel), each folding its column alone. The loop is unrolled
// (the loads of several iterations issued before they are combined, in
// order) by thread-unroll (4), doubled while all threads' loads of that
// many iterations stay under the bytes the GPU needs in flight (4 MiB):
// 10240 threads of 2-byte loads take 16, the most; the remaining 4 pixels
// are a loop of their own. thread-unroll=1 keeps one load per iteration.
// CHECK-LABEL: gpu.func @columns
// CHECK: scf.for %{{.*}} = %c0 to %c192 step %c16 iter_args
// CHECK-COUNT-16: memref.load %arg0
// CHECK-NOT: memref.load %arg0
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %c192 to %c196 step %c1 iter_args
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

// -----

// 256 images: 327680 threads whose four loads of 4 bytes each already
// keep 5.2 MB in flight stay at thread-unroll's 4.
// CHECK-LABEL: gpu.func @many_columns
// CHECK: scf.for %{{.*}} = %c0 to %c196 step %c4 iter_args
// CHECK-COUNT-4: memref.load %arg0
// CHECK-NOT: memref.load %arg0
// CHECK: scf.yield
kernel.kernel @many_columns(%x: memref<256x196x1280xf32>, %out: memref<256x1280xf32>) attributes {domain = array<i64: 256, 1280>} {
  %n = kernel.index 0
  %c = kernel.index 1
  %c196 = arith.constant 196 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c196 init %zero : f32 {
  ^bb0(%p: index):
    %v = memref.load %x[%n, %p, %c] : memref<256x196x1280xf32>
    %s = arith.mulf %v, %v : f32
    kernel.yield %s : f32
  }
  memref.store %sum, %out[%n, %c] : memref<256x1280xf32>
  kernel.return
}
