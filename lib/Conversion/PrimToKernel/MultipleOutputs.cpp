//===- MultipleOutputs.cpp - what a kernel stores besides its value -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Realized values that another value's kernel computes and stores too (see
// KernelBuilder::build): row statistics, one element per row, computed at
// the row by the kernel of the rows that read them; siblings, later
// pointwise values of a kernel's type that share its reads; and point
// values, cheap elementwise values that the first kernel reading them
// computes at its points anyway.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::fuse;

namespace {

/// How far ahead in program order a kernel looks for siblings, and how many
/// it takes.
constexpr size_t kSiblingWindow = 8;
constexpr size_t kMaxSiblings = 2;
/// How many point values a kernel stores besides its own.
constexpr size_t kMaxPointValues = 2;

} // namespace

/// Whether `type`'s sizes are static but for a leading `?`, the graph's
/// symbolic size (rows of a graph compiled once for every size).
static bool staticButRows(RankedTensorType type) {
  ArrayRef<int64_t> shape = type.getShape();
  return shape.empty() ||
         !llvm::any_of(shape.drop_front(), ShapedType::isDynamic);
}

namespace {
/// A number of elements as a multiple of the graph's symbolic size: the
/// product of the static sizes, and how many `?` multiply it. Two counts
/// are equal for every value of the size only when both parts are.
struct Elements {
  int64_t factor = 1;
  int64_t symbols = 0;
  bool operator==(const Elements &other) const {
    return factor == other.factor && symbols == other.symbols;
  }
  Elements times(int64_t n) const { return {factor * n, symbols}; }
  Elements per(int64_t n) const { return {factor / n, symbols}; }
};
} // namespace

static Elements elementsOf(Value v) {
  Elements count;
  for (int64_t size : tensorType(v).getShape()) {
    if (ShapedType::isDynamic(size))
      ++count.symbols;
    else
      count.factor *= size;
  }
  return count;
}

/// Whether realized `v` gets a kernel of tc-fuse's own that computes it
/// point by point (not a library call, a scatter, a fill or an alias: a
/// reshape of a graph input or output, or one the graph returns, may be an
/// alias of that buffer: PrimToKernel.cpp). With `symbolicRows`, its
/// leading size may be the graph's symbolic size.
static bool computedPointwise(const FusionPlan &plan, Value v,
                              const llvm::DenseSet<Value> &returned,
                              bool symbolicRows = false) {
  Operation *op = v.getDefiningOp();
  if (auto reshape = dyn_cast_if_present<prim::ReshapeOp>(op))
    if (returned.contains(v) || returned.contains(reshape.getOperand()) ||
        isa<BlockArgument>(reshape.getOperand()))
      return false;
  return op && !plan.gemmFor(v) && !plan.convFor(v) &&
         !plan.attentionFor(v) &&
         !isa<prim::ScatterAddOp, prim::ScatterOp, prim::ConstantOp>(op) &&
         (symbolicRows ? staticButRows(tensorType(v))
                       : tensorType(v).hasStaticShape()) &&
         hintNumElements(tensorType(v)) > 0;
}

/// Whether `reader`'s kernel, computing `stat` and `inlined` (realized
/// values it computes too) inline, reads `stat` only at one-to-one images
/// of its rows: every path from the reader to `stat` keeps each point's row
/// (elementwise ops, reshapes that keep the last dimension) up to a
/// broadcast along the last dimension or a reduction over it, past which
/// values have one element per row and only elementwise ops, reshapes and
/// unit broadcasts lead to `stat`. Then `stat` is computed once per row,
/// outside the row's loop, at every element. With `atPoints`, `stat` has
/// the reader's points and is read only at them, or at the points of their
/// row inside a reduction over it (a layer norm's input, which its
/// statistics read across the row and its value at the point).
static bool readAtOwnRows(const FusionPlan &plan, Value reader, Value stat,
                          const llvm::SmallDenseSet<Value> &inlined,
                          bool atPoints = false) {
  // Counts of elements are multiples of the graph's symbolic size, whose
  // rows (a leading `?`) a row kernel may have.
  auto numElements = [](Value v) { return elementsOf(v); };
  auto lastDim = [](Value v) { return tensorType(v).getShape().back(); };
  // A 0-d reader has no rows (two index checks' flags or'ed together).
  if (tensorType(reader).getRank() == 0 || lastDim(reader) <= 0 ||
      !staticButRows(tensorType(reader)))
    return false;
  Elements rows = numElements(reader).per(lastDim(reader));
  // Where a value lies: at the point (rows by the last dimension), at the
  // row (one element per row), or elsewhere.
  enum class At { Point, Row, Elsewhere };
  SmallVector<std::pair<Value, At>> worklist = {{reader, At::Point}};
  std::set<std::pair<const void *, int>> seen;
  bool found = false;
  while (!worklist.empty()) {
    auto [v, at] = worklist.pop_back_val();
    if (!seen.insert({v.getAsOpaquePointer(), int(at)}).second)
      continue;
    if (v == stat) {
      if (at != (atPoints ? At::Point : At::Row))
        return false;
      found = true;
    } else if (inlined.contains(v) && at == At::Elsewhere) {
      return false;
    }
    if (v != reader && v != stat && plan.isRealized(v) &&
        !inlined.contains(v))
      continue;
    Operation *op = v.getDefiningOp();
    if (!op || isa<prim::ConstantOp>(op))
      continue;
    auto type = tensorType(v);
    bool pointShaped = type.getRank() > 0 && staticButRows(type) &&
                       lastDim(v) > 0 &&
                       numElements(v) == rows.times(lastDim(v));
    auto push = [&](Value operand, At where) {
      if (isa<RankedTensorType>(operand.getType()))
        worklist.push_back({operand, where});
    };
    At next = At::Elsewhere;
    if (at == At::Point && pointShaped) {
      if (op->hasTrait<OpTrait::Elementwise>()) {
        next = At::Point;
      } else if (auto reshape = dyn_cast<prim::ReshapeOp>(op)) {
        Value in = reshape.getOperand();
        if (tensorType(in).getRank() > 0 && lastDim(in) == lastDim(v))
          next = At::Point;
      } else if (auto bcast = dyn_cast<prim::BroadcastInDimOp>(op)) {
        Value in = bcast.getOperand();
        ArrayRef<int64_t> dims = bcast.getBroadcastDimensions();
        int64_t last = type.getRank() - 1;
        if (numElements(in) == numElements(v))
          next = At::Point;
        else if (numElements(in) == rows && llvm::is_sorted(dims) &&
                 llvm::all_of(llvm::enumerate(dims), [&](auto dim) {
                   return dim.value() < last ||
                          tensorType(in).getDimSize(dim.index()) == 1;
                 }))
          next = At::Row;
      }
    } else if (at == At::Row && staticButRows(type) &&
               numElements(v) == rows) {
      if (op->hasTrait<OpTrait::Elementwise>() || isa<prim::ReshapeOp>(op)) {
        next = At::Row;
      } else if (auto bcast = dyn_cast<prim::BroadcastInDimOp>(op)) {
        if (numElements(bcast.getOperand()) == rows)
          next = At::Row;
      } else if (auto reduce = dyn_cast<prim::ReduceOp>(op)) {
        Value in = reduce.getOperand();
        int64_t rank = tensorType(in).getRank();
        if (reduce.getDims() == ArrayRef<int64_t>{rank - 1} &&
            staticButRows(tensorType(in)) && lastDim(in) > 0 &&
            numElements(in) == rows.times(lastDim(in)))
          next = At::Point;
      }
    }
    for (Value operand : op->getOperands())
      push(operand, next);
  }
  return found;
}

/// The realized values that only one row kernel reads (it and its other row
/// statistics: a variance reads the mean), each of the shape of that
/// kernel's rows: a training forward's layer norm returns its row means and
/// variances for the backward, and the norm's kernel computes them at each
/// row anyway. Stored by that kernel, they cost no kernel and no pass over
/// the rows of their own (three kernels per norm were one). Decided in
/// reverse program order, so that a statistic's readers are decided first.
RowStatistics fuse::rowStatistics(FusionPlan &plan, ArrayRef<Value> order,
                                  const llvm::DenseSet<Value> &copied,
                                  const llvm::DenseSet<Value> &returned) {
  RowStatistics stats;
  for (Value stat : llvm::reverse(order)) {
    if (!computedPointwise(plan, stat, returned, /*symbolicRows=*/true) ||
        copied.contains(stat))
      continue;
    Value reader;
    bool one = true;
    for (Value root : plan.rootsOf(stat)) {
      Value kernelOf = stats.readers.lookup(root);
      Value target = kernelOf ? kernelOf : root;
      one = one && (!reader || reader == target);
      reader = target;
    }
    if (!one || !reader ||
        !computedPointwise(plan, reader, returned, /*symbolicRows=*/true) ||
        copied.contains(reader) || !KernelBuilder::hasRowDomain(reader))
      continue;
    llvm::SmallDenseSet<Value> inlined = {stat};
    for (Value other : stats.of.lookup(reader))
      inlined.insert(other);
    if (!readAtOwnRows(plan, reader, stat, inlined))
      continue;
    stats.readers[stat] = reader;
    stats.of[reader].push_back(stat);
  }
  for (auto &entry : stats.of)
    std::reverse(entry.second.begin(), entry.second.end());
  return stats;
}

/// The realized values `v`'s kernel reads; false if computing `v` reduces
/// (but for `v`'s own reduction with `ownReduction`) or scans windows.
static bool realizedReads(const FusionPlan &plan, Value v,
                          llvm::SetVector<Value> &reads,
                          bool ownReduction = false) {
  llvm::SmallDenseSet<Value> seen;
  SmallVector<Value> worklist = {v};
  while (!worklist.empty()) {
    Value next = worklist.pop_back_val();
    if (!seen.insert(next).second)
      continue;
    Operation *op = next.getDefiningOp();
    if (next != v && (plan.isRealized(next) || !op)) {
      reads.insert(next);
      continue;
    }
    if (isa<prim::ReduceOp, prim::ArgReduceOp, prim::WindowArgmaxOp,
            prim::WindowGatherOp, prim::WindowScatterOp>(op) &&
        !(ownReduction && next == v && isa<prim::ReduceOp>(op)))
      return false;
    llvm::append_range(worklist, op->getOperands());
  }
  return true;
}

/// `v`'s reduction when `v` is one (its kernel reduces once, at the root).
static prim::ReduceOp ownReduction(Value v) {
  return v.getDefiningOp<prim::ReduceOp>();
}

/// Point values: a realized value computed by cheap elementwise arithmetic
/// (no division, root or transcendental function) of values written
/// before, that the first kernel reading it computes inline at its own
/// points and stores there, when that kernel computes point by point over
/// the value's shape and every other reader runs after it. A residual sum
/// and the layer norm that follows it are then one kernel, which reads the
/// sum's operands and writes both (Inductor's fused add and norm), where
/// the sum had a kernel of its own and the norm read it back.
PointValues fuse::pointValues(FusionPlan &plan, ArrayRef<Value> order,
                              const RowStatistics &stats,
                              const Siblings &sibs,
                              const llvm::DenseSet<Value> &copied,
                              const llvm::DenseSet<Value> &returned,
                              const llvm::DenseMap<Value, Value>
                                  &computedInOutput) {
  // Where each realized value's kernel runs, in program order.
  llvm::DenseMap<Value, size_t> runsAt;
  for (auto [i, v] : llvm::enumerate(order))
    runsAt[v] = i;
  for (auto [stat, reader] : stats.readers)
    runsAt[stat] = runsAt.lookup(reader);
  for (auto [sibling, host] : sibs.hosts)
    runsAt[sibling] = runsAt.lookup(host);
  llvm::DenseSet<Value> outputsComputedIn;
  for (auto [value, output] : computedInOutput)
    outputsComputedIn.insert(output);
  // A kernel of its own that computes the value point by point.
  auto own = [&](Value v) {
    return computedPointwise(plan, v, returned) && !copied.contains(v) &&
           !computedInOutput.count(v) && !outputsComputedIn.contains(v) &&
           !stats.readers.count(v) && !sibs.hosts.count(v);
  };
  PointValues result;
  for (Value v : order) {
    if (!own(v) || stats.of.count(v) || sibs.of.count(v) ||
        result.of.count(v) || !plan.cheapElementwise(v))
      continue;
    // The kernel that reads it first, through `reader` (a value it
    // computes).
    Value reader;
    size_t at = order.size();
    bool known = true;
    llvm::SmallDenseSet<Value> roots = plan.rootsOf(v);
    for (Value root : roots) {
      auto it = runsAt.find(root);
      if (it == runsAt.end()) {
        known = false;
        break;
      }
      if (it->second < at || (it->second == at && root == order[at])) {
        at = it->second;
        reader = root;
      }
    }
    if (!known || !reader || stats.readers.count(reader))
      continue;
    Value host = sibs.hosts.lookup(reader);
    if (!host)
      host = reader;
    if (!own(host) || result.hosts.count(host) ||
        tensorType(host).getNumElements() != tensorType(v).getNumElements() ||
        result.of.lookup(host).size() == kMaxPointValues)
      continue;
    // Its operands are written before that kernel runs.
    llvm::SetVector<Value> reads;
    if (!realizedReads(plan, v, reads) ||
        llvm::any_of(reads, [&](Value r) {
          auto it = runsAt.find(r);
          return it != runsAt.end() && it->second >= at;
        }))
      continue;
    llvm::SmallDenseSet<Value> inlined = {v};
    for (Value other : llvm::concat<const Value>(stats.of.lookup(host),
                                                 result.of.lookup(host)))
      inlined.insert(other);
    if (!readAtOwnRows(plan, reader, v, inlined, /*atPoints=*/true))
      continue;
    result.of[host].push_back(v);
    result.hosts[v] = host;
    runsAt[v] = at;
  }
  return result;
}

/// The later values of a pointwise kernel's type that it computes too: each
/// pointwise, reads a large tensor the kernel reads (at least half its
/// elements), and reads only what is written before the kernel runs. One kernel then
/// reads that tensor once for both (a GELU's gradient and the GELU
/// recomputed for a weight's gradient, both from the activation). So for a
/// reduction's kernel: later reductions of its type over the same
/// dimensions of operands of one shape, each reducing pointwise work of
/// what is written before (a layer norm's weight and bias gradients, two
/// column sums of one gradient: tc-split-reductions splits them
/// together).
Siblings
fuse::siblings(FusionPlan &plan, ArrayRef<Value> order,
               const RowStatistics &stats,
               const llvm::DenseSet<Value> &returned,
               const llvm::DenseMap<Value, Value> &computedInOutput) {
  llvm::DenseMap<Value, size_t> writtenAt;
  for (auto [i, v] : llvm::enumerate(order))
    writtenAt[v] = i;
  for (auto [stat, reader] : stats.readers)
    writtenAt[stat] = writtenAt.lookup(reader);
  auto eligible = [&](Value v) {
    return computedPointwise(plan, v, returned) &&
           !stats.readers.count(v) && !computedInOutput.count(v);
  };
  Siblings result;
  for (auto [i, host] : llvm::enumerate(order)) {
    if (!eligible(host) || result.hosts.count(host))
      continue;
    prim::ReduceOp hostReduce = ownReduction(host);
    llvm::SetVector<Value> hostReads;
    if (!realizedReads(plan, host, hostReads, /*ownReduction=*/true))
      continue;
    int64_t elements = tensorType(hostReduce ? hostReduce.getOperand() : host)
                           .getNumElements();
    for (size_t j = i + 1; j < order.size() && j <= i + kSiblingWindow; ++j) {
      Value sibling = order[j];
      if (sibling.getType() != host.getType() || !eligible(sibling) ||
          stats.of.count(sibling) || result.hosts.count(sibling))
        continue;
      prim::ReduceOp reduce = ownReduction(sibling);
      if (bool(reduce) != bool(hostReduce) ||
          (reduce && (reduce.getDims() != hostReduce.getDims() ||
                      reduce.getKind() != hostReduce.getKind() ||
                      reduce.getOperand().getType() !=
                          hostReduce.getOperand().getType())))
        continue;
      llvm::SetVector<Value> reads;
      if (!realizedReads(plan, sibling, reads, /*ownReduction=*/true))
        continue;
      bool ready = llvm::all_of(reads, [&](Value r) {
        auto it = writtenAt.find(r);
        return it == writtenAt.end() || it->second < i;
      });
      bool shares = llvm::any_of(reads, [&](Value r) {
        return hostReads.contains(r) &&
               2 * hintNumElements(tensorType(r)) >= elements;
      });
      if (!ready || !shares)
        continue;
      result.of[host].push_back(sibling);
      result.hosts[sibling] = host;
      if (result.of[host].size() == kMaxSiblings)
        break;
    }
  }
  return result;
}

