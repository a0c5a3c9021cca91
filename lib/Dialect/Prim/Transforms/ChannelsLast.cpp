//===- ChannelsLast.cpp - convolutions in cuDNN's fast layout --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites 2-d f16/bf16 convolutions (and their gradients) to the
// channels-last layout, then moves the permutes back to PyTorch's layout
// down through the elementwise ops, reductions and pooling windows that
// follow, until they meet the next convolution's permute to channels-last
// and cancel. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tc::prim {
#define GEN_PASS_DEF_CHANNELSLASTCONVOLUTIONSPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

/// The rank this pass works on: 2-d convolutions, (N, C, H, W).
constexpr int64_t kRank = 4;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Whether a convolution on tensors of `type` runs channels-last: 2-d, in
/// half precision (where cuDNN's channels-last kernels are the fast ones
/// and its channels-first path transposes around them), or any float type
/// with `allFloats`.
bool takesChannelsLast(RankedTensorType type, bool allFloats) {
  Type elt = type.getElementType();
  return type.getRank() == kRank && type.hasStaticShape() &&
         (elt.isF16() || elt.isBF16() || (allFloats && isa<FloatType>(elt)));
}

/// Whether a CPU convolution producing `result` stays channels-first
/// (`smallMapsFirst`): an f32/f64 convolution whose output maps are at most
/// 7x7 with at most 512 output pixels over the batch. oneDNN's
/// channels-last kernels block the output's pixels and idle on so few,
/// while its channels-first kernels block the output channels; and a
/// channels-first weight needs no transposing copy. On two AVX-512 cores
/// (torch 2.14, batch 4) ResNet-50's stage-4 convolutions ran 0.60-0.97x
/// the time channels-first (2048->512 1x1: 0.90 against 1.50 ms), a step
/// 2.5-4.5% less; at batch 16 (784 pixels) the two layouts are even, and
/// 14x14 maps favour channels-last even at batch 1. Half-precision
/// convolutions keep channels-last (unmeasured).
bool staysChannelsFirst(RankedTensorType result, bool smallMapsFirst) {
  constexpr int64_t kMaxMapPixels = 7 * 7, kMaxPixels = 512;
  Type elt = result.getElementType();
  if (!smallMapsFirst || !(elt.isF32() || elt.isF64()) ||
      result.getRank() != kRank || !result.hasStaticShape())
    return false;
  int64_t map = result.getDimSize(2) * result.getDimSize(3);
  return map <= kMaxMapPixels && map * result.getDimSize(0) <= kMaxPixels;
}

Value toLast(PatternRewriter &b, Location loc, Value v) {
  return PermuteOp::create(b, loc, v, toChannelsLast(kRank));
}

Value toFirst(PatternRewriter &b, Location loc, Value v) {
  return PermuteOp::create(b, loc, v, toChannelsFirst(kRank));
}

/// prim.convolution %x, %w -> permute(convolution {channels_last}
/// (permute(%x), permute(%w))).
struct ConvolutionToChannelsLast : public OpRewritePattern<ConvolutionOp> {
  ConvolutionToChannelsLast(MLIRContext *context, bool allFloats,
                            bool smallMapsFirst)
      : OpRewritePattern(context), allFloats(allFloats),
        smallMapsFirst(smallMapsFirst) {}
  bool allFloats, smallMapsFirst;

  LogicalResult matchAndRewrite(ConvolutionOp op,
                                PatternRewriter &b) const override {
    if (op.getChannelsLast() ||
        !takesChannelsLast(typeOf(op.getInput()), allFloats))
      return b.notifyMatchFailure(op, "not a 2-d half convolution");
    if (staysChannelsFirst(typeOf(op.getResult()), smallMapsFirst))
      return b.notifyMatchFailure(op, "small output maps: channels-first");
    Location loc = op.getLoc();
    Value y = ConvolutionOp::create(
        b, loc, toLast(b, loc, op.getInput()), toLast(b, loc, op.getWeight()),
        op.getStride(), op.getPadding(), op.getDilation(), op.getGroups(),
        /*channels_last=*/true);
    b.replaceOp(op, toFirst(b, loc, y));
    return success();
  }
};

/// The gradients likewise: all three tensors channels-last.
template <typename Op>
struct GradientToChannelsLast : public OpRewritePattern<Op> {
  GradientToChannelsLast(MLIRContext *context, bool allFloats)
      : OpRewritePattern<Op>(context), allFloats(allFloats) {}
  bool allFloats;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    if (op.getChannelsLast() ||
        !takesChannelsLast(typeOf(op.getGrad()), allFloats))
      return b.notifyMatchFailure(op, "not a 2-d half convolution");
    Location loc = op.getLoc();
    Value result = Op::create(
        b, loc, permuteType(typeOf(op.getResult()), toChannelsLast(kRank)),
        toLast(b, loc, op.getGrad()), toLast(b, loc, op.getOther()),
        op.getStride(), op.getPadding(), op.getDilation(), op.getGroups(),
        /*channels_last=*/true);
    b.replaceOp(op, toFirst(b, loc, result));
    return success();
  }
};

/// Whether `v` is a permute to channels-first (what the patterns above
/// leave after a convolution); its channels-last operand if so.
Value channelsLastSource(Value v) {
  auto permute = v.getDefiningOp<PermuteOp>();
  if (!permute || permute.getPermutation() !=
                      ArrayRef<int64_t>(toChannelsFirst(kRank)))
    return nullptr;
  return permute.getOperand();
}

/// The broadcast dimensions of `bcast` (to a channels-first tensor) on
/// the channels-last tensor, or none where they would not stay increasing.
std::optional<SmallVector<int64_t>> channelsLastDims(BroadcastInDimOp bcast) {
  // Result dimension d of the broadcast is dimension first[d] of the
  // channels-last tensor.
  SmallVector<int64_t> first = toChannelsFirst(kRank), dims;
  for (int64_t d : bcast.getBroadcastDimensions())
    dims.push_back(first[d]);
  if (!llvm::is_sorted(dims))
    return std::nullopt;
  return dims;
}

/// Whether `bcast` expands unit dimensions in place (dimension d to d) of
/// a value whose maps are 1x1, which reads the same channels-first or
/// channels-last: a squeeze-and-excitation gate, [N, C, 1, 1], over
/// [N, C, H, W] (from a channels-last convolution, a permute to
/// channels-first; on the CPU its 1x1 convolutions stay channels-first).
bool expandsUnitMaps(BroadcastInDimOp bcast) {
  auto type = dyn_cast<RankedTensorType>(bcast.getOperand().getType());
  ArrayRef<int64_t> dims = bcast.getBroadcastDimensions();
  if (!type || type.getRank() != kRank ||
      static_cast<int64_t>(dims.size()) != kRank || type.getDimSize(2) != 1 ||
      type.getDimSize(3) != 1)
    return false;
  for (int64_t d = 0; d < kRank; ++d)
    if (dims[d] != d)
      return false;
  return true;
}

/// Whether `v` (channels-first) can be read channels-last without a copy:
/// it is a permute to channels-first, a splat constant, a broadcast whose
/// broadcast dimensions stay in order or that expands 1x1 maps
/// (`expandsUnitMaps`), or (up to `depth` deep) an
/// elementwise op of such values (average pooling's divisor: the product
/// of two broadcast window counts).
bool readsChannelsLast(Value v, int depth = 3) {
  if (channelsLastSource(v))
    return true;
  if (auto cst = v.getDefiningOp<ConstantOp>())
    return isa<SplatElementsAttr>(cst.getValue());
  if (auto bcast = v.getDefiningOp<BroadcastInDimOp>())
    return channelsLastDims(bcast).has_value() || expandsUnitMaps(bcast);
  Operation *op = v.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return depth > 0 && op && type && op->hasTrait<OpTrait::Elementwise>() &&
         op->getNumResults() == 1 && op->getNumRegions() == 0 &&
         llvm::all_of(op->getOperands(), [&](Value operand) {
           auto t = dyn_cast<RankedTensorType>(operand.getType());
           return t && t.getShape() == type.getShape() &&
                  readsChannelsLast(operand, depth - 1);
         });
}

/// `v`, of which readsChannelsLast holds, as the same values
/// channels-last.
Value asChannelsLast(PatternRewriter &b, Value v) {
  if (Value source = channelsLastSource(v))
    return source;
  RankedTensorType last = permuteType(typeOf(v), toChannelsLast(kRank));
  if (auto cst = v.getDefiningOp<ConstantOp>())
    return ConstantOp::create(
        b, cst.getLoc(), cast<SplatElementsAttr>(cst.getValue()).reshape(last));
  if (auto bcast = v.getDefiningOp<BroadcastInDimOp>()) {
    if (std::optional<SmallVector<int64_t>> dims = channelsLastDims(bcast))
      return BroadcastInDimOp::create(b, bcast.getLoc(), bcast.getOperand(),
                                      last.getShape(), *dims);
    // [N, 1, 1, C]: the permute's operand, or a permute of unit
    // dimensions (no data moves).
    Value source = channelsLastSource(bcast.getOperand());
    if (!source)
      source = toLast(b, bcast.getLoc(), bcast.getOperand());
    return BroadcastInDimOp::create(b, bcast.getLoc(), source,
                                    last.getShape(),
                                    bcast.getBroadcastDimensions());
  }
  Operation *op = v.getDefiningOp();
  IRMapping mapping;
  for (Value operand : op->getOperands())
    mapping.map(operand, asChannelsLast(b, operand));
  Operation *clone = b.clone(*op, mapping);
  clone->getResult(0).setType(last);
  return clone->getResult(0);
}

/// `values` (one per channels-first dimension) by channels-last
/// dimension: channels-first dimension d is channels-last dimension
/// toChannelsFirst[d].
SmallVector<int64_t> byChannelsLastDims(ArrayRef<int64_t> values) {
  SmallVector<int64_t> first = toChannelsFirst(kRank), last(kRank);
  for (int64_t d = 0; d < kRank; ++d)
    last[first[d]] = values[d];
  return last;
}

/// prim.pad of a permute to channels-first pads the channels-last tensor
/// (average pooling's zero border).
struct SinkThroughPad : public OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PadOp op, PatternRewriter &b) const override {
    Value source = channelsLastSource(op.getOperand());
    if (!source)
      return failure();
    Value padded = PadOp::create(b, op.getLoc(), source,
                                 byChannelsLastDims(op.getLow()),
                                 byChannelsLastDims(op.getHigh()),
                                 byChannelsLastDims(op.getInterior()),
                                 op.getValue());
    b.replaceOp(op, toFirst(b, op.getLoc(), padded));
    return success();
  }
};

/// prim.slice of a permute to channels-first slices the channels-last
/// tensor (average pooling's window offsets, strided subsampling).
struct SinkThroughSlice : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &b) const override {
    Value source = channelsLastSource(op.getOperand());
    if (!source)
      return failure();
    Value sliced = SliceOp::create(b, op.getLoc(), source,
                                   byChannelsLastDims(op.getStart()),
                                   byChannelsLastDims(op.getLimit()),
                                   byChannelsLastDims(op.getStrides()));
    b.replaceOp(op, toFirst(b, op.getLoc(), sliced));
    return success();
  }
};

/// prim.concatenate of permutes to channels-first (and other values read
/// channels-last) concatenates the channels-last tensors along the same
/// dimension (Inception's branches, joined along the channels).
struct SinkThroughConcatenate : public OpRewritePattern<ConcatenateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatenateOp op,
                                PatternRewriter &b) const override {
    if (typeOf(op.getResult()).getRank() != kRank ||
        llvm::none_of(op.getInputs(), channelsLastSource) ||
        !llvm::all_of(op.getInputs(),
                      [](Value v) { return readsChannelsLast(v); }))
      return failure();
    SmallVector<Value> inputs;
    for (Value v : op.getInputs())
      inputs.push_back(asChannelsLast(b, v));
    int64_t dim = toChannelsFirst(kRank)[op.getDim()];
    Value joined = ConcatenateOp::create(b, op.getLoc(), inputs, dim);
    b.replaceOp(op, toFirst(b, op.getLoc(), joined));
    return success();
  }
};

/// An elementwise op of which at least one operand is a permute to
/// channels-first, and every operand can be read channels-last: the op
/// channels-last, then one permute to channels-first after it.
struct SinkThroughElementwise : public RewritePattern {
  SinkThroughElementwise(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &b) const override {
    if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumResults() != 1 ||
        op->getNumRegions() != 0)
      return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || type.getRank() != kRank ||
        llvm::none_of(op->getOperands(), channelsLastSource))
      return failure();
    for (Value v : op->getOperands())
      if (typeOf(v).getShape() != type.getShape())
        return failure();
    // Check every operand before creating any op.
    if (!llvm::all_of(op->getOperands(),
                      [](Value v) { return readsChannelsLast(v); }))
      return b.notifyMatchFailure(op, "an operand not channels-last");
    // A clone (with its attributes and properties) on the channels-last
    // operands.
    IRMapping mapping;
    for (Value v : op->getOperands())
      mapping.map(v, asChannelsLast(b, v));
    Operation *last = b.clone(*op, mapping);
    last->getResult(0).setType(permuteType(type, toChannelsLast(kRank)));
    b.replaceOp(op, toFirst(b, op->getLoc(), last->getResult(0)));
    return success();
  }
};

/// A reduction of a permute to channels-first reduces the channels-last
/// tensor over the same dimensions (its result permuted where the kept
/// dimensions change order).
struct SinkThroughReduce : public OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &b) const override {
    Value source = channelsLastSource(op.getOperand());
    if (!source)
      return failure();
    SmallVector<int64_t> first = toChannelsFirst(kRank), dims, kept;
    for (int64_t d : op.getDims())
      dims.push_back(first[d]);
    llvm::sort(dims);
    for (int64_t d = 0; d < kRank; ++d)
      if (!llvm::is_contained(op.getDims(), d))
        kept.push_back(first[d]);
    Value reduced =
        ReduceOp::create(b, op.getLoc(), op.getKind(), source, dims);
    // Result dimension i is the channels-last dimension kept[i]; the new
    // reduction keeps those in increasing order.
    SmallVector<int64_t> sorted(kept), permutation;
    llvm::sort(sorted);
    for (int64_t d : kept)
      permutation.push_back(llvm::find(sorted, d) - sorted.begin());
    if (!llvm::is_sorted(permutation))
      reduced = PermuteOp::create(b, op.getLoc(), reduced, permutation);
    b.replaceOp(op, reduced);
    return success();
  }
};

/// The window attributes of `op` over all four dimensions of the
/// channels-last tensor (window 1, stride 1, padding 0 and dilation 1 on
/// the batch and channels), or failure where the window's dimensions would
/// change order (and with them the positions' numbering).
template <typename Op> struct ChannelsLastWindow {
  SmallVector<int64_t> window, strides, padding, dilation;

  static FailureOr<ChannelsLastWindow> get(Op op) {
    size_t spatial = op.getWindow().size();
    if (spatial > kRank)
      return failure();
    size_t lead = kRank - spatial;
    auto full = [&](ArrayRef<int64_t> values, int64_t fill) {
      SmallVector<int64_t> out(lead, fill);
      out.append(values.begin(), values.end());
      return byChannelsLastDims(out);
    };
    ChannelsLastWindow w{full(op.getWindow(), 1), full(op.getStrides(), 1),
                         full(op.getPadding(), 0), full(op.getDilation(), 1)};
    // The windowed channels-first dimensions, in order, must map to
    // increasing channels-last dimensions; the channels (1 -> 3) may
    // not be windowed.
    SmallVector<int64_t> first = toChannelsFirst(kRank), order;
    for (size_t i = 0; i < spatial; ++i)
      if (op.getWindow()[i] > 1)
        order.push_back(first[lead + i]);
    if (!llvm::is_sorted(order) ||
        (lead <= 1 && op.getWindow()[1 - lead] > 1))
      return failure();
    return w;
  }
};

/// window_argmax of a permute to channels-first: the argmax of the
/// channels-last tensor over the same windows.
struct SinkThroughWindowArgmax : public OpRewritePattern<WindowArgmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WindowArgmaxOp op,
                                PatternRewriter &b) const override {
    Value source = channelsLastSource(op.getOperand());
    if (!source)
      return failure();
    auto w = ChannelsLastWindow<WindowArgmaxOp>::get(op);
    if (failed(w))
      return failure();
    Location loc = op.getLoc();
    Value argmax = WindowArgmaxOp::create(
        b, loc, permuteType(typeOf(op.getResult()), toChannelsLast(kRank)),
        source, w->window, w->strides, w->padding, w->dilation);
    b.replaceOp(op, toFirst(b, loc, argmax));
    return success();
  }
};

/// window_gather and window_scatter whose tensor operand is a permute to
/// channels-first: the op on channels-last tensors (the positions
/// permuted too, which cancels when they come from a sunk argmax).
template <typename Op>
struct SinkThroughWindowAccess : public OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    Value source = channelsLastSource(op->getOperand(0));
    if (!source || !channelsLastSource(op.getPositions()))
      return failure();
    auto w = ChannelsLastWindow<Op>::get(op);
    if (failed(w))
      return failure();
    Location loc = op.getLoc();
    Value result = Op::create(
        b, loc, permuteType(typeOf(op.getResult()), toChannelsLast(kRank)),
        source, channelsLastSource(op.getPositions()), w->window, w->strides,
        w->padding, w->dilation);
    b.replaceOp(op, toFirst(b, loc, result));
    return success();
  }
};

struct ChannelsLastConvolutionsPass
    : public prim::impl::ChannelsLastConvolutionsPassBase<
          ChannelsLastConvolutionsPass> {
  using ChannelsLastConvolutionsPassBase::ChannelsLastConvolutionsPassBase;

  void runOnOperation() override {
    bool any = false, gradients = false;
    getOperation().walk([&](Operation *op) {
      if (!isa<ConvolutionOp, ConvolutionBackwardInputOp,
               ConvolutionBackwardWeightOp>(op))
        return;
      any |= takesChannelsLast(typeOf(op->getOperand(0)), allFloats);
      gradients |= !isa<ConvolutionOp>(op);
    });
    // The permutes move only in functions with convolutions to feed.
    // Depthwise ones (one channel per group) too: cuDNN 9's channels-last
    // depthwise kernels took a quarter to a half of its channels-first
    // ones' time at ConvNeXt's and MobileNetV2's sizes (bf16, H200;
    // benchmarks/results/depthwise-h200.txt), and channels-first they
    // cost a transposing copy on each side when the ops between them run
    // channels-last (LayerNorm over channels). Without a convolution, pooling windows of an input that is
    // channels-last in memory (a permute of an argument to channels-first:
    // a CNN's pooling compiled apart from its convolutions, after a graph
    // break) run channels-last too: read channels-first, max pooling over
    // 64 channels took 5-6 ms on two CPU cores (Inductor 0.4-1.0 ms).
    bool lastInputs = false;
    if (!any)
      getOperation().walk([&](PermuteOp permute) {
        lastInputs |= isa<BlockArgument>(permute.getOperand()) &&
                      permute.getPermutation() == ArrayRef<int64_t>(
                                               toChannelsFirst(kRank)) &&
                      takesChannelsLast(typeOf(permute), allFloats);
      });
    bool windows = false;
    if (lastInputs)
      getOperation().walk([&](WindowArgmaxOp) { windows = true; });
    if (!any && !(lastInputs && windows))
      return;
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    // Measured on inference: a training graph's convolutions (and their
    // gradients, which read the same activations) all stay channels-last.
    patterns.add<ConvolutionToChannelsLast>(context, allFloats,
                                            smallMapsFirst && !gradients);
    patterns.add<GradientToChannelsLast<ConvolutionBackwardInputOp>,
                 GradientToChannelsLast<ConvolutionBackwardWeightOp>>(
        context, allFloats);
    patterns.add<SinkThroughElementwise, SinkThroughReduce,
                 SinkThroughPad, SinkThroughSlice, SinkThroughConcatenate,
                 SinkThroughWindowArgmax,
                 SinkThroughWindowAccess<WindowGatherOp>,
                 SinkThroughWindowAccess<WindowScatterOp>>(context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
