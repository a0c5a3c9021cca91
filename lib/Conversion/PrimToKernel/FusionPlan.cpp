//===- FusionPlan.cpp - which values get buffers ----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-fuse's plan: which values are realized in buffers (graph inputs and
// outputs, library calls' operands and results, values too costly to
// recompute in every kernel that reads them), the rest inlined into the
// kernels of the realized values that read them.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::fuse;

namespace mlir::tc::fuse {

prim::WindowArgmaxOp maxOfWindows(prim::WindowGatherOp gather) {
  auto argmax = gather.getPositions().getDefiningOp<prim::WindowArgmaxOp>();
  if (argmax && argmax.getOperand() == gather.getOperand() &&
      argmax.getWindow() == gather.getWindow() &&
      argmax.getStrides() == gather.getStrides() &&
      argmax.getPadding() == gather.getPadding() &&
      argmax.getDilation() == gather.getDilation())
    return argmax;
  return nullptr;
}

int64_t windowReads(Operation *op) {
  if (auto argmax = dyn_cast<prim::WindowArgmaxOp>(op))
    return WindowGeometry(argmax).positions();
  if (auto gather = dyn_cast<prim::WindowGatherOp>(op))
    return maxOfWindows(gather) ? WindowGeometry(gather).positions() : 1;
  if (auto scatter = dyn_cast<prim::WindowScatterOp>(op))
    return WindowGeometry(scatter).positions();
  return 1;
}

/// Whether reading through `reshape` divides an index: some run of its
/// dimensions (reshapeRuns, as KernelBuilder::reshapeIndex reads them)
/// holds two or more operand dimensions larger than 1.
static bool mergesDimensions(prim::ReshapeOp reshape) {
  ArrayRef<int64_t> in = tensorType(reshape.getOperand()).getShape();
  FailureOr<SmallVector<ReshapeRun>> runs =
      reshapeRuns(in, reshape.getShape());
  if (failed(runs))
    return false;
  return llvm::any_of(*runs, [&](const ReshapeRun &run) {
    return llvm::count_if(in.slice(run.inBegin, run.inEnd - run.inBegin),
                          [](int64_t size) { return size > 1; }) > 1;
  });
}

LogicalResult FusionPlan::build() {
  for (BlockArgument arg : func.getArguments())
    realized.insert(arg);
  // Where a realized reshape of a graph input is an alias of its buffer
  // (alias-input-reshapes), one that merges dimensions is realized: its
  // readers index the alias, where reading through the reshape divides
  // each point's index back into the input's dimensions (the rows [O,
  // C * kh * kw] of a weight standardization's [O, C, kh, kw] weights: two
  // integer divisions an element, and a loop that does not vectorize).
  if (aliasInputReshapes)
    func.walk([&](prim::ReshapeOp reshape) {
      if (isa<BlockArgument>(reshape.getOperand()) &&
          tensorType(reshape.getOperand()).hasStaticShape() &&
          tensorType(reshape).hasStaticShape() && mergesDimensions(reshape))
        realized.insert(reshape.getResult());
    });
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());

  // Matrix products are library calls on buffers.
  WalkResult walk = func.walk([&](prim::DotOp dot) {
    int64_t rank = tensorType(dot.getLhs()).getRank();
    using GemmForm = prim::DotOp::GemmForm;
    GemmForm form = dot.getGemmForm();
    // An n-d by 2-d product: the lhs's leading dimensions are the rows.
    bool flattened = form == GemmForm::Flattened;
    if (form == GemmForm::None) {
      dot.emitOpError() << "is not a (batched) matrix product the GEMM "
                           "library call supports";
      return WalkResult::interrupt();
    }
    // The flattened lhs is read as it is (its transpose is no matrix's).
    GemmOperand lhs = flattened ? GemmOperand{dot.getLhs(), false}
                                : gemmOperand(dot.getLhs());
    if (flattened)
      realized.insert(dot.getLhs());
    Gemm gemm{dot, lhs, gemmOperand(dot.getRhs()), Value(), dot.getResult()};
    // Bias epilogue: dot + broadcast(bias[N]) as the product's only use.
    // A 2-d product takes it at once; an n-d by 2-d one (a Linear on a
    // [B, S, C] input) once the realization below is known (see
    // `biasEpilogues`).
    Value bias;
    if (rank == 2 || flattened)
      if (prim::AddOp add = dot.getBiasAdd(bias);
          add && !isSplatConstant(bias)) {
        if (rank == 2) {
          realized.insert(bias);
          gemm.bias = bias;
          gemm.result = add.getResult();
        } else {
          biasEpilogues.push_back({dot.getResult(), add.getResult(), bias});
        }
      }
    realized.insert(gemm.result);
    gemms[gemm.result] = gemm;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // So are convolutions and their gradients.
  auto addConv = [&](auto op, kernel::ConvKind kind, Value a, Value b) {
    bool weightFirst = false;
    if (kind != kernel::ConvKind::BackwardWeight && op.getChannelsLast())
      if (Value source = channelsFirstWeight(b)) {
        b = source;
        weightFirst = true;
      }
    realized.insert(a);
    realized.insert(b);
    realized.insert(op.getResult());
    convs.try_emplace(op.getResult(),
                      Conv{kind, op.getLoc(), a, b, op.getStrideAttr(),
                           op.getPaddingAttr(), op.getDilationAttr(),
                           op.getGroupsAttr(), op.getChannelsLastAttr(),
                           weightFirst});
  };
  func.walk([&](prim::ConvolutionOp op) {
    addConv(op, kernel::ConvKind::Forward, op.getInput(), op.getWeight());
  });
  func.walk([&](prim::ConvolutionBackwardInputOp op) {
    addConv(op, kernel::ConvKind::BackwardInput, op.getGrad(),
            op.getOther());
  });
  func.walk([&](prim::ConvolutionBackwardWeightOp op) {
    addConv(op, kernel::ConvKind::BackwardWeight, op.getGrad(),
            op.getOther());
  });

  // So is fused attention: every operand and the result in buffers. A
  // query, key or value that views another value through reshapes,
  // permutes and slices (the heads of a packed QKV projection, a
  // projection's [B, S, H, D] permuted to [B, H, S, D]) is read in place
  // when the call can take the view: that value is realized, the view
  // and the chain up to it are not.
  func.walk([&](prim::AttentionOp op) {
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (i < 3)
        if (std::optional<AttentionView> view = attentionView(operand)) {
          realized.insert(view->base);
          attentionViews[operand] = *view;
          continue;
        }
      realized.insert(operand);
    }
    // Likewise the result, when reshapes and permutes alone (each the
    // only reader of the last) make it another value the call can write
    // through a view (the heads put back in rows for the output
    // projection): that value is the call's buffer.
    if (!fuseNothing)
      if (std::optional<AttentionView> view =
              attentionResultView(op.getResult())) {
        realized.insert(view->base);
        attentions[view->base] = op;
        attentionViews[op.getResult()] = *view;
        return;
      }
    realized.insert(op.getResult());
    attentions[op.getResult()] = op;
  });

  for (Value v : ret.getOperands())
    realized.insert(v);

  // Non-splat constants live in buffers too (rare: literal tensors).
  func.walk([&](prim::ConstantOp cst) {
    if (!isSplatConstant(cst))
      realized.insert(cst);
  });
  // A scatter-add is written by two kernels (zeros, then the additions),
  // not computed point by point: its result has a buffer.
  func.walk([&](prim::ScatterAddOp op) { realized.insert(op.getResult()); });
  // Likewise a scatter (a copy of its operand, then the updates).
  func.walk([&](prim::ScatterOp op) { realized.insert(op.getResult()); });

  // A value read through several windows (the strided slices of a
  // convolution's or a pooling's input, the parts of a concatenation) would
  // be recomputed by each window, and windows of windows multiply that:
  // realize it once. Except a constant border (a pad without interior
  // padding) around cheap elementwise arithmetic of realized values, read
  // by slices alone (average pooling's zero-padded input, one slice per
  // window offset): each window point reads the realized value itself, or
  // the border's constant, at no more cost than reading a padded copy,
  // which was written and read again (Inception-v3's nine poolings). So
  // with no border (windows that tile the input): a widening convert of a
  // realized activation was written as a float32 copy and read again by
  // the pooling (NFNet's shortcut pooling, twice the bytes of its input).
  func.walk([&](Operation *op) {
    for (Value v : op->getResults()) {
      unsigned windows = 0;
      for (Operation *user : v.getUsers())
        windows += isa<prim::SliceOp, prim::PadOp, prim::ConcatenateOp>(user) &&
                   !isViewedByAttention(user->getResult(0));
      if (windows <= 1)
        continue;
      bool slicesOnly = llvm::all_of(v.getUsers(), [](Operation *user) {
        return isa<prim::SliceOp>(user);
      });
      // (Or a view of such arithmetic: the parts of a packed QKV
      // projection, reshaped and permuted to [3, B, H, S, D] and sliced,
      // read the projection where it is, in one kernel: siblings.)
      // (Or loads alone: a rotary embedding's pairs, the slices [..., 0]
      // and [..., 1] of a query converted to f32 and reshaped, read from
      // the projection where it is; realized, each layer's query and key
      // took a kernel of their own, 32 launches a decode step.)
      auto pad = dyn_cast<prim::PadOp>(op);
      bool borderOnly =
          slicesOnly &&
          (pad ? llvm::all_of(pad.getInterior(),
                              [](int64_t i) { return i == 0; }) &&
                     elementwiseOfRealized(pad.getOperand())
               : viewOfElementwise(v) || loadsOfRealized(v));
      if (!borderOnly)
        realized.insert(v);
    }
  });

  // So is what a window op reads at every point of a window (a pooling's
  // input, its backward's cotangent and positions), and a pooling's input,
  // which the positions' and the values' kernels both read. Max pooling's
  // values alone (nothing else reads the positions: inference) read the
  // input in one kernel, and an input that elementwise arithmetic makes
  // of realized values (batch norm's affine and a ReLU) is computed there
  // at each window point, as Inductor fuses it: realized, it was written
  // and read again (on two CPU cores a ReLU before ResNet's stem pooling
  // took 1.95 ms with the pooling, Inductor 0.62).
  func.walk([&](Operation *op) {
    if (isa<prim::WindowArgmaxOp, prim::WindowGatherOp>(op)) {
      if (!(poolsValuesAlone(op) && elementwiseOfRealized(op->getOperand(0))))
        realized.insert(op->getOperand(0));
    }
    if (isa<prim::WindowScatterOp>(op)) {
      realized.insert(op->getOperand(0));
      realized.insert(op->getOperand(1));
    }
  });

  // A reduction over other than the trailing dimensions (batch norm's over
  // N, H, W) cannot be hoisted out of its consumer's inner loops: inlined,
  // it would be recomputed for every point it is broadcast to. Realize it.
  func.walk([&](prim::ReduceOp reduce) {
    ArrayRef<int64_t> dims = reduce.getDims();
    int64_t rank = tensorType(reduce.getOperand()).getRank();
    for (auto [i, d] : llvm::enumerate(dims))
      if (d != rank - static_cast<int64_t>(dims.size()) +
                   static_cast<int64_t>(i)) {
        realized.insert(reduce.getResult());
        return;
      }
  });

  // A reduction's value broadcast along a new dimension ahead of one it
  // keeps (a blocked scan's chunk totals, [chunks (j)] spread over
  // [chunks (i), chunks (j)] for the sum of the chunks before each,
  // Decomposer::blockedScan): the consumer's kernel iterates the new
  // dimension outside the kept one, so inlined, the reduction would be
  // computed again at each of its points (every chunk total once per
  // chunk of the row: as many steps as the dense scan it replaces).
  // Realize it.
  func.walk([&](prim::BroadcastInDimOp bcast) {
    auto reduce = bcast.getOperand().getDefiningOp<prim::ReduceOp>();
    ArrayRef<int64_t> kept = bcast.getBroadcastDimensions();
    if (!reduce || kept.empty())
      return;
    int64_t innermostKept = *llvm::max_element(kept);
    for (int64_t d = 0; d < innermostKept; ++d)
      if (!llvm::is_contained(kept, d)) {
        realized.insert(reduce.getResult());
        return;
      }
  });

  // A reduction over the trailing dimensions whose value, broadcast back
  // along them, reaches a permute that moves the last dimension inward
  // (a layer norm over the channels of a channels-last view, permuted
  // back to channels-first: ConvNeXt's, Swin's and MobileViT's
  // `LayerNorm2d`): the consumer's kernel iterates the output's last
  // dimension, not the reduced one, so inlined, the reduction would be
  // computed again for every channel (each element of ConvNeXt-V2's 80 to
  // 640 channels read that many times: 3.5 ms where 0.05 would do on the
  // H200). Realize it: a kernel of row statistics, then the elementwise
  // rest at each point. Likewise where it reaches a reduction that keeps
  // the last dimension (a mean over the tokens of a layer norm's output:
  // Swin's pooled head): that kernel iterates the channels and sums over
  // the rows, so each row's statistics were computed again for each of its
  // channels (1024 times: 3.3 ms of Swin-B's step on the H200).
  func.walk([&](prim::ReduceOp reduce) {
    if (realized.contains(reduce.getResult()))
      return;
    // The rows: the operand's last dimension, where the reduction is
    // along it.
    RankedTensorType input = tensorType(reduce.getOperand());
    int64_t lastDim = input.getRank() - 1;
    int64_t row = lastDim >= 0 && llvm::is_contained(reduce.getDims(), lastDim)
                      ? input.getShape().back()
                      : ShapedType::kDynamic;
    SmallVector<Value> worklist = {reduce.getResult()};
    llvm::SmallDenseSet<Value> seen;
    while (!worklist.empty()) {
      Value next = worklist.pop_back_val();
      if (!seen.insert(next).second)
        continue;
      // A realized value is read from its buffer: the kernels past it
      // compute no statistics. (ConvBERT's layer norms feed the next
      // layer's projections, which realize them, and its convolution
      // through a transpose; their statistics were realized too, three
      // kernels a norm, 1.15 ms a step against Inductor's 0.64 on the H200.)
      if (next != reduce.getResult() && realized.contains(next))
        continue;
      for (Operation *user : next.getUsers()) {
        if (auto permute = dyn_cast<prim::PermuteOp>(user)) {
          ArrayRef<int64_t> order = permute.getPermutation();
          if (!order.empty() &&
              order.back() != static_cast<int64_t>(order.size()) - 1) {
            realized.insert(reduce.getResult());
            return;
          }
        }
        if (auto consumer = dyn_cast<prim::ReduceOp>(user)) {
          int64_t last = tensorType(consumer.getOperand()).getRank() - 1;
          if (last >= 0 && !llvm::is_contained(consumer.getDims(), last)) {
            realized.insert(reduce.getResult());
            return;
          }
        }
        // A reshape that cuts the rows (a weight standardized over [O, K]
        // viewed as [O, C, kh, kw]): the consumer's kernel iterates part
        // of a row as points, each computing the row's statistics again
        // (dm_nfnet_f0's grouped weights: 170 ms a kernel where 1 ms
        // does).
        if (auto reshape = dyn_cast<prim::ReshapeOp>(user)) {
          RankedTensorType from = tensorType(reshape.getOperand()),
                           to = tensorType(reshape);
          if (from.getRank() > 0 && to.getRank() > 0 &&
              from.getShape().back() == row &&
              hintNumElements(from) >= hintNumElements(input) &&
              to.getShape().back() < row) {
            realized.insert(reduce.getResult());
            return;
          }
        }
        if (user->getNumResults() == 1 &&
            (user->hasTrait<OpTrait::Elementwise>() ||
             isa<prim::BroadcastInDimOp, prim::ReshapeOp, prim::PermuteOp>(
                 user)))
          worklist.push_back(user->getResult(0));
      }
    }
  });

  // A reduction of a reduction (what tc-reassociate-reductions makes of a
  // strided one) runs as two kernels: rows, then the small rest. Inlined,
  // it would be one strided loop nest again.
  func.walk([&](prim::ReduceOp reduce) {
    if (reduce.getOperand().getDefiningOp<prim::ReduceOp>())
      realized.insert(reduce.getOperand());
  });

  realizeContractions();

  // With `realizeBroadcastSources` (the CPU's choice), a small value that
  // takes a division or a square root, or reads several tensors (batch
  // norm's `bias - mean * alpha`), broadcast to a much larger one
  // along its inner dimension (batch norm's per-channel
  // `rsqrt(var + eps) * weight`, channels-last), is realized: inlined, it
  // is computed again at every point it is broadcast to, which costs
  // nothing where the broadcast dimension is a loop the compiler hoists it
  // out of (channels-first) but a square root and a division per element
  // where it is the inner one (channels-last). GPUs recompute most such
  // values at no cost (their kernels wait on memory) and save the launch,
  // but not a division by a computed value: a float division is some 20
  // instructions, about what a memory-bound kernel may spend per element
  // (ConvNeXt-V2's GRN scale `|x| / (mean |x| + eps)` per image and
  // channel, recomputed at each of 196 pixels with GELU's erf, made the
  // kernel compute-bound: 98 us a layer on the H200, Inductor 66).
  func.walk([&](prim::BroadcastInDimOp bcast) {
    Value source = bcast.getOperand();
    // On the CPU, through the views between the value and its broadcast:
    // tc-channels-last-convolutions permutes a per-channel value
    // (squeeze-and-excitation's gate, `sigmoid(s)` of [N, C, 1, 1]) to
    // [N, 1, 1, C] before broadcasting it, and the permute hid the
    // sigmoid from this rule: its exponential and division ran at each of
    // 112 x 112 pixels (EfficientNet-B0, two cores).
    if (realizeBroadcastSources)
      while (Operation *view = source.getDefiningOp()) {
        if (!isa<prim::PermuteOp, prim::ReshapeOp>(view) ||
            realized.contains(source))
          break;
        source = view->getOperand(0);
      }
    Operation *def = source.getDefiningOp();
    if (!def || realized.contains(source) ||
        isa<prim::ConstantOp, prim::BroadcastInDimOp, prim::ReshapeOp,
            prim::PermuteOp>(def))
      return;
    RankedTensorType out = tensorType(bcast);
    int64_t from = hintNumElements(tensorType(source));
    int64_t to = hintNumElements(out);
    if (from <= 0 || to < kBroadcastRatioToRealize * from)
      return;
    // A GPU thread computes each of its points whatever the layout.
    if (!realizeBroadcastSources) {
      if (dividesByComputed(source))
        realized.insert(source);
      return;
    }
    // On the CPU, only a value that varies along the result's inner
    // dimension: one that is constant along it (a row's statistics) is
    // hoisted.
    int64_t inner = out.getRank() - 1;
    ArrayRef<int64_t> dims = bcast.getBroadcastDimensions();
    const int64_t *it = llvm::find(dims, inner);
    if (inner < 0 || it == dims.end() || out.getDimSize(inner) <= 1 ||
        tensorType(bcast.getOperand()).getDimSize(it - dims.begin()) !=
            out.getDimSize(inner))
      return;
    if (computesSlowly(source))
      realized.insert(source);
  });

  // A value computed from positions alone (iotas, constants, small
  // tables) that takes a division, a transcendental function or a gather,
  // and that several kernels would inline, is realized once: inlined, each
  // kernel computes it again at every point, in each pass of a reduction
  // (T5's relative position bias, a logarithm of position differences
  // gathered from a 32 x 8 table, recomputed in the three passes of each
  // of twelve layers' softmax: 3.8 ms a layer on two cores, a tenth of
  // T5-small's step). Only the largest such value (one whose readers, past
  // broadcasts and other views, compute from more than positions) is
  // realized, not its parts.
  {
    llvm::DenseMap<Value, int64_t> leaves;
    auto isView = [](Operation *op) {
      return isa<prim::BroadcastInDimOp, prim::ReshapeOp, prim::PermuteOp>(
          op);
    };
    func.walk([&](Operation *op) {
      if (op->getNumResults() != 1 || isView(op) ||
          isa<prim::ConstantOp, prim::IotaOp>(op))
        return;
      Value v = op->getResult(0);
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || realized.contains(v) ||
          hintNumElements(type) < kPositionalElementsToRealize ||
          !positional(v, leaves) || !computesOrGathersSlowly(v))
        return;
      // Whether some reader, past views, computes from more than positions.
      bool exposed = false;
      SmallVector<Value> worklist = {v};
      llvm::SmallDenseSet<Value> seen;
      while (!worklist.empty() && !exposed) {
        Value next = worklist.pop_back_val();
        if (!seen.insert(next).second)
          continue;
        for (Operation *user : next.getUsers()) {
          if (user->getNumResults() != 1)
            continue;
          if (isView(user))
            worklist.push_back(user->getResult(0));
          else if (!positional(user->getResult(0), leaves))
            exposed = true;
        }
      }
      if (exposed && rootsOf(v).size() > 1) {
        realized.insert(v);
        leaves.clear(); // what reads v now reads a tensor of its size
      }
    });
  }

  // The reference path: one kernel per op, whatever the costs below say.
  // (A product whose bias epilogue the library call computes is no value
  // of its own.)
  if (fuseNothing)
    func.walk([&](Operation *op) {
      bool library = isa<prim::DotOp, prim::ConvolutionOp,
                         prim::ConvolutionBackwardInputOp,
                         prim::ConvolutionBackwardWeightOp,
                         prim::AttentionOp>(op);
      for (Value v : op->getResults())
        if (isa<RankedTensorType>(v.getType()) &&
            (!library || gemms.count(v) || convs.count(v) ||
             attentions.count(v)))
          realized.insert(v);
    });

  // A reduction inlined into several kernels would be recomputed by each:
  // realize it once instead. So is a value that reads many large tensors
  // per element (a pooling's or a convolution's input gradient: a sum over
  // windows) and that several kernels inline (batch norm's backward reads
  // its upstream gradient in two reductions and an elementwise kernel).
  // Realizing one can change the roots and costs of others, so iterate to
  // a fixed point.
  bool changed = true;
  while (changed) {
    changed = false;
    ReadCosts costs;
    func.walk([&](Operation *op) {
      if (op->getNumResults() != 1 || isa<func::ReturnOp>(op))
        return;
      Value v = op->getResult(0);
      if (realized.contains(v))
        return;
      bool reduction = isa<prim::ReduceOp, prim::ArgReduceOp>(op);
      if (!reduction && readCost(v, costs) < kSharedReadsToRealize)
        return;
      llvm::SmallDenseSet<Value> roots, visited;
      collectRoots(v, roots, visited);
      if (roots.size() > 1) {
        realized.insert(v);
        changed = true;
        costs.clear();
      }
    });
  }

  // An n-d by 2-d product's bias: a kernel reading the product adds it
  // for free, so it stays out of the library call, unless the sum is
  // realized anyway (read through several slices, as a packed QKV
  // projection's is; an attention's operand; returned). Then the call's
  // epilogue adds it, instead of a pass of its own over the product
  // (ViT-B's QKV bias at batch 128: 0.06 ms a layer on the H200).
  for (auto [product, sum, bias] : biasEpilogues) {
    if (!realized.contains(sum))
      continue;
    Gemm gemm = gemms.lookup(product);
    gemms.erase(product);
    realized.remove(product);
    realized.insert(bias);
    gemm.bias = bias;
    gemm.result = sum;
    gemms[sum] = gemm;
  }
  return success();
}

/// The strides of `view` after a reshape to `shape`, when the reshape can
/// be a view of the same elements (dimensions merge only where their
/// strides chain, split freely); nullopt otherwise.
static std::optional<SmallVector<int64_t, 4>>
reshapedStrides(ArrayRef<int64_t> sizes, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> shape) {
  SmallVector<int64_t, 4> result(shape.size(), 1);
  // Walk both shapes from the innermost dimension, a run of the old shape
  // whose dimensions are contiguous with each other at a time.
  int64_t next = static_cast<int64_t>(shape.size()) - 1;
  int64_t d = static_cast<int64_t>(sizes.size()) - 1;
  while (d >= 0) {
    // The run [first, d]: each dimension larger than 1 strides by the
    // next inner one's stride times that one's size (dimensions of 1 join
    // any run). `base` is its innermost stride, `expect` what the next
    // dimension out must stride by.
    int64_t first = d, runElements = sizes[d], base = -1, expect = -1;
    if (sizes[d] != 1) {
      base = strides[d];
      expect = strides[d] * sizes[d];
    }
    while (first > 0) {
      int64_t size = sizes[first - 1];
      if (size != 1 && expect != -1 && strides[first - 1] != expect)
        break;
      --first;
      runElements *= size;
      if (size != 1) {
        if (base == -1)
          base = strides[first];
        expect = strides[first] * size;
      }
    }
    if (base == -1)
      base = 1;
    int64_t elements = 1;
    while (next >= 0 && (elements < runElements || shape[next] == 1)) {
      result[next] = base * elements;
      elements *= shape[next];
      --next;
    }
    if (elements != runElements)
      return std::nullopt;
    d = first - 1;
  }
  if (next != -1)
    return std::nullopt;
  return result;
}

/// `view` reshaped to `shape`; false when that is no view of the same
/// elements.
static bool reshapeView(AttentionView &view, ArrayRef<int64_t> shape) {
  std::optional<SmallVector<int64_t, 4>> strides =
      reshapedStrides(view.sizes, view.strides, shape);
  if (!strides)
    return false;
  view.sizes.assign(shape.begin(), shape.end());
  view.strides = *strides;
  return true;
}

/// `base` (a static tensor) viewed whole, in its dense row-major layout.
static AttentionView denseView(Value base) {
  ArrayRef<int64_t> shape = tensorType(base).getShape();
  AttentionView view{base, 0, {}, {}, {}};
  view.sizes.assign(shape.begin(), shape.end());
  view.strides.assign(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    view.strides[d] = view.strides[d + 1] * view.sizes[d + 1];
  return view;
}

std::optional<AttentionView> FusionPlan::attentionView(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() != 4 || !type.hasStaticShape() ||
      type.getNumElements() == 0)
    return std::nullopt;
  // The chain of views above `v`, nearest first.
  SmallVector<Operation *> chain;
  for (Value next = v; Operation *def = next.getDefiningOp();) {
    if (!isa<prim::ReshapeOp, prim::PermuteOp, prim::SliceOp>(def))
      break;
    chain.push_back(def);
    next = def->getOperand(0);
  }
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  // The farthest value the call can view (the longest chain that is one).
  for (size_t length = chain.size(); length > 0; --length) {
    Value base = chain[length - 1]->getOperand(0);
    auto baseType = dyn_cast<RankedTensorType>(base.getType());
    if (!baseType || !baseType.hasStaticShape())
      continue;
    AttentionView view = denseView(base);
    bool ok = true;
    for (Operation *op : llvm::reverse(ArrayRef(chain).take_front(length))) {
      if (auto permute = dyn_cast<prim::PermuteOp>(op)) {
        SmallVector<int64_t, 4> sizes, strides;
        for (int64_t p : permute.getPermutation()) {
          sizes.push_back(view.sizes[p]);
          strides.push_back(view.strides[p]);
        }
        view.sizes = sizes;
        view.strides = strides;
      } else if (auto slice = dyn_cast<prim::SliceOp>(op)) {
        for (auto [d, start, limit, step] :
             llvm::enumerate(slice.getStart(), slice.getLimit(),
                             slice.getStrides())) {
          view.offset += start * view.strides[d];
          view.sizes[d] = (limit - start + step - 1) / step;
          view.strides[d] *= step;
        }
      } else if (!reshapeView(view, cast<prim::ReshapeOp>(op).getShape())) {
        ok = false;
        break;
      }
    }
    if (ok && kernel::AttentionOp::isLibraryView(view.sizes, view.strides,
                                                 view.offset, elementBytes)) {
      view.chain.assign(chain.begin(), chain.begin() + length);
      return view;
    }
  }
  return std::nullopt;
}

std::optional<AttentionView> FusionPlan::attentionResultView(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.hasStaticShape() || type.getNumElements() == 0)
    return std::nullopt;
  // The chain of reshapes and permutes below `v`, nearest first.
  SmallVector<Operation *> chain;
  for (Value next = v; next.hasOneUse();) {
    Operation *user = *next.user_begin();
    if (!isa<prim::ReshapeOp, prim::PermuteOp>(user))
      break;
    chain.push_back(user);
    next = user->getResult(0);
  }
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  for (size_t length = chain.size(); length > 0; --length) {
    Value base = chain[length - 1]->getResult(0);
    // `v` in `base`'s buffer: undo the chain from `base` back up.
    AttentionView view = denseView(base);
    bool ok = true;
    for (Operation *op : llvm::reverse(ArrayRef(chain).take_front(length))) {
      if (auto permute = dyn_cast<prim::PermuteOp>(op)) {
        SmallVector<int64_t, 4> sizes(view.sizes.size()),
            strides(view.sizes.size());
        for (auto [i, p] : llvm::enumerate(permute.getPermutation())) {
          sizes[p] = view.sizes[i];
          strides[p] = view.strides[i];
        }
        view.sizes = sizes;
        view.strides = strides;
        continue;
      }
      if (!reshapeView(view, tensorType(op->getOperand(0)).getShape())) {
        ok = false;
        break;
      }
    }
    if (ok && kernel::AttentionOp::isLibraryView(view.sizes, view.strides,
                                                 view.offset, elementBytes)) {
      view.chain.assign(chain.begin(), chain.begin() + length - 1);
      return view;
    }
  }
  return std::nullopt;
}

bool FusionPlan::isViewedByAttention(Value v) {
  for (auto &[operand, view] : attentionViews)
    for (Operation *op : view.chain)
      if (op->getResult(0) == v)
        return true;
  return false;
}

int64_t FusionPlan::largestRead(Value v,
                                llvm::DenseMap<Value, int64_t> &leaves) {
  auto it = leaves.find(v);
  if (it != leaves.end())
    return it->second;
  constexpr int64_t kEverything = std::numeric_limits<int64_t>::max();
  int64_t result = 0;
  Operation *op = v.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || (op && isa<prim::ConstantOp, prim::IotaOp>(op)))
    result = 0;
  else if (!op || realized.contains(v))
    result = hintNumElements(type);
  else if (isa<prim::ReduceOp, prim::ArgReduceOp, prim::RandomOp>(op) ||
           op->getNumRegions() > 0)
    // Reductions read all they reduce; random numbers (a dropout's mask,
    // as large as what it masks) are recomputed from the seed by design.
    result = kEverything;
  else {
    // Provisional, so that the walk ends (a function of tensors has no
    // cycles, but a wrong one must not hang the pass).
    leaves[v] = kEverything;
    for (Value operand : op->getOperands())
      result = std::max(result, largestRead(operand, leaves));
  }
  leaves[v] = result;
  return result;
}

bool FusionPlan::poolsValuesAlone(Operation *op) {
  auto argmax = dyn_cast<prim::WindowArgmaxOp>(op);
  if (auto gather = dyn_cast<prim::WindowGatherOp>(op))
    argmax = maxOfWindows(gather);
  if (!argmax || !argmax->hasOneUse() ||
      !isa<FloatType>(tensorType(argmax.getOperand()).getElementType()))
    return false;
  auto gather = dyn_cast<prim::WindowGatherOp>(*argmax->user_begin());
  return gather && maxOfWindows(gather) == argmax;
}

bool FusionPlan::elementwiseOfRealized(Value v) {
  SmallVector<Value> worklist = {v};
  llvm::SmallDenseSet<Value> seen;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || realized.contains(next))
      continue;
    Operation *op = next.getDefiningOp();
    // An argument, a constant, or a broadcast value (per channel: hoisted,
    // or realized as a broadcast source).
    if (!op || isa<prim::ConstantOp, prim::BroadcastInDimOp>(op))
      continue;
    if ((!op->hasTrait<OpTrait::Elementwise>() &&
         !isa<prim::PermuteOp>(op)) ||
        computesSlowlyAlone(op))
      return false;
    llvm::append_range(worklist, op->getOperands());
  }
  return true;
}

bool FusionPlan::viewOfElementwise(Value v) {
  while (!realized.contains(v) &&
         isa_and_present<prim::ReshapeOp, prim::PermuteOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return elementwiseOfRealized(v);
}

void FusionPlan::realizeContractions() {
  // A contraction tc computes itself (tc-skinny-products' few-row
  // products: a sum over K of x[m, k] * w[n, k], each factor broadcast
  // along the other's free dimension) reads each factor once per point of
  // the dimension it is broadcast along. A factor that is more than loads
  // of a realized value is realized: inlined, a layer norm before a
  // decode step's projection ran its statistics again for each of the
  // projection's outputs, and its row kernel took the whole product as
  // one block's loop. So is the product where it reaches other than
  // elementwise arithmetic and views: another reduction (the next layer
  // norm's statistics over the residual it is added to), whose row kernel
  // would run it the same way, or a scatter (a value projection written
  // into a KV cache), whose kernel over the updates would run each dot
  // product on one thread. What reads it point by point (a SiLU gate of
  // two products) takes it inline.
  SmallVector<prim::ReduceOp> contractions;
  func.walk([&](prim::ReduceOp reduce) {
    auto mul = reduce.getOperand().getDefiningOp<prim::MulOp>();
    if (!mul || reduce.getKind() != prim::ReductionKind::Sum)
      return;
    auto lhs = mul.getLhs().getDefiningOp<prim::BroadcastInDimOp>();
    auto rhs = mul.getRhs().getDefiningOp<prim::BroadcastInDimOp>();
    if (!lhs || !rhs)
      return;
    contractions.push_back(reduce);
    // (In its own type: a bf16 activation widened to f32 for the sum is
    // realized as bf16, which the product reads in 16-byte groups.) A
    // factor broadcast along no dimension larger than 1 is read once per
    // element, however it is computed: a weight dequantized from int8 by
    // its scales, read as int8 where the product reads it.
    for (prim::BroadcastInDimOp factor : {lhs, rhs}) {
      if (hintNumElements(tensorType(factor)) <=
          hintNumElements(tensorType(factor.getOperand())))
        continue;
      Value source = factor.getOperand();
      while (auto convert = source.getDefiningOp<prim::ConvertOp>())
        source = convert.getOperand();
      if (!loadsOfRealized(source))
        realized.insert(source);
    }
  });
  for (prim::ReduceOp reduce : contractions) {
    SmallVector<Value> worklist = {reduce.getResult()};
    llvm::SmallDenseSet<Value> seen;
    while (!worklist.empty()) {
      Value next = worklist.pop_back_val();
      if (!seen.insert(next).second ||
          (next != reduce.getResult() && realized.contains(next)))
        continue;
      for (Operation *user : next.getUsers()) {
        bool pointwise =
            user->getNumResults() == 1 &&
            (user->hasTrait<OpTrait::Elementwise>() ||
             isa<prim::BroadcastInDimOp, prim::ReshapeOp, prim::PermuteOp>(
                 user));
        if (!pointwise && !isa<func::ReturnOp>(user)) {
          // Rounded to its type where it is, when that is all it is read
          // as (a bf16 product's sum).
          Value result = reduce.getResult();
          if (result.hasOneUse())
            if (auto round = dyn_cast<prim::ConvertOp>(*result.user_begin()))
              result = round.getResult();
          realized.insert(result);
          worklist.clear();
          break;
        }
        if (pointwise)
          worklist.push_back(user->getResult(0));
      }
    }
  }
}

bool FusionPlan::loadsOfRealized(Value v) {
  while (!realized.contains(v)) {
    Operation *op = v.getDefiningOp();
    if (!op)
      return true;
    if (!isa<prim::ReshapeOp, prim::PermuteOp, prim::SliceOp,
             prim::ConvertOp>(op))
      return false;
    v = op->getOperand(0);
  }
  return true;
}

bool FusionPlan::cheapElementwise(Value v) {
  constexpr int64_t kMaxOps = 12;
  Operation *op = v.getDefiningOp();
  if (!op || !op->hasTrait<OpTrait::Elementwise>() || computesSlowlyAlone(op))
    return false;
  SmallVector<Value> worklist(op->getOperands());
  llvm::SmallDenseSet<Value> seen;
  int64_t ops = 1;
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second || realized.contains(next))
      continue;
    Operation *def = next.getDefiningOp();
    if (!def || isa<prim::ConstantOp>(def))
      continue;
    if ((!def->hasTrait<OpTrait::Elementwise>() &&
         !isa<prim::BroadcastInDimOp, prim::PermuteOp, prim::ReshapeOp>(
             def)) ||
        computesSlowlyAlone(def) || ++ops > kMaxOps)
      return false;
    llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

int64_t FusionPlan::readCost(Value v, int64_t points, ReadCosts &costs) {
  auto it = costs.costs.find({v, points});
  if (it != costs.costs.end())
    return it->second;
  Operation *op = v.getDefiningOp();
  if (!op)
    return costs.costs[{v, points}] = 0;
  auto costOf = [&](Value operand, int64_t reads) -> int64_t {
    if (realized.contains(operand))
      return reads * (hintNumElements(tensorType(operand)) * 16 >= points);
    return reads * readCost(operand, points, costs);
  };
  int64_t cost = 0;
  if (!op->hasTrait<OpTrait::Elementwise>()) {
    int64_t reads = windowReads(op);
    for (Value operand : op->getOperands())
      if (isa<RankedTensorType>(operand.getType()))
        cost += costOf(operand, reads);
    return costs.costs[{v, points}] = cost;
  }
  // An elementwise value reads each of its operands at its own index, and
  // so does each elementwise value it is computed from: a value such
  // operations reach along several paths is read once per element (the
  // kernel loads it once). Counting paths made GELU's tanh argument,
  // `x + 0.044715 * x * x * x` (four paths to x, one load), a value worth
  // realizing, written and read back by each of its two readers in the
  // backward.
  // (A copy: costOf may memoize more frontiers, moving the map's slots.)
  SmallVector<Value, 8> frontier(elementwiseFrontier(v, costs));
  for (Value operand : frontier)
    cost += costOf(operand, 1);
  return costs.costs[{v, points}] = cost;
}

ArrayRef<Value> FusionPlan::elementwiseFrontier(Value v, ReadCosts &costs) {
  auto it = costs.frontiers.find(v);
  if (it != costs.frontiers.end())
    return it->second;
  // Each operand's own frontier is memoized (the union of its operands'),
  // so a chain of n elementwise ops costs O(n), not O(n^2).
  llvm::SmallSetVector<Value, 8> frontier;
  for (Value operand : v.getDefiningOp()->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    Operation *def = operand.getDefiningOp();
    if (def && !realized.contains(operand) &&
        def->hasTrait<OpTrait::Elementwise>())
      frontier.insert_range(elementwiseFrontier(operand, costs));
    else
      frontier.insert(operand);
  }
  SmallVector<Value, 4> &slot = costs.frontiers[v];
  slot.assign(frontier.begin(), frontier.end());
  return slot;
}

} // namespace mlir::tc::fuse
