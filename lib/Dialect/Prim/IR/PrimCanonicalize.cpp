//===- PrimCanonicalize.cpp - prim dialect rewrite patterns -----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Canonicalization patterns of the prim ops that create ops (folders,
// PrimOpFolders.cpp, only return existing values).
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/IR/PrimOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

using namespace mlir;
using namespace mlir::tc::prim;

namespace {

/// Whether a sum over `dims` of a tensor of `rank` is not a row sum (one
/// over trailing dimensions only): a batch norm's over N, H, W (either
/// layout), which runs as kernels of its own that each read the whole
/// activation. A row sum (a layer norm's) is computed inside its row's
/// kernel, where a factored sum saves no read; the patterns below leave
/// those alone. (Applied to row sums too, a dropout-before-layer-norm
/// training test on the H200 had one row of 4096 differ; not understood,
/// see CHANGELOG.)
bool sumsAcrossRows(ArrayRef<int64_t> dims, int64_t rank) {
  for (auto [i, d] : llvm::enumerate(dims))
    if (d != rank - static_cast<int64_t>(dims.size()) +
                 static_cast<int64_t>(i))
      return true;
  return false;
}

/// Whether `op` is what the patterns below rewrite: a float sum across
/// rows, of static shapes.
bool isStaticFloatSumAcrossRows(ReduceOp op) {
  auto full = cast<RankedTensorType>(op.getOperand().getType());
  auto reduced = cast<RankedTensorType>(op.getType());
  return op.getKind() == ReductionKind::Sum &&
         isa<FloatType>(full.getElementType()) && full.hasStaticShape() &&
         reduced.hasStaticShape() &&
         sumsAcrossRows(op.getDims(), full.getRank());
}

/// Whether `v` has one value along each of `dims` (of its shape): a
/// broadcast whose operand those dimensions do not index (or index where
/// it has extent 1), a splat constant, or a conversion of such a value.
bool constantAlong(Value v, ArrayRef<int64_t> dims) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (auto convert = dyn_cast<ConvertOp>(def))
    return constantAlong(convert.getOperand(), dims);
  if (auto constant = dyn_cast<ConstantOp>(def))
    return isa<SplatElementsAttr>(constant.getValue());
  auto bcast = dyn_cast<BroadcastInDimOp>(def);
  if (!bcast)
    return false;
  auto source = cast<RankedTensorType>(bcast.getOperand().getType());
  for (auto [i, d] : llvm::enumerate(bcast.getBroadcastDimensions()))
    if (llvm::is_contained(dims, d) && source.getDimSize(i) != 1)
      return false;
  return true;
}

/// `v`, constant along the reduced `dims`, as a tensor of
/// `reduced`'s shape (those dimensions removed).
Value withoutDims(PatternRewriter &rewriter, Location loc, Value v,
                  ArrayRef<int64_t> dims, RankedTensorType reduced) {
  Operation *def = v.getDefiningOp();
  auto type = RankedTensorType::get(
      reduced.getShape(), cast<RankedTensorType>(v.getType()).getElementType());
  if (auto convert = dyn_cast<ConvertOp>(def))
    return ConvertOp::create(
        rewriter, loc,
        withoutDims(rewriter, loc, convert.getOperand(), dims, reduced),
        TypeAttr::get(type.getElementType()));
  if (auto constant = dyn_cast<ConstantOp>(def))
    return ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(
            type, cast<SplatElementsAttr>(constant.getValue())
                      .getSplatValue<Attribute>()));
  auto bcast = cast<BroadcastInDimOp>(def);
  Value source = bcast.getOperand();
  auto sourceType = cast<RankedTensorType>(source.getType());
  // The operand's dimensions that map to kept ones, and where they go.
  SmallVector<int64_t> keptShape, keptDims;
  ArrayRef<int64_t> mapped = bcast.getBroadcastDimensions();
  for (int64_t i = 0, e = mapped.size(); i < e; ++i) {
    int64_t d = mapped[i];
    if (llvm::is_contained(dims, d))
      continue;
    keptShape.push_back(sourceType.getDimSize(i));
    keptDims.push_back(d - llvm::count_if(dims, [d](int64_t r) {
                         return r < d;
                       }));
  }
  if (static_cast<int64_t>(keptShape.size()) != sourceType.getRank())
    source = ReshapeOp::create(rewriter, loc, source, keptShape);
  return BroadcastInDimOp::create(rewriter, loc, source, reduced.getShape(),
                                  keptDims);
}

/// A sum of a product with factors that are constant along the summed
/// dimensions is that sum without them, times them: sum_D(a * b *
/// broadcast(c)) = broadcast(c) * sum_D(a * b). The factors left inside
/// are multiplied in the order they are defined, so that sums of the same
/// factors become one op for CSE: a batch norm's backward, differentiated
/// op by op, sums its output's gradient times (x - mean) once times the
/// weight and once times the inverse deviation, and the gradient itself
/// once alone and once times both; each pair is one sum after this (5
/// reductions of the activation to 3, and SumOfDeviations removes one
/// more). Negations move out too.
struct FactorOutOfSum : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    if (!isStaticFloatSumAcrossRows(op))
      return failure();
    auto reduced = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> dims = op.getDims();
    SmallVector<Value> inner, outer;
    // Negations and doublings (x + x, exact) moved out: a scale.
    double scale = 1.0;
    SmallVector<Value> worklist = {op.getOperand()};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (auto mul = dyn_cast_or_null<MulOp>(def)) {
        worklist.push_back(mul.getRhs());
        worklist.push_back(mul.getLhs());
      } else if (auto neg = dyn_cast_or_null<NegOp>(def)) {
        scale = -scale;
        worklist.push_back(neg.getOperand());
      } else if (auto add = dyn_cast_or_null<AddOp>(def);
                 add && add.getLhs() == add.getRhs()) {
        scale *= 2;
        worklist.push_back(add.getLhs());
      } else if (constantAlong(v, dims)) {
        outer.push_back(v);
      } else {
        inner.push_back(v);
      }
    }
    // Only a sum with a broadcast factor (a per-channel or per-row vector)
    // changes: scalars and negations alone stay where they are (a forward's
    // sum of GELU's `x * 0.5 * t`, which its output shares, is no cheaper
    // as `0.5 * sum(x * t)` and would compute a second product). Nor does
    // a sum of constants alone.
    bool broadcasts = llvm::any_of(outer, [](Value v) {
      for (Operation *def = v.getDefiningOp(); def;
           def = isa<ConvertOp>(def) ? def->getOperand(0).getDefiningOp()
                                     : nullptr)
        if (isa<BroadcastInDimOp>(def))
          return true;
      return false;
    });
    if (!broadcasts || inner.empty())
      return failure();
    llvm::sort(inner, [](Value a, Value b) {
      auto argA = dyn_cast<BlockArgument>(a), argB = dyn_cast<BlockArgument>(b);
      if (argA || argB)
        return argA && (!argB || argA.getArgNumber() < argB.getArgNumber());
      Operation *opA = a.getDefiningOp(), *opB = b.getDefiningOp();
      if (opA == opB)
        return false;
      return opA->getBlock() == opB->getBlock() && opA->isBeforeInBlock(opB);
    });
    Location loc = op.getLoc();
    Value product = inner.front();
    for (Value factor : llvm::drop_begin(inner))
      product = MulOp::create(rewriter, loc, product, factor);
    Value result =
        ReduceOp::create(rewriter, loc, ReductionKind::Sum, product, dims);
    for (Value factor : outer)
      result = MulOp::create(
          rewriter, loc, result,
          withoutDims(rewriter, loc, factor, dims, reduced));
    if (scale == -1.0) {
      result = NegOp::create(rewriter, loc, result);
    } else if (scale != 1.0) {
      auto elt = cast<FloatType>(reduced.getElementType());
      APFloat value(scale);
      bool lost;
      value.convert(elt.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
      result = MulOp::create(
          rewriter, loc, result,
          ConstantOp::create(rewriter, loc,
                             DenseElementsAttr::get(
                                 reduced, FloatAttr::get(elt, value))));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The sum of a tensor's deviations from its mean over the same dimensions
/// is 0: sum_D(x - broadcast(sum_D(x) / n)), n the elements D holds. (A
/// batch norm's backward, differentiated op by op, sums them: the variance's
/// gradient reaching the mean. Computed, the sum is rounding noise, and a
/// reduction of the whole activation.)
struct SumOfDeviations : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    if (!isStaticFloatSumAcrossRows(op))
      return failure();
    auto full = cast<RankedTensorType>(op.getOperand().getType());
    auto reduced = cast<RankedTensorType>(op.getType());
    auto sub = op.getOperand().getDefiningOp<SubOp>();
    if (!sub)
      return failure();
    ArrayRef<int64_t> dims = op.getDims();
    // The mean: broadcast back along D (one value along each), from a
    // vector of the sum's elements, possibly reshaped (keepdim's unit
    // dimensions), a quotient by the count or a product by its inverse.
    auto bcast = sub.getRhs().getDefiningOp<BroadcastInDimOp>();
    if (!bcast || !constantAlong(bcast, dims) ||
        cast<RankedTensorType>(bcast.getOperand().getType())
                .getNumElements() != reduced.getNumElements())
      return failure();
    auto peelReshapes = [](Value v) {
      while (auto reshape = v.getDefiningOp<ReshapeOp>())
        v = reshape.getOperand();
      return v;
    };
    Value mean = peelReshapes(bcast.getOperand());
    double count = 1;
    for (int64_t d : dims)
      count *= full.getDimSize(d);
    auto splatValue = [](Value v) -> std::optional<double> {
      SplatElementsAttr splat;
      if (!matchPattern(v, m_Constant(&splat)))
        return std::nullopt;
      auto value = dyn_cast<FloatAttr>(splat.getSplatValue<Attribute>());
      if (!value)
        return std::nullopt;
      return value.getValueAsDouble();
    };
    Value total;
    if (auto div = mean.getDefiningOp<DivOp>()) {
      if (splatValue(div.getRhs()) != count)
        return failure();
      total = div.getLhs();
    } else if (auto mul = mean.getDefiningOp<MulOp>()) {
      // The inverse, rounded to the element type: compare in that type.
      std::optional<double> factor = splatValue(mul.getRhs());
      double inverse =
          FloatAttr::get(full.getElementType(), 1.0 / count).getValueAsDouble();
      if (!factor || *factor != inverse)
        return failure();
      total = mul.getLhs();
    } else {
      return failure();
    }
    auto sum = peelReshapes(total).getDefiningOp<ReduceOp>();
    if (!sum || sum.getKind() != ReductionKind::Sum ||
        sum.getOperand() != sub.getLhs() || sum.getDims() != dims)
      return failure();
    rewriter.replaceOpWithNewOp<ConstantOp>(
        op, DenseElementsAttr::get(
                reduced, rewriter.getFloatAttr(reduced.getElementType(), 0.0)));
    return success();
  }
};

/// A reduction over a dimension of one element reduces nothing there: the
/// operand without it (a reshape), reduced over the other dimensions, or
/// the operand itself where those are all. (timm's weight
/// standardization is a training-mode batch norm of the weights viewed as
/// [1, O, K], over dimensions 0 and 2; as such, a reduction across rows,
/// it ran as a row kernel and a second kernel over the unit dimension,
/// each realized: five kernels a convolution where three do.) After the
/// patterns above, which read the dimensions as they are.
struct ReduceOverUnitDims : OpRewritePattern<ReduceOp> {
  ReduceOverUnitDims(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/0) {}

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getOperand().getType());
    ArrayRef<int64_t> dims = op.getDims();
    if (!type.hasStaticShape() ||
        llvm::none_of(dims, [&](int64_t d) { return type.getDimSize(d) == 1; }))
      return failure();
    SmallVector<int64_t> shape, kept;
    for (int64_t d = 0, e = type.getRank(); d < e; ++d) {
      bool reduced = llvm::is_contained(dims, d);
      if (reduced && type.getDimSize(d) == 1)
        continue;
      if (reduced)
        kept.push_back(static_cast<int64_t>(shape.size()));
      shape.push_back(type.getDimSize(d));
    }
    Location loc = op.getLoc();
    Value operand = ReshapeOp::create(rewriter, loc, op.getOperand(), shape);
    if (kept.empty()) {
      auto result = cast<RankedTensorType>(op.getType());
      rewriter.replaceOpWithNewOp<ReshapeOp>(op, operand, result.getShape());
      return success();
    }
    rewriter.replaceOpWithNewOp<ReduceOp>(op, op.getKind(), operand, kept);
    return success();
  }
};

} // namespace

void ReduceOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<FactorOutOfSum, SumOfDeviations, ReduceOverUnitDims>(context);
}
