//===- KernelBuilder.cpp - kernels of realized values -----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-fuse's kernel builder: a kernel per realized value, its inputs, its
// loop scopes, and the point-by-point emission that inlines what is not
// realized (with views as index arithmetic and memoized scalars).
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::fuse;

namespace mlir::tc::fuse {

std::optional<WindowFamily> windowFamily(prim::ConcatenateOp concat,
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
  FailureOr<SmallVector<ReshapeRun>> runs = reshapeRuns(inShape, outShape);
  if (failed(runs))
    return reshape.emitOpError() << "sizes do not match";
  for (const ReshapeRun &run : *runs) {
    size_t inBegin = run.inBegin, i = run.inEnd;
    size_t outBegin = run.outBegin, j = run.outEnd;
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

bool KernelBuilder::atPoint(ArrayRef<Value> idx) const {
  // (A reduction emitted for the point has its body at the same depth.)
  return pointScope && scopes[scopeFor(idx)]->block == pointScope;
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
  if (!root && plan.isRealized(v) && !rowStats.contains(v) &&
      !pointValueBuffers.count(v)) {
    inputs.insert(v);
    return success();
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return success();
  if (isa<prim::DotOp, prim::ConvolutionOp, prim::ConvolutionBackwardInputOp,
          prim::ConvolutionBackwardWeightOp, prim::AttentionOp>(op))
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

void KernelBuilder::findLastDimConcatenations(Value v, bool root,
                                              std::set<int64_t> &cuts,
                                              llvm::DenseSet<Value> &seen) {
  if ((!root && buffers.count(v)) || !seen.insert(v).second)
    return;
  Operation *op = v.getDefiningOp();
  if (!op)
    return;
  RankedTensorType type = tensorType(v);
  int64_t last = type.getRank() - 1;
  if (auto concat = dyn_cast<prim::ConcatenateOp>(op)) {
    if (int64_t(concat.getDim()) != last || windowFamily(concat, plan))
      return;
    int64_t offset = 0;
    for (Value input : concat.getInputs()) {
      offset += tensorType(input).getDimSize(last);
      if (offset > 0 && offset < type.getDimSize(last))
        cuts.insert(offset);
    }
    splitParts[concat] = 0;
    return;
  }
  // The loop's index reaches an operand unchanged through elementwise ops
  // and broadcasts that keep the last dimension.
  if (auto bcast = dyn_cast<prim::BroadcastInDimOp>(op)) {
    RankedTensorType in = tensorType(bcast.getOperand());
    ArrayRef<int64_t> dims = bcast.getBroadcastDimensions();
    if (!dims.empty() && dims.back() == last &&
        in.getDimSize(in.getRank() - 1) == type.getDimSize(last))
      findLastDimConcatenations(bcast.getOperand(), false, cuts, seen);
    return;
  }
  if (!op->hasTrait<OpTrait::Elementwise>())
    return;
  for (Value operand : op->getOperands())
    if (tensorType(operand).getShape() == type.getShape())
      findLastDimConcatenations(operand, false, cuts, seen);
}

/// Whether a kernel of `rows` rows of `length` elements splits its rows into
/// blocks, each a domain point of its own: few long rows (a 1-d tensor, say)
/// leave threads idle.
static bool splitsRows(int64_t rows, int64_t length) {
  return rows < 64 && length >= (1 << 15);
}

bool KernelBuilder::hasRowDomain(Value value) {
  // Rows of a static length; their count may be the graph's symbolic size
  // (a leading `?`, at its hint).
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() < 2 ||
      llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic) ||
      type.getShape().back() <= 1)
    return false;
  int64_t length = type.getShape().back();
  return !splitsRows(hintNumElements(type) / length, length);
}

FailureOr<kernel::KernelOp>
KernelBuilder::build(Value value, StringRef name, Operation *before,
                     SmallVectorImpl<Value> &inputs, Mode mode,
                     ArrayRef<Value> rowStatistics,
                     ArrayRef<Value> siblings,
                     ArrayRef<Value> pointValues) {
  rowStats.clear();
  rowStats.insert(rowStatistics.begin(), rowStatistics.end());
  rowStatBuffers.clear();
  rowStatsStored.clear();
  rowStatElsewhere = false;
  pointValueBuffers.clear();
  pointScope = nullptr;
  pointStores.clear();
  pointsSeen.clear();
  pointValueMissing = false;
  if (!pointValues.empty() &&
      (mode != Mode::Compute ||
       llvm::any_of(pointValues, [&](Value v) {
         return tensorType(v).getNumElements() !=
                tensorType(value).getNumElements();
       })))
    return emitError(loc) << "tc-fuse: point values need a computed value "
                             "of their size";
  // Marked before the inputs are collected: they are computed inline.
  for (Value v : pointValues)
    pointValueBuffers[v] = Value();
  if (!rowStatistics.empty() &&
      (mode != Mode::Compute || !hasRowDomain(value)))
    return emitError(loc) << "tc-fuse: row statistics need a row kernel";
  if (!siblings.empty() &&
      (mode != Mode::Compute ||
       llvm::any_of(siblings, [&](Value v) {
         return v.getType() != value.getType();
       })))
    return emitError(loc) << "tc-fuse: siblings need a computed value of "
                             "their type";
  llvm::SetVector<Value> reads;
  llvm::SmallDenseSet<Value> visited;
  if (auto stored = value.getDefiningOp<prim::ScatterOp>();
      mode == Mode::Scatter) {
    // The updates and their positions; the operand is in the output.
    for (Value read : {stored.getIndices(), stored.getUpdates()})
      if (failed(collectInputs(read, reads, visited, /*root=*/false)))
        return failure();
  } else if (mode != Mode::Zeros && mode != Mode::Copy &&
             failed(collectInputs(value, reads, visited, /*root=*/true))) {
    return failure();
  }
  for (Value sibling : siblings)
    if (failed(collectInputs(sibling, reads, visited, /*root=*/true)))
      return failure();
  // A realized value read as-is (an output that is an input, say) is a copy.
  if (mode == Mode::Copy ||
      (plan.isRealized(value) && value.getDefiningOp() == nullptr))
    reads.insert(value);

  SmallVector<Type> argTypes;
  for (Value v : reads)
    argTypes.push_back(bufferType(v));
  for (Value v : rowStatistics)
    argTypes.push_back(bufferType(v));
  for (Value v : siblings)
    argTypes.push_back(bufferType(v));
  for (Value v : pointValues)
    argTypes.push_back(bufferType(v));
  argTypes.push_back(bufferType(value));

  // A scatter's kernel runs over its updates, the others over `value`.
  auto scatter = value.getDefiningOp<prim::ScatterAddOp>();
  auto store = value.getDefiningOp<prim::ScatterOp>();
  RankedTensorType type = tensorType(
      mode == Mode::ScatterAdd ? scatter.getUpdates()
      : mode == Mode::Scatter  ? store.getUpdates()
                               : value);
  ArrayRef<int64_t> shape = type.getShape();
  // A vector of the symbolic size has no static row: each point is a row.
  bool symbolicRows = shape.size() == 1 && type.isDynamicDim(0);
  // With loopPastUnitDims, trailing dimensions of size 1 are indexed at 0
  // and the inner loop runs over the last dimension before them.
  int64_t unitTail = 0;
  if (loopPastUnitDims && mode != Mode::ScatterAdd && mode != Mode::Scatter)
    while (unitTail + 1 < static_cast<int64_t>(shape.size()) &&
           shape[shape.size() - 1 - unitTail] == 1)
      ++unitTail;
  if (unitTail && shape[shape.size() - 1 - unitTail] <= 1)
    unitTail = 0;
  ArrayRef<int64_t> looped = shape.drop_back(unitTail);
  SmallVector<int64_t> domain(looped.begin(), looped.empty() || symbolicRows
                                                  ? looped.end()
                                                  : looped.end() - 1);
  // Few long rows (a 1-d tensor, say) leave threads idle: split the last
  // dimension into blocks, which become a domain dimension of their own.
  int64_t rows = 1, block = 0;
  for (int64_t size : domain)
    rows *= ShapedType::isDynamic(size) ? kSymbolHint : size;
  if (!looped.empty() && splitsRows(rows, looped.back()))
    for (int64_t candidate : {4096, 2048, 1024, 512, 256})
      if (looped.back() % candidate == 0) {
        block = candidate;
        domain.push_back(looped.back() / block);
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
  cached = cachedIn = loopIndex = Value();
  cacheComplete = false;
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
  if (!block && !unitTail && !shape.empty() && !symbolicRows &&
      mode == Mode::Compute) {
    rowIndex = idx;
    mayCacheRows = cacheRows;
  }
  for (auto [i, stat] : llvm::enumerate(rowStatistics))
    rowStatBuffers[stat] = entry->getArgument(reads.size() + i);
  SmallVector<std::pair<Value, Value>> siblingBuffers;
  for (auto [i, sibling] : llvm::enumerate(siblings))
    siblingBuffers.push_back(
        {sibling,
         entry->getArgument(reads.size() + rowStatistics.size() + i)});
  for (auto [i, v] : llvm::enumerate(pointValues))
    pointValueBuffers[v] = entry->getArgument(
        reads.size() + rowStatistics.size() + siblings.size() + i);
  // A row cached in the output would be overwritten before a sibling
  // reads it back; a point value read from the cache would not be stored.
  if (!siblings.empty() || !pointValues.empty())
    mayCacheRows = false;
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
    if (mode == Mode::Scatter)
      return emitScatter(store, point);
    // Every value first, then the stores: the reads they share are one
    // read once no store lies between them.
    SmallVector<std::pair<Value, Value>> stores;
    pointScope = scopes[scopeFor(point)]->block;
    pointStores.clear();
    pointsSeen.clear();
    FailureOr<Value> scalar = emit(value, point);
    if (failed(scalar))
      return failure();
    stores.push_back({*scalar, out});
    for (auto [sibling, buffer] : siblingBuffers) {
      FailureOr<Value> other = emit(sibling, point);
      if (failed(other))
        return failure();
      stores.push_back({*other, buffer});
    }
    // Each point value at this point (computed here for the value or a
    // sibling), or the kernel is not built.
    pointValueMissing |= pointsSeen.size() != pointValues.size();
    pointScope = nullptr;
    for (auto [stored, buffer] : stores)
      memref::StoreOp::create(b, loc, stored, buffer, point);
    // (A point value whose row a reduction cached is in its buffer.)
    for (auto &[stored, buffer, at] : pointStores)
      if (!(buffer == cachedIn && cachedIn != out))
        memref::StoreOp::create(b, loc, stored, buffer, at);
    return success();
  };
  // The inner loop over the last dimension (`size` iterations), its scope
  // entered: returns the loop and its index.
  auto openLoop = [&](int64_t size) -> std::pair<kernel::LoopOp, Value> {
    auto loop = kernel::LoopOp::create(b, loc, index(size));
    Block *body = b.createBlock(&loop.getBody(), {}, {b.getIndexType()},
                                {loc});
    pushScope(body, nullptr);
    scopes[0]->nested = loop;
    b.setInsertionPointToEnd(body);
    return {loop, body->getArgument(0)};
  };
  // Concatenations along the last dimension that the point reads at the
  // inner loop's index (a rotary embedding's halves, parts side by side):
  // the loop is split at their parts' boundaries, one loop per range, in
  // which each concatenation reads one part. One loop for all read every
  // part at each point (at clamped indices, which LLVM does not vectorize)
  // and selected one: a rotary embedding's halves ran at 4x Inductor's
  // time.
  SmallVector<int64_t> cuts;
  if (splitConcatenations && mode == Mode::Compute && !block && !unitTail &&
      !shape.empty() && !symbolicRows) {
    std::set<int64_t> at;
    llvm::DenseSet<Value> seen;
    splitParts.clear();
    findLastDimConcatenations(value, /*root=*/true, at, seen);
    for (Value sibling : siblings)
      findLastDimConcatenations(sibling, /*root=*/true, at, seen);
    cuts.assign(at.begin(), at.end());
    if (cuts.size() > kMaxLoopSplits)
      cuts.clear();
  }
  if (!cuts.empty()) {
    mayCacheRows = false;
    SmallVector<int64_t> bounds = {0};
    llvm::append_range(bounds, cuts);
    bounds.push_back(shape.back());
    for (auto [begin, end] : llvm::zip(ArrayRef(bounds).drop_back(),
                                       ArrayRef(bounds).drop_front())) {
      // The part of each concatenation that holds [begin, end).
      for (auto &[op, part] : splitParts) {
        auto concat = cast<prim::ConcatenateOp>(op);
        int64_t offset = 0;
        for (auto [i, input] : llvm::enumerate(concat.getInputs())) {
          int64_t size = tensorType(input).getDimSize(concat.getDim());
          if (size > 0 && begin >= offset && begin < offset + size)
            part = i;
          offset += size;
        }
      }
      auto [loop, inner] = openLoop(end - begin);
      splitIndex = begin == 0 ? inner
                              : arith::AddIOp::create(b, loc, inner,
                                                      index(begin))
                                    .getResult();
      loopIndex = splitIndex;
      SmallVector<Value> point(idx);
      point.push_back(splitIndex);
      if (failed(emitPoint(point)))
        return failure();
      setInsertionPoint(1);
      kernel::YieldOp::create(b, loc);
      scopes.pop_back();
      scopes[0]->nested = nullptr;
      b.setInsertionPointAfter(loop);
    }
    splitIndex = Value();
    splitParts.clear();
  } else if (!shape.empty() && !symbolicRows) {
    Value blockIndex = block ? idx.pop_back_val() : Value();
    auto [loop, loopArg] = openLoop(block ? block : looped.back());
    Block *body = &loop.getBody().front();
    Value inner = loopArg;
    if (!block)
      loopIndex = inner;
    if (block)
      inner = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, blockIndex, index(block)),
          inner);
    idx.push_back(inner);
    for (int64_t d = 0; d < unitTail; ++d)
      idx.push_back(index(0));
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
        Value row = memref::LoadOp::create(b, loc, cachedIn, idx);
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

  if (rowStatElsewhere || rowStatsStored.size() != rowStats.size() ||
      pointValueMissing) {
    kernel.erase();
    return kernel::KernelOp();
  }
  inputs.assign(reads.begin(), reads.end());
  return kernel;
}

std::pair<Value, Value> KernelBuilder::positionInRange(Value position,
                                                       int64_t size) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), position);
  Value inRange = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i, index(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                            index(size)));
  return {i, inRange};
}

LogicalResult KernelBuilder::emitScatterAdd(prim::ScatterAddOp op,
                                            ArrayRef<Value> idx) {
  FailureOr<Value> update = emit(op.getUpdates(), idx);
  if (failed(update))
    return failure();
  FailureOr<Value> position = emit(op.getIndices(), idx.take_front());
  if (failed(position))
    return failure();
  auto [i, inRange] =
      positionInRange(*position, tensorType(op.getResult()).getDimSize(0));
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

LogicalResult KernelBuilder::emitScatter(prim::ScatterOp op,
                                         ArrayRef<Value> idx) {
  int64_t dim = op.getDim();
  FailureOr<Value> update = emit(op.getUpdates(), idx);
  if (failed(update))
    return failure();
  FailureOr<Value> position = emit(op.getIndices(), idx.slice(dim, 1));
  if (failed(position))
    return failure();
  auto [i, inRange] =
      positionInRange(*position, tensorType(op.getResult()).getDimSize(dim));
  SmallVector<Value> at(idx);
  at[dim] = i;
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPointToStart(guard.thenBlock());
  memref::StoreOp::create(b, loc, *update, out, at);
  return success();
}

FailureOr<Value> KernelBuilder::emit(Value v, ArrayRef<Value> idx) {
  // A cached row is read back in the inner loop; a point value's (in its
  // own buffer) also in the row's later reductions.
  bool cachedRow = v == cached && !idx.empty() &&
                   idx.drop_back() == ArrayRef<Value>(rowIndex) &&
                   ((loopIndex && idx.back() == loopIndex) ||
                    (cachedIn != out && cacheComplete));
  if (cachedRow) {
    OpBuilder::InsertionGuard guard(b);
    setInsertionPoint(scopeFor(idx));
    Value row = memref::LoadOp::create(b, loc, cachedIn, idx);
    // A point value cached there is stored already.
    if (pointValueBuffers.lookup(v) && atPoint(idx))
      pointsSeen.insert(v);
    return row;
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
    // A row statistic is stored where it is computed: once per row, at the
    // row (see build).
    if (Value stat = rowStatBuffers.lookup(v); stat && succeeded(result)) {
      if (scope != 0)
        rowStatElsewhere = true;
      memref::StoreOp::create(b, loc, *result, stat, idx);
      rowStatsStored.insert(v);
    }
    // A point value is stored where it is computed for the point being
    // emitted (see build): at the point's scope, at the point or at its
    // image through reshapes and permutations, not inside a reduction.
    if (Value buffer = pointValueBuffers.lookup(v);
        buffer && succeeded(result) && atPoint(idx)) {
      pointStores.push_back({*result, buffer, SmallVector<Value>(idx)});
      pointsSeen.insert(v);
    }
  } else {
    return emitError(loc) << "tc-fuse: value has no buffer and no producer";
  }
  if (succeeded(result))
    scopes[scope]->memo[key] = *result;
  return result;
}

} // namespace mlir::tc::fuse
