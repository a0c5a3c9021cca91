//===- Scalars.cpp - the scalar code of prim ops ----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The scalar arith/math code of each prim op at one point of a kernel:
// elementwise math, conversions, comparisons, counter-based random numbers
// (Philox), gathers and selects.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::fuse;

namespace mlir::tc::fuse {

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

Value emitConvert(OpBuilder &b, Location loc, Value v, Type to) {
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
    // In a split inner loop the point reads the part that holds the
    // loop's range.
    if (auto it = splitParts.find(concat);
        it != splitParts.end() && idx[concat.getDim()] == splitIndex) {
      int64_t offset = 0;
      for (Value input : concat.getInputs().take_front(it->second))
        offset += tensorType(input).getDimSize(concat.getDim());
      SmallVector<Value> inIdx(idx);
      if (offset)
        inIdx[concat.getDim()] =
            arith::SubIOp::create(b, loc, splitIndex, index(offset));
      return emit(concat.getInputs()[it->second], inIdx);
    }
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

} // namespace mlir::tc::fuse
