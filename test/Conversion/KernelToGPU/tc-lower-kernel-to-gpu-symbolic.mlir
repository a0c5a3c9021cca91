// RUN: tc-opt %s -tc-lower-kernel-to-gpu | FileCheck %s

// Kernels over the graph's symbolic size `s` (a `?` first in the domain,
// docs/DynamicShapes.md): the gpu.func takes bare pointers with a static
// stand-in for the leading extent, then `s`; the launch's grid is an
// expression of `s`.

// CHECK-LABEL: kernel.schedule @g
// A thread per point: 4 threads per unit of s, in blocks of 256.
// CHECK: kernel.launch @tc_kernels::@points(%{{.*}}, %{{.*}}) {block = 256 : i64, threads_per_symbol = 4 : i64}
// A block per row: one row per unit of s.
// CHECK: kernel.launch @tc_kernels::@rows(%{{.*}}, %{{.*}}) {block = 256 : i64, grid_per_symbol = 1 : i64}

// CHECK: gpu.func @points(%[[A:.*]]: memref<2147483647x4xf32> {{{.*}}}, %[[B:.*]]: memref<2147483647x4xf32> {{{.*}}}, %[[S:.*]]: index) kernel
// CHECK: %[[LINEAR:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[THREADS:.*]] = arith.muli %[[C4]], %[[S]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LINEAR]], %[[THREADS]] : index
// CHECK: scf.if %[[IN]]
// CHECK: math.exp
// CHECK: gpu.func @rows(%{{.*}}: memref<2147483647x1024xf32> {{{.*}}}, %{{.*}}: memref<2147483647xf32> {{{.*}}}, %{{.*}}: index)
// CHECK: gpu.shuffle
kernel.kernel @points(%a: memref<?x4xf32>, %b: memref<?x4xf32>) attributes {domain = array<i64: -9223372036854775808>} {
  %i = kernel.index 0
  %c4 = arith.constant 4 : index
  kernel.loop %c4 {
  ^bb0(%j: index):
    %x = memref.load %a[%i, %j] : memref<?x4xf32>
    %y = math.exp %x : f32
    memref.store %y, %b[%i, %j] : memref<?x4xf32>
  }
  kernel.return
}
kernel.kernel @rows(%a: memref<?x1024xf32>, %b: memref<?xf32>) attributes {domain = array<i64: -9223372036854775808>} {
  %i = kernel.index 0
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %sum = kernel.reduce add %c1024 init %zero : f32 {
  ^bb0(%j: index):
    %x = memref.load %a[%i, %j] : memref<?x1024xf32>
    kernel.yield %x : f32
  }
  memref.store %sum, %b[%i] : memref<?xf32>
  kernel.return
}
kernel.schedule @g(%a: memref<?x4xf32>, %b: memref<?x4xf32>, %c: memref<?x1024xf32>, %d: memref<?xf32>) {
  kernel.launch @points(%a, %b) : memref<?x4xf32>, memref<?x4xf32>
  kernel.launch @rows(%c, %d) : memref<?x1024xf32>, memref<?xf32>
  kernel.return
}
