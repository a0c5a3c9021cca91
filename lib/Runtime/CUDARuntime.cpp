//===- CUDARuntime.cpp - compile and run graphs on NVIDIA GPUs --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Runtime/CUDARuntime.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/InitAll.h"
#include "tc/Target/CPU/Pipeline.h"
#include "tc/Target/GPU/Pipeline.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::tc;

//===----------------------------------------------------------------------===//
// The CUDA driver and cuBLAS, opened at run time
//===----------------------------------------------------------------------===//

namespace {

// The few driver and cuBLAS types tc uses; their ABI is stable.
using CUresult = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUdeviceptr = unsigned long long;
using CublasHandle = void *;
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferSize = 6;
constexpr int kCublasOpN = 0, kCublasOpT = 1, kCublasDefaultMath = 0;
// cublasLt: descriptor attributes, epilogue, compute and data types.
using LtHandle = void *;
using LtDesc = void *;
using LtLayout = void *;
using LtPreference = void *;
constexpr int kLtTransA = 3, kLtTransB = 4, kLtEpilogue = 7, kLtBiasPointer = 8;
constexpr int kLtPrefMaxWorkspace = 1;
constexpr uint32_t kLtEpilogueBias = 4;
constexpr int kComputeF32 = 68, kComputeF64 = 70, kDataF32 = 0, kDataF64 = 1;
constexpr size_t kLtWorkspaceBytes = 32 << 20;

struct LtHeuristic {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

template <typename Fn>
static bool bind(void *library, const char *name, Fn &fn, std::string &error) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn)
    error = std::string("symbol ") + name + " not found";
  return fn != nullptr;
}

/// Opens the first library of `names` that loads, preferring one the
/// process already has (PyTorch's).
static void *openLibrary(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD))
      return lib;
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return lib;
  return nullptr;
}

struct Driver {
  CUresult (*ctxGetCurrent)(CUcontext *);
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                               void **);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);

  /// The process's driver, or null with `error` set.
  static const Driver *get(std::string &error) {
    static std::once_flag once;
    static Driver driver;
    static std::string loadError;
    static bool ok = false;
    std::call_once(once, [] {
      void *lib = openLibrary({"libcuda.so.1", "libcuda.so"});
      if (!lib) {
        loadError = "the CUDA driver (libcuda.so.1) could not be opened";
        return;
      }
      ok = bind(lib, "cuCtxGetCurrent", driver.ctxGetCurrent, loadError) &&
           bind(lib, "cuModuleLoadDataEx", driver.moduleLoadDataEx,
                loadError) &&
           bind(lib, "cuModuleGetFunction", driver.moduleGetFunction,
                loadError) &&
           bind(lib, "cuLaunchKernel", driver.launchKernel, loadError) &&
           bind(lib, "cuGetErrorString", driver.getErrorString, loadError) &&
           bind(lib, "cuMemAlloc_v2", driver.memAlloc, loadError) &&
           bind(lib, "cuMemcpyHtoD_v2", driver.memcpyHtoD, loadError);
    });
    if (!ok)
      error = loadError;
    return ok ? &driver : nullptr;
  }

  std::string describe(CUresult result) const {
    const char *text = nullptr;
    getErrorString(result, &text);
    return text ? text : "CUDA error " + std::to_string(result);
  }
};

struct Cublas {
  int (*create)(CublasHandle *);
  int (*setStream)(CublasHandle, CUstream);
  int (*setMathMode)(CublasHandle, int);
  int (*sgemm)(CublasHandle, int, int, int, int, int, const float *,
               const float *, int, const float *, int, const float *, float *,
               int);
  int (*dgemm)(CublasHandle, int, int, int, int, int, const double *,
               const double *, int, const double *, int, const double *,
               double *, int);
  int (*sgemmBatched)(CublasHandle, int, int, int, int, int, const float *,
                      const float *, int, long long, const float *, int,
                      long long, const float *, float *, int, long long, int);
  int (*dgemmBatched)(CublasHandle, int, int, int, int, int, const double *,
                      const double *, int, long long, const double *, int,
                      long long, const double *, double *, int, long long,
                      int);

  static const Cublas *get(std::string &error) {
    static std::once_flag once;
    static Cublas cublas;
    static std::string loadError;
    static bool ok = false;
    std::call_once(once, [] {
      void *lib = openLibrary(
          {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
           "libcublas.so"});
      if (!lib) {
        loadError = "cuBLAS (libcublas.so) could not be opened";
        return;
      }
      ok = bind(lib, "cublasCreate_v2", cublas.create, loadError) &&
           bind(lib, "cublasSetStream_v2", cublas.setStream, loadError) &&
           bind(lib, "cublasSetMathMode", cublas.setMathMode, loadError) &&
           bind(lib, "cublasSgemm_v2", cublas.sgemm, loadError) &&
           bind(lib, "cublasDgemm_v2", cublas.dgemm, loadError) &&
           bind(lib, "cublasSgemmStridedBatched", cublas.sgemmBatched,
                loadError) &&
           bind(lib, "cublasDgemmStridedBatched", cublas.dgemmBatched,
                loadError);
    });
    if (!ok)
      error = loadError;
    return ok ? &cublas : nullptr;
  }

  /// This thread's handle for `context` (cuBLAS handles are per thread).
  CublasHandle handle(CUcontext context, std::string &error) const {
    thread_local llvm::DenseMap<CUcontext, CublasHandle> handles;
    auto it = handles.find(context);
    if (it != handles.end())
      return it->second;
    CublasHandle h = nullptr;
    if (int status = create(&h)) {
      error = "cublasCreate failed with status " + std::to_string(status);
      return nullptr;
    }
    // Full fp32 GEMMs, as PyTorch computes them unless TF32 is allowed.
    setMathMode(h, kCublasDefaultMath);
    handles[context] = h;
    return h;
  }
};

/// cublasLt, for GEMMs with a bias: the bias is added in the GEMM's own
/// epilogue, as PyTorch's addmm does.
struct CublasLt {
  int (*create)(LtHandle *);
  int (*descCreate)(LtDesc *, int, int);
  int (*descSet)(LtDesc, int, const void *, size_t);
  int (*layoutCreate)(LtLayout *, int, uint64_t, uint64_t, int64_t);
  int (*prefCreate)(LtPreference *);
  int (*prefSet)(LtPreference, int, const void *, size_t);
  int (*heuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout,
                   LtPreference, int, LtHeuristic *, int *);
  int (*matmul)(LtHandle, LtDesc, const void *, const void *, LtLayout,
                const void *, LtLayout, const void *, const void *, LtLayout,
                void *, LtLayout, const void *, void *, size_t, CUstream);

  /// The process's cublasLt, or null when it is not there.
  static const CublasLt *get() {
    static std::once_flag once;
    static CublasLt lt;
    static bool ok = false;
    std::call_once(once, [] {
      void *lib = openLibrary({"libcublasLt.so.13", "libcublasLt.so.12",
                               "libcublasLt.so.11", "libcublasLt.so"});
      std::string ignored;
      ok = lib && bind(lib, "cublasLtCreate", lt.create, ignored) &&
           bind(lib, "cublasLtMatmulDescCreate", lt.descCreate, ignored) &&
           bind(lib, "cublasLtMatmulDescSetAttribute", lt.descSet, ignored) &&
           bind(lib, "cublasLtMatrixLayoutCreate", lt.layoutCreate,
                ignored) &&
           bind(lib, "cublasLtMatmulPreferenceCreate", lt.prefCreate,
                ignored) &&
           bind(lib, "cublasLtMatmulPreferenceSetAttribute", lt.prefSet,
                ignored) &&
           bind(lib, "cublasLtMatmulAlgoGetHeuristic", lt.heuristic,
                ignored) &&
           bind(lib, "cublasLtMatmul", lt.matmul, ignored);
    });
    return ok ? &lt : nullptr;
  }
};

/// A bias GEMM's cublasLt descriptors and algorithm, made on first use.
struct LtPlan {
  LtDesc desc = nullptr;
  LtLayout a = nullptr, b = nullptr, d = nullptr;
  LtHeuristic heuristic;
};

//===----------------------------------------------------------------------===//
// The host program
//===----------------------------------------------------------------------===//

struct BufferRef {
  int64_t argument; // index into the run's buffers, or -1: in the arena
  int64_t offset;   // byte offset into the arena
};

struct Launch {
  std::string kernel;
  int64_t grid = 1, block = 1;
  SmallVector<int64_t> buffers;
};

struct Gemm {
  int64_t a, b, out, bias = -1;
  bool transA, transB, isDouble;
  int64_t batch, m, n, k;
  /// Set on the first run of a bias GEMM that cublasLt can do.
  mutable std::shared_ptr<LtPlan> lt;
  mutable bool ltUnavailable = false;
};

struct Step {
  std::optional<Launch> launch;
  std::optional<Gemm> gemm;
};

} // namespace

struct CUDAExecutable::Impl {
  SmallVector<BufferRef> buffers;
  std::vector<Step> steps;
  int64_t numArguments = 0;
  int64_t arenaBytes = 0, intermediateBytes = 0, numKernels = 0, maxBiasRows = 0;
  std::string format, binary;
  std::map<std::string, std::string> stageIR;

  // Loaded on the first run, in that run's context.
  mutable std::mutex loadMutex;
  mutable CUcontext context = nullptr;
  mutable llvm::StringMap<CUfunction> functions;
  mutable CUdeviceptr ones = 0; // maxBiasRows ones, for bias broadcasts
  mutable LtHandle ltHandle = nullptr;
  mutable CUdeviceptr ltWorkspace = 0;

  LogicalResult extractSchedule(ModuleOp module);
  bool load(const Driver &driver, std::string &error) const;
  /// Runs a bias GEMM through cublasLt; false (nothing done) when cublasLt
  /// cannot, and the caller takes the cuBLAS path.
  bool runLt(const Gemm &g, ArrayRef<void *> ptrs, CUstream stream) const;
  bool run(ArrayRef<void *> args, void *stream, std::string &error) const;
};

LogicalResult CUDAExecutable::Impl::extractSchedule(ModuleOp module) {
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
      if (!launch.getGrid() || !launch.getBlock())
        return launch.emitOpError() << "was not configured for a GPU";
      Launch step;
      step.kernel = launch.getKernelAttr().getLeafReference().str();
      step.grid = *launch.getGrid();
      step.block = *launch.getBlock();
      for (Value v : launch.getBuffers())
        step.buffers.push_back(ids.lookup(v));
      kernels.insert(step.kernel);
      steps.push_back({std::move(step), std::nullopt});
      continue;
    }
    if (auto gemm = dyn_cast<kernel::GemmOp>(op)) {
      auto outType = cast<MemRefType>(gemm.getOut().getType());
      auto aType = cast<MemRefType>(gemm.getA().getType());
      Type elt = outType.getElementType();
      if (!elt.isF32() && !elt.isF64())
        return gemm.emitOpError()
               << "CUDA GEMM supports f32 and f64, not " << elt;
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
      steps.push_back({std::nullopt, g});
      continue;
    }
    return op.emitOpError() << "is not part of a CUDA host program";
  }
  numKernels = kernels.size();

  auto binaryOp = module.lookupSymbol<gpu::BinaryOp>("tc_kernels");
  if (!binaryOp) {
    if (numKernels)
      return module.emitError() << "the kernels were not serialized";
    return success();
  }
  auto object = cast<gpu::ObjectAttr>(binaryOp.getObjects()[0]);
  binary = object.getObject().getValue().str();
  format = object.getFormat() == gpu::CompilationTarget::Assembly ? "isa"
                                                                   : "bin";
  return success();
}

bool CUDAExecutable::Impl::load(const Driver &driver,
                                std::string &error) const {
  CUcontext current = nullptr;
  if (CUresult r = driver.ctxGetCurrent(&current)) {
    error = "cuCtxGetCurrent: " + driver.describe(r);
    return false;
  }
  if (!current) {
    error = "no current CUDA context (run a CUDA tensor op first)";
    return false;
  }
  if (context) {
    if (context == current)
      return true;
    error = "this graph was loaded in another CUDA context";
    return false;
  }
  if (!binary.empty()) {
    // PTX is text the driver compiles (and caches); it wants a terminator.
    std::string image = binary;
    if (format == "isa")
      image.push_back('\0');
    char log[4096] = {0};
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
    CUmodule module = nullptr;
    if (CUresult r = driver.moduleLoadDataEx(&module, image.data(), 2,
                                             options, values)) {
      error = "loading tc's kernels (" + format + ") failed: " +
              driver.describe(r) + (log[0] ? std::string(": ") + log : "");
      return false;
    }
    for (const Step &step : steps) {
      if (!step.launch || functions.count(step.launch->kernel))
        continue;
      CUfunction fn = nullptr;
      if (CUresult r = driver.moduleGetFunction(&fn, module,
                                                step.launch->kernel.c_str())) {
        error = "kernel " + step.launch->kernel + ": " + driver.describe(r);
        return false;
      }
      functions[step.launch->kernel] = fn;
    }
  }
  if (maxBiasRows) {
    std::vector<double> hostOnes(maxBiasRows, 1.0);
    std::vector<float> hostOnesF(maxBiasRows, 1.0f);
    // Doubles first, floats after them.
    size_t bytes = maxBiasRows * (sizeof(double) + sizeof(float));
    if (CUresult r = driver.memAlloc(&ones, bytes)) {
      error = "cuMemAlloc: " + driver.describe(r);
      return false;
    }
    driver.memcpyHtoD(ones, hostOnes.data(), maxBiasRows * sizeof(double));
    driver.memcpyHtoD(ones + maxBiasRows * sizeof(double), hostOnesF.data(),
                      maxBiasRows * sizeof(float));
  }
  if (maxBiasRows)
    if (const CublasLt *lt = CublasLt::get())
      if (lt->create(&ltHandle) == 0 &&
          driver.memAlloc(&ltWorkspace, kLtWorkspaceBytes) != 0)
        ltWorkspace = 0;
  context = current;
  return true;
}

/// Row-major C = op(A) op(B) (+ bias rows) through column-major cuBLAS:
/// C^T = op(B)^T op(A)^T.
template <typename T, typename Gemm1, typename GemmN>
static int runGemm(const Gemm &g, ArrayRef<void *> ptrs, CublasHandle handle,
                   const T *ones, Gemm1 gemm, GemmN batched) {
  const T one = 1, zero = 0;
  int lda = g.transA ? g.m : g.k, ldb = g.transB ? g.k : g.n;
  auto *a = static_cast<const T *>(ptrs[g.a]);
  auto *b = static_cast<const T *>(ptrs[g.b]);
  auto *c = static_cast<T *>(ptrs[g.out]);
  const T *beta = &zero;
  if (g.bias >= 0) {
    // C = bias (n x 1) times ones (1 x m): the bias in every row.
    auto *bias = static_cast<const T *>(ptrs[g.bias]);
    for (int64_t i = 0; i < g.batch; ++i)
      if (int status = gemm(handle, kCublasOpN, kCublasOpN, g.n, g.m, 1, &one,
                            bias, g.n, ones, 1, &zero, c + i * g.m * g.n, g.n))
        return status;
    beta = &one;
  }
  int opA = g.transA ? kCublasOpT : kCublasOpN;
  int opB = g.transB ? kCublasOpT : kCublasOpN;
  if (g.batch == 1)
    return gemm(handle, opB, opA, g.n, g.m, g.k, &one, b, ldb, a, lda, beta, c,
                g.n);
  return batched(handle, opB, opA, g.n, g.m, g.k, &one, b, ldb, g.k * g.n, a,
                 lda, g.m * g.k, beta, c, g.n, g.m * g.n, g.batch);
}

bool CUDAExecutable::Impl::runLt(const Gemm &g, ArrayRef<void *> ptrs,
                                 CUstream stream) const {
  const CublasLt *lt = CublasLt::get();
  if (!lt || g.batch != 1 || !ltWorkspace || g.ltUnavailable)
    return false;
  if (!g.lt) {
    g.ltUnavailable = true; // until the plan is complete
    // Column-major D (n x m) = op(B)^T (n x k) op(A)^T (k x m), the bias
    // along D's rows.
    auto plan = std::make_shared<LtPlan>();
    int dataType = g.isDouble ? kDataF64 : kDataF32;
    int opA = g.transB ? kCublasOpT : kCublasOpN;
    int opB = g.transA ? kCublasOpT : kCublasOpN;
    uint32_t epilogue = kLtEpilogueBias;
    void *bias = ptrs[g.bias];
    if (lt->descCreate(&plan->desc, g.isDouble ? kComputeF64 : kComputeF32,
                       dataType) ||
        lt->descSet(plan->desc, kLtTransA, &opA, sizeof(opA)) ||
        lt->descSet(plan->desc, kLtTransB, &opB, sizeof(opB)) ||
        lt->descSet(plan->desc, kLtEpilogue, &epilogue, sizeof(epilogue)) ||
        lt->descSet(plan->desc, kLtBiasPointer, &bias, sizeof(bias)) ||
        lt->layoutCreate(&plan->a, dataType, g.transB ? g.k : g.n,
                         g.transB ? g.n : g.k, g.transB ? g.k : g.n) ||
        lt->layoutCreate(&plan->b, dataType, g.transA ? g.m : g.k,
                         g.transA ? g.k : g.m, g.transA ? g.m : g.k) ||
        lt->layoutCreate(&plan->d, dataType, g.n, g.m, g.n))
      return false;
    LtPreference pref = nullptr;
    size_t workspace = kLtWorkspaceBytes;
    int found = 0;
    if (lt->prefCreate(&pref) ||
        lt->prefSet(pref, kLtPrefMaxWorkspace, &workspace,
                    sizeof(workspace)) ||
        lt->heuristic(ltHandle, plan->desc, plan->a, plan->b, plan->d,
                      plan->d, pref, 1, &plan->heuristic, &found) ||
        found == 0)
      return false;
    g.lt = std::move(plan);
    g.ltUnavailable = false;
  }
  // The bias pointer is part of the descriptor: refresh it per run.
  void *bias = ptrs[g.bias];
  lt->descSet(g.lt->desc, kLtBiasPointer, &bias, sizeof(bias));
  const double oneD = 1, zeroD = 0;
  const float oneF = 1, zeroF = 0;
  const void *alpha = g.isDouble ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = g.isDouble ? static_cast<const void *>(&zeroD) : &zeroF;
  return lt->matmul(ltHandle, g.lt->desc, alpha, ptrs[g.b], g.lt->a,
                    ptrs[g.a], g.lt->b, beta, ptrs[g.out], g.lt->d,
                    ptrs[g.out], g.lt->d, g.lt->heuristic.algo,
                    reinterpret_cast<void *>(ltWorkspace),
                    kLtWorkspaceBytes, stream) == 0;
}

bool CUDAExecutable::Impl::run(ArrayRef<void *> args, void *stream,
                               std::string &error) const {
  if (args.size() != static_cast<size_t>(numArguments) + 1) {
    error = "expected " + std::to_string(numArguments + 1) + " buffers, got " +
            std::to_string(args.size());
    return false;
  }
  const Driver *driver = Driver::get(error);
  if (!driver)
    return false;
  {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (!load(*driver, error))
      return false;
  }
  auto *arena = static_cast<char *>(args.back());
  SmallVector<void *, 16> ptrs;
  for (const BufferRef &ref : buffers)
    ptrs.push_back(ref.argument >= 0 ? args[ref.argument]
                                     : arena + ref.offset);
  auto cuStream = static_cast<CUstream>(stream);
  for (const Step &step : steps) {
    if (step.launch) {
      const Launch &launch = *step.launch;
      SmallVector<void *, 8> values;
      for (int64_t id : launch.buffers)
        values.push_back(ptrs[id]);
      SmallVector<void *, 8> params;
      for (void *&value : values)
        params.push_back(&value);
      CUresult r = driver->launchKernel(
          functions.lookup(launch.kernel), launch.grid, 1, 1, launch.block, 1,
          1, /*sharedMemBytes=*/0, cuStream, params.data(), nullptr);
      if (r) {
        error = "launching kernel " + launch.kernel + ": " +
                driver->describe(r);
        return false;
      }
      continue;
    }
    const Gemm &g = *step.gemm;
    if (g.bias >= 0 && runLt(g, ptrs, cuStream))
      continue;
    const Cublas *cublas = Cublas::get(error);
    if (!cublas)
      return false;
    CublasHandle handle = cublas->handle(context, error);
    if (!handle)
      return false;
    cublas->setStream(handle, cuStream);
    int status =
        g.isDouble
            ? runGemm<double>(g, ptrs, handle,
                              reinterpret_cast<const double *>(ones),
                              cublas->dgemm, cublas->dgemmBatched)
            : runGemm<float>(
                  g, ptrs, handle,
                  reinterpret_cast<const float *>(ones +
                                                  maxBiasRows * sizeof(double)),
                  cublas->sgemm, cublas->sgemmBatched);
    if (status) {
      error = "cuBLAS GEMM (" + std::to_string(g.m) + "x" +
              std::to_string(g.n) + "x" + std::to_string(g.k) +
              ") failed with status " + std::to_string(status);
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

CUDAExecutable::CUDAExecutable(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CUDAExecutable::~CUDAExecutable() = default;

static std::string printIR(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().enableDebugInfo(false));
  return text;
}

std::unique_ptr<CUDAExecutable>
CUDAExecutable::compile(StringRef source, StringRef pipelineOptions,
                        bool keepStageIR, std::string &diagnostics) {
  auto impl = std::make_unique<Impl>();
  MLIRContext context(MLIRContext::Threading::DISABLED);
  DialectRegistry registry;
  registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  llvm::raw_string_ostream diag(diagnostics);
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diag << d.getLocation() << ": "
         << (d.getSeverity() == DiagnosticSeverity::Error ? "error: "
                                                          : "note: ")
         << d.str() << "\n";
    for (Diagnostic &note : d.getNotes())
      diag << note.getLocation() << ": note: " << note.str() << "\n";
    return success();
  });

  auto options = GPUPipelineOptions::createFromString(pipelineOptions);
  if (!options) {
    diag << "error: invalid CUDA pipeline options '" << pipelineOptions
         << "'\n";
    return nullptr;
  }
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  if (!module)
    return nullptr;

  using Build = std::function<void(OpPassManager &)>;
  const std::pair<const char *, Build> stages[] = {
      {"prim", buildDecomposePipeline},
      {"kernel",
       [](OpPassManager &pm) { buildFusePipeline(pm, FuseOptions::gpu()); }},
      {"gpu", [&](OpPassManager &pm) { buildGPUKernelsPipeline(pm, *options); }},
      {"schedule",
       [&](OpPassManager &pm) { buildCUDABinaryPipeline(pm, *options); }}};
  for (const auto &[name, build] : stages) {
    PassManager pm(&context);
    build(pm);
    if (failed(pm.run(*module)))
      return nullptr;
    if (keepStageIR && StringRef(name) != "schedule")
      impl->stageIR[name] = printIR(*module);
  }
  if (failed(impl->extractSchedule(*module)))
    return nullptr;
  if (keepStageIR) {
    // The host program, without the (binary) kernels.
    if (auto binary = module->lookupSymbol<gpu::BinaryOp>("tc_kernels"))
      binary.erase();
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, OpPrintingFlags().enableDebugInfo(false).assumeVerified());
    impl->stageIR["schedule"] = text;
  }
  return std::unique_ptr<CUDAExecutable>(new CUDAExecutable(std::move(impl)));
}

bool CUDAExecutable::run(ArrayRef<void *> buffers, void *stream,
                         std::string &error) const {
  return impl->run(buffers, stream, error);
}
int64_t CUDAExecutable::arenaBytes() const { return impl->arenaBytes; }
int64_t CUDAExecutable::intermediateBytes() const {
  return impl->intermediateBytes;
}
int64_t CUDAExecutable::numKernels() const { return impl->numKernels; }
int64_t CUDAExecutable::numBuffers() const { return impl->numArguments + 1; }
StringRef CUDAExecutable::binaryFormat() const { return impl->format; }
StringRef CUDAExecutable::binary() const { return impl->binary; }
const std::map<std::string, std::string> &CUDAExecutable::stageIR() const {
  return impl->stageIR;
}
