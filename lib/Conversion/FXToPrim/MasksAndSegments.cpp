//===- MasksAndSegments.cpp - masked writes and segments ---*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for the ATen ops whose element positions depend on a mask
// or on segment bounds, with results of static shapes: `masked_scatter`,
// `index_put` with a boolean mask (`x[mask] = v`), `nonzero_static`,
// `segment_reduce`, the bags of `embedding_bag` and `embedding_renorm`.
//
// The k-th true element of a mask is found by counting: the number of true
// elements up to each position is a prefix count (dense, n^2 compares, as
// tc's scans are), so "the k-th source element goes to the k-th true
// position" is a gather at the count. A segment is the positions between
// its bounds: a [segments, positions] mask, reduced. The Python side bounds
// the dense cost (tc.support.DENSE_SCATTER_LIMIT); it is checked here too.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

/// The most compare-and-select steps of one op.
constexpr int64_t kDenseLimit = limits::kDenseSteps;

Value Decomposer::prefixCount(Value mask) {
  int64_t n = typeOf(mask).getDimSize(0);
  SmallVector<int64_t> wide = {n, n}; // (position i, position j <= i)
  auto countType = RankedTensorType::get(wide, b.getI64Type());
  Value counted = andI(cmp(P::LE, iota(wide, 1), iota(wide, 0)),
                       prim::BroadcastInDimOp::create(b, loc, mask, wide,
                                                      ArrayRef<int64_t>{1}));
  return prim::ReduceOp::create(
      b, loc, prim::ReductionKind::Sum,
      sel(counted, splat(countType, 1), splat(countType, 0)),
      ArrayRef<int64_t>{1});
}

std::optional<Decomposer::Result>
Decomposer::masksAndSegments(StringRef target) {
  auto one = [](Value v) -> Result { return SmallVector<Value>{v}; };
  Type i64 = b.getI64Type();
  auto i64Type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, i64);
  };
  // An index clamped into [0, hi].
  auto clamp = [&](Value v, int64_t hi) -> Value {
    RankedTensorType type = typeOf(v);
    return prim::ClampOp::create(b, loc, v, splat(type, 0),
                                 splat(type, std::max<int64_t>(hi, 0)));
  };
  auto tooDense = [&](int64_t steps) -> bool {
    return steps > kDenseLimit;
  };

  if (target == "aten::masked_scatter") {
    // The k-th true position of the mask takes the k-th source element.
    RankedTensorType type = resultType();
    int64_t n = type.getNumElements();
    if (tooDense(n * n))
      return Result(fail("a mask of " + Twine(n) +
                         " elements is too large for tc's dense count"));
    Value x = reshape(coerce(operands[0], type), {n});
    Value mask = reshape(broadcast(truthy(operands[1]), type.getShape()), {n});
    int64_t s = typeOf(operands[2]).getNumElements();
    if (s == 0 || n == 0)
      return one(reshapeToResult(x));
    Value source = reshape(convert(operands[2], type.getElementType()), {s});
    Value k = sub(prefixCount(mask), splat(i64Type({n}), 1));
    Value taken = prim::GatherOp::create(b, loc, source, clamp(k, s - 1), 0);
    return one(reshapeToResult(sel(mask, taken, x)));
  }

  if (target == "aten::index_put" || target == "aten::_unsafe_index_put") {
    // x[mask] = v with one boolean mask over dimensions [d, d + r): the
    // masked positions, in order, take v's rows along the selection (or
    // all of v, broadcast).
    SmallVector<Value> given = tensorArg(1);
    if (given.size() != 1 ||
        !typeOf(given.front()).getElementType().isInteger(1))
      return indexing(target); // indices, not a mask
    Value x = tensorArg(0).front();
    RankedTensorType xType = typeOf(x);
    Value mask = given.front();
    ArrayRef<int64_t> maskShape = typeOf(mask).getShape();
    SmallVector<bool> present = presentEntries("indices", 1);
    int64_t d = std::find(present.begin(), present.end(), true) -
                present.begin();
    int64_t r = maskShape.size();
    ArrayRef<int64_t> shape = xType.getShape();
    if (d + r > xType.getRank() || shape.slice(d, r) != maskShape)
      return Result(fail("the mask's shape does not match the dimensions "
                         "it indexes"));
    SmallVector<Value> valueOperands = tensorArg(2);
    if (valueOperands.size() != 1)
      return Result(fail("expected a values tensor"));
    int64_t m = typeOf(mask).getNumElements();
    int64_t numel = xType.getNumElements();
    if (tooDense(m * m) || tooDense(numel))
      return Result(fail("a mask of " + Twine(m) +
                         " elements is too large for tc's dense count"));
    SmallVector<int64_t> pre(shape.take_front(d)),
        post(shape.drop_front(d + r));
    SmallVector<int64_t> flat(pre);
    flat.push_back(m);
    llvm::append_range(flat, post);
    Value rows = reshape(x, flat);
    Value flatMask = reshape(mask, {m});
    // The values broadcast to x[mask]'s shape, [pre..., K, post...], where
    // K (the count of true elements) is the values' own size there.
    Value values = convert(valueOperands.front(), xType.getElementType());
    ArrayRef<int64_t> vShape = typeOf(values).getShape();
    int64_t at = static_cast<int64_t>(vShape.size()) -
                 static_cast<int64_t>(post.size()) - 1;
    int64_t count = at >= 0 ? vShape[at] : 1;
    SmallVector<int64_t> valuesShape(pre);
    valuesShape.push_back(count);
    llvm::append_range(valuesShape, post);
    int64_t extra = static_cast<int64_t>(vShape.size()) -
                    static_cast<int64_t>(valuesShape.size());
    if (extra > 0) {
      // Leading dimensions beyond x[mask]'s rank must be 1.
      if (llvm::any_of(vShape.take_front(extra),
                       [](int64_t s) { return s != 1; }))
        return Result(fail("the values do not broadcast to x[mask]"));
      values = reshape(values, vShape.drop_front(extra));
    }
    values = broadcast(values, valuesShape);
    if (count == 0) // no value to take: eager accepts it only for no true
      return one(x);
    Value k = sub(prefixCount(flatMask), splat(i64Type({m}), 1));
    Value taken = prim::GatherOp::create(b, loc, values,
                                         clamp(k, count - 1), pre.size());
    Value maskWide = prim::BroadcastInDimOp::create(
        b, loc, flatMask, flat, ArrayRef<int64_t>{int64_t(pre.size())});
    Value updated = boolArg("accumulate", false) ? add(rows, taken) : taken;
    return one(reshape(sel(maskWide, updated, rows), shape));
  }

  if (target == "aten::nonzero_static") {
    // Row k: the coordinates of the k-th nonzero element, fill_value past
    // the last one.
    RankedTensorType type = resultType();
    Value x = operands[0];
    ArrayRef<int64_t> shape = typeOf(x).getShape();
    int64_t n = typeOf(x).getNumElements();
    int64_t size = type.getDimSize(0), rank = shape.size();
    int64_t fill = intArg("fill_value", -1);
    if (tooDense(n * std::max(n, size)))
      return Result(fail("an input of " + Twine(n) +
                         " elements is too large for tc's dense count"));
    if (n == 0 || type.getNumElements() == 0)
      return one(splat(type, fill));
    Value mask = reshape(truthy(x), {n});
    SmallVector<int64_t> wide = {size, n};
    Value countWide = prim::BroadcastInDimOp::create(
        b, loc, prefixCount(mask), wide, ArrayRef<int64_t>{1});
    Value hit = andI(
        prim::BroadcastInDimOp::create(b, loc, mask, wide,
                                       ArrayRef<int64_t>{1}),
        cmp(P::EQ, countWide, add(iota(wide, 0), splat(i64Type(wide), 1))));
    Value position = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        sel(hit, iota(wide, 1), splat(i64Type(wide), 0)),
        ArrayRef<int64_t>{1});
    Value found = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        sel(hit, splat(i64Type(wide), 1), splat(i64Type(wide), 0)),
        ArrayRef<int64_t>{1});
    // Coordinates: (position / stride) % size, a column per dimension.
    SmallVector<Value> columns;
    int64_t stride = 1;
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      RankedTensorType columnType = i64Type({size});
      Value scaled =
          stride == 1 ? position : div(position, splat(columnType, stride));
      Value c = dim == 0 ? scaled
                         : prim::RemOp::create(
                               b, loc, scaled,
                               splat(columnType,
                                     std::max<int64_t>(shape[dim], 1)))
                               .getResult();
      columns.insert(columns.begin(), reshape(c, {size, 1}));
      stride *= std::max<int64_t>(shape[dim], 1);
    }
    SmallVector<int64_t> out = {size, rank};
    Value coords = columns.size() == 1
                       ? columns.front()
                       : prim::ConcatenateOp::create(b, loc, columns, 1)
                             .getResult();
    Value foundWide = prim::BroadcastInDimOp::create(
        b, loc, cmp(P::GT, found, splat(i64Type({size}), 0)), out,
        ArrayRef<int64_t>{0});
    return one(convert(sel(foundWide, coords, splat(i64Type(out), fill)),
                       type.getElementType()));
  }

  if (target == "aten::segment_reduce") {
    // Segment s of the `axis` dimension is [start_s, end_s): a
    // [lead..., S, N, post...] mask, reduced over N, combined with
    // `initial`.
    Value data = tensorArg(0).front();
    SmallVector<Value> lengths = tensorArg(1), offsets = tensorArg(3);
    if (!tensorArg(2).empty())
      return Result(fail("segment_reduce by indices is not supported"));
    if (lengths.empty() == offsets.empty())
      return Result(fail("expected lengths or offsets"));
    RankedTensorType type = resultType();
    RankedTensorType dataType = typeOf(data);
    int64_t rank = dataType.getRank();
    int64_t axis = normalizeDim(intArg("axis", 0), rank);
    Value bounds = lengths.empty() ? offsets.front() : lengths.front();
    ArrayRef<int64_t> boundShape = typeOf(bounds).getShape();
    if (rank == 0 || axis < 0 || axis >= rank ||
        static_cast<int64_t>(boundShape.size()) != axis + 1 ||
        boundShape.drop_back() != dataType.getShape().take_front(axis))
      return Result(fail("the segment bounds do not match the data's "
                         "leading dimensions"));
    int64_t n = dataType.getDimSize(axis);
    int64_t segments = type.getDimSize(axis);
    if (tooDense(segments * dataType.getNumElements()) ||
        tooDense(segments * segments))
      return Result(fail("too many segments for tc's dense segments"));
    SmallVector<int64_t> lead(dataType.getShape().take_front(axis));
    SmallVector<int64_t> segShape(lead);
    segShape.push_back(segments);
    bounds = convert(bounds, i64);
    Value start, end;
    if (!lengths.empty()) {
      // start_s = the sum of the lengths before s.
      SmallVector<int64_t> wide(segShape);
      wide.push_back(segments); // (s, t < s)
      SmallVector<int64_t> dims;
      for (int64_t dim = 0; dim < axis; ++dim)
        dims.push_back(dim);
      dims.push_back(axis + 1);
      Value before = cmp(P::LT, iota(wide, axis + 1), iota(wide, axis));
      Value spread = prim::BroadcastInDimOp::create(b, loc, bounds, wide,
                                                    dims);
      start = prim::ReduceOp::create(
          b, loc, prim::ReductionKind::Sum,
          sel(before, spread, splat(i64Type(wide), 0)),
          ArrayRef<int64_t>{axis + 1});
      end = add(start, bounds);
    } else {
      SmallVector<int64_t> zero(axis + 1, 0), step(axis + 1, 1);
      SmallVector<int64_t> limit(segShape), from(axis + 1, 0);
      from[axis] = 1;
      SmallVector<int64_t> to(boundShape);
      start = prim::SliceOp::create(b, loc, bounds, zero, limit, step);
      end = prim::SliceOp::create(b, loc, bounds, from, to, step);
    }
    SmallVector<int64_t> post(dataType.getShape().drop_front(axis + 1));
    SmallVector<int64_t> wide(segShape);
    wide.push_back(n);
    llvm::append_range(wide, post);
    SmallVector<int64_t> segDims, dataDims;
    for (int64_t dim = 0; dim <= axis; ++dim)
      segDims.push_back(dim);
    for (int64_t dim = 0; dim < rank + 1; ++dim)
      if (dim != axis)
        dataDims.push_back(dim);
    Value position = iota(wide, axis + 1);
    Value inside = andI(
        cmp(P::LE,
            prim::BroadcastInDimOp::create(b, loc, start, wide, segDims),
            position),
        cmp(P::LT, position,
            prim::BroadcastInDimOp::create(b, loc, end, wide, segDims)));
    Value spread = prim::BroadcastInDimOp::create(
        b, loc, convert(data, type.getElementType()), wide, dataDims);
    StringRef reduce = "";
    if (auto s = dyn_cast_if_present<StringAttr>(arg("reduce")))
      reduce = s.getValue();
    bool mean = reduce == "mean";
    prim::ReductionKind kind;
    if (reduce == "sum" || mean)
      kind = prim::ReductionKind::Sum;
    else if (reduce == "prod")
      kind = prim::ReductionKind::Prod;
    else if (reduce == "max")
      kind = prim::ReductionKind::Max;
    else if (reduce == "min")
      kind = prim::ReductionKind::Min;
    else
      return Result(fail("unknown reduction '" + reduce + "'"));
    Value reduced = prim::ReduceOp::create(
        b, loc, kind,
        sel(inside, spread,
            reductionIdentity(typeOf(spread).clone(type.getElementType()),
                              kind)),
        ArrayRef<int64_t>{axis + 1});
    bool hasInitial = static_cast<bool>(arg("initial"));
    Value initial = splat(type, floatArg("initial", 0));
    Value count = convert(
        prim::BroadcastInDimOp::create(b, loc, sub(end, start),
                                       type.getShape(), segDims),
        type.getElementType());
    if (mean) {
      Value sum = hasInitial ? add(reduced, initial) : reduced;
      Value result = div(sum, count);
      if (hasInitial)
        result = sel(cmp(P::EQ, count, splat(type, 0)), initial, result);
      return one(result);
    }
    if (!hasInitial)
      return one(reduced);
    switch (kind) {
    case prim::ReductionKind::Sum:
      return one(add(reduced, initial));
    case prim::ReductionKind::Prod:
      return one(mul(reduced, initial));
    case prim::ReductionKind::Max:
      return one(prim::MaximumOp::create(b, loc, reduced, initial));
    case prim::ReductionKind::Min:
      return one(prim::MinimumOp::create(b, loc, reduced, initial));
    }
    llvm_unreachable("unknown reduction kind");
  }

  if (target == "aten::embedding_renorm") {
    // The rows `indices` reference whose norm exceeds max_norm are scaled
    // to max_norm / (norm + 1e-7), as eager's in-place renorm does.
    Value weight = operands[0], indices = operands[1];
    RankedTensorType type = resultType();
    if (type.getRank() != 2)
      return Result(fail("expected a 2-d weight"));
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    int64_t n = typeOf(indices).getNumElements();
    if (tooDense(rows * n))
      return Result(fail("too many indices for tc's dense renorm"));
    Type compute = opmathType(type.getElementType());
    RankedTensorType rowType = RankedTensorType::get({rows, 1}, compute);
    Value w = convert(weight, compute);
    double p = floatArg("norm_type", 2), maxNorm = floatArg("max_norm", 0);
    Value magnitude = prim::AbsOp::create(b, loc, w);
    Value norm;
    if (std::isinf(p)) {
      norm = reduce(prim::ReductionKind::Max, magnitude, {1}, true, rowType);
    } else if (p == 1) {
      norm = reduce(prim::ReductionKind::Sum, magnitude, {1}, true, rowType);
    } else if (p == 2) {
      norm = prim::SqrtOp::create(
          b, loc, reduce(prim::ReductionKind::Sum, mul(w, w), {1}, true,
                         rowType));
    } else {
      Value powered = prim::PowOp::create(
          b, loc, magnitude, splat(typeOf(magnitude), p));
      norm = prim::PowOp::create(
          b, loc,
          reduce(prim::ReductionKind::Sum, powered, {1}, true, rowType),
          splat(rowType, 1.0 / p));
    }
    // Rows referenced by some index.
    SmallVector<int64_t> wide = {rows, n};
    Value flat = reshape(convert(indices, i64), {n});
    Value hits = cmp(P::EQ, iota(wide, 0),
                     prim::BroadcastInDimOp::create(b, loc, flat, wide,
                                                    ArrayRef<int64_t>{1}));
    auto countType = RankedTensorType::get(wide, b.getI32Type());
    Value referenced = cmp(
        P::GT,
        reshape(prim::ReduceOp::create(
                    b, loc, prim::ReductionKind::Max,
                    sel(hits, splat(countType, 1), splat(countType, 0)),
                    ArrayRef<int64_t>{1}),
                {rows, 1}),
        splat(rowType.clone(b.getI32Type()), 0));
    Value scale = div(splat(rowType, maxNorm), add(norm, splat(rowType, 1e-7)));
    Value renorm = andI(referenced, cmp(P::GT, norm, splat(rowType, maxNorm)));
    Value scaled = mul(w, broadcast(scale, {rows, cols}));
    return one(convert(sel(broadcast(renorm, {rows, cols}), scaled, w),
                       type.getElementType()));
  }

  if (target == "aten::_embedding_bag_forward_only" ||
      target == "aten::_embedding_bag") {
    // Bag b sums (averages, takes the max of) the weight rows of
    // indices[offsets[b] : offsets[b + 1]], padding_idx excluded; an empty
    // bag is 0. Only the bags' values are computed: the other results
    // (eager's bookkeeping for the backward) must be unused.
    for (unsigned i = 1; i < op.getNumResults(); ++i)
      if (!op.getResult(i).use_empty())
        return Result(fail("only the bags' values (result 0) are supported"));
    Value weight = tensorArg(0).front(), indices = tensorArg(1).front();
    Value offsets = tensorArg(2).front();
    SmallVector<Value> weights = tensorArg(3);
    RankedTensorType type = resultType();
    if (typeOf(indices).getRank() != 1 || typeOf(offsets).getRank() != 1 ||
        typeOf(weight).getRank() != 2)
      return Result(fail("expected 1-d indices and offsets"));
    int64_t n = typeOf(indices).getDimSize(0);
    int64_t given = typeOf(offsets).getDimSize(0);
    int64_t bags = type.getDimSize(0), dim = type.getDimSize(1);
    int64_t rows = typeOf(weight).getDimSize(0);
    int64_t mode = intArg("mode", 0);
    if (tooDense(bags * n * dim))
      return Result(fail("too many bags for tc's dense bags"));
    if (mode < 0 || mode > 2)
      return Result(fail("unknown mode " + Twine(mode)));
    if (mode != 0 && !weights.empty())
      return Result(fail("per_sample_weights need mode 'sum'"));
    if (bags != given && bags != given - 1)
      return Result(fail("expected a bag per offset (or one fewer)"));
    SmallVector<Value> results;
    for (unsigned i = 1; i < op.getNumResults(); ++i)
      results.push_back(splat(resultType(i), 0)); // unused (checked above)
    if (bags == 0 || n == 0 || dim == 0 || rows == 0) {
      results.insert(results.begin(), splat(type, 0));
      return Result(results);
    }
    Value idx = convert(indices, i64);
    Value off = convert(offsets, i64);
    // Bag b spans [offsets[b], offsets[b + 1]), the last one to the end.
    Value bagIota = iota({bags}, 0);
    Value start = prim::GatherOp::create(b, loc, off, clamp(bagIota, given - 1),
                                         0);
    Value nextAt = add(bagIota, splat(i64Type({bags}), 1));
    Value end = sel(cmp(P::GE, nextAt, splat(i64Type({bags}), given)),
                    splat(i64Type({bags}), n),
                    prim::GatherOp::create(b, loc, off,
                                           clamp(nextAt, given - 1), 0));
    SmallVector<int64_t> wide = {bags, n, dim};
    Value position = iota(wide, 1);
    auto perBag = [&](Value v) -> Value {
      return prim::BroadcastInDimOp::create(b, loc, v, wide,
                                            ArrayRef<int64_t>{0});
    };
    Value inside = andI(cmp(P::LE, perBag(start), position),
                        cmp(P::LT, position, perBag(end)));
    int64_t padding = intArg("padding_idx", -1);
    Value valid = cmp(P::NE, idx, splat(i64Type({n}), padding));
    if (padding >= 0)
      inside = andI(inside, prim::BroadcastInDimOp::create(
                                b, loc, valid, wide, ArrayRef<int64_t>{1}));
    // Half precision adds in f32, as eager does.
    Type compute = opmathType(type.getElementType());
    Value picked = prim::GatherOp::create(b, loc, weight,
                                          clamp(idx, rows - 1), 0);
    picked = convert(picked, compute);
    if (!weights.empty())
      picked = mul(picked, prim::BroadcastInDimOp::create(
                               b, loc,
                               convert(weights.front(), compute),
                               typeOf(picked).getShape(),
                               ArrayRef<int64_t>{0}));
    Value spread = prim::BroadcastInDimOp::create(b, loc, picked, wide,
                                                  ArrayRef<int64_t>{1, 2});
    auto wideType = typeOf(spread);
    prim::ReductionKind kind =
        mode == 2 ? prim::ReductionKind::Max : prim::ReductionKind::Sum;
    Value reduced = prim::ReduceOp::create(
        b, loc, kind, sel(inside, spread, reductionIdentity(wideType, kind)),
        ArrayRef<int64_t>{1});
    auto countWide = RankedTensorType::get(wide, i64);
    Value count = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        sel(inside, splat(countWide, 1), splat(countWide, 0)),
        ArrayRef<int64_t>{1});
    Value empty = cmp(P::EQ, count, splat(typeOf(count), 0));
    Value result = reduced;
    if (mode == 1)
      result = div(reduced, convert(sel(empty, splat(typeOf(count), 1), count),
                                    compute));
    result = convert(result, type.getElementType());
    results.insert(results.begin(), sel(empty, splat(type, 0), result));
    return Result(results);
  }

  return std::nullopt;
}
