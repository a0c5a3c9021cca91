//===- Passes.h - prim dialect passes ---------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_PRIM_TRANSFORMS_PASSES_H
#define TC_DIALECT_PRIM_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"

namespace mlir::tc::prim {

/// The argument attribute marking what `tc-autodiff` differentiates for.
inline constexpr llvm::StringLiteral kRequiresGradAttrName =
    "tc.requires_grad";

/// The attribute `tc-autodiff` leaves on a joint function: [primal
/// arguments, cotangent arguments, forward results].
inline constexpr llvm::StringLiteral kJointAttrName = "tc.joint";

#define GEN_PASS_DECL
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tc/Dialect/Prim/Transforms/Passes.h.inc"

} // namespace mlir::tc::prim

#endif // TC_DIALECT_PRIM_TRANSFORMS_PASSES_H
