//===- PrimOpFolders.cpp - prim dialect folders -----------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Folders for the prim ops: identities (x * 1, reshape to the same type,
// identity permutations, ...) and constant folding of splat arithmetic.
// Floating-point identities respect signed zeros: x + (-0.0) folds, x + 0.0
// does not (it turns -0.0 into +0.0).
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/IR/PrimOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tc::prim;

static bool isFloatTensor(Type type) {
  return isa<FloatType>(cast<ShapedType>(type).getElementType());
}

static bool isBoolTensor(Type type) {
  return cast<ShapedType>(type).getElementType().isInteger(1);
}

/// Folds a binary op over two constants with `floatFn` or `intFn`.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldBinaryConstants(Type type,
                                        ArrayRef<Attribute> operands,
                                        FloatFn floatFn, IntFn intFn) {
  if (isFloatTensor(type))
    return constFoldBinaryOp<FloatAttr, APFloat, void>(operands, floatFn);
  if (isBoolTensor(type))
    return {};
  return constFoldBinaryOp<IntegerAttr, APInt, void>(operands, intFn);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  if (isFloatTensor(getType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(adaptor.getOperands(),
                                       [](const APFloat &a) { return -a; });
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  bool isFloat = isFloatTensor(getType());
  if (isFloat ? matchPattern(getRhs(), m_NegZeroFloat())
              : matchPattern(getRhs(), m_Zero()))
    return getLhs();
  return foldBinaryConstants(
      getType(), adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return a + b; },
      [](const APInt &a, const APInt &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  bool isFloat = isFloatTensor(getType());
  if (isFloat ? matchPattern(getRhs(), m_PosZeroFloat())
              : matchPattern(getRhs(), m_Zero()))
    return getLhs();
  return foldBinaryConstants(
      getType(), adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return a - b; },
      [](const APInt &a, const APInt &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  bool isFloat = isFloatTensor(getType());
  if (isFloat ? matchPattern(getRhs(), m_OneFloat())
              : (!isBoolTensor(getType()) && matchPattern(getRhs(), m_One())))
    return getLhs();
  return foldBinaryConstants(
      getType(), adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return a * b; },
      [](const APInt &a, const APInt &b) { return a * b; });
}

OpFoldResult DivOp::fold(FoldAdaptor) {
  bool isFloat = isFloatTensor(getType());
  if (isFloat ? matchPattern(getRhs(), m_OneFloat())
              : (!isBoolTensor(getType()) && matchPattern(getRhs(), m_One())))
    return getLhs();
  return {};
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  if (auto cond = dyn_cast_if_present<SplatElementsAttr>(adaptor.getCondition()))
    return cond.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  return {};
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

//===----------------------------------------------------------------------===//
// Shape operations
//===----------------------------------------------------------------------===//

/// A splat constant keeps its value under any reshaping of its type.
static OpFoldResult reshapeSplat(Attribute operand, Type resultType) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(operand);
  auto shaped = dyn_cast<ShapedType>(resultType);
  if (!splat || !shaped || !shaped.hasStaticShape())
    return {};
  return splat.resizeSplat(shaped);
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return reshapeSplat(adaptor.getOperand(), getType());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  // reshape(reshape(x)) is reshape(x).
  if (auto inner = getOperand().getDefiningOp<ReshapeOp>()) {
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  return reshapeSplat(adaptor.getOperand(), getType());
}

OpFoldResult PermuteOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (auto [idx, dim] : llvm::enumerate(p))
      if (static_cast<int64_t>(idx) != dim)
        return false;
    return true;
  };
  if (isIdentity(perm))
    return getOperand();
  // permute(permute(x, p), q) is permute(x, p o q).
  if (auto inner = getOperand().getDefiningOp<PermuteOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t dim : perm)
      composed.push_back(innerPerm[dim]);
    if (isIdentity(composed))
      return inner.getOperand();
    getOperandMutable().assign(inner.getOperand());
    setPermutation(composed);
    return getResult();
  }
  return reshapeSplat(adaptor.getOperand(), getType());
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return reshapeSplat(adaptor.getOperand(), getType());
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  // Nothing added or cropped (average pooling's windows that tile the
  // input exactly): the operand itself.
  auto zero = [](ArrayRef<int64_t> values) {
    return llvm::all_of(values, [](int64_t v) { return v == 0; });
  };
  if (zero(getLow()) && zero(getHigh()) && zero(getInterior()) &&
      getOperand().getType() == getType())
    return getOperand();
  return {};
}

OpFoldResult ConcatenateOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

//===----------------------------------------------------------------------===//
// Constants and reductions
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult ReduceOp::fold(FoldAdaptor) {
  if (getDims().empty())
    return getOperand();
  // A reduction of no elements is the reduction's identity (no kernel
  // reads the empty operand).
  auto operandType = cast<RankedTensorType>(getOperand().getType());
  auto resultType = cast<RankedTensorType>(getType());
  if (!operandType.hasStaticShape() || !resultType.hasStaticShape() ||
      operandType.getNumElements() != 0 || resultType.getNumElements() == 0)
    return {};
  Type elt = resultType.getElementType();
  bool isMax = getKind() == ReductionKind::Max;
  Attribute identity;
  switch (getKind()) {
  case ReductionKind::Sum:
    identity = Builder(getContext()).getZeroAttr(elt);
    break;
  case ReductionKind::Prod:
    identity = isa<FloatType>(elt)
                   ? Attribute(FloatAttr::get(elt, 1.0))
                   : Attribute(IntegerAttr::get(elt, 1));
    break;
  case ReductionKind::Max:
  case ReductionKind::Min:
    if (auto ft = dyn_cast<FloatType>(elt))
      identity = FloatAttr::get(
          elt, APFloat::getInf(ft.getFloatSemantics(), /*Negative=*/isMax));
    else if (elt.isInteger(1))
      identity = IntegerAttr::get(elt, isMax ? 0 : 1);
    else
      identity = IntegerAttr::get(
          elt, isMax ? APInt::getSignedMinValue(elt.getIntOrFloatBitWidth())
                     : APInt::getSignedMaxValue(elt.getIntOrFloatBitWidth()));
    break;
  }
  return DenseElementsAttr::get(resultType, identity);
}
