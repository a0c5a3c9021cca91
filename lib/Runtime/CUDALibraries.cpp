//===- CUDALibraries.cpp - the CUDA driver, nvJitLink, cuBLAS(Lt) ---------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "CUDALibraries.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Parallel.h"


using namespace mlir::tc::cuda;
using mlir::tc::gpu_runtime::bindLibraryOnce;
using mlir::tc::gpu_runtime::bindSymbol;
using mlir::tc::gpu_runtime::GemmElement;

int mlir::tc::cuda::dataTypeOf(GemmElement element) {
  switch (element) {
  case GemmElement::F64:
    return kDataF64;
  case GemmElement::F16:
    return kDataF16;
  case GemmElement::BF16:
    return kDataBF16;
  case GemmElement::F32:
    return kDataF32;
  }
  return kDataF32;
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

const Driver *Driver::get(std::string &error) {
  return bindLibraryOnce<Driver>(
      {"libcuda.so.1", "libcuda.so"}, "the CUDA driver (libcuda.so.1)",
      [](void *lib, Driver &driver, std::string &e) {
        bool ok =
            bindSymbol(lib, "cuCtxGetCurrent", driver.ctxGetCurrent, e) &&
            bindSymbol(lib, "cuCtxSetCurrent", driver.ctxSetCurrent, e) &&
            bindSymbol(lib, "cuModuleLoadDataEx", driver.moduleLoadDataEx,
                       e) &&
            bindSymbol(lib, "cuModuleGetFunction", driver.moduleGetFunction,
                       e) &&
            bindSymbol(lib, "cuLaunchKernel", driver.launchKernel, e) &&
            bindSymbol(lib, "cuGetErrorString", driver.getErrorString, e) &&
            bindSymbol(lib, "cuMemAlloc_v2", driver.memAlloc, e) &&
            bindSymbol(lib, "cuMemcpyHtoD_v2", driver.memcpyHtoD, e) &&
            bindSymbol(lib, "cuCtxGetDevice", driver.ctxGetDevice, e) &&
            bindSymbol(lib, "cuDeviceGetAttribute", driver.deviceGetAttribute,
                       e) &&
            bindSymbol(lib, "cuModuleGetGlobal_v2", driver.moduleGetGlobal,
                       e) &&
            bindSymbol(lib, "cuMemcpyDtoH_v2", driver.memcpyDtoH, e) &&
            bindSymbol(lib, "cuStreamSynchronize", driver.streamSynchronize,
                       e);
        // CUDA graphs are optional: without them, no replay.
        std::string optional;
        if (!bindSymbol(lib, "cuStreamCreate", driver.streamCreate,
                        optional) ||
            !bindSymbol(lib, "cuStreamBeginCapture_v2",
                        driver.streamBeginCapture, optional) ||
            !bindSymbol(lib, "cuStreamEndCapture", driver.streamEndCapture,
                        optional) ||
            !bindSymbol(lib, "cuGraphInstantiateWithFlags",
                        driver.graphInstantiate, optional) ||
            !bindSymbol(lib, "cuGraphLaunch", driver.graphLaunch, optional) ||
            !bindSymbol(lib, "cuGraphDestroy", driver.graphDestroy,
                        optional) ||
            !bindSymbol(lib, "cuGraphExecDestroy", driver.graphExecDestroy,
                        optional) ||
            !bindSymbol(lib, "cuStreamDestroy_v2", driver.streamDestroy,
                        optional) ||
            !bindSymbol(lib, "cuStreamIsCapturing", driver.streamIsCapturing,
                        optional))
          driver.streamCreate = nullptr;
        if (!bindSymbol(lib, "cuEventCreate", driver.eventCreate, optional) ||
            !bindSymbol(lib, "cuEventRecord", driver.eventRecord, optional) ||
            !bindSymbol(lib, "cuEventSynchronize", driver.eventSynchronize,
                        optional) ||
            !bindSymbol(lib, "cuEventElapsedTime", driver.eventElapsedTime,
                        optional) ||
            !bindSymbol(lib, "cuEventDestroy_v2", driver.eventDestroy,
                        optional))
          driver.eventCreate = nullptr;
        if (!bindSymbol(lib, "cuMemFree_v2", driver.memFree, optional))
          driver.memFree = nullptr;
        if (!bindSymbol(lib, "cuMemHostAlloc", driver.memHostAlloc,
                        optional) ||
            !bindSymbol(lib, "cuMemFreeHost", driver.memFreeHost,
                        optional) ||
            !bindSymbol(lib, "cuMemcpyDtoHAsync_v2", driver.memcpyDtoHAsync,
                        optional) ||
            !bindSymbol(lib, "cuStreamQuery", driver.streamQuery, optional))
          driver.memHostAlloc = nullptr;
        return ok;
      },
      error);
}

int Driver::computeCapability() const {
  CUdevice device = 0;
  int major = 0, minor = 0;
  if (ctxGetDevice(&device) ||
      deviceGetAttribute(&major, kAttributeComputeMajor, device) ||
      deviceGetAttribute(&minor, kAttributeComputeMinor, device))
    return 0;
  return major * 10 + minor;
}

std::string Driver::describe(CUresult result) const {
  const char *text = nullptr;
  getErrorString(result, &text);
  return text ? text : "CUDA error " + std::to_string(result);
}

//===----------------------------------------------------------------------===//
// nvJitLink
//===----------------------------------------------------------------------===//

const JitLink *JitLink::get() {
  std::string ignored;
  return bindLibraryOnce<JitLink>(
      {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"},
      "nvJitLink",
      [](void *lib, JitLink &j, std::string &e) {
        return bindSymbol(lib, "nvJitLinkCreate", j.create, e) &&
               bindSymbol(lib, "nvJitLinkDestroy", j.destroy, e) &&
               bindSymbol(lib, "nvJitLinkAddData", j.addData, e) &&
               bindSymbol(lib, "nvJitLinkComplete", j.complete, e) &&
               bindSymbol(lib, "nvJitLinkGetLinkedCubinSize", j.cubinSize,
                          e) &&
               bindSymbol(lib, "nvJitLinkGetLinkedCubin", j.cubin, e);
      },
      ignored);
}

std::string JitLink::compile(const std::string &ptx, int arch) const {
  std::string option = "-arch=sm_" + std::to_string(arch);
  const char *options[] = {option.c_str()};
  Handle handle = nullptr;
  if (create(&handle, 1, options))
    return {};
  std::string result;
  size_t size = 0;
  if (!addData(handle, kInputPTX, ptx.data(), ptx.size(), "tc") &&
      !complete(handle) && !cubinSize(handle, &size)) {
    result.resize(size);
    if (cubin(handle, result.data()))
      result.clear();
  }
  destroy(&handle);
  return result;
}

std::vector<std::string> JitLink::compileAll(llvm::ArrayRef<std::string> ptx,
                                             int arch) const {
  std::vector<std::string> cubins(ptx.size());
  llvm::parallelFor(0, ptx.size(), [&](size_t index) {
    cubins[index] = compile(ptx[index], arch);
  });
  return cubins;
}

//===----------------------------------------------------------------------===//
// cuBLAS and cublasLt
//===----------------------------------------------------------------------===//

const Cublas *Cublas::get(std::string &error) {
  return bindLibraryOnce<Cublas>(
      {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
       "libcublas.so"},
      "cuBLAS (libcublas.so)",
      [](void *lib, Cublas &c, std::string &e) {
        return bindSymbol(lib, "cublasCreate_v2", c.create, e) &&
               bindSymbol(lib, "cublasSetStream_v2", c.setStream, e) &&
               bindSymbol(lib, "cublasSetMathMode", c.setMathMode, e) &&
               bindSymbol(lib, "cublasSgemm_v2", c.sgemm, e) &&
               bindSymbol(lib, "cublasDgemm_v2", c.dgemm, e) &&
               bindSymbol(lib, "cublasSgemmStridedBatched", c.sgemmBatched,
                          e) &&
               bindSymbol(lib, "cublasDgemmStridedBatched", c.dgemmBatched,
                          e) &&
               bindSymbol(lib, "cublasGemmStridedBatchedEx", c.gemmEx, e);
      },
      error);
}

CublasHandle Cublas::handle(CUcontext context, std::string &error) const {
  thread_local llvm::DenseMap<CUcontext, CublasHandle> handles;
  auto it = handles.find(context);
  if (it != handles.end())
    return it->second;
  CublasHandle h = nullptr;
  if (int status = create(&h)) {
    error = "cublasCreate failed with status " + std::to_string(status);
    return nullptr;
  }
  // Full fp32 GEMMs, as PyTorch computes them unless TF32 is allowed.
  setMathMode(h, kCublasDefaultMath);
  handles[context] = h;
  return h;
}

const CublasLt *CublasLt::get() {
  std::string ignored;
  return bindLibraryOnce<CublasLt>(
      {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11",
       "libcublasLt.so"},
      "cublasLt",
      [](void *lib, CublasLt &lt, std::string &e) {
        return bindSymbol(lib, "cublasLtCreate", lt.create, e) &&
               bindSymbol(lib, "cublasLtMatmulDescCreate", lt.descCreate,
                          e) &&
               bindSymbol(lib, "cublasLtMatmulDescSetAttribute", lt.descSet,
                          e) &&
               bindSymbol(lib, "cublasLtMatrixLayoutCreate", lt.layoutCreate,
                          e) &&
               bindSymbol(lib, "cublasLtMatmulPreferenceCreate",
                          lt.prefCreate, e) &&
               bindSymbol(lib, "cublasLtMatmulPreferenceSetAttribute",
                          lt.prefSet, e) &&
               bindSymbol(lib, "cublasLtMatmulAlgoGetHeuristic",
                          lt.heuristic, e) &&
               bindSymbol(lib, "cublasLtMatmul", lt.matmul, e);
      },
      ignored);
}
