//===- ATenSchemas.h - table of ATen operator schemas -----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The ATen operator schemas that fx.call_function is verified against. The
// table itself (ATenSchemas.inc) is generated from PyTorch's schema registry
// by utils/gen_aten_schemas.py.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_FX_IR_ATENSCHEMAS_H
#define TC_DIALECT_FX_IR_ATENSCHEMAS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::tc::fx {

/// The kind of a schema argument or return, as far as the IR cares.
enum class ATenArgKind {
  Tensor,           // Tensor
  OptionalTensor,   // Tensor?
  TensorList,       // Tensor[]
  OptionalTensorList, // Tensor?[]
  Int,              // int, SymInt
  IntList,          // int[], SymInt[]
  Float,            // float
  FloatList,        // float[]
  Bool,             // bool
  BoolList,         // bool[]
  Scalar,           // Scalar (int, float or bool)
  ScalarList,       // Scalar[]
  String,           // str
  ScalarType,       // ScalarType (a dtype)
  Other,            // Layout, Device, MemoryFormat, Generator, ...
};

/// Returns true for the kinds bound to fx.call_function operands.
inline bool isTensorKind(ATenArgKind kind) {
  return kind == ATenArgKind::Tensor || kind == ATenArgKind::OptionalTensor ||
         kind == ATenArgKind::TensorList ||
         kind == ATenArgKind::OptionalTensorList;
}

struct ATenArg {
  llvm::StringRef name;
  ATenArgKind kind;
  /// The argument is `Optional[...]` (accepts None).
  bool optional;
  /// The schema gives a default, so the argument may be left out.
  bool hasDefault;
};

struct ATenSchema {
  /// `aten::add.Tensor`; the default overload has no suffix.
  llvm::StringRef qualifiedName;
  llvm::SmallVector<ATenArg> arguments;
  llvm::SmallVector<ATenArgKind> returns;
};

/// Looks up a schema by its qualified name; returns nullptr when PyTorch's
/// registry (as of the generated table) has no such overload.
const ATenSchema *lookupATenSchema(llvm::StringRef qualifiedName);

/// The PyTorch version the table was generated from.
llvm::StringRef getATenSchemaTorchVersion();

/// Returns a printable name for a kind, as in the schema language.
llvm::StringRef stringifyATenArgKind(ATenArgKind kind);

} // namespace mlir::tc::fx

#endif // TC_DIALECT_FX_IR_ATENSCHEMAS_H
