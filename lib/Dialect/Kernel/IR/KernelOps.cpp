//===- KernelOps.cpp - kernel dialect operations ----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "tc/Dialect/Utils/FunctionLike.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tc::kernel;

#include "tc/Dialect/Kernel/IR/KernelEnums.cpp.inc"

/// Bytes of `type`, a dynamic dimension counted as kDynamicWeight elements
/// (a symbolic row count: the static dimensions then decide), saturating
/// at 2^48 (the weights are only compared).
static int64_t accessWeight(MemRefType type) {
  constexpr int64_t kDynamicWeight = 1024, kMost = int64_t(1) << 48;
  int64_t bits = type.getElementType().isIntOrFloat()
                     ? type.getElementType().getIntOrFloatBitWidth()
                     : 64;
  int64_t bytes = std::max<int64_t>(1, bits / 8);
  for (int64_t size : type.getShape()) {
    int64_t extent = ShapedType::isDynamic(size) ? kDynamicWeight : size;
    bytes = extent != 0 && bytes > kMost / extent ? kMost : bytes * extent;
  }
  return std::min(bytes, kMost);
}

bool mlir::tc::kernel::indexesInnermostDim(Value iv) {
  AccessWeights weights = innermostAccessWeights(iv);
  return weights.contiguous > 0 && weights.contiguous >= weights.strided;
}

mlir::tc::kernel::AccessWeights
mlir::tc::kernel::innermostAccessWeights(Value iv) {
  SetVector<Value> derived;
  derived.insert(iv);
  for (size_t i = 0; i < derived.size(); ++i)
    for (Operation *user : derived[i].getUsers())
      if (!isa<memref::LoadOp, memref::StoreOp>(user) &&
          user->getNumResults() == 1 &&
          user->getResult(0).getType().isIndex())
        derived.insert(user->getResult(0));
  // Each access `iv` indexes, weighted by its buffer's bytes: along its
  // innermost dimension (contiguous) or across it (strided).
  AccessWeights weights;
  llvm::SmallPtrSet<Operation *, 8> seen;
  for (Value value : derived) {
    for (Operation *user : value.getUsers()) {
      ValueRange indices;
      MemRefType type;
      if (auto load = dyn_cast<memref::LoadOp>(user)) {
        indices = load.getIndices();
        type = load.getMemRefType();
      } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
        indices = store.getIndices();
        type = store.getMemRefType();
      } else {
        continue;
      }
      if (indices.empty() || !seen.insert(user).second ||
          !llvm::any_of(indices, [&](Value v) { return derived.contains(v); }))
        continue;
      (derived.contains(indices.back()) ? weights.contiguous
                                        : weights.strided) +=
          accessWeight(type);
    }
  }
  return weights;
}

TypedAttr mlir::tc::kernel::getCombinerIdentity(Builder &b, CombinerKind kind,
                                                Type type) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    APFloat value = APFloat::getZero(sem);
    if (kind == CombinerKind::Mul)
      value = APFloat::getOne(sem);
    else if (kind == CombinerKind::Max)
      value = APFloat::getInf(sem, /*Negative=*/true);
    else if (kind == CombinerKind::Min)
      value = APFloat::getInf(sem, /*Negative=*/false);
    return b.getFloatAttr(floatType, value);
  }
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value = APInt::getZero(width);
  if (kind == CombinerKind::Mul)
    value = APInt(width, 1);
  else if (kind == CombinerKind::Max)
    value = width == 1 ? APInt::getZero(1) : APInt::getSignedMinValue(width);
  else if (kind == CombinerKind::Min)
    value = width == 1 ? APInt::getAllOnes(1) : APInt::getSignedMaxValue(width);
  return b.getIntegerAttr(type, value);
}

//===----------------------------------------------------------------------===//
// Function-like ops (kernel.kernel, kernel.schedule)
//===----------------------------------------------------------------------===//

/// Kernels and schedules work on buffers passed in, return nothing, and end
/// in kernel.return.
template <typename OpTy>
static LogicalResult verifyFunctionLike(OpTy op) {
  if (!op.getResultTypes().empty())
    return op.emitOpError() << "returns no values: outputs are buffers "
                               "passed as arguments";
  for (auto [idx, type] : llvm::enumerate(op.getArgumentTypes()))
    if (!isa<MemRefType>(type))
      return op.emitOpError() << "argument #" << idx
                              << " must be a memref, got " << type;
  if (op.getBody().empty() || op.getBody().front().empty() ||
      !isa<ReturnOp>(op.getBody().front().back()))
    return op.emitOpError() << "body must end in 'kernel.return'";
  return success();
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseFunctionLike<KernelOp>(parser, result);
}
void KernelOp::print(OpAsmPrinter &p) { printFunctionLike(p, *this); }

LogicalResult KernelOp::verify() {
  for (auto [d, size] : llvm::enumerate(getDomain())) {
    if (ShapedType::isDynamic(size) && d == 0)
      continue; // the graph's symbolic size
    if (size < 0)
      return emitOpError() << "domain has a negative size " << size;
  }
  return verifyFunctionLike(*this);
}

ParseResult ScheduleOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseFunctionLike<ScheduleOp>(parser, result);
}
void ScheduleOp::print(OpAsmPrinter &p) { printFunctionLike(p, *this); }
LogicalResult ScheduleOp::verify() { return verifyFunctionLike(*this); }

//===----------------------------------------------------------------------===//
// IndexOp
//===----------------------------------------------------------------------===//

LogicalResult IndexOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (!kernel)
    return emitOpError() << "must be inside a 'kernel.kernel'";
  uint64_t rank = kernel.getDomain().size();
  if (getDim() >= rank)
    return emitOpError() << "dimension " << getDim()
                         << " is out of range for a domain of rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceOp, LoopOp, YieldOp
//===----------------------------------------------------------------------===//

/// The body of a reduce or loop takes one index: the inner induction value.
static LogicalResult verifyInnerBody(Operation *op, Region &body) {
  Block &block = body.front();
  if (block.getNumArguments() != 1 || !block.getArgument(0).getType().isIndex())
    return op->emitOpError() << "body must take one 'index' argument";
  return success();
}

LogicalResult ReduceOp::verify() {
  if (failed(verifyInnerBody(*this, getBody())))
    return failure();
  bool isFloat = isa<FloatType>(getType());
  if (!isFloat && (getKind() == CombinerKind::Max ||
                   getKind() == CombinerKind::Min) &&
      getType().isInteger(1))
    return emitOpError() << "cannot take max/min of i1 values";
  return success();
}

LogicalResult LoopOp::verify() { return verifyInnerBody(*this, getBody()); }

LogicalResult YieldOp::verify() {
  if (auto reduce = dyn_cast<ReduceOp>((*this)->getParentOp())) {
    if (getValues().size() != 1 || getValues()[0].getType() != reduce.getType())
      return emitOpError() << "must yield one value of the reduction's type "
                           << reduce.getType();
    return success();
  }
  if (!getValues().empty())
    return emitOpError() << "in a 'kernel.loop' yields no values";
  return success();
}

//===----------------------------------------------------------------------===//
// ArenaOp, BufferOp
//===----------------------------------------------------------------------===//

LogicalResult ArenaOp::verify() {
  if (getType().getRank() != 1)
    return emitOpError() << "arena must be a rank-1 byte buffer";
  int64_t alignment = getAlignment();
  if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
    return emitOpError() << "alignment " << alignment
                         << " is not a power of two";
  return success();
}

/// Bytes one element occupies in a buffer (i1 takes a byte, as in PyTorch).
static int64_t getElementBytes(Type type) {
  return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
}

/// `256`, or `256 + 128 * s` with the graph's symbolic size `s`.
static ParseResult parseSymbolicOffset(OpAsmParser &parser, IntegerAttr &offset,
                                       IntegerAttr &perSymbol) {
  int64_t value = 0, scale = 0;
  if (parser.parseInteger(value))
    return failure();
  if (succeeded(parser.parseOptionalPlus())) {
    if (parser.parseInteger(scale) || parser.parseStar() ||
        parser.parseKeyword("s"))
      return failure();
  }
  Builder b(parser.getContext());
  offset = b.getI64IntegerAttr(value);
  perSymbol = b.getI64IntegerAttr(scale);
  return success();
}

static void printSymbolicOffset(OpAsmPrinter &printer, BufferOp,
                                IntegerAttr offset, IntegerAttr perSymbol) {
  printer << offset.getInt();
  if (perSymbol.getInt() != 0)
    printer << " + " << perSymbol.getInt() << " * s";
}

LogicalResult AliasOp::verify() {
  auto source = cast<MemRefType>(getSource().getType());
  auto result = cast<MemRefType>(getType());
  if (!isa<BlockArgument>(getSource()))
    return emitOpError() << "aliases a schedule argument";
  if (!source.hasStaticShape() || !result.hasStaticShape())
    return emitOpError() << "needs static shapes";
  if (!source.getLayout().isIdentity() || !result.getLayout().isIdentity())
    return emitOpError() << "buffers are dense row-major: no layout allowed";
  if (source.getElementType() != result.getElementType() ||
      source.getNumElements() != result.getNumElements())
    return emitOpError() << "must keep the element type and count: "
                         << source << " to " << result;
  return success();
}

LogicalResult BufferOp::verify() {
  MemRefType arena = getArena().getType(), buffer = getType();
  if (arena.getRank() != 1)
    return emitOpError() << "arena must be a rank-1 byte buffer";
  if (!buffer.getLayout().isIdentity())
    return emitOpError() << "buffers are dense row-major: no layout allowed";
  if (!buffer.getElementType().isIntOrFloat())
    return emitOpError() << "buffer elements must be integers or floats";
  int64_t elementBytes = getElementBytes(buffer.getElementType());
  int64_t offset = getOffset();
  if (offset < 0 || offset % elementBytes != 0)
    return emitOpError() << "offset " << offset
                         << " is not a non-negative multiple of the element "
                            "size ("
                         << elementBytes << " bytes)";
  if (getOffsetPerSymbol() < 0 || getOffsetPerSymbol() % elementBytes != 0)
    return emitOpError() << "offset per symbol " << getOffsetPerSymbol()
                         << " is not a non-negative multiple of the element "
                            "size ("
                         << elementBytes << " bytes)";
  for (int64_t d = 1; d < buffer.getRank(); ++d)
    if (buffer.isDynamicDim(d))
      return emitOpError() << "only the leading dimension of a buffer may be "
                              "the symbolic size";
  if (!buffer.hasStaticShape() || getOffsetPerSymbol() != 0) {
    if (arena.hasStaticShape())
      return emitOpError() << "a buffer sized by the symbolic size needs an "
                              "arena of symbolic size";
    return success();
  }
  int64_t end = offset + buffer.getNumElements() * elementBytes;
  if (!arena.hasStaticShape())
    return success();
  if (end > arena.getDimSize(0))
    return emitOpError() << "buffer [" << offset << ", " << end
                         << ") does not fit in an arena of "
                         << arena.getDimSize(0) << " bytes";
  return success();
}

//===----------------------------------------------------------------------===//
// LaunchOp
//===----------------------------------------------------------------------===//

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *callee =
      symbolTable.lookupNearestSymbolFrom(*this, getKernelAttr());
  if (callee && !isa<KernelOp>(callee))
    return success(); // A kernel already lowered for a target.
  if (!callee && !getKernelAttr().getNestedReferences().empty()) {
    // A kernel lowered into a module of GPU kernels, which may since have
    // been serialized to an opaque binary of the same name.
    auto root = FlatSymbolRefAttr::get(getKernelAttr().getRootReference());
    if (symbolTable.lookupNearestSymbolFrom(*this, root))
      return success();
    return emitOpError() << "names no kernel module '" << root << "'";
  }
  StringRef name = getKernelAttr().getLeafReference().getValue();
  auto kernel = dyn_cast_if_present<KernelOp>(callee);
  if (!kernel)
    return emitOpError() << "'" << name
                         << "' does not name a 'kernel.kernel'";
  ArrayRef<Type> expected = kernel.getArgumentTypes();
  if (expected.size() != getBuffers().size())
    return emitOpError() << "passes " << getBuffers().size()
                         << " buffers, but kernel '" << name
                         << "' takes " << expected.size();
  for (auto [idx, types] :
       llvm::enumerate(llvm::zip(getBuffers().getTypes(), expected))) {
    auto [actual, want] = types;
    if (actual != want)
      return emitOpError() << "buffer #" << idx << " has type " << actual
                           << ", but kernel '" << name << "' expects "
                           << want;
  }
  return success();
}

LogicalResult LaunchOp::verify() {
  int grids = bool(getGrid()) + bool(getGridPerSymbol()) +
              bool(getThreadsPerSymbol());
  if (grids > 1)
    return emitOpError() << "takes one of 'grid', 'grid_per_symbol' and "
                            "'threads_per_symbol'";
  if (grids && !getBlock())
    return emitOpError() << "with a grid needs a 'block'";
  for (std::optional<int64_t> size :
       {getGrid(), getBlock(), getGridPerSymbol(), getThreadsPerSymbol()})
    if (size && *size < 0)
      return emitOpError() << "launch sizes must not be negative, not "
                           << *size;
  if (!getRowEpilogue())
    return success();
  auto gemm = dyn_cast_if_present<GemmOp>((*this)->getPrevNode());
  if (!gemm || cast<MemRefType>(gemm.getOut().getType()).getRank() != 2 ||
      !llvm::is_contained(getBuffers(), gemm.getOut()))
    return emitOpError() << "with 'row_epilogue' must directly follow a "
                            "rank-2 'kernel.gemm' whose output it reads";
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::verify() {
  auto input = cast<MemRefType>(getInput().getType());
  auto weight = cast<MemRefType>(getWeight().getType());
  auto output = cast<MemRefType>(getOutput().getType());
  int64_t rank = input.getRank();
  if (rank < 3 || weight.getRank() != rank || output.getRank() != rank)
    return emitOpError() << "input, weight and output need one rank of at "
                            "least 3";
  if (input.getElementType() != weight.getElementType() ||
      input.getElementType() != output.getElementType())
    return emitOpError() << "operands must have one element type";
  if (!input.hasStaticShape() || !weight.hasStaticShape() ||
      !output.hasStaticShape())
    return emitOpError() << "needs static shapes";
  size_t spatial = rank - 2;
  // Sizes by PyTorch's (channels-first) dimension numbering, whatever the
  // buffers' layout.
  bool channelsLast = getChannelsLast();
  if (getWeightChannelsFirst() && !channelsLast)
    return emitOpError() << "weight_channels_first needs channels_last";
  auto sizeIn = [&](MemRefType type, int64_t d, bool last) {
    if (!last || d == 0)
      return type.getDimSize(d);
    return type.getDimSize(d == 1 ? rank - 1 : d - 1);
  };
  auto size = [&](MemRefType type, int64_t d) {
    return sizeIn(type, d, channelsLast);
  };
  auto wsize = [&](int64_t d) {
    return sizeIn(weight, d, channelsLast && !getWeightChannelsFirst());
  };
  ArrayRef<int64_t> stride = getStride(), padding = getPadding(),
                    dilation = getDilation();
  if (stride.size() != spatial || padding.size() != spatial ||
      dilation.size() != spatial)
    return emitOpError() << "stride, padding and dilation need " << spatial
                         << " entries each";
  int64_t groups = getGroups();
  if (groups < 1 || size(input, 1) != wsize(1) * groups ||
      wsize(0) % groups != 0)
    return emitOpError() << "input channels " << size(input, 1)
                         << " and weight " << weight
                         << " do not make a convolution of " << groups
                         << " groups";
  if (size(output, 0) != size(input, 0) ||
      size(output, 1) != wsize(0))
    return emitOpError() << "output must be " << size(input, 0) << "x"
                         << wsize(0) << "x...";
  for (size_t d = 0; d < spatial; ++d) {
    if (stride[d] < 1 || dilation[d] < 1 || padding[d] < 0)
      return emitOpError() << "stride and dilation must be positive and "
                              "padding non-negative";
    int64_t span = size(input, 2 + d) + 2 * padding[d] -
                   dilation[d] * (wsize(2 + d) - 1) - 1;
    if (span < 0 || span / stride[d] + 1 != size(output, 2 + d))
      return emitOpError() << "output size " << size(output, 2 + d)
                           << " in spatial dimension " << d
                           << " does not match the input and window";
  }
  return success();
}

AttentionOp::View AttentionOp::getOperandView(unsigned index) {
  Value buffer = getOperand(index);
  DenseI64ArrayAttr attr = index == 0   ? getQueryViewAttr()
                           : index == 1 ? getKeyViewAttr()
                           : index == 2 ? getValueViewAttr()
                                        : getOutViewAttr();
  View view;
  if (attr) {
    ArrayRef<int64_t> values = attr.asArrayRef();
    view.offset = values[0];
    view.sizes.assign(values.begin() + 1, values.begin() + 5);
    view.strides.assign(values.begin() + 5, values.begin() + 9);
    return view;
  }
  auto type = cast<MemRefType>(buffer.getType());
  view.sizes.assign(type.getShape().begin(), type.getShape().end());
  view.strides.assign(view.sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(view.sizes.size()) - 2; d >= 0; --d)
    view.strides[d] = view.strides[d + 1] * view.sizes[d + 1];
  return view;
}

bool AttentionOp::isLibraryView(ArrayRef<int64_t> sizes,
                                ArrayRef<int64_t> strides, int64_t offset,
                                int64_t elementBytes) {
  if (sizes.size() != 4 || strides.size() != 4 || strides[3] != 1 ||
      offset < 0 || (offset * elementBytes) % 16 != 0)
    return false;
  for (int d = 0; d < 3; ++d)
    if (sizes[d] != 1 &&
        (strides[d] <= 0 || (strides[d] * elementBytes) % 16 != 0))
      return false;
  return true;
}

LogicalResult AttentionOp::verify() {
  auto q = cast<MemRefType>(getQuery().getType());
  auto out = cast<MemRefType>(getOut().getType());
  SmallVector<MemRefType> types = {q, cast<MemRefType>(getKey().getType()),
                                   cast<MemRefType>(getValue().getType()),
                                   out};
  if (Value bias = getBias())
    types.push_back(cast<MemRefType>(bias.getType()));
  SmallVector<DenseI64ArrayAttr, 4> viewAttrs = {
      getQueryViewAttr(), getKeyViewAttr(), getValueViewAttr(),
      getOutViewAttr()};
  for (auto [i, type] : llvm::enumerate(types)) {
    bool viewed = i < 4 && viewAttrs[i];
    if ((!viewed && type.getRank() != 4) || !type.hasStaticShape() ||
        !type.getLayout().isIdentity() ||
        type.getElementType() != q.getElementType())
      return emitOpError() << "buffers must be static, dense, 4-d (or "
                              "viewed) and of one element type, not "
                           << type;
  }
  if (!q.getElementType().isF16() && !q.getElementType().isBF16())
    return emitOpError() << "takes f16 or bf16 buffers";
  static constexpr const char *kNames[] = {"query", "key", "value", "out"};
  for (unsigned i = 0; i < 4; ++i) {
    if (!viewAttrs[i])
      continue;
    ArrayRef<int64_t> values = viewAttrs[i].asArrayRef();
    if (values.size() != 9)
      return emitOpError() << kNames[i]
                           << "_view must be [offset, 4 sizes, 4 strides]";
    View view = getOperandView(i);
    int64_t last = view.offset;
    for (int d = 0; d < 4; ++d) {
      if (view.sizes[d] <= 0 || view.strides[d] < 0)
        return emitOpError() << kNames[i]
                             << "_view needs positive sizes and strides";
      last += (view.sizes[d] - 1) * view.strides[d];
    }
    if (view.offset < 0 || last >= types[i].getNumElements())
      return emitOpError() << kNames[i] << "_view reads outside its buffer "
                           << types[i];
    if (!isLibraryView(view.sizes, view.strides, view.offset,
                       q.getElementTypeBitWidth() / 8))
      return emitOpError() << kNames[i]
                           << "_view must have an innermost stride of 1 and "
                              "its offset and other strides in whole "
                              "16-byte rows";
  }
  SmallVector<int64_t, 4> qs = getOperandView(0).sizes,
                          ks = getOperandView(1).sizes,
                          vs = getOperandView(2).sizes,
                          os = getOperandView(3).sizes;
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != vs[1] || ks[2] != vs[2] ||
      ks[3] != qs[3] || ks[1] == 0 || qs[1] % ks[1] != 0 || os[0] != qs[0] ||
      os[1] != qs[1] || os[2] != qs[2] || os[3] != vs[3])
    return emitOpError() << "query " << q << ", key " << types[1]
                         << ", value " << types[2] << " and out " << out
                         << " do not make an attention";
  if (Value bias = getBias()) {
    ArrayRef<int64_t> bs = cast<MemRefType>(bias.getType()).getShape();
    if ((bs[0] != 1 && bs[0] != qs[0]) || (bs[1] != 1 && bs[1] != qs[1]) ||
        bs[2] != qs[2] || bs[3] < ks[2])
      return emitOpError() << "bias is not (batch or 1, heads or 1, "
                              "queries, at least keys)";
  }
  return success();
}

LogicalResult GemmOp::verify() {
  auto a = cast<MemRefType>(getA().getType());
  auto b = cast<MemRefType>(getB().getType());
  auto out = cast<MemRefType>(getOut().getType());
  int64_t rank = out.getRank();
  auto dim = [](MemRefType t, int64_t i) { return t.getDimSize(i); };
  auto differ = [](int64_t x, int64_t y) {
    return !ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y;
  };
  if (a.getElementType() != b.getElementType() ||
      a.getElementType() != out.getElementType())
    return emitOpError() << "operands must have one element type";
  if (isFlattened()) {
    // a [rows..., k] x b [k, n] -> out [rows..., n].
    if (getTransposeA())
      return emitOpError() << "an n-d by 2-d product reads a as it is";
    for (int64_t d = 0; d + 1 < rank; ++d)
      if (differ(dim(a, d), dim(out, d)))
        return emitOpError() << "a's and out's leading dimensions differ";
    int64_t kb = getTransposeB() ? dim(b, 1) : dim(b, 0);
    int64_t n = getTransposeB() ? dim(b, 0) : dim(b, 1);
    if (differ(dim(a, rank - 1), kb))
      return emitOpError() << "contracting sizes differ: "
                           << dim(a, rank - 1) << " vs " << kb;
    if (differ(n, dim(out, rank - 1)))
      return emitOpError() << "out's last dimension must be " << n;
    return verifyBias(n);
  }
  if ((rank != 2 && rank != 3) || a.getRank() != rank || b.getRank() != rank)
    return emitOpError() << "operands must all be rank 2, or all rank 3 "
                            "with a leading batch dimension, or a and out "
                            "of one rank above 2 with a rank-2 b";
  int64_t r = rank - 2;
  int64_t m = getTransposeA() ? dim(a, r + 1) : dim(a, r);
  int64_t ka = getTransposeA() ? dim(a, r) : dim(a, r + 1);
  int64_t kb = getTransposeB() ? dim(b, r + 1) : dim(b, r);
  int64_t n = getTransposeB() ? dim(b, r) : dim(b, r + 1);
  if (differ(ka, kb))
    return emitOpError() << "contracting sizes differ: " << ka << " vs "
                         << kb;
  if (differ(m, dim(out, r)) || differ(n, dim(out, r + 1)))
    return emitOpError() << "output must be " << m << "x" << n;
  if (rank == 3 && (differ(dim(a, 0), dim(out, 0)) ||
                    differ(dim(b, 0), dim(out, 0))))
    return emitOpError() << "batch sizes differ";
  return verifyBias(n);
}

bool GemmOp::isFlattened() {
  int64_t rank = cast<MemRefType>(getOut().getType()).getRank();
  return rank > 2 && cast<MemRefType>(getA().getType()).getRank() == rank &&
         cast<MemRefType>(getB().getType()).getRank() == 2;
}

LogicalResult GemmOp::verifyBias(int64_t n) {
  Value bias = getBias();
  if (!bias)
    return success();
  auto biasType = cast<MemRefType>(bias.getType());
  int64_t size = biasType.getRank() == 1 ? biasType.getDimSize(0) : 0;
  if (biasType.getRank() != 1 ||
      (!ShapedType::isDynamic(size) && !ShapedType::isDynamic(n) &&
       size != n) ||
      biasType.getElementType() !=
          cast<MemRefType>(getOut().getType()).getElementType())
    return emitOpError() << "bias must be a rank-1 buffer of " << n
                         << " output elements";
  return success();
}

GemmOp::LibrarySizes GemmOp::getLibrarySizes() {
  auto out = cast<MemRefType>(getOut().getType());
  auto a = cast<MemRefType>(getA().getType());
  int64_t r = out.getRank() - 2;
  LibrarySizes sizes{1, 1, 1, 1, 0};
  auto size = [&](MemRefType type, int64_t dim, unsigned bit) {
    if (!type.isDynamicDim(dim))
      return type.getDimSize(dim);
    sizes.perSymbol |= 1u << bit;
    return int64_t(1);
  };
  if (isFlattened()) {
    // The rows are out's leading dimensions (one may be the symbolic
    // size: m is then the others' product per unit of it).
    for (int64_t d = 0; d <= r; ++d)
      sizes.m *= size(out, d, 1);
    sizes.n = size(out, r + 1, 2);
    sizes.k = size(a, r + 1, 3);
    return sizes;
  }
  if (r)
    sizes.batch = size(out, 0, 0);
  sizes.m = size(out, r, 1);
  sizes.n = size(out, r + 1, 2);
  sizes.k = getTransposeA() ? size(a, r, 3) : size(a, r + 1, 3);
  return sizes;
}

#define GET_OP_CLASSES
#include "tc/Dialect/Kernel/IR/KernelOps.cpp.inc"
