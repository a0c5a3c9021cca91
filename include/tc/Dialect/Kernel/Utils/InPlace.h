//===- InPlace.h - launches that may write over what they read --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The condition under which a kernel's output may be its input's memory,
// which tc-plan-memory (an output placed over its input in the arena) and
// tc-in-place-launches (one buffer for both) share.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_UTILS_INPLACE_H
#define TC_DIALECT_KERNEL_UTILS_INPLACE_H

#include "tc/Dialect/Kernel/IR/KernelOps.h"

namespace mlir::tc::kernel {

/// Whether `kernel` reads its argument `in` and writes its argument `out`
/// only as a pointwise map does: one store to `out`, after every load of
/// `in` in the same block and at the same indices, no other use of either,
/// no reduction, the same shape and element size; the store either at the
/// top level of a kernel without loops, or in the body of its one loop,
/// indexed by the loop's induction variable. Each element of `in` is then
/// read once, by the thread, iteration or vector lane that writes the same
/// element of `out` right after, so `out` may be `in`'s memory. (A store
/// outside the row loop of a row-per-block GPU kernel is thread 0's while
/// every thread computes the row's scalars; a store in a loop that does
/// not index by it would write an element again after reading it.)
bool writesPointwise(KernelOp kernel, unsigned in, unsigned out);

} // namespace mlir::tc::kernel

#endif // TC_DIALECT_KERNEL_UTILS_INPLACE_H
