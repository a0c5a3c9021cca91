//===- AddKernelChecks.cpp - every kernel access checked (debugging) ------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// TC_CPU_CHECKS=1: bounds and NaN checks in every kernel, recorded in a
// buffer the runtime reads after the run. See the pass description in
// Passes.td and tc/Runtime/CheckRecord.h for the record.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "tc/Dialect/Kernel/Utils/Checks.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tc::kernel {
#define GEN_PASS_DEF_ADDKERNELCHECKSPASS
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace mlir::tc::kernel

using namespace mlir;
using namespace mlir::tc::kernel;
namespace checks = ::tc::checks;

namespace {

/// Adds the checks to `kernel`, whose last argument is now `record`.
void addChecks(KernelOp kernel, Value record) {
  Location loc = kernel.getLoc();
  Block &entry = kernel.getBody().front();
  uint64_t id = checks::kernelId(kernel.getSymName());
  SmallVector<Operation *> accesses;
  kernel.walk([&](Operation *op) {
    if (accessedBuffer(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    Value memref = accessedBuffer(op);
    auto arg = dyn_cast<BlockArgument>(memref);
    if (!arg || arg.getOwner() != &entry || memref == record)
      continue;
    checkAccess(op, [&](OpBuilder &b, Value cond, checks::Kind kind,
                        Value element) {
      auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
      OpBuilder then = ifOp.getThenBodyBuilder();
      recordViolation(then, loc, record, id, kind, arg.getArgNumber(),
                      element);
    });
  }
}

struct AddKernelChecksPass
    : public mlir::tc::kernel::impl::AddKernelChecksPassBase<
          AddKernelChecksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    auto recordType = MemRefType::get({checks::kRecordWords},
                                      IntegerType::get(&getContext(), 64));
    llvm::SetVector<KernelOp> checked;
    for (ScheduleOp schedule : module.getOps<ScheduleOp>()) {
      SmallVector<LaunchOp> launches;
      schedule.walk([&](LaunchOp launch) { launches.push_back(launch); });
      if (launches.empty())
        continue;
      OpBuilder b = OpBuilder::atBlockBegin(&schedule.getBody().front());
      Value record = memref::AllocOp::create(b, schedule.getLoc(), recordType);
      for (LaunchOp launch : launches) {
        auto kernel = symbols.lookup<KernelOp>(
            launch.getKernelAttr().getRootReference());
        if (!kernel)
          continue;
        launch.getBuffersMutable().append(record);
        if (!checked.insert(kernel))
          continue;
        Block &entry = kernel.getBody().front();
        Value arg = entry.addArgument(recordType, kernel.getLoc());
        kernel.setFunctionType(FunctionType::get(
            &getContext(), entry.getArgumentTypes(), {}));
        if (plantOutOfBoundsForTesting)
          plantOutOfBoundsLoad(kernel.getBody(), entry);
        addChecks(kernel, arg);
      }
    }
  }
};

} // namespace
