//===- FXDialect.cpp - fx dialect -------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/FX/IR/FXDialect.h"
#include "tc/Dialect/FX/IR/FXOps.h"

using namespace mlir;
using namespace mlir::tc::fx;

#include "tc/Dialect/FX/IR/FXOpsDialect.cpp.inc"

void FXDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tc/Dialect/FX/IR/FXOps.cpp.inc"
      >();
}
