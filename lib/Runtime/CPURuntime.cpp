//===- CPURuntime.cpp - compile and run a graph on the CPU ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Runtime/CPURuntime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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
#include "tc/Pipelines/Pipelines.h"
#include "ScheduleReader.h"
#include "Convolution.h"
#include "DiskCache.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <dlfcn.h>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

using namespace mlir;
using namespace mlir::tc;
namespace host = ::tc::host;

struct CPUExecutable::Impl {
  MLIRContext context;
  /// Holds the kernels' native code.
  std::unique_ptr<llvm::orc::LLJIT> jit;
  bool fromCache = false;
  host::HostProgram program;
  std::map<std::string, std::string> stageIR;

  LogicalResult extractSchedule(ModuleOp module);
};

/// The most objects a graph's kernels are split into (and compiled in
/// parallel).
static constexpr unsigned kMaxObjects = 16;

/// The vector width kernels are compiled for ("" for LLVM's default).
static std::string preferredVectorWidth() {
  if (const char *env = std::getenv("TC_VECTOR_WIDTH"))
    return env;
  return llvm::sys::getHostCPUFeatures().lookup("avx512f") ? "512" : "";
}

/// Loads the kernels' objects into a JIT and points each launch at its
/// `_mlir_<kernel>` entry. Symbols the objects do not define (libm's, ...)
/// come from the process.
static LogicalResult loadObjects(CPUExecutable::Impl &impl,
                                 ArrayRef<std::unique_ptr<llvm::MemoryBuffer>>
                                     objects,
                                 llvm::raw_ostream &diag);

/// Loads a cache entry (`<entry>.plan`, `<entry>.<i>.o`); nullptr when it
/// is not there or unusable.
static std::unique_ptr<CPUExecutable::Impl> loadFromCache(StringRef entry) {
  auto plan = llvm::MemoryBuffer::getFile(entry + ".plan");
  if (!plan)
    return nullptr;
  auto impl = std::make_unique<CPUExecutable::Impl>();
  if (!impl->program.parse((*plan)->getBuffer().str(), host::kCPUCacheVersion))
    return nullptr;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
  for (int64_t i = 0; i < impl->program.numObjects; ++i) {
    auto object =
        llvm::MemoryBuffer::getFile(entry + "." + std::to_string(i) + ".o");
    if (!object)
      return nullptr;
    objects.push_back(std::move(*object));
  }
  std::string ignored;
  llvm::raw_string_ostream diag(ignored);
  if (failed(loadObjects(*impl, objects, diag)))
    return nullptr;
  impl->fromCache = true;
  return impl;
}

namespace {
/// The CPU's host program from a schedule (see ScheduleReader.h): launches
/// over the kernel's domain, OpenBLAS GEMMs (a row epilogue joins its
/// GEMM), library convolutions as custom steps.
class CPUScheduleReader : public runtime::ScheduleReader {
public:
  CPUScheduleReader(ModuleOp module, host::HostProgram &p)
      : module(module), p(p) {}

private:
  void onArgument(BlockArgument arg) override {
    p.buffers.push_back({static_cast<int64_t>(arg.getArgNumber()), 0});
    p.bufferBytes.push_back(staticBytes(arg.getType()));
  }
  void onBuffer(kernel::BufferOp buffer) override {
    p.buffers.push_back({-1, static_cast<int64_t>(buffer.getOffset()),
                         static_cast<int64_t>(buffer.getOffsetPerSymbol())});
    p.bufferBytes.push_back(staticBytes(buffer.getType()));
  }
  /// A buffer's bytes, or -1 where its size is symbolic (for profiles).
  static int64_t staticBytes(Type type) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || !memref.hasStaticShape() ||
        !memref.getElementType().isIntOrFloat())
      return -1;
    return memref.getNumElements() *
           llvm::divideCeil(memref.getElementTypeBitWidth(), 8);
  }
  LogicalResult onLaunch(kernel::LaunchOp launch,
                         SmallVector<int64_t> buffers) override {
    auto func = module.lookupSymbol<func::FuncOp>(
        launch.getKernelAttr().getLeafReference());
    if (!func)
      return launch.emitOpError() << "kernel was not lowered for the CPU";
    host::Launch step;
    step.kernel = launch.getKernelAttr().getLeafReference().str();
    if (auto domain =
            func->getAttrOfType<DenseI64ArrayAttr>(kernel::kDomainAttrName))
      for (int64_t size : domain.asArrayRef()) {
        if (ShapedType::isDynamic(size))
          step.perSymbol = true; // rows and points per unit of it
        else
          step.rows *= size;
      }
    if (auto points = func->getAttrOfType<IntegerAttr>(kernel::kPointsAttrName))
      step.points = points.getInt();
    step.buffers.assign(buffers.begin(), buffers.end());
    // The verifier guarantees a row epilogue follows its GEMM.
    if (launch.getRowEpilogue() && !p.steps.empty() && p.steps.back().gemm &&
        p.steps.back().gemm->batch == 1 &&
        p.steps.back().gemm->m == step.rows &&
        bool(p.steps.back().gemm->perSymbol & 2u) == step.perSymbol) {
      p.steps.back().gemm->epilogue = std::move(step);
      return success();
    }
    p.steps.push_back({std::move(step), std::nullopt, {}, {}, {}});
    return success();
  }
  LogicalResult onGemm(kernel::GemmOp gemm,
                       const runtime::GemmBuffers &buffers) override {
    Type elt = buffers.element;
    if (!elt.isF32() && !elt.isF64())
      return gemm.emitOpError()
             << "CPU GEMM supports f32 and f64, not " << elt;
    host::Gemm g;
    runtime::assignGemm(g, buffers);
    g.isDouble = elt.isF64();
    p.steps.push_back({std::nullopt, g, {}, {}, {}});
    return success();
  }
  LogicalResult onConv(kernel::ConvOp conv, runtime::ConvCall call) override {
    if (!cpuLibraryConvolution() &&
        call.element != runtime::ConvElement::F32 &&
        call.element != runtime::ConvElement::F64)
      return conv.emitOpError()
             << "the CPU's reference convolution takes f32 and f64";
    call.writesIntermediate = p.buffers[call.written()].argument < 0;
    host::Step step;
    step.customBuffers = {call.input, call.weight, call.output};
    step.custom = [call = std::move(call)](std::vector<void *> &ptrs,
                                           const host::ParallelFor &parallelFor,
                                           host::RunOwned &owned) {
      return runtime::runCPUConv(call, ptrs, parallelFor, owned);
    };
    p.steps.push_back(std::move(step));
    return success();
  }

  ModuleOp module;
  host::HostProgram &p;
};
} // namespace

LogicalResult CPUExecutable::Impl::extractSchedule(ModuleOp module) {
  host::HostProgram &p = program;
  CPUScheduleReader reader(module, p);
  if (failed(reader.read(module, "CPU")))
    return failure();
  p.arenaBytes = reader.arenaBytes;
  p.intermediateBytes = reader.intermediateBytes;
  p.arenaBytesPerSymbol = reader.arenaBytesPerSymbol;
  p.numArguments = reader.numArguments;
  // A library call's result held in the call's own memory is released
  // after the buffer's last use.
  llvm::DenseMap<int64_t, size_t> lastUse;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const host::Step &step = p.steps[i];
    auto use = [&](int64_t id) { lastUse[id] = i; };
    if (step.launch)
      llvm::for_each(step.launch->buffers, use);
    if (step.gemm) {
      use(step.gemm->a);
      use(step.gemm->b);
      use(step.gemm->out);
      use(step.gemm->bias);
      if (step.gemm->epilogue)
        llvm::for_each(step.gemm->epilogue->buffers, use);
    }
    llvm::for_each(step.customBuffers, use);
  }
  llvm::DenseSet<int64_t> released;
  for (const host::Step &step : p.steps)
    for (int64_t id : step.customBuffers)
      if (p.buffers[id].argument < 0 && released.insert(id).second)
        p.steps[lastUse.lookup(id)].releases.push_back(id);
  p.numKernels = reader.numKernels;
  for (auto schedule :
       llvm::make_early_inc_range(module.getOps<kernel::ScheduleOp>()))
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

  for (Stage stage : kAllStages) {
    // The host program is interpreted by the runtime, the kernels are
    // JITed: the schedule is taken before the kernels go to LLVM.
    if (stage == Stage::Binary &&
        (failed(impl.extractSchedule(*module)) ||
         (decompose.checks && !impl.program.findCheckRecord())))
      return {};
    PassManager pm(&context);
    buildPipeline(pm, Target::CPU, decompose, stage, stage);
    if (failed(pm.run(*module)))
      return {};
    if (keepStageIR)
      impl.stageIR[getStageName(Target::CPU, stage).str()] = printIR(*module);
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

//===----------------------------------------------------------------------===//
// Object emission
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

/// A target machine for this host's CPU, at O3. Position-independent: the
/// objects are also linked into shared libraries (the disk cache's, for
/// tc._runtime; an AOT export's).
static std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(std::string &error) {
  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder) {
    error = llvm::toString(tmBuilder.takeError());
    return nullptr;
  }
  tmBuilder->setRelocationModel(llvm::Reloc::PIC_);
  tmBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = tmBuilder->createTargetMachine();
  if (!tm) {
    error = llvm::toString(tm.takeError());
    return nullptr;
  }
  return std::move(*tm);
}

/// Optimizes `module` and emits it as an object file into `object`.
static bool optimizeAndEmit(llvm::Module &module,
                            const std::vector<host::Launch *> &launches,
                            SmallVectorImpl<char> &object,
                            std::string &error) {
  std::unique_ptr<llvm::TargetMachine> tm = createHostTargetMachine(error);
  if (!tm)
    return false;
  module.setDataLayout(tm->createDataLayout());
  module.setTargetTriple(tm->getTargetTriple());
  addPackedEntries(module, launches);
  if (llvm::Error err = makeOptimizingTransformer(3, 0, tm.get())(&module)) {
    error = llvm::toString(std::move(err));
    return false;
  }
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (tm->addPassesToEmitFile(codegen, os, nullptr,
                              llvm::CodeGenFileType::ObjectFile)) {
    error = "this host's target cannot emit object files";
    return false;
  }
  codegen.run(module);
  return true;
}

/// How many threads compile kernels: $TC_COMPILE_THREADS, else one per
/// core.
static unsigned compileThreads() {
  if (const char *env = std::getenv("TC_COMPILE_THREADS"))
    if (int n = std::atoi(env); n > 0)
      return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The kernels of `module` (LLVM dialect) as `maxParts` objects at most,
/// optimized and compiled by LLVM in parallel (most of a cold compile's
/// time). Each part holds some of the kernels, balanced by size, and a
/// copy of the private helpers they may call. The split depends only on
/// the module, so a cache entry's objects do not depend on the thread
/// count.
static LogicalResult emitObjects(ModuleOp module,
                                 const std::vector<host::Launch *> &launches,
                                 unsigned maxParts,
                                 std::vector<SmallVector<char, 0>> &objects,
                                 llvm::raw_ostream &diag) {
  llvm::StringSet<> kernelNames;
  for (const host::Launch *launch : launches)
    kernelNames.insert(launch->kernel);
  SmallVector<std::pair<int64_t, StringRef>> kernels;
  for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
    if (func.isExternal() || !kernelNames.contains(func.getSymName()))
      continue;
    int64_t size = 0;
    func.walk([&](Operation *) { ++size; });
    kernels.push_back({size, func.getSymName()});
  }
  // Largest first, each to the lightest part.
  llvm::sort(kernels, [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  unsigned numParts = std::clamp<unsigned>(kernels.size(), 1, maxParts);
  std::vector<int64_t> load(numParts, 0);
  llvm::StringMap<unsigned> partOf;
  for (const auto &[size, name] : kernels) {
    unsigned part = std::min_element(load.begin(), load.end()) - load.begin();
    load[part] += size;
    partOf[name] = part;
  }

  // Translation uses the MLIR context, which is single-threaded here: each
  // part is translated on this thread into an LLVM context of its own.
  std::vector<std::unique_ptr<llvm::LLVMContext>> contexts(numParts);
  std::vector<std::unique_ptr<llvm::Module>> modules(numParts);
  for (unsigned part = 0; part < numParts; ++part) {
    OwningOpRef<ModuleOp> copy =
        numParts == 1 ? OwningOpRef<ModuleOp>() : module.clone();
    if (copy)
      for (auto func :
           llvm::make_early_inc_range(copy->getOps<LLVM::LLVMFuncOp>())) {
        auto it = partOf.find(func.getSymName());
        if (it != partOf.end() && it->second != part)
          func.erase();
      }
    contexts[part] = std::make_unique<llvm::LLVMContext>();
    modules[part] =
        translateModuleToLLVMIR(copy ? *copy : module, *contexts[part]);
    if (!modules[part]) {
      diag << "error: the kernels could not be translated to LLVM IR\n";
      return failure();
    }
  }

  objects.assign(numParts, {});
  std::vector<std::string> errors(numParts);
  std::atomic<unsigned> next{0};
  auto work = [&] {
    for (unsigned part = next++; part < numParts; part = next++) {
      // The C API contains a crash of the compiler on the caller's thread
      // only: each part is contained where it runs.
      llvm::CrashRecoveryContext recovery;
      if (!recovery.RunSafely([&] {
            optimizeAndEmit(*modules[part], launches, objects[part],
                            errors[part]);
          }))
        errors[part] = "LLVM crashed compiling the kernels' part " +
                       std::to_string(part) + " (contained); this is a bug";
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < std::min(numParts, compileThreads()); ++i)
    threads.emplace_back(work);
  work();
  for (std::thread &thread : threads)
    thread.join();
  for (const std::string &error : errors)
    if (!error.empty()) {
      diag << "error: " << error << "\n";
      return failure();
    }
  return success();
}

static LogicalResult loadObjects(CPUExecutable::Impl &impl,
                                 ArrayRef<std::unique_ptr<llvm::MemoryBuffer>>
                                     objects,
                                 llvm::raw_ostream &diag) {
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) {
    diag << "error: " << llvm::toString(jit.takeError()) << "\n";
    return failure();
  }
  auto generator =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          (*jit)->getDataLayout().getGlobalPrefix());
  if (!generator) {
    diag << "error: " << llvm::toString(generator.takeError()) << "\n";
    return failure();
  }
  (*jit)->getMainJITDylib().addGenerator(std::move(*generator));
  for (const auto &object : objects)
    if (llvm::Error err = (*jit)->addObjectFile(
            llvm::MemoryBuffer::getMemBufferCopy(object->getBuffer(),
                                                 object->getBufferIdentifier()))) {
      diag << "error: " << llvm::toString(std::move(err)) << "\n";
      return failure();
    }
  auto lookup = [&](const std::string &symbol) -> host::KernelFn {
    auto address = (*jit)->lookup(symbol);
    if (!address) {
      llvm::consumeError(address.takeError());
      return nullptr;
    }
    return address->toPtr<host::KernelFn>();
  };
  std::string error;
  if (!impl.program.bindKernels(lookup, error)) {
    diag << "error: the kernels' objects have " << error << "\n";
    return failure();
  }
  impl.jit = std::move(*jit);
  return success();
}

/// Writes a cache entry: the objects, then the plan (each through a
/// rename), so that a reader never sees a plan without its objects. Best
/// effort: a cache that cannot be written is no error.
static void writeCacheEntry(StringRef entry, const host::HostProgram &program,
                            ArrayRef<SmallVector<char, 0>> objects) {
  StringRef dir = llvm::sys::path::parent_path(entry);
  StringRef key = llvm::sys::path::filename(entry);
  for (auto [i, object] : llvm::enumerate(objects))
    if (!runtime::writeCacheFile(dir, (key + "." + Twine(i) + ".o").str(),
                                 StringRef(object.data(), object.size())))
      return;
  runtime::writeCacheFile(dir, (key + ".plan").str(),
                          program.serialize(host::kCPUCacheVersion));
}

//===----------------------------------------------------------------------===//
// Compilation entry points
//===----------------------------------------------------------------------===//

std::unique_ptr<CPUExecutable>
CPUExecutable::compile(StringRef source, StringRef pipelineOptions,
                       bool keepStageIR, std::string &diagnostics,
                       StringRef cacheEntry) {
  auto decompose = DecomposeOptions::createFromString(pipelineOptions);
  if (!decompose) {
    diagnostics += "error: invalid CPU pipeline options '" +
                   pipelineOptions.str() + "'\n";
    return nullptr;
  }
  initializeNativeTarget();

  // Stage IR is only produced by a real compile.
  if (!cacheEntry.empty() && !keepStageIR)
    if (auto impl = loadFromCache(cacheEntry))
      return std::unique_ptr<CPUExecutable>(new CPUExecutable(std::move(impl)));

  auto impl = std::make_unique<Impl>();
  llvm::raw_string_ostream diag(diagnostics);
  DiagnosticCollector handler(&impl->context, diag);
  OwningOpRef<ModuleOp> module =
      lowerToLLVM(*impl, source, *decompose, keepStageIR);
  if (!module)
    return nullptr;

  // A graph of library calls only (GEMMs) has no code to generate, and
  // nothing worth caching.
  if (impl->program.launches().empty())
    return std::unique_ptr<CPUExecutable>(new CPUExecutable(std::move(impl)));

  std::vector<SmallVector<char, 0>> objects;
  if (failed(emitObjects(*module, impl->program.launches(), kMaxObjects,
                         objects, diag)))
    return nullptr;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> buffers;
  for (const auto &object : objects)
    buffers.push_back(llvm::MemoryBuffer::getMemBuffer(
        StringRef(object.data(), object.size()), "", false));
  if (failed(loadObjects(*impl, buffers, diag)))
    return nullptr;
  impl->program.numObjects = objects.size();
  // The plan format has no convolutions (a test path on the CPU): such a
  // graph is not cached.
  if (!cacheEntry.empty() && impl->program.serializable())
    writeCacheEntry(cacheEntry, impl->program, objects);
  return std::unique_ptr<CPUExecutable>(new CPUExecutable(std::move(impl)));
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
  // One object: the export links it into one shared library.
  std::vector<SmallVector<char, 0>> objects;
  if (failed(emitObjects(*module, impl.program.launches(), /*maxParts=*/1,
                         objects, diag)))
    return false;
  const SmallVector<char, 0> &object = objects.front();
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

bool CPUExecutable::run(ArrayRef<void *> buffers, std::string &error,
                        int64_t symbol,
                        std::vector<host::StepTime> *profile) const {
  return impl->program.run(buffers.data(), buffers.size(), error, symbol,
                           profile);
}
int64_t CPUExecutable::arenaBytes() const { return impl->program.arenaBytes; }
int64_t CPUExecutable::arenaBytesPerSymbol() const {
  return impl->program.arenaBytesPerSymbol;
}
bool CPUExecutable::symbolic() const { return impl->program.symbolic(); }
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

std::string mlir::tc::graphStructure(llvm::StringRef source) {
  return runtime::structuralText(source);
}
