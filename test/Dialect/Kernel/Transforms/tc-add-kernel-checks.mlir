// RUN: tc-opt %s --tc-add-kernel-checks --canonicalize | FileCheck %s
// RUN: tc-opt %s --tc-add-kernel-checks="plant-out-of-bounds-for-testing=true" | FileCheck %s --check-prefix=PLANT

// TC_CPU_CHECKS=1: every launched kernel takes the schedule's check record
// last. Before each access of a buffer argument it checks the element's
// position (the first violation of a run is recorded: flag, the kernel's
// id, the kind, the argument, the element); an out-of-bounds load reads
// element 0 instead, an out-of-bounds store is skipped, and a float store
// records a NaN.

// CHECK-LABEL: kernel.kernel @relu(
// CHECK-SAME: %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<4x8xf32>, %[[R:.*]]: memref<5xi64>)
// CHECK: %[[POS:.*]] = arith.addi
// CHECK: %[[OUT:.*]] = arith.cmpi uge, %[[POS]], %c32
// CHECK: scf.if %[[OUT]] {
// CHECK: memref.atomic_rmw ori %{{.*}}, %[[R]][%c0]
// CHECK: memref.store %{{.*}}, %[[R]][%c2]
// CHECK: arith.select %[[OUT]], %c0
// CHECK: memref.load %[[A]]
// CHECK: arith.cmpf uno
// CHECK: scf.if %{{.*}} {
// CHECK: memref.store %{{.*}}, %[[B]]
// CHECK-LABEL: kernel.schedule @main(
// CHECK: %[[REC:.*]] = memref.alloc() : memref<5xi64>
// CHECK: kernel.launch @relu(%{{.*}}, %{{.*}}, %[[REC]])

// The planted out-of-bounds load (a test option) reads 4 rows further.
// PLANT: %[[PAST:.*]] = arith.addi %{{.*}}, %c4 : index
// PLANT: memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x8xf32>

kernel.kernel @relu(%a: memref<4x8xf32>, %b: memref<4x8xf32>) attributes {domain = array<i64: 4, 8>} {
  %i = kernel.index 0
  %j = kernel.index 1
  %x = memref.load %a[%i, %j] : memref<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %y = arith.maximumf %x, %zero : f32
  memref.store %y, %b[%i, %j] : memref<4x8xf32>
  kernel.return
}
kernel.schedule @main(%x: memref<4x8xf32>, %out: memref<4x8xf32>) {
  kernel.launch @relu(%x, %out) : memref<4x8xf32>, memref<4x8xf32>
  kernel.return
}
