//===- HostProgram.cpp - the CPU host program and its interpreter -------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Runtime/HostProgram.h"
#include "tc/Runtime/CheckRecord.h"

#include <cblas.h>
#include <sys/resource.h>

// PyPI's OpenBLAS build prefixes its symbols (see lib/Runtime/CMakeLists.txt).
#ifdef TC_SCIPY_OPENBLAS
#define TC_BLAS(name) scipy_##name
#else
#define TC_BLAS(name) name
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

using namespace tc::host;

namespace {

//===----------------------------------------------------------------------===//
// Thread pool
//===----------------------------------------------------------------------===//

/// The OpenMP runtime already loaded in this process (PyTorch's libgomp,
/// or an Intel OpenMP that provides libgomp's entry points), found by name
/// among the loaded objects; none in a process without one (a C++ program
/// that links libtc_aot alone).
struct OpenMP {
  using Parallel = void (*)(void (*)(void *), void *, unsigned, unsigned);
  using MaxThreads = int (*)();
  Parallel parallel = nullptr;
  MaxThreads maxThreads = nullptr;

  static OpenMP find() {
    std::string path;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
          std::string_view name = info->dlpi_name ? info->dlpi_name : "";
          if (name.find("libgomp") == std::string_view::npos &&
              name.find("libiomp5") == std::string_view::npos)
            return 0;
          *static_cast<std::string *>(data) = std::string(name);
          return 1;
        },
        &path);
    OpenMP omp;
    if (path.empty())
      return omp;
    // Already loaded: this takes a reference, it loads nothing.
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
      return omp;
    auto parallel =
        reinterpret_cast<Parallel>(dlsym(lib, "GOMP_parallel"));
    auto maxThreads =
        reinterpret_cast<MaxThreads>(dlsym(lib, "omp_get_max_threads"));
    if (parallel && maxThreads) {
      omp.parallel = parallel;
      omp.maxThreads = maxThreads;
    }
    return omp;
  }
};

/// A fixed set of workers that run the chunks of one launch at a time; the
/// calling thread works too. In a process that has an OpenMP runtime
/// loaded (PyTorch's), launches run on its team instead: PyTorch's OpenMP
/// threads spin for a while after each of its parallel ops, and a second
/// pool beside them fought them for the cores (a gather or an
/// index_select compiled by tc took 1.6-2.4x eager's time on two cores
/// when it ran between eager ops, and less than eager's alone).
/// TC_NUM_THREADS keeps tc's own pool of that many threads.
class ThreadPool {
public:
  static ThreadPool &get() {
    static ThreadPool pool;
    return pool;
  }

  /// Whether launches run on the process's OpenMP team.
  bool onOpenMP() const { return omp.parallel != nullptr; }

  unsigned size() const {
    if (omp.parallel)
      return std::max(1, omp.maxThreads());
    return workers.size() + 1;
  }

  void parallelFor(int64_t n, const std::function<void(int64_t)> &fn) {
    if (n > 1 && omp.parallel) {
      unsigned threads =
          static_cast<unsigned>(std::min<int64_t>(n, size()));
      // One thread runs here, outside OpenMP, as PyTorch's own ops do
      // with one thread: no team to start or wake.
      if (threads <= 1) {
        for (int64_t i = 0; i < n; ++i)
          fn(i);
        return;
      }
      Team team{&fn, n};
      omp.parallel(&Team::run, &team, threads, 0);
      return;
    }
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
    else
      omp = OpenMP::find();
    if (omp.parallel)
      return;
    for (unsigned i = 1; i < std::max(1u, threads); ++i)
      workers.emplace_back([this] { loop(); });
  }

  /// One launch's chunks on an OpenMP team: each member takes the next.
  struct Team {
    const std::function<void(int64_t)> *fn;
    int64_t n;
    std::atomic<int64_t> next{0};

    static void run(void *data) {
      auto *team = static_cast<Team *>(data);
      for (int64_t i = team->next++; i < team->n; i = team->next++)
        (*team->fn)(i);
    }
  };
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

  OpenMP omp;
  std::vector<std::thread> workers;
  std::mutex mutex, launchMutex;
  std::condition_variable wake, done;
  const std::function<void(int64_t)> *task = nullptr;
  std::atomic<int64_t> next{0};
  int64_t total = 0, finished = 0, active = 0;
  uint64_t generation = 0;
  bool stop = false;
};


} // namespace

unsigned tc::host::threads() { return ThreadPool::get().size(); }

const char *tc::host::gemmKernels() {
  return TC_BLAS(openblas_get_corename)();
}

ParallelFor tc::host::parallelFor() {
  return [](int64_t n, const std::function<void(int64_t)> &body) {
    ThreadPool::get().parallelFor(n, body);
  };
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// Runs rows [begin, end) of a kernel's domain.
static void callKernel(const Launch &launch, const std::vector<void *> &ptrs,
                       int64_t begin, int64_t end) {
  std::vector<void *> bufs;
  bufs.reserve(launch.buffers.size());
  for (int64_t id : launch.buffers)
    bufs.push_back(ptrs[id]);
  std::vector<void *> packed;
  packed.reserve(bufs.size() + 2);
  for (void *&buf : bufs)
    packed.push_back(&buf);
  packed.push_back(&begin);
  packed.push_back(&end);
  launch.fn(packed.data());
}

/// A GEMM's sizes at one value of the symbolic size.
struct GemmSizes {
  int64_t batch, m, n, k;
};

/// Batch entry `i` of a GEMM: its matrices and their BLAS arguments.
template <typename T>
struct GemmEntry {
  GemmEntry(const Gemm &spec, const GemmSizes &g,
            const std::vector<void *> &ptrs, int64_t i)
      : lda(spec.transA ? g.m : g.k), ldb(spec.transB ? g.k : g.n),
        ta(spec.transA ? CblasTrans : CblasNoTrans),
        tb(spec.transB ? CblasTrans : CblasNoTrans),
        a(static_cast<const T *>(ptrs[spec.a]) + i * g.m * g.k),
        b(static_cast<const T *>(ptrs[spec.b]) + i * g.k * g.n),
        c(static_cast<T *>(ptrs[spec.out]) + i * g.m * g.n) {}
  int64_t lda, ldb;
  CBLAS_TRANSPOSE ta, tb;
  const T *a, *b;
  T *c;
};

/// Runs rows [rowBegin, rowEnd) of batch entry `i` of a GEMM.
template <typename T, typename Fn>
static void gemmRows(const Gemm &spec, const GemmSizes &g,
                     const std::vector<void *> &ptrs, int64_t i,
                     int64_t rowBegin, int64_t rowEnd, T one, Fn gemm) {
  auto [lda, ldb, ta, tb, a, b, c] = GemmEntry<T>(spec, g, ptrs, i);
  // Rows of A start at row * lda, or at column `row` when A is transposed.
  const T *aRows = spec.transA ? a + rowBegin : a + rowBegin * lda;
  T *cRows = c + rowBegin * g.n;
  if (spec.bias >= 0)
    for (int64_t row = rowBegin; row < rowEnd; ++row)
      std::memcpy(c + row * g.n, ptrs[spec.bias], g.n * sizeof(T));
  gemm(CblasRowMajor, ta, tb, rowEnd - rowBegin, g.n, g.k, one, aRows, lda, b,
       ldb, spec.bias >= 0 ? one : T(0), cRows, g.n);
}

/// At most this many rows, a column block is a matrix-vector product per
/// row.
constexpr int64_t kGemvRows = 4;

/// Runs columns [colBegin, colEnd) of batch entry `i` of a GEMM (with its
/// bias; the epilogue runs after all columns).
template <typename T, typename Fn, typename VFn>
static void gemmColumns(const Gemm &spec, const GemmSizes &g,
                        const std::vector<void *> &ptrs, int64_t i,
                        int64_t colBegin, int64_t colEnd, T one, Fn gemm,
                        VFn gemv) {
  auto [lda, ldb, ta, tb, a, b, c] = GemmEntry<T>(spec, g, ptrs, i);
  // Columns of B start at column `col`, or at row col * ldb when B is
  // transposed.
  const T *bCols = spec.transB ? b + colBegin * ldb : b + colBegin;
  int64_t cols = colEnd - colBegin;
  if (spec.bias >= 0)
    for (int64_t row = 0; row < g.m; ++row)
      std::memcpy(c + row * g.n + colBegin,
                  static_cast<const T *>(ptrs[spec.bias]) + colBegin,
                  cols * sizeof(T));
  T beta = spec.bias >= 0 ? one : T(0);
  if (g.m <= kGemvRows) {
    // Row by row, B's block is read in place: a product of so few rows
    // spent most of its time packing B (a 1 x 768 x 3072 layer: 2.3x
    // eager's time split by columns, 4.9x on one thread).
    for (int64_t row = 0; row < g.m; ++row) {
      const T *x = spec.transA ? a + row : a + row * lda;
      int64_t incx = spec.transA ? lda : 1;
      // C's row = op(B)^T x: B's block is `cols` x k (transposed B) or
      // k x `cols` (read transposed).
      if (spec.transB)
        gemv(CblasRowMajor, CblasNoTrans, cols, g.k, one, bCols, ldb, x,
             incx, beta, c + row * g.n + colBegin, 1);
      else
        gemv(CblasRowMajor, CblasTrans, g.k, cols, one, bCols, ldb, x, incx,
             beta, c + row * g.n + colBegin, 1);
    }
    return;
  }
  gemm(CblasRowMajor, ta, tb, g.m, cols, g.k, one, a, lda, bCols, ldb, beta,
       c + colBegin, g.n);
}

static std::atomic<LibraryGemmFn> libraryGemm{nullptr};

void tc::host::setLibraryGemm(LibraryGemmFn fn) {
  static const bool openBLASOnly = [] {
    const char *env = std::getenv("TC_CPU_GEMM");
    return env && std::string_view(env) == "openblas";
  }();
  libraryGemm.store(openBLASOnly ? nullptr : fn);
}

/// Runs a GEMM through the library set by setLibraryGemm, then its
/// epilogue over row blocks on tc's threads. Returns "" or an error.
static std::string runLibraryGemm(LibraryGemmFn library, const Gemm &spec,
                                  const GemmSizes &g,
                                  const std::vector<void *> &ptrs) {
  LibraryGemm call;
  call.isDouble = spec.isDouble;
  call.transA = spec.transA;
  call.transB = spec.transB;
  call.batch = g.batch;
  call.m = g.m;
  call.n = g.n;
  call.k = g.k;
  call.a = ptrs[spec.a];
  call.b = ptrs[spec.b];
  call.bias = spec.bias >= 0 ? ptrs[spec.bias] : nullptr;
  call.out = ptrs[spec.out];
  std::string error = library(call);
  if (!error.empty() || !spec.epilogue)
    return error;
  ThreadPool &pool = ThreadPool::get();
  int64_t blocks = std::min<int64_t>(pool.size(), (g.m + 15) / 16);
  pool.parallelFor(blocks, [&](int64_t block) {
    callKernel(*spec.epilogue, ptrs, g.m * block / blocks,
               g.m * (block + 1) / blocks);
  });
  return "";
}

/// A product of at least kLibraryGemmFlops goes to the library when one is
/// set (PyTorch's BLAS: MKL on x86, 1.1-1.25x OpenBLAS's speed at BERT's
/// sizes on two cores). Otherwise small GEMMs are split into row blocks
/// over tc's threads, each block a single-threaded BLAS call followed by
/// the block's epilogue kernel, if any, while the rows are in cache. Large
/// GEMMs go to BLAS whole, with BLAS's own threads, and their epilogue runs
/// right after. Returns "" or an error.
static std::string runGemm(const Gemm &spec, const std::vector<void *> &ptrs,
                           int64_t symbol) {
  auto size = [&](int64_t value, unsigned bit) {
    return spec.perSymbol & (1u << bit) ? value * symbol : value;
  };
  GemmSizes g{size(spec.batch, 0), size(spec.m, 1), size(spec.n, 2),
              size(spec.k, 3)};
  if (g.batch == 0 || g.m == 0 || g.n == 0)
    return "";
  if (g.k == 0) {
    // No products to sum: the bias, or zeros.
    for (int64_t i = 0; i < g.batch * g.m; ++i) {
      size_t row = (spec.isDouble ? sizeof(double) : sizeof(float)) * g.n;
      char *out = static_cast<char *>(ptrs[spec.out]) + i * row;
      if (spec.bias >= 0)
        std::memcpy(out, ptrs[spec.bias], row);
      else
        std::memset(out, 0, row);
    }
    if (spec.epilogue)
      callKernel(*spec.epilogue, ptrs, 0, g.m);
    return "";
  }
  double flops = 2.0 * g.batch * g.m * g.n * g.k;
  if (LibraryGemmFn library = libraryGemm.load();
      library && flops >= kLibraryGemmFlops && g.m > kGemvRows)
    return runLibraryGemm(library, spec, g, ptrs);
  ThreadPool &pool = ThreadPool::get();
  static thread_local int blasThreads = -1;
  auto setBlasThreads = [&](int n) {
    if (blasThreads != n)
      TC_BLAS(openblas_set_num_threads)(blasThreads = n);
  };
  auto rows = [&](int64_t i, int64_t begin, int64_t end) {
    if (spec.isDouble)
      gemmRows<double>(spec, g, ptrs, i, begin, end, 1.0,
                       TC_BLAS(cblas_dgemm));
    else
      gemmRows<float>(spec, g, ptrs, i, begin, end, 1.0f,
                      TC_BLAS(cblas_sgemm));
  };
  // A large product runs on OpenBLAS's own threads, unless the launches
  // run on the OpenMP team and its rows give every thread of the team a
  // block of at least 16: OpenBLAS's threads would then fight the team's,
  // still spinning after the kernel before the product (an MLP of
  // 1024-wide layers at batch 128 on 2 cores: 11 ms with one pool, 15-17
  // ms with the two). A product of few rows (a decode step's LM head, 16
  // x 768 x 50257: 36 ms on OpenBLAS's 2 threads, 47-51 ms on one row
  // block) keeps OpenBLAS's threads, which split its columns.
  int64_t rowBlocksAvailable = g.batch * ((g.m + 15) / 16);
  if (flops >= 2e8 &&
      (!pool.onOpenMP() || rowBlocksAvailable < int64_t(pool.size()))) {
    setBlasThreads(pool.size());
    for (int64_t i = 0; i < g.batch; ++i)
      rows(i, 0, g.m);
    // BLAS's threads are still spinning: waking tc's would fight them for
    // the cores, so a small epilogue runs here, on the calling thread.
    if (spec.epilogue)
      callKernel(*spec.epilogue, ptrs, 0, g.m);
    return "";
  }
  setBlasThreads(1);
  int64_t rowBlocks =
      flops < 4e6 ? 1 : std::min<int64_t>(pool.size(), (g.m + 15) / 16);
  // Too few rows to give each thread a block (a classifier's 4 x 1000 x
  // 2048 at batch 4, a decode step): the threads split the columns, each
  // streaming its part of B, and the epilogue runs on whole rows after
  // them. On one thread such a product read B at a fraction of the
  // memory's bandwidth (ResNet-50's classifier: 0.57 ms).
  int64_t colBlocks = std::max<int64_t>(
      1, std::min<int64_t>(flops < 1e6 ? 1 : pool.size(), g.n / 64));
  if ((g.m <= kGemvRows && flops >= 1e5) ||
      (flops >= 4e6 && rowBlocks < int64_t(pool.size()) && colBlocks > 1)) {
    pool.parallelFor(g.batch * colBlocks, [&](int64_t task) {
      int64_t i = task / colBlocks, block = task % colBlocks;
      int64_t begin = g.n * block / colBlocks;
      int64_t end = g.n * (block + 1) / colBlocks;
      if (spec.isDouble)
        gemmColumns<double>(spec, g, ptrs, i, begin, end, 1.0,
                            TC_BLAS(cblas_dgemm), TC_BLAS(cblas_dgemv));
      else
        gemmColumns<float>(spec, g, ptrs, i, begin, end, 1.0f,
                           TC_BLAS(cblas_sgemm), TC_BLAS(cblas_sgemv));
    });
    if (spec.epilogue)
      callKernel(*spec.epilogue, ptrs, 0, g.m);
    return "";
  }
  pool.parallelFor(g.batch * rowBlocks, [&](int64_t task) {
    int64_t i = task / rowBlocks, block = task % rowBlocks;
    int64_t begin = g.m * block / rowBlocks;
    int64_t end = g.m * (block + 1) / rowBlocks;
    rows(i, begin, end);
    if (spec.epilogue)
      callKernel(*spec.epilogue, ptrs, begin, end);
  });
  return "";
}

std::vector<Launch *> HostProgram::launches() {
  std::vector<Launch *> all;
  for (Step &step : steps) {
    if (step.launch)
      all.push_back(&*step.launch);
    if (step.gemm && step.gemm->epilogue)
      all.push_back(&*step.gemm->epilogue);
  }
  return all;
}

bool HostProgram::bindKernels(
    const std::function<KernelFn(const std::string &)> &lookup,
    std::string &error) {
  for (Launch *launch : launches()) {
    std::string symbol = "_mlir_" + launch->kernel;
    launch->fn = lookup(symbol);
    if (!launch->fn) {
      error = "no kernel " + symbol;
      return false;
    }
  }
  return true;
}

void *HostProgram::loadKernelLibrary(const std::string &path,
                                     std::string &error) {
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    error = "cannot load " + path + ": " + (why ? why : "?");
    return nullptr;
  }
  auto lookup = [&](const std::string &symbol) {
    return reinterpret_cast<KernelFn>(dlsym(library, symbol.c_str()));
  };
  if (!bindKernels(lookup, error)) {
    error = path + " has " + error;
    dlclose(library);
    return nullptr;
  }
  return library;
}

bool HostProgram::serializable() const {
  return std::none_of(steps.begin(), steps.end(),
                      [](const Step &step) { return bool(step.custom); });
}

bool HostProgram::symbolic() const {
  if (arenaBytesPerSymbol)
    return true;
  for (const Step &step : steps)
    if ((step.launch && step.launch->perSymbol) ||
        (step.gemm && step.gemm->perSymbol))
      return true;
  return false;
}

bool HostProgram::findCheckRecord() {
  checkRecord = -1;
  for (Launch *launch : launches()) {
    if (launch->buffers.empty())
      return false;
    int64_t last = launch->buffers.back();
    if (checkRecord >= 0 && last != checkRecord)
      return false;
    checkRecord = last;
  }
  return checkRecord >= 0;
}

bool HostProgram::run(void *const *args, size_t count, std::string &error,
                      int64_t symbol, std::vector<StepTime> *profile) const {
  if (symbol < 0) {
    error = "the symbolic size is negative (" + std::to_string(symbol) + ")";
    return false;
  }
  if (static_cast<int64_t>(count) != numArguments + 1) {
    error = "expected " + std::to_string(numArguments + 1) +
            " buffers (inputs, outputs, arena), got " + std::to_string(count);
    return false;
  }
  char *arena = static_cast<char *>(args[count - 1]);
  int64_t bytes = arenaBytes + arenaBytesPerSymbol * symbol;
  if (bytes && !arena) {
    error = "the graph needs an arena of " + std::to_string(bytes) + " bytes";
    return false;
  }
  std::vector<void *> ptrs;
  ptrs.reserve(buffers.size());
  for (const BufferRef &ref : buffers)
    ptrs.push_back(ref.argument >= 0
                       ? args[ref.argument]
                       : arena + ref.offset + ref.offsetPerSymbol * symbol);

  auto *record = checkRecord >= 0 ? static_cast<int64_t *>(ptrs[checkRecord])
                                 : nullptr;
  if (record)
    std::fill(record, record + ::tc::checks::kRecordWords, 0);
  // Below this many points a launch runs on the calling thread: waking
  // workers costs more than it saves.
  constexpr int64_t kParallelPoints = 1 << 15;
  ThreadPool &pool = ThreadPool::get();
  // Released after the last use of each buffer, or with the run.
  RunOwned owned;
  auto release = [&](const Step &step) {
    for (int64_t id : step.releases)
      for (auto &entry : owned)
        if (entry.first == id)
          entry.second.reset();
  };
  // A profiled run's step: its name, its buffers' bytes, its start, the
  // page faults before it.
  auto started = std::chrono::steady_clock::now();
  auto faults = [] {
    struct rusage usage;
    return getrusage(RUSAGE_SELF, &usage) == 0 ? int64_t(usage.ru_minflt)
                                               : int64_t(-1);
  };
  int64_t startedFaults = profile ? faults() : -1;
  auto timed = [&](const Step &step) {
    if (!profile)
      return;
    auto now = std::chrono::steady_clock::now();
    StepTime time;
    time.seconds = std::chrono::duration<double>(now - started).count();
    int64_t nowFaults = faults();
    if (startedFaults >= 0 && nowFaults >= 0)
      time.faults = nowFaults - startedFaults;
    startedFaults = nowFaults;
    std::vector<int64_t> ids;
    if (step.launch) {
      time.name = step.launch->kernel;
      ids = step.launch->buffers;
    } else if (step.gemm) {
      const Gemm &g = *step.gemm;
      time.name = "gemm " + std::to_string(g.m) + "x" + std::to_string(g.n) +
                  "x" + std::to_string(g.k);
      ids = {g.a, g.b, g.out};
      if (g.bias >= 0)
        ids.push_back(g.bias);
      if (g.epilogue) {
        time.name += " + " + g.epilogue->kernel;
        ids.insert(ids.end(), g.epilogue->buffers.begin(),
                   g.epilogue->buffers.end());
      }
    } else {
      time.name = "library call";
      ids = step.customBuffers;
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    time.bytes = 0;
    for (int64_t id : ids)
      if (id < 0 || id >= static_cast<int64_t>(bufferBytes.size()) ||
          bufferBytes[id] < 0)
        time.bytes = -1;
      else if (time.bytes >= 0)
        time.bytes += bufferBytes[id];
    profile->push_back(std::move(time));
    started = now;
  };
  for (const Step &step : steps) {
    if (step.gemm) {
      error = runGemm(*step.gemm, ptrs, symbol);
      if (!error.empty())
        return false;
      release(step);
      timed(step);
      continue;
    }
    if (step.custom) {
      error = step.custom(ptrs, parallelFor(), owned);
      if (!error.empty())
        return false;
      release(step);
      timed(step);
      continue;
    }
    const Launch &launch = *step.launch;
    int64_t rows = launch.perSymbol ? launch.rows * symbol : launch.rows;
    int64_t points = launch.perSymbol ? launch.points * symbol : launch.points;
    if (rows == 0) {
      timed(step);
      continue;
    }
    int64_t chunks = points >= kParallelPoints
                         ? std::min<int64_t>(pool.size() * 4, rows)
                         : 1;
    pool.parallelFor(chunks, [&](int64_t chunk) {
      callKernel(launch, ptrs, rows * chunk / chunks,
                 rows * (chunk + 1) / chunks);
    });
    release(step);
    timed(step);
  }
  if (record) {
    error = ::tc::checks::describe(
        record,
        [&](uint64_t id) {
          for (const Step &step : steps)
            for (const Launch *l :
                 {step.launch ? &*step.launch : nullptr,
                  step.gemm && step.gemm->epilogue ? &*step.gemm->epilogue
                                                   : nullptr})
              if (l && ::tc::checks::kernelId(l->kernel) == id)
                return l->kernel;
          return std::string();
        },
        /*alignment=*/0);
    return error.empty();
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Text form
//===----------------------------------------------------------------------===//

// The text form formats and parses numbers without iostreams: the GPU
// machine's build links libstdc++ statically into modules that load into a
// process with its own libstdc++ (torch's), where iostreams' number facets
// fail and a stream stops at its first number (plans were cut after
// "args ").

namespace {
/// Appends the words of one line of the text form.
struct Line {
  std::string &out;
  explicit Line(std::string &out, const char *tag) : out(out) { out += tag; }
  ~Line() { out += '\n'; }
  Line &operator<<(int64_t v) {
    out += ' ';
    out += std::to_string(v);
    return *this;
  }
  Line &operator<<(const std::string &word) {
    out += ' ';
    out += word;
    return *this;
  }
};

/// The space-separated words of `line`.
std::vector<std::string_view> splitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ')
      ++i;
    if (i > start)
      words.push_back(line.substr(start, i - start));
  }
  return words;
}

/// `word` as a whole decimal number.
bool parseNumber(std::string_view word, int64_t &value) {
  auto [end, error] =
      std::from_chars(word.data(), word.data() + word.size(), value);
  return error == std::errc() && end == word.data() + word.size();
}
} // namespace

std::string HostProgram::serialize(const std::string &version) const {
  std::string out = version + "\n";
  Line(out, "args") << numArguments;
  Line(out, "sizes") << arenaBytes << intermediateBytes << numKernels
                     << arenaBytesPerSymbol;
  Line(out, "objects") << numObjects;
  if (checkRecord >= 0)
    Line(out, "checks") << checkRecord;
  if (!bufferBytes.empty()) {
    Line line(out, "bytes");
    for (int64_t b : bufferBytes)
      line << b;
  }
  for (const BufferRef &ref : buffers)
    Line(out, "buffer") << ref.argument << ref.offset << ref.offsetPerSymbol;
  auto writeLaunch = [&](const char *tag, const Launch &launch) {
    Line line(out, tag);
    line << launch.kernel << launch.rows << launch.points
         << static_cast<int64_t>(launch.perSymbol);
    for (int64_t id : launch.buffers)
      line << id;
  };
  for (const Step &step : steps) {
    if (step.launch) {
      writeLaunch("launch", *step.launch);
      continue;
    }
    if (!step.gemm)
      continue; // not serializable(): callers check
    const Gemm &g = *step.gemm;
    Line(out, "gemm") << g.a << g.b << g.out << g.bias
                      << static_cast<int64_t>(g.transA)
                      << static_cast<int64_t>(g.transB)
                      << static_cast<int64_t>(g.isDouble) << g.batch << g.m
                      << g.n << g.k << static_cast<int64_t>(g.perSymbol);
    if (g.epilogue)
      writeLaunch("epilogue", *g.epilogue);
  }
  return out;
}

bool HostProgram::parse(const std::string &text, const std::string &version) {
  std::string_view rest(text);
  auto nextLine = [&](std::string_view &line) {
    if (rest.empty())
      return false;
    size_t end = rest.find('\n');
    line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view()
                                         : rest.substr(end + 1);
    return true;
  };
  std::string_view line;
  if (!nextLine(line) || line != version)
    return false;
  while (nextLine(line)) {
    std::vector<std::string_view> words = splitWords(line);
    if (words.empty())
      continue;
    std::string_view tag = words[0];
    bool isLaunch = tag == "launch" || tag == "epilogue";
    size_t first = isLaunch ? 2 : 1;
    if (words.size() < first)
      return false;
    std::vector<int64_t> n;
    for (size_t i = first; i < words.size(); ++i) {
      int64_t v;
      if (!parseNumber(words[i], v))
        return false; // not a number
      n.push_back(v);
    }
    if (tag == "args" && n.size() == 1) {
      numArguments = n[0];
    } else if (tag == "sizes" && n.size() == 4) {
      arenaBytes = n[0];
      intermediateBytes = n[1];
      numKernels = n[2];
      arenaBytesPerSymbol = n[3];
      if (arenaBytes < 0 || arenaBytesPerSymbol < 0)
        return false;
    } else if (tag == "checks" && n.size() == 1 && n[0] >= 0) {
      checkRecord = n[0];
    } else if (tag == "bytes") {
      bufferBytes.assign(n.begin(), n.end());
    } else if (tag == "objects" && n.size() == 1 && n[0] >= 1) {
      numObjects = n[0];
    } else if (tag == "buffer" && n.size() == 3) {
      if (n[0] >= numArguments || n[1] < 0 || n[1] > arenaBytes || n[2] < 0 ||
          n[2] > arenaBytesPerSymbol)
        return false;
      buffers.push_back({n[0], n[1], n[2]});
    } else if (isLaunch && n.size() >= 3) {
      Launch launch;
      launch.kernel = std::string(words[1]);
      launch.rows = n[0];
      launch.points = n[1];
      launch.perSymbol = n[2] != 0;
      launch.buffers.assign(n.begin() + 3, n.end());
      if (tag == "launch") {
        steps.push_back({std::move(launch), std::nullopt, {}, {}, {}});
      } else {
        if (steps.empty() || !steps.back().gemm)
          return false;
        steps.back().gemm->epilogue = std::move(launch);
      }
    } else if (tag == "gemm" && n.size() == 12) {
      Gemm g;
      g.a = n[0];
      g.b = n[1];
      g.out = n[2];
      g.bias = n[3];
      g.transA = n[4] != 0;
      g.transB = n[5] != 0;
      g.isDouble = n[6] != 0;
      g.batch = n[7];
      g.m = n[8];
      g.n = n[9];
      g.k = n[10];
      g.perSymbol = static_cast<unsigned>(n[11]) & 15u;
      steps.push_back({std::nullopt, g, {}, {}, {}});
    } else {
      return false;
    }
  }
  auto valid = [&](int64_t id) {
    return id >= 0 && id < static_cast<int64_t>(buffers.size());
  };
  for (const Step &step : steps) {
    if (step.launch && !std::all_of(step.launch->buffers.begin(),
                                    step.launch->buffers.end(), valid))
      return false;
    if (!step.gemm)
      continue;
    const Gemm &g = *step.gemm;
    if (g.epilogue &&
        !std::all_of(g.epilogue->buffers.begin(), g.epilogue->buffers.end(),
                     valid))
      return false;
    if (!valid(g.a) || !valid(g.b) || !valid(g.out) ||
        (g.bias != -1 && !valid(g.bias)))
      return false;
  }
  return (checkRecord == -1 || valid(checkRecord)) &&
         (bufferBytes.empty() || bufferBytes.size() == buffers.size());
}
