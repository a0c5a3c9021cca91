// RUN: tc-opt %s -split-input-file -tc-fuse-index-checks | FileCheck %s

// A gather and the check of its indices (max |2 clamp(i, -1, 8) - 7| > 7,
// nested over [4, 8]): the gather's kernel, which loads every index, sets
// the flag where one fails; the check kernel only clears it, first.
// CHECK-LABEL: kernel.kernel @gather(
// CHECK-SAME: %[[I:[a-z0-9]+]]: memref<4x8xi64>, %{{.*}}: memref<4x8xf32>, %[[FLAG:[a-z0-9]+]]: memref<i1>)
// CHECK: kernel.loop
// The function is tc's own form (tc.backend's _add_out_of_range_flag), so
// the kernel compares the index with [0, 8) directly: i - 0 >= 8 unsigned.
// CHECK: %[[V:.*]] = memref.load %[[I]]
// CHECK-NEXT: %[[LOW:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[OFF:.*]] = arith.subi %[[V]], %[[LOW]] : i64
// CHECK-NEXT: %[[N:.*]] = arith.constant 8 : i64
// CHECK-NEXT: %[[BAD:.*]] = arith.cmpi uge, %[[OFF]], %[[N]] : i64
// CHECK-NEXT: scf.if %[[BAD]] {
// CHECK-NEXT: %[[T:.*]] = arith.constant true
// CHECK-NEXT: memref.store %[[T]], %[[FLAG]][]
// CHECK: kernel.kernel @check_clear(%[[F:.*]]: memref<i1>) attributes {domain = array<i64>} {
// CHECK-NEXT: %[[FALSE:.*]] = arith.constant false
// CHECK-NEXT: memref.store %[[FALSE]], %[[F]][]
// CHECK-NEXT: kernel.return
// CHECK: kernel.schedule
// CHECK-NEXT: kernel.launch @check_clear(%arg3)
// CHECK-NEXT: kernel.launch @gather(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: kernel.return
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
kernel.schedule @main(%x: memref<4x8xf32>, %i: memref<4x8xi64>, %out: memref<4x8xf32>, %flag: memref<i1>) {
  kernel.launch @gather(%x, %i, %out) : memref<4x8xf32>, memref<4x8xi64>, memref<4x8xf32>
  kernel.launch @check(%i, %flag) : memref<4x8xi64>, memref<i1>
  kernel.return
}

// -----

// The only other kernel reads half of the indices (its loop covers 4 of 8
// columns): the check keeps its own pass.
// CHECK-LABEL: kernel.kernel @half(
// CHECK-NOT: scf.if
// CHECK: kernel.kernel @check(%{{.*}}: memref<4x8xi64>, %{{.*}}: memref<i1>)
// CHECK: kernel.reduce max
// CHECK: kernel.launch @half
// CHECK-NEXT: kernel.launch @check
kernel.kernel @half(%i: memref<4x8xi64>, %out: memref<4x4xi64>) attributes {domain = array<i64: 4>} {
  %r = kernel.index 0
  %c4 = arith.constant 4 : index
  kernel.loop %c4 {
  ^bb0(%j: index):
    %v = memref.load %i[%r, %j] : memref<4x8xi64>
    memref.store %v, %out[%r, %j] : memref<4x4xi64>
  }
  kernel.return
}
kernel.kernel @check(%i: memref<4x8xi64>, %flag: memref<i1>) attributes {domain = array<i64>} {
  %c32 = arith.constant 32 : index
  %c8 = arith.constant 8 : index
  %lowest = arith.constant -2147483648 : i32
  %m = kernel.reduce max %c32 init %lowest : i32 {
  ^bb0(%k: index):
    %r = arith.divui %k, %c8 : index
    %j = arith.remui %k, %c8 : index
    %v = memref.load %i[%r, %j] : memref<4x8xi64>
    %n = arith.trunci %v : i64 to i32
    kernel.yield %n : i32
  }
  %bound = arith.constant 7 : i32
  %bad = arith.cmpi sgt, %m, %bound : i32
  memref.store %bad, %flag[] : memref<i1>
  kernel.return
}
kernel.schedule @main(%i: memref<4x8xi64>, %out: memref<4x4xi64>, %flag: memref<i1>) {
  kernel.launch @half(%i, %out) : memref<4x8xi64>, memref<4x4xi64>
  kernel.launch @check(%i, %flag) : memref<4x8xi64>, memref<i1>
  kernel.return
}

// -----

// Another function of the index (its low 32 bits against 7): cloned as it
// is after the covering kernel's load.
// CHECK-LABEL: kernel.kernel @copy(
// CHECK: %[[V:.*]] = memref.load
// CHECK: %[[T:.*]] = arith.trunci %[[V]] : i64 to i32
// CHECK: %[[BAD:.*]] = arith.cmpi sgt, %[[T]], %{{.*}} : i32
// CHECK: scf.if %[[BAD]]
// CHECK: kernel.kernel @check_clear
kernel.kernel @copy(%i: memref<8xi64>, %out: memref<8xi64>) attributes {domain = array<i64: 8>} {
  %r = kernel.index 0
  %v = memref.load %i[%r] : memref<8xi64>
  memref.store %v, %out[%r] : memref<8xi64>
  kernel.return
}
kernel.kernel @check(%i: memref<8xi64>, %flag: memref<i1>) attributes {domain = array<i64>} {
  %c8 = arith.constant 8 : index
  %lowest = arith.constant -2147483648 : i32
  %m = kernel.reduce max %c8 init %lowest : i32 {
  ^bb0(%k: index):
    %v = memref.load %i[%k] : memref<8xi64>
    %n = arith.trunci %v : i64 to i32
    kernel.yield %n : i32
  }
  %bound = arith.constant 7 : i32
  %bad = arith.cmpi sgt, %m, %bound : i32
  memref.store %bad, %flag[] : memref<i1>
  kernel.return
}
kernel.schedule @main(%i: memref<8xi64>, %out: memref<8xi64>, %flag: memref<i1>) {
  kernel.launch @copy(%i, %out) : memref<8xi64>, memref<8xi64>
  kernel.launch @check(%i, %flag) : memref<8xi64>, memref<i1>
  kernel.return
}

// -----

// A kernel reads the flag after the check: moved into @copy, which runs
// after that reader, it would be read before it is computed. Left alone.
// CHECK-LABEL: kernel.kernel @copy(
// CHECK-NOT: scf.if
// CHECK: kernel.launch @check(
// CHECK-NEXT: kernel.launch @reader(
// CHECK-NEXT: kernel.launch @copy(
kernel.kernel @copy(%i: memref<8xi64>, %out: memref<8xi64>) attributes {domain = array<i64: 8>} {
  %r = kernel.index 0
  %v = memref.load %i[%r] : memref<8xi64>
  memref.store %v, %out[%r] : memref<8xi64>
  kernel.return
}
kernel.kernel @check(%i: memref<8xi64>, %flag: memref<i1>) attributes {domain = array<i64>} {
  %c8 = arith.constant 8 : index
  %lowest = arith.constant -2147483648 : i32
  %m = kernel.reduce max %c8 init %lowest : i32 {
  ^bb0(%k: index):
    %v = memref.load %i[%k] : memref<8xi64>
    %n = arith.trunci %v : i64 to i32
    kernel.yield %n : i32
  }
  %bound = arith.constant 7 : i32
  %bad = arith.cmpi sgt, %m, %bound : i32
  memref.store %bad, %flag[] : memref<i1>
  kernel.return
}
kernel.kernel @reader(%flag: memref<i1>, %out: memref<i1>) attributes {domain = array<i64>} {
  %f = memref.load %flag[] : memref<i1>
  memref.store %f, %out[] : memref<i1>
  kernel.return
}
kernel.schedule @main(%i: memref<8xi64>, %out: memref<8xi64>, %copied: memref<i1>) {
  %flag = memref.alloc() : memref<i1>
  kernel.launch @check(%i, %flag) : memref<8xi64>, memref<i1>
  kernel.launch @reader(%flag, %copied) : memref<i1>, memref<i1>
  kernel.launch @copy(%i, %out) : memref<8xi64>, memref<8xi64>
  kernel.return
}
