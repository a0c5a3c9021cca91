// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// Integer reductions combine with integer ops (no fast-math flags), max
// and min are signed. A float min is minnum without NaNs (one vminps on
// x86), whether a NaN was seen carried beside it: the result is NaN if
// one was.
// CHECK-LABEL: func.func @int_reductions
// CHECK: scf.for {{.*}} iter_args(%[[A:.*]] = %{{.*}}) -> (i64)
// CHECK: arith.maxsi %[[A]], %{{.*}} : i64
// CHECK: scf.for {{.*}} iter_args(%[[P:.*]] = %{{.*}}) -> (i64)
// CHECK: arith.muli %[[P]], %{{.*}} : i64
// CHECK: %[[R:.*]]:2 = scf.for {{.*}} iter_args(%[[F:.*]] = %{{.*}}, %[[SEEN:.*]] = %false) -> (f32, i1)
// CHECK: %[[V:.*]] = memref.load
// CHECK: %[[MIN:.*]] = arith.minnumf %[[F]], %[[V]] fastmath<reassoc,nnan,nsz> : f32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK: %[[ANY:.*]] = arith.ori %[[SEEN]], %[[NAN]] : i1
// CHECK: scf.yield %[[MIN]], %[[ANY]] : f32, i1
// CHECK: arith.select %[[R]]#1, %cst{{.*}}, %[[R]]#0 : f32
kernel.kernel @int_reductions(%x: memref<4x16xi64>, %y: memref<4x16xf32>, %out: memref<4xi64>, %out2: memref<4xf32>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
  %c16 = arith.constant 16 : index
  %min = arith.constant -9223372036854775808 : i64
  %one = arith.constant 1 : i64
  %inf = arith.constant 0x7F800000 : f32
  %m = kernel.reduce max %c16 init %min : i64 {
  ^bb0(%j: index):
    %v = memref.load %x[%i, %j] : memref<4x16xi64>
    kernel.yield %v : i64
  }
  %p = kernel.reduce mul %c16 init %one : i64 {
  ^bb0(%j: index):
    %v = memref.load %x[%i, %j] : memref<4x16xi64>
    kernel.yield %v : i64
  }
  %f = kernel.reduce min %c16 init %inf : f32 {
  ^bb0(%j: index):
    %v = memref.load %y[%i, %j] : memref<4x16xf32>
    kernel.yield %v : f32
  }
  %s = arith.addi %m, %p : i64
  memref.store %s, %out[%i] : memref<4xi64>
  memref.store %f, %out2[%i] : memref<4xf32>
  kernel.return
}
