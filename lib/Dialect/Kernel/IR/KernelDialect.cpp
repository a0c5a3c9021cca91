//===- KernelDialect.cpp - kernel dialect -----------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/IR/KernelDialect.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"

using namespace mlir;
using namespace mlir::tc::kernel;

#include "tc/Dialect/Kernel/IR/KernelOpsDialect.cpp.inc"

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tc/Dialect/Kernel/IR/KernelOps.cpp.inc"
      >();
}
