//===- ExpandConvolutions.cpp - convolutions as matrix products -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites prim.convolution as one matrix product of the input's windows
// (im2col) for targets without a library convolution. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tc::prim {
#define GEN_PASS_DEF_EXPANDCONVOLUTIONSPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The input is zero-padded once; the strided window each kernel offset
/// reads, laid out as (N * out..., C), is concatenated side by side into
/// (N * out..., K * C) rows and multiplied by the weights laid out as
/// (K * C, O). tc-autodiff differentiates the result through the slice,
/// concatenate, pad and dot rules, and tc-fuse reads the concatenation of
/// windows with one load per element.
struct ExpandConvolution : public OpRewritePattern<ConvolutionOp> {
  ExpandConvolution(MLIRContext *context, bool unitMapsOnly)
      : OpRewritePattern(context), unitMapsOnly(unitMapsOnly) {}

  /// Whether `op` is one product of its input as it is: a 1x1 kernel over
  /// 1x1 maps, unpadded, one group (a squeeze-and-excitation gate's
  /// layers).
  static bool overUnitMaps(ConvolutionOp op) {
    auto ones = [](ArrayRef<int64_t> sizes) {
      return llvm::all_of(sizes, [](int64_t s) { return s == 1; });
    };
    return op.getGroups() == 1 &&
           llvm::all_of(op.getPadding(), [](int64_t p) { return p == 0; }) &&
           ones(typeOf(op.getInput()).getShape().drop_front(2)) &&
           ones(typeOf(op.getWeight()).getShape().drop_front(2));
  }

  LogicalResult matchAndRewrite(ConvolutionOp op,
                                PatternRewriter &b) const override {
    if (op.getChannelsLast())
      return b.notifyMatchFailure(op, "channels last");
    if (overUnitMaps(op)) {
      // (N, C, 1...) by (O, C, 1...): a Linear layer's product, the
      // weights' transpose a permute the GEMM reads in place (no copy).
      Location loc = op.getLoc();
      RankedTensorType xType = typeOf(op.getInput()),
                       wType = typeOf(op.getWeight());
      Value rows = ReshapeOp::create(
          b, loc, op.getInput(),
          ArrayRef<int64_t>{xType.getDimSize(0), xType.getDimSize(1)});
      Value cols = PermuteOp::create(
          b, loc,
          ReshapeOp::create(
              b, loc, op.getWeight(),
              ArrayRef<int64_t>{wType.getDimSize(0), wType.getDimSize(1)}),
          ArrayRef<int64_t>{1, 0});
      Value sum = DotOp::create(b, loc, rows, cols, ArrayRef<int64_t>{},
                                ArrayRef<int64_t>{}, ArrayRef<int64_t>{1},
                                ArrayRef<int64_t>{0});
      b.replaceOpWithNewOp<ReshapeOp>(op, sum,
                                      typeOf(op.getResult()).getShape());
      return success();
    }
    if (unitMapsOnly)
      return b.notifyMatchFailure(op, "not over unit maps");
    Location loc = op.getLoc();
    Value x = op.getInput(), w = op.getWeight();
    RankedTensorType xType = typeOf(x), wType = typeOf(w),
                     type = typeOf(op.getResult());
    if (!xType.hasStaticShape() || !wType.hasStaticShape())
      return b.notifyMatchFailure(op, "dynamic shapes");
    ArrayRef<int64_t> stride = op.getStride(), padding = op.getPadding(),
                      dilation = op.getDilation();
    int64_t rank = xType.getRank(), spatial = rank - 2;
    int64_t n = xType.getDimSize(0), c = xType.getDimSize(1),
            o = wType.getDimSize(0);
    SmallVector<int64_t> out, kernel;
    for (int64_t d = 0; d < spatial; ++d) {
      kernel.push_back(wType.getDimSize(2 + d));
      out.push_back(type.getDimSize(2 + d));
    }
    auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
      return ReshapeOp::create(b, loc, v, shape);
    };
    if (llvm::any_of(padding, [](int64_t p) { return p != 0; })) {
      SmallVector<int64_t> low(rank, 0), interior(rank, 0);
      for (int64_t d = 0; d < spatial; ++d)
        low[2 + d] = padding[d];
      x = PadOp::create(b, loc, x, low, low, interior, APFloat(0.0));
    }
    int64_t points = n;
    for (int64_t s : out)
      points *= s;
    // (N, C, out...) -> (N, out..., C).
    SmallVector<int64_t> toLast = {0};
    for (int64_t d = 0; d < spatial; ++d)
      toLast.push_back(2 + d);
    toLast.push_back(1);
    // One (N * out..., C) block of rows per kernel offset, side by side:
    // (N * out..., K * C), K = the kernel's size, offsets outermost.
    SmallVector<int64_t> offset(spatial, 0);
    SmallVector<Value> blocks;
    while (true) {
      SmallVector<int64_t> start(rank, 0), limit(typeOf(x).getShape()),
          steps(rank, 1);
      for (int64_t d = 0; d < spatial; ++d) {
        start[2 + d] = offset[d] * dilation[d];
        limit[2 + d] = start[2 + d] + (out[d] - 1) * stride[d] + 1;
        steps[2 + d] = stride[d];
      }
      Value window = SliceOp::create(b, loc, x, start, limit, steps);
      blocks.push_back(
          reshape(PermuteOp::create(b, loc, window, toLast), {points, c}));
      int64_t d = spatial - 1;
      while (d >= 0 && ++offset[d] == kernel[d])
        offset[d--] = 0;
      if (d < 0)
        break;
    }
    int64_t groups = op.getGroups();
    if (groups != 1)
      return expandGroups(op, b, blocks, points, c, o, groups, out);
    Value rows = blocks.size() == 1
                     ? blocks.front()
                     : ConcatenateOp::create(b, loc, blocks, 1).getResult();
    // The weights in the same order: (O, C, kernel...) -> (kernel..., C, O).
    SmallVector<int64_t> weightOrder;
    for (int64_t d = 0; d < spatial; ++d)
      weightOrder.push_back(2 + d);
    weightOrder.push_back(1);
    weightOrder.push_back(0);
    int64_t taps = static_cast<int64_t>(blocks.size());
    Value cols =
        reshape(PermuteOp::create(b, loc, w, weightOrder), {taps * c, o});
    Value sum = DotOp::create(b, loc, rows, cols, ArrayRef<int64_t>{},
                              ArrayRef<int64_t>{}, ArrayRef<int64_t>{1},
                              ArrayRef<int64_t>{0});
    replaceByProduct(op, b, sum, n, out, o);
    return success();
  }

  /// Replaces `op` by `sum`, its (N * out..., O) products in any layout
  /// whose elements are in that order, as (N, O, out...).
  static void replaceByProduct(ConvolutionOp op, PatternRewriter &b,
                               Value sum, int64_t n, ArrayRef<int64_t> out,
                               int64_t o) {
    int64_t spatial = static_cast<int64_t>(out.size());
    SmallVector<int64_t> nhwo = {n};
    llvm::append_range(nhwo, out);
    nhwo.push_back(o);
    SmallVector<int64_t> toChannels = {0, spatial + 1};
    for (int64_t d = 0; d < spatial; ++d)
      toChannels.push_back(1 + d);
    b.replaceOpWithNewOp<PermuteOp>(
        op, ReshapeOp::create(b, op.getLoc(), sum, nhwo), toChannels);
  }

  /// Grouped: each block's channels split into (groups, C / groups), the
  /// blocks side by side per group, (G, N * out..., K * C / G) rows by the
  /// (G, K * C / G, O / G) weights in one product batched over the groups.
  static LogicalResult expandGroups(ConvolutionOp op, PatternRewriter &b,
                                    ArrayRef<Value> blocks, int64_t points,
                                    int64_t c, int64_t o, int64_t groups,
                                    ArrayRef<int64_t> out) {
    Location loc = op.getLoc();
    auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
      return ReshapeOp::create(b, loc, v, shape);
    };
    Value w = op.getWeight();
    RankedTensorType wType = typeOf(w);
    int64_t rank = wType.getRank(), spatial = rank - 2;
    int64_t cg = c / groups, og = o / groups;
    int64_t taps = static_cast<int64_t>(blocks.size());
    SmallVector<Value> split;
    for (Value block : blocks)
      split.push_back(reshape(block, {points, groups, cg}));
    Value rows = split.size() == 1
                     ? split.front()
                     : ConcatenateOp::create(b, loc, split, 2).getResult();
    rows = PermuteOp::create(b, loc, rows, ArrayRef<int64_t>{1, 0, 2});
    // (O, C / G, kernel...) -> (G, O / G, C / G, kernel...)
    //   -> (G, kernel..., C / G, O / G) -> (G, K * C / G, O / G).
    SmallVector<int64_t> grouped = {groups, og, cg};
    SmallVector<int64_t> order = {0};
    for (int64_t d = 0; d < spatial; ++d) {
      grouped.push_back(wType.getDimSize(2 + d));
      order.push_back(3 + d);
    }
    order.push_back(2);
    order.push_back(1);
    Value cols = reshape(
        PermuteOp::create(b, loc, reshape(w, grouped), order),
        {groups, taps * cg, og});
    Value sum = DotOp::create(b, loc, rows, cols, ArrayRef<int64_t>{0},
                              ArrayRef<int64_t>{0}, ArrayRef<int64_t>{2},
                              ArrayRef<int64_t>{1});
    // (G, N * out..., O / G) -> (N * out..., G, O / G), products in
    // (N * out..., O) order.
    sum = PermuteOp::create(b, loc, sum, ArrayRef<int64_t>{1, 0, 2});
    replaceByProduct(op, b, sum, typeOf(op.getInput()).getDimSize(0), out, o);
    return success();
  }

  bool unitMapsOnly;
};

struct ExpandConvolutionsPass
    : public prim::impl::ExpandConvolutionsPassBase<ExpandConvolutionsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandConvolution>(&getContext(), unitMapsOnly);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // The rest stay library convolutions.
    if (unitMapsOnly)
      return;
    // What is left has no expansion: an error at its location.
    WalkResult walk = getOperation().walk([](Operation *op) {
      if (auto conv = dyn_cast<ConvolutionOp>(op)) {
        conv.emitOpError() << "in the channels-last layout needs a library "
                              "convolution (tc-expand-convolutions expands "
                              "channels-first ones)";
        return WalkResult::interrupt();
      }
      if (isa<ConvolutionBackwardInputOp, ConvolutionBackwardWeightOp>(op)) {
        op->emitOpError() << "needs a library convolution: "
                             "tc-expand-convolutions expands forward "
                             "convolutions, before tc-autodiff";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
