//===- CostModel.h - tc's code against eager's kernel, per op -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The one place that decides whether tc's code for an op would be slower
// than eager's kernel for it. Most ops tc compiles cost what eager's cost
// (one pass over their data); the ones this model knows do not: tc's sorts,
// scans, searches and most scatters are dense (every element against every
// position, O(n^2) where eager is O(n log n) or O(n)), its float scatter-adds
// and histograms are atomics, its Fourier transforms are matrix products.
// For those, `estimate` gives both sides' time on the target from the op's
// sizes (memory traffic, the algorithm's steps, and the rates below), and
// `eagerReason` says why an op is left to eager ("" when tc keeps it).
// tc.support asks it (through tc._runtime) before an op is compiled; the
// decompositions keep their own hard caps (Limits.h), which bound what they
// can express at all.
//
// The rates were measured with benchmarks/bench_cliffs.py (`--calibrate`:
// each family on both sides of where the model hands it to eager, tc's code
// forced with TC_COST_MODEL=0) on the 2-core CPU of CI's machine (the
// calls' times) and on an H100 (the kernels' GPU times); what matters is
// their ratios on one target, not their absolute values. Results:
// benchmarks/results/cliffs-calibration-{cpu,cuda}.json.
//
// Header-only, with no MLIR dependency, so that tc._runtime can export it.
//
//===----------------------------------------------------------------------===//

#ifndef TC_CONVERSION_FXTOPRIM_COSTMODEL_H
#define TC_CONVERSION_FXTOPRIM_COSTMODEL_H

#include "tc/Conversion/FXToPrim/Limits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tc::cost {

enum class Target { CPU, GPU };

/// What one target does per second, as the model counts.
struct Rates {
  /// Streaming memory traffic (bytes read plus written).
  double bytesPerSecond;
  /// tc's dense compare-and-select steps (one element against one position).
  double denseStepsPerSecond;
  /// tc's float atomic adds to distinct addresses.
  double atomicsPerSecond;
  /// Atomic adds to one address at a time: a histogram of few bins
  /// serialises on them.
  double contendedAtomicsPerSecond;
  /// tc's Fourier transforms: multiply-adds of its dense DFT products.
  double flopsPerSecond;
  /// Eager's sorts: units of n log2(n) per row.
  double sortUnitsPerSecond;
  /// Eager's scatters and index_add: updated elements.
  double scatterElementsPerSecond;
  /// Eager's FFTs: units of n log2(n) per signal.
  double fftUnitsPerSecond;
  /// Eager's histc: values counted.
  double histogramValuesPerSecond;
  /// tc's sorts, and scans along a strided dimension: the latency per
  /// element of a row (a GPU thread reduces along the row serially; the
  /// CPU's cores do anyway). A sum or product scan along the innermost
  /// dimension is a block's reduction per element on a GPU, with no such
  /// latency.
  double denseRowSeconds;
  /// The least eager's sort takes (a GPU's segmented sort has a floor).
  double eagerSortSeconds;
  /// The least tc's Fourier transform takes (its DFT tables and products
  /// are several kernels).
  double dftSeconds;
  /// What eager pays per op beyond its work (dispatch, a launch), and what
  /// leaving an op to eager costs tc's graph (a split); tc's op is fused or
  /// launched in a program already running. On a GPU the split is most of
  /// it: the program becomes two CUDA graph replays with the op's launch
  /// between, 60-70 us of host time a segment on the H200, 200 us of OPT's
  /// host-bound step (a [4, 512] cumsum: tc's kernel takes about 3 us,
  /// eager's 2; the step 2.21 ms split, 2.01 whole). A step that is not
  /// host-bound hides part of that, so the model counts 20 us.
  double eagerOpSeconds;
};

inline constexpr Rates kCPURates{
    /*bytesPerSecond=*/2.0e10,
    /*denseStepsPerSecond=*/1.0e10,
    /*atomicsPerSecond=*/3.5e8,
    /*contendedAtomicsPerSecond=*/3.5e8, // 2 cores rarely collide
    /*flopsPerSecond=*/1.5e11,
    /*sortUnitsPerSecond=*/5.0e8,
    /*scatterElementsPerSecond=*/2.0e9,
    /*fftUnitsPerSecond=*/2.5e10,
    /*histogramValuesPerSecond=*/5.0e8,
    /*denseRowSeconds=*/0,
    /*eagerSortSeconds=*/0,
    /*dftSeconds=*/2.0e-6,
    /*eagerOpSeconds=*/5.0e-6,
};

inline constexpr Rates kGPURates{
    /*bytesPerSecond=*/2.5e12,
    /*denseStepsPerSecond=*/4.0e11,
    /*atomicsPerSecond=*/2.0e11,
    /*contendedAtomicsPerSecond=*/5.0e8,
    /*flopsPerSecond=*/7.0e12,
    /*sortUnitsPerSecond=*/2.5e11,
    /*scatterElementsPerSecond=*/1.0e11,
    /*fftUnitsPerSecond=*/1.0e12,
    /*histogramValuesPerSecond=*/1.0e11,
    /*denseRowSeconds=*/3.0e-8,
    /*eagerSortSeconds=*/2.0e-5,
    /*dftSeconds=*/1.0e-5,
    /*eagerOpSeconds=*/2.0e-5,
};

inline const Rates &ratesOf(Target target) {
  return target == Target::GPU ? kGPURates : kCPURates;
}

/// tc keeps an op while its estimate is at most this many times eager's.
inline constexpr double kMaxSlowdown = 1.0;

/// One op as the model sees it: its ATen name, the shapes of its tensor
/// arguments by argument name (a list argument's i-th tensor as
/// "name.i"; the first result as "result"), which of them hold floats or
/// bools, its integer and boolean arguments by name, and its target.
struct Query {
  std::string op;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, char> kinds; // 'f' float, 'c' complex, 'b' bool, 'i'
  std::map<std::string, int64_t> ints;
  Target target = Target::CPU;
  int64_t elementBytes = 4;
};

/// Both sides' estimated time for one op, and tc's algorithm for it.
struct Estimate {
  double tcSeconds = 0;
  double eagerSeconds = 0;
  std::string algorithm;
  /// Why tc's decomposition cannot take the op at all ("" when it can).
  std::string overCap;
};

namespace detail {

inline double numel(const std::vector<int64_t> &shape) {
  double n = 1;
  for (int64_t d : shape)
    n *= double(std::max<int64_t>(d, 0));
  return n;
}

inline double log2n(double n) { return std::max(1.0, std::log2(n)); }

inline bool startsWith(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}

inline int64_t normDim(int64_t dim, size_t rank) {
  return dim < 0 ? dim + int64_t(rank) : dim;
}

} // namespace detail

/// tc's and eager's time for `q`, or nullopt for an op whose tc code does
/// what eager's does (a pass over its data): the model has nothing to say.
inline std::optional<Estimate> estimate(const Query &q) {
  using detail::log2n;
  using detail::numel;
  const Rates &r = ratesOf(q.target);
  auto has = [&](const char *name) { return q.shapes.count(name) != 0; };
  auto size = [&](const char *name) -> double {
    auto it = q.shapes.find(name);
    return it == q.shapes.end() ? 1.0 : numel(it->second);
  };
  auto shape = [&](const char *name) -> std::vector<int64_t> {
    auto it = q.shapes.find(name);
    return it == q.shapes.end() ? std::vector<int64_t>{} : it->second;
  };
  auto intArg = [&](const char *name, int64_t fallback) -> int64_t {
    auto it = q.ints.find(name);
    return it == q.ints.end() ? fallback : it->second;
  };
  if (!has("result"))
    return std::nullopt;
  const double bytes = double(q.elementBytes);
  const double out = size("result");
  // A pass over `elements` elements read and written once.
  auto stream = [&](double elements) {
    return 2 * elements * bytes / r.bytesPerSecond;
  };
  Estimate e;
  auto dense = [&](double steps, double eagerSeconds, const char *algorithm,
                   double rowLength = 0) {
    e.tcSeconds = std::max(steps / r.denseStepsPerSecond,
                           rowLength * r.denseRowSeconds) +
                  stream(out);
    e.eagerSeconds = r.eagerOpSeconds + eagerSeconds;
    e.algorithm = algorithm;
    if (steps > double(limits::kDenseSteps))
      e.overCap = "more than " + std::to_string(limits::kDenseSteps) +
                  " steps";
    return e;
  };
  // Eager's scatter of `updates` elements into `out` (a copy of the
  // destination, then the updates).
  auto eagerScatter = [&](double updates) {
    return stream(out) + updates / r.scatterElementsPerSecond;
  };
  const std::string &op = q.op;

  if (op == "aten::index_put" || op == "aten::_unsafe_index_put") {
    bool mask = false;
    double maskSize = 0;
    for (const auto &[name, kind] : q.kinds)
      if (detail::startsWith(name, "indices.") && kind == 'b') {
        mask = true;
        maskSize = std::max(maskSize, numel(q.shapes.at(name)));
      }
    double updates = size("values");
    if (mask) // x[mask] = v: a prefix count of the mask.
      return dense(maskSize * maskSize, eagerScatter(maskSize),
                   "dense prefix count of the mask");
    auto result = q.kinds.find("result");
    bool floating = result != q.kinds.end() && result->second == 'f';
    if (intArg("accumulate", 0) && floating) {
      // A scatter-add of every update element (Indexing.cpp).
      double atomics = std::max(updates, 1.0);
      e.tcSeconds = stream(out) + atomics / r.atomicsPerSecond;
      e.eagerSeconds = r.eagerOpSeconds + eagerScatter(atomics);
      e.algorithm = "atomic scatter-add";
      return e;
    }
    int indexTensors = 0;
    for (const auto &[name, kind] : q.kinds)
      indexTensors += detail::startsWith(name, "indices.");
    if (!intArg("accumulate", 0) && indexTensors == 1) {
      // One index tensor, stored over (prim.scatter, Indexing.cpp): a copy
      // of the destination and the updates, as eager's; only the updates
      // where the destination is a buffer the graph updates in place.
      e.tcSeconds = stream(out) + stream(updates);
      e.eagerSeconds = r.eagerOpSeconds + eagerScatter(updates);
      e.algorithm = "scatter of the selected slices";
      return e;
    }
    return dense(updates * out, eagerScatter(updates),
                 "dense scatter (every update against every position)");
  }
  if (op == "aten::masked_scatter")
    return dense(out * out, eagerScatter(out),
                 "dense prefix count of the mask");
  if (op == "aten::nonzero_static") {
    double in = size("self");
    return dense(in * std::max(in, double(shape("result").empty()
                                              ? 1
                                              : shape("result")[0])),
                 stream(in), "dense compaction");
  }
  if (detail::startsWith(op, "aten::histogram"))
    return dense(size("self") * (out + 1), stream(size("self")),
                 "dense count (every value against every bin)");
  if (op == "aten::histc") {
    // Atomic adds of ones at the bins: with few bins, values collide.
    double values = size("self"), bins = std::max(out, 1.0);
    double contended = std::min(1.0, bins / 4096.0);
    double rate = r.contendedAtomicsPerSecond +
                  contended * (r.atomicsPerSecond -
                               r.contendedAtomicsPerSecond);
    e.tcSeconds = stream(values) / 2 + values / rate;
    e.eagerSeconds = r.eagerOpSeconds + stream(values) / 2 +
                     values / r.histogramValuesPerSecond;
    e.algorithm = "atomic counts in global memory";
    return e;
  }
  if (op == "aten::segment_reduce") {
    std::vector<int64_t> result = shape("result");
    int64_t axis = detail::normDim(intArg("axis", 0), result.size());
    double segments = result.empty() || axis < 0 ||
                              axis >= int64_t(result.size())
                          ? 1
                          : double(result[axis]);
    return dense(size("data") * segments, stream(size("data")),
                 "dense segment sum (every value against every segment)");
  }
  if (op == "aten::_embedding_bag_forward_only" ||
      op == "aten::_embedding_bag") {
    std::vector<int64_t> result = shape("result");
    double width = result.size() > 1 ? double(result.back()) : 1;
    return dense(size("indices") * out,
                 eagerScatter(size("indices") * width),
                 "dense bag sum (every index against every bag)");
  }
  if (op == "aten::put" || op == "aten::as_strided_scatter") {
    double updates = has("index") ? size("index") : size("src");
    return dense(updates * out, eagerScatter(updates),
                 "dense scatter (every update against every position)");
  }
  if (detail::startsWith(op, "aten::scatter") || op == "aten::index_reduce") {
    std::vector<int64_t> result = shape("result");
    int64_t dim = detail::normDim(intArg("dim", 0), result.size());
    double along = result.empty() || dim < 0 || dim >= int64_t(result.size())
                       ? 1
                       : double(result[dim]);
    double updates = op == "aten::index_reduce" ? size("source")
                                                : size("index");
    std::vector<int64_t> index = shape("index");
    if (op != "aten::index_reduce" && !index.empty() && dim >= 0 &&
        dim < int64_t(index.size()) && index[dim] == 1) {
      // One update per column: each position compared once, in the pass
      // that writes it (eager's scatter copies the destination too).
      e.tcSeconds = stream(out);
      e.eagerSeconds = r.eagerOpSeconds + eagerScatter(updates);
      e.algorithm = "scatter of one update per column";
      return e;
    }
    return dense(updates * along, eagerScatter(updates),
                 "dense scatter (every update against every position)");
  }
  static const char *const kSorts[] = {
      "aten::sort",   "aten::sort.stable",    "aten::topk",
      "aten::kthvalue", "aten::median",       "aten::median.dim",
      "aten::nanmedian", "aten::nanmedian.dim"};
  static const char *const kScans[] = {"aten::cumsum", "aten::cumprod",
                                       "aten::logcumsumexp", "aten::cummax",
                                       "aten::cummin"};
  bool sort = std::find_if(std::begin(kSorts), std::end(kSorts),
                           [&](const char *s) { return op == s; }) !=
              std::end(kSorts);
  bool scan = std::find_if(std::begin(kScans), std::end(kScans),
                           [&](const char *s) { return op == s; }) !=
              std::end(kScans);
  if (sort || scan) {
    const char *source = has("self") ? "self" : "input";
    std::vector<int64_t> in = shape(source);
    double elements = numel(in);
    double n = elements;
    bool alongDim = q.ints.count("dim") || op == "aten::sort" ||
                    op == "aten::topk" || op == "aten::kthvalue" ||
                    op == "aten::sort.stable" ||
                    op.find(".dim") != std::string::npos;
    bool contiguousRows = true;
    if (alongDim && !in.empty()) {
      int64_t dim = detail::normDim(intArg("dim", -1), in.size());
      n = dim >= 0 && dim < int64_t(in.size()) ? double(in[dim]) : 1;
      for (int64_t d = dim + 1; d >= 1 && d < int64_t(in.size()); ++d)
        contiguousRows &= in[d] == 1;
    }
    // cumsum's and cumprod's dense form is one reduction per element, a
    // block's on a GPU where the rows are contiguous; a long row is
    // blocked (limits::scanChunk).
    bool sumOrProduct = op == "aten::cumsum" || op == "aten::cumprod";
    bool blockRows = contiguousRows && sumOrProduct;
    double eager = scan ? stream(elements)
                        : std::max(r.eagerSortSeconds,
                                   elements * log2n(n) / r.sortUnitsPerSecond);
    int64_t length = static_cast<int64_t>(n);
    int64_t chunk = sumOrProduct ? limits::scanChunk(length) : 0;
    if (chunk)
      return dense(elements / n * double(limits::scanSteps(length, chunk)),
                   eager, "blocked scan (chunks' and totals' prefixes)",
                   blockRows ? 0 : double(chunk) + std::ceil(n / chunk));
    return dense(elements * n, eager,
                 scan ? "dense scan (every element against its row)"
                      : "dense sort (every element against its row)",
                 blockRows ? 0 : n);
  }
  if (op == "aten::adaptive_max_pool2d") {
    double windows = 1;
    for (const char *name : {"output_size.0", "output_size.1"})
      windows *= double(std::max<int64_t>(intArg(name, 1), 1));
    return dense(size("self") * windows, stream(size("self")),
                 "dense window search");
  }
  if (op == "aten::searchsorted.Tensor" || op == "aten::bucketize.Tensor") {
    double values = has("self") ? size("self") : size("input");
    std::vector<int64_t> edges =
        has("sorted_sequence") ? shape("sorted_sequence") : shape("boundaries");
    double n = edges.empty() ? 1 : double(edges.back());
    return dense(values * n, values * log2n(n) / r.sortUnitsPerSecond,
                 "dense search (every value against every edge)");
  }
  if (op == "aten::_fft_r2c" || op == "aten::_fft_c2c" ||
      op == "aten::_fft_c2r") {
    std::vector<int64_t> in = shape("self");
    double elements = std::max(numel(in), out);
    double lengths = 1, units = 0, longest = 0;
    for (int i = 0; q.ints.count("dim." + std::to_string(i)); ++i) {
      int64_t d = detail::normDim(q.ints.at("dim." + std::to_string(i)),
                                  in.size());
      double n = d >= 0 && d < int64_t(in.size()) ? double(in[d]) : 1;
      bool last = !q.ints.count("dim." + std::to_string(i + 1));
      if (last && op == "aten::_fft_c2r")
        n = double(intArg("last_dim_size", int64_t(n)));
      lengths *= n;
      units += log2n(n);
      longest = std::max(longest, n);
    }
    if (longest > double(limits::kMaxFFTSize))
      e.overCap = "signals longer than " +
                  std::to_string(limits::kMaxFFTSize);
    // Each transformed dimension: a product with an n x n DFT matrix, 4
    // real multiply-adds per element and matrix column (8 for complex
    // input and output).
    double perPoint = op == "aten::_fft_c2c" ? 8 : 4;
    e.tcSeconds = std::max(r.dftSeconds,
                           perPoint * elements * lengths / r.flopsPerSecond) +
                  stream(elements);
    e.eagerSeconds =
        r.eagerOpSeconds + elements * units / r.fftUnitsPerSecond;
    e.algorithm = "dense DFT products";
    return e;
  }
  return std::nullopt;
}

/// Why `q` is left to eager ("" when tc keeps it): beyond what tc's dense
/// decompositions take at all, or (with `compareTimes`) tc's code
/// estimated slower than eager's kernel by more than kMaxSlowdown.
inline std::string eagerReason(const Query &q, bool compareTimes = true) {
  std::optional<Estimate> e = estimate(q);
  if (!e)
    return "";
  if (!e->overCap.empty())
    return q.op + ": " + e->algorithm + " of " + e->overCap +
           " is more than tc's decompositions take";
  const char *where = q.target == Target::GPU ? "GPU" : "CPU";
  if (compareTimes && e->tcSeconds > kMaxSlowdown * e->eagerSeconds) {
    char text[360];
    std::snprintf(text, sizeof(text),
                  "%s: tc's %s would take about %.3g us on the %s, eager's "
                  "kernel and the split of tc's program about %.3g us (tc's "
                  "cost model)",
                  q.op.c_str(), e->algorithm.c_str(), e->tcSeconds * 1e6,
                  where, e->eagerSeconds * 1e6);
    return text;
  }
  return "";
}

} // namespace mlir::tc::cost

#endif // TC_CONVERSION_FXTOPRIM_COSTMODEL_H
