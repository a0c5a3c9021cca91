//===- Passes.td - passes of the GPU targets ----------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The passes only the CUDA and ROCm pipelines run, after
// tc-lower-kernel-to-gpu (tc/Pipelines/Pipelines.h): on gpu.module kernels
// and their NVVM lowering, and their serialization.
//
//===----------------------------------------------------------------------===//

#ifndef TC_TARGET_GPU_PASSES_TD
#define TC_TARGET_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def NarrowIndexDivisionPass
    : Pass<"tc-gpu-narrow-index-division", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Index division and remainder in 32 bits where values fit";
  let description = [{
    Kernels compute the coordinates of a flattened index with `divui` and
    `remui` on `index`, 64 bits on GPUs, where a 64-bit division or
    remainder, even by a constant, is a long instruction sequence: a
    reduction over N, H, W of a channels-last tensor (flattened into one
    range by tc-split-reductions) spent more time dividing than loading.
    Where integer range analysis (the functions' known block and grid
    sizes, static trip counts and constants) proves both operands below
    2^31, the operation runs on i32 between `index_castui`s.

    (Upstream's `arith-int-range-narrowing` narrows every operation this
    way, but also narrows a shift by 32 of a value it proves below 2^32 to
    an i32 shift by 32: poison, on which LLVM deletes the kernel.)
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def NVVMDivFullPass : Pass<"tc-nvvm-div-full", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower f32 divisions of NVVM kernels to PTX div.full.f32";
  let description = [{
    Rewrites every scalar f32 `llvm.fdiv` of a `gpu.module` lowered to NVVM
    into PTX's `div.full.f32` (full range, at most 2 ulp from the correctly
    rounded quotient: the division Triton's kernels use for `/`). LLVM's
    NVPTX backend otherwise emits `div.rn.f32`, an IEEE division whose
    expansion (a refinement plus a slow path per division) makes the
    driver's PTX compile of a division-heavy kernel slow: a softmax row
    kernel with 16 divisions took 63 ms to load on the H100, 38 ms with
    `div.full.f32` (measured 2026-11-23). A division whose quotient
    decides a discrete value, through the arithmetic after it (a floor,
    ceil, trunc or round, a conversion to an integer, a comparison), stays
    IEEE, as eager's is: an ulp there moves a value to another histogram
    bin or gather index. Divisions of other types keep LLVM's lowering. The
    `tc-cuda-pipeline` option `precise-div` leaves this pass out.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GPUModuleToBinaryPass : Pass<"tc-gpu-module-to-binary", "ModuleOp"> {
  let summary = "Serialize gpu.modules to binaries, in shards compiled in "
                "parallel";
  let description = [{
    MLIR's `gpu-module-to-binary`, with each `gpu.module` first split into
    at most `shards` copies that each keep a share of its kernels (kernel
    `i` in shard `i % n`, at least `min-kernels-per-shard` kernels a shard:
    below that a shard's own costs, the translation's setup and linking the
    bitcode libraries, outweigh what another thread gains) and everything
    else (declarations, globals). The shards are translated to LLVM IR,
    optimized and serialized on the context's threads; the `gpu.binary`
    that replaces the module holds one object per shard, in shard order,
    all for the module's target. A training graph's backward has hundreds
    of kernels whose LLVM codegen is otherwise one thread's work (1.6 s
    of the ResNet-18 backward's compile on the H100 machine), and PTX in
    several objects is what lets a runtime compile them in parallel too.
    With `shards=1` the result is `gpu-module-to-binary`'s.

    ```mlir
    gpu.module @tc_kernels [#nvvm.target] { ... }  // 20 kernels
    // tc-gpu-module-to-binary{format=isa shards=4}:
    gpu.binary @tc_kernels [#gpu.object<#nvvm.target, "...">,  // kernels 0, 4, ...
                            #gpu.object<#nvvm.target, "...">]  // kernels 1, 5, ...
    ```
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", "\"\"",
           "Toolkit path (ptxas for cubins, the ROCm root for hsaco)">,
    Option<"format", "format", "std::string", "\"fatbin\"",
           "What each object holds: bin, isa (assembly), fatbin, llvm "
           "(offloading)">,
    Option<"shards", "shards", "unsigned", "1",
           "The most objects one gpu.module becomes">,
    Option<"minKernelsPerShard", "min-kernels-per-shard", "unsigned", "8",
           "The fewest kernels a shard holds">,
  ];
}

#endif // TC_TARGET_GPU_PASSES_TD
