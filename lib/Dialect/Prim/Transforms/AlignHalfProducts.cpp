//===- AlignHalfProducts.cpp - 16-byte rows for half GEMMs ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Pads large f16/bf16 matrix products whose GEMM would have a leading
// dimension that is not a multiple of 8 elements. See the pass description
// in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tc::prim {
#define GEN_PASS_DEF_ALIGNHALFPRODUCTSPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

/// Elements per 16 bytes of f16/bf16: the leading dimension cuBLAS's
/// fast half-precision kernels need a multiple of.
constexpr int64_t kAlignElements = 8;
/// Multiply-adds below which the slow kernels cost little.
constexpr int64_t kMinWork = int64_t(1) << 27;
/// Multiply-adds per byte that the pads and the slice copy, below which
/// the copies cost more than the slow kernels lose (the H100's slow
/// kernels are about 5x slower; it moves about 2.5 TB/s and multiplies
/// about 3.5e14 bf16 pairs a second: 3.5e14 / (4 * 2.5e12) = 35).
constexpr int64_t kMinWorkPerCopiedByte = 32;

int64_t roundUp(int64_t n) {
  return (n + kAlignElements - 1) / kAlignElements * kAlignElements;
}

/// The permute of `v`'s last two dimensions that defines it (the GEMM
/// reads its operand transposed: PrimToKernel's gemmOperand), or null.
PermuteOp swapOfLastTwo(Value v) {
  auto permute = v.getDefiningOp<PermuteOp>();
  return permute && permute.swapsLastTwo() ? permute : nullptr;
}

/// `v` with `high[d]` zeros appended along each dimension `d` of its own
/// (logical) shape. A transposed operand pads under its permute.
Value padOperand(PatternRewriter &rewriter, Location loc, Value v,
                 ArrayRef<int64_t> high, bool transposed) {
  int64_t rank = high.size();
  SmallVector<int64_t> zeros(rank, 0), amounts(high);
  if (transposed) {
    auto permute = swapOfLastTwo(v);
    std::swap(amounts[rank - 1], amounts[rank - 2]);
    Value padded = PadOp::create(rewriter, loc, permute.getOperand(), zeros,
                                 amounts, zeros, APFloat(0.0));
    return PermuteOp::create(rewriter, loc, padded,
                             permute.getPermutation());
  }
  return PadOp::create(rewriter, loc, v, zeros, amounts, zeros, APFloat(0.0));
}

} // namespace

std::optional<HalfProductPadding> mlir::tc::prim::halfProductPadding(
    int64_t m, int64_t k, int64_t n, bool lhsTransposed, bool rhsTransposed,
    int64_t elementBytes, int64_t resultElements, int64_t lhsElements,
    int64_t rhsElements, bool resultViewed) {
  if (resultElements * k < kMinWork)
    return std::nullopt;
  // Leading dimensions: the result's is n; the lhs's k (m when it is read
  // transposed); the rhs's n (k when transposed).
  HalfProductPadding pads;
  pads.n = roundUp(n) - n;
  pads.k = (!lhsTransposed || rhsTransposed) ? roundUp(k) - k : 0;
  pads.m = lhsTransposed ? roundUp(m) - m : 0;
  if (!pads.n && !pads.k && !pads.m)
    return std::nullopt;
  // Each pad reads and writes its operand; the slice, when copied, its
  // result.
  int64_t copied = resultViewed ? 0 : 2 * elementBytes * resultElements;
  if (pads.m || pads.k)
    copied += 2 * elementBytes * lhsElements;
  if (pads.k || pads.n)
    copied += 2 * elementBytes * rhsElements;
  if (resultElements * k < kMinWorkPerCopiedByte * copied)
    return std::nullopt;
  return pads;
}

namespace {

struct AlignHalfDot : public OpRewritePattern<DotOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotOp op,
                                PatternRewriter &rewriter) const override {
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(op.getRhs().getType());
    auto type = cast<RankedTensorType>(op.getType());
    Type elt = type.getElementType();
    if (!elt.isF16() && !elt.isBF16())
      return rewriter.notifyMatchFailure(op, "not a half-precision product");
    // A symbolic M (the graph's `?` as the lhs's leading size, rows of a
    // graph compiled once for every size) is costed at its hint, and only
    // n is padded: the lhs, whose rows vary, stays as it is.
    if (!rhsType.hasStaticShape() ||
        llvm::any_of(lhsType.getShape().drop_front(),
                     ShapedType::isDynamic))
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    bool symbolic = !lhsType.hasStaticShape();
    // The GEMM forms of PrimToKernel.
    int64_t rank = lhsType.getRank(), rhsRank = rhsType.getRank();
    DotOp::GemmForm form = op.getGemmForm();
    if (form == DotOp::GemmForm::None)
      return rewriter.notifyMatchFailure(op, "not a GEMM form");
    bool flattened = form == DotOp::GemmForm::Flattened;
    int64_t m = lhsType.getDimSize(rank - 2), k = lhsType.getDimSize(rank - 1),
            n = rhsType.getDimSize(rhsRank - 1);
    bool lhsT = !flattened && swapOfLastTwo(op.getLhs());
    bool rhsT = static_cast<bool>(swapOfLastTwo(op.getRhs()));
    if (ShapedType::isDynamic(m))
      m = kSymbolHint;
    std::optional<HalfProductPadding> pads = halfProductPadding(
        m, k, n, lhsT, rhsT, elt.getIntOrFloatBitWidth() / 8,
        hintNumElements(type), hintNumElements(lhsType),
        rhsType.getNumElements());
    if (!pads)
      return rewriter.notifyMatchFailure(op, "aligned, small or not worth it");
    if (symbolic && (pads->m || pads->k))
      return rewriter.notifyMatchFailure(op, "would pad the symbolic rows");
    int64_t padM = pads->m, padK = pads->k, padN = pads->n;

    Location loc = op.getLoc();
    Value lhs = op.getLhs(), rhs = op.getRhs();
    if (padM || padK) {
      SmallVector<int64_t> high(rank, 0);
      high[rank - 2] = padM;
      high[rank - 1] = padK;
      lhs = padOperand(rewriter, loc, lhs, high, lhsT);
    }
    if (padK || padN) {
      SmallVector<int64_t> high(rhsRank, 0);
      high[rhsRank - 2] = padK;
      high[rhsRank - 1] = padN;
      rhs = padOperand(rewriter, loc, rhs, high, rhsT);
    }
    Value product = DotOp::create(
        rewriter, loc, lhs, rhs, op.getLhsBatchAttr(), op.getRhsBatchAttr(),
        op.getLhsContractingAttr(), op.getRhsContractingAttr());
    int64_t resultRank = type.getRank();
    SmallVector<int64_t> start(resultRank, 0), steps(resultRank, 1);
    rewriter.replaceOpWithNewOp<SliceOp>(op, product, start, type.getShape(),
                                         steps);
    return success();
  }
};

struct AlignHalfProductsPass
    : public prim::impl::AlignHalfProductsPassBase<AlignHalfProductsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AlignHalfDot>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
