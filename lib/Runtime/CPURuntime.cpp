//===- CPURuntime.cpp - compile and run a graph on the CPU ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Runtime/CPURuntime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/InitAll.h"
#include "tc/Runtime/Diagnostics.h"
#include "tc/Runtime/HostProgram.h"
#include "tc/Target/CPU/Pipeline.h"
#include "Convolution.h"
#include "DiskCache.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <dlfcn.h>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <vector>

using namespace mlir;
using namespace mlir::tc;
namespace host = ::tc::host;

struct CPUExecutable::Impl {
  MLIRContext context;
  std::unique_ptr<ExecutionEngine> engine;
  /// Holds the native code when it came from the disk cache.
  std::unique_ptr<llvm::orc::LLJIT> cachedJit;
  bool fromCache = false;
  host::HostProgram program;
  std::map<std::string, std::string> stageIR;

  LogicalResult extractSchedule(ModuleOp module);
};

// Bump whenever the plan format or the generated code changes: cached
// objects of an older tc must not be loaded.
static constexpr const char *kCacheVersion = "tc-cpu-cache-3";

/// The vector width kernels are compiled for ("" for LLVM's default).
static std::string preferredVectorWidth() {
  if (const char *env = std::getenv("TC_VECTOR_WIDTH"))
    return env;
  return llvm::sys::getHostCPUFeatures().lookup("avx512f") ? "512" : "";
}

/// The cache key: what the native code depends on.
static std::string cacheKey(StringRef source, StringRef options) {
  llvm::SHA256 hash;
  hash.update(kCacheVersion);
  hash.update(runtime::buildIdentity());
  hash.update(source);
  hash.update(options);
  hash.update(llvm::sys::getProcessTriple());
  hash.update(llvm::sys::getHostCPUName());
  hash.update(preferredVectorWidth());
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    if (feature.second)
      hash.update(feature.first());
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

/// Loads a cached graph; nullptr when it is not there or unusable.
static std::unique_ptr<CPUExecutable::Impl>
loadFromCache(StringRef planPath, StringRef objectPath) {
  auto plan = llvm::MemoryBuffer::getFile(planPath);
  auto object = llvm::MemoryBuffer::getFile(objectPath);
  if (!plan || !object)
    return nullptr;
  auto impl = std::make_unique<CPUExecutable::Impl>();
  if (!impl->program.parse((*plan)->getBuffer().str(), kCacheVersion))
    return nullptr;
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) {
    llvm::consumeError(jit.takeError());
    return nullptr;
  }
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!generator) {
    llvm::consumeError(generator.takeError());
    return nullptr;
  }
  (*jit)->getMainJITDylib().addGenerator(std::move(*generator));
  if (llvm::Error err = (*jit)->addObjectFile(std::move(*object))) {
    llvm::consumeError(std::move(err));
    return nullptr;
  }
  for (host::Launch *launch : impl->program.launches()) {
    auto symbol = (*jit)->lookup("_mlir_" + launch->kernel);
    if (!symbol) {
      llvm::consumeError(symbol.takeError());
      return nullptr;
    }
    launch->fn = symbol->toPtr<host::KernelFn>();
  }
  impl->cachedJit = std::move(*jit);
  impl->fromCache = true;
  return impl;
}

LogicalResult CPUExecutable::Impl::extractSchedule(ModuleOp module) {
  host::HostProgram &p = program;
  SmallVector<kernel::ScheduleOp> schedules(module.getOps<kernel::ScheduleOp>());
  if (schedules.size() != 1)
    return module.emitError() << "expected one graph, found "
                              << schedules.size();
  kernel::ScheduleOp schedule = schedules.front();
  if (auto bytes = schedule->getAttrOfType<IntegerAttr>("tc.arena_bytes"))
    p.arenaBytes = bytes.getInt();
  if (auto bytes =
          schedule->getAttrOfType<IntegerAttr>("tc.intermediate_bytes"))
    p.intermediateBytes = bytes.getInt();

  llvm::DenseMap<Value, int64_t> ids;
  p.numArguments = schedule.getNumArguments();
  for (BlockArgument arg : schedule.getArguments()) {
    ids[arg] = p.buffers.size();
    p.buffers.push_back({static_cast<int64_t>(arg.getArgNumber()), 0});
  }
  llvm::StringSet<> kernels;
  for (Operation &op : schedule.getBody().front()) {
    if (isa<kernel::ArenaOp, kernel::ReturnOp>(op))
      continue;
    if (auto buffer = dyn_cast<kernel::BufferOp>(op)) {
      ids[buffer.getResult()] = p.buffers.size();
      p.buffers.push_back({-1, static_cast<int64_t>(buffer.getOffset())});
      continue;
    }
    if (auto launch = dyn_cast<kernel::LaunchOp>(op)) {
      auto func = module.lookupSymbol<func::FuncOp>(launch.getKernelAttr().getLeafReference());
      if (!func)
        return launch.emitOpError() << "kernel was not lowered for the CPU";
      host::Launch step;
      step.kernel = launch.getKernelAttr().getLeafReference().str();
      if (auto domain = func->getAttrOfType<DenseI64ArrayAttr>("tc.domain"))
        for (int64_t size : domain.asArrayRef())
          step.rows *= size;
      if (auto points = func->getAttrOfType<IntegerAttr>("tc.points"))
        step.points = points.getInt();
      for (Value v : launch.getBuffers())
        step.buffers.push_back(ids.lookup(v));
      kernels.insert(step.kernel);
      // The verifier guarantees a row epilogue follows its GEMM.
      if (launch.getRowEpilogue() && !p.steps.empty() && p.steps.back().gemm &&
          p.steps.back().gemm->batch == 1 &&
          p.steps.back().gemm->m == step.rows) {
        p.steps.back().gemm->epilogue = std::move(step);
        continue;
      }
      p.steps.push_back({std::move(step), std::nullopt, {}});
      continue;
    }
    if (auto gemm = dyn_cast<kernel::GemmOp>(op)) {
      auto outType = cast<MemRefType>(gemm.getOut().getType());
      auto aType = cast<MemRefType>(gemm.getA().getType());
      Type elt = outType.getElementType();
      if (!elt.isF32() && !elt.isF64())
        return gemm.emitOpError()
               << "CPU GEMM supports f32 and f64, not " << elt;
      int64_t r = outType.getRank() - 2;
      host::Gemm g;
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
      p.steps.push_back({std::nullopt, g, {}});
      continue;
    }
    if (auto conv = dyn_cast<kernel::ConvOp>(op)) {
      FailureOr<runtime::ConvCall> call = runtime::ConvCall::get(conv, ids);
      if (failed(call))
        return failure();
      if (call->element != runtime::ConvElement::F32 &&
          call->element != runtime::ConvElement::F64)
        return conv.emitOpError()
               << "the CPU's reference convolution takes f32 and f64";
      host::Step step;
      step.custom = [call = std::move(*call)](
                        const std::vector<void *> &ptrs,
                        const host::ParallelFor &parallelFor) {
        runtime::runReferenceConv(call, ptrs, parallelFor);
      };
      p.steps.push_back(std::move(step));
      continue;
    }
    return op.emitOpError() << "is not part of a CPU host program";
  }
  p.numKernels = kernels.size();
  schedule.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

CPUExecutable::CPUExecutable(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CPUExecutable::~CPUExecutable() = default;

static std::string printIR(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().enableDebugInfo(false));
  return text;
}

/// LLVM's native target, once per process.
static void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Runs the CPU pipeline on `source`: fills `impl`'s host program (and its
/// stage IR when `keepStageIR`) and returns the kernels in the LLVM
/// dialect; null on failure. The caller collects `impl.context`'s
/// diagnostics (for as long as the module lives: LLVM translation emits
/// some too).
static OwningOpRef<ModuleOp> lowerToLLVM(CPUExecutable::Impl &impl,
                                         StringRef source,
                                         const DecomposeOptions &decompose,
                                         bool keepStageIR) {
  MLIRContext &context = impl.context;
  // The compile runs on the caller's thread: keep it lean (the pass
  // manager would otherwise start a thread pool per context).
  context.disableMultithreading();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  if (!module)
    return {};

  struct Stage {
    const char *name;
    std::function<void(OpPassManager &)> build;
  };
  const Stage stages[] = {{"prim",
                           [&](OpPassManager &pm) {
                             buildDecomposePipeline(pm, decompose);
                           }},
                          {"kernel",
                           [](OpPassManager &pm) { buildFusePipeline(pm); }},
                          {"loops", buildCPULoopsPipeline}};
  for (const Stage &stage : stages) {
    PassManager pm(&context);
    stage.build(pm);
    if (failed(pm.run(*module)))
      return {};
    if (keepStageIR)
      impl.stageIR[stage.name] = printIR(*module);
  }
  // The host program is interpreted by the runtime, the kernels are JITed.
  if (failed(impl.extractSchedule(*module)))
    return {};
  {
    PassManager pm(&context);
    buildCPULLVMPipeline(pm);
    if (failed(pm.run(*module)))
      return {};
    if (keepStageIR)
      impl.stageIR["llvm"] = printIR(*module);
  }

  // Kernels are throughput code: use the widest vectors the host has
  // (LLVM prefers 256 bits on AVX-512 hosts by default, for clock-speed
  // reasons that matter less than width in a fused loop).
  // TC_VECTOR_WIDTH (bits) overrides the choice.
  std::string width = preferredVectorWidth();
  if (!width.empty())
    module->walk([&](LLVM::LLVMFuncOp func) {
      if (!func.isExternal())
        func.setPreferVectorWidth(width);
    });

  return module;
}

std::unique_ptr<CPUExecutable>
CPUExecutable::compile(StringRef source, StringRef pipelineOptions,
                       bool keepStageIR, std::string &diagnostics,
                       StringRef cacheDir) {
  auto decompose = DecomposeOptions::createFromString(pipelineOptions);
  if (!decompose) {
    diagnostics += "error: invalid CPU pipeline options '" +
                   pipelineOptions.str() + "'\n";
    return nullptr;
  }
  initializeNativeTarget();

  SmallString<256> planPath, objectPath;
  if (!cacheDir.empty()) {
    std::string key = cacheKey(source, pipelineOptions);
    planPath = cacheDir;
    llvm::sys::path::append(planPath, key + ".plan");
    objectPath = cacheDir;
    llvm::sys::path::append(objectPath, key + ".o");
    // Stage IR is only produced by a real compile.
    if (!keepStageIR)
      if (auto impl = loadFromCache(planPath, objectPath))
        return std::unique_ptr<CPUExecutable>(
            new CPUExecutable(std::move(impl)));
  }

  // Lets tests check that a crashing compiler does not take the process
  // down (see the C API's crash recovery).
  if (std::getenv("TC_INJECT_COMPILER_CRASH"))
    std::abort();

  auto impl = std::make_unique<Impl>();
  llvm::raw_string_ostream diag(diagnostics);
  DiagnosticCollector handler(&impl->context, diag);
  OwningOpRef<ModuleOp> module =
      lowerToLLVM(*impl, source, *decompose, keepStageIR);
  if (!module)
    return nullptr;

  // A graph of library calls only (GEMMs) has no code to generate, and
  // nothing worth caching: the JIT would emit no object to dump. The plan
  // format has no convolutions (a test path on the CPU): not cached either.
  bool cacheable = !cacheDir.empty() && impl->program.serializable();
  if (impl->program.launches().empty())
    return std::unique_ptr<CPUExecutable>(new CPUExecutable(std::move(impl)));

  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder) {
    diag << "error: " << llvm::toString(tmBuilder.takeError()) << "\n";
    return nullptr;
  }
  auto tm = tmBuilder->createTargetMachine();
  if (!tm) {
    diag << "error: " << llvm::toString(tm.takeError()) << "\n";
    return nullptr;
  }
  // ExecutionEngineOptions::transformer is a function_ref: the function
  // it refers to must outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(3, 0, tm->get());
  ExecutionEngineOptions options;
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableObjectDump = cacheable;
  auto engine = ExecutionEngine::create(*module, options);
  if (!engine) {
    diag << "error: " << llvm::toString(engine.takeError()) << "\n";
    return nullptr;
  }
  impl->engine = std::move(*engine);
  for (host::Launch *launch : impl->program.launches()) {
    auto fn = impl->engine->lookupPacked(launch->kernel);
    if (!fn) {
      diag << "error: " << llvm::toString(fn.takeError()) << "\n";
      return nullptr;
    }
    launch->fn = *fn;
  }
  if (cacheable) {
    // Best effort: a cache that cannot be written is no error. The plan is
    // written last, through a rename, so a reader never sees half of it.
    if (!llvm::sys::fs::create_directories(cacheDir)) {
      impl->engine->dumpToObjectFile(objectPath);
      SmallString<256> tmp(planPath);
      tmp += ".tmp";
      std::error_code ec;
      {
        llvm::raw_fd_ostream os(tmp, ec);
        if (!ec)
          os << impl->program.serialize(kCacheVersion);
      }
      if (!ec)
        (void)llvm::sys::fs::rename(tmp, planPath);
    }
  }
  return std::unique_ptr<CPUExecutable>(new CPUExecutable(std::move(impl)));
}

//===----------------------------------------------------------------------===//
// Ahead-of-time export
//===----------------------------------------------------------------------===//

/// Adds `void _mlir_<name>(void **args)` for each kernel, the entry the host
/// program calls: args[i] points at the kernel's i-th argument (what MLIR's
/// ExecutionEngine generates for the JIT).
static void addPackedEntries(llvm::Module &module,
                             const std::vector<host::Launch *> &launches) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptrTy = llvm::PointerType::getUnqual(ctx);
  auto *entryTy =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy}, false);
  llvm::StringSet<> done;
  for (const host::Launch *launch : launches) {
    llvm::Function *kernel = module.getFunction(launch->kernel);
    if (!kernel || kernel->isDeclaration() ||
        !done.insert(launch->kernel).second)
      continue;
    auto *entry = llvm::Function::Create(entryTy,
                                         llvm::GlobalValue::ExternalLinkage,
                                         "_mlir_" + launch->kernel, module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
    SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : kernel->args()) {
      llvm::Value *slot =
          b.CreateConstGEP1_64(ptrTy, entry->getArg(0), arg.getArgNo());
      args.push_back(b.CreateLoad(arg.getType(), b.CreateLoad(ptrTy, slot)));
    }
    llvm::Value *result = b.CreateCall(kernel, args);
    if (!result->getType()->isVoidTy()) {
      llvm::Value *slot =
          b.CreateConstGEP1_64(ptrTy, entry->getArg(0), kernel->arg_size());
      b.CreateStore(result, b.CreateLoad(ptrTy, slot));
    }
    b.CreateRetVoid();
  }
}

/// The kernels of `module` (LLVM dialect) as a position-independent object
/// for this host's CPU, optimized as the JIT does.
static LogicalResult emitObject(ModuleOp module,
                                const std::vector<host::Launch *> &launches,
                                SmallVectorImpl<char> &object,
                                llvm::raw_ostream &diag) {
  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder) {
    diag << "error: " << llvm::toString(tmBuilder.takeError()) << "\n";
    return failure();
  }
  tmBuilder->setRelocationModel(llvm::Reloc::PIC_);
  tmBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = tmBuilder->createTargetMachine();
  if (!tm) {
    diag << "error: " << llvm::toString(tm.takeError()) << "\n";
    return failure();
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    diag << "error: the kernels could not be translated to LLVM IR\n";
    return failure();
  }
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  addPackedEntries(*llvmModule, launches);
  if (llvm::Error err =
          makeOptimizingTransformer(3, 0, tm->get())(llvmModule.get())) {
    diag << "error: " << llvm::toString(std::move(err)) << "\n";
    return failure();
  }
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if ((*tm)->addPassesToEmitFile(codegen, os, nullptr,
                                 llvm::CodeGenFileType::ObjectFile)) {
    diag << "error: this host's target cannot emit object files\n";
    return failure();
  }
  codegen.run(*llvmModule);
  return success();
}

bool CPUExecutable::exportGraph(StringRef source, StringRef pipelineOptions,
                                StringRef objectPath, StringRef planPath,
                                std::string &diagnostics) {
  llvm::raw_string_ostream diag(diagnostics);
  auto decompose = DecomposeOptions::createFromString(pipelineOptions);
  if (!decompose) {
    diag << "error: invalid CPU pipeline options '" << pipelineOptions
         << "'\n";
    return false;
  }
  initializeNativeTarget();
  Impl impl;
  DiagnosticCollector handler(&impl.context, diag);
  OwningOpRef<ModuleOp> module =
      lowerToLLVM(impl, source, *decompose, /*keepStageIR=*/false);
  if (!module)
    return false;
  if (!impl.program.serializable()) {
    diag << "error: the graph has library convolutions, which the "
            "ahead-of-time runtime does not run (use the default "
            "expand-convolutions=true)\n";
    return false;
  }
  SmallVector<char, 0> object;
  if (failed(emitObject(*module, impl.program.launches(), object, diag)))
    return false;
  auto write = [&](StringRef path, StringRef bytes) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec)
      os << bytes;
    if (ec || os.has_error()) {
      diag << "error: cannot write " << path << ": "
           << (ec ? ec.message() : os.error().message()) << "\n";
      return false;
    }
    return true;
  };
  return write(objectPath, StringRef(object.data(), object.size())) &&
         write(planPath, impl.program.serialize(kAOTPlanVersion));
}

bool CPUExecutable::run(ArrayRef<void *> buffers, std::string &error) const {
  return impl->program.run(buffers.data(), buffers.size(), error);
}
int64_t CPUExecutable::arenaBytes() const { return impl->program.arenaBytes; }
int64_t CPUExecutable::intermediateBytes() const {
  return impl->program.intermediateBytes;
}
int64_t CPUExecutable::numKernels() const { return impl->program.numKernels; }
int64_t CPUExecutable::numBuffers() const {
  return impl->program.numArguments + 1;
}
bool CPUExecutable::fromCache() const { return impl->fromCache; }
const std::map<std::string, std::string> &CPUExecutable::stageIR() const {
  return impl->stageIR;
}
