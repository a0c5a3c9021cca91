//===- ROCmRuntime.h - compile and run graphs on AMD GPUs -------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// A graph compiled by the ROCm pipeline (include/tc/Pipelines/Pipelines.h):
// one hsaco of kernels and the host program, interpreted here: kernel
// launches through the HIP module API on the caller's stream and GEMMs
// through rocBLAS. HIP and rocBLAS are opened at run time (dlopen) in the
// process that has them loaded (a ROCm build of PyTorch); tc is compiled
// against HIP's headers (Debian's libamdhip64-dev) when they are there, and
// links no ROCm library.
//
//===----------------------------------------------------------------------===//

#ifndef TC_RUNTIME_ROCMRUNTIME_H
#define TC_RUNTIME_ROCMRUNTIME_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace mlir::tc {

class ROCmExecutable {
public:
  /// Compiles `source` (a module holding one fx.graph) with the ROCm
  /// pipeline; `pipelineOptions` are tc-rocm-pipeline's options as text
  /// ("chip=gfx942 toolkit=/opt/rocm"). On failure returns nullptr and sets
  /// `diagnostics`. Needs no GPU: the hsaco is loaded on the first run().
  static std::unique_ptr<ROCmExecutable>
  compile(llvm::StringRef source, llvm::StringRef pipelineOptions,
          bool keepStageIR, std::string &diagnostics,
          llvm::StringRef cacheDir = "");
  ~ROCmExecutable();

  /// Whether compile() found the kernels and host program in `cacheDir`.
  bool fromCache() const;

  /// Whether this build of tc can run ROCm graphs (it was compiled against
  /// HIP's headers).
  static bool runtimeAvailable();

  /// Runs the graph on `stream` (a hipStream_t; null for the default
  /// stream) on the calling thread's current HIP device. `buffers` holds
  /// device pointers: inputs, outputs, then the arena. Returns false and
  /// sets `error` (naming the failing kernel or library call) on failure.
  bool run(llvm::ArrayRef<void *> buffers, void *stream,
           std::string &error) const;

  int64_t arenaBytes() const;
  int64_t intermediateBytes() const;
  int64_t numKernels() const;
  int64_t numBuffers() const;
  /// The kernels' code objects (AMDGPU ELFs), one per shard of
  /// tc-gpu-module-to-binary.
  llvm::ArrayRef<std::string> binaries() const;
  /// IR after each stage ("prim", "kernel", "gpu", "schedule"), if kept.
  const std::map<std::string, std::string> &stageIR() const;

  struct Impl;

private:
  explicit ROCmExecutable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::tc

#endif // TC_RUNTIME_ROCMRUNTIME_H
