//===- Pipeline.h - the CPU lowering ----------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The CPU's stages after fusion: kernels to loop nests, loop nests to LLVM
// dialect. tc/Pipelines/Pipelines.h runs them after the common phases.
//
//===----------------------------------------------------------------------===//

#ifndef TC_TARGET_CPU_PIPELINE_H
#define TC_TARGET_CPU_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "tc/Pipelines/Phases.h"

namespace mlir::tc {

/// kernel -> scf loop nests the CPU runtime calls, their cleanups
/// (canonicalization, CSE, hoisting) through `optional`
/// (`miscompileForTesting`: tc-lower-kernel-to-cpu's planted wrong rewrite;
/// `untranslatableForTesting`: its planted translation failure; tests
/// only).
void buildCPULoopsPipeline(OpPassManager &pm, OptionalPasses &optional,
                           bool miscompileForTesting = false,
                           bool untranslatableForTesting = false);

/// loop nests -> LLVM dialect (the kernel.schedule host program stays).
void buildCPULLVMPipeline(OpPassManager &pm);

} // namespace mlir::tc

#endif // TC_TARGET_CPU_PIPELINE_H
