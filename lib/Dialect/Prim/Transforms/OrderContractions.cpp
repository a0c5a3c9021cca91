//===- OrderContractions.cpp - contracted dimensions in memory order -----===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Reorders the dimensions a product contracts as one merged dimension so
// that its operands' permutes read them in memory order. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>

namespace mlir::tc::prim {
#define GEN_PASS_DEF_ORDERCONTRACTIONSPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

/// The dimensions of `shape` larger than 1 that make each dimension of
/// `target` when `shape` is reshaped to it (reshapeRuns' grouping), or
/// nullopt where a run makes several dimensions of `target` larger than 1
/// (a split).
std::optional<SmallVector<SmallVector<int64_t>>>
mergedRuns(ArrayRef<int64_t> shape, ArrayRef<int64_t> target) {
  FailureOr<SmallVector<ReshapeRun>> runs = reshapeRuns(shape, target);
  if (failed(runs))
    return std::nullopt;
  SmallVector<SmallVector<int64_t>> merged(target.size());
  for (const ReshapeRun &run : *runs) {
    std::optional<size_t> made;
    for (size_t j = run.outBegin; j < run.outEnd; ++j)
      if (target[j] != 1) {
        if (made)
          return std::nullopt;
        made = j;
      }
    if (!made)
      continue;
    for (size_t d = run.inBegin; d < run.inEnd; ++d)
      if (shape[d] != 1)
        merged[*made].push_back(d);
  }
  return merged;
}

/// A product operand `reshape(permute(source))` whose contracted dimension
/// merges several dimensions of the permute's result.
struct MergedContraction {
  PermuteOp permute;
  ReshapeOp reshape;
  /// The permute's result dimensions larger than 1 that the contracted
  /// dimension merges, in order.
  SmallVector<int64_t> positions;
  /// Their sizes.
  SmallVector<int64_t> sizes;

  /// The source dimension each of `positions` reads.
  SmallVector<int64_t> sourceDims() {
    SmallVector<int64_t> dims;
    for (int64_t p : positions)
      dims.push_back(permute.getPermutation()[p]);
    return dims;
  }
};

/// Operand `v` of a product, contracted along its dimension `contracted`,
/// as a MergedContraction, or nullopt.
std::optional<MergedContraction> mergedContraction(Value v,
                                                   int64_t contracted) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape || !reshape->hasOneUse())
    return std::nullopt;
  auto permute = reshape.getOperand().getDefiningOp<PermuteOp>();
  if (!permute || !permute->hasOneUse())
    return std::nullopt;
  auto in = cast<RankedTensorType>(permute.getType());
  auto out = cast<RankedTensorType>(reshape.getType());
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return std::nullopt;
  std::optional<SmallVector<SmallVector<int64_t>>> runs =
      mergedRuns(in.getShape(), out.getShape());
  if (!runs)
    return std::nullopt;
  MergedContraction merged{permute, reshape, (*runs)[contracted], {}};
  for (int64_t d : merged.positions)
    merged.sizes.push_back(in.getDimSize(d));
  if (merged.positions.size() < 2)
    return std::nullopt;
  return merged;
}

/// How a GEMM reads `reshape(permute(source, permutation))` of `shape`.
enum class ReadForm {
  /// As it is: the permute and the reshape (a copy).
  Permuted,
  /// As a reshape of `source` (the permute moves only dimensions of size
  /// 1): in place.
  Reshape,
  /// As a reshape of `source` whose last two dimensions are swapped: in
  /// place, with the GEMM's transpose flag.
  TransposedReshape,
};

ReadForm readForm(ArrayRef<int64_t> sourceShape, ArrayRef<int64_t> permutation,
                  ArrayRef<int64_t> shape) {
  SmallVector<int64_t> permuted;
  for (int64_t d : permutation)
    permuted.push_back(sourceShape[d]);
  std::optional<SmallVector<SmallVector<int64_t>>> runs =
      mergedRuns(permuted, shape);
  if (!runs)
    return ReadForm::Permuted;
  // The source dimensions of `order`'s dimensions of `shape`, in order:
  // increasing where `source`'s elements are in that order already.
  auto increasing = [&](ArrayRef<size_t> order) {
    int64_t last = -1;
    for (size_t j : order)
      for (int64_t position : (*runs)[j]) {
        if (permutation[position] <= last)
          return false;
        last = permutation[position];
      }
    return true;
  };
  SmallVector<size_t> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  if (increasing(order))
    return ReadForm::Reshape;
  if (shape.size() < 2)
    return ReadForm::Permuted;
  std::swap(order[shape.size() - 2], order.back());
  return increasing(order) ? ReadForm::TransposedReshape : ReadForm::Permuted;
}

/// `reshape(permute(source, permutation))` of `shape` in its ReadForm.
Value buildRead(PatternRewriter &rewriter, Location loc, Value source,
                ArrayRef<int64_t> permutation, ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> sourceShape =
      cast<RankedTensorType>(source.getType()).getShape();
  switch (readForm(sourceShape, permutation, shape)) {
  case ReadForm::Reshape:
    return ReshapeOp::create(rewriter, loc, source, shape);
  case ReadForm::TransposedReshape: {
    SmallVector<int64_t> swapped(shape);
    std::swap(swapped[shape.size() - 2], swapped.back());
    auto swap = llvm::to_vector(
        llvm::seq<int64_t>(0, static_cast<int64_t>(shape.size())));
    std::swap(swap[shape.size() - 2], swap.back());
    Value rows = ReshapeOp::create(rewriter, loc, source, swapped);
    return PermuteOp::create(rewriter, loc, rows, swap);
  }
  case ReadForm::Permuted:
    break;
  }
  Value permuted = PermuteOp::create(rewriter, loc, source, permutation);
  return ReshapeOp::create(rewriter, loc, permuted, shape);
}

/// Pairs of `dims` out of increasing order.
int64_t inversions(ArrayRef<int64_t> dims) {
  int64_t count = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = i + 1; j < dims.size(); ++j)
      count += dims[i] > dims[j];
  return count;
}

struct OrderMergedContraction : public OpRewritePattern<DotOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotOp dot,
                                PatternRewriter &rewriter) const override {
    if (dot.getLhsContracting().size() != 1)
      return rewriter.notifyMatchFailure(dot, "one contracted dimension");
    std::optional<MergedContraction> lhs =
        mergedContraction(dot.getLhs(), dot.getLhsContracting()[0]);
    std::optional<MergedContraction> rhs =
        mergedContraction(dot.getRhs(), dot.getRhsContracting()[0]);
    if (!lhs || !rhs || lhs->sizes != rhs->sizes)
      return rewriter.notifyMatchFailure(dot, "no merged contraction");
    // Summing over the merged dimensions in any order pairs the same
    // elements, as long as both operands take the same order: the one
    // that sorts a graph input's dimensions (a weight, read in place once
    // its permute is a reshape), else the right operand's.
    bool lhsFirst = isa<BlockArgument>(lhs->permute.getOperand()) &&
                    !isa<BlockArgument>(rhs->permute.getOperand());
    SmallVector<int64_t> reference =
        lhsFirst ? lhs->sourceDims() : rhs->sourceDims();
    SmallVector<size_t> order(reference.size());
    std::iota(order.begin(), order.end(), 0);
    llvm::sort(order, [&](size_t a, size_t b) {
      return reference[a] < reference[b];
    });
    auto reordered = [&](MergedContraction m) {
      SmallVector<int64_t> dims = m.sourceDims(), out;
      for (size_t i : order)
        out.push_back(dims[i]);
      return out;
    };
    SmallVector<int64_t> newLhs = reordered(*lhs), newRhs = reordered(*rhs);
    if (inversions(newLhs) + inversions(newRhs) >=
        inversions(lhs->sourceDims()) + inversions(rhs->sourceDims()))
      return rewriter.notifyMatchFailure(dot, "already in the best order");
    auto rebuild = [&](MergedContraction m, ArrayRef<int64_t> dims) -> Value {
      SmallVector<int64_t> permutation(m.permute.getPermutation());
      for (auto [position, dim] : llvm::zip(m.positions, dims))
        permutation[position] = dim;
      return buildRead(rewriter, m.reshape.getLoc(), m.permute.getOperand(),
                       permutation,
                       cast<RankedTensorType>(m.reshape.getType()).getShape());
    };
    Value newLhsValue = rebuild(*lhs, newLhs);
    Value newRhsValue = rebuild(*rhs, newRhs);
    rewriter.modifyOpInPlace(dot, [&] {
      dot.getLhsMutable().assign(newLhsValue);
      dot.getRhsMutable().assign(newRhsValue);
    });
    return success();
  }
};

/// A product operand `reshape(permute(source))` that is a reshape of
/// `source`, or one transposed in its last two dimensions, in that form:
/// the GEMM reads `source`'s buffer in place (with its transpose flag).
struct ReadOperandInPlace : public OpRewritePattern<DotOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotOp dot,
                                PatternRewriter &rewriter) const override {
    bool changed = false;
    for (OpOperand *operand : {&dot.getLhsMutable(), &dot.getRhsMutable()}) {
      auto reshape = operand->get().getDefiningOp<ReshapeOp>();
      if (!reshape || !reshape->hasOneUse())
        continue;
      auto permute = reshape.getOperand().getDefiningOp<PermuteOp>();
      if (!permute || !permute->hasOneUse() ||
          !cast<RankedTensorType>(permute.getType()).hasStaticShape() ||
          !cast<RankedTensorType>(reshape.getType()).hasStaticShape())
        continue;
      Value source = permute.getOperand();
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(reshape.getType()).getShape();
      if (readForm(cast<RankedTensorType>(source.getType()).getShape(),
                   permute.getPermutation(), shape) == ReadForm::Permuted)
        continue;
      Value read = buildRead(rewriter, reshape.getLoc(), source,
                             permute.getPermutation(), shape);
      rewriter.modifyOpInPlace(dot, [&] { operand->set(read); });
      changed = true;
    }
    return success(changed);
  }
};

/// A GEMM-form product read only transposed in its last two dimensions
/// (`permute(dot(a, b))`, a linear layer's weight gradient `(x^T g)^T`)
/// is computed transposed, `dot(b^T, a^T)`: the GEMM writes the layout it
/// is read in, and reads its operands' transposes in place (their permutes
/// fold, or become the GEMM's transpose flags), where the transposed read
/// was a copy of the whole result with scattered writes.
struct TransposedProduct : public OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PermuteOp permute,
                                PatternRewriter &rewriter) const override {
    auto dot = permute.getOperand().getDefiningOp<DotOp>();
    if (!dot || !dot->hasOneUse() || !permute.swapsLastTwo())
      return rewriter.notifyMatchFailure(permute, "not a transposed product");
    DotOp::GemmForm form = dot.getGemmForm();
    if (form != DotOp::GemmForm::Plain && form != DotOp::GemmForm::Batched)
      return rewriter.notifyMatchFailure(permute, "not a plain or batched "
                                                  "GEMM");
    bool batched = form == DotOp::GemmForm::Batched;
    SmallVector<int64_t> swap =
        batched ? SmallVector<int64_t>{0, 2, 1} : SmallVector<int64_t>{1, 0};
    Location loc = dot.getLoc();
    Value lhs = PermuteOp::create(rewriter, loc, dot.getRhs(), swap);
    Value rhs = PermuteOp::create(rewriter, loc, dot.getLhs(), swap);
    rewriter.replaceOpWithNewOp<DotOp>(
        permute, lhs, rhs, dot.getLhsBatchAttr(), dot.getRhsBatchAttr(),
        dot.getLhsContractingAttr(), dot.getRhsContractingAttr());
    rewriter.eraseOp(dot);
    return success();
  }
};

struct OrderContractionsPass
    : public prim::impl::OrderContractionsPassBase<OrderContractionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<OrderMergedContraction>(&getContext(), /*benefit=*/2);
    patterns.add<ReadOperandInPlace>(&getContext());
    patterns.add<TransposedProduct>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
