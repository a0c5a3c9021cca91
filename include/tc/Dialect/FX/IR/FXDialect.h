//===- FXDialect.h - fx dialect ---------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_FX_IR_FXDIALECT_H
#define TC_DIALECT_FX_IR_FXDIALECT_H

#include "mlir/IR/Dialect.h"
#include "llvm/ADT/StringRef.h"

#include "tc/Dialect/FX/IR/FXAttrNames.h"
#include "tc/Dialect/FX/IR/FXOpsDialect.h.inc"

#endif // TC_DIALECT_FX_IR_FXDIALECT_H
