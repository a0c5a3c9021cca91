//===- Indexing.cpp - advanced indexing and scatters ------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for ATen's indexing family: `index.Tensor` (x[i, j]),
// `index_put` (x[i, j] = v, also accumulating), the scatters (`scatter`,
// `scatter_add`, `scatter_reduce`, `index_reduce`, `put`), the strided
// views (`diagonal`, `as_strided`, `unfold`) and their scatters.
//
// Reads are gathers (`prim.gather` on a linear position). Writes are
// dense: every update is compared with every position it may land on and
// the matches are reduced, so there is no write conflict to order and the
// result is deterministic; duplicate positions without accumulation keep
// the last update, as eager's CPU loop does. The cost is the product of
// the updates and the positions, which the Python side bounds
// (tc.support.DENSE_SCATTER_LIMIT) before a graph gets here; the same bound
// is checked here.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

/// The most compare-and-select steps (updates times positions) a dense
/// scatter may take. A scatter of one update per column (nll_loss's
/// gradient: one class per row) compares each position once, what eager's
/// copy of `self` costs, at any size.
constexpr int64_t kDenseScatterLimit = limits::kDenseSteps;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

SmallVector<Value> Decomposer::tensorArg(unsigned n) const {
  std::optional<ArrayRef<int32_t>> sizes = op.getTensorArgSizes();
  if (!sizes) {
    if (n < operands.size())
      return {operands[n]};
    return {};
  }
  unsigned begin = 0;
  for (unsigned i = 0; i < n && i < sizes->size(); ++i)
    begin += (*sizes)[i];
  if (n >= sizes->size())
    return {};
  return SmallVector<Value>(operands.slice(begin, (*sizes)[n]));
}

SmallVector<bool> Decomposer::presentEntries(StringRef name,
                                             unsigned count) const {
  if (auto mask = dyn_cast_if_present<DenseBoolArrayAttr>(arg(name)))
    return SmallVector<bool>(mask.asArrayRef());
  return SmallVector<bool>(count, true);
}

Value Decomposer::iota(ArrayRef<int64_t> shape, int64_t dim) {
  return prim::IotaOp::create(b, loc, shape, dim, b.getI64Type());
}

Value Decomposer::wrapIndex(Value index, int64_t size) {
  index = convert(index, b.getI64Type());
  RankedTensorType type = typeOf(index);
  Value negative =
      prim::CompareOp::create(b, loc, P::LT, index, splat(type, 0));
  return prim::WhereOp::create(
      b, loc, negative,
      prim::AddOp::create(b, loc, index, splat(type, size)), index);
}

Value Decomposer::reductionIdentity(RankedTensorType type,
                                    prim::ReductionKind kind) {
  Type elt = type.getElementType();
  bool isFloat = isa<FloatType>(elt);
  switch (kind) {
  case prim::ReductionKind::Sum:
    return splat(type, 0);
  case prim::ReductionKind::Prod:
    return splat(type, 1);
  case prim::ReductionKind::Max:
  case prim::ReductionKind::Min: {
    bool max = kind == prim::ReductionKind::Max;
    if (isFloat)
      return splat(type, max ? -std::numeric_limits<double>::infinity()
                             : std::numeric_limits<double>::infinity());
    if (elt.isInteger(1))
      return splat(type, max ? 0 : 1);
    unsigned width = elt.getIntOrFloatBitWidth();
    APInt value = max ? APInt::getSignedMinValue(width)
                      : APInt::getSignedMaxValue(width);
    return prim::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, IntegerAttr::get(elt, value)));
  }
  }
  llvm_unreachable("unknown reduction kind");
}

Value Decomposer::linearIndex(ArrayRef<Value> indices, ArrayRef<int64_t> dims,
                              ArrayRef<int64_t> shape) {
  // The broadcast shape of the index tensors (right-aligned).
  SmallVector<int64_t> common;
  for (Value index : indices) {
    ArrayRef<int64_t> s = typeOf(index).getShape();
    if (s.size() > common.size())
      common.insert(common.begin(), s.size() - common.size(), 1);
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &c = common[common.size() - s.size() + i];
      if (c == 1)
        c = s[i];
    }
  }
  auto type = RankedTensorType::get(common, b.getI64Type());
  Value linear;
  int64_t stride = 1;
  for (int64_t k = indices.size() - 1; k >= 0; --k) {
    int64_t size = shape[dims[k]];
    Value index = broadcast(wrapIndex(indices[k], size), common);
    if (stride != 1)
      index = prim::MulOp::create(b, loc, index, splat(type, stride));
    linear = linear ? prim::AddOp::create(b, loc, linear, index).getResult()
                    : index;
    stride *= size;
  }
  return linear;
}

Value Decomposer::placeInto(Value dest, Value part, ArrayRef<int64_t> low,
                             ArrayRef<int64_t> high,
                             ArrayRef<int64_t> interior) {
  Value padded =
      prim::PadOp::create(b, loc, part, low, high, interior, APFloat(0.0));
  Value inside = prim::PadOp::create(
      b, loc, splat(typeOf(part).clone(b.getI1Type()), 1), low, high,
      interior, APFloat(0.0));
  return prim::WhereOp::create(b, loc, inside, padded, dest);
}

Value Decomposer::scatterRows(Value rows, Value at, Value values,
                              std::optional<prim::ReductionKind> kind,
                              bool includeSelf, bool mean) {
  RankedTensorType rowsType = typeOf(rows);
  int64_t k = rowsType.getDimSize(0), r = rowsType.getDimSize(1);
  int64_t j = typeOf(values).getDimSize(0);
  if (j > 1 && j * k * r > kDenseScatterLimit)
    return reject(rowsType, "a scatter of " + Twine(j) + " updates over " +
                                Twine(k) + " x " + Twine(r) +
                                " positions is too large for tc's dense "
                                "scatter");
  Type elt = rowsType.getElementType();
  values = convert(values, elt);
  // What a row that updates reach becomes: the updates combined with the
  // row's own value (include_self), or the updates alone.
  auto rowsOf = [&](Value updates) -> Value {
    if (!kind || !includeSelf)
      return updates;
    switch (*kind) {
    case prim::ReductionKind::Sum:
      return prim::AddOp::create(b, loc, rows, updates);
    case prim::ReductionKind::Prod:
      return prim::MulOp::create(b, loc, rows, updates);
    case prim::ReductionKind::Max:
      return prim::MaximumOp::create(b, loc, rows, updates);
    case prim::ReductionKind::Min:
      return prim::MinimumOp::create(b, loc, rows, updates);
    }
    llvm_unreachable("unknown reduction kind");
  };
  if (j == 1 && !mean) {
    // One update per column: a position takes it where its column's index
    // names its row (a select per position; nll_loss's gradient).
    SmallVector<int64_t> shape = {k, r};
    bool perColumn = typeOf(at).getRank() == 2;
    Value atRow = reshape(at, perColumn ? SmallVector<int64_t>{r}
                                        : SmallVector<int64_t>{});
    Value atWide = prim::BroadcastInDimOp::create(
        b, loc, atRow, shape,
        perColumn ? ArrayRef<int64_t>{1} : ArrayRef<int64_t>{});
    Value hit =
        prim::CompareOp::create(b, loc, P::EQ, atWide, iota(shape, 0));
    Value update = prim::BroadcastInDimOp::create(
        b, loc, reshape(values, {r}), shape, ArrayRef<int64_t>{1});
    return prim::WhereOp::create(b, loc, hit, rowsOf(update), rows);
  }
  // The selection space: (update j, row k, column r).
  SmallVector<int64_t> wide = {j, k, r};
  auto wideType = RankedTensorType::get(wide, elt);
  Value atWide =
      typeOf(at).getRank() == 1
          ? prim::BroadcastInDimOp::create(b, loc, at, wide,
                                           ArrayRef<int64_t>{0})
                .getResult()
          : prim::BroadcastInDimOp::create(b, loc, at, wide,
                                           ArrayRef<int64_t>{0, 2})
                .getResult();
  Value hit = prim::CompareOp::create(b, loc, P::EQ, atWide, iota(wide, 1));
  Value valuesWide = prim::BroadcastInDimOp::create(b, loc, values, wide,
                                                    ArrayRef<int64_t>{0, 2});
  auto countType = RankedTensorType::get({k, r}, b.getI64Type());
  // Rows that at least one update reaches.
  Value count = prim::ReduceOp::create(
      b, loc, prim::ReductionKind::Sum,
      prim::WhereOp::create(b, loc, hit,
                            splat(RankedTensorType::get(wide, b.getI64Type()),
                                  1),
                            splat(RankedTensorType::get(wide, b.getI64Type()),
                                  0)),
      ArrayRef<int64_t>{0});
  Value reached =
      prim::CompareOp::create(b, loc, P::GT, count, splat(countType, 0));

  if (!kind) {
    // The last update of each row: the largest j that hits it.
    Value last = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        prim::WhereOp::create(
            b, loc, hit, iota(wide, 0),
            splat(RankedTensorType::get(wide, b.getI64Type()), -1)),
        ArrayRef<int64_t>{0});
    Value isLast = prim::CompareOp::create(
        b, loc, P::EQ, iota(wide, 0),
        prim::BroadcastInDimOp::create(b, loc, last, wide,
                                       ArrayRef<int64_t>{1, 2}));
    // Exactly one update is selected per reached row: a max over the
    // others' lowest value picks it (a sum would lose the sign of -0.0).
    Value picked = prim::ReduceOp::create(
        b, loc, prim::ReductionKind::Max,
        prim::WhereOp::create(
            b, loc, isLast, valuesWide,
            reductionIdentity(wideType, prim::ReductionKind::Max)),
        ArrayRef<int64_t>{0});
    return prim::WhereOp::create(b, loc, reached, picked, rows);
  }

  Value combined = prim::ReduceOp::create(
      b, loc, *kind,
      prim::WhereOp::create(b, loc, hit, valuesWide,
                            reductionIdentity(wideType, *kind)),
      ArrayRef<int64_t>{0});
  Value result = rowsOf(combined);
  if (mean) {
    Value n = includeSelf ? prim::AddOp::create(b, loc, count,
                                                splat(countType, 1))
                                .getResult()
                          : count;
    n = convert(n, elt);
    result = isa<FloatType>(elt) ? prim::DivOp::create(b, loc, result, n)
                                       .getResult()
                                 : floorDiv(result, n);
  }
  return prim::WhereOp::create(b, loc, reached, result, rows);
}

//===----------------------------------------------------------------------===//
// The family
//===----------------------------------------------------------------------===//

/// The `reduce` string of scatter_reduce/index_reduce/scatter.reduce as a
/// reduction kind (with `mean` set for "mean"), or failure.
static FailureOr<prim::ReductionKind> reduceKind(StringRef name, bool &mean) {
  mean = false;
  if (name == "sum" || name == "add")
    return prim::ReductionKind::Sum;
  if (name == "prod" || name == "multiply")
    return prim::ReductionKind::Prod;
  if (name == "amax")
    return prim::ReductionKind::Max;
  if (name == "amin")
    return prim::ReductionKind::Min;
  if (name == "mean") {
    mean = true;
    return prim::ReductionKind::Sum;
  }
  return failure();
}

std::optional<Decomposer::Result> Decomposer::indexing(StringRef target) {
  auto one = [](Value v) -> Result { return SmallVector<Value>{v}; };

  if (target == "aten::index.Tensor" || target == "aten::_unsafe_index.Tensor" ||
      target == "aten::index_put" || target == "aten::_unsafe_index_put") {
    // x[i0, i1, ...]: the indexed dimensions (moved to the front) merge
    // into one, which the linear position of the picked elements gathers.
    bool put = target.contains("index_put");
    Value x = tensorArg(0).front();
    SmallVector<Value> given = tensorArg(1);
    RankedTensorType xType = typeOf(x);
    int64_t rank = xType.getRank();
    SmallVector<bool> present = presentEntries("indices", given.size());
    if (llvm::count(present, true) != static_cast<int64_t>(given.size()) ||
        static_cast<int64_t>(present.size()) > rank)
      return fail("the indices do not match self's dimensions");
    SmallVector<int64_t> dims;
    for (auto [d, p] : llvm::enumerate(present))
      if (p)
        dims.push_back(d);
    for (Value index : given)
      if (!isa<IntegerType>(typeOf(index).getElementType()) ||
          typeOf(index).getElementType().isInteger(1))
        return fail("boolean mask indices are not supported (their result "
                    "shape depends on the data)");
    if (dims.empty())
      return fail("expected at least one index tensor");
    Value linear = linearIndex(given, dims, xType.getShape());
    ArrayRef<int64_t> indexShape = typeOf(linear).getShape();
    // The indexed dimensions first, the others after them in order.
    SmallVector<int64_t> perm(dims), rest;
    int64_t merged = 1, restSize = 1;
    for (int64_t d : dims)
      merged *= xType.getDimSize(d);
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(dims, d)) {
        perm.push_back(d);
        rest.push_back(xType.getDimSize(d));
        restSize *= xType.getDimSize(d);
      }
    bool identity = llvm::equal(perm, llvm::seq<int64_t>(0, rank));
    // Where the indexed block lands in the result: in place when the index
    // tensors are adjacent, else first (NumPy's rule).
    bool adjacent = dims.back() - dims.front() + 1 ==
                    static_cast<int64_t>(dims.size());
    int64_t before = adjacent ? dims.front() : 0;
    int64_t nIndex = indexShape.size();
    // From [index..., rest...] to the result's order.
    SmallVector<int64_t> toResult;
    for (int64_t i = 0; i < before; ++i)
      toResult.push_back(nIndex + i);
    for (int64_t i = 0; i < nIndex; ++i)
      toResult.push_back(i);
    for (int64_t i = before; i < static_cast<int64_t>(rest.size()); ++i)
      toResult.push_back(nIndex + i);
    bool inOrder = llvm::equal(toResult,
                               llvm::seq<int64_t>(0, toResult.size()));

    if (!put) {
      if (adjacent) {
        // The indexed dimensions merge in place; the gather along them
        // leaves the result's order.
        SmallVector<int64_t> inPlace;
        for (int64_t d = 0; d < rank; ++d) {
          if (d == dims.front())
            inPlace.push_back(merged);
          else if (!llvm::is_contained(dims, d))
            inPlace.push_back(xType.getDimSize(d));
        }
        return one(prim::GatherOp::create(b, loc, reshape(x, inPlace), linear,
                                          dims.front())
                       .getResult());
      }
      Value front = identity ? x : permute(x, perm);
      SmallVector<int64_t> flatShape = {merged};
      llvm::append_range(flatShape, rest);
      Value gathered = prim::GatherOp::create(
          b, loc, reshape(front, flatShape), linear, 0);
      if (!inOrder)
        gathered = prim::PermuteOp::create(b, loc, gathered, toResult);
      return one(gathered);
    }

    // index_put: the values broadcast to the shape x[indices] has, then in
    // [index..., rest...] order, flattened to [J, R].
    SmallVector<Value> valueOperands = tensorArg(2);
    if (valueOperands.size() != 1)
      return fail("expected a values tensor");
    SmallVector<int64_t> pickedShape(indexShape);
    llvm::append_range(pickedShape, rest);
    SmallVector<int64_t> resultOrder;
    for (int64_t i : toResult)
      resultOrder.push_back(pickedShape[i]);
    bool accumulate = boolArg("accumulate", false);
    if (!accumulate && dims.size() == 1 && xType.hasStaticShape() &&
        typeOf(linear).hasStaticShape()) {
      // One index tensor, stored over (a cache's `k[:, :, pos] = v`): the
      // slices it selects replaced, O(updates) work, in x's buffer where
      // the result is written there (a graph input the graph updates).
      int64_t d = dims.front();
      int64_t count = typeOf(linear).getNumElements();
      if (count == 0)
        return one(x);
      Value values = broadcast(
          convert(valueOperands[0], xType.getElementType()), resultOrder);
      SmallVector<int64_t> sliced(xType.getShape());
      sliced[d] = count;
      return one(prim::ScatterOp::create(b, loc, x, reshape(linear, {count}),
                                         reshape(values, sliced), d)
                     .getResult());
    }
    Value values = broadcast(convert(valueOperands[0], xType.getElementType()),
                             resultOrder);
    if (!inOrder) {
      SmallVector<int64_t> inverse(toResult.size());
      for (auto [i, p] : llvm::enumerate(toResult))
        inverse[p] = i;
      values = prim::PermuteOp::create(b, loc, values, inverse);
    }
    Value front = identity ? x : permute(x, perm);
    int64_t updates = typeOf(linear).getNumElements();
    values = reshape(values, {updates, restSize});
    Value rows = reshape(front, {merged, restSize});
    Value at = reshape(linear, {updates});
    Type elt = xType.getElementType();
    Value scattered;
    if (accumulate && isa<FloatType>(elt)) {
      // Float accumulation (an embedding's gradient through AOTAutograd):
      // a scatter-add, O(updates x rest) with atomics, at any size. Half
      // types sum in f32 and round once, as eager's CUDA kernel does.
      Type wide = opmathType(elt);
      Value summed = prim::ScatterAddOp::create(
          b, loc, RankedTensorType::get({merged, restSize}, wide),
          convert(values, wide), at);
      scattered = convert(
          prim::AddOp::create(b, loc, convert(rows, wide), summed), elt);
    } else {
      scattered = scatterRows(
        rows, at, values,
        accumulate ? std::optional(prim::ReductionKind::Sum) : std::nullopt,
        /*includeSelf=*/true, /*mean=*/false);
    }
    SmallVector<int64_t> frontShape;
    for (int64_t d : perm)
      frontShape.push_back(xType.getDimSize(d));
    Value back = reshape(scattered, frontShape);
    if (!identity) {
      SmallVector<int64_t> inverse(rank);
      for (auto [i, p] : llvm::enumerate(perm))
        inverse[p] = i;
      back = prim::PermuteOp::create(b, loc, back, inverse);
    }
    return one(back);
  }

  if (target == "aten::put") {
    // self.flatten()[index] = source (or += with accumulate).
    if (operands.size() != 3)
      return fail("expected self, index and source");
    RankedTensorType type = resultType();
    int64_t numel = type.getNumElements();
    int64_t updates = typeOf(operands[1]).getNumElements();
    Value at = reshape(wrapIndex(operands[1], numel), {updates});
    Value rows = reshape(operands[0], {numel, 1});
    Value values = reshape(operands[2], {updates, 1});
    Value r = scatterRows(rows, at, values,
                          boolArg("accumulate", false)
                              ? std::optional(prim::ReductionKind::Sum)
                              : std::nullopt,
                          true, false);
    return one(reshape(r, type.getShape()));
  }

  bool isScatter = target == "aten::scatter.src" ||
                   target == "aten::scatter.value" ||
                   target == "aten::scatter.reduce" ||
                   target == "aten::scatter.value_reduce" ||
                   target == "aten::scatter_add" ||
                   target == "aten::scatter_reduce.two";
  bool isIndexReduce = target == "aten::index_reduce";
  if (isScatter || isIndexReduce) {
    // self[..., index[..., j, ...], ...] (op)= src[..., j, ...] along `dim`:
    // with `dim` moved to the front and the rest flattened, a scatter of
    // rows whose target row varies by column.
    RankedTensorType type = resultType();
    Value self = operands[0];
    int64_t rank = type.getRank();
    int64_t dim = normalizeDim(intArg("dim", 0), std::max<int64_t>(rank, 1));
    if (rank == 0) {
      self = reshape(self, {1});
      dim = 0;
    }
    int64_t r = std::max<int64_t>(rank, 1);
    Value index = operands[1], src;
    if (isIndexReduce) {
      // index_reduce(self, dim, index, source): the index names a row of
      // self for each row of source.
      src = operands[2];
      if (typeOf(src).getRank() == 0)
        src = reshape(src, {1});
      if (typeOf(index).getRank() == 0)
        index = reshape(index, {1});
      index = prim::BroadcastInDimOp::create(
          b, loc, index, typeOf(src).getShape(), ArrayRef<int64_t>{dim});
    } else {
      if (typeOf(index).getRank() == 0 && rank > 0)
        return fail("a 0-d index for a tensor with dimensions");
      if (rank == 0)
        index = reshape(index, {1});
      src = operands.size() > 2
                ? operands[2]
                : splat(RankedTensorType::get(typeOf(index).getShape(),
                                              type.getElementType()),
                        floatArg("value", 0));
      if (typeOf(src).getRank() == 0)
        src = reshape(src, {1});
    }
    RankedTensorType indexType = typeOf(index);
    if (indexType.getRank() != r || typeOf(src).getRank() != r)
      return fail("index and src must have self's rank");
    if (indexType.getNumElements() == 0)
      return one(reshape(self, type.getShape()));
    // The region the index covers: its extent in each dimension but `dim`.
    SmallVector<int64_t> region(typeOf(self).getShape());
    SmallVector<int64_t> zeros(r, 0), ones(r, 1);
    for (int64_t d = 0; d < r; ++d)
      if (d != dim) {
        if (indexType.getDimSize(d) > region[d] ||
            indexType.getDimSize(d) > typeOf(src).getDimSize(d))
          return fail("index is larger than self or src outside `dim`");
        region[d] = indexType.getDimSize(d);
      }
    SmallVector<int64_t> srcLimit(indexType.getShape());
    if (typeOf(src).getShape() != ArrayRef<int64_t>(srcLimit))
      src = prim::SliceOp::create(b, loc, src, zeros, srcLimit, ones);
    bool whole = ArrayRef<int64_t>(region) == typeOf(self).getShape();
    Value part = whole ? self
                       : prim::SliceOp::create(b, loc, self, zeros, region,
                                               ones)
                             .getResult();
    // [dim, others...]
    SmallVector<int64_t> perm = {dim};
    for (int64_t d = 0; d < r; ++d)
      if (d != dim)
        perm.push_back(d);
    auto toFront = [&](Value v) -> Value {
      return dim == 0 ? v : prim::PermuteOp::create(b, loc, v, perm);
    };
    int64_t k = region[dim], j = indexType.getDimSize(dim);
    int64_t cols = 1;
    for (int64_t d = 0; d < r; ++d)
      if (d != dim)
        cols *= region[d];
    Value rows = reshape(toFront(part), {k, cols});
    Value at = reshape(toFront(wrapIndex(index, k)), {j, cols});
    Value values = reshape(toFront(convert(src, type.getElementType())),
                           {j, cols});
    std::optional<prim::ReductionKind> kind;
    bool includeSelf = boolArg("include_self", true), mean = false;
    if (target == "aten::scatter_add") {
      kind = prim::ReductionKind::Sum;
    } else if (Attribute reduceAttr = arg("reduce")) {
      StringRef name = cast<StringAttr>(reduceAttr).getValue();
      FailureOr<prim::ReductionKind> parsed = reduceKind(name, mean);
      if (failed(parsed))
        return fail("unknown reduction '" + name + "'");
      kind = *parsed;
    }
    Value scattered = scatterRows(rows, at, values, kind, includeSelf, mean);
    SmallVector<int64_t> frontShape = {k};
    for (int64_t d = 0; d < r; ++d)
      if (d != dim)
        frontShape.push_back(region[d]);
    Value back = reshape(scattered, frontShape);
    if (dim != 0) {
      SmallVector<int64_t> inverse(r);
      for (auto [i, p] : llvm::enumerate(perm))
        inverse[p] = i;
      back = prim::PermuteOp::create(b, loc, back, inverse);
    }
    if (!whole) {
      // Back into self: the region padded to self's shape, and a mask of
      // where it lies.
      SmallVector<int64_t> high, interior(r, 0);
      for (int64_t d = 0; d < r; ++d)
        high.push_back(typeOf(self).getDimSize(d) - region[d]);
      back = placeInto(self, back, zeros, high, interior);
    }
    return one(reshape(back, type.getShape()));
  }

  if (target == "aten::diagonal" || target == "aten::diagonal_copy" ||
      target == "aten::diagonal_scatter") {
    // With dim1 and dim2 moved last and merged, the diagonal is a strided
    // slice of the merged dimension; its scatter pads src into those
    // positions (interior padding) and selects it there.
    bool scatter = target == "aten::diagonal_scatter";
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    int64_t rank = type.getRank();
    if (rank < 2)
      return fail("diagonal needs at least 2 dimensions");
    int64_t d1 = normalizeDim(intArg("dim1", 0), rank);
    int64_t d2 = normalizeDim(intArg("dim2", 1), rank);
    int64_t offset = intArg("offset", 0);
    if (d1 < 0 || d1 >= rank || d2 < 0 || d2 >= rank || d1 == d2)
      return fail("dim1 and dim2 must be distinct dimensions");
    SmallVector<int64_t> perm, lead;
    for (int64_t d = 0; d < rank; ++d)
      if (d != d1 && d != d2) {
        perm.push_back(d);
        lead.push_back(type.getDimSize(d));
      }
    perm.push_back(d1);
    perm.push_back(d2);
    int64_t n = type.getDimSize(d1), m = type.getDimSize(d2);
    int64_t length = offset >= 0 ? std::min(n, m - offset)
                                 : std::min(n + offset, m);
    length = std::max<int64_t>(length, 0);
    int64_t start = offset >= 0 ? offset : -offset * m;
    SmallVector<int64_t> merged(lead);
    merged.push_back(n * m);
    Value flat = reshape(permute(x, perm), merged);
    int64_t last = merged.size() - 1;
    if (!scatter) {
      SmallVector<int64_t> starts(merged.size(), 0), limits(merged),
          strides(merged.size(), 1);
      starts[last] = length ? start : 0;
      limits[last] = length ? start + (length - 1) * (m + 1) + 1 : 0;
      strides[last] = m + 1;
      return one(prim::SliceOp::create(b, loc, flat, starts, limits, strides)
                     .getResult());
    }
    if (operands.size() != 2)
      return fail("expected self and src");
    SmallVector<int64_t> srcShape(lead);
    srcShape.push_back(length);
    Value src = coerce(operands[1], type.clone(srcShape));
    if (length > 0) {
      SmallVector<int64_t> low(merged.size(), 0), high(merged.size(), 0),
          interior(merged.size(), 0);
      low[last] = start;
      interior[last] = m;
      high[last] = n * m - (start + (length - 1) * (m + 1) + 1);
      flat = placeInto(flat, src, low, high, interior);
    }
    SmallVector<int64_t> permuted(lead);
    permuted.push_back(n);
    permuted.push_back(m);
    SmallVector<int64_t> inverse(rank);
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    return one(permute(reshape(flat, permuted), inverse));
  }

  if (target == "aten::as_strided" || target == "aten::as_strided_copy" ||
      target == "aten::as_strided_scatter") {
    // The elements at storage_offset + sum(i_d * stride_d) of self's
    // (contiguous: tc.support checks) elements, gathered or scattered.
    bool scatter = target == "aten::as_strided_scatter";
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    SmallVector<int64_t> size = intListArg("size").value_or(
        SmallVector<int64_t>{});
    SmallVector<int64_t> stride = intListArg("stride").value_or(
        SmallVector<int64_t>{});
    int64_t offset = intArg("storage_offset", 0);
    if (size.size() != stride.size())
      return fail("size and stride differ in length");
    int64_t numel = type.getNumElements(), count = 1, furthest = offset;
    for (auto [s, st] : llvm::zip(size, stride)) {
      if (s < 0)
        return fail("negative sizes");
      count *= s;
      if (s > 0)
        furthest += (s - 1) * st;
      if (st < 0)
        return fail("negative strides");
    }
    if (count > 0 && (offset < 0 || furthest >= numel))
      return fail("the view reaches beyond self's " + Twine(numel) +
                  " elements");
    auto indexType = RankedTensorType::get(size, b.getI64Type());
    Value at = splat(indexType, offset);
    for (auto [d, st] : llvm::enumerate(stride))
      at = prim::AddOp::create(
          b, loc, at,
          prim::MulOp::create(b, loc, iota(size, d), splat(indexType, st)));
    Value flat = reshape(x, {numel});
    if (!scatter)
      return one(reshape(
          prim::GatherOp::create(b, loc, flat, reshape(at, {count}), 0),
          size));
    if (operands.size() != 2)
      return fail("expected self and src");
    Value src = coerce(operands[1], type.clone(size));
    Value r = scatterRows(reshape(flat, {numel, 1}), reshape(at, {count}),
                          reshape(src, {count, 1}), std::nullopt, true,
                          false);
    return one(reshape(r, type.getShape()));
  }

  if (target == "aten::unfold") {
    // Windows of `size` every `step` along `dimension`: a gather at
    // w * step + s, then the window dimension moved last.
    Value x = operands[0];
    RankedTensorType type = typeOf(x);
    int64_t rank = type.getRank();
    if (rank == 0)
      x = reshape(x, {1});
    int64_t r = std::max<int64_t>(rank, 1);
    int64_t dim = normalizeDim(intArg("dimension", 0), r);
    int64_t size = intArg("size", 1), step = intArg("step", 1);
    int64_t n = typeOf(x).getDimSize(dim);
    if (size < 0 || size > n || step <= 0)
      return fail("a window size outside [0, " + Twine(n) +
                  "] or a step below 1");
    int64_t windows = (n - size) / step + 1;
    auto indexType = RankedTensorType::get({windows, size}, b.getI64Type());
    Value at = prim::AddOp::create(
        b, loc,
        prim::MulOp::create(b, loc, iota({windows, size}, 0),
                            splat(indexType, step)),
        iota({windows, size}, 1));
    Value g = prim::GatherOp::create(b, loc, x, at, dim);
    // g: [before..., windows, size, after...] -> size last.
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d <= r; ++d)
      if (d != dim + 1)
        perm.push_back(d);
    perm.push_back(dim + 1);
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, r + 1)))
      g = prim::PermuteOp::create(b, loc, g, perm);
    return one(reshapeToResult(g));
  }

  return std::nullopt;
}
