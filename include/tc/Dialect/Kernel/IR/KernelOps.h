//===- KernelOps.h - kernel dialect operations ------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_IR_KERNELOPS_H
#define TC_DIALECT_KERNEL_IR_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "tc/Dialect/Kernel/IR/KernelDialect.h"

#include "tc/Dialect/Kernel/IR/KernelEnums.h.inc"

#define GET_OP_CLASSES
#include "tc/Dialect/Kernel/IR/KernelOps.h.inc"

namespace mlir::tc::kernel {

/// The identity of combiner `kind` on `type` (0, 1, -inf or the smallest
/// integer for max, +inf or the largest for min).
TypedAttr getCombinerIdentity(Builder &b, CombinerKind kind, Type type);

/// Whether `iv` (a loop's or reduction's induction variable) walks memory
/// contiguously: it flows, through index arithmetic, into the innermost
/// index of the loads and stores it indexes, weighted by their buffers'
/// bytes, at least as much as into other indices. A column sum that also
/// reads a per-row statistic (RMSNorm's weight gradient: x[r, c] * dy[r, c]
/// * rstd[r] summed over r) walks across its big buffers and is not.
bool indexesInnermostDim(Value iv);

/// The bytes of the buffers that `iv` indexes along their innermost
/// dimension (`contiguous`) and across it (`strided`), each access counted
/// once with its buffer's size: what `indexesInnermostDim` compares, for
/// callers that weigh several loops of one kernel together.
struct AccessWeights {
  int64_t contiguous = 0;
  int64_t strided = 0;
};
AccessWeights innermostAccessWeights(Value iv);

} // namespace mlir::tc::kernel

#endif // TC_DIALECT_KERNEL_IR_KERNELOPS_H
