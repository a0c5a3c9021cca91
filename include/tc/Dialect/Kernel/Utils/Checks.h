//===- Checks.h - kernels that check their accesses -------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// What the CPU's tc-add-kernel-checks and the GPU lowering's `checks` both
// emit: bounds and NaN checks before a buffer access, a violation recorded
// in a check record (tc/Runtime/CheckRecord.h), and the planted
// out-of-bounds load their tests use.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_UTILS_CHECKS_H
#define TC_DIALECT_KERNEL_UTILS_CHECKS_H

#include "mlir/IR/Builders.h"
#include "tc/Runtime/CheckRecord.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::tc::kernel {

/// Emits at `b`: `record[0] |= 1`, and when it was 0 (the run's first
/// violation) the rest of the record (`kernelId`, `kind`, `argument`,
/// `element`). `record` is a memref<kRecordWords x i64>.
void recordViolation(OpBuilder &b, Location loc, Value record,
                     uint64_t kernelId, ::tc::checks::Kind kind,
                     int64_t argument, Value element);

/// Called where a check fails: emits `scf.if (cond) { ... }` that reports
/// the violation (the element as i64).
using ReportViolation = llvm::function_ref<void(
    OpBuilder &b, Value cond, ::tc::checks::Kind kind, Value element)>;

/// The buffer `access` (a memref.load, memref.store or memref.atomic_rmw)
/// reads or writes; null for another op.
Value accessedBuffer(Operation *access);

/// Checks `access`, a memref.load, memref.store or memref.atomic_rmw of a
/// buffer: a float store for a NaN, and where the buffer's shape is static
/// with the identity layout, the element's row-major position for bounds
/// (an out-of-bounds load or atomic then works on element 0 instead, an
/// out-of-bounds store is skipped).
void checkAccess(Operation *access, ReportViolation report);

/// Tests only: the first load in `body` of a statically shaped argument of
/// `entry` reads one row past the buffer's end.
void plantOutOfBoundsLoad(Region &body, Block &entry);

/// Tests only: every float a memref.store in `body` writes gets 1 added
/// (a wrong rewrite planted for tc.debug.bisect's tests).
void plantWrongStores(Region &body);

} // namespace mlir::tc::kernel

#endif // TC_DIALECT_KERNEL_UTILS_CHECKS_H
