// RUN: tc-opt %s --pass-pipeline="builtin.module(gpu.module(tc-nvvm-div-full))" | FileCheck %s

// f32 divisions become PTX's div.full.f32; other types keep llvm.fdiv.

// CHECK-LABEL: llvm.func @divide
// CHECK-SAME: (%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f64, %[[D:.*]]: f64)
// CHECK: %[[Q:.*]] = llvm.inline_asm "div.full.f32 $0, $1, $2;", "=f,f,f" %[[A]], %[[B]] : (f32, f32) -> f32
// CHECK: %[[R:.*]] = llvm.fdiv %[[C]], %[[D]] : f64
// CHECK: %[[S:.*]] = llvm.insertvalue %[[Q]], %{{.*}}[0]
// CHECK: llvm.insertvalue %[[R]], %[[S]][1]
gpu.module @kernels {
  llvm.func @divide(%a: f32, %b: f32, %c: f64, %d: f64) -> !llvm.struct<(f32, f64)> {
    %q = llvm.fdiv %a, %b : f32
    %r = llvm.fdiv %c, %d : f64
    %u = llvm.mlir.undef : !llvm.struct<(f32, f64)>
    %v = llvm.insertvalue %q, %u[0] : !llvm.struct<(f32, f64)>
    %w = llvm.insertvalue %r, %v[1] : !llvm.struct<(f32, f64)>
    llvm.return %w : !llvm.struct<(f32, f64)>
  }
}

// A quotient that decides a discrete value, through arithmetic after it,
// stays IEEE (eager's): a bin index (a floor, then a conversion), a
// comparison, a libdevice rounding. One that only flows into arithmetic
// and memory becomes div.full.f32.

// CHECK-LABEL: llvm.func @discrete
// CHECK: %[[BIN:.*]] = llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: llvm.fmul %[[BIN]]
// CHECK: %[[CMP:.*]] = llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: llvm.fcmp "olt" %[[CMP]]
// CHECK: %[[LIB:.*]] = llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: llvm.call @__nv_floorf(%[[LIB]])
// CHECK: llvm.inline_asm "div.full.f32 $0, $1, $2;"
// CHECK-NOT: div.full
gpu.module @discrete_kernels {
  llvm.func @__nv_floorf(f32) -> f32
  llvm.func @discrete(%a: f32, %b: f32, %p: !llvm.ptr) -> i64 {
    %q = llvm.fdiv %a, %b : f32
    %s = llvm.fmul %q, %b : f32
    %f = llvm.intr.floor(%s) : (f32) -> f32
    %i = llvm.fptosi %f : f32 to i64
    %c = llvm.fdiv %b, %a : f32
    %lt = llvm.fcmp "olt" %c, %a : f32
    %l = llvm.fdiv %a, %a : f32
    %fl = llvm.call @__nv_floorf(%l) : (f32) -> f32
    llvm.store %fl, %p : f32, !llvm.ptr
    %plain = llvm.fdiv %b, %b : f32
    llvm.store %plain, %p : f32, !llvm.ptr
    %z = llvm.zext %lt : i1 to i64
    %r = llvm.add %i, %z : i64
    llvm.return %r : i64
  }
}
