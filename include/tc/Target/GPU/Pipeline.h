//===- Pipeline.h - the CUDA and ROCm compilation pipelines -----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The GPU targets' stages after fusion, to one GPU binary holding all of
// a graph's kernels (a `gpu.binary`) and a `kernel.schedule` host program
// whose launches carry grid and block sizes (tc/Pipelines/Pipelines.h runs
// them after the common phases):
//
//   kernel --tc-lower-kernel-to-gpu--> gpu.func kernels (tc-gpu-kernels-pipeline)
//          --convert-gpu-to-nvvm/rocdl, tc-gpu-module-to-binary--> cubin/PTX or hsaco
//
//===----------------------------------------------------------------------===//

#ifndef TC_TARGET_GPU_PIPELINE_H
#define TC_TARGET_GPU_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "tc/Pipelines/Phases.h"

namespace mlir::tc {

/// The GPU pipelines' options: the stages' common ones (StageOptions:
/// expand-convolutions, channels-last, the test options) and the GPU's.
struct GPUPipelineOptions : public StageOptions<GPUPipelineOptions> {
  /// cuDNN's fast kernels for half precision are channels-last (ROCm runs
  /// every convolution channels-first whatever this says).
  static constexpr ChannelsLastMode kChannelsLastDefault =
      ChannelsLastMode::Half;
  /// A decode step's one-row products stream their weights faster as tc's
  /// kernels than as cuBLAS's small GEMMs (tc-skinny-products).
  static constexpr int64_t kSkinnyRowsDefault = 1;

  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target GPU (sm_90, sm_80, gfx942, gfx90a); empty for "
                     "the target's default")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What tc-gpu-module-to-binary emits: bin (cubin/hsaco), "
                     "isa (PTX/AMDGPU assembly), llvm, fatbin"),
      llvm::cl::init("bin")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit (for ptxas) or ROCm root (amdgcn/bitcode, "
                     "llvm/bin/ld.lld); empty for the configured default")};
  PassOptions::ListOption<std::string> link{
      *this, "link",
      llvm::cl::desc("Bitcode libraries to link (libdevice.10.bc for CUDA); "
                     "empty for the configured default")};
  PassOptions::Option<unsigned> shards{
      *this, "shards",
      llvm::cl::desc("The most objects the kernels are serialized into, "
                     "each compiled on a thread of its own "
                     "(tc-gpu-module-to-binary)"),
      llvm::cl::init(16)};
  PassOptions::Option<int64_t> maxBlockSize{
      *this, "max-block-size",
      llvm::cl::desc("Largest thread block of a row-per-block kernel"),
      llvm::cl::init(1024)};
  PassOptions::Option<int64_t> maxReductionBlockSize{
      *this, "max-reduction-block-size",
      llvm::cl::desc("Largest thread block of a row-per-block kernel that "
                     "reduces"),
      llvm::cl::init(512)};
  PassOptions::Option<int64_t> minRowBlocks{
      *this, "min-row-blocks",
      llvm::cl::desc("Pointwise kernels with fewer rows than this run a "
                     "thread per point whatever the rows' length"),
      llvm::cl::init(128)};
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("Consecutive elements a GPU thread handles together"),
      llvm::cl::init(4)};
  PassOptions::Option<int64_t> threadUnroll{
      *this, "thread-unroll",
      llvm::cl::desc("Unroll factor of the reductions a GPU thread runs "
                     "alone (1: none)"),
      llvm::cl::init(4)};
  PassOptions::Option<bool> streamRows{
      *this, "stream-rows",
      llvm::cl::desc("Rows that reductions read once (a matrix-vector "
                     "product's) run a warp per row (false: a block per "
                     "row)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> streamUnroll{
      *this, "stream-unroll",
      llvm::cl::desc("Groups a lane of a warp-per-row kernel loads before "
                     "combining them"),
      llvm::cl::init(4)};
  PassOptions::Option<bool> replicateTrig{
      *this, "replicate-trig",
      llvm::cl::desc("Let vectorization and unrolling copy bodies that hold "
                     "trigonometry"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> allowTF32{
      *this, "allow-tf32",
      llvm::cl::desc("Let f32 library convolutions use TF32 tensor cores, "
                     "as torch.backends.cudnn.allow_tf32 does for PyTorch's"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> fitWorkspaces{
      *this, "fit-workspaces",
      llvm::cl::desc("Library convolutions take the best algorithm whose "
                     "workspace fits in the arena the buffers need; false: "
                     "the best algorithm, the arena grows to hold its "
                     "workspace"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> preciseDiv{
      *this, "precise-div",
      llvm::cl::desc("CUDA: keep IEEE f32 division (div.rn.f32) instead of "
                     "tc-nvvm-div-full's div.full.f32"),
      llvm::cl::init(false)};
};

/// kernel -> gpu.func kernels in one gpu.module, launches configured; its
/// cleanups (canonicalization, CSE, hoisting, 32-bit index division)
/// through `optional`.
void buildGPUKernelsPipeline(OpPassManager &pm,
                             const GPUPipelineOptions &options,
                             OptionalPasses &optional);

/// gpu.module -> NVVM -> PTX/cubin, as a gpu.binary.
void buildCUDABinaryPipeline(OpPassManager &pm,
                             const GPUPipelineOptions &options);

/// gpu.module -> ROCDL -> hsaco, as a gpu.binary.
void buildROCmBinaryPipeline(OpPassManager &pm,
                             const GPUPipelineOptions &options);

} // namespace mlir::tc

#endif // TC_TARGET_GPU_PIPELINE_H
