//===- PrimToKernel.cpp - fuse prim ops into kernels ------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Fusion, the way Inductor does it: decide which values are realized in
// buffers, then generate, for each realized value, one kernel that computes
// it point by point, recursively inlining the scalar computation of every
// value that is not realized. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cmath>
#include <map>

namespace mlir::tc {
#define GEN_PASS_DEF_CONVERTPRIMTOKERNELPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;
using namespace mlir::tc;

namespace {

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The graph's symbolic size (a `?`) as fusion's cost model and the empty
/// tensor checks see it: a size, larger than any that matters to them.
constexpr int64_t kSymbolHint = 1024;

static int64_t hintNumElements(RankedTensorType type) {
  int64_t count = 1;
  for (int64_t size : type.getShape())
    count *= ShapedType::isDynamic(size) ? kSymbolHint : size;
  return count;
}

static MemRefType bufferType(Value v) {
  RankedTensorType t = tensorType(v);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// Whether `v` is a splat constant (computed inline as a scalar).
static bool isSplatConstant(Value v) {
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

/// The point window position `k` names, after the indices `lead`, and
/// whether its coordinates are all valid.
static std::pair<SmallVector<Value>, Value>
windowPoint(OpBuilder &b, Location loc, const WindowGeometry &g,
            ArrayRef<Value> lead, const WindowCoordinates &coordinates,
            int64_t k) {
  SmallVector<Value> at(lead);
  Value valid;
  for (auto [d, offset] : llvm::enumerate(g.offsets(k))) {
    auto [coordinate, ok] = coordinates[d][offset];
    at.push_back(coordinate);
    valid = valid ? arith::AndIOp::create(b, loc, valid, ok).getResult() : ok;
  }
  return {std::move(at), valid};
}

/// The argmax whose positions `gather` reads when it reads them from its
/// own operand over the same windows (max pooling's values): the gather is
/// then the maximum its scan keeps, computed without the positions. Null
/// otherwise.
static prim::WindowArgmaxOp maxOfWindows(prim::WindowGatherOp gather) {
  auto argmax = gather.getPositions().getDefiningOp<prim::WindowArgmaxOp>();
  if (argmax && argmax.getOperand() == gather.getOperand() &&
      argmax.getWindow() == gather.getWindow() &&
      argmax.getStrides() == gather.getStrides() &&
      argmax.getPadding() == gather.getPadding() &&
      argmax.getDilation() == gather.getDilation())
    return argmax;
  return nullptr;
}

/// How many points of each windowed operand computing one point of `op`
/// reads (1 for ops other than the window ops).
static int64_t windowReads(Operation *op) {
  if (auto argmax = dyn_cast<prim::WindowArgmaxOp>(op))
    return WindowGeometry(argmax).positions();
  if (auto gather = dyn_cast<prim::WindowGatherOp>(op))
    return maxOfWindows(gather) ? WindowGeometry(gather).positions() : 1;
  if (auto scatter = dyn_cast<prim::WindowScatterOp>(op))
    return WindowGeometry(scatter).positions();
  return 1;
}

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

/// A value that several kernels would inline is realized instead when
/// computing it reads this many large tensors per element.
constexpr int64_t kSharedReadsToRealize = 4;

/// A computed value broadcast to at least this many times its elements is
/// realized (`realizeBroadcastSources`).
constexpr int64_t kBroadcastRatioToRealize = 16;

class FusionPlan {
public:
  FusionPlan(func::FuncOp func, bool weightsChannelsFirst,
             bool realizeBroadcastSources)
      : func(func), weightsChannelsFirst(weightsChannelsFirst),
        realizeBroadcastSources(realizeBroadcastSources) {}

  LogicalResult build();

  bool isRealized(Value v) const { return realized.contains(v); }
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

private:
  /// With `weightsChannelsFirst`, the graph input a channels-last
  /// convolution's weight `w` permutes to channels-last, where every
  /// reader of that permute is a convolution's weight (a forward or input
  /// gradient, channels-last): those read the input in PyTorch's layout
  /// and the permute is never computed. Null otherwise.
  Value channelsFirstWeight(Value w) const {
    auto permute = w.getDefiningOp<prim::PermuteOp>();
    if (!weightsChannelsFirst || !permute ||
        !isa<BlockArgument>(permute.getOperand()))
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

  /// Whether computing one element of `v` inline takes a division, a
  /// square root or a transcendental function (a cast or a product does
  /// not make a value worth a kernel of its own).
  bool computesSlowly(Value v) const {
    SmallVector<Value> worklist = {v};
    llvm::SmallDenseSet<Value> seen;
    while (!worklist.empty()) {
      Value next = worklist.pop_back_val();
      Operation *op = next.getDefiningOp();
      if (!op || (next != v && realized.contains(next)) ||
          !seen.insert(next).second)
        continue;
      if (isa<prim::DivOp, prim::PowOp, prim::SqrtOp, prim::RsqrtOp,
              prim::ExpOp, prim::Expm1Op, prim::LogOp, prim::Log1pOp,
              prim::TanhOp, prim::ErfOp, prim::SinOp, prim::CosOp>(op))
        return true;
      llvm::append_range(worklist, op->getOperands());
    }
    return false;
  }

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

  /// Memoized read costs, by value and the size they are measured against.
  using ReadCosts = llvm::DenseMap<std::pair<Value, int64_t>, int64_t>;

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
  bool realizeBroadcastSources;
  llvm::SetVector<Value> realized;
  llvm::DenseMap<Value, Gemm> gemms;
  llvm::DenseMap<Value, Conv> convs;
};

LogicalResult FusionPlan::build() {
  for (BlockArgument arg : func.getArguments())
    realized.insert(arg);
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
    if (rank == 2 && dot->hasOneUse()) {
      if (auto add = dyn_cast<prim::AddOp>(*dot->user_begin())) {
        Value other = add.getLhs() == dot.getResult() ? add.getRhs()
                                                      : add.getLhs();
        auto bcast = other.getDefiningOp<prim::BroadcastInDimOp>();
        if (bcast && tensorType(bcast.getOperand()).getRank() == 1 &&
            bcast.getBroadcastDimensions() == ArrayRef<int64_t>{1} &&
            tensorType(bcast.getOperand()).getDimSize(0) ==
                tensorType(add).getDimSize(1) &&
            !isSplatConstant(bcast.getOperand())) {
          realized.insert(bcast.getOperand());
          gemm.bias = bcast.getOperand();
          gemm.result = add.getResult();
        }
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

  // A value read through several windows (the strided slices of a
  // convolution's or a pooling's input, the parts of a concatenation) would
  // be recomputed by each window, and windows of windows multiply that:
  // realize it once.
  func.walk([&](Operation *op) {
    for (Value v : op->getResults()) {
      unsigned windows = 0;
      for (Operation *user : v.getUsers())
        windows += isa<prim::SliceOp, prim::PadOp, prim::ConcatenateOp>(user);
      if (windows > 1)
        realized.insert(v);
    }
  });

  // So is what a window op reads at every point of a window (a pooling's
  // input, its backward's cotangent and positions), and a pooling's input,
  // which the positions' and the values' kernels both read.
  func.walk([&](Operation *op) {
    if (isa<prim::WindowArgmaxOp, prim::WindowGatherOp>(op))
      realized.insert(op->getOperand(0));
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

  // A reduction of a reduction (what tc-reassociate-reductions makes of a
  // strided one) runs as two kernels: rows, then the small rest. Inlined,
  // it would be one strided loop nest again.
  func.walk([&](prim::ReduceOp reduce) {
    if (reduce.getOperand().getDefiningOp<prim::ReduceOp>())
      realized.insert(reduce.getOperand());
  });

  // With `realizeBroadcastSources` (the CPU's choice), a small value that
  // takes a division or a square root, broadcast to a much larger one
  // along its inner dimension (batch norm's per-channel
  // `rsqrt(var + eps) * weight`, channels-last), is realized: inlined, it
  // is computed again at every point it is broadcast to, which costs
  // nothing where the broadcast dimension is a loop the compiler hoists it
  // out of (channels-first) but a square root and a division per element
  // where it is the inner one (channels-last). GPUs recompute it at no
  // cost (their kernels wait on memory) and save the launch.
  if (realizeBroadcastSources)
    func.walk([&](prim::BroadcastInDimOp bcast) {
      Value source = bcast.getOperand();
      Operation *def = source.getDefiningOp();
      if (!def || realized.contains(source) ||
          isa<prim::ConstantOp, prim::BroadcastInDimOp, prim::ReshapeOp,
              prim::PermuteOp>(def))
        return;
      // Only a value that varies along the result's inner dimension: one
      // that is constant along it (a row's statistics) is hoisted.
      RankedTensorType out = tensorType(bcast);
      int64_t inner = out.getRank() - 1;
      ArrayRef<int64_t> dims = bcast.getBroadcastDimensions();
      const int64_t *it = llvm::find(dims, inner);
      if (inner < 0 || it == dims.end() || out.getDimSize(inner) <= 1 ||
          tensorType(source).getDimSize(it - dims.begin()) !=
              out.getDimSize(inner))
        return;
      int64_t from = hintNumElements(tensorType(source));
      int64_t to = hintNumElements(out);
      if (from > 0 && to >= kBroadcastRatioToRealize * from &&
          computesSlowly(source))
        realized.insert(source);
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
  return success();
}

int64_t FusionPlan::readCost(Value v, int64_t points, ReadCosts &costs) {
  auto it = costs.find({v, points});
  if (it != costs.end())
    return it->second;
  int64_t cost = 0;
  if (Operation *op = v.getDefiningOp()) {
    int64_t reads = windowReads(op);
    for (Value operand : op->getOperands()) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      if (realized.contains(operand))
        cost += reads * (hintNumElements(tensorType(operand)) * 16 >= points);
      else
        cost += reads * readCost(operand, points, costs);
    }
  }
  costs[{v, points}] = cost;
  return cost;
}

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

static std::optional<WindowFamily> windowFamily(prim::ConcatenateOp concat,
                                                const FusionPlan &plan) {
  OperandRange inputs = concat.getInputs();
  if (inputs.size() < 2 || llvm::any_of(inputs, [&](Value v) {
        return v.getType() != inputs[0].getType();
      }))
    return std::nullopt;
  WindowFamily family;
  SmallVector<Value> values(inputs.begin(), inputs.end());
  while (!llvm::all_equal(values)) {
    if (llvm::any_of(values, [&](Value v) { return plan.isRealized(v); }))
      return std::nullopt;
    Operation *first = values[0].getDefiningOp();
    if (!first || !isa<prim::PermuteOp, prim::ReshapeOp, prim::SliceOp>(first))
      return std::nullopt;
    SmallVector<ArrayRef<int64_t>> starts;
    for (Value &v : values) {
      Operation *op = v.getDefiningOp();
      if (!op || op->getName() != first->getName() ||
          op->getOperand(0).getType() != first->getOperand(0).getType())
        return std::nullopt;
      if (auto slice = dyn_cast<prim::SliceOp>(op)) {
        if (slice.getStrides() != cast<prim::SliceOp>(first).getStrides())
          return std::nullopt;
        starts.push_back(slice.getStart());
      } else if (op->getAttrDictionary() != first->getAttrDictionary()) {
        return std::nullopt;
      }
      v = op->getOperand(0);
    }
    family.chain.push_back(first);
    if (!isa<prim::SliceOp>(first))
      starts.clear();
    family.starts.push_back(std::move(starts));
  }
  if (family.chain.empty())
    return std::nullopt;
  family.source = values[0];
  return family;
}

class KernelBuilder {
public:
  KernelBuilder(const FusionPlan &plan, Location loc, bool cacheRows)
      : plan(plan), b(loc.getContext()), loc(loc), cacheRows(cacheRows) {}

  /// What a kernel built for a value does: compute it point by point, or
  /// (for a scatter-add's result) fill it with zeros or add its updates.
  enum class Mode { Compute, Zeros, ScatterAdd };

  /// Creates a kernel that computes `value` into a buffer, inserted before
  /// `before`; returns the kernel and the realized values it reads, in
  /// argument order (the output buffer is the last argument).
  FailureOr<kernel::KernelOp> build(Value value, StringRef name,
                                    Operation *before,
                                    SmallVectorImpl<Value> &inputs,
                                    Mode mode = Mode::Compute);

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
  FailureOr<Value> emitWindowGather(prim::WindowGatherOp op,
                                    ArrayRef<Value> idx);
  FailureOr<Value> emitWindowScatter(prim::WindowScatterOp op,
                                     ArrayRef<Value> idx);
  /// Adds the update at point `idx` of `op`'s updates to the output row its
  /// index selects (an atomic add; an index out of range adds zero to row
  /// 0, so that every access stays in bounds).
  LogicalResult emitScatterAdd(prim::ScatterAddOp op, ArrayRef<Value> idx);
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
  llvm::DenseMap<Value, Value> buffers;
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
  Value out, cached, loopIndex;
  SmallVector<Value> rowIndex;
  bool mayCacheRows = false;
};

FailureOr<SmallVector<Value>>
KernelBuilder::reshapeIndex(prim::ReshapeOp reshape, ArrayRef<Value> idx) {
  ArrayRef<int64_t> inShape = tensorType(reshape.getOperand()).getShape();
  ArrayRef<int64_t> outShape = reshape.getShape();
  // Dimensions group into runs of equal size on both sides (a collapse,
  // an expansion, unit dims): each run is linearized with the result's
  // sizes and delinearized with the operand's, so a reshape that merges
  // trailing dims costs divisions for those dims only.
  SmallVector<Value> inIdx(inShape.size());
  if (llvm::is_contained(inShape, 0)) {
    // No point is ever computed: any index does.
    for (Value &v : inIdx)
      v = index(0);
    return inIdx;
  }
  size_t i = 0, j = 0;
  while (i < inShape.size() || j < outShape.size()) {
    size_t inBegin = i, outBegin = j;
    int64_t inSize = 1, outSize = 1;
    if (i < inShape.size())
      inSize *= inShape[i++];
    if (j < outShape.size())
      outSize *= outShape[j++];
    while (inSize != outSize) {
      if (inSize < outSize && i < inShape.size())
        inSize *= inShape[i++];
      else if (outSize < inSize && j < outShape.size())
        outSize *= outShape[j++];
      else
        return reshape.emitOpError() << "sizes do not match";
    }
    Value linear;
    for (size_t k = outBegin; k < j; ++k) {
      if (outShape[k] == 1)
        continue;
      linear = linear ? arith::AddIOp::create(
                            b, loc,
                            arith::MulIOp::create(b, loc, linear,
                                                  index(outShape[k])),
                            idx[k])
                            .getResult()
                      : idx[k];
    }
    if (!linear)
      linear = index(0);
    // The first non-unit operand dim of the run takes what is left.
    size_t first = inBegin;
    while (first + 1 < i && inShape[first] == 1)
      ++first;
    for (size_t k = i; k-- > inBegin;) {
      if (inShape[k] == 1 && k != first) {
        inIdx[k] = index(0);
        continue;
      }
      if (k == first) {
        inIdx[k] = linear;
        continue;
      }
      inIdx[k] = arith::RemUIOp::create(b, loc, linear, index(inShape[k]));
      linear = arith::DivUIOp::create(b, loc, linear, index(inShape[k]));
    }
    for (size_t k = inBegin; k < first; ++k)
      inIdx[k] = index(0);
  }
  return inIdx;
}

FailureOr<Value> KernelBuilder::emitWindows(prim::ConcatenateOp concat,
                                            const WindowFamily &family,
                                            ArrayRef<Value> idx) {
  int64_t dim = concat.getDim();
  int64_t size = tensorType(concat.getInputs()[0]).getDimSize(dim);
  if (size == 0)
    return concat.emitOpError() << "has no elements to read";
  SmallVector<Value> cur(idx);
  Value part = arith::DivUIOp::create(b, loc, idx[dim], index(size));
  cur[dim] = arith::RemUIOp::create(b, loc, idx[dim], index(size));
  for (auto [op, starts] : llvm::zip(family.chain, family.starts)) {
    if (auto permute = dyn_cast<prim::PermuteOp>(op)) {
      SmallVector<Value> in(cur.size());
      for (auto [i, p] : llvm::enumerate(permute.getPermutation()))
        in[p] = cur[i];
      cur = std::move(in);
      continue;
    }
    if (auto reshape = dyn_cast<prim::ReshapeOp>(op)) {
      FailureOr<SmallVector<Value>> in = reshapeIndex(reshape, cur);
      if (failed(in))
        return failure();
      cur = std::move(*in);
      continue;
    }
    auto slice = cast<prim::SliceOp>(op);
    for (auto [d, stride] : llvm::enumerate(slice.getStrides())) {
      Value i = cur[d];
      if (stride != 1)
        i = arith::MulIOp::create(b, loc, i, index(stride));
      // The part's start along d: a constant when all parts agree, else
      // selected by the part (integer selects, no loads). The trailing
      // parts that start where the last one does need no select.
      int64_t same = static_cast<int64_t>(starts.size()) - 1;
      while (same > 0 && starts[same - 1][d] == starts.back()[d])
        --same;
      Value start = index(starts.back()[d]);
      for (int64_t k = same - 1; k >= 0; --k) {
        Value isPart = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             part, index(k));
        start = arith::SelectOp::create(b, loc, isPart, index(starts[k][d]),
                                        start);
      }
      size_t dim = d;
      bool zero = llvm::all_of(starts, [&](ArrayRef<int64_t> s) {
        return s[dim] == 0;
      });
      cur[d] = zero ? i : arith::AddIOp::create(b, loc, i, start).getResult();
    }
  }
  return emit(family.source, cur);
}

void KernelBuilder::hoistIndex(Value i) {
  llvm::SmallPtrSet<Operation *, 32> visited;
  hoistIndex(i, visited);
}

void KernelBuilder::hoistIndex(Value i,
                               llvm::SmallPtrSetImpl<Operation *> &visited) {
  // Each op once: the operands form a DAG, and a window argmax's chain of
  // selects (each reading the previous best) made a walk of all its paths
  // exponential (a 3x3x3 max_pool3d never finished compiling).
  Operation *op = i.getDefiningOp();
  if (!op || !isa<arith::ArithDialect>(op->getDialect()) || !isPure(op) ||
      op->getNumRegions() || !visited.insert(op).second)
    return;
  for (Value operand : op->getOperands())
    hoistIndex(operand, visited);
  SmallVector<Value> operands(op->getOperands());
  unsigned target = scopeFor(operands), current = scopeFor({i});
  if (target >= current)
    return;
  Scope &s = *scopes[target];
  if (s.nested)
    op->moveBefore(s.nested);
  else
    op->moveBefore(s.block, s.block->end());
}

unsigned KernelBuilder::scopeFor(ArrayRef<Value> idx) const {
  unsigned deepest = 0;
  for (Value i : idx) {
    // The scope of the innermost block around i's definition.
    for (Block *block = i.getParentBlock(); block;) {
      auto it = llvm::find_if(scopes, [&](const std::unique_ptr<Scope> &s) {
        return s->block == block;
      });
      if (it != scopes.end()) {
        deepest = std::max<unsigned>(deepest, it - scopes.begin());
        break;
      }
      Operation *parent = block->getParentOp();
      block = parent ? parent->getBlock() : nullptr;
    }
  }
  return deepest;
}

void KernelBuilder::setInsertionPoint(unsigned scope) {
  Scope &s = *scopes[scope];
  if (s.nested)
    b.setInsertionPoint(s.nested);
  else
    b.setInsertionPointToEnd(s.block);
}

void KernelBuilder::pushScope(Block *block, Operation *nested) {
  scopes.back()->nested = nested;
  scopes.push_back(std::make_unique<Scope>());
  scopes.back()->block = block;
}

LogicalResult KernelBuilder::collectInputs(Value v,
                                           llvm::SetVector<Value> &inputs,
                                           llvm::SmallDenseSet<Value> &visited,
                                           bool root) {
  if (!visited.insert(v).second)
    return success();
  if (!root && plan.isRealized(v)) {
    inputs.insert(v);
    return success();
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return success();
  if (isa<prim::DotOp, prim::ConvolutionOp, prim::ConvolutionBackwardInputOp,
          prim::ConvolutionBackwardWeightOp>(op))
    return op->emitOpError() << "must be realized before it is read";
  // Max pooling's values read the pooled operand, not the positions.
  if (auto gather = dyn_cast<prim::WindowGatherOp>(op); gather &&
                                                        maxOfWindows(gather))
    return collectInputs(gather.getOperand(), inputs, visited, false);
  for (Value operand : op->getOperands())
    if (failed(collectInputs(operand, inputs, visited, false)))
      return failure();
  return success();
}

FailureOr<kernel::KernelOp>
KernelBuilder::build(Value value, StringRef name, Operation *before,
                     SmallVectorImpl<Value> &inputs, Mode mode) {
  llvm::SetVector<Value> reads;
  llvm::SmallDenseSet<Value> visited;
  if (mode != Mode::Zeros &&
      failed(collectInputs(value, reads, visited, /*root=*/true)))
    return failure();
  // A realized value read as-is (an output that is an input, say) is a copy.
  if (plan.isRealized(value) && value.getDefiningOp() == nullptr)
    reads.insert(value);

  SmallVector<Type> argTypes;
  for (Value v : reads)
    argTypes.push_back(bufferType(v));
  argTypes.push_back(bufferType(value));

  // A scatter-add's kernel runs over its updates, the others over `value`.
  auto scatter = value.getDefiningOp<prim::ScatterAddOp>();
  RankedTensorType type = tensorType(
      mode == Mode::ScatterAdd ? scatter.getUpdates() : value);
  ArrayRef<int64_t> shape = type.getShape();
  // A vector of the symbolic size has no static row: each point is a row.
  bool symbolicRows = shape.size() == 1 && type.isDynamicDim(0);
  SmallVector<int64_t> domain(shape.begin(), shape.empty() || symbolicRows
                                                 ? shape.end()
                                                 : shape.end() - 1);
  // Few long rows (a 1-d tensor, say) leave threads idle: split the last
  // dimension into blocks, which become a domain dimension of their own.
  int64_t rows = 1, block = 0;
  for (int64_t size : domain)
    rows *= ShapedType::isDynamic(size) ? kSymbolHint : size;
  if (!shape.empty() && rows < 64 && shape.back() >= (1 << 15))
    for (int64_t candidate : {4096, 2048, 1024, 512, 256})
      if (shape.back() % candidate == 0) {
        block = candidate;
        domain.push_back(shape.back() / block);
        break;
      }

  b.setInsertionPoint(before);
  auto kernel = kernel::KernelOp::create(
      b, loc, name, b.getFunctionType(argTypes, {}), domain,
      /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  Block *entry = kernel.addEntryBlock();
  for (auto [v, arg] : llvm::zip(reads, entry->getArguments()))
    buffers[v] = arg;
  out = entry->getArguments().back();
  rowLocal.clear();
  cached = loopIndex = Value();
  rowIndex.clear();
  mayCacheRows = false;

  scopes.clear();
  scopes.push_back(std::make_unique<Scope>());
  scopes.back()->block = entry;
  b.setInsertionPointToEnd(entry);

  SmallVector<Value> idx;
  for (int64_t d = 0, e = domain.size(); d < e; ++d) {
    Value i = kernel::IndexOp::create(b, loc, b.getIndexType(), d);
    idx.push_back(i);
  }
  if (!block && !shape.empty() && !symbolicRows && mode == Mode::Compute) {
    rowIndex = idx;
    mayCacheRows = cacheRows;
  }
  // The point computation itself. An inner loop over the last dimension
  // keeps the contiguous dimension innermost.
  auto emitPoint = [&](ArrayRef<Value> point) -> LogicalResult {
    if (mode == Mode::Zeros) {
      Value zero = arith::ConstantOp::create(
          b, loc, b.getZeroAttr(type.getElementType()));
      memref::StoreOp::create(b, loc, zero, out, point);
      return success();
    }
    if (mode == Mode::ScatterAdd)
      return emitScatterAdd(scatter, point);
    FailureOr<Value> scalar = emit(value, point);
    if (failed(scalar))
      return failure();
    memref::StoreOp::create(b, loc, *scalar, out, point);
    return success();
  };
  if (!shape.empty() && !symbolicRows) {
    Value blockIndex = block ? idx.pop_back_val() : Value();
    auto loop =
        kernel::LoopOp::create(b, loc, index(block ? block : shape.back()));
    Block *body = b.createBlock(&loop.getBody(), {}, {b.getIndexType()},
                                {loc});
    pushScope(body, nullptr);
    scopes[0]->nested = loop;
    b.setInsertionPointToEnd(body);
    Value inner = body->getArgument(0);
    if (!block)
      loopIndex = inner;
    if (block)
      inner = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, blockIndex, index(block)),
          inner);
    idx.push_back(inner);
    if (failed(emitPoint(idx)))
      return failure();
    // The loop computed the row a reduction cached before the reduction
    // was emitted: read the cached row instead (the inline copy is dead).
    if (cached) {
      std::vector<const void *> key = {cached.getAsOpaquePointer()};
      for (Value i : idx)
        key.push_back(i.getAsOpaquePointer());
      auto it = scopes[1]->memo.find(key);
      if (it != scopes[1]->memo.end()) {
        b.setInsertionPointToStart(body);
        Value row = memref::LoadOp::create(b, loc, out, idx);
        it->second.replaceAllUsesWith(row);
      }
    }
    setInsertionPoint(1);
    kernel::YieldOp::create(b, loc);
    b.setInsertionPointAfter(loop);
  } else if (failed(emitPoint(idx))) {
    return failure();
  }
  kernel::ReturnOp::create(b, loc);

  // The symbolic size is the domain's first extent, never a loop's: a
  // kernel that would need it inside (a reduction over the batch, say) is
  // not compiled (the backend compiles such graphs per shape).
  WalkResult symbolInside = kernel.walk([](arith::ConstantIndexOp c) {
    return ShapedType::isDynamic(c.value()) ? WalkResult::interrupt()
                                            : WalkResult::advance();
  });
  if (symbolInside.wasInterrupted())
    return emitError(loc) << "tc-fuse: the kernel for " << type
                          << " needs the symbolic size inside it (a loop or "
                             "reduction over it); not supported yet";

  inputs.assign(reads.begin(), reads.end());
  return kernel;
}

LogicalResult KernelBuilder::emitScatterAdd(prim::ScatterAddOp op,
                                            ArrayRef<Value> idx) {
  FailureOr<Value> update = emit(op.getUpdates(), idx);
  if (failed(update))
    return failure();
  FailureOr<Value> position = emit(op.getIndices(), idx.take_front());
  if (failed(position))
    return failure();
  int64_t rows = tensorType(op.getResult()).getDimSize(0);
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), *position);
  Value inRange = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i, index(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                            index(rows)));
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(update->getType()));
  Value added = arith::SelectOp::create(b, loc, inRange, *update, zero);
  SmallVector<Value> at = {
      arith::SelectOp::create(b, loc, inRange, i, index(0))};
  llvm::append_range(at, idx.drop_front());
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, added, out,
                              at);
  return success();
}

FailureOr<Value> KernelBuilder::emit(Value v, ArrayRef<Value> idx) {
  if (v == cached && loopIndex && idx.back() == loopIndex &&
      idx.drop_back() == ArrayRef<Value>(rowIndex)) {
    OpBuilder::InsertionGuard guard(b);
    setInsertionPoint(scopeFor(idx));
    return memref::LoadOp::create(b, loc, out, idx).getResult();
  }
  for (Value i : idx)
    hoistIndex(i);
  unsigned scope = scopeFor(idx);
  std::vector<const void *> key = {v.getAsOpaquePointer()};
  for (Value i : idx)
    key.push_back(i.getAsOpaquePointer());
  for (unsigned s = scope + 1; s-- > 0;)
    if (auto it = scopes[s]->memo.find(key); it != scopes[s]->memo.end())
      return it->second;

  OpBuilder::InsertionGuard guard(b);
  setInsertionPoint(scope);
  FailureOr<Value> result;
  if (auto it = buffers.find(v); it != buffers.end()) {
    bool ownRow = rowIndex.size() == 1 && !idx.empty() && idx[0] == rowIndex[0];
    auto [entry, inserted] = rowLocal.try_emplace(v, ownRow);
    if (!inserted)
      entry->second = entry->second && ownRow;
    result = memref::LoadOp::create(b, loc, it->second, idx).getResult();
  } else if (Operation *op = v.getDefiningOp()) {
    result = emitOp(op, v, idx);
  } else {
    return emitError(loc) << "tc-fuse: value has no buffer and no producer";
  }
  if (succeeded(result))
    scopes[scope]->memo[key] = *result;
  return result;
}

/// The arith/math op for a prim elementwise op on scalars of type `elt`.
static FailureOr<Value> emitElementwise(OpBuilder &b, Location loc,
                                        Operation *op, ValueRange args,
                                        Type elt) {
  bool isFloat = isa<FloatType>(elt);
  bool isBool = elt.isInteger(1);
  auto unsupported = [&]() -> FailureOr<Value> {
    return op->emitOpError() << "has no kernel lowering for element type "
                             << elt;
  };
  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](prim::NegOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::NegFOp::create(b, loc, args[0]).getResult();
        Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
        return arith::SubIOp::create(b, loc, zero, args[0]).getResult();
      })
      .Case([&](prim::AbsOp) -> FailureOr<Value> {
        if (isFloat)
          return math::AbsFOp::create(b, loc, args[0]).getResult();
        // x < 0 ? -x : x (math.absi has no NVVM or ROCDL lowering).
        Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
        Value negative = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, args[0], zero);
        return arith::SelectOp::create(
                   b, loc, negative,
                   arith::SubIOp::create(b, loc, zero, args[0]), args[0])
            .getResult();
      })
      .Case([&](prim::SignOp) -> FailureOr<Value> {
        // PyTorch's (0 < x) - (x < 0): zeros and NaN give 0.
        Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elt));
        Value one = arith::ConstantOp::create(
            b, loc,
            isFloat ? TypedAttr(b.getFloatAttr(elt, 1.0))
                    : TypedAttr(b.getIntegerAttr(elt, 1)));
        Value minusOne = arith::ConstantOp::create(
            b, loc,
            isFloat ? TypedAttr(b.getFloatAttr(elt, -1.0))
                    : TypedAttr(b.getIntegerAttr(elt, -1)));
        Value positive, negative;
        if (isFloat) {
          positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                           args[0], zero);
          negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                           args[0], zero);
        } else {
          positive = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                           args[0], zero);
          negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           args[0], zero);
        }
        Value rest = arith::SelectOp::create(b, loc, negative, minusOne, zero);
        return arith::SelectOp::create(b, loc, positive, one, rest)
            .getResult();
      })
      .Case([&](prim::ExpOp) { return math::ExpOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::Expm1Op) { return math::ExpM1Op::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::LogOp) { return math::LogOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::Log1pOp) { return math::Log1pOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::SinOp) { return math::SinOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::CosOp) { return math::CosOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::TanOp) { return math::TanOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::AsinOp) { return math::AsinOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::AcosOp) { return math::AcosOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::AtanOp) { return math::AtanOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::SinhOp) { return math::SinhOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::CoshOp) { return math::CoshOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::TanhOp) { return math::TanhOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::SqrtOp) { return math::SqrtOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::RsqrtOp) { return math::RsqrtOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::ErfOp) { return math::ErfOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::FloorOp) { return math::FloorOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::CeilOp) { return math::CeilOp::create(b, loc, args[0]).getResult(); })
      // torch.round rounds half to even.
      .Case([&](prim::RoundOp) { return math::RoundEvenOp::create(b, loc, args[0]).getResult(); })
      .Case([&](prim::BitwiseNotOp) -> FailureOr<Value> {
        Value ones = arith::ConstantOp::create(
            b, loc, b.getIntegerAttr(elt, APInt::getAllOnes(elt.getIntOrFloatBitWidth())));
        return arith::XOrIOp::create(b, loc, args[0], ones).getResult();
      })
      .Case([&](prim::AddOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::AddFOp::create(b, loc, args[0], args[1]).getResult();
        if (isBool)
          return arith::OrIOp::create(b, loc, args[0], args[1]).getResult();
        return arith::AddIOp::create(b, loc, args[0], args[1]).getResult();
      })
      .Case([&](prim::SubOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::SubFOp::create(b, loc, args[0], args[1]).getResult();
        return arith::SubIOp::create(b, loc, args[0], args[1]).getResult();
      })
      .Case([&](prim::MulOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::MulFOp::create(b, loc, args[0], args[1]).getResult();
        if (isBool)
          return arith::AndIOp::create(b, loc, args[0], args[1]).getResult();
        return arith::MulIOp::create(b, loc, args[0], args[1]).getResult();
      })
      .Case([&](prim::DivOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::DivFOp::create(b, loc, args[0], args[1]).getResult();
        if (isBool)
          return unsupported();
        return arith::DivSIOp::create(b, loc, args[0], args[1]).getResult();
      })
      .Case([&](prim::RemOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::RemFOp::create(b, loc, args[0], args[1]).getResult();
        if (isBool)
          return unsupported();
        return arith::RemSIOp::create(b, loc, args[0], args[1]).getResult();
      })
      .Case([&](prim::PowOp) -> FailureOr<Value> {
        if (isFloat)
          return math::PowFOp::create(b, loc, args[0], args[1]).getResult();
        if (isBool)
          return unsupported();
        return math::IPowIOp::create(b, loc, args[0], args[1]).getResult();
      })
      // maximum/minimum propagate NaN, as torch.maximum does.
      .Case([&](prim::MaximumOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::MaximumFOp::create(b, loc, args[0], args[1]).getResult();
        if (isBool)
          return arith::OrIOp::create(b, loc, args[0], args[1]).getResult();
        return arith::MaxSIOp::create(b, loc, args[0], args[1]).getResult();
      })
      .Case([&](prim::MinimumOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::MinimumFOp::create(b, loc, args[0], args[1]).getResult();
        if (isBool)
          return arith::AndIOp::create(b, loc, args[0], args[1]).getResult();
        return arith::MinSIOp::create(b, loc, args[0], args[1]).getResult();
      })
      .Case([&](prim::Atan2Op) { return math::Atan2Op::create(b, loc, args[0], args[1]).getResult(); })
      .Case([&](prim::BitwiseAndOp) { return arith::AndIOp::create(b, loc, args[0], args[1]).getResult(); })
      .Case([&](prim::BitwiseOrOp) { return arith::OrIOp::create(b, loc, args[0], args[1]).getResult(); })
      .Case([&](prim::BitwiseXorOp) { return arith::XOrIOp::create(b, loc, args[0], args[1]).getResult(); })
      .Case([&](prim::ClampOp) -> FailureOr<Value> {
        if (isFloat)
          return arith::MinimumFOp::create(
                     b, loc, arith::MaximumFOp::create(b, loc, args[0], args[1]),
                     args[2])
              .getResult();
        return arith::MinSIOp::create(
                   b, loc, arith::MaxSIOp::create(b, loc, args[0], args[1]),
                   args[2])
            .getResult();
      })
      .Default([&](Operation *) -> FailureOr<Value> {
        return op->emitOpError() << "has no kernel lowering";
      });
}

/// Converts a scalar with PyTorch's rules (truncation toward zero, bool is
/// `!= 0`).
static Value emitConvert(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(from));
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    if (fromFloat.getWidth() > toFloat.getWidth())
      return arith::TruncFOp::create(b, loc, to, v);
    // f16 <-> bf16 goes through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (fromFloat)
    return arith::FPToSIOp::create(b, loc, to, v);
  if (toFloat)
    return from.isInteger(1) ? arith::UIToFPOp::create(b, loc, to, v).getResult()
                             : arith::SIToFPOp::create(b, loc, to, v).getResult();
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw < tw)
    return from.isInteger(1) ? arith::ExtUIOp::create(b, loc, to, v).getResult()
                             : arith::ExtSIOp::create(b, loc, to, v).getResult();
  return arith::TruncIOp::create(b, loc, to, v);
}

static arith::CmpFPredicate floatPredicate(prim::ComparisonPredicate p) {
  switch (p) {
  case prim::ComparisonPredicate::EQ:
    return arith::CmpFPredicate::OEQ;
  case prim::ComparisonPredicate::NE:
    return arith::CmpFPredicate::UNE; // NaN != NaN is true.
  case prim::ComparisonPredicate::LT:
    return arith::CmpFPredicate::OLT;
  case prim::ComparisonPredicate::LE:
    return arith::CmpFPredicate::OLE;
  case prim::ComparisonPredicate::GT:
    return arith::CmpFPredicate::OGT;
  case prim::ComparisonPredicate::GE:
    return arith::CmpFPredicate::OGE;
  }
  llvm_unreachable("unknown predicate");
}

static arith::CmpIPredicate intPredicate(prim::ComparisonPredicate p,
                                         bool isBool) {
  switch (p) {
  case prim::ComparisonPredicate::EQ:
    return arith::CmpIPredicate::eq;
  case prim::ComparisonPredicate::NE:
    return arith::CmpIPredicate::ne;
  case prim::ComparisonPredicate::LT:
    return isBool ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
  case prim::ComparisonPredicate::LE:
    return isBool ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
  case prim::ComparisonPredicate::GT:
    return isBool ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
  case prim::ComparisonPredicate::GE:
    return isBool ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
  }
  llvm_unreachable("unknown predicate");
}

//===----------------------------------------------------------------------===//
// Counter-based random numbers
//===----------------------------------------------------------------------===//

/// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1,
/// 2, 3", SC'11; the generator of PyTorch's CUDA and of JAX): ten rounds
/// of a bijection of a 128-bit counter keyed by 64 bits. Every output is a
/// function of (key, counter) only, so any point of a kernel computes its
/// own numbers, and a recomputation gives the same ones.
static std::array<Value, 4> emitPhilox(OpBuilder &b, Location loc,
                                       std::array<Value, 4> counter,
                                       std::array<Value, 2> key) {
  auto i32 = [&](uint32_t value) -> Value {
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(b.getI32Type(), static_cast<int32_t>(value)));
  };
  Value m0 = i32(0xD2511F53), m1 = i32(0xCD9E8D57);
  Value w0 = i32(0x9E3779B9), w1 = i32(0xBB67AE85);
  std::array<Value, 4> c = counter;
  std::array<Value, 2> k = key;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] = arith::AddIOp::create(b, loc, k[0], w0);
      k[1] = arith::AddIOp::create(b, loc, k[1], w1);
    }
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, c[0]);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, c[2]);
    Value x0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), c[1]), k[0]);
    Value x2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), c[3]), k[1]);
    c = {x0, p1.getLow(), x2, p0.getLow()};
  }
  return c;
}

/// The low and high 32 bits of an i64.
static std::array<Value, 2> splitI64(OpBuilder &b, Location loc, Value v) {
  Value lo = arith::TruncIOp::create(b, loc, b.getI32Type(), v);
  Value shifted = arith::ShRUIOp::create(
      b, loc, v,
      arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32)));
  Value hi = arith::TruncIOp::create(b, loc, b.getI32Type(), shifted);
  return {lo, hi};
}

/// A uniform float of type `elt` on [0, 1) from random bits: as many of
/// the top bits as the type has significand bits (24 for f32, 53 for f64,
/// from two words), scaled by a power of two. Every value is exact, none
/// rounds up to 1.
static Value emitUniform(OpBuilder &b, Location loc, ArrayRef<Value> words,
                         FloatType elt) {
  unsigned bits = APFloat::semanticsPrecision(elt.getFloatSemantics());
  Value k;
  if (bits > 32) {
    Type i64 = b.getI64Type();
    Value hi = arith::ExtUIOp::create(b, loc, i64, words[0]);
    Value lo = arith::ExtUIOp::create(b, loc, i64, words[1]);
    Value joined = arith::OrIOp::create(
        b, loc,
        arith::ShLIOp::create(
            b, loc, hi, arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32))),
        lo);
    k = arith::ShRUIOp::create(
        b, loc, joined,
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(64 - bits)));
  } else {
    k = arith::ShRUIOp::create(
        b, loc, words[0],
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(32 - bits)));
  }
  Value asFloat = arith::UIToFPOp::create(b, loc, elt, k);
  Value scale = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(elt, std::ldexp(1.0, -static_cast<int>(bits))));
  return arith::MulFOp::create(b, loc, asFloat, scale);
}

FailureOr<Value> KernelBuilder::emitOp(Operation *op, Value v,
                                       ArrayRef<Value> idx) {
  Type elt = tensorType(v).getElementType();

  // Index maps: compute the operand's index from the result's.
  if (auto bcast = dyn_cast<prim::BroadcastInDimOp>(op)) {
    RankedTensorType in = tensorType(bcast.getOperand());
    SmallVector<Value> inIdx;
    for (auto [d, dim] : llvm::enumerate(bcast.getBroadcastDimensions()))
      inIdx.push_back(in.getDimSize(d) == 1 ? index(0) : idx[dim]);
    return emit(bcast.getOperand(), inIdx);
  }
  if (auto permute = dyn_cast<prim::PermuteOp>(op)) {
    SmallVector<Value> inIdx(idx.size());
    for (auto [i, p] : llvm::enumerate(permute.getPermutation()))
      inIdx[p] = idx[i];
    return emit(permute.getOperand(), inIdx);
  }
  if (auto reshape = dyn_cast<prim::ReshapeOp>(op)) {
    FailureOr<SmallVector<Value>> inIdx = reshapeIndex(reshape, idx);
    if (failed(inIdx))
      return failure();
    return emit(reshape.getOperand(), *inIdx);
  }
  if (auto slice = dyn_cast<prim::SliceOp>(op)) {
    SmallVector<Value> inIdx;
    for (auto [i, start, stride] :
         llvm::zip(idx, slice.getStart(), slice.getStrides())) {
      Value scaled = stride == 1 ? i
                                 : arith::MulIOp::create(b, loc, i, index(stride))
                                       .getResult();
      inIdx.push_back(start == 0 ? scaled
                                 : arith::AddIOp::create(b, loc, scaled,
                                                         index(start))
                                       .getResult());
    }
    return emit(slice.getOperand(), inIdx);
  }
  if (auto concat = dyn_cast<prim::ConcatenateOp>(op)) {
    if (std::optional<WindowFamily> family = windowFamily(concat, plan))
      return emitWindows(concat, *family, idx);
    // Each input is read at the index clamped into its part (always a valid
    // load) and the part the point falls in is selected.
    int64_t dim = concat.getDim();
    Value i = idx[dim];
    Value result;
    int64_t offset = 0;
    SmallVector<std::pair<int64_t, Value>> parts; // (end, value)
    for (Value input : concat.getInputs()) {
      int64_t size = tensorType(input).getDimSize(dim);
      if (size == 0)
        continue;
      SmallVector<Value> inIdx(idx);
      Value local = offset == 0
                        ? i
                        : arith::SubIOp::create(b, loc, i, index(offset))
                              .getResult();
      local = arith::MaxSIOp::create(b, loc, local, index(0));
      local = arith::MinSIOp::create(b, loc, local, index(size - 1));
      inIdx[dim] = local;
      FailureOr<Value> part = emit(input, inIdx);
      if (failed(part))
        return failure();
      offset += size;
      parts.emplace_back(offset, *part);
    }
    if (parts.empty())
      return concat.emitOpError() << "has no elements to read";
    result = parts.back().second;
    for (auto &[end, value] : llvm::reverse(ArrayRef(parts).drop_back())) {
      Value before = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           i, index(end));
      result = arith::SelectOp::create(b, loc, before, value, result);
    }
    return result;
  }
  if (auto pad = dyn_cast<prim::PadOp>(op)) {
    // Points between or beyond the operand's elements take the padding
    // value; the operand is read at an index clamped into range (always a
    // valid load) and the value selected.
    ArrayRef<int64_t> inShape = tensorType(pad.getOperand()).getShape();
    double value = pad.getValue().convertToDouble();
    Value fill = arith::ConstantOp::create(
        b, loc,
        isa<FloatType>(elt)
            ? TypedAttr(b.getFloatAttr(elt, value))
            : TypedAttr(b.getIntegerAttr(elt, static_cast<int64_t>(value))));
    Value inside;
    SmallVector<Value> inIdx;
    for (auto [d, i] : llvm::enumerate(idx)) {
      int64_t low = pad.getLow()[d], step = pad.getInterior()[d] + 1;
      if (inShape[d] == 0)
        return fill; // nothing to read: every point is padding
      Value j = low == 0 ? i
                         : arith::SubIOp::create(b, loc, i, index(low))
                               .getResult();
      Value q = j;
      SmallVector<Value> conditions;
      if (low > 0)
        conditions.push_back(arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::sge, j, index(0)));
      if (step > 1) {
        q = arith::FloorDivSIOp::create(b, loc, j, index(step));
        Value r = arith::RemSIOp::create(b, loc, j, index(step));
        conditions.push_back(arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, r, index(0)));
      }
      conditions.push_back(arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::slt, q, index(inShape[d])));
      Value ok = conditions.front();
      for (Value c : ArrayRef<Value>(conditions).drop_front())
        ok = arith::AndIOp::create(b, loc, ok, c);
      inside = inside ? arith::AndIOp::create(b, loc, inside, ok).getResult()
                      : ok;
      inIdx.push_back(arith::SelectOp::create(b, loc, ok, q, index(0)));
    }
    FailureOr<Value> read = emit(pad.getOperand(), inIdx);
    if (failed(read))
      return failure();
    if (!inside)
      return *read;
    return arith::SelectOp::create(b, loc, inside, *read, fill).getResult();
  }

  if (auto gather = dyn_cast<prim::GatherOp>(op)) {
    // The index is read (or computed) at the result's positions along
    // `dim`, clamped into range so that the load stays in bounds, and then
    // selects where the operand is read.
    int64_t dim = gather.getDim();
    int64_t rank = tensorType(gather.getIndices()).getRank();
    int64_t size = tensorType(gather.getOperand()).getDimSize(dim);
    if (size == 0)
      return gather.emitOpError() << "gathers from an empty dimension";
    FailureOr<Value> position =
        emit(gather.getIndices(), idx.slice(dim, rank));
    if (failed(position))
      return failure();
    Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), *position);
    i = arith::MaxSIOp::create(b, loc, i, index(0));
    i = arith::MinSIOp::create(b, loc, i, index(size - 1));
    SmallVector<Value> inIdx(idx.take_front(dim));
    inIdx.push_back(i);
    llvm::append_range(inIdx, idx.drop_front(dim + rank));
    return emit(gather.getOperand(), inIdx);
  }
  if (auto random = dyn_cast<prim::RandomOp>(op)) {
    // The counter is offset + the point's row-major linear index, the key
    // the seed; uniform floats come from the first word (two for f64),
    // normal ones from two uniforms by Box-Muller.
    FailureOr<Value> seed = emit(random.getSeed(), {});
    FailureOr<Value> offset = emit(random.getOffset(), {});
    if (failed(seed) || failed(offset))
      return failure();
    Value linear = index(0);
    for (auto [size, i] : llvm::zip(random.getShape(), idx))
      linear = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, linear, index(size)), i);
    Value n = arith::AddIOp::create(
        b, loc, *offset,
        arith::IndexCastOp::create(b, loc, b.getI64Type(), linear));
    auto [lo, hi] = splitI64(b, loc, n);
    auto [k0, k1] = splitI64(b, loc, *seed);
    Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
    std::array<Value, 4> words = emitPhilox(b, loc, {lo, hi, zero, zero},
                                            {k0, k1});
    auto ft = cast<FloatType>(elt);
    if (random.getDistribution() == prim::Distribution::Uniform)
      return emitUniform(b, loc, words, ft);
    // Box-Muller in f32 (f64 for f64): sqrt(-2 log(1 - u1)) cos(2 pi u2),
    // 1 - u1 in (0, 1] so the log is finite.
    FloatType compute = ft.getWidth() > 32 ? ft : b.getF32Type();
    Value u1 = emitUniform(b, loc, ArrayRef<Value>(words).slice(0, 2), compute);
    Value u2 = emitUniform(b, loc, ArrayRef<Value>(words).slice(2, 2), compute);
    auto cst = [&](double value) -> Value {
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(compute, value));
    };
    Value radius = math::SqrtOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc, cst(-2.0),
            math::LogOp::create(b, loc,
                                arith::SubFOp::create(b, loc, cst(1.0), u1))));
    Value angle = arith::MulFOp::create(b, loc, cst(2.0 * M_PI), u2);
    Value normal = arith::MulFOp::create(b, loc, radius,
                                         math::CosOp::create(b, loc, angle));
    return emitConvert(b, loc, normal, elt);
  }

  // Scalars.
  if (auto cst = dyn_cast<prim::ConstantOp>(op)) {
    auto splat = dyn_cast<SplatElementsAttr>(cst.getValue());
    if (!splat)
      return op->emitOpError() << "non-splat constants must be realized";
    return arith::ConstantOp::create(
               b, loc, cast<TypedAttr>(splat.getSplatValue<Attribute>()))
        .getResult();
  }
  if (auto iota = dyn_cast<prim::IotaOp>(op)) {
    Value i = idx[iota.getDim()];
    Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
    return emitConvert(b, loc, asInt, elt);
  }
  if (auto reduce = dyn_cast<prim::ReduceOp>(op))
    return emitReduce(reduce, idx);
  if (auto argReduce = dyn_cast<prim::ArgReduceOp>(op))
    return argReduce.emitOpError() << "has no kernel lowering yet";
  if (auto argmax = dyn_cast<prim::WindowArgmaxOp>(op))
    return emitWindowArgmax(argmax, idx);
  if (auto gather = dyn_cast<prim::WindowGatherOp>(op))
    return emitWindowGather(gather, idx);
  if (auto scatter = dyn_cast<prim::WindowScatterOp>(op))
    return emitWindowScatter(scatter, idx);

  // Elementwise: operands at the same index.
  SmallVector<Value> args;
  for (Value operand : op->getOperands()) {
    FailureOr<Value> arg = emit(operand, idx);
    if (failed(arg))
      return failure();
    args.push_back(*arg);
  }
  if (auto convert = dyn_cast<prim::ConvertOp>(op))
    return emitConvert(b, loc, args[0], elt);
  if (isa<prim::BitcastOp>(op))
    return arith::BitcastOp::create(b, loc, elt, args[0]).getResult();
  if (auto where = dyn_cast<prim::WhereOp>(op))
    return arith::SelectOp::create(b, loc, args[0], args[1], args[2])
        .getResult();
  if (auto cmp = dyn_cast<prim::CompareOp>(op)) {
    Type operandElt = tensorType(cmp.getLhs()).getElementType();
    if (isa<FloatType>(operandElt))
      return arith::CmpFOp::create(b, loc, floatPredicate(cmp.getPredicate()),
                                   args[0], args[1])
          .getResult();
    return arith::CmpIOp::create(
               b, loc,
               intPredicate(cmp.getPredicate(), operandElt.isInteger(1)),
               args[0], args[1])
        .getResult();
  }
  if (!op->hasTrait<OpTrait::Elementwise>())
    return op->emitOpError() << "has no kernel lowering";
  return emitElementwise(b, loc, op, args, elt);
}

/// The identity of a reduction over `elt`.
static TypedAttr reductionInit(OpBuilder &b, prim::ReductionKind kind,
                               Type elt) {
  if (auto ft = dyn_cast<FloatType>(elt)) {
    const llvm::fltSemantics &sem = ft.getFloatSemantics();
    switch (kind) {
    case prim::ReductionKind::Sum:
      return b.getFloatAttr(elt, APFloat::getZero(sem));
    case prim::ReductionKind::Prod:
      return b.getFloatAttr(elt, APFloat::getOne(sem));
    case prim::ReductionKind::Max:
      return b.getFloatAttr(elt, APFloat::getInf(sem, /*Negative=*/true));
    case prim::ReductionKind::Min:
      return b.getFloatAttr(elt, APFloat::getInf(sem, /*Negative=*/false));
    }
  }
  unsigned width = elt.getIntOrFloatBitWidth();
  switch (kind) {
  case prim::ReductionKind::Sum:
    return b.getIntegerAttr(elt, 0);
  case prim::ReductionKind::Prod:
    return b.getIntegerAttr(elt, 1);
  case prim::ReductionKind::Max:
    return b.getIntegerAttr(elt, width == 1 ? APInt(1, 0)
                                            : APInt::getSignedMinValue(width));
  case prim::ReductionKind::Min:
    return b.getIntegerAttr(elt, width == 1 ? APInt(1, 1)
                                            : APInt::getSignedMaxValue(width));
  }
  llvm_unreachable("unknown reduction");
}

static kernel::CombinerKind combinerFor(prim::ReductionKind kind) {
  switch (kind) {
  case prim::ReductionKind::Sum:
    return kernel::CombinerKind::Add;
  case prim::ReductionKind::Prod:
    return kernel::CombinerKind::Mul;
  case prim::ReductionKind::Max:
    return kernel::CombinerKind::Max;
  case prim::ReductionKind::Min:
    return kernel::CombinerKind::Min;
  }
  llvm_unreachable("unknown reduction");
}

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

Value KernelBuilder::affine(Value i, int64_t scale, int64_t offset) {
  Value scaled =
      scale == 1 ? i : arith::MulIOp::create(b, loc, i, index(scale)).getResult();
  return offset == 0
             ? scaled
             : arith::AddIOp::create(b, loc, scaled, index(offset)).getResult();
}

FailureOr<Value> KernelBuilder::emitWindowArgmax(prim::WindowArgmaxOp op,
                                                 ArrayRef<Value> idx) {
  FailureOr<std::pair<Value, Value>> scan = emitWindowMax(op, idx);
  if (failed(scan))
    return failure();
  return scan->second;
}

FailureOr<std::pair<Value, Value>>
KernelBuilder::emitWindowMax(prim::WindowArgmaxOp op, ArrayRef<Value> idx) {
  // Scan the window in row-major order, keeping the first maximum: a later
  // point wins if it is greater or NaN (PyTorch's rule), and the first
  // point inside the input wins unconditionally.
  WindowGeometry g(op);
  ArrayRef<int64_t> inShape = tensorType(op.getOperand()).getShape();
  Type elt = tensorType(op.getOperand()).getElementType();
  auto positionType = cast<IntegerType>(tensorType(op).getElementType());
  size_t lead = idx.size() - g.window.size();
  // Per window dimension and offset: the input coordinate (clamped) and
  // whether it is inside the input.
  WindowCoordinates coordinates;
  for (size_t d = 0; d < g.window.size(); ++d) {
    coordinates.emplace_back();
    for (int64_t offset = 0; offset < g.window[d]; ++offset) {
      int64_t shift = offset * g.dilation[d] - g.padding[d];
      Value i = affine(idx[lead + d], g.strides[d], shift);
      Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                                       index(inShape[lead + d]));
      if (shift < 0)
        ok = arith::AndIOp::create(
            b, loc, ok,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i,
                                  index(0)));
      coordinates.back().emplace_back(
          arith::SelectOp::create(b, loc, ok, i, index(0)), ok);
    }
  }
  Value best, bestPosition, found;
  Value yes = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  for (int64_t k = 0, e = g.positions(); k < e; ++k) {
    auto [at, valid] =
        windowPoint(b, loc, g, idx.take_front(lead), coordinates, k);
    FailureOr<Value> x = emit(op.getOperand(), at);
    if (failed(x))
      return failure();
    Value position = arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(positionType, k));
    if (k == 0) {
      best = *x;
      bestPosition = position;
      found = valid;
      continue;
    }
    Value greater;
    if (isa<FloatType>(elt))
      greater = arith::OrIOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, *x, best),
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, *x, *x));
    else
      greater = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, *x,
                                      best);
    Value notFound = arith::XOrIOp::create(b, loc, found, yes);
    Value take = arith::AndIOp::create(
        b, loc, valid, arith::OrIOp::create(b, loc, notFound, greater));
    best = arith::SelectOp::create(b, loc, take, *x, best);
    bestPosition = arith::SelectOp::create(b, loc, take, position,
                                           bestPosition);
    found = arith::OrIOp::create(b, loc, found, valid);
  }
  return std::make_pair(best, bestPosition);
}

FailureOr<Value> KernelBuilder::emitWindowGather(prim::WindowGatherOp op,
                                                 ArrayRef<Value> idx) {
  // Max pooling's values: the gather of the argmax of the same operand over
  // the same windows is the maximum the scan kept, without a load at a
  // position computed from the data (which no loop vectorizes).
  if (prim::WindowArgmaxOp argmax = maxOfWindows(op)) {
    FailureOr<std::pair<Value, Value>> scan = emitWindowMax(argmax, idx);
    if (failed(scan))
      return failure();
    return scan->first;
  }
  WindowGeometry g(op);
  ArrayRef<int64_t> inShape = tensorType(op.getOperand()).getShape();
  size_t lead = idx.size() - g.window.size();
  FailureOr<Value> position = emit(op.getPositions(), idx);
  if (failed(position))
    return failure();
  Value k = arith::IndexCastOp::create(b, loc, b.getIndexType(), *position);
  SmallVector<Value> at(idx.take_front(lead));
  at.resize(idx.size());
  for (size_t d = g.window.size(); d-- > 0;) {
    Value offset = k;
    if (d > 0) {
      offset = arith::RemUIOp::create(b, loc, k, index(g.window[d]));
      k = arith::DivUIOp::create(b, loc, k, index(g.window[d]));
    }
    // i = o * stride - padding + offset * dilation, clamped into the input
    // (a position naming padding has no defined result).
    Value i = affine(idx[lead + d], g.strides[d], -g.padding[d]);
    i = arith::AddIOp::create(b, loc, i, affine(offset, g.dilation[d], 0));
    i = arith::MaxSIOp::create(b, loc, i, index(0));
    i = arith::MinSIOp::create(b, loc, i, index(inShape[lead + d] - 1));
    at[lead + d] = i;
  }
  return emit(op.getOperand(), at);
}

FailureOr<Value> KernelBuilder::emitWindowScatter(prim::WindowScatterOp op,
                                                  ArrayRef<Value> idx) {
  // A gather over the windows that contain the point: for window position
  // k, the window at o = (i + padding - k * dilation) / stride when that
  // divides and o is a window; it contributes when its position is k.
  // Positions go last to first, which visits the windows in row-major
  // order (eager's summation order).
  WindowGeometry g(op);
  ArrayRef<int64_t> outShape = tensorType(op.getSource()).getShape();
  Type elt = tensorType(op).getElementType();
  // Half-precision sums accumulate in f32, as PyTorch's kernels do.
  Type accumulator = elt.isF16() || elt.isBF16() ? b.getF32Type() : elt;
  auto positionType =
      cast<IntegerType>(tensorType(op.getPositions()).getElementType());
  size_t lead = idx.size() - g.window.size();
  // Per window dimension and offset: the window coordinate (clamped) and
  // whether that window exists and holds the point at this offset.
  WindowCoordinates coordinates;
  for (size_t d = 0; d < g.window.size(); ++d) {
    coordinates.emplace_back();
    for (int64_t offset = 0; offset < g.window[d]; ++offset) {
      int64_t shift = g.padding[d] - offset * g.dilation[d];
      Value t = affine(idx[lead + d], 1, shift);
      Value o = t, ok;
      auto require = [&](Value condition) {
        ok = ok ? arith::AndIOp::create(b, loc, ok, condition).getResult()
                : condition;
      };
      if (shift < 0)
        require(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t,
                                      index(0)));
      if (g.strides[d] > 1) {
        require(arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq,
            arith::RemSIOp::create(b, loc, t, index(g.strides[d])),
            index(0)));
        o = arith::DivSIOp::create(b, loc, t, index(g.strides[d]));
      }
      require(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, o,
                                    index(outShape[lead + d])));
      coordinates.back().emplace_back(
          arith::SelectOp::create(b, loc, ok, o, index(0)), ok);
    }
  }
  Value zero = arith::ConstantOp::create(
      b, loc, isa<FloatType>(accumulator)
                  ? TypedAttr(b.getFloatAttr(accumulator, 0.0))
                  : TypedAttr(b.getIntegerAttr(accumulator, 0)));
  Value sum = zero;
  for (int64_t k = g.positions(); k-- > 0;) {
    auto [at, valid] =
        windowPoint(b, loc, g, idx.take_front(lead), coordinates, k);
    FailureOr<Value> position = emit(op.getPositions(), at);
    FailureOr<Value> source = emit(op.getSource(), at);
    if (failed(position) || failed(source))
      return failure();
    Value match = arith::AndIOp::create(
        b, loc, valid,
        arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, *position,
            arith::ConstantOp::create(b, loc,
                                      b.getIntegerAttr(positionType, k))));
    Value term = arith::SelectOp::create(
        b, loc, match, emitConvert(b, loc, *source, accumulator), zero);
    sum = isa<FloatType>(accumulator)
              ? arith::AddFOp::create(b, loc, sum, term).getResult()
              : arith::AddIOp::create(b, loc, sum, term).getResult();
  }
  return emitConvert(b, loc, sum, elt);
}

FailureOr<Value> KernelBuilder::emitReduce(prim::ReduceOp op,
                                           ArrayRef<Value> idx) {
  RankedTensorType in = tensorType(op.getOperand());
  Type elt = in.getElementType();
  if (elt.isInteger(1) && (op.getKind() == prim::ReductionKind::Sum ||
                           op.getKind() == prim::ReductionKind::Prod))
    return op.emitOpError() << "bool sums are converted before reducing";
  ArrayRef<int64_t> dims = op.getDims();
  // Half-precision values are reduced in f32 and rounded once, as eager
  // does (and no half-precision value is carried between iterations, which
  // the CPU would round through a compiler-rt call).
  Type acc = elt.isF16() || elt.isBF16() ? b.getF32Type() : elt;
  // The output row can hold the reduced operand while the row is reduced
  // if the operand has the output's type and the reduction runs over the
  // last dimension for the kernel's current row, before its inner loop.
  bool cacheRow = mayCacheRows && !cached &&
             !plan.isRealized(op.getOperand()) &&
             tensorType(op.getOperand()).getShape() ==
                 cast<MemRefType>(out.getType()).getShape() &&
             elt == cast<MemRefType>(out.getType()).getElementType() &&
             dims.size() == 1 && dims[0] == in.getRank() - 1 &&
             idx == ArrayRef<Value>(rowIndex);
  // Operand index: result index with reduction ivs at the reduced dims;
  // one kernel.reduce per reduced dimension, nested.
  SmallVector<Value> inIdx(in.getRank());
  unsigned next = 0;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      inIdx[d] = idx[next++];

  std::function<FailureOr<Value>(unsigned)> build =
      [&](unsigned level) -> FailureOr<Value> {
    if (level == dims.size()) {
      FailureOr<Value> value = emit(op.getOperand(), inIdx);
      if (succeeded(value) && cacheRow) {
        memref::StoreOp::create(b, loc, *value, out, inIdx);
        cached = op.getOperand();
      }
      if (succeeded(value) && acc != elt)
        value = arith::ExtFOp::create(b, loc, acc, *value).getResult();
      return value;
    }
    Value init = arith::ConstantOp::create(
        b, loc, reductionInit(b, op.getKind(), acc));
    Value size = index(in.getDimSize(dims[level]));
    auto reduce = kernel::ReduceOp::create(b, loc, acc,
                                           combinerFor(op.getKind()), size,
                                           init);
    Block *body = b.createBlock(&reduce.getBody(), {}, {b.getIndexType()},
                                {loc});
    pushScope(body, reduce);
    inIdx[dims[level]] = body->getArgument(0);
    b.setInsertionPointToEnd(body);
    FailureOr<Value> value = build(level + 1);
    if (failed(value))
      return failure();
    b.setInsertionPointToEnd(body);
    kernel::YieldOp::create(b, loc, *value);
    scopes.pop_back();
    scopes.back()->nested = nullptr;
    b.setInsertionPointAfter(reduce);
    return reduce.getResult();
  };
  // The reduce goes where its index lives; code after it in that scope
  // must follow it, so the scope's insertion point moves past it.
  unsigned scope = scopeFor(idx);
  Operation *savedNested = scopes[scope]->nested;
  SmallVector<std::unique_ptr<Scope>> inner;
  while (scopes.size() > scope + 1) {
    inner.push_back(std::move(scopes.back()));
    scopes.pop_back();
  }
  scopes[scope]->nested = nullptr;
  setInsertionPoint(scope);
  if (savedNested)
    b.setInsertionPoint(savedNested);
  FailureOr<Value> result = build(0);
  if (succeeded(result) && acc != elt)
    result = arith::TruncFOp::create(b, loc, elt, *result).getResult();
  scopes[scope]->nested = savedNested;
  while (!inner.empty()) {
    scopes.push_back(std::move(inner.back()));
    inner.pop_back();
  }
  return result;
}


//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertPrimToKernelPass
    : public tc::impl::ConvertPrimToKernelPassBase<ConvertPrimToKernelPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp func : funcs)
      if (failed(convert(func)))
        return signalPassFailure();
  }

  LogicalResult convert(func::FuncOp func);
};

/// A short kernel name from the ops it computes, like Inductor's
/// `fused_add_mul_tanh_0`.
static std::string kernelName(const FusionPlan &plan, StringRef graph,
                              Value value, unsigned id) {
  llvm::SetVector<StringRef> names;
  SmallVector<Value> worklist = {value};
  llvm::SmallDenseSet<Value> seen;
  while (!worklist.empty() && names.size() < 4) {
    Value v = worklist.pop_back_val();
    Operation *op = v.getDefiningOp();
    if (!op || !seen.insert(v).second || isa<prim::ConstantOp>(op) ||
        (v != value && plan.isRealized(v)))
      continue;
    if (!isa<prim::BroadcastInDimOp, prim::ReshapeOp, prim::PermuteOp>(op))
      names.insert(op->getName().stripDialect());
    llvm::append_range(worklist, op->getOperands());
  }
  std::string name = (graph + "_fused").str();
  for (StringRef n : llvm::reverse(names))
    name += ("_" + n).str();
  if (names.empty())
    name = (graph + "_copy").str();
  return name + "_" + std::to_string(id);
}

LogicalResult ConvertPrimToKernelPass::convert(func::FuncOp func) {
  if (func.getBody().getBlocks().size() != 1)
    return func.emitOpError() << "tc-fuse expects a single-block function";
  FusionPlan plan(func, weightsChannelsFirst, realizeBroadcastSources);
  if (failed(plan.build()))
    return failure();

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder b(func);
  Location loc = func.getLoc();

  // The schedule takes the inputs, then one buffer per output.
  SmallVector<Type> argTypes;
  for (Value arg : func.getArguments())
    argTypes.push_back(bufferType(arg));
  for (Value result : ret.getOperands())
    argTypes.push_back(bufferType(result));
  auto schedule = kernel::ScheduleOp::create(
      b, loc, func.getSymName(), b.getFunctionType(argTypes, {}),
      /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  Block *entry = schedule.addEntryBlock();
  llvm::DenseMap<Value, Value> buffers;
  for (auto [arg, buffer] : llvm::zip(func.getArguments(),
                                      entry->getArguments()))
    buffers[arg] = buffer;
  // An output realized as such writes straight into its buffer; an output
  // that is an input, or returned twice, is copied.
  SmallVector<std::pair<Value, Value>> copies;
  for (auto [i, result] : llvm::enumerate(ret.getOperands())) {
    Value buffer = entry->getArgument(func.getNumArguments() + i);
    if (buffers.count(result))
      copies.push_back({result, buffer});
    else
      buffers[result] = buffer;
  }

  OpBuilder sb = OpBuilder::atBlockEnd(entry);
  unsigned kernels = 0;
  Value symbol;
  auto bufferFor = [&](Value v) -> Value {
    auto it = buffers.find(v);
    if (it != buffers.end())
      return it->second;
    MemRefType type = bufferType(v);
    SmallVector<Value> sizes;
    if (type.getNumDynamicDims()) {
      // The graph's symbolic size, read once at the schedule's start.
      if (!symbol)
        symbol = OpBuilder::atBlockBegin(entry).create<kernel::SymbolOp>(
            func.getLoc(), sb.getIndexType());
      sizes.assign(type.getNumDynamicDims(), symbol);
    }
    Value alloc = memref::AllocOp::create(sb, v.getLoc(), type, sizes);
    buffers[v] = alloc;
    return alloc;
  };
  using Mode = KernelBuilder::Mode;
  auto launch = [&](Value value, Value out,
                    Mode mode = Mode::Compute) -> LogicalResult {
    SmallVector<Value> inputs;
    KernelBuilder builder(plan, value.getLoc(), cacheRows);
    FailureOr<kernel::KernelOp> kernel = builder.build(
        value, kernelName(plan, func.getSymName(), value, kernels++), schedule,
        inputs, mode);
    if (failed(kernel))
      return failure();
    SmallVector<Value> args;
    for (Value in : inputs)
      args.push_back(buffers.lookup(in));
    args.push_back(out);
    auto launchOp = kernel::LaunchOp::create(sb, value.getLoc(),
                                             kernel->getSymName(), args);
    // A kernel that reads a GEMM's fresh output only at its own rows, and
    // is that output's only reader, can run as the GEMM's row epilogue.
    auto gemm = dyn_cast_if_present<kernel::GemmOp>(launchOp->getPrevNode());
    if (gemm && kernel->getDomain().size() == 1) {
      Value product;
      for (Value in : inputs)
        if (buffers.lookup(in) == gemm.getOut())
          product = in;
      if (product && !isa<BlockArgument>(gemm.getOut()) &&
          tensorType(product).getRank() == 2 &&
          kernel->getDomain()[0] == tensorType(product).getDimSize(0) &&
          builder.readsOnlyOwnRow(product) &&
          plan.rootsOf(product).size() == 1)
        launchOp.setRowEpilogue(true);
    }
    return success();
  };

  // Realized values in program order, so each is written before it is read.
  SmallVector<Value> order;
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      if (plan.isRealized(result))
        order.push_back(result);
  for (Value v : order) {
    // A splat constant that must be realized (a graph output) is a fill
    // kernel; other constants would need their data in the program.
    if (auto cst = v.getDefiningOp<prim::ConstantOp>())
      if (!isa<SplatElementsAttr>(cst.getValue()))
        return cst.emitOpError() << "non-splat constants are not supported yet";
    Value out = bufferFor(v);
    // An empty tensor has nothing to compute (and a kernel over an empty
    // domain is not one the CPU's calling convention takes).
    if (hintNumElements(tensorType(v)) == 0)
      continue;
    if (const Gemm *gemm = plan.gemmFor(v)) {
      auto op = kernel::GemmOp::create(
          sb, gemm->result.getLoc(), buffers.lookup(gemm->lhs.buffer),
          buffers.lookup(gemm->rhs.buffer), out,
          gemm->bias ? buffers.lookup(gemm->bias) : Value(),
          gemm->lhs.transposed, gemm->rhs.transposed);
      (void)op;
      continue;
    }
    if (const Conv *conv = plan.convFor(v)) {
      // The three buffers in the forward's roles, the written one `out`.
      Value input = buffers.lookup(conv->grad),
            weight = buffers.lookup(conv->other), output = out;
      if (conv->kind == kernel::ConvKind::BackwardInput) {
        input = out;
        weight = buffers.lookup(conv->other);
        output = buffers.lookup(conv->grad);
      } else if (conv->kind == kernel::ConvKind::BackwardWeight) {
        input = buffers.lookup(conv->other);
        weight = out;
        output = buffers.lookup(conv->grad);
      }
      kernel::ConvOp::create(
          sb, conv->loc,
          kernel::ConvKindAttr::get(sb.getContext(), conv->kind), input,
          weight, output, conv->stride, conv->padding, conv->dilation,
          conv->groups, conv->channelsLast,
          conv->weightChannelsFirst ? sb.getUnitAttr() : UnitAttr());
      continue;
    }
    if (v.getDefiningOp<prim::ScatterAddOp>()) {
      if (failed(launch(v, out, Mode::Zeros)) ||
          failed(launch(v, out, Mode::ScatterAdd)))
        return failure();
      continue;
    }
    if (failed(launch(v, out)))
      return failure();
  }
  for (auto [value, out] : copies)
    if (hintNumElements(tensorType(value)) != 0 && failed(launch(value, out)))
      return failure();
  kernel::ReturnOp::create(sb, loc);
  func.erase();
  return success();
}

} // namespace
