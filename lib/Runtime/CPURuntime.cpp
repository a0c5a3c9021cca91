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
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/InitAll.h"
#include "tc/Runtime/Diagnostics.h"
#include "tc/Target/CPU/Pipeline.h"
#include "Convolution.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/TargetSelect.h"

#include <cblas.h>

// PyPI's OpenBLAS build prefixes its symbols (see lib/Runtime/CMakeLists.txt).
#ifdef TC_SCIPY_OPENBLAS
#define TC_BLAS(name) scipy_##name
#else
#define TC_BLAS(name) name
#endif

#include <atomic>
#include <dlfcn.h>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

using namespace mlir;
using namespace mlir::tc;

namespace {

//===----------------------------------------------------------------------===//
// Thread pool
//===----------------------------------------------------------------------===//

/// A fixed set of workers that run the chunks of one launch at a time; the
/// calling thread works too.
class ThreadPool {
public:
  static ThreadPool &get() {
    static ThreadPool pool;
    return pool;
  }

  unsigned size() const { return workers.size() + 1; }

  void parallelFor(int64_t n, const std::function<void(int64_t)> &fn) {
    if (n <= 1 || workers.empty()) {
      for (int64_t i = 0; i < n; ++i)
        fn(i);
      return;
    }
    std::lock_guard<std::mutex> oneAtATime(launchMutex);
    {
      std::lock_guard<std::mutex> lock(mutex);
      task = &fn;
      total = n;
      next = 0;
      finished = 0;
      ++generation;
    }
    wake.notify_all();
    int64_t doneHere = work(fn, n);
    std::unique_lock<std::mutex> lock(mutex);
    finished += doneHere;
    // Every worker that took this launch has left it before the next one
    // can reset `next` (a late worker would otherwise claim the next
    // launch's chunks with this one's function, gone by then).
    done.wait(lock, [&] { return finished == total && active == 0; });
    task = nullptr;
  }

private:
  ThreadPool() {
    unsigned threads = std::thread::hardware_concurrency();
    if (const char *env = std::getenv("TC_NUM_THREADS"))
      threads = std::max(1, std::atoi(env));
    for (unsigned i = 1; i < std::max(1u, threads); ++i)
      workers.emplace_back([this] { loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    for (std::thread &t : workers)
      t.join();
  }

  void loop() {
    uint64_t seen = 0;
    while (true) {
      const std::function<void(int64_t)> *fn;
      int64_t n;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop)
          return;
        seen = generation;
        // A launch that already ended leaves nothing to take.
        if (!task)
          continue;
        fn = task;
        n = total;
        ++active;
      }
      int64_t doneHere = work(*fn, n);
      std::lock_guard<std::mutex> lock(mutex);
      finished += doneHere;
      --active;
      if (finished == total && active == 0)
        done.notify_all();
    }
  }

  /// Runs chunks of the current launch until none is left; returns how
  /// many it ran.
  int64_t work(const std::function<void(int64_t)> &fn, int64_t n) {
    int64_t doneHere = 0;
    for (int64_t i = next++; i < n; i = next++) {
      fn(i);
      ++doneHere;
    }
    return doneHere;
  }

  std::vector<std::thread> workers;
  std::mutex mutex, launchMutex;
  std::condition_variable wake, done;
  const std::function<void(int64_t)> *task = nullptr;
  std::atomic<int64_t> next{0};
  int64_t total = 0, finished = 0, active = 0;
  uint64_t generation = 0;
  bool stop = false;
};

//===----------------------------------------------------------------------===//
// The host program
//===----------------------------------------------------------------------===//

/// A buffer of the schedule: an argument, or a slice of the arena.
struct BufferRef {
  int64_t argument = -1; // index into the caller's buffers
  int64_t offset = 0;    // byte offset into the arena otherwise
};

struct Launch {
  std::string kernel;
  void (*fn)(void **) = nullptr;
  int64_t rows = 1, points = 1;
  SmallVector<int64_t> buffers;
};

struct Gemm {
  int64_t a, b, out, bias = -1;
  bool transA, transB, isDouble;
  int64_t batch, m, n, k;
  /// A kernel to run on each block of output rows once it is computed.
  std::optional<Launch> epilogue;
};

struct Step {
  std::optional<Launch> launch;
  std::optional<Gemm> gemm;
  /// A library convolution, run by the reference loops (not cached).
  std::optional<runtime::ConvCall> conv;
};

} // namespace

struct CPUExecutable::Impl {
  MLIRContext context;
  std::unique_ptr<ExecutionEngine> engine;
  /// Holds the native code when it came from the disk cache.
  std::unique_ptr<llvm::orc::LLJIT> cachedJit;
  bool fromCache = false;
  SmallVector<BufferRef> buffers;
  std::vector<Step> steps;
  int64_t numArguments = 0;
  int64_t arenaBytes = 0, intermediateBytes = 0, numKernels = 0;
  std::map<std::string, std::string> stageIR;

  LogicalResult extractSchedule(ModuleOp module);
  bool run(ArrayRef<void *> args, std::string &error) const;

  /// Every kernel launch, including GEMM epilogues.
  SmallVector<Launch *> launches() {
    SmallVector<Launch *> all;
    for (Step &step : steps) {
      if (step.launch)
        all.push_back(&*step.launch);
      if (step.gemm && step.gemm->epilogue)
        all.push_back(&*step.gemm->epilogue);
    }
    return all;
  }

  /// The host program as text, and back (the disk cache's format).
  std::string serializePlan() const;
  bool parsePlan(StringRef text);
};

// Bump whenever the plan format or the generated code changes: cached
// objects of an older tc must not be loaded.
static constexpr const char *kCacheVersion = "tc-cpu-cache-3";

std::string CPUExecutable::Impl::serializePlan() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << kCacheVersion << "\n"
     << "args " << numArguments << "\n"
     << "sizes " << arenaBytes << " " << intermediateBytes << " "
     << numKernels << "\n";
  for (const BufferRef &ref : buffers)
    os << "buffer " << ref.argument << " " << ref.offset << "\n";
  auto writeLaunch = [&](StringRef tag, const Launch &launch) {
    os << tag << " " << launch.kernel << " " << launch.rows << " "
       << launch.points;
    for (int64_t id : launch.buffers)
      os << " " << id;
    os << "\n";
  };
  for (const Step &step : steps) {
    if (step.launch) {
      writeLaunch("launch", *step.launch);
      continue;
    }
    const Gemm &g = *step.gemm;
    os << "gemm " << g.a << " " << g.b << " " << g.out << " " << g.bias
       << " " << g.transA << " " << g.transB << " " << g.isDouble << " "
       << g.batch << " " << g.m << " " << g.n << " " << g.k << "\n";
    if (g.epilogue)
      writeLaunch("epilogue", *g.epilogue);
  }
  return text;
}

bool CPUExecutable::Impl::parsePlan(StringRef text) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty() || lines.front() != kCacheVersion)
    return false;
  for (StringRef line : llvm::drop_begin(lines)) {
    SmallVector<StringRef> words;
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    SmallVector<int64_t> n;
    bool isLaunch = words[0] == "launch" || words[0] == "epilogue";
    for (StringRef w : llvm::drop_begin(words, isLaunch ? 2 : 1)) {
      int64_t v;
      if (w.getAsInteger(10, v))
        return false;
      n.push_back(v);
    }
    if (words[0] == "args" && n.size() == 1) {
      numArguments = n[0];
    } else if (words[0] == "sizes" && n.size() == 3) {
      arenaBytes = n[0];
      intermediateBytes = n[1];
      numKernels = n[2];
    } else if (words[0] == "buffer" && n.size() == 2) {
      buffers.push_back({n[0], n[1]});
    } else if (isLaunch && words.size() >= 2 && n.size() >= 2) {
      Launch launch;
      launch.kernel = words[1].str();
      launch.rows = n[0];
      launch.points = n[1];
      launch.buffers.assign(n.begin() + 2, n.end());
      if (words[0] == "launch") {
        steps.push_back({std::move(launch), std::nullopt, std::nullopt});
      } else {
        if (steps.empty() || !steps.back().gemm)
          return false;
        steps.back().gemm->epilogue = std::move(launch);
      }
    } else if (words[0] == "gemm" && n.size() == 11) {
      Gemm g{n[0], n[1], n[2], n[3], n[4] != 0, n[5] != 0, n[6] != 0,
             n[7], n[8], n[9], n[10], std::nullopt};
      steps.push_back({std::nullopt, g, std::nullopt});
    } else {
      return false;
    }
  }
  auto valid = [&](int64_t id) {
    return id >= 0 && id < static_cast<int64_t>(buffers.size());
  };
  for (const Step &step : steps) {
    if (step.launch && !llvm::all_of(step.launch->buffers, valid))
      return false;
    if (step.gemm && step.gemm->epilogue &&
        !llvm::all_of(step.gemm->epilogue->buffers, valid))
      return false;
    if (step.gemm && !(valid(step.gemm->a) && valid(step.gemm->b) &&
                       valid(step.gemm->out)))
      return false;
  }
  return true;
}

/// The vector width kernels are compiled for ("" for LLVM's default).
static std::string preferredVectorWidth() {
  if (const char *env = std::getenv("TC_VECTOR_WIDTH"))
    return env;
  return llvm::sys::getHostCPUFeatures().lookup("avx512f") ? "512" : "";
}

/// Which build of tc this is: the path, size and modification time of the
/// binary holding this code (the Python extension, tc-opt). A rebuilt tc
/// (new passes, new code generation) then misses the cache of an older one
/// even where kCacheVersion was not bumped.
static std::string buildIdentity() {
  static const std::string identity = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&buildIdentity), &info) ||
        !info.dli_fname)
      return std::string("unknown-build");
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(info.dli_fname, status))
      return std::string(info.dli_fname);
    return std::string(info.dli_fname) + ":" +
           std::to_string(status.getSize()) + ":" +
           std::to_string(
               status.getLastModificationTime().time_since_epoch().count());
  }();
  return identity;
}

/// The cache key: what the native code depends on.
static std::string cacheKey(StringRef source, StringRef options) {
  llvm::SHA256 hash;
  hash.update(kCacheVersion);
  hash.update(buildIdentity());
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
  if (!impl->parsePlan((*plan)->getBuffer()))
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
  for (Launch *launch : impl->launches()) {
    auto symbol = (*jit)->lookup("_mlir_" + launch->kernel);
    if (!symbol) {
      llvm::consumeError(symbol.takeError());
      return nullptr;
    }
    launch->fn = symbol->toPtr<void (*)(void **)>();
  }
  impl->cachedJit = std::move(*jit);
  impl->fromCache = true;
  return impl;
}

LogicalResult CPUExecutable::Impl::extractSchedule(ModuleOp module) {
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
      buffers.push_back({-1, static_cast<int64_t>(buffer.getOffset())});
      continue;
    }
    if (auto launch = dyn_cast<kernel::LaunchOp>(op)) {
      auto func = module.lookupSymbol<func::FuncOp>(launch.getKernelAttr().getLeafReference());
      if (!func)
        return launch.emitOpError() << "kernel was not lowered for the CPU";
      Launch step;
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
      if (launch.getRowEpilogue() && !steps.empty() && steps.back().gemm &&
          steps.back().gemm->batch == 1 &&
          steps.back().gemm->m == step.rows) {
        steps.back().gemm->epilogue = std::move(step);
        continue;
      }
      steps.push_back({std::move(step), std::nullopt, std::nullopt});
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
      steps.push_back({std::nullopt, g, std::nullopt});
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
      steps.push_back({std::nullopt, std::nullopt, std::move(*call)});
      continue;
    }
    return op.emitOpError() << "is not part of a CPU host program";
  }
  numKernels = kernels.size();
  schedule.erase();
  return success();
}

/// Runs rows [begin, end) of a kernel's domain.
static void callKernel(const Launch &launch, ArrayRef<void *> ptrs,
                       int64_t begin, int64_t end) {
  SmallVector<void *, 8> bufs;
  for (int64_t id : launch.buffers)
    bufs.push_back(ptrs[id]);
  SmallVector<void *, 10> packed;
  for (void *&buf : bufs)
    packed.push_back(&buf);
  packed.push_back(&begin);
  packed.push_back(&end);
  launch.fn(packed.data());
}

/// Runs rows [rowBegin, rowEnd) of batch entry `i` of a GEMM.
template <typename T, typename Fn>
static void gemmRows(const Gemm &g, ArrayRef<void *> ptrs, int64_t i,
                     int64_t rowBegin, int64_t rowEnd, T one, Fn gemm) {
  int64_t lda = g.transA ? g.m : g.k, ldb = g.transB ? g.k : g.n;
  auto ta = g.transA ? CblasTrans : CblasNoTrans;
  auto tb = g.transB ? CblasTrans : CblasNoTrans;
  const T *a = static_cast<const T *>(ptrs[g.a]) + i * g.m * g.k;
  const T *b = static_cast<const T *>(ptrs[g.b]) + i * g.k * g.n;
  T *c = static_cast<T *>(ptrs[g.out]) + i * g.m * g.n;
  // Rows of A start at row * lda, or at column `row` when A is transposed.
  const T *aRows = g.transA ? a + rowBegin : a + rowBegin * lda;
  T *cRows = c + rowBegin * g.n;
  if (g.bias >= 0)
    for (int64_t row = rowBegin; row < rowEnd; ++row)
      std::memcpy(c + row * g.n, ptrs[g.bias], g.n * sizeof(T));
  gemm(CblasRowMajor, ta, tb, rowEnd - rowBegin, g.n, g.k, one, aRows, lda, b,
       ldb, g.bias >= 0 ? one : T(0), cRows, g.n);
}

/// Small GEMMs are split into row blocks over tc's threads, each block a
/// single-threaded BLAS call followed by the block's epilogue kernel, if
/// any, while the rows are in cache. Large GEMMs go to BLAS whole, with
/// BLAS's own threads, and their epilogue runs right after.
static void runGemm(const Gemm &g, ArrayRef<void *> ptrs) {
  ThreadPool &pool = ThreadPool::get();
  double flops = 2.0 * g.batch * g.m * g.n * g.k;
  static thread_local int blasThreads = -1;
  auto setBlasThreads = [&](int n) {
    if (blasThreads != n)
      TC_BLAS(openblas_set_num_threads)(blasThreads = n);
  };
  auto rows = [&](int64_t i, int64_t begin, int64_t end) {
    if (g.isDouble)
      gemmRows<double>(g, ptrs, i, begin, end, 1.0, TC_BLAS(cblas_dgemm));
    else
      gemmRows<float>(g, ptrs, i, begin, end, 1.0f, TC_BLAS(cblas_sgemm));
  };
  if (flops >= 2e8) {
    setBlasThreads(pool.size());
    for (int64_t i = 0; i < g.batch; ++i)
      rows(i, 0, g.m);
    // BLAS's threads are still spinning: waking tc's would fight them for
    // the cores, so a small epilogue runs here, on the calling thread.
    if (g.epilogue)
      callKernel(*g.epilogue, ptrs, 0, g.m);
    return;
  }
  setBlasThreads(1);
  int64_t rowBlocks =
      flops < 4e6 ? 1 : std::min<int64_t>(pool.size(), (g.m + 15) / 16);
  pool.parallelFor(g.batch * rowBlocks, [&](int64_t task) {
    int64_t i = task / rowBlocks, block = task % rowBlocks;
    int64_t begin = g.m * block / rowBlocks;
    int64_t end = g.m * (block + 1) / rowBlocks;
    rows(i, begin, end);
    if (g.epilogue)
      callKernel(*g.epilogue, ptrs, begin, end);
  });
}

bool CPUExecutable::Impl::run(ArrayRef<void *> args, std::string &error) const {
  if (static_cast<int64_t>(args.size()) != numArguments + 1) {
    error = "expected " + std::to_string(numArguments + 1) +
            " buffers (inputs, outputs, arena), got " +
            std::to_string(args.size());
    return false;
  }
  char *arena = static_cast<char *>(args.back());
  if (arenaBytes && !arena) {
    error = "the graph needs an arena of " + std::to_string(arenaBytes) +
            " bytes";
    return false;
  }
  SmallVector<void *> ptrs;
  for (const BufferRef &ref : buffers)
    ptrs.push_back(ref.argument >= 0 ? args[ref.argument]
                                     : arena + ref.offset);

  // Below this many points a launch runs on the calling thread: waking
  // workers costs more than it saves.
  constexpr int64_t kParallelPoints = 1 << 15;
  ThreadPool &pool = ThreadPool::get();
  for (const Step &step : steps) {
    if (step.gemm) {
      runGemm(*step.gemm, ptrs);
      continue;
    }
    if (step.conv) {
      runtime::runReferenceConv(
          *step.conv, ptrs,
          [&](int64_t n, const std::function<void(int64_t)> &body) {
            pool.parallelFor(n, body);
          });
      continue;
    }
    const Launch &launch = *step.launch;
    int64_t chunks = launch.points >= kParallelPoints
                         ? std::min<int64_t>(pool.size() * 4, launch.rows)
                         : 1;
    pool.parallelFor(chunks, [&](int64_t chunk) {
      callKernel(launch, ptrs, launch.rows * chunk / chunks,
                 launch.rows * (chunk + 1) / chunks);
    });
  }
  return true;
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
  static std::once_flag initLLVM;
  std::call_once(initLLVM, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

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
  MLIRContext &context = impl->context;
  // The compile runs on the caller's thread: keep it lean (the pass
  // manager would otherwise start a thread pool per context).
  context.disableMultithreading();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  llvm::raw_string_ostream diag(diagnostics);
  DiagnosticCollector handler(&context, diag);

  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  if (!module)
    return nullptr;

  struct Stage {
    const char *name;
    std::function<void(OpPassManager &)> build;
  };
  const Stage stages[] = {{"prim",
                           [&](OpPassManager &pm) {
                             buildDecomposePipeline(pm, *decompose);
                           }},
                          {"kernel",
                           [](OpPassManager &pm) { buildFusePipeline(pm); }},
                          {"loops", buildCPULoopsPipeline}};
  for (const Stage &stage : stages) {
    PassManager pm(&context);
    stage.build(pm);
    if (failed(pm.run(*module)))
      return nullptr;
    if (keepStageIR)
      impl->stageIR[stage.name] = printIR(*module);
  }
  // The host program is interpreted by the runtime, the kernels are JITed.
  if (failed(impl->extractSchedule(*module)))
    return nullptr;
  {
    PassManager pm(&context);
    buildCPULLVMPipeline(pm);
    if (failed(pm.run(*module)))
      return nullptr;
    if (keepStageIR)
      impl->stageIR["llvm"] = printIR(*module);
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

  // A graph of library calls only (GEMMs) has no code to generate, and
  // nothing worth caching: the JIT would emit no object to dump. The plan
  // format has no convolutions (a test path on the CPU): not cached either.
  bool cacheable =
      !cacheDir.empty() &&
      llvm::none_of(impl->steps, [](const Step &step) { return step.conv; });
  if (impl->launches().empty())
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
  for (Launch *launch : impl->launches()) {
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
          os << impl->serializePlan();
      }
      if (!ec)
        (void)llvm::sys::fs::rename(tmp, planPath);
    }
  }
  return std::unique_ptr<CPUExecutable>(new CPUExecutable(std::move(impl)));
}

bool CPUExecutable::run(ArrayRef<void *> buffers, std::string &error) const {
  return impl->run(buffers, error);
}
int64_t CPUExecutable::arenaBytes() const { return impl->arenaBytes; }
int64_t CPUExecutable::intermediateBytes() const {
  return impl->intermediateBytes;
}
int64_t CPUExecutable::numKernels() const { return impl->numKernels; }
int64_t CPUExecutable::numBuffers() const { return impl->numArguments + 1; }
bool CPUExecutable::fromCache() const { return impl->fromCache; }
const std::map<std::string, std::string> &CPUExecutable::stageIR() const {
  return impl->stageIR;
}
