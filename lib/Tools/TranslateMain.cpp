//===- TranslateMain.cpp - tc-translate's driver as a library -------------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// MLIR's translation driver with the one translation tc's reproducers need
// (`--mlir-to-llvmir`, over the dialects tc registers), so that a wheel
// without LLVM's tools still reruns a failed LLVM IR translation.
//
//===----------------------------------------------------------------------===//

#include "tc/Tools/OptMain.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/InitAll.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static void registerToLLVMIR() {
  static TranslateFromMLIRRegistration registration(
      "mlir-to-llvmir",
      "Translates MLIR (LLVM dialect) to LLVM IR; a lowered graph's host "
      "program (kernel.schedule), which tc's runtimes read rather than "
      "compile, is left out as they leave it out",
      [](Operation *op, llvm::raw_ostream &output) {
        if (auto module = dyn_cast<ModuleOp>(op))
          for (auto schedule : llvm::make_early_inc_range(
                   module.getOps<tc::kernel::ScheduleOp>()))
            schedule.erase();
        llvm::LLVMContext context;
        std::unique_ptr<llvm::Module> module =
            translateModuleToLLVMIR(op, context);
        if (!module)
          return failure();
        module->print(output, nullptr);
        return success();
      },
      [](DialectRegistry &registry) { tc::registerAllDialects(registry); });
}

int mlir::tc::translateMain(int argc, char **argv) {
  registerToLLVMIR();
  int code = failed(mlirTranslateMain(argc, argv, "tc translation driver"))
                 ? 1
                 : 0;
  llvm::outs().flush();
  llvm::errs().flush();
  return code;
}
