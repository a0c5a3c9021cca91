//===- ScheduleReader.h - a graph's host program, op by op ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// What the CPU and GPU runtimes read from a compiled graph's one
// `kernel.schedule` before its kernels go to machine code: the arena's
// sizes, a number for every buffer (the schedule's arguments in order, then
// each `kernel.buffer`), and the steps (launches, GEMMs, library
// convolutions) in order, each handed to the runtime with its buffers'
// numbers. Each runtime keeps what its steps need (CPURuntime.cpp's host
// program, GPUProgram.cpp's launch configurations).
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_SCHEDULEREADER_H
#define TC_LIB_RUNTIME_SCHEDULEREADER_H

#include "Convolution.h"
#include "mlir/IR/BuiltinOps.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::tc::runtime {

/// A `kernel.gemm` by buffer numbers: out = op(a) x op(b) (+ bias), at the
/// library's sizes.
struct GemmBuffers {
  int64_t a, b, out;
  /// -1 without a bias.
  int64_t bias;
  bool transA, transB;
  kernel::GemmOp::LibrarySizes sizes;
  /// The element type of the operands and the result.
  Type element;
};

/// Sets the fields every runtime's GEMM step has (its buffers, transposes
/// and library sizes) from `buffers`.
template <typename GemmStep>
void assignGemm(GemmStep &g, const GemmBuffers &buffers) {
  g.a = buffers.a;
  g.b = buffers.b;
  g.out = buffers.out;
  g.bias = buffers.bias;
  g.transA = buffers.transA;
  g.transB = buffers.transB;
  g.batch = buffers.sizes.batch;
  g.m = buffers.sizes.m;
  g.n = buffers.sizes.n;
  g.k = buffers.sizes.k;
  g.perSymbol = buffers.sizes.perSymbol;
}

/// Walks the schedule of a compiled module for one runtime, which gets
/// each buffer and step through the `on...` hooks, in schedule order.
class ScheduleReader {
public:
  virtual ~ScheduleReader() = default;

  /// Reads the one `kernel.schedule` of `module`; `platform` ("CPU",
  /// "CUDA", "ROCm") names the target in diagnostics. Fails (after a
  /// diagnostic) on anything but one schedule of buffers, launches, GEMMs,
  /// library convolutions and attentions, or when a hook fails.
  LogicalResult read(ModuleOp module, StringRef platform);

  /// The schedule's sizes (kernel dialect attributes; 0 when absent).
  int64_t arenaBytes = 0, intermediateBytes = 0, arenaBytesPerSymbol = 0;
  int64_t numArguments = 0;
  /// Distinct kernels the launches name.
  int64_t numKernels = 0;

protected:
  /// The next buffer number is the schedule's argument `arg`.
  virtual void onArgument(BlockArgument arg) = 0;
  /// The next buffer number is `buffer`, a slot of the arena.
  virtual void onBuffer(kernel::BufferOp buffer) = 0;
  virtual LogicalResult onLaunch(kernel::LaunchOp launch,
                                 SmallVector<int64_t> buffers) = 0;
  virtual LogicalResult onGemm(kernel::GemmOp gemm,
                               const GemmBuffers &buffers) = 0;
  virtual LogicalResult onConv(kernel::ConvOp conv, ConvCall call) = 0;
  /// A fused attention with its buffers' numbers (query, key, value, out,
  /// then the bias's or -1). Only targets with an attention library take
  /// one.
  virtual LogicalResult onAttention(kernel::AttentionOp attention,
                                    ArrayRef<int64_t> buffers) {
    return attention.emitOpError()
           << "needs a fused attention library, which this target has not";
  }

  /// The schedule being read.
  kernel::ScheduleOp schedule;
};

} // namespace mlir::tc::runtime

#endif // TC_LIB_RUNTIME_SCHEDULEREADER_H
