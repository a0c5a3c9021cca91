//===- Elementwise.cpp - elementwise ops ------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for ATen's elementwise ops: unary and binary math (with
// PyTorch's type promotion and its opmath widening of half precision),
// comparisons, conversions and copies, logic and bit operations, and the
// float representation (frexp, ldexp, nextafter, ...).
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

std::optional<Decomposer::Result> Decomposer::elementwise(StringRef target) {
  auto one = [](FailureOr<Value> v) -> Result {
    if (failed(v))
      return failure();
    return SmallVector<Value>{*v};
  };
  auto [base, overload] = target.split('.');

  // Elementwise unary math.
  if (target == "aten::sin")
    return one(unary<prim::SinOp>());
  if (target == "aten::cos")
    return one(unary<prim::CosOp>());
  if (target == "aten::tanh")
    return one(unary<prim::TanhOp>());
  if (target == "aten::exp")
    return one(unary<prim::ExpOp>());
  if (target == "aten::log")
    return one(unary<prim::LogOp>());
  if (target == "aten::sqrt")
    return one(unary<prim::SqrtOp>());
  if (target == "aten::rsqrt")
    return one(unary<prim::RsqrtOp>());
  if (target == "aten::erf")
    return one(unary<prim::ErfOp>());
  if (target == "aten::neg")
    return one(unary<prim::NegOp>());
  if (target == "aten::abs")
    return one(unary<prim::AbsOp>());
  if (target == "aten::sign" || target == "aten::sgn")
    return one(unary<prim::SignOp>());
  if (target == "aten::expm1")
    return one(unary<prim::Expm1Op>());
  if (target == "aten::log1p")
    return one(unary<prim::Log1pOp>());
  if (target == "aten::tan")
    return one(unary<prim::TanOp>());
  if (target == "aten::asin")
    return one(unary<prim::AsinOp>());
  if (target == "aten::acos")
    return one(unary<prim::AcosOp>());
  if (target == "aten::atan")
    return one(unary<prim::AtanOp>());
  if (target == "aten::sinh")
    return one(unary<prim::SinhOp>());
  if (target == "aten::cosh")
    return one(unary<prim::CoshOp>());
  if (target == "aten::floor")
    return one(rounding<prim::FloorOp>());
  if (target == "aten::ceil")
    return one(rounding<prim::CeilOp>());
  if (target == "aten::round")
    return one(rounding<prim::RoundOp>());
  if (target == "aten::trunc") {
    // Toward zero: floor of the magnitude, with the sign back.
    RankedTensorType type = resultType();
    Value x = coerce(operands[0], type);
    if (!isa<FloatType>(type.getElementType()))
      return one(x);
    return one(truncate(x));
  }
  if (target == "aten::reciprocal") {
    RankedTensorType type = resultType();
    return one(prim::DivOp::create(b, loc, splat(type, 1),
                                   coerce(operands[0], type))
                   .getResult());
  }
  if (target == "aten::log2" || target == "aten::log10") {
    // Half precision in f32, rounded once: log, then the scale, each
    // rounded to f16, were 3 ulp off (log2 of 9.875).
    RankedTensorType type = resultType();
    double scale = target == "aten::log2" ? 1.0 / std::log(2.0)
                                          : 1.0 / std::log(10.0);
    Value x = widenHalf(coerce(operands[0], type));
    return one(coerce(prim::MulOp::create(b, loc,
                                          prim::LogOp::create(b, loc, x),
                                          splat(typeOf(x), scale)),
                      type));
  }
  if (target == "aten::relu") {
    RankedTensorType type = resultType();
    return one(prim::MaximumOp::create(b, loc, coerce(operands[0], type),
                                       splat(type, 0))
                   .getResult());
  }
  if (target == "aten::clamp") {
    // Either bound may be absent; NaN propagates through both.
    RankedTensorType type = resultType();
    Value x = coerce(operands[0], type);
    if (arg("min"))
      x = prim::MaximumOp::create(b, loc, x, splat(type, floatArg("min", 0)));
    if (arg("max"))
      x = prim::MinimumOp::create(b, loc, x, splat(type, floatArg("max", 0)));
    return one(x);
  }
  if (target == "aten::sigmoid") {
    RankedTensorType type = resultType();
    Value x = widenHalf(coerce(operands[0], type));
    RankedTensorType wide = typeOf(x);
    Value e = prim::ExpOp::create(b, loc, prim::NegOp::create(b, loc, x));
    return one(coerce(prim::DivOp::create(
                          b, loc, splat(wide, 1),
                          prim::AddOp::create(b, loc, splat(wide, 1), e)),
                      type));
  }
  if (target == "aten::gelu") {
    Attribute approx = arg("approximate");
    bool useTanh = approx && cast<StringAttr>(approx).getValue() == "tanh";
    RankedTensorType type = resultType();
    return one(
        coerce(gelu(widenHalf(coerce(operands[0], type)), useTanh), type));
  }

  // Elementwise binary arithmetic, with tensors or scalars.
  if (target == "aten::add.Tensor" || target == "aten::add.Scalar")
    return one(binary<prim::AddOp>(/*hasAlpha=*/true));
  if (target == "aten::sub.Tensor" || target == "aten::sub.Scalar")
    return one(binary<prim::SubOp>(/*hasAlpha=*/true));
  if (target == "aten::mul.Tensor" || target == "aten::mul.Scalar")
    return one(binary<prim::MulOp>());
  if (target == "aten::div.Tensor" || target == "aten::div.Scalar" ||
      target == "aten::div.Tensor_mode" || target == "aten::div.Scalar_mode")
    return one(divide());
  if (target == "aten::maximum")
    return one(binary<prim::MaximumOp>());
  if (target == "aten::minimum")
    return one(binary<prim::MinimumOp>());
  if (target == "aten::pow.Tensor_Scalar") {
    RankedTensorType type = resultType();
    Value x = coerce(operands[0], type);
    double e = floatArg("exponent", 1);
    // Small integral exponents are products: exact where pow is, and cheap.
    if (e == 1)
      return one(x);
    if (e == 2)
      return one(prim::MulOp::create(b, loc, x, x).getResult());
    if (e == 3)
      return one(prim::MulOp::create(b, loc,
                                     prim::MulOp::create(b, loc, x, x), x)
                     .getResult());
    if (e == 0.5 && isa<FloatType>(type.getElementType()))
      return one(prim::SqrtOp::create(b, loc, x).getResult());
    return one(prim::PowOp::create(b, loc, x, splat(type, e)).getResult());
  }
  if (target == "aten::pow.Tensor_Tensor")
    return one(binary<prim::PowOp>());
  if (target == "aten::pow.Scalar") {
    // A number to the power of a tensor (logspace's base ** steps).
    RankedTensorType type = resultType();
    return one(prim::PowOp::create(b, loc, splat(type, floatArg("self", 1)),
                                   coerce(operands[0], type))
                   .getResult());
  }
  if (target == "aten::where.self") {
    RankedTensorType type = resultType();
    Value cond = broadcast(operands[0], type.getShape());
    return one(prim::WhereOp::create(b, loc, cond, coerce(operands[1], type),
                                     coerce(operands[2], type))
                   .getResult());
  }

  if (target == "aten::gather") {
    // out[..., j, ...] = self[..., index[..., j, ...], ...] along `dim`: a
    // gather from self's elements, flattened, at the linear positions the
    // index's coordinates (with `dim`'s replaced by the index) make. One
    // read per output element (cross-entropy's nll_loss takes one element
    // of each row of logits), and its gradient a scatter-add. The other
    // dimensions of index must equal self's.
    Value self = operands[0], index = operands[1];
    RankedTensorType selfType = typeOf(self), indexType = typeOf(index);
    int64_t rank = selfType.getRank();
    int64_t dim = normalizeDim(intArg("dim", 0), rank);
    if (indexType.getRank() != rank || dim < 0 || dim >= rank)
      return fail("index must have self's rank");
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && indexType.getDimSize(d) != selfType.getDimSize(d))
        return fail("an index smaller than self outside `dim` is not "
                    "supported yet");
    if (boolArg("sparse_grad", false))
      return fail("sparse_grad is not supported");
    if (!selfType.hasStaticShape() || !indexType.hasStaticShape())
      return fail("a gather with symbolic sizes is not supported yet");
    Type indexElt = indexType.getElementType();
    auto indexOfShape = RankedTensorType::get(indexType.getShape(), indexElt);
    // Row-major strides of self; the index's own elements are clamped into
    // [0, size) by prim.gather's kernels, as its other uses are.
    Value linear;
    int64_t stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      Value coordinate =
          d == dim ? index
                   : prim::IotaOp::create(b, loc, indexType.getShape(), d,
                                          indexElt)
                         .getResult();
      Value term = stride == 1 ? coordinate
                               : prim::MulOp::create(
                                     b, loc, coordinate,
                                     splat(indexOfShape,
                                           static_cast<double>(stride)))
                                     .getResult();
      linear = linear ? prim::AddOp::create(b, loc, linear, term).getResult()
                      : term;
      stride *= selfType.getDimSize(d);
    }
    Value flat = reshape(self, {selfType.getNumElements()});
    return one(prim::GatherOp::create(b, loc, flat, linear, 0).getResult());
  }

  // Comparisons.
  static const llvm::StringMap<P> comparisons = {
      {"aten::eq", P::EQ}, {"aten::ne", P::NE}, {"aten::lt", P::LT},
      {"aten::le", P::LE}, {"aten::gt", P::GT}, {"aten::ge", P::GE}};
  if (auto it = comparisons.find(base);
      it != comparisons.end() && (overload == "Tensor" || overload == "Scalar"))
    return one(compare(it->second));

  // Dtype conversion and copies.
  if (target == "aten::_to_copy" || target == "aten::clone" ||
      target == "aten::alias" || target == "aten::lift_fresh_copy")
    return one(coerce(operands[0], resultType()));
  // The functional form of `self.copy_(src)`: src, broadcast to self's
  // shape, in self's dtype.
  if (target == "aten::copy") {
    if (operands.size() != 2)
      return fail("expected self and src");
    return one(coerce(operands[1], resultType()));
  }

  // Classification, logic and bits.
  if (target == "aten::isnan")
    return one(isNan(operands[0]));
  if (target == "aten::isinf") {
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    if (!isa<FloatType>(type.getElementType()))
      return one(splat(resultType(), 0));
    return one(prim::CompareOp::create(
                   b, loc, P::EQ, prim::AbsOp::create(b, loc, x),
                   splat(type, std::numeric_limits<double>::infinity()))
                   .getResult());
  }
  if (target == "aten::logical_not")
    return one(coerce(prim::CompareOp::create(b, loc, P::EQ, operands[0],
                                              splat(typeOf(operands[0]), 0)),
                      resultType()));
  if (target == "aten::logical_and" || target == "aten::logical_or" ||
      target == "aten::logical_xor") {
    if (operands.size() != 2)
      return fail("expected two tensors");
    Value r = target == "aten::logical_and"
                  ? logical<prim::BitwiseAndOp>(operands[0], operands[1])
              : target == "aten::logical_or"
                  ? logical<prim::BitwiseOrOp>(operands[0], operands[1])
                  : logical<prim::BitwiseXorOp>(operands[0], operands[1]);
    return one(coerce(r, resultType()));
  }
  if (base == "aten::bitwise_not" || base == "aten::bitwise_and" ||
      base == "aten::bitwise_or" || base == "aten::bitwise_xor") {
    RankedTensorType type = resultType();
    if (isa<FloatType>(type.getElementType()))
      return fail("bitwise ops of " + quoted(type));
    Value lhs = coerce(operands[0], type);
    if (base == "aten::bitwise_not")
      return one(prim::BitwiseNotOp::create(b, loc, lhs).getResult());
    Value rhs = rhsOperand(type);
    if (base == "aten::bitwise_and")
      return one(prim::BitwiseAndOp::create(b, loc, lhs, rhs).getResult());
    if (base == "aten::bitwise_or")
      return one(prim::BitwiseOrOp::create(b, loc, lhs, rhs).getResult());
    return one(prim::BitwiseXorOp::create(b, loc, lhs, rhs).getResult());
  }
  if (target == "aten::any" || target == "aten::any.dim" ||
      target == "aten::any.dims" || target == "aten::all" ||
      target == "aten::all.dim" || target == "aten::all.dims") {
    SmallVector<int64_t> dims =
        intListArg("dim").value_or(SmallVector<int64_t>{});
    return one(anyOrAll(operands[0],
                        base == "aten::any" ? prim::ReductionKind::Max
                                            : prim::ReductionKind::Min,
                        dims, boolArg("keepdim", false)));
  }

  if (base == "aten::clamp_min" || base == "aten::clamp_max") {
    // One bound, a number or a tensor (broadcast); NaN propagates.
    RankedTensorType type = resultType();
    Value x = coerce(operands[0], type);
    Value bound = operands.size() > 1
                      ? coerce(operands[1], type)
                      : splat(type, floatArg(base == "aten::clamp_min" ? "min"
                                                                       : "max",
                                             0));
    if (base == "aten::clamp_min")
      return one(prim::MaximumOp::create(b, loc, x, bound).getResult());
    return one(prim::MinimumOp::create(b, loc, x, bound).getResult());
  }
  // More elementwise math.
  if (base == "aten::fmod" || base == "aten::remainder") {
    RankedTensorType type = resultType();
    Value lhs = coerce(operands[0], type), rhs = rhsOperand(type);
    return one(base == "aten::fmod" ? fmod(lhs, rhs) : remainder(lhs, rhs));
  }
  if (target == "aten::fmax" || target == "aten::fmin") {
    // NaN only where both are NaN.
    RankedTensorType type = resultType();
    Value lhs = coerce(operands[0], type), rhs = coerce(operands[1], type);
    Value r = target == "aten::fmax"
                  ? prim::MaximumOp::create(b, loc, lhs, rhs).getResult()
                  : prim::MinimumOp::create(b, loc, lhs, rhs).getResult();
    if (!isa<FloatType>(type.getElementType()))
      return one(r);
    r = prim::WhereOp::create(b, loc, isNan(rhs), lhs, r);
    return one(prim::WhereOp::create(b, loc, isNan(lhs), rhs, r).getResult());
  }
  if (target == "aten::hypot") {
    // max * sqrt(1 + (min / max)^2): no overflow of the squares; 0 where
    // both are 0, inf where either is infinite (even with a NaN). Half
    // precision computes in f32.
    RankedTensorType outType = resultType();
    if (!isa<FloatType>(outType.getElementType()))
      return fail("hypot of " + quoted(outType));
    RankedTensorType type =
        outType.clone(opmathType(outType.getElementType()));
    auto one = [&](Value v) -> FailureOr<SmallVector<Value>> {
      return SmallVector<Value>{convert(v, outType.getElementType())};
    };
    return one(hypot(coerce(operands[0], type), coerce(operands[1], type)));
  }
  // The float representation, through the bits.
  if (target == "aten::signbit")
    return one(signBit(operands[0]));
  if (target == "aten::copysign.Tensor" || target == "aten::copysign.Scalar") {
    // |self| with other's sign bit (NaN and -0.0 included).
    RankedTensorType type = resultType();
    Value magnitude = prim::AbsOp::create(b, loc, coerce(operands[0], type));
    Value sign = signBit(rhsOperand(type));
    return one(sel(sign, prim::NegOp::create(b, loc, magnitude), magnitude));
  }
  if (target == "aten::nextafter") {
    // The next representable value from self toward other: the bits one
    // step away from zero or toward it; from 0 the smallest subnormal with
    // other's sign; other itself when equal; NaN when either is.
    RankedTensorType type = resultType();
    if (!isa<FloatType>(type.getElementType()))
      return fail("nextafter of " + quoted(type));
    Value x = coerce(operands[0], type), y = coerce(operands[1], type);
    RankedTensorType bitsType = type.clone(
        b.getIntegerType(type.getElementType().getIntOrFloatBitWidth()));
    Value bits = prim::BitcastOp::create(b, loc, x,
                                         TypeAttr::get(bitsType.getElementType()));
    Value zero = splat(type, 0);
    Value away = cmp(P::EQ, cmp(P::GT, y, x), cmp(P::GT, x, zero));
    Value stepped = sel(away, add(bits, splat(bitsType, 1)),
                        sub(bits, splat(bitsType, 1)));
    Value r = prim::BitcastOp::create(b, loc, stepped,
                                      TypeAttr::get(type.getElementType()));
    Value tiny = prim::BitcastOp::create(
        b, loc, splat(bitsType, 1), TypeAttr::get(type.getElementType()));
    r = sel(cmp(P::EQ, x, zero),
            sel(signBit(y), prim::NegOp::create(b, loc, tiny), tiny), r);
    r = sel(cmp(P::EQ, x, y), y, r);
    return one(sel(orI(isNan(x), isNan(y)), add(x, y), r));
  }
  if (target == "aten::frexp.Tensor") {
    // x = mantissa * 2^exponent, |mantissa| in [0.5, 1): the exponent from
    // log2 in f64, corrected by one either way where log2 rounded; zeros,
    // infinities and NaN keep x with exponent 0.
    RankedTensorType type = resultType(0), expType = resultType(1);
    if (!isa<FloatType>(type.getElementType()))
      return fail("frexp of " + quoted(type));
    RankedTensorType f64 = type.clone(b.getF64Type());
    Value x = coerce(operands[0], f64);
    Value a = prim::AbsOp::create(b, loc, x);
    Value e = add(prim::FloorOp::create(
                      b, loc, div(prim::LogOp::create(b, loc, a),
                                  splat(f64, M_LN2))),
                  splat(f64, 1));
    auto scaleBy = [&](Value exponent) -> Value {
      return prim::PowOp::create(b, loc, splat(f64, 2),
                                 prim::NegOp::create(b, loc, exponent));
    };
    Value m = mul(x, scaleBy(e));
    Value am = prim::AbsOp::create(b, loc, m);
    Value high = cmp(P::GE, am, splat(f64, 1));
    Value low = cmp(P::LT, am, splat(f64, 0.5));
    e = sel(high, add(e, splat(f64, 1)), sel(low, sub(e, splat(f64, 1)), e));
    m = mul(x, scaleBy(e));
    Value special = orI(orI(cmp(P::EQ, x, splat(f64, 0)), isNan(x)),
                        cmp(P::EQ, a, splat(f64,
                                            std::numeric_limits<double>::infinity())));
    m = sel(special, x, m);
    e = sel(special, splat(f64, 0), e);
    // Half precision through f32 (no f64-to-bf16 routine on the CPU); the
    // mantissa is exact in either.
    if (type.getElementType().getIntOrFloatBitWidth() < 32)
      m = convert(m, b.getF32Type());
    return SmallVector<Value>{convert(m, type.getElementType()),
                              convert(e, expType.getElementType())};
  }
  if (target == "aten::exp2") {
    RankedTensorType type = resultType();
    return one(prim::PowOp::create(b, loc, splat(type, 2),
                                   coerce(operands[0], type))
                   .getResult());
  }
  if (target == "aten::asinh" || target == "aten::acosh" ||
      target == "aten::atanh") {
    // Through log1p, accurate near 0 (asinh, atanh) and 1 (acosh); for
    // |x| > 2^28 asinh and acosh are log(2|x|) (x^2 would overflow).
    // Half precision computes in f32 and rounds once, as eager does.
    RankedTensorType outType = resultType();
    RankedTensorType type =
        outType.clone(opmathType(outType.getElementType()));
    auto one = [&](Value v) -> FailureOr<SmallVector<Value>> {
      return SmallVector<Value>{convert(v, outType.getElementType())};
    };
    Value x = coerce(operands[0], type);
    Value one_ = splat(type, 1);
    if (target == "aten::atanh") {
      // 0.5 * log1p(2s / (1 - s)) of s = |x| (-0 kept), negated for x < 0:
      // for x near -1 the ratio is near -1, and log1p(-1 + e) amplified
      // the ratio's rounding (1e-5 relative at x = -0.9997 in f32).
      Value negative =
          prim::CompareOp::create(b, loc, P::LT, x, splat(type, 0));
      Value s = sel(negative, prim::NegOp::create(b, loc, x), x);
      Value ratio = prim::DivOp::create(
          b, loc, prim::AddOp::create(b, loc, s, s),
          prim::SubOp::create(b, loc, one_, s));
      Value r = prim::MulOp::create(b, loc, splat(type, 0.5),
                                    prim::Log1pOp::create(b, loc, ratio));
      return one(sel(negative, prim::NegOp::create(b, loc, r), r));
    }
    Value ax = target == "aten::asinh" ? prim::AbsOp::create(b, loc, x) : x;
    Value small;
    if (target == "aten::asinh") {
      Value sq = prim::MulOp::create(b, loc, ax, ax);
      Value root = prim::SqrtOp::create(b, loc,
                                        prim::AddOp::create(b, loc, one_, sq));
      small = prim::Log1pOp::create(
          b, loc,
          prim::AddOp::create(
              b, loc, ax,
              prim::DivOp::create(b, loc, sq,
                                  prim::AddOp::create(b, loc, one_, root))));
    } else {
      Value xm1 = prim::SubOp::create(b, loc, x, one_);
      Value root = prim::SqrtOp::create(
          b, loc,
          prim::MulOp::create(b, loc, xm1,
                              prim::AddOp::create(b, loc, x, one_)));
      small = prim::Log1pOp::create(b, loc,
                                    prim::AddOp::create(b, loc, xm1, root));
    }
    Value large = prim::AddOp::create(b, loc, prim::LogOp::create(b, loc, ax),
                                      splat(type, M_LN2));
    Value big = prim::CompareOp::create(b, loc, P::GT, ax,
                                        splat(type, 268435456.0));
    Value r = prim::WhereOp::create(b, loc, big, large, small);
    if (target == "aten::asinh")
      r = prim::WhereOp::create(
          b, loc, prim::CompareOp::create(b, loc, P::LT, x, splat(type, 0)),
          prim::NegOp::create(b, loc, r), r);
    return one(r);
  }
  if (target == "aten::round.decimals") {
    // Eager scales by 10^|decimals|, rounds half to even, scales back; half
    // types in f32, rounded once (x * 1000 rounded to bf16 first was off by
    // a bf16 step).
    RankedTensorType type = resultType();
    Value x = coerce(operands[0], type);
    if (!isa<FloatType>(type.getElementType()))
      return one(x);
    x = widenHalf(x);
    RankedTensorType wide = typeOf(x);
    int64_t decimals = intArg("decimals", 0);
    Value scale = splat(wide, std::pow(10.0, std::abs(decimals)));
    Value r;
    if (decimals >= 0)
      r = prim::DivOp::create(
          b, loc,
          prim::RoundOp::create(b, loc, prim::MulOp::create(b, loc, x, scale)),
          scale);
    else
      r = prim::MulOp::create(
          b, loc,
          prim::RoundOp::create(b, loc, prim::DivOp::create(b, loc, x, scale)),
          scale);
    return one(coerce(r, type));
  }
  return std::nullopt;
}
