//===- Pipeline.h - the CPU compilation pipeline ----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The passes that take an imported fx graph to LLVM dialect for the CPU.
// The Python backend runs exactly these (stage by stage, to log the IR in
// between); `tc-opt --tc-cpu-pipeline` runs them all.
//
//===----------------------------------------------------------------------===//

#ifndef TC_TARGET_CPU_PIPELINE_H
#define TC_TARGET_CPU_PIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::tc {

/// fx -> prim: decomposition and simplification.
void buildDecomposePipeline(OpPassManager &pm);

/// prim -> kernel: fusion and memory planning. `cacheRows` as the tc-fuse
/// option of that name (the CPU's choice; GPUs recompute).
void buildFusePipeline(OpPassManager &pm, bool cacheRows = true);

/// kernel -> scf loop nests the CPU runtime calls.
void buildCPULoopsPipeline(OpPassManager &pm);

/// loop nests -> LLVM dialect (the kernel.schedule host program stays).
void buildCPULLVMPipeline(OpPassManager &pm);

/// All of the above, in order.
void buildCPUPipeline(OpPassManager &pm);

/// Registers `tc-cpu-pipeline` (and its stages) with the pass registry.
void registerCPUPipelines();

} // namespace mlir::tc

#endif // TC_TARGET_CPU_PIPELINE_H
