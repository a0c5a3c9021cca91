//===- PlanMemory.cpp - place intermediates in one arena --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/Passes.h"
#include "tc/Dialect/Kernel/Transforms/ArenaPlacement.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
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
  int64_t bytes;
  unsigned begin, end; // positions in the schedule, inclusive
  int64_t offset = -1;
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
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat()) {
        alloc.emitOpError() << "tc-plan-memory needs static, dense buffers";
        return signalPassFailure();
      }
      int64_t elementBytes =
          llvm::divideCeil(type.getElementType().getIntOrFloatBitWidth(), 8);
      Interval interval{alloc, type.getNumElements() * elementBytes,
                        position[alloc], position[alloc]};
      for (Operation *user : alloc->getUsers()) {
        Operation *inBlock = block.findAncestorOpInBlock(*user);
        if (!inBlock || isa<memref::DeallocOp>(user))
          continue;
        interval.end = std::max(interval.end, position[inBlock]);
      }
      intervals.push_back(interval);
    }

    // Largest first, each at the lowest offset free during its live range.
    SmallVector<LiveBlock> blocks;
    int64_t intermediateBytes = 0;
    for (Interval &interval : intervals) {
      blocks.push_back({interval.bytes, interval.begin, interval.end});
      intermediateBytes += interval.bytes;
    }
    int64_t arenaBytes = 0;
    for (auto [interval, offset] : llvm::zip_equal(
             intervals, placeLiveBlocks(blocks, alignment, arenaBytes)))
      interval.offset = offset;

    OpBuilder b = OpBuilder::atBlockBegin(&block);
    Builder builder(schedule.getContext());
    schedule->setAttr("tc.arena_bytes", builder.getI64IntegerAttr(arenaBytes));
    schedule->setAttr("tc.intermediate_bytes",
                      builder.getI64IntegerAttr(intermediateBytes));
    if (intervals.empty())
      return;
    auto arenaType = MemRefType::get({arenaBytes}, b.getI8Type());
    Value arena = ArenaOp::create(b, schedule.getLoc(), arenaType, alignment);
    for (Interval &interval : intervals) {
      b.setInsertionPoint(interval.alloc);
      Value buffer = BufferOp::create(b, interval.alloc.getLoc(),
                                      interval.alloc.getType(), arena,
                                      interval.offset);
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
