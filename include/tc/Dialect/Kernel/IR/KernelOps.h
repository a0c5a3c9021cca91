//===- KernelOps.h - kernel dialect operations ------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_IR_KERNELOPS_H
#define TC_DIALECT_KERNEL_IR_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tc/Dialect/Kernel/IR/KernelDialect.h"

#include "tc/Dialect/Kernel/IR/KernelEnums.h.inc"

#define GET_OP_CLASSES
#include "tc/Dialect/Kernel/IR/KernelOps.h.inc"

#endif // TC_DIALECT_KERNEL_IR_KERNELOPS_H
