//===- Decomposer.cpp - the decomposition builder's helpers -------------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The out-of-line helpers of Decomposer (Decomposer.h) that every op
// family uses: arguments, types, shorthands. The families' decompositions
// are in their own files.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

FailureOr<SmallVector<Value>> Decomposer::run() {
  FailureOr<SmallVector<Value>> results = dispatch();
  if (rejected)
    return failure();
  return results;
}

FailureOr<Value> Decomposer::uniform(RankedTensorType type) {
  if (!random.seed)
    return fail(Twine("random ops need the graph's seed: an argument of "
                      "type 'tensor<i64>' marked ") +
                kRngSeedAttrName);
  auto scalar = RankedTensorType::get({}, b.getI64Type());
  Value offset = prim::ConstantOp::create(
      b, loc, DenseElementsAttr::get(scalar, b.getI64IntegerAttr(
                                                 random.offset)));
  random.offset += type.getNumElements();
  return prim::RandomOp::create(b, loc, prim::Distribution::Uniform,
                                random.seed, offset, type.getShape(),
                                type.getElementType())
      .getResult();
}

Attribute Decomposer::arg(StringRef name) const {
  DictionaryAttr args = op.getArgsAttr();
  Attribute attr = args ? args.get(name) : Attribute();
  return attr && !isa<UnitAttr>(attr) ? attr : Attribute();
}

double Decomposer::floatArg(StringRef name, double dflt) const {
  Attribute attr = arg(name);
  if (auto f = dyn_cast_if_present<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = dyn_cast_if_present<IntegerAttr>(attr))
    return i.getType().isInteger(1) ? i.getValue().getZExtValue()
                                    : static_cast<double>(i.getInt());
  return dflt;
}

int64_t Decomposer::intArg(StringRef name, int64_t dflt) const {
  if (auto i = dyn_cast_if_present<IntegerAttr>(arg(name)))
    return i.getInt();
  return dflt;
}

bool Decomposer::boolArg(StringRef name, bool dflt) const {
  if (auto v = dyn_cast_if_present<BoolAttr>(arg(name)))
    return v.getValue();
  return dflt;
}

std::optional<SmallVector<int64_t>>
Decomposer::intListArg(StringRef name) const {
  Attribute attr = arg(name);
  if (!attr)
    return std::nullopt;
  if (auto dense = dyn_cast<DenseI64ArrayAttr>(attr))
    return SmallVector<int64_t>(dense.asArrayRef());
  SmallVector<int64_t> values;
  if (auto array = dyn_cast<ArrayAttr>(attr))
    for (Attribute a : array)
      values.push_back(cast<IntegerAttr>(a).getInt());
  else if (auto i = dyn_cast<IntegerAttr>(attr))
    values.push_back(i.getInt());
  return values;
}

SmallVector<int64_t> Decomposer::spatialListArg(StringRef name, int64_t count,
                                                ArrayRef<int64_t> dflt) const {
  SmallVector<int64_t> v = intListArg(name).value_or(SmallVector<int64_t>{});
  if (v.empty())
    v.assign(dflt.begin(), dflt.end());
  if (v.size() == 1)
    v.assign(count, v[0]);
  return v;
}

Value Decomposer::reject(RankedTensorType type, const Twine &message) {
  if (!rejected)
    (void)fail(message);
  rejected = true;
  return splat(type, 0);
}

Value Decomposer::convert(Value v, Type elt) {
  if (typeOf(v).getElementType() == elt)
    return v;
  return prim::ConvertOp::create(b, loc, v, TypeAttr::get(elt));
}

Value Decomposer::broadcast(Value v, ArrayRef<int64_t> shape) {
  RankedTensorType type = typeOf(v);
  if (type.getShape() == shape)
    return v;
  int64_t offset = shape.size() - type.getRank();
  auto to = RankedTensorType::get(shape, type.getElementType());
  bool compatible = offset >= 0;
  for (int64_t d = 0; compatible && d < type.getRank(); ++d)
    compatible = type.getDimSize(d) == 1 ||
                 type.getDimSize(d) == shape[offset + d];
  if (!compatible)
    return reject(to, "operand of type " + quoted(type) +
                          " does not broadcast to the result shape of " +
                          quoted(to));
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < type.getRank(); ++d)
    dims.push_back(offset + d);
  return prim::BroadcastInDimOp::create(b, loc, v, shape, dims);
}

int64_t Decomposer::staticNumElements(RankedTensorType type) {
  int64_t count = 1;
  for (int64_t size : type.getShape())
    if (!ShapedType::isDynamic(size))
      count *= size;
  return count;
}

Value Decomposer::splat(RankedTensorType type, double value) {
  if (!type.hasStaticShape())
    return prim::BroadcastInDimOp::create(
        b, loc, splat(RankedTensorType::get({}, type.getElementType()), value),
        type.getShape(), ArrayRef<int64_t>{});
  Type elt = type.getElementType();
  Attribute scalar;
  if (auto ft = dyn_cast<FloatType>(elt)) {
    APFloat f(value);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    scalar = FloatAttr::get(elt, f);
  } else if (elt.isInteger(1)) {
    // To bool, any nonzero value is true (not its lowest bit).
    scalar = IntegerAttr::get(elt, value != 0 ? 1 : 0);
  } else {
    scalar = IntegerAttr::get(elt, static_cast<int64_t>(value));
  }
  return prim::ConstantOp::create(b, loc,
                                  DenseElementsAttr::get(type, scalar));
}

Type Decomposer::promote(Type lhs, Type rhs) {
  if (lhs == rhs)
    return lhs;
  bool lf = isa<FloatType>(lhs), rf = isa<FloatType>(rhs);
  if (lf != rf)
    return lf ? lhs : rhs;
  unsigned lw = lhs.getIntOrFloatBitWidth(), rw = rhs.getIntOrFloatBitWidth();
  if (lw != rw)
    return lw > rw ? lhs : rhs;
  // f16 vs bf16 promotes to f32, as in PyTorch.
  return Float32Type::get(lhs.getContext());
}

StringRef Decomposer::targetDevice() {
  auto module = op->getParentOfType<ModuleOp>();
  auto device =
      module ? module->getAttrOfType<StringAttr>(fx::kDeviceAttrName) : nullptr;
  return device ? device.getValue() : StringRef("cpu");
}

double Decomposer::roundTo(Type elt, double value) {
  auto ft = dyn_cast<FloatType>(elt);
  if (!ft)
    return value;
  APFloat f(value);
  bool lost = false;
  f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

FailureOr<Value> Decomposer::divide() {
  RankedTensorType type = resultType();
  Attribute mode = arg("rounding_mode");
  if (!mode) {
    if (!isa<FloatType>(type.getElementType()))
      return fail("true division with an integer result " + quoted(type));
    return binary<prim::DivOp>();
  }
  StringRef name = cast<StringAttr>(mode).getValue();
  Value lhs = coerce(operands[0], type), rhs = rhsOperand(type);
  if (name == "trunc")
    return truncDiv(lhs, rhs);
  if (name == "floor")
    return floorDiv(lhs, rhs);
  return fail("unknown rounding_mode '" + name + "'");
}

FailureOr<Value> Decomposer::compare(prim::ComparisonPredicate predicate) {
  Value lhs = operands[0];
  Type elt = typeOf(lhs).getElementType();
  Value rhs;
  ArrayRef<int64_t> shape = resultType().getShape();
  if (operands.size() > 1) {
    rhs = operands[1];
    elt = promote(elt, typeOf(rhs).getElementType());
  } else if (!isIntegral("other") && !isa<FloatType>(elt)) {
    // An integer tensor compared with a float scalar compares as float.
    elt = Float32Type::get(op.getContext());
  }
  RankedTensorType computeType = RankedTensorType::get(shape, elt);
  lhs = coerce(lhs, computeType);
  rhs = rhs ? coerce(rhs, computeType)
            : splat(computeType, floatArg("other", 0));
  return prim::CompareOp::create(b, loc, predicate, lhs, rhs).getResult();
}

Value Decomposer::reduce(prim::ReductionKind kind, Value input,
                         ArrayRef<int64_t> dims, bool keepdim,
                         RankedTensorType resultTy) {
  RankedTensorType type = typeOf(input);
  SmallVector<int64_t> sorted;
  for (int64_t d : dims) {
    // A 0-d tensor has one dimension to name, 0 or -1.
    int64_t dim = normalizeDim(d, std::max<int64_t>(type.getRank(), 1));
    if (dim < 0 || dim >= std::max<int64_t>(type.getRank(), 1))
      return reject(resultTy, "dimension " + Twine(d) +
                                  " is out of range for " +
                                  quoted(type));
    sorted.push_back(dim);
  }
  if (dims.empty())
    for (int64_t d = 0; d < type.getRank(); ++d)
      sorted.push_back(d);
  // PyTorch takes dim 0 (or -1) of a 0-d tensor: nothing to reduce.
  if (type.getRank() == 0)
    sorted.clear();
  llvm::sort(sorted);
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int64_t dim : sorted)
    if (type.isDynamicDim(dim))
      return reject(resultTy, "a reduction over the symbolic size of " +
                                  quoted(type) + " is not supported yet");
  Value reduced = prim::ReduceOp::create(b, loc, kind, input, sorted);
  if (keepdim || typeOf(reduced).getShape() != resultTy.getShape())
    reduced = reshape(reduced, resultTy.getShape());
  return reduced;
}

Value Decomposer::argExtreme(Value x, int64_t dim, bool isMax) {
  RankedTensorType type = typeOf(x);
  if (type.getRank() == 0) // The one element is the extreme.
    return splat(RankedTensorType::get({}, b.getI64Type()), 0);
  SmallVector<int64_t> kept(type.getShape());
  kept[dim] = 1;
  Value extreme = reduce(isMax ? prim::ReductionKind::Max
                               : prim::ReductionKind::Min,
                         x, {dim}, true, type.clone(kept));
  Value hit = prim::CompareOp::create(b, loc, prim::ComparisonPredicate::EQ,
                                      x, broadcast(extreme, type.getShape()));
  if (isa<FloatType>(type.getElementType())) {
    // NaN propagates through the reduction; x == NaN never holds.
    Value nan = isNan(x);
    hit = prim::WhereOp::create(b, loc, nan, nan, hit);
  }
  Type i64 = b.getI64Type();
  auto indexType = RankedTensorType::get(type.getShape(), i64);
  Value iota = prim::IotaOp::create(b, loc, type.getShape(), dim, i64);
  Value candidates = prim::WhereOp::create(
      b, loc, hit, iota, splat(indexType, type.getDimSize(dim)));
  return prim::ReduceOp::create(b, loc, prim::ReductionKind::Min,
                                candidates, ArrayRef<int64_t>{dim});
}

std::pair<Value, Value> Decomposer::meanAndRstd(Value x, int64_t normDims,
                                                double eps) {
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  SmallVector<int64_t> dims, kept(type.getShape());
  int64_t count = 1;
  for (int64_t d = rank - normDims; d < rank; ++d) {
    dims.push_back(d);
    count *= type.getDimSize(d);
    kept[d] = 1;
  }
  RankedTensorType statType = type.clone(kept);
  Value sum = reduce(prim::ReductionKind::Sum, x, dims, true, statType);
  Value mean =
      prim::DivOp::create(b, loc, sum, splat(statType, count)).getResult();
  Value centered =
      prim::SubOp::create(b, loc, x, broadcast(mean, type.getShape()));
  Value sq = prim::MulOp::create(b, loc, centered, centered);
  Value sqSum = reduce(prim::ReductionKind::Sum, sq, dims, true, statType);
  Value var = prim::DivOp::create(b, loc, sqSum, splat(statType, count));
  Value rstd = prim::RsqrtOp::create(
      b, loc, prim::AddOp::create(b, loc, var, splat(statType, eps)));
  return {mean, rstd};
}

Value Decomposer::softmax(Value x, int64_t dim, RankedTensorType type,
                          bool log) {
  x = widenHalf(convert(x, type.getElementType()));
  Value result = softmaxOf(x, dim, log);
  return convert(result, type.getElementType());
}

Value Decomposer::softmaxOf(Value x, int64_t dim, bool log) {
  RankedTensorType xType = typeOf(x);
  dim = normalizeDim(dim, xType.getRank());
  SmallVector<int64_t> kept(xType.getShape());
  kept[dim] = 1;
  RankedTensorType statType = xType.clone(kept);
  Value max = reduce(prim::ReductionKind::Max, x, {dim}, true, statType);
  // The result does not depend on the shift: no gradient through it (the
  // terms it would add cancel out, after a pass over every row).
  Value reduced = max;
  if (auto reshape = max.getDefiningOp<prim::ReshapeOp>())
    reduced = reshape.getOperand();
  if (auto op = reduced.getDefiningOp<prim::ReduceOp>())
    op->setAttr(prim::PrimDialect::getStopGradientAttrName(),
                b.getUnitAttr());
  Value shifted =
      prim::SubOp::create(b, loc, x, broadcast(max, xType.getShape()));
  Value exp = prim::ExpOp::create(b, loc, shifted);
  Value sum = reduce(prim::ReductionKind::Sum, exp, {dim}, true, statType);
  if (log)
    return prim::SubOp::create(
        b, loc, shifted,
        broadcast(prim::LogOp::create(b, loc, sum), xType.getShape()));
  return prim::DivOp::create(b, loc, exp, broadcast(sum, xType.getShape()));
}

Value Decomposer::widenHalf(Value v) {
  RankedTensorType type = typeOf(v);
  Type elt = type.getElementType();
  if (!elt.isF16() && !elt.isBF16())
    return v;
  return coerce(v, type.clone(b.getF32Type()));
}

Value Decomposer::gelu(Value x, bool tanhApprox) {
  RankedTensorType type = typeOf(x);
  Value half = splat(type, 0.5), one = splat(type, 1.0);
  Value inner;
  if (tanhApprox) {
    Value x3 = prim::MulOp::create(b, loc, prim::MulOp::create(b, loc, x, x),
                                   x);
    Value poly = prim::AddOp::create(
        b, loc, x, prim::MulOp::create(b, loc, x3, splat(type, 0.044715)));
    inner = prim::TanhOp::create(
        b, loc,
        prim::MulOp::create(b, loc, poly,
                            splat(type, std::sqrt(2.0 / M_PI))));
  } else {
    inner = prim::ErfOp::create(
        b, loc, prim::MulOp::create(b, loc, x, splat(type, M_SQRT1_2)));
  }
  return prim::MulOp::create(
      b, loc, prim::MulOp::create(b, loc, x, half),
      prim::AddOp::create(b, loc, one, inner));
}

Value Decomposer::matmul(Value lhs, Value rhs) {
  RankedTensorType lt = typeOf(lhs), rt = typeOf(rhs);
  int64_t rank = lt.getRank();
  if (rank != rt.getRank() || (rank != 2 && rank != 3) ||
      lt.getDimSize(rank - 1) != rt.getDimSize(rank - 2) ||
      (rank == 3 && lt.getDimSize(0) != rt.getDimSize(0)))
    return reject(resultType(), "cannot multiply " + quoted(lt) +
                                    " by " + quoted(rt));
  if (!isa<FloatType>(lt.getElementType())) {
    // Integers have no GEMM library call: products over [.., M, K, N],
    // summed over K (one reduction kernel; the products are not stored).
    int64_t lead = rank - 2;
    SmallVector<int64_t> wide(lt.getShape());
    wide.push_back(rt.getDimSize(rank - 1));
    SmallVector<int64_t> lDims, rDims;
    for (int64_t d = 0; d < lead; ++d) {
      lDims.push_back(d);
      rDims.push_back(d);
    }
    lDims.append({lead, lead + 1});
    rDims.append({lead + 1, lead + 2});
    Value product = prim::MulOp::create(
        b, loc, prim::BroadcastInDimOp::create(b, loc, lhs, wide, lDims),
        prim::BroadcastInDimOp::create(b, loc, rhs, wide, rDims));
    return prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum, product,
                                  ArrayRef<int64_t>{lead + 1});
  }
  if (rank == 3)
    return prim::DotOp::create(b, loc, lhs, rhs, ArrayRef<int64_t>{0},
                               ArrayRef<int64_t>{0}, ArrayRef<int64_t>{2},
                               ArrayRef<int64_t>{1});
  return prim::DotOp::create(b, loc, lhs, rhs, ArrayRef<int64_t>{},
                             ArrayRef<int64_t>{}, ArrayRef<int64_t>{1},
                             ArrayRef<int64_t>{0});
}

Value Decomposer::permute(Value v, ArrayRef<int64_t> perm) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> normalized;
  llvm::SmallBitVector seen(rank);
  for (int64_t d : perm) {
    int64_t dim = normalizeDim(d, rank);
    if (dim < 0 || dim >= rank || seen.test(dim))
      break;
    seen.set(dim);
    normalized.push_back(dim);
  }
  if (static_cast<int64_t>(normalized.size()) != rank ||
      static_cast<int64_t>(perm.size()) != rank)
    return reject(resultType(), "the dimensions do not permute " +
                                    quoted(typeOf(v)));
  return prim::PermuteOp::create(b, loc, v, normalized);
}

Value Decomposer::reshape(Value v, ArrayRef<int64_t> shape) {
  RankedTensorType type = typeOf(v);
  auto to = RankedTensorType::get(shape, type.getElementType());
  if (!sameNumElements(type, to))
    return reject(to, "cannot reshape " + quoted(type) + " to " +
                          quoted(to));
  if (type.getShape() == shape)
    return v;
  return prim::ReshapeOp::create(b, loc, v, shape);
}

Value Decomposer::isNan(Value x) {
  RankedTensorType type = typeOf(x);
  if (!isa<FloatType>(type.getElementType()))
    return splat(type.clone(b.getI1Type()), 0);
  return prim::CompareOp::create(b, loc, prim::ComparisonPredicate::NE, x,
                                 x);
}

Value Decomposer::signBit(Value x) {
  RankedTensorType type = typeOf(x);
  Type elt = type.getElementType();
  if (elt.isInteger(1))
    return splat(type, 0);
  if (!isa<FloatType>(elt))
    return prim::CompareOp::create(b, loc, prim::ComparisonPredicate::LT, x,
                                   splat(type, 0));
  Type bits = b.getIntegerType(elt.getIntOrFloatBitWidth());
  Value asInt = prim::BitcastOp::create(b, loc, x, TypeAttr::get(bits));
  return prim::CompareOp::create(b, loc, prim::ComparisonPredicate::LT,
                                 asInt, splat(type.clone(bits), 0));
}

Value Decomposer::truthy(Value x) {
  RankedTensorType type = typeOf(x);
  if (type.getElementType().isInteger(1))
    return x;
  return prim::CompareOp::create(b, loc, prim::ComparisonPredicate::NE, x,
                                 splat(type, 0));
}

Value Decomposer::hypot(Value x, Value y) {
  RankedTensorType type = typeOf(x);
  x = prim::AbsOp::create(b, loc, x);
  y = prim::AbsOp::create(b, loc, y);
  Value hi = prim::MaximumOp::create(b, loc, x, y);
  Value lo = prim::MinimumOp::create(b, loc, x, y);
  Value ratio = prim::DivOp::create(b, loc, lo, hi);
  Value r = prim::MulOp::create(
      b, loc, hi,
      prim::SqrtOp::create(
          b, loc,
          prim::AddOp::create(b, loc, splat(type, 1),
                              prim::MulOp::create(b, loc, ratio, ratio))));
  Value inf = splat(type, std::numeric_limits<double>::infinity());
  r = prim::WhereOp::create(
      b, loc, prim::CompareOp::create(b, loc, P::EQ, hi, splat(type, 0)),
      splat(type, 0), r);
  Value anyInf = prim::BitwiseOrOp::create(
      b, loc, prim::CompareOp::create(b, loc, P::EQ, x, inf),
      prim::CompareOp::create(b, loc, P::EQ, y, inf));
  return prim::WhereOp::create(b, loc, anyInf, inf, r);
}

Value Decomposer::safeDivisor(Value d) {
  RankedTensorType type = typeOf(d);
  Value bad = prim::WhereOp::create(
      b, loc,
      prim::CompareOp::create(b, loc, prim::ComparisonPredicate::EQ, d,
                              splat(type, 0)),
      splat(type.clone(b.getI1Type()), 1),
      prim::CompareOp::create(b, loc, prim::ComparisonPredicate::EQ, d,
                              splat(type, -1)));
  return prim::WhereOp::create(b, loc, bad, splat(type, 1), d);
}

Value Decomposer::truncDiv(Value a, Value d) {
  RankedTensorType type = typeOf(a);
  if (isa<FloatType>(type.getElementType()))
    return truncate(prim::DivOp::create(b, loc, a, d));
  Value q = prim::DivOp::create(b, loc, a, safeDivisor(d));
  Value minusOne = prim::CompareOp::create(
      b, loc, prim::ComparisonPredicate::EQ, d, splat(type, -1));
  return prim::WhereOp::create(b, loc, minusOne,
                               prim::NegOp::create(b, loc, a), q);
}

Value Decomposer::fmod(Value a, Value d) {
  RankedTensorType type = typeOf(a);
  if (isa<FloatType>(type.getElementType()))
    return prim::RemOp::create(b, loc, a, d);
  Value r = prim::RemOp::create(b, loc, a, safeDivisor(d));
  Value minusOne = prim::CompareOp::create(
      b, loc, prim::ComparisonPredicate::EQ, d, splat(type, -1));
  return prim::WhereOp::create(b, loc, minusOne, splat(type, 0), r);
}

Value Decomposer::signsDiffer(Value r, Value d) {
  RankedTensorType type = typeOf(r);
  using P = prim::ComparisonPredicate;
  Value nonzero = prim::CompareOp::create(b, loc, P::NE, r, splat(type, 0));
  Value rNeg = prim::CompareOp::create(b, loc, P::LT, r, splat(type, 0));
  Value dNeg = prim::CompareOp::create(b, loc, P::LT, d, splat(type, 0));
  Value differ = prim::CompareOp::create(b, loc, P::NE, rNeg, dNeg);
  return prim::BitwiseAndOp::create(b, loc, nonzero, differ);
}

Value Decomposer::remainder(Value a, Value d) {
  Value r = fmod(a, d);
  return prim::WhereOp::create(b, loc, signsDiffer(r, d),
                               prim::AddOp::create(b, loc, r, d), r);
}

Value Decomposer::floorDiv(Value a, Value d) {
  RankedTensorType type = typeOf(a);
  using P = prim::ComparisonPredicate;
  if (!isa<FloatType>(type.getElementType())) {
    Value q = truncDiv(a, d);
    Value r = fmod(a, d);
    return prim::WhereOp::create(b, loc, signsDiffer(r, d),
                                 prim::SubOp::create(b, loc, q,
                                                     splat(type, 1)),
                                 q);
  }
  Value one = splat(type, 1), zero = splat(type, 0);
  Value mod = prim::RemOp::create(b, loc, a, d);
  Value div = prim::DivOp::create(b, loc,
                                  prim::SubOp::create(b, loc, a, mod), d);
  div = prim::WhereOp::create(b, loc, signsDiffer(mod, d),
                              prim::SubOp::create(b, loc, div, one), div);
  Value floor = prim::FloorOp::create(b, loc, div);
  Value up = prim::CompareOp::create(
      b, loc, P::GT, prim::SubOp::create(b, loc, div, floor),
      splat(type, 0.5));
  floor = prim::WhereOp::create(b, loc, up,
                                prim::AddOp::create(b, loc, floor, one),
                                floor);
  Value quotient = prim::DivOp::create(b, loc, a, d);
  // 0 with the quotient's sign: quotient * 0 is +-0 (NaN stays NaN).
  Value signedZero = prim::MulOp::create(b, loc, quotient, zero);
  Value result = prim::WhereOp::create(
      b, loc, prim::CompareOp::create(b, loc, P::NE, div, zero), floor,
      signedZero);
  return prim::WhereOp::create(
      b, loc, prim::CompareOp::create(b, loc, P::EQ, d, zero), quotient,
      result);
}

Value Decomposer::truncate(Value x) {
  RankedTensorType type = typeOf(x);
  Value floor = prim::FloorOp::create(b, loc, prim::AbsOp::create(b, loc, x));
  Value negative = prim::CompareOp::create(
      b, loc, prim::ComparisonPredicate::LT, x, splat(type, 0));
  return prim::WhereOp::create(b, loc, negative,
                               prim::NegOp::create(b, loc, floor), floor);
}

Value Decomposer::anyOrAll(Value v, prim::ReductionKind kind,
                           ArrayRef<int64_t> dims, bool keepdim) {
  RankedTensorType type = resultType();
  Value bits = convert(truthy(v), b.getI32Type());
  Value r = reduce(kind, bits, dims, keepdim, type.clone(b.getI32Type()));
  // Over no elements the maximum is the type's lowest value (any: false,
  // so `> 0`, not `!= 0`) and the minimum its highest (all: true).
  if (kind == prim::ReductionKind::Max)
    return prim::CompareOp::create(b, loc, prim::ComparisonPredicate::GT, r,
                                   splat(typeOf(r), 0));
  return truthy(r);
}
