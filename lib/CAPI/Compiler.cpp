//===- Compiler.cpp - C API of the tc compiler ------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc-c/Compiler.h"

#include "tc/Runtime/CPURuntime.h"
#include "tc/Runtime/CUDARuntime.h"
#include "tc/Runtime/HostProgram.h"
#include "tc/Runtime/ROCmRuntime.h"
#include "tc/Dialect/Kernel/IR/KernelDialect.h"
#include "tc/Dialect/Prim/Transforms/Passes.h"
#include "llvm/Support/CrashRecoveryContext.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

using mlir::tc::CPUExecutable;
using mlir::tc::CUDAExecutable;
using mlir::tc::ROCmExecutable;

/// One compiled graph, for one of the targets.
struct TcExecutable {
  std::unique_ptr<CPUExecutable> cpu;
  std::unique_ptr<CUDAExecutable> cuda;
  std::unique_ptr<ROCmExecutable> rocm;

  template <typename Fn>
  decltype(auto) visit(Fn fn) {
    if (cpu)
      return fn(*cpu);
    return cuda ? fn(*cuda) : fn(*rocm);
  }
};

static char *copyString(const std::string &s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

/// Runs `compile` so that a bug in the compiler cannot take the caller's
/// process down: a crash (or a failed assertion) becomes an error.
template <typename Fn>
static bool compileSafely(Fn compile, std::string &diagnostics) {
  llvm::CrashRecoveryContext::Enable();
  llvm::CrashRecoveryContext recovery;
  if (recovery.RunSafely(compile))
    return true;
  diagnostics += "error: tc crashed while compiling this graph (the crash "
                 "was contained); this is a bug in tc\n";
  return false;
}

/// Compiles for a platform (CPUExecutable, CUDAExecutable or
/// ROCmExecutable), into `slot` of the result; `cache` is the CPU's cache
/// entry or a GPU's cache folder.
template <typename Executable>
static TcExecutableRef
compileInto(const char *source, size_t length, const char *options,
            int keepStageIR, const char *cache, char **error,
            std::unique_ptr<Executable> TcExecutable::*slot) {
  std::string diagnostics;
  std::unique_ptr<Executable> exe;
  if (!compileSafely(
          [&] {
            exe = Executable::compile(llvm::StringRef(source, length),
                                      options ? options : "",
                                      keepStageIR != 0, diagnostics,
                                      cache ? cache : "");
          },
          diagnostics))
    exe.reset();
  if (!exe) {
    if (error)
      *error = copyString(diagnostics);
    return nullptr;
  }
  auto *result = new TcExecutable();
  result->*slot = std::move(exe);
  return result;
}

TcExecutableRef tcCompileCPU(const char *source, size_t length,
                             const char *options, int keepStageIR,
                             const char *cacheEntry, char **error) {
  return compileInto(source, length, options, keepStageIR, cacheEntry, error,
                     &TcExecutable::cpu);
}

int tcExportCPU(const char *source, size_t length, const char *options,
                const char *objectPath, const char *planPath, char **error) {
  std::string diagnostics;
  bool ok = false;
  if (!compileSafely(
          [&] {
            ok = CPUExecutable::exportGraph(llvm::StringRef(source, length),
                                            options ? options : "",
                                            objectPath, planPath,
                                            diagnostics);
          },
          diagnostics))
    ok = false;
  if (!ok && error)
    *error = copyString(diagnostics);
  return ok ? 0 : 1;
}

TcExecutableRef tcCompileCUDA(const char *source, size_t length,
                              const char *options, int keepStageIR,
                              const char *cacheDir, char **error) {
  return compileInto(source, length, options, keepStageIR, cacheDir, error,
                     &TcExecutable::cuda);
}

TcExecutableRef tcCompileROCm(const char *source, size_t length,
                              const char *options, int keepStageIR,
                              const char *cacheDir, char **error) {
  return compileInto(source, length, options, keepStageIR, cacheDir, error,
                     &TcExecutable::rocm);
}

int tcExecutableRun(TcExecutableRef exe, void *const *buffers, size_t count,
                    char **error) {
  return tcExecutableRunOnStream(exe, buffers, count, nullptr, error);
}

int tcExecutableRunOnStream(TcExecutableRef exe, void *const *buffers,
                            size_t count, void *stream, char **error) {
  std::string message;
  llvm::ArrayRef<void *> args(buffers, count);
  bool ok = exe->cpu    ? exe->cpu->run(args, message)
            : exe->cuda ? exe->cuda->run(args, stream, message)
                        : exe->rocm->run(args, stream, message);
  if (ok)
    return 0;
  if (error)
    *error = copyString(message);
  return 1;
}

int tcExecutableRunSymbolic(TcExecutableRef exe, void *const *buffers,
                            size_t count, int64_t symbol, char **error) {
  return tcExecutableRunSymbolicOnStream(exe, buffers, count, nullptr, symbol,
                                         error);
}

int tcExecutableRunSymbolicOnStream(TcExecutableRef exe, void *const *buffers,
                                    size_t count, void *stream,
                                    int64_t symbol, char **error) {
  std::string message;
  llvm::ArrayRef<void *> args(buffers, count);
  bool ok = false;
  if (exe->cpu)
    ok = exe->cpu->run(args, message, symbol);
  else if (exe->cuda)
    ok = exe->cuda->run(args, stream, message, symbol);
  else
    message = "ROCm graphs have no symbolic size";
  if (ok)
    return 0;
  if (error)
    *error = copyString(message);
  return 1;
}

int tcExecutableReadEarly(TcExecutableRef exe, const int64_t *arguments,
                          size_t count, char **why) {
  std::string message = "only CUDA graphs read flags early";
  if (exe->cuda &&
      exe->cuda->readEarly(llvm::ArrayRef(arguments, count), message))
    return 1;
  if (why)
    *why = copyString(message);
  return 0;
}

int tcExecutableRunReadingOnStream(TcExecutableRef exe, void *const *buffers,
                                   size_t count, void *stream, int64_t symbol,
                                   uint8_t *values, int *read, char **error) {
  std::string message = "only CUDA graphs read flags early";
  bool ok = false, wasRead = false;
  if (exe->cuda)
    ok = exe->cuda->runReading(llvm::ArrayRef(buffers, count), stream,
                               std::max<int64_t>(symbol, 0), values, wasRead,
                               message);
  if (read)
    *read = wasRead;
  if (ok)
    return 0;
  if (error)
    *error = copyString(message);
  return 1;
}

int tcExecutableRunProfiled(TcExecutableRef exe, void *const *buffers,
                            size_t count, int64_t symbol, char **profile,
                            char **error) {
  return tcExecutableRunProfiledOnStream(exe, buffers, count, nullptr, symbol,
                                         profile, error);
}

int tcExecutableRunProfiledOnStream(TcExecutableRef exe,
                                    void *const *buffers, size_t count,
                                    void *stream, int64_t symbol,
                                    char **profile, char **error) {
  std::string message;
  std::vector<tc::host::StepTime> steps;
  llvm::ArrayRef<void *> args(buffers, count);
  int64_t at = std::max<int64_t>(symbol, 0);
  bool ok = false;
  if (exe->cpu)
    ok = exe->cpu->run(args, message, at, &steps);
  else if (exe->cuda)
    ok = exe->cuda->runProfiled(args, stream, at, steps, message);
  else
    message = "per-kernel profiles are the CPU's and CUDA's only";
  if (!ok) {
    if (error)
      *error = copyString(message);
    return 1;
  }
  std::string text;
  for (const tc::host::StepTime &step : steps)
    text += step.name + "\t" + std::to_string(step.seconds) + "\t" +
            std::to_string(step.bytes) + "\t" + std::to_string(step.faults) +
            "\n";
  if (profile)
    *profile = copyString(text);
  return 0;
}

const char *tcExecutableTarget(TcExecutableRef exe) {
  return exe->cpu ? "cpu" : exe->cuda ? "cuda" : "rocm";
}

int64_t tcCPUThreads(void) { return tc::host::threads(); }

const char *tcCPUGemmKernels(void) { return tc::host::gemmKernels(); }

static std::atomic<TcConvolutionFn> cpuConvolution{nullptr};

/// The C++ runtime's hook, calling the C one.
static std::string runCConvolution(mlir::tc::LibraryConvolution &c) {
  TcConvolution call{c.kind,          c.element,       c.rank,
                     c.inputShape,    c.weightShape,   c.outputShape,
                     c.inputStrides,  c.weightStrides, c.outputStrides,
                     c.stride,        c.padding,       c.dilation,
                     c.groups,        c.input,         c.weight,
                     c.output,        c.mayReturn,     nullptr,
                     nullptr,         nullptr};
  char *error = nullptr;
  TcConvolutionFn fn = cpuConvolution.load();
  if (!fn)
    return "no library convolution is set";
  if (fn(&call, &error) == 0) {
    if (call.result) {
      c.result = call.result;
      void (*release)(void *) = call.releaseResult;
      c.resultOwner = std::shared_ptr<void>(call.resultOwner, [release](
                                                                  void *owner) {
        if (release)
          release(owner);
      });
    }
    return "";
  }
  std::string message = error ? error : "the library convolution failed";
  std::free(error);
  return message;
}

void tcSetCPUConvolution(TcConvolutionFn fn) {
  cpuConvolution.store(fn);
  mlir::tc::setCPULibraryConvolution(fn ? runCConvolution : nullptr);
}

static std::atomic<TcGemmFn> cpuGemm{nullptr};

/// The host program's hook, calling the C one.
static std::string runCGemm(const tc::host::LibraryGemm &g) {
  TcGemm call{g.isDouble ? 1 : 0, g.transA, g.transB, g.batch, g.m,
              g.n,              g.k,      g.a,      g.b,     g.bias,
              g.out};
  TcGemmFn fn = cpuGemm.load();
  if (!fn)
    return "no library GEMM is set";
  char *error = nullptr;
  if (fn(&call, &error) == 0)
    return "";
  std::string message =
      "the library GEMM failed: " +
      std::string(error ? error : "no message");
  std::free(error);
  return message;
}

void tcSetCPUGemm(TcGemmFn fn) {
  cpuGemm.store(fn);
  tc::host::setLibraryGemm(fn ? runCGemm : nullptr);
}

char *tcCUDAAttentionUnavailable(int bf16, const int64_t *sizes,
                                 const int64_t *biasDims, int causal,
                                 float scale) {
  std::string why = mlir::tc::CUDAExecutable::attentionUnavailable(
      bf16 != 0, llvm::ArrayRef<int64_t>(sizes, 7),
      llvm::ArrayRef<int64_t>(biasDims, 2), causal != 0, scale);
  return why.empty() ? nullptr : copyString(why);
}

int64_t tcGPUBufferAlignment(void) {
  return mlir::tc::kernel::kGPUBufferAlignment;
}

int tcHalfProductPadding(int64_t m, int64_t k, int64_t n, int lhsTransposed,
                         int rhsTransposed, int64_t elementBytes,
                         int64_t resultElements, int64_t lhsElements,
                         int64_t rhsElements, int resultViewed, int64_t *padM,
                         int64_t *padK, int64_t *padN) {
  std::optional<mlir::tc::prim::HalfProductPadding> pads =
      mlir::tc::prim::halfProductPadding(
          m, k, n, lhsTransposed, rhsTransposed, elementBytes, resultElements,
          lhsElements, rhsElements, resultViewed);
  if (!pads)
    return 0;
  *padM = pads->m;
  *padK = pads->k;
  *padN = pads->n;
  return 1;
}

int64_t tcExecutableArenaBytes(TcExecutableRef exe) {
  return exe->visit([](auto &e) { return e.arenaBytes(); });
}
int64_t tcExecutableArenaBytesPerSymbol(TcExecutableRef exe) {
  return exe->cpu    ? exe->cpu->arenaBytesPerSymbol()
         : exe->cuda ? exe->cuda->arenaBytesPerSymbol()
                     : 0;
}
int tcExecutableIsSymbolic(TcExecutableRef exe) {
  return exe->cpu ? exe->cpu->symbolic() : exe->cuda && exe->cuda->symbolic();
}
int64_t tcExecutableIntermediateBytes(TcExecutableRef exe) {
  return exe->visit([](auto &e) { return e.intermediateBytes(); });
}
int64_t tcExecutableNumKernels(TcExecutableRef exe) {
  return exe->visit([](auto &e) { return e.numKernels(); });
}
int64_t tcExecutableNumBuffers(TcExecutableRef exe) {
  return exe->visit([](auto &e) { return e.numBuffers(); });
}
int64_t tcExecutableNumConvolutionPlans(TcExecutableRef exe) {
  return exe->cuda ? exe->cuda->numConvolutionPlans() : 0;
}
double tcExecutableCompileSeconds(TcExecutableRef exe, const char *phase) {
  if (!exe->cuda)
    return -1;
  const auto &seconds = exe->cuda->compileSeconds();
  auto it = seconds.find(phase);
  return it == seconds.end() ? -1 : it->second;
}
int64_t tcExecutableGraphReplays(TcExecutableRef exe) {
  return exe->cuda ? exe->cuda->graphReplays() : 0;
}
int64_t tcExecutableGraphCaptures(TcExecutableRef exe) {
  return exe->cuda ? exe->cuda->graphCaptures() : 0;
}
int tcExecutableFromCache(TcExecutableRef exe) {
  if (exe->cpu)
    return exe->cpu->fromCache();
  if (exe->cuda)
    return exe->cuda->fromCache();
  return exe->rocm && exe->rocm->fromCache();
}

const char *tcExecutableStageIR(TcExecutableRef exe, const char *stage) {
  const auto &stages =
      exe->visit([](auto &e) -> const auto & { return e.stageIR(); });
  auto it = stages.find(stage);
  return it == stages.end() ? nullptr : it->second.c_str();
}

void tcExecutableDestroy(TcExecutableRef exe) { delete exe; }
void tcFreeString(char *string) { std::free(string); }

char *tcGraphStructure(const char *source, size_t length) {
  return copyString(mlir::tc::graphStructure(llvm::StringRef(source, length)));
}
