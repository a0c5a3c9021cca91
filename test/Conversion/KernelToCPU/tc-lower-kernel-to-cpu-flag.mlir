// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// The work the runtime divides among threads counts the largest buffer the
// kernel stores to, not its last argument: an index check's one-element
// flag comes last (tc-fuse-index-checks), and a gather counted as one
// point ran on one thread.
// CHECK: func.func @gather
// CHECK-SAME: tc.points = 2048 : i64
kernel.kernel @gather(%i: memref<64x32xi64>, %x: memref<64x100xf32>, %out: memref<64x32xf32>, %flag: memref<i1>) attributes {domain = array<i64: 64>} {
  %r = kernel.index 0
  %c32 = arith.constant 32 : index
  kernel.loop %c32 {
  ^bb0(%j: index):
    %v = memref.load %i[%r, %j] : memref<64x32xi64>
    %n = arith.constant 100 : i64
    %bad = arith.cmpi uge, %v, %n : i64
    scf.if %bad {
      %true = arith.constant true
      memref.store %true, %flag[] : memref<i1>
    }
    %k = arith.index_cast %v : i64 to index
    %y = memref.load %x[%r, %k] : memref<64x100xf32>
    memref.store %y, %out[%r, %j] : memref<64x32xf32>
  }
  kernel.return
}
kernel.schedule @main(%i: memref<64x32xi64>, %x: memref<64x100xf32>, %out: memref<64x32xf32>, %flag: memref<i1>) {
  kernel.launch @gather(%i, %x, %out, %flag) : memref<64x32xi64>, memref<64x100xf32>, memref<64x32xf32>, memref<i1>
  kernel.return
}
