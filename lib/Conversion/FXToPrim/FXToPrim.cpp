//===- FXToPrim.cpp - decompose ATen ops into prim ops ----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Decomposes the ATen ops of `fx.graph`s into the closed `prim` op set. The
// importer records each node's result type as PyTorch computed it (its fake
// tensor), so every decomposition has a known target: operands are
// broadcast to the result shape and converted to the computation dtype
// explicitly, which is how PyTorch's broadcasting and type promotion become
// visible in the IR.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "Decomposer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "tc/Conversion/FXToPrim/Decompositions.h"
#include "tc/Dialect/FX/IR/FXOps.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"
#include "tc/Dialect/Prim/Transforms/Passes.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace mlir::tc {
#define GEN_PASS_DEF_CONVERTFXTOPRIMPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;
using namespace mlir::tc;

using namespace mlir::tc::decompose;

/// The table entry of `target` (Decompositions.def), or null: an op tc
/// does not decompose.
static const decompositions::Decomposition *lookup(StringRef target) {
  static const llvm::StringMap<const decompositions::Decomposition *> table =
      [] {
        llvm::StringMap<const decompositions::Decomposition *> map;
        for (const decompositions::Decomposition &entry :
             decompositions::kDecompositions)
          map[entry.op] = &entry;
        return map;
      }();
  return table.lookup(target);
}

/// Whether the decomposition of `target` handles a symbolic leading
/// dimension (a `?` that stands for the graph's one symbolic size, see
/// docs/DynamicShapes.md): elementwise math, matrix products with a
/// symbolic M, and reductions, normalizations and views over the static
/// dimensions (kSymbolic in Decompositions.def). Every other op needs
/// static shapes.
static bool admitsSymbolicSize(StringRef target) {
  const decompositions::Decomposition *entry = lookup(target);
  return entry && (entry->flags & decompositions::kSymbolic);
}

LogicalResult Decomposer::checkSymbolicSizes(StringRef target) {
  bool symbolic = false;
  auto check = [&](Value v) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.hasStaticShape())
      return success();
    symbolic = true;
    for (int64_t d = 1; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        return fail("a symbolic size is supported as the leading dimension "
                    "only, not in " + quoted(type));
    return success();
  };
  for (Value v : op.getResults())
    if (failed(check(v)))
      return failure();
  for (Value v : operands)
    if (failed(check(v)))
      return failure();
  if (symbolic && !admitsSymbolicSize(target))
    return fail("symbolic sizes are not supported by this op yet");
  return success();
}

FailureOr<SmallVector<Value>> Decomposer::dispatch() {
  StringRef target = op.getTarget();
  auto one = [](FailureOr<Value> v) -> FailureOr<SmallVector<Value>> {
    if (failed(v))
      return failure();
    return SmallVector<Value>{*v};
  };
  if (failed(checkSymbolicSizes(target)))
    return failure();

  if (std::optional<Result> r = complexOrFFT(target))
    return *r;
  // The table is the list of what tc decomposes (tc.support offers the
  // partitioner nothing else): an op missing from it is not decomposed,
  // even where a family below would.
  if (!lookup(target))
    return fail("no decomposition into prim ops");

  using P = prim::ComparisonPredicate;
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
  auto [base, overload] = target.split('.');
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

  // Shape ops: the result type says what PyTorch computed.
  if (target == "aten::view" || target == "aten::_unsafe_view" ||
      target == "aten::reshape" || target == "aten::unsqueeze" ||
      target == "aten::squeeze.dim" || target == "aten::squeeze.dims" ||
      target == "aten::squeeze" || target == "aten::flatten.using_ints")
    return one(reshapeToResult(operands[0]));
  if (target == "aten::expand")
    return one(broadcast(operands[0], resultType().getShape()));
  if (target == "aten::permute")
    return one(permute(operands[0], *intListArg("dims")));
  if (target == "aten::t" || target == "aten::transpose.int") {
    int64_t rank = typeOf(operands[0]).getRank();
    SmallVector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    if (rank >= 2) {
      int64_t d0 = normalizeDim(intArg("dim0", 0), rank);
      int64_t d1 = normalizeDim(intArg("dim1", 1), rank);
      std::swap(perm[d0], perm[d1]);
    }
    return one(permute(operands[0], perm));
  }
  if (target == "aten::slice.Tensor") {
    RankedTensorType type = typeOf(operands[0]);
    int64_t rank = type.getRank();
    int64_t dim = normalizeDim(intArg("dim", 0), rank);
    int64_t size = type.getDimSize(dim);
    if (ShapedType::isDynamic(size)) {
      // Over the symbolic size: only the whole of it (`x[:, i]` slices
      // dimension 0 from 0 to the largest index), which is no op.
      if (intArg("start", 0) != 0 || intArg("step", 1) != 1 ||
          intArg("end", std::numeric_limits<int64_t>::max()) <
              std::numeric_limits<int32_t>::max())
        return fail("a slice of part of the symbolic size is not "
                    "supported");
      return SmallVector<Value>{operands[0]};
    }
    auto clampIndex = [&](int64_t i) {
      if (i < 0)
        i += size;
      return std::clamp<int64_t>(i, 0, size);
    };
    int64_t start = clampIndex(intArg("start", 0));
    int64_t end = std::max(start, clampIndex(intArg("end", size)));
    SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
        strides(rank, 1);
    starts[dim] = start;
    limits[dim] = end;
    strides[dim] = intArg("step", 1);
    return one(prim::SliceOp::create(b, loc, operands[0], starts, limits,
                                     strides)
                   .getResult());
  }
  if (target == "aten::select.int") {
    RankedTensorType type = typeOf(operands[0]);
    int64_t rank = type.getRank();
    if (rank == 0)
      return fail("select of a 0-d tensor");
    int64_t dim = normalizeDim(intArg("dim", 0), rank);
    int64_t size = type.getDimSize(dim);
    if (ShapedType::isDynamic(size))
      return fail("a select of the symbolic size is not supported");
    int64_t index = intArg("index", 0);
    if (index < 0)
      index += size;
    if (index < 0 || index >= size)
      return fail("index " + Twine(intArg("index", 0)) +
                  " is out of range for dimension " + Twine(dim) +
                  " of size " + Twine(size));
    SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
        strides(rank, 1);
    starts[dim] = index;
    limits[dim] = index + 1;
    Value row = prim::SliceOp::create(b, loc, operands[0], starts, limits,
                                      strides);
    return one(reshapeToResult(row));
  }
  if (target == "aten::split_with_sizes" || target == "aten::split.Tensor") {
    // Consecutive slices along `dim`, each as long as its result (the
    // result types say what PyTorch computed).
    RankedTensorType type = typeOf(operands[0]);
    int64_t rank = type.getRank();
    if (rank == 0)
      return fail("split of a 0-d tensor");
    int64_t dim = normalizeDim(intArg("dim", 0), rank);
    if (type.isDynamicDim(dim))
      return fail("a split of the symbolic size is not supported");
    SmallVector<Value> parts;
    int64_t start = 0;
    for (unsigned i = 0, e = op->getNumResults(); i < e; ++i) {
      int64_t length = resultType(i).getDimSize(dim);
      SmallVector<int64_t> starts(rank, 0), limits(type.getShape()),
          strides(rank, 1);
      starts[dim] = start;
      limits[dim] = start + length;
      if (limits[dim] > type.getDimSize(dim))
        return fail("results longer than dimension " + Twine(dim) +
                    " of size " + Twine(type.getDimSize(dim)));
      parts.push_back(prim::SliceOp::create(b, loc, operands[0], starts,
                                            limits, strides));
      start += length;
    }
    if (start != type.getDimSize(dim))
      return fail("results cover " + Twine(start) + " of dimension " +
                  Twine(dim) + "'s " + Twine(type.getDimSize(dim)));
    return parts;
  }
  if (target == "aten::cat") {
    RankedTensorType type = resultType();
    SmallVector<Value> inputs;
    // Empty inputs add nothing (and PyTorch's legacy 1-d empty tensor has
    // no dimension to concatenate along).
    for (Value v : operands)
      if (typeOf(v).getNumElements() != 0)
        inputs.push_back(convert(v, type.getElementType()));
    if (inputs.empty())
      return one(splat(type, 0));
    int64_t dim = normalizeDim(intArg("dim", 0), type.getRank());
    return one(prim::ConcatenateOp::create(b, loc, inputs, dim).getResult());
  }

  // Creation.
  if (target == "aten::arange" || target == "aten::arange.start" ||
      target == "aten::arange.start_step") {
    // start + i * step, computed in f64 (eager's accumulation type for
    // floating-point ranges; exact for the integer ones tc supports), then
    // converted to the result's dtype.
    RankedTensorType type = resultType();
    if (type.getRank() != 1)
      return fail("expected a 1-d result");
    double start = target == "aten::arange" ? 0 : floatArg("start", 0);
    double step = floatArg("step", 1);
    auto f64 = RankedTensorType::get(type.getShape(), b.getF64Type());
    Value index = prim::IotaOp::create(b, loc, type.getShape(), 0,
                                       b.getI64Type());
    Value value = prim::ConvertOp::create(b, loc, index,
                                          TypeAttr::get(b.getF64Type()));
    value = prim::MulOp::create(b, loc, value, splat(f64, step));
    value = prim::AddOp::create(b, loc, value, splat(f64, start));
    return one(convert(value, type.getElementType()));
  }
  if (target == "aten::full" || target == "aten::scalar_tensor") {
    StringRef valueName = target == "aten::full" ? "fill_value" : "s";
    return one(splat(resultType(), floatArg(valueName, 0)));
  }

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

  if (target == "aten::convolution")
    return convolution();
  if (target == "aten::native_batch_norm" ||
      target == "aten::_native_batch_norm_legit_functional" ||
      target == "aten::_native_batch_norm_legit_no_training")
    return batchNorm(target != "aten::_native_batch_norm_legit_no_training" &&
                     boolArg("training", false));
  if (target == "aten::_batch_norm_with_update_functional")
    return batchNorm(/*training=*/true);
  if (target == "aten::max_pool2d_with_indices")
    return maxPool(2);
  if (target == "aten::max_pool3d_with_indices")
    return maxPool(3);
  if (target == "aten::native_dropout")
    return dropout();
  if (target == "aten::rand") {
    RankedTensorType type = resultType();
    if (!isa<FloatType>(type.getElementType()))
      return fail("random numbers of " + quoted(type) + " are not floats");
    return one(uniform(type));
  }
  if (target == "aten::randn" || target == "aten::randn_like" ||
      target == "aten::uniform" || target == "aten::normal_functional" ||
      target == "aten::exponential" || target == "aten::log_normal" ||
      target == "aten::cauchy" || target == "aten::geometric" ||
      target == "aten::bernoulli.p" || target.starts_with("aten::normal.") ||
      target.starts_with("aten::randint") ||
      target == "aten::rrelu_with_noise_functional")
    return randomOf(target);
  if (target == "aten::embedding")
    return embedding();
  if (target == "aten::constant_pad_nd") {
    // `pad` holds (before, after) pairs from the last dimension backwards;
    // negative amounts crop.
    RankedTensorType type = resultType();
    Value x = convert(operands[0], type.getElementType());
    int64_t rank = typeOf(x).getRank();
    SmallVector<int64_t> pads = intListArg("pad").value_or(
        SmallVector<int64_t>{});
    if (pads.size() % 2 || static_cast<int64_t>(pads.size()) > 2 * rank)
      return fail("pad needs (before, after) pairs for at most " +
                  Twine(rank) + " dimensions");
    SmallVector<int64_t> low(rank, 0), high(rank, 0), interior(rank, 0);
    for (size_t i = 0; i < pads.size() / 2; ++i) {
      low[rank - 1 - i] = pads[2 * i];
      high[rank - 1 - i] = pads[2 * i + 1];
    }
    for (int64_t d = 0; d < rank; ++d)
      if (typeOf(x).getDimSize(d) + low[d] + high[d] != type.getDimSize(d))
        return fail("result " + quoted(type) + " does not match the padding");
    return one(prim::PadOp::create(b, loc, x, low, high, interior,
                                   APFloat(floatArg("value", 0)))
                   .getResult());
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

  // Indexing and layout.
  if (target == "aten::index_select") {
    if (operands.size() != 2)
      return fail("expected self and index");
    RankedTensorType type = resultType();
    Value x = operands[0], index = operands[1];
    int64_t rank = typeOf(x).getRank();
    int64_t dim = normalizeDim(intArg("dim", 0), std::max<int64_t>(rank, 1));
    if (typeOf(index).getRank() > 1)
      return fail("expected a 0-d or 1-d index");
    if (rank == 0) // A 0-d tensor is indexed as one element.
      x = reshape(x, {1});
    if (typeOf(index).getRank() == 0)
      index = reshape(index, {1});
    Value r = prim::GatherOp::create(b, loc, x, index, dim);
    return one(reshape(r, type.getShape()));
  }
  if (target == "aten::flip") {
    // Each flipped dimension is a gather at (size - 1 - i).
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    SmallVector<int64_t> dims =
        intListArg("dims").value_or(SmallVector<int64_t>{});
    llvm::SmallBitVector done(std::max<int64_t>(type.getRank(), 1));
    for (int64_t d : dims) {
      int64_t dim = normalizeDim(d, type.getRank());
      if (dim < 0 || dim >= type.getRank())
        return fail("dimension " + Twine(d) + " is out of range for " +
                    quoted(type));
      if (done.test(dim))
        continue;
      done.set(dim);
      int64_t size = type.getDimSize(dim);
      auto indexType = RankedTensorType::get({size}, b.getI64Type());
      Value reversed = prim::SubOp::create(
          b, loc, splat(indexType, size - 1),
          prim::IotaOp::create(b, loc, ArrayRef<int64_t>{size}, 0,
                               b.getI64Type()));
      x = prim::GatherOp::create(b, loc, x, reversed, dim);
    }
    return one(x);
  }
  if (target == "aten::repeat") {
    // x (padded with leading 1s to the repeats' length) broadcast to
    // (r0, s0, r1, s1, ...), then merged to (r0 * s0, r1 * s1, ...).
    RankedTensorType type = resultType();
    Value x = operands[0];
    SmallVector<int64_t> reps =
        intListArg("repeats").value_or(SmallVector<int64_t>{});
    int64_t rank = typeOf(x).getRank();
    if (static_cast<int64_t>(reps.size()) < rank)
      return fail("fewer repeats than dimensions");
    SmallVector<int64_t> padded(reps.size() - rank, 1);
    llvm::append_range(padded, typeOf(x).getShape());
    x = reshape(x, padded);
    SmallVector<int64_t> wide, dims;
    for (size_t i = 0; i < reps.size(); ++i) {
      wide.push_back(reps[i]);
      wide.push_back(padded[i]);
      dims.push_back(2 * i + 1);
    }
    Value expanded = prim::BroadcastInDimOp::create(b, loc, x, wide, dims);
    return one(reshape(expanded, type.getShape()));
  }
  if (target == "aten::full_like")
    return one(splat(resultType(), floatArg("fill_value", 0)));
  // Uninitialized memory has no defined value: tc's is zero.
  if (target == "aten::empty.memory_format" ||
      target == "aten::empty_permuted" || target == "aten::empty_strided" ||
      target == "aten::new_empty" || target == "aten::empty_like")
    return one(splat(resultType(), 0));

  if (std::optional<Result> r = masksAndSegments(target))
    return *r;
  if (std::optional<Result> r = indexing(target))
    return *r;
  if (std::optional<Result> r = sortAndScan(target))
    return *r;
  if (std::optional<Result> r = specialFunction(target))
    return *r;
  if (std::optional<Result> r = poolingAndProducts(target))
    return *r;
  if (std::optional<Result> r = linalg(target))
    return *r;
  return fail("no decomposition into prim ops");
}

/// Batch norm over every dimension but the channels (dim 1). Training
/// normalizes with the batch's statistics and (the functional form) returns
/// the updated running statistics, `(1 - momentum) * running + momentum *
/// batch` with the unbiased variance, as eager does in place; evaluation
/// normalizes with the running statistics. Results: output, the mean and
/// inverse deviation used (empty in evaluation), and for
/// `_native_batch_norm_legit_functional` the new running mean and variance.
FailureOr<SmallVector<Value>> Decomposer::batchNorm(bool training) {
  RankedTensorType type = resultType();
  Type elt = opmathType(type.getElementType());
  ArrayRef<int32_t> sizes;
  if (auto attr = op.getTensorArgSizes())
    sizes = *attr;
  // Operands: input, then weight, bias, running mean, running var when
  // present.
  SmallVector<Value> present(5);
  unsigned next = 0;
  for (unsigned i = 0; i < 5; ++i)
    if (sizes.empty() ? i < operands.size() : sizes[i] == 1)
      present[i] = operands[next++];
  Value x = convert(present[0], elt);
  RankedTensorType xType = typeOf(x);
  int64_t rank = xType.getRank();
  if (rank < 2)
    return fail("input " + quoted(xType) + " has no channel dimension");
  int64_t channels = xType.getDimSize(1), count = 1;
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1) {
      dims.push_back(d);
      count *= xType.getDimSize(d);
    }
  auto statType = RankedTensorType::get({channels}, elt);
  auto toInput = [&](Value v) {
    return prim::BroadcastInDimOp::create(b, loc, convert(v, elt),
                                          xType.getShape(),
                                          ArrayRef<int64_t>{1})
        .getResult();
  };
  double eps = floatArg("eps", 1e-5), momentum = floatArg("momentum", 0.1);
  Value mean, var;
  if (training) {
    mean = prim::DivOp::create(
        b, loc, prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum, x, dims),
        splat(statType, count));
    Value centered = prim::SubOp::create(b, loc, x, toInput(mean));
    var = prim::DivOp::create(
        b, loc,
        prim::ReduceOp::create(
            b, loc, prim::ReductionKind::Sum,
            prim::MulOp::create(b, loc, centered, centered), dims),
        splat(statType, count));
  } else {
    if (!present[3] || !present[4])
      return fail("evaluation needs the running statistics");
    mean = convert(present[3], elt);
    var = convert(present[4], elt);
  }
  Value rstd = prim::RsqrtOp::create(
      b, loc, prim::AddOp::create(b, loc, var, splat(statType, eps)));
  Value y = prim::MulOp::create(
      b, loc, prim::SubOp::create(b, loc, x, toInput(mean)), toInput(rstd));
  if (present[1])
    y = prim::MulOp::create(b, loc, y, toInput(present[1]));
  if (present[2])
    y = prim::AddOp::create(b, loc, y, toInput(present[2]));
  SmallVector<Value> results = {coerce(y, type)};
  for (unsigned i : {1u, 2u}) {
    RankedTensorType t = resultType(i);
    if (t.getNumElements() == 0)
      results.push_back(splat(t, 0));
    else
      results.push_back(coerce(i == 1 ? mean : rstd, t));
  }
  if (op.getNumResults() == 6) {
    // _batch_norm_with_update_functional: an empty "reserve" (for cuDNN)
    // comes before the running statistics.
    if (resultType(3).getNumElements() != 0)
      return fail("expected an empty reserve result");
    results.push_back(splat(resultType(3), 0));
  }
  if (op.getNumResults() >= 5) {
    unsigned next = results.size();
    if (!present[3] || !present[4])
      return fail("the functional form needs running statistics");
    // Evaluation leaves the running statistics as they are.
    if (!training) {
      results.push_back(coerce(present[3], resultType(next)));
      results.push_back(coerce(present[4], resultType(next + 1)));
      return results;
    }
    auto update = [&](Value running, Value batch, double scale) {
      Value kept = prim::MulOp::create(b, loc, convert(running, elt),
                                       splat(statType, 1 - momentum));
      Value added = prim::MulOp::create(b, loc, batch,
                                        splat(statType, momentum * scale));
      return prim::AddOp::create(b, loc, kept, added).getResult();
    };
    results.push_back(coerce(update(present[3], mean, 1), resultType(next)));
    results.push_back(coerce(
        update(present[4], var, count > 1 ? double(count) / (count - 1) : 1),
        resultType(next + 1)));
  }
  return results;
}

/// 2-d and 3-d max pooling: the position of each window's maximum
/// (`prim.window_argmax`, PyTorch's tie rule), then the value there. The
/// positions are what the backward keeps (i8 for windows of up to 128
/// points), and the indices result, when used, is computed from them as
/// eager's: the flat index of the maximum in its input plane (or volume).
FailureOr<SmallVector<Value>> Decomposer::maxPool(int64_t spatial) {
  RankedTensorType type = resultType(), indexType = resultType(1);
  Value x = operands[0];
  RankedTensorType xType = typeOf(x);
  int64_t rank = xType.getRank(), lead = rank - spatial;
  if (rank != spatial + 1 && rank != spatial + 2)
    return fail("input " + quoted(xType) + " is not (N,) C, and " +
                Twine(spatial) + " spatial dimensions");
  if (xType.getElementType() != type.getElementType())
    return fail("result " + quoted(type) + " does not have the element type "
                "of the input " + quoted(xType));
  SmallVector<int64_t> ones(spatial, 1), zeros(spatial, 0);
  SmallVector<int64_t> kernel = spatialListArg("kernel_size", spatial, ones);
  SmallVector<int64_t> stride = spatialListArg("stride", spatial, kernel);
  SmallVector<int64_t> padding = spatialListArg("padding", spatial, zeros);
  SmallVector<int64_t> dilation = spatialListArg("dilation", spatial, ones);
  for (ArrayRef<int64_t> list : {kernel, stride, padding, dilation})
    if (static_cast<int64_t>(list.size()) != spatial)
      return fail("kernel_size, stride, padding and dilation need " +
                  Twine(spatial) + " entries");
  int64_t positions = 1;
  for (int64_t size : kernel)
    positions *= size;
  if (positions < 1 || positions > kMaxPoolPositions)
    return fail("windows of " + Twine(positions) + " points are not "
                "supported (at most " + Twine(kMaxPoolPositions) + ")");
  Type positionElt = positions <= 128 ? b.getI8Type() : b.getI16Type();
  auto positionType = type.clone(positionElt);
  // Diagnose a result that is not the pooling's shape here, with the op's
  // words, rather than in the window ops' verifiers.
  if (type.getRank() != rank ||
      xType.getShape().take_front(lead) != type.getShape().take_front(lead))
    return fail("result " + quoted(type) + " does not match the input " +
                quoted(xType));
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = xType.getDimSize(lead + i), out = type.getDimSize(lead + i);
    int64_t span = in + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1;
    int64_t floor = span < 0 ? -1 : span / stride[i] + 1;
    bool ceil = out == floor + 1 && (out - 1) * stride[i] < in + padding[i];
    if (out != floor && !ceil)
      return fail("result " + quoted(type) + " does not match the input " +
                  quoted(xType) + " and window");
  }
  Value argmax = prim::WindowArgmaxOp::create(
      b, loc, positionType, x, kernel, stride, padding, dilation);
  Value values = prim::WindowGatherOp::create(
      b, loc, type, x, argmax, kernel, stride, padding, dilation);
  if (op.getResult(1).use_empty())
    return SmallVector<Value>{values, splat(indexType, 0)};

  // indices = sum over spatial d of i_d * (the input's size after d), with
  // i_d = o_d * stride - padding + (the position's offset along d) *
  // dilation; offsets are the row-major digits of the position.
  Value k = convert(argmax, indexType.getElementType());
  Value indices;
  int64_t scale = 1;
  for (int64_t i = spatial - 1; i >= 0; --i) {
    Value offset = k;
    if (i > 0) {
      offset = prim::RemOp::create(b, loc, k, splat(indexType, kernel[i]));
      k = prim::DivOp::create(b, loc, k, splat(indexType, kernel[i]));
    }
    Value o = prim::IotaOp::create(b, loc, indexType.getShape(), lead + i,
                                   indexType.getElementType());
    Value coordinate = prim::AddOp::create(
        b, loc,
        prim::SubOp::create(
            b, loc, prim::MulOp::create(b, loc, o, splat(indexType, stride[i])),
            splat(indexType, padding[i])),
        prim::MulOp::create(b, loc, offset, splat(indexType, dilation[i])));
    Value term = prim::MulOp::create(b, loc, coordinate,
                                     splat(indexType, scale));
    indices = indices ? prim::AddOp::create(b, loc, indices, term).getResult()
                      : term;
    scale *= xType.getDimSize(lead + i);
  }
  return SmallVector<Value>{values, indices};
}

/// Dropout: an element is kept with probability 1 - p (a uniform number
/// below 1 - p) and scaled by 1 / (1 - p), as `mask * x * scale`, eager's
/// formula (a NaN dropped stays NaN). Results: the output and the bool keep
/// mask. The mask is a function of the graph's seed and the element's
/// counter, so a backward that recomputes it gets the same one.
FailureOr<SmallVector<Value>> Decomposer::dropout() {
  RankedTensorType type = resultType(0), maskType = resultType(1);
  Value x = coerce(operands[0], type);
  double p = floatArg("p", 0.5);
  bool train = boolArg("train", true);
  if (!isa<FloatType>(type.getElementType()))
    return fail("dropout of " + quoted(type) + " needs floats");
  if (p < 0 || p > 1)
    return fail("the dropout probability is not in [0, 1]");
  if (!train || p == 0)
    return SmallVector<Value>{x, splat(maskType, 1)};
  if (p == 1)
    return SmallVector<Value>{prim::MulOp::create(b, loc, x, splat(type, 0)),
                              splat(maskType, 0)};
  // Draw in f32 at least: f16's 11 bits would quantize 1 - p coarsely.
  Type drawn = type.getElementType().getIntOrFloatBitWidth() < 32
                   ? Type(b.getF32Type())
                   : type.getElementType();
  auto drawnType = type.clone(drawn);
  FailureOr<Value> u = uniform(drawnType);
  if (failed(u))
    return failure();
  Value keep = prim::CompareOp::create(b, loc, prim::ComparisonPredicate::LT,
                                       *u, splat(drawnType, 1 - p));
  Value scaled = prim::MulOp::create(
      b, loc, prim::MulOp::create(b, loc, convert(keep, type.getElementType()), x),
      splat(type, 1 / (1 - p)));
  return SmallVector<Value>{scaled, keep};
}

/// The random ops of one distribution: numbers drawn in f32 at least (f16
/// would quantize them coarsely) from uniform ones on [0, 1), by PyTorch's
/// formulas, rounded once to the result type. Normal numbers by Box-Muller
/// (two uniform draws per number).
FailureOr<SmallVector<Value>> Decomposer::randomOf(StringRef target) {
  RankedTensorType type = resultType();
  if (target.starts_with("aten::randint")) {
    // Integers in [low, high): floor(low + u (high - low)), drawn in f64 so
    // that every integer of a range up to 2^53 can come up. The result
    // type may be a float type (randint(..., dtype=torch.float32)).
    int64_t low = intArg("low", 0), high = intArg("high", 0);
    if (high <= low)
      return fail("randint's range [" + Twine(low) + ", " + Twine(high) +
                  ") is empty");
    RankedTensorType wide = type.clone(b.getF64Type());
    FailureOr<Value> u = uniform(wide);
    if (failed(u))
      return failure();
    Value drawnInt = prim::FloorOp::create(
        b, loc,
        add(splat(wide, double(low)),
            mul(splat(wide, double(high - low)), *u)));
    drawnInt = prim::MinimumOp::create(b, loc, drawnInt,
                                       splat(wide, double(high - 1)));
    // Integers below 2^24 are exact in f32; the CPU has no direct f64 to
    // half conversion.
    if (isa<FloatType>(type.getElementType()) &&
        type.getElementType().getIntOrFloatBitWidth() < 32)
      drawnInt = convert(drawnInt, b.getF32Type());
    return SmallVector<Value>{convert(drawnInt, type.getElementType())};
  }
  if (target == "aten::bernoulli.p") {
    // 1 with probability p: a uniform number below p (f64 draws for f64).
    double p = floatArg("p", 0.5);
    RankedTensorType drawnType = type.clone(
        type.getElementType().isF64() ? Type(b.getF64Type())
                                      : Type(b.getF32Type()));
    FailureOr<Value> u = uniform(drawnType);
    if (failed(u))
      return failure();
    Value hit = cmp(P::LT, *u, splat(drawnType, p));
    return SmallVector<Value>{convert(hit, type.getElementType())};
  }
  if (!isa<FloatType>(type.getElementType()))
    return fail("random numbers of " + quoted(type) + " are not floats");
  RankedTensorType drawn =
      type.getElementType().getIntOrFloatBitWidth() < 32
          ? type.clone(b.getF32Type())
          : type;
  auto draw = [&]() -> FailureOr<Value> { return uniform(drawn); };
  auto c = [&](double v) { return splat(drawn, v); };
  auto add = [&](Value x, Value y) -> Value {
    return prim::AddOp::create(b, loc, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return prim::MulOp::create(b, loc, x, y);
  };
  auto done = [&](Value v) -> FailureOr<SmallVector<Value>> {
    return SmallVector<Value>{convert(v, type.getElementType())};
  };
  // -log(1 - u) > 0: an exponential number of rate 1.
  auto exponentialOf = [&](Value u) -> Value {
    return prim::NegOp::create(
        b, loc, prim::Log1pOp::create(b, loc, prim::NegOp::create(b, loc, u)));
  };
  FailureOr<Value> u = draw();
  if (failed(u))
    return failure();
  if (target == "aten::rrelu_with_noise_functional") {
    // Training: a negative x times a slope drawn uniformly from
    // [lower, upper], which the noise result records (1 where x >= 0).
    // Otherwise the mean slope, and the noise passes through.
    double lower = floatArg("lower", 1.0 / 8), upper = floatArg("upper", 1.0 / 3);
    Value x = operands[0];
    Value negative = cmp(P::LT, x, splat(typeOf(x), 0));
    if (!boolArg("training", false)) {
      Value slope = splat(type, (lower + upper) / 2);
      return SmallVector<Value>{sel(negative, mul(x, slope), x),
                                operands[1]};
    }
    Value slope = convert(add(c(lower), mul(c(upper - lower), *u)),
                          type.getElementType());
    Value noise = sel(negative, slope, splat(type, 1));
    return SmallVector<Value>{mul(x, noise),
                              convert(noise, resultType(1).getElementType())};
  }
  bool normal = target == "aten::randn" || target == "aten::randn_like" ||
                target == "aten::normal_functional" ||
                target == "aten::log_normal" ||
                target.starts_with("aten::normal.");
  if (normal) {
    FailureOr<Value> v = draw();
    if (failed(v))
      return failure();
    Value radius = prim::SqrtOp::create(b, loc, mul(c(2), exponentialOf(*u)));
    Value z = mul(radius, prim::CosOp::create(b, loc, mul(c(2 * M_PI), *v)));
    if (target == "aten::randn" || target == "aten::randn_like")
      return done(z);
    double mean = floatArg("mean", target == "aten::log_normal" ? 1 : 0);
    double std = floatArg("std", target == "aten::log_normal" ? 2 : 1);
    // normal.Tensor_Tensor, .Tensor_float and .float_Tensor take the mean
    // and/or the standard deviation as tensors (in that order), broadcast
    // to the result.
    auto tensorOr = [&](bool isTensor, unsigned index, double value) {
      return isTensor ? broadcast(convert(operands[index], drawn.getElementType()),
                                  drawn.getShape())
                      : c(value);
    };
    bool meanTensor = target == "aten::normal.Tensor_Tensor" ||
                      target == "aten::normal.Tensor_float";
    bool stdTensor = target == "aten::normal.Tensor_Tensor" ||
                     target == "aten::normal.float_Tensor";
    Value x = add(tensorOr(meanTensor, 0, mean),
                  mul(tensorOr(stdTensor, meanTensor ? 1 : 0, std), z));
    if (target == "aten::log_normal")
      x = prim::ExpOp::create(b, loc, x);
    return done(x);
  }
  if (target == "aten::uniform") {
    double from = floatArg("from", 0), to = floatArg("to", 1);
    return done(add(c(from), mul(c(to - from), *u)));
  }
  if (target == "aten::exponential")
    return done(prim::DivOp::create(b, loc, exponentialOf(*u),
                                    c(floatArg("lambd", 1))));
  if (target == "aten::cauchy")
    return done(add(c(floatArg("median", 0)),
                    mul(c(floatArg("sigma", 1)),
                        prim::TanOp::create(
                            b, loc, mul(c(M_PI), add(*u, c(-0.5)))))));
  // geometric: the number of trials to the first success, at least 1.
  double p = floatArg("p", 0.5);
  if (!(p > 0 && p <= 1))
    return fail("geometric's p is not in (0, 1]");
  if (p == 1)
    return done(c(1));
  Value trials = prim::DivOp::create(
      b, loc, prim::NegOp::create(b, loc, exponentialOf(*u)),
      c(std::log1p(-p)));
  return done(prim::MaximumOp::create(
      b, loc, prim::CeilOp::create(b, loc, trials), c(1)));
}

/// aten::embedding: the rows of the table the indices select, a gather
/// along dimension 0. `padding_idx` only changes the gradient (the padding
/// row gets none): it is honoured when nothing is differentiated, and
/// refused in a graph that tc-autodiff differentiates, as are
/// `scale_grad_by_freq` and `sparse`.
FailureOr<SmallVector<Value>> Decomposer::embedding() {
  RankedTensorType type = resultType();
  Value table = operands[0], indices = operands[1];
  if (typeOf(table).getRank() != 2)
    return fail("the table " + quoted(typeOf(table)) + " is not 2-d");
  if (!isa<IntegerType>(typeOf(indices).getElementType()) ||
      typeOf(indices).getElementType().isInteger(1))
    return fail("indices " + quoted(typeOf(indices)) + " are not integers");
  if (boolArg("sparse", false) || boolArg("scale_grad_by_freq", false))
    return fail("sparse and scale_grad_by_freq gradients are not supported");
  auto func = op->getParentOfType<fx::GraphOp>();
  bool differentiated = false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    differentiated |=
        static_cast<bool>(func.getArgAttr(i, prim::kRequiresGradAttrName));
  if (intArg("padding_idx", -1) >= 0 && differentiated)
    return fail("padding_idx in a differentiated graph is not supported yet "
                "(the padding row's gradient must be zero)");
  return SmallVector<Value>{
      coerce(prim::GatherOp::create(b, loc, table, indices, 0), type)};
}

/// aten::convolution (not transposed) as prim.convolution, its bias as an
/// add. Targets without a library convolution expand it into a matrix
/// product (tc-expand-convolutions).
FailureOr<SmallVector<Value>> Decomposer::convolution() {
  RankedTensorType type = resultType();
  Type elt = type.getElementType();
  int64_t groups = intArg("groups", 1);
  ArrayRef<int32_t> sizes;
  if (auto attr = op.getTensorArgSizes())
    sizes = *attr;
  bool hasBias = sizes.empty() ? operands.size() > 2 : sizes[2] == 1;
  Value x = convert(operands[0], elt), w = convert(operands[1], elt);
  if (boolArg("transposed", false)) {
    // A transposed convolution is the convolution, stride 1, of the input
    // dilated by the stride (interior padding) and padded by
    // dilation * (kernel - 1) - padding (+ output_padding after), with the
    // kernel flipped and its channel dimensions swapped.
    RankedTensorType xType = typeOf(x), wType = typeOf(w);
    int64_t rank = xType.getRank(), spatial = rank - 2;
    if (spatial < 1 || wType.getRank() != rank || groups < 1 ||
        xType.getDimSize(1) != wType.getDimSize(0) ||
        wType.getDimSize(0) % groups != 0)
      return fail("input " + quoted(xType) + " and weight " + quoted(wType) +
                  " do not make a transposed convolution");
    SmallVector<int64_t> ones(spatial, 1), zeros(spatial, 0);
    SmallVector<int64_t> stride = spatialListArg("stride", spatial, ones),
                         padding = spatialListArg("padding", spatial, zeros),
                         dilation = spatialListArg("dilation", spatial, ones),
                         outputPadding =
                             spatialListArg("output_padding", spatial, zeros);
    SmallVector<int64_t> low(rank, 0), high(rank, 0), interior(rank, 0);
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t edge = dilation[d] * (wType.getDimSize(2 + d) - 1) - padding[d];
      low[2 + d] = edge;
      high[2 + d] = edge + outputPadding[d];
      interior[2 + d] = stride[d] - 1;
    }
    Value dilated =
        prim::PadOp::create(b, loc, x, low, high, interior, APFloat(0.0));
    // (C_in, C_out / groups, k...) -> (C_out, C_in / groups, k...): the
    // channel dimensions swap within each group.
    int64_t cin = wType.getDimSize(0), coutGroup = wType.getDimSize(1);
    SmallVector<int64_t> grouped = {groups, cin / groups, coutGroup};
    SmallVector<int64_t> swap = {0, 2, 1};
    SmallVector<int64_t> swapped = {groups * coutGroup, cin / groups};
    for (int64_t d = 0; d < spatial; ++d) {
      grouped.push_back(wType.getDimSize(2 + d));
      swap.push_back(3 + d);
      swapped.push_back(wType.getDimSize(2 + d));
    }
    SmallVector<int64_t> swapOne = {1, 0};
    for (int64_t d = 0; d < spatial; ++d)
      swapOne.push_back(2 + d);
    Value kernel =
        groups == 1
            ? prim::PermuteOp::create(b, loc, w, swapOne).getResult()
            : reshape(prim::PermuteOp::create(b, loc, reshape(w, grouped),
                                              swap),
                      swapped);
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t size = wType.getDimSize(2 + d);
      auto indexType = RankedTensorType::get({size}, b.getI64Type());
      Value reversed = prim::SubOp::create(
          b, loc, splat(indexType, size - 1),
          prim::IotaOp::create(b, loc, ArrayRef<int64_t>{size}, 0,
                               b.getI64Type()));
      kernel = prim::GatherOp::create(b, loc, kernel, reversed, 2 + d);
    }
    Value y = prim::ConvolutionOp::create(b, loc, dilated, kernel, ones,
                                          zeros, dilation, groups);
    if (typeOf(y) != type)
      return fail("result " + quoted(type) + " does not match the input " +
                  quoted(xType) + ", weight and window");
    if (hasBias)
      y = prim::AddOp::create(
          b, loc, y,
          prim::BroadcastInDimOp::create(b, loc, convert(operands[2], elt),
                                         type.getShape(),
                                         ArrayRef<int64_t>{1}));
    return SmallVector<Value>{y};
  }
  RankedTensorType xType = typeOf(x), wType = typeOf(w);
  int64_t rank = xType.getRank(), spatial = rank - 2;
  if (spatial < 1 || wType.getRank() != rank || type.getRank() != rank ||
      groups < 1 || xType.getDimSize(1) != wType.getDimSize(1) * groups ||
      wType.getDimSize(0) % groups != 0)
    return fail("input " + quoted(xType) + " and weight " + quoted(wType) +
                " do not make a convolution");
  SmallVector<int64_t> stride = spatialListArg(
                           "stride", spatial, SmallVector<int64_t>(spatial, 1)),
                       padding = spatialListArg(
                           "padding", spatial, SmallVector<int64_t>(spatial, 0)),
                       dilation = spatialListArg(
                           "dilation", spatial,
                           SmallVector<int64_t>(spatial, 1));
  if (static_cast<int64_t>(stride.size()) != spatial ||
      static_cast<int64_t>(padding.size()) != spatial ||
      static_cast<int64_t>(dilation.size()) != spatial)
    return fail("stride, padding and dilation need " + Twine(spatial) +
                " entries");
  int64_t o = wType.getDimSize(0);
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t expected = (xType.getDimSize(2 + d) + 2 * padding[d] -
                        dilation[d] * (wType.getDimSize(2 + d) - 1) - 1) /
                           stride[d] +
                       1;
    if (expected != type.getDimSize(2 + d) || stride[d] < 1 || dilation[d] < 1 ||
        padding[d] < 0)
      return fail("result " + quoted(type) + " does not match the input " +
                  quoted(xType) + ", weight and window");
  }
  Value y = prim::ConvolutionOp::create(b, loc, x, w, stride, padding,
                                        dilation, groups);
  if (hasBias) {
    Value bias = convert(operands[2], elt);
    if (typeOf(bias).getShape() != ArrayRef<int64_t>{o})
      return fail("bias " + quoted(typeOf(bias)) + " is not one per output "
                  "channel");
    y = prim::AddOp::create(b, loc, y,
                            prim::BroadcastInDimOp::create(
                                b, loc, bias, type.getShape(),
                                ArrayRef<int64_t>{1}));
  }
  return SmallVector<Value>{y};
}

namespace {

struct ConvertFXToPrimPass
    : public tc::impl::ConvertFXToPrimPassBase<ConvertFXToPrimPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<fx::GraphOp> graphs(module.getOps<fx::GraphOp>());
    for (fx::GraphOp graph : graphs)
      if (failed(convertGraph(graph)))
        return signalPassFailure();
  }

  LogicalResult convertGraph(fx::GraphOp graph) {
    OpBuilder b(graph);
    // Complex values become real pairs (`loweredType`).
    FunctionType graphType = graph.getFunctionType();
    SmallVector<Type> inputs, outputs;
    for (Type t : graphType.getInputs())
      inputs.push_back(loweredType(t));
    for (Type t : graphType.getResults())
      outputs.push_back(loweredType(t));
    auto func = func::FuncOp::create(b, graph.getLoc(), graph.getSymName(),
                                     b.getFunctionType(inputs, outputs));
    if (ArrayAttr argAttrs = graph.getArgAttrsAttr())
      func.setArgAttrsAttr(argAttrs);
    Block *entry = func.addEntryBlock();
    IRMapping mapping;
    for (auto [from, to] :
         llvm::zip(graph.getBody().getArguments(), entry->getArguments())) {
      mapping.map(from, to);
      to.setLoc(from.getLoc());
    }

    Decomposer::RandomState random;
    for (BlockArgument arg : entry->getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kRngSeedAttrName)) {
        if (arg.getType() != RankedTensorType::get({}, b.getI64Type())) {
          // The argument dies with the function: word the error first.
          unsigned number = arg.getArgNumber();
          func.erase();
          return graph.emitOpError()
                 << "argument #" << number << " marked " << kRngSeedAttrName
                 << " must be a 'tensor<i64>'";
        }
        random.seed = arg;
      }

    b.setInsertionPointToStart(entry);
    for (Operation &op : graph.getBody().front()) {
      if (auto output = dyn_cast<fx::OutputOp>(op)) {
        SmallVector<Value> results;
        for (Value v : output.getOperands())
          results.push_back(mapping.lookup(v));
        func::ReturnOp::create(b, output.getLoc(), results);
        continue;
      }
      auto call = dyn_cast<fx::CallFunctionOp>(op);
      if (!call) {
        func.erase();
        return op.emitOpError()
               << "cannot be decomposed: tc compiles call_function nodes; "
                  "parameters and constants are passed as graph inputs";
      }
      SmallVector<Value> operands;
      for (Value v : call.getTensors())
        operands.push_back(mapping.lookup(v));
      Decomposer decomposer(b, call, operands, random);
      FailureOr<SmallVector<Value>> results = decomposer.run();
      if (failed(results)) {
        func.erase();
        return failure();
      }
      for (auto [from, to] : llvm::zip(call.getResults(), *results)) {
        if (Type produced = to.getType();
            loweredType(from.getType()) != produced) {
          func.erase(); // `to` with it: its type is kept above
          return call.emitOpError()
                 << "decomposition produced " << produced
                 << " where PyTorch computes " << from.getType();
        }
        mapping.map(from, to);
      }
    }
    graph.erase();
    widenBoolReductions(func);
    return success();
  }

  /// Reductions of bools reduce their values as i32 and convert back
  /// (nonzero is true): a sum or max is `any`, a product or min `all`.
  /// Kernels reduce numbers, and decompositions need not care.
  static void widenBoolReductions(func::FuncOp func) {
    SmallVector<prim::ReduceOp> reductions;
    func.walk([&](prim::ReduceOp op) {
      if (cast<RankedTensorType>(op.getType()).getElementType().isInteger(1))
        reductions.push_back(op);
    });
    for (prim::ReduceOp op : reductions) {
      OpBuilder b(op);
      Type i32 = b.getI32Type();
      Value wide = prim::ConvertOp::create(b, op.getLoc(), op.getOperand(),
                                           TypeAttr::get(i32));
      Value reduced = prim::ReduceOp::create(b, op.getLoc(), op.getKind(),
                                             wide, op.getDims());
      Value back = prim::ConvertOp::create(b, op.getLoc(), reduced,
                                           TypeAttr::get(b.getI1Type()));
      op.getResult().replaceAllUsesWith(back);
      op.erase();
    }
  }
};

} // namespace
