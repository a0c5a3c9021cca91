//===- Fusion.h - tc-fuse's plan and kernel builder -------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Fusion, the way Inductor does it: decide which values are realized in
// buffers (FusionPlan, FusionPlan.cpp), then generate, for each realized
// value, one kernel that computes it point by point, recursively inlining
// the scalar computation of every value that is not realized
// (KernelBuilder: KernelBuilder.cpp builds kernels and their scopes,
// Scalars.cpp the scalar code of each prim op, Windows.cpp the loops inside
// a point: window scans and reductions; MultipleOutputs.cpp the values a
// kernel stores besides its own). PrimToKernel.cpp is the pass.
// Private to lib/Conversion/PrimToKernel.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_CONVERSION_PRIMTOKERNEL_FUSION_H
#define TC_LIB_CONVERSION_PRIMTOKERNEL_FUSION_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>


namespace mlir::tc::fuse {

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

// The graph's symbolic size as fusion's cost model and the empty tensor
// checks see it.
using prim::hintNumElements;
using prim::kSymbolHint;

inline MemRefType bufferType(Value v) {
  RankedTensorType t = tensorType(v);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// Whether `v` is a splat constant (computed inline as a scalar).
inline bool isSplatConstant(Value v) {
  auto cst = v.getDefiningOp<prim::ConstantOp>();
  return cst && isa<SplatElementsAttr>(cst.getValue());
}

/// The attributes the window ops share, and a window position's offsets.
struct WindowGeometry {
  ArrayRef<int64_t> window, strides, padding, dilation;

  template <typename Op>
  explicit WindowGeometry(Op op)
      : window(op.getWindow()), strides(op.getStrides()),
        padding(op.getPadding()), dilation(op.getDilation()) {}

  int64_t positions() const {
    int64_t n = 1;
    for (int64_t size : window)
      n *= size;
    return n;
  }
  /// Row-major position `k`'s offset along each window dimension.
  SmallVector<int64_t> offsets(int64_t k) const {
    SmallVector<int64_t> result(window.size());
    for (size_t d = window.size(); d-- > 0;) {
      result[d] = k % window[d];
      k /= window[d];
    }
    return result;
  }
};

/// Per window dimension and offset there: a coordinate and whether it is
/// valid.
using WindowCoordinates = SmallVector<SmallVector<std::pair<Value, Value>>>;

/// The argmax whose positions `gather` reads when it reads them from its
/// own operand over the same windows (max pooling's values): the gather is
/// then the maximum its scan keeps, computed without the positions. Null
/// otherwise.
prim::WindowArgmaxOp maxOfWindows(prim::WindowGatherOp gather);

/// How many points of each windowed operand computing one point of `op`
/// reads (1 for ops other than the window ops).
int64_t windowReads(Operation *op);

/// A reshape's runs of dimensions (the prim dialect's grouping).
using prim::ReshapeRun;
using prim::reshapeRuns;

//===----------------------------------------------------------------------===//
// Realization: which values get buffers
//===----------------------------------------------------------------------===//

/// How a matrix product's operand is read by the GEMM.
struct GemmOperand {
  Value buffer;
  bool transposed = false;
};

/// A matrix product, possibly with its bias epilogue; `result` is the value
/// the GEMM writes (the product, or the bias add).
struct Gemm {
  prim::DotOp dot;
  GemmOperand lhs, rhs;
  Value bias;
  Value result;
};

/// A convolution or one of its gradients, a library call that writes
/// `result` from two realized operands.
struct Conv {
  kernel::ConvKind kind;
  Location loc;
  Value grad, other; // the gradients' operands; the forward's input, weight
  DenseI64ArrayAttr stride, padding, dilation;
  IntegerAttr groups;
  UnitAttr channelsLast;
  /// The weight (`other` of a forward or input gradient) is read in
  /// PyTorch's layout (`weights-channels-first`).
  bool weightChannelsFirst = false;
};

/// A fused attention's operand read (or its result written) in place: the
/// `base` value whose buffer it views, with kernel.attention's view of it
/// (an offset, sizes and strides in elements), and the views between them
/// (`chain`, from the operand's side).
struct AttentionView {
  Value base;
  int64_t offset;
  SmallVector<int64_t, 4> sizes, strides;
  SmallVector<Operation *> chain;
};

/// A value that several kernels would inline is realized instead when
/// computing it reads this many large tensors per element.
constexpr int64_t kSharedReadsToRealize = 4;

/// A computed value broadcast to at least this many times its elements is
/// realized (`realizeBroadcastSources`).
constexpr int64_t kBroadcastRatioToRealize = 16;

/// A value computed from positions alone (`FusionPlan::positional`) reads
/// no tensor of more than 1/this of its own elements (a table it gathers
/// from) ...
constexpr int64_t kPositionTableRatio = 16;

/// ... and is realized for several kernels from this many elements on
/// (a smaller one costs less recomputed than a launch of its own).
constexpr int64_t kPositionalElementsToRealize = 4096;

class FusionPlan {
public:
  FusionPlan(func::FuncOp func, bool weightsChannelsFirst,
             bool unitWeightsChannelsFirst, bool realizeBroadcastSources,
             bool fuseNothing = false, bool aliasInputReshapes = false)
      : func(func), weightsChannelsFirst(weightsChannelsFirst),
        unitWeightsChannelsFirst(unitWeightsChannelsFirst),
        realizeBroadcastSources(realizeBroadcastSources),
        fuseNothing(fuseNothing), aliasInputReshapes(aliasInputReshapes) {}

  LogicalResult build();

  bool isRealized(Value v) const { return realized.contains(v); }
  /// Whether realized `v` is computed by at most a few elementwise ops (no
  /// division, root or transcendental function) from the values its kernel
  /// reads: cheap enough to compute again wherever a kernel reads it.
  bool cheapElementwise(Value v);
  const llvm::SetVector<Value> &getRealized() const { return realized; }
  /// The realized values whose kernels compute `v` inline or read it.
  llvm::SmallDenseSet<Value> rootsOf(Value v) {
    llvm::SmallDenseSet<Value> roots, visited;
    collectRoots(v, roots, visited);
    return roots;
  }
  const Gemm *gemmFor(Value v) const {
    auto it = gemms.find(v);
    return it == gemms.end() ? nullptr : &it->second;
  }
  const Conv *convFor(Value v) const {
    auto it = convs.find(v);
    return it == convs.end() ? nullptr : &it->second;
  }
  /// The fused attention (a library call) that writes `v`, or null.
  prim::AttentionOp attentionFor(Value v) const {
    return attentions.lookup(v);
  }
  /// How an attention reads its operand `v` in place, or null (`v` is
  /// realized).
  const AttentionView *attentionViewOf(Value v) const {
    auto it = attentionViews.find(v);
    return it == attentionViews.end() ? nullptr : &it->second;
  }

private:
  /// With `weightsChannelsFirst` (`unitWeightsChannelsFirst`: for a 1x1
  /// window), the graph input a channels-last convolution's weight `w`
  /// permutes to channels-last, where every reader of that permute is a
  /// convolution's weight (a forward or input gradient, channels-last):
  /// those read the input in PyTorch's layout and the permute is never
  /// computed. Null otherwise.
  Value channelsFirstWeight(Value w) const {
    auto permute = w.getDefiningOp<prim::PermuteOp>();
    if (!permute || !isa<BlockArgument>(permute.getOperand()))
      return {};
    // PyTorch's layout: [O, I, window...].
    auto shape =
        cast<RankedTensorType>(permute.getOperand().getType()).getShape();
    bool unitWindow = shape.size() > 2 && llvm::all_of(shape.drop_front(2),
                                                       [](int64_t size) {
                                                         return size == 1;
                                                       });
    if (!weightsChannelsFirst && !(unitWeightsChannelsFirst && unitWindow))
      return {};
    int64_t rank = cast<RankedTensorType>(w.getType()).getRank();
    SmallVector<int64_t> toLast = prim::toChannelsLast(rank);
    if (permute.getPermutation() != ArrayRef<int64_t>(toLast))
      return {};
    for (OpOperand &use : permute->getUses()) {
      if (use.getOperandNumber() != 1)
        return {};
      Operation *user = use.getOwner();
      bool channelsLastWeight = false;
      if (auto conv = dyn_cast<prim::ConvolutionOp>(user))
        channelsLastWeight = conv.getChannelsLast();
      else if (auto grad = dyn_cast<prim::ConvolutionBackwardInputOp>(user))
        channelsLastWeight = grad.getChannelsLast();
      if (!channelsLastWeight)
        return {};
    }
    return permute.getOperand();
  }

  /// Whether window op `op` is max pooling's values alone: an argmax whose
  /// only reader is the gather of its maxima (nothing reads the positions).
  static bool poolsValuesAlone(Operation *op);
  /// Whether `v` is elementwise arithmetic (no division, root or
  /// transcendental) of realized values, arguments, constants and
  /// broadcasts.
  bool elementwiseOfRealized(Value v);
  /// `elementwiseOfRealized` of `v` seen through reshapes and
  /// permutations.
  bool viewOfElementwise(Value v);
  /// The rules of contractions tc computes itself (tc-skinny-products'
  /// products, a sum of a product of two broadcasts): which of their
  /// factors and results are realized (see FusionPlan.cpp).
  void realizeContractions();
  /// Whether `v` is a realized value (or an argument) seen through
  /// reshapes, permutations, slices and conversions alone: each of its
  /// elements costs a kernel one load.
  bool loadsOfRealized(Value v);

  /// Whether `op` is a division, a power, a square root or a
  /// transcendental function: what makes an inlined value slow.
  static bool computesSlowlyAlone(Operation *op) {
    return isa<prim::DivOp, prim::PowOp, prim::SqrtOp, prim::RsqrtOp,
               prim::ExpOp, prim::Expm1Op, prim::LogOp, prim::Log1pOp,
               prim::TanhOp, prim::ErfOp, prim::SinOp, prim::CosOp>(op);
  }

  /// Whether computing one element of `v` inline is worth a kernel of its
  /// own: it takes a division, a square root or a transcendental function,
  /// or reads more than one tensor (graph inputs, realized values: batch
  /// norm's per-channel `bias - mean * alpha`, three loads and, in bf16,
  /// three conversions where its realized value is one). A cast or a
  /// product of one tensor is not.
  bool computesSlowly(Value v) const {
    SmallVector<Value> worklist = {v};
    llvm::SmallDenseSet<Value> seen;
    int64_t reads = 0;
    while (!worklist.empty()) {
      Value next = worklist.pop_back_val();
      if (!seen.insert(next).second)
        continue;
      Operation *op = next.getDefiningOp();
      if (isa_and_nonnull<prim::ConstantOp>(op))
        continue;
      if (!op || (next != v && realized.contains(next))) {
        if (++reads > 1)
          return true;
        continue;
      }
      if (computesSlowlyAlone(op))
        return true;
      llvm::append_range(worklist, op->getOperands());
    }
    return false;
  }

  /// Whether an op of `v`'s expression, up to realized values (`v`'s own
  /// op included), satisfies `pred`.
  bool expressionHas(Value v,
                     llvm::function_ref<bool(Operation *)> pred) const {
    SmallVector<Value> worklist = {v};
    llvm::SmallDenseSet<Value> seen;
    while (!worklist.empty()) {
      Value next = worklist.pop_back_val();
      if (!seen.insert(next).second)
        continue;
      Operation *op = next.getDefiningOp();
      if (!op || (next != v && realized.contains(next)))
        continue;
      if (pred(op))
        return true;
      llvm::append_range(worklist, op->getOperands());
    }
    return false;
  }

  /// Whether `v`'s expression, up to realized values, divides floats by a
  /// value that is not a constant.
  bool dividesByComputed(Value v) const {
    return expressionHas(v, [](Operation *op) {
      auto div = dyn_cast<prim::DivOp>(op);
      return div && isa<FloatType>(tensorType(div).getElementType()) &&
             !div.getRhs().getDefiningOp<prim::ConstantOp>();
    });
  }

  /// The elements of the largest tensor `v`'s expression reads (graph
  /// inputs, realized values; constants and iotas read none; INT64_MAX
  /// through a reduction or random numbers), memoized in `leaves`.
  int64_t largestRead(Value v, llvm::DenseMap<Value, int64_t> &leaves);

  /// Whether `v` is computed from positions alone: constants, iotas and
  /// tensors of at most 1/kPositionTableRatio of its elements (T5's
  /// relative position bias: iotas, a logarithm of their differences, a
  /// gather from a table of 32 x heads).
  bool positional(Value v, llvm::DenseMap<Value, int64_t> &leaves) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return true;
    int64_t read = largestRead(v, leaves);
    return read == 0 ||
           (read < std::numeric_limits<int64_t>::max() / kPositionTableRatio &&
            read * kPositionTableRatio <= hintNumElements(type));
  }

  /// Whether `v`'s expression, up to realized values, takes a division, a
  /// square root, a transcendental function or a gather.
  bool computesOrGathersSlowly(Value v) const {
    return expressionHas(v, [](Operation *op) {
      return computesSlowlyAlone(op) || isa<prim::GatherOp>(op);
    });
  }

  /// The view an attention can read its 4-d operand `v` through (see
  /// AttentionView): the farthest value above `v` through reshapes,
  /// permutes and slices that makes one kernel.attention takes
  /// (`kernel::AttentionOp::isLibraryView`); nullopt if none.
  std::optional<AttentionView> attentionView(Value v);
  /// The view through which an attention can write its result `v` into
  /// the buffer of a value reshapes and permutes make of it (the farthest
  /// such, each the only reader of the one before; `base` that value,
  /// `chain` the values between); nullopt if none.
  std::optional<AttentionView> attentionResultView(Value v);
  /// Whether `v` lies on the chain of an operand an attention views.
  bool isViewedByAttention(Value v);

  /// A dot operand that is a transpose of a realized value reads that value
  /// with the GEMM's transpose flag instead of materializing the transpose.
  GemmOperand gemmOperand(Value v) {
    if (auto permute = v.getDefiningOp<prim::PermuteOp>()) {
      if (permute.swapsLastTwo()) {
        realized.insert(permute.getOperand());
        return {permute.getOperand(), true};
      }
    }
    realized.insert(v);
    return {v, false};
  }

  /// Memoized read costs, by value and the size they are measured against,
  /// and each elementwise value's frontier (readCost); cleared whenever a
  /// value is realized.
  struct ReadCosts {
    llvm::DenseMap<std::pair<Value, int64_t>, int64_t> costs;
    llvm::DenseMap<Value, SmallVector<Value, 4>> frontiers;
    void clear() {
      costs.clear();
      frontiers.clear();
    }
  };

  /// How many reads of large realized tensors (at least 1/16 of v's size)
  /// computing one element of `v` inline makes (a reduction counts as one
  /// element of its operand). What `v` computes from is measured against
  /// `v`'s size too, not its own: a per-channel vector computed from other
  /// per-channel vectors and broadcast to an activation reads nothing large
  /// (batch norm's backward: its `rsqrt(var + eps)` scale is no reason to
  /// realize an activation-sized product).
  int64_t readCost(Value v, ReadCosts &costs) {
    return readCost(v, hintNumElements(tensorType(v)), costs);
  }
  int64_t readCost(Value v, int64_t points, ReadCosts &costs);
  /// What elementwise value `v` computes from, past the elementwise ops
  /// that are not realized: realized values and non-elementwise results.
  ArrayRef<Value> elementwiseFrontier(Value v, ReadCosts &costs);

  /// The realized values whose kernels would inline `v`.
  void collectRoots(Value v, llvm::SmallDenseSet<Value> &roots,
                    llvm::SmallDenseSet<Value> &visited) {
    if (!visited.insert(v).second)
      return;
    for (Operation *user : v.getUsers()) {
      if (isa<func::ReturnOp>(user))
        continue;
      for (Value result : user->getResults()) {
        if (realized.contains(result))
          roots.insert(result);
        else
          collectRoots(result, roots, visited);
      }
    }
  }

  func::FuncOp func;
  bool weightsChannelsFirst;
  bool unitWeightsChannelsFirst;
  bool realizeBroadcastSources;
  /// Every op's tensor result realized (its own kernel).
  bool fuseNothing;
  /// Realized reshapes of graph inputs are aliases of their buffers
  /// (tc-fuse's alias-input-reshapes): those that merge dimensions are
  /// realized (see build()).
  bool aliasInputReshapes;
  llvm::SetVector<Value> realized;
  llvm::DenseMap<Value, Gemm> gemms;
  llvm::DenseMap<Value, Conv> convs;
  llvm::DenseMap<Value, prim::AttentionOp> attentions;
  llvm::DenseMap<Value, AttentionView> attentionViews;
  /// n-d by 2-d products whose only use adds a bias: (product, sum, bias).
  struct BiasEpilogue {
    Value product, sum, bias;
  };
  SmallVector<BiasEpilogue> biasEpilogues;
};

//===----------------------------------------------------------------------===//
// Kernel generation
//===----------------------------------------------------------------------===//

/// One level of loop nesting inside a kernel under construction.
struct Scope {
  Block *block;
  /// The op of this block that holds the next inner scope, while it is
  /// being built: code for this scope is inserted before it.
  Operation *nested = nullptr;
  /// Scalars already computed in this scope, by value and index.
  std::map<std::vector<const void *>, Value> memo;
};

/// The parts of a concatenation that read one value through the same chain
/// of permutes, reshapes and slices, differing only in where the slices
/// start: im2col's windows, one per kernel offset. A kernel reads such a
/// concatenation with one load at a start selected by the part, instead of
/// reading every part and selecting one.
struct WindowFamily {
  /// The first part's chain, from the concatenation's side.
  SmallVector<Operation *> chain;
  /// Per op of the chain (empty for other than slices): each part's start.
  SmallVector<SmallVector<ArrayRef<int64_t>>> starts;
  /// The value all parts read.
  Value source;
};

/// The windows of one value that `concat` concatenates (see WindowFamily),
/// or std::nullopt.
std::optional<WindowFamily> windowFamily(prim::ConcatenateOp concat,
                                         const FusionPlan &plan);

class KernelBuilder {
public:
  KernelBuilder(const FusionPlan &plan, Location loc, bool cacheRows,
                bool splitConcatenations, bool loopPastUnitDims = false)
      : plan(plan), b(loc.getContext()), loc(loc), cacheRows(cacheRows),
        splitConcatenations(splitConcatenations),
        loopPastUnitDims(loopPastUnitDims) {}

  /// What a kernel built for a value does: compute it point by point,
  /// (for a scatter-add's result) fill it with zeros or add its updates,
  /// (for a scatter's) store its updates over the operand already there,
  /// or copy it from the buffer it was realized in (an output returned
  /// twice: recomputing it would repeat a reduction, and a product, a
  /// convolution or a scatter-add has no point-by-point form).
  enum class Mode { Compute, Zeros, ScatterAdd, Scatter, Copy };

  /// Creates a kernel that computes `value` into a buffer, inserted before
  /// `before`; returns the kernel and the realized values it reads, in
  /// argument order (then a buffer per row statistic, then the output
  /// buffer, the last argument).
  ///
  /// `rowStatistics`: realized values with one element per row of the
  /// kernel, each read by `value`'s expression at a one-to-one image of
  /// the row (the caller checks that), that the kernel computes inline and
  /// also stores where it computes them: a training forward's layer norm
  /// saves its row means and variances, which the norm's own kernel
  /// computes anyway. Null when one would be computed inside the row's loop
  /// or not at all (the kernel is not built).
  ///
  /// `siblings`: realized values of `value`'s type that the kernel also
  /// computes and stores at each point (their buffers come after the row
  /// statistics'): a GELU's gradient and the GELU recomputed for a weight's
  /// gradient, both from one read of the activation.
  ///
  /// `pointValues`: realized values of `value`'s size that `value`'s
  /// expression reads (the caller checks that it reads them at its own
  /// points, or at their images through reshapes), computed inline and
  /// stored where the kernel computes them for its point (their buffers
  /// come after the siblings'): a residual sum and the layer norm of it.
  /// Null when one is not computed at every point (the kernel is not
  /// built).
  FailureOr<kernel::KernelOp> build(Value value, StringRef name,
                                    Operation *before,
                                    SmallVectorImpl<Value> &inputs,
                                    Mode mode = Mode::Compute,
                                    ArrayRef<Value> rowStatistics = {},
                                    ArrayRef<Value> siblings = {},
                                    ArrayRef<Value> pointValues = {});

  /// Whether a kernel computing `value` has a domain of whole rows (one
  /// point per row of the last dimension, which its inner loop walks), so
  /// that it can compute row statistics (see build).
  static bool hasRowDomain(Value value);

private:
  LogicalResult collectInputs(Value v, llvm::SetVector<Value> &inputs,
                              llvm::SmallDenseSet<Value> &visited, bool root);
  FailureOr<Value> emit(Value v, ArrayRef<Value> idx);
  FailureOr<Value> emitOp(Operation *op, Value v, ArrayRef<Value> idx);
  FailureOr<Value> emitReduce(prim::ReduceOp op, ArrayRef<Value> idx);
  /// Max pooling's window ops at point `idx` (see their descriptions).
  FailureOr<Value> emitWindowArgmax(prim::WindowArgmaxOp op,
                                    ArrayRef<Value> idx);
  /// The window scan of `op` at `idx`: (its first maximum's value, its
  /// position).
  FailureOr<std::pair<Value, Value>> emitWindowMax(prim::WindowArgmaxOp op,
                                                   ArrayRef<Value> idx);
  /// The window's maximum alone (NaN if a point is NaN), as a vectorizable
  /// chain of maxima; for max pooling's values when nothing reads the
  /// argmax.
  FailureOr<Value> emitWindowMaxValue(prim::WindowArgmaxOp op,
                                      ArrayRef<Value> idx);
  /// Emits `op`'s operand at each point of the window at `idx`, in
  /// row-major order, and calls `visit(k, inside, value)` with the point's
  /// position, whether it lies inside the input, and its value.
  LogicalResult forEachWindowPoint(prim::WindowArgmaxOp op,
                                   ArrayRef<Value> idx,
                                   function_ref<void(int64_t, Value, Value)>
                                       visit);
  /// Per window dimension and offset of `op` at `idx`: the input
  /// coordinate (clamped into the input) and whether it lies inside.
  WindowCoordinates windowInputCoordinates(prim::WindowArgmaxOp op,
                                           ArrayRef<Value> idx);
  FailureOr<Value> emitWindowGather(prim::WindowGatherOp op,
                                    ArrayRef<Value> idx);
  FailureOr<Value> emitWindowScatter(prim::WindowScatterOp op,
                                     ArrayRef<Value> idx);
  /// Adds the update at point `idx` of `op`'s updates to the output row its
  /// index selects (an atomic add; an index out of range adds zero to row
  /// 0, so that every access stays in bounds).
  LogicalResult emitScatterAdd(prim::ScatterAddOp op, ArrayRef<Value> idx);
  /// A scatter's integer `position` as an index, and whether it lies in
  /// `[0, size)`.
  std::pair<Value, Value> positionInRange(Value position, int64_t size);
  /// Stores the update at point `idx` of `op`'s updates at the slice its
  /// index selects, nothing for an index out of range.
  LogicalResult emitScatter(prim::ScatterOp op, ArrayRef<Value> idx);
  /// `i * scale + offset` on indices, folding the trivial cases.
  Value affine(Value i, int64_t scale, int64_t offset);
  /// The operand index a reshape reads for result index `idx`.
  FailureOr<SmallVector<Value>> reshapeIndex(prim::ReshapeOp reshape,
                                             ArrayRef<Value> idx);
  /// A concatenation of windows of one value (see `WindowFamily`) as one
  /// read, at a start selected by the part the point falls in.
  FailureOr<Value> emitWindows(prim::ConcatenateOp concat,
                               const struct WindowFamily &family,
                               ArrayRef<Value> idx);
  /// An index constant, created once at the top of the kernel.
  Value index(int64_t i) {
    Value &cst = indexConstants[i];
    if (!cst) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(scopes.front()->block);
      cst = arith::ConstantIndexOp::create(b, loc, i);
    }
    return cst;
  }
  /// The innermost scope that defines one of `idx`, where a value at `idx`
  /// is computed (so it is hoisted out of loops it does not depend on).
  unsigned scopeFor(ArrayRef<Value> idx) const;
  /// Moves the pure index arithmetic that computes `i` to the outermost
  /// scope its operands allow. A reshape or slice computes a row's
  /// coordinates where it is read, often inside the row's inner loop; a
  /// reduction at those coordinates would then be emitted in the loop and
  /// run once per element of the row (cross-entropy's backward on a 32k
  /// vocabulary: 32k reductions of 32k elements per row).
  void hoistIndex(Value i);
  void hoistIndex(Value i, llvm::SmallPtrSetImpl<Operation *> &visited);
  void setInsertionPoint(unsigned scope);
  void pushScope(Block *block, Operation *nested);

  const FusionPlan &plan;
  OpBuilder b;
  Location loc;
  bool cacheRows;
  /// Concatenations along the last dimension split the inner loop.
  bool splitConcatenations;
  /// The inner loop runs over the last dimension larger than 1.
  bool loopPastUnitDims;
  /// While the inner loop is split: the loop's index (the point's last
  /// coordinate) and, per concatenation that the point reads at it, the
  /// part that holds the loop's range.
  Value splitIndex;
  llvm::DenseMap<Operation *, unsigned> splitParts;
  /// The most ranges a split loop has (more: one loop that selects).
  static constexpr size_t kMaxLoopSplits = 64;
  /// Collects into `cuts` the part boundaries of the concatenations along
  /// the last dimension that `v` reads at the point's last coordinate
  /// (through elementwise ops and broadcasts that keep that dimension),
  /// each into splitParts.
  void findLastDimConcatenations(Value v, bool root, std::set<int64_t> &cuts,
                                 llvm::DenseSet<Value> &seen);
  llvm::DenseMap<Value, Value> buffers;
  /// The row statistics the kernel under construction computes inline
  /// (see build), their buffers, those stored so far, and whether one was
  /// computed inside the row's loop.
  llvm::SmallDenseSet<Value> rowStats, rowStatsStored;
  llvm::DenseMap<Value, Value> rowStatBuffers;
  bool rowStatElsewhere = false;
  /// The point values (see build) and their buffers; the block of the
  /// point being emitted (null: none), the point values computed there (the
  /// scalar, its buffer and index) and those seen, and whether a point
  /// lacked one.
  llvm::DenseMap<Value, Value> pointValueBuffers;
  Block *pointScope = nullptr;
  SmallVector<std::tuple<Value, Value, SmallVector<Value>>> pointStores;
  llvm::SmallDenseSet<Value> pointsSeen;
  bool pointValueMissing = false;
  /// Whether a value at `idx` is computed at the point being emitted (see
  /// pointScope).
  bool atPoint(ArrayRef<Value> idx) const;
  SmallVector<std::unique_ptr<Scope>> scopes;
  llvm::DenseMap<int64_t, Value> indexConstants;

public:
  /// Whether the kernel reads realized value `v` only at the row it is
  /// computing (so it can run as the row epilogue of v's producer).
  bool readsOnlyOwnRow(Value v) const {
    auto it = rowLocal.find(v);
    return it != rowLocal.end() && it->second;
  }

private:
  llvm::DenseMap<Value, bool> rowLocal;

  /// Row caching: a value reduced over the last dimension and also needed
  /// by the output's inner loop (softmax's exp(x - max)) is stored into the
  /// output row by the reduction and read back by the loop, instead of
  /// being computed twice. `rowIndex` are the kernel's row coordinates,
  /// `loopIndex` the inner loop's induction value.
  /// `cached`: the value whose row a row reduction stored in `cachedIn`
  /// (the output, or the value's own buffer for a point value).
  Value out, cached, cachedIn, loopIndex;
  /// Whether the reduction that caches `cached` is complete.
  bool cacheComplete = false;
  SmallVector<Value> rowIndex;
  bool mayCacheRows = false;
};

//===----------------------------------------------------------------------===//
// Values a kernel stores besides its own (MultipleOutputs.cpp)
//===----------------------------------------------------------------------===//

/// Row statistics (see KernelBuilder::build): `of` maps a realized value to
/// the realized values of its rows' shape that its kernel also computes and
/// stores, in program order; `readers` maps each of those to that value.
struct RowStatistics {
  llvm::DenseMap<Value, SmallVector<Value>> of;
  llvm::DenseMap<Value, Value> readers;
};

/// The realized values of `order` (program order) that are row statistics
/// of another's kernel; `copied`: values returned twice (copied), `returned`:
/// the function's results.
RowStatistics rowStatistics(FusionPlan &plan, ArrayRef<Value> order,
                            const llvm::DenseSet<Value> &copied,
                            const llvm::DenseSet<Value> &returned);

/// Siblings (see KernelBuilder::build): `of` maps a realized value to the
/// later realized values its kernel also computes, in program order;
/// `hosts` maps each of those to that value.
struct Siblings {
  llvm::DenseMap<Value, SmallVector<Value>> of;
  llvm::DenseMap<Value, Value> hosts;
};

/// The realized values of `order` that are siblings of an earlier one's
/// kernel (`computedInOutput`: values computed in an output's buffer).
Siblings siblings(FusionPlan &plan, ArrayRef<Value> order,
                  const RowStatistics &stats,
                  const llvm::DenseSet<Value> &returned,
                  const llvm::DenseMap<Value, Value> &computedInOutput);

/// Point values (see KernelBuilder::build): `of` maps a realized value to
/// the realized values its kernel also computes and stores at its points,
/// in program order; `hosts` maps each of those to that value.
struct PointValues {
  llvm::DenseMap<Value, SmallVector<Value>> of;
  llvm::DenseMap<Value, Value> hosts;
};

/// The realized values of `order` that the first kernel reading them
/// computes and stores at its own points (`copied`, `returned`,
/// `computedInOutput` as for the others).
PointValues pointValues(FusionPlan &plan, ArrayRef<Value> order,
                        const RowStatistics &stats, const Siblings &sibs,
                        const llvm::DenseSet<Value> &copied,
                        const llvm::DenseSet<Value> &returned,
                        const llvm::DenseMap<Value, Value> &computedInOutput);

/// Converts a scalar with PyTorch's rules (truncation toward zero, bool is
/// `!= 0`).
Value emitConvert(OpBuilder &b, Location loc, Value v, Type to);

} // namespace mlir::tc::fuse

#endif // TC_LIB_CONVERSION_PRIMTOKERNEL_FUSION_H
