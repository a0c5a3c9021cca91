//===- tc-opt.cpp - tc's mlir-opt -------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tc/InitAll.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::tc::registerAllDialects(registry);
  mlir::tc::registerAllPasses();
  mlir::tc::registerAllPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tc optimizer driver\n", registry));
}
