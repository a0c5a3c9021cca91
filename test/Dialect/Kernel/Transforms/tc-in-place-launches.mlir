// RUN: tc-opt %s --tc-in-place-launches -split-input-file | FileCheck %s

// A ReLU whose input dies there reads and writes one buffer; the schedule's
// later uses of its output read the input's buffer, a chain of epilogues
// included.
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

// The first launch's kernel is a copy (the second still took @relu then).
// CHECK-LABEL: kernel.kernel @relu(
// CHECK-SAME: %[[A:.*]]: memref<16xf32>) attributes
// CHECK: %[[V:.*]] = memref.load %[[A]][%{{.*}}]
// CHECK: %[[R:.*]] = arith.maximumf %[[V]]
// CHECK: memref.store %[[R]], %[[A]][%{{.*}}]
// CHECK: kernel.kernel @relu_in_place(
// CHECK-SAME: %{{.*}}: memref<16xf32>) attributes

// CHECK-LABEL: kernel.schedule @in_place
// CHECK: %[[T0:.*]] = memref.alloc() : memref<16xf32>
// CHECK: kernel.launch @k(%{{.*}}, %[[T0]])
// CHECK-NOT: memref.alloc
// CHECK: kernel.launch @relu_in_place(%[[T0]]) : memref<16xf32>
// CHECK-NEXT: kernel.launch @relu(%[[T0]]) : memref<16xf32>
// CHECK-NEXT: kernel.launch @k(%[[T0]], %{{.*}})
kernel.schedule @in_place(%x: memref<16xf32>, %out: memref<16xf32>) {
  %t0 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%x, %t0) : memref<16xf32>, memref<16xf32>
  %t1 = memref.alloc() : memref<16xf32>
  kernel.launch @relu(%t0, %t1) : memref<16xf32>, memref<16xf32>
  %t2 = memref.alloc() : memref<16xf32>
  kernel.launch @relu(%t1, %t2) : memref<16xf32>, memref<16xf32>
  kernel.launch @k(%t2, %out) : memref<16xf32>, memref<16xf32>
  kernel.return
}

// -----

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
kernel.kernel @ki(%a: memref<16xi32>, %b: memref<16xi32>) attributes {domain = array<i64: 16>} {
  kernel.return
}
kernel.kernel @cast(%a: memref<16xf32>, %b: memref<16xi32>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %v = memref.load %a[%i] : memref<16xf32>
  %r = arith.fptosi %v : f32 to i32
  memref.store %r, %b[%i] : memref<16xi32>
  kernel.return
}

// Not in place: an input read again later, an input that is the graph's
// argument, an output of another type.
// CHECK-LABEL: kernel.schedule @not_in_place
// CHECK: kernel.launch @relu(%[[T0:.*]], %[[T1:.*]]) : memref<16xf32>, memref<16xf32>
// CHECK: kernel.launch @relu(%{{.*}}, %[[T2:.*]]) : memref<16xf32>, memref<16xf32>
// CHECK: kernel.launch @cast(%{{.*}}, %[[T3:.*]]) : memref<16xf32>, memref<16xi32>
kernel.schedule @not_in_place(%x: memref<16xf32>, %out: memref<16xf32>, %out2: memref<16xi32>) {
  %t0 = memref.alloc() : memref<16xf32>
  kernel.launch @k(%x, %t0) : memref<16xf32>, memref<16xf32>
  %t1 = memref.alloc() : memref<16xf32>
  kernel.launch @relu(%t0, %t1) : memref<16xf32>, memref<16xf32>
  kernel.launch @k(%t0, %out) : memref<16xf32>, memref<16xf32>
  %t2 = memref.alloc() : memref<16xf32>
  kernel.launch @relu(%x, %t2) : memref<16xf32>, memref<16xf32>
  %t3 = memref.alloc() : memref<16xi32>
  kernel.launch @cast(%t2, %t3) : memref<16xf32>, memref<16xi32>
  kernel.launch @k(%t1, %out) : memref<16xf32>, memref<16xf32>
  kernel.launch @ki(%t3, %out2) : memref<16xi32>, memref<16xi32>
  kernel.return
}
