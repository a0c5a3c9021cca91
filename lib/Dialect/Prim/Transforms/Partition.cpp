//===- Partition.cpp - split a joint graph by a min-cut ---------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Splits the joint forward + backward function `tc-autodiff` makes into a
// forward function that also returns the values the backward saves, and a
// backward function that takes them. Which forward values to save is a
// minimum s-t cut: every forward value v is an edge v.in -> v.out whose
// capacity is what saving v costs (see saveCost); data dependencies are
// infinite edges u.out -> v.in (recomputing v needs u); the source feeds
// what cannot be recomputed (primal arguments, matrix products,
// reductions), the sink drains what the backward reads. Values cut are
// saved; forward values on the sink side are recomputed in the backward.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <deque>
#include <limits>

namespace mlir::tc::prim {
#define GEN_PASS_DEF_PARTITIONPASS
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"
} // namespace mlir::tc::prim

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::prim;

namespace {

constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;

/// A flow network with Edmonds-Karp max flow (graphs are a few hundred
/// nodes: one per forward value, twice).
class FlowNetwork {
public:
  explicit FlowNetwork(int numNodes) : adjacency(numNodes) {}

  void addEdge(int from, int to, int64_t capacity) {
    adjacency[from].push_back(edges.size());
    edges.push_back({to, capacity});
    adjacency[to].push_back(edges.size());
    edges.push_back({from, 0});
  }

  /// Pushes the maximum flow from `source` to `sink`; returns the nodes
  /// still reachable from `source` in the residual graph (the source side
  /// of a minimum cut).
  std::vector<bool> minCut(int source, int sink) {
    std::vector<int> parentEdge(adjacency.size());
    while (true) {
      std::fill(parentEdge.begin(), parentEdge.end(), -1);
      std::vector<bool> seen = reach(source, &parentEdge);
      if (!seen[sink])
        return seen;
      int64_t push = kInfinite;
      for (int v = sink; v != source; v = edges[parentEdge[v] ^ 1].to)
        push = std::min(push, edges[parentEdge[v]].capacity);
      for (int v = sink; v != source; v = edges[parentEdge[v] ^ 1].to) {
        edges[parentEdge[v]].capacity -= push;
        edges[parentEdge[v] ^ 1].capacity += push;
      }
    }
  }

private:
  struct Edge {
    int to;
    int64_t capacity;
  };

  std::vector<bool> reach(int source, std::vector<int> *parentEdge) {
    std::vector<bool> seen(adjacency.size());
    std::deque<int> queue{source};
    seen[source] = true;
    while (!queue.empty()) {
      int v = queue.front();
      queue.pop_front();
      for (int e : adjacency[v]) {
        int to = edges[e].to;
        if (seen[to] || edges[e].capacity <= 0)
          continue;
        seen[to] = true;
        (*parentEdge)[to] = e;
        queue.push_back(to);
      }
    }
    return seen;
  }

  std::vector<std::vector<int>> adjacency;
  std::vector<Edge> edges;
};

static int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t bits = type.getElementTypeBitWidth();
  return std::max<int64_t>(1, type.getNumElements() * std::max<int64_t>(
                                                         bits / 8, 1));
}

/// Whether the backward may recompute what `op` computes instead of having
/// it saved: elementwise and shape ops, which read what they write, and
/// counter-based random numbers, a function of the seed argument and the
/// element's index (a dropout's mask is recomputed, not saved). A window's
/// argmax reads a window per point, and its narrow positions are cheap to
/// save: max pooling's backward keeps them, as eager keeps its indices.
static bool isCheapToRecompute(Operation *op) {
  return !isa<DotOp, ConvolutionOp, ConvolutionBackwardInputOp,
              ConvolutionBackwardWeightOp, AttentionOp, ReduceOp, ArgReduceOp,
              WindowArgmaxOp, ScatterAddOp, ScatterOp>(op);
}

/// Whether `op` ends the kernels that compute its operands: a matrix
/// product, convolution or attention reads them from memory. (A reduction
/// does not: a row's statistics and the row's elementwise uses fuse.)
static bool isKernelBoundary(Operation *op) {
  return !isCheapToRecompute(op) && !isa<ReduceOp, ArgReduceOp>(op);
}

/// The forward values the forward writes to memory whatever is saved: the
/// arguments, the outputs, results of ops the backward cannot recompute (a
/// product's bias epilogue for the product), and values read again past a
/// kernel boundary (a residual stream read by
/// a layer norm and by the add after the next matrix product). A value
/// read only by elementwise uses and reductions on its side of every
/// boundary (a layer norm's centered rows) lives in registers unless saved.
/// Approximated by counting boundaries along the longest path from the
/// arguments: a use with more of them than the value's definition is past
/// one.
static DenseSet<Value> writtenAnyway(Block &body, int64_t numPrimals,
                                     ArrayRef<Operation *> forwardOps,
                                     const DenseSet<Value> &outputs) {
  DenseSet<Value> written(outputs.begin(), outputs.end());
  for (BlockArgument arg : body.getArguments().take_front(numPrimals))
    written.insert(arg);
  DenseMap<Operation *, int> depth;
  for (Operation *op : forwardOps) {
    int d = 0;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && depth.count(def))
        d = std::max(d, depth[def] + (isKernelBoundary(def) ? 1 : 0));
    depth[op] = d;
    if (isCheapToRecompute(op))
      continue;
    // A product whose one use adds a bias writes the sum (the GEMM's
    // epilogue), not the product.
    for (Value r : op->getResults()) {
      Operation *user =
          r.hasOneUse() ? *r.getUsers().begin() : nullptr;
      written.insert(isa_and_nonnull<AddOp>(user) && isa<DotOp>(op)
                         ? user->getResult(0)
                         : r);
    }
  }
  for (Operation *op : forwardOps)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *user) {
            auto it = depth.find(user);
            return it != depth.end() && it->second > depth[op];
          }))
        written.insert(r);
  return written;
}

/// What saving `v` costs: its bytes held until the backward reads them,
/// counted twice (memory is what a training step runs out of), and its
/// bytes written, where the forward would not otherwise write it. Between
/// cuts that hold as much, the one that writes less wins: a layer norm's
/// input and row means rather than its centered rows, so that the norm
/// stays one kernel in the forward.
static int64_t saveCost(Value v, const DenseSet<Value> &written) {
  return 2 * bytesOf(v) + (written.contains(v) ? 0 : bytesOf(v));
}

/// Moves each of `ops` right before its first user, last ops first: the
/// forward values the backward recomputes are then computed where they are
/// needed instead of all at its start, all alive until their use. The
/// backward's own ops keep the joint graph's order, which computes each
/// gradient where its cotangent is ready (sinking a weight's gradient to the
/// return would keep every cotangent it reads alive until the end).
static void sinkToFirstUse(Block &block, ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    Operation *first = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *inBlock = block.findAncestorOpInBlock(*user);
      if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
        first = inBlock;
    }
    if (first && first != op->getNextNode())
      op->moveBefore(first);
  }
}

/// What the backward is given for saved value `v`: a graph output of
/// which `v` is a reshape, or that is a reshape of `v` (kept by reference,
/// as the forward returns it anyway: the same bytes without a second
/// buffer the forward writes; GPT-2's LM head returned its logits [B, S, V]
/// and saved the product's [B * S, V], two copies of 1.6 GB a step), or
/// else `v` itself.
static Value savedAs(Value v, const DenseSet<Value> &outputs) {
  auto staticShape = [](Value x) {
    return cast<RankedTensorType>(x.getType()).hasStaticShape();
  };
  if (outputs.contains(v) || isa<BlockArgument>(v) || !staticShape(v))
    return v;
  if (auto reshape = v.getDefiningOp<ReshapeOp>())
    if (outputs.contains(reshape.getOperand()) &&
        staticShape(reshape.getOperand()))
      return reshape.getOperand();
  for (Operation *user : v.getUsers())
    if (auto reshape = dyn_cast<ReshapeOp>(user))
      if (outputs.contains(reshape.getResult()) &&
          staticShape(reshape.getResult()))
        return reshape.getResult();
  return v;
}

LogicalResult partition(func::FuncOp joint) {
  auto counts = joint->getAttrOfType<DenseI64ArrayAttr>(kJointAttrName);
  Block &body = joint.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (!counts || counts.size() != 3 ||
      counts[0] + counts[1] != body.getNumArguments() ||
      counts[2] > ret.getNumOperands())
    return joint.emitError() << "malformed " << kJointAttrName;
  int64_t numPrimals = counts[0], numOutputs = counts[2];

  // Backward ops: those that depend on a cotangent.
  DenseSet<Value> backwardValues;
  for (BlockArgument arg : body.getArguments().drop_front(numPrimals))
    backwardValues.insert(arg);
  SmallVector<Operation *> forwardOps, backwardOps;
  for (Operation &op : body.without_terminator()) {
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return backwardValues.contains(v); })) {
      backwardOps.push_back(&op);
      for (Value r : op.getResults())
        backwardValues.insert(r);
    } else {
      forwardOps.push_back(&op);
    }
  }

  // Forward values and what the backward reads of them.
  SmallVector<Value> forwardValues(body.getArguments().take_front(numPrimals));
  for (Operation *op : forwardOps)
    llvm::append_range(forwardValues, op->getResults());
  DenseMap<Value, int> ids;
  for (auto [i, v] : llvm::enumerate(forwardValues))
    ids[v] = i;
  DenseSet<Value> needed;
  for (Operation *op : backwardOps)
    for (Value v : op->getOperands())
      if (ids.count(v))
        needed.insert(v);
  for (Value v : ret.getOperands().drop_front(numOutputs))
    if (ids.count(v))
      needed.insert(v);

  DenseSet<Value> outputs(llvm::from_range,
                          ret.getOperands().take_front(numOutputs));
  DenseSet<Value> written =
      writtenAnyway(body, numPrimals, forwardOps, outputs);

  // The network: node 2i is value i's in, 2i + 1 its out.
  int n = forwardValues.size();
  int source = 2 * n, sink = 2 * n + 1;
  FlowNetwork network(2 * n + 2);
  for (auto [i, v] : llvm::enumerate(forwardValues)) {
    int in = 2 * i, out = in + 1;
    network.addEdge(in, out, saveCost(v, written));
    Operation *def = v.getDefiningOp();
    if (!def || !isCheapToRecompute(def))
      network.addEdge(source, in, kInfinite);
    if (def)
      for (Value operand : def->getOperands())
        network.addEdge(2 * ids.lookup(operand) + 1, in, kInfinite);
    if (needed.contains(v))
      network.addEdge(out, sink, kInfinite);
  }
  std::vector<bool> sourceSide = network.minCut(source, sink);
  // What the forward returns, and the values the cut saves, each with what
  // the backward is given for it: the value itself, or an output it is a
  // reshape of (see savedAs).
  SmallVector<Value> cut;
  int64_t savedBytes = 0;
  for (auto [i, v] : llvm::enumerate(forwardValues))
    if (sourceSide[2 * i] && !sourceSide[2 * i + 1]) {
      cut.push_back(v);
      savedBytes += bytesOf(v);
    }
  SmallVector<Value> saved;
  DenseMap<Value, Value> savedFor;
  for (Value v : cut) {
    Value as = savedAs(v, outputs);
    savedFor[v] = as;
    if (!llvm::is_contained(saved, as))
      saved.push_back(as);
  }

  OpBuilder b(joint);
  Location loc = joint.getLoc();
  StringRef name = joint.getSymName();
  SmallVector<Type> primalTypes;
  for (BlockArgument arg : body.getArguments().take_front(numPrimals))
    primalTypes.push_back(arg.getType());

  // The forward: every forward op (what nothing reads folds away later),
  // returning the outputs and the saved values.
  SmallVector<Type> forwardResults;
  for (Value v : ret.getOperands().take_front(numOutputs))
    forwardResults.push_back(v.getType());
  for (Value v : saved)
    forwardResults.push_back(v.getType());
  auto forward = func::FuncOp::create(
      b, loc, (name + "_forward").str(),
      b.getFunctionType(primalTypes, forwardResults));
  {
    Block *entry = forward.addEntryBlock();
    IRMapping map;
    for (int64_t i = 0; i < numPrimals; ++i)
      map.map(body.getArgument(i), entry->getArgument(i));
    OpBuilder fb = OpBuilder::atBlockEnd(entry);
    for (Operation *op : forwardOps)
      fb.clone(*op, map);
    SmallVector<Value> results;
    for (Value v : ret.getOperands().take_front(numOutputs))
      results.push_back(map.lookup(v));
    for (Value v : saved)
      results.push_back(map.lookup(v));
    func::ReturnOp::create(fb, loc, results);
    // The argument attributes stay, but for the marks autodiff consumed:
    // the forward is not differentiated again.
    for (int64_t i = 0; i < numPrimals; ++i)
      for (NamedAttribute attr :
           function_interface_impl::getArgAttrs(joint, i))
        if (attr.getName() != kRequiresGradAttrName)
          forward.setArgAttr(i, attr.getName(), attr.getValue());
    forward->setAttr("tc.saved_bytes", b.getI64IntegerAttr(savedBytes));
  }

  // The backward: the saved values and the cotangents in; forward values
  // on the sink side recomputed, then the backward ops.
  SmallVector<Type> backwardArgs;
  for (Value v : saved)
    backwardArgs.push_back(v.getType());
  for (BlockArgument arg : body.getArguments().drop_front(numPrimals))
    backwardArgs.push_back(arg.getType());
  SmallVector<Type> gradientTypes;
  for (Value v : ret.getOperands().drop_front(numOutputs))
    gradientTypes.push_back(v.getType());
  auto backward = func::FuncOp::create(
      b, loc, (name + "_backward").str(),
      b.getFunctionType(backwardArgs, gradientTypes));
  {
    Block *entry = backward.addEntryBlock();
    IRMapping map;
    for (auto [i, v] : llvm::enumerate(saved))
      map.map(v, entry->getArgument(i));
    for (auto [i, arg] :
         llvm::enumerate(body.getArguments().drop_front(numPrimals)))
      map.map(arg, entry->getArgument(saved.size() + i));
    OpBuilder bb = OpBuilder::atBlockEnd(entry);
    // Values saved as an output of another shape: that output reshaped.
    for (Value v : cut) {
      Value as = savedFor.lookup(v);
      if (as != v)
        map.map(v, ReshapeOp::create(
                       bb, v.getLoc(), map.lookup(as),
                       cast<RankedTensorType>(v.getType()).getShape()));
    }
    SmallVector<Operation *> recomputedOps;
    for (Operation *op : forwardOps) {
      bool recomputed = llvm::any_of(op->getResults(), [&](Value r) {
        return !sourceSide[2 * ids.lookup(r)] && !map.contains(r);
      });
      if (recomputed)
        recomputedOps.push_back(bb.clone(*op, map));
    }
    for (Operation *op : backwardOps)
      bb.clone(*op, map);
    SmallVector<Value> results;
    for (Value v : ret.getOperands().drop_front(numOutputs)) {
      Value mapped = map.lookupOrNull(v);
      if (!mapped)
        return joint.emitError()
               << "tc-partition: a gradient is neither saved nor recomputed";
      results.push_back(mapped);
    }
    func::ReturnOp::create(bb, loc, results);
    sinkToFirstUse(*entry, recomputedOps);
  }
  joint.erase();
  return success();
}

struct PartitionPass : public prim::impl::PartitionPassBase<PartitionPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> joints;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr(kJointAttrName))
        joints.push_back(func);
    for (func::FuncOp joint : joints)
      if (failed(partition(joint)))
        return signalPassFailure();
  }
};

} // namespace
