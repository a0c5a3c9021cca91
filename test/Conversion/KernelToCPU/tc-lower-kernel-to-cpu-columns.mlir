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

// -----

// Global average pooling of a channels-last [2, 7, 7, 64] activation into
// a [2, 64, 1, 1] result: the unit dimension moves no point, so the
// channel (the last dimension of more than one point) is the column, and
// the unit loop of stores after the reduction is per-point work. A block
// within one row of channels takes its first point's coordinates with the
// channel advanced (consecutive loads), others each point's own.
// CHECK-LABEL: func.func @global_average_pool
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<64xf32>
// CHECK: %[[COLUMN:.*]] = arith.remui %{{.*}}, %c64
// CHECK: %[[END:.*]] = arith.addi %[[COLUMN]], %{{.*}}
// CHECK: %[[ONE_ROW:.*]] = arith.cmpi ule, %[[END]], %c64
// CHECK: scf.if %[[ONE_ROW]]
// CHECK: scf.for %{{.*}} = %c0 to %c49
// CHECK: memref.load %{{.*}} : memref<2x7x7x64xf32>
// CHECK: memref.store %{{.*}}, %[[ACC]]
kernel.kernel @global_average_pool(%x: memref<2x7x7x64xf32>, %out: memref<2x64x1x1xf32>) attributes {domain = array<i64: 2, 64, 1>} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 49.0 : f32
  %c7 = arith.constant 7 : index
  %c49 = arith.constant 49 : index
  %c1 = arith.constant 1 : index
  %b = kernel.index 0
  %c = kernel.index 1
  %u = kernel.index 2
  %s = kernel.reduce add %c49 init %zero : f32 {
  ^bb0(%r: index):
    %w = arith.remui %r, %c7 : index
    %h = arith.divui %r, %c7 : index
    %v = memref.load %x[%b, %h, %w, %c] : memref<2x7x7x64xf32>
    kernel.yield %v : f32
  }
  kernel.loop %c1 {
  ^bb0(%i: index):
    %m = arith.divf %s, %n : f32
    memref.store %m, %out[%b, %c, %u, %i] : memref<2x64x1x1xf32>
  }
  kernel.return
}
