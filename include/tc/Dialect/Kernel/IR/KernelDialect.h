//===- KernelDialect.h - kernel dialect ------------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_IR_KERNELDIALECT_H
#define TC_DIALECT_KERNEL_IR_KERNELDIALECT_H

#include "mlir/IR/Dialect.h"
#include "llvm/ADT/StringRef.h"

#include "tc/Dialect/Kernel/IR/KernelOpsDialect.h.inc"

#include <cstdint>

namespace mlir::tc::kernel {
/// The byte alignment GPU kernels assume of every buffer they are passed
/// (and give their shared arrays): the backend merges neighbouring accesses
/// into vector accesses up to this wide. The runtimes refuse a launch whose
/// buffers are not so aligned (GPUProgram::execute), and the Python side
/// copies an input at another offset (`tc._tc.gpu_buffer_alignment`).
constexpr int64_t kGPUBufferAlignment = 16;

// Attributes the passes leave for the runtimes, by name.
/// On a `kernel.schedule`: the bytes of its arena (tc-plan-memory), of the
/// intermediates placed in it, and what the arena grows by per unit of the
/// graph's symbolic size.
inline constexpr llvm::StringLiteral kArenaBytesAttrName = "tc.arena_bytes";
inline constexpr llvm::StringLiteral kIntermediateBytesAttrName =
    "tc.intermediate_bytes";
inline constexpr llvm::StringLiteral kArenaBytesPerSymbolAttrName =
    "tc.arena_bytes_per_symbol";
/// On a CPU kernel function (tc-lower-kernel-to-cpu): its parallel domain
/// and the work of one point, for the runtime's threads.
inline constexpr llvm::StringLiteral kDomainAttrName = "tc.domain";
inline constexpr llvm::StringLiteral kPointsAttrName = "tc.points";
} // namespace mlir::tc::kernel

#endif // TC_DIALECT_KERNEL_IR_KERNELDIALECT_H
