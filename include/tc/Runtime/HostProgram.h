//===- HostProgram.h - the CPU host program and its interpreter -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// What the CPU runtime runs once a graph is compiled: kernel launches split
// among worker threads, BLAS GEMMs with their row epilogues, on buffers that
// are the caller's arguments or slices of one arena. It is plain C++ (no
// MLIR, no LLVM), so that both the JIT runtime (CPURuntime.cpp) and the
// ahead-of-time runtime (tc/AOT/Model.h), which runs without Python or a
// compiler, share it. Its text form is the disk cache's and the AOT
// artifact's `.plan` file.
//
//===----------------------------------------------------------------------===//

#ifndef TC_RUNTIME_HOSTPROGRAM_H
#define TC_RUNTIME_HOSTPROGRAM_H

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tc::host {

/// The version heading a disk cache entry's `.plan` (the JIT runtime writes
/// it; the JIT and tc._runtime read it). Bump whenever the plan format or
/// the generated code changes: an older tc's entries must not load.
inline constexpr const char *kCPUCacheVersion = "tc-cpu-cache-6";

/// A program compiled with the graph's symbolic size `s` (a batch size; see
/// docs/DynamicShapes.md) takes its value at each run: sizes marked
/// per-symbol below are multiplied by it, offsets grow with it.

/// A buffer of the program: an argument, or a slice of the arena.
struct BufferRef {
  int64_t argument = -1; // index into the caller's buffers
  int64_t offset = 0;    // byte offset into the arena otherwise,
  int64_t offsetPerSymbol = 0; // plus this many times s
};

/// A kernel's packed entry point: pointers to each buffer's address, then
/// to the first and one-past-last row of the domain to run.
using KernelFn = void (*)(void **);

struct Launch {
  std::string kernel;
  KernelFn fn = nullptr;
  int64_t rows = 1, points = 1;
  /// Whether the domain's first extent is s: rows and points are per unit.
  bool perSymbol = false;
  std::vector<int64_t> buffers;
};

struct Gemm {
  int64_t a = 0, b = 0, out = 0, bias = -1;
  bool transA = false, transB = false, isDouble = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  /// Which of batch, m, n, k (bits 0 to 3) are multiplied by s.
  unsigned perSymbol = 0;
  /// A kernel to run on each block of output rows once it is computed.
  std::optional<Launch> epilogue;
};

/// Runs `body(i)` for i in [0, n), among the runtime's threads.
using ParallelFor =
    std::function<void(int64_t, const std::function<void(int64_t)> &)>;

/// Memory a step handed over in place of an intermediate buffer of the
/// arena (a library call's own result), by buffer id: a run keeps it until
/// the last step that uses the buffer (`Step::releases`).
using RunOwned = std::vector<std::pair<int64_t, std::shared_ptr<void>>>;

struct Step {
  std::optional<Launch> launch;
  std::optional<Gemm> gemm;
  /// A step the text form cannot hold (a library convolution): a program
  /// with one is not serializable. Returns "" or an error. It may point an
  /// intermediate buffer (never an argument) at memory of its own for the
  /// rest of the run, kept in the RunOwned.
  std::function<std::string(std::vector<void *> &, const ParallelFor &,
                            RunOwned &)>
      custom;
  /// The buffers a custom step reads and writes.
  std::vector<int64_t> customBuffers;
  /// Buffers that custom steps may hand over memory for and that no step
  /// after this one uses: the run releases that memory after this step (so
  /// that the allocator reuses it, as it would the arena's).
  std::vector<int64_t> releases;
};

/// One step of a profiled run (HostProgram::run's `profile`): the kernel's
/// name (or "gemm MxNxK", "library call"), its wall time, and the bytes of
/// the buffers it takes (-1 where a size is symbolic or unknown).
struct StepTime {
  std::string name;
  double seconds = 0;
  int64_t bytes = -1;
  /// The process's minor page faults during the step (fresh memory touched
  /// for the first time: a library call's new result, say); -1 where not
  /// counted.
  int64_t faults = -1;
};

struct HostProgram {
  std::vector<BufferRef> buffers;
  /// Each buffer's bytes where its size is static, else -1 (for profiles;
  /// empty in a program that did not record them).
  std::vector<int64_t> bufferBytes;
  std::vector<Step> steps;
  /// Inputs and outputs (the caller passes the arena after them).
  int64_t numArguments = 0;
  int64_t arenaBytes = 0, intermediateBytes = 0, numKernels = 0;
  /// The arena's size grows by this many bytes per unit of s.
  int64_t arenaBytesPerSymbol = 0;
  /// Whether the program has the graph's symbolic size.
  bool symbolic() const;
  /// How many object files hold the kernels (a disk cache entry's
  /// `<entry>.<i>.o`: they are compiled in parallel).
  int64_t numObjects = 1;
  /// With kernel checks (tc-add-kernel-checks): the buffer every launch
  /// takes last, the check record (tc/Runtime/CheckRecord.h), which run()
  /// clears first and reads last; -1 without checks.
  int64_t checkRecord = -1;
  /// Sets checkRecord to the buffer every launch takes last; false when
  /// the launches do not agree on one.
  bool findCheckRecord();

  /// Every kernel launch, including GEMM epilogues.
  std::vector<Launch *> launches();
  /// Points each launch at its kernel's packed entry `_mlir_<kernel>`, as
  /// `lookup` finds it (null when absent). Returns false, with `error`
  /// naming the first missing entry.
  bool bindKernels(const std::function<KernelFn(const std::string &)> &lookup,
                   std::string &error);
  /// Loads the shared library of kernels at `path` (dlopen) and binds the
  /// launches to it. Returns its handle, or null with `error` set.
  void *loadKernelLibrary(const std::string &path, std::string &error);
  bool serializable() const;

  /// The text form, headed by `version`; parse() rejects another version
  /// and anything malformed (buffer ids out of range included).
  std::string serialize(const std::string &version) const;
  bool parse(const std::string &text, const std::string &version);

  /// Runs the program on `args`: the inputs' and outputs' data, then the
  /// arena (arenaBytes + arenaBytesPerSymbol * symbol long, 64-byte
  /// aligned; null when 0), with `symbol` the value of the symbolic size.
  /// Every launch must have its `fn`. Returns false and sets `error` on bad
  /// arguments. With `profile`, times each step into it (TC_LOGS=kernels).
  bool run(void *const *args, size_t count, std::string &error,
           int64_t symbol = 0, std::vector<StepTime> *profile = nullptr) const;
};

/// Runs `n` chunks on the runtime's threads: the process's OpenMP team
/// where one is loaded (PyTorch's), else a pool of $TC_NUM_THREADS
/// threads (default: one per core); $TC_NUM_THREADS also forces the pool.
ParallelFor parallelFor();

/// How many threads a launch runs on now: the OpenMP team's size for the
/// calling thread (`torch.set_num_threads`), or the pool's.
unsigned threads();

/// The kernels OpenBLAS chose for this CPU when it loaded ("SkylakeX",
/// "Haswell", ...): what kernel.gemm runs on where no library GEMM is set.
const char *gemmKernels();

/// One matrix product of a CPU graph (a `kernel.gemm` step) as the library
/// that runs it sees it: for each of `batch` entries, `out` = op(a) op(b),
/// plus `bias` (a row of n, null without one) on every row; row-major and
/// contiguous, entry after entry: a m x k (k x m where `transA`), b k x n
/// (n x k where `transB`), out m x n.
struct LibraryGemm {
  bool isDouble = false, transA = false, transB = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void *a = nullptr, *b = nullptr, *bias = nullptr;
  void *out = nullptr;
};

/// Runs one product; returns "" or an error message.
using LibraryGemmFn = std::string (*)(const LibraryGemm &);

/// Sets the library that runs CPU graphs' large products (PyTorch's,
/// through tc._tc: the BLAS eager calls); nullptr, or TC_CPU_GEMM=openblas
/// in the environment, leaves every product to OpenBLAS. A product of at
/// least kLibraryGemmFlops (and more than a few rows) goes to the library,
/// its epilogue after it; smaller ones stay on OpenBLAS, where a call costs
/// less than the library's.
void setLibraryGemm(LibraryGemmFn fn);

/// The smallest product (2 m n k flops over the batch) the library runs.
inline constexpr double kLibraryGemmFlops = 2e6;

} // namespace tc::host

#endif // TC_RUNTIME_HOSTPROGRAM_H
