//===- Convolution.h - library convolutions, as runtimes see them -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// A `kernel.conv` of a host program, described for a runtime: which buffers
// it reads and writes, their shapes and the window. Also a reference
// implementation in plain loops, which the CPU runtime runs where a
// pipeline kept convolutions (expand-convolutions=false): it checks the
// library path (gradient ops, fusion, memory planning) on machines without
// cuDNN. Internal to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_CONVOLUTION_H
#define TC_LIB_RUNTIME_CONVOLUTION_H

#include "tc/Dialect/Kernel/IR/KernelOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>

namespace mlir::tc::runtime {

enum class ConvElement { F32, F64, F16, BF16 };

struct ConvCall {
  kernel::ConvKind kind;
  /// Buffer ids of the forward's input, weight and output (for a gradient,
  /// the one it writes holds that gradient, `output` the output's).
  int64_t input, weight, output;
  SmallVector<int64_t> inputShape, weightShape, outputShape;
  SmallVector<int64_t> stride, padding, dilation;
  int64_t groups;
  ConvElement element;
  /// The shapes above are by PyTorch's dimension order (N, C, spatial...);
  /// with `channelsLast` the buffers hold channels innermost, but for the
  /// weight's with `weightChannelsFirst` (CPU library calls).
  bool channelsLast = false;
  bool weightChannelsFirst = false;
  /// Whether the buffer the call writes is an intermediate (not an argument
  /// of the program), which the library may return memory of its own for.
  bool writesIntermediate = false;

  /// The id of the buffer the call writes.
  int64_t written() const {
    return kind == kernel::ConvKind::Forward         ? output
           : kind == kernel::ConvKind::BackwardInput ? input
                                                      : weight;
  }

  /// Whether the weight's buffer holds its channels innermost.
  bool weightChannelsLast() const {
    return channelsLast && !weightChannelsFirst;
  }

  /// `op`'s call with buffer ids from `ids`; an error at `op` for element
  /// types no runtime takes.
  static FailureOr<ConvCall> get(kernel::ConvOp op,
                                 const llvm::DenseMap<Value, int64_t> &ids);
};

/// The element strides of a buffer of `shape` (by PyTorch's dimension
/// order) laid out channels-first (row-major) or channels-last.
SmallVector<int64_t> convStrides(ArrayRef<int64_t> shape, bool channelsLast);

/// Runs `call` (f32 or f64) on `ptrs` (the buffers by id) with plain loops,
/// the independent parts through `parallelFor(count, body)`.
void runReferenceConv(
    const ConvCall &call, ArrayRef<void *> ptrs,
    const std::function<void(int64_t, const std::function<void(int64_t)> &)>
        &parallelFor);

/// Runs `call` on the CPU through the library convolution set by
/// setCPULibraryConvolution, else with the reference loops (an error for
/// element types they do not take). Where the library returns its result
/// in memory of its own (an intermediate's), points the written buffer's
/// entry of `ptrs` at it and keeps it in `owned`. Returns "" or an error.
std::string runCPUConv(
    const ConvCall &call, std::vector<void *> &ptrs,
    const std::function<void(int64_t, const std::function<void(int64_t)> &)>
        &parallelFor,
    std::vector<std::pair<int64_t, std::shared_ptr<void>>> &owned);

} // namespace mlir::tc::runtime

#endif // TC_LIB_RUNTIME_CONVOLUTION_H
