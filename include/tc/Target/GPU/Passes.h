//===- Passes.h - passes of the GPU targets ---------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Declarations of the passes in Passes.td: what only the CUDA and ROCm
// pipelines run on gpu.module kernels and to serialize them.
//
//===----------------------------------------------------------------------===//

#ifndef TC_TARGET_GPU_PASSES_H
#define TC_TARGET_GPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tc {

#define GEN_PASS_DECL
#include "tc/Target/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tc/Target/GPU/Passes.h.inc"

} // namespace mlir::tc

#endif // TC_TARGET_GPU_PASSES_H
