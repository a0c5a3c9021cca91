//===- Passes.h - prim dialect passes ---------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_TRANSFORMS_PASSES_H
#define TC_DIALECT_PRIM_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"

#include <optional>

namespace mlir::tc::prim {

/// The argument attribute marking what `tc-autodiff` differentiates for.
inline constexpr llvm::StringLiteral kRequiresGradAttrName =
    "tc.requires_grad";

/// The attribute `tc-autodiff` leaves on a joint function: [primal
/// arguments, cotangent arguments, forward results].
inline constexpr llvm::StringLiteral kJointAttrName = "tc.joint";

/// The zeros `tc-align-half-products` appends to a half-precision GEMM's
/// dimensions.
struct HalfProductPadding {
  int64_t m = 0, k = 0, n = 0;
};

/// What `tc-align-half-products` pads a GEMM of `m` x `k` by `k` x `n`
/// (`lhsTransposed` / `rhsTransposed`: the operand is read transposed) of
/// `elementBytes`-byte elements by, or nothing when it leaves the product
/// as it is (aligned, small, or the copies would cost more than the slow
/// kernels lose). `resultElements`, `lhsElements` and `rhsElements` count
/// the batched tensors' elements. `resultViewed`: the padded result is
/// handed back as a view, not sliced by a copy. The one place this choice
/// is made: the Python backend asks it (tc._tc.half_product_padding) for a
/// product it returns, whose padded result it hands back as a view.
std::optional<HalfProductPadding>
halfProductPadding(int64_t m, int64_t k, int64_t n, bool lhsTransposed,
                   bool rhsTransposed, int64_t elementBytes,
                   int64_t resultElements, int64_t lhsElements,
                   int64_t rhsElements, bool resultViewed = false);

#define GEN_PASS_DECL
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"

} // namespace mlir::tc::prim

#endif // TC_DIALECT_PRIM_TRANSFORMS_PASSES_H
