/*===- tc-c/Compiler.h - C API of the tc compiler ------------------*- C -*-===*\
|*                                                                            *|
|* Part of the tc project.                                                    *|
|*                                                                            *|
|* The stable boundary the Python binding (and any other client) uses:       *|
|* compile an imported graph, run it on caller-owned buffers.                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TC_C_COMPILER_H
#define TC_C_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TcExecutable *TcExecutableRef;

/// Compiles the fx-dialect module `source` for the CPU. `options` are
/// tc-cpu-pipeline's options as text ("expand-convolutions=false"; NULL
/// for the defaults). Returns NULL on failure and stores a malloc'ed
/// message (diagnostics with locations) in `*error`, which the caller frees
/// with tcFreeString. `cacheEntry` (may be NULL) is the path, without
/// extension, of the graph's entry in a disk cache shared across processes
/// (`<dir>/<key>`: the caller's key covers the source, the options, tc's
/// build and the host CPU; see CPUExecutable::compile).
TcExecutableRef tcCompileCPU(const char *source, size_t length,
                             const char *options, int keepStageIR,
                             const char *cacheEntry, char **error);

/// Compiles the fx-dialect module `source` ahead of time for this host's
/// CPU: writes the kernels as a position-independent object file to
/// `objectPath` (to be linked into a shared library) and the host program
/// to `planPath`, both for tc/AOT/Model.h's runtime. Returns 0 on success,
/// else nonzero with a message in `*error` (as tcCompileCPU).
int tcExportCPU(const char *source, size_t length, const char *options,
                const char *objectPath, const char *planPath, char **error);

/// Compiles the fx-dialect module `source` for NVIDIA GPUs. `options` are
/// tc-cuda-pipeline's options as text ("chip=sm_90 format=bin toolkit=...
/// link=..."; NULL for the defaults). Needs no GPU. Errors as
/// tcCompileCPU. `cacheDir` (may be NULL) is a folder where the host
/// program and the kernels' binaries are cached across processes, keyed
/// here (library planning and loading run again).
TcExecutableRef tcCompileCUDA(const char *source, size_t length,
                              const char *options, int keepStageIR,
                              const char *cacheDir, char **error);

/// Compiles the fx-dialect module `source` for AMD GPUs. `options` are
/// tc-rocm-pipeline's options as text ("chip=gfx942 toolkit=/opt/rocm").
/// Needs no GPU. Errors and `cacheDir` as tcCompileCUDA.
TcExecutableRef tcCompileROCm(const char *source, size_t length,
                              const char *options, int keepStageIR,
                              const char *cacheDir, char **error);

/// Splits the fx-dialect training graph `source` (arguments marked
/// tc.requires_grad) into a forward and a backward module of prim ops
/// (tc-split-training-pipeline, with `options` as text; NULL for the
/// defaults), each compiled afterwards with
/// tcCompileCPU/CUDA/ROCm. The forward takes the graph's inputs and returns
/// its outputs, then the extra values the backward saves. The backward
/// takes the saved values, then one cotangent per floating-point output,
/// and returns the gradients of the marked inputs. `*layout` lists where
/// each saved value comes from, comma separated: "i<n>" input n, "o<n>"
/// output n, "s<n>:<type>" the forward's extra result n, of MLIR tensor
/// type <type>. Returns 0 on success
/// (the three malloc'ed strings for tcFreeString), else nonzero with a
/// message in `*error`.
int tcSplitTrainingGraph(const char *source, size_t length,
                         const char *options, char **forward,
                         char **backward, char **layout, char **error);

/// Runs `exe` on `count` buffers: inputs, outputs, then the arena. Returns
/// 0 on success, else nonzero with a malloc'ed message in `*error`.
int tcExecutableRun(TcExecutableRef exe, void *const *buffers, size_t count,
                    char **error);

/// As tcExecutableRun; a GPU graph's buffers are device pointers and it
/// runs on `stream` (a CUstream or hipStream_t, NULL for the default
/// stream) in the calling thread's current context or device. CPU graphs
/// ignore `stream`.
int tcExecutableRunOnStream(TcExecutableRef exe, void *const *buffers,
                            size_t count, void *stream, char **error);

/// As tcExecutableRun, for a CPU or CUDA graph compiled with the graph's
/// symbolic size (docs/DynamicShapes.md): `symbol` is its value in this
/// call, and the arena is tcExecutableArenaBytes + symbol *
/// tcExecutableArenaBytesPerSymbol bytes.
int tcExecutableRunSymbolic(TcExecutableRef exe, void *const *buffers,
                            size_t count, int64_t symbol, char **error);

/// tcExecutableRunSymbolic on `stream` (as tcExecutableRunOnStream).
int tcExecutableRunSymbolicOnStream(TcExecutableRef exe, void *const *buffers,
                                    size_t count, void *stream,
                                    int64_t symbol, char **error);

/// A CUDA graph only: reads back the first byte of each of `arguments`
/// (one-byte outputs, such as an index check's flag) as soon as the last
/// step taking it has run (tcExecutableRunReadingOnStream). Returns 1 when
/// it will, else 0 with a malloc'ed reason in `*why`.
int tcExecutableReadEarly(TcExecutableRef exe, const int64_t *arguments,
                          size_t count, char **why);

/// As tcExecutableRunSymbolicOnStream (`symbol` < 0: none), returning once
/// tcExecutableReadEarly's arguments are read into `values` (`*read` 1)
/// while the rest of the run goes on; `*read` 0 where the stream captures
/// (nothing read: the arguments hold the values once the run is done).
int tcExecutableRunReadingOnStream(TcExecutableRef exe, void *const *buffers,
                                   size_t count, void *stream, int64_t symbol,
                                   uint8_t *values, int *read, char **error);

/// As tcExecutableRunSymbolic (`symbol` < 0: none), timing each step:
/// `*profile` gets a malloc'ed text of one line per step,
/// "<name>\t<seconds>\t<bytes>" (bytes -1 where unknown). Returns 1 with
/// `*error` set for a ROCm graph or a failed run.
int tcExecutableRunProfiled(TcExecutableRef exe, void *const *buffers,
                            size_t count, int64_t symbol, char **profile,
                            char **error);

/// tcExecutableRunProfiled on `stream` (a CUDA graph's: each step between
/// two CUDA events, the launches issued one by one; the stream must not be
/// capturing; the call waits for the run).
int tcExecutableRunProfiledOnStream(TcExecutableRef exe,
                                    void *const *buffers, size_t count,
                                    void *stream, int64_t symbol,
                                    char **profile, char **error);

/// "cpu", "cuda" or "rocm".
const char *tcExecutableTarget(TcExecutableRef exe);

int64_t tcExecutableArenaBytes(TcExecutableRef exe);

/// Why a fused attention of these sizes cannot run on the current CUDA
/// context's device through cuDNN (mlir::tc::CUDAExecutable::
/// attentionUnavailable), or NULL when it can. `sizes`: batch, heads,
/// key/value heads, queries, keys, head and value features; `biasDims`:
/// the bias's batch and heads, -1 without a bias. The reason is freed with
/// tcFreeString.
char *tcCUDAAttentionUnavailable(int bf16, const int64_t *sizes,
                                 const int64_t *biasDims, int causal,
                                 float scale);

/// The byte alignment GPU kernels assume of every buffer they are passed;
/// a GPU run refuses buffers that do not have it.
int64_t tcGPUBufferAlignment(void);
/// How many threads a CPU graph's launches run on now (tc::host::threads).
int64_t tcCPUThreads(void);
/// The kernels the CPU's GEMM library (OpenBLAS) chose when it loaded
/// (tc::host::gemmKernels); static storage.
const char *tcCPUGemmKernels(void);

/// One library convolution of a CPU graph (mlir::tc::LibraryConvolution):
/// `kind` 0 forward (writes `output`), 1 the input's gradient (writes
/// `input` from the output's gradient in `output`), 2 the weight's
/// (writes `weight`); `element` 0 f32, 1 f64, 2 f16, 3 bf16; shapes and
/// element strides by PyTorch's dimension order, `rank` long; `stride`,
/// `padding`, `dilation` `rank - 2` long.
typedef struct TcConvolution {
  int kind, element, rank;
  const int64_t *inputShape, *weightShape, *outputShape;
  const int64_t *inputStrides, *weightStrides, *outputStrides;
  const int64_t *stride, *padding, *dilation;
  int64_t groups;
  void *input, *weight, *output;
  /// Nonzero when the buffer the call writes is an intermediate of the
  /// graph: the function may then leave it unwritten and set `result` to
  /// memory of its own holding the result (the buffer's shape and strides,
  /// at least 64-byte aligned), which tc reads instead until the graph's
  /// run ends and then releases with `releaseResult(resultOwner)`.
  int mayReturn;
  void *result;
  void *resultOwner;
  void (*releaseResult)(void *owner);
} TcConvolution;
/// Runs one call: returns 0, or nonzero with `*error` set to a message
/// allocated with malloc (tc frees it).
typedef int (*TcConvolutionFn)(TcConvolution *call, char **error);
/// Sets the library that runs CPU graphs' convolutions (NULL: the runtime's
/// reference loops, f32 and f64 only). tc._tc sets PyTorch's.
void tcSetCPUConvolution(TcConvolutionFn fn);
/// One matrix product of a CPU graph (tc::host::LibraryGemm): for each of
/// `batch` entries, `out` = op(a) op(b) plus `bias` (a row of n, NULL
/// without one) on every row; row-major, contiguous, entry after entry:
/// a m x k (k x m where `transA`), b k x n (n x k where `transB`), out
/// m x n; `element` 0 f32, 1 f64.
typedef struct TcGemm {
  int element, transA, transB;
  int64_t batch, m, n, k;
  const void *a, *b, *bias;
  void *out;
} TcGemm;
/// Runs one product: returns 0, or nonzero with `*error` set to a message
/// allocated with malloc (tc frees it).
typedef int (*TcGemmFn)(const TcGemm *call, char **error);
/// Sets the library that runs CPU graphs' large products (NULL: OpenBLAS
/// runs them all). tc._tc sets PyTorch's.
void tcSetCPUGemm(TcGemmFn fn);
/// Whether tc-align-half-products pads a half-precision GEMM of `m` x `k`
/// by `k` x `n` (mlir::tc::prim::halfProductPadding), and by how much (to
/// `padM`, `padK`, `padN`): 1 when it does, else 0. `resultViewed`: the
/// caller returns the padded result as a view (no slice copy).
int tcHalfProductPadding(int64_t m, int64_t k, int64_t n, int lhsTransposed,
                         int rhsTransposed, int64_t elementBytes,
                         int64_t resultElements, int64_t lhsElements,
                         int64_t rhsElements, int resultViewed, int64_t *padM,
                         int64_t *padK, int64_t *padN);
/// What the arena grows by per unit of the symbolic size (0 without one).
int64_t tcExecutableArenaBytesPerSymbol(TcExecutableRef exe);
/// Whether the graph was compiled with the symbolic size.
int tcExecutableIsSymbolic(TcExecutableRef exe);
int64_t tcExecutableIntermediateBytes(TcExecutableRef exe);
int64_t tcExecutableNumKernels(TcExecutableRef exe);
int64_t tcExecutableNumBuffers(TcExecutableRef exe);
/// How many runs of a CUDA graph replayed its captured launch sequence
/// (0 for other targets).
int64_t tcExecutableGraphReplays(TcExecutableRef exe);
/// How many CUDA graphs of its launch sequence the graph captured (0 for
/// other targets).
int64_t tcExecutableGraphCaptures(TcExecutableRef exe);
/// 1 if the graph was loaded from the cache folder rather than compiled.
int tcExecutableFromCache(TcExecutableRef exe);
/// How many of the graph's library convolutions run on cuDNN execution
/// plans (graph API) made at compile time; 0 for other targets.
int64_t tcExecutableNumConvolutionPlans(TcExecutableRef exe);
/// Seconds the compile spent in `phase` ("prim", "kernel", "gpu",
/// "schedule", "cudnn", "load"; see CUDAExecutable::compileSeconds), or -1
/// where it was not measured (CPU and ROCm graphs, phases that did not
/// run).
double tcExecutableCompileSeconds(TcExecutableRef exe, const char *phase);

/// The IR after stage `stage` when compiled with keepStageIR, else NULL:
/// "prim", "kernel", then "loops", "llvm" (CPU) or "gpu", "schedule"
/// (CUDA). Owned by `exe`.
const char *tcExecutableStageIR(TcExecutableRef exe, const char *stage);

/// `source` without value names and locations (mlir::tc::graphStructure):
/// the key under which structurally identical graphs share one compile. A
/// malloc'ed string for tcFreeString.
char *tcGraphStructure(const char *source, size_t length);

void tcExecutableDestroy(TcExecutableRef exe);
void tcFreeString(char *string);

/// Runs tc-opt's driver (mlir::tc::optMain) in this process with `argv`
/// (argv[0] the program's name); returns its exit code. Once per process:
/// it parses LLVM's command line.
int tcOptMain(int argc, char **argv);

/// Runs tc-translate's driver (mlir::tc::translateMain) as tcOptMain.
int tcTranslateMain(int argc, char **argv);

/// What this native build is, as "key=value" lines: `llvm` (LLVM's
/// version), `linkage` ("static": MLIR, LLVM and the BLAS inside the
/// extension; "shared": the system's libMLIR/libLLVM), `assertions` (0 or
/// 1), `compiler`, `nvptx` and `amdgpu` (1 when LLVM's GPU back ends are
/// in: kernels for CUDA and ROCm). Owned by tc.
const char *tcBuildInfo(void);

#ifdef __cplusplus
}
#endif

#endif /* TC_C_COMPILER_H */
