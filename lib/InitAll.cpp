//===- InitAll.cpp - register every tc dialect and pass ---------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/InitAll.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "tc/Conversion/Passes.h"
#include "tc/Dialect/FX/IR/FXDialect.h"
#include "tc/Dialect/Kernel/IR/KernelDialect.h"
#include "tc/Dialect/Kernel/Transforms/Passes.h"
#include "tc/Dialect/Prim/IR/PrimDialect.h"
#include "tc/Target/CPU/Pipeline.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

void mlir::tc::registerAllDialects(DialectRegistry &registry) {
  registry.insert<fx::FXDialect, prim::PrimDialect, kernel::KernelDialect>();
  registry.insert<arith::ArithDialect, func::FuncDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect, cf::ControlFlowDialect,
                  LLVM::LLVMDialect>();
}

void mlir::tc::registerAllPasses() {
  // Upstream: canonicalize, cse, inline, symbol-dce, ...
  registerTransformsPasses();

  // tc's own passes.
  tc::registerTCConversionPasses();
  tc::kernel::registerTCKernelPasses();
}

void mlir::tc::registerAllPipelines() { registerCPUPipelines(); }
