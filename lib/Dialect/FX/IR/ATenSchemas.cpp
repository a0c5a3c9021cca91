//===- ATenSchemas.cpp - table of ATen operator schemas ---------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/FX/IR/ATenSchemas.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir::tc::fx;

namespace {
struct RawSchema {
  const char *name;
  const char *args;
  const char *returns;
};
} // namespace

#define TC_ATEN_TORCH_VERSION(v) static const char kTorchVersion[] = v;
#define TC_ATEN_SCHEMA(name, args, rets)
#include "ATenSchemas.inc"
#undef TC_ATEN_SCHEMA
#undef TC_ATEN_TORCH_VERSION

#define TC_ATEN_TORCH_VERSION(v)
#define TC_ATEN_SCHEMA(name, args, rets) {name, args, rets},
static const RawSchema kRawSchemas[] = {
#include "ATenSchemas.inc"
};
#undef TC_ATEN_SCHEMA
#undef TC_ATEN_TORCH_VERSION

/// The schemas of tc's own ops, which the backend writes into ATen graphs
/// (torch.library custom ops of namespace `tc`, defined in Python:
/// tc.rows.attention_op for tc::attention; test_generated.py checks the two
/// agree).
static const RawSchema kTcSchemas[] = {
    {"tc::attention",
     "query:T: key:T: value:T: attn_mask:T?:o dropout_p:f: is_causal:b: "
     "scale:f:o enable_gqa:b:",
     "T"},
};

static ATenArgKind parseKind(llvm::StringRef code) {
  return llvm::StringSwitch<ATenArgKind>(code)
      .Case("T", ATenArgKind::Tensor)
      .Case("T?", ATenArgKind::OptionalTensor)
      .Case("T[]", ATenArgKind::TensorList)
      .Case("T?[]", ATenArgKind::OptionalTensorList)
      .Case("i", ATenArgKind::Int)
      .Case("i[]", ATenArgKind::IntList)
      .Case("f", ATenArgKind::Float)
      .Case("f[]", ATenArgKind::FloatList)
      .Case("b", ATenArgKind::Bool)
      .Case("b[]", ATenArgKind::BoolList)
      .Case("s", ATenArgKind::Scalar)
      .Case("s[]", ATenArgKind::ScalarList)
      .Case("str", ATenArgKind::String)
      .Case("dtype", ATenArgKind::ScalarType)
      .Default(ATenArgKind::Other);
}

static ATenSchema parseSchema(const RawSchema &raw) {
  ATenSchema schema;
  schema.qualifiedName = raw.name;
  llvm::SmallVector<llvm::StringRef> pieces;
  llvm::StringRef(raw.args).split(pieces, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef piece : pieces) {
    auto [name, rest] = piece.split(':');
    auto [kind, flags] = rest.split(':');
    schema.arguments.push_back({name, parseKind(kind), flags.contains('o'),
                                flags.contains('d')});
  }
  pieces.clear();
  llvm::StringRef(raw.returns).split(pieces, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef piece : pieces)
    schema.returns.push_back(parseKind(piece));
  return schema;
}

const ATenSchema *mlir::tc::fx::lookupATenSchema(llvm::StringRef name) {
  // Parsed on first use; thread-safe by the rules of function-local statics.
  static const llvm::StringMap<ATenSchema> table = [] {
    llvm::StringMap<ATenSchema> map;
    for (const RawSchema &raw : kRawSchemas)
      map.try_emplace(raw.name, parseSchema(raw));
    for (const RawSchema &raw : kTcSchemas)
      map.try_emplace(raw.name, parseSchema(raw));
    return map;
  }();
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

llvm::StringRef mlir::tc::fx::getATenSchemaTorchVersion() {
  return kTorchVersion;
}

llvm::StringRef mlir::tc::fx::stringifyATenArgKind(ATenArgKind kind) {
  switch (kind) {
  case ATenArgKind::Tensor:
    return "Tensor";
  case ATenArgKind::OptionalTensor:
    return "Tensor?";
  case ATenArgKind::TensorList:
    return "Tensor[]";
  case ATenArgKind::OptionalTensorList:
    return "Tensor?[]";
  case ATenArgKind::Int:
    return "int";
  case ATenArgKind::IntList:
    return "int[]";
  case ATenArgKind::Float:
    return "float";
  case ATenArgKind::FloatList:
    return "float[]";
  case ATenArgKind::Bool:
    return "bool";
  case ATenArgKind::BoolList:
    return "bool[]";
  case ATenArgKind::Scalar:
    return "Scalar";
  case ATenArgKind::ScalarList:
    return "Scalar[]";
  case ATenArgKind::String:
    return "str";
  case ATenArgKind::ScalarType:
    return "ScalarType";
  case ATenArgKind::Other:
    return "other";
  }
  return "other";
}
