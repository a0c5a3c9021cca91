//===- PrimOps.cpp - prim dialect operations --------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Result type inference for the prim ops. Inference doubles as the verifier:
// an op whose attributes do not describe a valid result fails to infer, with
// a diagnostic at the op's location, both when parsed and when verified.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/IR/PrimOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::tc::prim;

#include "tc/Dialect/Prim/IR/PrimEnums.cpp.inc"

/// Emits `message` at `loc` (when there is one) and fails.
static LogicalResult emitInferError(std::optional<Location> loc,
                                    StringRef opName, const Twine &message) {
  return emitOptionalError(loc, "'prim.", opName, "' op ", message);
}

static bool isDynamic(int64_t size) { return ShapedType::isDynamic(size); }

/// Checks that `dims` are distinct and in [0, rank).
static LogicalResult checkDims(std::optional<Location> loc, StringRef opName,
                               StringRef what, ArrayRef<int64_t> dims,
                               int64_t rank, bool sorted = false) {
  llvm::SmallBitVector seen(rank);
  int64_t previous = -1;
  for (int64_t dim : dims) {
    if (dim < 0 || dim >= rank)
      return emitInferError(loc, opName,
                            Twine(what) + " dimension " + Twine(dim) +
                                " is out of range for rank " + Twine(rank));
    if (seen.test(dim))
      return emitInferError(loc, opName,
                            Twine(what) + " dimension " + Twine(dim) +
                                " is repeated");
    if (sorted && dim < previous)
      return emitInferError(loc, opName,
                            Twine(what) + " dimensions must be increasing");
    seen.set(dim);
    previous = dim;
  }
  return success();
}

static LogicalResult checkShape(std::optional<Location> loc, StringRef opName,
                                ArrayRef<int64_t> shape) {
  for (int64_t size : shape)
    if (size < 0 && !isDynamic(size))
      return emitInferError(loc, opName,
                            "shape has a negative size " + Twine(size));
  return success();
}

/// `[` (`?` | integer) list `]`: a shape attribute where `?` is the graph's
/// symbolic size.
ParseResult mlir::tc::prim::parseShape(OpAsmParser &parser,
                                       DenseI64ArrayAttr &shape) {
  SmallVector<int64_t> sizes;
  auto parseOne = [&]() -> ParseResult {
    if (succeeded(parser.parseOptionalQuestion())) {
      sizes.push_back(ShapedType::kDynamic);
      return success();
    }
    return parser.parseInteger(sizes.emplace_back());
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, parseOne))
    return failure();
  shape = DenseI64ArrayAttr::get(parser.getContext(), sizes);
  return success();
}

void mlir::tc::prim::printShape(OpAsmPrinter &printer, Operation *,
                                DenseI64ArrayAttr shape) {
  printer << '[';
  llvm::interleaveComma(shape.asArrayRef(), printer, [&](int64_t size) {
    if (isDynamic(size))
      printer << '?';
    else
      printer << size;
  });
  printer << ']';
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getLhs().getType());
  inferred.push_back(type.clone(IntegerType::get(context, 1)));
  return success();
}

/// The operand's shape with the element type `dtype` (convert, bitcast).
static LogicalResult inferWithDtype(Value operand, Type dtype,
                                    SmallVectorImpl<Type> &inferred) {
  inferred.push_back(cast<RankedTensorType>(operand.getType()).clone(dtype));
  return success();
}

LogicalResult ConvertOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferWithDtype(adaptor.getOperand(), adaptor.getDtype(), inferred);
}

LogicalResult BitcastOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferWithDtype(adaptor.getOperand(), adaptor.getDtype(), inferred);
}

LogicalResult BitcastOp::verify() {
  Type from = getOperand().getType().getElementType(), to = getDtype();
  if (from.isInteger(1) || to.isInteger(1) || from.isUnsignedInteger() ||
      to.isUnsignedInteger() ||
      from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth())
    return emitOpError() << "reinterprets " << from << " as " << to
                         << ": widths must match, and neither be i1 or "
                            "unsigned";
  return success();
}

//===----------------------------------------------------------------------===//
// Shape operations
//===----------------------------------------------------------------------===//

LogicalResult BroadcastInDimOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  ArrayRef<int64_t> shape = adaptor.getShape();
  ArrayRef<int64_t> dims = adaptor.getBroadcastDimensions();
  StringRef name = "broadcast_in_dim";
  if (failed(checkShape(loc, name, shape)))
    return failure();
  if (static_cast<int64_t>(dims.size()) != type.getRank())
    return emitInferError(loc, name,
                          "needs one broadcast dimension per operand "
                          "dimension (" +
                              Twine(type.getRank()) + "), got " +
                              Twine(dims.size()));
  if (failed(checkDims(loc, name, "broadcast", dims, shape.size(),
                       /*sorted=*/true)))
    return failure();
  for (auto [idx, dim] : llvm::enumerate(dims)) {
    int64_t size = type.getDimSize(idx);
    if (isDynamic(shape[dim]) ? !isDynamic(size) && size != 1
                              : !isDynamic(size) && size != 1 &&
                                    size != shape[dim])
      return emitInferError(loc, name,
                            "operand dimension " + Twine(idx) + " of size " +
                                Twine(size) + " cannot broadcast to size " +
                                Twine(shape[dim]));
    if (isDynamic(size) && !isDynamic(shape[dim]))
      return emitInferError(loc, name,
                            "operand dimension " + Twine(idx) +
                                " is the symbolic size; it cannot broadcast "
                                "to size " +
                                Twine(shape[dim]));
  }
  inferred.push_back(type.clone(shape));
  return success();
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  ArrayRef<int64_t> shape = adaptor.getShape();
  if (failed(checkShape(loc, "reshape", shape)))
    return failure();
  // Every `?` is the graph's one symbolic size: the element counts agree
  // when both sides have as many `?` and the same static product.
  auto count = [](ArrayRef<int64_t> sizes) {
    std::pair<int64_t, int64_t> c{1, 0};
    for (int64_t size : sizes) {
      if (isDynamic(size))
        ++c.second;
      else
        c.first *= size;
    }
    return c;
  };
  auto [from, fromSymbols] = count(type.getShape());
  auto [to, toSymbols] = count(shape);
  if (from != to && fromSymbols == 0 && toSymbols == 0)
    return emitInferError(loc, "reshape",
                          "cannot reshape " + Twine(from) + " elements into " +
                              Twine(to));
  if (from != to || fromSymbols != toSymbols)
    return emitInferError(loc, "reshape",
                          "cannot reshape " + Twine(from) + "x" +
                              Twine(fromSymbols) + " symbolic elements into " +
                              Twine(to) + "x" + Twine(toSymbols));
  inferred.push_back(type.clone(shape));
  return success();
}

bool PermuteOp::swapsLastTwo() {
  ArrayRef<int64_t> p = getPermutation();
  int64_t r = p.size();
  if (r < 2 || p[r - 1] != r - 2 || p[r - 2] != r - 1)
    return false;
  for (int64_t i = 0; i + 2 < r; ++i)
    if (p[i] != i)
      return false;
  return true;
}

LogicalResult PermuteOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return emitInferError(loc, "permute",
                          "permutation has " + Twine(perm.size()) +
                              " entries for rank " + Twine(type.getRank()));
  if (failed(checkDims(loc, "permute", "permuted", perm, type.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t dim : perm)
    shape.push_back(type.getDimSize(dim));
  inferred.push_back(type.clone(shape));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit(),
                    strides = adaptor.getStrides();
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitInferError(loc, "slice",
                          "start, limit and strides need " + Twine(rank) +
                              " entries each");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d);
    if (strides[d] < 1)
      return emitInferError(loc, "slice",
                            "stride " + Twine(strides[d]) + " of dimension " +
                                Twine(d) + " is not positive");
    if (isDynamic(size) || isDynamic(limit[d])) {
      // The graph's symbolic size is sliced whole: [0, ?) by 1.
      if (!isDynamic(size) || !isDynamic(limit[d]) || start[d] != 0 ||
          strides[d] != 1)
        return emitInferError(loc, "slice",
                              "dimension " + Twine(d) +
                                  " of the symbolic size is sliced whole "
                                  "or not at all ([0, ?) by 1)");
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    if (start[d] < 0 || start[d] > limit[d] ||
        (!isDynamic(size) && limit[d] > size))
      return emitInferError(loc, "slice",
                            "range [" + Twine(start[d]) + ", " +
                                Twine(limit[d]) + ") of dimension " +
                                Twine(d) + " is out of bounds");
    shape.push_back((limit[d] - start[d] + strides[d] - 1) / strides[d]);
  }
  inferred.push_back(type.clone(shape));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh(),
                    interior = adaptor.getInterior();
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank ||
      static_cast<int64_t>(interior.size()) != rank)
    return emitInferError(loc, "pad",
                          "low, high and interior need " + Twine(rank) +
                              " entries each");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d);
    if (interior[d] < 0)
      return emitInferError(loc, "pad", "interior padding is negative");
    if (isDynamic(size)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    int64_t padded =
        size + low[d] + high[d] + std::max<int64_t>(size - 1, 0) * interior[d];
    if (padded < 0)
      return emitInferError(loc, "pad",
                            "dimension " + Twine(d) +
                                " would have negative size " + Twine(padded));
    shape.push_back(padded);
  }
  inferred.push_back(type.clone(shape));
  return success();
}

LogicalResult ConcatenateOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitInferError(loc, "concatenate", "needs at least one input");
  auto first = cast<RankedTensorType>(inputs.front().getType());
  int64_t rank = first.getRank(), dim = adaptor.getDim();
  if (dim < 0 || dim >= rank)
    return emitInferError(loc, "concatenate",
                          "dimension " + Twine(dim) +
                              " is out of range for rank " + Twine(rank));
  SmallVector<int64_t> shape(first.getShape());
  for (Value input : inputs.drop_front()) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getRank() != rank ||
        type.getElementType() != first.getElementType())
      return emitInferError(loc, "concatenate",
                            "inputs must have one rank and element type");
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type.getDimSize(d);
      if (d == dim) {
        shape[d] = isDynamic(shape[d]) || isDynamic(size) ? ShapedType::kDynamic
                                                          : shape[d] + size;
        continue;
      }
      if (!isDynamic(size) && !isDynamic(shape[d]) && size != shape[d])
        return emitInferError(loc, "concatenate",
                              "inputs differ in dimension " + Twine(d));
    }
  }
  inferred.push_back(first.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

LogicalResult ScatterAddOp::verify() {
  auto updates = cast<RankedTensorType>(getUpdates().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (indices.getRank() != 1)
    return emitOpError() << "needs 1-d indices, not " << indices;
  if (updates.getRank() < 1 ||
      updates.getDimSize(0) != indices.getDimSize(0))
    return emitOpError() << "needs a row of updates per index: " << updates
                         << " for " << indices;
  if (result.getRank() != updates.getRank() ||
      result.getShape().drop_front() != updates.getShape().drop_front() ||
      result.getElementType() != updates.getElementType())
    return emitOpError() << "result " << result
                         << " must be the updates' rows " << updates
                         << " with another leading size";
  if (!updates.hasStaticShape() || !result.hasStaticShape())
    return emitOpError() << "needs static shapes";
  return success();
}

LogicalResult ScatterOp::verify() {
  auto operand = cast<RankedTensorType>(getOperand().getType());
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto updates = cast<RankedTensorType>(getUpdates().getType());
  int64_t dim = getDim();
  if (dim < 0 || dim >= operand.getRank())
    return emitOpError() << "dimension " << dim
                         << " is out of range for rank " << operand.getRank();
  if (indices.getRank() != 1)
    return emitOpError() << "needs 1-d indices, not " << indices;
  if (!operand.hasStaticShape() || !updates.hasStaticShape() ||
      !indices.hasStaticShape())
    return emitOpError() << "needs static shapes";
  SmallVector<int64_t> expected(operand.getShape());
  expected[dim] = indices.getDimSize(0);
  if (updates.getShape() != ArrayRef<int64_t>(expected) ||
      updates.getElementType() != operand.getElementType())
    return emitOpError() << "updates " << updates << " must be " << operand
                         << " with " << indices.getDimSize(0)
                         << " slices along dimension " << dim;
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= type.getRank())
    return emitInferError(loc, "gather",
                          "dimension " + Twine(dim) +
                              " is out of range for rank " +
                              Twine(type.getRank()));
  SmallVector<int64_t> shape(type.getShape().take_front(dim));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, type.getShape().drop_front(dim + 1));
  inferred.push_back(type.clone(shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor creation
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  ArrayRef<int64_t> shape = adaptor.getShape();
  if (failed(checkShape(loc, "iota", shape)))
    return failure();
  int64_t dim = adaptor.getDim();
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return emitInferError(loc, "iota",
                          "dimension " + Twine(dim) +
                              " is out of range for rank " +
                              Twine(shape.size()));
  inferred.push_back(RankedTensorType::get(shape, adaptor.getDtype()));
  return success();
}

LogicalResult RandomOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (failed(checkShape(loc, "random", adaptor.getShape())))
    return failure();
  inferred.push_back(
      RankedTensorType::get(adaptor.getShape(), adaptor.getDtype()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  ArrayRef<int64_t> dims = adaptor.getDims();
  if (failed(checkDims(loc, "reduce", "reduced", dims, type.getRank(),
                       /*sorted=*/true)))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      shape.push_back(type.getDimSize(d));
  inferred.push_back(type.clone(shape));
  return success();
}

LogicalResult ArgReduceOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
  int64_t dim = adaptor.getDim();
  if (failed(checkDims(loc, "arg_reduce", "reduced", {dim}, type.getRank())))
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + dim);
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

AddOp DotOp::getBiasAdd(Value &bias) {
  if (!getResult().hasOneUse())
    return AddOp();
  auto add = dyn_cast<AddOp>(*getResult().user_begin());
  if (!add || add.getLhs() == add.getRhs())
    return AddOp();
  Value other = add.getLhs() == getResult() ? add.getRhs() : add.getLhs();
  auto bcast = other.getDefiningOp<BroadcastInDimOp>();
  auto type = cast<RankedTensorType>(getType());
  int64_t last = type.getRank() - 1;
  if (!bcast)
    return AddOp();
  auto vector = cast<RankedTensorType>(bcast.getOperand().getType());
  if (vector.getRank() != 1 ||
      bcast.getBroadcastDimensions() != ArrayRef<int64_t>{last} ||
      vector.getDimSize(0) != type.getDimSize(last))
    return AddOp();
  bias = bcast.getOperand();
  return add;
}

DotOp::GemmForm DotOp::getGemmForm() {
  int64_t rank = cast<RankedTensorType>(getLhs().getType()).getRank();
  int64_t rhsRank = cast<RankedTensorType>(getRhs().getType()).getRank();
  if (rank == 2 && getLhsBatch().empty() &&
      getLhsContracting() == ArrayRef<int64_t>{1} &&
      getRhsContracting() == ArrayRef<int64_t>{0})
    return GemmForm::Plain;
  if (rank == 3 && getLhsBatch() == ArrayRef<int64_t>{0} &&
      getRhsBatch() == ArrayRef<int64_t>{0} &&
      getLhsContracting() == ArrayRef<int64_t>{2} &&
      getRhsContracting() == ArrayRef<int64_t>{1})
    return GemmForm::Batched;
  if (rank >= 3 && rhsRank == 2 && getLhsBatch().empty() &&
      getLhsContracting() == ArrayRef<int64_t>{rank - 1} &&
      getRhsContracting() == ArrayRef<int64_t>{0})
    return GemmForm::Flattened;
  return GemmForm::None;
}

LogicalResult DotOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  ArrayRef<int64_t> lb = adaptor.getLhsBatch(), rb = adaptor.getRhsBatch(),
                    lc = adaptor.getLhsContracting(),
                    rc = adaptor.getRhsContracting();
  if (lb.size() != rb.size() || lc.size() != rc.size())
    return emitInferError(loc, "dot",
                          "lhs and rhs need as many batch and contracting "
                          "dimensions as each other");
  SmallVector<int64_t> lhsDims(lb), rhsDims(rb);
  llvm::append_range(lhsDims, lc);
  llvm::append_range(rhsDims, rc);
  if (failed(checkDims(loc, "dot", "lhs", lhsDims, lhs.getRank())) ||
      failed(checkDims(loc, "dot", "rhs", rhsDims, rhs.getRank())))
    return failure();
  for (auto [l, r] : llvm::zip(lhsDims, rhsDims)) {
    int64_t ls = lhs.getDimSize(l), rs = rhs.getDimSize(r);
    if (!isDynamic(ls) && !isDynamic(rs) && ls != rs)
      return emitInferError(loc, "dot",
                            "lhs dimension " + Twine(l) + " (" + Twine(ls) +
                                ") does not match rhs dimension " + Twine(r) +
                                " (" + Twine(rs) + ")");
  }
  SmallVector<int64_t> shape;
  for (int64_t d : lb)
    shape.push_back(lhs.getDimSize(d));
  for (int64_t d = 0; d < lhs.getRank(); ++d)
    if (!llvm::is_contained(lhsDims, d))
      shape.push_back(lhs.getDimSize(d));
  for (int64_t d = 0; d < rhs.getRank(); ++d)
    if (!llvm::is_contained(rhsDims, d))
      shape.push_back(rhs.getDimSize(d));
  inferred.push_back(lhs.clone(shape));
  return success();
}

/// The result type of a convolution of `input` by `weight`; `name` is the
/// op diagnostics name.
static FailureOr<RankedTensorType>
inferConvolution(std::optional<Location> loc, StringRef name,
                 RankedTensorType input, RankedTensorType weight,
                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
                 ArrayRef<int64_t> dilation, int64_t groups) {
  int64_t rank = input.getRank();
  if (rank < 3 || weight.getRank() != rank)
    return emitInferError(loc, name,
                          "input and weight need one rank of at least 3");
  size_t spatial = rank - 2;
  if (stride.size() != spatial || padding.size() != spatial ||
      dilation.size() != spatial)
    return emitInferError(loc, name,
                          "stride, padding and dilation need " +
                              Twine(spatial) + " entries each");
  if (groups < 1)
    return emitInferError(loc, name, "groups must be positive");
  int64_t channels = input.getDimSize(1), perGroup = weight.getDimSize(1),
          outChannels = weight.getDimSize(0);
  if (!isDynamic(channels) && !isDynamic(perGroup) &&
      channels != perGroup * groups)
    return emitInferError(loc, name,
                          "input has " + Twine(channels) +
                              " channels but weight expects " +
                              Twine(perGroup) + " x " + Twine(groups) +
                              " groups");
  if (!isDynamic(outChannels) && outChannels % groups != 0)
    return emitInferError(loc, name,
                          "output channels are not divisible by groups");
  SmallVector<int64_t> shape = {input.getDimSize(0), outChannels};
  for (size_t i = 0; i < spatial; ++i) {
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      return emitInferError(loc, name,
                            "stride and dilation must be positive and "
                            "padding non-negative");
    int64_t in = input.getDimSize(2 + i), k = weight.getDimSize(2 + i);
    if (isDynamic(in) || isDynamic(k)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    int64_t span = in + 2 * padding[i] - dilation[i] * (k - 1) - 1;
    if (span < 0)
      return emitInferError(loc, name,
                            "kernel is larger than the padded input in "
                            "spatial dimension " +
                                Twine(i));
    shape.push_back(span / stride[i] + 1);
  }
  return input.clone(shape);
}

FailureOr<SmallVector<mlir::tc::prim::ReshapeRun>>
mlir::tc::prim::reshapeRuns(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  SmallVector<ReshapeRun> runs;
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    ReshapeRun run{i, i, j, j};
    int64_t inSize = 1, outSize = 1;
    if (i < in.size())
      inSize *= in[i++];
    if (j < out.size())
      outSize *= out[j++];
    while (inSize != outSize) {
      if (inSize < outSize && i < in.size())
        inSize *= in[i++];
      else if (outSize < inSize && j < out.size())
        outSize *= out[j++];
      else
        return failure();
    }
    run.inEnd = i;
    run.outEnd = j;
    runs.push_back(run);
  }
  return runs;
}

SmallVector<int64_t> mlir::tc::prim::toChannelsLast(int64_t rank) {
  SmallVector<int64_t> permutation = {0};
  for (int64_t d = 2; d < rank; ++d)
    permutation.push_back(d);
  permutation.push_back(1);
  return permutation;
}

SmallVector<int64_t> mlir::tc::prim::toChannelsFirst(int64_t rank) {
  SmallVector<int64_t> permutation = {0, rank - 1};
  for (int64_t d = 1; d < rank - 1; ++d)
    permutation.push_back(d);
  return permutation;
}

RankedTensorType
mlir::tc::prim::permuteType(RankedTensorType type,
                            ArrayRef<int64_t> permutation) {
  SmallVector<int64_t> shape;
  for (int64_t d : permutation)
    shape.push_back(type.getDimSize(d));
  return type.clone(shape);
}

/// A convolution tensor in the channels-first layout the shape rules are
/// written for: `type` itself, or (with `channelsLast`) its channels moved
/// to dimension 1. Ranks below 3 stay (the rules diagnose them).
static RankedTensorType channelsFirst(RankedTensorType type,
                                      bool channelsLast) {
  if (!channelsLast || type.getRank() < 3)
    return type;
  return permuteType(type, toChannelsFirst(type.getRank()));
}

LogicalResult ConvolutionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  bool channelsLast = adaptor.getChannelsLast();
  FailureOr<RankedTensorType> type = inferConvolution(
      loc, "convolution",
      channelsFirst(cast<RankedTensorType>(adaptor.getInput().getType()),
                    channelsLast),
      channelsFirst(cast<RankedTensorType>(adaptor.getWeight().getType()),
                    channelsLast),
      adaptor.getStride(), adaptor.getPadding(), adaptor.getDilation(),
      adaptor.getGroups());
  if (failed(type))
    return failure();
  inferred.push_back(channelsLast
                         ? permuteType(*type, toChannelsLast(type->getRank()))
                         : *type);
  return success();
}

/// A convolution gradient is well formed when the forward convolution of
/// `input` by `weight` (one of them the gradient's result) has `grad`'s
/// type.
template <typename Op>
static LogicalResult verifyConvolutionGrad(Op op, Value input, Value weight) {
  bool channelsLast = op.getChannelsLast();
  auto grad = channelsFirst(cast<RankedTensorType>(op.getGrad().getType()),
                            channelsLast);
  if (cast<RankedTensorType>(op.getOther().getType()).getElementType() !=
          grad.getElementType() ||
      cast<RankedTensorType>(op.getType()).getElementType() !=
          grad.getElementType())
    return op.emitOpError() << "needs one element type for all tensors";
  FailureOr<RankedTensorType> forward = inferConvolution(
      op.getLoc(), op->getName().stripDialect(),
      channelsFirst(cast<RankedTensorType>(input.getType()), channelsLast),
      channelsFirst(cast<RankedTensorType>(weight.getType()), channelsLast),
      op.getStride(),
      op.getPadding(), op.getDilation(), op.getGroups());
  if (failed(forward))
    return failure();
  if (failed(verifyCompatibleShape(*forward, grad)))
    return op.emitOpError() << "grad " << grad
                            << " is not the shape of the convolution's "
                               "result "
                            << *forward;
  return success();
}

LogicalResult ConvolutionBackwardInputOp::verify() {
  return verifyConvolutionGrad(*this, getResult(), getOther());
}

LogicalResult ConvolutionBackwardWeightOp::verify() {
  return verifyConvolutionGrad(*this, getOther(), getResult());
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto k = cast<RankedTensorType>(getKey().getType());
  auto v = cast<RankedTensorType>(getValue().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  for (RankedTensorType type : {q, k, v, out})
    if (type.getRank() != 4 || !type.hasStaticShape())
      return emitOpError() << "operands and result must be static 4-d "
                              "tensors (batch, heads, sequence, features), "
                              "not "
                           << type;
  Type element = q.getElementType();
  if (!element.isF16() && !element.isBF16())
    return emitOpError() << "takes f16 or bf16 operands, not " << element;
  for (RankedTensorType type : {k, v, out})
    if (type.getElementType() != element)
      return emitOpError() << "operands and result must share one element "
                              "type";
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape(),
                    os = out.getShape();
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != vs[1] || ks[2] != vs[2] ||
      ks[3] != qs[3] || ks[1] == 0 || qs[1] % ks[1] != 0)
    return emitOpError() << "query " << q << ", key " << k << " and value "
                         << v << " do not make an attention";
  if (os[0] != qs[0] || os[1] != qs[1] || os[2] != qs[2] || os[3] != vs[3])
    return emitOpError() << "result " << out << " is not (batch, heads, "
                            "queries, value features) of the operands";
  if (Value bias = getBias()) {
    auto b = cast<RankedTensorType>(bias.getType());
    ArrayRef<int64_t> bs = b.getShape();
    if (b.getRank() != 4 || !b.hasStaticShape() ||
        b.getElementType() != element || (bs[0] != 1 && bs[0] != qs[0]) ||
        (bs[1] != 1 && bs[1] != qs[1]) || bs[2] != qs[2] ||
        bs[3] != getBiasWidth(ks[2]))
      return emitOpError() << "bias " << b << " is not (batch or 1, heads "
                              "or 1, queries, keys rounded up to 8) of the "
                              "operands' type";
  }
  return success();
}

/// A window op is well formed when `output` has one point per window of
/// `input`: leading dimensions equal, and each spatial size the number of
/// windows PyTorch's pooling makes (rounding down, or up in ceil mode when
/// the last window starts inside the input or its left padding).
static LogicalResult verifyWindows(Operation *op, RankedTensorType input,
                                   RankedTensorType output,
                                   ArrayRef<int64_t> window,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> padding,
                                   ArrayRef<int64_t> dilation) {
  size_t spatial = window.size();
  if (spatial == 0 || strides.size() != spatial ||
      padding.size() != spatial || dilation.size() != spatial)
    return op->emitOpError() << "needs window, strides, padding and dilation "
                                "of one non-zero length";
  if (input.getRank() != output.getRank() ||
      input.getRank() < static_cast<int64_t>(spatial))
    return op->emitOpError() << "needs input " << input << " and output "
                             << output << " of one rank, at least "
                             << spatial;
  for (size_t i = 0; i < spatial; ++i)
    if (window[i] < 1 || strides[i] < 1 || dilation[i] < 1 || padding[i] < 0)
      return op->emitOpError() << "needs positive window, strides and "
                                  "dilation, and non-negative padding";
  int64_t lead = input.getRank() - spatial;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t in = input.getDimSize(d), out = output.getDimSize(d);
    if (isDynamic(in) || isDynamic(out))
      continue;
    if (d < lead) {
      if (in != out)
        return op->emitOpError() << "output " << output << " does not match "
                                 << "input " << input << " in dimension "
                                 << d;
      continue;
    }
    size_t i = d - lead;
    int64_t span = in + 2 * padding[i] - dilation[i] * (window[i] - 1) - 1;
    if (span < 0)
      return op->emitOpError() << "window is larger than the padded input "
                                  "in dimension "
                               << d;
    int64_t floor = span / strides[i] + 1;
    bool ceil = out == floor + 1 && (out - 1) * strides[i] < in + padding[i];
    if (out != floor && !ceil)
      return op->emitOpError() << "output " << output << " does not have "
                               << floor << " windows of input " << input
                               << " in dimension " << d;
  }
  return success();
}

/// The positions' type matches the output's shape.
static LogicalResult verifyPositions(Operation *op, RankedTensorType positions,
                                     RankedTensorType output) {
  if (failed(verifyCompatibleShape(positions.getShape(), output.getShape())))
    return op->emitOpError() << "positions " << positions
                             << " do not have the windows' shape " << output;
  return success();
}

LogicalResult WindowArgmaxOp::verify() {
  auto result = cast<RankedTensorType>(getType());
  int64_t positions = 1;
  for (int64_t size : getWindow())
    positions *= std::max<int64_t>(size, 1);
  if (!llvm::isIntN(result.getElementTypeBitWidth(), positions - 1))
    return emitOpError() << result.getElementType() << " cannot hold the "
                         << positions << " positions of a window";
  return verifyWindows(*this, cast<RankedTensorType>(getOperand().getType()),
                       result, getWindow(), getStrides(), getPadding(),
                       getDilation());
}

LogicalResult WindowGatherOp::verify() {
  auto input = cast<RankedTensorType>(getOperand().getType());
  auto result = cast<RankedTensorType>(getType());
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "result " << result
                         << " does not have the element type of " << input;
  if (failed(verifyPositions(*this, getPositions().getType(), result)))
    return failure();
  return verifyWindows(*this, input, result, getWindow(), getStrides(),
                       getPadding(), getDilation());
}

LogicalResult WindowScatterOp::verify() {
  auto source = cast<RankedTensorType>(getSource().getType());
  auto result = cast<RankedTensorType>(getType());
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "result " << result
                         << " does not have the element type of " << source;
  if (failed(verifyPositions(*this, getPositions().getType(), source)))
    return failure();
  return verifyWindows(*this, result, source, getWindow(), getStrides(),
                       getPadding(), getDilation());
}

#define GET_OP_CLASSES
#include "tc/Dialect/Prim/IR/PrimOps.cpp.inc"
