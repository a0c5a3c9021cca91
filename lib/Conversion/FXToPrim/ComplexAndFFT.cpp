//===- ComplexAndFFT.cpp - complex tensors and discrete Fourier transforms ===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for complex tensors: conversions (`_to_copy`, `complex`,
// `polar`, `view_as_real`, `view_as_complex`), `conj`, `abs`, `angle`,
// `real`/`imag`, elementwise `add`/`sub`/`mul`, the ops that only move
// elements (slices, padding, reshapes, `cat`, ...: each part separately),
// and the discrete Fourier transforms (`_fft_r2c`, `_fft_c2c`, `_fft_c2r`)
// that `torch.fft` lowers to.
//
// The prim dialect has no complex type: a complex tensor of shape S is a
// real tensor of shape [S..., 2] holding (real, imaginary) pairs, PyTorch's
// own memory layout of complex64/complex128 (what `view_as_real` shows), so
// graph inputs and outputs need no conversion. tc-decompose converts the
// types of the graph's arguments and results the same way
// (`loweredType`). Ops without a complex decomposition here reject complex
// operands rather than treating the pairs as numbers.
//
// A transform along one dimension of length n is a product with the n x m
// matrices of cos and sin of 2 pi j k / n (computed in f64 from j k mod n,
// then rounded), one GEMM per real/imaginary part: O(n m) per row, against
// O(n log n) for an FFT, which suits only short signals: limits::kMaxFFTSize
// bounds n, and longer transforms run in eager's FFT library.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

using limits::kMaxFFTSize;

Type decompose::loweredType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return type;
  auto complex = dyn_cast<ComplexType>(tensor.getElementType());
  if (!complex)
    return type;
  SmallVector<int64_t> shape(tensor.getShape());
  shape.push_back(2);
  return RankedTensorType::get(shape, complex.getElementType());
}

bool decompose::isComplex(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<ComplexType>(tensor.getElementType());
}

namespace {
/// A complex tensor as its two real parts (`im` is null for a real one).
struct Parts {
  Value re, im;
};
} // namespace

/// Ops that only move elements (each result element is one operand
/// element, or a zero of padding): on complex tensors, the real and the
/// imaginary parts go through the op's real decomposition separately.
static const llvm::StringSet<> kPositionalOps = {
    "aten::slice.Tensor", "aten::constant_pad_nd", "aten::permute",
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::expand",
    "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim",
    "aten::squeeze.dims", "aten::cat", "aten::select.int", "aten::flip",
    "aten::roll", "aten::t", "aten::transpose.int", "aten::index_select",
    "aten::repeat", "aten::slice_scatter", "aten::select_scatter"};

std::optional<Decomposer::Result> Decomposer::complexOrFFT(StringRef target) {
  if (partsOnly)
    return std::nullopt;
  bool anyComplex = llvm::any_of(op.getTensors(), [](Value v) {
    return isComplex(v.getType());
  }) || llvm::any_of(op.getResults(), [](Value v) {
    return isComplex(v.getType());
  });
  bool isFFT = target == "aten::_fft_r2c" || target == "aten::_fft_c2c" ||
               target == "aten::_fft_c2r";
  if (!anyComplex && !isFFT) {
    // Of a real tensor, these are the tensor itself.
    if (target == "aten::_conj" || target == "aten::conj" ||
        target == "aten::_conj_physical" || target == "aten::conj_physical" ||
        target == "aten::real")
      return Result(SmallVector<Value>{coerce(operands[0], resultType())});
    return std::nullopt;
  }

  auto one = [](Value v) -> Result { return SmallVector<Value>{v}; };
  // The real shape of a (complex) fx value, and its part type.
  auto partsOf = [&](unsigned i) -> Parts {
    Value v = operands[i];
    if (!isComplex(op.getTensors()[i].getType()))
      return {v, Value()};
    RankedTensorType type = typeOf(v);
    int64_t rank = type.getRank();
    SmallVector<int64_t> start(rank, 0), limit(type.getShape()),
        step(rank, 1);
    SmallVector<int64_t> shape(type.getShape().drop_back());
    limit[rank - 1] = 1;
    Value re = reshape(prim::SliceOp::create(b, loc, v, start, limit, step),
                       shape);
    start[rank - 1] = 1;
    limit[rank - 1] = 2;
    Value im = reshape(prim::SliceOp::create(b, loc, v, start, limit, step),
                       shape);
    return {re, im};
  };
  auto pack = [&](Value re, Value im) -> Value {
    SmallVector<int64_t> shape(typeOf(re).getShape());
    shape.push_back(1);
    return prim::ConcatenateOp::create(
        b, loc, ValueRange{reshape(re, shape), reshape(im, shape)},
        shape.size() - 1);
  };
  // The result's shape and (part) element type.
  auto partType = [&](unsigned i = 0) -> RankedTensorType {
    RankedTensorType type = resultType(i);
    if (auto c = dyn_cast<ComplexType>(type.getElementType()))
      return RankedTensorType::get(type.getShape(), c.getElementType());
    return type;
  };
  auto coerceParts = [&](Parts p, RankedTensorType type) -> Parts {
    Value im = p.im ? coerce(p.im, type) : splat(type, 0);
    return {coerce(p.re, type), im};
  };
  bool resultComplex =
      op.getNumResults() > 0 && isComplex(op.getResult(0).getType());

  if (kPositionalOps.contains(target)) {
    if (target == "aten::constant_pad_nd" && floatArg("value", 0) != 0)
      return Result(fail("complex padding with a value other than 0"));
    SmallVector<Value> reOperands, imOperands;
    for (unsigned i = 0; i < operands.size(); ++i) {
      Parts p = partsOf(i);
      reOperands.push_back(p.re);
      if (p.im)
        imOperands.push_back(p.im);
      else if (isa<FloatType>(typeOf(p.re).getElementType()))
        // A real value promoted to complex (cat's real operand, a scatter's
        // real source): its imaginary part is 0.
        imOperands.push_back(splat(typeOf(p.re), 0));
      else
        imOperands.push_back(p.re); // an index: the same
    }
    SmallVector<Type> types;
    for (unsigned i = 0; i < op.getNumResults(); ++i)
      types.push_back(partType(i));
    // The same call on the parts: a temporary op with real results (its
    // operands stay the graph's; the decomposition reads `operands`).
    auto parts = fx::CallFunctionOp::create(
        b, loc, types, op.getTargetAttr(), op.getTensors(), op.getArgsAttr(),
        op.getTensorArgSizesAttr(), op.getNameAttr());
    Decomposer reals(b, parts, reOperands, random),
        imaginaries(b, parts, imOperands, random);
    reals.partsOnly = imaginaries.partsOnly = true;
    FailureOr<SmallVector<Value>> re = reals.run();
    FailureOr<SmallVector<Value>> im =
        succeeded(re) ? imaginaries.run() : FailureOr<SmallVector<Value>>();
    parts.erase();
    if (failed(re) || failed(im))
      return Result(failure());
    SmallVector<Value> results;
    for (auto [r, i] : llvm::zip(*re, *im))
      results.push_back(pack(r, i));
    return Result(results);
  }

  if (target == "aten::_to_copy" || target == "aten::clone" ||
      target == "aten::alias" || target == "aten::lift_fresh_copy" ||
      target == "aten::resolve_conj" || target == "aten::resolve_neg") {
    Parts p = partsOf(0);
    if (!resultComplex) // complex to real: eager drops the imaginary part
      return one(coerce(p.re, resultType()));
    Parts q = coerceParts(p, partType());
    return one(pack(q.re, q.im));
  }
  if (target == "aten::_conj" || target == "aten::conj" ||
      target == "aten::_conj_physical" || target == "aten::conj_physical") {
    Parts q = coerceParts(partsOf(0), partType());
    return one(pack(q.re, prim::NegOp::create(b, loc, q.im)));
  }
  if (target == "aten::complex") {
    RankedTensorType type = partType();
    return one(pack(coerce(operands[0], type), coerce(operands[1], type)));
  }
  if (target == "aten::polar") {
    RankedTensorType type = partType();
    Value r = coerce(operands[0], type), theta = coerce(operands[1], type);
    return one(pack(mul(r, prim::CosOp::create(b, loc, theta)),
                    mul(r, prim::SinOp::create(b, loc, theta))));
  }
  if (target == "aten::view_as_real" || target == "aten::view_as_complex")
    // The same pairs either way.
    return one(operands[0]);
  if (target == "aten::real" || target == "aten::imag") {
    Parts p = partsOf(0);
    Value part = target == "aten::real" ? p.re : p.im;
    return one(part ? coerce(part, resultType()) : splat(resultType(), 0));
  }
  if (target == "aten::angle") {
    Parts p = partsOf(0);
    RankedTensorType type = resultType();
    return one(prim::Atan2Op::create(b, loc, coerce(p.im, type),
                                     coerce(p.re, type))
                   .getResult());
  }
  if (target == "aten::abs") {
    Parts p = partsOf(0);
    RankedTensorType type = resultType();
    // |re + i im| without overflowing or underflowing the squares
    // (1e30 + 1e30i: 1.41e30, not inf).
    return one(hypot(coerce(p.re, type), coerce(p.im, type)));
  }
  // (The importer writes a scalar `other` as the .Scalar overload.)
  StringRef arith = target;
  if (arith.ends_with(".Scalar"))
    arith = arith.drop_back(strlen(".Scalar"));
  else if (arith.ends_with(".Tensor"))
    arith = arith.drop_back(strlen(".Tensor"));
  if ((arith == "aten::add" || arith == "aten::sub" || arith == "aten::mul" ||
       arith == "aten::div") &&
      (operands.size() == 2 || operands.size() == 1) && resultComplex) {
    RankedTensorType type = partType();
    // A complex product, as c10::complex's (0 * inf is NaN in a part, as
    // in eager: no shortcut for a real factor).
    auto times = [&](Parts a, Parts c) -> Parts {
      return {sub(mul(a.re, c.re), mul(a.im, c.im)),
              add(mul(a.re, c.im), mul(a.im, c.re))};
    };
    Parts x = coerceParts(partsOf(0), type), y;
    if (operands.size() == 2) {
      y = coerceParts(partsOf(1), type);
    } else {
      // A real scalar `other`, as eager promotes it: (other, 0).
      if (!isa_and_present<FloatAttr, IntegerAttr>(arg("other")))
        return Result(fail("a complex scalar operand is not supported"));
      y = {splat(type, floatArg("other", 0)), splat(type, 0)};
    }
    if (arg("alpha")) {
      if (!isa<FloatAttr, IntegerAttr>(arg("alpha")))
        return Result(fail("a complex alpha is not supported"));
      y = times(y, {splat(type, floatArg("alpha", 1)), splat(type, 0)});
    }
    if (arith == "aten::div") {
      // c10::complex's division (NumPy's): the smaller of |c| and |d| as a
      // ratio of the larger, so that neither square overflows; 0 / 0
      // divides each part by a zero (inf or NaN parts, as eager's).
      Value a = x.re, bp = x.im, c = y.re, d = y.im;
      Value absC = prim::AbsOp::create(b, loc, c);
      Value absD = prim::AbsOp::create(b, loc, d);
      Value cFirst = prim::CompareOp::create(b, loc, P::GE, absC, absD);
      Value zero = splat(type, 0), one1 = splat(type, 1);
      Value both0 = prim::BitwiseAndOp::create(
          b, loc, prim::CompareOp::create(b, loc, P::EQ, absC, zero),
          prim::CompareOp::create(b, loc, P::EQ, absD, zero));
      // |c| >= |d|: rat = d / c, scl = 1 / (c + d rat).
      Value ratC = div(d, c);
      Value sclC = div(one1, add(c, mul(d, ratC)));
      Value reC = mul(add(a, mul(bp, ratC)), sclC);
      Value imC = mul(sub(bp, mul(a, ratC)), sclC);
      // Otherwise: rat = c / d, scl = 1 / (d + c rat).
      Value ratD = div(c, d);
      Value sclD = div(one1, add(d, mul(c, ratD)));
      Value reD = mul(add(mul(a, ratD), bp), sclD);
      Value imD = mul(sub(mul(bp, ratD), a), sclD);
      Value re = prim::WhereOp::create(
          b, loc, cFirst,
          prim::WhereOp::create(b, loc, both0, div(a, absC), reC), reD);
      Value im = prim::WhereOp::create(
          b, loc, cFirst,
          prim::WhereOp::create(b, loc, both0, div(bp, absD), imC), imD);
      return one(pack(re, im));
    }
    if (arith == "aten::add")
      return one(pack(add(x.re, y.re), add(x.im, y.im)));
    if (arith == "aten::sub")
      return one(pack(sub(x.re, y.re), sub(x.im, y.im)));
    Parts product = times(x, y);
    return one(pack(product.re, product.im));
  }

  if (isFFT) {
    // The dimensions, the normalization (0: none, 1: 1/sqrt(n), 2: 1/n of
    // the transformed sizes' product) and the direction.
    Parts x = partsOf(0);
    RankedTensorType outType = partType();
    Type elt = outType.getElementType();
    if (!isa<FloatType>(elt) || elt.isF16() || elt.isBF16())
      return Result(fail("transforms of " + quoted(resultType()) +
                         " are not supported"));
    int64_t rank = outType.getRank();
    SmallVector<int64_t> dims;
    for (int64_t d : intListArg("dim").value_or(SmallVector<int64_t>{})) {
      d = normalizeDim(d, rank);
      if (d < 0 || d >= rank || llvm::is_contained(dims, d))
        return Result(fail("bad transform dimension " + Twine(d)));
      dims.push_back(d);
    }
    if (dims.empty()) {
      Parts q = coerceParts(x, outType);
      return one(resultComplex ? pack(q.re, q.im) : q.re);
    }
    int64_t normalization = intArg("normalization", 0);
    bool forward = target == "aten::_fft_r2c" ||
                   (target == "aten::_fft_c2c" && boolArg("forward", true));
    int64_t last = dims.back();
    Value re = convert(x.re, elt);
    Value im = x.im ? convert(x.im, elt) : Value();

    // One dimension: Re = xr C - xi S, Im = xi C + xr S, with C and S the
    // n x m matrices of cos and (sign) sin of 2 pi j k / n. For c2r, the
    // half spectrum is weighted by its Hermitian partners.
    auto transform = [&](int64_t dim, int64_t n, int64_t m, bool toReal)
        -> LogicalResult {
      int64_t in = typeOf(re).getDimSize(dim);
      if (n < 1 || in < 1 || m < 1)
        return fail("a transform of no points");
      if (n > kMaxFFTSize || in > kMaxFFTSize || m > kMaxFFTSize)
        return fail("signals longer than " + Twine(kMaxFFTSize) +
                    " are not transformed");
      Type f64 = b.getF64Type();
      SmallVector<int64_t> grid = {in, m};
      auto gridType = RankedTensorType::get(grid, b.getI64Type());
      Value jk = prim::RemOp::create(b, loc, mul(iota(grid, 0), iota(grid, 1)),
                                     splat(gridType, n));
      Value theta = mul(convert(jk, f64),
                        splat(gridType.clone(f64), 2 * M_PI / double(n)));
      Value cos = prim::CosOp::create(b, loc, theta);
      Value sin = prim::SinOp::create(b, loc, theta);
      if (forward)
        sin = prim::NegOp::create(b, loc, sin);
      if (toReal) {
        // Row k of the half spectrum stands for k and n - k: weight 2,
        // except k = 0 and k = n / 2, whose imaginary parts eager ignores.
        auto f64Grid = gridType.clone(f64);
        Value k = iota(grid, 0);
        Value self = prim::BitwiseOrOp::create(
            b, loc, cmp(P::EQ, k, splat(gridType, 0)),
            cmp(P::EQ, mul(k, splat(gridType, 2)), splat(gridType, n)));
        Value beyond = cmp(P::GT, mul(k, splat(gridType, 2)),
                           splat(gridType, n));
        Value weight = sel(self, splat(f64Grid, 1), splat(f64Grid, 2));
        weight = sel(beyond, splat(f64Grid, 0), weight);
        cos = mul(cos, weight);
        sin = mul(sin, sel(self, splat(f64Grid, 0), weight));
      }
      cos = convert(cos, elt);
      sin = convert(sin, elt);
      auto apply = [&](Value v, Value matrix) -> Value {
        // [..., in (at dim), ...] -> [rows, in] @ [in, m] -> back.
        RankedTensorType t = typeOf(v);
        int64_t r = t.getRank();
        SmallVector<int64_t> perm, others;
        for (int64_t d = 0; d < r; ++d)
          if (d != dim) {
            perm.push_back(d);
            others.push_back(t.getDimSize(d));
          }
        perm.push_back(dim);
        bool moves = dim != r - 1;
        Value moved = moves ? permute(v, perm) : v;
        int64_t rows = t.getNumElements() / std::max<int64_t>(in, 1);
        Value product = matmul(reshape(moved, {rows, in}), matrix);
        SmallVector<int64_t> outShape(others);
        outShape.push_back(m);
        Value back = reshape(product, outShape);
        if (!moves)
          return back;
        SmallVector<int64_t> inverse(r);
        for (auto [i, p] : llvm::enumerate(perm))
          inverse[p] = i;
        return prim::PermuteOp::create(b, loc, back, inverse);
      };
      Value newRe = apply(re, cos);
      if (im)
        newRe = sub(newRe, apply(im, sin));
      if (toReal) {
        re = newRe;
        im = Value();
        return success();
      }
      Value newIm = apply(re, sin);
      if (im)
        newIm = add(newIm, apply(im, cos));
      re = newRe;
      im = newIm;
      return success();
    };

    int64_t total = 1;
    if (target == "aten::_fft_r2c") {
      int64_t n = typeOf(re).getDimSize(last);
      if (failed(transform(last, n, outType.getDimSize(last), false)))
        return Result(failure());
      total *= n;
      for (int64_t d : ArrayRef<int64_t>(dims).drop_back()) {
        int64_t size = typeOf(re).getDimSize(d);
        if (failed(transform(d, size, size, false)))
          return Result(failure());
        total *= size;
      }
    } else if (target == "aten::_fft_c2c") {
      for (int64_t d : dims) {
        int64_t size = typeOf(re).getDimSize(d);
        if (failed(transform(d, size, size, false)))
          return Result(failure());
        total *= size;
      }
    } else {
      for (int64_t d : ArrayRef<int64_t>(dims).drop_back()) {
        int64_t size = typeOf(re).getDimSize(d);
        if (failed(transform(d, size, size, false)))
          return Result(failure());
        total *= size;
      }
      int64_t n = intArg("last_dim_size", outType.getDimSize(last));
      if (!im)
        im = splat(typeOf(re), 0);
      if (failed(transform(last, n, n, true)))
        return Result(failure());
      total *= n;
    }
    if (normalization == 1 || normalization == 2) {
      double scale = normalization == 1 ? 1 / std::sqrt(double(total))
                                        : 1 / double(total);
      re = mul(re, splat(typeOf(re), scale));
      if (im)
        im = mul(im, splat(typeOf(im), scale));
    }
    if (!resultComplex)
      return one(reshape(re, outType.getShape()));
    return one(pack(reshape(re, outType.getShape()),
                    reshape(im, outType.getShape())));
  }

  return Result(fail("complex tensors are not supported by this op (tc "
                     "decomposes conversions, conj, abs, add/sub/mul and "
                     "the Fourier transforms)"));
}
