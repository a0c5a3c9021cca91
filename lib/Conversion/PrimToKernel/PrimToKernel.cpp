//===- PrimToKernel.cpp - fuse prim ops into kernels ------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Fusion, the way Inductor does it: decide which values are realized in
// buffers, then generate, for each realized value, one kernel that computes
// it point by point, recursively inlining the scalar computation of every
// value that is not realized. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"
#include "tc/Conversion/Passes.h"
#include "tc/Dialect/Kernel/Utils/Checks.h"

namespace mlir::tc {
#define GEN_PASS_DEF_CONVERTPRIMTOKERNELPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::fuse;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertPrimToKernelPass
    : public mlir::tc::impl::ConvertPrimToKernelPassBase<ConvertPrimToKernelPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp func : funcs)
      if (failed(convert(func)))
        return signalPassFailure();
    // Tests only: every float a kernel stores gets 1 added.
    if (miscompileForTesting)
      for (auto kernel : getOperation().getOps<kernel::KernelOp>())
        kernel::plantWrongStores(kernel.getBody());
  }

  LogicalResult convert(func::FuncOp func);
};

/// A short kernel name from the ops it computes, like Inductor's
/// `fused_add_mul_tanh_0`.
static std::string kernelName(const FusionPlan &plan, StringRef graph,
                              Value value, unsigned id) {
  llvm::SetVector<StringRef> names;
  SmallVector<Value> worklist = {value};
  llvm::SmallDenseSet<Value> seen;
  while (!worklist.empty() && names.size() < 4) {
    Value v = worklist.pop_back_val();
    Operation *op = v.getDefiningOp();
    if (!op || !seen.insert(v).second || isa<prim::ConstantOp>(op) ||
        (v != value && plan.isRealized(v)))
      continue;
    if (!isa<prim::BroadcastInDimOp, prim::ReshapeOp, prim::PermuteOp>(op))
      names.insert(op->getName().stripDialect());
    llvm::append_range(worklist, op->getOperands());
  }
  std::string name = (graph + "_fused").str();
  for (StringRef n : llvm::reverse(names))
    name += ("_" + n).str();
  if (names.empty())
    name = (graph + "_copy").str();
  return name + "_" + std::to_string(id);
}

LogicalResult ConvertPrimToKernelPass::convert(func::FuncOp func) {
  // A function of another level (the loop nests the CPU lowering makes of
  // kernels take memrefs and indices) is not tc-fuse's: it is left alone,
  // as a module fed to the pipeline again at a later stage leaves it.
  auto isTensor = [](Type type) { return isa<RankedTensorType>(type); };
  if (!llvm::all_of(func.getArgumentTypes(), isTensor) ||
      !llvm::all_of(func.getResultTypes(), isTensor))
    return success();
  if (func.getBody().getBlocks().size() != 1)
    return func.emitOpError() << "tc-fuse expects a single-block function";
  // The fusion plan knows prim ops alone.
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op) || isa<prim::PrimDialect>(op.getDialect()))
      continue;
    return op.emitOpError()
           << "is not a prim op: tc-fuse fuses functions of prim ops "
              "(run tc-decompose first)";
  }
  FusionPlan plan(func, weightsChannelsFirst, unitWeightsChannelsFirst,
                  realizeBroadcastSources, fuseNothing, aliasInputReshapes);
  if (failed(plan.build()))
    return failure();

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  OpBuilder b(func);
  Location loc = func.getLoc();

  // Results stored into arguments (kWrittenAttrName): per result, the
  // argument, or -1 for a result returned as such.
  SmallVector<int64_t> writtenInto(ret.getNumOperands(), -1);
  for (BlockArgument arg : func.getArguments()) {
    auto k = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                kWrittenAttrName);
    if (!k)
      continue;
    int64_t result = k.getInt();
    if (result < 0 || result >= static_cast<int64_t>(writtenInto.size()) ||
        writtenInto[result] != -1)
      return func.emitOpError()
             << "argument #" << arg.getArgNumber() << " is " << kWrittenAttrName
             << " by result " << result
             << ", which is out of range or written twice";
    if (ret.getOperand(result).getType() != arg.getType())
      return func.emitOpError()
             << "result " << result << " of type "
             << ret.getOperand(result).getType()
             << " cannot be written into argument #" << arg.getArgNumber()
             << " of type " << arg.getType();
    writtenInto[result] = arg.getArgNumber();
  }

  // The schedule takes the inputs, then one buffer per returned output.
  SmallVector<Type> argTypes;
  for (Value arg : func.getArguments())
    argTypes.push_back(bufferType(arg));
  for (auto [i, result] : llvm::enumerate(ret.getOperands()))
    if (writtenInto[i] < 0)
      argTypes.push_back(bufferType(result));
  auto schedule = kernel::ScheduleOp::create(
      b, loc, func.getSymName(), b.getFunctionType(argTypes, {}),
      /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
  Block *entry = schedule.addEntryBlock();
  llvm::DenseMap<Value, Value> buffers;
  for (auto [arg, buffer] : llvm::zip(func.getArguments(),
                                      entry->getArguments()))
    buffers[arg] = buffer;
  // An output realized as such writes straight into its buffer; an output
  // that is an input, or returned twice, is copied.
  SmallVector<std::pair<Value, Value>> copies;
  unsigned outputs = 0;
  for (auto [i, result] : llvm::enumerate(ret.getOperands())) {
    if (writtenInto[i] >= 0)
      continue;
    Value buffer = entry->getArgument(func.getNumArguments() + outputs++);
    if (buffers.count(result))
      copies.push_back({result, buffer});
    else
      buffers[result] = buffer;
  }
  // A result written into an argument: a scatter over that argument, its
  // only reader, stores its updates there in place; any other is copied
  // there after every kernel (each read of the argument's old value).
  for (auto [i, result] : llvm::enumerate(ret.getOperands())) {
    if (writtenInto[i] < 0)
      continue;
    BlockArgument arg = func.getArgument(writtenInto[i]);
    Value buffer = entry->getArgument(writtenInto[i]);
    if (result == arg)
      continue;
    auto scatter = result.getDefiningOp<prim::ScatterOp>();
    if (scatter && scatter.getOperand() == arg && arg.hasOneUse() &&
        !buffers.count(result)) {
      buffers[result] = buffer;
      continue;
    }
    copies.push_back({result, buffer});
  }

  // A computed value the graph returns reshaped is computed in that
  // output's buffer, viewed in its own shape (a reshape of contiguous
  // elements is an alias): writing it apart, then copying it into the
  // output, cost a pass over it (a GEMM's [B * S, H] rows returned as
  // [B, S, H]; a training backward's input gradient).
  llvm::DenseMap<Value, Value> computedInOutput;
  for (Value result : ret.getOperands()) {
    auto reshape = result.getDefiningOp<prim::ReshapeOp>();
    if (!reshape)
      continue;
    Value source = reshape.getOperand();
    auto buffer = dyn_cast<BlockArgument>(buffers.lookup(result));
    if (!buffer || buffer.getArgNumber() < func.getNumArguments() ||
        isa<BlockArgument>(source) || buffers.count(source) ||
        !plan.isRealized(source) || !tensorType(source).hasStaticShape() ||
        !tensorType(result).hasStaticShape())
      continue;
    computedInOutput.try_emplace(source, result);
  }

  OpBuilder sb = OpBuilder::atBlockEnd(entry);
  unsigned kernels = 0;
  Value symbol;
  auto bufferFor = [&](Value v) -> Value {
    auto it = buffers.find(v);
    if (it != buffers.end())
      return it->second;
    MemRefType type = bufferType(v);
    SmallVector<Value> sizes;
    if (type.getNumDynamicDims()) {
      // The graph's symbolic size, read once at the schedule's start.
      if (!symbol) {
        OpBuilder top = OpBuilder::atBlockBegin(entry);
        symbol = kernel::SymbolOp::create(top, func.getLoc(),
                                          sb.getIndexType());
      }
      sizes.assign(type.getNumDynamicDims(), symbol);
    }
    Value alloc = memref::AllocOp::create(sb, v.getLoc(), type, sizes);
    buffers[v] = alloc;
    return alloc;
  };
  using Mode = KernelBuilder::Mode;
  bool declined = false;
  auto launch = [&](Value value, Value out, Mode mode = Mode::Compute,
                    ArrayRef<Value> rowStatistics = {},
                    ArrayRef<Value> siblingValues = {},
                    ArrayRef<Value> pointValues = {}) -> LogicalResult {
    SmallVector<Value> inputs;
    KernelBuilder builder(plan, value.getLoc(), cacheRows,
                          splitConcatenations, loopPastUnitDims);
    std::string name =
        mode == Mode::Copy
            ? (func.getSymName() + "_copy_" + Twine(kernels++)).str()
            : kernelName(plan, func.getSymName(), value, kernels++);
    FailureOr<kernel::KernelOp> kernel =
        builder.build(value, name, schedule, inputs, mode, rowStatistics,
                      siblingValues, pointValues);
    if (failed(kernel))
      return failure();
    if (!*kernel) {
      // Its row statistics are computed elsewhere than at its rows, or a
      // point value not at its points.
      declined = true;
      return success();
    }
    SmallVector<Value> args;
    for (Value in : inputs)
      args.push_back(buffers.lookup(in));
    for (Value stat : rowStatistics)
      args.push_back(buffers.lookup(stat));
    for (Value sibling : siblingValues)
      args.push_back(buffers.lookup(sibling));
    for (Value point : pointValues)
      args.push_back(buffers.lookup(point));
    args.push_back(out);
    auto launchOp = kernel::LaunchOp::create(sb, value.getLoc(),
                                             kernel->getSymName(), args);
    // A kernel that reads a GEMM's fresh output only at its own rows, and
    // is that output's only reader, can run as the GEMM's row epilogue.
    auto gemm = dyn_cast_if_present<kernel::GemmOp>(launchOp->getPrevNode());
    if (gemm && kernel->getDomain().size() == 1) {
      Value product;
      for (Value in : inputs)
        if (buffers.lookup(in) == gemm.getOut())
          product = in;
      if (product && !isa<BlockArgument>(gemm.getOut()) &&
          !gemm.getOut().getDefiningOp<kernel::AliasOp>() &&
          tensorType(product).getRank() == 2 &&
          kernel->getDomain()[0] == tensorType(product).getDimSize(0) &&
          builder.readsOnlyOwnRow(product) &&
          plan.rootsOf(product).size() == 1)
        launchOp.setRowEpilogue(true);
    }
    return success();
  };

  // Realized values in program order, so each is written before it is read.
  SmallVector<Value> order;
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      if (plan.isRealized(result))
        order.push_back(result);
  llvm::DenseSet<Value> copied;
  for (auto [value, out] : copies)
    copied.insert(value);
  llvm::DenseSet<Value> returned(llvm::from_range, ret.getOperands());
  RowStatistics rowStats = rowStatistics(plan, order, copied, returned);
  Siblings sibs = siblings(plan, order, rowStats, returned, computedInOutput);
  // (With fuse-nothing, one kernel per op: none computes another's value.)
  PointValues points;
  if (!fuseNothing)
    points = pointValues(plan, order, rowStats, sibs, copied, returned,
                         computedInOutput);
  for (Value v : order) {
    // A row statistic is written by the kernel of the row it belongs to, a
    // sibling by its host's, a point value by its first reader's.
    if (rowStats.readers.count(v) || sibs.hosts.count(v) ||
        points.hosts.count(v))
      continue;
    if (Value result = computedInOutput.lookup(v)) {
      buffers[v] = kernel::AliasOp::create(sb, v.getLoc(), bufferType(v),
                                           buffers.lookup(result));
    } else if (auto reshape = v.getDefiningOp<prim::ReshapeOp>()) {
      // The output it reshapes was computed in its buffer.
      if (computedInOutput.lookup(reshape.getOperand()) == v)
        continue;
    }
    // A reshape of a value whose buffer is a schedule argument (a graph
    // input, never written by the schedule, or an output, written once by
    // its producer before this point) is that buffer's elements in another
    // shape: an alias, not a copy. (A reshape that is itself an output has
    // its own buffer already.)
    if (aliasInputReshapes && !buffers.count(v))
      if (auto reshape = v.getDefiningOp<prim::ReshapeOp>()) {
        Value source = buffers.lookup(reshape.getOperand());
        auto argument = dyn_cast_or_null<BlockArgument>(source);
        MemRefType type = bufferType(v);
        if (argument && argument.getOwner() == entry &&
            type.hasStaticShape() &&
            cast<MemRefType>(source.getType()).hasStaticShape()) {
          buffers[v] = kernel::AliasOp::create(sb, v.getLoc(), type, source);
          continue;
        }
      }
    // A splat constant that must be realized (a graph output) is a fill
    // kernel; other constants would need their data in the program.
    if (auto cst = v.getDefiningOp<prim::ConstantOp>())
      if (!isa<SplatElementsAttr>(cst.getValue()))
        return cst.emitOpError() << "non-splat constants are not supported yet";
    Value out = bufferFor(v);
    // An empty tensor has nothing to compute (and a kernel over an empty
    // domain is not one the CPU's calling convention takes).
    if (hintNumElements(tensorType(v)) == 0)
      continue;
    if (const Gemm *gemm = plan.gemmFor(v)) {
      auto op = kernel::GemmOp::create(
          sb, gemm->result.getLoc(), buffers.lookup(gemm->lhs.buffer),
          buffers.lookup(gemm->rhs.buffer), out,
          gemm->bias ? buffers.lookup(gemm->bias) : Value(),
          gemm->lhs.transposed, gemm->rhs.transposed);
      (void)op;
      continue;
    }
    if (const Conv *conv = plan.convFor(v)) {
      // The three buffers in the forward's roles, the written one `out`.
      Value input = buffers.lookup(conv->grad),
            weight = buffers.lookup(conv->other), output = out;
      if (conv->kind == kernel::ConvKind::BackwardInput) {
        input = out;
        weight = buffers.lookup(conv->other);
        output = buffers.lookup(conv->grad);
      } else if (conv->kind == kernel::ConvKind::BackwardWeight) {
        input = buffers.lookup(conv->other);
        weight = out;
        output = buffers.lookup(conv->grad);
      }
      kernel::ConvOp::create(
          sb, conv->loc,
          kernel::ConvKindAttr::get(sb.getContext(), conv->kind), input,
          weight, output, conv->stride, conv->padding, conv->dilation,
          conv->groups, conv->channelsLast,
          conv->weightChannelsFirst ? sb.getUnitAttr() : UnitAttr());
      continue;
    }
    if (prim::AttentionOp attention = plan.attentionFor(v)) {
      // Each of query, key, value and the result: its buffer, or the
      // buffer it views (`v` is the result or the value viewing it).
      Value operands[4];
      DenseI64ArrayAttr views[4];
      for (unsigned i = 0; i < 4; ++i) {
        Value operand =
            i < 3 ? attention->getOperand(i) : attention.getResult();
        const fuse::AttentionView *view = plan.attentionViewOf(operand);
        if (!view) {
          operands[i] = i < 3 ? buffers.lookup(operand) : out;
          continue;
        }
        operands[i] = i < 3 ? buffers.lookup(view->base) : out;
        SmallVector<int64_t, 9> values = {view->offset};
        llvm::append_range(values, view->sizes);
        llvm::append_range(values, view->strides);
        views[i] = sb.getDenseI64ArrayAttr(values);
      }
      kernel::AttentionOp::create(
          sb, attention.getLoc(), operands[0], operands[1], operands[2],
          operands[3],
          attention.getBias() ? buffers.lookup(attention.getBias())
                              : Value(),
          attention.getScaleAttr(), attention.getCausalAttr(), views[0],
          views[1], views[2], views[3]);
      continue;
    }
    if (auto scatter = v.getDefiningOp<prim::ScatterOp>()) {
      // The operand, unless the scatter is written in its buffer, then the
      // updates over it.
      Value operand = scatter.getOperand();
      if ((buffers.lookup(operand) != out &&
           failed(launch(operand, out, Mode::Compute))) ||
          failed(launch(v, out, Mode::Scatter)))
        return failure();
      continue;
    }
    if (v.getDefiningOp<prim::ScatterAddOp>()) {
      if (failed(launch(v, out, Mode::Zeros)) ||
          failed(launch(v, out, Mode::ScatterAdd)))
        return failure();
      continue;
    }
    SmallVector<Value> statValues = rowStats.of.lookup(v);
    SmallVector<Value> siblingValues = sibs.of.lookup(v);
    SmallVector<Value> pointValues = points.of.lookup(v);
    for (Value other : llvm::concat<const Value>(statValues, siblingValues,
                                                 pointValues))
      (void)bufferFor(other);
    declined = false;
    if (failed(launch(v, out, Mode::Compute, statValues, siblingValues,
                      pointValues)))
      return failure();
    // Computed elsewhere than at the kernel's points: each point value
    // gets its kernel (every other reader of theirs runs later), then the
    // row's; computed elsewhere than at its rows: likewise each statistic.
    if (declined && !pointValues.empty()) {
      for (Value point : pointValues)
        if (failed(launch(point, buffers.lookup(point))))
          return failure();
      declined = false;
      if (failed(launch(v, out, Mode::Compute, statValues, siblingValues)))
        return failure();
    }
    if (declined) {
      for (Value stat : statValues)
        if (failed(launch(stat, buffers.lookup(stat))))
          return failure();
      if (failed(launch(v, out, Mode::Compute, {}, siblingValues)))
        return failure();
    }
  }
  // A computed output returned again is copied from its first buffer.
  for (auto [value, out] : copies)
    if (hintNumElements(tensorType(value)) != 0 &&
        failed(launch(value, out,
                      isa<BlockArgument>(value) ? Mode::Compute : Mode::Copy)))
      return failure();
  kernel::ReturnOp::create(sb, loc);
  func.erase();
  return success();
}

} // namespace
