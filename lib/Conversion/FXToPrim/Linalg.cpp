//===- Linalg.cpp - LU, Cholesky and QR factorizations, solves --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for the dense factorizations of small matrices: LU with
// partial pivoting (`linalg_lu_factor_ex`, `linalg_lu`, `lu_unpack`,
// `_linalg_det`, `_linalg_slogdet`, `linalg_inv_ex`, `_linalg_solve_ex`,
// `linalg_lu_solve`), Cholesky (`linalg_cholesky_ex`, `cholesky`,
// `cholesky_solve`, `cholesky_inverse`), Householder QR (`geqrf`,
// `linalg_qr`, `linalg_householder_product`, `ormqr`) and triangular solves
// (`linalg_solve_triangular`, `triangular_solve`).
//
// The shapes are static, so the algorithms unroll: step k of LAPACK's
// unblocked getf2 (pivot search, row swap, scaling, rank-1 update), potf2
// or geqr2 (dlarfg's reflector, applied to the trailing columns) is a
// handful of prim ops over the whole batch, and a substitution is one step
// per row. The pivot is the first largest magnitude of the column, as
// LAPACK's idamax picks it, so the factors, pivots and info codes are
// eager's; QR's reflectors are LAPACK's, so Q and R have its signs. The IR
// grows with n (about 25 ops per step), which tc.support bounds
// (LINALG_MAX_SIZE).
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

using limits::kMaxLinalgSize;

namespace {
/// An LU factorization with partial pivoting of [batch..., m, n].
struct LU {
  Value lu;      // the packed factors
  Value pivots;  // [batch..., min(m, n)] i64, 1-based as LAPACK's
  Value perm;    // [batch..., m] i64: the original row at each row
  Value odd;     // [batch...] i1: an odd number of swaps
  Value info;    // [batch...] i64: the first zero pivot (1-based), or 0
};
} // namespace

std::optional<Decomposer::Result> Decomposer::linalg(StringRef target) {
  static const llvm::StringSet<> names = {
      "aten::linalg_lu_factor_ex",  "aten::linalg_lu",
      "aten::lu_unpack",            "aten::_linalg_det",
      "aten::_linalg_slogdet",      "aten::linalg_inv_ex",
      "aten::_linalg_solve_ex",     "aten::linalg_lu_solve",
      "aten::linalg_cholesky_ex",   "aten::cholesky",
      "aten::cholesky_solve",       "aten::cholesky_inverse",
      "aten::linalg_solve_triangular", "aten::triangular_solve",
      "aten::geqrf", "aten::linalg_qr", "aten::linalg_householder_product",
      "aten::ormqr"};
  if (!names.contains(target))
    return std::nullopt;
  for (Value v : operands) {
    ArrayRef<int64_t> shape = typeOf(v).getShape();
    for (int64_t d = std::max<int64_t>(0, shape.size() - 2);
         d < static_cast<int64_t>(shape.size()); ++d)
      if (shape[d] > kMaxLinalgSize)
        return Result(fail("matrices larger than " + Twine(kMaxLinalgSize) +
                           " are not unrolled"));
  }

  // Shapes (the verifier checks the schema, not the linear algebra):
  // matrices of rank >= 2, square where the op needs it, right-hand sides
  // with the matrix's rows.
  auto matrix = [&](unsigned i, bool square) -> bool {
    if (i >= operands.size())
      return false;
    ArrayRef<int64_t> s = typeOf(operands[i]).getShape();
    return s.size() >= 2 && (!square || s[s.size() - 2] == s.back());
  };
  auto rowsMatch = [&](unsigned a, unsigned rhs, bool left) -> bool {
    if (rhs >= operands.size())
      return false;
    ArrayRef<int64_t> s = typeOf(operands[rhs]).getShape();
    int64_t n = typeOf(operands[a]).getShape().back();
    if (s.empty())
      return false;
    if (s.size() == 1)
      return s[0] == n;
    return (left ? s[s.size() - 2] : s.back()) == n;
  };
  bool left = boolArg("left", true);
  bool shapesOk = matrix(0, false);
  if (target == "aten::_linalg_det" || target == "aten::_linalg_slogdet" ||
      target == "aten::linalg_inv_ex" || target == "aten::linalg_cholesky_ex" ||
      target == "aten::cholesky" || target == "aten::cholesky_inverse")
    shapesOk = matrix(0, true);
  else if (target == "aten::_linalg_solve_ex")
    // A batch of vectors (rank one less than A's, ending in n) is solved
    // as one-column matrices, as eager does.
    shapesOk = matrix(0, true) && operands.size() > 1 &&
               (rowsMatch(0, 1, left) ||
                typeOf(operands[1]).getShape() ==
                    typeOf(operands[0]).getShape().drop_back());
  else if (target == "aten::linalg_lu_solve")
    shapesOk = matrix(0, true) && matrix(2, false) && rowsMatch(0, 2, left) &&
               typeOf(operands[1]).getRank() >= 1 &&
               typeOf(operands[1]).getShape().back() ==
                   typeOf(operands[0]).getShape().back();
  else if (target == "aten::linalg_solve_triangular")
    shapesOk = matrix(0, true) && matrix(1, false) && rowsMatch(0, 1, left);
  else if (target == "aten::triangular_solve" ||
           target == "aten::cholesky_solve")
    shapesOk = matrix(0, false) && matrix(1, true) && rowsMatch(1, 0, true);
  else if (target == "aten::lu_unpack")
    shapesOk = matrix(0, false) && operands.size() > 1 &&
               typeOf(operands[1]).getRank() >= 1 &&
               typeOf(operands[1]).getShape().back() ==
                   std::min(typeOf(operands[0]).getShape().back(),
                            typeOf(operands[0]).getShape().drop_back().back());
  else if (target == "aten::linalg_householder_product" ||
           target == "aten::ormqr") {
    // tau: one per reflection, at most one per row; other: m rows (or
    // columns, from the right) and the same batch.
    auto tauOk = [&]() {
      if (operands.size() < 2)
        return false;
      ArrayRef<int64_t> a = typeOf(operands[0]).getShape(),
                        t = typeOf(operands[1]).getShape();
      return t.size() + 1 == a.size() && t.drop_back() == a.drop_back(2) &&
             t.back() <= std::min(a[a.size() - 2], a.back());
    };
    shapesOk = matrix(0, false) && tauOk();
    if (target == "aten::ormqr")
      shapesOk = shapesOk && matrix(2, false) &&
                 typeOf(operands[2]).getShape().drop_back(2) ==
                     typeOf(operands[0]).getShape().drop_back(2) &&
                 [&] {
                   ArrayRef<int64_t> a = typeOf(operands[0]).getShape(),
                                     c = typeOf(operands[2]).getShape();
                   int64_t m = a[a.size() - 2];
                   return (left ? c[c.size() - 2] : c.back()) == m;
                 }();
  }
  if (!shapesOk)
    return Result(fail("operands of shapes the factorization does not take"));

  Type i64 = b.getI64Type();
  auto shapeOf = [&](Value v) { return typeOf(v).getShape(); };
  auto like = [&](Value v, Type elt) { return typeOf(v).clone(elt); };
  // Element k of the last dimension (dropped) or of the one before.
  auto pick = [&](Value v, int64_t k, bool lastDim) -> Value {
    ArrayRef<int64_t> shape = shapeOf(v);
    int64_t rank = shape.size(), d = lastDim ? rank - 1 : rank - 2;
    SmallVector<int64_t> start(rank, 0), limit(shape), step(rank, 1);
    start[d] = k;
    limit[d] = k + 1;
    Value s = prim::SliceOp::create(b, loc, v, start, limit, step);
    SmallVector<int64_t> kept(shape);
    kept.erase(kept.begin() + d);
    return reshape(s, kept);
  };
  auto column = [&](Value a, int64_t k) { return pick(a, k, true); };
  auto row = [&](Value a, int64_t k) { return pick(a, k, false); };
  // [batch..., m] x [batch..., n] -> [batch..., m, n].
  auto outer = [&](Value u, Value v) -> Value {
    SmallVector<int64_t> shape(shapeOf(u));
    shape.push_back(shapeOf(v).back());
    int64_t lead = shape.size() - 2;
    SmallVector<int64_t> uDims, vDims;
    for (int64_t d = 0; d < lead; ++d) {
      uDims.push_back(d);
      vDims.push_back(d);
    }
    uDims.push_back(lead);
    vDims.push_back(lead + 1);
    return mul(prim::BroadcastInDimOp::create(b, loc, u, shape, uDims),
               prim::BroadcastInDimOp::create(b, loc, v, shape, vDims));
  };
  // v ([batch..., m] or [batch...]) spread over a larger shape along its
  // leading dimensions.
  auto spread = [&](Value v, ArrayRef<int64_t> shape) -> Value {
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < typeOf(v).getRank(); ++d)
      dims.push_back(d);
    return prim::BroadcastInDimOp::create(b, loc, v, shape, dims);
  };
  // Row r of the result is row index[r] of `a` ([batch..., m, k] by
  // [batch..., m]): a one-hot selection.
  auto permuteRows = [&](Value a, Value index) -> Value {
    ArrayRef<int64_t> shape = shapeOf(a);
    int64_t rank = shape.size();
    SmallVector<int64_t> wide(shape.drop_back(1));
    wide.push_back(shape[rank - 2]);
    wide.push_back(shape[rank - 1]);
    // [batch..., r, i, k]
    SmallVector<int64_t> aDims, iDims;
    for (int64_t d = 0; d < rank - 2; ++d) {
      aDims.push_back(d);
      iDims.push_back(d);
    }
    aDims.append({rank - 1, rank});
    iDims.push_back(rank - 2);
    Value hit = cmp(P::EQ,
                    prim::BroadcastInDimOp::create(b, loc, index, wide, iDims),
                    iota(wide, rank - 1));
    auto wideType = RankedTensorType::get(wide, typeOf(a).getElementType());
    return prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        sel(hit, prim::BroadcastInDimOp::create(b, loc, a, wide, aDims),
            splat(wideType, 0)),
        ArrayRef<int64_t>{rank - 1});
  };
  auto transpose = [&](Value a) -> Value {
    int64_t rank = typeOf(a).getRank();
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank - 2; ++d)
      perm.push_back(d);
    perm.append({rank - 1, rank - 2});
    return prim::PermuteOp::create(b, loc, a, perm);
  };
  // The lower (or upper) triangle of a, the diagonal set to 1 when `unit`.
  auto triangle = [&](Value a, bool lower, bool strict) -> Value {
    ArrayRef<int64_t> shape = shapeOf(a);
    int64_t rank = shape.size();
    Value i = iota(shape, rank - 2), j = iota(shape, rank - 1);
    Value keep = cmp(lower ? (strict ? P::GT : P::GE) : (strict ? P::LT : P::LE),
                     i, j);
    return sel(keep, a, splat(typeOf(a), 0));
  };
  auto identity = [&](RankedTensorType type) -> Value {
    int64_t rank = type.getRank();
    Value eq = cmp(P::EQ, iota(type.getShape(), rank - 2),
                   iota(type.getShape(), rank - 1));
    return sel(eq, splat(type, 1), splat(type, 0));
  };

  // The shapes a factorization of [batch..., m, n] steps through: a column
  // [batch..., m] and its i64 type, min(m, n) steps.
  struct Steps {
    int64_t rank, m, n, steps;
    SmallVector<int64_t> batch, colShape;
    RankedTensorType colType;
  };
  auto stepsOf = [&](RankedTensorType type) -> Steps {
    ArrayRef<int64_t> shape = type.getShape();
    Steps s;
    s.rank = shape.size();
    s.m = shape[s.rank - 2];
    s.n = shape[s.rank - 1];
    s.steps = std::min(s.m, s.n);
    s.batch.assign(shape.begin(), shape.end() - 2);
    s.colShape = s.batch;
    s.colShape.push_back(s.m);
    s.colType = RankedTensorType::get(s.colShape, i64);
    return s;
  };

  // LAPACK's getf2.
  auto factor = [&](Value a) -> LU {
    RankedTensorType type = typeOf(a);
    ArrayRef<int64_t> shape = type.getShape();
    Steps st = stepsOf(type);
    int64_t rank = st.rank, m = st.m, steps = st.steps;
    SmallVector<int64_t> batch = st.batch, colShape = st.colShape;
    RankedTensorType colType = st.colType;
    auto batchType = RankedTensorType::get(batch, i64);
    Value perm = iota(colShape, rank - 2);
    Value info = splat(batchType, 0);
    Value odd = splat(RankedTensorType::get(batch, b.getI1Type()), 0);
    SmallVector<Value> pivots;
    Value rows = iota(shape, rank - 2), cols = iota(shape, rank - 1);
    Value rowIds = iota(colShape, rank - 2);
    for (int64_t k = 0; k < steps; ++k) {
      // The first largest |a[i, k]|, i >= k.
      Value col = column(a, k);
      Value mag = sel(cmp(P::GE, rowIds, splat(colType, k)),
                      prim::AbsOp::create(b, loc, col),
                      splat(typeOf(col), -1));
      Value best = prim::ReduceOp::create(b, loc, prim::ReductionKind::Max,
                                          mag, ArrayRef<int64_t>{rank - 2});
      Value isBest = cmp(P::EQ, mag, spread(best, colShape));
      Value p = prim::ReduceOp::create(
          b, loc, prim::ReductionKind::Min,
          sel(isBest, rowIds, splat(colType, m)),
          ArrayRef<int64_t>{rank - 2});
      // NaN columns: no row compares equal; keep row k.
      p = sel(cmp(P::EQ, p, splat(batchType, m)), splat(batchType, k), p);
      pivots.push_back(add(p, splat(batchType, 1)));
      odd = prim::BitwiseXorOp::create(b, loc, odd,
                                       cmp(P::NE, p, splat(batchType, k)));
      // Swap rows k and p (of a and of the permutation).
      Value pw = spread(p, shape);
      SmallVector<int64_t> rowDims;
      for (int64_t d = 0; d < rank - 2; ++d)
        rowDims.push_back(d);
      rowDims.push_back(rank - 1);
      Value rowK =
          prim::BroadcastInDimOp::create(b, loc, row(a, k), shape, rowDims);
      Value rowP = prim::ReduceOp::create(
          b, loc, prim::ReductionKind::Sum,
          sel(cmp(P::EQ, rows, pw), a, splat(type, 0)),
          ArrayRef<int64_t>{rank - 2});
      rowP = prim::BroadcastInDimOp::create(b, loc, rowP, shape, rowDims);
      Value atK = cmp(P::EQ, rows, splat(like(rows, i64), k));
      Value atP = cmp(P::EQ, rows, pw);
      a = sel(atK, rowP, sel(atP, rowK, a));
      Value pc = spread(p, colShape);
      Value permK = spread(pick(perm, k, true), colShape);
      Value permP = prim::ReduceOp::create(
          b, loc, prim::ReductionKind::Sum,
          sel(cmp(P::EQ, rowIds, pc), perm, splat(colType, 0)),
          ArrayRef<int64_t>{rank - 2});
      perm = sel(cmp(P::EQ, rowIds, splat(colType, k)), spread(permP, colShape),
                 sel(cmp(P::EQ, rowIds, pc), permK, perm));
      // Scale the column below the pivot, update the trailing block.
      Value pivot = pick(column(a, k), k, true);
      Value zero = cmp(P::EQ, pivot, splat(typeOf(pivot), 0));
      info = sel(andI(zero, cmp(P::EQ, info, splat(batchType, 0))),
                 splat(batchType, k + 1), info);
      Value below = cmp(P::GT, rowIds, splat(colType, k));
      Value scaled = sel(andI(below, prim::BitwiseNotOp::create(
                                         b, loc, spread(zero, colShape))),
                         div(column(a, k), spread(pivot, colShape)),
                         column(a, k));
      Value update = outer(scaled, row(a, k));
      Value trailing = andI(cmp(P::GT, rows, splat(like(rows, i64), k)),
                            cmp(P::GT, cols, splat(like(cols, i64), k)));
      Value inColumn = andI(cmp(P::EQ, cols, splat(like(cols, i64), k)),
                            cmp(P::GT, rows, splat(like(rows, i64), k)));
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < rank - 1; ++d)
        dims.push_back(d);
      Value scaledWide =
          prim::BroadcastInDimOp::create(b, loc, scaled, shape, dims);
      a = sel(trailing, sub(a, update), sel(inColumn, scaledWide, a));
    }
    SmallVector<int64_t> pivShape(batch);
    pivShape.push_back(steps);
    Value piv;
    if (steps == 0) {
      piv = splat(RankedTensorType::get(pivShape, i64), 0);
    } else {
      SmallVector<Value> parts;
      for (Value p : pivots)
        parts.push_back(reshape(p, [&] {
          SmallVector<int64_t> s(batch);
          s.push_back(1);
          return s;
        }()));
      piv = parts.size() == 1
                ? parts[0]
                : prim::ConcatenateOp::create(b, loc, parts, rank - 2)
                      .getResult();
    }
    return {a, piv, perm, odd, info};
  };

  // The rows' order after LAPACK's swaps `pivots` (1-based, applied in
  // order) on a matrix of `shape`: the original row at each row.
  auto permutationOf = [&](Value pivots, ArrayRef<int64_t> shape) -> Value {
    int64_t rank = shape.size(), m = shape[rank - 2];
    SmallVector<int64_t> colShape(shape.drop_back(2));
    colShape.push_back(m);
    auto colType = RankedTensorType::get(colShape, i64);
    Value perm = iota(colShape, rank - 2), ids = perm;
    for (int64_t s = 0; s < std::min(m, shape[rank - 1]); ++s) {
      Value p = sub(pick(pivots, s, true),
                    splat(typeOf(pick(pivots, s, true)), 1));
      Value pc = spread(p, colShape);
      Value permS = spread(pick(perm, s, true), colShape);
      Value permP = spread(
          prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum,
                                 sel(cmp(P::EQ, ids, pc), perm,
                                     splat(colType, 0)),
                                 ArrayRef<int64_t>{rank - 2}),
          colShape);
      perm = sel(cmp(P::EQ, ids, splat(colType, s)), permP,
                 sel(cmp(P::EQ, ids, pc), permS, perm));
    }
    return perm;
  };

  // Solves T x = rhs for triangular T ([batch..., n, n]), rhs
  // [batch..., n, k], by substitution: lower runs down, upper up.
  auto substitute = [&](Value t, Value rhs, bool lower, bool unit) -> Value {
    ArrayRef<int64_t> shape = shapeOf(rhs);
    int64_t rank = shape.size(), n = shape[rank - 2];
    Value rows = iota(shape, rank - 2);
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < rank - 2; ++d)
      dims.push_back(d);
    dims.push_back(rank - 1);
    for (int64_t s = 0; s < n; ++s) {
      int64_t i = lower ? s : n - 1 - s;
      Value xi = row(rhs, i);
      if (!unit) {
        Value diag = pick(column(t, i), i, true);
        SmallVector<int64_t> rowShape(shape.drop_back(2));
        rowShape.push_back(shape[rank - 1]);
        xi = div(xi, spread(diag, rowShape));
      }
      Value xiWide = prim::BroadcastInDimOp::create(b, loc, xi, shape, dims);
      Value atI = cmp(P::EQ, rows, splat(like(rows, i64), i));
      Value after = cmp(lower ? P::GT : P::LT, rows,
                        splat(like(rows, i64), i));
      Value update = outer(column(t, i), xi);
      rhs = sel(atI, xiWide, sel(after, sub(rhs, update), rhs));
    }
    return rhs;
  };

  // Householder reflections H = I - tau v v^T, v[k] = 1, stored as LAPACK
  // does: v below the diagonal of column k, tau apart.
  auto reflector = [&](Value packed, int64_t k) -> Value {
    ArrayRef<int64_t> shape = shapeOf(packed);
    SmallVector<int64_t> colShape(shape.drop_back(1));
    auto colType = RankedTensorType::get(colShape, i64);
    Value ids = iota(colShape, colShape.size() - 1);
    Value col = column(packed, k);
    return sel(cmp(P::GT, ids, splat(colType, k)), col,
               sel(cmp(P::EQ, ids, splat(colType, k)),
                   splat(typeOf(col), 1), splat(typeOf(col), 0)));
  };
  // c - tau v (v^T c) (from the left) or c - tau (c v) v^T (the right).
  auto reflect = [&](Value c, Value v, Value tau, bool left) -> Value {
    ArrayRef<int64_t> shape = shapeOf(c);
    int64_t rank = shape.size();
    if (left) {
      Value w = prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum,
                                       mul(spread(v, shape), c),
                                       ArrayRef<int64_t>{rank - 2});
      return sub(c, mul(outer(v, w), spread(tau, shape)));
    }
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < rank - 2; ++d)
      dims.push_back(d);
    dims.push_back(rank - 1);
    Value w = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        mul(prim::BroadcastInDimOp::create(b, loc, v, shape, dims), c),
        ArrayRef<int64_t>{rank - 1});
    return sub(c, mul(outer(w, v), spread(tau, shape)));
  };
  // LAPACK's geqr2 (with dlarfg's reflector): the packed factor and tau.
  auto householderQR = [&](Value a) -> std::pair<Value, Value> {
    RankedTensorType type = typeOf(a);
    ArrayRef<int64_t> shape = type.getShape();
    Steps st = stepsOf(type);
    int64_t rank = st.rank, steps = st.steps;
    SmallVector<int64_t> batch = st.batch, colShape = st.colShape;
    RankedTensorType colType = st.colType;
    auto batchType = type.clone(batch);
    Value rowIds = iota(colShape, rank - 2);
    Value cols = iota(shape, rank - 1);
    SmallVector<Value> taus;
    for (int64_t k = 0; k < steps; ++k) {
      Value col = column(a, k);
      Value alpha = pick(col, k, true);
      Value below = cmp(P::GT, rowIds, splat(colType, k));
      Value x = sel(below, col, splat(typeOf(col), 0));
      Value xnorm = prim::SqrtOp::create(
          b, loc,
          prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum, mul(x, x),
                                 ArrayRef<int64_t>{rank - 2}));
      // beta = -sign(alpha) hypot(alpha, xnorm); no reflection (tau = 0)
      // when x is already zero.
      Value hyp = prim::SqrtOp::create(
          b, loc, add(mul(alpha, alpha), mul(xnorm, xnorm)));
      Value beta = sel(signBit(alpha), hyp, prim::NegOp::create(b, loc, hyp));
      Value none = cmp(P::EQ, xnorm, splat(batchType, 0));
      Value tau = sel(none, splat(batchType, 0), div(sub(beta, alpha), beta));
      Value scale =
          sel(none, splat(batchType, 0),
              div(splat(batchType, 1), sub(alpha, beta)));
      Value v = sel(below, mul(x, spread(scale, colShape)),
                    sel(cmp(P::EQ, rowIds, splat(colType, k)),
                        splat(typeOf(col), 1), splat(typeOf(col), 0)));
      a = sel(cmp(P::GT, cols, splat(like(cols, i64), k)),
              reflect(a, v, tau, true), a);
      Value newCol = sel(cmp(P::EQ, rowIds, splat(colType, k)),
                         spread(sel(none, alpha, beta), colShape),
                         sel(below, v, col));
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < rank - 1; ++d)
        dims.push_back(d);
      a = sel(cmp(P::EQ, cols, splat(like(cols, i64), k)),
              prim::BroadcastInDimOp::create(b, loc, newCol, shape, dims), a);
      SmallVector<int64_t> one(batch);
      one.push_back(1);
      taus.push_back(reshape(tau, one));
    }
    SmallVector<int64_t> tauShape(batch);
    tauShape.push_back(steps);
    Value tau = steps == 0 ? splat(type.clone(tauShape), 0)
                : taus.size() == 1
                    ? taus[0]
                    : prim::ConcatenateOp::create(b, loc, taus, rank - 2)
                          .getResult();
    return {a, tau};
  };
  // Q's first `cols` columns (LAPACK's org2r): H_0 ... H_{k-1} applied to
  // the m x cols identity, the last reflection first.
  auto householderProduct = [&](Value packed, Value tau, int64_t cols)
      -> Value {
    ArrayRef<int64_t> shape = shapeOf(packed);
    int64_t rank = shape.size();
    SmallVector<int64_t> qShape(shape);
    qShape[rank - 1] = cols;
    Value q = identity(typeOf(packed).clone(qShape));
    int64_t k = shapeOf(tau).back();
    for (int64_t i = k - 1; i >= 0; --i)
      q = reflect(q, reflector(packed, i), pick(tau, i, true), true);
    return q;
  };

  // Operands, promoted to the result's element type.
  RankedTensorType out0 = resultType(0);
  Type elt = out0.getElementType();
  if (!isa<FloatType>(elt))
    return Result(fail("factorizations of " + quoted(out0)));
  auto operand = [&](unsigned i) { return convert(operands[i], elt); };
  auto i32Of = [&](Value v, RankedTensorType type) {
    return reshape(convert(v, type.getElementType()), type.getShape());
  };

  if (target == "aten::geqrf") {
    auto [packed, tau] = householderQR(operand(0));
    return Result(SmallVector<Value>{packed, tau});
  }
  if (target == "aten::linalg_qr") {
    // mode "reduced": Q [m, k], R [k, n]; "complete": Q [m, m], R [m, n];
    // "r": R [k, n] and an empty Q.
    Value a = operand(0);
    ArrayRef<int64_t> shape = shapeOf(a);
    int64_t rank = shape.size(), m = shape[rank - 2];
    StringRef mode = "reduced";
    if (auto s = dyn_cast_if_present<StringAttr>(arg("mode")))
      mode = s.getValue();
    if (mode != "reduced" && mode != "complete" && mode != "r")
      return Result(fail("unknown mode '" + mode + "'"));
    auto [packed, tau] = householderQR(a);
    RankedTensorType qType = resultType(0), rType = resultType(1);
    int64_t rRows = rType.getDimSize(rank - 2);
    SmallVector<int64_t> start(rank, 0), limit(shape), step(rank, 1);
    limit[rank - 2] = std::min(rRows, m);
    Value r = triangle(prim::SliceOp::create(b, loc, packed, start, limit,
                                             step),
                       /*lower=*/false, /*strict=*/false);
    Value q = qType.getNumElements() == 0
                  ? splat(qType, 0)
                  : householderProduct(packed, tau,
                                       qType.getDimSize(rank - 1));
    return Result(SmallVector<Value>{q, r});
  }
  if (target == "aten::linalg_householder_product") {
    Value packed = operand(0), tau = operand(1);
    return Result(SmallVector<Value>{householderProduct(
        packed, tau, shapeOf(packed).back())});
  }
  if (target == "aten::ormqr") {
    // other * Q or Q * other (transposed: Q^T), Q = H_0 ... H_{k-1} of the
    // packed input (m x m).
    Value packed = operand(0), tau = operand(1), c = operand(2);
    bool leftSide = boolArg("left", true), trans = boolArg("transpose", false);
    int64_t k = shapeOf(tau).back();
    // Q C and C Q^T apply the last reflection first.
    bool lastFirst = leftSide != trans;
    for (int64_t s = 0; s < k; ++s) {
      int64_t i = lastFirst ? k - 1 - s : s;
      c = reflect(c, reflector(packed, i), pick(tau, i, true), leftSide);
    }
    return Result(SmallVector<Value>{c});
  }

  if (target == "aten::linalg_lu_factor_ex" || target == "aten::linalg_lu" ||
      target == "aten::_linalg_det" || target == "aten::_linalg_slogdet") {
    if (!boolArg("pivot", true))
      return Result(fail("LU without pivoting is not supported"));
    Value a = operand(0);
    LU f = factor(a);
    if (target == "aten::linalg_lu_factor_ex")
      return Result(SmallVector<Value>{f.lu, i32Of(f.pivots, resultType(1)),
                                       i32Of(f.info, resultType(2))});
    if (target == "aten::linalg_lu") {
      // A = P L U with P[i, j] = (perm[j] == i); L is m x k unit lower, U
      // k x n upper, k = min(m, n).
      ArrayRef<int64_t> shape = shapeOf(a);
      int64_t rank = shape.size(), m = shape[rank - 2], n = shape[rank - 1];
      int64_t k = std::min(m, n);
      RankedTensorType pType = resultType(0);
      Value permCols = spread(f.perm, pType.getShape());
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < rank - 2; ++d)
        dims.push_back(d);
      dims.push_back(rank - 1);
      permCols = prim::BroadcastInDimOp::create(b, loc, f.perm,
                                                pType.getShape(), dims);
      Value pm = sel(cmp(P::EQ, permCols, iota(pType.getShape(), rank - 2)),
                     splat(pType, 1), splat(pType, 0));
      SmallVector<int64_t> zeros(rank, 0), ones(rank, 1);
      SmallVector<int64_t> lLimit(shape), uLimit(shape);
      lLimit[rank - 1] = k;
      uLimit[rank - 2] = k;
      Value l = prim::SliceOp::create(b, loc, f.lu, zeros, lLimit, ones);
      l = add(triangle(l, true, true), identity(typeOf(l)));
      Value u = prim::SliceOp::create(b, loc, f.lu, zeros, uLimit, ones);
      u = triangle(u, false, false);
      return Result(SmallVector<Value>{pm, l, u});
    }
    // det = (-1)^swaps * prod(diag(U)); slogdet = (sign, log|det|).
    ArrayRef<int64_t> shape = shapeOf(a);
    int64_t rank = shape.size(), n = shape[rank - 1];
    if (shape[rank - 2] != n)
      return Result(fail("determinant of a non-square matrix"));
    Value diag = sel(cmp(P::EQ, iota(shape, rank - 2), iota(shape, rank - 1)),
                     f.lu, splat(typeOf(f.lu), 0));
    diag = prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum, diag,
                                  ArrayRef<int64_t>{rank - 1});
    RankedTensorType batchType = typeOf(diag).clone(
        SmallVector<int64_t>(shape.drop_back(2)));
    Value flip = sel(f.odd, splat(batchType, -1), splat(batchType, 1));
    Value lu = f.lu;
    Value piv = i32Of(f.pivots, resultType(target == "aten::_linalg_det"
                                               ? 2
                                               : 3));
    if (target == "aten::_linalg_det") {
      Value det = mul(flip, prim::ReduceOp::create(
                                b, loc, prim::ReductionKind::Prod, diag,
                                ArrayRef<int64_t>{rank - 2}));
      return Result(SmallVector<Value>{det, lu, piv});
    }
    Value negatives = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        sel(cmp(P::LT, diag, splat(typeOf(diag), 0)), splat(typeOf(diag), 1),
            splat(typeOf(diag), 0)),
        ArrayRef<int64_t>{rank - 2});
    Value oddNeg = cmp(P::EQ,
                       sub(negatives,
                           mul(splat(batchType, 2),
                               prim::FloorOp::create(
                                   b, loc, mul(negatives,
                                               splat(batchType, 0.5))))),
                       splat(batchType, 1));
    Value sign = mul(flip, sel(oddNeg, splat(batchType, -1),
                               splat(batchType, 1)));
    Value logAbs = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        prim::LogOp::create(b, loc, prim::AbsOp::create(b, loc, diag)),
        ArrayRef<int64_t>{rank - 2});
    Value singular = cmp(P::EQ, logAbs,
                         splat(batchType,
                               -std::numeric_limits<double>::infinity()));
    sign = sel(singular, splat(batchType, 0), sign);
    return Result(SmallVector<Value>{sign, logAbs, lu, piv});
  }

  if (target == "aten::lu_unpack") {
    // The permutation from the pivots (swaps applied in order), L and U.
    Value lu = operand(0), pivots = convert(operands[1], i64);
    ArrayRef<int64_t> shape = shapeOf(lu);
    int64_t rank = shape.size(), m = shape[rank - 2], n = shape[rank - 1];
    int64_t k = std::min(m, n);
    Value perm = permutationOf(pivots, shape);
    SmallVector<Value> results;
    RankedTensorType pType = resultType(0);
    if (boolArg("unpack_pivots", true) && pType.getNumElements() > 0) {
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < rank - 2; ++d)
        dims.push_back(d);
      dims.push_back(rank - 1);
      Value permCols = prim::BroadcastInDimOp::create(
          b, loc, perm, pType.getShape(), dims);
      results.push_back(
          sel(cmp(P::EQ, permCols, iota(pType.getShape(), rank - 2)),
              splat(pType, 1), splat(pType, 0)));
    } else {
      results.push_back(splat(pType, 0));
    }
    if (boolArg("unpack_data", true) && resultType(1).getNumElements() > 0) {
      SmallVector<int64_t> zeros(rank, 0), ones(rank, 1);
      SmallVector<int64_t> lLimit(shape), uLimit(shape);
      lLimit[rank - 1] = k;
      uLimit[rank - 2] = k;
      Value l = prim::SliceOp::create(b, loc, lu, zeros, lLimit, ones);
      results.push_back(add(triangle(l, true, true), identity(typeOf(l))));
      Value u = prim::SliceOp::create(b, loc, lu, zeros, uLimit, ones);
      results.push_back(triangle(u, false, false));
    } else {
      results.push_back(splat(resultType(1), 0));
      results.push_back(splat(resultType(2), 0));
    }
    return Result(results);
  }

  // Solves with the factors of A: A X = B (left) or X A = B, or with A's
  // transpose (adjoint). Returns X shaped as B.
  auto luSolve = [&](const LU &f, Value rhs, bool left,
                     bool adjoint) -> Value {
    // X A = B  <=>  A^T X^T = B^T.
    if (!left) {
      rhs = transpose(rhs);
      adjoint = !adjoint;
    }
    Value lu = f.lu;
    Value x;
    if (!adjoint) {
      // P L U x = b: y = P^T b (rows in perm order), L z = y, U x = z.
      x = permuteRows(rhs, f.perm);
      x = substitute(lu, x, /*lower=*/true, /*unit=*/true);
      x = substitute(lu, x, /*lower=*/false, /*unit=*/false);
    } else {
      // U^T L^T P^T x = b: U^T z = b, L^T w = z, x = P w.
      Value luT = transpose(lu);
      x = substitute(luT, rhs, /*lower=*/true, /*unit=*/false);
      x = substitute(luT, x, /*lower=*/false, /*unit=*/true);
      // x[perm[r]] = w[r]: the inverse permutation.
      ArrayRef<int64_t> shape = shapeOf(f.perm);
      int64_t rank = shape.size();
      SmallVector<int64_t> wide(shape);
      wide.push_back(shape.back());
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < rank - 1; ++d)
        dims.push_back(d);
      dims.push_back(rank);
      Value inverse = prim::ReduceOp::create(
          b, loc, prim::ReductionKind::Sum,
          sel(cmp(P::EQ,
                  prim::BroadcastInDimOp::create(b, loc, f.perm, wide, dims),
                  iota(wide, rank - 1)),
              iota(wide, rank), splat(RankedTensorType::get(wide, i64), 0)),
          ArrayRef<int64_t>{rank});
      x = permuteRows(x, inverse);
    }
    return left ? x : transpose(x);
  };
  // B as a matrix batch broadcast against A's batch, and whether it was
  // a vector.
  auto asMatrix = [&](Value rhs, Value a, bool left,
                      bool &vector) -> Value {
    ArrayRef<int64_t> aShape = shapeOf(a);
    // Eager's rule: a vector, or a batch of them shaped as A's rows.
    vector = typeOf(rhs).getRank() == 1 ||
             shapeOf(rhs) == aShape.drop_back();
    if (vector) {
      SmallVector<int64_t> s(shapeOf(rhs));
      s.push_back(1);
      rhs = reshape(rhs, s);
      if (!left)
        rhs = transpose(rhs);
    }
    // Broadcast the batch dimensions.
    SmallVector<int64_t> shape(aShape.drop_back(2));
    ArrayRef<int64_t> bShape = shapeOf(rhs);
    int64_t bRank = bShape.size();
    SmallVector<int64_t> bBatch(bShape.drop_back(2));
    while (bBatch.size() < shape.size())
      bBatch.insert(bBatch.begin(), 1);
    while (shape.size() < bBatch.size())
      shape.insert(shape.begin(), 1);
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 1)
        shape[d] = bBatch[d];
    shape.push_back(bShape[bRank - 2]);
    shape.push_back(bShape[bRank - 1]);
    return broadcast(rhs, shape);
  };
  auto batchA = [&](Value a, ArrayRef<int64_t> like) -> Value {
    SmallVector<int64_t> shape(like.drop_back(2));
    shape.push_back(shapeOf(a)[typeOf(a).getRank() - 2]);
    shape.push_back(shapeOf(a)[typeOf(a).getRank() - 1]);
    return broadcast(a, shape);
  };

  if (target == "aten::linalg_inv_ex") {
    Value a = operand(0);
    LU f = factor(a);
    Value x = luSolve(f, identity(typeOf(a)), true, false);
    return Result(SmallVector<Value>{x, i32Of(f.info, resultType(1))});
  }
  if (target == "aten::_linalg_solve_ex") {
    bool vector = false;
    Value a = operand(0);
    Value rhs = asMatrix(operand(1), a, left, vector);
    LU f = factor(batchA(a, shapeOf(rhs)));
    Value x = luSolve(f, rhs, left, false);
    if (vector)
      x = reshape(left ? x : transpose(x), resultType(0).getShape());
    LU own = factor(a);
    return Result(SmallVector<Value>{
        reshape(x, resultType(0).getShape()), own.lu,
        i32Of(own.pivots, resultType(2)), i32Of(own.info, resultType(3))});
  }
  if (target == "aten::linalg_lu_solve") {
    // The factors come packed with LAPACK's pivots.
    Value lu = operand(0), pivots = convert(operands[1], i64);
    Value rhs = operand(2);
    bool adjoint = boolArg("adjoint", false);
    Value perm = permutationOf(pivots, shapeOf(lu));
    LU f{lu, pivots, perm, Value(), Value()};
    Value x = luSolve(f, rhs, left, adjoint);
    return Result(SmallVector<Value>{reshape(x, resultType(0).getShape())});
  }

  if (target == "aten::linalg_solve_triangular" ||
      target == "aten::triangular_solve") {
    bool isOld = target == "aten::triangular_solve";
    Value a = isOld ? operand(1) : operand(0);
    Value rhs = isOld ? operand(0) : operand(1);
    bool upper = boolArg("upper", isOld);
    left = isOld ? true : left;
    bool unit = boolArg("unitriangular", false);
    if (isOld && boolArg("transpose", false)) {
      a = transpose(a);
      upper = !upper;
    }
    Value t = triangle(a, !upper, false);
    if (!left) {
      // X T = B  <=>  T^T X^T = B^T.
      t = transpose(t);
      upper = !upper;
      rhs = transpose(rhs);
    }
    Value x = substitute(batchA(t, shapeOf(rhs)), rhs, !upper, unit);
    if (!left)
      x = transpose(x);
    x = reshape(x, resultType(0).getShape());
    if (!isOld)
      return Result(SmallVector<Value>{x});
    return Result(SmallVector<Value>{x, coerce(operand(1), resultType(1))});
  }

  // Cholesky: potf2 on the triangle that `upper` names (the other is not
  // read), L with A = L L^T.
  auto cholesky = [&](Value a, bool upper, Value *info) -> Value {
    if (upper)
      a = transpose(a);
    a = add(triangle(a, true, false), transpose(triangle(a, true, true)));
    ArrayRef<int64_t> shape = shapeOf(a);
    int64_t rank = shape.size(), n = shape[rank - 1];
    RankedTensorType batchType =
        RankedTensorType::get(SmallVector<int64_t>(shape.drop_back(2)), i64);
    Value failed = splat(batchType, 0);
    Value rows = iota(shape, rank - 2), cols = iota(shape, rank - 1);
    SmallVector<int64_t> colShape(shape.drop_back(1));
    Value rowIds = iota(colShape, rank - 2);
    for (int64_t j = 0; j < n; ++j) {
      Value d = pick(column(a, j), j, true);
      Value bad = prim::BitwiseNotOp::create(
          b, loc, cmp(P::GT, d, splat(typeOf(d), 0)));
      failed = sel(andI(bad, cmp(P::EQ, failed, splat(batchType, 0))),
                   splat(batchType, j + 1), failed);
      Value root = prim::SqrtOp::create(b, loc, d);
      Value col = div(column(a, j), spread(root, colShape));
      col = sel(cmp(P::EQ, rowIds, splat(like(rowIds, i64), j)),
                spread(root, colShape), col);
      col = sel(cmp(P::LT, rowIds, splat(like(rowIds, i64), j)),
                splat(typeOf(col), 0), col);
      Value below = cmp(P::GT, rowIds, splat(like(rowIds, i64), j));
      Value l = sel(below, col, splat(typeOf(col), 0));
      Value trailing = andI(cmp(P::GT, rows, splat(like(rows, i64), j)),
                            cmp(P::GT, cols, splat(like(cols, i64), j)));
      SmallVector<int64_t> dims;
      for (int64_t k = 0; k < rank - 1; ++k)
        dims.push_back(k);
      Value colWide = prim::BroadcastInDimOp::create(b, loc, col, shape, dims);
      a = sel(trailing, sub(a, outer(l, l)),
              sel(cmp(P::EQ, cols, splat(like(cols, i64), j)), colWide, a));
    }
    if (info)
      *info = failed;
    Value l = triangle(a, true, false);
    return upper ? transpose(l) : l;
  };
  if (target == "aten::linalg_cholesky_ex" || target == "aten::cholesky") {
    Value info;
    bool upper = boolArg("upper", false);
    Value l = cholesky(operand(0), upper, &info);
    if (target == "aten::cholesky")
      return Result(SmallVector<Value>{l});
    return Result(SmallVector<Value>{l, i32Of(info, resultType(1))});
  }
  if (target == "aten::cholesky_solve" || target == "aten::cholesky_inverse") {
    // A = L L^T (or U^T U): L y = b, L^T x = y.
    bool inverse = target == "aten::cholesky_inverse";
    bool upper = boolArg("upper", false);
    Value factorT = inverse ? operand(0) : operand(1);
    Value l = upper ? transpose(triangle(factorT, false, false))
                    : triangle(factorT, true, false);
    Value rhs = inverse ? identity(typeOf(l)) : operand(0);
    Value lb = batchA(l, shapeOf(rhs));
    Value y = substitute(lb, rhs, /*lower=*/true, /*unit=*/false);
    Value x = substitute(transpose(lb), y, /*lower=*/false, /*unit=*/false);
    return Result(SmallVector<Value>{reshape(x, resultType(0).getShape())});
  }
  llvm_unreachable("every name is handled above");
}
