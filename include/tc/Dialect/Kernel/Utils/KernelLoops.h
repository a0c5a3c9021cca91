//===- KernelLoops.h - kernel bodies as sequential loops --------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// A utility of the kernel dialect that the CPU and GPU lowerings of
// `kernel.kernel` share: turning a body's `kernel.loop` and `kernel.reduce`
// ops into sequential `scf.for` loops and the combiners of reductions into
// arith ops.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_UTILS_KERNELLOOPS_H
#define TC_DIALECT_KERNEL_UTILS_KERNELLOOPS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"

namespace mlir::tc {

/// Emits `acc <kind> value`. With `reassociate`, float combiners carry the
/// `reassoc` fast-math flag (it lets LLVM vectorize CPU reductions).
Value buildCombine(OpBuilder &b, Location loc, kernel::CombinerKind kind,
                   Value acc, Value value, bool reassociate);

/// The identity of `kind` for `type` (0, 1, -inf/min, +inf/max).
Value buildCombinerIdentity(OpBuilder &b, Location loc,
                            kernel::CombinerKind kind, Type type);

/// The leading extent a buffer of the graph's symbolic size has in a
/// lowered kernel. Kernels take bare pointers, which need static shapes; a
/// row-major buffer's addressing does not depend on its leading extent, so
/// any bound as large as the runtime's largest size will do.
inline constexpr int64_t kSymbolicExtent = 2147483647; // INT32_MAX

/// The types a lowered kernel takes for `kernel`'s arguments: buffers of
/// the symbolic size get kSymbolicExtent as their leading extent. Fails
/// with a diagnostic on a buffer with another dynamic dimension.
FailureOr<SmallVector<Type>> getLoweredArgumentTypes(kernel::KernelOp kernel);

/// Whether `kernel`'s domain has the graph's symbolic size (first).
bool hasSymbolicDomain(kernel::KernelOp kernel);

/// The number of points of `kernel`'s domain per unit of the symbolic size
/// (all its points when the domain has none).
int64_t getPointsPerSymbol(kernel::KernelOp kernel);

/// Clones a kernel body into loops. `mapping` maps the kernel's block
/// arguments to the lowered buffers; `point` holds the domain coordinates
/// that `kernel.index` ops resolve to.
class KernelLoopLowering {
public:
  KernelLoopLowering(kernel::KernelOp kernel, bool reassociate)
      : kernel(kernel), reassociate(reassociate) {}

  /// Clones `block`'s ops but its terminator at `b`'s insertion point,
  /// with `kernel.loop`/`kernel.reduce` as sequential `scf.for` loops.
  LogicalResult lowerBlock(Block &block, OpBuilder &b);

  /// As lowerBlock, for the ops of `ops` (a range of one block).
  LogicalResult lowerOps(llvm::iterator_range<Block::iterator> ops,
                         OpBuilder &b);

  /// Maps a loop's induction variable to the index the body sees.
  using IndexMap = function_ref<Value(OpBuilder &, Location, Value)>;

  /// Lowers one `kernel.reduce` as a sequential loop over `[lb, ub)` with
  /// step `step`, starting from `init`; returns the accumulated value. With
  /// `indexOf`, the body sees `indexOf(iv)` rather than the loop's `iv`.
  FailureOr<Value> lowerReduce(kernel::ReduceOp reduce, OpBuilder &b,
                               Value lb, Value ub, Value step, Value init,
                               IndexMap indexOf = nullptr);

  /// Lowers one `kernel.loop` as a sequential loop over `[lb, ub)`.
  LogicalResult lowerLoop(kernel::LoopOp loop, OpBuilder &b, Value lb,
                          Value ub, Value step, IndexMap indexOf = nullptr);

  /// Sets `point` to the kernel domain's coordinates of the row-major
  /// linear index `linear`. With `innerGroup` > 1, `linear` counts groups
  /// of that many consecutive points of the innermost dimension (which it
  /// must divide) and `point` is the group's first point. With `order` (a
  /// permutation of the domain's dimensions that keeps the first one
  /// first), `linear` is row-major over the dimensions in that order.
  void delinearize(OpBuilder &b, Location loc, Value linear,
                   int64_t innerGroup = 1, ArrayRef<int64_t> order = {});

  IRMapping mapping;
  SmallVector<Value> point;

protected:
  kernel::KernelOp kernel;
  bool reassociate;
  /// Float max/min reductions as maxnum/minnum without NaNs, a NaN seen
  /// tracked beside them (the CPU's: see lowerReduce).
  bool nanTrackedMinMax = false;
};

} // namespace mlir::tc

#endif // TC_DIALECT_KERNEL_UTILS_KERNELLOOPS_H
