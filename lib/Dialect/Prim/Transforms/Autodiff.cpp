//===- Autodiff.cpp - reverse-mode autodiff of prim functions --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Turns a function of prim ops into its joint forward + backward graph: the
// function also takes a cotangent per floating-point result and returns the
// gradient of each `tc.requires_grad` argument. The backward is built by
// walking the forward in reverse, applying each op's vector-Jacobian product
// (its gradient rule) to the cotangent of its result and adding the
// contributions of a value's uses.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/FX/IR/FXAttrNames.h"
#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cmath>

namespace mlir::tc::prim {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The dimensions below `rank` in neither `batch` nor `contract`, in order.
static SmallVector<int64_t> freeDims(int64_t rank, ArrayRef<int64_t> batch,
                                     ArrayRef<int64_t> contract) {
  SmallVector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(batch, d) && !llvm::is_contained(contract, d))
      free.push_back(d);
  return free;
}

/// The permutation taking a gradient product into an operand's layout. The
/// product's dimensions are the batch ones, then (from `freeBase`) the
/// operand's free ones, and (from `restBase`) the other operand's
/// `otherRest` dimensions, each paired with one of the operand's
/// contracting dimensions through `contract`/`otherContract`.
static SmallVector<int64_t>
toOperandLayout(int64_t rank, ArrayRef<int64_t> batch, ArrayRef<int64_t> free,
                int64_t freeBase, ArrayRef<int64_t> contract,
                ArrayRef<int64_t> otherContract, ArrayRef<int64_t> otherRest,
                int64_t restBase) {
  SmallVector<int64_t> permutation(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (const auto *it = llvm::find(batch, d); it != batch.end()) {
      permutation[d] = it - batch.begin();
    } else if (const auto *it = llvm::find(free, d); it != free.end()) {
      permutation[d] = freeBase + (it - free.begin());
    } else {
      int64_t paired = otherContract[llvm::find(contract, d) - contract.begin()];
      permutation[d] =
          restBase + (llvm::find(otherRest, paired) - otherRest.begin());
    }
  }
  return permutation;
}

/// Whether values of `type` carry gradients.
static bool isDifferentiable(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// Builds the backward of one function.
class Differentiator {
public:
  Differentiator(func::FuncOp func) : func(func), b(func.getContext()) {}

  LogicalResult run();

private:
  /// Adds `contribution` to the cotangent of `value`.
  void accumulate(Value value, Value contribution);
  /// Applies `op`'s gradient rule to the cotangent `grad` of its result.
  LogicalResult backprop(Operation *op, Value grad);

  //===--------------------------------------------------------------------===//
  // Building blocks
  //===--------------------------------------------------------------------===//

  Value splat(RankedTensorType type, double value) {
    auto elt = cast<FloatType>(type.getElementType());
    APFloat f(value);
    bool lost;
    f.convert(elt.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(type, FloatAttr::get(elt, f)));
  }
  Value zerosLike(Value v) { return splat(typeOf(v), 0.0); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value select(Value cond, Value t, Value f) {
    return WhereOp::create(b, loc, cond, t, f);
  }
  Value compare(ComparisonPredicate predicate, Value x, Value y) {
    return CompareOp::create(b, loc, predicate, x, y);
  }
  Value asFloat(Value mask, RankedTensorType like) {
    return ConvertOp::create(b, loc, mask,
                             TypeAttr::get(like.getElementType()));
  }
  /// `v` (of the shape a reduction over `dims` of `full` leaves) broadcast
  /// back over those dimensions.
  Value unreduce(Value v, RankedTensorType full, ArrayRef<int64_t> dims) {
    SmallVector<int64_t> kept;
    for (int64_t d = 0; d < full.getRank(); ++d)
      if (!llvm::is_contained(dims, d))
        kept.push_back(d);
    return BroadcastInDimOp::create(b, loc, v, full.getShape(), kept);
  }
  /// The inverse of `permutation`.
  static SmallVector<int64_t> invert(ArrayRef<int64_t> permutation) {
    SmallVector<int64_t> inverse(permutation.size());
    for (auto [i, p] : llvm::enumerate(permutation))
      inverse[p] = i;
    return inverse;
  }
  Value permute(Value v, ArrayRef<int64_t> permutation) {
    for (auto [i, p] : llvm::enumerate(permutation))
      if (static_cast<int64_t>(i) != p)
        return PermuteOp::create(b, loc, v, permutation);
    return v;
  }

  /// `dot` with the given dimensions, its operands permuted first into the
  /// form matrix products take (lhs: batch, free, contracting; rhs: batch,
  /// contracting, free), which the GEMM lowering supports. Same result.
  Value matmul(Value lhs, Value rhs, ArrayRef<int64_t> lhsBatch,
               ArrayRef<int64_t> rhsBatch, ArrayRef<int64_t> lhsContract,
               ArrayRef<int64_t> rhsContract);
  LogicalResult dotRule(DotOp dot, Value grad);
  LogicalResult gatherRule(GatherOp gather, Value grad);

  func::FuncOp func;
  OpBuilder b;
  Location loc = UnknownLoc::get(func.getContext());
  /// Values whose gradient the backward needs: on a differentiable path
  /// from a marked argument.
  DenseSet<Value> active;
  /// The cotangent accumulated so far for each active value.
  DenseMap<Value, Value> cotangents;
};

void Differentiator::accumulate(Value value, Value contribution) {
  if (!active.contains(value))
    return;
  Value &slot = cotangents[value];
  slot = slot ? AddOp::create(b, loc, slot, contribution).getResult()
              : contribution;
}

Value Differentiator::matmul(Value lhs, Value rhs, ArrayRef<int64_t> lhsBatch,
                             ArrayRef<int64_t> rhsBatch,
                             ArrayRef<int64_t> lhsContract,
                             ArrayRef<int64_t> rhsContract) {
  auto order = [](int64_t rank, ArrayRef<int64_t> batch,
                  ArrayRef<int64_t> contract, bool contractLast) {
    SmallVector<int64_t> free = freeDims(rank, batch, contract);
    SmallVector<int64_t> permutation(batch);
    llvm::append_range(permutation, contractLast ? free : contract);
    llvm::append_range(permutation, contractLast ? contract : free);
    return permutation;
  };
  int64_t numBatch = lhsBatch.size(), numContract = lhsContract.size();
  Value l = permute(lhs, order(typeOf(lhs).getRank(), lhsBatch, lhsContract,
                               /*contractLast=*/true));
  Value r = permute(rhs, order(typeOf(rhs).getRank(), rhsBatch, rhsContract,
                               /*contractLast=*/false));
  SmallVector<int64_t> batch, lc, rc;
  for (int64_t i = 0; i < numBatch; ++i)
    batch.push_back(i);
  for (int64_t i = 0; i < numContract; ++i) {
    lc.push_back(typeOf(l).getRank() - numContract + i);
    rc.push_back(numBatch + i);
  }
  return DotOp::create(b, loc, l, r, batch, batch, lc, rc);
}

LogicalResult Differentiator::dotRule(DotOp dot, Value grad) {
  // The result's dimensions are the batch dimensions, then lhs's free ones,
  // then rhs's free ones. Each operand's gradient contracts the result's
  // cotangent with the other operand over that operand's free dimensions,
  // then permutes the product into the operand's layout.
  Value lhs = dot.getLhs(), rhs = dot.getRhs();
  ArrayRef<int64_t> lhsBatch = dot.getLhsBatch(), rhsBatch = dot.getRhsBatch();
  ArrayRef<int64_t> lhsContract = dot.getLhsContracting(),
                    rhsContract = dot.getRhsContracting();
  int64_t lhsRank = typeOf(lhs).getRank(), rhsRank = typeOf(rhs).getRank();
  SmallVector<int64_t> lhsFree = freeDims(lhsRank, lhsBatch, lhsContract);
  SmallVector<int64_t> rhsFree = freeDims(rhsRank, rhsBatch, rhsContract);
  int64_t numBatch = lhsBatch.size();
  SmallVector<int64_t> gradBatch;
  for (int64_t i = 0; i < numBatch; ++i)
    gradBatch.push_back(i);
  // Positions of lhs's and rhs's free dimensions in the cotangent.
  SmallVector<int64_t> gradLhsFree, gradRhsFree;
  for (size_t i = 0; i < lhsFree.size(); ++i)
    gradLhsFree.push_back(numBatch + i);
  for (size_t i = 0; i < rhsFree.size(); ++i)
    gradRhsFree.push_back(numBatch + lhsFree.size() + i);

  if (active.contains(lhs)) {
    // grad . rhs over rhs's free dimensions: (batch, lhs free, rhs's
    // remaining dimensions in ascending order, i.e. its contracting ones).
    Value product =
        matmul(grad, rhs, gradBatch, rhsBatch, gradRhsFree, rhsFree);
    SmallVector<int64_t> rhsRest = freeDims(rhsRank, rhsBatch, rhsFree);
    SmallVector<int64_t> permutation = toOperandLayout(
        lhsRank, lhsBatch, lhsFree, numBatch, lhsContract, rhsContract,
        rhsRest, numBatch + lhsFree.size());
    accumulate(lhs, permute(product, permutation));
  }
  if (active.contains(rhs)) {
    // lhs . grad over lhs's free dimensions: (batch, lhs's contracting
    // dimensions in ascending order, rhs free).
    Value product =
        matmul(lhs, grad, lhsBatch, gradBatch, lhsFree, gradLhsFree);
    SmallVector<int64_t> lhsRest = freeDims(lhsRank, lhsBatch, lhsFree);
    SmallVector<int64_t> permutation = toOperandLayout(
        rhsRank, rhsBatch, rhsFree, numBatch + lhsRest.size(), rhsContract,
        lhsContract, lhsRest, numBatch);
    accumulate(rhs, permute(product, permutation));
  }
  return success();
}

/// The integer splat `value` holds, if it is a prim.constant of one.
static std::optional<int64_t> splatInteger(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                        : DenseIntElementsAttr();
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APInt>().getSExtValue();
}

/// When the linear positions `indices` (P of them, in any shape) are `row
/// * width + column` with `row` counting 0..P-1 (FXToPrim's `aten::gather`
/// along the last dimension of a (P, width) tensor: cross-entropy's
/// nll_loss picking each row's class), the columns (P elements).
static Value rowColumns(Value indices, int64_t width) {
  if (auto reshape = indices.getDefiningOp<ReshapeOp>())
    indices = reshape.getOperand();
  auto add = indices.getDefiningOp<AddOp>();
  if (!add)
    return {};
  int64_t positions = typeOf(indices).getNumElements();
  auto countsRows = [&](Value v) {
    auto iota = v.getDefiningOp<IotaOp>();
    RankedTensorType type = typeOf(v);
    return iota && iota.getDim() == 0 && type.getDimSize(0) == positions &&
           type.getNumElements() == positions;
  };
  for (auto [scaled, column] : {std::pair(add.getLhs(), add.getRhs()),
                                std::pair(add.getRhs(), add.getLhs())}) {
    auto mul = scaled.getDefiningOp<MulOp>();
    if (!mul || typeOf(column).getNumElements() != positions)
      continue;
    for (auto [counter, factor] : {std::pair(mul.getLhs(), mul.getRhs()),
                                   std::pair(mul.getRhs(), mul.getLhs())})
      if (countsRows(counter) && splatInteger(factor) == width)
        return column;
  }
  return {};
}

LogicalResult Differentiator::gatherRule(GatherOp gather, Value grad) {
  Value x = gather.getOperand(), indices = gather.getIndices();
  RankedTensorType xType = typeOf(x), indexType = typeOf(indices);
  // One element of each row of a (P, width) tensor: the gradient is the
  // cotangent where a column is the row's pick, zero elsewhere, an
  // elementwise select that fuses with its neighbours (cross-entropy's
  // gradient in one pass over the logits). A scatter-add would fill the
  // logits-sized tensor with zeros, then add into it with atomics: a
  // materialised f32 copy of GPT-2's 4096 x 50257 logits, 785 MiB.
  if (gather.getDim() == 0 && xType.getNumElements() == xType.getDimSize(0)) {
    int64_t positions = indexType.getNumElements();
    int64_t size = xType.getDimSize(0);
    int64_t width = positions > 0 ? size / positions : 0;
    if (width > 0 && width * positions == size) {
      if (Value columns = rowColumns(indices, width)) {
        SmallVector<int64_t> shape = {positions, width};
        columns = ReshapeOp::create(b, loc, columns,
                                    ArrayRef<int64_t>{positions, 1});
        Value hit = compare(
            ComparisonPredicate::EQ,
            IotaOp::create(b, loc, shape, 1,
                           typeOf(columns).getElementType()),
            BroadcastInDimOp::create(b, loc, columns, shape,
                                     ArrayRef<int64_t>{0, 1}));
        Value rows = ReshapeOp::create(b, loc, grad,
                                       ArrayRef<int64_t>{positions, 1});
        auto wide = RankedTensorType::get(shape, typeOf(grad).getElementType());
        Value picked = select(
            hit,
            BroadcastInDimOp::create(b, loc, rows, shape,
                                     ArrayRef<int64_t>{0, 1}),
            splat(wide, 0.0));
        accumulate(x, ReshapeOp::create(b, loc, picked, xType.getShape()));
        return success();
      }
    }
  }
  // Each slice of the operand receives the sum of the cotangent's slices
  // that read it, repeated indices accumulating: a scatter-add of the
  // cotangent laid out as (index positions) x (everything else) into
  // (operand size along dim) x (everything else), O(positions x rest)
  // work. Half-precision cotangents are summed in f32 and rounded once, as
  // eager's embedding backward does.
  int64_t dim = gather.getDim(), rank = indexType.getRank();
  int64_t positions = indexType.getNumElements(), size = xType.getDimSize(dim);
  int64_t rest = xType.getNumElements() / std::max<int64_t>(size, 1);
  // The cotangent: (pre..., index..., post...) -> (index..., pre..., post...)
  // -> (positions, rest).
  int64_t gradRank = typeOf(grad).getRank();
  SmallVector<int64_t> indexFirst;
  for (int64_t d = 0; d < rank; ++d)
    indexFirst.push_back(dim + d);
  for (int64_t d = 0; d < gradRank; ++d)
    if (d < dim || d >= dim + rank)
      indexFirst.push_back(d);
  Value rows = ReshapeOp::create(b, loc, permute(grad, indexFirst),
                                 ArrayRef<int64_t>{positions, rest});
  Value flat = ReshapeOp::create(b, loc, indices, ArrayRef<int64_t>{positions});
  Type elt = typeOf(grad).getElementType();
  bool half = elt.isBF16() || elt.isF16();
  if (half)
    rows = ConvertOp::create(b, loc, rows, TypeAttr::get(b.getF32Type()));
  Value summed = ScatterAddOp::create(
      b, loc,
      RankedTensorType::get({size, rest}, typeOf(rows).getElementType()),
      rows, flat);
  if (half)
    summed = ConvertOp::create(b, loc, summed, TypeAttr::get(elt));
  // (size, rest) -> (size, pre..., post...) -> (pre..., size, post...).
  SmallVector<int64_t> sizeFirst = {size};
  for (int64_t d = 0; d < xType.getRank(); ++d)
    if (d != dim)
      sizeFirst.push_back(xType.getDimSize(d));
  SmallVector<int64_t> back;
  for (int64_t d = 0; d < xType.getRank(); ++d)
    back.push_back(d < dim ? d + 1 : d == dim ? 0 : d);
  accumulate(x, permute(ReshapeOp::create(b, loc, summed, sizeFirst), back));
  return success();
}

LogicalResult Differentiator::backprop(Operation *op, Value grad) {
  loc = op->getLoc();
  auto operand = [&](unsigned i) { return op->getOperand(i); };
  Value y = op->getNumResults() ? op->getResult(0) : Value();

  // Elementwise math.
  if (isa<NegOp>(op)) {
    accumulate(operand(0), neg(grad));
  } else if (isa<ExpOp>(op)) {
    accumulate(operand(0), mul(grad, y));
  } else if (isa<LogOp>(op)) {
    accumulate(operand(0), div(grad, operand(0)));
  } else if (isa<TanhOp>(op)) {
    // d tanh = 1 - tanh^2
    Value one = splat(typeOf(y), 1.0);
    accumulate(operand(0),
               mul(grad, SubOp::create(b, loc, one, mul(y, y))));
  } else if (isa<SinOp>(op)) {
    accumulate(operand(0), mul(grad, CosOp::create(b, loc, operand(0))));
  } else if (isa<CosOp>(op)) {
    accumulate(operand(0),
               neg(mul(grad, SinOp::create(b, loc, operand(0)))));
  } else if (isa<SqrtOp>(op)) {
    // d sqrt(x) = 1 / (2 sqrt(x))
    accumulate(operand(0), div(mul(grad, splat(typeOf(y), 0.5)), y));
  } else if (isa<RsqrtOp>(op)) {
    // d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
    Value cube = mul(mul(y, y), y);
    accumulate(operand(0), mul(grad, mul(splat(typeOf(y), -0.5), cube)));
  } else if (isa<ErfOp>(op)) {
    // d erf(x) = 2/sqrt(pi) exp(-x^2)
    Value x = operand(0);
    Value e = ExpOp::create(b, loc, neg(mul(x, x)));
    accumulate(x, mul(grad, mul(splat(typeOf(y), 2.0 / std::sqrt(M_PI)), e)));
  } else if (isa<AbsOp>(op)) {
    // grad * sign(x), sign(0) = 0.
    Value x = operand(0), zero = zerosLike(grad);
    Value positive = compare(ComparisonPredicate::GT, x, zero);
    Value negative = compare(ComparisonPredicate::LT, x, zero);
    accumulate(x, select(positive, grad, select(negative, neg(grad), zero)));
  } else if (isa<AddOp>(op)) {
    accumulate(operand(0), grad);
    accumulate(operand(1), grad);
  } else if (isa<SubOp>(op)) {
    accumulate(operand(0), grad);
    if (active.contains(operand(1)))
      accumulate(operand(1), neg(grad));
  } else if (isa<MulOp>(op)) {
    if (active.contains(operand(0)))
      accumulate(operand(0), mul(grad, operand(1)));
    if (active.contains(operand(1)))
      accumulate(operand(1), mul(grad, operand(0)));
  } else if (isa<DivOp>(op)) {
    // d(a/b) = da/b - a db/b^2 = da/b - y db/b
    Value gradOverB = div(grad, operand(1));
    if (active.contains(operand(0)))
      accumulate(operand(0), gradOverB);
    if (active.contains(operand(1)))
      accumulate(operand(1), neg(mul(gradOverB, y)));
  } else if (isa<PowOp>(op)) {
    // d a^b = b a^(b-1) da + a^b log(a) db
    Value a = operand(0), e = operand(1);
    if (active.contains(a)) {
      Value lower = PowOp::create(
          b, loc, a, SubOp::create(b, loc, e, splat(typeOf(e), 1.0)));
      accumulate(a, mul(grad, mul(e, lower)));
    }
    if (active.contains(e))
      accumulate(e, mul(grad, mul(y, LogOp::create(b, loc, a))));
  } else if (isa<MaximumOp, MinimumOp>(op)) {
    // PyTorch's rule: an operand takes the gradient unless it is the
    // smaller (larger) one, ties split it evenly, and against a value
    // without gradient (ReLU's zero) a tie gives nothing, as ReLU's
    // threshold_backward does. A NaN compares neither way: its operand
    // takes the gradient (eager's NaN gradient through a ReLU of a NaN),
    // and so does the other.
    bool isMax = isa<MaximumOp>(op);
    Value a = operand(0), c = operand(1);
    Value half = mul(grad, splat(typeOf(grad), 0.5));
    Value zero = zerosLike(grad);
    auto share = [&](Value self, Value other) {
      // Against a constant: nothing where self <= other (>= for the
      // minimum), one mask to save, as threshold_backward's.
      if (!active.contains(other))
        return select(compare(isMax ? ComparisonPredicate::LE
                                    : ComparisonPredicate::GE,
                              self, other),
                      zero, grad);
      Value loses = compare(isMax ? ComparisonPredicate::LT
                                  : ComparisonPredicate::GT,
                            self, other);
      Value ties = compare(ComparisonPredicate::EQ, self, other);
      return select(loses, zero, select(ties, half, grad));
    };
    if (active.contains(a))
      accumulate(a, share(a, c));
    if (active.contains(c))
      accumulate(c, share(c, a));
  } else if (auto where = dyn_cast<WhereOp>(op)) {
    Value zero = zerosLike(grad);
    if (active.contains(where.getOnTrue()))
      accumulate(where.getOnTrue(), select(where.getCondition(), grad, zero));
    if (active.contains(where.getOnFalse()))
      accumulate(where.getOnFalse(), select(where.getCondition(), zero, grad));
  } else if (auto clamp = dyn_cast<ClampOp>(op)) {
    if (active.contains(clamp.getLow()) || active.contains(clamp.getHigh()))
      return op->emitOpError() << "has no gradient rule for its bounds";
    Value x = clamp.getOperand();
    Value inside = compare(ComparisonPredicate::EQ, y, x);
    accumulate(x, select(inside, grad, zerosLike(grad)));
  } else if (auto convert = dyn_cast<ConvertOp>(op)) {
    Value x = convert.getOperand();
    if (active.contains(x))
      accumulate(x, ConvertOp::create(
                      b, loc, grad,
                      TypeAttr::get(typeOf(x).getElementType())));
  }
  // Shapes.
  else if (auto broadcast = dyn_cast<BroadcastInDimOp>(op)) {
    // Sum over the dimensions the broadcast created or stretched.
    Value x = broadcast.getOperand();
    RankedTensorType xType = typeOf(x), yType = typeOf(y);
    ArrayRef<int64_t> mapped = broadcast.getBroadcastDimensions();
    SmallVector<int64_t> summed;
    for (int64_t d = 0; d < yType.getRank(); ++d) {
      auto *it = llvm::find(mapped, d);
      if (it == mapped.end() ||
          xType.getDimSize(it - mapped.begin()) != yType.getDimSize(d))
        summed.push_back(d);
    }
    Value reduced = grad;
    if (!summed.empty())
      reduced = ReduceOp::create(b, loc, ReductionKind::Sum, grad, summed);
    if (typeOf(reduced).getShape() != xType.getShape())
      reduced = ReshapeOp::create(b, loc, reduced, xType.getShape());
    accumulate(x, reduced);
  } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    accumulate(reshape.getOperand(),
               ReshapeOp::create(b, loc, grad,
                                 typeOf(reshape.getOperand()).getShape()));
  } else if (auto perm = dyn_cast<PermuteOp>(op)) {
    accumulate(perm.getOperand(), permute(grad, invert(perm.getPermutation())));
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    // The gradient lands where the slice read: pad it back to the operand's
    // shape, strides becoming interior padding.
    ArrayRef<int64_t> shape = typeOf(slice.getOperand()).getShape();
    ArrayRef<int64_t> outShape = typeOf(y).getShape();
    SmallVector<int64_t> low, high, interior;
    for (auto [d, start, stride] :
         llvm::enumerate(slice.getStart(), slice.getStrides())) {
      int64_t last = outShape[d] == 0 ? start - 1
                                      : start + (outShape[d] - 1) * stride;
      low.push_back(start);
      interior.push_back(outShape[d] == 0 ? 0 : stride - 1);
      high.push_back(shape[d] - 1 - last);
    }
    accumulate(slice.getOperand(),
               PadOp::create(b, loc, grad, low, high, interior, APFloat(0.0)));
  } else if (auto concat = dyn_cast<ConcatenateOp>(op)) {
    // Each input's gradient is its part of the incoming one.
    int64_t dim = concat.getDim(), offset = 0;
    ArrayRef<int64_t> outShape = typeOf(y).getShape();
    for (Value input : concat.getInputs()) {
      int64_t size = typeOf(input).getDimSize(dim);
      if (active.contains(input)) {
        SmallVector<int64_t> start(outShape.size(), 0), limit(outShape),
            strides(outShape.size(), 1);
        start[dim] = offset;
        limit[dim] = offset + size;
        accumulate(input,
                   SliceOp::create(b, loc, grad, start, limit, strides));
      }
      offset += size;
    }
  } else if (auto pad = dyn_cast<PadOp>(op)) {
    // The padding's value is a constant: the operand's gradient is the
    // slice of the incoming one it came from (cropping pads read nothing
    // of the cropped part, whose gradient is zero).
    Value x = pad.getOperand();
    ArrayRef<int64_t> shape = typeOf(x).getShape();
    if (llvm::any_of(pad.getLow(), [](int64_t v) { return v < 0; }) ||
        llvm::any_of(pad.getHigh(), [](int64_t v) { return v < 0; }))
      return op->emitOpError() << "has no gradient rule for cropping";
    SmallVector<int64_t> start, limit, strides;
    for (auto [d, low, interior] :
         llvm::enumerate(pad.getLow(), pad.getInterior())) {
      start.push_back(low);
      strides.push_back(interior + 1);
      limit.push_back(shape[d] == 0 ? low
                                    : low + (shape[d] - 1) * (interior + 1) + 1);
    }
    accumulate(x, SliceOp::create(b, loc, grad, start, limit, strides));
  }
  // Indexing.
  else if (auto gather = dyn_cast<GatherOp>(op)) {
    return gatherRule(gather, grad);
  } else if (auto scatter = dyn_cast<ScatterOp>(op)) {
    // The operand's gradient: the cotangent with the replaced slices
    // zeroed; the updates': the cotangent's slices they replaced.
    Value updates = scatter.getUpdates();
    accumulate(scatter.getOperand(),
               ScatterOp::create(b, loc, grad, scatter.getIndices(),
                                 zerosLike(updates), scatter.getDim()));
    accumulate(updates, GatherOp::create(b, loc, grad, scatter.getIndices(),
                                         scatter.getDim()));
  }
  // Windows: a gathered point's gradient goes back to the point it read,
  // and the other way round.
  else if (auto gather = dyn_cast<WindowGatherOp>(op)) {
    accumulate(gather.getOperand(),
               WindowScatterOp::create(
                   b, loc, typeOf(gather.getOperand()), grad,
                   gather.getPositions(), gather.getWindow(),
                   gather.getStrides(), gather.getPadding(),
                   gather.getDilation()));
  } else if (auto scatter = dyn_cast<WindowScatterOp>(op)) {
    accumulate(scatter.getSource(),
               WindowGatherOp::create(
                   b, loc, typeOf(scatter.getSource()), grad,
                   scatter.getPositions(), scatter.getWindow(),
                   scatter.getStrides(), scatter.getPadding(),
                   scatter.getDilation()));
  }
  // Reductions and contractions.
  else if (auto reduce = dyn_cast<ReduceOp>(op)) {
    Value x = reduce.getOperand();
    RankedTensorType xType = typeOf(x);
    ArrayRef<int64_t> dims = reduce.getDims();
    switch (reduce.getKind()) {
    case ReductionKind::Sum:
      accumulate(x, unreduce(grad, xType, dims));
      break;
    case ReductionKind::Max:
    case ReductionKind::Min: {
      // The extremes share the gradient evenly (PyTorch's amax/amin).
      Value mask = asFloat(
          compare(ComparisonPredicate::EQ, x, unreduce(y, xType, dims)),
          xType);
      Value count = ReduceOp::create(b, loc, ReductionKind::Sum, mask, dims);
      accumulate(x, mul(unreduce(div(grad, count), xType, dims), mask));
      break;
    }
    case ReductionKind::Prod:
      return op->emitOpError() << "has no gradient rule yet";
    }
  } else if (auto dot = dyn_cast<DotOp>(op)) {
    return dotRule(dot, grad);
  } else if (auto conv = dyn_cast<ConvolutionOp>(op)) {
    // The input's gradient is the transposed convolution of the cotangent,
    // the weight's the correlation of the input with it: two ops the
    // targets run as library calls (or expand into matrix products).
    Value x = conv.getInput(), w = conv.getWeight();
    if (active.contains(x))
      accumulate(x, ConvolutionBackwardInputOp::create(
                        b, loc, typeOf(x), grad, w, conv.getStride(),
                        conv.getPadding(), conv.getDilation(),
                        conv.getGroups(), conv.getChannelsLast()));
    if (active.contains(w))
      accumulate(w, ConvolutionBackwardWeightOp::create(
                        b, loc, typeOf(w), grad, x, conv.getStride(),
                        conv.getPadding(), conv.getDilation(),
                        conv.getGroups(), conv.getChannelsLast()));
  } else {
    return op->emitOpError() << "has no gradient rule yet";
  }
  return success();
}

LogicalResult Differentiator::run() {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<BlockArgument> marked;
  for (BlockArgument arg : body.getArguments()) {
    if (!func.getArgAttr(arg.getArgNumber(), kRequiresGradAttrName))
      continue;
    func.removeArgAttr(arg.getArgNumber(), kRequiresGradAttrName);
    if (!isDifferentiable(arg.getType()))
      return func.emitError() << "argument #" << arg.getArgNumber()
                              << " is marked " << kRequiresGradAttrName
                              << " but " << arg.getType()
                              << " has no gradient";
    marked.push_back(arg);
  }

  // Forward activity: values computed from a marked argument through
  // floating-point values.
  for (BlockArgument arg : marked)
    active.insert(arg);
  for (Operation &op : body.without_terminator()) {
    if (!llvm::any_of(op.getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    // Comparisons, index results, constants and ops marked
    // prim.stop_gradient stop gradients.
    if (isa<CompareOp, ArgReduceOp, WindowArgmaxOp>(op) ||
        op.hasAttr(PrimDialect::getStopGradientAttrName()))
      continue;
    for (Value result : op.getResults())
      if (isDifferentiable(result.getType()))
        active.insert(result);
  }

  // The joint signature: a cotangent argument per float result, a gradient
  // result per marked argument.
  unsigned numOriginalArgs = body.getNumArguments();
  unsigned numForwardResults = ret.getNumOperands();
  b.setInsertionPoint(ret);
  SmallVector<Value> cotangentArgs;
  for (Value result : ret.getOperands()) {
    if (!isDifferentiable(result.getType()))
      continue;
    BlockArgument cotangent = body.addArgument(result.getType(), func.getLoc());
    cotangentArgs.push_back(cotangent);
    accumulate(result, cotangent);
  }
  // The backward goes after the forward, built while walking it in reverse
  // (a snapshot: the walk must not see what it builds).
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward)) {
    if (op->getNumResults() != 1)
      continue;
    Value grad = cotangents.lookup(op->getResult(0));
    if (!grad)
      continue;
    if (failed(backprop(op, grad)))
      return failure();
  }
  SmallVector<Value> results(ret.getOperands());
  for (BlockArgument arg : marked) {
    Value grad = cotangents.lookup(arg);
    if (!grad) {
      loc = func.getLoc();
      grad = zerosLike(arg);
    }
    results.push_back(grad);
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();

  // The new signature; the cotangent arguments are named for readers of
  // the IR.
  SmallVector<DictionaryAttr> argAttrs;
  func.getAllArgAttrs(argAttrs);
  for (size_t i = 0; i < cotangentArgs.size(); ++i)
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(fx::kNameAttrName,
                       b.getStringAttr("cotangent_" + std::to_string(i)))));
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(FunctionType::get(
      func.getContext(), body.getArgumentTypes(), resultTypes));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  // What tc-partition needs to split it: primal arguments, cotangent
  // arguments, forward results.
  func->setAttr(kJointAttrName,
                b.getDenseI64ArrayAttr(
                    {static_cast<int64_t>(numOriginalArgs),
                     static_cast<int64_t>(cotangentArgs.size()),
                     static_cast<int64_t>(numForwardResults)}));
  return success();
}

struct AutodiffPass : public prim::impl::AutodiffPassBase<AutodiffPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      bool marked = false;
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        marked |= static_cast<bool>(func.getArgAttr(i, kRequiresGradAttrName));
      if (!marked || func.isExternal())
        continue;
      if (!llvm::hasSingleElement(func.getBody()))
        return (void)(func.emitError() << "tc-autodiff needs one block"),
               signalPassFailure();
      if (failed(Differentiator(func).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
