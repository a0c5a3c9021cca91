//===- GPUProgram.cpp - what the CUDA and ROCm runtimes share ---*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "GPUProgram.h"
#include "tc/Runtime/Diagnostics.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/InitAll.h"
#include "tc/Target/CPU/Pipeline.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <mutex>

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::gpu_runtime;

void *gpu_runtime::openLibrary(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD))
      return lib;
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return lib;
  return nullptr;
}

LogicalResult GPUProgram::extract(ModuleOp module, StringRef platform) {
  SmallVector<kernel::ScheduleOp> schedules(module.getOps<kernel::ScheduleOp>());
  if (schedules.size() != 1)
    return module.emitError() << "expected one graph, found "
                              << schedules.size();
  kernel::ScheduleOp schedule = schedules.front();
  if (auto bytes = schedule->getAttrOfType<IntegerAttr>("tc.arena_bytes"))
    arenaBytes = bytes.getInt();
  if (auto bytes =
          schedule->getAttrOfType<IntegerAttr>("tc.intermediate_bytes"))
    intermediateBytes = bytes.getInt();

  llvm::DenseMap<Value, int64_t> ids;
  numArguments = schedule.getNumArguments();
  for (BlockArgument arg : schedule.getArguments()) {
    ids[arg] = buffers.size();
    buffers.push_back({static_cast<int64_t>(arg.getArgNumber()), 0});
  }
  llvm::StringSet<> kernels;
  for (Operation &op : schedule.getBody().front()) {
    if (isa<kernel::ArenaOp, kernel::ReturnOp>(op))
      continue;
    if (auto buffer = dyn_cast<kernel::BufferOp>(op)) {
      ids[buffer.getResult()] = buffers.size();
      auto type = cast<MemRefType>(buffer.getType());
      int64_t bytes =
          type.getNumElements() *
          llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      buffers.push_back({-1, static_cast<int64_t>(buffer.getOffset()), bytes});
      continue;
    }
    if (auto launch = dyn_cast<kernel::LaunchOp>(op)) {
      if (!launch.getGrid() || !launch.getBlock())
        return launch.emitOpError() << "was not configured for a GPU";
      Launch step;
      step.kernel = launch.getKernelAttr().getLeafReference().str();
      step.grid = *launch.getGrid();
      step.block = *launch.getBlock();
      for (Value v : launch.getBuffers())
        step.buffers.push_back(ids.lookup(v));
      kernels.insert(step.kernel);
      steps.push_back({std::move(step), std::nullopt, std::nullopt});
      continue;
    }
    if (auto gemm = dyn_cast<kernel::GemmOp>(op)) {
      auto outType = cast<MemRefType>(gemm.getOut().getType());
      auto aType = cast<MemRefType>(gemm.getA().getType());
      Type elt = outType.getElementType();
      if (!elt.isF32() && !elt.isF64())
        return gemm.emitOpError()
               << platform << " GEMM supports f32 and f64, not " << elt;
      int64_t r = outType.getRank() - 2;
      Gemm g;
      g.a = ids.lookup(gemm.getA());
      g.b = ids.lookup(gemm.getB());
      g.out = ids.lookup(gemm.getOut());
      g.bias = gemm.getBias() ? ids.lookup(gemm.getBias()) : -1;
      g.transA = gemm.getTransposeA();
      g.transB = gemm.getTransposeB();
      g.isDouble = elt.isF64();
      g.batch = r ? outType.getDimSize(0) : 1;
      g.m = outType.getDimSize(r);
      g.n = outType.getDimSize(r + 1);
      g.k = g.transA ? aType.getDimSize(r) : aType.getDimSize(r + 1);
      if (g.bias >= 0)
        maxBiasRows = std::max(maxBiasRows, g.m);
      steps.push_back({std::nullopt, g, std::nullopt});
      continue;
    }
    if (auto conv = dyn_cast<kernel::ConvOp>(op)) {
      FailureOr<runtime::ConvCall> call = runtime::ConvCall::get(conv, ids);
      if (failed(call))
        return failure();
      steps.push_back({std::nullopt, std::nullopt, std::move(*call)});
      continue;
    }
    return op.emitOpError() << "is not part of a " << platform
                            << " host program";
  }
  numKernels = kernels.size();

  auto binaryOp = module.lookupSymbol<gpu::BinaryOp>("tc_kernels");
  if (!binaryOp) {
    if (numKernels)
      return module.emitError() << "the kernels were not serialized";
    return success();
  }
  for (auto object : binaryOp.getObjects().getAsRange<gpu::ObjectAttr>()) {
    binaries.push_back(object.getObject().getValue().str());
    format = object.getFormat() == gpu::CompilationTarget::Assembly ? "isa"
                                                                     : "bin";
  }
  return success();
}

SmallVector<void *, 16> GPUProgram::bind(ArrayRef<void *> args) const {
  auto *arena = static_cast<char *>(args.back());
  SmallVector<void *, 16> ptrs;
  for (const BufferRef &ref : buffers)
    ptrs.push_back(ref.argument >= 0 ? args[ref.argument]
                                     : arena + ref.offset);
  return ptrs;
}

/// The arena bytes ([begin, end), in order) that buffers live at `step`
/// occupy: each arena buffer is live from the first step that uses it to
/// the last (tc-plan-memory keeps buffers apart only while they are live).
static SmallVector<std::pair<int64_t, int64_t>>
occupiedAt(const GPUProgram &program, size_t step) {
  SmallVector<int64_t> users;
  auto used = [&](size_t index) {
    users.clear();
    const Step &s = program.steps[index];
    if (s.launch)
      llvm::append_range(users, s.launch->buffers);
    if (s.gemm)
      users.append({s.gemm->a, s.gemm->b, s.gemm->out, s.gemm->bias});
    if (s.conv)
      users.append({s.conv->input, s.conv->weight, s.conv->output});
    return ArrayRef<int64_t>(users);
  };
  llvm::SmallBitVector before(program.buffers.size()),
      after(program.buffers.size());
  for (size_t index = 0; index < program.steps.size(); ++index)
    for (int64_t id : used(index))
      if (id >= 0)
        (index <= step ? before : after).set(id);
  SmallVector<std::pair<int64_t, int64_t>> taken;
  for (auto [id, ref] : llvm::enumerate(program.buffers))
    if (ref.argument < 0 && before.test(id) && after.test(id))
      taken.push_back({ref.offset, ref.offset + ref.bytes});
  // A buffer the step itself uses is live then, even if no other uses it.
  for (int64_t id : used(step))
    if (id >= 0 && program.buffers[id].argument < 0)
      taken.push_back({program.buffers[id].offset,
                       program.buffers[id].offset + program.buffers[id].bytes});
  llvm::sort(taken);
  return taken;
}

constexpr int64_t kScratchAlign = 256;

SmallVector<int64_t> GPUProgram::placeScratch(ArrayRef<int64_t> bytes,
                                              int64_t &arenaEnd) const {
  arenaEnd = arenaBytes;
  SmallVector<int64_t> offsets(steps.size(), 0);
  for (auto [step, size] : llvm::enumerate(bytes)) {
    if (size <= 0)
      continue;
    // The lowest gap that fits; past the last live buffer there is room.
    int64_t offset = 0;
    for (auto [begin, end] : occupiedAt(*this, step)) {
      if (offset + size <= begin)
        break;
      offset = std::max<int64_t>(offset, llvm::alignTo(end, kScratchAlign));
    }
    offsets[step] = offset;
    arenaEnd = std::max(arenaEnd, offset + size);
  }
  return offsets;
}

int64_t GPUProgram::largestFreeSpan(size_t step) const {
  int64_t largest = 0, offset = 0;
  for (auto [begin, end] : occupiedAt(*this, step)) {
    largest = std::max(largest, begin - offset);
    offset = std::max<int64_t>(offset, llvm::alignTo(end, kScratchAlign));
  }
  return std::max(largest, arenaBytes - offset);
}

static std::string printIR(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().enableDebugInfo(false).assumeVerified());
  return text;
}

std::unique_ptr<GPUProgram> GPUProgram::compile(
    StringRef source, StringRef platform,
    const std::function<void(OpPassManager &)> &decompose,
    const std::function<void(OpPassManager &)> &lowerKernels,
    const std::function<void(OpPassManager &)> &lowerToBinary,
    bool keepStageIR, std::string &diagnostics) {
  auto program = std::make_unique<GPUProgram>();
  // Contexts are reused across the GPU compiles of the process: making one
  // and loading its dialects costs as much as the passes of a small graph.
  // Compiles on several threads at once (a training graph's two halves)
  // each take one of their own. (What a compile interns, such as locations
  // and constants, stays; compiles are few.) Never destroyed: LLVM's own
  // static objects may be gone by then.
  static std::mutex poolMutex;
  static std::vector<MLIRContext *> idle;
  MLIRContext *taken = nullptr;
  {
    std::lock_guard<std::mutex> lock(poolMutex);
    if (!idle.empty()) {
      taken = idle.back();
      idle.pop_back();
    }
  }
  if (!taken) {
    // All contexts share one pool of threads, on which the kernels'
    // shards are serialized in parallel (never destroyed either).
    static auto *threads = new llvm::DefaultThreadPool();
    taken = new MLIRContext(MLIRContext::Threading::DISABLED);
    taken->setThreadPool(*threads);
    DialectRegistry registry;
    registerAllDialects(registry);
    taken->appendDialectRegistry(registry);
    taken->loadAllAvailableDialects();
  }
  llvm::scope_exit giveBack([taken] {
    std::lock_guard<std::mutex> lock(poolMutex);
    idle.push_back(taken);
  });
  MLIRContext &context = *taken;

  llvm::raw_string_ostream diag(diagnostics);
  DiagnosticCollector handler(&context, diag);

  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  if (!module)
    return nullptr;

  using Build = std::function<void(OpPassManager &)>;
  const std::pair<const char *, Build> stages[] = {
      {"prim", decompose},
      {"kernel",
       [](OpPassManager &pm) { buildFusePipeline(pm, FuseOptions::gpu()); }},
      {"gpu", lowerKernels},
      {"schedule", lowerToBinary}};
  for (const auto &[name, build] : stages) {
    auto start = std::chrono::steady_clock::now();
    PassManager pm(&context);
    build(pm);
    if (failed(pm.run(*module)))
      return nullptr;
    program->compileSeconds[name] = std::chrono::duration<double>(
                                        std::chrono::steady_clock::now() -
                                        start)
                                        .count();
    if (keepStageIR && StringRef(name) != "schedule")
      program->stageIR[name] = printIR(*module);
  }
  if (failed(program->extract(*module, platform)))
    return nullptr;
  if (keepStageIR) {
    // The host program, without the (binary) kernels.
    if (auto binary = module->lookupSymbol<gpu::BinaryOp>("tc_kernels"))
      binary.erase();
    program->stageIR["schedule"] = printIR(*module);
  }
  return program;
}
