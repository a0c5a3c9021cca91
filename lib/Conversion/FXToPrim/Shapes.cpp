//===- Shapes.cpp - shape ops and creation ----------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for ATen's shape ops (views, permutes, concatenation,
// slicing, padding, repetition), tensor creation (arange, full, zeros,
// uninitialized memory as zeros) and layout ops.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

std::optional<Decomposer::Result> Decomposer::shapes(StringRef target) {
  auto one = [](FailureOr<Value> v) -> Result {
    if (failed(v))
      return failure();
    return SmallVector<Value>{*v};
  };

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
      if (!llvm::is_contained(typeOf(v).getShape(), 0))
        inputs.push_back(convert(v, type.getElementType()));
    if (inputs.empty())
      return one(splat(type, 0));
    int64_t dim = normalizeDim(intArg("dim", 0), type.getRank());
    // Along a static dimension only: a symbolic size is the graph's one
    // `s`, which two pieces cannot both be.
    if (type.isDynamicDim(dim))
      return fail("concatenating along the symbolic dimension");
    return one(prim::ConcatenateOp::create(b, loc, inputs, dim).getResult());
  }

  // Creation.
  if (target == "aten::arange" || target == "aten::arange.start" ||
      target == "aten::arange.start_step") {
    // start + i * step, computed in f64 (eager's accumulation type for
    // floating-point ranges), then converted to the result's dtype. An
    // integer range of integer start and step is computed in i64: the same
    // values, without f64 converts at every element of the kernels that
    // inline it (ConvBERT's unfold: four a window element).
    RankedTensorType type = resultType();
    if (type.getRank() != 1)
      return fail("expected a 1-d result");
    double start = target == "aten::arange" ? 0 : floatArg("start", 0);
    double step = floatArg("step", 1);
    Value index = prim::IotaOp::create(b, loc, type.getShape(), 0,
                                       b.getI64Type());
    auto integral = [](double v) {
      return v == std::trunc(v) && std::abs(v) < 0x1p53;
    };
    if (isa<IntegerType>(type.getElementType()) && integral(start) &&
        integral(step)) {
      auto i64 = RankedTensorType::get(type.getShape(), b.getI64Type());
      Value value = index;
      if (step != 1)
        value = prim::MulOp::create(b, loc, value, splat(i64, step));
      if (start != 0)
        value = prim::AddOp::create(b, loc, value, splat(i64, start));
      return one(convert(value, type.getElementType()));
    }
    auto f64 = RankedTensorType::get(type.getShape(), b.getF64Type());
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
  return std::nullopt;
}
