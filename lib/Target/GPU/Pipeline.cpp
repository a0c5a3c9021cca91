//===- Pipeline.cpp - the CUDA and ROCm compilation pipelines ---*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Target/GPU/Pipeline.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "tc/Conversion/Passes.h"
#include "tc/Target/GPU/Passes.h"

using namespace mlir;

// Configured by CMake: where this machine's CUDA libdevice and ROCm device
// libraries are (empty when absent).
#ifndef TC_DEFAULT_LIBDEVICE
#define TC_DEFAULT_LIBDEVICE ""
#endif
#ifndef TC_DEFAULT_CUDA_TOOLKIT
#define TC_DEFAULT_CUDA_TOOLKIT ""
#endif
#ifndef TC_DEFAULT_ROCM_TOOLKIT
#define TC_DEFAULT_ROCM_TOOLKIT ""
#endif

void mlir::tc::buildGPUKernelsPipeline(OpPassManager &pm,
                                       const GPUPipelineOptions &options,
                                       OptionalPasses &optional) {
  tc::ConvertKernelToGPUPassOptions lowering;
  lowering.maxBlockSize = options.maxBlockSize;
  lowering.maxReductionBlockSize = options.maxReductionBlockSize;
  lowering.minRowBlocks = options.minRowBlocks;
  lowering.vectorWidth = options.vectorWidth;
  lowering.replicateTrig = options.replicateTrig;
  lowering.threadUnroll = options.threadUnroll;
  lowering.streamRows = options.streamRows;
  lowering.streamUnroll = options.streamUnroll;
  lowering.checks = options.checks;
  lowering.oobForTesting =
      options.miscompilePassForTesting == "tc-lower-kernel-to-gpu";
  pm.addPass(tc::createConvertKernelToGPUPass(lowering));
  optional.addNested<gpu::GPUModuleOp>(pm, createCanonicalizerPass());
  optional.addNested<gpu::GPUModuleOp>(pm, createCSEPass());
  optional.addNested<gpu::GPUModuleOp>(pm,
                                       createLoopInvariantCodeMotionPass());
  // Index division in 32 bits where the known block and grid sizes and
  // the static shapes prove it fits.
  optional.addNested<gpu::GPUModuleOp>(pm,
                                       tc::createNarrowIndexDivisionPass());
  optional.addNested<gpu::GPUModuleOp>(pm, createCanonicalizerPass());
}

/// The lowering inside the gpu.module and its serialization, shared by both
/// targets; `toLLVM` adds the target's gpu-to-llvm conversion.
static void buildBinaryPipeline(OpPassManager &pm,
                                const tc::GPUPipelineOptions &options,
                                StringRef defaultToolkit,
                                function_ref<void(OpPassManager &)> toLLVM) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  toLLVM(kernels);
  // No canonicalization of the LLVM dialect here: LLVM's own -O3 pipeline
  // (in tc-gpu-module-to-binary) does that work, faster.
  pm.addPass(createReconcileUnrealizedCastsPass());
  tc::GPUModuleToBinaryPassOptions binary;
  binary.format = options.format;
  binary.toolkit =
      options.toolkit.empty() ? defaultToolkit.str() : options.toolkit.getValue();
  binary.shards = options.shards;
  pm.addPass(tc::createGPUModuleToBinaryPass(binary));
}

void mlir::tc::buildCUDABinaryPipeline(OpPassManager &pm,
                                       const GPUPipelineOptions &options) {
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip.empty() ? "sm_90" : options.chip.getValue();
  target.optLevel = 3;
  // libdevice provides expf, tanhf, erff, ... as PyTorch's CUDA kernels
  // compute them.
  target.linkLibs.assign(options.link.begin(), options.link.end());
  if (target.linkLibs.empty() && StringRef(TC_DEFAULT_LIBDEVICE).size())
    target.linkLibs.push_back(TC_DEFAULT_LIBDEVICE);
  pm.addPass(createGpuNVVMAttachTarget(target));
  buildBinaryPipeline(pm, options, TC_DEFAULT_CUDA_TOOLKIT,
                      [&](OpPassManager &kernels) {
                        ConvertGpuOpsToNVVMOpsOptions nvvm;
                        nvvm.useBarePtrCallConv = true;
                        kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
                        if (!options.preciseDiv)
                          kernels.addPass(createNVVMDivFullPass());
                      });
}

void mlir::tc::buildROCmBinaryPipeline(OpPassManager &pm,
                                       const GPUPipelineOptions &options) {
  GpuROCDLAttachTargetOptions target;
  target.chip = options.chip.empty() ? "gfx942" : options.chip.getValue();
  target.optLevel = 3;
  target.linkLibs.assign(options.link.begin(), options.link.end());
  std::string chip = target.chip;
  pm.addPass(createGpuROCDLAttachTarget(target));
  buildBinaryPipeline(pm, options, TC_DEFAULT_ROCM_TOOLKIT,
                      [chip](OpPassManager &kernels) {
                        ConvertGpuOpsToROCDLOpsOptions rocdl;
                        rocdl.chipset = chip;
                        rocdl.useBarePtrCallConv = true;
                        rocdl.runtime = gpu::amd::Runtime::HIP;
                        kernels.addPass(createConvertGpuOpsToROCDLOps(rocdl));
                      });
}
