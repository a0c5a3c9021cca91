//===- InPlace.cpp - launches that may write over what they read -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Utils/InPlace.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::tc::kernel;

bool mlir::tc::kernel::writesPointwise(KernelOp kernel, unsigned in,
                                      unsigned out) {
  Block &body = kernel.getBody().front();
  Value source = body.getArgument(in), result = body.getArgument(out);
  auto sourceType = cast<MemRefType>(source.getType());
  auto resultType = cast<MemRefType>(result.getType());
  if (!sourceType.hasStaticShape() ||
      sourceType.getShape() != resultType.getShape() ||
      sourceType.getElementTypeBitWidth() !=
          resultType.getElementTypeBitWidth())
    return false;
  memref::StoreOp store;
  SmallVector<memref::LoadOp> loads;
  bool pointwise = true;
  kernel.walk([&](Operation *op) {
    if (isa<ReduceOp>(op))
      pointwise = false;
    for (Value operand : op->getOperands()) {
      if (operand != source && operand != result)
        continue;
      auto load = dyn_cast<memref::LoadOp>(op);
      auto write = dyn_cast<memref::StoreOp>(op);
      if (load && load.getMemRef() == source)
        loads.push_back(load);
      else if (write && write.getMemRef() == result &&
               write.getValueToStore() != result && !store)
        store = write;
      else
        pointwise = false;
    }
  });
  if (!pointwise || !store || loads.empty())
    return false;
  SmallVector<LoopOp> loops;
  kernel.walk([&](LoopOp loop) { loops.push_back(loop); });
  Block *at = store->getBlock();
  if (loops.empty() ? at != &body
                    : loops.size() != 1 ||
                          at != &loops.front().getBody().front() ||
                          !llvm::is_contained(store.getIndices(),
                                              at->getArgument(0)))
    return false;
  return llvm::all_of(loads, [&](memref::LoadOp load) {
    return load->getBlock() == store->getBlock() &&
           load->isBeforeInBlock(store) &&
           llvm::equal(load.getIndices(), store.getIndices());
  });
}

