//===- PrimDialect.h - prim dialect ------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_IR_PRIMDIALECT_H
#define TC_DIALECT_PRIM_IR_PRIMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tc/Dialect/Prim/IR/PrimOpsDialect.h.inc"

#endif // TC_DIALECT_PRIM_IR_PRIMDIALECT_H
