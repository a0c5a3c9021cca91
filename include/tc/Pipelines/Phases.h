//===- Phases.h - tc's target-independent phases ----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The phases every target runs before its own lowering: decomposition (fx
// to prim), the training split (tc-autodiff and tc-partition) and fusion
// with memory planning (prim to kernel). Pipelines.h strings them together
// with each target's lowering.
//
//===----------------------------------------------------------------------===//

#ifndef TC_PIPELINES_PHASES_H
#define TC_PIPELINES_PHASES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::tc {

/// Which convolutions run channels-last (tc-channels-last-convolutions):
/// none, the f16/bf16 ones (what CUDA runs: cuDNN's fast kernels are
/// channels-last), or all float ones (the CPU's reference convolutions
/// test the path with f32).
enum class ChannelsLastMode { Off, Half, All };

inline auto channelsLastValues() {
  return llvm::cl::values(
      clEnumValN(ChannelsLastMode::Off, "off", "channels-first throughout"),
      clEnumValN(ChannelsLastMode::Half, "half", "f16 and bf16 ones"),
      clEnumValN(ChannelsLastMode::All, "all", "every float type"));
}

/// What the decomposition stage (tc-decompose and what follows it before
/// fusion) is told, whatever the pipeline.
struct DecomposeStage {
  bool expandConvolutions = true;
  std::string miscompileForTesting;
  std::string crashForTesting;
};

/// The options of every pipeline that starts with the decomposition
/// stage, declared once (tc-cpu-pipeline's DecomposeOptions and the GPU
/// pipelines' GPUPipelineOptions add their own): the decomposition's and
/// the convolutions' layout. `Derived::kChannelsLastDefault` is the
/// target's layout.
template <typename Derived>
struct StageOptions : public PassPipelineOptions<Derived> {
  ::mlir::detail::PassOptions::Option<bool> expandConvolutions{
      *this, "expand-convolutions",
      llvm::cl::desc("Expand convolutions into matrix products "
                     "(tc-expand-convolutions) before differentiation; "
                     "false keeps them, and their gradients, for the "
                     "target's library convolution (oneDNN through "
                     "PyTorch, cuDNN)"),
      llvm::cl::init(true)};
  ::mlir::detail::PassOptions::Option<ChannelsLastMode> channelsLast{
      *this, "channels-last",
      llvm::cl::desc("Which 2-d library convolutions run channels-last, "
                     "with the ops between them "
                     "(tc-channels-last-convolutions; CUDA's default: the "
                     "half-precision ones, cuDNN's fast layout); before "
                     "tc-partition in training, so that the forward saves "
                     "channels-last activations"),
      llvm::cl::init(Derived::kChannelsLastDefault), channelsLastValues()};
  ::mlir::detail::PassOptions::Option<std::string> miscompileForTesting{
      *this, "miscompile-for-testing",
      llvm::cl::desc("Tests only: tc-decompose adds 1 to every float result "
                     "of this ATen op (a planted wrong rewrite for "
                     "tc.debug's tests)"),
      llvm::cl::init("")};
  ::mlir::detail::PassOptions::Option<std::string> crashForTesting{
      *this, "crash-for-testing",
      llvm::cl::desc("Tests only: tc-decompose stops with a fatal error (a "
                     "compiler crash, which the runtimes contain) on "
                     "meeting this ATen op"),
      llvm::cl::init("")};

  /// These options as the decomposition stage takes them.
  DecomposeStage decomposeStage() const {
    return {expandConvolutions, miscompileForTesting, crashForTesting};
  }
};

/// The options of the CPU's pipelines (tc-cpu-pipeline and its stages,
/// tc-split-training-pipeline).
struct DecomposeOptions : public StageOptions<DecomposeOptions> {
  /// Off for tc-opt; the backend runs every float convolution
  /// channels-last (tc.compiler.build).
  static constexpr ChannelsLastMode kChannelsLastDefault =
      ChannelsLastMode::Off;

  PassOptions::Option<bool> halfConvolutions{
      *this, "half-convolutions",
      llvm::cl::desc("f16/bf16 library convolutions run in their type, not "
                     "widened to f32 (tc-widen-half-products "
                     "convolutions=false): the CPU's library (PyTorch's "
                     "oneDNN kernels) computes them itself; the reference "
                     "convolution takes f32 and f64 only"),
      llvm::cl::init(false)};
};

/// fx -> prim: decomposition and simplification.
void buildDecomposePipeline(OpPassManager &pm, const DecomposeStage &stage);

/// Training: fx -> prim, then the joint graph `tc-autodiff` makes split by
/// `tc-partition` into `<graph>_forward` and `<graph>_backward`, each of
/// which then compiles like any prim function.
void buildTrainingSplitPipeline(OpPassManager &pm,
                                const DecomposeOptions &options);

/// How the fusion stage differs between targets.
struct FuseOptions {
  /// tc-fuse's cache-rows (the CPU's choice; GPUs recompute).
  bool cacheRows = true;
  /// tc-fuse's weights-channels-first: channels-last library convolutions
  /// read graph-input weights in PyTorch's layout (the CPU's library call
  /// takes any strides; cuDNN wants its filter in the tensors' layout).
  bool weightsChannelsFirst = true;
  /// tc-fuse's realize-broadcast-sources (the CPU's choice: GPUs recompute
  /// a per-channel scale at no cost and save the launch).
  bool realizeBroadcastSources = true;
  /// Run tc-split-reductions before memory planning, with these options.
  /// The CPU's: a full reduction of at least 64K elements (a sum, the
  /// host check of a gather's indices) splits into up to 64 chunks, one per
  /// thread or more, where it ran on one core.
  bool splitReductions = true;
  int64_t splitMinParallelism = 2048;
  int64_t splitMaxSplits = 64;
  int64_t splitMinLength = int64_t(1) << 16;
  int64_t splitColumnFactor = 1;
  /// Widen f16/bf16 products to f32 GEMMs (tc-widen-half-products): the
  /// targets whose GEMM library takes f32 and f64 only. CUDA's cuBLAS runs
  /// half-precision GEMMs itself, on the tensor cores.
  bool widenHalfProducts = true;
  /// With widenHalfProducts, widen f16/bf16 convolutions too (false: the
  /// convolution library computes them in their type).
  bool widenHalfConvolutions = true;
  /// Pad large half-precision products to 16-byte leading dimensions
  /// (tc-align-half-products): the targets whose GEMM library runs them
  /// fast only so aligned (cuBLAS).
  bool alignHalfProducts = false;
  /// Which 2-d convolutions run channels-last.
  ChannelsLastMode channelsLast = ChannelsLastMode::Off;

  /// The CPU pipeline's, given its options.
  static FuseOptions cpu(const DecomposeOptions &decompose) {
    FuseOptions options;
    options.channelsLast = decompose.channelsLast;
    options.widenHalfConvolutions = !decompose.halfConvolutions;
    return options;
  }

  /// A GPU's: `halfGemms` where its GEMM library takes f16/bf16 (CUDA),
  /// `channelsLast` for its convolution library (cuDNN's fast kernels).
  static FuseOptions
  gpu(bool halfGemms, ChannelsLastMode channelsLast = ChannelsLastMode::Off) {
    FuseOptions options;
    options.cacheRows = false;
    options.weightsChannelsFirst = false;
    options.realizeBroadcastSources = false;
    options.splitMinParallelism = 32768;
    options.splitMaxSplits = 256;
    options.splitMinLength = 1024;
    // Column reductions: a thread per column and chunk reads one element
    // per step; 8x the chunks keep 8x the loads in flight.
    options.splitColumnFactor = 8;
    options.widenHalfProducts = !halfGemms;
    options.alignHalfProducts = halfGemms;
    options.channelsLast = channelsLast;
    return options;
  }
};

/// prim -> kernel: fusion and memory planning.
void buildFusePipeline(OpPassManager &pm, const FuseOptions &options = {});

} // namespace mlir::tc

#endif // TC_PIPELINES_PHASES_H
