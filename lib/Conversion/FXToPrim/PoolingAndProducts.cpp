//===- PoolingAndProducts.cpp - pooling, transposed convs, products -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for average pooling (`avg_pool2d`/`3d`, `_adaptive_avg_pool3d`),
// transposed convolutions (as a convolution of the stride-dilated input with
// the flipped kernel), the products `addbmm` and `_trilinear`, pairwise
// distances (`_cdist_forward`, `_pdist_forward`), the counting ops
// `mode` and `histc`, and anti-aliased resizing (products by eager's
// weights).
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

/// The most kernel positions an average pooling sums (one slice each).
constexpr int64_t kMaxAvgPoolPositions = 256;

std::optional<Decomposer::Result>
Decomposer::poolingAndProducts(StringRef target) {
  auto one = [](Value v) -> Result { return SmallVector<Value>{v}; };
  // Adaptive pooling's windows over a space of `shape`: whether position
  // (dimension `inDim`) lies in window (dimension `outDim`) of `n` inputs
  // pooled to `m`, window o being [o * n / m, ((o + 1) * n + m - 1) / m);
  // and the window's size.
  auto adaptiveWindow = [&](ArrayRef<int64_t> shape, int64_t outDim,
                            int64_t inDim, int64_t n,
                            int64_t m) -> std::pair<Value, Value> {
    auto i64 = RankedTensorType::get(shape, b.getI64Type());
    Value o = iota(shape, outDim), i = iota(shape, inDim);
    Value start = div(mul(o, splat(i64, n)), splat(i64, m));
    Value end = div(add(mul(add(o, splat(i64, 1)), splat(i64, n)),
                        splat(i64, m - 1)),
                    splat(i64, m));
    return {andI(cmp(P::GE, i, start), cmp(P::LT, i, end)), sub(end, start)};
  };

  if (target == "aten::avg_pool2d" || target == "aten::avg_pool3d") {
    // The sum of one strided slice per kernel position of the padded
    // input, divided per output position by eager's count: the window
    // clipped to the padded input (count_include_pad) or to the input.
    int64_t spatial = target == "aten::avg_pool2d" ? 2 : 3;
    RankedTensorType outType = resultType();
    Type elt = opmathType(outType.getElementType());
    Value x = convert(operands[0], elt);
    RankedTensorType xType = typeOf(x);
    bool batched = xType.getRank() == spatial + 2;
    if (!batched && xType.getRank() != spatial + 1)
      return Result(fail("input " + quoted(xType) + " is not " +
                         Twine(spatial) + "-d pooling's"));
    SmallVector<int64_t> kernel = spatialListArg("kernel_size", spatial, {});
    SmallVector<int64_t> stride = spatialListArg("stride", spatial, kernel);
    SmallVector<int64_t> padding =
        spatialListArg("padding", spatial, SmallVector<int64_t>(spatial, 0));
    if (static_cast<int64_t>(kernel.size()) != spatial ||
        static_cast<int64_t>(stride.size()) != spatial ||
        static_cast<int64_t>(padding.size()) != spatial)
      return Result(fail("kernel_size, stride and padding need " +
                         Twine(spatial) + " entries"));
    bool includePad = boolArg("count_include_pad", true);
    std::optional<int64_t> divisor;
    if (auto d = dyn_cast_if_present<IntegerAttr>(arg("divisor_override")))
      divisor = d.getInt();
    int64_t lead = xType.getRank() - spatial;
    int64_t positions = 1;
    SmallVector<int64_t> in, out;
    for (int64_t d = 0; d < spatial; ++d) {
      in.push_back(xType.getDimSize(lead + d));
      out.push_back(outType.getDimSize(lead + d));
      positions *= kernel[d];
      if (kernel[d] < 1 || stride[d] < 1 || padding[d] < 0)
        return Result(fail("a window of size, stride and padding below 1"));
    }
    if (llvm::is_contained(out, 0))
      return one(splat(outType, 0));
    if (positions > kMaxAvgPoolPositions)
      return Result(fail("windows of " + Twine(positions) +
                         " points are too large (at most " +
                         Twine(kMaxAvgPoolPositions) + ")"));
    // Padded so that every window's slice is in bounds (ceil_mode windows
    // may start past the padding; they read zeros there).
    SmallVector<int64_t> low(xType.getRank(), 0), high(xType.getRank(), 0),
        interior(xType.getRank(), 0);
    for (int64_t d = 0; d < spatial; ++d) {
      low[lead + d] = padding[d];
      high[lead + d] = (out[d] - 1) * stride[d] + kernel[d] - in[d] -
                       padding[d];
    }
    Value padded = prim::PadOp::create(b, loc, x, low, high, interior,
                                       APFloat(0.0));
    Value sum;
    SmallVector<int64_t> offset(spatial, 0);
    for (int64_t p = 0; p < positions; ++p) {
      int64_t rest = p;
      for (int64_t d = spatial - 1; d >= 0; --d) {
        offset[d] = rest % kernel[d];
        rest /= kernel[d];
      }
      SmallVector<int64_t> starts(xType.getRank(), 0),
          limits(typeOf(padded).getShape()), strides(xType.getRank(), 1);
      for (int64_t d = 0; d < spatial; ++d) {
        starts[lead + d] = offset[d];
        limits[lead + d] = offset[d] + (out[d] - 1) * stride[d] + 1;
        strides[lead + d] = stride[d];
      }
      Value slice =
          prim::SliceOp::create(b, loc, padded, starts, limits, strides);
      sum = sum ? prim::AddOp::create(b, loc, sum, slice).getResult() : slice;
    }
    // The divisor: a constant over the output positions (a product of
    // per-dimension counts), or divisor_override.
    RankedTensorType sumType = typeOf(sum);
    Value count;
    if (divisor) {
      count = splat(sumType, *divisor);
    } else {
      // Per dimension, from an iota over the output positions o: the
      // window [o * stride - padding, + kernel) clipped to the padded input
      // (its size with count_include_pad) and then to the input.
      for (int64_t d = 0; d < spatial; ++d) {
        auto i64 = RankedTensorType::get({out[d]}, b.getI64Type());
        Value start = prim::SubOp::create(
            b, loc,
            prim::MulOp::create(b, loc, iota({out[d]}, 0),
                                splat(i64, stride[d])),
            splat(i64, padding[d]));
        Value end = prim::MinimumOp::create(
            b, loc, prim::AddOp::create(b, loc, start, splat(i64, kernel[d])),
            splat(i64, in[d] + padding[d]));
        if (!includePad) {
          start = prim::MaximumOp::create(b, loc, start, splat(i64, 0));
          end = prim::MinimumOp::create(b, loc, end, splat(i64, in[d]));
        }
        Value size = convert(prim::SubOp::create(b, loc, end, start), elt);
        Value wide = prim::BroadcastInDimOp::create(
            b, loc, size, sumType.getShape(), ArrayRef<int64_t>{lead + d});
        count = count ? prim::MulOp::create(b, loc, count, wide).getResult()
                      : wide;
      }
    }
    return one(convert(prim::DivOp::create(b, loc, sum, count),
                       outType.getElementType()));
  }

  if (target == "aten::_adaptive_avg_pool3d") {
    // Separable: each spatial dimension is contracted with its averaging
    // matrix A[o, i] = 1 / |window o| for i in window o, where window o is
    // [floor(o * in / out), ceil((o + 1) * in / out)).
    RankedTensorType outType = resultType();
    Type elt = opmathType(outType.getElementType());
    Value x = convert(operands[0], elt);
    int64_t rank = typeOf(x).getRank();
    if (rank != 4 && rank != 5)
      return Result(fail("expected a 4-d or 5-d input"));
    if (outType.getNumElements() == 0)
      return one(splat(outType, 0));
    for (int64_t d = rank - 3; d < rank; ++d) {
      RankedTensorType type = typeOf(x);
      int64_t n = type.getDimSize(d), m = outType.getDimSize(d);
      // A[i, o] = 1 / |window o| for i in window o.
      SmallVector<int64_t> shape = {n, m};
      auto [inside, size] = adaptiveWindow(shape, 1, 0, n, m);
      auto weights = RankedTensorType::get(shape, elt);
      Value matrix = sel(inside, div(splat(weights, 1), convert(size, elt)),
                         splat(weights, 0));
      // d last, the rest merged: one matrix product, then back.
      SmallVector<int64_t> perm, rows;
      int64_t count = 1;
      for (int64_t k = 0; k < rank; ++k)
        if (k != d) {
          perm.push_back(k);
          rows.push_back(type.getDimSize(k));
          count *= type.getDimSize(k);
        }
      perm.push_back(d);
      Value last = d == rank - 1 ? x : permute(x, perm);
      Value y = matmul(reshape(last, {count, n}), matrix);
      rows.push_back(m);
      y = reshape(y, rows);
      if (d != rank - 1) {
        SmallVector<int64_t> inverse(rank);
        for (auto [k, p] : llvm::enumerate(perm))
          inverse[p] = k;
        y = permute(y, inverse);
      }
      x = y;
    }
    return one(convert(x, outType.getElementType()));
  }

  if (target == "aten::adaptive_max_pool2d") {
    // Every input position against every window it may fall in: window o
    // of a dimension of size n is [o * n / m, ((o + 1) * n + m - 1) / m).
    // The value is the window's maximum (NaN if any); the index is eager's:
    // the first position holding the maximum, or the last NaN.
    Value x = operands[0];
    RankedTensorType type = typeOf(x), outType = resultType(0);
    int64_t rank = type.getRank();
    if (rank != 3 && rank != 4)
      return Result(fail("expected a 3-d or 4-d input"));
    int64_t h = type.getDimSize(rank - 2), w = type.getDimSize(rank - 1);
    int64_t oh = outType.getDimSize(rank - 2),
            ow = outType.getDimSize(rank - 1);
    if (oh == 0 || ow == 0 || h == 0 || w == 0)
      return Result(SmallVector<Value>{
          splat(outType, 0), splat(resultType(1), 0)});
    if (type.getNumElements() / std::max<int64_t>(h * w, 1) * oh * ow * h *
            w >
        (int64_t(1) << 24))
      return Result(fail("too many windows for tc's dense adaptive pooling"));
    // [lead..., oh, ow, h, w]
    SmallVector<int64_t> wide(type.getShape().drop_back(2));
    int64_t lead = wide.size();
    wide.append({oh, ow, h, w});
    Value inside = andI(adaptiveWindow(wide, lead, lead + 2, h, oh).first,
                        adaptiveWindow(wide, lead + 1, lead + 3, w, ow).first);
    SmallVector<int64_t> xDims;
    for (int64_t d = 0; d < lead; ++d)
      xDims.push_back(d);
    xDims.append({lead + 2, lead + 3});
    Value xw = prim::BroadcastInDimOp::create(b, loc, x, wide, xDims);
    RankedTensorType wideType = typeOf(xw);
    Value values = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        prim::WhereOp::create(
            b, loc, inside, xw,
            reductionIdentity(wideType, prim::ReductionKind::Max)),
        ArrayRef<int64_t>{lead + 2, lead + 3});
    SmallVector<int64_t> vDims;
    for (int64_t d = 0; d < lead + 2; ++d)
      vDims.push_back(d);
    Value vw = prim::BroadcastInDimOp::create(b, loc, values, wide, vDims);
    Value nanV = isNan(vw);
    Value holds = prim::BitwiseAndOp::create(
        b, loc, inside,
        prim::BitwiseOrOp::create(
            b, loc, prim::CompareOp::create(b, loc, P::EQ, xw, vw),
            prim::BitwiseAndOp::create(b, loc, isNan(xw), nanV)));
    auto i64 = RankedTensorType::get(wide, b.getI64Type());
    Value flat = prim::AddOp::create(
        b, loc,
        prim::MulOp::create(b, loc, iota(wide, lead + 2), splat(i64, w)),
        iota(wide, lead + 3));
    Value first = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Min,
        prim::WhereOp::create(b, loc, holds, flat, splat(i64, h * w)),
        ArrayRef<int64_t>{lead + 2, lead + 3});
    Value last = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        prim::WhereOp::create(b, loc, holds, flat, splat(i64, -1)),
        ArrayRef<int64_t>{lead + 2, lead + 3});
    Value indices = prim::WhereOp::create(b, loc, isNan(values), last, first);
    return Result(SmallVector<Value>{values, indices});
  }

  if (target == "aten::addbmm") {
    // beta * self + alpha * sum_b b1[b] @ b2[b]: the batch folds into the
    // contraction.
    // Half precision accumulates and scales in f32 and rounds once; the
    // matmul of integers is a reduction of products.
    RankedTensorType outType = resultType();
    RankedTensorType type =
        outType.clone(opmathType(outType.getElementType()));
    Value b1 = convert(operands[1], type.getElementType());
    Value b2 = convert(operands[2], type.getElementType());
    RankedTensorType t1 = typeOf(b1), t2 = typeOf(b2);
    if (t1.getRank() != 3 || t2.getRank() != 3)
      return Result(fail("expected 3-d batches"));
    int64_t batch = t1.getDimSize(0), n = t1.getDimSize(1),
            k = t1.getDimSize(2), p = t2.getDimSize(2);
    Value lhs = reshape(permute(b1, {1, 0, 2}), {n, batch * k});
    Value product = matmul(lhs, reshape(b2, {batch * k, p}));
    double alpha = floatArg("alpha", 1), beta = floatArg("beta", 1);
    if (alpha != 1)
      product = prim::MulOp::create(b, loc, product, splat(type, alpha));
    if (beta == 0)
      return one(convert(product, outType.getElementType()));
    Value self = coerce(operands[0], type);
    if (beta != 1)
      self = prim::MulOp::create(b, loc, self, splat(type, beta));
    return one(convert(prim::AddOp::create(b, loc, self, product),
                       outType.getElementType()));
  }

  if (target == "aten::_trilinear") {
    // Each input gets size-1 dimensions at its expand positions, the three
    // multiply (broadcast) and the sum dimensions are reduced. Half types
    // multiply and sum in f32 and round once, as eager's kernel (each
    // product rounded to f16 was 1 ulp from eager's bilinear).
    RankedTensorType outType = resultType();
    RankedTensorType type =
        outType.clone(opmathType(outType.getElementType()));
    auto one = [&](Value v) -> Result {
      return SmallVector<Value>{convert(v, outType.getElementType())};
    };
    SmallVector<Value> inputs;
    SmallVector<int64_t> shape;
    for (auto [i, name] : llvm::enumerate(
             ArrayRef<StringRef>{"expand1", "expand2", "expand3"})) {
      Value v = convert(operands[i], type.getElementType());
      SmallVector<int64_t> expand =
          intListArg(name).value_or(SmallVector<int64_t>{});
      SmallVector<int64_t> s(typeOf(v).getShape());
      llvm::sort(expand);
      for (int64_t d : expand) {
        if (d < 0 || d > static_cast<int64_t>(s.size()))
          return Result(fail("expand dimension " + Twine(d) +
                             " is out of range"));
        s.insert(s.begin() + d, 1);
      }
      inputs.push_back(reshape(v, s));
      if (shape.empty())
        shape.assign(s.size(), 1);
      if (s.size() != shape.size())
        return Result(fail("the expanded inputs differ in rank"));
      for (auto [k, n] : llvm::enumerate(s))
        if (n != 1)
          shape[k] = n;
    }
    Value product = prim::MulOp::create(
        b, loc,
        prim::MulOp::create(b, loc, broadcast(inputs[0], shape),
                            broadcast(inputs[1], shape)),
        broadcast(inputs[2], shape));
    SmallVector<int64_t> sumdim =
        intListArg("sumdim").value_or(SmallVector<int64_t>{});
    if (sumdim.empty())
      return one(reshapeToResult(product));
    return one(reduce(prim::ReductionKind::Sum, product, sumdim, false, type));
  }

  if (target == "aten::_cdist_forward" || target == "aten::_pdist_forward") {
    // (sum |a - b|^p)^(1/p) over the feature dimension, for every pair;
    // p = 0 counts the differing features, p = inf takes the largest.
    bool pairs = target == "aten::_pdist_forward";
    RankedTensorType type = resultType();
    Value a = convert(operands[0], type.getElementType());
    Value bv = pairs ? a : convert(operands[1], type.getElementType());
    RankedTensorType at = typeOf(a), bt = typeOf(bv);
    int64_t rank = at.getRank();
    if (rank < 2 || bt.getRank() != rank ||
        at.getDimSize(rank - 1) != bt.getDimSize(rank - 1))
      return Result(fail("inputs " + quoted(at) + " and " + quoted(bt) +
                         " are not row sets of one width"));
    if (pairs && rank != 2)
      return Result(fail("expected a 2-d input"));
    double p = floatArg("p", 2);
    // [batch..., P, R, M]
    SmallVector<int64_t> wide(at.getShape().drop_back(2));
    int64_t pRows = at.getDimSize(rank - 2), rRows = bt.getDimSize(rank - 2),
            width = at.getDimSize(rank - 1);
    for (int64_t d = 0; d < rank - 2; ++d)
      if (at.getDimSize(d) != bt.getDimSize(d))
        return Result(fail("batch dimensions differ"));
    wide.append({pRows, rRows, width});
    SmallVector<int64_t> aDims, bDims;
    for (int64_t d = 0; d < rank - 2; ++d) {
      aDims.push_back(d);
      bDims.push_back(d);
    }
    aDims.append({rank - 2, rank});
    bDims.append({rank - 1, rank});
    Value diff = prim::AbsOp::create(
        b, loc,
        prim::SubOp::create(
            b, loc, prim::BroadcastInDimOp::create(b, loc, a, wide, aDims),
            prim::BroadcastInDimOp::create(b, loc, bv, wide, bDims)));
    RankedTensorType wideType = typeOf(diff);
    int64_t last = wide.size() - 1;
    Value dist;
    if (std::isinf(p)) {
      dist = prim::ReduceOp::create(b, loc, prim::ReductionKind::Max, diff,
                                    ArrayRef<int64_t>{last});
    } else if (p == 0) {
      dist = prim::ReduceOp::create(
          b, loc, prim::ReductionKind::Sum,
          prim::WhereOp::create(
              b, loc,
              prim::CompareOp::create(b, loc, P::NE, diff,
                                      splat(wideType, 0)),
              splat(wideType, 1), splat(wideType, 0)),
          ArrayRef<int64_t>{last});
    } else {
      Value powered =
          p == 1 ? diff
          : p == 2
              ? prim::MulOp::create(b, loc, diff, diff).getResult()
              : prim::PowOp::create(b, loc, diff, splat(wideType, p))
                    .getResult();
      dist = prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum, powered,
                                    ArrayRef<int64_t>{last});
      if (p == 2)
        dist = prim::SqrtOp::create(b, loc, dist);
      else if (p != 1)
        dist = prim::PowOp::create(b, loc, dist,
                                   splat(typeOf(dist), 1.0 / p));
    }
    if (!pairs)
      return one(dist);
    // The upper triangle, row by row: pair k is (i, j), i < j, with
    // i = n - 2 - floor(sqrt(4n(n - 1) - 8k - 7) / 2 - 1/2) and
    // j = k + i + 1 - n(n - 1)/2 + (n - i)(n - i - 1)/2.
    int64_t n = pRows, count = n * (n - 1) / 2;
    auto f64 = RankedTensorType::get({count}, b.getF64Type());
    auto i64 = RankedTensorType::get({count}, b.getI64Type());
    Value k = iota({count}, 0);
    Value root = prim::SqrtOp::create(
        b, loc,
        prim::SubOp::create(
            b, loc, splat(f64, 4.0 * n * (n - 1) - 7),
            prim::MulOp::create(b, loc, convert(k, b.getF64Type()),
                                splat(f64, 8))));
    Value i = prim::SubOp::create(
        b, loc, splat(i64, n - 2),
        convert(prim::FloorOp::create(
                    b, loc,
                    prim::SubOp::create(
                        b, loc,
                        prim::MulOp::create(b, loc, root, splat(f64, 0.5)),
                        splat(f64, 0.5))),
                b.getI64Type()));
    Value ni = prim::SubOp::create(b, loc, splat(i64, n), i);
    Value j = prim::AddOp::create(
        b, loc,
        prim::SubOp::create(
            b, loc, prim::AddOp::create(b, loc, k, i),
            splat(i64, n * (n - 1) / 2 - 1)),
        prim::DivOp::create(
            b, loc,
            prim::MulOp::create(
                b, loc, ni, prim::SubOp::create(b, loc, ni, splat(i64, 1))),
            splat(i64, 2)));
    Value at_ = prim::AddOp::create(
        b, loc, prim::MulOp::create(b, loc, i, splat(i64, n)), j);
    return one(prim::GatherOp::create(b, loc, reshape(dist, {n * n}), at_, 0)
                   .getResult());
  }

  if (target == "aten::mode") {
    // The most frequent value of each row (the smallest among equally
    // frequent ones) and the last position holding it, as eager picks.
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    if (type.getRank() == 0)
      return Result(SmallVector<Value>{x, splat(RankedTensorType::get(
                                                    {}, b.getI64Type()),
                                                0)});
    int64_t rank = type.getRank();
    int64_t dim = normalizeDim(intArg("dim", -1), rank);
    int64_t n = type.getDimSize(dim);
    if (n == 0)
      return Result(fail("mode of an empty dimension"));
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim)
        perm.push_back(d);
    perm.push_back(dim);
    Value row = dim == rank - 1 ? x : permute(x, perm);
    RankedTensorType rowType = typeOf(row);
    SmallVector<int64_t> wide(rowType.getShape());
    wide.push_back(n);
    SmallVector<int64_t> iDims, jDims;
    for (int64_t d = 0; d < rank - 1; ++d) {
      iDims.push_back(d);
      jDims.push_back(d);
    }
    iDims.push_back(rank - 1);
    jDims.push_back(rank);
    Value xi = prim::BroadcastInDimOp::create(b, loc, row, wide, iDims);
    Value xj = prim::BroadcastInDimOp::create(b, loc, row, wide, jDims);
    Value same = prim::CompareOp::create(b, loc, P::EQ, xi, xj);
    if (isa<FloatType>(type.getElementType()))
      same = prim::BitwiseOrOp::create(
          b, loc, same, prim::BitwiseAndOp::create(b, loc, isNan(xi),
                                                   isNan(xj)));
    auto i64 = [&](ArrayRef<int64_t> s) {
      return RankedTensorType::get(s, b.getI64Type());
    };
    Value count = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        prim::WhereOp::create(b, loc, same, splat(i64(wide), 1),
                              splat(i64(wide), 0)),
        ArrayRef<int64_t>{rank});
    SmallVector<int64_t> kept(rowType.getShape());
    kept.back() = 1;
    Value best = reduce(prim::ReductionKind::Max, count, {rank - 1}, true,
                        i64(kept));
    Value frequent = prim::CompareOp::create(
        b, loc, P::EQ, count, broadcast(best, rowType.getShape()));
    // The smallest frequent value (NaN sorts last).
    Value candidates = prim::WhereOp::create(
        b, loc, frequent, row,
        reductionIdentity(rowType, prim::ReductionKind::Min));
    Value value = reduce(prim::ReductionKind::Min, candidates, {rank - 1},
                         true, rowType.clone(kept));
    if (isa<FloatType>(type.getElementType())) {
      // min() propagates NaN: a NaN is the mode only if no number is.
      Value numbers = prim::WhereOp::create(
          b, loc, prim::BitwiseAndOp::create(
                      b, loc, frequent,
                      prim::BitwiseNotOp::create(b, loc, isNan(row))),
          row, reductionIdentity(rowType, prim::ReductionKind::Min));
      Value numberMode = reduce(prim::ReductionKind::Min, numbers,
                                {rank - 1}, true, rowType.clone(kept));
      Value anyNumber = reduce(
          prim::ReductionKind::Max,
          convert(prim::BitwiseAndOp::create(
                      b, loc, frequent,
                      prim::BitwiseNotOp::create(b, loc, isNan(row))),
                  b.getI32Type()),
          {rank - 1}, true, RankedTensorType::get(kept, b.getI32Type()));
      value = prim::WhereOp::create(
          b, loc,
          prim::CompareOp::create(
              b, loc, P::GT, anyNumber,
              splat(RankedTensorType::get(kept, b.getI32Type()), 0)),
          numberMode, value);
    }
    Value holds = prim::CompareOp::create(b, loc, P::EQ, row,
                                          broadcast(value, rowType.getShape()));
    if (isa<FloatType>(type.getElementType()))
      holds = prim::BitwiseOrOp::create(
          b, loc, holds,
          prim::BitwiseAndOp::create(
              b, loc, isNan(row),
              isNan(broadcast(value, rowType.getShape()))));
    Value position = reduce(
        prim::ReductionKind::Max,
        prim::WhereOp::create(b, loc, holds, iota(rowType.getShape(), rank - 1),
                              splat(i64(rowType.getShape()), -1)),
        {rank - 1}, true, i64(kept));
    SmallVector<int64_t> inverse(rank);
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    auto back = [&](Value v) -> Value {
      return dim == rank - 1 ? v : permute(v, inverse);
    };
    return Result(SmallVector<Value>{
        reshape(back(value), resultType(0).getShape()),
        reshape(back(position), resultType(1).getShape())});
  }

  if (target == "aten::histc") {
    // Counts of the values in `bins` equal-width bins over [min, max] (the
    // data's own range when min == max); the last bin is closed, values
    // outside are ignored. A value's bin is eager's arithmetic,
    // (x - min) * bins / (max - min) truncated, in the input's float type
    // (f32 for the half types, as eager's CUDA kernel; f64 arithmetic put
    // values within an ulp of an edge in the neighbouring bin). The counts
    // are a scatter-add of ones at the bins: O(values) work, where comparing
    // every value with every bin took O(values x bins).
    RankedTensorType type = resultType();
    if (!isa<FloatType>(type.getElementType()))
      return Result(fail("histc of " + quoted(type)));
    int64_t bins = intArg("bins", 100);
    if (bins < 1)
      return Result(fail("bins must be positive"));
    double lo = floatArg("min", 0), hi = floatArg("max", 0);
    Type inputElt = typeOf(operands[0]).getElementType();
    Type computeElt =
        inputElt.isF64() ? Type(b.getF64Type()) : Type(b.getF32Type());
    Value x = convert(operands[0], computeElt);
    int64_t numel = typeOf(x).getNumElements();
    x = reshape(x, {numel});
    auto scalar = RankedTensorType::get({}, computeElt);
    Value low, high;
    if (lo == hi && numel > 0) {
      low = reduce(prim::ReductionKind::Min, x, {0}, false, scalar);
      high = reduce(prim::ReductionKind::Max, x, {0}, false, scalar);
      // A constant range widens by 1 on each side, as in eager.
      Value flat = prim::CompareOp::create(b, loc, P::EQ, low, high);
      low = prim::WhereOp::create(
          b, loc, flat, prim::SubOp::create(b, loc, low, splat(scalar, 1)),
          low);
      high = prim::WhereOp::create(
          b, loc, flat, prim::AddOp::create(b, loc, high, splat(scalar, 1)),
          high);
    } else {
      if (lo == hi) {
        lo -= 1;
        hi += 1;
      }
      low = splat(scalar, lo);
      high = splat(scalar, hi);
    }
    auto vec = RankedTensorType::get({numel}, computeElt);
    Value lowV = broadcast(low, {numel}), highV = broadcast(high, {numel});
    Value inside = prim::BitwiseAndOp::create(
        b, loc, prim::CompareOp::create(b, loc, P::GE, x, lowV),
        prim::CompareOp::create(b, loc, P::LE, x, highV));
    // bin = trunc((x - low) * bins / (high - low)), the maximum in the last.
    Value pos = prim::FloorOp::create(
        b, loc,
        prim::DivOp::create(
            b, loc,
            prim::MulOp::create(b, loc,
                                prim::SubOp::create(b, loc, x, lowV),
                                splat(vec, bins)),
            prim::SubOp::create(b, loc, highV, lowV)));
    pos = prim::MinimumOp::create(b, loc, pos, splat(vec, bins - 1));
    auto indexType = RankedTensorType::get({numel}, b.getI64Type());
    Value bin = convert(pos, b.getI64Type());
    // Values outside the range land at `bins`, which the scatter drops.
    bin = prim::WhereOp::create(b, loc, inside, bin, splat(indexType, bins));
    auto countType = RankedTensorType::get({bins}, b.getF32Type());
    Value counts = prim::ScatterAddOp::create(
        b, loc, countType,
        splat(RankedTensorType::get({numel}, b.getF32Type()), 1), bin);
    return one(convert(counts, type.getElementType()));
  }

  if (target == "aten::histogram.bin_ct" ||
      target == "aten::histogram.bins_tensor") {
    // The (weighted) counts of the values in the bins between consecutive
    // edges, the last bin closed. The edges are given, or eager's linspace
    // over `range` (or the data's range, widened by 0.5 on each side when
    // it is one value). A value's bin is the number of edges at or below
    // it, less one: eager's search. Dense: every value against every edge.
    RankedTensorType histType = resultType(0), edgeType = resultType(1);
    Type elt = histType.getElementType();
    if (!isa<FloatType>(elt) || histType.getRank() != 1 ||
        edgeType.getRank() != 1 || histType.getDimSize(0) < 1 ||
        edgeType.getDimSize(0) != histType.getDimSize(0) + 1)
      return Result(fail("histogram of " + quoted(histType)));
    bool byTensor = target == "aten::histogram.bins_tensor";
    int64_t bins = histType.getDimSize(0), count = bins + 1;
    Value x = convert(tensorArg(0).front(), elt);
    int64_t numel = typeOf(x).getNumElements();
    x = reshape(x, {numel});
    SmallVector<Value> weights = tensorArg(byTensor ? 2 : 1);
    auto scalar = RankedTensorType::get({}, elt);
    auto edgeVec = RankedTensorType::get({count}, elt);
    Value edges;
    if (byTensor) {
      edges = reshape(convert(tensorArg(1).front(), elt), {count});
    } else {
      Value low, high;
      std::optional<SmallVector<double>> range;
      if (auto list = dyn_cast_if_present<ArrayAttr>(arg("range"))) {
        range.emplace();
        for (Attribute a : list)
          range->push_back(cast<FloatAttr>(a).getValueAsDouble());
      }
      if (range && range->size() == 2) {
        low = splat(scalar, (*range)[0]);
        high = splat(scalar, (*range)[1]);
      } else if (numel > 0) {
        low = reduce(prim::ReductionKind::Min, x, {0}, false, scalar);
        high = reduce(prim::ReductionKind::Max, x, {0}, false, scalar);
      } else {
        low = high = splat(scalar, 0);
      }
      Value flat = cmp(P::EQ, low, high);
      low = sel(flat, sub(low, splat(scalar, 0.5)), low);
      high = sel(flat, add(high, splat(scalar, 0.5)), high);
      // linspace(low, high, count) as eager computes it: from the start
      // for the first half, from the end for the second.
      Value step = div(sub(high, low), splat(scalar, double(bins)));
      Value i = convert(iota({count}, 0), elt);
      Value steps = broadcast(step, {count});
      Value fromStart = add(broadcast(low, {count}), mul(i, steps));
      Value fromEnd = sub(broadcast(high, {count}),
                          mul(sub(splat(edgeVec, double(bins)), i), steps));
      edges = sel(cmp(P::LT, iota({count}, 0),
                      splat(edgeVec.clone(b.getI64Type()), count / 2)),
                  fromStart, fromEnd);
    }
    if (numel == 0) {
      Value hist = splat(histType, 0);
      return Result(SmallVector<Value>{hist, edges});
    }
    // [value, edge]: how many edges are at or below each value.
    SmallVector<int64_t> grid = {numel, count};
    Value xWide = prim::BroadcastInDimOp::create(b, loc, x, grid,
                                                 ArrayRef<int64_t>{0});
    Value eWide = prim::BroadcastInDimOp::create(b, loc, edges, grid,
                                                 ArrayRef<int64_t>{1});
    auto gridI64 = RankedTensorType::get(grid, b.getI64Type());
    Value below = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Sum,
        sel(cmp(P::LE, eWide, xWide), splat(gridI64, 1), splat(gridI64, 0)),
        ArrayRef<int64_t>{1});
    auto vecI64 = RankedTensorType::get({numel}, b.getI64Type());
    Value first = broadcast(reshape(prim::SliceOp::create(
                                        b, loc, edges, ArrayRef<int64_t>{0},
                                        ArrayRef<int64_t>{1},
                                        ArrayRef<int64_t>{1}),
                                    {}),
                            {numel});
    Value last = broadcast(
        reshape(prim::SliceOp::create(b, loc, edges, ArrayRef<int64_t>{bins},
                                      ArrayRef<int64_t>{count},
                                      ArrayRef<int64_t>{1}),
                {}),
        {numel});
    Value inside = andI(cmp(P::GE, x, first), cmp(P::LE, x, last));
    Value bin = prim::MinimumOp::create(b, loc, sub(below, splat(vecI64, 1)),
                                        splat(vecI64, bins - 1));
    bin = sel(inside, bin, splat(vecI64, -1));
    SmallVector<int64_t> wide = {bins, numel};
    Value hit = cmp(P::EQ,
                    prim::BroadcastInDimOp::create(b, loc, bin, wide,
                                                   ArrayRef<int64_t>{1}),
                    iota(wide, 0));
    auto wideType = RankedTensorType::get(wide, elt);
    Value w = weights.empty()
                  ? splat(wideType, 1)
                  : prim::BroadcastInDimOp::create(
                        b, loc, reshape(convert(weights.front(), elt), {numel}),
                        wide, ArrayRef<int64_t>{1})
                        .getResult();
    Value hist = prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum,
                                        sel(hit, w, splat(wideType, 0)),
                                        ArrayRef<int64_t>{1});
    if (boolArg("density", false)) {
      Value total = broadcast(
          reduce(prim::ReductionKind::Sum, hist, {0}, false, scalar), {bins});
      Value widths =
          sub(prim::SliceOp::create(b, loc, edges, ArrayRef<int64_t>{1},
                                    ArrayRef<int64_t>{count},
                                    ArrayRef<int64_t>{1}),
              prim::SliceOp::create(b, loc, edges, ArrayRef<int64_t>{0},
                                    ArrayRef<int64_t>{bins},
                                    ArrayRef<int64_t>{1}));
      hist = div(hist, mul(total, widths));
    }
    return Result(SmallVector<Value>{hist, edges});
  }

  if (target == "aten::_upsample_bilinear2d_aa" ||
      target == "aten::_upsample_bicubic2d_aa" ||
      target == "aten::_upsample_bilinear2d_aa_backward" ||
      target == "aten::_upsample_bicubic2d_aa_backward") {
    // Anti-aliased resizing is separable: out = Wh x Ww^T per image, with
    // eager's weights as constants (a product per dimension; the gradient
    // is the transposed products). Computed in the opmath type.
    bool backward = target.ends_with("_backward");
    bool cubic = target.contains("bicubic");
    RankedTensorType outType = resultType();
    Type elt = opmathType(outType.getElementType());
    if (!elt.isF32() && !elt.isF64())
      return Result(fail("anti-aliased resizing of " + quoted(outType)));
    Value x = convert(operands[0], elt);
    RankedTensorType xType = typeOf(x);
    if (xType.getRank() != 4 || !xType.hasStaticShape())
      return Result(fail("input " + quoted(xType) + " is not 4-d"));
    // Sizes of the resized (output) image and the source image.
    RankedTensorType image = backward ? outType : xType;
    RankedTensorType resized = backward ? xType : outType;
    int64_t in[2] = {image.getDimSize(2), image.getDimSize(3)};
    int64_t out[2] = {resized.getDimSize(2), resized.getDimSize(3)};
    for (int d = 0; d < 2; ++d)
      if (in[d] * out[d] > limits::kMaxResampleWeights)
        return Result(fail("a resize of " + Twine(in[d]) + " to " +
                           Twine(out[d]) + " needs more than " +
                           Twine(limits::kMaxResampleWeights) + " weights"));
    if (llvm::is_contained(out, 0) || llvm::is_contained(in, 0) ||
        outType.getNumElements() == 0)
      return one(splat(outType, 0));
    bool alignCorners = boolArg("align_corners", false);
    auto scaleOf = [&](StringRef name) -> std::optional<double> {
      if (auto f = dyn_cast_if_present<FloatAttr>(arg(name)))
        return f.getValueAsDouble();
      return std::nullopt;
    };
    // Eager's weights along dimension d as an [in, out] matrix (forward;
    // [out, in] backward), computed in the graph as eager's CPU kernel
    // computes them: output i averages the inputs j within `support` of
    // its centre with the filter (bilinear: a triangle; bicubic: Keys'
    // cubic, a = -0.5) stretched by the scale when downsampling,
    // normalized to sum 1; the window is [max(trunc(centre - support +
    // 0.5), 0), trunc(centre + support + 0.5)).
    auto weights = [&](int d, std::optional<double> scaleArg) -> Value {
      double scale =
          alignCorners ? (out[d] > 1 ? double(in[d] - 1) / (out[d] - 1) : 0.0)
          : scaleArg && *scaleArg > 0 ? 1.0 / *scaleArg
                                      : double(in[d]) / out[d];
      if (elt.isF32())
        scale = static_cast<float>(scale);
      double half = cubic ? 2 : 1;
      double support = scale >= 1 ? half * scale : half;
      double invscale = scale >= 1 ? 1 / scale : 1;
      int64_t outDim = backward ? 0 : 1;
      SmallVector<int64_t> shape =
          backward ? SmallVector<int64_t>{out[d], in[d]}
                   : SmallVector<int64_t>{in[d], out[d]};
      auto type = RankedTensorType::get(shape, elt);
      auto c = [&](double v) { return splat(type, v); };
      Value i = convert(iota(shape, outDim), elt);
      Value j = convert(iota(shape, 1 - outDim), elt);
      Value center = mul(c(scale), add(i, c(0.5)));
      Value lo = prim::FloorOp::create(
          b, loc, prim::MaximumOp::create(
                      b, loc, add(sub(center, c(support)), c(0.5)), c(0)));
      Value hi = prim::FloorOp::create(b, loc,
                                       add(add(center, c(support)), c(0.5)));
      Value t = prim::AbsOp::create(
          b, loc, mul(add(sub(j, center), c(0.5)), c(invscale)));
      Value w;
      if (!cubic) {
        w = prim::MaximumOp::create(b, loc, sub(c(1), t), c(0));
      } else {
        const double a = -0.5;
        Value near = add(mul(mul(sub(mul(c(a + 2), t), c(a + 3)), t), t),
                         c(1));
        Value far = sub(
            mul(add(mul(sub(mul(c(a), t), c(5 * a)), t), c(8 * a)), t),
            c(4 * a));
        w = sel(cmp(P::LT, t, c(1)), near,
                sel(cmp(P::LT, t, c(2)), far, c(0)));
      }
      w = sel(andI(cmp(P::GE, j, lo), cmp(P::LT, j, hi)), w, c(0));
      int64_t jDim = 1 - outDim;
      RankedTensorType totalType = RankedTensorType::get(
          backward ? ArrayRef<int64_t>{out[d], 1}
                   : ArrayRef<int64_t>{1, out[d]},
          elt);
      Value total = broadcast(
          reduce(prim::ReductionKind::Sum, w, {jDim}, true, totalType), shape);
      return sel(cmp(P::EQ, total, c(0)), w, div(w, total));
    };
    auto contractLast = [&](Value v, Value w) -> Value {
      return prim::DotOp::create(b, loc, v, w, ArrayRef<int64_t>{},
                                 ArrayRef<int64_t>{}, ArrayRef<int64_t>{3},
                                 ArrayRef<int64_t>{0});
    };
    // Width, then height (moved last and back).
    Value t = contractLast(x, weights(1, scaleOf("scales_w")));
    t = contractLast(permute(t, {0, 1, 3, 2}), weights(0, scaleOf("scales_h")));
    return one(convert(permute(t, {0, 1, 3, 2}), outType.getElementType()));
  }

  return std::nullopt;
}
