//===- ExactRoundings.cpp - drop roundings of exact bf16 values -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// After bf16 arithmetic is emulated in f32 (each op's operands extended,
// its result rounded back), a chain of maxima, minima, selects, negations
// and absolute values rounds after every op, though each of them returns
// one of its operands (or flips a sign): a value that bf16 holds exactly.
// Rounding it is the identity, and on x86 without AVX512-BF16 each
// rounding is some ten integer instructions. A max pooling window's
// chain of nine maxima (ReLU's included) took 40% longer than Inductor's
// for it.
//
//===----------------------------------------------------------------------===//

#include "ExactRoundings.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace {

/// Whether every element of constant `value` is a bf16 value.
static bool isBF16Constant(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return false;
  auto exact = [](APFloat f) {
    bool lost = false;
    f.convert(APFloat::BFloat(), APFloat::rmNearestTiesToEven, &lost);
    return !lost;
  };
  if (auto f = dyn_cast<FloatAttr>(attr))
    return exact(f.getValue());
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr))
    return llvm::all_of(dense.getValues<APFloat>(), exact);
  return false;
}

/// Whether f32 `value` holds a bf16 value exactly: a widened bf16 value, a
/// bf16 constant, or the maximum, minimum, choice, negation or absolute
/// value of such values. `known` memoizes the answers (a chain's values are
/// shared: without it a DAG of maxima over one value walks exponentially
/// many paths); `depth` bounds the walk.
static bool holdsBF16(Value value, llvm::DenseMap<Value, bool> &known,
                      unsigned depth = 0) {
  if (depth > 64)
    return false;
  auto it = known.find(value);
  if (it != known.end())
    return it->second;
  auto holds = [&](Value operand) {
    return holdsBF16(operand, known, depth + 1);
  };
  bool answer = false;
  Operation *def = value.getDefiningOp();
  if (!def)
    answer = false;
  else if (auto ext = dyn_cast<arith::ExtFOp>(def))
    answer = isa<BFloat16Type>(getElementTypeOrSelf(ext.getIn().getType()));
  else if (isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
               arith::MinNumFOp>(def))
    answer = holds(def->getOperand(0)) && holds(def->getOperand(1));
  else if (auto select = dyn_cast<arith::SelectOp>(def))
    answer = holds(select.getTrueValue()) && holds(select.getFalseValue());
  else if (isa<arith::NegFOp, math::AbsFOp>(def))
    answer = holds(def->getOperand(0));
  else
    answer = isBF16Constant(value);
  known[value] = answer;
  return answer;
}

/// `extf(truncf(x))` -> `x` where x holds a bf16 value; through a select
/// of rounded values (a bf16 select is not emulated): `extf(select(c,
/// truncf(x), k))` -> `select(c, x, extf(k))`.
struct DropExactRounding : public OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::ExtFOp ext,
                                PatternRewriter &rewriter) const override {
    Type wide = ext.getType();
    if (!isa<BFloat16Type>(getElementTypeOrSelf(ext.getIn().getType())) ||
        !getElementTypeOrSelf(wide).isF32())
      return failure();
    // The f32 value `narrow` was rounded from, if exact; else null.
    llvm::DenseMap<Value, bool> known;
    auto unrounded = [&](Value narrow) -> Value {
      auto trunc = narrow.getDefiningOp<arith::TruncFOp>();
      if (trunc && trunc.getIn().getType() == wide &&
          holdsBF16(trunc.getIn(), known))
        return trunc.getIn();
      return {};
    };
    if (Value exact = unrounded(ext.getIn())) {
      rewriter.replaceOp(ext, exact);
      return success();
    }
    auto select = ext.getIn().getDefiningOp<arith::SelectOp>();
    if (!select)
      return failure();
    Value onTrue = unrounded(select.getTrueValue());
    Value onFalse = unrounded(select.getFalseValue());
    if (!onTrue && !onFalse)
      return failure();
    Location loc = ext.getLoc();
    if (!onTrue)
      onTrue = arith::ExtFOp::create(rewriter, loc, wide,
                                     select.getTrueValue());
    if (!onFalse)
      onFalse = arith::ExtFOp::create(rewriter, loc, wide,
                                      select.getFalseValue());
    rewriter.replaceOpWithNewOp<arith::SelectOp>(ext, select.getCondition(),
                                                 onTrue, onFalse);
    return success();
  }
};

} // namespace

void mlir::tc::populateExactRoundingPatterns(RewritePatternSet &patterns) {
  patterns.add<DropExactRounding>(patterns.getContext());
}
