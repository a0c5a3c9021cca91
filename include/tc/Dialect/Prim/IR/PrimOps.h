//===- PrimOps.h - prim dialect operations ----------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_IR_PRIMOPS_H
#define TC_DIALECT_PRIM_IR_PRIMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tc/Dialect/Prim/IR/PrimDialect.h"

#include "tc/Dialect/Prim/IR/PrimEnums.h.inc"

namespace mlir::tc::prim {
/// The `shape` of prim.broadcast_in_dim and prim.reshape: `[4, ?, 8]`.
ParseResult parseShape(OpAsmParser &parser, DenseI64ArrayAttr &shape);
void printShape(OpAsmPrinter &printer, Operation *op, DenseI64ArrayAttr shape);

/// The permutations between PyTorch's channels-first layout (N, C,
/// spatial...) and channels-last (N, spatial..., C) of a tensor of `rank`,
/// as prim.permute takes them: `toChannelsLast(4)` is [0, 2, 3, 1].
SmallVector<int64_t> toChannelsLast(int64_t rank);
SmallVector<int64_t> toChannelsFirst(int64_t rank);

/// `type` with its dimensions permuted as prim.permute by `permutation`.
RankedTensorType permuteType(RankedTensorType type,
                             ArrayRef<int64_t> permutation);

/// A run of a reshape's dimensions holding as many elements on both sides:
/// operand dims [inBegin, inEnd), result dims [outBegin, outEnd).
struct ReshapeRun {
  size_t inBegin, inEnd, outBegin, outEnd;
};

/// A reshape's dimensions from shape `in` to shape `out` as runs of equal
/// element counts, in order (a collapse, an expansion, unit dims), each as
/// short as it can be; failure where the element counts do not match.
FailureOr<SmallVector<ReshapeRun>> reshapeRuns(ArrayRef<int64_t> in,
                                               ArrayRef<int64_t> out);
} // namespace mlir::tc::prim

#define GET_OP_CLASSES
#include "tc/Dialect/Prim/IR/PrimOps.h.inc"

#endif // TC_DIALECT_PRIM_IR_PRIMOPS_H
