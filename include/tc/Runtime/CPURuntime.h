//===- CPURuntime.h - compile and run a graph on the CPU --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend end to end: parse an imported fx graph, run the CPU
// pipeline, JIT the kernels to native code in-process, and run the
// kernel.schedule host program on caller-owned buffers (the torch tensors'
// storage), splitting each launch among worker threads.
//
//===----------------------------------------------------------------------===//

#ifndef TC_RUNTIME_CPURUNTIME_H
#define TC_RUNTIME_CPURUNTIME_H

#include "llvm/ADT/ArrayRef.h"
#include "tc/Runtime/HostProgram.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace mlir::tc {

/// The first line of an exported graph's host program.
inline constexpr const char *kAOTPlanVersion = "tc-aot-plan-2";

/// One library convolution of a CPU graph (a `kernel.conv` step, which the
/// CPU pipeline keeps with expand-convolutions=false), as the host library
/// that runs it sees it. Shapes and strides (in elements) by PyTorch's
/// dimension order (N, C, spatial...); `output` is the forward's output
/// whatever the kind (a gradient kind writes `input`'s or `weight`'s
/// buffer and reads the output's gradient from `output`).
struct LibraryConvolution {
  int kind;    // kernel::ConvKind: 0 forward, 1 input's gradient, 2 weight's
  int element; // 0 f32, 1 f64, 2 f16, 3 bf16
  int rank;    // of input, weight and output (3 to 5)
  const int64_t *inputShape, *weightShape, *outputShape;
  const int64_t *inputStrides, *weightStrides, *outputStrides;
  const int64_t *stride, *padding, *dilation; // rank - 2 each
  int64_t groups;
  void *input, *weight, *output;
  /// Whether the buffer the call writes (output, or the gradient's) is an
  /// intermediate of the graph, which the library may leave unwritten and
  /// return its own memory for instead (`result`, of the buffer's shape and
  /// strides, kept alive by `resultOwner` until the graph's run ends): no
  /// copy of the result into tc's arena.
  bool mayReturn = false;
  void *result = nullptr;
  std::shared_ptr<void> resultOwner;
};

/// Runs one call; returns "" or an error message.
using LibraryConvolutionFn = std::string (*)(LibraryConvolution &);

/// Sets the library that runs CPU graphs' convolutions (PyTorch's, through
/// tc._tc: the kernels eager itself uses); nullptr leaves them to the
/// runtime's reference loops (f32 and f64 only: a test path). Graphs
/// compiled before keep running through whichever is set when they run.
void setCPULibraryConvolution(LibraryConvolutionFn fn);

/// `source` without its value names and locations: graphs with the same
/// structure (a model's identical layers) compile to the same program, so
/// this is the key under which they share one compile (as the GPU's disk
/// cache keys on it).
std::string graphStructure(llvm::StringRef source);
LibraryConvolutionFn cpuLibraryConvolution();

class CPUExecutable {
public:
  /// Compiles `source` (a module holding one fx.graph). On failure returns
  /// nullptr and sets `diagnostics` to the compiler's messages, with
  /// locations. With a `cacheEntry` (a path without extension, named by the
  /// caller's key for the source, the options, tc's build and the host
  /// CPU), the host program and the kernels' objects are cached as
  /// `<cacheEntry>.plan` and `<cacheEntry>.<i>.o`; a later compile with the
  /// same entry (in any process) loads them instead of running the
  /// pipeline. `pipelineOptions` are tc-cpu-pipeline's
  /// ("expand-convolutions=false"; empty for the defaults).
  static std::unique_ptr<CPUExecutable>
  compile(llvm::StringRef source, llvm::StringRef pipelineOptions,
          bool keepStageIR, std::string &diagnostics,
          llvm::StringRef cacheEntry = "");
  ~CPUExecutable();

  /// Compiles `source` ahead of time (tc/AOT/Model.h runs the result):
  /// writes the kernels as a position-independent object for this host's
  /// CPU to `objectPath`, each with its entry `_mlir_<kernel>`, and the host
  /// program's text (version kAOTPlanVersion) to `planPath`. On failure
  /// returns false with `diagnostics` set.
  static bool exportGraph(llvm::StringRef source,
                          llvm::StringRef pipelineOptions,
                          llvm::StringRef objectPath, llvm::StringRef planPath,
                          std::string &diagnostics);

  /// Runs the graph. `buffers` holds the inputs' data pointers, then the
  /// outputs', then the arena's (arenaBytes() long, 64-byte aligned; null
  /// when arenaBytes() is 0). Returns false and sets `error` on failure.
  /// `symbol` is the value of the graph's symbolic size, if it has one.
  bool run(llvm::ArrayRef<void *> buffers, std::string &error,
           int64_t symbol = 0,
           std::vector<::tc::host::StepTime> *profile = nullptr) const;

  int64_t arenaBytes() const;
  int64_t arenaBytesPerSymbol() const;
  bool symbolic() const;
  int64_t intermediateBytes() const;
  int64_t numKernels() const;
  int64_t numBuffers() const;
  /// Whether compile() found this graph in the on-disk cache.
  bool fromCache() const;
  /// IR after each stage ("prim", "kernel", "loops", "llvm"), if kept.
  const std::map<std::string, std::string> &stageIR() const;

  struct Impl;

private:
  explicit CPUExecutable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::tc

#endif // TC_RUNTIME_CPURUNTIME_H
