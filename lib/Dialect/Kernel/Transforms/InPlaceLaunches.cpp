//===- InPlaceLaunches.cpp - pointwise launches over their input -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/Passes.h"

#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/Dialect/Kernel/Utils/InPlace.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tc::kernel {
#define GEN_PASS_DEF_INPLACELAUNCHESPASS
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace mlir::tc::kernel

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::kernel;

namespace {

/// The schedule's allocation behind `value` if `launch` takes it once.
memref::AllocOp allocTakenOnce(LaunchOp launch, Value value) {
  auto alloc = value.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != launch->getBlock() ||
      llvm::count(launch.getBuffers(), value) != 1)
    return nullptr;
  return alloc;
}

/// Whether every use of `alloc` but its deallocations is at `launch` or
/// on the side of it that `after` says.
bool usedOnlyUpTo(memref::AllocOp alloc, LaunchOp launch, bool after) {
  Block *block = launch->getBlock();
  return llvm::all_of(alloc->getUsers(), [&](Operation *user) {
    if (isa<memref::DeallocOp>(user))
      return true;
    Operation *at = block->findAncestorOpInBlock(*user);
    if (!at)
      return false;
    return at == launch.getOperation() ||
           (after ? launch->isBeforeInBlock(at) : at->isBeforeInBlock(launch));
  });
}

struct InPlaceLaunchesPass
    : public kernel::impl::InPlaceLaunchesPassBase<InPlaceLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<LaunchOp> launches;
    module.walk([&](LaunchOp launch) { launches.push_back(launch); });
    for (LaunchOp launch : launches)
      writeInPlace(launch, module, symbols);
  }

  /// Rewrites `launch` to write its first output that may be its input's
  /// memory over that input (see the pass's description).
  void writeInPlace(LaunchOp launch, ModuleOp module, SymbolTable &symbols) {
    auto kernel = symbols.lookup<KernelOp>(
        launch.getKernelAttr().getRootReference());
    if (!kernel || launch.getKernelAttr().getNestedReferences().size())
      return;
    ValueRange buffers = launch.getBuffers();
    for (unsigned out = 0; out < buffers.size(); ++out) {
      memref::AllocOp written = allocTakenOnce(launch, buffers[out]);
      if (!written || !usedOnlyUpTo(written, launch, /*after=*/true))
        continue;
      for (unsigned in = 0; in < buffers.size(); ++in) {
        memref::AllocOp read = in == out ? nullptr
                                         : allocTakenOnce(launch, buffers[in]);
        if (!read || read.getType() != written.getType() ||
            !usedOnlyUpTo(read, launch, /*after=*/false) ||
            !writesPointwise(kernel, in, out))
          continue;
        merge(launch, kernel, in, out, module, symbols);
        // The input lives on as the output; its deallocation goes.
        for (Operation *user : llvm::make_early_inc_range(read->getUsers()))
          if (isa<memref::DeallocOp>(user))
            user->erase();
        written->replaceAllUsesWith(read);
        written->erase();
        return;
      }
    }
  }

  /// Points `launch` at a kernel that reads and writes its argument `in`
  /// where `kernel` wrote `out` (`kernel` itself when no other op uses it).
  void merge(LaunchOp launch, KernelOp kernel, unsigned in, unsigned out,
             ModuleOp module, SymbolTable &symbols) {
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(kernel, module);
    if (!uses || !llvm::hasSingleElement(*uses)) {
      auto copy = cast<KernelOp>(kernel->clone());
      copy.setSymName((kernel.getSymName() + "_in_place").str());
      symbols.insert(copy, std::next(Block::iterator(kernel)));
      kernel = copy;
      launch.setKernelAttr(FlatSymbolRefAttr::get(copy.getSymNameAttr()));
    }
    Block &body = kernel.getBody().front();
    body.getArgument(out).replaceAllUsesWith(body.getArgument(in));
    (void)kernel.eraseArgument(out);
    launch.getBuffersMutable().erase(out);
  }
};

} // namespace
