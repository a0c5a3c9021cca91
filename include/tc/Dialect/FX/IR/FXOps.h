//===- FXOps.h - fx dialect operations --------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_FX_IR_FXOPS_H
#define TC_DIALECT_FX_IR_FXOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tc/Dialect/FX/IR/FXDialect.h"

#include "tc/Dialect/FX/IR/FXEnums.h.inc"

#define GET_OP_CLASSES
#include "tc/Dialect/FX/IR/FXOps.h.inc"

#endif // TC_DIALECT_FX_IR_FXOPS_H
