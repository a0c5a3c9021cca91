//===- DedupKernels.cpp - one copy of identical kernels ---------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tc::kernel {
#define GEN_PASS_DEF_DEDUPKERNELSPASS
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace mlir::tc::kernel

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::kernel;

namespace {

/// The kernel's code without its name: its printed form from the argument
/// list on (the custom format prints `kernel.kernel @name(` first).
/// Locations are left out: two copies differ only there.
std::string codeOf(KernelOp kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Local scope: the printer would otherwise number the whole module's
  // values for each kernel.
  kernel->print(os, OpPrintingFlags()
                        .enableDebugInfo(false)
                        .useLocalScope()
                        .assumeVerified());
  size_t args = text.find('(');
  return args == std::string::npos ? text : text.substr(args);
}

struct DedupKernelsPass
    : public kernel::impl::DedupKernelsPassBase<DedupKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<KernelOp> firstOfCode;
    // Each duplicate's name, to the kept kernel's.
    DenseMap<StringAttr, FlatSymbolRefAttr> keptFor;
    SmallVector<KernelOp> duplicates;
    for (KernelOp kernel : module.getOps<KernelOp>()) {
      auto [it, inserted] = firstOfCode.try_emplace(codeOf(kernel), kernel);
      if (inserted)
        continue;
      keptFor[kernel.getSymNameAttr()] =
          FlatSymbolRefAttr::get(it->second.getSymNameAttr());
      duplicates.push_back(kernel);
    }
    if (duplicates.empty())
      return;
    // One walk rewrites every reference (SymbolTable::replaceAllSymbolUses
    // would walk the module once per duplicate).
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](FlatSymbolRefAttr ref)
                                -> std::optional<Attribute> {
      auto it = keptFor.find(ref.getAttr());
      if (it == keptFor.end())
        return std::nullopt;
      return it->second;
    });
    for (KernelOp duplicate : duplicates)
      duplicate.erase();
    replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/false);
  }
};

} // namespace
