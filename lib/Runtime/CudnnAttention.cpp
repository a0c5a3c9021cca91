//===- CudnnAttention.cpp - fused attention on cuDNN's graph API ----------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "CudnnAttention.h"
#include "CudnnAPI.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <mutex>

using namespace mlir::tc;
using namespace mlir::tc::gpu_runtime;
using namespace mlir::tc::gpu_runtime::cudnn;

namespace {

using Dims = std::array<int64_t, 4>;

/// The byte alignment the plan assumes of every buffer (cudnn-frontend's
/// default for every tensor); runs check it.
constexpr int64_t kAlignment = 16;

/// The unique ids of the plan's tensors: its buffers and by-value scalars
/// (the variant pack's), then the virtual intermediates.
enum Uid : int64_t {
  kUidQ = 1,
  kUidKT = 2,
  kUidV = 3,
  kUidOut = 4,
  kUidBias = 5,
  kUidScale = 6,
  kUidMaskValue = 7,
  kUidScores = 100,
  kUidScaled,
  kUidBiased,
  kUidRow,
  kUidColumn,
  kUidKeep,
  kUidMasked,
  kUidMax,
  kUidShifted,
  kUidExp,
  kUidSum,
  kUidLog,
  kUidStats,
  kUidProbabilities,
};

/// The call's tensors' dims, by PyTorch's dimension order.
Dims qDims(const runtime::AttentionCall &c) {
  return {c.batch, c.heads, c.queries, c.headDim};
}
Dims kDims(const runtime::AttentionCall &c) {
  return {c.batch, c.kvHeads, c.keys, c.headDim};
}
Dims vDims(const runtime::AttentionCall &c) {
  return {c.batch, c.kvHeads, c.keys, c.valueDim};
}
Dims outDims(const runtime::AttentionCall &c) {
  return {c.batch, c.heads, c.queries, c.valueDim};
}
Dims biasDims(const runtime::AttentionCall &c) {
  return {c.biasDims[0], c.biasDims[1], c.biasDims[2], c.biasDims[3]};
}

/// `strides` of a tensor of `dims`, with those of its size-1 dimensions
/// (which address nothing, and may be anything, 0 included) replaced by
/// the extent of the dimension inside them: cuDNN wants every stride
/// positive.
Dims normalizedStrides(const Dims &dims, const int64_t (&strides)[4]) {
  Dims out;
  for (int i = 3; i >= 0; --i)
    out[i] = dims[i] != 1 ? strides[i] : i == 3 ? 1 : out[i + 1] * dims[i + 1];
  return out;
}

/// Why the strides of `name` (of `dims`) do not suit the plan, or "".
std::string stridesReason(const char *name, const Dims &dims,
                          const int64_t (&strides)[4]) {
  for (int i = 0; i < 4; ++i) {
    if (dims[i] == 1)
      continue;
    std::string at = std::string("cuDNN attention: ") + name +
                     "'s stride " + std::to_string(strides[i]) +
                     " of dimension " + std::to_string(i);
    if (i == 3 && strides[i] != 1)
      return at + ": its innermost stride must be 1";
    if (strides[i] <= 0)
      return at + ": strides must be positive (give a broadcast dimension "
                  "size 1)";
    if (i < 3 && strides[i] % (kAlignment / 2))
      return at + ": strides must be multiples of 8 elements (the plan "
                  "assumes every row 16-byte aligned)";
  }
  return "";
}

/// A tensor of the operation graph.
struct TensorSpec {
  const char *name;
  int64_t uid;
  int dataType;
  Dims dims, strides;
  bool isVirtual = false;
  bool byValue = false;
};

/// The descriptors of one operation graph, made in order: every descriptor
/// made is appended to `kept` (the plan refers to them), each operation to
/// `ops`. The first failure sets `error`, naming the step and cuDNN's
/// status; every later step then does nothing and returns null or false.
class GraphBuilder {
public:
  GraphBuilder(const Cudnn &c, llvm::SmallVectorImpl<Desc> &kept,
               std::string &error)
      : c(c), kept(kept), error(error) {}

  bool failed() const { return !error.empty(); }
  llvm::ArrayRef<Desc> operations() const { return ops; }

  /// A new descriptor of `kind` (named `kindName` in errors) for `what`.
  Desc make(int kind, const char *kindName, const std::string &what) {
    if (failed())
      return nullptr;
    Desc d = nullptr;
    if (!check(c.createDescriptor(kind, &d), what,
               std::string("cudnnBackendCreateDescriptor(") + kindName + ")"))
      return nullptr;
    kept.push_back(d);
    return d;
  }

  /// Sets the attribute `name` (named `attribute` in errors) of `d`.
  bool set(Desc d, int name, const char *attribute, int type, int64_t count,
           const void *values, const std::string &what) {
    return !failed() && d &&
           check(c.setAttribute(d, name, type, count, values), what,
                 std::string("setting ") + attribute);
  }
  bool setDescriptor(Desc d, int name, const char *attribute, Desc value,
                     const std::string &what) {
    return set(d, name, attribute, kTypeDescriptor, 1, &value, what);
  }

  bool finalize(Desc d, const std::string &what) {
    return !failed() && d && check(c.finalize(d), what, "cudnnBackendFinalize");
  }

  /// The finalized tensor `spec`.
  Desc tensor(const TensorSpec &spec) {
    std::string what = std::string("tensor '") + spec.name + "' (uid " +
                       std::to_string(spec.uid) + ")";
    Desc t = make(kTensorDesc, "CUDNN_BACKEND_TENSOR_DESCRIPTOR", what);
    bool ok =
        set(t, kTensorDataType, "CUDNN_ATTR_TENSOR_DATA_TYPE", kTypeDataType,
            1, &spec.dataType, what) &&
        set(t, kTensorDims, "CUDNN_ATTR_TENSOR_DIMENSIONS", kTypeInt64, 4,
            spec.dims.data(), what) &&
        set(t, kTensorStrides, "CUDNN_ATTR_TENSOR_STRIDES", kTypeInt64, 4,
            spec.strides.data(), what) &&
        set(t, kTensorUid, "CUDNN_ATTR_TENSOR_UNIQUE_ID", kTypeInt64, 1,
            &spec.uid, what) &&
        set(t, kTensorAlignment, "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT",
            kTypeInt64, 1, &kAlignment, what);
    const bool yes = true;
    if (ok && spec.isVirtual)
      ok = set(t, kTensorIsVirtual, "CUDNN_ATTR_TENSOR_IS_VIRTUAL",
               kTypeBoolean, 1, &yes, what);
    if (ok && spec.byValue)
      ok = set(t, kTensorIsByValue, "CUDNN_ATTR_TENSOR_IS_BY_VALUE",
               kTypeBoolean, 1, &yes, what);
    return ok && finalize(t, what) ? t : nullptr;
  }

  /// The pointwise operation `mode` computing in `precision`: y = mode(x),
  /// mode(x, b) or, for a select, t ? x : b (b and t null where the mode
  /// takes fewer inputs); `axis` for an index generator.
  Desc pointwise(const char *name, int mode, int precision, Desc x, Desc b,
                 Desc t, Desc y, int64_t axis = -1) {
    std::string what = std::string("pointwise '") + name + "'";
    Desc pw = make(kPointwiseDesc, "CUDNN_BACKEND_POINTWISE_DESCRIPTOR", what);
    bool ok = set(pw, kPointwiseMode, "CUDNN_ATTR_POINTWISE_MODE",
                  kTypePointwiseMode, 1, &mode, what) &&
              set(pw, kPointwiseMathPrecision,
                  "CUDNN_ATTR_POINTWISE_MATH_PREC", kTypeDataType, 1,
                  &precision, what);
    if (ok && mode == kPointwiseGenIndex)
      ok = set(pw, kPointwiseAxis, "CUDNN_ATTR_POINTWISE_AXIS", kTypeInt64, 1,
               &axis, what);
    if (!ok || !finalize(pw, what))
      return nullptr;

    what = std::string("operation '") + name + "' (pointwise)";
    Desc op = make(kPointwiseOpDesc,
                   "CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR", what);
    // Both scaling factors 1, as cudnn-frontend sets them for every mode.
    const float one = 1;
    ok = setDescriptor(op, kPointwiseOpDescriptor,
                       "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR", pw,
                       what) &&
         setDescriptor(op, kPointwiseOpX,
                       "CUDNN_ATTR_OPERATION_POINTWISE_XDESC", x, what) &&
         (!b || setDescriptor(op, kPointwiseOpB,
                              "CUDNN_ATTR_OPERATION_POINTWISE_BDESC", b,
                              what)) &&
         (!t || setDescriptor(op, kPointwiseOpT,
                              "CUDNN_ATTR_OPERATION_POINTWISE_TDESC", t,
                              what)) &&
         setDescriptor(op, kPointwiseOpY,
                       "CUDNN_ATTR_OPERATION_POINTWISE_YDESC", y, what) &&
         set(op, kPointwiseOpAlpha1, "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1",
             kTypeFloat, 1, &one, what) &&
         set(op, kPointwiseOpAlpha2, "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2",
             kTypeFloat, 1, &one, what);
    return add(ok, op, what);
  }

  /// y = the reduction `reduceOp` of x (in f32) to y's dims.
  Desc reduction(const char *name, int reduceOp, Desc x, Desc y) {
    std::string what = std::string("reduction '") + name + "'";
    Desc r = make(kReductionDesc, "CUDNN_BACKEND_REDUCTION_DESCRIPTOR", what);
    bool ok = set(r, kReductionComputeType, "CUDNN_ATTR_REDUCTION_COMP_TYPE",
                  kTypeDataType, 1, &kFloat, what) &&
              set(r, kReductionOperator, "CUDNN_ATTR_REDUCTION_OPERATOR",
                  kTypeReductionOperator, 1, &reduceOp, what);
    if (!ok || !finalize(r, what))
      return nullptr;

    what = std::string("operation '") + name + "' (reduction)";
    Desc op = make(kReductionOpDesc,
                   "CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR", what);
    ok = setDescriptor(op, kReductionOpDescriptor,
                       "CUDNN_ATTR_OPERATION_REDUCTION_DESC", r, what) &&
         setDescriptor(op, kReductionOpX,
                       "CUDNN_ATTR_OPERATION_REDUCTION_XDESC", x, what) &&
         setDescriptor(op, kReductionOpY,
                       "CUDNN_ATTR_OPERATION_REDUCTION_YDESC", y, what);
    return add(ok, op, what);
  }

  /// c = a @ b over the last two dims (the others batch), in f32.
  Desc matmul(const char *name, Desc a, Desc b, Desc cOut) {
    std::string what = std::string("matmul '") + name + "'";
    Desc m = make(kMatmulDesc, "CUDNN_BACKEND_MATMUL_DESCRIPTOR", what);
    if (!set(m, kMatmulComputeType, "CUDNN_ATTR_MATMUL_COMP_TYPE",
             kTypeDataType, 1, &kFloat, what) ||
        !finalize(m, what))
      return nullptr;

    what = std::string("operation '") + name + "' (matmul)";
    Desc op =
        make(kMatmulOpDesc, "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR", what);
    bool ok =
        setDescriptor(op, kMatmulOpA, "CUDNN_ATTR_OPERATION_MATMUL_ADESC", a,
                      what) &&
        setDescriptor(op, kMatmulOpB, "CUDNN_ATTR_OPERATION_MATMUL_BDESC", b,
                      what) &&
        setDescriptor(op, kMatmulOpC, "CUDNN_ATTR_OPERATION_MATMUL_CDESC", cOut,
                      what) &&
        setDescriptor(op, kMatmulOpDescriptor,
                      "CUDNN_ATTR_OPERATION_MATMUL_DESC", m, what);
    return add(ok, op, what);
  }

private:
  bool check(int status, const std::string &what, const std::string &step) {
    if (status != 0 && error.empty())
      error = "cuDNN attention: " + what + ": " + step + ": " +
              c.describeLast(status);
    return status == 0;
  }

  /// `op`, finalized and appended to the graph's operations.
  Desc add(bool ok, Desc op, const std::string &what) {
    if (!ok || !finalize(op, what))
      return nullptr;
    ops.push_back(op);
    return op;
  }

  const Cudnn &c;
  llvm::SmallVectorImpl<Desc> &kept;
  std::string &error;
  llvm::SmallVector<Desc> ops;
};

} // namespace

//===----------------------------------------------------------------------===//
// What the plan supports
//===----------------------------------------------------------------------===//

std::string mlir::tc::gpu_runtime::attentionUnsupportedReason(
    const runtime::AttentionCall &call) {
  if (call.element != runtime::ConvElement::F16 &&
      call.element != runtime::ConvElement::BF16)
    return "cuDNN attention: the fused forward takes f16 or bf16 only";
  for (int64_t size : {call.batch, call.heads, call.kvHeads, call.queries,
                       call.keys, call.headDim, call.valueDim})
    if (size <= 0)
      return "cuDNN attention: every size must be positive";
  if (call.heads % call.kvHeads)
    return "cuDNN attention: the query heads (" + std::to_string(call.heads) +
           ") must be a multiple of the key/value heads (" +
           std::to_string(call.kvHeads) + ")";
  // cudnn-frontend's checks of the f16/bf16 forward: head dims multiples of
  // 8, and at most 256 on Hopper (the limit it states for cuDNN 9.9 and
  // below; cuDNN's support matrix gives d <= 256 on every architecture
  // since).
  for (int64_t dim : {call.headDim, call.valueDim})
    if (dim % 8 || dim > 256)
      return "cuDNN attention: head dims must be multiples of 8 and at most "
             "256 (got " +
             std::to_string(call.headDim) + " and " +
             std::to_string(call.valueDim) + ")";
  for (std::string reason :
       {stridesReason("q", qDims(call), call.qStrides),
        stridesReason("k", kDims(call), call.kStrides),
        stridesReason("v", vDims(call), call.vStrides),
        stridesReason("out", outDims(call), call.outStrides)})
    if (!reason.empty())
      return reason;
  for (int64_t offset :
       {call.qOffset, call.kOffset, call.vOffset, call.outOffset})
    if (offset < 0 || offset % 8)
      return "cuDNN attention: q, k, v and out must start at multiples of 8 "
             "elements of their buffers (16-byte aligned)";
  if (call.hasBias) {
    Dims full = {call.batch, call.heads, call.queries, call.keys};
    for (int i = 0; i < 4; ++i)
      if (call.biasDims[i] != full[i] && (i == 3 || call.biasDims[i] != 1))
        return "cuDNN attention: the bias's dimension " + std::to_string(i) +
               " is " + std::to_string(call.biasDims[i]) + ", not " +
               (i == 3 ? "" : "1 or ") + std::to_string(full[i]);
    std::string reason =
        stridesReason("bias", biasDims(call), call.biasStrides);
    if (!reason.empty())
      return reason;
  }
  // cuDNN's release notes (9.18.1, known issues): one query with a causal
  // mask over grouped key/value heads gives wrong results.
  if (call.causal && call.queries == 1 && call.kvHeads != call.heads)
    return "cuDNN attention: one query with a causal mask over grouped "
           "key/value heads (a cuDNN known issue)";
  return "";
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

CudnnAttention::CudnnAttention(const runtime::AttentionCall &call)
    : call(call), scaleValue(call.scale),
      maskValue(-std::numeric_limits<float>::infinity()) {}

std::unique_ptr<CudnnAttention>
CudnnAttention::plan(const runtime::AttentionCall &call, std::string &error) {
  std::string reason = attentionUnsupportedReason(call);
  if (!reason.empty()) {
    error = reason;
    return nullptr;
  }
  const Cudnn *c = Cudnn::get(error);
  if (!c)
    return nullptr;
  if (!c->hasGraphAPI()) {
    error = "cuDNN attention: this cuDNN lacks the graph API "
            "(cudnnBackendExecute)";
    return nullptr;
  }
  Handle h = c->handle(error);
  if (!h)
    return nullptr;
  std::unique_ptr<CudnnAttention> attention(new CudnnAttention(call));
  // cuDNN before 9.10 wants the lowest float, not -inf, for masked scores
  // (cudnn-frontend's choice too).
  size_t version = c->version();
  if (version != 0 && version < 91000)
    attention->maskValue = std::numeric_limits<float>::lowest();
  Desc graph = attention->buildGraph(*c, h, error);
  if (!graph || !attention->pickEngine(*c, h, graph, error))
    return nullptr;
  return attention;
}

Desc CudnnAttention::buildGraph(const Cudnn &c, Handle h, std::string &error) {
  std::string failure;
  GraphBuilder g(c, graphDescriptors, failure);

  int io = call.element == runtime::ConvElement::BF16 ? kBFloat16 : kHalf;
  int64_t b = call.batch, hq = call.heads, sq = call.queries, skv = call.keys;
  // The scores [b, h, s_q, s_kv] and the per-query rows [b, h, s_q, 1], laid
  // out as cudnn-frontend sets them.
  Dims scoreDims = {b, hq, sq, skv};
  Dims scoreStrides = {hq * sq * skv, sq * skv, skv, 1};
  Dims rowDims = {b, hq, sq, 1};
  Dims rowStrides = {hq * sq, sq, 1, 1};
  Dims one = {1, 1, 1, 1};

  // The buffers. K is given to the first matmul as K^T, [b, h_k, d, s_kv]:
  // K's dims and strides with the last two swapped.
  Dims kStrides = normalizedStrides(kDims(call), call.kStrides);
  Desc q = g.tensor({"Q", kUidQ, io, qDims(call),
                     normalizedStrides(qDims(call), call.qStrides)});
  Desc kT = g.tensor({"K^T", kUidKT, io,
                      {b, call.kvHeads, call.headDim, skv},
                      {kStrides[0], kStrides[1], kStrides[3], kStrides[2]}});
  Desc v = g.tensor({"V", kUidV, io, vDims(call),
                     normalizedStrides(vDims(call), call.vStrides)});
  Desc out = g.tensor({"O", kUidOut, io, outDims(call),
                       normalizedStrides(outDims(call), call.outStrides)});
  // The scale, a host float passed by value.
  Desc scale = g.tensor({"attn_scale", kUidScale, kFloat, one, one,
                         /*isVirtual=*/false, /*byValue=*/true});

  // Virtual intermediates: f32, but the probabilities, which the second
  // matmul takes in the inputs' type.
  auto virtualTensor = [&](const char *name, int64_t uid, int dataType,
                           const Dims &dims, const Dims &strides) {
    return g.tensor({name, uid, dataType, dims, strides, /*isVirtual=*/true});
  };
  auto scores = [&](const char *name, int64_t uid, int dataType = kFloat) {
    return virtualTensor(name, uid, dataType, scoreDims, scoreStrides);
  };
  auto rows = [&](const char *name, int64_t uid) {
    return virtualTensor(name, uid, kFloat, rowDims, rowStrides);
  };

  // S = Q @ K^T, scaled.
  Desc s = scores("S", kUidScores);
  g.matmul("bmm1", q, kT, s);
  Desc scaled = scores("S*scale", kUidScaled);
  g.pointwise("attn_scale", kPointwiseMul, kFloat, s, scale, nullptr, scaled);
  Desc last = scaled;

  if (call.hasBias) {
    Dims dims = biasDims(call);
    Desc bias = g.tensor({"bias", kUidBias, io, dims,
                          normalizedStrides(dims, call.biasStrides)});
    Desc biased = scores("S+bias", kUidBiased);
    g.pointwise("bias_add", kPointwiseAdd, kFloat, last, bias, nullptr, biased);
    last = biased;
  }

  if (call.causal) {
    // Top-left causal: keep the scores whose row (query) index is at least
    // their column (key) index, the others become maskValue.
    Desc row = scores("row_index", kUidRow, kInt32);
    g.pointwise("gen_row_index", kPointwiseGenIndex, kFloat, last, nullptr,
                nullptr, row, /*axis=*/2);
    Desc column = scores("col_index", kUidColumn, kInt32);
    g.pointwise("gen_col_index", kPointwiseGenIndex, kFloat, last, nullptr,
                nullptr, column, /*axis=*/3);
    Desc keep = scores("row>=col", kUidKeep, kBoolean);
    g.pointwise("row_greater_than_col", kPointwiseCmpGE, kBoolean, row, column,
                nullptr, keep);
    Desc fill = g.tensor({"mask_value", kUidMaskValue, kFloat, one, one,
                          /*isVirtual=*/false, /*byValue=*/true});
    Desc masked = scores("S_masked", kUidMasked);
    g.pointwise("binary_select", kPointwiseBinarySelect, kFloat, last, fill,
                keep, masked);
    last = masked;
  }

  // softmax(S) = exp(S - max) / sum(exp(S - max)), by rows.
  Desc max = rows("max", kUidMax);
  g.reduction("max", kReduceMax, last, max);
  Desc shifted = scores("S-max", kUidShifted);
  g.pointwise("sub", kPointwiseSub, kFloat, last, max, nullptr, shifted);
  Desc exps = scores("exp(S-max)", kUidExp);
  g.pointwise("exp", kPointwiseExp, kFloat, shifted, nullptr, nullptr, exps);
  Desc sum = rows("sum_exp", kUidSum);
  g.reduction("sum", kReduceAdd, exps, sum);
  // The statistics max + log(sum), unused: cudnn-frontend adds them to
  // every softmax that outputs none (its workaround for cuDNN's engines).
  Desc logSum = rows("log(sum_exp)", kUidLog);
  g.pointwise("log", kPointwiseLog, kFloat, sum, nullptr, nullptr, logSum);
  Desc stats = rows("stats", kUidStats);
  g.pointwise("add", kPointwiseAdd, kFloat, max, logSum, nullptr, stats);
  Desc probabilities = scores("P", kUidProbabilities, io);
  g.pointwise("div", kPointwiseDiv, kFloat, exps, sum, nullptr, probabilities);

  // O = P @ V.
  g.matmul("bmm2", probabilities, v, out);

  std::string what = "operation graph";
  Desc graph = g.make(kOperationGraphDesc,
                      "CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR", what);
  llvm::ArrayRef<Desc> ops = g.operations();
  if (!g.set(graph, kGraphHandle, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE",
             kTypeHandle, 1, &h, what) ||
      !g.set(graph, kGraphOps, "CUDNN_ATTR_OPERATIONGRAPH_OPS",
             kTypeDescriptor, static_cast<int64_t>(ops.size()), ops.data(),
             what) ||
      !g.finalize(graph, what)) {
    error = failure;
    return nullptr;
  }
  return graph;
}

bool CudnnAttention::pickEngine(const Cudnn &c, Handle h, Desc graph,
                                std::string &error) {
  // The first failure of each step, for the error where no engine runs.
  std::string firstFailure;
  auto failure = [&](const std::string &step, int status) {
    if (firstFailure.empty())
      firstFailure = step + ": " + c.describeLast(status);
    return false;
  };
  auto make = [&](int kind, Desc &d, const char *what) {
    d = nullptr;
    if (int status = c.createDescriptor(kind, &d))
      return failure(std::string("cudnnBackendCreateDescriptor(") + what + ")",
                     status);
    graphDescriptors.push_back(d);
    return true;
  };

  // The configurations of the heuristics' mode `mode`, best first.
  auto configurations = [&](int mode, const char *modeName,
                            llvm::SmallVectorImpl<Desc> &configs) {
    Desc heuristics;
    if (!make(kEngineHeuristicsDesc, heuristics,
              "CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR"))
      return false;
    std::string step = std::string("heuristics (") + modeName + ")";
    if (int status = c.setAttribute(heuristics, kHeuristicsGraph,
                                    kTypeDescriptor, 1, &graph))
      return failure(step + ": setting CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH",
                     status);
    if (int status = c.setAttribute(heuristics, kHeuristicsMode,
                                    kTypeHeuristicsMode, 1, &mode))
      return failure(step + ": setting CUDNN_ATTR_ENGINEHEUR_MODE", status);
    if (int status = c.finalize(heuristics))
      return failure(step + ": cudnnBackendFinalize", status);
    int64_t count = 0;
    if (int status = c.getAttribute(heuristics, kHeuristicsResults,
                                    kTypeDescriptor, 0, &count, nullptr))
      return failure(step + ": counting CUDNN_ATTR_ENGINEHEUR_RESULTS",
                     status);
    for (int64_t i = 0; i < count; ++i) {
      Desc config;
      if (!make(kEngineConfigDesc, config,
                "CUDNN_BACKEND_ENGINECFG_DESCRIPTOR"))
        return false;
      configs.push_back(config);
    }
    if (count > 0)
      if (int status =
              c.getAttribute(heuristics, kHeuristicsResults, kTypeDescriptor,
                             count, &count, configs.data()))
        return failure(step + ": getting CUDNN_ATTR_ENGINEHEUR_RESULTS",
                       status);
    configs.resize(static_cast<size_t>(std::max<int64_t>(count, 0)));
    return true;
  };

  // The execution plan of `config`, finalized, or null.
  size_t tried = 0;
  auto planOf = [&](Desc config) -> Desc {
    ++tried;
    Desc plan = nullptr;
    if (int status = c.createDescriptor(kExecutionPlanDesc, &plan)) {
      failure("cudnnBackendCreateDescriptor("
              "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)",
              status);
      return nullptr;
    }
    int64_t workspace = 0, n = 0;
    int status = c.setAttribute(plan, kPlanHandle, kTypeHandle, 1, &h);
    const char *step =
        "execution plan: setting CUDNN_ATTR_EXECUTION_PLAN_HANDLE";
    if (status == 0) {
      status = c.setAttribute(plan, kPlanEngineConfig, kTypeDescriptor, 1,
                              &config);
      step = "execution plan: setting CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG";
    }
    if (status == 0) {
      status = c.finalize(plan);
      step = "execution plan: cudnnBackendFinalize";
    }
    if (status == 0) {
      status = c.getAttribute(plan, kPlanWorkspaceSize, kTypeInt64, 1, &n,
                              &workspace);
      step = "execution plan: getting CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE";
    }
    if (status == 0 && workspace >= 0) {
      planWorkspace = static_cast<size_t>(workspace);
      return plan;
    }
    failure(step, status);
    c.destroyDescriptor(plan);
    return nullptr;
  };

  // Instant mode first; mode A where none of its configurations runs
  // (cudnn_graph.h calls A an alias of instant today; cudnn-frontend's
  // users ask for A).
  const std::pair<int, const char *> modes[] = {
      {kHeuristicsInstant, "CUDNN_HEUR_MODE_INSTANT"},
      {kHeuristicsA, "CUDNN_HEUR_MODE_A"}};
  for (auto [mode, modeName] : modes) {
    llvm::SmallVector<Desc> configs;
    if (!configurations(mode, modeName, configs))
      continue;
    for (Desc config : configs)
      if (Desc plan = planOf(config)) {
        graphDescriptors.push_back(plan);
        executionPlan = plan;
        return true;
      }
  }
  error = "cuDNN attention: no engine of this cuDNN runs the graph (" +
          std::to_string(tried) + " configurations tried" +
          (firstFailure.empty() ? std::string(")")
                                : "; the first failure: " + firstFailure + ")");
  return false;
}

std::shared_ptr<const CudnnAttention>
CudnnAttention::planShared(const runtime::AttentionCall &call,
                           const void *device, std::string &error) {
  // Everything a plan depends on: the call but its buffers.
  std::string key;
  llvm::raw_string_ostream os(key);
  auto list = [&](const int64_t(&values)[4]) {
    for (int64_t v : values)
      os << v << ',';
    os << ';';
  };
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &call.scale, sizeof(scaleBits));
  os << device << ';' << static_cast<int>(call.element) << ';' << call.batch
     << ',' << call.heads << ',' << call.kvHeads << ',' << call.queries << ','
     << call.keys << ',' << call.headDim << ',' << call.valueDim << ';'
     << call.causal << call.hasBias << ';' << scaleBits << ';';
  list(call.qStrides);
  list(call.kStrides);
  list(call.vStrides);
  list(call.outStrides);
  if (call.hasBias) {
    list(call.biasDims);
    list(call.biasStrides);
  }
  struct Entry {
    std::shared_ptr<const CudnnAttention> plan;
    std::string error;
  };
  static std::mutex mutex;
  static auto *plans = new llvm::StringMap<Entry>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = plans->find(key);
    if (it != plans->end()) {
      if (!it->second.plan)
        error = it->second.error;
      return it->second.plan;
    }
  }
  std::string planError;
  std::shared_ptr<const CudnnAttention> made = plan(call, planError);
  std::lock_guard<std::mutex> lock(mutex);
  Entry &entry =
      plans->try_emplace(key, Entry{std::move(made), std::move(planError)})
          .first->second;
  if (!entry.plan)
    error = entry.error;
  return entry.plan;
}

CudnnAttention::~CudnnAttention() {
  // As ~CudnnConvolution: once an execution plan exists, the descriptors
  // stay (work queued on a stream may still run the plan, and a graph is
  // destroyed without synchronizing). A plan that never finalized never
  // ran: its descriptors go.
  if (executionPlan)
    return;
  std::string error;
  const Cudnn *c = Cudnn::get(error);
  if (!c || !c->destroyDescriptor)
    return;
  for (Desc d : graphDescriptors)
    c->destroyDescriptor(d);
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

bool CudnnAttention::run(const void *q, const void *k, const void *v,
                         const void *bias, void *out, void *workspace,
                         void *stream, std::string &error) const {
  const Cudnn *c = Cudnn::get(error);
  if (!c)
    return false;
  if (!executionPlan) {
    error = "cuDNN attention: no execution plan";
    return false;
  }
  if (call.hasBias != (bias != nullptr)) {
    error = call.hasBias ? "cuDNN attention: the plan takes a bias, none given"
                         : "cuDNN attention: a bias given to a plan without";
    return false;
  }
  auto aligned = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % kAlignment == 0;
  };
  if (!q || !k || !v || !out || !aligned(q) || !aligned(k) || !aligned(v) ||
      !aligned(out) || (bias && !aligned(bias)) ||
      (workspace && !aligned(workspace))) {
    error = "cuDNN attention: a buffer is null or not 16-byte aligned";
    return false;
  }
  if (planWorkspace && !workspace) {
    error = "cuDNN attention: the plan needs " + std::to_string(planWorkspace) +
            " bytes of workspace, none given";
    return false;
  }
  Handle h = c->handle(error);
  if (!h)
    return false;
  if (int status = c->setStream(h, stream)) {
    error = "cuDNN attention: cudnnSetStream: " + c->describe(status);
    return false;
  }

  // The buffers, then the by-value scalars (host addresses).
  int64_t uids[7] = {kUidQ, kUidKT, kUidV, kUidOut, kUidScale};
  void *data[7] = {const_cast<void *>(q), const_cast<void *>(k),
                   const_cast<void *>(v), out,
                   const_cast<float *>(&scaleValue)};
  int64_t count = 5;
  if (call.hasBias) {
    uids[count] = kUidBias;
    data[count++] = const_cast<void *>(bias);
  }
  if (call.causal) {
    uids[count] = kUidMaskValue;
    data[count++] = const_cast<float *>(&maskValue);
  }

  Desc pack = nullptr;
  const char *step =
      "cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)";
  int status = c->createDescriptor(kVariantPackDesc, &pack);
  if (status == 0) {
    step = "variant pack: setting CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS";
    status = c->setAttribute(pack, kVariantPackUids, kTypeInt64, count, uids);
    if (status == 0) {
      step = "variant pack: setting CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS";
      status = c->setAttribute(pack, kVariantPackPointers, kTypeVoidPtr, count,
                               data);
    }
    if (status == 0) {
      step = "variant pack: setting CUDNN_ATTR_VARIANT_PACK_WORKSPACE";
      status = c->setAttribute(pack, kVariantPackWorkspace, kTypeVoidPtr, 1,
                               &workspace);
    }
    if (status == 0) {
      step = "variant pack: cudnnBackendFinalize";
      status = c->finalize(pack);
    }
    if (status == 0) {
      step = "cudnnBackendExecute";
      status = c->execute(h, executionPlan, pack);
    }
    if (int destroyed = c->destroyDescriptor(pack); destroyed && status == 0) {
      step = "variant pack: cudnnBackendDestroyDescriptor";
      status = destroyed;
    }
  }
  if (status)
    error = std::string("cuDNN attention: ") + step + ": " +
            c->describeLast(status);
  return status == 0;
}
