//===- KernelToCPU.cpp - lower kernels to CPU loop nests --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"

namespace mlir::tc {
#define GEN_PASS_DEF_CONVERTKERNELTOCPUPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;
using namespace mlir::tc;

namespace {

/// The accumulation step of a reduction.
static Value combine(OpBuilder &b, Location loc, kernel::CombinerKind kind,
                     Value acc, Value value) {
  bool isFloat = isa<FloatType>(acc.getType());
  // Reassociation lets LLVM vectorize float reductions (partial sums per
  // lane); PyTorch's own CPU reductions reassociate too.
  auto fm = arith::FastMathFlagsAttr::get(b.getContext(),
                                          arith::FastMathFlags::reassoc);
  switch (kind) {
  case kernel::CombinerKind::Add:
    return isFloat ? arith::AddFOp::create(b, loc, acc, value, fm).getResult()
                   : arith::AddIOp::create(b, loc, acc, value).getResult();
  case kernel::CombinerKind::Mul:
    return isFloat ? arith::MulFOp::create(b, loc, acc, value, fm).getResult()
                   : arith::MulIOp::create(b, loc, acc, value).getResult();
  case kernel::CombinerKind::Max:
    return isFloat
               ? arith::MaximumFOp::create(b, loc, acc, value, fm).getResult()
               : arith::MaxSIOp::create(b, loc, acc, value).getResult();
  case kernel::CombinerKind::Min:
    return isFloat
               ? arith::MinimumFOp::create(b, loc, acc, value, fm).getResult()
               : arith::MinSIOp::create(b, loc, acc, value).getResult();
  }
  llvm_unreachable("unknown combiner");
}

class KernelLowering {
public:
  KernelLowering(kernel::KernelOp kernel) : kernel(kernel) {}
  LogicalResult run();

private:
  /// Clones `block`'s ops (but its terminator) at `b`'s insertion point,
  /// lowering kernel ops on the way.
  LogicalResult lowerBlock(Block &block, OpBuilder &b);

  kernel::KernelOp kernel;
  IRMapping mapping;
  SmallVector<Value> point;
};

LogicalResult KernelLowering::lowerBlock(Block &block, OpBuilder &b) {
  for (Operation &op : block.without_terminator()) {
    Location loc = op.getLoc();
    if (auto index = dyn_cast<kernel::IndexOp>(op)) {
      mapping.map(index.getResult(), point[index.getDim()]);
      continue;
    }
    if (auto loop = dyn_cast<kernel::LoopOp>(op)) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto forOp = scf::ForOp::create(b, loc, zero,
                                      mapping.lookup(loop.getSize()), one);
      OpBuilder inner = OpBuilder::atBlockBegin(forOp.getBody());
      inner.setInsertionPoint(forOp.getBody()->getTerminator());
      mapping.map(loop.getBody().getArgument(0), forOp.getInductionVar());
      if (failed(lowerBlock(loop.getBody().front(), inner)))
        return failure();
      continue;
    }
    if (auto reduce = dyn_cast<kernel::ReduceOp>(op)) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto forOp = scf::ForOp::create(
          b, loc, zero, mapping.lookup(reduce.getSize()), one,
          ValueRange{mapping.lookup(reduce.getInit())});
      OpBuilder inner = OpBuilder::atBlockEnd(forOp.getBody());
      mapping.map(reduce.getBody().getArgument(0), forOp.getInductionVar());
      Block &body = reduce.getBody().front();
      if (failed(lowerBlock(body, inner)))
        return failure();
      auto yield = cast<kernel::YieldOp>(body.getTerminator());
      Value next = combine(inner, loc, reduce.getKind(),
                           forOp.getRegionIterArgs()[0],
                           mapping.lookup(yield.getValues()[0]));
      scf::YieldOp::create(inner, loc, next);
      mapping.map(reduce.getResult(), forOp.getResult(0));
      continue;
    }
    if (op.getDialect() == kernel.getOperation()->getDialect())
      return op.emitOpError() << "has no CPU lowering";
    b.clone(op, mapping);
  }
  return success();
}

LogicalResult KernelLowering::run() {
  OpBuilder b(kernel);
  Location loc = kernel.getLoc();
  SmallVector<Type> argTypes(kernel.getArgumentTypes());
  argTypes.push_back(b.getIndexType());
  argTypes.push_back(b.getIndexType());
  auto func = func::FuncOp::create(b, loc, kernel.getSymName(),
                                   b.getFunctionType(argTypes, {}));
  ArrayRef<int64_t> domain = kernel.getDomain();
  func->setAttr("tc.domain", b.getDenseI64ArrayAttr(domain));
  auto outType = cast<MemRefType>(kernel.getArgumentTypes().back());
  func->setAttr("tc.points", b.getI64IntegerAttr(outType.getNumElements()));
  Block *entry = func.addEntryBlock();
  for (auto [from, to] :
       llvm::zip(kernel.getBody().getArguments(), entry->getArguments()))
    mapping.map(from, to);
  Value begin = entry->getArgument(argTypes.size() - 2);
  Value end = entry->getArgument(argTypes.size() - 1);

  b.setInsertionPointToStart(entry);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto rows = scf::ForOp::create(b, loc, begin, end, one);
  func::ReturnOp::create(b, loc);
  b.setInsertionPoint(rows.getBody()->getTerminator());
  // Delinearize the row's linear index into the domain's coordinates.
  Value linear = rows.getInductionVar();
  point.assign(domain.size(), Value());
  for (int64_t d = domain.size() - 1; d >= 0; --d) {
    Value size = arith::ConstantIndexOp::create(b, loc, domain[d]);
    point[d] = d == 0 ? linear
                      : arith::RemUIOp::create(b, loc, linear, size).getResult();
    if (d > 0)
      linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  if (failed(lowerBlock(kernel.getBody().front(), b))) {
    func.erase();
    return failure();
  }
  kernel.erase();
  return success();
}

struct ConvertKernelToCPUPass
    : public tc::impl::ConvertKernelToCPUPassBase<ConvertKernelToCPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<kernel::KernelOp> kernels(module.getOps<kernel::KernelOp>());
    for (kernel::KernelOp k : kernels)
      if (failed(KernelLowering(k).run()))
        return signalPassFailure();

    // Polynomial approximations of exp, tanh, erf, sin, ... are plain
    // arithmetic, which LLVM vectorizes; libm calls would not be.
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
