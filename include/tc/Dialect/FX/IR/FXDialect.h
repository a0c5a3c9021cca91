//===- FXDialect.h - fx dialect ---------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_FX_IR_FXDIALECT_H
#define TC_DIALECT_FX_IR_FXDIALECT_H

#include "mlir/IR/Dialect.h"
#include "llvm/ADT/StringRef.h"

#include "tc/Dialect/FX/IR/FXOpsDialect.h.inc"

namespace mlir::tc::fx {
/// On the module: the device the graph runs on ("cpu" when absent), where
/// eager's semantics differ by device (tc.importer writes it,
/// tc-decompose reads it).
inline constexpr llvm::StringLiteral kDeviceAttrName = "tc.device";
} // namespace mlir::tc::fx

#endif // TC_DIALECT_FX_IR_FXDIALECT_H
