//===- WidenHalfProducts.cpp - half-precision products in f32 ---*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites prim.dot of f16/bf16 operands as an f32 product rounded once.
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tc::prim {
#define GEN_PASS_DEF_WIDENHALFPRODUCTSPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

struct WidenHalfDot : public OpRewritePattern<DotOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotOp op,
                                PatternRewriter &rewriter) const override {
    Type elt = getElementTypeOrSelf(op.getType());
    if (!elt.isF16() && !elt.isBF16())
      return rewriter.notifyMatchFailure(op, "not a half-precision product");
    Location loc = op.getLoc();
    TypeAttr f32 = TypeAttr::get(rewriter.getF32Type());
    Value lhs = ConvertOp::create(rewriter, loc, op.getLhs(), f32);
    Value rhs = ConvertOp::create(rewriter, loc, op.getRhs(), f32);
    Value product = DotOp::create(
        rewriter, loc, lhs, rhs, op.getLhsBatchAttr(), op.getRhsBatchAttr(),
        op.getLhsContractingAttr(), op.getRhsContractingAttr());
    rewriter.replaceOpWithNewOp<ConvertOp>(op, product, TypeAttr::get(elt));
    return success();
  }
};

struct WidenHalfProductsPass
    : public prim::impl::WidenHalfProductsPassBase<WidenHalfProductsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenHalfDot>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
