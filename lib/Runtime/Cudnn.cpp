//===- Cudnn.cpp - kernel.conv on cuDNN, planned at compile time -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "Cudnn.h"
#include "CUDALibraries.h"
#include "CudnnAPI.h"

#include "GPUProgram.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <limits>
#include <mutex>
#include <string_view>

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::gpu_runtime;
using namespace mlir::tc::cuda;
using namespace mlir::tc::gpu_runtime::cudnn;

//===----------------------------------------------------------------------===//
// cuDNN's entry points
//===----------------------------------------------------------------------===//

const Cudnn *Cudnn::get(std::string &error) {
  return bindLibraryOnce<Cudnn>(
      {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}, "cuDNN (libcudnn.so)",
      [](void *lib, Cudnn &c, std::string &e) {
        bool ok =
            bindSymbol(lib, "cudnnCreate", c.create, e) &&
            bindSymbol(lib, "cudnnSetStream", c.setStream, e) &&
            bindSymbol(lib, "cudnnGetErrorString", c.errorString, e) &&
            bindSymbol(lib, "cudnnCreateTensorDescriptor", c.createTensor,
                       e) &&
            bindSymbol(lib, "cudnnSetTensorNdDescriptor", c.setTensor, e) &&
            bindSymbol(lib, "cudnnDestroyTensorDescriptor", c.destroyTensor,
                       e) &&
            bindSymbol(lib, "cudnnCreateFilterDescriptor", c.createFilter,
                       e) &&
            bindSymbol(lib, "cudnnSetFilterNdDescriptor", c.setFilter, e) &&
            bindSymbol(lib, "cudnnDestroyFilterDescriptor", c.destroyFilter,
                       e) &&
            bindSymbol(lib, "cudnnCreateConvolutionDescriptor", c.createConv,
                       e) &&
            bindSymbol(lib, "cudnnSetConvolutionNdDescriptor", c.setConv,
                       e) &&
            bindSymbol(lib, "cudnnDestroyConvolutionDescriptor",
                       c.destroyConv, e) &&
            bindSymbol(lib, "cudnnSetConvolutionGroupCount", c.setGroups,
                       e) &&
            bindSymbol(lib, "cudnnSetConvolutionMathType", c.setMath, e) &&
            bindSymbol(lib, "cudnnGetConvolutionForwardAlgorithm_v7",
                       c.fwdAlgos, e) &&
            bindSymbol(lib, "cudnnGetConvolutionForwardWorkspaceSize",
                       c.fwdWorkspace, e) &&
            bindSymbol(lib, "cudnnConvolutionForward", c.fwd, e) &&
            bindSymbol(lib, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                       c.dataAlgos, e) &&
            bindSymbol(lib, "cudnnGetConvolutionBackwardDataWorkspaceSize",
                       c.dataWorkspace, e) &&
            bindSymbol(lib, "cudnnConvolutionBackwardData", c.data, e) &&
            bindSymbol(lib, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                       c.filterAlgos, e) &&
            bindSymbol(lib, "cudnnGetConvolutionBackwardFilterWorkspaceSize",
                       c.filterWorkspace, e) &&
            bindSymbol(lib, "cudnnConvolutionBackwardFilter", c.filter, e);
        // Diagnostics are optional.
        std::string ignored;
        bindSymbol(lib, "cudnnGetVersion", c.getVersion, ignored);
        bindSymbol(lib, "cudnnGetLastErrorString", c.lastErrorString,
                   ignored);
        // The graph API is optional: without it, the legacy calls run.
        Cudnn g = c;
        if (bindSymbol(lib, "cudnnBackendCreateDescriptor", g.createDescriptor,
                       ignored) &&
            bindSymbol(lib, "cudnnBackendDestroyDescriptor",
                       g.destroyDescriptor, ignored) &&
            bindSymbol(lib, "cudnnBackendSetAttribute", g.setAttribute,
                       ignored) &&
            bindSymbol(lib, "cudnnBackendGetAttribute", g.getAttribute,
                       ignored) &&
            bindSymbol(lib, "cudnnBackendFinalize", g.finalize, ignored) &&
            bindSymbol(lib, "cudnnBackendExecute", g.execute, ignored))
          c = g;
        return ok;
      },
      error);
}

Handle Cudnn::handle(std::string &error) const {
  thread_local Handle h = nullptr;
  if (!h)
    if (int status = create(&h)) {
      error = "cudnnCreate: " + describe(status);
      h = nullptr;
    }
  return h;
}

namespace {

/// The byte alignment execution plans assume of every buffer; a run on
/// buffers that lack it takes the legacy path.
constexpr int64_t kPlanAlignment = 16;
// The tensors' unique ids in a plan's variant pack.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

/// cuDNN describes at least two spatial dimensions: a 1-d convolution is a
/// 2-d one of height 1 (sizes and strides 1, padding 0 there).
template <typename T>
SmallVector<T> spatial2d(ArrayRef<int64_t> values, int64_t fill,
                         size_t position) {
  SmallVector<T> out(values.begin(), values.end());
  if (out.size() == position + 1)
    out.insert(out.begin() + position, static_cast<T>(fill));
  return out;
}

/// The strides of a tensor of `dims` (PyTorch's dimension order) in the
/// call's layout.
template <typename T>
SmallVector<T> stridesOf(ArrayRef<T> dims, bool channelsLast) {
  SmallVector<int64_t> wide(dims.begin(), dims.end());
  SmallVector<T> out;
  for (int64_t stride : runtime::convStrides(wide, channelsLast))
    out.push_back(static_cast<T>(stride));
  return out;
}

/// The bytes of a dense buffer of `shape` holding `element`s.
size_t bufferBytes(ArrayRef<int64_t> shape, runtime::ConvElement element) {
  size_t bytes = element == runtime::ConvElement::F64   ? 8
                 : element == runtime::ConvElement::F32 ? 4
                                                        : 2;
  for (int64_t size : shape)
    bytes *= static_cast<size_t>(std::max<int64_t>(size, 1));
  return bytes;
}

/// Whether plans are timed (TC_CUDNN_TUNE=0 takes the heuristics' first).
bool tunePlans() {
  const char *value = std::getenv("TC_CUDNN_TUNE");
  return !value || std::string_view(value) != "0";
}

/// The index of the fastest of `plans` (execution plans of one call, each
/// with its workspace bytes), timed on scratch buffers of `bytes` (x, w, y)
/// on a stream of its own: three runs each after one to warm up, the best
/// of the three, that time in `bestTime` (a single plan is timed too: a
/// plan refitted to a smaller workspace is compared with the first). 0
/// where the driver cannot time them (no memory, no events; `bestTime` is
/// then left or set negative): the heuristics' first.
size_t fastestPlan(const Cudnn &c, Handle h, ArrayRef<Desc> plans,
                   ArrayRef<size_t> workspaces, const size_t (&bytes)[3],
                   float &bestTime) {
  std::string error;
  const Driver *d = Driver::get(error);
  if (plans.empty() || !d || !d->hasEvents() || !d->memFree ||
      !d->streamCreate)
    return 0;
  size_t workspace = *llvm::max_element(workspaces);
  CUdeviceptr buffers[4] = {0, 0, 0, 0};
  CUstream stream = nullptr;
  CUevent events[2] = {nullptr, nullptr};
  auto release = [&] {
    if (stream)
      d->streamSynchronize(stream);
    for (CUevent e : events)
      if (e)
        d->eventDestroy(e);
    for (CUdeviceptr b : buffers)
      if (b)
        d->memFree(b);
    if (stream)
      d->streamDestroy(stream);
  };
  bool ready = d->streamCreate(&stream, /*CU_STREAM_NON_BLOCKING=*/1) == 0 &&
               d->eventCreate(&events[0], 0) == 0 &&
               d->eventCreate(&events[1], 0) == 0;
  for (int i = 0; ready && i < 4; ++i) {
    size_t size = i < 3 ? bytes[i] : workspace;
    ready = size == 0 || d->memAlloc(&buffers[i], size) == 0;
  }
  if (!ready) {
    release();
    return 0;
  }
  c.setStream(h, stream);
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  void *data[3] = {reinterpret_cast<void *>(buffers[0]),
                   reinterpret_cast<void *>(buffers[1]),
                   reinterpret_cast<void *>(buffers[2])};
  void *scratch = reinterpret_cast<void *>(buffers[3]);
  size_t best = 0;
  bestTime = std::numeric_limits<float>::infinity();
  for (auto [index, plan] : llvm::enumerate(plans)) {
    Desc pack = nullptr;
    if (c.createDescriptor(kVariantPackDesc, &pack))
      continue;
    bool ok = c.setAttribute(pack, kVariantPackUids, kTypeInt64, 3, uids) ==
                  0 &&
              c.setAttribute(pack, kVariantPackPointers, kTypeVoidPtr, 3,
                             data) == 0 &&
              c.setAttribute(pack, kVariantPackWorkspace, kTypeVoidPtr, 1,
                             &scratch) == 0 &&
              c.finalize(pack) == 0 && c.execute(h, plan, pack) == 0;
    float time = std::numeric_limits<float>::infinity();
    for (int run = 0; ok && run < 3; ++run) {
      float ms = 0;
      ok = d->eventRecord(events[0], stream) == 0 &&
           c.execute(h, plan, pack) == 0 &&
           d->eventRecord(events[1], stream) == 0 &&
           d->eventSynchronize(events[1]) == 0 &&
           d->eventElapsedTime(&ms, events[0], events[1]) == 0;
      time = std::min(time, ms);
    }
    c.destroyDescriptor(pack);
    if (ok && time < bestTime) {
      bestTime = time;
      best = index;
    }
  }
  release();
  if (bestTime == std::numeric_limits<float>::infinity())
    bestTime = -1;
  return best;
}

} // namespace

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

std::unique_ptr<CudnnConvolution>
CudnnConvolution::plan(const runtime::ConvCall &call, bool allowTF32,
                       std::string &error, size_t workspaceLimit) {
  std::unique_ptr<CudnnConvolution> conv(
      new CudnnConvolution(call, workspaceLimit));
  if (!conv->planLegacy(allowTF32, error))
    return nullptr;
  conv->planGraph(allowTF32);
  return conv;
}

std::shared_ptr<const CudnnConvolution>
CudnnConvolution::planShared(const runtime::ConvCall &call, bool allowTF32,
                             const void *device, std::string &error,
                             size_t workspaceLimit) {
  // Everything a plan depends on; buffer ids are the steps' own.
  std::string key;
  llvm::raw_string_ostream os(key);
  auto list = [&](ArrayRef<int64_t> values) {
    for (int64_t v : values)
      os << v << ',';
    os << ';';
  };
  os << device << ';' << static_cast<int>(call.kind) << ';'
     << static_cast<int>(call.element) << ';' << call.groups << ';'
     << call.channelsLast << call.weightChannelsFirst << allowTF32 << ';'
     << workspaceLimit << ';';
  list(call.inputShape);
  list(call.weightShape);
  list(call.outputShape);
  list(call.stride);
  list(call.padding);
  list(call.dilation);
  static std::mutex mutex;
  static auto *plans =
      new llvm::StringMap<std::shared_ptr<const CudnnConvolution>>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = plans->find(key);
    if (it != plans->end())
      return it->second;
  }
  std::shared_ptr<const CudnnConvolution> made =
      plan(call, allowTF32, error, workspaceLimit);
  if (!made)
    return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  return plans->try_emplace(key, std::move(made)).first->second;
}

bool CudnnConvolution::planLegacy(bool allowTF32, std::string &error) {
  const Cudnn *c = Cudnn::get(error);
  if (!c)
    return false;
  Handle h = c->handle(error);
  if (!h)
    return false;
  int dataType = kFloat, computeType = kFloat,
      mathType = allowTF32 ? kDefaultMath : kFmaMath;
  switch (call.element) {
  case runtime::ConvElement::F32:
    break;
  case runtime::ConvElement::F64:
    dataType = computeType = kDouble;
    mathType = kDefaultMath;
    break;
  case runtime::ConvElement::F16:
    dataType = kHalf;
    mathType = kTensorOpMath;
    break;
  case runtime::ConvElement::BF16:
    dataType = kBFloat16;
    mathType = kTensorOpMath;
    break;
  }
  size_t spatialAt = 2;
  auto xDims = spatial2d<int>(call.inputShape, 1, spatialAt),
       wDims = spatial2d<int>(call.weightShape, 1, spatialAt),
       yDims = spatial2d<int>(call.outputShape, 1, spatialAt);
  auto pad = spatial2d<int>(call.padding, 0, 0),
       stride = spatial2d<int>(call.stride, 1, 0),
       dilation = spatial2d<int>(call.dilation, 1, 0);
  int rank = xDims.size();
  auto check = [&](int status, const char *what) {
    if (status)
      error = std::string(what) + ": " + c->describe(status);
    return status == 0;
  };
  if (!check(c->createTensor(&x), "cudnnCreateTensorDescriptor") ||
      !check(c->setTensor(x, dataType, rank, xDims.data(),
                          stridesOf<int>(xDims, call.channelsLast).data()),
             "cudnnSetTensorNdDescriptor (input)") ||
      !check(c->createTensor(&y), "cudnnCreateTensorDescriptor") ||
      !check(c->setTensor(y, dataType, rank, yDims.data(),
                          stridesOf<int>(yDims, call.channelsLast).data()),
             "cudnnSetTensorNdDescriptor (output)") ||
      !check(c->createFilter(&w), "cudnnCreateFilterDescriptor") ||
      !check(c->setFilter(w, dataType, call.channelsLast ? kNHWC : kNCHW,
                          rank, wDims.data()),
             "cudnnSetFilterNdDescriptor") ||
      !check(c->createConv(&conv), "cudnnCreateConvolutionDescriptor") ||
      !check(c->setConv(conv, rank - 2, pad.data(), stride.data(),
                        dilation.data(), kCrossCorrelation, computeType),
             "cudnnSetConvolutionNdDescriptor") ||
      !check(c->setGroups(conv, static_cast<int>(call.groups)),
             "cudnnSetConvolutionGroupCount") ||
      !check(c->setMath(conv, mathType), "cudnnSetConvolutionMathType"))
    return false;

  constexpr int kCandidates = 8;
  AlgoPerf perf[kCandidates];
  int found = 0;
  int status = 0;
  switch (call.kind) {
  case kernel::ConvKind::Forward:
    status = c->fwdAlgos(h, x, w, conv, y, kCandidates, &found, perf);
    break;
  case kernel::ConvKind::BackwardInput:
    status = c->dataAlgos(h, w, y, conv, x, kCandidates, &found, perf);
    break;
  case kernel::ConvKind::BackwardWeight:
    status = c->filterAlgos(h, x, y, conv, w, kCandidates, &found, perf);
    break;
  }
  if (!check(status, "cuDNN algorithm heuristics"))
    return false;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != 0)
      continue;
    // f32 without TF32 keeps the FMA math it asked for.
    if (call.element != runtime::ConvElement::F32 || allowTF32)
      c->setMath(conv, perf[i].mathType);
    size_t bytes = 0;
    switch (call.kind) {
    case kernel::ConvKind::Forward:
      status = c->fwdWorkspace(h, x, w, conv, y, perf[i].algo, &bytes);
      break;
    case kernel::ConvKind::BackwardInput:
      status = c->dataWorkspace(h, w, y, conv, x, perf[i].algo, &bytes);
      break;
    case kernel::ConvKind::BackwardWeight:
      status = c->filterWorkspace(h, x, y, conv, w, perf[i].algo, &bytes);
      break;
    }
    if (status == 0 && bytes <= workspaceLimit) {
      algo = perf[i].algo;
      legacyWorkspace = bytes;
      return true;
    }
  }
  error = "cuDNN has no algorithm for this convolution";
  return false;
}

bool CudnnConvolution::planGraph(bool allowTF32) {
  std::string error;
  const Cudnn *c = Cudnn::get(error);
  if (!c || !c->hasGraphAPI())
    return false;
  Handle h = c->handle(error);
  if (!h)
    return false;
  // Every descriptor made here is kept (the plan refers to them) and
  // destroyed with the convolution.
  auto make = [&](int kind) -> Desc {
    Desc d = nullptr;
    if (c->createDescriptor(kind, &d))
      return nullptr;
    graphDescriptors.push_back(d);
    return d;
  };
  auto set = [&](Desc d, int name, int type, int64_t count,
                 const void *values) {
    return c->setAttribute(d, name, type, count, values) == 0;
  };

  int dataType = kFloat, computeType = kFloat;
  switch (call.element) {
  case runtime::ConvElement::F32:
    break;
  case runtime::ConvElement::F64:
    dataType = computeType = kDouble;
    break;
  case runtime::ConvElement::F16:
    dataType = kHalf;
    break;
  case runtime::ConvElement::BF16:
    dataType = kBFloat16;
    break;
  }
  auto tensor = [&](ArrayRef<int64_t> shape, int64_t uid) -> Desc {
    auto dims = spatial2d<int64_t>(shape, 1, 2);
    auto strides = stridesOf<int64_t>(dims, call.channelsLast);
    Desc t = make(kTensorDesc);
    bool ok = t && set(t, kTensorDataType, kTypeDataType, 1, &dataType) &&
              set(t, kTensorDims, kTypeInt64, dims.size(), dims.data()) &&
              set(t, kTensorStrides, kTypeInt64, strides.size(),
                  strides.data()) &&
              set(t, kTensorUid, kTypeInt64, 1, &uid) &&
              set(t, kTensorAlignment, kTypeInt64, 1, &kPlanAlignment) &&
              c->finalize(t) == 0;
    return ok ? t : nullptr;
  };
  // Groups follow from the shapes: the weight holds C / groups channels.
  Desc xDesc = tensor(call.inputShape, kUidX),
       wDesc = tensor(call.weightShape, kUidW),
       yDesc = tensor(call.outputShape, kUidY);
  if (!xDesc || !wDesc || !yDesc)
    return false;

  auto pad = spatial2d<int64_t>(call.padding, 0, 0),
       stride = spatial2d<int64_t>(call.stride, 1, 0),
       dilation = spatial2d<int64_t>(call.dilation, 1, 0);
  int64_t spatialDims = pad.size();
  int mode = kCrossCorrelation;
  Desc convDesc = make(kConvolutionDesc);
  if (!convDesc ||
      !set(convDesc, kConvComputeType, kTypeDataType, 1, &computeType) ||
      !set(convDesc, kConvMode, kTypeConvolutionMode, 1, &mode) ||
      !set(convDesc, kConvSpatialDims, kTypeInt64, 1, &spatialDims) ||
      !set(convDesc, kConvPrePaddings, kTypeInt64, spatialDims, pad.data()) ||
      !set(convDesc, kConvPostPaddings, kTypeInt64, spatialDims, pad.data()) ||
      !set(convDesc, kConvFilterStrides, kTypeInt64, spatialDims,
           stride.data()) ||
      !set(convDesc, kConvDilations, kTypeInt64, spatialDims,
           dilation.data()) ||
      c->finalize(convDesc))
    return false;

  // The operation's attributes: alpha, beta, the convolution, then its
  // three tensors in the order of its kind.
  int opKind = kConvForwardOpDesc, first = kConvForwardFirst;
  Desc tensors[3] = {wDesc, xDesc, yDesc};
  switch (call.kind) {
  case kernel::ConvKind::Forward:
    break;
  case kernel::ConvKind::BackwardInput:
    opKind = kConvBackwardDataOpDesc;
    first = kConvBackwardDataFirst;
    break;
  case kernel::ConvKind::BackwardWeight:
    opKind = kConvBackwardFilterOpDesc;
    first = kConvBackwardFilterFirst;
    break;
  }
  bool isDouble = computeType == kDouble;
  const double oneD = 1, zeroD = 0;
  const float oneF = 1, zeroF = 0;
  int scalarType = isDouble ? kTypeDouble : kTypeFloat;
  const void *alpha = isDouble ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = isDouble ? static_cast<const void *>(&zeroD) : &zeroF;
  Desc op = make(opKind);
  if (!op || !set(op, first, scalarType, 1, alpha) ||
      !set(op, first + 1, scalarType, 1, beta) ||
      !set(op, first + 2, kTypeDescriptor, 1, &convDesc) ||
      !set(op, first + 3, kTypeDescriptor, 1, &tensors[0]) ||
      !set(op, first + 4, kTypeDescriptor, 1, &tensors[1]) ||
      !set(op, first + 5, kTypeDescriptor, 1, &tensors[2]) || c->finalize(op))
    return false;

  Desc graph = make(kOperationGraphDesc);
  if (!graph || !set(graph, kGraphHandle, kTypeHandle, 1, &h) ||
      !set(graph, kGraphOps, kTypeDescriptor, 1, &op) || c->finalize(graph))
    return false;

  int heuristicsMode = kHeuristicsInstant;
  Desc heuristics = make(kEngineHeuristicsDesc);
  if (!heuristics ||
      !set(heuristics, kHeuristicsGraph, kTypeDescriptor, 1, &graph) ||
      !set(heuristics, kHeuristicsMode, kTypeHeuristicsMode, 1,
           &heuristicsMode) ||
      c->finalize(heuristics))
    return false;
  int64_t count = 0;
  if (c->getAttribute(heuristics, kHeuristicsResults, kTypeDescriptor, 0,
                      &count, nullptr) ||
      count <= 0)
    return false;
  SmallVector<Desc> configs;
  for (int64_t i = 0; i < count; ++i) {
    Desc config = make(kEngineConfigDesc);
    if (!config)
      return false;
    configs.push_back(config);
  }
  if (c->getAttribute(heuristics, kHeuristicsResults, kTypeDescriptor, count,
                      &count, configs.data()))
    return false;
  configs.resize(count);

  // Which configurations the call allows: their numerical notes, and
  // whether the engine compiles at plan time.
  bool strictF32 = call.element == runtime::ConvElement::F32 && !allowTF32;
  auto allowed = [&](Desc config, bool allowRuntimeCompilation) {
    Desc engine = make(kEngineDesc);
    int64_t n = 0;
    if (!engine || c->getAttribute(config, kEngineConfigEngine,
                                   kTypeDescriptor, 1, &n, &engine))
      return false;
    int notes[32];
    n = 0;
    if (c->getAttribute(engine, kEngineNumericalNote, kTypeNumericalNote, 32,
                        &n, notes))
      return false;
    for (int64_t i = 0; i < n; ++i)
      if (strictF32 &&
          (notes[i] == kNoteTensorCore || notes[i] == kNoteDownConvertInputs))
        return false;
    if (allowRuntimeCompilation)
      return true;
    n = 0;
    if (c->getAttribute(engine, kEngineBehaviorNote, kTypeBehaviorNote, 32,
                        &n, notes))
      return true; // a library without behavior notes
    return llvm::none_of(ArrayRef<int>(notes, n), [](int note) {
      return note == kNoteRuntimeCompilation;
    });
  };
  // Candidates: the plans of the first kTuneCandidates allowed
  // configurations whose workspace fits. Engines compiled at plan time
  // cost seconds: they are candidates where the heuristics rank them ahead
  // of every other engine (cuDNN's channels-last depthwise kernels, 10-30x
  // faster than its precompiled engines at ConvNeXt's and MobileNetV2's
  // sizes), else only where no other engine runs. cuDNN's heuristics rank
  // by a model, which can put a slow engine first (2.5x the best on a
  // grouped convolution of 48 channels per group), so with more than one
  // candidate the fastest is taken, timed once per distinct convolution
  // (planShared), as torch.backends.cudnn.benchmark does.
  constexpr size_t kTuneCandidates = 8, kCompiledCandidates = 2;
  SmallVector<Desc> plans;
  SmallVector<size_t> workspaces;
  auto addPlan = [&](Desc config) {
    Desc plan = nullptr;
    if (c->createDescriptor(kExecutionPlanDesc, &plan))
      return;
    int64_t workspace = 0, n = 0;
    if (set(plan, kPlanHandle, kTypeHandle, 1, &h) &&
        set(plan, kPlanEngineConfig, kTypeDescriptor, 1, &config) &&
        c->finalize(plan) == 0 &&
        c->getAttribute(plan, kPlanWorkspaceSize, kTypeInt64, 1, &n,
                        &workspace) == 0 &&
        workspace >= 0 && static_cast<size_t>(workspace) <= workspaceLimit) {
      plans.push_back(plan);
      workspaces.push_back(static_cast<size_t>(workspace));
      return;
    }
    c->destroyDescriptor(plan);
  };
  bool leading = true;
  size_t compiled = 0;
  for (Desc config : configs) {
    if (plans.size() == kTuneCandidates)
      break;
    if (allowed(config, /*allowRuntimeCompilation=*/false)) {
      leading = false;
      addPlan(config);
    } else if (leading && compiled < kCompiledCandidates &&
               allowed(config, /*allowRuntimeCompilation=*/true)) {
      ++compiled;
      addPlan(config);
    }
  }
  for (Desc config : configs) {
    if (!plans.empty())
      break;
    if (allowed(config, /*allowRuntimeCompilation=*/true))
      addPlan(config);
  }
  if (plans.empty())
    return false;
  size_t bytes[3] = {bufferBytes(call.inputShape, call.element),
                     bufferBytes(call.weightShape, call.element),
                     bufferBytes(call.outputShape, call.element)};
  size_t best =
      tunePlans() ? fastestPlan(*c, h, plans, workspaces, bytes, planMs) : 0;
  for (auto [index, plan] : llvm::enumerate(plans))
    if (index != best)
      c->destroyDescriptor(plan);
  graphDescriptors.push_back(plans[best]);
  executionPlan = plans[best];
  planWorkspace = workspaces[best];
  return true;
}

CudnnConvolution::~CudnnConvolution() {
  std::string error;
  const Cudnn *c = Cudnn::get(error);
  if (!c)
    return;
  // The graph API's descriptors stay: an execution plan may own device code
  // (engines compiled at plan time) that work already queued on the stream
  // still runs, and a graph is destroyed without synchronizing. (PyTorch
  // keeps its plans for the life of the process too.) The legacy
  // descriptors are host structures.
  if (x)
    c->destroyTensor(x);
  if (y)
    c->destroyTensor(y);
  if (w)
    c->destroyFilter(w);
  if (conv)
    c->destroyConv(conv);
}

size_t CudnnConvolution::workspaceBytes() const {
  return std::max(legacyWorkspace, executionPlan ? planWorkspace : 0);
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

bool CudnnConvolution::run(void *xPtr, void *wPtr, void *yPtr,
                           void *workspace, void *stream,
                           std::string &error) const {
  const Cudnn *c = Cudnn::get(error);
  if (!c)
    return false;
  Handle h = c->handle(error);
  if (!h)
    return false;
  c->setStream(h, stream);
  auto aligned = [](void *p) {
    return reinterpret_cast<uintptr_t>(p) % kPlanAlignment == 0;
  };
  if (executionPlan && planUsable.load(std::memory_order_relaxed) &&
      aligned(xPtr) && aligned(wPtr) && aligned(yPtr) && aligned(workspace)) {
    Desc pack = nullptr;
    const int64_t uids[3] = {kUidX, kUidW, kUidY};
    void *data[3] = {xPtr, wPtr, yPtr};
    int status = c->createDescriptor(kVariantPackDesc, &pack);
    if (status == 0) {
      status = c->setAttribute(pack, kVariantPackUids, kTypeInt64, 3, uids);
      if (status == 0)
        status = c->setAttribute(pack, kVariantPackPointers, kTypeVoidPtr, 3,
                                 data);
      if (status == 0)
        status = c->setAttribute(pack, kVariantPackWorkspace, kTypeVoidPtr, 1,
                                 &workspace);
      if (status == 0)
        status = c->finalize(pack);
      if (status == 0)
        status = c->execute(h, executionPlan, pack);
      c->destroyDescriptor(pack);
    }
    if (status == 0)
      return true;
    // The legacy calls take over from now on (a plan cuDNN made but will
    // not run is its problem, not the user's).
    planUsable.store(false, std::memory_order_relaxed);
  }
  return runLegacy(xPtr, wPtr, yPtr, workspace, stream, error);
}

bool CudnnConvolution::runLegacy(void *xPtr, void *wPtr, void *yPtr,
                                 void *workspace, void *stream,
                                 std::string &error) const {
  const Cudnn *c = Cudnn::get(error);
  Handle h = c->handle(error);
  const double oneD = 1, zeroD = 0;
  const float oneF = 1, zeroF = 0;
  bool isDouble = call.element == runtime::ConvElement::F64;
  const void *alpha = isDouble ? static_cast<const void *>(&oneD) : &oneF;
  const void *beta = isDouble ? static_cast<const void *>(&zeroD) : &zeroF;
  int status = 0;
  switch (call.kind) {
  case kernel::ConvKind::Forward:
    status = c->fwd(h, alpha, x, xPtr, w, wPtr, conv, algo, workspace,
                    legacyWorkspace, beta, y, yPtr);
    break;
  case kernel::ConvKind::BackwardInput:
    status = c->data(h, alpha, w, wPtr, y, yPtr, conv, algo, workspace,
                     legacyWorkspace, beta, x, xPtr);
    break;
  case kernel::ConvKind::BackwardWeight:
    status = c->filter(h, alpha, x, xPtr, y, yPtr, conv, algo, workspace,
                       legacyWorkspace, beta, w, wPtr);
    break;
  }
  if (status)
    error = "cuDNN convolution (" +
            std::string(kernel::stringifyConvKind(call.kind)) +
            ") failed: " + c->describe(status);
  return status == 0;
}
