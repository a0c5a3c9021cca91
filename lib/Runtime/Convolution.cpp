//===- Convolution.cpp - library convolutions, as runtimes see them -------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "Convolution.h"

#include "tc/Runtime/CPURuntime.h"

#include <atomic>

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::runtime;

FailureOr<ConvCall>
ConvCall::get(kernel::ConvOp op, const llvm::DenseMap<Value, int64_t> &ids) {
  ConvCall call;
  call.kind = op.getKind();
  call.input = ids.lookup(op.getInput());
  call.weight = ids.lookup(op.getWeight());
  call.output = ids.lookup(op.getOutput());
  call.channelsLast = op.getChannelsLast();
  call.weightChannelsFirst = op.getWeightChannelsFirst();
  auto shape = [&](Value v) {
    ArrayRef<int64_t> sizes = cast<MemRefType>(v.getType()).getShape();
    SmallVector<int64_t> out(sizes);
    if (call.channelsLast &&
        !(v == op.getWeight() && call.weightChannelsFirst)) {
      // (N, spatial..., C) -> (N, C, spatial...).
      out.erase(out.end() - 1);
      out.insert(out.begin() + 1, sizes.back());
    }
    return out;
  };
  call.inputShape = shape(op.getInput());
  call.weightShape = shape(op.getWeight());
  call.outputShape = shape(op.getOutput());
  call.stride.assign(op.getStride().begin(), op.getStride().end());
  call.padding.assign(op.getPadding().begin(), op.getPadding().end());
  call.dilation.assign(op.getDilation().begin(), op.getDilation().end());
  call.groups = op.getGroups();
  Type elt = cast<MemRefType>(op.getInput().getType()).getElementType();
  if (elt.isF32())
    call.element = ConvElement::F32;
  else if (elt.isF64())
    call.element = ConvElement::F64;
  else if (elt.isF16())
    call.element = ConvElement::F16;
  else if (elt.isBF16())
    call.element = ConvElement::BF16;
  else
    return op.emitOpError() << "library convolutions take f32, f64, f16 and "
                               "bf16, not "
                            << elt;
  return call;
}

SmallVector<int64_t> runtime::convStrides(ArrayRef<int64_t> shape,
                                          bool channelsLast) {
  int64_t rank = static_cast<int64_t>(shape.size());
  // The dimensions from outermost to innermost in memory.
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d)
    order.push_back(d);
  if (channelsLast && rank > 2) {
    order.erase(order.begin() + 1);
    order.push_back(1);
  }
  SmallVector<int64_t> strides(rank, 1);
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    strides[order[i]] = stride;
    stride *= shape[order[i]];
  }
  return strides;
}

namespace {

/// Calls `fn(point)` for every point (a multi-index) of `shape`, in
/// row-major order.
template <typename Fn>
void forEachPoint(ArrayRef<int64_t> shape, Fn fn) {
  SmallVector<int64_t> point(shape.size(), 0);
  if (llvm::any_of(shape, [](int64_t s) { return s == 0; }))
    return;
  while (true) {
    fn(ArrayRef<int64_t>(point));
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    while (d >= 0 && ++point[d] == shape[d])
      point[d--] = 0;
    if (d < 0)
      return;
  }
}

template <typename T>
void referenceConv(
    const ConvCall &c, T *x, T *w, T *y,
    const std::function<void(int64_t, const std::function<void(int64_t)> &)>
        &parallelFor) {
  int64_t spatial = static_cast<int64_t>(c.inputShape.size()) - 2;
  int64_t n = c.inputShape[0];
  int64_t outChannels = c.weightShape[0], perGroup = c.weightShape[1];
  int64_t outPerGroup = outChannels / c.groups;
  ArrayRef<int64_t> inSpace = ArrayRef<int64_t>(c.inputShape).drop_front(2),
                    kSpace = ArrayRef<int64_t>(c.weightShape).drop_front(2),
                    outSpace = ArrayRef<int64_t>(c.outputShape).drop_front(2);
  SmallVector<int64_t> xs = convStrides(c.inputShape, c.channelsLast),
                       ws = convStrides(c.weightShape, c.weightChannelsLast()),
                       ys = convStrides(c.outputShape, c.channelsLast);
  // The input offset (within a channel) that output point `p` reads at
  // kernel point `k`, or -1 in the padding.
  auto inputOffset = [&](ArrayRef<int64_t> p, ArrayRef<int64_t> k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t i = p[d] * c.stride[d] + k[d] * c.dilation[d] - c.padding[d];
      if (i < 0 || i >= inSpace[d])
        return int64_t(-1);
      offset += i * xs[2 + d];
    }
    return offset;
  };
  auto offsetIn = [&](ArrayRef<int64_t> p, ArrayRef<int64_t> strides) {
    int64_t offset = 0;
    for (int64_t d = 0; d < spatial; ++d)
      offset += p[d] * strides[2 + d];
    return offset;
  };
  switch (c.kind) {
  case kernel::ConvKind::Forward:
    parallelFor(n * outChannels, [&](int64_t job) {
      int64_t b = job / outChannels, o = job % outChannels;
      int64_t g = o / outPerGroup;
      forEachPoint(outSpace, [&](ArrayRef<int64_t> p) {
        double sum = 0;
        forEachPoint(kSpace, [&](ArrayRef<int64_t> k) {
          int64_t in = inputOffset(p, k);
          if (in < 0)
            return;
          for (int64_t ci = 0; ci < perGroup; ++ci)
            sum += double(x[b * xs[0] + (g * perGroup + ci) * xs[1] + in]) *
                   double(w[o * ws[0] + ci * ws[1] + offsetIn(k, ws)]);
        });
        y[b * ys[0] + o * ys[1] + offsetIn(p, ys)] = T(sum);
      });
    });
    return;
  case kernel::ConvKind::BackwardInput:
    // Scatter each output point's gradient into the inputs it read; one
    // job per (batch, group), which own disjoint input channels.
    parallelFor(n * c.groups, [&](int64_t job) {
      int64_t b = job / c.groups, g = job % c.groups;
      for (int64_t ci = 0; ci < perGroup; ++ci)
        forEachPoint(inSpace, [&](ArrayRef<int64_t> p) {
          x[b * xs[0] + (g * perGroup + ci) * xs[1] + offsetIn(p, xs)] = T(0);
        });
      for (int64_t o = g * outPerGroup; o < (g + 1) * outPerGroup; ++o)
        forEachPoint(outSpace, [&](ArrayRef<int64_t> p) {
          T dy = y[b * ys[0] + o * ys[1] + offsetIn(p, ys)];
          forEachPoint(kSpace, [&](ArrayRef<int64_t> k) {
            int64_t in = inputOffset(p, k);
            if (in < 0)
              return;
            for (int64_t ci = 0; ci < perGroup; ++ci)
              x[b * xs[0] + (g * perGroup + ci) * xs[1] + in] +=
                  dy * w[o * ws[0] + ci * ws[1] + offsetIn(k, ws)];
          });
        });
    });
    return;
  case kernel::ConvKind::BackwardWeight:
    parallelFor(outChannels, [&](int64_t o) {
      int64_t g = o / outPerGroup;
      for (int64_t ci = 0; ci < perGroup; ++ci)
        forEachPoint(kSpace, [&](ArrayRef<int64_t> k) {
          double sum = 0;
          for (int64_t b = 0; b < n; ++b)
            forEachPoint(outSpace, [&](ArrayRef<int64_t> p) {
              int64_t in = inputOffset(p, k);
              if (in >= 0)
                sum += double(y[b * ys[0] + o * ys[1] + offsetIn(p, ys)]) *
                       double(x[b * xs[0] + (g * perGroup + ci) * xs[1] + in]);
            });
          w[o * ws[0] + ci * ws[1] + offsetIn(k, ws)] = T(sum);
        });
    });
    return;
  }
}

} // namespace

void runtime::runReferenceConv(
    const ConvCall &call, ArrayRef<void *> ptrs,
    const std::function<void(int64_t, const std::function<void(int64_t)> &)>
        &parallelFor) {
  void *x = ptrs[call.input], *w = ptrs[call.weight], *y = ptrs[call.output];
  if (call.element == ConvElement::F64)
    referenceConv(call, static_cast<double *>(x), static_cast<double *>(w),
                  static_cast<double *>(y), parallelFor);
  else
    referenceConv(call, static_cast<float *>(x), static_cast<float *>(w),
                  static_cast<float *>(y), parallelFor);
}

static std::atomic<LibraryConvolutionFn> libraryConvolution{nullptr};

void mlir::tc::setCPULibraryConvolution(LibraryConvolutionFn fn) {
  libraryConvolution.store(fn);
}

LibraryConvolutionFn mlir::tc::cpuLibraryConvolution() {
  return libraryConvolution.load();
}

std::string runtime::runCPUConv(
    const ConvCall &call, std::vector<void *> &ptrs,
    const std::function<void(int64_t, const std::function<void(int64_t)> &)>
        &parallelFor,
    std::vector<std::pair<int64_t, std::shared_ptr<void>>> &owned) {
  LibraryConvolutionFn library = cpuLibraryConvolution();
  if (!library) {
    if (call.element != ConvElement::F32 && call.element != ConvElement::F64)
      return "the CPU's reference convolution takes f32 and f64";
    runReferenceConv(call, ptrs, parallelFor);
    return "";
  }
  SmallVector<int64_t> inputStrides =
      convStrides(call.inputShape, call.channelsLast);
  SmallVector<int64_t> weightStrides =
      convStrides(call.weightShape, call.weightChannelsLast());
  SmallVector<int64_t> outputStrides =
      convStrides(call.outputShape, call.channelsLast);
  LibraryConvolution c;
  c.kind = static_cast<int>(call.kind);
  c.element = static_cast<int>(call.element);
  c.rank = static_cast<int>(call.inputShape.size());
  c.inputShape = call.inputShape.data();
  c.weightShape = call.weightShape.data();
  c.outputShape = call.outputShape.data();
  c.inputStrides = inputStrides.data();
  c.weightStrides = weightStrides.data();
  c.outputStrides = outputStrides.data();
  c.stride = call.stride.data();
  c.padding = call.padding.data();
  c.dilation = call.dilation.data();
  c.groups = call.groups;
  c.input = ptrs[call.input];
  c.weight = ptrs[call.weight];
  c.output = ptrs[call.output];
  c.mayReturn = call.writesIntermediate;
  std::string error = library(c);
  if (error.empty() && c.result) {
    if (!c.mayReturn)
      return "the library convolution returned memory for a buffer it must "
             "write";
    ptrs[call.written()] = c.result;
    owned.emplace_back(call.written(), std::move(c.resultOwner));
  }
  return error;
}
