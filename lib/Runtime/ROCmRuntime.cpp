//===- ROCmRuntime.cpp - compile and run graphs on AMD GPUs -----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Runtime/ROCmRuntime.h"

#include "GPUProgram.h"
#include "tc/Pipelines/Pipelines.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <mutex>

#ifdef TC_HAVE_HIP
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#endif

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::gpu_runtime;

#ifdef TC_HAVE_HIP

//===----------------------------------------------------------------------===//
// HIP and rocBLAS, opened at run time
//===----------------------------------------------------------------------===//

namespace {

// rocBLAS's types and operation codes (rocblas-types.h); its ABI is stable.
using RocblasHandle = void *;
constexpr int kRocblasOpN = 111, kRocblasOpT = 112;

/// The HIP module API, typed by HIP's own declarations.
struct HIP {
  decltype(&::hipGetDevice) getDevice;
  decltype(&::hipModuleLoadData) moduleLoadData;
  decltype(&::hipModuleGetFunction) moduleGetFunction;
  decltype(&::hipModuleLaunchKernel) moduleLaunchKernel;
  decltype(&::hipGetErrorString) getErrorString;
  hipError_t (*malloc)(void **, size_t);
  decltype(&::hipMemcpyHtoD) memcpyHtoD;

  /// The process's HIP runtime, or null with `error` set.
  static const HIP *get(std::string &error) {
    return bindLibraryOnce<HIP>(
        {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"},
        "the HIP runtime (libamdhip64.so)",
        [](void *lib, HIP &hip, std::string &e) {
          return bindSymbol(lib, "hipGetDevice", hip.getDevice, e) &&
                 bindSymbol(lib, "hipModuleLoadData", hip.moduleLoadData, e) &&
                 bindSymbol(lib, "hipModuleGetFunction", hip.moduleGetFunction,
                            e) &&
                 bindSymbol(lib, "hipModuleLaunchKernel",
                            hip.moduleLaunchKernel, e) &&
                 bindSymbol(lib, "hipGetErrorString", hip.getErrorString, e) &&
                 bindSymbol(lib, "hipMalloc", hip.malloc, e) &&
                 bindSymbol(lib, "hipMemcpyHtoD", hip.memcpyHtoD, e);
        },
        error);
  }

  std::string describe(hipError_t result) const {
    const char *text = getErrorString(result);
    return text ? text : "HIP error " + std::to_string(result);
  }
};

struct Rocblas {
  int (*create)(RocblasHandle *);
  int (*setStream)(RocblasHandle, hipStream_t);
  int (*sgemm)(RocblasHandle, int, int, int, int, int, const float *,
               const float *, int, const float *, int, const float *, float *,
               int);
  int (*dgemm)(RocblasHandle, int, int, int, int, int, const double *,
               const double *, int, const double *, int, const double *,
               double *, int);
  int (*sgemmBatched)(RocblasHandle, int, int, int, int, int, const float *,
                      const float *, int, int64_t, const float *, int, int64_t,
                      const float *, float *, int, int64_t, int);
  int (*dgemmBatched)(RocblasHandle, int, int, int, int, int, const double *,
                      const double *, int, int64_t, const double *, int,
                      int64_t, const double *, double *, int, int64_t, int);

  static const Rocblas *get(std::string &error) {
    return bindLibraryOnce<Rocblas>(
        {"librocblas.so", "librocblas.so.4", "librocblas.so.0"},
        "rocBLAS (librocblas.so)",
        [](void *lib, Rocblas &blas, std::string &e) {
          return bindSymbol(lib, "rocblas_create_handle", blas.create, e) &&
                 bindSymbol(lib, "rocblas_set_stream", blas.setStream, e) &&
                 bindSymbol(lib, "rocblas_sgemm", blas.sgemm, e) &&
                 bindSymbol(lib, "rocblas_dgemm", blas.dgemm, e) &&
                 bindSymbol(lib, "rocblas_sgemm_strided_batched",
                            blas.sgemmBatched, e) &&
                 bindSymbol(lib, "rocblas_dgemm_strided_batched",
                            blas.dgemmBatched, e);
        },
        error);
  }

  /// This thread's handle for `device`.
  RocblasHandle handle(int device, std::string &error) const {
    thread_local llvm::DenseMap<int, RocblasHandle> handles;
    auto it = handles.find(device);
    if (it != handles.end())
      return it->second;
    RocblasHandle h = nullptr;
    if (int status = create(&h)) {
      error = "rocblas_create_handle failed with status " +
              std::to_string(status);
      return nullptr;
    }
    handles[device] = h;
    return h;
  }
};

} // namespace

struct ROCmExecutable::Impl {
  std::unique_ptr<GPUProgram> program;

  // Loaded on the first run, on that run's device.
  mutable std::mutex loadMutex;
  mutable int device = -1;
  mutable llvm::StringMap<hipFunction_t> functions;
  mutable char *ones = nullptr; // maxBiasRows ones (f64, then f32)

  bool load(const HIP &hip, std::string &error) const;
  bool run(ArrayRef<void *> args, void *stream, std::string &error) const;
};

bool ROCmExecutable::Impl::load(const HIP &hip, std::string &error) const {
  int current = -1;
  if (hipError_t r = hip.getDevice(&current)) {
    error = "hipGetDevice: " + hip.describe(r);
    return false;
  }
  if (device >= 0) {
    if (device == current)
      return true;
    error = "this graph was loaded on HIP device " + std::to_string(device) +
            ", not " + std::to_string(current);
    return false;
  }
  const GPUProgram &p = *program;
  std::vector<hipModule_t> modules;
  for (const std::string &object : p.binaries) {
    hipModule_t module = nullptr;
    if (hipError_t r = hip.moduleLoadData(&module, object.data())) {
      error = "loading tc's kernels (hsaco) failed: " + hip.describe(r);
      return false;
    }
    modules.push_back(module);
  }
  if (!p.findKernels<hipModule_t>(
          modules,
          [&](hipFunction_t &fn, hipModule_t module, const char *name) {
            return hip.moduleGetFunction(&fn, module, name);
          },
          [&](hipError_t r) { return hip.describe(r); }, functions, error))
    return false;
  if (int64_t rows = p.maxBiasRows) {
    std::vector<double> onesF64(rows, 1.0);
    std::vector<float> onesF32(rows, 1.0f);
    void *buffer = nullptr;
    if (hipError_t r =
            hip.malloc(&buffer, rows * (sizeof(double) + sizeof(float)))) {
      error = "hipMalloc: " + hip.describe(r);
      return false;
    }
    ones = static_cast<char *>(buffer);
    if (hip.memcpyHtoD(ones, onesF64.data(), rows * sizeof(double)) ||
        hip.memcpyHtoD(ones + rows * sizeof(double), onesF32.data(),
                       rows * sizeof(float))) {
      error = "hipMemcpyHtoD failed";
      return false;
    }
  }
  device = current;
  return true;
}

bool ROCmExecutable::Impl::run(ArrayRef<void *> args, void *stream,
                               std::string &error) const {
  const HIP *hip = HIP::get(error);
  if (!hip)
    return false;
  {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (!load(*hip, error))
      return false;
  }
  auto hipStream = static_cast<hipStream_t>(stream);
  auto launch = [&](const Launch &launch, int64_t grid, void **params) {
    hipError_t r = hip->moduleLaunchKernel(
        functions.lookup(launch.kernel), grid, 1, 1, launch.block, 1, 1,
        /*sharedMemBytes=*/0, hipStream, params, nullptr);
    if (r)
      error = "launching kernel " + launch.kernel + ": " + hip->describe(r);
    return r == hipSuccess;
  };
  auto gemm = [&](const Gemm &g, size_t, ArrayRef<void *> ptrs) {
    const Rocblas *blas = Rocblas::get(error);
    if (!blas)
      return false;
    RocblasHandle handle = blas->handle(device, error);
    if (!handle)
      return false;
    blas->setStream(handle, hipStream);
    int64_t rows = program->maxBiasRows;
    int status =
        g.element == GemmElement::F64
            ? runColumnMajorGemm<double>(
                  g, ptrs, handle, reinterpret_cast<const double *>(ones),
                  kRocblasOpN, kRocblasOpT, blas->dgemm, blas->dgemmBatched)
            : runColumnMajorGemm<float>(
                  g, ptrs, handle,
                  reinterpret_cast<const float *>(ones + rows * sizeof(double)),
                  kRocblasOpN, kRocblasOpT, blas->sgemm, blas->sgemmBatched);
    if (status)
      error = "rocBLAS GEMM (" + std::to_string(g.m) + "x" +
              std::to_string(g.n) + "x" + std::to_string(g.k) +
              ") failed with status " + std::to_string(status);
    return status == 0;
  };
  auto conv = [&](const runtime::ConvCall &, size_t, ArrayRef<void *>) {
    error = "ROCm has no library convolution in tc yet";
    return false;
  };
  auto attention = [&](const Attention &, size_t, ArrayRef<void *>) {
    error = "ROCm has no fused attention in tc yet";
    return false;
  };
  return program->execute(args, /*symbol=*/0, launch, gemm, conv, attention,
                          error);
}

bool ROCmExecutable::runtimeAvailable() { return true; }

#else // !TC_HAVE_HIP

struct ROCmExecutable::Impl {
  std::unique_ptr<GPUProgram> program;

  bool run(ArrayRef<void *>, void *, std::string &error) const {
    error = "this build of tc was compiled without HIP's headers "
            "(libamdhip64-dev): it compiles ROCm graphs but cannot run them";
    return false;
  }
};

bool ROCmExecutable::runtimeAvailable() { return false; }

#endif // TC_HAVE_HIP

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

ROCmExecutable::ROCmExecutable(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
ROCmExecutable::~ROCmExecutable() = default;

std::unique_ptr<ROCmExecutable>
ROCmExecutable::compile(StringRef source, StringRef pipelineOptions,
                        bool keepStageIR, std::string &diagnostics,
                        StringRef cacheDir) {
  auto options = GPUPipelineOptions::createFromString(pipelineOptions);
  if (!options) {
    diagnostics += "error: invalid ROCm pipeline options '" +
                   pipelineOptions.str() + "'\n";
    return nullptr;
  }
  // Checked kernels record a violation for the runtime to read and skip
  // the access; only the CUDA runtime reads the record, so here they
  // would go on silently.
  if (options->checks) {
    diagnostics += "error: kernel checks (checks=true) are read by the "
                   "CUDA runtime only\n";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->program =
      GPUProgram::compile(source, Target::ROCm, *options, keepStageIR,
                          diagnostics, cacheDir, pipelineOptions);
  if (!impl->program)
    return nullptr;
  if (impl->program->symbolic()) {
    diagnostics += "error: the symbolic size is built for the CPU and CUDA; "
                   "ROCm graphs compile per shape\n";
    return nullptr;
  }
  if (impl->program->hasConvolutions()) {
    diagnostics += "error: ROCm has no library convolution in tc yet (use "
                   "the default expand-convolutions=true)\n";
    return nullptr;
  }
  return std::unique_ptr<ROCmExecutable>(new ROCmExecutable(std::move(impl)));
}

bool ROCmExecutable::fromCache() const {
  return impl->program->fromCache;
}

bool ROCmExecutable::run(ArrayRef<void *> buffers, void *stream,
                         std::string &error) const {
  return impl->run(buffers, stream, error);
}
int64_t ROCmExecutable::arenaBytes() const {
  return impl->program->arenaBytes;
}
int64_t ROCmExecutable::intermediateBytes() const {
  return impl->program->intermediateBytes;
}
int64_t ROCmExecutable::numKernels() const {
  return impl->program->numKernels;
}
int64_t ROCmExecutable::numBuffers() const {
  return impl->program->numArguments + 1;
}
ArrayRef<std::string> ROCmExecutable::binaries() const {
  return impl->program->binaries;
}
const std::map<std::string, std::string> &ROCmExecutable::stageIR() const {
  return impl->program->stageIR;
}
