// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// A kernel becomes a function over a chunk [begin, end) of its rows, whose
// buffers do not alias; the chunk's first row is delinearized into the
// domain's coordinates, which the row loop then counts up, kernel.loop is
// an scf.for, and math is expanded to polynomials.
// CHECK-LABEL: func.func @k
// CHECK-SAME: (%[[X:.*]]: memref<2x3x8xf32> {llvm.noalias}, %[[OUT:.*]]: memref<2x3x8xf32> {llvm.noalias}, %[[BEGIN:.*]]: index, %[[END:.*]]: index)
// CHECK-SAME: attributes {tc.domain = array<i64: 2, 3>, tc.points = 48 : i64}
// CHECK: %[[J0:.*]] = arith.remui %[[BEGIN]], %c3
// CHECK: %[[I0:.*]] = arith.divui %[[BEGIN]], %c3
// CHECK: scf.for %[[ROW:.*]] = %[[BEGIN]] to %[[END]] step %c1 iter_args(%[[I:.*]] = %[[I0]], %[[J:.*]] = %[[J0]])
// CHECK: scf.for %[[K:.*]] = %c0 to %c8
// CHECK: memref.load %[[X]][%[[I]], %[[J]], %[[K]]]
// CHECK-NOT: math.tanh
// CHECK: memref.store
kernel.kernel @k(%x: memref<2x3x8xf32>, %out: memref<2x3x8xf32>) attributes {domain = array<i64: 2, 3>} {
  %i = kernel.index 0
  %j = kernel.index 1
  %c8 = arith.constant 8 : index
  kernel.loop %c8 {
  ^bb0(%k: index):
    %v = memref.load %x[%i, %j, %k] : memref<2x3x8xf32>
    %t = math.tanh %v : f32
    memref.store %t, %out[%i, %j, %k] : memref<2x3x8xf32>
  }
  kernel.return
}

// Reductions carry an accumulator; float combiners may reassociate.
// CHECK-LABEL: func.func @rowsum
// CHECK: %[[INIT:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[NEXT:.*]] = arith.addf %[[ACC]], %{{.*}} fastmath<reassoc> : f32
// CHECK: scf.yield %[[NEXT]]
// CHECK: memref.store %[[SUM]]
kernel.kernel @rowsum(%x: memref<4x16xf32>, %out: memref<4xf32>) attributes {domain = array<i64>} {
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  kernel.loop %c4 {
  ^bb0(%i: index):
    %s = kernel.reduce add %c16 init %zero : f32 {
    ^bb0(%j: index):
      %v = memref.load %x[%i, %j] : memref<4x16xf32>
      kernel.yield %v : f32
    }
    memref.store %s, %out[%i] : memref<4xf32>
  }
  kernel.return
}

// The host program stays; its launches now name the lowered functions.
// CHECK-LABEL: kernel.schedule @main
// CHECK: kernel.launch @k
kernel.schedule @main(%x: memref<2x3x8xf32>, %out: memref<2x3x8xf32>) {
  kernel.launch @k(%x, %out) : memref<2x3x8xf32>, memref<2x3x8xf32>
  kernel.return
}
