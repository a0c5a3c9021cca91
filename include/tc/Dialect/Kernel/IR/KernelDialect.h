//===- KernelDialect.h - kernel dialect ------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_IR_KERNELDIALECT_H
#define TC_DIALECT_KERNEL_IR_KERNELDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tc/Dialect/Kernel/IR/KernelOpsDialect.h.inc"

#endif // TC_DIALECT_KERNEL_IR_KERNELDIALECT_H
