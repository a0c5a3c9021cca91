//===- SplitReductions.cpp - parallelize reductions over few outputs -----===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Rewrites kernels whose domain is too small to fill a GPU: nested
// reductions are flattened, a reducing column loop becomes a domain
// dimension, and a single long reduction is split into a partial kernel and
// a final one. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tc::kernel {
#define GEN_PASS_DEF_SPLITREDUCTIONSPASS
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace mlir::tc::kernel

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::kernel;

namespace {

/// Every chunk of a split reduction covers at least this many iterations.
constexpr int64_t kMinChunk = 32;
/// Fewer chunks than this do not pay for the extra launch.
constexpr int64_t kMinSplits = 4;
/// A reduction along the contiguous dimension gets a thread block per
/// point (tc-lower-kernel-to-gpu's row per block): it needs this many times
/// fewer points than `min-parallelism`, which counts threads.
constexpr int64_t kThreadsPerRow = 32;

static std::optional<int64_t> constantSize(Value size) {
  APInt value;
  if (matchPattern(size, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

static int64_t numPoints(KernelOp kernel) {
  int64_t points = 1;
  for (int64_t size : kernel.getDomain())
    points *= size;
  return points;
}

/// Whether `op` is scalar work that may be cloned or moved freely.
static bool isPureScalar(Operation &op) {
  return op.getNumRegions() == 0 && isMemoryEffectFree(&op);
}

//===----------------------------------------------------------------------===//
// 1. Flattening nested reductions
//===----------------------------------------------------------------------===//

/// Whether `op` is a load of a buffer `kernel` does not write.
static bool isLoadOfUnwritten(Operation &op, KernelOp kernel) {
  auto load = dyn_cast<memref::LoadOp>(op);
  if (!load)
    return false;
  bool written = false;
  kernel.walk([&](memref::StoreOp store) {
    written |= store.getMemRef() == load.getMemRef();
  });
  return !written;
}

/// `outer` reduces, with the same kind, only the result of an inner
/// reduction that starts from the identity; returns that inner reduction.
/// Scalar work may precede it (the row offsets `hoistIndex` moved out of
/// the inner reduction), and loads of buffers the kernel does not write:
/// a per-image value the inner reduction scales by (a squeeze-and-
/// excitation gate, global response norm's factor) is then read again at
/// each element of the flattened range, which kept a channel sum over N,
/// H and W from its split (a thread per channel walking a whole
/// activation: 228 ms where a split sum takes 0.1).
static ReduceOp getFlattenableInner(ReduceOp outer, KernelOp kernel) {
  Block &body = outer.getBody().front();
  ReduceOp inner;
  for (Operation &op : body.without_terminator()) {
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (inner)
        return {};
      inner = reduce;
      continue;
    }
    if (inner || !(isPureScalar(op) || isLoadOfUnwritten(op, kernel)))
      return {};
  }
  if (!inner || inner.getKind() != outer.getKind())
    return {};
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1 ||
      yield.getValues()[0] != inner.getResult())
    return {};
  Attribute init;
  Builder b(outer.getContext());
  if (!matchPattern(inner.getInit(), m_Constant(&init)) ||
      init != getCombinerIdentity(b, inner.getKind(), inner.getType()))
    return {};
  if (!constantSize(outer.getSize()) || !constantSize(inner.getSize()))
    return {};
  return inner;
}

/// reduce(i < R) { reduce(j < C) { f(i, j) } } -> reduce(k < R*C) {
/// f(k / C, k % C) }.
static bool flattenOnce(ReduceOp outer, KernelOp kernel) {
  ReduceOp inner = getFlattenableInner(outer, kernel);
  if (!inner)
    return false;
  int64_t rows = *constantSize(outer.getSize());
  int64_t cols = *constantSize(inner.getSize());
  Location loc = outer.getLoc();
  OpBuilder b(outer);
  Value size = arith::ConstantIndexOp::create(b, loc, rows * cols);
  auto flat = ReduceOp::create(b, loc, outer.getType(), outer.getKindAttr(),
                               size, outer.getInit());
  Block *body =
      b.createBlock(&flat.getBody(), {}, {b.getIndexType()}, {loc});
  Value k = body->getArgument(0);
  Value c = arith::ConstantIndexOp::create(b, loc, cols);
  IRMapping mapping;
  mapping.map(outer.getBody().getArgument(0),
              arith::DivUIOp::create(b, loc, k, c));
  mapping.map(inner.getBody().getArgument(0),
              arith::RemUIOp::create(b, loc, k, c));
  for (Operation &op : outer.getBody().front().without_terminator())
    if (&op != inner.getOperation())
      b.clone(op, mapping);
  Block &innerBody = inner.getBody().front();
  for (Operation &op : innerBody.without_terminator())
    b.clone(op, mapping);
  auto yield = cast<YieldOp>(innerBody.getTerminator());
  YieldOp::create(b, loc, mapping.lookup(yield.getValues()[0]));
  outer.getResult().replaceAllUsesWith(flat.getResult());
  outer.erase();
  return true;
}

static void flattenNestedReductions(KernelOp kernel) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto reduce :
         llvm::make_early_inc_range(kernel.getBody().getOps<ReduceOp>()))
      changed |= flattenOnce(reduce, kernel);
  }
}

//===----------------------------------------------------------------------===//
// 2. A reducing column loop as a domain dimension
//===----------------------------------------------------------------------===//

static bool loopToDomain(KernelOp kernel) {
  Block &entry = kernel.getBody().front();
  LoopOp loop;
  SmallVector<memref::LoadOp> loads;
  for (Operation &op : entry.without_terminator()) {
    if (auto l = dyn_cast<LoopOp>(op)) {
      if (loop)
        return false;
      loop = l;
      continue;
    }
    // Loads before the loop (a random-number graph's seed, a realized
    // statistic) are read again at each new point: fine unless the loop
    // writes what they read. A seed's load kept a row-statistics kernel
    // of a [B, S, H] activation at B threads, a dropout before GPT-2's
    // layer norm among them (58 ms where 0.1 would do on the H200).
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      loads.push_back(load);
      continue;
    }
    if (!isPureScalar(op))
      return false;
  }
  if (!loop || loop->getNextNode() != entry.getTerminator())
    return false;
  bool writesRead = false;
  loop.walk([&](memref::StoreOp store) {
    for (memref::LoadOp load : loads)
      writesRead |= load.getMemRef() == store.getMemRef();
  });
  if (writesRead)
    return false;
  std::optional<int64_t> size = constantSize(loop.getSize());
  if (!size || loop.getBody().getOps<ReduceOp>().empty())
    return false;
  SmallVector<int64_t> domain(kernel.getDomain());
  OpBuilder b(loop);
  Value index = IndexOp::create(b, loop.getLoc(), b.getIndexType(),
                                static_cast<int64_t>(domain.size()));
  domain.push_back(*size);
  kernel.setDomain(domain);
  Block &body = loop.getBody().front();
  body.getArgument(0).replaceAllUsesWith(index);
  body.getTerminator()->erase();
  entry.getOperations().splice(loop->getIterator(), body.getOperations());
  loop.erase();
  return true;
}

//===----------------------------------------------------------------------===//
// 3. Splitting a long reduction
//===----------------------------------------------------------------------===//

/// The kernel's top-level reductions, if everything else at the top level
/// is scalar work, loads before the first (a realized statistic the
/// reduction subtracts: batch norm's mean in its variance over N, H and W
/// channels-last) or of buffers the kernel does not write, or stores
/// after the last; each of the same constant
/// length, and none reading another's result (siblings: a layer norm's
/// weight and bias gradients, two column sums of one gradient). The
/// partial kernel repeats the scalar work that reads no reduction.
static SmallVector<ReduceOp> getSplittable(KernelOp kernel) {
  SmallVector<ReduceOp> reduces;
  // Values computed from a reduction's result.
  llvm::SmallPtrSet<Value, 8> reduced;
  auto readsReduced = [&](Operation *op) {
    bool reads = false;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        reads |= reduced.contains(operand);
    });
    return reads;
  };
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (auto r = dyn_cast<ReduceOp>(op)) {
      if (readsReduced(r) || !constantSize(r.getSize()) ||
          (!reduces.empty() &&
           constantSize(r.getSize()) != constantSize(reduces[0].getSize())))
        return {};
      reduces.push_back(r);
      reduced.insert(r.getResult());
      continue;
    }
    if (isPureScalar(op)) {
      if (readsReduced(&op))
        for (Value result : op.getResults())
          reduced.insert(result);
      continue;
    }
    // Loads before the first reduction, or of buffers the kernel does not
    // write (a column's weight a sibling sum scales by, hoisted out of it).
    if (isa<memref::LoadOp>(op) && !readsReduced(&op) &&
        (reduces.empty() || isLoadOfUnwritten(op, kernel)))
      continue;
    if (!reduces.empty() && isa<memref::StoreOp>(op))
      continue;
    return {};
  }
  // Stores come after the last reduction.
  bool afterLast = false;
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (!reduces.empty() && &op == reduces.back().getOperation())
      afterLast = true;
    if (isa<memref::StoreOp>(op) && !afterLast)
      return {};
  }
  return reduces;
}

/// How many chunks to split `length` iterations into so that `points`
/// domain points become `parallelism` units of work; 0 when not worth an
/// extra launch.
static int64_t chooseSplits(int64_t points, int64_t length,
                            int64_t parallelism, int64_t maxSplits,
                            int64_t minLength) {
  if (length < minLength)
    return 0;
  int64_t splits = llvm::PowerOf2Ceil(llvm::divideCeil(parallelism, points));
  splits = std::min<int64_t>(
      splits, llvm::bit_floor(static_cast<uint64_t>(maxSplits)));
  // Chunks of ceil(length / splits) (the last one short where the splits
  // do not divide the length: a [32, 50257] reduction split in 32, not 256).
  while (splits > 1 && llvm::divideCeil(length, splits) < kMinChunk)
    splits /= 2;
  return splits >= kMinSplits ? splits : 0;
}

/// Splits `reduces` of `kernel` into `splits` chunks each: creates the
/// partial kernel before `kernel` and rewrites `kernel` to combine the
/// partials, held `[S] ++ domain` per reduction, or with `splitsLast`
/// `domain ++ [S]`. Returns the partial kernel and the temporaries' types,
/// one per reduction in order.
static std::pair<KernelOp, SmallVector<MemRefType>>
splitReductions(KernelOp kernel, MutableArrayRef<ReduceOp> reduces,
                int64_t splits,
                bool splitsLast, SymbolTable &symbols,
                bool miscompileForTesting) {
  MLIRContext *ctx = kernel.getContext();
  ReduceOp first = reduces.front();
  Location loc = first.getLoc();
  ArrayRef<int64_t> domain = kernel.getDomain();
  int64_t length = *constantSize(first.getSize());
  int64_t chunk = llvm::divideCeil(length, splits);
  bool ragged = chunk * splits != length;
  // The temporary's index of chunk `s` at domain point `point`.
  auto partialIndex = [&](Value s, ValueRange point) {
    SmallVector<Value> at;
    if (!splitsLast)
      at.push_back(s);
    at.append(point.begin(), point.end());
    if (splitsLast)
      at.push_back(s);
    return at;
  };
  SmallVector<int64_t> partialShape;
  if (!splitsLast)
    partialShape.push_back(splits);
  llvm::append_range(partialShape, domain);
  if (splitsLast)
    partialShape.push_back(splits);
  SmallVector<MemRefType> partialTypes;
  for (ReduceOp reduce : reduces)
    partialTypes.push_back(MemRefType::get(partialShape, reduce.getType()));

  // The partial kernel: domain [S] ++ domain, the kernel's buffers and the
  // temporaries.
  SmallVector<Type> argTypes(kernel.getArgumentTypes());
  llvm::append_range(argTypes, partialTypes);
  SmallVector<int64_t> partialDomain{splits};
  llvm::append_range(partialDomain, domain);
  OpBuilder b(kernel);
  auto partial = KernelOp::create(
      b, kernel.getLoc(), (kernel.getSymName() + "_partial").str(),
      FunctionType::get(ctx, argTypes, {}), partialDomain,
      /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  symbols.insert(partial);
  Block *entry = partial.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  for (auto [from, to] :
       llvm::zip(kernel.getBody().getArguments(), entry->getArguments()))
    mapping.map(from, to);
  Value split = IndexOp::create(b, loc, b.getIndexType(), 0);
  SmallVector<Value> point{split};
  for (size_t d = 0; d < domain.size(); ++d)
    point.push_back(IndexOp::create(b, loc, b.getIndexType(), d + 1));
  Value chunkSize = arith::ConstantIndexOp::create(b, loc, chunk);
  unsigned next = 0;
  unsigned firstTemp = kernel.getNumArguments();
  // The scalar work no reduction's result feeds (getSplittable), then each
  // reduction over its chunk, stored in its temporary.
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (next < reduces.size() && &op == reduces[next].getOperation()) {
      ReduceOp reduce = reduces[next];
      Value identity = arith::ConstantOp::create(
          b, loc,
          getCombinerIdentity(b, reduce.getKind(), reduce.getType()));
      auto part = ReduceOp::create(b, loc, reduce.getType(),
                                   reduce.getKindAttr(), chunkSize, identity);
      {
        OpBuilder::InsertionGuard guard(b);
        Block *body =
            b.createBlock(&part.getBody(), {}, {b.getIndexType()}, {loc});
        Value base = arith::MulIOp::create(b, loc, split, chunkSize);
        Value at = arith::AddIOp::create(b, loc, base, body->getArgument(0));
        Value inRange;
        if (ragged) {
          // The last chunk's iterations past the end read the last element
          // and yield the identity.
          Value end = arith::ConstantIndexOp::create(b, loc, length);
          inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          at, end);
          at = arith::MinUIOp::create(
              b, loc, at,
              arith::ConstantIndexOp::create(b, loc, length - 1));
        }
        mapping.map(reduce.getBody().getArgument(0), at);
        for (Operation &inner : reduce.getBody().front().without_terminator())
          b.clone(inner, mapping);
        auto yield = cast<YieldOp>(reduce.getBody().front().getTerminator());
        SmallVector<Value> values;
        for (Value v : yield.getValues()) {
          Value mapped = mapping.lookupOrDefault(v);
          values.push_back(inRange ? arith::SelectOp::create(b, loc, inRange,
                                                             mapped, identity)
                                         .getResult()
                                   : mapped);
        }
        YieldOp::create(b, loc, values);
      }
      memref::StoreOp::create(
          b, loc, part.getResult(), entry->getArgument(firstTemp + next),
          partialIndex(split, ArrayRef<Value>(point).drop_front()));
      ++next;
      continue;
    }
    if (isa<memref::StoreOp>(op))
      continue;
    // (Scalar work reading a reduction's result is not needed here.)
    bool readsReduction = llvm::any_of(op.getOperands(), [&](Value v) {
      return !mapping.contains(v) && v.getParentBlock() ==
                                         &kernel.getBody().front();
    });
    if (readsReduction)
      continue;
    if (auto index = dyn_cast<IndexOp>(op)) {
      mapping.map(index.getResult(), point[index.getDim() + 1]);
      continue;
    }
    b.clone(op, mapping);
  }
  ReturnOp::create(b, loc);

  // The kernel itself: reduce the partials, from the original init.
  Block &kernelEntry = kernel.getBody().front();
  SmallVector<Value> partials;
  for (MemRefType type : partialTypes)
    partials.push_back(kernelEntry.addArgument(type, kernel.getLoc()));
  kernel.setFunctionType(FunctionType::get(
      ctx, kernelEntry.getArgumentTypes(), {}));
  for (auto [reduce, temp] : llvm::zip(reduces, partials)) {
    b.setInsertionPoint(reduce);
    // (A test's planted wrong rewrite leaves out the last chunk.)
    reduce.getSizeMutable().assign(arith::ConstantIndexOp::create(
        b, loc, miscompileForTesting ? splits - 1 : splits));
    Block &body = reduce.getBody().front();
    body.clear();
    b.setInsertionPointToStart(&body);
    SmallVector<Value> at;
    for (size_t d = 0; d < domain.size(); ++d)
      at.push_back(IndexOp::create(b, loc, b.getIndexType(), d));
    Value value = memref::LoadOp::create(
        b, loc, temp, partialIndex(body.getArgument(0), at));
    YieldOp::create(b, loc, value);
  }
  return {partial, partialTypes};
}

/// The reduction indices (into `reduces`) that `op` reads the results of,
/// through the kernel's top-level values (`deps` of those computed so far).
static llvm::SmallBitVector
reductionsRead(Operation *op, ArrayRef<ReduceOp> reduces,
               const llvm::DenseMap<Operation *, llvm::SmallBitVector> &deps) {
  llvm::SmallBitVector read(reduces.size());
  op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (auto it = deps.find(def); it != deps.end())
          read |= it->second;
  });
  return read;
}

/// A kernel of several independent top-level reductions that
/// getSplittable refuses (of other lengths, say) as one kernel per
/// reduction, each with the stores of that reduction's results
/// alone, replacing `kernel` and its `launches`; empty (nothing changed)
/// when a store reads two reductions or the kernel has other effects.
/// Each is then split on its own: a sibling kernel that kept its sums
/// whole would leave most of the GPU idle.
static SmallVector<KernelOp> separate(KernelOp kernel,
                                      ArrayRef<LaunchOp> launches,
                                      SymbolTable &symbols) {
  Block &body = kernel.getBody().front();
  SmallVector<ReduceOp> reduces(body.getOps<ReduceOp>());
  if (reduces.size() < 2)
    return {};
  llvm::DenseMap<Operation *, llvm::SmallBitVector> deps;
  for (Operation &op : body.without_terminator()) {
    llvm::SmallBitVector read = reductionsRead(&op, reduces, deps);
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (read.any())
        return {};
      read.set(llvm::find(reduces, reduce) - reduces.begin());
    } else if (isa<memref::StoreOp>(op)) {
      if (read.count() > 1)
        return {};
    } else if (!isPureScalar(op) && !isa<memref::LoadOp>(op)) {
      return {};
    }
    deps[&op] = read;
  }
  SmallVector<KernelOp> parts;
  for (size_t k = 0; k < reduces.size(); ++k) {
    auto part = cast<KernelOp>(kernel->clone());
    part.setSymName((kernel.getSymName() + "_" + Twine(k)).str());
    symbols.insert(part, std::next(Block::iterator(kernel)));
    // The stores of the other reductions' results go; then what nothing
    // reads any more.
    Block &partBody = part.getBody().front();
    SmallVector<Operation *> ops, originals;
    for (Operation &op : partBody.without_terminator())
      ops.push_back(&op);
    for (Operation &op : body.without_terminator())
      originals.push_back(&op);
    for (auto [op, original] : llvm::zip(ops, originals)) {
      const llvm::SmallBitVector &read = deps[original];
      bool mine = read.any() ? read.test(k) : k == 0;
      if (isa<memref::StoreOp>(op) && !mine)
        op->erase();
    }
    // In reverse order, so that an op's users go before it.
    SmallVector<Operation *> left;
    for (Operation &op : partBody.without_terminator())
      left.push_back(&op);
    for (Operation *op : llvm::reverse(left))
      if (op->use_empty() && !isa<memref::StoreOp>(op) &&
          (isPureScalar(*op) || isa<memref::LoadOp, ReduceOp>(op)))
        op->erase();
    parts.push_back(part);
  }
  // (Each part holds its one reduction, or nothing changes.)
  if (llvm::any_of(parts, [](KernelOp part) {
        return !llvm::hasSingleElement(part.getBody().getOps<ReduceOp>());
      })) {
    for (KernelOp part : parts)
      symbols.erase(part);
    return {};
  }
  for (LaunchOp launch : launches) {
    OpBuilder b(launch);
    for (KernelOp part : parts)
      LaunchOp::create(b, launch.getLoc(), part.getSymName(),
                       launch.getBuffers());
    launch.erase();
  }
  symbols.erase(kernel);
  return parts;
}

struct SplitReductionsPass
    : public kernel::impl::SplitReductionsPassBase<SplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<KernelOp> kernels(module.getOps<KernelOp>());
    for (size_t next = 0; next < kernels.size(); ++next) {
      KernelOp kernel = kernels[next];
      if (numPoints(kernel) >= minParallelism)
        continue;
      // Launches that run as a GEMM's row epilogue keep their shape.
      bool epilogue = false;
      SmallVector<LaunchOp> launches;
      module.walk([&](LaunchOp launch) {
        if (launch.getKernelAttr().getRootReference() !=
            kernel.getSymNameAttr())
          return;
        launches.push_back(launch);
        epilogue |= launch.getRowEpilogue();
      });
      if (epilogue)
        continue;
      flattenNestedReductions(kernel);
      // A column loop's reductions come to the top level only now: a
      // reduction over several leading dimensions (a weight's gradient over
      // batch and sequence) is nested there.
      if (loopToDomain(kernel))
        flattenNestedReductions(kernel);
      SmallVector<ReduceOp> reduces = getSplittable(kernel);
      if (reduces.empty()) {
        // Several reductions that would be split one by one but cannot be
        // split together: one kernel each.
        auto first = kernel.getBody().getOps<ReduceOp>();
        if (!first.empty() && constantSize((*first.begin()).getSize()) &&
            chooseSplits(numPoints(kernel),
                         *constantSize((*first.begin()).getSize()),
                         minParallelism, maxSplits * columnFactor,
                         minLength))
          llvm::append_range(kernels, separate(kernel, launches, symbols));
        continue;
      }
      ReduceOp reduce = reduces.front();
      // (Several reductions split alike: each along the same dimension.)
      bool innermost = indexesInnermostDim(reduce.getBody().getArgument(0));
      if (llvm::any_of(reduces, [&](ReduceOp r) {
            return indexesInnermostDim(r.getBody().getArgument(0)) !=
                   innermost;
          }))
        continue;
      int64_t parallelism = minParallelism, most = maxSplits;
      bool column = false;
      if (innermost) {
        parallelism = std::max<int64_t>(1, minParallelism / kThreadsPerRow);
      } else if (!kernel.getDomain().empty()) {
        column = true;
        parallelism *= columnFactor;
        most *= columnFactor;
      }
      int64_t splits =
          chooseSplits(numPoints(kernel), *constantSize(reduce.getSize()),
                       parallelism, most, minLength);
      if (!splits)
        continue;
      auto [partial, partialTypes] =
          splitReductions(kernel, reduces, splits, column, symbols,
                          miscompileForTesting);
      for (LaunchOp launch : launches) {
        OpBuilder b(launch);
        SmallVector<Value> temps;
        for (MemRefType type : partialTypes)
          temps.push_back(memref::AllocOp::create(b, launch.getLoc(), type));
        SmallVector<Value> buffers(launch.getBuffers());
        llvm::append_range(buffers, temps);
        LaunchOp::create(b, launch.getLoc(), partial.getSymName(), buffers);
        launch.getBuffersMutable().append(temps);
      }
    }
  }
};

} // namespace
