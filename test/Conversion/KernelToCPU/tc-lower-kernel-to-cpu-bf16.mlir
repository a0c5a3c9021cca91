// RUN: tc-opt %s -tc-lower-kernel-to-cpu | FileCheck %s

// bf16 arithmetic runs in f32 and each result is rounded back to bf16 (as
// eager does), the conversions as integer arithmetic (no compiler-rt
// calls): x * 3 is rounded (round to nearest even: add 0x7FFF plus the
// kept lowest bit, keep the high half) before y is added.
// CHECK-LABEL: func.func @bf16_chain
// CHECK-NOT: arith.extf
// CHECK: %[[M:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.bitcast %[[M]] : f32 to i32
// CHECK: arith.shrui %{{.*}}, %c16_i32 : i32
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: %[[A:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.bitcast %[[A]] : f32 to i32
// CHECK-NOT: arith.truncf
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<4x8xbf16>
kernel.kernel @bf16_chain(%x: memref<4x8xbf16>, %y: memref<4x8xbf16>, %out: memref<4x8xbf16>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
  %c8 = arith.constant 8 : index
  %three = arith.constant 3.0 : bf16
  kernel.loop %c8 {
  ^bb0(%j: index):
    %a = memref.load %x[%i, %j] : memref<4x8xbf16>
    %b = memref.load %y[%i, %j] : memref<4x8xbf16>
    %m = arith.mulf %a, %three : bf16
    %s = arith.addf %m, %b : bf16
    memref.store %s, %out[%i, %j] : memref<4x8xbf16>
  }
  kernel.return
}

// Math on bf16 runs in f32 too (LLVM would otherwise legalize bf16 rsqrt
// through compiler-rt's __truncsfbf2): one f32 rsqrt, rounded back with
// integer arithmetic.
// CHECK-LABEL: func.func @bf16_math
// CHECK: math.rsqrt %{{.*}} : f32
// CHECK-NOT: math.rsqrt %{{.*}} : bf16
// CHECK-NOT: arith.truncf
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<4xbf16>
kernel.kernel @bf16_math(%x: memref<4xbf16>, %out: memref<4xbf16>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
  %a = memref.load %x[%i] : memref<4xbf16>
  %r = math.rsqrt %a : bf16
  memref.store %r, %out[%i] : memref<4xbf16>
  kernel.return
}

// A select of bf16 values (a concatenation, a where) chooses between their
// bits: x86 without AVX512-BF16 legalizes a bf16 select by widening to f32
// and back, a call of __truncsfbf2 that the JIT's process lacks (a bf16
// Llama block's training graph failed to load).
// CHECK-LABEL: func.func @bf16_select
// CHECK: %[[T:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// CHECK: %[[F:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[T]], %[[F]] : i16
// CHECK: arith.bitcast %[[S]] : i16 to bf16
// CHECK-NOT: arith.select {{.*}} : bf16
kernel.kernel @bf16_select(%x: memref<4xbf16>, %y: memref<4xbf16>, %out: memref<4xbf16>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
  %c2 = arith.constant 2 : index
  %a = memref.load %x[%i] : memref<4xbf16>
  %b = memref.load %y[%i] : memref<4xbf16>
  %first = arith.cmpi ult, %i, %c2 : index
  %r = arith.select %first, %a, %b : bf16
  memref.store %r, %out[%i] : memref<4xbf16>
  kernel.return
}

// A max pooling window over ReLU's outputs, with a padded position's
// choice of -inf: each maximum, ReLU and choice returns one of its
// operands, a bf16 value, so the chain runs in f32 and rounds once, before
// the store (one rounding: one truncation to 16 bits, the store's).
// CHECK-LABEL: func.func @bf16_max_chain
// CHECK-NOT: arith.trunci
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.trunci
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.trunci
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.trunci
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK-NOT: arith.trunci
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<4x8xbf16>
kernel.kernel @bf16_max_chain(%x: memref<4x8xbf16>, %y: memref<4x8xbf16>, %pad: memref<4xi1>, %out: memref<4x8xbf16>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : bf16
  %lowest = arith.constant 0xFF80 : bf16
  %p = memref.load %pad[%i] : memref<4xi1>
  kernel.loop %c8 {
  ^bb0(%j: index):
    %a = memref.load %x[%i, %j] : memref<4x8xbf16>
    %ra = arith.maximumf %a, %zero : bf16
    %sa = arith.select %p, %ra, %lowest : bf16
    %b = memref.load %y[%i, %j] : memref<4x8xbf16>
    %rb = arith.maximumf %b, %zero : bf16
    %m = arith.maximumf %sa, %rb : bf16
    memref.store %m, %out[%i, %j] : memref<4x8xbf16>
  }
  kernel.return
}

// A window's maximum over values computed in f32 and rounded to bf16 (max
// pooling over batch norm and ReLU): rounding commutes with maxima and
// choices, so the chain of maxima runs on the unrounded values and rounds
// once, before the store, instead of once per point.
// CHECK-LABEL: func.func @bf16_max_of_rounded
// CHECK: arith.mulf
// CHECK-NOT: arith.trunci
// CHECK: arith.mulf
// CHECK-NOT: arith.trunci
// CHECK: arith.mulf
// CHECK-NOT: arith.trunci
// CHECK: arith.maximumf
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK-NOT: arith.trunci
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<4x8xbf16>
kernel.kernel @bf16_max_of_rounded(%x: memref<4x8x3xbf16>, %s: memref<8xf32>, %pad: memref<4xi1>, %out: memref<4x8xbf16>) attributes {domain = array<i64: 4>} {
  %i = kernel.index 0
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : bf16
  %lowest = arith.constant 0xFF80 : bf16
  %p = memref.load %pad[%i] : memref<4xi1>
  kernel.loop %c8 {
  ^bb0(%j: index):
    %scale = memref.load %s[%j] : memref<8xf32>
    %a = memref.load %x[%i, %j, %c0] : memref<4x8x3xbf16>
    %aw = arith.extf %a : bf16 to f32
    %am = arith.mulf %aw, %scale : f32
    %ar = arith.truncf %am : f32 to bf16
    %ra = arith.maximumf %ar, %zero : bf16
    %sa = arith.select %p, %ra, %lowest : bf16
    %b = memref.load %x[%i, %j, %c1] : memref<4x8x3xbf16>
    %bw = arith.extf %b : bf16 to f32
    %bm = arith.mulf %bw, %scale : f32
    %br = arith.truncf %bm : f32 to bf16
    %rb = arith.maximumf %br, %zero : bf16
    %m = arith.maximumf %sa, %rb : bf16
    %c = memref.load %x[%i, %j, %c2] : memref<4x8x3xbf16>
    %cw = arith.extf %c : bf16 to f32
    %cm = arith.mulf %cw, %scale : f32
    %cr = arith.truncf %cm : f32 to bf16
    %m2 = arith.maximumf %m, %cr : bf16
    memref.store %m2, %out[%i, %j] : memref<4x8xbf16>
  }
  kernel.return
}
