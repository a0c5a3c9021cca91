//===- Reductions.cpp - reductions and products -----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for ATen's reductions (sums, means, extrema, variances,
// arg-extrema), softmax and layer norm, and the matrix products (mm, bmm,
// matmul, addmm, linear) as prim.dot_general.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

std::optional<Decomposer::Result> Decomposer::reductions(StringRef target) {
  auto one = [](FailureOr<Value> v) -> Result {
    if (failed(v))
      return failure();
    return SmallVector<Value>{*v};
  };
  auto [base, overload] = target.split('.');

  // Reductions.
  if (target == "aten::sum.dim_IntList" || target == "aten::sum" ||
      target == "aten::mean.dim" || target == "aten::mean" ||
      target == "aten::amax" || target == "aten::amin" ||
      target == "aten::prod" || target == "aten::prod.dim_int") {
    RankedTensorType type = resultType();
    Value x = convert(operands[0], type.getElementType());
    SmallVector<int64_t> dims = intListArg("dim").value_or(SmallVector<int64_t>{});
    bool keepdim = boolArg("keepdim", false);
    prim::ReductionKind kind = prim::ReductionKind::Sum;
    if (base == "aten::amax")
      kind = prim::ReductionKind::Max;
    else if (base == "aten::amin")
      kind = prim::ReductionKind::Min;
    else if (base == "aten::prod")
      kind = prim::ReductionKind::Prod;
    Value r = reduce(kind, x, dims, keepdim, type);
    if (base == "aten::mean") {
      int64_t count = staticNumElements(typeOf(x)) /
                      std::max<int64_t>(staticNumElements(type), 1);
      r = prim::DivOp::create(b, loc, r, splat(type, count));
    }
    return one(r);
  }
  if (target == "aten::var.correction" || target == "aten::std.correction" ||
      target == "aten::var_mean.correction") {
    // sum((x - mean)^2) / max(count - correction, 0), its root for std.
    RankedTensorType type = resultType();
    Value x = convert(operands[0], type.getElementType());
    RankedTensorType xType = typeOf(x);
    SmallVector<int64_t> dims = intListArg("dim").value_or(SmallVector<int64_t>{});
    if (dims.empty())
      for (int64_t d = 0; d < xType.getRank(); ++d)
        dims.push_back(d);
    SmallVector<int64_t> kept(xType.getShape());
    for (int64_t d : dims) {
      int64_t dim = normalizeDim(d, std::max<int64_t>(xType.getRank(), 1));
      if (dim >= 0 && dim < xType.getRank())
        kept[dim] = 1;
    }
    RankedTensorType keptType = xType.clone(kept);
    int64_t count = xType.getNumElements() /
                    std::max<int64_t>(keptType.getNumElements(), 1);
    Value mean = prim::DivOp::create(
        b, loc, reduce(prim::ReductionKind::Sum, x, dims, true, keptType),
        splat(keptType, count));
    Value centered =
        prim::SubOp::create(b, loc, x, broadcast(mean, xType.getShape()));
    Value sq = prim::MulOp::create(b, loc, centered, centered);
    Value var = prim::DivOp::create(
        b, loc,
        reduce(prim::ReductionKind::Sum, sq, dims, boolArg("keepdim", false),
               type),
        // Eager divides by max(count - correction, 0): NaN (or inf) where
        // no more elements than the correction, not a negative divisor's
        // -0 of no elements.
        splat(type, std::max(count - floatArg("correction", 1), 0.0)));
    if (base == "aten::std")
      var = prim::SqrtOp::create(b, loc, var);
    if (base == "aten::var_mean")
      return SmallVector<Value>{var, reshape(mean, resultType(1).getShape())};
    return one(var);
  }
  if (target == "aten::leaky_relu") {
    RankedTensorType type = resultType();
    Value x = coerce(operands[0], type);
    Value positive = prim::CompareOp::create(b, loc, P::GT, x, splat(type, 0));
    Value scaled = prim::MulOp::create(
        b, loc, x, splat(type, floatArg("negative_slope", 0.01)));
    return one(prim::WhereOp::create(b, loc, positive, x, scaled).getResult());
  }
  if (target == "aten::clamp.Tensor") {
    // Either bound may be absent; NaN propagates through both.
    RankedTensorType type = resultType();
    ArrayRef<int32_t> sizes;
    if (auto attr = op.getTensorArgSizes())
      sizes = *attr;
    Value x = coerce(operands[0], type);
    unsigned next = 1;
    if (sizes.size() > 1 ? sizes[1] == 1 : operands.size() > 1)
      x = prim::MaximumOp::create(b, loc, x, coerce(operands[next++], type));
    if (sizes.size() > 2 ? sizes[2] == 1 : operands.size() > next)
      x = prim::MinimumOp::create(b, loc, x, coerce(operands[next++], type));
    return one(x);
  }
  if (target == "aten::max.dim" || target == "aten::min.dim") {
    Value x = operands[0];
    int64_t dim = normalizeDim(intArg("dim", 0), typeOf(x).getRank());
    bool keepdim = boolArg("keepdim", false);
    bool isMax = base == "aten::max";
    Value values = reduce(isMax ? prim::ReductionKind::Max
                                : prim::ReductionKind::Min,
                          x, {dim}, keepdim, resultType(0));
    Value indices = argExtreme(x, dim, isMax);
    if (keepdim)
      indices = reshape(indices, resultType(1).getShape());
    return SmallVector<Value>{values, indices};
  }
  if (target == "aten::max" || target == "aten::min") {
    // The extreme of all elements (NaN propagates).
    if (typeOf(operands[0]).getNumElements() == 0)
      return fail("max/min of an empty tensor is an error in eager");
    return one(reduce(target == "aten::max" ? prim::ReductionKind::Max
                                            : prim::ReductionKind::Min,
                      convert(operands[0], resultType().getElementType()),
                      {}, false, resultType()));
  }
  if (target == "aten::argmax" || target == "aten::argmin") {
    RankedTensorType type = resultType();
    Value x = operands[0];
    std::optional<SmallVector<int64_t>> dims = intListArg("dim");
    int64_t dim = 0;
    if (!dims || dims->empty() || typeOf(x).getRank() == 0)
      x = reshape(x, {typeOf(x).getNumElements()});
    else
      dim = normalizeDim((*dims)[0], typeOf(x).getRank());
    if (typeOf(x).getDimSize(dim) == 0)
      return fail("argmax/argmin of an empty dimension is an error in eager");
    return one(reshape(argExtreme(x, dim, base == "aten::argmax"),
                       type.getShape()));
  }
  if (target == "aten::_softmax" || target == "aten::_log_softmax")
    return one(softmax(operands[0], intArg("dim", -1), resultType(),
                       base == "aten::_log_softmax"));
  if (target == "aten::native_layer_norm") {
    // Half-precision rows are normalized in f32, rounded once at the end.
    RankedTensorType outType = resultType(0);
    RankedTensorType type =
        outType.clone(opmathType(outType.getElementType()));
    Value x = convert(operands[0], type.getElementType());
    SmallVector<int64_t> normShape = *intListArg("normalized_shape");
    auto [mean, rstd] =
        meanAndRstd(x, normShape.size(), floatArg("eps", 1e-5));
    Value y = prim::MulOp::create(
        b, loc,
        prim::SubOp::create(b, loc, x, broadcast(mean, type.getShape())),
        broadcast(rstd, type.getShape()));
    // Operands: input, then weight and bias when present.
    ArrayRef<int32_t> sizes;
    if (auto attr = op.getTensorArgSizes())
      sizes = *attr;
    bool hasWeight = sizes.empty() ? operands.size() > 1 : sizes[1] == 1;
    bool hasBias = sizes.empty() ? operands.size() > 2 : sizes[2] == 1;
    unsigned next = 1;
    if (hasWeight)
      y = prim::MulOp::create(b, loc, y, coerce(operands[next++], type));
    if (hasBias)
      y = prim::AddOp::create(b, loc, y, coerce(operands[next++], type));
    return SmallVector<Value>{coerce(y, outType), coerce(mean, resultType(1)),
                              coerce(rstd, resultType(2))};
  }

  // Matrix products.
  if (target == "aten::mm" || target == "aten::bmm") {
    RankedTensorType type = resultType();
    return one(matmul(convert(operands[0], type.getElementType()),
                      convert(operands[1], type.getElementType())));
  }
  if (target == "aten::matmul") {
    // PyTorch decomposes matmul; the backend writes it for an n-d by 2-d
    // product whose rows include the symbolic size (a Linear on a 3-d
    // input: docs/DynamicShapes.md), which one GEMM computes.
    RankedTensorType type = resultType();
    RankedTensorType lt = typeOf(operands[0]), rt = typeOf(operands[1]);
    int64_t rank = lt.getRank();
    if (rank < 3 || rt.getRank() != 2 ||
        !isa<FloatType>(type.getElementType()))
      return fail("aten::matmul is taken as an n-d by 2-d float product "
                  "only, not " + quoted(lt) + " by " + quoted(rt));
    int64_t inner = lt.getDimSize(rank - 1), rows = rt.getDimSize(0);
    if (!ShapedType::isDynamic(inner) && !ShapedType::isDynamic(rows) &&
        inner != rows)
      return fail("cannot multiply " + quoted(lt) + " by " + quoted(rt));
    return one(prim::DotOp::create(
        b, loc, convert(operands[0], type.getElementType()),
        convert(operands[1], type.getElementType()), ArrayRef<int64_t>{},
        ArrayRef<int64_t>{}, ArrayRef<int64_t>{rank - 1},
        ArrayRef<int64_t>{0}).getResult());
  }
  if (target == "aten::addmm") {
    RankedTensorType type = resultType();
    Value product = matmul(convert(operands[1], type.getElementType()),
                           convert(operands[2], type.getElementType()));
    double alpha = floatArg("alpha", 1), beta = floatArg("beta", 1);
    if (alpha != 1)
      product = prim::MulOp::create(b, loc, product, splat(type, alpha));
    if (beta == 0)
      return one(product);
    Value bias = coerce(operands[0], type);
    if (beta != 1)
      bias = prim::MulOp::create(b, loc, bias, splat(type, beta));
    return one(prim::AddOp::create(b, loc, product, bias).getResult());
  }
  return std::nullopt;
}
