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
  FailureOr<SmallVector<Value>> run();

private:
  FailureOr<SmallVector<Value>> dispatch();
  FailureOr<SmallVector<Value>> convolution();
  FailureOr<SmallVector<Value>> batchNorm(bool training);
  FailureOr<SmallVector<Value>> maxPool(int64_t spatial);
  FailureOr<SmallVector<Value>> dropout();
  FailureOr<SmallVector<Value>> randomOf(StringRef target);
  FailureOr<SmallVector<Value>> embedding();
  FailureOr<SmallVector<Value>> attention();

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
  /// The inclusive sum or product scan of `row` ([lead..., n]) along its
  /// last dimension in chunks of `chunk` (limits::scanChunk).
  Value blockedScan(Value row, int64_t chunk, prim::ReductionKind kind);
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
  FailureOr<Value> uniform(RankedTensorType type);

  //===--------------------------------------------------------------------===//
  // Arguments
  //===--------------------------------------------------------------------===//

  Attribute arg(StringRef name) const;
  double floatArg(StringRef name, double dflt) const;
  int64_t intArg(StringRef name, int64_t dflt) const;
  bool boolArg(StringRef name, bool dflt) const;
  std::optional<SmallVector<int64_t>> intListArg(StringRef name) const;
  /// A per-spatial-dimension list argument (stride, padding, ...): one
  /// value stands for all `count` dimensions, an absent or empty one is
  /// `dflt`.
  SmallVector<int64_t> spatialListArg(StringRef name, int64_t count,
                                      ArrayRef<int64_t> dflt) const;
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
  Value reject(RankedTensorType type, const Twine &message);

  /// Converts `v` to element type `elt`.
  Value convert(Value v, Type elt);

  /// Broadcasts `v` to `shape` with PyTorch's right-aligned rules.
  Value broadcast(Value v, ArrayRef<int64_t> shape);

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
  static int64_t staticNumElements(RankedTensorType type);
  static bool sameNumElements(RankedTensorType a, RankedTensorType b) {
    return a.getNumDynamicDims() == b.getNumDynamicDims() &&
           staticNumElements(a) == staticNumElements(b);
  }

  /// A splat of `type` holding `value`: a constant, or a 0-d constant
  /// broadcast to a shape with the symbolic size.
  Value splat(RankedTensorType type, double value);

  /// The dtype PyTorch computes a binary op in when its result type is
  /// `result` and the operands are `lhs` and `rhs`: the result's dtype,
  /// except for comparisons, whose result is bool.
  static Type promote(Type lhs, Type rhs);

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
  StringRef targetDevice();

  /// `value` rounded to float type `elt` (nearest, ties to even).
  static double roundTo(Type elt, double value);

  /// True division, or with `rounding_mode` "trunc" or "floor" (integer
  /// results only come with a rounding mode).
  FailureOr<Value> divide();

  FailureOr<Value> compare(prim::ComparisonPredicate predicate);

  Value reduce(prim::ReductionKind kind, Value input, ArrayRef<int64_t> dims,
               bool keepdim, RankedTensorType resultTy);

  /// The index of the first maximum (or minimum) of `x` along `dim`, as
  /// PyTorch picks it: NaN counts as the extreme (the first NaN wins). The
  /// extreme is reduced, then the smallest index holding it.
  Value argExtreme(Value x, int64_t dim, bool isMax);

  /// Row-wise statistics of a layer norm over the trailing `normDims`
  /// dimensions, returned with those dimensions kept as size 1.
  std::pair<Value, Value> meanAndRstd(Value x, int64_t normDims, double eps);

  /// softmax or log_softmax of `x` along `dim`, of result type `type`.
  /// Half precision computes in f32 and rounds once, as eager does (each
  /// prim rounded to f16 put results 1 ulp from eager's).
  Value softmax(Value x, int64_t dim, RankedTensorType type, bool log);

  Value softmaxOf(Value x, int64_t dim, bool log);

  /// `v` in f32 when it is f16 or bf16, else `v`: an op that eager
  /// computes in f32 and rounds once (gelu, sigmoid) is decomposed in f32,
  /// not rounded to half precision after each of its prims.
  Value widenHalf(Value v);

  Value gelu(Value x, bool tanhApprox);

  /// `lhs @ rhs` for rank-2 operands, or batched rank-3.
  Value matmul(Value lhs, Value rhs);

  Value permute(Value v, ArrayRef<int64_t> perm);

  /// `v` reshaped to `shape` (same number of elements).
  Value reshape(Value v, ArrayRef<int64_t> shape);

  Value reshapeToResult(Value v) { return reshape(v, resultType().getShape()); }

  /// Whether each element of a floating-point `x` is NaN (never, for
  /// integers and bools).
  Value isNan(Value x);

  /// Whether each element's sign bit is set (-0.0 and negative NaN too;
  /// integers below zero; never for bools).
  Value signBit(Value x);

  /// Whether each element of `x` is nonzero, as bool (NaN is true).
  Value truthy(Value x);

  /// sqrt(x^2 + y^2) of two float tensors of one type, as max * sqrt(1 +
  /// (min / max)^2): no overflow or underflow of the squares; 0 where both
  /// are 0, inf where either is infinite (even with a NaN).
  Value hypot(Value x, Value y);

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
  Value safeDivisor(Value d);

  /// Truncated division (C's `/`): for integers, with the divisor made
  /// safe and `a / -1 == -a` (wrapping).
  Value truncDiv(Value a, Value d);

  /// C's `fmod`: the remainder of truncated division, with the dividend's
  /// sign.
  Value fmod(Value a, Value d);

  /// Whether `r` is nonzero with a sign other than `d`'s: where Python's
  /// floor division and modulus differ from C's.
  Value signsDiffer(Value r, Value d);

  /// Python's modulus: the remainder with the divisor's sign.
  Value remainder(Value a, Value d);

  /// Floor division. Floats follow eager's kernel: the quotient of the
  /// exact `a - fmod(a, d)` by `d`, corrected by the remainder's sign, then
  /// rounded to the nearest integer; a zero quotient keeps `a / d`'s sign,
  /// and a zero divisor gives `a / d` (inf or NaN).
  Value floorDiv(Value a, Value d);

  /// Rounds a float toward zero.
  Value truncate(Value x);

  /// `v` reduced to bool by `kind` (Max: any, Min: all) over `dims` (all
  /// when empty).
  Value anyOrAll(Value v, prim::ReductionKind kind, ArrayRef<int64_t> dims,
                 bool keepdim);


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
