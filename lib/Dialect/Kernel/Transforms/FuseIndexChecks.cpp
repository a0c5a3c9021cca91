//===- FuseIndexChecks.cpp - index checks in the kernel reading the indices ===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Moves an out-of-range check of indices (a maximum of a function of every
// index, compared with a bound, stored to a flag) into a kernel that loads
// every index anyway: that kernel sets the flag where an index fails, a
// one-point kernel clears it first, and the check's own pass over the
// indices goes away. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tc::kernel {
#define GEN_PASS_DEF_FUSEINDEXCHECKSPASS
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace mlir::tc::kernel

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::kernel;

namespace {

/// A check kernel: `flag[] = max over the indices of f(index) > bound`.
struct Check {
  KernelOp kernel;
  /// The argument the indices are read from, and the flag's.
  unsigned indexArg = 0, flagArg = 0;
  /// The load of an index in the innermost reduction, and the value that
  /// reduction yields for it.
  memref::LoadOp load;
  Value yielded;
  /// The comparison of the maximum with the bound.
  arith::CmpIOp compare;
};

static bool isConstant(Value v) {
  return v.getDefiningOp() && matchPattern(v, m_Constant());
}

/// Matches `kernel` as a check (see `Check`): a domain of one point; at
/// the top level, constants, one max reduction (possibly nested: each
/// outer level reduces the level inside it), `cmpi sgt` of its result with
/// a constant, a store of that to a 0-d i1 argument, the return. The
/// innermost body computes its value from one load of an argument and
/// constants only (besides the load's indices).
static std::optional<Check> matchCheck(KernelOp kernel) {
  if (!kernel.getDomain().empty())
    return std::nullopt;
  Block &entry = kernel.getBody().front();
  Check check;
  check.kernel = kernel;
  ReduceOp reduce;
  memref::StoreOp store;
  for (Operation &op : entry) {
    if (auto r = dyn_cast<ReduceOp>(op)) {
      if (reduce)
        return std::nullopt;
      reduce = r;
    } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      if (check.compare)
        return std::nullopt;
      check.compare = cmp;
    } else if (auto s = dyn_cast<memref::StoreOp>(op)) {
      if (store)
        return std::nullopt;
      store = s;
    } else if (!isa<ReturnOp>(op) && !matchPattern(&op, m_Constant())) {
      return std::nullopt;
    }
  }
  if (!reduce || !check.compare || !store ||
      check.compare.getPredicate() != arith::CmpIPredicate::sgt ||
      check.compare.getLhs() != reduce.getResult() ||
      !isConstant(check.compare.getRhs()) ||
      store.getValue() != check.compare.getResult() ||
      !store.getIndices().empty())
    return std::nullopt;
  auto flag = dyn_cast<BlockArgument>(store.getMemRef());
  if (!flag || flag.getOwner() != &entry)
    return std::nullopt;
  check.flagArg = flag.getArgNumber();
  // The maximum starts no higher than the bound: alone, it passes.
  APInt init, bound;
  if (!matchPattern(reduce.getInit(), m_ConstantInt(&init)) ||
      !matchPattern(check.compare.getRhs(), m_ConstantInt(&bound)) ||
      init.sgt(bound))
    return std::nullopt;
  // Down the nest of max reductions to the innermost.
  while (true) {
    if (reduce.getKind() != CombinerKind::Max)
      return std::nullopt;
    Block &body = reduce.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    ReduceOp inner;
    for (Operation &op : body.without_terminator())
      if (auto r = dyn_cast<ReduceOp>(op))
        inner = inner ? ReduceOp() : r;
    if (!inner)
      break;
    APInt innerInit;
    if (yield.getValues()[0] != inner.getResult() ||
        !matchPattern(inner.getInit(), m_ConstantInt(&innerInit)) ||
        innerInit.sgt(bound))
      return std::nullopt;
    for (Operation &op : body.without_terminator())
      if (&op != inner.getOperation() && !matchPattern(&op, m_Constant()))
        return std::nullopt;
    reduce = inner;
  }
  Block &body = reduce.getBody().front();
  for (Operation &op : body.without_terminator()) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load)
      continue;
    if (check.load)
      return std::nullopt;
    check.load = load;
  }
  if (!check.load)
    return std::nullopt;
  auto indices = dyn_cast<BlockArgument>(check.load.getMemRef());
  if (!indices || indices.getOwner() != &entry)
    return std::nullopt;
  check.indexArg = indices.getArgNumber();
  check.yielded = cast<YieldOp>(body.getTerminator()).getValues()[0];
  return check;
}

/// The extent of the iteration variable `v` in `kernel`: a domain axis's
/// or a constant-trip loop's or reduction's; nullopt for anything else.
static std::optional<int64_t> iterationExtent(KernelOp kernel, Value v) {
  if (auto index = v.getDefiningOp<IndexOp>())
    return kernel.getDomain()[index.getDim()];
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return std::nullopt;
  Operation *owner = arg.getOwner()->getParentOp();
  Value size;
  if (auto loop = dyn_cast<LoopOp>(owner))
    size = loop.getSize();
  else if (auto reduce = dyn_cast<ReduceOp>(owner))
    size = reduce.getSize();
  else
    return std::nullopt;
  APInt value;
  if (!matchPattern(size, m_ConstantInt(&value)))
    return std::nullopt;
  return value.getSExtValue();
}

/// A load in `kernel` of argument `arg` that reads every element as the
/// kernel runs: its indices are distinct iteration variables whose extents
/// are the buffer's sizes.
static memref::LoadOp findCoveringLoad(KernelOp kernel, unsigned arg) {
  Value buffer = kernel.getBody().front().getArgument(arg);
  auto type = cast<MemRefType>(buffer.getType());
  if (!type.hasStaticShape())
    return {};
  memref::LoadOp found;
  kernel.walk([&](memref::LoadOp load) {
    if (found || load.getMemRef() != buffer)
      return;
    llvm::SmallPtrSet<Value, 4> seen;
    for (auto [v, size] : llvm::zip(load.getIndices(), type.getShape())) {
      std::optional<int64_t> extent = iterationExtent(kernel, v);
      if (!extent || *extent != size || !seen.insert(v).second)
        return;
    }
    found = load;
  });
  return found;
}

/// Clones the check's computation of the yielded value from `check.load`'s
/// result into `b`'s insertion point, with `index` for the loaded value;
/// null when it needs anything but the load and constants.
static Value cloneCheckedValue(OpBuilder &b, Check check,
                               Value index) {
  Block &body = *check.load->getBlock();
  IRMapping mapping;
  mapping.map(check.load.getResult(), index);
  // What depends on the load; what does not (the load's own indices) is
  // not cloned, and nothing cloned may read it.
  llvm::SmallPtrSet<Operation *, 16> fromLoad;
  for (Operation &op : body.without_terminator()) {
    if (&op == check.load.getOperation())
      continue;
    bool usesLoad = false, usesOther = false;
    for (Value operand : op.getOperands()) {
      if (mapping.contains(operand))
        usesLoad = true;
      else if (!isConstant(operand))
        usesOther = true;
    }
    if (!usesLoad)
      continue;
    if (usesOther || !isMemoryEffectFree(&op) || op.getNumRegions() != 0)
      return {};
    for (Value operand : op.getOperands())
      if (!mapping.contains(operand))
        mapping.map(operand, b.clone(*operand.getDefiningOp())->getResult(0));
    b.clone(op, mapping);
  }
  return mapping.lookupOrNull(check.yielded);
}

/// The range [low, size) when the check is tc's own form (tc.backend's
/// `_add_out_of_range_flag`): f(v) = |2 clamp(v, low - 1, size) - (low +
/// size - 1)|, possibly truncated, against the bound size - 1 - low. Then
/// "f(v) > bound" is "v outside [low, size)": one unsigned comparison of
/// v - low with size - low, where f is eight ops (as many as a CPU gather's
/// own scalar loop: fused as it is, the check doubled a CPU gather's time).
static std::optional<std::pair<int64_t, int64_t>> knownRange(Check check) {
  Value v = check.load.getResult();
  auto hasOneUser = [](Value x) { return x.hasOneUse(); };
  APInt a, b, two, c, bound;
  auto lower = dyn_cast<arith::MaxSIOp>(*v.getUsers().begin());
  if (!hasOneUser(v) || !lower || lower.getLhs() != v ||
      !matchPattern(lower.getRhs(), m_ConstantInt(&a)) ||
      !hasOneUser(lower.getResult()))
    return std::nullopt;
  auto upper = dyn_cast<arith::MinSIOp>(*lower->getUsers().begin());
  if (!upper || upper.getLhs() != lower.getResult() ||
      !matchPattern(upper.getRhs(), m_ConstantInt(&b)) ||
      !hasOneUser(upper.getResult()))
    return std::nullopt;
  auto twice = dyn_cast<arith::MulIOp>(*upper->getUsers().begin());
  if (!twice || twice.getLhs() != upper.getResult() ||
      !matchPattern(twice.getRhs(), m_ConstantInt(&two)) || two != 2)
    return std::nullopt;
  // The rest, the centring and |.|, only through the bound's check: the
  // constants must be the form's.
  int64_t low = a.getSExtValue() + 1, size = b.getSExtValue();
  if (!matchPattern(check.compare.getRhs(), m_ConstantInt(&bound)) ||
      bound.getSExtValue() != size - 1 - low || size <= low)
    return std::nullopt;
  bool centred = false;
  for (Operation *user : twice->getUsers())
    if (auto sub = dyn_cast<arith::SubIOp>(user))
      if (sub.getLhs() == twice.getResult() &&
          matchPattern(sub.getRhs(), m_ConstantInt(&c)) &&
          c.getSExtValue() == low + size - 1)
        centred = true;
  if (!centred)
    return std::nullopt;
  return std::make_pair(low, size);
}

/// Whether a library call (GEMM, convolution, attention) lies between
/// launches `a` and `b` of one block, in either order.
static bool libraryCallBetween(Operation *a, Operation *b) {
  if (b->isBeforeInBlock(a))
    std::swap(a, b);
  for (Operation *op = a->getNextNode(); op && op != b; op = op->getNextNode())
    if (isa<GemmOp, ConvOp, AttentionOp>(op))
      return true;
  return false;
}

struct FuseIndexChecksPass
    : public kernel::impl::FuseIndexChecksPassBase<FuseIndexChecksPass> {
  using FuseIndexChecksPassBase::FuseIndexChecksPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Kernels by name, and their launches.
    llvm::DenseMap<StringAttr, SmallVector<LaunchOp>> launches;
    module.walk([&](LaunchOp launch) {
      launches[launch.getKernelAttr().getRootReference()].push_back(launch);
    });
    SmallVector<KernelOp> kernels(module.getOps<KernelOp>());
    for (KernelOp kernel : kernels) {
      std::optional<Check> check = matchCheck(kernel);
      if (!check)
        continue;
      auto &checkLaunches = launches[kernel.getSymNameAttr()];
      if (checkLaunches.size() != 1)
        continue;
      LaunchOp checkLaunch = checkLaunches.front();
      Value indices = checkLaunch.getBuffers()[check->indexArg];
      Value flag = checkLaunch.getBuffers()[check->flagArg];
      // The flag is the schedule's result only: no launch reads it (one
      // between the check and the kernel taking it over would read it
      // before it is computed).
      if (llvm::any_of(flag.getUsers(), [&](Operation *user) {
            return user != checkLaunch.getOperation();
          }))
        continue;
      // A kernel launched once in the same schedule that loads every index.
      LaunchOp host;
      memref::LoadOp load;
      for (Operation &op : *checkLaunch->getBlock()) {
        auto launch = dyn_cast<LaunchOp>(op);
        if (!launch || launch == checkLaunch ||
            launches[launch.getKernelAttr().getRootReference()].size() != 1)
          continue;
        auto other = symbols.lookup<KernelOp>(launch.getKernelAttr().getRootReference());
        if (!other || launch.getRowEpilogue())
          continue;
        for (auto [i, buffer] : llvm::enumerate(launch.getBuffers())) {
          if (buffer != indices)
            continue;
          if ((load = findCoveringLoad(other, i)))
            break;
        }
        if (load) {
          host = launch;
          break;
        }
      }
      if (!host || (earlyFlags && libraryCallBetween(checkLaunch, host)))
        continue;
      auto target = symbols.lookup<KernelOp>(host.getKernelAttr().getRootReference());
      // The flag becomes the host kernel's last argument; after its load of
      // an index: if f(index) > bound, flag[] = true.
      Block &entry = target.getBody().front();
      Value flagArg = entry.addArgument(flag.getType(), kernel.getLoc());
      OpBuilder b(load->getBlock(), std::next(load->getIterator()));
      Location loc = check->compare.getLoc();
      Value bad;
      if (auto range = knownRange(*check)) {
        Type type = load.getResult().getType();
        auto constant = [&](int64_t v) -> Value {
          return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
        };
        Value offset = arith::SubIOp::create(b, loc, load.getResult(),
                                             constant(range->first));
        bad = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, offset,
                                    constant(range->second - range->first));
      } else {
        Value value = cloneCheckedValue(b, *check, load.getResult());
        if (!value) {
          // (Nothing was inserted that is used; clean up and leave it.)
          entry.eraseArgument(entry.getNumArguments() - 1);
          continue;
        }
        Value bound = b.clone(*check->compare.getRhs().getDefiningOp())
                          ->getResult(0);
        bad = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, value,
                                    bound);
      }
      auto ifOp = scf::IfOp::create(b, loc, bad, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
      memref::StoreOp::create(
          b, loc, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)),
          flagArg, ValueRange{});
      target.setFunctionType(FunctionType::get(
          &getContext(), entry.getArgumentTypes(), {}));
      host.getBuffersMutable().append(flag);

      // The check kernel now clears the flag, before the host kernel runs.
      Block &checkEntry = kernel.getBody().front();
      for (Operation &op :
           llvm::make_early_inc_range(llvm::reverse(checkEntry)))
        op.erase();
      llvm::BitVector others(checkEntry.getNumArguments(), true);
      others.reset(check->flagArg);
      checkEntry.eraseArguments(others);
      b.setInsertionPointToStart(&checkEntry);
      memref::StoreOp::create(
          b, loc, arith::ConstantOp::create(b, loc, b.getBoolAttr(false)),
          checkEntry.getArgument(0), ValueRange{});
      ReturnOp::create(b, loc);
      kernel.setFunctionType(FunctionType::get(
          &getContext(), checkEntry.getArgumentTypes(), {}));
      // (Its one launch is replaced below: nothing else names it.)
      kernel.setSymName((kernel.getSymName() + "_clear").str());
      b.setInsertionPoint(host);
      LaunchOp::create(b, checkLaunch.getLoc(), kernel.getSymName(),
                       ValueRange{flag});
      checkLaunch.erase();
    }
  }
};

} // namespace
