// RUN: tc-opt %s -tc-fuse-index-checks | FileCheck %s --check-prefix=FUSE
// RUN: tc-opt %s -tc-fuse-index-checks="early-flags=true" | FileCheck %s --check-prefix=EARLY

// The check runs first and the gather that loads every index after a
// product (a classifier's last-token gather at the graph's end). Fused, the
// flag would be set after the product; with early-flags (CUDA, whose
// runtime reads the flag as soon as its last step has run) the check
// stays first. Without a library call between them, early-flags fuses as
// before (tc-fuse-index-checks.mlir's cases).
// FUSE: kernel.schedule
// FUSE-NEXT: kernel.gemm
// FUSE-NEXT: kernel.launch @check_clear(%arg3)
// FUSE-NEXT: kernel.launch @gather(%arg0, %arg1, %arg2, %arg3)
// EARLY: kernel.schedule
// EARLY-NEXT: kernel.launch @check(%arg1, %arg3)
// EARLY-NEXT: kernel.gemm
// EARLY-NEXT: kernel.launch @gather(%arg0, %arg1, %arg2)

kernel.kernel @gather(%x: memref<4x8xf32>, %i: memref<4x8xi64>, %out: memref<4x8xf32>) attributes {domain = array<i64: 4>} {
  %r = kernel.index 0
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  kernel.loop %c8 {
  ^bb0(%j: index):
    %v = memref.load %i[%r, %j] : memref<4x8xi64>
    %k = arith.index_cast %v : i64 to index
    %lo = arith.maxsi %k, %c0 : index
    %hi = arith.minsi %lo, %c7 : index
    %x0 = memref.load %x[%r, %hi] : memref<4x8xf32>
    memref.store %x0, %out[%r, %j] : memref<4x8xf32>
  }
  kernel.return
}
kernel.kernel @check(%i: memref<4x8xi64>, %flag: memref<i1>) attributes {domain = array<i64>} {
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %lowest = arith.constant -2147483648 : i32
  %m = kernel.reduce max %c4 init %lowest : i32 {
  ^bb0(%r: index):
    %lowest1 = arith.constant -2147483648 : i32
    %row = kernel.reduce max %c8 init %lowest1 : i32 {
    ^bb0(%j: index):
      %v = memref.load %i[%r, %j] : memref<4x8xi64>
      %m1 = arith.constant -1 : i64
      %a = arith.maxsi %v, %m1 : i64
      %c8i = arith.constant 8 : i64
      %b = arith.minsi %a, %c8i : i64
      %c2 = arith.constant 2 : i64
      %t = arith.muli %b, %c2 : i64
      %c7i = arith.constant 7 : i64
      %d = arith.subi %t, %c7i : i64
      %z = arith.constant 0 : i64
      %neg = arith.cmpi slt, %d, %z : i64
      %nd = arith.subi %z, %d : i64
      %abs = arith.select %neg, %nd, %d : i64
      %n = arith.trunci %abs : i64 to i32
      kernel.yield %n : i32
    }
    kernel.yield %row : i32
  }
  %bound = arith.constant 7 : i32
  %bad = arith.cmpi sgt, %m, %bound : i32
  memref.store %bad, %flag[] : memref<i1>
  kernel.return
}
kernel.schedule @main(%x: memref<4x8xf32>, %i: memref<4x8xi64>, %out: memref<4x8xf32>, %flag: memref<i1>, %a: memref<4x8xf32>, %b: memref<8x8xf32>, %p: memref<4x8xf32>) {
  kernel.launch @check(%i, %flag) : memref<4x8xi64>, memref<i1>
  kernel.gemm %a, %b, %p : memref<4x8xf32>, memref<8x8xf32>, memref<4x8xf32>
  kernel.launch @gather(%x, %i, %out) : memref<4x8xf32>, memref<4x8xi64>, memref<4x8xf32>
  kernel.return
}
