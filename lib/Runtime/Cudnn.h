//===- Cudnn.h - kernel.conv on cuDNN, planned at compile time --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// A `kernel.conv` of a CUDA program, planned for cuDNN when the graph
// compiles. The plan is an execution plan of cuDNN's graph (backend) API:
// running it costs a variant pack and one cudnnBackendExecute, a few
// microseconds of host time, where the legacy calls
// (cudnnConvolutionForward and its two gradients) spend tens of microseconds
// re-deriving their engine on every call. The legacy descriptors and
// algorithm are planned too: they run what the graph API cannot (buffers
// below its alignment, a cuDNN without an engine for the convolution).
// Internal to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_CUDNN_H
#define TC_LIB_RUNTIME_CUDNN_H

#include "Convolution.h"

#include "llvm/ADT/ArrayRef.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace mlir::tc::gpu_runtime {

class CudnnConvolution {
public:
  /// Plans `call` for the current device; null with `error` set when cuDNN
  /// cannot run it. `allowTF32`: f32 may run on TF32 tensor cores. Only
  /// algorithms and engines whose workspace is at most `workspaceLimit`
  /// bytes are candidates.
  static std::unique_ptr<CudnnConvolution>
  plan(const runtime::ConvCall &call, bool allowTF32, std::string &error,
       size_t workspaceLimit = SIZE_MAX);
  /// `plan`, made once per process for each distinct convolution on each
  /// `device` (an opaque key: the CUDA context the plan is made in): the
  /// plan depends on the call's kind, element type, shapes, window and
  /// layout, not on its buffers, so the repeated blocks of a network (23
  /// distinct convolutions among ResNet-50's 53) and the graphs of one
  /// process share their plans. Failures are not kept.
  static std::shared_ptr<const CudnnConvolution>
  planShared(const runtime::ConvCall &call, bool allowTF32,
             const void *device, std::string &error,
             size_t workspaceLimit = SIZE_MAX);

  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution &) = delete;
  CudnnConvolution &operator=(const CudnnConvolution &) = delete;

  /// The workspace either path may use.
  size_t workspaceBytes() const;
  /// Whether runs take the graph API's execution plan.
  bool hasExecutionPlan() const { return executionPlan != nullptr; }
  /// The execution plan's time in milliseconds where it was timed against
  /// other candidates, else negative.
  float plannedMilliseconds() const { return planMs; }

  /// Runs the convolution on the buffers `x` (input), `w` (weight) and `y`
  /// (output), whichever of them the call's kind writes, on `stream`.
  bool run(void *x, void *w, void *y, void *workspace, void *stream,
           std::string &error) const;

private:
  CudnnConvolution(const runtime::ConvCall &call, size_t workspaceLimit)
      : call(call), workspaceLimit(workspaceLimit) {}
  bool planLegacy(bool allowTF32, std::string &error);
  /// False (and no plan) where the graph API has no engine for the call.
  bool planGraph(bool allowTF32);
  bool runLegacy(void *x, void *w, void *y, void *workspace, void *stream,
                 std::string &error) const;

  runtime::ConvCall call;
  size_t workspaceLimit;

  // The legacy API: tensor, filter and convolution descriptors, algorithm.
  void *x = nullptr, *y = nullptr, *w = nullptr, *conv = nullptr;
  int algo = 0;
  size_t legacyWorkspace = 0;

  // The graph API: every descriptor the execution plan was made from (kept
  // for the life of the process, see ~CudnnConvolution), the plan and its
  // workspace.
  llvm::SmallVector<void *> graphDescriptors;
  void *executionPlan = nullptr;
  size_t planWorkspace = 0;
  float planMs = -1;
  /// Cleared when the plan fails to run; the legacy path takes over.
  mutable std::atomic<bool> planUsable{true};
};

} // namespace mlir::tc::gpu_runtime

#endif // TC_LIB_RUNTIME_CUDNN_H
