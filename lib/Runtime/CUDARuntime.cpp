//===- CUDARuntime.cpp - compile and run graphs on NVIDIA GPUs --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Runtime/CUDARuntime.h"

#include "CUDALibraries.h"
#include "Cudnn.h"
#include "GPUProgram.h"
#include "tc/Dialect/Kernel/IR/KernelDialect.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"
#include "tc/Runtime/CheckRecord.h"
#include "tc/Pipelines/Pipelines.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::gpu_runtime;
using namespace mlir::tc::cuda;

struct CUDAExecutable::Impl {
  std::unique_ptr<GPUProgram> program;

  // Loaded on the first run, in that run's context.
  mutable std::mutex loadMutex;
  mutable CUcontext context = nullptr;
  mutable llvm::StringMap<CUfunction> functions;
  /// `onesRows` ones in f64, then as many in f32, for bias broadcasts
  /// (grown for a bias GEMM whose rows are per unit of the symbolic size;
  /// an outgrown block stays allocated: captured graphs may read it).
  mutable CUdeviceptr ones = 0;
  mutable int64_t onesRows = 0;
  /// The most rows per unit of the symbolic size of a bias GEMM.
  int64_t biasRowsPerSymbol = 0;
  mutable LtHandle ltHandle = nullptr;
  mutable CUdeviceptr ltWorkspace = 0;
  /// Per step: a bias GEMM's cublasLt plan, made on its first run, and
  /// whether cublasLt cannot do it.
  /// Per step and value of the symbolic size (0 without one), under
  /// ltMutex.
  mutable std::mutex ltMutex;
  mutable std::map<std::pair<size_t, int64_t>, std::shared_ptr<LtPlan>>
      ltPlans;
  mutable std::set<std::pair<size_t, int64_t>> ltUnavailable;
  /// Kernels compiled with checks (TC_CUDA_CHECKS): each run is issued
  /// directly, waited for, and fails when a kernel recorded a violation in
  /// its module's check record (tc/Runtime/CheckRecord.h).
  bool checks = false;
  mutable std::vector<CUdeviceptr> checkRecords;
  /// After a run with checks: false with `error` naming the first
  /// violation (the kernel, the argument, the element or address), which
  /// is then cleared.
  bool readChecks(const Driver &driver, CUstream stream,
                  std::string &error) const;
  /// Per step: a convolution's cuDNN plan (made at compile time) and the
  /// arena offset of its workspace.
  std::vector<std::shared_ptr<const CudnnConvolution>> convPlans;
  /// Per step: a fused attention's cuDNN plan (made at compile time).
  std::vector<std::shared_ptr<const CudnnAttention>> attentionPlans;
  SmallVector<int64_t> workspaceOffsets;

  /// Plans every convolution of the program and places the arena's buffers
  /// and workspaces (`fitWorkspaces`: see the pipeline option); false with
  /// `error` set when cuDNN cannot run one.
  bool planConvolutions(bool allowTF32, bool fitWorkspaces,
                        std::string &error);

  /// Replay of the launch sequence as a CUDA graph. Issuing a graph's
  /// hundreds of launches and library calls one by one can cost the host
  /// more than the GPU takes to run them (a ResNet-18 training step: ~500
  /// launches and ~60 cuDNN calls), so once a call passes the same buffers
  /// as an earlier call (tc's Python side keeps the arena and the outputs
  /// at a few stable addresses: tc/compiler/function.py), the sequence
  /// is captured into a CUDA graph, and later calls with those buffers
  /// launch the graph: one call, the same kernels and library calls on the
  /// same addresses in the same stream order, reading memory when they
  /// run. Buffers seen once run the sequence directly; up to kMaxGraphs
  /// graphs are kept, the least recently used replaced: outputs alternate
  /// between their pool's tensors, and a training loop's activations come
  /// back to one of several addresses (GPT-2's segments between its eager
  /// attentions cycled through six while other work ran between rounds of
  /// steps: four graphs captured each address again, evicted, and issued
  /// half their calls directly). A sequence that cannot be captured (a library
  /// call that refuses capture) is never tried again, and capturing
  /// pauses while the graphs are hardly replayed (see kCapturesJudged).
  /// TC_CUDA_GRAPHS=0 turns replay off.
  struct CapturedGraph {
    std::vector<void *> args; // the run's buffers, then its symbolic size
    CUgraphExec exec = nullptr;
    uint64_t lastUse = 0;
  };
  static constexpr size_t kMaxGraphs = 8, kArgsHistory = 16;
  /// Captures are judged kCapturesJudged at a time: a window whose graphs
  /// were replayed fewer than kReplaysPerTwoCaptures times per two
  /// captures pauses capturing for kFirstPause runs, twice as long after
  /// each further such window (at most kLongestPause), while the graphs
  /// already captured go on replaying. The threshold lies between
  /// FSDP2's re-gathered parameters (0.86 replays per capture, a step 30%
  /// slower than without graphs) and a sweep over sizes in
  /// mode="reduce-overhead" (about 2 per capture).
  static constexpr int64_t kCapturesJudged = 8, kReplaysPerTwoCaptures = 3;
  static constexpr uint64_t kFirstPause = 64, kLongestPause = 4096;
  mutable std::mutex graphMutex;
  mutable std::vector<CapturedGraph> graphs;
  /// The buffers of the latest direct runs, oldest first.
  mutable std::vector<std::vector<void *>> recentArgs;
  mutable CUstream captureStream = nullptr;
  /// Set for good when a capture fails (a library call refuses capture).
  mutable bool graphsOff = false;
  mutable uint64_t runs = 0;
  mutable int64_t replays = 0, captures = 0;
  /// The current window's captures and replays; no capture before run
  /// `pausedUntil`; the next pause's length.
  mutable int64_t windowCaptures = 0, windowReplays = 0;
  mutable uint64_t pausedUntil = 0, nextPause = kFirstPause;

  /// Arguments read back to the host while a run goes on (readEarly):
  /// each one's first byte is copied, right after the last step that
  /// takes it, to its slot of `earlySlots` (pinned host memory, kUnread
  /// until the copy lands), and run() returns once every slot is written.
  /// In step order; `slot` is the argument's place in readEarly's list.
  struct EarlyRead {
    int64_t argument;
    size_t afterStep, slot;
  };
  std::vector<EarlyRead> earlyReads;
  static constexpr uint8_t kUnread = 0xA5;
  /// Under earlyMutex, which a run holds from clearing the slots until it
  /// has read them (a run that reads nothing holds it too: its copies
  /// write the slots). Allocated on the first run (a context is current).
  mutable std::mutex earlyMutex;
  mutable uint8_t *earlySlots = nullptr;
  /// Waits until every early read has landed (or the stream is done or
  /// has failed), then copies the slots to `values` in readEarly's order.
  bool awaitEarlyReads(const Driver &driver, CUstream stream,
                       uint8_t *values, std::string &error) const;
  /// run() without the early reads' slots and wait.
  bool dispatch(const Driver &driver, ArrayRef<void *> args, int64_t symbol,
                CUstream stream, bool capturing, std::string &error) const;

  ~Impl();
  bool load(const Driver &driver, std::string &error) const;
  /// Makes `ones` at least `rows` long (not while a stream captures).
  bool growOnes(const Driver &driver, int64_t rows, std::string &error) const;
  /// Issues the launch sequence on `stream`, one launch or library call at
  /// a time, at value `symbol` of the symbolic size.
  /// `around`, where given, is GPUProgram::execute's (a profile's marks).
  /// `early`: with the early reads' copies (the caller holds earlyMutex).
  bool issue(const Driver &driver, ArrayRef<void *> args, int64_t symbol,
             CUstream stream, std::string &error,
             llvm::function_ref<bool(size_t, bool)> around = {},
             bool early = false) const;
  /// Captures the sequence for `args` and `symbol` into a graph of
  /// `graphs`; null (nothing run, no error) when it cannot be captured.
  CUgraphExec capture(const Driver &driver, ArrayRef<void *> args,
                      int64_t symbol, bool early) const;
  /// Runs the bias GEMM of step `index` through cublasLt; false (nothing
  /// done) when cublasLt cannot, and the caller takes the cuBLAS path.
  bool runLt(const Gemm &g, size_t index, int64_t symbol,
             ArrayRef<void *> ptrs, CUstream stream) const;
  bool run(ArrayRef<void *> args, void *stream, int64_t symbol,
           std::string &error, uint8_t *early = nullptr,
           bool *read = nullptr) const;
  /// Loads the kernels on first use and sizes the bias GEMMs' ones for
  /// `symbol` (not while `capturing`).
  bool prepare(const Driver &driver, int64_t symbol, bool capturing,
               std::string &error) const;
  bool runProfiled(ArrayRef<void *> args, void *stream, int64_t symbol,
                   std::vector<::tc::host::StepTime> &profile,
                   std::string &error) const;
};

bool CUDAExecutable::Impl::load(const Driver &driver,
                                std::string &error) const {
  CUcontext current = nullptr;
  if (CUresult r = driver.ctxGetCurrent(&current)) {
    error = "cuCtxGetCurrent: " + driver.describe(r);
    return false;
  }
  if (!current && context) {
    // A thread that has made no CUDA call yet (autograd's device thread,
    // whose first work in a process can be a backward of tc's) has no
    // current context: the one the graph was loaded in, PyTorch's primary
    // context of the device, becomes current.
    if (CUresult r = driver.ctxSetCurrent(context)) {
      error = "cuCtxSetCurrent: " + driver.describe(r);
      return false;
    }
    current = context;
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
  const GPUProgram &p = *program;
  // PTX goes to cubins on several threads through nvJitLink where the
  // process has it; the driver's JIT (which compiles one module at a time,
  // and caches) takes the rest.
  std::vector<std::string> cubins;
  if (p.format == "isa" && p.binaries.size() > 1)
    if (const JitLink *jitLink = JitLink::get())
      if (int arch = driver.computeCapability())
        cubins = jitLink->compileAll(p.binaries, arch);
  std::vector<CUmodule> modules;
  for (auto [index, object] : llvm::enumerate(p.binaries)) {
    CUmodule module = nullptr;
    // A cubin the driver refuses (an nvJitLink newer than the driver)
    // leaves the PTX to the driver.
    if (index < cubins.size() && !cubins[index].empty() &&
        driver.moduleLoadDataEx(&module, cubins[index].data(), 0, nullptr,
                                nullptr) == 0) {
      modules.push_back(module);
      continue;
    }
    std::string image = object;
    if (p.format == "isa")
      image.push_back('\0'); // PTX is text the driver wants terminated
    char log[4096] = {0};
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
    if (CUresult r = driver.moduleLoadDataEx(&module, image.data(), 2,
                                             options, values)) {
      error = "loading tc's kernels (" + p.format + ") failed: " +
              driver.describe(r) + (log[0] ? std::string(": ") + log : "");
      return false;
    }
    modules.push_back(module);
  }
  if (checks)
    for (CUmodule module : modules) {
      CUdeviceptr record = 0;
      size_t bytes = 0;
      if (driver.moduleGetGlobal(&record, &bytes, module,
                                 ::tc::checks::kGPURecordName) == 0 &&
          bytes == ::tc::checks::kRecordWords * sizeof(int64_t))
        checkRecords.push_back(record);
    }
  if (!p.findKernels<CUmodule>(
          modules,
          [&](CUfunction &fn, CUmodule module, const char *name) {
            return driver.moduleGetFunction(&fn, module, name);
          },
          [&](CUresult r) { return driver.describe(r); }, functions, error))
    return false;
  if (!growOnes(driver, p.maxBiasRows, error))
    return false;
  if (p.maxBiasRows || biasRowsPerSymbol)
    if (const CublasLt *lt = CublasLt::get())
      if (lt->create(&ltHandle) == 0 &&
          driver.memAlloc(&ltWorkspace, kLtWorkspaceBytes) != 0)
        ltWorkspace = 0;
  context = current;
  return true;
}

bool CUDAExecutable::Impl::growOnes(const Driver &driver, int64_t rows,
                                    std::string &error) const {
  if (rows <= onesRows)
    return true;
  rows = std::max(rows, 2 * onesRows);
  std::vector<double> hostOnes(rows, 1.0);
  std::vector<float> hostOnesF(rows, 1.0f);
  // Doubles first, floats after them.
  CUdeviceptr grown = 0;
  if (CUresult r = driver.memAlloc(&grown,
                                   rows * (sizeof(double) + sizeof(float)))) {
    error = "cuMemAlloc: " + driver.describe(r);
    return false;
  }
  driver.memcpyHtoD(grown, hostOnes.data(), rows * sizeof(double));
  driver.memcpyHtoD(grown + rows * sizeof(double), hostOnesF.data(),
                    rows * sizeof(float));
  ones = grown;
  onesRows = rows;
  return true;
}

bool CUDAExecutable::Impl::planConvolutions(bool allowTF32,
                                            bool fitWorkspaces,
                                            std::string &error) {
  GPUProgram &p = *program;
  convPlans.resize(p.steps.size());
  SmallVector<int64_t> workspace(p.steps.size(), 0);
  // Plans are made in (and shared within) the current context.
  CUcontext device = nullptr;
  std::string unavailable;
  if (const Driver *driver = Driver::get(unavailable))
    driver->ctxGetCurrent(&device);
  attentionPlans.resize(p.steps.size());
  for (auto [index, step] : llvm::enumerate(p.steps)) {
    if (step.attention) {
      attentionPlans[index] =
          CudnnAttention::planShared(step.attention->call, device, error);
      if (!attentionPlans[index])
        return false;
      workspace[index] =
          static_cast<int64_t>(attentionPlans[index]->workspaceBytes());
      continue;
    }
    if (!step.conv)
      continue;
    convPlans[index] =
        CudnnConvolution::planShared(*step.conv, allowTF32, device, error);
    if (!convPlans[index])
      return false;
    workspace[index] = static_cast<int64_t>(convPlans[index]->workspaceBytes());
  }
  // The arena (which comes from PyTorch's allocator and counts in its
  // statistics) holds each convolution's workspace during its step, placed
  // with the buffers.
  p.repackArena(SmallVector<int64_t>(p.steps.size(), 0));
  int64_t buffersOnly = p.arenaBytes;
  workspaceOffsets = p.repackArena(workspace);
  if (fitWorkspaces && p.arenaBytes > buffersOnly) {
    // A convolution whose workspace would need more than the arena the
    // buffers need, beside the buffers live at its step, takes the best
    // algorithm whose workspace fits (where cuDNN has one): the arena is
    // the graph's memory for the whole run, and one large workspace (an
    // FFT engine's, 89 MB in the ResNet-18 backward) would add to the peak.
    // Not at any price: where both plans were timed, one more than
    // kRefitSlowdown times slower keeps its workspace (the fitting engines
    // of a grouped convolution of 48 channels per group took 10x the best
    // one's 0.37 ms on the H200, as eager's own plan takes its workspace).
    constexpr float kRefitSlowdown = 1.25f;
    SmallVector<int64_t> live = p.liveArenaBytes();
    for (auto [index, step] : llvm::enumerate(p.steps)) {
      int64_t room = buffersOnly - live[index];
      if (!step.conv || workspace[index] <= room)
        continue;
      std::string ignored;
      if (auto smaller = CudnnConvolution::planShared(
              *step.conv, allowTF32, device, ignored,
              static_cast<size_t>(std::max<int64_t>(room, 0)))) {
        // A refit without an execution plan of the graph API runs the
        // legacy call, whose algorithm nothing timed: at the 48-channel
        // groups above, cuDNN's grouped direct kernel, 64 ms where the
        // plan took 0.47 (visformer's backward, its 28 x 28 stage). Nor is
        // a refit taken that was not timed where the plan it replaces was.
        if (convPlans[index]->hasExecutionPlan() &&
            !smaller->hasExecutionPlan())
          continue;
        float before = convPlans[index]->plannedMilliseconds(),
              after = smaller->plannedMilliseconds();
        if (before > 0 && (after <= 0 || after > kRefitSlowdown * before))
          continue;
        workspace[index] = static_cast<int64_t>(smaller->workspaceBytes());
        convPlans[index] = std::move(smaller);
      }
    }
    workspaceOffsets = p.repackArena(workspace);
  }
  return true;
}

bool CUDAExecutable::Impl::runLt(const Gemm &g, size_t index, int64_t symbol,
                                 ArrayRef<void *> ptrs,
                                 CUstream stream) const {
  const CublasLt *lt = CublasLt::get();
  std::pair<size_t, int64_t> key(index, g.perSymbol ? symbol : 0);
  std::lock_guard<std::mutex> lock(ltMutex);
  if (!lt || g.batch != 1 || !ltWorkspace || ltUnavailable.count(key))
    return false;
  std::shared_ptr<LtPlan> &planRef = ltPlans[key];
  if (!planRef) {
    ltUnavailable.insert(key); // until the plan is complete
    // Column-major D (n x m) = op(B)^T (n x k) op(A)^T (k x m), the bias
    // along D's rows.
    auto plan = std::make_shared<LtPlan>();
    int dataType = dataTypeOf(g.element);
    bool isDouble = g.element == GemmElement::F64;
    int opA = g.transB ? kCublasOpT : kCublasOpN;
    int opB = g.transA ? kCublasOpT : kCublasOpN;
    uint32_t epilogue = kLtEpilogueBias;
    void *bias = ptrs[g.bias];
    // Half types compute and scale in f32, as PyTorch's addmm does.
    if (lt->descCreate(&plan->desc, isDouble ? kComputeF64 : kComputeF32,
                       isDouble ? kDataF64 : kDataF32) ||
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
    planRef = std::move(plan);
    ltUnavailable.erase(key);
  }
  const LtPlan &plan = *planRef;
  // The bias pointer is part of the descriptor: refresh it per run.
  void *bias = ptrs[g.bias];
  lt->descSet(plan.desc, kLtBiasPointer, &bias, sizeof(bias));
  const double oneD = 1, zeroD = 0;
  const float oneF = 1, zeroF = 0;
  bool isDouble = g.element == GemmElement::F64;
  const void *alpha = isDouble ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = isDouble ? static_cast<const void *>(&zeroD) : &zeroF;
  return lt->matmul(ltHandle, plan.desc, alpha, ptrs[g.b], plan.a,
                    ptrs[g.a], plan.b, beta, ptrs[g.out], plan.d,
                    ptrs[g.out], plan.d, plan.heuristic.algo,
                    reinterpret_cast<void *>(ltWorkspace),
                    kLtWorkspaceBytes, stream) == 0;
}

static bool graphsDisabledByEnvironment() {
  const char *value = std::getenv("TC_CUDA_GRAPHS");
  return value && std::string(value) == "0";
}

CUDAExecutable::Impl::~Impl() {
  std::string ignored;
  const Driver *driver = graphs.empty() && !captureStream && !earlySlots
                             ? nullptr
                             : Driver::get(ignored);
  if (!driver)
    return;
  for (CapturedGraph &graph : graphs)
    driver->graphExecDestroy(graph.exec);
  if (captureStream)
    driver->streamDestroy(captureStream);
  // After the graphs: they copy to the slots.
  if (earlySlots)
    driver->memFreeHost(earlySlots);
}

bool CUDAExecutable::Impl::run(ArrayRef<void *> args, void *stream,
                               int64_t symbol, std::string &error,
                               uint8_t *early, bool *read) const {
  if (read)
    *read = false;
  const Driver *driver = Driver::get(error);
  if (!driver)
    return false;
  auto cuStream = static_cast<CUstream>(stream);
  int capturing = 0;
  if (driver->streamIsCapturing(cuStream, &capturing))
    capturing = 1;
  if (!prepare(*driver, symbol, capturing, error))
    return false;
  if (earlyReads.empty())
    return dispatch(*driver, args, symbol, cuStream, capturing, error);
  std::lock_guard<std::mutex> lock(earlyMutex);
  if (!earlySlots && !capturing) {
    void *slots = nullptr;
    if (CUresult r = driver->memHostAlloc(&slots, earlyReads.size(),
                                          /*CU_MEMHOSTALLOC_PORTABLE=*/1)) {
      error = "allocating pinned memory for the flags read early: " +
              driver->describe(r);
      return false;
    }
    earlySlots = static_cast<uint8_t *>(slots);
  }
  // Inside the caller's own capture nothing runs yet: nothing to wait for
  // (the caller reads the arguments after its replay). Every other run
  // waits for its copies, wanted or not: one landing after the next run
  // cleared the slots would be read as that run's.
  bool reading = !capturing && earlySlots;
  if (reading)
    std::memset(earlySlots, kUnread, earlyReads.size());
  if (!dispatch(*driver, args, symbol, cuStream, capturing, error))
    return false;
  if (!reading)
    return true;
  SmallVector<uint8_t, 8> unwanted(early ? 0 : earlyReads.size());
  if (!awaitEarlyReads(*driver, cuStream, early ? early : unwanted.data(),
                       error))
    return false;
  if (read)
    *read = early != nullptr;
  return true;
}

bool CUDAExecutable::Impl::awaitEarlyReads(const Driver &driver,
                                           CUstream stream, uint8_t *values,
                                           std::string &error) const {
  const volatile uint8_t *slots = earlySlots;
  size_t count = earlyReads.size();
  auto landed = [&] {
    for (size_t i = 0; i < count; ++i)
      if (slots[i] == kUnread)
        return false;
    return true;
  };
  // The copies follow early steps (an embedding's gather): the slots land
  // long before the run ends. Every so often the stream says whether the
  // run failed (its copies then never land) or ended.
  for (unsigned spin = 1; !landed(); ++spin) {
    if (spin % 64)
      continue;
    CUresult r = driver.streamQuery(stream);
    if (r == 0) {
      std::atomic_thread_fence(std::memory_order_acquire);
      if (landed())
        break;
      error = "a flag read early never arrived";
      return false;
    }
    if (r != kErrorNotReady) {
      error = "waiting for the flags read early: " + driver.describe(r);
      return false;
    }
    std::this_thread::yield();
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  for (const EarlyRead &read : earlyReads)
    values[read.slot] = slots[&read - earlyReads.data()];
  return true;
}

bool CUDAExecutable::Impl::dispatch(const Driver &drv, ArrayRef<void *> args,
                                    int64_t symbol, CUstream cuStream,
                                    bool capturing, std::string &error) const {
  const Driver *driver = &drv;
  // The early reads' copies (not in the caller's capture: its replays
  // would write the slots while another run reads them).
  bool early = earlySlots && !capturing;
  if (checks)
    return issue(*driver, args, symbol, cuStream, error, {}, early) &&
           readChecks(*driver, cuStream, error);
  static const bool disabled = graphsDisabledByEnvironment();
  if (disabled || !driver->hasGraphs())
    return issue(*driver, args, symbol, cuStream, error, {}, early);
  // Inside the caller's own capture (torch.cuda.graph) the launches go
  // into the caller's graph, one by one.
  if (capturing)
    return issue(*driver, args, symbol, cuStream, error, {}, early);
  std::lock_guard<std::mutex> lock(graphMutex);
  if (graphsOff)
    return issue(*driver, args, symbol, cuStream, error, {}, early);
  // Graphs are keyed on the buffers and the symbolic size.
  std::vector<void *> key(args.begin(), args.end());
  key.push_back(reinterpret_cast<void *>(static_cast<intptr_t>(symbol)));
  ++runs;
  auto launchGraph = [&](CUgraphExec exec) {
    if (CUresult r = driver->graphLaunch(exec, cuStream)) {
      error = "launching the CUDA graph: " + driver->describe(r);
      return false;
    }
    return true;
  };
  for (CapturedGraph &graph : graphs) {
    if (graph.args != key)
      continue;
    graph.lastUse = runs;
    ++replays;
    ++windowReplays;
    return launchGraph(graph.exec);
  }
  auto seen = llvm::find(recentArgs, key);
  if (seen == recentArgs.end()) {
    if (recentArgs.size() == kArgsHistory)
      recentArgs.erase(recentArgs.begin());
    recentArgs.push_back(std::move(key));
    return issue(*driver, args, symbol, cuStream, error, {}, early);
  }
  recentArgs.erase(seen);
  // Capturing pays only when graphs are replayed: a capture costs the
  // host more than issuing the sequence (instantiation), and where buffers
  // move on between calls (FSDP2 re-gathers parameters, DDP's pieces see
  // new activations) each graph replayed about once made a Llama training
  // step 30% slower. A window of captures that shows that pauses
  // capturing (kCapturesJudged); a steady pattern later is captured again.
  if (runs < pausedUntil)
    return issue(*driver, args, symbol, cuStream, error, {}, early);
  if (windowCaptures >= kCapturesJudged) {
    bool paid = 2 * windowReplays >= kReplaysPerTwoCaptures * windowCaptures;
    windowCaptures = windowReplays = 0;
    if (paid) {
      nextPause = kFirstPause;
    } else {
      pausedUntil = runs + nextPause;
      nextPause = std::min(2 * nextPause, kLongestPause);
      return issue(*driver, args, symbol, cuStream, error, {}, early);
    }
  }
  CUgraphExec exec = capture(*driver, args, symbol, early);
  if (!exec) {
    graphsOff = true;
    return issue(*driver, args, symbol, cuStream, error, {}, early);
  }
  return launchGraph(exec);
}

bool CUDAExecutable::Impl::prepare(const Driver &driver, int64_t symbol,
                                   bool capturing, std::string &error) const {
  std::lock_guard<std::mutex> lock(loadMutex);
  if (!load(driver, error))
    return false;
  // Ones for this size's bias GEMMs (allocating is not allowed while the
  // caller's stream captures; the GEMM then reports it).
  return !biasRowsPerSymbol || capturing ||
         growOnes(driver, biasRowsPerSymbol * symbol, error);
}

bool CUDAExecutable::Impl::runProfiled(ArrayRef<void *> args, void *stream,
                                       int64_t symbol,
                                       std::vector<::tc::host::StepTime> &profile,
                                       std::string &error) const {
  const Driver *driver = Driver::get(error);
  if (!driver)
    return false;
  if (!driver->hasEvents()) {
    error = "the CUDA driver has no events to time the steps with";
    return false;
  }
  auto cuStream = static_cast<CUstream>(stream);
  int capturing = 0;
  if (driver->streamIsCapturing(cuStream, &capturing) || capturing) {
    error = "a profiled run cannot be captured";
    return false;
  }
  if (!prepare(*driver, symbol, /*capturing=*/false, error))
    return false;
  // An event before and after each step that runs: the GPU's time between
  // them is the step's (the launch sequence issued one by one, no graph).
  std::vector<CUevent> events;
  std::vector<size_t> ran;
  llvm::scope_exit destroy([&] {
    for (CUevent event : events)
      driver->eventDestroy(event);
  });
  auto around = [&](size_t index, bool done) {
    CUevent event = nullptr;
    if (CUresult r = driver->eventCreate(&event, /*CU_EVENT_DEFAULT=*/0)) {
      error = "creating a CUDA event: " + driver->describe(r);
      return false;
    }
    events.push_back(event);
    if (!done)
      ran.push_back(index);
    if (CUresult r = driver->eventRecord(event, cuStream)) {
      error = "recording a CUDA event: " + driver->describe(r);
      return false;
    }
    return true;
  };
  if (!issue(*driver, args, symbol, cuStream, error, around))
    return false;
  if (checks && !readChecks(*driver, cuStream, error))
    return false;
  if (!events.empty()) {
    if (CUresult r = driver->eventSynchronize(events.back())) {
      error = "waiting for the profiled run: " + driver->describe(r);
      return false;
    }
  }
  for (auto [i, index] : llvm::enumerate(ran)) {
    float ms = 0;
    if (CUresult r = driver->eventElapsedTime(&ms, events[2 * i],
                                              events[2 * i + 1])) {
      error = "timing a step: " + driver->describe(r);
      return false;
    }
    profile.push_back({program->stepName(index), ms * 1e-3,
                       program->stepBytes(index, symbol)});
  }
  return true;
}

bool CUDAExecutable::Impl::readChecks(const Driver &driver, CUstream stream,
                                      std::string &error) const {
  if (CUresult r = driver.streamSynchronize(stream)) {
    error = "waiting for a run with kernel checks: " + driver.describe(r);
    return false;
  }
  for (CUdeviceptr record : checkRecords) {
    int64_t words[::tc::checks::kRecordWords] = {0};
    if (CUresult r = driver.memcpyDtoH(words, record, sizeof(words))) {
      error = "reading the kernel checks: " + driver.describe(r);
      return false;
    }
    error = ::tc::checks::describe(
        words,
        [&](uint64_t id) {
          for (const auto &entry : functions)
            if (::tc::checks::kernelId(entry.getKey()) == id)
              return entry.getKey().str();
          return std::string();
        },
        kernel::kGPUBufferAlignment);
    if (error.empty())
      continue;
    int64_t zeros[::tc::checks::kRecordWords] = {0};
    driver.memcpyHtoD(record, zeros, sizeof(zeros));
    return false;
  }
  return true;
}

CUgraphExec CUDAExecutable::Impl::capture(const Driver &driver,
                                          ArrayRef<void *> args,
                                          int64_t symbol, bool early) const {
  if (!captureStream &&
      driver.streamCreate(&captureStream, kStreamNonBlocking) != 0) {
    captureStream = nullptr;
    return nullptr;
  }
  // Thread-local capture: other threads (PyTorch's allocator, say) are not
  // affected, and a call of this thread that is not capturable fails the
  // capture instead of running.
  if (driver.streamBeginCapture(captureStream, kCaptureModeThreadLocal))
    return nullptr;
  std::string ignored;
  bool issued =
      issue(driver, args, symbol, captureStream, ignored, {}, early);
  CUgraph graph = nullptr;
  CUresult ended = driver.streamEndCapture(captureStream, &graph);
  CUgraphExec exec = nullptr;
  bool ok = issued && ended == 0 && graph &&
            driver.graphInstantiate(&exec, graph, 0) == 0 && exec;
  if (graph)
    driver.graphDestroy(graph);
  if (!ok)
    return nullptr;
  if (graphs.size() == kMaxGraphs) {
    auto oldest = llvm::min_element(graphs, [](const CapturedGraph &a,
                                               const CapturedGraph &b) {
      return a.lastUse < b.lastUse;
    });
    driver.graphExecDestroy(oldest->exec);
    graphs.erase(oldest);
  }
  std::vector<void *> key(args.begin(), args.end());
  key.push_back(reinterpret_cast<void *>(static_cast<intptr_t>(symbol)));
  graphs.push_back({std::move(key), exec, runs});
  ++captures;
  ++windowCaptures;
  return exec;
}

/// A half-precision GEMM without a bias through cublasGemmStridedBatchedEx
/// (f16/bf16 operands and result, f32 accumulation and scaling: PyTorch's
/// own bf16 matmul), in runColumnMajorGemm's column-major argument order.
static int runHalfGemm(const Cublas &cublas, CublasHandle handle,
                       const Gemm &g, ArrayRef<void *> ptrs) {
  const float one = 1, zero = 0;
  int type = dataTypeOf(g.element);
  int lda = g.transA ? g.m : g.k, ldb = g.transB ? g.k : g.n;
  int opA = g.transA ? kCublasOpT : kCublasOpN;
  int opB = g.transB ? kCublasOpT : kCublasOpN;
  return cublas.gemmEx(handle, opB, opA, g.n, g.m, g.k, &one, ptrs[g.b], type,
                       ldb, g.k * g.n, ptrs[g.a], type, lda, g.m * g.k, &zero,
                       ptrs[g.out], type, g.n, g.m * g.n, g.batch, kComputeF32,
                       kGemmDefaultAlgo);
}

bool CUDAExecutable::Impl::issue(
    const Driver &drv, ArrayRef<void *> args, int64_t symbol,
    CUstream cuStream, std::string &error,
    llvm::function_ref<bool(size_t, bool)> around, bool early) const {
  const Driver *driver = &drv;
  // Each early read's copy, after the step that last takes its argument
  // (and, for one whose step did not run, at the end).
  size_t copied = 0;
  auto copyUpTo = [&](size_t step) {
    for (; copied < earlyReads.size() && earlyReads[copied].afterStep <= step;
         ++copied) {
      auto from = reinterpret_cast<CUdeviceptr>(
          args[earlyReads[copied].argument]);
      if (CUresult r = driver->memcpyDtoHAsync(earlySlots + copied, from, 1,
                                               cuStream)) {
        error = "reading a flag early: " + driver->describe(r);
        return false;
      }
    }
    return true;
  };
  auto withCopies = [&](size_t index, bool done) {
    return (!around || around(index, done)) && (!done || copyUpTo(index));
  };
  auto launch = [&](const Launch &launch, int64_t grid, void **params) {
    CUresult r = driver->launchKernel(
        functions.lookup(launch.kernel), grid, 1, 1, launch.block, 1, 1,
        /*sharedMemBytes=*/0, cuStream, params, nullptr);
    if (r)
      error = "launching kernel " + launch.kernel + ": " + driver->describe(r);
    return r == 0;
  };
  auto gemm = [&](const Gemm &g, size_t index, ArrayRef<void *> ptrs) {
    bool half = g.element == GemmElement::F16 || g.element == GemmElement::BF16;
    if (g.bias >= 0 && runLt(g, index, symbol, ptrs, cuStream))
      return true;
    if (g.bias >= 0 && half) {
      // The bias-broadcast path below has f32 and f64 ones only.
      error = "cublasLt cannot run this half-precision bias GEMM (" +
              std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
              std::to_string(g.k) + ")";
      return false;
    }
    if (g.bias >= 0 && g.m > onesRows) {
      error = "a bias GEMM of " + std::to_string(g.m) +
              " rows at a new size inside a stream capture (run it once "
              "outside the capture first)";
      return false;
    }
    const Cublas *cublas = Cublas::get(error);
    if (!cublas)
      return false;
    CublasHandle handle = cublas->handle(context, error);
    if (!handle)
      return false;
    cublas->setStream(handle, cuStream);
    if (half) {
      int status = runHalfGemm(*cublas, handle, g, ptrs);
      if (status)
        error = "cuBLAS half-precision GEMM (" + std::to_string(g.m) + "x" +
                std::to_string(g.n) + "x" + std::to_string(g.k) +
                ") failed with status " + std::to_string(status);
      return status == 0;
    }
    int64_t rows = onesRows;
    int status =
        g.element == GemmElement::F64
            ? runColumnMajorGemm<double>(
                  g, ptrs, handle, reinterpret_cast<const double *>(ones),
                  kCublasOpN, kCublasOpT, cublas->dgemm, cublas->dgemmBatched)
            : runColumnMajorGemm<float>(
                  g, ptrs, handle,
                  reinterpret_cast<const float *>(ones + rows * sizeof(double)),
                  kCublasOpN, kCublasOpT, cublas->sgemm, cublas->sgemmBatched);
    if (status)
      error = "cuBLAS GEMM (" + std::to_string(g.m) + "x" +
              std::to_string(g.n) + "x" + std::to_string(g.k) +
              ") failed with status " + std::to_string(status);
    return status == 0;
  };
  auto conv = [&](const runtime::ConvCall &call, size_t index,
                  ArrayRef<void *> ptrs) {
    void *workspace =
        static_cast<char *>(args.back()) + workspaceOffsets[index];
    return convPlans[index]->run(ptrs[call.input], ptrs[call.weight],
                                 ptrs[call.output], workspace, cuStream,
                                 error);
  };
  auto attention = [&](const Attention &a, size_t index,
                       ArrayRef<void *> ptrs) {
    void *workspace =
        static_cast<char *>(args.back()) + workspaceOffsets[index];
    // Half-precision elements: a view's offset is in units of 2 bytes.
    auto at = [&](int64_t id, int64_t offset) -> void * {
      return static_cast<char *>(ptrs[id]) + 2 * offset;
    };
    return attentionPlans[index]->run(
        at(a.query, a.call.qOffset), at(a.key, a.call.kOffset),
        at(a.value, a.call.vOffset),
        a.bias >= 0 ? ptrs[a.bias] : nullptr, at(a.out, a.call.outOffset),
        workspace,
        cuStream, error);
  };
  if (!early)
    return program->execute(args, symbol, launch, gemm, conv, attention,
                            error, around);
  return program->execute(args, symbol, launch, gemm, conv, attention, error,
                          withCopies) &&
         copyUpTo(std::numeric_limits<size_t>::max());
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

std::string CUDAExecutable::attentionUnavailable(bool bf16,
                                                 ArrayRef<int64_t> sizes,
                                                 ArrayRef<int64_t> biasDims,
                                                 bool causal, float scale) {
  if (sizes.size() != 7 || biasDims.size() != 2)
    return "expected 7 sizes and 2 bias sizes";
  runtime::AttentionCall c = denseAttentionCall(
      bf16, sizes, biasDims[0], biasDims[1],
      prim::AttentionOp::getBiasWidth(sizes[4]), causal, scale);
  std::string why = gpu_runtime::attentionUnsupportedReason(c);
  if (!why.empty())
    return why;
  CUcontext device = nullptr;
  std::string error;
  const Driver *driver = Driver::get(error);
  if (!driver)
    return error;
  if (driver->ctxGetCurrent(&device) != 0 || !device)
    return "no current CUDA context";
  if (!CudnnAttention::planShared(c, device, error))
    return error.empty() ? "cuDNN has no plan for it" : error;
  return "";
}

CUDAExecutable::CUDAExecutable(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CUDAExecutable::~CUDAExecutable() = default;

std::unique_ptr<CUDAExecutable>
CUDAExecutable::compile(StringRef source, StringRef pipelineOptions,
                        bool keepStageIR, std::string &diagnostics,
                        StringRef cacheDir) {
  auto options = GPUPipelineOptions::createFromString(pipelineOptions);
  if (!options) {
    diagnostics += "error: invalid CUDA pipeline options '" +
                   pipelineOptions.str() + "'\n";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->checks = options->checks;
  impl->program =
      GPUProgram::compile(source, Target::CUDA, *options, keepStageIR,
                          diagnostics, cacheDir, pipelineOptions);
  if (!impl->program)
    return nullptr;
  for (const Step &step : impl->program->steps)
    if (step.gemm && step.gemm->bias >= 0 && (step.gemm->perSymbol & 2u))
      impl->biasRowsPerSymbol =
          std::max(impl->biasRowsPerSymbol, step.gemm->m);
  // Seconds per phase after the pipeline's stages. (Planning cuDNN while
  // the driver compiles the PTX measured slower on the H100: they contend.)
  auto seconds = [start = std::chrono::steady_clock::now()]() mutable {
    auto now = std::chrono::steady_clock::now();
    double elapsed = std::chrono::duration<double>(now - start).count();
    start = now;
    return elapsed;
  };
  {
    std::string error;
    if (!impl->planConvolutions(options->allowTF32, options->fitWorkspaces,
                                error)) {
      diagnostics += "error: " + error + "\n";
      return nullptr;
    }
    impl->program->compileSeconds["cudnn"] = seconds();
  }
  // Where a CUDA context is current (the backend compiles in PyTorch's),
  // the kernels load now: the driver's compile of the PTX is part of the
  // compile, and a load error is a compile error (the graph runs in eager).
  // Elsewhere (no driver, no context) the first run loads them.
  std::string unavailable;
  if (const Driver *driver = Driver::get(unavailable)) {
    CUcontext current = nullptr;
    if (driver->ctxGetCurrent(&current) == 0 && current) {
      std::lock_guard<std::mutex> lock(impl->loadMutex);
      std::string error;
      if (!impl->load(*driver, error)) {
        diagnostics += "error: " + error + "\n";
        return nullptr;
      }
      impl->program->compileSeconds["load"] = seconds();
    }
  }
  return std::unique_ptr<CUDAExecutable>(new CUDAExecutable(std::move(impl)));
}

bool CUDAExecutable::fromCache() const {
  return impl->program->fromCache;
}

bool CUDAExecutable::run(ArrayRef<void *> buffers, void *stream,
                         std::string &error, int64_t symbol) const {
  return impl->run(buffers, stream, symbol, error);
}

bool CUDAExecutable::runReading(ArrayRef<void *> buffers, void *stream,
                                int64_t symbol, uint8_t *values, bool &read,
                                std::string &error) const {
  return impl->run(buffers, stream, symbol, error, values, &read);
}

bool CUDAExecutable::readEarly(ArrayRef<int64_t> arguments,
                               std::string &why) {
  Impl &self = *impl;
  std::string error;
  const Driver *driver = Driver::get(error);
  if (!driver || !driver->hasEarlyReads()) {
    why = driver ? "the CUDA driver cannot copy to pinned memory"
                 : error;
    return false;
  }
  if (self.checks) {
    why = "a run with kernel checks waits for the GPU anyway";
    return false;
  }
  std::vector<Impl::EarlyRead> reads;
  for (auto [slot, argument] : llvm::enumerate(arguments)) {
    std::optional<size_t> last;
    if (argument >= 0 && argument < self.program->numArguments)
      last = self.program->lastStepTaking(argument);
    if (!last) {
      why = "no step writes argument #" + std::to_string(argument);
      return false;
    }
    reads.push_back({argument, *last, slot});
  }
  llvm::stable_sort(reads, [](const Impl::EarlyRead &a,
                              const Impl::EarlyRead &b) {
    return a.afterStep < b.afterStep;
  });
  std::scoped_lock lock(self.earlyMutex, self.graphMutex);
  auto same = [](const Impl::EarlyRead &a, const Impl::EarlyRead &b) {
    return a.argument == b.argument && a.slot == b.slot;
  };
  if (!self.earlyReads.empty()) {
    // Once set, the slots and the graphs copying to them stay.
    if (llvm::equal(self.earlyReads, reads, same))
      return true;
    why = "this graph reads other arguments early already";
    return false;
  }
  self.earlyReads = std::move(reads);
  // Graphs captured so far lack the copies.
  for (Impl::CapturedGraph &graph : self.graphs)
    driver->graphExecDestroy(graph.exec);
  self.graphs.clear();
  self.recentArgs.clear();
  return true;
}
bool CUDAExecutable::runProfiled(ArrayRef<void *> buffers, void *stream,
                                 int64_t symbol,
                                 std::vector<::tc::host::StepTime> &profile,
                                 std::string &error) const {
  return impl->runProfiled(buffers, stream, symbol, profile, error);
}
bool CUDAExecutable::symbolic() const { return impl->program->symbolic(); }
int64_t CUDAExecutable::arenaBytesPerSymbol() const {
  return impl->program->arenaBytesPerSymbol;
}
int64_t CUDAExecutable::graphReplays() const {
  std::lock_guard<std::mutex> lock(impl->graphMutex);
  return impl->replays;
}
int64_t CUDAExecutable::graphCaptures() const {
  std::lock_guard<std::mutex> lock(impl->graphMutex);
  return impl->captures;
}
int64_t CUDAExecutable::arenaBytes() const {
  return impl->program->arenaBytes;
}
int64_t CUDAExecutable::intermediateBytes() const {
  return impl->program->intermediateBytes;
}
int64_t CUDAExecutable::numKernels() const {
  return impl->program->numKernels;
}
int64_t CUDAExecutable::numBuffers() const {
  return impl->program->numArguments + 1;
}
int64_t CUDAExecutable::numConvolutionPlans() const {
  return llvm::count_if(impl->convPlans, [](const auto &plan) {
    return plan && plan->hasExecutionPlan();
  });
}
StringRef CUDAExecutable::binaryFormat() const {
  return impl->program->format;
}
ArrayRef<std::string> CUDAExecutable::binaries() const {
  return impl->program->binaries;
}
const std::map<std::string, std::string> &CUDAExecutable::stageIR() const {
  return impl->program->stageIR;
}
const std::map<std::string, double> &CUDAExecutable::compileSeconds() const {
  return impl->program->compileSeconds;
}
