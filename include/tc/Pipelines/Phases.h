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

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::tc {

/// The stages of a target's pipeline, in order (see Pipelines.h).
enum class Stage { Prim, Kernel, Lowered, Binary };
constexpr Stage kAllStages[] = {Stage::Prim, Stage::Kernel, Stage::Lowered,
                                Stage::Binary};

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

/// The optional passes of every stage: those whose absence changes no
/// result, only the code's speed (canonicalization, CSE, the channels-last
/// layout, reassociated reductions, moved index checks, split reductions,
/// deduplicated kernels; the lowerings' cleanups: canonicalization, CSE,
/// hoisting, 32-bit index division). A pipeline's
/// `bisect-limit=N` runs only the first N of them, in pipeline order, as
/// LLVM's -opt-bisect-limit does: tc.debug.bisect searches N for the first
/// one after which the numbers change. A negative limit runs them all.
class OptionalPasses {
public:
  explicit OptionalPasses(int64_t limit = -1) : limit(limit) {}

  /// Whether the next optional pass runs.
  bool admit() { return limit < 0 || seen++ < limit; }

  /// Adds `pass` to `pm` when it runs.
  void add(OpPassManager &pm, std::unique_ptr<Pass> pass) {
    if (admit())
      pm.addPass(std::move(pass));
  }
  template <typename OpT>
  void addNested(OpPassManager &pm, std::unique_ptr<Pass> pass) {
    if (admit())
      pm.addNestedPass<OpT>(std::move(pass));
  }

private:
  int64_t limit;
  int64_t seen = 0;
};

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
  ::mlir::detail::PassOptions::Option<int64_t> skinnyRows{
      *this, "skinny-rows",
      llvm::cl::desc("Matrix products of at most this many rows by an "
                     "[N, K] weight run as tc's row reductions, not GEMM "
                     "library calls (tc-skinny-products; 0: none)"),
      llvm::cl::init(Derived::kSkinnyRowsDefault)};
  ::mlir::detail::PassOptions::Option<std::string> miscompileForTesting{
      *this, "miscompile-for-testing",
      llvm::cl::desc("Tests only: tc-decompose adds 1 to every float result "
                     "of this ATen op (a planted wrong rewrite for "
                     "tc.debug's tests)"),
      llvm::cl::init("")};
  ::mlir::detail::PassOptions::Option<bool> checks{
      *this, "checks",
      llvm::cl::desc("Debugging (TC_CPU_CHECKS=1, TC_CUDA_CHECKS=1): every "
                     "kernel checks the bounds of its buffer accesses and "
                     "that it writes no NaN (on GPUs also its buffers' "
                     "alignment); a violation is recorded and "
                     "skipped, and the runtime raises after the run "
                     "naming the kernel, the argument and the element"),
      llvm::cl::init(false)};
  ::mlir::detail::PassOptions::Option<std::string> miscompilePassForTesting{
      *this, "miscompile-pass-for-testing",
      llvm::cl::desc("Tests only: this pass plants a wrong rewrite "
                     "(tc-split-reductions: a split reduction leaves out "
                     "its last chunk; tc-fuse and tc-lower-kernel-to-cpu: "
                     "every float a kernel stores gets 1 added; all for "
                     "tc.debug.bisect's tests; "
                     "tc-add-kernel-checks (CPU) and tc-lower-kernel-to-gpu: "
                     "each kernel's first load of a buffer reads past its "
                     "end, for the checks' tests; llvm-translation (CPU): "
                     "f64 erf is left as math.erf, which LLVM's translation "
                     "refuses, for the reproducers' tests)"),
      llvm::cl::init("")};
  ::mlir::detail::PassOptions::Option<int64_t> bisectLimit{
      *this, "bisect-limit",
      llvm::cl::desc("Run only the first N optional passes of the "
                     "decomposition and fusion stages (canonicalization, "
                     "CSE, layout, split reductions, ...; "
                     "tc.debug.bisect); negative runs all"),
      llvm::cl::init(-1)};
  ::mlir::detail::PassOptions::Option<bool> fuseNothing{
      *this, "fuse-nothing",
      llvm::cl::desc("tc-fuse realizes every value, one kernel per op "
                     "(tc.debug.bisect's reference path: a result that "
                     "does not depend on fusion)"),
      llvm::cl::init(false)};
  ::mlir::detail::PassOptions::Option<Stage> startStage{
      *this, "start-stage",
      llvm::cl::desc("The first stage to run: the input is at the level "
                     "the stages before it leave (tc.debug.bisect compiles "
                     "a later stage's IR through the rest)"),
      llvm::cl::init(Stage::Prim),
      llvm::cl::values(
          clEnumValN(Stage::Prim, "prim", "from fx (every stage)"),
          clEnumValN(Stage::Kernel, "kernel", "from prim"),
          clEnumValN(Stage::Lowered, "lowered", "from planned kernels"),
          clEnumValN(Stage::Binary, "binary",
                     "from loop nests or GPU kernels"))};
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
  /// A one-row product by a bf16 weight is 5x faster as tc's kernel than
  /// as a widened BLAS call on two cores (1.3x in f32).
  static constexpr int64_t kSkinnyRowsDefault = 1;

  PassOptions::Option<bool> halfConvolutions{
      *this, "half-convolutions",
      llvm::cl::desc("f16/bf16 library convolutions run in their type, not "
                     "widened to f32 (tc-widen-half-products "
                     "convolutions=false): the CPU's library (PyTorch's "
                     "oneDNN kernels) computes them itself; the reference "
                     "convolution takes f32 and f64 only"),
      llvm::cl::init(false)};
};

/// fx -> prim: decomposition and simplification, its optional passes
/// through `optional`.
void buildDecomposePipeline(OpPassManager &pm, const DecomposeStage &stage,
                            OptionalPasses &optional);
inline void buildDecomposePipeline(OpPassManager &pm,
                                   const DecomposeStage &stage) {
  OptionalPasses all;
  buildDecomposePipeline(pm, stage, all);
}

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
  /// takes any strides, but converts such a weight inside every call, in
  /// more time than tc's copy kernel: ResNet-50 on two cores 0.94-0.97x ->
  /// 0.98-1.02x Inductor's; cuDNN wants its filter in the tensors' layout).
  bool weightsChannelsFirst = false;
  /// tc-fuse's unit-weights-channels-first: those of a 1x1 window only,
  /// whose two layouts are one (the CPU's choice: no copy).
  bool unitWeightsChannelsFirst = true;
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
  /// tc-fuse-index-checks' early-flags: a check stays in its own kernel
  /// where taking it over would set its flag after a library call (CUDA,
  /// whose runtime reads flags back while the graph runs).
  bool earlyFlags = false;
  /// Convolutions of 1x1 maps by 1x1 kernels are matrix products
  /// (tc-expand-convolutions unit-maps-only: the CPU's, whose library
  /// call costs more than such a product).
  bool unitMapProducts = false;
  /// Which 2-d convolutions run channels-last.
  ChannelsLastMode channelsLast = ChannelsLastMode::Off;
  /// Except f32/f64 ones with small output maps (the CPU's: oneDNN's
  /// channels-first kernels are faster there; tc-channels-last-convolutions'
  /// small-maps-first).
  bool channelsFirstSmallMaps = false;
  /// Pointwise launches write over the input they read last
  /// (tc-in-place-launches: the CPU's; GPU kernels take their buffers as
  /// non-overlapping, and tc-plan-memory's arena placement does as much
  /// there).
  bool inPlaceLaunches = false;
  /// tc-fuse's split-concatenations (the CPU's choice: each part's loop
  /// vectorizes; GPUs' kernels over points flatten one loop only).
  bool splitConcatenations = false;
  /// tc-fuse's loop-past-unit-dims (the CPU's: the inner loop vectorizes;
  /// GPUs map the domain's points to threads).
  bool loopPastUnitDims = false;
  /// tc-fuse's alias-input-reshapes (every target's: XLNet's projection
  /// weights, [1024, 16, 64] read as [1024, 1024], were copied 96 times a
  /// CPU step; a training backward copied its saved [B, S, H] activations
  /// to [B * S, H] rows for each GEMM on GPUs).
  bool aliasInputReshapes = false;
  /// Products of at most this many rows by an [N, K] weight are tc's row
  /// reductions, not GEMM library calls (tc-skinny-products; 0: none). A
  /// GPU's: one row of a decode step streams its weight faster in tc's
  /// kernel, with its epilogue fused, than in cuBLAS's small GEMMs.
  int64_t skinnyProductRows = 0;
  /// tc-fuse realizes every value (the reference path of bisection).
  bool fuseNothing = false;
  /// Tests only: tc-fuse plants a wrong rewrite.
  bool miscompileFuseForTesting = false;
  /// Tests only: tc-split-reductions plants a wrong rewrite.
  bool miscompileSplitsForTesting = false;
  /// Kernels check their accesses (tc-add-kernel-checks: the CPU's; GPUs
  /// check in their lowering), planting an out-of-bounds load first for a
  /// test.
  bool kernelChecks = false;
  bool plantOutOfBoundsForTesting = false;

  /// The CPU pipeline's, given its options.
  static FuseOptions cpu(const DecomposeOptions &decompose) {
    FuseOptions options;
    options.channelsLast = decompose.channelsLast;
    options.channelsFirstSmallMaps = true;
    options.unitMapProducts = true;
    options.inPlaceLaunches = true;
    options.splitConcatenations = true;
    options.loopPastUnitDims = true;
    options.aliasInputReshapes = true;
    options.widenHalfConvolutions = !decompose.halfConvolutions;
    options.kernelChecks = decompose.checks;
    options.skinnyProductRows = decompose.skinnyRows;
    options.plantOutOfBoundsForTesting =
        decompose.miscompilePassForTesting == "tc-add-kernel-checks";
    return options;
  }

  /// A GPU's: `halfGemms` where its GEMM library takes f16/bf16 and its
  /// runtime reads flags early (CUDA), `channelsLast` for its convolution
  /// library (cuDNN's fast kernels).
  static FuseOptions
  gpu(bool halfGemms, ChannelsLastMode channelsLast = ChannelsLastMode::Off) {
    FuseOptions options;
    options.cacheRows = false;
    options.unitWeightsChannelsFirst = false;
    options.realizeBroadcastSources = false;
    options.splitMinParallelism = 32768;
    options.splitMaxSplits = 256;
    options.splitMinLength = 1024;
    // Column reductions: a thread per column and chunk reads one element
    // per step; 8x the chunks keep 8x the loads in flight.
    options.splitColumnFactor = 8;
    options.widenHalfProducts = !halfGemms;
    options.alignHalfProducts = halfGemms;
    options.earlyFlags = halfGemms;
    options.channelsLast = channelsLast;
    options.aliasInputReshapes = true;
    return options;
  }
};

/// prim -> kernel: fusion and memory planning, its optional passes through
/// `optional`.
void buildFusePipeline(OpPassManager &pm, const FuseOptions &options,
                       OptionalPasses &optional);
inline void buildFusePipeline(OpPassManager &pm,
                              const FuseOptions &options = {}) {
  OptionalPasses all;
  buildFusePipeline(pm, options, all);
}

} // namespace mlir::tc

#endif // TC_PIPELINES_PHASES_H
