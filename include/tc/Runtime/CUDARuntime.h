//===- CUDARuntime.h - compile and run graphs on NVIDIA GPUs ----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// A graph compiled by the CUDA pipeline (include/tc/Pipelines/Pipelines.h):
// one module of kernels (cubin, or PTX the driver finishes) and the host
// program, interpreted here: kernel launches on the caller's stream and
// GEMMs through cuBLAS. The CUDA driver and cuBLAS are opened at run time
// (dlopen) in the process that already has them loaded (PyTorch's), so tc
// links no CUDA library and builds on machines without one.
//
//===----------------------------------------------------------------------===//

#ifndef TC_RUNTIME_CUDARUNTIME_H
#define TC_RUNTIME_CUDARUNTIME_H

#include "tc/Runtime/HostProgram.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlir::tc {

class CUDAExecutable {
public:
  /// Compiles `source` (a module holding one fx.graph) with the CUDA
  /// pipeline; `pipelineOptions` are tc-cuda-pipeline's options as text
  /// ("chip=sm_90 format=bin toolkit=... link=..."). On failure returns
  /// nullptr and sets `diagnostics`. Needs no GPU: the binary is loaded on
  /// the first run().
  static std::unique_ptr<CUDAExecutable>
  compile(llvm::StringRef source, llvm::StringRef pipelineOptions,
          bool keepStageIR, std::string &diagnostics,
          llvm::StringRef cacheDir = "");
  ~CUDAExecutable();

  /// Why a fused attention (`prim.attention`) of these sizes cannot run on
  /// the current CUDA context's device through cuDNN, or "" when it can:
  /// the plan is made here and kept for the graph that calls it. `sizes`:
  /// batch, heads, key/value heads, queries, keys, head and value
  /// features; `biasDims`: the bias's batch and heads (1 or the full
  /// size), {-1, -1} without a bias.
  static std::string attentionUnavailable(bool bf16,
                                          llvm::ArrayRef<int64_t> sizes,
                                          llvm::ArrayRef<int64_t> biasDims,
                                          bool causal, float scale);

  /// Whether compile() found the kernels and host program in `cacheDir`
  /// (the compile then only plans library calls and loads the kernels).
  bool fromCache() const;

  /// Runs the graph on `stream` (a CUstream; null for the default stream)
  /// in the calling thread's current CUDA context. `buffers` holds device
  /// pointers: inputs, outputs, then the arena (arenaBytes() long, 256-byte
  /// aligned). Returns false and sets `error` (naming the failing kernel
  /// or library call) on failure. Once a run passes the same buffers as a
  /// recent run, the launch sequence is captured as a CUDA graph and later
  /// runs with those buffers launch the graph (TC_CUDA_GRAPHS=0: never).
  /// A graph compiled with the symbolic size (docs/DynamicShapes.md) runs
  /// at `symbol`, its value (graphs are captured per value), with an arena
  /// of arenaBytes() + symbol * arenaBytesPerSymbol().
  bool run(llvm::ArrayRef<void *> buffers, void *stream, std::string &error,
           int64_t symbol = 0) const;

  /// Makes runReading() read back the first byte of each of `arguments`
  /// (one-byte outputs: flags such as an index check's) as soon as the
  /// last step that takes it has run, instead of after the whole run.
  /// Call it before the first run; a second call must name the same
  /// arguments. Every run then waits for these reads (run() too, which
  /// discards them), and no longer. False, with `why`, where it cannot (no step writes an
  /// argument, or the driver lacks asynchronous copies to pinned memory).
  bool readEarly(llvm::ArrayRef<int64_t> arguments, std::string &why);

  /// As run(), and returns once readEarly()'s arguments are read into
  /// `values` (in readEarly()'s order; `read` true), while the rest of the
  /// run goes on: the host issues its next work while the GPU runs this
  /// graph. Where the stream captures (the caller's torch.cuda.graph),
  /// nothing is read (`read` false): the arguments hold the values when
  /// the run is done.
  bool runReading(llvm::ArrayRef<void *> buffers, void *stream,
                  int64_t symbol, uint8_t *values, bool &read,
                  std::string &error) const;

  /// As run(), timing each step that runs with CUDA events around it (the
  /// launch sequence issued one by one, never a CUDA graph; the stream
  /// must not be capturing): `profile` gets each step's name, GPU seconds
  /// and the bytes of its buffers (TC_LOGS=kernels). Waits for the run.
  bool runProfiled(llvm::ArrayRef<void *> buffers, void *stream,
                   int64_t symbol, std::vector<::tc::host::StepTime> &profile,
                   std::string &error) const;

  /// Whether the graph has the symbolic size.
  bool symbolic() const;
  int64_t arenaBytesPerSymbol() const;
  int64_t arenaBytes() const;
  int64_t intermediateBytes() const;
  int64_t numKernels() const;
  int64_t numBuffers() const;
  /// How many convolutions run on cuDNN execution plans (the rest take
  /// cuDNN's legacy calls).
  int64_t numConvolutionPlans() const;
  /// How many runs launched the captured CUDA graph instead of issuing the
  /// launch sequence (see run()).
  int64_t graphReplays() const;
  /// How many CUDA graphs of the sequence were captured.
  int64_t graphCaptures() const;
  /// "bin" (cubin) or "isa" (PTX).
  llvm::StringRef binaryFormat() const;
  /// The kernels' objects (cubin bytes or PTX text), one per shard of
  /// tc-gpu-module-to-binary.
  llvm::ArrayRef<std::string> binaries() const;
  /// IR after each stage ("prim", "kernel", "gpu", "schedule"), if kept.
  const std::map<std::string, std::string> &stageIR() const;
  /// Seconds per compile phase: "prim", "kernel", "gpu", "schedule" (the
  /// pipeline's stages), "cudnn" (planning convolutions), "load" (the
  /// driver loading, and for PTX compiling, the kernels).
  const std::map<std::string, double> &compileSeconds() const;

  struct Impl;

private:
  explicit CUDAExecutable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::tc

#endif // TC_RUNTIME_CUDARUNTIME_H
