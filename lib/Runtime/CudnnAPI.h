//===- CudnnAPI.h - cuDNN's entry points, bound at run time -----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The part of cuDNN tc calls (its convolutions, Cudnn.cpp, and its fused
// attention, CudnnAttention.cpp): the entry points, bound once per process
// from the library PyTorch loaded (tc links no NVIDIA library), and the
// numeric values of the enums of cudnn_graph.h and the legacy convolution
// API that tc passes. Those values are part of cuDNN's stable ABI; only the
// subset tc uses is named here, and no cuDNN header is included. Internal to
// lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_CUDNNAPI_H
#define TC_LIB_RUNTIME_CUDNNAPI_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlir::tc::gpu_runtime::cudnn {

using Handle = void *;
using Desc = void *;

// cudnnDataType_t.
constexpr int kFloat = 0, kDouble = 1, kHalf = 2, kInt32 = 4, kBFloat16 = 9,
              kBoolean = 11;
// cudnnTensorFormat_t, cudnnConvolutionMode_t, cudnnMathType_t.
constexpr int kNCHW = 0, kNHWC = 1, kCrossCorrelation = 1;
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3;

// Graph API: descriptor kinds (cudnnBackendDescriptorType_t).
enum DescriptorKind : int {
  kPointwiseDesc = 0,
  kConvolutionDesc = 1,
  kEngineDesc = 2,
  kEngineConfigDesc = 3,
  kEngineHeuristicsDesc = 4,
  kExecutionPlanDesc = 5,
  kConvForwardOpDesc = 10,
  kConvBackwardFilterOpDesc = 11,
  kConvBackwardDataOpDesc = 12,
  kPointwiseOpDesc = 13,
  kOperationGraphDesc = 15,
  kVariantPackDesc = 16,
  kTensorDesc = 17,
  kMatmulDesc = 18,
  kMatmulOpDesc = 19,
  kReductionDesc = 21,
  kReductionOpDesc = 22,
};

// Attribute value types (cudnnBackendAttributeType_t).
enum AttributeType : int {
  kTypeHandle = 0,
  kTypeDataType = 1,
  kTypeBoolean = 2, // a C++ bool
  kTypeInt64 = 3,
  kTypeFloat = 4,
  kTypeDouble = 5,
  kTypeVoidPtr = 6,
  kTypeConvolutionMode = 7,
  kTypeHeuristicsMode = 8,
  kTypeNumericalNote = 11,
  kTypePointwiseMode = 14,
  kTypeDescriptor = 15,
  kTypeReductionOperator = 18,
  kTypeBehaviorNote = 19,
};

// Attribute names (cudnnBackendAttributeName_t).
enum AttributeName : int {
  kPointwiseMode = 0,
  kPointwiseMathPrecision = 1,
  kPointwiseAxis = 9,
  kConvComputeType = 100,
  kConvMode = 101,
  kConvDilations = 102,
  kConvFilterStrides = 103,
  kConvPostPaddings = 104,
  kConvPrePaddings = 105,
  kConvSpatialDims = 106,
  kHeuristicsMode = 200,
  kHeuristicsGraph = 201,
  kHeuristicsResults = 202,
  kEngineConfigEngine = 300,
  kPlanHandle = 400,
  kPlanEngineConfig = 401,
  kPlanWorkspaceSize = 402,
  // Forward: alpha, beta, convolution, W, X, Y. Backward data: alpha, beta,
  // convolution, W, dX, dY. Backward filter: alpha, beta, convolution, dW,
  // X, dY.
  kConvForwardFirst = 700,
  kConvBackwardDataFirst = 706,
  kConvBackwardFilterFirst = 712,
  kPointwiseOpDescriptor = 750,
  kPointwiseOpX = 751,
  kPointwiseOpB = 752,
  kPointwiseOpY = 753,
  kPointwiseOpAlpha1 = 754,
  kPointwiseOpAlpha2 = 755,
  kPointwiseOpT = 758,
  kGraphHandle = 800,
  kGraphOps = 801,
  kTensorAlignment = 900,
  kTensorDataType = 901,
  kTensorDims = 902,
  kTensorStrides = 903,
  kTensorUid = 906,
  kTensorIsVirtual = 907,
  kTensorIsByValue = 908,
  kVariantPackUids = 1000,
  kVariantPackPointers = 1001,
  kVariantPackWorkspace = 1003,
  kEngineNumericalNote = 1303,
  kEngineBehaviorNote = 1305,
  kMatmulComputeType = 1500,
  kMatmulOpA = 1520,
  kMatmulOpB = 1521,
  kMatmulOpC = 1522,
  kMatmulOpDescriptor = 1523,
  kReductionOperator = 1600,
  kReductionComputeType = 1601,
  kReductionOpX = 1610,
  kReductionOpY = 1611,
  kReductionOpDescriptor = 1612,
};

// cudnnBackendHeurMode_t.
constexpr int kHeuristicsInstant = 0, kHeuristicsA = 3;
// cudnnPointwiseMode_t.
enum PointwiseMode : int {
  kPointwiseAdd = 0,
  kPointwiseMul = 1,
  kPointwiseDiv = 6,
  kPointwiseSub = 9,
  kPointwiseExp = 13,
  kPointwiseLog = 15,
  kPointwiseCmpGE = 303,
  kPointwiseGenIndex = 501,
  kPointwiseBinarySelect = 601,
};
// cudnnReduceTensorOp_t.
constexpr int kReduceAdd = 0, kReduceMax = 3;
// cudnnBackendNumericalNote_t, cudnnBackendBehaviorNote_t.
constexpr int kNoteTensorCore = 0, kNoteDownConvertInputs = 1;
constexpr int kNoteRuntimeCompilation = 0;

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (one layout).
struct AlgoPerf {
  int algo;
  int status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};

/// The entry points of the process's cuDNN.
struct Cudnn {
  int (*create)(Handle *);
  int (*setStream)(Handle, void *);
  const char *(*errorString)(int);
  // Legacy descriptors.
  int (*createTensor)(Desc *);
  int (*setTensor)(Desc, int, int, const int *, const int *);
  int (*destroyTensor)(Desc);
  int (*createFilter)(Desc *);
  int (*setFilter)(Desc, int, int, int, const int *);
  int (*destroyFilter)(Desc);
  int (*createConv)(Desc *);
  int (*setConv)(Desc, int, const int *, const int *, const int *, int, int);
  int (*destroyConv)(Desc);
  int (*setGroups)(Desc, int);
  int (*setMath)(Desc, int);
  // Legacy heuristics, workspace size and the call, per kind. Their
  // descriptor arguments come in each function's own order.
  int (*fwdAlgos)(Handle, Desc, Desc, Desc, Desc, int, int *, AlgoPerf *);
  int (*fwdWorkspace)(Handle, Desc, Desc, Desc, Desc, int, size_t *);
  int (*fwd)(Handle, const void *, Desc, const void *, Desc, const void *,
             Desc, int, void *, size_t, const void *, Desc, void *);
  int (*dataAlgos)(Handle, Desc, Desc, Desc, Desc, int, int *, AlgoPerf *);
  int (*dataWorkspace)(Handle, Desc, Desc, Desc, Desc, int, size_t *);
  int (*data)(Handle, const void *, Desc, const void *, Desc, const void *,
              Desc, int, void *, size_t, const void *, Desc, void *);
  int (*filterAlgos)(Handle, Desc, Desc, Desc, Desc, int, int *, AlgoPerf *);
  int (*filterWorkspace)(Handle, Desc, Desc, Desc, Desc, int, size_t *);
  int (*filter)(Handle, const void *, Desc, const void *, Desc, const void *,
                Desc, int, void *, size_t, const void *, Desc, void *);
  // The graph API; null where the library predates it.
  int (*createDescriptor)(int, Desc *) = nullptr;
  int (*destroyDescriptor)(Desc) = nullptr;
  int (*setAttribute)(Desc, int, int, int64_t, const void *) = nullptr;
  int (*getAttribute)(Desc, int, int, int64_t, int64_t *, void *) = nullptr;
  int (*finalize)(Desc) = nullptr;
  int (*execute)(Handle, Desc, Desc) = nullptr;
  // Diagnostics; null where missing (cudnnGetLastErrorString is cuDNN 9's).
  size_t (*getVersion)() = nullptr;
  void (*lastErrorString)(char *, size_t) = nullptr;

  /// The process's cuDNN (PyTorch's, when it has loaded one), bound once,
  /// or null with `error` set.
  static const Cudnn *get(std::string &error);

  bool hasGraphAPI() const { return execute != nullptr; }

  /// cudnnGetVersion (91900 for 9.19.0), or 0 where the library cannot say.
  size_t version() const { return getVersion ? getVersion() : 0; }

  std::string describe(int status) const {
    const char *text = errorString ? errorString(status) : nullptr;
    return text ? text : "cuDNN status " + std::to_string(status);
  }

  /// `describe(status)`, with the message cuDNN kept of this thread's last
  /// failure where it keeps one.
  std::string describeLast(int status) const {
    std::string text = describe(status);
    if (lastErrorString) {
      char message[512] = {0};
      lastErrorString(message, sizeof(message));
      if (message[0])
        text += std::string(" (") + message + ")";
    }
    return text;
  }

  /// This thread's handle (cuDNN handles are per thread, and bind the
  /// device current when they are made).
  Handle handle(std::string &error) const;
};

} // namespace mlir::tc::gpu_runtime::cudnn

#endif // TC_LIB_RUNTIME_CUDNNAPI_H
