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

/// GPU kernels compiled with checks (TC_CUDA_CHECKS=1) record the first
/// violation in this global of their module, an array of
/// kCheckRecordWords i64: a flag (nonzero once set), the kernel's
/// checkKernelId, the kind (CheckKind), the argument's number, and the
/// offending element or address. The runtime reads it after each run.
inline constexpr llvm::StringLiteral kGPUCheckRecordName = "tc_check_record";
constexpr int64_t kCheckRecordWords = 5;
enum class CheckKind : int64_t { Bounds = 1, Alignment = 2 };

/// A kernel's id in a check record: the FNV-1a hash of its name.
inline uint64_t checkKernelId(llvm::StringRef name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : name)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}

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
