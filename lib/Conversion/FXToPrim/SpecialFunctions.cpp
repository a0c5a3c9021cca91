//===- SpecialFunctions.cpp - gamma, error and Bessel functions -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for ATen's special functions: `lgamma`, `digamma` (and
// `polygamma` of order 0), `erfc`, `erfcx`, `erfinv`, `ndtri`, `log_ndtr`,
// the modified Bessel functions I0, I1, K0, K1 (plain and exponentially
// scaled), the Bessel functions J0, J1, Y0, Y1, `spherical_bessel_j0`,
// `atan2` and `angle`.
//
// Each is elementwise prim arithmetic, so it fuses, differentiates and runs
// on every target like any other elementwise op. The approximations are
// the textbook ones: Lanczos' for the gamma function, the asymptotic series
// with recurrence and reflection for digamma, the continued fraction of
// erfc in its tail, Giles' polynomials refined by Newton steps for the
// inverse error functions, power series near zero and Hankel's asymptotic
// expansions far from it for the Bessel functions. They are evaluated in
// f64 whatever the dtype (the series cancel and recur; the result is
// rounded once), which keeps every dtype within PyTorch's tolerances of
// eager's results.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

static constexpr double kPi = 3.14159265358979323846;
static constexpr double kEulerGamma = 0.57721566490153286061;

std::optional<Decomposer::Result>
Decomposer::specialFunction(StringRef target) {
  static const llvm::StringSet<> names = {
      "aten::lgamma", "aten::digamma", "aten::polygamma", "aten::erfc",
      "aten::special_erfcx", "aten::erfinv", "aten::special_ndtri",
      "aten::special_log_ndtr", "aten::i0", "aten::special_i0e",
      "aten::special_i1", "aten::special_i1e",
      "aten::special_modified_bessel_i0", "aten::special_modified_bessel_i1",
      "aten::special_modified_bessel_k0", "aten::special_modified_bessel_k1",
      "aten::special_scaled_modified_bessel_k0",
      "aten::special_scaled_modified_bessel_k1", "aten::special_bessel_j0",
      "aten::special_bessel_j1", "aten::special_bessel_y0",
      "aten::special_bessel_y1", "aten::special_spherical_bessel_j0",
      "aten::atan2", "aten::angle"};
  StringRef base = target.split('.').first;
  if (base == "aten::special_hermite_polynomial_h" ||
      base == "aten::special_hermite_polynomial_he" ||
      base == "aten::special_laguerre_polynomial_l" ||
      base == "aten::special_legendre_polynomial_p")
    return orthogonalPolynomial(base.drop_front(strlen("aten::special_")));
  bool chebyshev = base.contains("chebyshev_polynomial_") &&
                   (target.ends_with("_polynomial_t") ||
                    target.ends_with("_polynomial_u") ||
                    target.ends_with("_polynomial_v") ||
                    target.ends_with("_polynomial_w") ||
                    target.ends_with(".n_scalar"));
  if (!names.contains(target) && !chebyshev)
    return std::nullopt;

  RankedTensorType outType = resultType();
  if (!isa<FloatType>(outType.getElementType()))
    return Result(fail("a result of " + quoted(outType)));
  RankedTensorType t = outType.clone(b.getF64Type());
  Value x = operands.empty() ? Value() : coerce(operands.back(), t);
  if (target == "aten::atan2" || chebyshev)
    x = coerce(operands[0], t);

  // f64 arithmetic on `t`.
  auto c = [&](double v) { return splat(t, v); };
  auto exp = [&](Value a) -> Value { return prim::ExpOp::create(b, loc, a); };
  auto log = [&](Value a) -> Value { return prim::LogOp::create(b, loc, a); };
  auto abs = [&](Value a) -> Value { return prim::AbsOp::create(b, loc, a); };
  auto sqrt = [&](Value a) -> Value {
    return prim::SqrtOp::create(b, loc, a);
  };
  auto neg = [&](Value a) -> Value { return prim::NegOp::create(b, loc, a); };
  auto inf = std::numeric_limits<double>::infinity();
  auto nan = std::numeric_limits<double>::quiet_NaN();
  auto done = [&](Value r) -> Result {
    // Half precision through f32: the CPU runtime has no f64-to-bf16
    // truncation routine (__truncdfbf2).
    Type elt = outType.getElementType();
    if (elt.isBF16() || elt.isF16())
      r = convert(r, b.getF32Type());
    return SmallVector<Value>{convert(r, elt)};
  };
  /// Horner's rule: coefficients from the highest power down.
  auto poly = [&](Value z, ArrayRef<double> coeffs) -> Value {
    Value r = c(coeffs.front());
    for (double k : coeffs.drop_front())
      r = add(mul(r, z), c(k));
    return r;
  };

  //===------------------------------------------------------------------===//
  // Gamma family
  //===------------------------------------------------------------------===//

  // log|Gamma(y)| for y >= 0.5: Lanczos' approximation (g = 7, 9 terms).
  auto lgammaRight = [&](Value y) -> Value {
    static const double p[] = {
        0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
        771.32342877765313,   -176.61502916214059,   12.507343278686905,
        -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
    Value z = sub(y, c(1));
    Value a = c(p[0]);
    for (int i = 1; i < 9; ++i)
      a = add(a, div(c(p[i]), add(z, c(i))));
    Value tt = add(z, c(7.5));
    return add(add(c(0.5 * std::log(2 * kPi)),
                   sub(mul(add(z, c(0.5)), log(tt)), tt)),
               log(a));
  };
  // sin(pi * x), reduced to [0, 2) first so large arguments keep their
  // precision.
  auto sinPi = [&](Value v) -> Value {
    Value r = sub(v, mul(c(2), prim::FloorOp::create(b, loc, mul(v, c(0.5)))));
    return prim::SinOp::create(b, loc, mul(r, c(kPi)));
  };
  auto isInf = [&](Value v) { return cmp(P::EQ, abs(v), c(inf)); };
  auto isNanV = [&](Value v) { return cmp(P::NE, v, v); };

  if (target == "aten::lgamma") {
    // Reflection below 0.5: log(pi / |sin(pi x)|) - lgamma(1 - x).
    Value left = cmp(P::LT, x, c(0.5));
    Value y = sel(left, sub(c(1), x), x);
    Value right = lgammaRight(y);
    Value reflected =
        sub(log(div(c(kPi), abs(sinPi(x)))), right);
    Value r = sel(left, reflected, right);
    Value pole = andI(cmp(P::LE, x, c(0)),
                      cmp(P::EQ, x, prim::FloorOp::create(b, loc, x)));
    return done(sel(orI(isInf(x), pole), c(inf), r));
  }

  // digamma(y) for y >= 0.5: six steps of the recurrence up, then the
  // asymptotic series.
  auto digammaRight = [&](Value y) -> Value {
    Value shift = c(0);
    for (int k = 0; k < 6; ++k)
      shift = add(shift, div(c(1), add(y, c(k))));
    Value z = add(y, c(6));
    Value z2 = div(c(1), mul(z, z));
    Value series =
        mul(z2, poly(z2, {-1.0 / 132, 1.0 / 240, -1.0 / 252, 1.0 / 120,
                          -1.0 / 12}));
    return sub(add(sub(log(z), div(c(0.5), z)), series), shift);
  };
  if (target == "aten::polygamma" && intArg("n", 0) != 0) {
    // Order n >= 1: (-1)^(n+1) n! zeta(n + 1, q), with Hurwitz's zeta by
    // Euler-Maclaurin (12 terms, then the integral and 12 Bernoulli
    // corrections at w = q + 12 >= 12). Below 0 through the reflection
    // psi_n(x) = (-1)^n psi_n(1 - x) - pi d^n/dx^n cot(pi x), whose
    // derivative is pi^n P_n(cot(pi x)) with P_0 = c and
    // P_k+1 = -(1 + c^2) P_k'. The poles give eager's signed infinity.
    int64_t n = intArg("n", 0);
    if (n < 0 || n > 30)
      return Result(fail("polygamma of order " + Twine(n) +
                         " is not supported"));
    double sOrder = n + 1;
    Value left = cmp(P::LE, x, c(0));
    Value q = sel(left, sub(c(1), x), x);
    auto powNeg = [&](Value base, double e) {
      return exp(mul(c(-e), log(base)));
    };
    constexpr int kTerms = 12;
    Value zeta = c(0);
    for (int j = 0; j < kTerms; ++j)
      zeta = add(zeta, powNeg(add(q, c(j)), sOrder));
    Value w = add(q, c(kTerms));
    zeta = add(zeta, div(powNeg(w, sOrder - 1), c(sOrder - 1)));
    zeta = add(zeta, mul(c(0.5), powNeg(w, sOrder)));
    // B_2k / (2k)!
    static const double bernoulli[] = {
        1.0 / 6,         -1.0 / 30,     1.0 / 42,          -1.0 / 30,
        5.0 / 66,        -691.0 / 2730, 7.0 / 6,           -3617.0 / 510,
        43867.0 / 798,   -174611.0 / 330, 854513.0 / 138,
        -236364091.0 / 2730};
    double rising = sOrder, factorial = 2;
    for (int k = 1; k <= 12; ++k) {
      zeta = add(zeta, mul(c(bernoulli[k - 1] / factorial * rising),
                           powNeg(w, sOrder + 2 * k - 1)));
      rising *= (sOrder + 2 * k - 1) * (sOrder + 2 * k);
      factorial *= (2.0 * k + 1) * (2.0 * k + 2);
    }
    double nFactorial = 1;
    for (int64_t k = 2; k <= n; ++k)
      nFactorial *= k;
    Value right = mul(c((n % 2 ? 1 : -1) * nFactorial), zeta);
    // The cotangent's n-th derivative polynomial, lowest power first.
    SmallVector<double> poly_ = {0, 1};
    for (int64_t k = 0; k < n; ++k) {
      SmallVector<double> derivative(poly_.size() + 1, 0.0);
      for (size_t i = 1; i < poly_.size(); ++i) {
        // d/dc (a c^i) = i a c^(i-1), times -(1 + c^2).
        derivative[i - 1] -= i * poly_[i];
        derivative[i + 1] -= i * poly_[i];
      }
      poly_ = std::move(derivative);
    }
    Value r2 = sub(x, mul(c(2), prim::FloorOp::create(b, loc,
                                                       mul(x, c(0.5)))));
    Value cot = div(prim::CosOp::create(b, loc, mul(r2, c(kPi))),
                    prim::SinOp::create(b, loc, mul(r2, c(kPi))));
    SmallVector<double> highFirst(poly_.rbegin(), poly_.rend());
    Value derivative =
        mul(c(std::pow(kPi, n + 1)), poly(cot, highFirst));
    Value reflected = sub(mul(c(n % 2 ? -1 : 1), right), derivative);
    Value r = sel(left, reflected, right);
    Value pole = andI(left, cmp(P::EQ, x, prim::FloorOp::create(b, loc, x)));
    r = sel(pole, c(n % 2 ? inf : -inf), r);
    // At +inf the limit is 0; eager's zeta gives NaN from order 2 on, and
    // tc keeps eager's value.
    return done(sel(cmp(P::EQ, x, c(inf)), c(n == 1 ? 0 : nan), r));
  }
  if (target == "aten::digamma" || target == "aten::polygamma") {
    // Reflection below 0.5: digamma(1 - x) - pi / tan(pi x). Eager gives
    // -inf at 0 and NaN at the negative integers.
    Value left = cmp(P::LT, x, c(0.5));
    Value right = digammaRight(sel(left, sub(c(1), x), x));
    Value piX = mul(x, c(kPi));
    Value cot = div(prim::CosOp::create(b, loc, piX),
                    sinPi(x));
    Value r = sel(left, sub(right, mul(c(kPi), cot)), right);
    Value integer = cmp(P::EQ, x, prim::FloorOp::create(b, loc, x));
    r = sel(andI(left, integer), c(nan), r);
    // -inf at +0, +inf at -0 (1 / -0.0 is -inf).
    r = sel(cmp(P::EQ, x, c(0)),
            sel(cmp(P::LT, div(c(1), x), c(0)), c(inf), c(-inf)), r);
    return done(sel(cmp(P::EQ, x, c(inf)), c(inf), r));
  }

  //===------------------------------------------------------------------===//
  // Error functions
  //===------------------------------------------------------------------===//

  // erf(a) for |a| < 2 by its Taylor series (45 terms: 1e-15 there; the
  // kernels' erf is f32 only).
  auto erfNear = [&](Value a) -> Value {
    Value a2 = neg(mul(a, a));
    Value term = a, sum = a;
    for (int n = 1; n < 45; ++n) {
      term = div(mul(term, a2), c(n));
      sum = add(sum, div(term, c(2 * n + 1)));
    }
    return mul(sum, c(2 / std::sqrt(kPi)));
  };
  // erfc(a) for a >= 0: 1 - erf(a) below 2, the continued fraction
  // exp(-a^2) / sqrt(pi) / (a + 1/2 / (a + 1 / (a + 3/2 / ...))) from 2 on
  // (60 terms: 1e-16). `scaled` leaves out the exp(-a^2) factor (erfcx).
  auto erfcRight = [&](Value a, bool scaled) -> Value {
    Value safe = prim::MaximumOp::create(b, loc, a, c(2));
    Value f = safe;
    for (int k = 60; k >= 1; --k)
      f = add(safe, div(c(k * 0.5), f));
    Value tail = div(c(1 / std::sqrt(kPi)), f);
    Value small = prim::MinimumOp::create(b, loc, a, c(2));
    Value near = sub(c(1), erfNear(small));
    if (scaled) {
      near = mul(exp(mul(small, small)), near);
    } else {
      tail = mul(exp(neg(mul(safe, safe))), tail);
    }
    Value r = sel(cmp(P::LT, a, c(2)), near, tail);
    if (scaled)
      r = sel(cmp(P::EQ, a, c(inf)), c(0), r);
    return r;
  };
  auto erfc = [&](Value v) -> Value {
    Value r = erfcRight(abs(v), /*scaled=*/false);
    return sel(cmp(P::LT, v, c(0)), sub(c(2), r), r);
  };
  if (target == "aten::erfc")
    return done(erfc(x));
  auto erfcx = [&](Value v) -> Value {
    Value r = erfcRight(abs(v), /*scaled=*/true);
    // erfcx(-a) = 2 exp(a^2) - erfcx(a).
    return sel(cmp(P::LT, v, c(0)), sub(mul(c(2), exp(mul(v, v))), r), r);
  };
  if (target == "aten::special_erfcx")
    return done(erfcx(x));
  if (target == "aten::special_log_ndtr") {
    // Below -1 through erfcx (the CDF underflows long before its log
    // does), else log1p of the upper tail.
    Value a = mul(x, c(-M_SQRT1_2));
    Value low = sub(log(mul(c(0.5), erfcx(a))), mul(c(0.5), mul(x, x)));
    Value high = prim::Log1pOp::create(
        b, loc, neg(mul(c(0.5), erfc(mul(x, c(M_SQRT1_2))))));
    return done(sel(cmp(P::LT, x, c(-1)), low, high));
  }
  // Giles' single-precision erfinv of y, given w = -log((1 - y)(1 + y)).
  auto giles = [&](Value y, Value w) -> Value {
    Value central = poly(sub(w, c(2.5)),
                         {2.81022636e-08, 3.43273939e-07, -3.5233877e-06,
                          -4.39150654e-06, 0.00021858087, -0.00125372503,
                          -0.00417768164, 0.246640727, 1.50140941});
    Value tail = poly(sub(sqrt(w), c(3)),
                      {-0.000200214257, 0.000100950558, 0.00134934322,
                       -0.00367342844, 0.00573950773, -0.0076224613,
                       0.00943887047, 1.00167406, 2.83297682});
    return mul(sel(cmp(P::LT, w, c(5)), central, tail), y);
  };
  if (target == "aten::erfinv") {
    // Giles' approximation, then two Newton steps on erf (through erfc
    // toward +-1, where erf has no digits left).
    Value w = neg(log(mul(sub(c(1), x), add(c(1), x))));
    Value r = giles(x, w);
    for (int i = 0; i < 2; ++i) {
      Value ar = abs(r);
      Value residual = sub(erfcRight(ar, false), sub(c(1), abs(x)));
      Value slope = mul(c(2 / std::sqrt(kPi)), exp(neg(mul(ar, ar))));
      Value step = div(residual, slope);
      // erfc falls as |r| grows: |r| moves by +step.
      Value sign = sel(cmp(P::LT, x, c(0)), c(-1), c(1));
      Value next = mul(sign, add(ar, step));
      r = sel(cmp(P::GT, slope, c(0)), next, r);
    }
    r = sel(cmp(P::EQ, x, c(1)), c(inf), r);
    r = sel(cmp(P::EQ, x, c(-1)), c(-inf), r);
    r = sel(cmp(P::GT, abs(x), c(1)), c(nan), r);
    return done(sel(cmp(P::EQ, x, c(0)), x, r));
  }
  if (target == "aten::special_ndtri") {
    // The lower tail q = min(p, 1 - p), the upper by symmetry. A first
    // guess from Giles' erfinv (with (1 - y)(1 + y) = 4q(1 - q) computed
    // from q: no cancellation near 0), or below 1e-5 from the tail's
    // asymptotics -sqrt(t - log t - log 2pi), t = -2 log q; then Newton
    // steps on log(ndtr(r)) = log(q), whose slope pdf/ndtr is
    // 2 / (sqrt(2 pi) erfcx(-r / sqrt(2))) (no underflow in the tail).
    Value upper = cmp(P::GT, x, c(0.5));
    Value q = sel(upper, sub(c(1), x), x);
    Value w = neg(log(mul(c(4), mul(q, sub(c(1), q)))));
    Value r = mul(c(M_SQRT2), giles(sub(mul(c(2), q), c(1)), w));
    Value tt = mul(c(-2), log(q));
    Value asymptotic = neg(sqrt(sub(sub(tt, log(tt)), c(std::log(2 * kPi)))));
    r = sel(cmp(P::LT, q, c(1e-5)), asymptotic, r);
    Value logQ = log(q);
    for (int i = 0; i < 4; ++i) {
      Value scaledTail = erfcx(mul(r, c(-M_SQRT1_2)));
      Value logCdf = sub(log(mul(c(0.5), scaledTail)), mul(c(0.5), mul(r, r)));
      Value ratio = mul(c(0.5 * std::sqrt(2 * kPi)), scaledTail);
      r = sub(r, mul(sub(logCdf, logQ), ratio));
    }
    r = sel(upper, neg(r), r);
    r = sel(cmp(P::EQ, x, c(0)), c(-inf), r);
    r = sel(cmp(P::EQ, x, c(1)), c(inf), r);
    return done(sel(orI(cmp(P::LT, x, c(0)), cmp(P::GT, x, c(1))), c(nan),
                    r));
  }

  //===------------------------------------------------------------------===//
  // Bessel functions
  //===------------------------------------------------------------------===//

  // sum_k (sign)^k (v^2 / 4)^k / (k! (k + nu)!) * weight(k), k < terms.
  auto series = [&](Value v, int nu, bool alternate, int terms,
                    function_ref<double(int)> weight) -> Value {
    Value q = mul(mul(v, v), c(alternate ? -0.25 : 0.25));
    Value term = c(1);
    double fact = 1;
    for (int j = 1; j <= nu; ++j)
      fact *= j;
    term = c(1 / fact);
    Value sum = mul(term, c(weight(0)));
    for (int k = 1; k < terms; ++k) {
      term = div(mul(term, q), c(double(k) * (k + nu)));
      sum = add(sum, mul(term, c(weight(k))));
    }
    return sum;
  };
  auto one = [](int) { return 1.0; };
  // Harmonic numbers and psi(k + 1) = H_k - gamma.
  auto harmonic = [](int k) {
    double h = 0;
    for (int j = 1; j <= k; ++j)
      h += 1.0 / j;
    return h;
  };
  // Hankel's asymptotic coefficients a_k(nu) = prod_{j<=k} (4 nu^2 -
  // (2j - 1)^2) / (k! 8^k).
  auto hankel = [](int nu, int k) {
    double a = 1;
    for (int j = 1; j <= k; ++j)
      a *= (4.0 * nu * nu - (2.0 * j - 1) * (2.0 * j - 1)) / (j * 8.0);
    return a;
  };
  // I_nu(a) e^-a for a >= 0: the series below 15, Hankel's expansion
  // e^a / sqrt(2 pi a) sum (-1)^k a_k / a^k above.
  auto scaledI = [&](Value a, int nu) -> Value {
    Value near = mul(series(a, nu, false, 60, one), exp(neg(a)));
    if (nu == 1)
      near = mul(near, mul(a, c(0.5)));
    Value safe = prim::MaximumOp::create(b, loc, a, c(15));
    Value inv = div(c(1), safe);
    SmallVector<double> coeffs;
    for (int k = 14; k >= 0; --k)
      coeffs.push_back((k % 2 ? -1 : 1) * hankel(nu, k));
    Value far = div(poly(inv, coeffs), sqrt(mul(c(2 * kPi), safe)));
    return sel(cmp(P::LT, a, c(15)), near, far);
  };
  bool isI = target == "aten::i0" || target == "aten::special_i0e" ||
             target == "aten::special_i1" ||
             target == "aten::special_i1e" ||
             target == "aten::special_modified_bessel_i0" ||
             target == "aten::special_modified_bessel_i1";
  if (isI) {
    int nu = target.contains("i1") ? 1 : 0;
    bool scaled = target.ends_with("e");
    Value a = abs(x);
    Value r = scaledI(a, nu);
    // Eager's I0 and I1 are NaN at +-inf (their exponential scaling
    // multiplies inf by 0); tc matches it.
    if (!scaled)
      r = sel(cmp(P::EQ, a, c(inf)), c(nan), mul(r, exp(a)));
    else
      r = sel(cmp(P::EQ, a, c(inf)), c(0), r);
    if (nu == 1) // odd
      r = sel(cmp(P::LT, x, c(0)), neg(r), r);
    return done(r);
  }
  if (target == "aten::special_modified_bessel_k0" ||
      target == "aten::special_modified_bessel_k1" ||
      target == "aten::special_scaled_modified_bessel_k0" ||
      target == "aten::special_scaled_modified_bessel_k1") {
    // Series (with the logarithm's I_nu term) up to 8, Hankel's expansion
    // sqrt(pi / 2a) e^-a sum a_k / a^k above. Infinite at 0, NaN below.
    int nu = target.ends_with("k1") ? 1 : 0;
    bool scaled = target.contains("scaled");
    Value safeNear = prim::MinimumOp::create(b, loc, x, c(8));
    Value logHalf = log(mul(safeNear, c(0.5)));
    Value near;
    if (nu == 0) {
      near = add(mul(neg(add(logHalf, c(kEulerGamma))),
                     series(safeNear, 0, false, 50, one)),
                 series(safeNear, 0, false, 50, harmonic));
    } else {
      Value i1 = mul(mul(safeNear, c(0.5)), series(safeNear, 1, false, 50,
                                                   one));
      Value psiSum = series(safeNear, 1, false, 50, [&](int k) {
        return harmonic(k) + harmonic(k + 1) - 2 * kEulerGamma;
      });
      near = sub(add(div(c(1), safeNear), mul(logHalf, i1)),
                 mul(mul(safeNear, c(0.25)), psiSum));
    }
    if (scaled)
      near = mul(near, exp(safeNear));
    Value safe = prim::MaximumOp::create(b, loc, x, c(8));
    Value inv = div(c(1), safe);
    SmallVector<double> coeffs;
    // The expansion's terms shrink up to k = 16 at a = 8 (~2e-8).
    for (int k = 16; k >= 0; --k)
      coeffs.push_back(hankel(nu, k));
    Value far = mul(poly(inv, coeffs), sqrt(div(c(kPi / 2), safe)));
    if (!scaled)
      far = mul(far, exp(neg(safe)));
    Value r = sel(cmp(P::LE, x, c(8)), near, far);
    r = sel(cmp(P::EQ, x, c(0)), c(inf), r);
    r = sel(cmp(P::EQ, x, c(inf)), c(0), r);
    return done(sel(cmp(P::LT, x, c(0)), c(nan), r));
  }
  if (target == "aten::special_bessel_j0" ||
      target == "aten::special_bessel_j1" ||
      target == "aten::special_bessel_y0" ||
      target == "aten::special_bessel_y1") {
    // Series up to 20 (f64 keeps their cancellation below 1e-9), Hankel's
    // expansion sqrt(2 / (pi a)) (P cos chi - Q sin chi) above, chi = a -
    // (nu / 2 + 1/4) pi. J1 is odd; Y0 and Y1 are NaN below 0, -inf at 0.
    int nu = target.ends_with("1") ? 1 : 0;
    bool isY = target.contains("_y");
    Value a = abs(x);
    Value safeNear = prim::MinimumOp::create(b, loc, a, c(20));
    Value jNear = series(safeNear, nu, true, 70, one);
    if (nu == 1)
      jNear = mul(jNear, mul(safeNear, c(0.5)));
    Value near = jNear;
    if (isY) {
      Value logHalf = log(mul(safeNear, c(0.5)));
      if (nu == 0) {
        // (2/pi) [(ln(a/2) + gamma) J0 - sum (-q)^k H_k / (k!)^2], q = a^2/4.
        near = mul(c(2 / kPi),
                   sub(mul(add(logHalf, c(kEulerGamma)), jNear),
                       series(safeNear, 0, true, 70, harmonic)));
      } else {
        // -2/(pi a) + (2/pi) ln(a/2) J1 - (1/pi) (a/2) sum (-q)^k
        // (psi(k+1) + psi(k+2)) / (k! (k+1)!).
        Value psiSum = series(safeNear, 1, true, 70, [&](int k) {
          return harmonic(k) + harmonic(k + 1) - 2 * kEulerGamma;
        });
        near = sub(add(div(c(-2 / kPi), safeNear),
                       mul(c(2 / kPi), mul(logHalf, jNear))),
                   mul(c(1 / kPi), mul(mul(safeNear, c(0.5)), psiSum)));
      }
    }
    Value safe = prim::MaximumOp::create(b, loc, a, c(20));
    Value inv = div(c(1), safe);
    Value inv2 = mul(inv, inv);
    SmallVector<double> pc, qc;
    for (int k = 12; k >= 0; --k) {
      pc.push_back((k % 2 ? -1 : 1) * hankel(nu, 2 * k));
      qc.push_back((k % 2 ? -1 : 1) * hankel(nu, 2 * k + 1));
    }
    Value pSum = poly(inv2, pc), qSum = mul(poly(inv2, qc), inv);
    Value chi = sub(safe, c((nu * 0.5 + 0.25) * kPi));
    Value cosChi = prim::CosOp::create(b, loc, chi);
    Value sinChi = prim::SinOp::create(b, loc, chi);
    Value amp = sqrt(div(c(2 / kPi), safe));
    Value far = isY ? mul(amp, add(mul(pSum, sinChi), mul(qSum, cosChi)))
                    : mul(amp, sub(mul(pSum, cosChi), mul(qSum, sinChi)));
    far = sel(cmp(P::EQ, a, c(inf)), c(0), far);
    Value r = sel(cmp(P::LE, a, c(20)), near, far);
    if (isY) {
      r = sel(cmp(P::EQ, x, c(0)), c(-inf), r);
      return done(sel(cmp(P::LT, x, c(0)), c(nan), r));
    }
    if (nu == 1)
      r = sel(cmp(P::LT, x, c(0)), neg(r), r);
    return done(r);
  }
  if (target == "aten::special_spherical_bessel_j0") {
    // sin(x) / x, 1 at 0 (a short series below 1e-3 avoids 0/0).
    Value x2 = mul(x, x);
    Value small = poly(x2, {1.0 / 120, -1.0 / 6, 1});
    Value r = div(prim::SinOp::create(b, loc, x), x);
    r = sel(cmp(P::LT, abs(x), c(1e-3)), small, r);
    return done(sel(isInf(x), c(0), r));
  }

  //===------------------------------------------------------------------===//
  // Angles
  //===------------------------------------------------------------------===//

  // Whether v is negative, -0.0 included (1 / -0.0 is -inf).
  auto negative = [&](Value v) -> Value {
    return orI(cmp(P::LT, v, c(0)),
               andI(cmp(P::EQ, v, c(0)), cmp(P::LT, div(c(1), v), c(0))));
  };
  auto copySign = [&](Value magnitude, Value signOf) -> Value {
    return sel(negative(signOf), neg(magnitude), magnitude);
  };
  if (target == "aten::atan2") {
    // atan(y / x), moved by pi into x's half plane; the signed zeros and
    // the infinities as C's atan2 gives them.
    Value y = coerce(operands[0], t), xv = coerce(operands[1], t);
    Value base = prim::AtanOp::create(b, loc, div(y, xv));
    Value left = negative(xv);
    Value r = sel(left, add(base, copySign(c(kPi), y)), base);
    Value zeros = andI(cmp(P::EQ, y, c(0)), cmp(P::EQ, xv, c(0)));
    r = sel(zeros, copySign(sel(left, c(kPi), c(0)), y), r);
    Value infs = andI(isInf(y), isInf(xv));
    r = sel(infs, copySign(sel(left, c(0.75 * kPi), c(0.25 * kPi)), y), r);
    return done(r);
  }
  if (target == "aten::angle") {
    // Of a real number: pi below 0, else 0; NaN stays NaN.
    Value r = sel(cmp(P::LT, x, c(0)), c(kPi), c(0));
    return done(sel(isNanV(x), x, r));
  }
  //===------------------------------------------------------------------===//
  // Chebyshev polynomials
  //===------------------------------------------------------------------===//

  if (chebyshev) {
    // Closed forms in the angle: with x = cos(theta) (|x| <= 1) or
    // |x| = cosh(phi) (|x| > 1), T_n = cos(n theta), U_n = sin((n + 1)
    // theta) / sin(theta), V_n = cos((n + 1/2) theta) / cos(theta / 2),
    // W_n = sin((n + 1/2) theta) / sin(theta / 2), and the hyperbolic forms
    // with the parity of n (V and W trade places) below -1. The degree is
    // eager's: n truncated, 0 below 0; n = 0, 1 and x = +-1 as eager
    // special-cases them. The shifted polynomials take 2x - 1.
    char kind = base.back();
    if (base.contains("shifted"))
      x = sub(mul(c(2), x), c(1));
    Value n = operands.size() > 1
                  ? coerce(operands[1], t)
                  : c(floatArg("n", 0));
    n = sel(cmp(P::LE, n, c(-1)), c(-1),
            prim::FloorOp::create(b, loc, abs(n)));
    Value half = c(0.5);
    Value odd = cmp(P::EQ,
                    sub(n, mul(c(2), prim::FloorOp::create(b, loc,
                                                           mul(n, half)))),
                    c(1));
    Value ax = abs(x);
    Value inside = cmp(P::LE, ax, c(1));
    Value theta = prim::AcosOp::create(
        b, loc, prim::MinimumOp::create(
                    b, loc, prim::MaximumOp::create(b, loc, x, c(-1)), c(1)));
    // phi = acosh(|x|) = log(|x| + sqrt(x^2 - 1)), for |x| > 1.
    Value big = prim::MaximumOp::create(b, loc, ax, c(1));
    Value phi = log(add(big, sqrt(mul(sub(big, c(1)), add(big, c(1))))));
    auto cosh = [&](Value v) {
      return mul(half, add(exp(v), exp(neg(v))));
    };
    auto sinh = [&](Value v) {
      return mul(half, sub(exp(v), exp(neg(v))));
    };
    auto cosF = [&](Value v) -> Value {
      return prim::CosOp::create(b, loc, v);
    };
    auto sinF = [&](Value v) -> Value {
      return prim::SinOp::create(b, loc, v);
    };
    Value np = add(n, c(1)), nh = add(n, half);
    Value trig, hyper, hyperMirror;
    switch (kind) {
    case 't':
      trig = cosF(mul(n, theta));
      hyper = hyperMirror = cosh(mul(n, phi));
      break;
    case 'u':
      trig = div(sinF(mul(np, theta)), sinF(theta));
      hyper = hyperMirror = div(sinh(mul(np, phi)), sinh(phi));
      break;
    case 'v':
      trig = div(cosF(mul(nh, theta)), cosF(mul(half, theta)));
      hyper = div(cosh(mul(nh, phi)), cosh(mul(half, phi)));
      hyperMirror = div(sinh(mul(nh, phi)), sinh(mul(half, phi)));
      break;
    default: // 'w'
      trig = div(sinF(mul(nh, theta)), sinF(mul(half, theta)));
      hyper = div(sinh(mul(nh, phi)), sinh(mul(half, phi)));
      hyperMirror = div(cosh(mul(nh, phi)), cosh(mul(half, phi)));
      break;
    }
    Value negOdd = sel(odd, neg(hyperMirror), hyperMirror);
    Value r = sel(inside, trig, sel(cmp(P::GT, x, c(0)), hyper, negOdd));
    // x = +-1, where the angle forms divide 0 by 0.
    Value twoN1 = add(mul(c(2), n), c(1));
    Value atOne, atMinusOne;
    switch (kind) {
    case 't':
      atOne = c(1);
      atMinusOne = sel(odd, c(-1), c(1));
      break;
    case 'u':
      atOne = np;
      atMinusOne = sel(odd, neg(np), np);
      break;
    case 'v':
      atOne = c(1);
      atMinusOne = sel(odd, neg(twoN1), twoN1);
      break;
    default:
      atOne = twoN1;
      atMinusOne = sel(odd, c(-1), c(1));
      break;
    }
    r = sel(cmp(P::EQ, x, c(1)), atOne, r);
    r = sel(cmp(P::EQ, x, c(-1)), atMinusOne, r);
    // Degrees 0 and 1 (exact, NaN-free as in eager), and below 0.
    Value first = kind == 't' ? x
                  : kind == 'u' ? mul(c(2), x)
                  : kind == 'v' ? sub(mul(c(2), x), c(1))
                                : add(mul(c(2), x), c(1));
    r = sel(cmp(P::EQ, n, c(1)), first, r);
    r = sel(cmp(P::EQ, n, c(0)), c(1), r);
    return done(sel(cmp(P::LT, n, c(0)), c(0), r));
  }

  llvm_unreachable("every name is handled above");
}

/// Hermite (H and He), Laguerre and Legendre polynomials of degree n: eager's
/// three-term recurrences in the result's type, unrolled to
/// kMaxPolynomialDegree steps, each step kept only where it is below the
/// element's degree (and, for Laguerre and Legendre, while the value is not
/// NaN, as eager stops there). The degree is eager's integer cast of n (0
/// below 0 and for NaN or infinite n). Larger degrees are not computed
/// here: the backend guards them (tc.backend's value guards rerun the graph
/// in eager when some n exceeds the bound).
std::optional<Decomposer::Result>
Decomposer::orthogonalPolynomial(StringRef kind) {
  RankedTensorType type = resultType();
  if (!isa<FloatType>(type.getElementType()) ||
      type.getElementType().isBF16() || type.getElementType().isF16())
    return Result(fail("a result of " + quoted(type)));
  auto c = [&](double v) { return splat(type, v); };
  // x and n: tensors, or one of them a number.
  Value x, n;
  if (operands.size() == 2) {
    x = coerce(operands[0], type);
    n = coerce(operands[1], type);
  } else if (operands.size() == 1 && arg("n")) {
    x = coerce(operands[0], type);
    n = c(floatArg("n", 0));
  } else if (operands.size() == 1 && arg("x")) {
    x = c(floatArg("x", 0));
    n = coerce(operands[0], type);
  } else {
    return Result(fail("expected x and n"));
  }
  Value finite = cmp(P::LT, prim::AbsOp::create(b, loc, n),
                     c(std::numeric_limits<double>::infinity()));
  Value degree = sel(finite, truncate(n), c(-1));
  bool hermite = kind.starts_with("hermite");
  bool physicists = kind == "hermite_polynomial_h";
  bool stopsAtNan = !hermite;
  Value first = physicists ? add(x, x)
                : kind == "laguerre_polynomial_l" ? sub(c(1), x)
                                                  : x;
  Value p = c(1), q = first;
  for (int64_t k = 1; k < kMaxPolynomialDegree; ++k) {
    Value kk = c(double(k));
    Value r;
    if (physicists) // eager's k runs over 2, 4, ...: 2k here
      r = sub(mul(add(x, x), q), mul(c(2.0 * k), p));
    else if (kind == "hermite_polynomial_he")
      r = sub(mul(x, q), mul(kk, p));
    else if (kind == "laguerre_polynomial_l")
      r = div(sub(mul(add(c(2.0 * k), sub(c(1), x)), q), mul(kk, p)),
              c(k + 1.0));
    else
      r = div(sub(mul(mul(c(2.0 * k + 1), x), q), mul(kk, p)), c(k + 1.0));
    Value active = cmp(P::LT, kk, degree);
    if (stopsAtNan)
      active = andI(active, prim::BitwiseNotOp::create(b, loc, isNan(q)));
    p = sel(active, q, p);
    q = sel(active, r, q);
  }
  Value result = sel(cmp(P::EQ, degree, c(0)), c(1), q);
  if (kind == "laguerre_polynomial_l")
    result = sel(cmp(P::EQ, prim::AbsOp::create(b, loc, x), c(0)), c(1),
                 result);
  if (kind == "legendre_polynomial_p") {
    // x = +-1: 1, or -1 for x = -1 and an odd degree.
    Value odd = cmp(P::NE,
                    sub(degree, mul(c(2), prim::FloorOp::create(
                                             b, loc, mul(degree, c(0.5))))),
                    c(0));
    Value unit = cmp(P::EQ, prim::AbsOp::create(b, loc, x), c(1));
    Value sign = sel(andI(cmp(P::LT, x, c(0)), odd), c(-1), c(1));
    result = sel(unit, sign, result);
  }
  return Result(
      SmallVector<Value>{sel(cmp(P::LT, degree, c(0)), c(0), result)});
}
