//===- Passes.h - tc conversion passes --------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#ifndef TC_CONVERSION_PASSES_H
#define TC_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "tc/Dialect/Kernel/IR/KernelDialect.h"
#include "tc/Dialect/Prim/IR/PrimDialect.h"

namespace mlir::tc {

/// The argument attribute marking a graph's random seed (a `tensor<i64>`),
/// which `tc-decompose` feeds to the graph's random ops.
inline constexpr llvm::StringLiteral kRngSeedAttrName = "tc.rng_seed";

/// The argument attribute `tc.written = k`: the graph stores its result #k
/// into the argument's buffer (a buffer the graph updates, such as a KV
/// cache; PyTorch's `copy_` of an input) instead of returning it. The
/// result's kernel writes there directly when nothing else reads the
/// argument (a scatter then stores only its updates); else a copy after
/// the last read.
inline constexpr llvm::StringLiteral kWrittenAttrName = "tc.written";

#define GEN_PASS_DECL
#include "tc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tc/Conversion/Passes.h.inc"

} // namespace mlir::tc

#endif // TC_CONVERSION_PASSES_H
