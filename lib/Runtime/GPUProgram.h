//===- GPUProgram.h - what the CUDA and ROCm runtimes share ----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// A graph compiled by a GPU pipeline, as its runtimes see it: the kernels'
// binary and the host program (launches and GEMMs over buffers that are the
// run's arguments or slots of its arena). Also the helpers both runtimes use
// to open the vendor libraries at run time. Internal to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_GPUPROGRAM_H
#define TC_LIB_RUNTIME_GPUPROGRAM_H

#include "Convolution.h"
#include "CudnnAttention.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "tc/Pipelines/Pipelines.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <dlfcn.h>

#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tc::gpu_runtime {

/// Bump whenever the cached program's format or the generated code
/// changes without a rebuild of tc (runtime::buildIdentity covers those).
inline constexpr const char *kGPUCacheVersion = "tc-gpu-cache-3";

// A program compiled with the graph's symbolic size `s` (a batch size; see
// docs/DynamicShapes.md) runs at any value of it: the sizes marked per
// symbol below are multiplied by it, offsets grow with it.

struct BufferRef {
  int64_t argument; // index into the run's buffers, or -1: in the arena
  int64_t offset;   // byte offset into the arena
  int64_t bytes = 0; // size in the arena
  int64_t offsetPerSymbol = 0, bytesPerSymbol = 0; // plus this many times s
};

struct Launch {
  std::string kernel;
  int64_t grid = 1, block = 1;
  /// With the symbolic size, the grid is `gridPerSymbol * s` blocks or
  /// `ceildiv(threadsPerSymbol * s, block)` (one of them is nonzero), and
  /// the kernel takes `s` after its buffers.
  int64_t gridPerSymbol = 0, threadsPerSymbol = 0;
  SmallVector<int64_t> buffers;

  bool symbolic() const { return gridPerSymbol || threadsPerSymbol; }
  int64_t gridAt(int64_t symbol) const {
    if (gridPerSymbol)
      return gridPerSymbol * symbol;
    if (threadsPerSymbol)
      return (threadsPerSymbol * symbol + block - 1) / block;
    return grid;
  }
};

/// A GEMM's element type (its number is the host program's text form;
/// 0 and 1 were the f32/f64 flag before half types).
enum class GemmElement : int64_t { F32 = 0, F64 = 1, F16 = 2, BF16 = 3 };

struct Gemm {
  int64_t a, b, out, bias = -1;
  bool transA, transB;
  GemmElement element;
  int64_t batch, m, n, k;
  /// Bit i set: size i of (batch, m, n, k) is per unit of the symbolic size.
  unsigned perSymbol = 0;

  /// The GEMM at one value of the symbolic size.
  Gemm at(int64_t symbol) const {
    Gemm g = *this;
    int64_t *sizes[] = {&g.batch, &g.m, &g.n, &g.k};
    for (unsigned bit = 0; bit < 4; ++bit)
      if (perSymbol & (1u << bit))
        *sizes[bit] *= symbol;
    return g;
  }
};

/// A fused attention: its buffers' numbers (bias -1 without one) and the
/// library call's sizes.
struct Attention {
  int64_t query, key, value, out, bias;
  runtime::AttentionCall call;
};

/// The call of a fused attention on dense row-major buffers (tc's):
/// `sizes` are batch, heads, key/value heads, queries, keys, head and
/// value features; with a bias (`biasBatch` >= 0), the bias is (biasBatch,
/// biasHeads, queries, keys) in rows `biasWidth` long (at least the keys).
runtime::AttentionCall denseAttentionCall(bool bf16, ArrayRef<int64_t> sizes,
                                          int64_t biasBatch,
                                          int64_t biasHeads,
                                          int64_t biasWidth, bool causal,
                                          float scale);

/// Sets where `call` reads q, k and v and writes out (`kernel.attention`'s
/// views): for each, its offset and 4 strides in elements, 20 values.
void setOperandViews(runtime::AttentionCall &call, ArrayRef<int64_t> views);

struct Step {
  std::optional<Launch> launch;
  std::optional<Gemm> gemm;
  std::optional<runtime::ConvCall> conv;
  std::optional<Attention> attention;
};

/// The host program and kernels of one graph.
struct GPUProgram {
  SmallVector<BufferRef> buffers;
  std::vector<Step> steps;
  int64_t numArguments = 0;
  int64_t arenaBytes = 0, intermediateBytes = 0, numKernels = 0;
  /// What the arena grows by per unit of the symbolic size.
  int64_t arenaBytesPerSymbol = 0;
  /// Whether the program has the graph's symbolic size (then runs pass its
  /// value, and the arena is arenaBytes + arenaBytesPerSymbol * s).
  bool symbolic() const;
  /// The most rows of a GEMM with a bias (the runtimes keep that many ones
  /// on the device to broadcast biases with a rank-1 product).
  int64_t maxBiasRows = 0;
  /// "bin" (cubin/hsaco) or "isa" (PTX/AMDGPU assembly), and the objects'
  /// bytes: the kernels in one or more shards (tc-gpu-module-to-binary),
  /// each kernel in exactly one.
  std::string format;
  std::vector<std::string> binaries;
  std::map<std::string, std::string> stageIR;
  /// Seconds each phase of the compile took: the stages ("prim", "kernel",
  /// "gpu", "schedule"), then what the runtime adds (loading the kernels,
  /// planning library calls).
  std::map<std::string, double> compileSeconds;

  /// Compiles `source` (a module holding one fx.graph) through `target`'s
  /// pipeline (tc/Pipelines/Pipelines.h) with `options`, stage by stage.
  /// Returns null and sets `diagnostics` on failure.
  static std::unique_ptr<GPUProgram>
  compile(StringRef source, Target target, const GPUPipelineOptions &options,
          bool keepStageIR, std::string &diagnostics,
          StringRef cacheDir = "", StringRef cacheOptions = "");

  /// The program as bytes (the disk cache's format), and back; null for
  /// bytes of another format version or malformed ones.
  std::string serialize() const;
  static std::unique_ptr<GPUProgram> deserialize(StringRef bytes);
  /// Whether compile() found this graph in the disk cache.
  bool fromCache = false;

  static std::unique_ptr<GPUProgram>
  compileUncached(StringRef source, Target target,
                  const GPUPipelineOptions &options, bool keepStageIR,
                  std::string &diagnostics);

  /// Whether every buffer of `args` (arguments, then the arena) has the
  /// alignment the kernels assume (kernel::kGPUBufferAlignment); else false
  /// with `error` naming the first that has not. Checked before anything
  /// is launched: a misaligned vector access would be a sticky error that
  /// ends the process's CUDA context, while this error leaves the graph to
  /// eager.
  bool checkAlignment(ArrayRef<void *> args, std::string &error) const;

  /// Each buffer's address for a run over `args` (arguments, then the
  /// arena) at value `symbol` of the symbolic size.
  SmallVector<void *, 16> bind(ArrayRef<void *> args,
                               int64_t symbol = 0) const;

  /// The bytes of arena buffers live at each step: each buffer from the
  /// first step that uses it to the last.
  SmallVector<int64_t> liveArenaBytes() const;

  /// Places the arena's buffers again, each live from the first step that
  /// uses it to the last (tighter than tc-plan-memory's ranges, which start
  /// at the allocation), together with `scratch[step]` bytes live at that
  /// step alone (a library call's workspace; 0 for none): largest first,
  /// each at the lowest offset, aligned to 256, that is free during its
  /// range. Rewrites the buffers' offsets and `arenaBytes`; returns each
  /// step's scratch offset. A symbolic program keeps tc-plan-memory's
  /// placement (its buffers' sizes depend on the run) and must have no
  /// scratch.
  SmallVector<int64_t> repackArena(ArrayRef<int64_t> scratch);

  /// Finds each launched kernel in `modules` (the objects' modules; each
  /// kernel is in one) into `functions`: `lookup(function, module, name)`
  /// returns the library's status, 0 when found, and `describe` words a
  /// status. False with `error` set when a kernel is in none.
  template <typename Module, typename Function, typename Lookup,
            typename Describe>
  bool findKernels(ArrayRef<Module> modules, Lookup lookup, Describe describe,
                   llvm::StringMap<Function> &functions,
                   std::string &error) const {
    for (const Step &step : steps) {
      if (!step.launch || functions.count(step.launch->kernel))
        continue;
      Function function = nullptr;
      decltype(lookup(function, Module(), "")) status{};
      for (Module module : modules)
        if (!(status = lookup(function, module, step.launch->kernel.c_str())))
          break;
      if (!function) {
        error = "kernel " + step.launch->kernel + ": " +
                (modules.empty() ? std::string("no kernels were compiled")
                                 : describe(status));
        return false;
      }
      functions[step.launch->kernel] = function;
    }
    return true;
  }

  /// What step `index` is called in a profile (TC_LOGS=kernels): the
  /// kernel's name (which says what it fused), "gemm MxNxK",
  /// "convolution" or "attention"; and the bytes of the buffers it takes at value
  /// `symbol` of the symbolic size (-1 where not recorded).
  std::string stepName(size_t index) const;
  int64_t stepBytes(size_t index, int64_t symbol) const;

  /// The last step that reads or writes argument `argument`, if any.
  std::optional<size_t> lastStepTaking(int64_t argument) const;

  /// Whether the host program calls a library convolution.
  bool hasConvolutions() const {
    return llvm::any_of(steps, [](const Step &step) { return step.conv; });
  }

  /// Runs the host program over `args` (arguments, then the arena) at
  /// value `symbol` of the symbolic size: for each launch
  /// `launch(launch, grid, params)` with its grid and the kernel's
  /// parameter array, for each GEMM `gemm(gemm, stepIndex, buffers)` (the
  /// GEMM's sizes at `symbol`), for each convolution
  /// `conv(call, stepIndex, buffers)`, for each fused attention
  /// `attention(step, stepIndex, buffers)`. Each returns false with
  /// `error` set to stop the run. `around(stepIndex, done)`, where given, is called
  /// before (`done` false) and after each step that runs (a profile's
  /// marks).
  template <typename LaunchFn, typename GemmFn, typename ConvFn,
            typename AttentionFn>
  bool execute(ArrayRef<void *> args, int64_t symbol, LaunchFn launch,
               GemmFn gemm, ConvFn conv, AttentionFn attention,
               std::string &error,
               llvm::function_ref<bool(size_t, bool)> around = {}) const {
    if (args.size() != static_cast<size_t>(numArguments) + 1) {
      error = "expected " + std::to_string(numArguments + 1) +
              " buffers, got " + std::to_string(args.size());
      return false;
    }
    if (symbol < 0 || (symbol == 0 && symbolic())) {
      error = "the symbolic size must be positive, not " +
              std::to_string(symbol);
      return false;
    }
    if (!checkAlignment(args, error))
      return false;
    SmallVector<void *, 16> ptrs = bind(args, symbol);
    // The symbolic size as the kernels take it (an index: 64 bits).
    int64_t symbolParam = symbol;
    for (size_t index = 0, e = steps.size(); index < e; ++index) {
      const Step &step = steps[index];
      if (step.gemm) {
        if ((around && !around(index, false)) ||
            !gemm(step.gemm->perSymbol ? step.gemm->at(symbol) : *step.gemm,
                  index, ArrayRef<void *>(ptrs)) ||
            (around && !around(index, true)))
          return false;
        continue;
      }
      if (step.conv) {
        if ((around && !around(index, false)) ||
            !conv(*step.conv, index, ArrayRef<void *>(ptrs)) ||
            (around && !around(index, true)))
          return false;
        continue;
      }
      if (step.attention) {
        if ((around && !around(index, false)) ||
            !attention(*step.attention, index, ArrayRef<void *>(ptrs)) ||
            (around && !around(index, true)))
          return false;
        continue;
      }
      // The kernel's parameters are pointers to its buffer addresses.
      SmallVector<void *, 8> values;
      for (int64_t id : step.launch->buffers)
        values.push_back(ptrs[id]);
      SmallVector<void *, 8> params;
      for (void *&value : values)
        params.push_back(&value);
      if (step.launch->symbolic())
        params.push_back(&symbolParam);
      int64_t grid = step.launch->gridAt(symbol);
      if (grid == 0)
        continue; // no rows to run
      if ((around && !around(index, false)) ||
          !launch(*step.launch, grid, params.data()) ||
          (around && !around(index, true)))
        return false;
    }
    return true;
  }

private:
  LogicalResult extract(ModuleOp module, StringRef platform);
};

//===----------------------------------------------------------------------===//
// Vendor libraries, opened at run time
//===----------------------------------------------------------------------===//

/// Looks `name` up in `library` into `fn`; sets `error` when it is missing.
template <typename Fn>
bool bindSymbol(void *library, const char *name, Fn &fn, std::string &error) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn)
    error = std::string("symbol ") + name + " not found";
  return fn != nullptr;
}

/// Opens the first library of `names` that loads, preferring one the
/// process already has (PyTorch's).
void *openLibrary(std::initializer_list<const char *> names);

/// The process's table `T` of a vendor library's entry points, bound once:
/// `bind(library, table, error)` fills it from the first of `names` that
/// opens (`what` names the library in the error). Null, with `error` set,
/// when the library or a symbol `bind` needs is missing.
template <typename T, typename Bind>
const T *bindLibraryOnce(std::initializer_list<const char *> names,
                         const char *what, Bind bind, std::string &error) {
  static std::once_flag once;
  static T table;
  static std::string loadError;
  static bool ok = false;
  std::call_once(once, [&] {
    void *library = openLibrary(names);
    if (!library) {
      loadError = std::string(what) + " could not be opened";
      return;
    }
    ok = bind(library, table, loadError);
  });
  if (!ok)
    error = loadError;
  return ok ? &table : nullptr;
}

/// Row-major C = op(A) op(B) (+ bias rows) through a column-major BLAS with
/// cuBLAS's argument order (cuBLAS, rocBLAS): C^T = op(B)^T op(A)^T. A bias
/// is broadcast first as the rank-1 product bias x ones (1 x m), then the
/// product accumulates onto it. `opN`/`opT` are the library's operation
/// codes. Returns the library's status (0 on success).
template <typename T, typename Handle, typename Gemm1, typename GemmN>
int runColumnMajorGemm(const Gemm &g, ArrayRef<void *> ptrs, Handle handle,
                       const T *ones, int opN, int opT, Gemm1 gemm,
                       GemmN batched) {
  const T one = 1, zero = 0;
  int lda = g.transA ? g.m : g.k, ldb = g.transB ? g.k : g.n;
  auto *a = static_cast<const T *>(ptrs[g.a]);
  auto *b = static_cast<const T *>(ptrs[g.b]);
  auto *c = static_cast<T *>(ptrs[g.out]);
  const T *beta = &zero;
  if (g.bias >= 0) {
    auto *bias = static_cast<const T *>(ptrs[g.bias]);
    for (int64_t i = 0; i < g.batch; ++i)
      if (int status = gemm(handle, opN, opN, g.n, g.m, 1, &one, bias, g.n,
                            ones, 1, &zero, c + i * g.m * g.n, g.n))
        return status;
    beta = &one;
  }
  int opA = g.transA ? opT : opN;
  int opB = g.transB ? opT : opN;
  if (g.batch == 1)
    return gemm(handle, opB, opA, g.n, g.m, g.k, &one, b, ldb, a, lda, beta, c,
                g.n);
  return batched(handle, opB, opA, g.n, g.m, g.k, &one, b, ldb, g.k * g.n, a,
                 lda, g.m * g.k, beta, c, g.n, g.m * g.n, g.batch);
}

} // namespace mlir::tc::gpu_runtime

#endif // TC_LIB_RUNTIME_GPUPROGRAM_H
