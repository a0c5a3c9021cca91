//===- Windows.cpp - loops inside a point -----------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The kernel code that loops inside one point: the window ops of max
// pooling (the scan for each window's first maximum, the gather at its
// position, the scatter of its gradient) and reductions.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::fuse;

namespace mlir::tc::fuse {

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

WindowCoordinates
KernelBuilder::windowInputCoordinates(prim::WindowArgmaxOp op,
                                      ArrayRef<Value> idx) {
  WindowGeometry g(op);
  ArrayRef<int64_t> inShape = tensorType(op.getOperand()).getShape();
  ArrayRef<int64_t> outShape = tensorType(op).getShape();
  size_t lead = idx.size() - g.window.size();
  // A bound every window of the output keeps (a channels-last window's
  // channel dimension: window 1, stride 1) is not tested: a clamp of the
  // innermost index hides from LLVM's vectorizer that the loads are
  // consecutive.
  Value yes = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  WindowCoordinates coordinates;
  for (size_t d = 0; d < g.window.size(); ++d) {
    coordinates.emplace_back();
    for (int64_t offset = 0; offset < g.window[d]; ++offset) {
      int64_t shift = offset * g.dilation[d] - g.padding[d];
      Value i = affine(idx[lead + d], g.strides[d], shift);
      int64_t highest = (outShape[lead + d] - 1) * g.strides[d] + shift;
      Value ok;
      if (highest >= inShape[lead + d])
        ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i,
                                   index(inShape[lead + d]));
      if (shift < 0) {
        Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                            i, index(0));
        ok = ok ? arith::AndIOp::create(b, loc, ok, above).getResult()
                : above;
      }
      coordinates.back().emplace_back(
          ok ? arith::SelectOp::create(b, loc, ok, i, index(0)).getResult()
             : i,
          ok ? ok : yes);
    }
  }
  return coordinates;
}

LogicalResult KernelBuilder::forEachWindowPoint(
    prim::WindowArgmaxOp op, ArrayRef<Value> idx,
    function_ref<void(int64_t, Value, Value)> visit) {
  WindowGeometry g(op);
  WindowCoordinates coordinates = windowInputCoordinates(op, idx);
  size_t lead = idx.size() - g.window.size();
  for (int64_t k = 0, e = g.positions(); k < e; ++k) {
    auto [at, valid] =
        windowPoint(b, loc, g, idx.take_front(lead), coordinates, k);
    FailureOr<Value> x = emit(op.getOperand(), at);
    if (failed(x))
      return failure();
    visit(k, valid, *x);
  }
  return success();
}

FailureOr<Value>
KernelBuilder::emitWindowMaxValue(prim::WindowArgmaxOp op,
                                  ArrayRef<Value> idx) {
  // The maximum over the points inside the input, NaN when one is NaN
  // (arith.maximumf): the value the scan below keeps (up to the sign of a
  // zero tied with another), without its chain of "found" flags and
  // selects, which LLVM's cost model would not vectorize (max pooling ran
  // at 11-13 GB/s on the CPU, 4-7x Inductor's time).
  Type elt = tensorType(op.getOperand()).getElementType();
  auto floatType = cast<FloatType>(elt);
  Value lowest = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(elt, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/true)));
  Value best = lowest;
  if (failed(forEachWindowPoint(op, idx, [&](int64_t, Value valid, Value x) {
        Value point = arith::SelectOp::create(b, loc, valid, x, lowest);
        best = arith::MaximumFOp::create(b, loc, best, point);
      })))
    return failure();
  return best;
}

FailureOr<std::pair<Value, Value>>
KernelBuilder::emitWindowMax(prim::WindowArgmaxOp op, ArrayRef<Value> idx) {
  // Scan the window in row-major order, keeping the first maximum: a later
  // point wins if it is greater or NaN (PyTorch's rule), and the first
  // point inside the input wins unconditionally.
  Type elt = tensorType(op.getOperand()).getElementType();
  auto positionType = cast<IntegerType>(tensorType(op).getElementType());
  Value yes = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  Value best, bestPosition, found;
  auto scan = [&](int64_t k, Value valid, Value x) {
    Value position = arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(positionType, k));
    if (k == 0) {
      best = x;
      bestPosition = position;
      found = valid;
      return;
    }
    Value greater;
    if (isa<FloatType>(elt))
      greater = arith::OrIOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, best),
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x));
    else
      greater = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x,
                                      best);
    Value notFound = arith::XOrIOp::create(b, loc, found, yes);
    Value take = arith::AndIOp::create(
        b, loc, valid, arith::OrIOp::create(b, loc, notFound, greater));
    best = arith::SelectOp::create(b, loc, take, x, best);
    bestPosition = arith::SelectOp::create(b, loc, take, position,
                                           bestPosition);
    found = arith::OrIOp::create(b, loc, found, valid);
  };
  if (failed(forEachWindowPoint(op, idx, scan)))
    return failure();
  return std::make_pair(best, bestPosition);
}

FailureOr<Value> KernelBuilder::emitWindowGather(prim::WindowGatherOp op,
                                                 ArrayRef<Value> idx) {
  // Max pooling's values: the gather of the argmax of the same operand over
  // the same windows is the maximum the scan kept, without a load at a
  // position computed from the data (which no loop vectorizes).
  if (prim::WindowArgmaxOp argmax = maxOfWindows(op)) {
    // Nothing else reads the positions (inference): the maximum alone.
    if (argmax->hasOneUse() &&
        isa<FloatType>(tensorType(op.getOperand()).getElementType()))
      return emitWindowMaxValue(argmax, idx);
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
  // last dimension for the kernel's current row, before its inner loop. A
  // point value's row is stored in its own buffer there (then read back),
  // where rows are cached at all.
  bool rowReduction = !cached && dims.size() == 1 &&
                      dims[0] == in.getRank() - 1 &&
                      idx == ArrayRef<Value>(rowIndex);
  Value cacheIn = cacheRows ? pointValueBuffers.lookup(op.getOperand())
                            : Value();
  if (!cacheIn && mayCacheRows && !plan.isRealized(op.getOperand()) &&
      tensorType(op.getOperand()).getShape() ==
          cast<MemRefType>(out.getType()).getShape() &&
      elt == cast<MemRefType>(out.getType()).getElementType())
    cacheIn = out;
  bool cacheRow = rowReduction && cacheIn;
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
        memref::StoreOp::create(b, loc, *value, cacheIn, inIdx);
        cached = op.getOperand();
        cachedIn = cacheIn;
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
  // Later code reads the row this reduction cached.
  if (cacheRow && cached == op.getOperand())
    cacheComplete = true;
  if (succeeded(result) && acc != elt)
    result = arith::TruncFOp::create(b, loc, elt, *result).getResult();
  scopes[scope]->nested = savedNested;
  while (!inner.empty()) {
    scopes.push_back(std::move(inner.back()));
    inner.pop_back();
  }
  return result;
}

} // namespace mlir::tc::fuse
