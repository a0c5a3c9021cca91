//===- ModuleToBinary.cpp - gpu.modules to binaries, in parallel ----------===//
//
// The tc-gpu-module-to-binary pass: see its description in
// tc/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tc {
#define GEN_PASS_DEF_GPUMODULETOBINARYPASS
#include "tc/Target/GPU/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;

namespace {

std::optional<gpu::CompilationTarget> parseFormat(StringRef format) {
  return llvm::StringSwitch<std::optional<gpu::CompilationTarget>>(format)
      .Cases({"offloading", "llvm"}, gpu::CompilationTarget::Offload)
      .Cases({"assembly", "isa"}, gpu::CompilationTarget::Assembly)
      .Cases({"binary", "bin"}, gpu::CompilationTarget::Binary)
      .Cases({"fatbinary", "fatbin"}, gpu::CompilationTarget::Fatbin)
      .Default(std::nullopt);
}

struct GPUModuleToBinaryPass
    : public tc::impl::GPUModuleToBinaryPassBase<GPUModuleToBinaryPass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<gpu::CompilationTarget> target = parseFormat(format);
    if (!target) {
      getOperation().emitError()
          << "tc-gpu-module-to-binary: unknown format '" << format << "'";
      return signalPassFailure();
    }
    gpu::TargetOptions options(toolkit, {}, {}, {}, *target);
    for (auto module : llvm::make_early_inc_range(
             getOperation().getOps<gpu::GPUModuleOp>()))
      if (failed(serialize(module, options)))
        return signalPassFailure();
  }

  /// Replaces `module` by a gpu.binary with one object per shard.
  LogicalResult serialize(gpu::GPUModuleOp module,
                          const gpu::TargetOptions &options) {
    unsigned numKernels = llvm::count_if(
        module.getBody()->getOperations(), [](Operation &op) {
          return op.hasAttr(gpu::GPUDialect::getKernelFuncAttrName());
        });
    unsigned count = std::max(
        1u, std::min<unsigned>(
                shards, numKernels / std::max(1u, minKernelsPerShard.getValue())));
    // Each shard is a copy of the module, alone in a builtin.module so that
    // upstream's serialization (which walks a symbol table's gpu.modules)
    // can run on the shards concurrently.
    SmallVector<OwningOpRef<ModuleOp>> holders;
    for (unsigned shard = 0; shard < count; ++shard) {
      OwningOpRef<ModuleOp> holder = ModuleOp::create(module.getLoc());
      auto copy = cast<gpu::GPUModuleOp>(module->clone());
      holder->push_back(copy);
      unsigned index = 0;
      for (Operation &op :
           llvm::make_early_inc_range(copy.getBody()->getOperations()))
        if (op.hasAttr(gpu::GPUDialect::getKernelFuncAttrName()) &&
            index++ % count != shard)
          op.erase();
      holders.push_back(std::move(holder));
    }
    if (failed(failableParallelForEach(
            &getContext(), holders, [&](OwningOpRef<ModuleOp> &holder) {
              return gpu::transformGpuModulesToBinaries(*holder, nullptr,
                                                        options);
            })))
      return failure();

    SmallVector<Attribute> objects;
    gpu::BinaryOp first;
    for (OwningOpRef<ModuleOp> &holder : holders) {
      auto binary = *holder->getOps<gpu::BinaryOp>().begin();
      first = first ? first : binary;
      llvm::append_range(objects, binary.getObjects());
    }
    OpBuilder builder(module);
    auto merged = cast<gpu::BinaryOp>(builder.clone(*first));
    merged.setObjectsAttr(builder.getArrayAttr(objects));
    module.erase();
    return success();
  }
};

} // namespace
