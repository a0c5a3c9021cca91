//===- Limits.h - The sizes tc's decompositions take -----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The one place that says how large an op tc decomposes may be. Several of
// tc's decompositions are dense (a sort compares every pair of a row's
// elements, a Fourier transform is a matrix product) or unrolled (a small
// factorization, a pooling window); above these sizes tc-decompose refuses
// the op and tc's Python support checks (tc.support, which reads this table
// through tc._runtime) leave it to eager before it is compiled.
//
// Header-only, with no MLIR dependency, so that tc._runtime (the light
// extension that runs cached graphs) can export the table.
//
//===----------------------------------------------------------------------===//

#ifndef TC_CONVERSION_FXTOPRIM_LIMITS_H
#define TC_CONVERSION_FXTOPRIM_LIMITS_H

#include <cstdint>

namespace mlir::tc::limits {

/// The most compare-and-select steps of one dense op: updates times
/// positions for a scatter, elements times row length for a sort or a scan.
/// A scatter of one update per column compares each position once and is
/// taken at any size.
inline constexpr int64_t kDenseSteps = int64_t(1) << 24;

/// A sum or product scan (cumsum, cumprod) of a row longer than this is
/// blocked (Decomposer::blockedScan): the row is cut into chunks of
/// scanChunk(n), and each element is the dense prefix within its chunk
/// (c steps) and the sum of the chunks' totals before it (n / c steps:
/// the totals are realized, one kernel). About 2 n^(3/2) steps a row
/// where the dense scan takes n^2: RoBERTa's position count over 512
/// tokens, 25K instead of 262K.
inline constexpr int64_t kDenseScanLength = 64;

/// The steps of one row of a sum or product scan of `n` chunked by `c`
/// (0: dense, unchunked): each element's prefix in its chunk and over the
/// chunks before it, and the chunks' totals.
inline constexpr int64_t scanSteps(int64_t n, int64_t c) {
  if (c == 0)
    return n * n;
  int64_t chunks = (n + c - 1) / c;
  return chunks * c * (c + chunks + 1);
}

/// The chunk of a sum or product scan of `n` (0: dense): the power of two
/// with the fewest scanSteps.
inline constexpr int64_t scanChunk(int64_t n) {
  if (n <= kDenseScanLength)
    return 0;
  int64_t best = 8;
  for (int64_t c = 16; c * c <= 4 * n; c *= 2)
    if (scanSteps(n, c) < scanSteps(n, best))
      best = c;
  return best;
}

/// The longest signal a Fourier transform takes: tc's transforms are
/// n x n matrix products (O(n^2) per signal where an FFT is O(n log n)),
/// level with an FFT library only for short signals. The CPU cliffs
/// benchmark measured a 4096-point rfft at 685x eager's time.
inline constexpr int64_t kMaxFFTSize = 128;

/// The largest matrix dimension a factorization or solve is unrolled for.
inline constexpr int64_t kMaxLinalgSize = 64;

/// The highest degree of the Hermite, Laguerre and Legendre polynomials
/// (their recurrences unroll).
inline constexpr int64_t kMaxPolynomialDegree = 64;

/// The largest max-pooling window (points): kernels unroll the window, and
/// the positions fit in i16.
inline constexpr int64_t kMaxPoolPositions = 256;

/// The most weights (input size x output size) of one dimension of an
/// anti-aliased resize: tc's is a product by a dense weight matrix, a
/// constant of the graph (a 1024 x 1024 one is 4 MB in f32).
inline constexpr int64_t kMaxResampleWeights = int64_t(1) << 20;

/// The most scores (queries x keys) per batch row and head of a CPU
/// attention tc writes as matrix products and a softmax (PyTorch's
/// decomposition of its CPU flash attention): the whole score matrix is
/// written and read again where PyTorch's kernel streams it in blocks. On
/// the 2-core CPU (float32, 2 x 12 heads of 64) the written-out attention
/// took 0.78x eager's time at 128 x 128 and 1.4-1.9x from 197 x 197 to
/// 1500 x 1500; above this many, the attention runs as PyTorch's kernel,
/// between the parts tc compiles.
inline constexpr int64_t kMaxCPUAttentionScores = 160 * 160;

struct NamedLimit {
  const char *name;
  int64_t value;
};

/// The limits by the names tc.support knows them by.
inline constexpr NamedLimit kNamedLimits[] = {
    {"DENSE_SCATTER_LIMIT", kDenseSteps},
    {"FFT_MAX_SIZE", kMaxFFTSize},
    {"LINALG_MAX_SIZE", kMaxLinalgSize},
    {"MAX_POLYNOMIAL_DEGREE", kMaxPolynomialDegree},
    {"MAX_POOL_POSITIONS", kMaxPoolPositions},
    {"MAX_RESAMPLE_WEIGHTS", kMaxResampleWeights},
    {"MAX_CPU_ATTENTION_SCORES", kMaxCPUAttentionScores},
};

} // namespace mlir::tc::limits

#endif // TC_CONVERSION_FXTOPRIM_LIMITS_H
