// RUN: tc-opt %s -tc-gpu-narrow-index-division -split-input-file | FileCheck %s

// A thread's row of a flattened (N, H, W) range: the known block and grid
// sizes and the trip count bound every index below 2^31, so the divisions
// and remainders run on i32.
// CHECK-LABEL: gpu.func @rows
// CHECK-NOT: arith.divui %{{.*}} : index
// CHECK-NOT: arith.remui %{{.*}} : index
// CHECK: scf.for
// CHECK: %[[K:.*]] = arith.index_castui %{{.*}} : index to i32
// CHECK: %[[R:.*]] = arith.remui %[[K]], %{{.*}} : i32
// CHECK: arith.index_castui %[[R]] : i32 to index
// CHECK: arith.divui %{{.*}}, %{{.*}} : i32
// CHECK-NOT: arith.divui %{{.*}} : index
// CHECK-NOT: arith.remui %{{.*}} : index
// CHECK: memref.load
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rows(%x: memref<4x20x20x32xf32>, %out: memref<32x32xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c20 = arith.constant 20 : index
      %c32 = arith.constant 32 : index
      %c50 = arith.constant 50 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %base = arith.muli %bid, %c256 : index
      %i = arith.addi %base, %tid : index
      %c = arith.remui %i, %c32 : index
      %s = arith.divui %i, %c32 : index
      %first = arith.muli %s, %c50 : index
      %sum = scf.for %r = %c0 to %c50 step %c1 iter_args(%acc = %zero) -> (f32) {
        %k = arith.addi %first, %r : index
        %w = arith.remui %k, %c20 : index
        %nh = arith.divui %k, %c20 : index
        %h = arith.remui %nh, %c20 : index
        %n = arith.divui %nh, %c20 : index
        %v = memref.load %x[%n, %h, %w, %c] : memref<4x20x20x32xf32>
        %a = arith.addf %acc, %v : f32
        scf.yield %a : f32
      }
      memref.store %sum, %out[%c, %s] : memref<32x32xf32>
      gpu.return
    }
  }
}

// -----

// Without a known grid size the block index, and so the thread's index,
// is unbounded: the division stays 64-bit.
// CHECK-LABEL: gpu.func @unbounded
// CHECK: arith.divui %{{.*}}, %{{.*}} : index
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @unbounded(%out: memref<?xindex>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c256 = arith.constant 256 : index
      %c7 = arith.constant 7 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %base = arith.muli %bid, %c256 : index
      %i = arith.addi %base, %tid : index
      %q = arith.divui %i, %c7 : index
      memref.store %q, %out[%i] : memref<?xindex>
      gpu.return
    }
  }
}
