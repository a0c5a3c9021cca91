//===- SkinnyProducts.cpp - few-row products as reductions ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites a prim.dot of a few rows by an [N, K] weight as a multiply and a
// sum along K. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tc::prim {
#define GEN_PASS_DEF_SKINNYPRODUCTSPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

/// The `[N, K]` tensor whose rows `rhs` contracts along its dimension
/// `contracted` (rank 2): `rhs` itself when that is its last dimension, the
/// operand of a transposing permute when it is the first, else nothing.
static Value rowMajorWeight(Value rhs, int64_t contracted) {
  if (contracted == 1)
    return rhs;
  auto permute = rhs.getDefiningOp<PermuteOp>();
  if (permute && permute.getPermutation() == ArrayRef<int64_t>{1, 0})
    return permute.getOperand();
  return Value();
}

static Value toF32(PatternRewriter &rewriter, Location loc, Value v) {
  if (getElementTypeOrSelf(v.getType()).isF32())
    return v;
  return ConvertOp::create(rewriter, loc, v,
                           TypeAttr::get(rewriter.getF32Type()));
}

struct SkinnyDot : public OpRewritePattern<DotOp> {
  SkinnyDot(MLIRContext *context, int64_t maxRows, int64_t minDepth)
      : OpRewritePattern(context), maxRows(maxRows), minDepth(minDepth) {}

  LogicalResult matchAndRewrite(DotOp op,
                                PatternRewriter &rewriter) const override {
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elt = resultType.getElementType();
    if (!isa<FloatType>(elt) || elt.getIntOrFloatBitWidth() > 32)
      return rewriter.notifyMatchFailure(op, "not an f32/f16/bf16 product");
    int64_t rank = lhsType.getRank();
    if (!op.getLhsBatch().empty() || rhsType.getRank() != 2 || rank < 2 ||
        op.getLhsContracting() != ArrayRef<int64_t>{rank - 1} ||
        op.getRhsContracting().size() != 1 ||
        !lhsType.hasStaticShape() || !rhsType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "not rows by a static matrix");
    int64_t contracted = op.getRhsContracting()[0];
    Value weight = rowMajorWeight(op.getRhs(), contracted);
    if (!weight)
      return rewriter.notifyMatchFailure(op, "the weight's rows are not K");
    int64_t k = lhsType.getDimSize(rank - 1);
    int64_t n = rhsType.getDimSize(1 - contracted);
    int64_t m = lhsType.getNumElements() / std::max<int64_t>(k, 1);
    if (m == 0 || m > maxRows || k < minDepth || n == 0)
      return rewriter.notifyMatchFailure(op, "not a skinny product");
    Location loc = op.getLoc();
    // With a bias, everything is built where it is added (its vector may
    // be computed after the product).
    Value bias;
    AddOp add = elt.isF32() ? AddOp() : op.getBiasAdd(bias);
    if (add)
      rewriter.setInsertionPoint(add);
    Value x = op.getLhs();
    if (rank != 2)
      x = ReshapeOp::create(rewriter, loc, x,
                            rewriter.getDenseI64ArrayAttr({m, k}));
    SmallVector<int64_t> shape = {m, n, k};
    Value xs = BroadcastInDimOp::create(
        rewriter, loc, toF32(rewriter, loc, x),
        rewriter.getDenseI64ArrayAttr(shape),
        rewriter.getDenseI64ArrayAttr({0, 2}));
    Value ws = BroadcastInDimOp::create(
        rewriter, loc, toF32(rewriter, loc, weight),
        rewriter.getDenseI64ArrayAttr(shape),
        rewriter.getDenseI64ArrayAttr({1, 2}));
    Value terms = MulOp::create(rewriter, loc, xs, ws);
    Value sums = ReduceOp::create(rewriter, loc, ReductionKind::Sum, terms,
                                  rewriter.getDenseI64ArrayAttr({2}));
    // A half-precision bias joins the f32 sums before their one rounding,
    // as a GEMM's epilogue adds it (a linear layer's bias).
    Operation *replaced = op;
    if (add) {
      Value wide = BroadcastInDimOp::create(
          rewriter, loc, toF32(rewriter, loc, bias),
          rewriter.getDenseI64ArrayAttr({m, n}),
          rewriter.getDenseI64ArrayAttr({1}));
      sums = AddOp::create(rewriter, loc, sums, wide);
      replaced = add;
    }
    if (!elt.isF32())
      sums = ConvertOp::create(rewriter, loc, sums, TypeAttr::get(elt));
    if (rank != 2)
      sums = ReshapeOp::create(
          rewriter, loc, sums,
          rewriter.getDenseI64ArrayAttr(resultType.getShape()));
    rewriter.replaceOp(replaced, sums);
    if (replaced != op)
      rewriter.eraseOp(op);
    return success();
  }

  int64_t maxRows, minDepth;
};

struct SkinnyProductsPass
    : public prim::impl::SkinnyProductsPassBase<SkinnyProductsPass> {
  using SkinnyProductsPassBase::SkinnyProductsPassBase;

  void runOnOperation() override {
    if (maxRows <= 0)
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<SkinnyDot>(&getContext(), maxRows, minDepth);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
