//===- Decomposer.h - ATen-to-prim decomposition builder ---------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The builder tc-decompose uses for one fx.call_function: argument access,
// type helpers and the decompositions shared by several ATen ops. Its
// per-family entry points are defined in the files of this directory
// (Elementwise.cpp, Shapes.cpp, Reductions.cpp (and matrix products),
// Networks.cpp (convolution, normalization, pooling, random ops);
// Indexing.cpp:
// advanced indexing and scatters; SortAndScan.cpp: sorting, selection and
// cumulative ops; SpecialFunctions.cpp: gamma, error and Bessel functions;
// MasksAndSegments.cpp: masked writes, segment and bag reductions;
// ComplexAndFFT.cpp: complex tensors as real pairs, Fourier transforms).
// Private to lib/Conversion/FXToPrim.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_CONVERSION_FXTOPRIM_DECOMPOSER_H
#define TC_LIB_CONVERSION_FXTOPRIM_DECOMPOSER_H

#include "mlir/IR/Builders.h"
#include "tc/Conversion/FXToPrim/Limits.h"
#include "tc/Conversion/Passes.h"
#include "tc/Dialect/FX/IR/FXOps.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"
#include "tc/Dialect/Prim/Transforms/Passes.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace mlir::tc::decompose {


/// `type` in quotes, for diagnostics.
inline std::string quoted(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
}

using limits::kMaxPolynomialDegree;
using limits::kMaxPoolPositions;

/// The type PyTorch computes a half-precision operation in (its "opmath"
/// type): f32 for f16 and bf16, else the type itself.
inline Type opmathType(Type elt) {
  if (elt.isF16() || elt.isBF16())
    return Float32Type::get(elt.getContext());
  return elt;
}

/// The prim type standing for an fx value's type: a complex tensor of shape
/// S is a real tensor of shape [S..., 2] (real and imaginary parts, as
/// PyTorch lays them out in memory); other types are themselves.
Type loweredType(Type type);
/// Whether `type` is a tensor of complex numbers.
bool isComplex(Type type);

/// Builds the prim ops for one fx.call_function.
class Decomposer {
public:
  /// The graph's random state: its seed argument (null when it has none)
  /// and the first counter the next random op may use.
  struct RandomState {
    Value seed;
    int64_t offset = 0;
  };

  Decomposer(OpBuilder &b, fx::CallFunctionOp op, ValueRange operands,
             RandomState &random)
      : b(b), op(op), loc(op.getLoc()), operands(operands), random(random) {}

  /// Emits the decomposition and returns one value per result, or failure
  /// (after a diagnostic).
  FailureOr<SmallVector<Value>> run() {
    FailureOr<SmallVector<Value>> results = dispatch();
    if (rejected)
      return failure();
    return results;
  }

private:
  FailureOr<SmallVector<Value>> dispatch();
  FailureOr<SmallVector<Value>> convolution();
  FailureOr<SmallVector<Value>> batchNorm(bool training);
  FailureOr<SmallVector<Value>> maxPool(int64_t spatial);
  FailureOr<SmallVector<Value>> dropout();
  FailureOr<SmallVector<Value>> randomOf(StringRef target);
  FailureOr<SmallVector<Value>> embedding();

  using Result = FailureOr<SmallVector<Value>>;
  using P = prim::ComparisonPredicate;
  /// The decompositions of one op family, each defined in the file of that
  /// name (the family Decompositions.def gives the op): std::nullopt when
  /// `target` is not one of the family's ops.
  std::optional<Result> elementwise(StringRef target);
  std::optional<Result> shapes(StringRef target);
  std::optional<Result> reductions(StringRef target);
  std::optional<Result> networks(StringRef target);
  std::optional<Result> indexing(StringRef target);
  std::optional<Result> sortAndScan(StringRef target);
  std::optional<Result> specialFunction(StringRef target);
  std::optional<Result> orthogonalPolynomial(StringRef kind);
  std::optional<Result> poolingAndProducts(StringRef target);
  std::optional<Result> linalg(StringRef target);
  std::optional<Result> masksAndSegments(StringRef target);
  /// Every op with a complex operand or result (and the transforms):
  /// decomposed on (real, imaginary) pairs, or rejected.
  std::optional<Result> complexOrFFT(StringRef target);

  //===--------------------------------------------------------------------===//
  // Elementwise shorthands for the longer formulas (same-typed operands)
  //===--------------------------------------------------------------------===//

  Value add(Value x, Value y) { return prim::AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return prim::SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return prim::MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return prim::DivOp::create(b, loc, x, y); }
  Value cmp(P predicate, Value x, Value y) {
    return prim::CompareOp::create(b, loc, predicate, x, y);
  }
  Value sel(Value cond, Value x, Value y) {
    return prim::WhereOp::create(b, loc, cond, x, y);
  }
  Value andI(Value x, Value y) {
    return prim::BitwiseAndOp::create(b, loc, x, y);
  }
  Value orI(Value x, Value y) {
    return prim::BitwiseOrOp::create(b, loc, x, y);
  }

  //===--------------------------------------------------------------------===//
  // Indexing helpers (Indexing.cpp)
  //===--------------------------------------------------------------------===//

  /// The tensor operands bound to the `n`th tensor argument of the schema
  /// (by `tensor_arg_sizes` when present, else one operand each).
  SmallVector<Value> tensorArg(unsigned n) const;
  /// For an optional tensor list argument (`Tensor?[]`): which entries are
  /// present (the `args` entry of that name; all of them without it).
  SmallVector<bool> presentEntries(StringRef name, unsigned count) const;
  /// An i64 iota of `shape` along `dim`.
  Value iota(ArrayRef<int64_t> shape, int64_t dim);
  /// `index` (any integer type) as i64, negative entries wrapped by `size`.
  Value wrapIndex(Value index, int64_t size);
  /// The identity of a combining reduction in `type` (0 for a sum, 1 for a
  /// product, the lowest/highest value for max/min).
  Value reductionIdentity(RankedTensorType type, prim::ReductionKind kind);
  /// The linear position of the elements that a list of index tensors
  /// (`indices[k]` indexing dimension `dims[k]` of `shape`) picks, in the
  /// row-major order of the indexed dimensions; the indices broadcast
  /// together.
  Value linearIndex(ArrayRef<Value> indices, ArrayRef<int64_t> dims,
                    ArrayRef<int64_t> shape);
  /// `dest` with `part` written where padding `part` by (low, high,
  /// interior) places it: the padded part where a padded all-true mask is
  /// true, `dest` elsewhere.
  Value placeInto(Value dest, Value part, ArrayRef<int64_t> low,
                  ArrayRef<int64_t> high, ArrayRef<int64_t> interior);
  /// The rows `rows` (shape [K, R]) after the updates `values` (shape
  /// [J, R]) land at rows `at` (shape [J], in [0, K)): accumulated with
  /// `kind` (std::nullopt: the last update of a row replaces it, as eager's
  /// CPU loop leaves it). With `mean`, a row's result is the mean of itself
  /// (when `includeSelf`) and its updates. Rows no update reaches keep their
  /// value. Dense: compares every update with every row.
  Value scatterRows(Value rows, Value at, Value values,
                    std::optional<prim::ReductionKind> kind, bool includeSelf,
                    bool mean);
  /// For a 1-d bool `mask`, the number of true elements up to and
  /// including each position (i64). Dense: n^2 compares.
  Value prefixCount(Value mask);

  /// Uniform numbers on [0, 1) of `type` from the graph's seed, at counters
  /// no other random op of the graph uses.
  FailureOr<Value> uniform(RankedTensorType type) {
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

  //===--------------------------------------------------------------------===//
  // Arguments
  //===--------------------------------------------------------------------===//

  Attribute arg(StringRef name) const {
    DictionaryAttr args = op.getArgsAttr();
    Attribute attr = args ? args.get(name) : Attribute();
    return attr && !isa<UnitAttr>(attr) ? attr : Attribute();
  }
  double floatArg(StringRef name, double dflt) const {
    Attribute attr = arg(name);
    if (auto f = dyn_cast_if_present<FloatAttr>(attr))
      return f.getValueAsDouble();
    if (auto i = dyn_cast_if_present<IntegerAttr>(attr))
      return i.getType().isInteger(1) ? i.getValue().getZExtValue()
                                      : static_cast<double>(i.getInt());
    return dflt;
  }
  int64_t intArg(StringRef name, int64_t dflt) const {
    if (auto i = dyn_cast_if_present<IntegerAttr>(arg(name)))
      return i.getInt();
    return dflt;
  }
  bool boolArg(StringRef name, bool dflt) const {
    if (auto v = dyn_cast_if_present<BoolAttr>(arg(name)))
      return v.getValue();
    return dflt;
  }
  std::optional<SmallVector<int64_t>> intListArg(StringRef name) const {
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
  /// A per-spatial-dimension list argument (stride, padding, ...): one
  /// value stands for all `count` dimensions, an absent or empty one is
  /// `dflt`.
  SmallVector<int64_t> spatialListArg(StringRef name, int64_t count,
                                      ArrayRef<int64_t> dflt) const {
    SmallVector<int64_t> v = intListArg(name).value_or(SmallVector<int64_t>{});
    if (v.empty())
      v.assign(dflt.begin(), dflt.end());
    if (v.size() == 1)
      v.assign(count, v[0]);
    return v;
  }
  /// Whether a numeric argument is an integer (PyTorch's Scalar may be
  /// either; it matters for integer tensors).
  bool isIntegral(StringRef name) const {
    return isa_and_present<IntegerAttr>(arg(name));
  }

  //===--------------------------------------------------------------------===//
  // Types and helpers
  //===--------------------------------------------------------------------===//

  RankedTensorType resultType(unsigned i = 0) const {
    return cast<RankedTensorType>(op.getResult(i).getType());
  }
  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  LogicalResult fail(const Twine &message) {
    return op.emitOpError() << "cannot decompose '" << op.getTarget()
                            << "': " << message;
  }

  /// Reports that the op's operand and result types contradict each other
  /// (invalid input IR, e.g. written by hand) and returns a stand-in value
  /// of `type`, so that the decomposition finishes building well-typed IR
  /// before run() fails. Building the prim op instead would abort: its
  /// result type cannot be inferred.
  Value reject(RankedTensorType type, const Twine &message) {
    if (!rejected)
      (void)fail(message);
    rejected = true;
    return splat(type, 0);
  }

  /// Converts `v` to element type `elt`.
  Value convert(Value v, Type elt) {
    if (typeOf(v).getElementType() == elt)
      return v;
    return prim::ConvertOp::create(b, loc, v, TypeAttr::get(elt));
  }

  /// Broadcasts `v` to `shape` with PyTorch's right-aligned rules.
  Value broadcast(Value v, ArrayRef<int64_t> shape) {
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

  /// `v` broadcast to `type`'s shape and converted to its element type.
  Value coerce(Value v, RankedTensorType type) {
    return broadcast(convert(v, type.getElementType()), type.getShape());
  }

  /// Fails, naming the op, where a symbolic size appears where tc does not
  /// handle one yet (see admitsSymbolicSize in FXToPrim.cpp).
  LogicalResult checkSymbolicSizes(StringRef target);

  /// The product of `type`'s static dimensions. Every `?` of a graph is its
  /// one symbolic size, so two types with as many `?` have element counts
  /// in the ratio of their static products.
  static int64_t staticNumElements(RankedTensorType type) {
    int64_t count = 1;
    for (int64_t size : type.getShape())
      if (!ShapedType::isDynamic(size))
        count *= size;
    return count;
  }
  static bool sameNumElements(RankedTensorType a, RankedTensorType b) {
    return a.getNumDynamicDims() == b.getNumDynamicDims() &&
           staticNumElements(a) == staticNumElements(b);
  }

  /// A splat of `type` holding `value`: a constant, or a 0-d constant
  /// broadcast to a shape with the symbolic size.
  Value splat(RankedTensorType type, double value) {
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

  /// The dtype PyTorch computes a binary op in when its result type is
  /// `result` and the operands are `lhs` and `rhs`: the result's dtype,
  /// except for comparisons, whose result is bool.
  static Type promote(Type lhs, Type rhs) {
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

  int64_t normalizeDim(int64_t dim, int64_t rank) const {
    return dim < 0 ? dim + rank : dim;
  }

  //===--------------------------------------------------------------------===//
  // Op families
  //===--------------------------------------------------------------------===//

  template <typename OpTy>
  Value unary() {
    RankedTensorType type = resultType();
    return OpTy::create(b, loc, coerce(operands[0], type));
  }

  /// floor, ceil, round, trunc: integers are their own result.
  template <typename OpTy>
  Value rounding() {
    RankedTensorType type = resultType();
    Value x = coerce(operands[0], type);
    if (!isa<FloatType>(type.getElementType()))
      return x;
    return OpTy::create(b, loc, x);
  }

  /// `lhs op (alpha * rhs)` where rhs is an operand or the scalar `other`.
  template <typename OpTy>
  FailureOr<Value> binary(bool hasAlpha = false) {
    RankedTensorType type = resultType();
    Type elt = type.getElementType();
    double alpha = hasAlpha ? floatArg("alpha", 1) : 1;
    bool scalar = operands.size() == 1;
    if (opmathType(elt) == elt || (!scalar && alpha == 1)) {
      Value lhs = coerce(operands[0], type);
      Value rhs = rhsOperand(type);
      if (alpha != 1)
        rhs = prim::MulOp::create(b, loc, rhs, splat(type, alpha));
      return OpTy::create(b, loc, lhs, rhs).getResult();
    }
    // A half-precision op with a scalar or an alpha computes in f32 and
    // rounds once, as eager does, with eager's scalars: a product's or a
    // quotient's in f32 (`x * 0.7071...` with the constant in f16 put
    // special.ndtr 5% off near -2.8); a sum's scalar and alpha in f32 on
    // a GPU, rounded to the half type on the CPU (eager's kernels differ:
    // `x - 0.1` near 0.1 is 2.4e-5 apart in f16).
    RankedTensorType wide = type.clone(opmathType(elt));
    bool roundScalars = hasAlpha && targetDevice() == "cpu";
    auto value = [&](double v) { return roundScalars ? roundTo(elt, v) : v; };
    Value lhs = coerce(operands[0], wide);
    Value rhs = scalar ? splat(wide, value(floatArg("other", 0)))
                       : coerce(operands[1], wide);
    if (alpha != 1)
      rhs = prim::MulOp::create(b, loc, rhs, splat(wide, value(alpha)));
    return coerce(OpTy::create(b, loc, lhs, rhs).getResult(), type);
  }

  /// The device the graph runs on (the module's `tc.device`, which the
  /// importer sets for other devices than the CPU): "cpu" or "cuda".
  StringRef targetDevice() {
    auto module = op->getParentOfType<ModuleOp>();
    auto device =
        module ? module->getAttrOfType<StringAttr>(fx::kDeviceAttrName) : nullptr;
    return device ? device.getValue() : StringRef("cpu");
  }

  /// `value` rounded to float type `elt` (nearest, ties to even).
  static double roundTo(Type elt, double value) {
    auto ft = dyn_cast<FloatType>(elt);
    if (!ft)
      return value;
    APFloat f(value);
    bool lost = false;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  }

  /// True division, or with `rounding_mode` "trunc" or "floor" (integer
  /// results only come with a rounding mode).
  FailureOr<Value> divide() {
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

  FailureOr<Value> compare(prim::ComparisonPredicate predicate) {
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

  Value reduce(prim::ReductionKind kind, Value input, ArrayRef<int64_t> dims,
               bool keepdim, RankedTensorType resultTy) {
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

  /// The index of the first maximum (or minimum) of `x` along `dim`, as
  /// PyTorch picks it: NaN counts as the extreme (the first NaN wins). The
  /// extreme is reduced, then the smallest index holding it.
  Value argExtreme(Value x, int64_t dim, bool isMax) {
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

  /// Row-wise statistics of a layer norm over the trailing `normDims`
  /// dimensions, returned with those dimensions kept as size 1.
  std::pair<Value, Value> meanAndRstd(Value x, int64_t normDims, double eps) {
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

  /// softmax or log_softmax of `x` along `dim`, of result type `type`.
  /// Half precision computes in f32 and rounds once, as eager does (each
  /// prim rounded to f16 put results 1 ulp from eager's).
  Value softmax(Value x, int64_t dim, RankedTensorType type, bool log) {
    x = widenHalf(convert(x, type.getElementType()));
    Value result = softmaxOf(x, dim, log);
    return convert(result, type.getElementType());
  }

  Value softmaxOf(Value x, int64_t dim, bool log) {
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

  /// `v` in f32 when it is f16 or bf16, else `v`: an op that eager
  /// computes in f32 and rounds once (gelu, sigmoid) is decomposed in f32,
  /// not rounded to half precision after each of its prims.
  Value widenHalf(Value v) {
    RankedTensorType type = typeOf(v);
    Type elt = type.getElementType();
    if (!elt.isF16() && !elt.isBF16())
      return v;
    return coerce(v, type.clone(b.getF32Type()));
  }

  Value gelu(Value x, bool tanhApprox) {
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

  /// `lhs @ rhs` for rank-2 operands, or batched rank-3.
  Value matmul(Value lhs, Value rhs) {
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

  Value permute(Value v, ArrayRef<int64_t> perm) {
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

  /// `v` reshaped to `shape` (same number of elements).
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    RankedTensorType type = typeOf(v);
    auto to = RankedTensorType::get(shape, type.getElementType());
    if (!sameNumElements(type, to))
      return reject(to, "cannot reshape " + quoted(type) + " to " +
                            quoted(to));
    if (type.getShape() == shape)
      return v;
    return prim::ReshapeOp::create(b, loc, v, shape);
  }

  Value reshapeToResult(Value v) { return reshape(v, resultType().getShape()); }

  /// Whether each element of a floating-point `x` is NaN (never, for
  /// integers and bools).
  Value isNan(Value x) {
    RankedTensorType type = typeOf(x);
    if (!isa<FloatType>(type.getElementType()))
      return splat(type.clone(b.getI1Type()), 0);
    return prim::CompareOp::create(b, loc, prim::ComparisonPredicate::NE, x,
                                   x);
  }

  /// Whether each element's sign bit is set (-0.0 and negative NaN too;
  /// integers below zero; never for bools).
  Value signBit(Value x) {
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

  /// Whether each element of `x` is nonzero, as bool (NaN is true).
  Value truthy(Value x) {
    RankedTensorType type = typeOf(x);
    if (type.getElementType().isInteger(1))
      return x;
    return prim::CompareOp::create(b, loc, prim::ComparisonPredicate::NE, x,
                                   splat(type, 0));
  }

  /// sqrt(x^2 + y^2) of two float tensors of one type, as max * sqrt(1 +
  /// (min / max)^2): no overflow or underflow of the squares; 0 where both
  /// are 0, inf where either is infinite (even with a NaN).
  Value hypot(Value x, Value y) {
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

  /// `lhs` and `rhs` combined by a bool op, each taken as truthy, in the
  /// result's shape.
  template <typename OpTy>
  Value logical(Value lhs, Value rhs) {
    ArrayRef<int64_t> shape = resultType().getShape();
    return OpTy::create(b, loc, broadcast(truthy(lhs), shape),
                        broadcast(truthy(rhs), shape));
  }

  /// The second operand of a binary op: a tensor operand, or the scalar
  /// `other`, in `type`.
  Value rhsOperand(RankedTensorType type) {
    return operands.size() > 1 ? coerce(operands[1], type)
                               : splat(type, floatArg("other", 0));
  }

  /// An integer divisor that cannot trap: 1 where `d` is 0 (eager raises
  /// there) and where it is -1 (the quotient and remainder are then
  /// computed without dividing: `INT_MIN / -1` traps on x86).
  Value safeDivisor(Value d) {
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

  /// Truncated division (C's `/`): for integers, with the divisor made
  /// safe and `a / -1 == -a` (wrapping).
  Value truncDiv(Value a, Value d) {
    RankedTensorType type = typeOf(a);
    if (isa<FloatType>(type.getElementType()))
      return truncate(prim::DivOp::create(b, loc, a, d));
    Value q = prim::DivOp::create(b, loc, a, safeDivisor(d));
    Value minusOne = prim::CompareOp::create(
        b, loc, prim::ComparisonPredicate::EQ, d, splat(type, -1));
    return prim::WhereOp::create(b, loc, minusOne,
                                 prim::NegOp::create(b, loc, a), q);
  }

  /// C's `fmod`: the remainder of truncated division, with the dividend's
  /// sign.
  Value fmod(Value a, Value d) {
    RankedTensorType type = typeOf(a);
    if (isa<FloatType>(type.getElementType()))
      return prim::RemOp::create(b, loc, a, d);
    Value r = prim::RemOp::create(b, loc, a, safeDivisor(d));
    Value minusOne = prim::CompareOp::create(
        b, loc, prim::ComparisonPredicate::EQ, d, splat(type, -1));
    return prim::WhereOp::create(b, loc, minusOne, splat(type, 0), r);
  }

  /// Whether `r` is nonzero with a sign other than `d`'s: where Python's
  /// floor division and modulus differ from C's.
  Value signsDiffer(Value r, Value d) {
    RankedTensorType type = typeOf(r);
    using P = prim::ComparisonPredicate;
    Value nonzero = prim::CompareOp::create(b, loc, P::NE, r, splat(type, 0));
    Value rNeg = prim::CompareOp::create(b, loc, P::LT, r, splat(type, 0));
    Value dNeg = prim::CompareOp::create(b, loc, P::LT, d, splat(type, 0));
    Value differ = prim::CompareOp::create(b, loc, P::NE, rNeg, dNeg);
    return prim::BitwiseAndOp::create(b, loc, nonzero, differ);
  }

  /// Python's modulus: the remainder with the divisor's sign.
  Value remainder(Value a, Value d) {
    Value r = fmod(a, d);
    return prim::WhereOp::create(b, loc, signsDiffer(r, d),
                                 prim::AddOp::create(b, loc, r, d), r);
  }

  /// Floor division. Floats follow eager's kernel: the quotient of the
  /// exact `a - fmod(a, d)` by `d`, corrected by the remainder's sign, then
  /// rounded to the nearest integer; a zero quotient keeps `a / d`'s sign,
  /// and a zero divisor gives `a / d` (inf or NaN).
  Value floorDiv(Value a, Value d) {
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

  /// Rounds a float toward zero.
  Value truncate(Value x) {
    RankedTensorType type = typeOf(x);
    Value floor = prim::FloorOp::create(b, loc, prim::AbsOp::create(b, loc, x));
    Value negative = prim::CompareOp::create(
        b, loc, prim::ComparisonPredicate::LT, x, splat(type, 0));
    return prim::WhereOp::create(b, loc, negative,
                                 prim::NegOp::create(b, loc, floor), floor);
  }

  /// `v` reduced to bool by `kind` (Max: any, Min: all) over `dims` (all
  /// when empty).
  Value anyOrAll(Value v, prim::ReductionKind kind, ArrayRef<int64_t> dims,
                 bool keepdim) {
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


  OpBuilder &b;
  /// Whether this decomposes one part of a complex op (ComplexAndFFT.cpp):
  /// the operands are real.
  bool partsOnly = false;
  /// Whether reject() reported contradicting types.
  bool rejected = false;
  mutable fx::CallFunctionOp op;
  Location loc;
  ValueRange operands;
  RandomState &random;
};

} // namespace mlir::tc::decompose

#endif // TC_LIB_CONVERSION_FXTOPRIM_DECOMPOSER_H
