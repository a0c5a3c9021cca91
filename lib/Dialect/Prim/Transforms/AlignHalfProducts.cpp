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
    if (!lhsType.hasStaticShape() || !rhsType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shape");
    // The GEMM forms of PrimToKernel.
    int64_t rank = lhsType.getRank(), rhsRank = rhsType.getRank();
    DotOp::GemmForm form = op.getGemmForm();
    if (form == DotOp::GemmForm::None)
      return rewriter.notifyMatchFailure(op, "not a GEMM form");
    bool flattened = form == DotOp::GemmForm::Flattened;
    int64_t m = lhsType.getDimSize(rank - 2), k = lhsType.getDimSize(rank - 1),
            n = rhsType.getDimSize(rhsRank - 1);
    if (type.getNumElements() * k < kMinWork)
      return rewriter.notifyMatchFailure(op, "a small product");
    bool lhsT = !flattened && swapOfLastTwo(op.getLhs());
    bool rhsT = static_cast<bool>(swapOfLastTwo(op.getRhs()));
    // Leading dimensions: the result's is n; the lhs's k (m when it is read
    // transposed); the rhs's n (k when transposed).
    int64_t padN = roundUp(n) - n;
    int64_t padK = (!lhsT || rhsT) ? roundUp(k) - k : 0;
    int64_t padM = lhsT ? roundUp(m) - m : 0;
    if (!padN && !padK && !padM)
      return rewriter.notifyMatchFailure(op, "aligned already");

    // Each pad reads and writes its operand; the slice, when copied, its
    // result.
    int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
    int64_t copied = 2 * bytes * type.getNumElements();
    if (padM || padK)
      copied += 2 * bytes * lhsType.getNumElements();
    if (padK || padN)
      copied += 2 * bytes * rhsType.getNumElements();
    if (type.getNumElements() * k < kMinWorkPerCopiedByte * copied)
      return rewriter.notifyMatchFailure(op, "the copies would cost more");

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
