//===- ReassociateReductions.cpp - trailing dimensions first ----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Splits a reduction over dimensions that are not one trailing block into a
// reduction over its trailing block (rows, read as one dimension) and one
// over the rest. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tc::prim {
#define GEN_PASS_DEF_REASSOCIATEREDUCTIONSPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

struct ReduceTrailingBlockFirst : public OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> dims = op.getDims();
    int64_t rank = cast<RankedTensorType>(op.getOperand().getType()).getRank();
    // The trailing block: the last dims, rank - k .. rank - 1.
    size_t trailing = 0;
    while (trailing < dims.size() &&
           dims[dims.size() - 1 - trailing] ==
               rank - 1 - static_cast<int64_t>(trailing))
      ++trailing;
    if (trailing == 0 || (trailing == 1 && dims.size() == 1))
      return rewriter.notifyMatchFailure(op, "a row reduction already");
    Location loc = op.getLoc();
    Value rows = op.getOperand();
    SmallVector<int64_t> rowDims(dims.take_back(trailing));
    // Several trailing dims read as one row (when static): one reduction
    // loop, which GPUs run as a thread block per row.
    auto type = cast<RankedTensorType>(rows.getType());
    if (trailing > 1 && type.hasStaticShape()) {
      SmallVector<int64_t> shape(type.getShape().drop_back(trailing));
      int64_t length = 1;
      for (int64_t size : type.getShape().take_back(trailing))
        length *= size;
      shape.push_back(length);
      rows = ReshapeOp::create(rewriter, loc, rows, shape);
      rowDims.assign({rank - static_cast<int64_t>(trailing)});
    } else if (trailing == dims.size()) {
      return rewriter.notifyMatchFailure(op, "dynamic trailing block");
    }
    rows = ReduceOp::create(rewriter, loc, op.getKind(), rows, rowDims);
    if (trailing == dims.size()) {
      rewriter.replaceOp(op, rows);
      return success();
    }
    // The leading dims keep their numbers: only trailing ones were removed.
    rewriter.replaceOpWithNewOp<ReduceOp>(op, op.getKind(), rows,
                                          dims.drop_back(trailing));
    return success();
  }
};

struct ReassociateReductionsPass
    : public prim::impl::ReassociateReductionsPassBase<
          ReassociateReductionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ReduceTrailingBlockFirst>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
