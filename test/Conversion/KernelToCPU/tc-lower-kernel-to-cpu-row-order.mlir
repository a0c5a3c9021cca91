// RUN: tc-opt %s -split-input-file -tc-lower-kernel-to-cpu | FileCheck %s

// A channels-last to channels-first copy: the inner loop (w) reads 1024
// elements apart, and the load's last index is the channel (coordinate
// 1). The rows run with the channel fastest (the chunk's first row's
// remainder by 1024 first, then counted up with carries, the channel
// first): consecutive rows read neighbouring elements of the same lines.
// The first coordinate stays outermost.
// CHECK-LABEL: func.func @to_channels_first
// CHECK-SAME: (%{{.*}}: memref<4x14x14x1024xf32> {llvm.noalias}, %{{.*}}: memref<4x1024x14x14xf32> {llvm.noalias}, %[[BEGIN:.*]]: index, %{{.*}}: index)
// CHECK: %[[C0:.*]] = arith.remui %[[BEGIN]], %c1024
// CHECK-NEXT: %[[R:.*]] = arith.divui %[[BEGIN]], %c1024
// CHECK-NEXT: %[[H0:.*]] = arith.remui %[[R]], %c14
// CHECK-NEXT: %[[N0:.*]] = arith.divui %[[R]], %c14
// CHECK-NEXT: scf.for %{{.*}} = %[[BEGIN]] to %{{.*}} step %c1 iter_args(%[[N:.*]] = %[[N0]], %[[C:.*]] = %[[C0]], %[[H:.*]] = %[[H0]])
// CHECK: scf.for %[[W:.*]] = %c0 to %c14
// CHECK: memref.load %{{.*}}[%[[N]], %[[H]], %[[W]], %[[C]]] : memref<4x14x14x1024xf32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[N]], %[[C]], %[[H]], %[[W]]] : memref<4x1024x14x14xf32>
// CHECK: %[[C1:.*]] = arith.addi %[[C]], %c1
// CHECK: arith.cmpi eq, %[[C1]], %c1024
// CHECK-NOT: arith.divui
// CHECK: scf.yield
kernel.kernel @to_channels_first(%x: memref<4x14x14x1024xf32>, %y: memref<4x1024x14x14xf32>) attributes {domain = array<i64: 4, 1024, 14>} {
  %c14 = arith.constant 14 : index
  %n = kernel.index 0
  %c = kernel.index 1
  %h = kernel.index 2
  kernel.loop %c14 {
  ^bb0(%w: index):
    %v = memref.load %x[%n, %h, %w, %c] : memref<4x14x14x1024xf32>
    memref.store %v, %y[%n, %c, %h, %w] : memref<4x1024x14x14xf32>
  }
  kernel.return
}

// -----

// Rows of a 3x3 weight's copy to channels-last read 9 elements apart: too
// near to reorder (the domain's own order, its last coordinate fastest).
// CHECK-LABEL: func.func @near_reads
// CHECK-SAME: %[[BEGIN:[^:]*]]: index, %{{[^:]*}}: index)
// CHECK: %[[W0:.*]] = arith.remui %[[BEGIN]], %c3
// CHECK-NEXT: %[[R:.*]] = arith.divui %[[BEGIN]], %c3
// CHECK-NEXT: %[[H0:.*]] = arith.remui %[[R]], %c3
// CHECK-NEXT: %[[O0:.*]] = arith.divui %[[R]], %c3
// CHECK-NEXT: scf.for %{{.*}} iter_args(%{{.*}} = %[[O0]], %{{.*}} = %[[H0]], %{{.*}} = %[[W0]])
kernel.kernel @near_reads(%x: memref<64x32x3x3xf32>, %y: memref<64x3x3x32xf32>) attributes {domain = array<i64: 64, 3, 3>} {
  %c32 = arith.constant 32 : index
  %o = kernel.index 0
  %h = kernel.index 1
  %w = kernel.index 2
  kernel.loop %c32 {
  ^bb0(%i: index):
    %v = memref.load %x[%o, %i, %h, %w] : memref<64x32x3x3xf32>
    memref.store %v, %y[%o, %h, %w, %i] : memref<64x3x3x32xf32>
  }
  kernel.return
}

// -----

// A store whose last index is a row coordinate (not the inner loop's)
// keeps the domain's order, though a load reads far apart.
// CHECK-LABEL: func.func @strided_store
// CHECK-SAME: %[[BEGIN:[^:]*]]: index, %{{[^:]*}}: index)
// CHECK: arith.remui %[[BEGIN]], %c14
kernel.kernel @strided_store(%x: memref<4x14x14x1024xf32>, %y: memref<4x14x14x1024xf32>) attributes {domain = array<i64: 4, 1024, 14>} {
  %c14 = arith.constant 14 : index
  %n = kernel.index 0
  %c = kernel.index 1
  %h = kernel.index 2
  kernel.loop %c14 {
  ^bb0(%w: index):
    %v = memref.load %x[%n, %h, %w, %c] : memref<4x14x14x1024xf32>
    memref.store %v, %y[%n, %w, %h, %c] : memref<4x14x14x1024xf32>
  }
  kernel.return
}
