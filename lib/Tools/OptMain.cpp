//===- OptMain.cpp - tc-opt's driver as a library -------------------------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Tools/OptMain.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tc/Conversion/FXToPrim/Decompositions.h"
#include "tc/InitAll.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

static llvm::cl::opt<bool> listDecompositions(
    "tc-list-decompositions",
    llvm::cl::desc("Print the ATen ops tc-decompose lowers, one per line "
                   "(`symbolic`: it takes the graph's symbolic size), and "
                   "exit"),
    llvm::cl::init(false));

static int run(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::tc::registerAllDialects(registry);
  mlir::tc::registerAllPasses();
  mlir::tc::registerAllPipelines();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "tc optimizer driver\n", registry);
  if (listDecompositions) {
    for (const auto &entry : mlir::tc::decompositions::kDecompositions)
      llvm::outs() << entry.op << " "
                   << mlir::tc::decompositions::getFamilyName(entry.family)
                   << (entry.flags & mlir::tc::decompositions::kSymbolic
                           ? " symbolic"
                           : "")
                   << "\n";
    return 0;
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}

int mlir::tc::optMain(int argc, char **argv) {
  int code = run(argc, argv);
  // A caller that is not this tool's own main (the Python console script)
  // returns to an interpreter that writes through other buffers.
  llvm::outs().flush();
  llvm::errs().flush();
  return code;
}
