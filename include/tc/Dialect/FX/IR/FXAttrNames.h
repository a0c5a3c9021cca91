//===- FXAttrNames.h - attribute names the fx dialect owns -----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The names of the discardable attributes the fx dialect defines, in a
// header of their own (no generated code) so that passes of the dialects
// below fx can set them without depending on it.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_FX_IR_FXATTRNAMES_H
#define TC_DIALECT_FX_IR_FXATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace mlir::tc::fx {
/// On the module: the device the graph runs on ("cpu" when absent), where
/// eager's semantics differ by device (tc.importer writes it,
/// tc-decompose reads it).
inline constexpr llvm::StringLiteral kDeviceAttrName = "tc.device";
/// On a graph's argument: the FX placeholder's name (the importer writes
/// it; tc-autodiff names the cotangents it adds so).
inline constexpr llvm::StringLiteral kNameAttrName = "fx.name";
} // namespace mlir::tc::fx

#endif // TC_DIALECT_FX_IR_FXATTRNAMES_H
