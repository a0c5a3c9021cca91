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
#include "mlir/IR/IRMapping.h"
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

/// Whether bf16 `narrow` is an f32 value rounded, or a choice (of choices)
/// with such a value on a side.
static bool isRounded(Value narrow, unsigned depth = 0) {
  if (auto trunc = narrow.getDefiningOp<arith::TruncFOp>())
    return getElementTypeOrSelf(trunc.getIn()).isF32();
  auto select = narrow.getDefiningOp<arith::SelectOp>();
  return select && depth < 8 &&
         (isRounded(select.getTrueValue(), depth + 1) ||
          isRounded(select.getFalseValue(), depth + 1));
}

/// The f32 value whose rounding is bf16 `narrow`: a rounded value's
/// operand, a choice between such values, else `narrow` widened (its own
/// rounding is itself).
static Value unrounded(PatternRewriter &rewriter, Location loc, Value narrow,
                       unsigned depth = 0) {
  Type wide = rewriter.getF32Type();
  if (auto vector = dyn_cast<VectorType>(narrow.getType()))
    wide = vector.clone(wide);
  if (auto trunc = narrow.getDefiningOp<arith::TruncFOp>();
      trunc && trunc.getIn().getType() == wide) {
    // A rounding of a widened bf16 value is that value: look through it
    // (a chain of maxima rewritten one at a time rounds, widens and rounds
    // again).
    if (auto ext = trunc.getIn().getDefiningOp<arith::ExtFOp>();
        ext && ext.getIn().getType() == narrow.getType() && depth < 8)
      return unrounded(rewriter, loc, ext.getIn(), depth + 1);
    return trunc.getIn();
  }
  if (auto select = narrow.getDefiningOp<arith::SelectOp>();
      select && isRounded(narrow, depth))
    return arith::SelectOp::create(
        rewriter, loc, select.getCondition(),
        unrounded(rewriter, loc, select.getTrueValue(), depth + 1),
        unrounded(rewriter, loc, select.getFalseValue(), depth + 1));
  return arith::ExtFOp::create(rewriter, loc, wide, narrow);
}

/// A maximum, minimum or choice: an op that rounding to nearest commutes
/// with (it is monotonic, keeps NaN a NaN, infinities and the sign of
/// zero, and rounds a choice as it rounds each side).
static bool commutesWithRounding(Operation *op) {
  return isa_and_nonnull<arith::MaximumFOp, arith::MinimumFOp,
                         arith::MaxNumFOp, arith::MinNumFOp, arith::SelectOp>(
      op);
}

/// Whether f32 `wide`, a tree of maxima, minima and choices, has a leaf
/// that is a rounded value widened.
static bool hasInnerRounding(Value wide, unsigned depth = 0) {
  if (auto ext = wide.getDefiningOp<arith::ExtFOp>())
    return isa<BFloat16Type>(getElementTypeOrSelf(ext.getIn())) &&
           isRounded(ext.getIn());
  Operation *op = wide.getDefiningOp();
  if (depth > 16 || !commutesWithRounding(op))
    return false;
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    return getElementTypeOrSelf(operand).isF32() &&
           hasInnerRounding(operand, depth + 1);
  });
}

/// `wide` with its rounded leaves' roundings removed (its tree rebuilt
/// where they were).
static Value withoutInnerRoundings(PatternRewriter &rewriter, Location loc,
                                   Value wide, unsigned depth = 0) {
  if (!hasInnerRounding(wide, depth))
    return wide;
  if (auto ext = wide.getDefiningOp<arith::ExtFOp>())
    return unrounded(rewriter, loc, ext.getIn());
  Operation *op = wide.getDefiningOp();
  IRMapping operands;
  for (Value operand : op->getOperands())
    if (getElementTypeOrSelf(operand).isF32())
      operands.map(operand,
                   withoutInnerRoundings(rewriter, loc, operand, depth + 1));
  return rewriter.clone(*op, operands)->getResult(0);
}

/// `round(T(..., extf(round(u)), ...))` -> `round(T(..., u, ...))` for a
/// tree T of maxima, minima and choices: rounding commutes with them, so
/// the tree's rounding rounds each leaf, and rounding twice is rounding
/// once. A max pooling window over batch norm and ReLU (each point
/// computed in f32, rounded as eager rounds batch norm's output) rounds
/// once instead of at each of its nine points: some ten integer
/// instructions each without AVX512-BF16's conversion (ResNet-50's stem
/// in bf16 at a quarter of the memory's speed).
struct RoundTreeOnce : public OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::TruncFOp trunc,
                                PatternRewriter &rewriter) const override {
    if (!isa<BFloat16Type>(getElementTypeOrSelf(trunc.getType())) ||
        !getElementTypeOrSelf(trunc.getIn()).isF32() ||
        !commutesWithRounding(trunc.getIn().getDefiningOp()) ||
        !hasInnerRounding(trunc.getIn()))
      return failure();
    Value tree = withoutInnerRoundings(rewriter, trunc.getLoc(), trunc.getIn());
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(trunc, trunc.getType(), tree);
    return success();
  }
};

} // namespace

void mlir::tc::populateExactRoundingPatterns(RewritePatternSet &patterns) {
  patterns.add<DropExactRounding, RoundTreeOnce>(patterns.getContext());
}
