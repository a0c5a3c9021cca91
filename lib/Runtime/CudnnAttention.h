//===- CudnnAttention.h - fused attention on cuDNN's graph API --*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Scaled dot-product attention (the inference forward: no dropout, no
// softmax statistics), planned for cuDNN when the graph compiles: an
// execution plan of cuDNN's graph (backend) API made from the operation
// graph cuDNN's fused flash-attention engines recognise (the one
// cudnn-frontend's composite SDPA node builds before cuDNN 9.21: two
// matmuls around a scale, an optional bias, an optional causal mask and a
// softmax of reductions and pointwise operations). Running it costs a
// variant pack and one cudnnBackendExecute. Internal to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TC_LIB_RUNTIME_CUDNNATTENTION_H
#define TC_LIB_RUNTIME_CUDNNATTENTION_H

#include "Convolution.h"

#include "llvm/ADT/SmallVector.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mlir::tc::runtime {

/// One fused attention forward, out = softmax(scale * q @ k^T (+ bias)
/// (causal: keys after the query masked)) @ v, as the runtime calls it.
struct AttentionCall {
  ConvElement element; // only F16 or BF16 are valid
  /// heads % kvHeads == 0 (grouped-query attention when kvHeads < heads).
  int64_t batch, heads, kvHeads;
  int64_t queries, keys, headDim, valueDim;
  /// Strides in elements of q [batch, heads, queries, headDim], k [batch,
  /// kvHeads, keys, headDim], v [batch, kvHeads, keys, valueDim], out
  /// [batch, heads, queries, valueDim].
  int64_t qStrides[4], kStrides[4], vStrides[4], outStrides[4];
  /// Where q, k, v and out start in their buffers, in elements (a view of
  /// a packed projection).
  int64_t qOffset = 0, kOffset = 0, vOffset = 0, outOffset = 0;
  /// With a bias: its dims [b, h, q, keys] where each of the first three is
  /// either 1 (broadcast) or the full size, and its strides in elements
  /// (same element type as q).
  bool hasBias = false;
  int64_t biasDims[4] = {0, 0, 0, 0}, biasStrides[4] = {0, 0, 0, 0};
  /// PyTorch's is_causal: query i sees keys j <= i (top-left aligned).
  bool causal = false;
  float scale;
};

} // namespace mlir::tc::runtime

namespace mlir::tc::gpu_runtime {

namespace cudnn {
struct Cudnn;
} // namespace cudnn

/// Why `call` cannot run as one fused cuDNN attention on any device (""
/// when it may): the element type (f16 or bf16), the sizes (positive;
/// heads a multiple of kvHeads), the head dims (headDim and valueDim
/// multiples of 8 and at most 256: cudnn-frontend's checks for the f16
/// forward, and its Hopper limit), the strides (innermost 1, the others
/// positive and multiples of 8 elements where their dimension is not 1:
/// the plan assumes every row 16-byte aligned), the bias dims (1 or the
/// full size, the keys in full), and one query with a causal mask over
/// grouped keys (a cuDNN known issue). Pure, no CUDA needed, so the
/// compiler can ask it before planning.
std::string attentionUnsupportedReason(const runtime::AttentionCall &call);

class CudnnAttention {
public:
  /// Plans `call` (an execution plan of cuDNN's graph API for the current
  /// CUDA context/device); null with `error` set when `call` is
  /// unsupported (attentionUnsupportedReason), cuDNN lacks the graph API,
  /// has no engine for it, or any descriptor fails (the error names the
  /// step and cuDNN's status string).
  static std::unique_ptr<CudnnAttention>
  plan(const runtime::AttentionCall &call, std::string &error);
  /// `plan`, made once per process per distinct call per `device` (an
  /// opaque key: the CUDA context the plan is made in), as
  /// CudnnConvolution::planShared. Failures are remembered too (an
  /// attention cuDNN refuses is not re-planned every graph): null with the
  /// same error.
  static std::shared_ptr<const CudnnAttention>
  planShared(const runtime::AttentionCall &call, const void *device,
             std::string &error);

  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// The workspace a run needs, in bytes.
  size_t workspaceBytes() const { return planWorkspace; }

  /// Runs on `stream` (a CUstream) on q, k, v (and bias where the call has
  /// one; null without), writing out; each 16-byte aligned, `workspace` at
  /// least workspaceBytes(). Returns false with `error` set on failure.
  /// Legal inside CUDA stream capture: it sets the handle's stream, builds
  /// a variant pack (a host descriptor) and executes (no synchronisation,
  /// no device allocation).
  bool run(const void *q, const void *k, const void *v, const void *bias,
           void *out, void *workspace, void *stream, std::string &error) const;

private:
  explicit CudnnAttention(const runtime::AttentionCall &call);
  /// The operation graph's descriptor, made with `handle`, or null with
  /// `error` set.
  void *buildGraph(const cudnn::Cudnn &c, void *handle, std::string &error);
  /// Picks the first engine configuration, by cuDNN's heuristics, whose
  /// execution plan finalizes; false with `error` set where none does.
  bool pickEngine(const cudnn::Cudnn &c, void *handle, void *graph,
                  std::string &error);

  runtime::AttentionCall call;
  /// Every descriptor the execution plan was made from (see
  /// ~CudnnAttention), the plan and its workspace.
  llvm::SmallVector<void *> graphDescriptors;
  void *executionPlan = nullptr;
  size_t planWorkspace = 0;
  /// The by-value scalars' values, which runs pass by address: the scale
  /// and the masked scores' value.
  float scaleValue;
  float maskValue;
};

} // namespace mlir::tc::gpu_runtime

#endif // TC_LIB_RUNTIME_CUDNNATTENTION_H
