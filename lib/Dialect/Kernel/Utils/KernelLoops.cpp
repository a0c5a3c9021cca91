//===- KernelLoops.cpp - kernel bodies as sequential loops ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Utils/KernelLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tc;

FailureOr<SmallVector<Type>>
mlir::tc::getLoweredArgumentTypes(kernel::KernelOp kernel) {
  SmallVector<Type> types;
  for (Type type : kernel.getArgumentTypes()) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || memref.hasStaticShape()) {
      types.push_back(type);
      continue;
    }
    if (memref.getNumDynamicDims() != 1 || !memref.isDynamicDim(0))
      return kernel.emitOpError()
             << "takes " << type
             << ": only the leading dimension may be the symbolic size";
    SmallVector<int64_t> shape(memref.getShape());
    shape[0] = kSymbolicExtent;
    types.push_back(memref.clone(shape));
  }
  return types;
}

bool mlir::tc::hasSymbolicDomain(kernel::KernelOp kernel) {
  return llvm::any_of(kernel.getDomain(), ShapedType::isDynamic);
}

int64_t mlir::tc::getPointsPerSymbol(kernel::KernelOp kernel) {
  int64_t points = 1;
  for (int64_t size : kernel.getDomain())
    if (!ShapedType::isDynamic(size))
      points *= size;
  return points;
}

Value mlir::tc::buildCombine(OpBuilder &b, Location loc,
                             kernel::CombinerKind kind, Value acc, Value value,
                             bool reassociate) {
  bool isFloat = isa<FloatType>(acc.getType());
  auto fm = arith::FastMathFlagsAttr::get(
      b.getContext(), reassociate ? arith::FastMathFlags::reassoc
                                  : arith::FastMathFlags::none);
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

Value mlir::tc::buildCombinerIdentity(OpBuilder &b, Location loc,
                                      kernel::CombinerKind kind, Type type) {
  return arith::ConstantOp::create(b, loc,
                                   kernel::getCombinerIdentity(b, kind, type));
}

void KernelLoopLowering::delinearize(OpBuilder &b, Location loc,
                                     Value linear, int64_t innerGroup,
                                     ArrayRef<int64_t> order) {
  SmallVector<int64_t> domain(kernel.getDomain());
  point.assign(domain.size(), Value());
  if (domain.empty())
    return;
  assert(domain.back() % innerGroup == 0 && "group must divide the row");
  assert((order.empty() || (order.size() == domain.size() && order[0] == 0 &&
                            (innerGroup == 1 || order.back() ==
                                                    int64_t(domain.size()) - 1)))
         && "the first dimension stays outermost");
  domain.back() /= innerGroup;
  // The first extent is never needed (it may be the symbolic size).
  for (int64_t i = domain.size() - 1; i > 0; --i) {
    int64_t d = order.empty() ? i : order[i];
    Value size = arith::ConstantIndexOp::create(b, loc, domain[d]);
    point[d] = arith::RemUIOp::create(b, loc, linear, size);
    linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  point[0] = linear;
  if (innerGroup > 1)
    point.back() = arith::MulIOp::create(
        b, loc, point.back(),
        arith::ConstantIndexOp::create(b, loc, innerGroup));
}

FailureOr<Value>
KernelLoopLowering::lowerReduce(kernel::ReduceOp reduce, OpBuilder &b, Value lb,
                                Value ub, Value step, Value init,
                                IndexMap indexOf) {
  Location loc = reduce.getLoc();
  kernel::CombinerKind kind = reduce.getKind();
  bool tracksNaN = nanTrackedMinMax && isa<FloatType>(init.getType()) &&
                   (kind == kernel::CombinerKind::Max ||
                    kind == kernel::CombinerKind::Min);
  SmallVector<Value> inits{init};
  if (tracksNaN)
    inits.push_back(arith::ConstantIntOp::create(b, loc, 0, 1));
  auto forOp = scf::ForOp::create(b, loc, lb, ub, step, inits);
  OpBuilder inner = OpBuilder::atBlockEnd(forOp.getBody());
  Value iv = forOp.getInductionVar();
  mapping.map(reduce.getBody().getArgument(0),
              indexOf ? indexOf(inner, loc, iv) : iv);
  Block &body = reduce.getBody().front();
  if (failed(lowerBlock(body, inner)))
    return failure();
  auto yield = cast<kernel::YieldOp>(body.getTerminator());
  Value value = mapping.lookup(yield.getValues()[0]);
  Value acc = forOp.getRegionIterArgs()[0];
  if (!tracksNaN) {
    scf::YieldOp::create(
        inner, loc, buildCombine(inner, loc, kind, acc, value, reassociate));
    return forOp.getResult(0);
  }
  // maxnum/minnum without NaNs (one vmaxps on x86; LLVM's NaN-propagating
  // maximum is six instructions, a row's max ran at half its sum's speed),
  // and whether a NaN was seen beside it: the result is NaN if one was.
  // (A NaN makes the no-NaN combination poison, which the choice at the
  // end does not take. Which of -0 and +0 a tie returns is unspecified,
  // as in eager's vectorized max.)
  auto noNaN = arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::nnan | arith::FastMathFlags::nsz |
                          arith::FastMathFlags::reassoc);
  Value next =
      kind == kernel::CombinerKind::Max
          ? arith::MaxNumFOp::create(inner, loc, acc, value, noNaN).getResult()
          : arith::MinNumFOp::create(inner, loc, acc, value, noNaN)
                .getResult();
  Value isNaN = arith::CmpFOp::create(inner, loc, arith::CmpFPredicate::UNO,
                                      value, value);
  Value seen =
      arith::OrIOp::create(inner, loc, forOp.getRegionIterArgs()[1], isNaN);
  scf::YieldOp::create(inner, loc, ValueRange{next, seen});
  auto type = cast<FloatType>(init.getType());
  Value nan = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(type, APFloat::getNaN(type.getFloatSemantics())));
  return arith::SelectOp::create(b, loc, forOp.getResult(1), nan,
                                 forOp.getResult(0))
      .getResult();
}

LogicalResult KernelLoopLowering::lowerLoop(kernel::LoopOp loop, OpBuilder &b,
                                            Value lb, Value ub, Value step,
                                            IndexMap indexOf) {
  auto forOp = scf::ForOp::create(b, loop.getLoc(), lb, ub, step);
  OpBuilder inner = OpBuilder::atBlockBegin(forOp.getBody());
  inner.setInsertionPoint(forOp.getBody()->getTerminator());
  Value iv = forOp.getInductionVar();
  mapping.map(loop.getBody().getArgument(0),
              indexOf ? indexOf(inner, loop.getLoc(), iv) : iv);
  return lowerBlock(loop.getBody().front(), inner);
}

LogicalResult KernelLoopLowering::lowerBlock(Block &block, OpBuilder &b) {
  return lowerOps(block.without_terminator(), b);
}

LogicalResult
KernelLoopLowering::lowerOps(llvm::iterator_range<Block::iterator> ops,
                             OpBuilder &b) {
  for (Operation &op : ops) {
    Location loc = op.getLoc();
    if (auto index = dyn_cast<kernel::IndexOp>(op)) {
      mapping.map(index.getResult(), point[index.getDim()]);
      continue;
    }
    if (isa<kernel::LoopOp, kernel::ReduceOp>(op)) {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      if (auto loop = dyn_cast<kernel::LoopOp>(op)) {
        if (failed(lowerLoop(loop, b, zero, mapping.lookup(loop.getSize()),
                             one)))
          return failure();
        continue;
      }
      auto reduce = cast<kernel::ReduceOp>(op);
      FailureOr<Value> result =
          lowerReduce(reduce, b, zero, mapping.lookup(reduce.getSize()), one,
                      mapping.lookup(reduce.getInit()));
      if (failed(result))
        return failure();
      mapping.map(reduce.getResult(), *result);
      continue;
    }
    if (op.getDialect() == kernel->getDialect())
      return op.emitOpError() << "has no loop lowering";
    b.clone(op, mapping);
  }
  return success();
}
