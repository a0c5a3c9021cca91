//===- ScheduleReader.cpp - a graph's host program, op by op ----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "ScheduleReader.h"

#include "tc/Dialect/Kernel/IR/KernelDialect.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::runtime;

LogicalResult ScheduleReader::read(ModuleOp module, StringRef platform) {
  SmallVector<kernel::ScheduleOp> schedules(
      module.getOps<kernel::ScheduleOp>());
  if (schedules.size() != 1)
    return module.emitError() << "expected one graph, found "
                              << schedules.size();
  schedule = schedules.front();
  auto size = [&](StringRef name) -> int64_t {
    auto bytes = schedule->getAttrOfType<IntegerAttr>(name);
    return bytes ? bytes.getInt() : 0;
  };
  arenaBytes = size(kernel::kArenaBytesAttrName);
  intermediateBytes = size(kernel::kIntermediateBytesAttrName);
  arenaBytesPerSymbol = size(kernel::kArenaBytesPerSymbolAttrName);

  llvm::DenseMap<Value, int64_t> ids;
  int64_t next = 0;
  numArguments = schedule.getNumArguments();
  for (BlockArgument arg : schedule.getArguments()) {
    ids[arg] = next++;
    onArgument(arg);
  }
  llvm::StringSet<> kernels;
  for (Operation &op : schedule.getBody().front()) {
    if (isa<kernel::ArenaOp, kernel::ReturnOp, kernel::SymbolOp>(op))
      continue;
    if (auto alias = dyn_cast<kernel::AliasOp>(op)) {
      // The argument's buffer, read in another shape.
      ids[alias.getResult()] = ids.lookup(alias.getSource());
      continue;
    }
    if (auto buffer = dyn_cast<kernel::BufferOp>(op)) {
      ids[buffer.getResult()] = next++;
      onBuffer(buffer);
      continue;
    }
    if (auto launch = dyn_cast<kernel::LaunchOp>(op)) {
      SmallVector<int64_t> buffers;
      for (Value v : launch.getBuffers())
        buffers.push_back(ids.lookup(v));
      kernels.insert(launch.getKernelAttr().getLeafReference());
      if (failed(onLaunch(launch, std::move(buffers))))
        return failure();
      continue;
    }
    if (auto gemm = dyn_cast<kernel::GemmOp>(op)) {
      GemmBuffers g{ids.lookup(gemm.getA()),
                    ids.lookup(gemm.getB()),
                    ids.lookup(gemm.getOut()),
                    gemm.getBias() ? ids.lookup(gemm.getBias()) : -1,
                    gemm.getTransposeA(),
                    gemm.getTransposeB(),
                    gemm.getLibrarySizes(),
                    cast<MemRefType>(gemm.getOut().getType())
                        .getElementType()};
      if (failed(onGemm(gemm, g)))
        return failure();
      continue;
    }
    if (auto conv = dyn_cast<kernel::ConvOp>(op)) {
      FailureOr<ConvCall> call = ConvCall::get(conv, ids);
      if (failed(call) || failed(onConv(conv, std::move(*call))))
        return failure();
      continue;
    }
    if (auto attention = dyn_cast<kernel::AttentionOp>(op)) {
      SmallVector<int64_t> buffers = {
          ids.lookup(attention.getQuery()), ids.lookup(attention.getKey()),
          ids.lookup(attention.getValue()), ids.lookup(attention.getOut()),
          attention.getBias() ? ids.lookup(attention.getBias()) : -1};
      if (failed(onAttention(attention, buffers)))
        return failure();
      continue;
    }
    return op.emitOpError() << "is not part of a " << platform
                            << " host program";
  }
  numKernels = kernels.size();
  return success();
}
