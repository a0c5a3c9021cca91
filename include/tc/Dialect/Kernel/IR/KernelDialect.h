//===- KernelDialect.h - kernel dialect ------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_IR_KERNELDIALECT_H
#define TC_DIALECT_KERNEL_IR_KERNELDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tc/Dialect/Kernel/IR/KernelOpsDialect.h.inc"

#include <cstdint>

namespace mlir::tc::kernel {
/// The byte alignment GPU kernels assume of every buffer they are passed
/// (and give their shared arrays): the backend merges neighbouring accesses
/// into vector accesses up to this wide. The runtimes refuse a launch whose
/// buffers are not so aligned (GPUProgram::execute), and the Python side
/// copies an input at another offset (`tc._tc.gpu_buffer_alignment`).
constexpr int64_t kGPUBufferAlignment = 16;
} // namespace mlir::tc::kernel

#endif // TC_DIALECT_KERNEL_IR_KERNELDIALECT_H
