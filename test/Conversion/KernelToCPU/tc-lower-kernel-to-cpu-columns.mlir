// RUN: tc-opt %s -split-input-file -tc-lower-kernel-to-cpu | FileCheck %s

// A reduction down columns (a column sum, a bias gradient) runs blocks of
// 64 points row by row: their accumulators in a small buffer, rows outer,
// points inner (each row's block is contiguous), then what follows the
// reduction per point. tc.points counts the work: 32 points x 1000 rows.
// CHECK-LABEL: func.func @column_mean
// CHECK-SAME: tc.points = 32000
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<64xf32>
// CHECK: scf.for %[[FIRST:.*]] = %{{.*}} to %{{.*}} step %c64
// CHECK: %[[N:.*]] = arith.minui
// CHECK: scf.for %[[J:.*]] = %c0 to %[[N]]
// CHECK-NEXT: memref.store %{{.*}}, %[[ACC]][%[[J]]]
// CHECK: scf.for %[[R:.*]] = %c0 to %c1000
// CHECK-NEXT: scf.for %[[K:.*]] = %c0 to %[[N]]
// CHECK: %[[P:.*]] = arith.addi %[[FIRST]], %[[K]]
// CHECK: memref.load %{{.*}}[%[[R]], %[[P]]] : memref<1000x32xf32>
// CHECK: memref.load %[[ACC]][%[[K]]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[ACC]][%[[K]]]
// CHECK: scf.for %[[L:.*]] = %c0 to %[[N]]
// CHECK: %[[Q:.*]] = arith.addi %[[FIRST]], %[[L]]
// CHECK: %[[S:.*]] = memref.load %[[ACC]][%[[L]]]
// CHECK: arith.divf %[[S]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[Q]]] : memref<32xf32>
kernel.kernel @column_mean(%x: memref<1000x32xf32>, %out: memref<32xf32>) attributes {domain = array<i64: 32>} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 1000.0 : f32
  %c1000 = arith.constant 1000 : index
  %c = kernel.index 0
  %s = kernel.reduce add %c1000 init %zero : f32 {
  ^bb0(%r: index):
    %v = memref.load %x[%r, %c] : memref<1000x32xf32>
    kernel.yield %v : f32
  }
  %m = arith.divf %s, %n : f32
  memref.store %m, %out[%c] : memref<32xf32>
  kernel.return
}

// -----

// A reduction along rows (each point reads its own contiguous row) keeps
// one point at a time.
// CHECK-LABEL: func.func @row_sum
// CHECK-NOT: memref.alloca
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
kernel.kernel @row_sum(%x: memref<32x1000xf32>, %out: memref<32xf32>) attributes {domain = array<i64: 32>} {
  %zero = arith.constant 0.0 : f32
  %c1000 = arith.constant 1000 : index
  %c = kernel.index 0
  %s = kernel.reduce add %c1000 init %zero : f32 {
  ^bb0(%r: index):
    %v = memref.load %x[%c, %r] : memref<32x1000xf32>
    kernel.yield %v : f32
  }
  memref.store %s, %out[%c] : memref<32xf32>
  kernel.return
}

// -----

// A row reduction that also reads a value of its own point (w[c], not
// walking down a column) keeps one point at a time.
// CHECK-LABEL: func.func @row_sum_scaled
// CHECK-NOT: memref.alloca
kernel.kernel @row_sum_scaled(%x: memref<32x1000xf32>, %w: memref<32xf32>, %out: memref<32xf32>) attributes {domain = array<i64: 32>} {
  %zero = arith.constant 0.0 : f32
  %c1000 = arith.constant 1000 : index
  %c = kernel.index 0
  %s = kernel.reduce add %c1000 init %zero : f32 {
  ^bb0(%r: index):
    %v = memref.load %x[%c, %r] : memref<32x1000xf32>
    %k = memref.load %w[%c] : memref<32xf32>
    %p = arith.mulf %v, %k : f32
    kernel.yield %p : f32
  }
  memref.store %s, %out[%c] : memref<32xf32>
  kernel.return
}
