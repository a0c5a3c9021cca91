// RUN: tc-opt %s -tc-lower-kernel-to-gpu -canonicalize -cse | FileCheck %s
// RUN: tc-opt %s '-tc-lower-kernel-to-gpu=stream-rows=false' -canonicalize -cse | FileCheck %s --check-prefix=BLOCK
// RUN: tc-opt %s '-tc-lower-kernel-to-gpu=stream-unroll=8' -canonicalize -cse | FileCheck %s --check-prefix=DEEP
// RUN: not tc-opt %s '-tc-lower-kernel-to-gpu=stream-unroll=0' 2>&1 | FileCheck %s --check-prefix=BAD

// A matrix-vector product's kernel (tc-skinny-products' one row by a 2048 x
// 2048 bf16 weight): 2048 rows, each read once by one reduction, 8 groups
// of 8 bf16 per lane. A warp per row, four rows to a block (512 blocks of
// 128 threads); each lane's 8 groups a loop of two steps unrolled 4 deep
// (32 element loads of the weight, four 16-byte groups, issued before
// they are combined); the lanes' partials combined by shuffles, no shared
// memory or barrier.
// CHECK-LABEL: gpu.func @gemv
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 512, 1, 1>
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4
// CHECK-COUNT-32: memref.load %arg1
// CHECK-NOT: memref.load %arg1
// CHECK: scf.yield
// CHECK-NOT: gpu.barrier
// CHECK: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// stream-rows=false: a block of 256 threads per row, one group each, the
// partials combined through shared memory.
// BLOCK-LABEL: gpu.func @gemv
// BLOCK-SAME: known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 2048, 1, 1>
// BLOCK: gpu.barrier

// stream-unroll=8: each lane's 8 groups loaded at once (no loop).
// DEEP-LABEL: gpu.func @gemv
// DEEP-NOT: scf.for
// DEEP-COUNT-64: memref.load %arg1
// DEEP: gpu.shuffle xor

// BAD: stream-unroll must be at least 1, not 0
kernel.kernel @gemv(%x: memref<1x2048xbf16>, %w: memref<2048x2048xbf16>, %out: memref<1x2048xbf16>) attributes {domain = array<i64: 1, 2048>} {
  %m = kernel.index 0
  %n = kernel.index 1
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c2048 init %zero : f32 {
  ^bb0(%k: index):
    %a = memref.load %x[%c0, %k] : memref<1x2048xbf16>
    %b = memref.load %w[%n, %k] : memref<2048x2048xbf16>
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    kernel.yield %p : f32
  }
  %r = arith.truncf %sum : f32 to bf16
  memref.store %r, %out[%m, %n] : memref<1x2048xbf16>
  kernel.return
}

// The same product with int8 weights (weight-only int8, dequantized in the
// kernel): the row streams in 16-byte groups of the weight's own, 16
// elements a lane (four groups of a 2048-byte row: unrolled in full, 64
// weight loads), not in the bf16 factor's 8-element groups.
// CHECK-LABEL: gpu.func @gemv_int8
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 512, 1, 1>
// CHECK-NOT: scf.for
// CHECK-COUNT-64: memref.load %arg1
// CHECK-NOT: memref.load %arg1
// CHECK: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
kernel.kernel @gemv_int8(%x: memref<1x2048xbf16>, %w: memref<2048x2048xi8>, %out: memref<1x2048xbf16>) attributes {domain = array<i64: 1, 2048>} {
  %m = kernel.index 0
  %n = kernel.index 1
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c2048 init %zero : f32 {
  ^bb0(%k: index):
    %a = memref.load %x[%c0, %k] : memref<1x2048xbf16>
    %b = memref.load %w[%n, %k] : memref<2048x2048xi8>
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.sitofp %b : i8 to f32
    %p = arith.mulf %a32, %b32 : f32
    kernel.yield %p : f32
  }
  %r = arith.truncf %sum : f32 to bf16
  memref.store %r, %out[%m, %n] : memref<1x2048xbf16>
  kernel.return
}
