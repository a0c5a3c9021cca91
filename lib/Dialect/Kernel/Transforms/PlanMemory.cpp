//===- PlanMemory.cpp - place intermediates in one arena --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/Passes.h"
#include "tc/Dialect/Kernel/Transforms/ArenaPlacement.h"

#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/Dialect/Kernel/Utils/InPlace.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tc::kernel {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace mlir::tc::kernel

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::kernel;

namespace {

struct Interval {
  memref::AllocOp alloc;
  /// Bytes, or bytes per unit of the symbolic size for a symbolic buffer.
  int64_t bytes;
  unsigned begin, end; // positions in the schedule, inclusive
  bool symbolic = false;
  int64_t offset = -1;
  /// The interval whose buffer this one may be written over in place (see
  /// LiveBlock::inPlaceOf); -1: none.
  int64_t inPlaceOf = -1;
};

struct PlanMemoryPass
    : public kernel::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ScheduleOp schedule = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      schedule.emitError() << "tc-plan-memory: alignment " << alignment
                           << " is not a power of two";
      return signalPassFailure();
    }
    Block &block = schedule.getBody().front();
    llvm::DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(block))
      position[&op] = i;

    SmallVector<Interval> intervals;
    for (Operation &op : block) {
      auto alloc = dyn_cast<memref::AllocOp>(op);
      if (!alloc)
        continue;
      MemRefType type = alloc.getType();
      // A `?` is the graph's symbolic size, as the leading dimension only
      // (the rest of a row-major buffer's layout does not depend on it).
      bool symbolic = !type.hasStaticShape();
      bool leadingOnly = type.getNumDynamicDims() == 0 ||
                         (type.getNumDynamicDims() == 1 &&
                          type.isDynamicDim(0));
      if (!leadingOnly || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat()) {
        alloc.emitOpError() << "tc-plan-memory needs dense buffers, static "
                               "or with a symbolic leading dimension";
        return signalPassFailure();
      }
      int64_t elementBytes =
          llvm::divideCeil(type.getElementType().getIntOrFloatBitWidth(), 8);
      int64_t elements = 1;
      for (int64_t size : type.getShape())
        if (!ShapedType::isDynamic(size))
          elements *= size;
      Interval interval{alloc, elements * elementBytes, position[alloc],
                        position[alloc], symbolic};
      for (Operation *user : alloc->getUsers()) {
        Operation *inBlock = block.findAncestorOpInBlock(*user);
        if (!inBlock || isa<memref::DeallocOp>(user))
          continue;
        interval.end = std::max(interval.end, position[inBlock]);
      }
      intervals.push_back(interval);
    }

    // A pointwise launch whose input dies there writes its output of the
    // same size over it (an epilogue after a convolution or a product:
    // one activation live instead of two).
    llvm::DenseMap<Operation *, unsigned> intervalOf;
    for (auto [i, interval] : llvm::enumerate(intervals))
      intervalOf[interval.alloc] = i;
    for (auto [index, op] : llvm::enumerate(block)) {
      size_t p = index;
      auto launch = dyn_cast<LaunchOp>(op);
      if (!launch)
        continue;
      auto kernel = SymbolTable::lookupNearestSymbolFrom<KernelOp>(
          schedule, launch.getKernelAttr());
      if (!kernel)
        continue;
      ValueRange buffers = launch.getBuffers();
      auto intervalAt = [&](unsigned i) -> Interval * {
        Operation *def = buffers[i].getDefiningOp();
        auto it = def ? intervalOf.find(def) : intervalOf.end();
        if (it == intervalOf.end() ||
            llvm::count(buffers, buffers[i]) != 1)
          return nullptr;
        return &intervals[it->second];
      };
      for (unsigned out = 0; out < buffers.size(); ++out) {
        Interval *written = intervalAt(out);
        if (!written || written->symbolic || written->inPlaceOf >= 0)
          continue;
        // `out` is first used here.
        bool firstUse = llvm::all_of(written->alloc->getUsers(),
                                     [&](Operation *user) {
          Operation *at = block.findAncestorOpInBlock(*user);
          return !at || isa<memref::DeallocOp>(user) || position[at] >= p;
        });
        if (!firstUse)
          continue;
        for (unsigned in = 0; in < buffers.size(); ++in) {
          Interval *read = in == out ? nullptr : intervalAt(in);
          if (!read || read->symbolic || read->end != p ||
              read->bytes != written->bytes ||
              !writesPointwise(kernel, in, out))
            continue;
          written->begin = p;
          written->inPlaceOf = read - intervals.data();
          break;
        }
      }
    }

    // Largest first, each at the lowest offset free during its live range.
    // Static buffers fill the arena's first part. Symbolic ones are placed
    // the same way by their bytes per unit of the symbolic size `s`, after
    // it: an offset `a` there is `a * s` bytes, aligned since `a` is.
    int64_t intermediateBytes = 0, arenaBytes = 0, bytesPerSymbol = 0;
    for (bool symbolic : {false, true}) {
      SmallVector<LiveBlock> blocks;
      SmallVector<Interval *> placed;
      llvm::DenseMap<Interval *, int64_t> blockOf;
      for (Interval &interval : intervals) {
        if (interval.symbolic != symbolic)
          continue;
        blockOf[&interval] = blocks.size();
        blocks.push_back({interval.bytes, interval.begin, interval.end});
        placed.push_back(&interval);
        if (!symbolic)
          intermediateBytes += interval.bytes;
      }
      for (auto [index, interval] : llvm::enumerate(placed))
        if (interval->inPlaceOf >= 0)
          blocks[index].inPlaceOf =
              blockOf.lookup(&intervals[interval->inPlaceOf]);
      int64_t bytes = 0;
      for (auto [interval, offset] : llvm::zip_equal(
               placed, placeLiveBlocks(blocks, alignment, bytes)))
        interval->offset = offset;
      (symbolic ? bytesPerSymbol : arenaBytes) = bytes;
    }
    if (bytesPerSymbol)
      arenaBytes = llvm::alignTo(arenaBytes, alignment);

    OpBuilder b = OpBuilder::atBlockBegin(&block);
    Builder builder(schedule.getContext());
    schedule->setAttr(kernel::kArenaBytesAttrName, builder.getI64IntegerAttr(arenaBytes));
    schedule->setAttr(kernel::kIntermediateBytesAttrName,
                      builder.getI64IntegerAttr(intermediateBytes));
    if (bytesPerSymbol)
      schedule->setAttr(kernel::kArenaBytesPerSymbolAttrName,
                        builder.getI64IntegerAttr(bytesPerSymbol));
    if (intervals.empty())
      return;
    auto arenaType = MemRefType::get(
        {bytesPerSymbol ? ShapedType::kDynamic : arenaBytes}, b.getI8Type());
    Value arena = ArenaOp::create(b, schedule.getLoc(), arenaType, alignment);
    for (Interval &interval : intervals) {
      b.setInsertionPoint(interval.alloc);
      Value buffer = BufferOp::create(
          b, interval.alloc.getLoc(), interval.alloc.getType(), arena,
          interval.symbolic ? arenaBytes : interval.offset,
          interval.symbolic ? interval.offset : 0);
      for (Operation *user : llvm::make_early_inc_range(
               interval.alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      interval.alloc.replaceAllUsesWith(buffer);
      interval.alloc.erase();
    }
  }
};

} // namespace
