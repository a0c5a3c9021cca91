//===- PrimDialect.h - prim dialect ------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_IR_PRIMDIALECT_H
#define TC_DIALECT_PRIM_IR_PRIMDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "tc/Dialect/Prim/IR/PrimOpsDialect.h.inc"

namespace mlir::tc::prim {

/// The graph's symbolic size (a `?`, docs/DynamicShapes.md) as the cost
/// models see it (fusion's, the half products' padding, the GPU
/// schedules): a typical batch of rows, larger than any size that decides
/// anything small.
inline constexpr int64_t kSymbolHint = 1024;

/// The number of elements of `type` with its `?` counted as kSymbolHint.
inline int64_t hintNumElements(RankedTensorType type) {
  int64_t count = 1;
  for (int64_t size : type.getShape())
    count *= ShapedType::isDynamic(size) ? kSymbolHint : size;
  return count;
}

} // namespace mlir::tc::prim

#endif // TC_DIALECT_PRIM_IR_PRIMDIALECT_H
