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
} // namespace mlir::tc::prim

#define GET_OP_CLASSES
#include "tc/Dialect/Prim/IR/PrimOps.h.inc"

#endif // TC_DIALECT_PRIM_IR_PRIMOPS_H
