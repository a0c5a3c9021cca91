//===- NarrowIndexDivision.cpp - index division in 32 bits on GPUs --------===//
//
// The tc-gpu-narrow-index-division pass: see its description in
// tc/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Target/GPU/Passes.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::tc {
#define GEN_PASS_DEF_NARROWINDEXDIVISIONPASS
#include "tc/Target/GPU/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;

namespace {

struct NarrowIndexDivisionPass
    : public tc::impl::NarrowIndexDivisionPassBase<NarrowIndexDivisionPass> {
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    DataFlowSolver solver;
    dataflow::loadBaselineAnalyses(solver);
    solver.load<dataflow::IntegerRangeAnalysis>();
    if (failed(solver.initializeAndRun(module)))
      return signalPassFailure();
    // Whether `v` is proven to lie in [0, 2^31): the same value as an
    // unsigned (and a signed) i32.
    auto fits = [&](Value v) {
      auto *lattice =
          solver.lookupState<dataflow::IntegerValueRangeLattice>(v);
      if (!lattice || lattice->getValue().isUninitialized())
        return false;
      return lattice->getValue().getValue().umax().getActiveBits() <= 31;
    };
    // Decide everything before rewriting: the solver's states belong to
    // the values as they are now.
    SmallVector<Operation *> narrow;
    module.walk([&](Operation *op) {
      if (isa<arith::DivUIOp, arith::RemUIOp>(op) &&
          op->getResult(0).getType().isIndex() && fits(op->getOperand(0)) &&
          fits(op->getOperand(1)))
        narrow.push_back(op);
    });
    for (Operation *op : narrow) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Type i32 = b.getI32Type();
      Value lhs = arith::IndexCastUIOp::create(b, loc, i32, op->getOperand(0));
      Value rhs = arith::IndexCastUIOp::create(b, loc, i32, op->getOperand(1));
      Value result =
          isa<arith::DivUIOp>(op)
              ? arith::DivUIOp::create(b, loc, lhs, rhs).getResult()
              : arith::RemUIOp::create(b, loc, lhs, rhs).getResult();
      op->getResult(0).replaceAllUsesWith(
          arith::IndexCastUIOp::create(b, loc, b.getIndexType(), result));
      op->erase();
    }
  }
};

} // namespace
