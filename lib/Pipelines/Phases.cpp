//===- Phases.cpp - tc's target-independent phases --------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Pipelines/Phases.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"
#include "tc/Conversion/Passes.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/Dialect/Kernel/Transforms/Passes.h"
#include "tc/Dialect/Prim/Transforms/Passes.h"

using namespace mlir;

/// tc-channels-last-convolutions in `mode` (nothing when off).
static void addChannelsLastPasses(OpPassManager &pm,
                                  tc::ChannelsLastMode mode,
                                  bool smallMapsFirst,
                                  tc::OptionalPasses &optional) {
  if (mode == tc::ChannelsLastMode::Off)
    return;
  tc::prim::ChannelsLastConvolutionsPassOptions layout;
  layout.allFloats = mode == tc::ChannelsLastMode::All;
  layout.smallMapsFirst = smallMapsFirst;
  optional.addNested<func::FuncOp>(
      pm, tc::prim::createChannelsLastConvolutionsPass(layout));
  // One permute of a tensor that several convolutions (or a convolution
  // and its gradient) read.
  optional.addNested<func::FuncOp>(pm, createCSEPass());
}

void mlir::tc::buildDecomposePipeline(OpPassManager &pm,
                                      const DecomposeStage &stage,
                                      OptionalPasses &optional) {
  // ATen ops to prims, broadcasting and promotion made explicit.
  tc::ConvertFXToPrimPassOptions decompose;
  decompose.miscompileForTesting = stage.miscompileForTesting;
  decompose.crashForTesting = stage.crashForTesting;
  pm.addPass(tc::createConvertFXToPrimPass(decompose));
  // Without a library convolution, convolutions are matrix products of
  // windows, differentiated as such.
  if (stage.expandConvolutions)
    pm.addNestedPass<func::FuncOp>(tc::prim::createExpandConvolutionsPass());
  // Training: the joint forward + backward graph of functions with
  // arguments marked tc.requires_grad (nothing to do otherwise).
  pm.addPass(tc::prim::createAutodiffPass());
  // Fold the identities decomposition and differentiation leave (x * 1,
  // reshape to the same type, ...) and share common subexpressions; then
  // once more, for the patterns sharing exposes (a gradient accumulated
  // from two equal products, x + x, whose sum FactorOutOfSum takes apart).
  optional.add(pm, createCanonicalizerPass());
  optional.add(pm, createCSEPass());
  optional.add(pm, createCanonicalizerPass());
  optional.add(pm, createCSEPass());
}

void mlir::tc::buildTrainingSplitPipeline(OpPassManager &pm,
                                          const DecomposeOptions &options) {
  OptionalPasses all;
  buildDecomposePipeline(pm, options.decomposeStage(), all);
  // The layout first: the forward then saves channels-last activations for
  // the backward, which reads them so.
  // (A graph with gradients keeps every convolution channels-last.)
  addChannelsLastPasses(pm, options.channelsLast, /*smallMapsFirst=*/false,
                        all);
  // Save or recompute each forward value the backward reads, by a min-cut.
  pm.addPass(tc::prim::createPartitionPass());
  // The backward's copies of forward ops read only what was saved: what
  // they shared with the forward is shared again.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::tc::buildFusePipeline(OpPassManager &pm,
                                 const FuseOptions &options,
                                 OptionalPasses &optional) {
  if (options.unitMapProducts) {
    tc::prim::ExpandConvolutionsPassOptions unitMaps;
    unitMaps.unitMapsOnly = true;
    optional.addNested<func::FuncOp>(
        pm, tc::prim::createExpandConvolutionsPass(unitMaps));
  }
  // Library convolutions in the layout the library runs fastest, and the
  // elementwise ops, reductions and pooling between them with them.
  addChannelsLastPasses(pm, options.channelsLast,
                        options.channelsFirstSmallMaps, optional);
  // Strided reductions (batch norm's over N, H, W) as rows, then the rest.
  optional.addNested<func::FuncOp>(
      pm, tc::prim::createReassociateReductionsPass());
  // An einsum's merged contracted dimensions in its weight's memory order.
  optional.addNested<func::FuncOp>(
      pm, tc::prim::createOrderContractionsPass());
  // Few-row products by a weight as tc's reductions (before the GEMM
  // layout passes below, which they then leave alone).
  if (options.skinnyProductRows > 0) {
    tc::prim::SkinnyProductsPassOptions skinny;
    skinny.maxRows = options.skinnyProductRows;
    optional.addNested<func::FuncOp>(
        pm, tc::prim::createSkinnyProductsPass(skinny));
  }
  // Half-precision GEMMs on 16-byte rows, where the library needs them.
  if (options.alignHalfProducts) {
    pm.addNestedPass<func::FuncOp>(tc::prim::createAlignHalfProductsPass());
    // One pad of an operand that several products read (a gradient that
    // both backward GEMMs take).
    pm.addNestedPass<func::FuncOp>(createCSEPass());
  }
  // GEMM runtimes that take f32 and f64 only: half-precision products
  // widen.
  if (options.widenHalfProducts) {
    tc::prim::WidenHalfProductsPassOptions widen;
    widen.convolutions = options.widenHalfConvolutions;
    pm.addNestedPass<func::FuncOp>(
        tc::prim::createWidenHalfProductsPass(widen));
  }
  // Realize what must be realized, inline the rest into kernels.
  tc::ConvertPrimToKernelPassOptions fuse;
  fuse.cacheRows = options.cacheRows;
  fuse.weightsChannelsFirst = options.weightsChannelsFirst;
  fuse.unitWeightsChannelsFirst = options.unitWeightsChannelsFirst;
  fuse.realizeBroadcastSources = options.realizeBroadcastSources;
  fuse.splitConcatenations = options.splitConcatenations;
  fuse.loopPastUnitDims = options.loopPastUnitDims;
  fuse.aliasInputReshapes = options.aliasInputReshapes;
  fuse.fuseNothing = options.fuseNothing;
  fuse.miscompileForTesting = options.miscompileFuseForTesting;
  pm.addPass(tc::createConvertPrimToKernelPass(fuse));
  // Index checks in the kernel that reads the indices anyway.
  kernel::FuseIndexChecksPassOptions indexChecks;
  indexChecks.earlyFlags = options.earlyFlags;
  optional.add(pm, kernel::createFuseIndexChecksPass(indexChecks));
  // Full and column reductions in two stages, to fill a GPU or the CPU's
  // threads.
  if (options.splitReductions) {
    kernel::SplitReductionsPassOptions split;
    split.minParallelism = options.splitMinParallelism;
    split.maxSplits = options.splitMaxSplits;
    split.minLength = options.splitMinLength;
    split.columnFactor = options.splitColumnFactor;
    split.miscompileForTesting = options.miscompileSplitsForTesting;
    optional.add(pm, kernel::createSplitReductionsPass(split));
    optional.add(pm, createCanonicalizerPass());
  }
  // Epilogues over the value they read (a convolution's): one buffer.
  if (options.inPlaceLaunches)
    optional.add(pm, kernel::createInPlaceLaunchesPass());
  // Repeated blocks fuse into the same kernels: compile each once.
  optional.add(pm, kernel::createDedupKernelsPass());
  // Debugging: every access checked, a violation recorded for the runtime.
  if (options.kernelChecks) {
    kernel::AddKernelChecksPassOptions checks;
    checks.plantOutOfBoundsForTesting = options.plantOutOfBoundsForTesting;
    pm.addPass(kernel::createAddKernelChecksPass(checks));
  }
  // One arena for the intermediates, reused by liveness.
  pm.addNestedPass<kernel::ScheduleOp>(kernel::createPlanMemoryPass());
}
