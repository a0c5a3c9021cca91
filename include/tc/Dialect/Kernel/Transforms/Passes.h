//===- Passes.h - kernel dialect passes -------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_TRANSFORMS_PASSES_H
#define TC_DIALECT_KERNEL_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"

namespace mlir::tc::kernel {

#define GEN_PASS_DECL
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tc/Dialect/Kernel/Transforms/Passes.h.inc"

} // namespace mlir::tc::kernel

#endif // TC_DIALECT_KERNEL_TRANSFORMS_PASSES_H
