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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "tc/Runtime/CheckRecord.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tc::kernel {
#define GEN_PASS_DEF_ADDKERNELCHECKSPASS
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace mlir::tc::kernel

using namespace mlir;
using namespace mlir::tc::kernel;
namespace checks = ::tc::checks;

namespace {

/// The first load of a buffer argument in `kernel` reads one row past the
/// buffer's end (a test's planted out-of-bounds access).
void plantOutOfBounds(KernelOp kernel) {
  Block &entry = kernel.getBody().front();
  kernel.walk([&](memref::LoadOp load) {
    auto arg = dyn_cast<BlockArgument>(load.getMemRef());
    if (!arg || arg.getOwner() != &entry || load.getIndices().empty() ||
        !load.getMemRefType().hasStaticShape())
      return WalkResult::advance();
    OpBuilder b(load);
    OpOperand &first = load.getIndicesMutable()[0];
    first.set(arith::AddIOp::create(
        b, load.getLoc(), first.get(),
        arith::ConstantIndexOp::create(b, load.getLoc(),
                                       load.getMemRefType().getShape()[0])));
    return WalkResult::interrupt();
  });
}

/// Adds the checks to `kernel`, whose last argument is now `record`.
void addChecks(KernelOp kernel, Value record) {
  Location loc = kernel.getLoc();
  Block &entry = kernel.getBody().front();
  int64_t id = static_cast<int64_t>(checks::kernelId(kernel.getSymName()));
  // Records the first violation of the run: `record[0] |= 1`, and the rest
  // if it was clear.
  auto fail = [&](OpBuilder &b, Value cond, checks::Kind kind,
                  int64_t argument, Value element) {
    auto i64 = [&](OpBuilder &at, int64_t v) -> Value {
      return arith::ConstantIntOp::create(at, loc, at.getI64Type(), v);
    };
    auto index = [&](OpBuilder &at, int64_t i) -> Value {
      return arith::ConstantIndexOp::create(at, loc, i);
    };
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    OpBuilder then = ifOp.getThenBodyBuilder();
    Value before = memref::AtomicRMWOp::create(
        then, loc, arith::AtomicRMWKind::ori, i64(then, 1), record,
        ValueRange{index(then, 0)});
    Value first = arith::CmpIOp::create(then, loc, arith::CmpIPredicate::eq,
                                        before, i64(then, 0));
    auto firstIf = scf::IfOp::create(then, loc, first, /*withElse=*/false);
    OpBuilder set = firstIf.getThenBodyBuilder();
    Value fields[] = {i64(set, id), i64(set, static_cast<int64_t>(kind)),
                      i64(set, argument), element};
    for (auto [i, field] : llvm::enumerate(fields))
      memref::StoreOp::create(set, loc, field, record,
                              ValueRange{index(set, i + 1)});
  };

  SmallVector<Operation *> accesses;
  kernel.walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    auto load = dyn_cast<memref::LoadOp>(op);
    auto store = dyn_cast<memref::StoreOp>(op);
    Value memref = load ? load.getMemRef() : store.getMemRef();
    auto arg = dyn_cast<BlockArgument>(memref);
    if (!arg || arg.getOwner() != &entry || memref == record)
      continue;
    auto type = cast<MemRefType>(memref.getType());
    MutableOperandRange indices =
        load ? load.getIndicesMutable() : store.getIndicesMutable();
    OpBuilder b(op);
    // The element's row-major position (0 where the shape is symbolic:
    // only NaNs are checked there).
    Value linear = arith::ConstantIndexOp::create(b, loc, 0);
    bool bounded = type.hasStaticShape() && type.getLayout().isIdentity();
    if (bounded)
      for (auto [i, size] : llvm::zip(indices, type.getShape()))
        linear = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, linear,
                                  arith::ConstantIndexOp::create(b, loc, size)),
            i.get());
    Value element = arith::IndexCastOp::create(b, loc, b.getI64Type(), linear);
    int64_t number = arg.getArgNumber();
    if (store && isa<FloatType>(store.getValueToStore().getType())) {
      Value value = store.getValueToStore();
      Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                        value, value);
      fail(b, nan, checks::Kind::NaN, number, element);
    }
    if (!bounded)
      continue;
    // Unsigned: a negative position is out of bounds too.
    Value outside = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::uge, linear,
        arith::ConstantIndexOp::create(b, loc, type.getNumElements()));
    fail(b, outside, checks::Kind::Bounds, number, element);
    if (store) {
      // Skipped.
      Value inside = arith::XOrIOp::create(
          b, loc, outside,
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
      auto ifOp = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
      store->moveBefore(ifOp.thenBlock()->getTerminator());
      continue;
    }
    // Element 0 instead.
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (OpOperand &i : indices)
      i.set(arith::SelectOp::create(b, loc, outside, zero, i.get()));
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
          plantOutOfBounds(kernel);
        addChecks(kernel, arg);
      }
    }
  }
};

} // namespace
