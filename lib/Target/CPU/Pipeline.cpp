//===- Pipeline.cpp - the CPU lowering --------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Target/CPU/Pipeline.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"
#include "tc/Conversion/Passes.h"

using namespace mlir;

void mlir::tc::buildCPULoopsPipeline(OpPassManager &pm,
                                     OptionalPasses &optional,
                                     bool miscompileForTesting,
                                     bool untranslatableForTesting) {
  // Kernels to chunked loop nests; math to vectorizable polynomials.
  tc::ConvertKernelToCPUPassOptions lowering;
  lowering.miscompileForTesting = miscompileForTesting;
  lowering.untranslatableForTesting = untranslatableForTesting;
  pm.addPass(tc::createConvertKernelToCPUPass(lowering));
  optional.addNested<func::FuncOp>(pm, createCanonicalizerPass());
  optional.addNested<func::FuncOp>(pm, createCSEPass());
  optional.addNested<func::FuncOp>(pm, createLoopInvariantCodeMotionPass());
}

void mlir::tc::buildCPULLVMPipeline(OpPassManager &pm) {
  // Integer powers (math.ipowi) as outlined square-and-multiply loops:
  // LLVM has no instruction for them.
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // Static buffers are passed as bare pointers: the runtime hands over
  // the torch tensors' data pointers as they are.
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
