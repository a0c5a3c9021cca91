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

static Value throughLayout(PatternRewriter &rewriter, Location loc,
                           Value wide, ArrayRef<Operation *> layout) {
  for (Operation *step : llvm::reverse(layout)) {
    if (auto reshape = dyn_cast<ReshapeOp>(step))
      wide = ReshapeOp::create(rewriter, loc, wide, reshape.getShapeAttr());
    else
      wide = PermuteOp::create(rewriter, loc, wide,
                               cast<PermuteOp>(step).getPermutationAttr());
  }
  return wide;
}

/// `v` in f32, converted where it is computed and then through the
/// permutes and reshapes between (a convert commutes with them): a
/// transposed weight then stays a transpose of a dense conversion, which a
/// GEMM reads with its transpose flag, where converting the transpose was
/// a strided copy (ResNet-50's bf16 classifier weight: 4 ms of a 190 ms
/// CPU step, against 0.9 for its GEMM).
static Value widenBelowLayout(PatternRewriter &rewriter, Location loc,
                              Value v) {
  SmallVector<Operation *> layout;
  while (isa_and_nonnull<ReshapeOp, PermuteOp>(v.getDefiningOp())) {
    layout.push_back(v.getDefiningOp());
    v = v.getDefiningOp()->getOperand(0);
  }
  Value wide = ConvertOp::create(rewriter, loc, v,
                                 TypeAttr::get(rewriter.getF32Type()));
  return throughLayout(rewriter, loc, wide, layout);
}

struct WidenHalfDot : public OpRewritePattern<DotOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotOp op,
                                PatternRewriter &rewriter) const override {
    Type elt = getElementTypeOrSelf(op.getType());
    if (!elt.isF16() && !elt.isBF16())
      return rewriter.notifyMatchFailure(op, "not a half-precision product");
    Location loc = op.getLoc();
    Value lhs = widenBelowLayout(rewriter, loc, op.getLhs());
    Value rhs = widenBelowLayout(rewriter, loc, op.getRhs());
    Value product = DotOp::create(
        rewriter, loc, lhs, rhs, op.getLhsBatchAttr(), op.getRhsBatchAttr(),
        op.getLhsContractingAttr(), op.getRhsContractingAttr());
    rewriter.replaceOpWithNewOp<ConvertOp>(op, product, TypeAttr::get(elt));
    return success();
  }
};

/// Whether `v` (through single-use reshapes and permutes) is added to a
/// broadcast vector: a convolution's bias.
static bool feedsBias(Value v) {
  while (v.hasOneUse() &&
         isa<ReshapeOp, PermuteOp>(*v.getUsers().begin()))
    v = v.getUsers().begin()->getResult(0);
  if (!v.hasOneUse())
    return false;
  auto add = dyn_cast<AddOp>(*v.getUsers().begin());
  if (!add)
    return false;
  Value other = add.getLhs() == v ? add.getRhs() : add.getLhs();
  auto bcast = other.getDefiningOp<BroadcastInDimOp>();
  return bcast &&
         cast<RankedTensorType>(bcast.getOperand().getType()).getRank() == 1;
}

/// A half-precision convolution or convolution gradient (a library call,
/// which the CPU's PyTorch kernels and eager compute with f32 accumulation)
/// as the same op on f32 operands, rounded once: the bias add after it
/// then rounds once too (AddToWidenedProduct). With `onlyBiased`, only a
/// forward convolution whose result takes a bias: the library computes the
/// others in their type.
template <typename ConvOp>
struct WidenHalfConvolution : public OpRewritePattern<ConvOp> {
  WidenHalfConvolution(MLIRContext *context, bool onlyBiased)
      : OpRewritePattern<ConvOp>(context), onlyBiased(onlyBiased) {}

  bool onlyBiased;

  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type elt = type.getElementType();
    if (!elt.isF16() && !elt.isBF16())
      return rewriter.notifyMatchFailure(op, "not a half-precision op");
    if (onlyBiased && (!isa<ConvolutionOp>(op.getOperation()) ||
                       !feedsBias(op.getResult())))
      return rewriter.notifyMatchFailure(op, "computed in its type");
    Location loc = op.getLoc();
    TypeAttr f32 = TypeAttr::get(rewriter.getF32Type());
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(ConvertOp::create(rewriter, loc, operand, f32));
    Operation *wide = rewriter.clone(*op);
    wide->setOperands(operands);
    wide->getResult(0).setType(type.clone(rewriter.getF32Type()));
    rewriter.replaceOpWithNewOp<ConvertOp>(op, wide->getResult(0),
                                           TypeAttr::get(elt));
    return success();
  }
};

/// A half-precision add of a widened product (through the reshapes and
/// permutes that put it in the result's layout: an expanded convolution)
/// and another half tensor (a bias) adds in f32 and rounds once, as eager's
/// GEMM and convolution epilogues do: rounding the product, then the sum,
/// put f16 convolutions with a bias 1 ulp from eager's.
///
///   %p = prim.convert %p32 to f16;  %r = prim.reshape %p ...;
///   %s = prim.add %r, %bias
/// becomes
///   %r32 = prim.reshape %p32 ...;
///   %s = prim.convert (prim.add %r32, (prim.convert %bias to f32)) to f16
/// The f32 product whose rounding to a half type `v` is, through single-use
/// reshapes and permutes (returned in `layout`, outermost first); null
/// when `v` is not one.
static Value widenedProduct(Value v, SmallVectorImpl<Operation *> &layout) {
  layout.clear();
  while (v.hasOneUse() &&
         isa_and_nonnull<ReshapeOp, PermuteOp>(v.getDefiningOp())) {
    layout.push_back(v.getDefiningOp());
    v = v.getDefiningOp()->getOperand(0);
  }
  auto rounded = v.getDefiningOp<ConvertOp>();
  if (!rounded || !v.hasOneUse() ||
      !isa_and_nonnull<DotOp, ConvolutionOp>(
          rounded.getOperand().getDefiningOp()) ||
      !getElementTypeOrSelf(rounded.getOperand().getType()).isF32())
    return Value();
  return rounded.getOperand();
}

/// `wide` through the layout ops `layout` (outermost first), rebuilt.
struct AddToWidenedProduct : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    Type elt = getElementTypeOrSelf(op.getType());
    if (!elt.isF16() && !elt.isBF16())
      return rewriter.notifyMatchFailure(op, "not a half-precision add");
    for (unsigned side = 0; side < 2; ++side) {
      // The layout ops between the product's rounding and the add.
      SmallVector<Operation *> layout;
      Value wide = widenedProduct(op->getOperand(side), layout);
      if (!wide)
        continue;
      Location loc = op.getLoc();
      wide = throughLayout(rewriter, loc, wide, layout);
      TypeAttr f32 = TypeAttr::get(rewriter.getF32Type());
      Value other = ConvertOp::create(rewriter, loc,
                                      op->getOperand(1 - side), f32);
      Value sum = AddOp::create(rewriter, loc, wide, other);
      rewriter.replaceOpWithNewOp<ConvertOp>(op, sum, TypeAttr::get(elt));
      return success();
    }
    return rewriter.notifyMatchFailure(op, "no widened product operand");
  }
};

struct WidenHalfProductsPass
    : public prim::impl::WidenHalfProductsPassBase<WidenHalfProductsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenHalfDot, AddToWidenedProduct>(&getContext());
    patterns.add<WidenHalfConvolution<ConvolutionOp>,
                 WidenHalfConvolution<ConvolutionBackwardInputOp>,
                 WidenHalfConvolution<ConvolutionBackwardWeightOp>>(
        &getContext(), /*onlyBiased=*/!convolutions);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
