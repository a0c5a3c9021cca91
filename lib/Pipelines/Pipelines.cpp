//===- Pipelines.cpp - every target's pipeline, by stage --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "tc/Target/CPU/Pipeline.h"

using namespace mlir;
using namespace mlir::tc;

StringRef tc::getStageName(Target target, Stage stage) {
  bool cpu = target == Target::CPU;
  switch (stage) {
  case Stage::Prim:
    return "prim";
  case Stage::Kernel:
    return "kernel";
  case Stage::Lowered:
    return cpu ? "loops" : "gpu";
  case Stage::Binary:
    return cpu ? "llvm" : "schedule";
  }
  llvm_unreachable("unknown stage");
}

StringRef tc::getTargetName(Target target) {
  switch (target) {
  case Target::CPU:
    return "CPU";
  case Target::CUDA:
    return "CUDA";
  case Target::ROCm:
    return "ROCm";
  }
  llvm_unreachable("unknown target");
}

namespace {
/// Where each stage of a pipeline built from `from` to `upTo` goes: the
/// stages in range into the pipeline; with a `bisect-limit` (`counting`),
/// those before `from` into a pass manager that never runs.
/// `bisect-limit` counts optional passes from the pipeline's first stage,
/// so a runtime that builds the stages one at a time skips the same passes
/// as one pipeline would: the stages before `from` are built to be
/// counted, not run.
struct StageSink {
  /// The stages `from` to `upTo` of a pipeline of `options` (its
  /// `start-stage` moves `from` on).
  template <typename Options>
  StageSink(OpPassManager &pm, const Options &options, Stage from,
            Stage upTo)
      : pm(pm), from(std::max(from, options.startStage.getValue())),
        upTo(upTo), counting(options.bisectLimit >= 0) {}

  OpPassManager &pm;
  Stage from, upTo;
  bool counting;
  OpPassManager counted;

  /// The pass manager stage `stage` is built into; null for none.
  OpPassManager *operator()(Stage stage) {
    if (stage > upTo || (stage < from && !counting))
      return nullptr;
    return stage < from ? &counted : &pm;
  }
};
} // namespace

/// `fuse` with the debugging options of `options`: a planted wrong
/// rewrite (tests), one kernel per op (bisection's reference path).
template <typename Options>
static FuseOptions withTestOptions(FuseOptions fuse, const Options &options) {
  fuse.miscompileSplitsForTesting =
      options.miscompilePassForTesting == "tc-split-reductions";
  fuse.miscompileFuseForTesting =
      options.miscompilePassForTesting == "tc-fuse";
  fuse.fuseNothing = options.fuseNothing;
  return fuse;
}

void tc::buildPipeline(OpPassManager &pm, Target target,
                       const DecomposeOptions &options, Stage upTo,
                       Stage from) {
  assert(target == Target::CPU && "the CPU's options build the CPU pipeline");
  (void)target;
  OptionalPasses optional(options.bisectLimit);
  StageSink sink(pm, options, from, upTo);
  if (OpPassManager *stage = sink(Stage::Prim))
    buildDecomposePipeline(*stage, options.decomposeStage(), optional);
  if (OpPassManager *stage = sink(Stage::Kernel))
    buildFusePipeline(*stage,
                      withTestOptions(FuseOptions::cpu(options), options),
                      optional);
  if (OpPassManager *stage = sink(Stage::Lowered))
    buildCPULoopsPipeline(
        *stage, optional,
        options.miscompilePassForTesting == "tc-lower-kernel-to-cpu",
        options.miscompilePassForTesting == "llvm-translation");
  if (OpPassManager *stage = sink(Stage::Binary))
    buildCPULLVMPipeline(*stage);
}

void tc::buildPipeline(OpPassManager &pm, Target target,
                       const GPUPipelineOptions &options, Stage upTo,
                       Stage from) {
  assert(target != Target::CPU && "GPU options build a GPU pipeline");
  bool cuda = target == Target::CUDA;
  OptionalPasses optional(options.bisectLimit);
  StageSink sink(pm, options, from, upTo);
  if (OpPassManager *stage = sink(Stage::Prim))
    buildDecomposePipeline(*stage, options.decomposeStage(), optional);
  // cuBLAS and cuDNN take half precision; cuDNN's fast kernels are
  // channels-last.
  if (OpPassManager *stage = sink(Stage::Kernel)) {
    FuseOptions fuse = withTestOptions(
        FuseOptions::gpu(/*halfGemms=*/cuda,
                         cuda ? options.channelsLast : ChannelsLastMode::Off),
        options);
    fuse.skinnyProductRows = options.skinnyRows;
    buildFusePipeline(*stage, fuse, optional);
  }
  if (OpPassManager *stage = sink(Stage::Lowered))
    buildGPUKernelsPipeline(*stage, options, optional);
  if (OpPassManager *stage = sink(Stage::Binary)) {
    if (cuda)
      buildCUDABinaryPipeline(*stage, options);
    else
      buildROCmBinaryPipeline(*stage, options);
  }
}

/// Registers `name`, stages `from` to `upTo` of `target`'s pipeline, with
/// `Options` as its options.
template <typename Options>
static void registerStages(StringRef name, StringRef description,
                           Target target, Stage from, Stage upTo) {
  PassPipelineRegistration<Options>(
      name, description,
      [target, from, upTo](OpPassManager &pm, const Options &options) {
        buildPipeline(pm, target, options, upTo, from);
      });
}

void tc::registerPipelines() {
  // The CPU.
  registerStages<DecomposeOptions>(
      "tc-cpu-pipeline",
      "The whole CPU pipeline the Python backend runs: fx graph to LLVM "
      "dialect kernels and a kernel.schedule host program",
      Target::CPU, Stage::Prim, Stage::Binary);
  registerStages<DecomposeOptions>(
      "tc-decompose-pipeline", "Stage 1 of every pipeline: fx to prim",
      Target::CPU, Stage::Prim, Stage::Prim);
  registerStages<DecomposeOptions>(
      "tc-fuse-pipeline",
      "Stage 2 of tc-cpu-pipeline: prim to kernels and a planned schedule",
      Target::CPU, Stage::Kernel, Stage::Kernel);
  registerStages<DecomposeOptions>(
      "tc-cpu-loops-pipeline", "Stage 3 of tc-cpu-pipeline: kernels to loops",
      Target::CPU, Stage::Lowered, Stage::Lowered);
  registerStages<DecomposeOptions>(
      "tc-cpu-llvm-pipeline", "Stage 4 of tc-cpu-pipeline: loops to LLVM",
      Target::CPU, Stage::Binary, Stage::Binary);
  PassPipelineRegistration<DecomposeOptions>(
      "tc-split-training-pipeline",
      "What the backend runs on a training graph first: fx to prim, the "
      "joint graph (tc-autodiff), split into forward and backward "
      "functions (tc-partition)",
      buildTrainingSplitPipeline);

  // The GPUs.
  registerStages<GPUPipelineOptions>(
      "tc-cuda-pipeline",
      "The whole CUDA pipeline the Python backend runs: fx graph to one "
      "gpu.binary of kernels and a kernel.schedule host program",
      Target::CUDA, Stage::Prim, Stage::Binary);
  registerStages<GPUPipelineOptions>(
      "tc-rocm-pipeline",
      "The whole ROCm pipeline: fx graph to one gpu.binary (hsaco) of "
      "kernels and a kernel.schedule host program",
      Target::ROCm, Stage::Prim, Stage::Binary);
  registerStages<GPUPipelineOptions>(
      "tc-cuda-fuse-pipeline",
      "Stage 2 of tc-cuda-pipeline: prim to kernels and a planned schedule, "
      "with CUDA's choices (half-precision GEMMs, recomputed rows)",
      Target::CUDA, Stage::Kernel, Stage::Kernel);
  registerStages<GPUPipelineOptions>(
      "tc-gpu-kernels-pipeline",
      "Stage 3 of tc-cuda-pipeline/tc-rocm-pipeline: kernels to gpu.func",
      Target::CUDA, Stage::Lowered, Stage::Lowered);
  registerStages<GPUPipelineOptions>(
      "tc-cuda-binary-pipeline",
      "Stage 4 of tc-cuda-pipeline: gpu.module to NVVM to PTX/cubin",
      Target::CUDA, Stage::Binary, Stage::Binary);
  registerStages<GPUPipelineOptions>(
      "tc-rocm-binary-pipeline",
      "Stage 4 of tc-rocm-pipeline: gpu.module to ROCDL to hsaco",
      Target::ROCm, Stage::Binary, Stage::Binary);
}
