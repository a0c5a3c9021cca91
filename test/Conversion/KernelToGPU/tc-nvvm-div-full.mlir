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
