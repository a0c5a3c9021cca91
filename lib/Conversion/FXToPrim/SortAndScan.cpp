//===- SortAndScan.cpp - sorting, selection and cumulative ops --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for ATen's sorting family (`sort`, `topk`, `kthvalue`,
// `median`, `nanmedian`, `searchsorted`, `bucketize`) and its cumulative
// ops (`cumsum`, `cumprod`, `logcumsumexp`, `cummax`, `cummin`).
//
// Both are dense over the dimension they work along: an element's place in
// the sorted order is the number of elements that sort before it (NaN after
// every number, ties by position: eager's stable order), and the sorted
// values are selected by place; a prefix is a mask of the positions up to
// each one, reduced. Each row costs n^2 compare-and-selects, which the
// Python side bounds (tc.support.DENSE_SCATTER_LIMIT) before a graph gets
// here. The reductions fuse their producers, so the n x n masks are not
// stored.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

/// The most compare-and-select steps of one op.
constexpr int64_t kDenseLimit = limits::kDenseSteps;

namespace {
/// A sorted row: values and the positions they came from.
struct Sorted {
  Value values, indices;
};
} // namespace

/// `x` with `dim` moved last, and the permutation that does it (empty when
/// `dim` is already last).
static std::pair<Value, SmallVector<int64_t>>
moveLast(OpBuilder &b, Location loc, Value x, int64_t dim) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (dim == rank - 1)
    return {x, {}};
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      perm.push_back(d);
  perm.push_back(dim);
  return {prim::PermuteOp::create(b, loc, x, perm), perm};
}

/// Undoes moveLast's permutation `perm` on `x`.
static Value moveBack(OpBuilder &b, Location loc, Value x,
                      ArrayRef<int64_t> perm) {
  if (perm.empty())
    return x;
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return prim::PermuteOp::create(b, loc, x, inverse);
}

/// `x` ([lead..., n]) broadcast to [lead..., n, n] along axis `axis` (the
/// second to last or the last): element (i, j) is x[i] for axis n-2, x[j]
/// for the last.
static Value spread(OpBuilder &b, Location loc, Value x, bool alongLast) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape(type.getShape());
  shape.push_back(type.getDimSize(rank - 1));
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank - 1; ++d)
    dims.push_back(d);
  dims.push_back(alongLast ? rank : rank - 1);
  return prim::BroadcastInDimOp::create(b, loc, x, shape, dims);
}

Value Decomposer::blockedScan(Value row, int64_t chunk,
                              prim::ReductionKind kind) {
  // [lead..., n] -> [lead..., m, c], the tail padded with the identity.
  RankedTensorType type = typeOf(row);
  int64_t rank = type.getRank(), n = type.getShape().back();
  int64_t chunks = (n + chunk - 1) / chunk;
  SmallVector<int64_t> zeros(rank, 0), high(rank, 0);
  high.back() = chunks * chunk - n;
  double identity = kind == prim::ReductionKind::Sum ? 0.0 : 1.0;
  Value padded = high.back() ? prim::PadOp::create(b, loc, row, zeros, high,
                                                   zeros, APFloat(identity))
                                   .getResult()
                             : row;
  SmallVector<int64_t> blocked(type.getShape().drop_back());
  blocked.append({chunks, chunk});
  Value x = reshape(padded, blocked);
  // Prefixes of each chunk and of the chunks' totals, each the dense
  // form: a mask of positions j <= i (j < i: exclusive) reduced.
  auto prefixes = [&](Value v, P order) -> Value {
    Value wide = spread(b, loc, v, /*alongLast=*/true);
    ArrayRef<int64_t> shape = typeOf(wide).getShape();
    int64_t r = shape.size();
    Value mask = prim::CompareOp::create(b, loc, order, iota(shape, r - 1),
                                         iota(shape, r - 2));
    return prim::ReduceOp::create(
        b, loc, kind,
        prim::WhereOp::create(b, loc, mask, wide,
                              reductionIdentity(typeOf(wide), kind)),
        ArrayRef<int64_t>{r - 1});
  };
  Value within = prefixes(x, P::LE);
  Value totals = prim::ReduceOp::create(b, loc, kind, x,
                                        ArrayRef<int64_t>{rank});
  Value before = prefixes(totals, P::LT);
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(d);
  Value spreadBefore =
      prim::BroadcastInDimOp::create(b, loc, before, blocked, dims);
  Value scanned =
      kind == prim::ReductionKind::Sum
          ? prim::AddOp::create(b, loc, within, spreadBefore).getResult()
          : prim::MulOp::create(b, loc, within, spreadBefore).getResult();
  SmallVector<int64_t> flat(type.getShape().drop_back());
  flat.push_back(chunks * chunk);
  Value whole = reshape(scanned, flat);
  if (!high.back())
    return whole;
  for (int64_t &h : high)
    h = -h;
  return prim::PadOp::create(b, loc, whole, zeros, high, zeros,
                             APFloat(0.0));
}

std::optional<Decomposer::Result> Decomposer::sortAndScan(StringRef target) {
  // Whether a sorts strictly before b (NaN after every number; with
  // `descending`, NaN first, as eager orders them).
  auto before = [&](Value a, Value bv, bool descending) -> Value {
    RankedTensorType type = typeOf(a);
    if (type.getElementType().isInteger(1)) {
      a = convert(a, b.getI32Type());
      bv = convert(bv, b.getI32Type());
    }
    Value strict = prim::CompareOp::create(b, loc, descending ? P::GT : P::LT,
                                           a, bv);
    if (!isa<FloatType>(type.getElementType()))
      return strict;
    Value nanA = isNan(a), nanB = isNan(bv);
    // descending: a is NaN and b is not; ascending: b is NaN and a is not.
    Value nanFirst = descending
                         ? prim::BitwiseAndOp::create(
                               b, loc, nanA,
                               prim::BitwiseNotOp::create(b, loc, nanB))
                         : prim::BitwiseAndOp::create(
                               b, loc, nanB,
                               prim::BitwiseNotOp::create(b, loc, nanA));
    return prim::BitwiseOrOp::create(b, loc, strict, nanFirst);
  };
  auto same = [&](Value a, Value bv) -> Value {
    Value eq = prim::CompareOp::create(b, loc, P::EQ, a, bv);
    if (!isa<FloatType>(typeOf(a).getElementType()))
      return eq;
    return prim::BitwiseOrOp::create(
        b, loc, eq, prim::BitwiseAndOp::create(b, loc, isNan(a), isNan(bv)));
  };
  auto dense = [&](int64_t rows, int64_t n) -> LogicalResult {
    if (rows * n * n > kDenseLimit)
      return fail(Twine(rows) + " rows of " + Twine(n) +
                  " are too many for tc's dense sort and scan");
    return success();
  };
  auto i64Of = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI64Type());
  };

  // Each element's place in the sorted order of its row ([lead..., n],
  // sorted along the last dimension), stable.
  auto places = [&](Value x, bool descending) -> Value {
    RankedTensorType type = typeOf(x);
    int64_t rank = type.getRank();
    Value xi = spread(b, loc, x, /*alongLast=*/false);
    Value xj = spread(b, loc, x, /*alongLast=*/true);
    ArrayRef<int64_t> wide = typeOf(xi).getShape();
    Value earlier = prim::CompareOp::create(b, loc, P::LT, iota(wide, rank),
                                            iota(wide, rank - 1));
    Value first = prim::BitwiseOrOp::create(
        b, loc, before(xj, xi, descending),
        prim::BitwiseAndOp::create(b, loc, same(xj, xi), earlier));
    return prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        prim::WhereOp::create(b, loc, first, splat(i64Of(wide), 1),
                              splat(i64Of(wide), 0)),
        ArrayRef<int64_t>{rank});
  };
  // The element of each row whose place is `place` ([lead..., m] i64: m
  // places per row), and its position.
  auto atPlaces = [&](Value x, Value place, Value where) -> Sorted {
    RankedTensorType type = typeOf(x);
    int64_t rank = type.getRank();
    int64_t n = type.getDimSize(rank - 1);
    int64_t m = typeOf(place).getDimSize(rank - 1);
    // [lead..., m (k), n (i)]
    SmallVector<int64_t> wide(type.getShape().drop_back());
    wide.push_back(m);
    wide.push_back(n);
    SmallVector<int64_t> lead;
    for (int64_t d = 0; d < rank - 1; ++d)
      lead.push_back(d);
    SmallVector<int64_t> iDims(lead), kDims(lead);
    iDims.push_back(rank);
    kDims.push_back(rank - 1);
    Value hit = prim::CompareOp::create(
        b, loc, P::EQ,
        prim::BroadcastInDimOp::create(b, loc, where, wide, iDims),
        prim::BroadcastInDimOp::create(b, loc, place, wide, kDims));
    auto wideType = RankedTensorType::get(wide, type.getElementType());
    Value values = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        prim::WhereOp::create(
            b, loc, hit,
            prim::BroadcastInDimOp::create(b, loc, x, wide, iDims),
            reductionIdentity(wideType, prim::ReductionKind::Max)),
        ArrayRef<int64_t>{rank});
    Value indices = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        prim::WhereOp::create(b, loc, hit, iota(wide, rank),
                              splat(i64Of(wide), -1)),
        ArrayRef<int64_t>{rank});
    return {values, indices};
  };
  // The first `k` of each row's sorted order. The places are a
  // permutation of each row: a scatter of each element's position to its
  // place inverts it (one update per place, so the scatter-add of f32
  // positions is exact), and a gather reads the sorted values. O(n) per
  // row after the places' O(n^2); selecting each place's element by
  // comparing it with every place (atPlaces) was O(n^2) more, O(n^3) once
  // fusion recomputed the places per comparison.
  auto sortRows = [&](Value x, bool descending, int64_t k) -> Sorted {
    RankedTensorType type = typeOf(x);
    SmallVector<int64_t> shape(type.getShape());
    int64_t n = shape.back();
    int64_t total = type.getNumElements();
    int64_t rows = total / std::max<int64_t>(n, 1);
    Value where = reshape(places(x, descending), {rows, n});
    Value rowStart = prim::MulOp::create(b, loc, iota({rows, n}, 0),
                                         splat(i64Of({rows, n}), n));
    Value target = reshape(prim::AddOp::create(b, loc, where, rowStart),
                           {total});
    auto f32Of = [&](ArrayRef<int64_t> s) {
      return RankedTensorType::get(s, b.getF32Type());
    };
    Value position = reshape(convert(iota({rows, n}, 1), b.getF32Type()),
                             {total, 1});
    Value order = prim::ScatterAddOp::create(b, loc, f32Of({total, 1}),
                                             position, target);
    // [rows, k]: the positions of each row's first k, within the row.
    Value first = prim::SliceOp::create(
        b, loc, reshape(convert(order, b.getI64Type()), {rows, n}),
        ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{rows, k},
        ArrayRef<int64_t>{1, 1});
    Value flatAt = prim::AddOp::create(
        b, loc, first,
        prim::MulOp::create(b, loc, iota({rows, k}, 0),
                            splat(i64Of({rows, k}), n)));
    Value values = prim::GatherOp::create(b, loc, reshape(x, {total}),
                                          reshape(flatAt, {rows * k}), 0);
    shape.back() = k;
    return {reshape(values, shape), reshape(first, shape)};
  };

  if (target == "aten::sort" || target == "aten::sort.stable" ||
      target == "aten::topk" || target == "aten::kthvalue") {
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    if (type.getRank() == 0)
      x = reshape(x, {1});
    int64_t rank = typeOf(x).getRank();
    int64_t dim = normalizeDim(intArg("dim", -1), rank);
    bool descending = target == "aten::topk" ? boolArg("largest", true)
                                             : boolArg("descending", false);
    if (dim < 0 || dim >= rank)
      return fail("dimension out of range");
    int64_t n = typeOf(x).getDimSize(dim);
    if (failed(dense(typeOf(x).getNumElements() / std::max<int64_t>(n, 1),
                     n)))
      return failure();
    auto [row, perm] = moveLast(b, loc, x, dim);
    int64_t k = n;
    if (target == "aten::topk")
      k = intArg("k", 1);
    else if (target == "aten::kthvalue")
      k = intArg("k", 1);
    if (k > n || k < (target == "aten::topk" ? 0 : 1))
      return fail("k = " + Twine(k) + " is out of range for " + Twine(n) +
                  " elements");
    Sorted sorted = sortRows(row, descending, k);
    if (target == "aten::kthvalue") {
      // The k-th smallest: the last of the first k.
      SmallVector<int64_t> start(rank, 0), limit(typeOf(sorted.values)
                                                     .getShape()),
          step(rank, 1);
      start.back() = k - 1;
      sorted.values =
          prim::SliceOp::create(b, loc, sorted.values, start, limit, step);
      sorted.indices =
          prim::SliceOp::create(b, loc, sorted.indices, start, limit, step);
    }
    Value values = moveBack(b, loc, sorted.values, perm);
    Value indices = moveBack(b, loc, sorted.indices, perm);
    return SmallVector<Value>{reshape(values, resultType(0).getShape()),
                              reshape(indices, resultType(1).getShape())};
  }

  if (target == "aten::median" || target == "aten::median.dim" ||
      target == "aten::nanmedian" || target == "aten::nanmedian.dim") {
    // The lower median: place (count - 1) / 2 of the sorted row, with
    // count the row's length (median: a row with NaN gives its first NaN)
    // or its number of non-NaN values (nanmedian).
    bool perDim = target.ends_with(".dim");
    bool ignoreNan = target.starts_with("aten::nanmedian");
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    int64_t dim = 0;
    if (!perDim || type.getRank() == 0) {
      x = reshape(x, {type.getNumElements()});
    } else {
      dim = normalizeDim(intArg("dim", 0), type.getRank());
    }
    int64_t rank = typeOf(x).getRank();
    int64_t n = typeOf(x).getDimSize(dim);
    if (n == 0)
      return fail("median of an empty tensor");
    if (failed(dense(typeOf(x).getNumElements() / n, n)))
      return failure();
    auto [row, perm] = moveLast(b, loc, x, dim);
    SmallVector<int64_t> one(typeOf(row).getShape());
    one.back() = 1;
    Value nan = convert(isNan(row), b.getI64Type());
    Value nans = reduce(prim::ReductionKind::Sum, nan, {rank - 1}, true,
                        i64Of(one));
    Value count = prim::SubOp::create(b, loc, splat(i64Of(one), n), nans);
    Value place;
    if (ignoreNan) {
      // (count - 1) / 2, or 0 when the row is all NaN.
      place = prim::DivOp::create(
          b, loc,
          prim::MaximumOp::create(
              b, loc, prim::SubOp::create(b, loc, count, splat(i64Of(one), 1)),
              splat(i64Of(one), 0)),
          splat(i64Of(one), 2));
    } else {
      // The first NaN (place `count`) when there is one.
      Value hasNan = prim::CompareOp::create(b, loc, P::GT, nans,
                                             splat(i64Of(one), 0));
      place = prim::WhereOp::create(b, loc, hasNan, count,
                                    splat(i64Of(one), (n - 1) / 2));
    }
    Sorted m = atPlaces(row, place, places(row, /*descending=*/false));
    Value values = moveBack(b, loc, m.values, perm);
    if (!perDim)
      return SmallVector<Value>{reshape(values, resultType(0).getShape())};
    Value indices = moveBack(b, loc, m.indices, perm);
    return SmallVector<Value>{reshape(values, resultType(0).getShape()),
                              reshape(indices, resultType(1).getShape())};
  }

  if (target == "aten::searchsorted.Tensor" ||
      target == "aten::bucketize.Tensor") {
    // The number of boundaries each value sorts after (left) or not before
    // (right), as eager's binary search counts on a sorted sequence: a NaN
    // value goes after every boundary, a NaN boundary after every number.
    bool isBucketize = target == "aten::bucketize.Tensor";
    Value boundaries = isBucketize ? operands[1] : operands[0];
    Value values = isBucketize ? operands[0] : operands[1];
    if (op.getTensorArgSizes() && op.getTensorArgSizes()->size() > 2 &&
        (*op.getTensorArgSizes())[2] != 0) {
      // A sorter orders each row of the sequence: the search runs on the
      // sequence read in that order (its positions are the sorted ones).
      Value sorter = operands[2];
      RankedTensorType sType = typeOf(boundaries);
      if (typeOf(sorter).getShape() != sType.getShape() ||
          !isa<IntegerType>(typeOf(sorter).getElementType()))
        return fail("the sorter " + quoted(typeOf(sorter)) +
                    " does not match the sequence " + quoted(sType));
      int64_t len = sType.getRank() ? sType.getShape().back() : 1;
      int64_t total = sType.getNumElements();
      int64_t rows = total / std::max<int64_t>(len, 1);
      Value at = prim::AddOp::create(
          b, loc, reshape(convert(sorter, b.getI64Type()), {rows, len}),
          prim::MulOp::create(b, loc, iota({rows, len}, 0),
                              splat(i64Of({rows, len}), len)));
      boundaries = reshape(
          prim::GatherOp::create(b, loc, reshape(boundaries, {total}),
                                 reshape(at, {total}), 0),
          sType.getShape());
    }
    bool right = boolArg("right", false);
    if (Attribute side = arg("side"))
      right = cast<StringAttr>(side).getValue() == "right";
    RankedTensorType bType = typeOf(boundaries), vType = typeOf(values);
    if (bType.getRank() == 0)
      return fail("0-d boundaries");
    Type elt = promote(bType.getElementType(), vType.getElementType());
    boundaries = convert(boundaries, elt);
    values = convert(values, elt);
    RankedTensorType outType = resultType();
    if (vType.getRank() == 0)
      values = reshape(values, {1});
    int64_t vRank = typeOf(values).getRank();
    int64_t n = bType.getDimSize(bType.getRank() - 1);
    // Every value against every boundary: values x n compares.
    if (typeOf(values).getNumElements() * n > kDenseLimit)
      return fail(Twine(typeOf(values).getNumElements()) + " values in " +
                  Twine(n) + " boundaries are too many for tc's dense "
                  "search");
    // [values..., n]
    SmallVector<int64_t> wide(typeOf(values).getShape());
    wide.push_back(n);
    SmallVector<int64_t> vDims, bDims;
    for (int64_t d = 0; d < vRank; ++d)
      vDims.push_back(d);
    if (bType.getRank() == 1) {
      bDims.push_back(vRank);
    } else {
      if (bType.getRank() != vRank + (vType.getRank() == 0 ? 1 : 0) &&
          bType.getRank() != vRank)
        return fail("boundaries and values disagree in rank");
      for (int64_t d = 0; d < vRank - 1; ++d)
        bDims.push_back(d);
      bDims.push_back(vRank);
    }
    Value bw = prim::BroadcastInDimOp::create(b, loc, boundaries, wide, bDims);
    Value vw = prim::BroadcastInDimOp::create(b, loc, values, wide, vDims);
    // left: boundary < value; right: boundary <= value, i.e. not
    // value < boundary.
    Value counted = right ? prim::BitwiseNotOp::create(
                                b, loc, before(vw, bw, false))
                                .getResult()
                          : before(bw, vw, false);
    Value count = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        prim::WhereOp::create(b, loc, counted, splat(i64Of(wide), 1),
                              splat(i64Of(wide), 0)),
        ArrayRef<int64_t>{vRank});
    return SmallVector<Value>{
        reshape(convert(count, outType.getElementType()), outType.getShape())};
  }

  bool cumulative = target == "aten::cumsum" || target == "aten::cumprod" ||
                    target == "aten::logcumsumexp" ||
                    target == "aten::cummax" || target == "aten::cummin";
  if (cumulative) {
    // out[i] = reduce(x[j] for j <= i): the prefix as a mask over
    // [lead..., n (i), n (j)].
    RankedTensorType type = resultType();
    Value x = convert(operands[0], type.getElementType());
    if (typeOf(x).getRank() == 0) {
      if (target == "aten::cummax" || target == "aten::cummin")
        return SmallVector<Value>{x, splat(i64Of({}), 0)};
      return SmallVector<Value>{x};
    }
    int64_t rank = typeOf(x).getRank();
    int64_t dim = normalizeDim(intArg("dim", 0), rank);
    int64_t n = typeOf(x).getDimSize(dim);
    int64_t rows = typeOf(x).getNumElements() / std::max<int64_t>(n, 1);
    bool sumOrProduct =
        target == "aten::cumsum" || target == "aten::cumprod";
    int64_t chunk = sumOrProduct ? limits::scanChunk(n) : 0;
    if (chunk) {
      if (rows * limits::scanSteps(n, chunk) > kDenseLimit)
        return fail(Twine(rows) + " rows of " + Twine(n) +
                    " are too many for tc's blocked scan");
      // Half types in their op math type: a chunk's prefix and the
      // totals' before it are rounded once, as a whole prefix is.
      Type element = type.getElementType();
      auto [row, perm] = moveLast(
          b, loc, isa<FloatType>(element) ? convert(x, opmathType(element)) : x,
          dim);
      Value scanned = blockedScan(row, chunk,
                                  target == "aten::cumsum"
                                      ? prim::ReductionKind::Sum
                                      : prim::ReductionKind::Prod);
      return SmallVector<Value>{
          moveBack(b, loc, convert(scanned, element), perm)};
    }
    if (failed(dense(rows, n)))
      return failure();
    auto [row, perm] = moveLast(b, loc, x, dim);
    Value xj = spread(b, loc, row, /*alongLast=*/true);
    RankedTensorType wideType = typeOf(xj);
    ArrayRef<int64_t> wide = wideType.getShape();
    Value prefix = prim::CompareOp::create(b, loc, P::LE, iota(wide, rank),
                                           iota(wide, rank - 1));
    auto over = [&](prim::ReductionKind kind, Value v) -> Value {
      return prim::ReduceOp::create(
          b, loc, kind,
          prim::WhereOp::create(b, loc, prefix, v,
                                reductionIdentity(typeOf(v), kind)),
          ArrayRef<int64_t>{rank});
    };
    if (target == "aten::cumsum")
      return SmallVector<Value>{
          moveBack(b, loc, over(prim::ReductionKind::Sum, xj), perm)};
    if (target == "aten::cumprod")
      return SmallVector<Value>{
          moveBack(b, loc, over(prim::ReductionKind::Prod, xj), perm)};
    if (target == "aten::logcumsumexp") {
      // m + log(sum exp(x - m)) with m the prefix's maximum; an infinite
      // maximum is the result (all -inf stays -inf, +inf stays +inf).
      if (!isa<FloatType>(type.getElementType()))
        return fail("logcumsumexp of " + quoted(type));
      Value ct = convert(xj, opmathType(type.getElementType()));
      Value m = over(prim::ReductionKind::Max, ct);
      Value mw = spread(b, loc, m, /*alongLast=*/false);
      Value s = over(prim::ReductionKind::Sum,
                     prim::ExpOp::create(b, loc,
                                         prim::SubOp::create(b, loc, ct, mw)));
      Value r = prim::AddOp::create(b, loc, m, prim::LogOp::create(b, loc, s));
      Value inf = prim::CompareOp::create(
          b, loc, P::EQ, prim::AbsOp::create(b, loc, m),
          splat(typeOf(m), std::numeric_limits<double>::infinity()));
      r = prim::WhereOp::create(b, loc, inf, m, r);
      return SmallVector<Value>{
          moveBack(b, loc, convert(r, type.getElementType()), perm)};
    }
    // cummax/cummin: the running extreme (NaN once NaN) and the last
    // position in the prefix that holds it.
    bool isMax = target == "aten::cummax";
    Value extreme = over(isMax ? prim::ReductionKind::Max
                               : prim::ReductionKind::Min,
                         xj);
    Value hit = prim::BitwiseAndOp::create(
        b, loc, prefix,
        same(xj, spread(b, loc, extreme, /*alongLast=*/false)));
    Value last = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        prim::WhereOp::create(b, loc, hit, iota(wide, rank),
                              splat(i64Of(wide), 0)),
        ArrayRef<int64_t>{rank});
    return SmallVector<Value>{moveBack(b, loc, extreme, perm),
                              moveBack(b, loc, last, perm)};
  }

  return std::nullopt;
}
