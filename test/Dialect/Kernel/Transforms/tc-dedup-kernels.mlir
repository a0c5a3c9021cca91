// RUN: tc-opt %s --tc-dedup-kernels | FileCheck %s

// @relu_1 is @relu_0 under another name (and location): its launch goes to
// @relu_0. @relu_wide has another domain, @neg another body: both stay.

// CHECK: kernel.kernel @relu_0(
// CHECK-NOT: kernel.kernel @relu_1
kernel.kernel @relu_0(%a: memref<4x8xf32>, %b: memref<4x8xf32>) attributes {domain = array<i64: 4, 8>} {
  %i = kernel.index 0
  %j = kernel.index 1
  %x = memref.load %a[%i, %j] : memref<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %y = arith.maximumf %x, %zero : f32
  memref.store %y, %b[%i, %j] : memref<4x8xf32>
  kernel.return
}
kernel.kernel @relu_1(%a: memref<4x8xf32>, %b: memref<4x8xf32>) attributes {domain = array<i64: 4, 8>} {
  %i = kernel.index 0
  %j = kernel.index 1
  %x = memref.load %a[%i, %j] : memref<4x8xf32> loc("elsewhere")
  %zero = arith.constant 0.0 : f32
  %y = arith.maximumf %x, %zero : f32
  memref.store %y, %b[%i, %j] : memref<4x8xf32>
  kernel.return
}
// CHECK: kernel.kernel @relu_wide(
kernel.kernel @relu_wide(%a: memref<4x8xf32>, %b: memref<4x8xf32>) attributes {domain = array<i64: 32>} {
  kernel.return
}
// CHECK: kernel.kernel @neg(
kernel.kernel @neg(%a: memref<4x8xf32>, %b: memref<4x8xf32>) attributes {domain = array<i64: 4, 8>} {
  %i = kernel.index 0
  %j = kernel.index 1
  %x = memref.load %a[%i, %j] : memref<4x8xf32>
  %y = arith.negf %x : f32
  memref.store %y, %b[%i, %j] : memref<4x8xf32>
  kernel.return
}

// CHECK-LABEL: kernel.schedule @forward
// CHECK: kernel.launch @relu_0(%arg0, %[[T:.*]])
// CHECK: kernel.launch @relu_0(%[[T]], %arg1)
// CHECK: kernel.launch @relu_wide(
// CHECK: kernel.launch @neg(
kernel.schedule @forward(%x: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %t = memref.alloc() : memref<4x8xf32>
  kernel.launch @relu_0(%x, %t) : memref<4x8xf32>, memref<4x8xf32>
  kernel.launch @relu_1(%t, %out) : memref<4x8xf32>, memref<4x8xf32>
  kernel.launch @relu_wide(%t, %out) : memref<4x8xf32>, memref<4x8xf32>
  kernel.launch @neg(%t, %out) : memref<4x8xf32>, memref<4x8xf32>
  kernel.return
}
