//===- Pipelines.h - every target's pipeline, by stage ----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// One builder for every target's pipeline, stage by stage: the runtimes run
// the stages one at a time (to time them and keep their IR for the logs)
// and `tc-opt --tc-<target>-pipeline` runs them all, through the same
// `buildPipeline`:
//
//   stage    CPU                         CUDA / ROCm
//   Prim     fx -> prim (Phases.h)       the same
//   Kernel   prim -> kernel, planned     the same, with the GPU's choices
//   Lowered  kernel -> scf loop nests    kernel -> gpu.func kernels
//   Binary   loops -> LLVM dialect       gpu.module -> cubin/PTX or hsaco
//
//===----------------------------------------------------------------------===//

#ifndef TC_PIPELINES_PIPELINES_H
#define TC_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "tc/Pipelines/Phases.h"
#include "tc/Target/GPU/Pipeline.h"

namespace mlir::tc {

/// What tc compiles for.
enum class Target { CPU, CUDA, ROCm };

/// The name a stage goes by in the logs and in a compile's stage IR and
/// times: "prim", "kernel", then "loops" and "llvm" on the CPU, "gpu" and
/// "schedule" on GPUs.
StringRef getStageName(Target target, Stage stage);

/// "CPU", "CUDA" or "ROCm".
StringRef getTargetName(Target target);

/// Adds the stages `from` to `upTo` of the CPU pipeline (`target` is
/// Target::CPU).
void buildPipeline(OpPassManager &pm, Target target,
                   const DecomposeOptions &options, Stage upTo = Stage::Binary,
                   Stage from = Stage::Prim);

/// Adds the stages `from` to `upTo` of a GPU target's pipeline (`target` is
/// Target::CUDA or Target::ROCm).
void buildPipeline(OpPassManager &pm, Target target,
                   const GPUPipelineOptions &options,
                   Stage upTo = Stage::Binary, Stage from = Stage::Prim);

/// Registers every pipeline and stage with the pass registry (tc-opt's
/// `--tc-cpu-pipeline`, `--tc-cuda-pipeline`, ..., each with its options).
void registerPipelines();

} // namespace mlir::tc

#endif // TC_PIPELINES_PIPELINES_H
