// RUN: tc-opt %s --pass-pipeline='builtin.module(kernel.schedule(tc-plan-memory))' -split-input-file | FileCheck %s

kernel.kernel @k(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  kernel.return
}

// A chain: t2 is allocated after t0's last use, so it takes t0's bytes;
// the arena is two buffers (128 bytes) for three intermediates (192).
// CHECK-LABEL: kernel.schedule @chain
// CHECK-SAME: attributes {tc.arena_bytes = 128 : i64, tc.intermediate_bytes = 192 : i64}
// CHECK: %[[ARENA:.*]] = kernel.arena : memref<128xi8>
// CHECK: %[[T0:.*]] = kernel.buffer %[[ARENA]][0] : memref<128xi8> to memref<16xf32>
// CHECK: kernel.launch @k(%{{.*}}, %[[T0]])
// CHECK: %[[T1:.*]] = kernel.buffer %[[ARENA]][64]
// CHECK: kernel.launch @k(%[[T0]], %[[T1]])
// CHECK: %[[T2:.*]] = kernel.buffer %[[ARENA]][0]
// CHECK: kernel.launch @k(%[[T1]], %[[T2]])
// CHECK-NOT: memref.alloc
kernel.schedule @chain(%x: memref<16xf32>, %out: memref<16xf32>) {
  %t0 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%x, %t0) : memref<16xf32>, memref<16xf32>
  %t1 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%t0, %t1) : memref<16xf32>, memref<16xf32>
  %t2 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%t1, %t2) : memref<16xf32>, memref<16xf32>
  kernel.launch @k(%t2, %out) : memref<16xf32>, memref<16xf32>
  kernel.return
}

// -----

kernel.kernel @k(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  kernel.return
}
kernel.kernel @k2(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) attributes {domain = array<i64: 16>} {
  kernel.return
}

// Buffers live at the same time never share bytes.
// CHECK-LABEL: kernel.schedule @overlap
// CHECK-SAME: tc.arena_bytes = 128 : i64, tc.intermediate_bytes = 128 : i64
// CHECK: kernel.buffer %{{.*}}[0]
// CHECK: kernel.buffer %{{.*}}[64]
kernel.schedule @overlap(%x: memref<16xf32>, %out: memref<16xf32>) {
  %t0 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%x, %t0) : memref<16xf32>, memref<16xf32>
  %t1 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%x, %t1) : memref<16xf32>, memref<16xf32>
  kernel.launch @k2(%t0, %t1, %out) : memref<16xf32>, memref<16xf32>, memref<16xf32>
  kernel.return
}

// -----

// No intermediates: no arena.
// CHECK-LABEL: kernel.schedule @none
// CHECK-SAME: tc.arena_bytes = 0 : i64
// CHECK-NOT: kernel.arena
kernel.schedule @none(%x: memref<16xf32>) {
  kernel.return
}

// -----

// A pointwise epilogue (each point reads its element of %a, then writes
// the same element of %b) whose input dies there writes its output in
// place: one 64-byte buffer for two.
kernel.kernel @relu(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %zero = arith.constant 0.0 : f32
  %v = memref.load %a[%i] : memref<16xf32>
  %r = arith.maximumf %v, %zero : f32
  memref.store %r, %b[%i] : memref<16xf32>
  kernel.return
}
kernel.kernel @k(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  kernel.return
}

// CHECK-LABEL: kernel.schedule @in_place
// CHECK-SAME: tc.arena_bytes = 64 : i64, tc.intermediate_bytes = 128 : i64
// CHECK: %[[T0:.*]] = kernel.buffer %{{.*}}[0]
// CHECK: %[[T1:.*]] = kernel.buffer %{{.*}}[0]
// CHECK: kernel.launch @relu(%[[T0]], %[[T1]])
kernel.schedule @in_place(%x: memref<16xf32>, %out: memref<16xf32>) {
  %t0 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%x, %t0) : memref<16xf32>, memref<16xf32>
  %t1 = memref.alloc() : memref<16xf32>
  kernel.launch @relu(%t0, %t1) : memref<16xf32>, memref<16xf32>
  kernel.launch @k(%t1, %out) : memref<16xf32>, memref<16xf32>
  kernel.return
}

// -----

// Not in place: a kernel that reads a neighbour of the point it writes,
// one that reads its input after writing its output, and one whose store
// sits outside its row loop (on a GPU, thread 0's store of the row while
// the other threads may still read it).
kernel.kernel @shift(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %j = arith.addi %i, %c1 : index
  %k = arith.minui %j, %c15 : index
  %v = memref.load %a[%k] : memref<16xf32>
  memref.store %v, %b[%i] : memref<16xf32>
  kernel.return
}
kernel.kernel @late(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %b[%i] : memref<16xf32>
  %v = memref.load %a[%i] : memref<16xf32>
  kernel.return
}
kernel.kernel @outside(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %c8 = arith.constant 8 : index
  %v = memref.load %a[%i] : memref<16xf32>
  kernel.loop %c8 {
  ^bb0(%j: index):
    kernel.yield
  }
  memref.store %v, %b[%i] : memref<16xf32>
  kernel.return
}
kernel.kernel @k(%a: memref<16xf32>, %b: memref<16xf32>) attributes {domain = array<i64: 16>} {
  kernel.return
}

// CHECK-LABEL: kernel.schedule @not_in_place
// CHECK-SAME: tc.arena_bytes = 128 : i64
// CHECK: %[[T0:.*]] = kernel.buffer %{{.*}}[0]
// CHECK: %[[T1:.*]] = kernel.buffer %{{.*}}[64]
// CHECK: kernel.launch @shift(%[[T0]], %[[T1]])
// CHECK: %[[T2:.*]] = kernel.buffer %{{.*}}[0]
// CHECK: kernel.launch @late(%[[T1]], %[[T2]])
// CHECK: %[[T3:.*]] = kernel.buffer %{{.*}}[64]
// CHECK: kernel.launch @outside(%[[T2]], %[[T3]])
kernel.schedule @not_in_place(%x: memref<16xf32>, %out: memref<16xf32>) {
  %t0 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%x, %t0) : memref<16xf32>, memref<16xf32>
  %t1 = memref.alloc() : memref<16xf32>
  kernel.launch @shift(%t0, %t1) : memref<16xf32>, memref<16xf32>
  %t2 = memref.alloc() : memref<16xf32>
  kernel.launch @late(%t1, %t2) : memref<16xf32>, memref<16xf32>
  %t3 = memref.alloc() : memref<16xf32>
  kernel.launch @outside(%t2, %t3) : memref<16xf32>, memref<16xf32>
  kernel.launch @k(%t3, %out) : memref<16xf32>, memref<16xf32>
  kernel.return
}
