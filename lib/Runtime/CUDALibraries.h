//===- CUDALibraries.h - the CUDA driver, nvJitLink, cuBLAS(Lt) -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The NVIDIA libraries the CUDA runtime calls, opened at run time (tc links
// none of them): the entry points it binds and the few types and constants
// of their stable ABIs. Internal to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_CUDALIBRARIES_H
#define TC_LIB_RUNTIME_CUDALIBRARIES_H

#include "GPUProgram.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tc::cuda {

// The few driver and cuBLAS types tc uses; their ABI is stable.
using CUresult = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUevent = struct CUevent_st *;
using CUdeviceptr = unsigned long long;
using CUdevice = int;
constexpr int kAttributeComputeMajor = 75, kAttributeComputeMinor = 76;
using CublasHandle = void *;
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferSize = 6;
constexpr unsigned kStreamNonBlocking = 1;
constexpr int kCaptureModeThreadLocal = 1;
constexpr int kErrorNotReady = 600; // CUDA_ERROR_NOT_READY
constexpr int kCublasOpN = 0, kCublasOpT = 1, kCublasDefaultMath = 0;
// cublasLt: descriptor attributes, epilogue, compute and data types.
using LtHandle = void *;
using LtDesc = void *;
using LtLayout = void *;
using LtPreference = void *;
constexpr int kLtTransA = 3, kLtTransB = 4, kLtEpilogue = 7, kLtBiasPointer = 8;
constexpr int kLtPrefMaxWorkspace = 1;
constexpr uint32_t kLtEpilogueBias = 4;
constexpr int kComputeF32 = 68, kComputeF64 = 70, kDataF32 = 0, kDataF64 = 1,
              kDataF16 = 2, kDataBF16 = 14, kGemmDefaultAlgo = -1;
constexpr size_t kLtWorkspaceBytes = 32 << 20;

/// cudaDataType of a GEMM's elements.
int dataTypeOf(gpu_runtime::GemmElement element);

struct LtHeuristic {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

struct Driver {
  CUresult (*ctxGetCurrent)(CUcontext *);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                               void **);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*ctxGetDevice)(CUdevice *);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  // Kernel checks' records (TC_CUDA_CHECKS).
  CUresult (*moduleGetGlobal)(CUdeviceptr *, size_t *, CUmodule,
                              const char *);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*streamSynchronize)(CUstream);
  // CUDA graphs (null where the driver lacks them: no replay).
  CUresult (*streamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*streamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*streamEndCapture)(CUstream, CUgraph *) = nullptr;
  CUresult (*graphInstantiate)(CUgraphExec *, CUgraph,
                               unsigned long long) = nullptr;
  CUresult (*graphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*graphDestroy)(CUgraph) = nullptr;
  CUresult (*graphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*streamDestroy)(CUstream) = nullptr;
  CUresult (*streamIsCapturing)(CUstream, int *) = nullptr;
  // Events, for profiled runs (TC_LOGS=kernels; null where missing).
  CUresult (*eventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*eventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*eventSynchronize)(CUevent) = nullptr;
  CUresult (*eventElapsedTime)(float *, CUevent, CUevent) = nullptr;
  CUresult (*eventDestroy)(CUevent) = nullptr;
  // Scratch memory given back (cuDNN's plan timing; null where missing).
  CUresult (*memFree)(CUdeviceptr) = nullptr;
  // Flags read back while a run goes on (CUDAExecutable::readEarly; null
  // where missing).
  CUresult (*memHostAlloc)(void **, size_t, unsigned) = nullptr;
  CUresult (*memFreeHost)(void *) = nullptr;
  CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t,
                              CUstream) = nullptr;
  CUresult (*streamQuery)(CUstream) = nullptr;

  bool hasGraphs() const {
    return streamCreate && streamBeginCapture && streamEndCapture &&
           graphInstantiate && graphLaunch && graphDestroy &&
           graphExecDestroy && streamDestroy && streamIsCapturing;
  }

  bool hasEarlyReads() const {
    return memHostAlloc && memFreeHost && memcpyDtoHAsync && streamQuery;
  }

  bool hasEvents() const {
    return eventCreate && eventRecord && eventSynchronize &&
           eventElapsedTime && eventDestroy;
  }

  /// The process's driver, or null with `error` set.
  static const Driver *get(std::string &error);

  /// The current context's device as 10 * major + minor (90 for sm_90),
  /// or 0 when the driver cannot say.
  int computeCapability() const;

  std::string describe(CUresult result) const;
};

/// nvJitLink (CUDA 12 and later; PyTorch's CUDA builds load it), which
/// compiles PTX to a cubin in the calling thread, with no lock shared
/// between calls: several objects compile at once.
struct JitLink {
  using Handle = struct nvJitLink *;
  int (*create)(Handle *, uint32_t, const char **);
  int (*destroy)(Handle *);
  int (*addData)(Handle, int, const void *, size_t, const char *);
  int (*complete)(Handle);
  int (*cubinSize)(Handle, size_t *);
  int (*cubin)(Handle, void *);
  static constexpr int kInputPTX = 2;

  /// The process's nvJitLink, or null.
  static const JitLink *get();

  /// `ptx` compiled for sm_<arch>; empty when nvJitLink fails (the
  /// driver's JIT then compiles it, and reports what is wrong).
  std::string compile(const std::string &ptx, int arch) const;

  /// Each of `ptx` compiled, in parallel.
  std::vector<std::string> compileAll(llvm::ArrayRef<std::string> ptx,
                                      int arch) const;
};

struct Cublas {
  int (*create)(CublasHandle *);
  int (*setStream)(CublasHandle, CUstream);
  int (*setMathMode)(CublasHandle, int);
  int (*sgemm)(CublasHandle, int, int, int, int, int, const float *,
               const float *, int, const float *, int, const float *, float *,
               int);
  int (*dgemm)(CublasHandle, int, int, int, int, int, const double *,
               const double *, int, const double *, int, const double *,
               double *, int);
  int (*sgemmBatched)(CublasHandle, int, int, int, int, int, const float *,
                      const float *, int, long long, const float *, int,
                      long long, const float *, float *, int, long long, int);
  int (*dgemmBatched)(CublasHandle, int, int, int, int, int, const double *,
                      const double *, int, long long, const double *, int,
                      long long, const double *, double *, int, long long,
                      int);
  /// cublasGemmStridedBatchedEx: half-precision operands, f32 compute.
  int (*gemmEx)(CublasHandle, int, int, int, int, int, const void *,
                const void *, int, int, long long, const void *, int, int,
                long long, const void *, void *, int, int, long long, int, int,
                int);

  /// The process's cuBLAS, or null with `error` set.
  static const Cublas *get(std::string &error);

  /// This thread's handle for `context` (cuBLAS handles are per thread).
  CublasHandle handle(CUcontext context, std::string &error) const;
};

/// cublasLt, for GEMMs with a bias: the bias is added in the GEMM's own
/// epilogue, as PyTorch's addmm does.
struct CublasLt {
  int (*create)(LtHandle *);
  int (*descCreate)(LtDesc *, int, int);
  int (*descSet)(LtDesc, int, const void *, size_t);
  int (*layoutCreate)(LtLayout *, int, uint64_t, uint64_t, int64_t);
  int (*prefCreate)(LtPreference *);
  int (*prefSet)(LtPreference, int, const void *, size_t);
  int (*heuristic)(LtHandle, LtDesc, LtLayout, LtLayout, LtLayout, LtLayout,
                   LtPreference, int, LtHeuristic *, int *);
  int (*matmul)(LtHandle, LtDesc, const void *, const void *, LtLayout,
                const void *, LtLayout, const void *, const void *, LtLayout,
                void *, LtLayout, const void *, void *, size_t, CUstream);

  /// The process's cublasLt, or null when it is not there.
  static const CublasLt *get();
};

/// A bias GEMM's cublasLt descriptors and algorithm, made on first use.
struct LtPlan {
  LtDesc desc = nullptr;
  LtLayout a = nullptr, b = nullptr, d = nullptr;
  LtHeuristic heuristic;
};

} // namespace mlir::tc::cuda

#endif // TC_LIB_RUNTIME_CUDALIBRARIES_H
