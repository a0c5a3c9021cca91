//===- PrimDialect.cpp - prim dialect ---------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Prim/IR/PrimDialect.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tc::prim;

#include "tc/Dialect/Prim/IR/PrimOpsDialect.cpp.inc"

void PrimDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tc/Dialect/Prim/IR/PrimOps.cpp.inc"
      >();
}

Operation *PrimDialect::materializeConstant(OpBuilder &builder,
                                            Attribute value, Type type,
                                            Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
