//===- Passes.td - kernel dialect passes -------------------*- tablegen -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_KERNEL_TRANSFORMS_PASSES_TD
#define TC_DIALECT_KERNEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PlanMemoryPass : Pass<"tc-plan-memory", "::mlir::tc::kernel::ScheduleOp"> {
  let summary = "Place a schedule's intermediate buffers in one arena";
  let description = [{
    Replaces the `memref.alloc`s of a `kernel.schedule` by `kernel.buffer`s
    at byte offsets of a single `kernel.arena`. Two buffers share bytes only
    when their live ranges (from the allocation to the last op of the
    schedule that uses them) do not overlap. Buffers are placed largest
    first, each at the lowest aligned offset that does not collide with a
    placed buffer it is live together with.

    The schedule records `tc.arena_bytes` (the arena's size, the peak) and
    `tc.intermediate_bytes` (what separate allocations would take).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every buffer in the arena">
  ];
}

#endif // TC_DIALECT_KERNEL_TRANSFORMS_PASSES_TD
