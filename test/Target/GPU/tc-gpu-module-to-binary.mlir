// RUN: tc-opt %s --tc-gpu-module-to-binary="format=isa shards=2 min-kernels-per-shard=1" | FileCheck %s
// RUN: tc-opt %s --tc-gpu-module-to-binary="format=isa shards=4 min-kernels-per-shard=2" | FileCheck %s --check-prefix=MIN
// RUN: tc-opt %s --tc-gpu-module-to-binary="format=isa" | FileCheck %s --check-prefix=ONE
// RUN: not tc-opt %s --tc-gpu-module-to-binary="format=elf" 2>&1 | FileCheck %s --check-prefix=FORMAT

// Three kernels in two shards: kernels 0 and 2 in the first object, kernel 1
// in the second; the helper they call is in both.
// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target, {{[^"]*}}assembly = "
// CHECK-SAME: .func (.param .b32 func_retval0) twice
// CHECK-NOT: #gpu.object
// CHECK-SAME: .entry first
// CHECK-NOT: .entry second
// CHECK-NOT: #gpu.object
// CHECK-SAME: .entry third
// CHECK-SAME: #gpu.object<#nvvm.target, {{[^"]*}}assembly = "
// CHECK-NOT: .entry first
// CHECK-SAME: .entry second
// CHECK-NOT: .entry third
// CHECK-SAME: ">]

// Two kernels at least a shard: three kernels make one object.
// MIN: gpu.binary @kernels [#gpu.object<#nvvm.target, {{[^"]*}}assembly = "
// MIN-NOT: #gpu.object
// MIN-SAME: ">]

// ONE: gpu.binary @kernels [#gpu.object<#nvvm.target, {{[^"]*}}assembly = "
// ONE-SAME: .entry first
// ONE-SAME: .entry second
// ONE-SAME: .entry third
// ONE-NOT: #gpu.object

// FORMAT: error: tc-gpu-module-to-binary: unknown format 'elf'

module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target] {
    llvm.func @twice(%x: i32) -> i32 attributes {passthrough = ["noinline"]} {
      %y = llvm.add %x, %x : i32
      llvm.return %y : i32
    }
    llvm.func @first(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %c = llvm.mlir.constant(1 : i32) : i32
      %v = llvm.call @twice(%c) : (i32) -> i32
      llvm.store %v, %p : i32, !llvm.ptr
      llvm.return
    }
    llvm.func @second(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %c = llvm.mlir.constant(2 : i32) : i32
      %v = llvm.call @twice(%c) : (i32) -> i32
      llvm.store %v, %p : i32, !llvm.ptr
      llvm.return
    }
    llvm.func @third(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %c = llvm.mlir.constant(3 : i32) : i32
      %v = llvm.call @twice(%c) : (i32) -> i32
      llvm.store %v, %p : i32, !llvm.ptr
      llvm.return
    }
  }
}
