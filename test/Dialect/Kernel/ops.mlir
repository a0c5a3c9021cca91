// RUN: tc-opt %s | tc-opt | FileCheck %s
// RUN: tc-opt %s --mlir-print-op-generic | tc-opt | FileCheck %s

// A pointwise kernel: sin(x) + cos(y), one point per element.
// CHECK-LABEL: kernel.kernel @sin_cos_add
// CHECK-SAME: attributes {domain = array<i64: 3, 3>}
kernel.kernel @sin_cos_add(%x: memref<3x3xf32>, %y: memref<3x3xf32>, %out: memref<3x3xf32>) attributes {domain = array<i64: 3, 3>} {
  // CHECK: %[[I:.*]] = kernel.index 0
  %i = kernel.index 0
  // CHECK: %[[J:.*]] = kernel.index 1
  %j = kernel.index 1
  // CHECK: memref.load %{{.*}}[%[[I]], %[[J]]]
  %a = memref.load %x[%i, %j] : memref<3x3xf32>
  %b = memref.load %y[%i, %j] : memref<3x3xf32>
  %s = math.sin %a : f32
  %c = math.cos %b : f32
  %r = arith.addf %s, %c : f32
  memref.store %r, %out[%i, %j] : memref<3x3xf32>
  // CHECK: kernel.return
  kernel.return
}

// A fused softmax: one point per row, two reductions and a pointwise pass.
// CHECK-LABEL: kernel.kernel @softmax
kernel.kernel @softmax(%x: memref<16x128xf32>, %out: memref<16x128xf32>) attributes {domain = array<i64: 16>} {
  %i = kernel.index 0
  %n = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  // CHECK: %[[MAX:.*]] = kernel.reduce max %{{.*}} init %{{.*}} : f32 {
  // CHECK-NEXT: ^bb0(%[[J:.*]]: index):
  // CHECK: kernel.yield %{{.*}} : f32
  %max = kernel.reduce max %n init %ninf : f32 {
  ^bb0(%j: index):
    %v = memref.load %x[%i, %j] : memref<16x128xf32>
    kernel.yield %v : f32
  }
  // CHECK: kernel.reduce add
  %sum = kernel.reduce add %n init %zero : f32 {
  ^bb0(%j: index):
    %v = memref.load %x[%i, %j] : memref<16x128xf32>
    %d = arith.subf %v, %max : f32
    %e = math.exp %d : f32
    kernel.yield %e : f32
  }
  // CHECK: kernel.loop %{{.*}} {
  kernel.loop %n {
  ^bb0(%j: index):
    %v = memref.load %x[%i, %j] : memref<16x128xf32>
    %d = arith.subf %v, %max : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %sum : f32
    memref.store %q, %out[%i, %j] : memref<16x128xf32>
  }
  kernel.return
}

// The host schedule: an arena, buffers in it, launches and a GEMM.
// CHECK-LABEL: kernel.schedule @forward
kernel.schedule @forward(%x: memref<16x128xf32>, %w: memref<64x128xf32>, %b: memref<64xf32>, %out: memref<16x64xf32>) {
  // CHECK: %[[ARENA:.*]] = kernel.arena : memref<16384xi8>
  %arena = kernel.arena : memref<16384xi8>
  // CHECK: %[[T:.*]] = kernel.buffer %[[ARENA]][8192] : memref<16384xi8> to memref<16x128xf32>
  %t = kernel.buffer %arena[8192] : memref<16384xi8> to memref<16x128xf32>
  // CHECK: kernel.launch @softmax(%{{.*}}, %[[T]]) : memref<16x128xf32>, memref<16x128xf32>
  kernel.launch @softmax(%x, %t) : memref<16x128xf32>, memref<16x128xf32>
  // CHECK: kernel.gemm %[[T]], %{{.*}}, %{{.*}} bias %{{.*}} {transpose_b} : memref<16x128xf32>, memref<64x128xf32>, memref<16x64xf32>, memref<64xf32>
  kernel.gemm %t, %w, %out bias %b {transpose_b} : memref<16x128xf32>, memref<64x128xf32>, memref<16x64xf32>, memref<64xf32>
  kernel.return
}

// A weight read in another shape by its product: an alias of the argument.
// CHECK-LABEL: kernel.schedule @aliased_weight
kernel.schedule @aliased_weight(%x: memref<16x128xf32>, %w: memref<128x4x16xf32>, %out: memref<16x64xf32>) {
  // CHECK: %[[W:.*]] = kernel.alias %{{.*}} : memref<128x4x16xf32> to memref<128x64xf32>
  %w2 = kernel.alias %w : memref<128x4x16xf32> to memref<128x64xf32>
  // CHECK: kernel.gemm %{{.*}}, %[[W]], %{{.*}} : memref<16x128xf32>, memref<128x64xf32>, memref<16x64xf32>
  kernel.gemm %x, %w2, %out : memref<16x128xf32>, memref<128x64xf32>, memref<16x64xf32>
  kernel.return
}

// A batched GEMM without epilogue; the arena's alignment can be raised.
// CHECK-LABEL: kernel.schedule @bmm
kernel.schedule @bmm(%a: memref<2x3x4xf16>, %b: memref<2x4x5xf16>, %out: memref<2x3x5xf16>) {
  // CHECK: kernel.arena {alignment = 128 : i64} : memref<256xi8>
  %arena = kernel.arena {alignment = 128} : memref<256xi8>
  // CHECK: kernel.gemm %{{.*}}, %{{.*}}, %{{.*}} : memref<2x3x4xf16>
  kernel.gemm %a, %b, %out : memref<2x3x4xf16>, memref<2x4x5xf16>, memref<2x3x5xf16>
  kernel.return
}

// An n-d by 2-d product: the rows are a's leading dimensions (with the
// graph's symbolic size, 4 rows per unit of it).
// CHECK-LABEL: kernel.schedule @flattened
kernel.schedule @flattened(%a: memref<?x4x32xf32>, %b: memref<16x32xf32>, %bias: memref<16xf32>, %out: memref<?x4x16xf32>) {
  // CHECK: kernel.gemm %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} {transpose_b} : memref<?x4x32xf32>, memref<16x32xf32>, memref<?x4x16xf32>, memref<16xf32>
  kernel.gemm %a, %b, %out bias %bias {transpose_b} : memref<?x4x32xf32>, memref<16x32xf32>, memref<?x4x16xf32>, memref<16xf32>
  kernel.return
}
