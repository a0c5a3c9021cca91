//===- Checks.cpp - kernels that check their accesses ---------------------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Utils/Checks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tc;
namespace checks = ::tc::checks;

void kernel::recordViolation(OpBuilder &b, Location loc, Value record,
                             uint64_t kernelId, checks::Kind kind,
                             int64_t argument, Value element) {
  auto i64 = [&](OpBuilder &at, int64_t v) -> Value {
    return arith::ConstantIntOp::create(at, loc, at.getI64Type(), v);
  };
  auto index = [&](OpBuilder &at, int64_t i) -> Value {
    return arith::ConstantIndexOp::create(at, loc, i);
  };
  Value before = memref::AtomicRMWOp::create(
      b, loc, arith::AtomicRMWKind::ori, i64(b, 1), record,
      ValueRange{index(b, 0)});
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      before, i64(b, 0));
  auto ifOp = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  OpBuilder set = ifOp.getThenBodyBuilder();
  Value fields[] = {i64(set, static_cast<int64_t>(kernelId)),
                    i64(set, static_cast<int64_t>(kind)),
                    i64(set, argument), element};
  for (auto [i, field] : llvm::enumerate(fields))
    memref::StoreOp::create(set, loc, field, record,
                            ValueRange{index(set, i + 1)});
}

Value kernel::accessedBuffer(Operation *access) {
  if (auto load = dyn_cast<memref::LoadOp>(access))
    return load.getMemRef();
  if (auto store = dyn_cast<memref::StoreOp>(access))
    return store.getMemRef();
  if (auto rmw = dyn_cast<memref::AtomicRMWOp>(access))
    return rmw.getMemref();
  return {};
}

void kernel::checkAccess(Operation *access, ReportViolation report) {
  auto store = dyn_cast<memref::StoreOp>(access);
  Location loc = access->getLoc();
  auto [type, indices] = [&]() -> std::pair<MemRefType, MutableOperandRange> {
    if (auto load = dyn_cast<memref::LoadOp>(access))
      return {load.getMemRefType(), load.getIndicesMutable()};
    if (store)
      return {store.getMemRefType(), store.getIndicesMutable()};
    auto rmw = cast<memref::AtomicRMWOp>(access);
    return {rmw.getMemRefType(), rmw.getIndicesMutable()};
  }();
  OpBuilder b(access);
  // The element's row-major position (0 where the shape is symbolic: only
  // NaNs are checked there).
  bool bounded = type.hasStaticShape() && type.getLayout().isIdentity();
  Value linear = arith::ConstantIndexOp::create(b, loc, 0);
  if (bounded)
    for (auto [i, size] : llvm::zip(indices, type.getShape()))
      linear = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, linear,
                                arith::ConstantIndexOp::create(b, loc, size)),
          i.get());
  Value element = arith::IndexCastOp::create(b, loc, b.getI64Type(), linear);
  if (store && isa<FloatType>(store.getValueToStore().getType())) {
    Value value = store.getValueToStore();
    report(b,
           arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value,
                                 value),
           checks::Kind::NaN, element);
  }
  if (!bounded)
    return;
  // Unsigned: a negative position is out of bounds too.
  Value outside = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::uge, linear,
      arith::ConstantIndexOp::create(b, loc, type.getNumElements()));
  report(b, outside, checks::Kind::Bounds, element);
  if (store) {
    Value inside = arith::XOrIOp::create(
        b, loc, outside,
        arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    auto ifOp = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
    store->moveBefore(ifOp.thenBlock()->getTerminator());
    return;
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (OpOperand &i : indices)
    i.set(arith::SelectOp::create(b, loc, outside, zero, i.get()));
}

void kernel::plantWrongStores(Region &body) {
  body.walk([](memref::StoreOp store) {
    auto type = dyn_cast<FloatType>(store.getValueToStore().getType());
    if (!type)
      return;
    OpBuilder b(store);
    Value one = arith::ConstantOp::create(b, store.getLoc(),
                                          b.getFloatAttr(type, 1.0));
    store.getValueMutable().assign(arith::AddFOp::create(
        b, store.getLoc(), store.getValueToStore(), one));
  });
}

void kernel::plantOutOfBoundsLoad(Region &body, Block &entry) {
  body.walk([&](memref::LoadOp load) {
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
