#pragma once
// Special functions in double for the elementwise kernels of torch::special's names: the
// modified Bessel functions I0 and I1 (and their exponentially scaled forms), erfcx, the
// standard normal CDF in linear and log space and its inverse, sinc and entr. f32 inputs are
// computed here too and rounded once. Scalar code: none of these is on a hot path that SIMD
// would serve, and double keeps every one of them within a few ulps of the true value.

#include "gamma_functions.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace ember::cpu::special {

// The constants gamma_functions.hpp already defines, shared rather than written again.
using gamma::kInf;
using gamma::kNaN;
using gamma::kPi;
inline constexpr double kSqrt2 = 1.41421356237309504880;
inline constexpr double kInvSqrtPi = 0.56418958354775628695;   // 1 / sqrt(pi)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

// ---- modified Bessel functions of the first kind, orders 0 and 1 ----------------------------
// Below kBesselSeriesEnd the power series (all terms positive: no cancellation, about 60 terms
// at the end); above it the asymptotic expansion e^x / sqrt(2 pi x) * sum_k c_k / x^k, whose
// smallest term there is below 1e-17. The scaled forms (I0e = e^-|x| I0) come from the same
// sums without the exponential, so they never overflow.
inline constexpr double kBesselSeriesEnd = 30;

/// 1 / (k (k + order)) for k < kBesselTerms: the series' term ratios as products (a division
/// per term made i0e 20% slower than libtorch's Chebyshev form). The series ends by k = 70 at
/// x = 30.
inline constexpr int kBesselTerms = 128;
template <int Order>
inline constexpr auto kBesselRatios = [] {
  std::array<double, kBesselTerms> r{};
  for (int k = 1; k < kBesselTerms; ++k) r[k] = 1.0 / (static_cast<double>(k) * (k + Order));
  return r;
}();

/// I_order(|x|) * e^-|x| when `scaled`, else I_order(|x|); order 0 or 1, x finite.
inline double bessel_i_abs(int order, double x, bool scaled) {
  const double ax = std::fabs(x);
  if (ax <= kBesselSeriesEnd) {
    const double q = ax * ax / 4;
    const auto& ratio = order == 0 ? kBesselRatios<0> : kBesselRatios<1>;
    double term = order == 0 ? 1.0 : ax / 2, sum = term;
    for (int k = 1; k < kBesselTerms && term > sum * 1e-17; ++k) {
      term *= q * ratio[k];
      sum += term;
    }
    return scaled ? sum * std::exp(-ax) : sum;
  }
  // c_k = c_(k-1) ((2k - 1)^2 - 4 order^2) / (8 k x), c_0 = 1 (Abramowitz and Stegun 9.7.1).
  const double mu = 4.0 * order * order;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    const double odd = 2.0 * k - 1;
    const double next = term * (odd * odd - mu) / (8.0 * k * ax);
    if (std::fabs(next) >= std::fabs(term)) break;  // the series diverges from here on
    term = next;
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-17) break;
  }
  const double scaled_value = sum * kInvSqrt2Pi / std::sqrt(ax);  // 2 pi x would overflow past 2.9e307
  if (scaled) return scaled_value;
  if (ax > 714) return kInf;  // I0(713.99) and I1(713.99) are the last finite values
  // e^x as e^(x/2) twice (x/2 is exact), so that it overflows only where I does; one
  // exponential of x - log(sqrt(2 pi x)) would carry that sum's rounding (4e-14 at 700).
  const double half = std::exp(ax / 2);
  return half * scaled_value * half;
}

inline double i0(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return kInf;
  return bessel_i_abs(0, x, false);
}
inline double i0e(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0;
  return bessel_i_abs(0, x, true);
}
/// I1 is odd: I1(-x) = -I1(x).
inline double i1(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x;
  return std::copysign(bessel_i_abs(1, x, false), x);
}
inline double i1e(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return std::copysign(0.0, x);
  return std::copysign(bessel_i_abs(1, x, true), x);
}

// ---- erfcx and the normal distribution -------------------------------------------------------
/// e^(x^2) with x^2 carried to twice double's precision (x^2 = hi + lo exactly, by fma), so
/// that the rounding of x^2 (relative 1e-16, absolute 4e-14 at x = 20) does not reach the
/// result: e^hi (1 + lo).
inline double exp_x_squared(double x) {
  const double hi = x * x, lo = std::fma(x, x, -hi);
  return std::exp(hi) * (1 + lo);
}

/// erfcx(x) = e^(x^2) erfc(x), the scaled complementary error function: finite and smooth
/// where erfc underflows (x > 26) and e^(x^2) overflows.
inline double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x < 0) {
    if (x < -26.7) return kInf;  // 2 e^(x^2) overflows
    return 2 * exp_x_squared(x) - erfcx(-x);
  }
  if (x < 26) return exp_x_squared(x) * std::erfc(x);
  if (std::isinf(x)) return 0;
  // Asymptotic: 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k; at x >= 26 the terms
  // shrink by k / 676 each, below 1e-17 after eight.
  const double r = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 20 && std::fabs(term) > 1e-18; ++k) {
    term *= -(2.0 * k - 1) * r;
    sum += term;
  }
  return kInvSqrtPi / x * sum;
}

/// erfc(x / sqrt 2), with the rounding of x / sqrt 2 put back to first order. erfc's relative
/// sensitivity to its argument z is about 2z, so z's rounding (relative 1e-16) would cost
/// 2 z^2 1e-16 of the result: 1e-13 at x = 30. The product's error comes from fma and the
/// low half of 1 / sqrt 2; erfc(z + d) = erfc(z) - 2 / sqrt(pi) e^(-z^2) d.
inline double erfc_x_over_sqrt2(double x) {
  constexpr double kHi = 0.7071067811865476, kLo = -4.8336466567264565e-17;  // 1 / sqrt 2 = kHi + kLo
  const double z = x * kHi;
  const double d = std::fma(x, kHi, -z) + x * kLo;
  const double e = std::erfc(z);
  if (!std::isfinite(z)) return e;
  return e - 2 * kInvSqrtPi * std::exp(-z * z) * d;
}

/// Phi(x), the standard normal CDF: erfc(-x / sqrt 2) / 2, accurate relative to the result in
/// the lower tail (1 - erfc would cancel).
inline double ndtr(double x) { return 0.5 * erfc_x_over_sqrt2(-x); }

/// log Phi(x). Upper side: log1p of the small upper tail; lower side (x < -1): through erfcx,
/// log(erfcx(-x / sqrt 2) / 2) - x^2 / 2, finite down to -1e154 and beyond.
inline double log_ndtr(double x) {
  if (std::isnan(x)) return x;
  if (x > -1) return std::log1p(-0.5 * erfc_x_over_sqrt2(x));
  if (x == -kInf) return -kInf;
  return std::log(0.5 * erfcx(-x / kSqrt2)) - 0.5 * x * x;
}

/// Phi^-1(p), the standard normal quantile (probit). Abramowitz and Stegun 26.2.23 (error below
/// 4.5e-4) gives the start, then Halley steps on Phi(x) - p converge cubically. The residual is
/// taken where it keeps its relative precision: in the tail as Phi(x) - p from erfc, near the
/// centre as erf(x / sqrt 2) / 2 - (p - 1/2), where p - 1/2 is exact.
inline double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  if (p == 0.5) return 0;
  const bool upper = p > 0.5;
  const double q = upper ? 1 - p : p;  // exact for p in [1/2, 1] (Sterbenz)
  const double t = std::sqrt(-2 * std::log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  if (q < 1e-300) {
    // Far in the tail Phi(x) and q are subnormal or nearly so, and their difference has lost
    // its digits: Newton steps on log Phi(x) - log q instead, whose derivative is
    // phi / Phi = sqrt(2 / pi) / erfcx(-x / sqrt 2) (quadratic; ~38.5 >= |x| >= 37 here).
    const double log_q = std::log(q);
    for (int i = 0; i < 12; ++i) {
      const double step = (log_ndtr(x) - log_q) * erfcx(-x / kSqrt2) / (2 * kInvSqrt2Pi);
      x -= step;
      if (std::fabs(step) <= 1e-15 * std::fabs(x)) break;
    }
    return upper ? -x : x;
  }
  const bool centre = q > 0.25;
  const double d = q - 0.5;  // exact for q in [1/4, 1/2]
  for (int i = 0; i < 8; ++i) {
    const double residual = centre ? 0.5 * std::erf(x / kSqrt2) - d : ndtr(x) - q;
    const double u = residual / (kInvSqrt2Pi * std::exp(-0.5 * x * x));
    const double step = u / (1 + 0.5 * x * u);
    x -= step;
    if (std::fabs(step) <= 1e-17 * std::fabs(x)) break;
  }
  return upper ? -x : x;
}

// ---- sinc and entr -----------------------------------------------------------------------------
/// sin(pi x) / (pi x), 1 at 0. sin(pi x) is taken at x's distance r from the nearest integer k
/// (exact), as (-1)^k sin(pi r): integers give exact zeros at any magnitude, where sin of the
/// rounded product pi x gives 1e-16-sized noise.
inline double sinc(double x) {
  if (x == 0) return 1;
  if (!std::isfinite(x)) return kNaN;  // as PyTorch's: sin(inf) is NaN
  const double k = std::nearbyint(x), r = x - k;
  if (r == 0) return 0;  // +0 at every nonzero integer (no sign from the parity of k)
  const double s = std::sin(kPi * r);
  const bool odd = std::fmod(k, 2.0) != 0;
  return (odd ? -s : s) / (kPi * x);
}

/// -x log(x): 0 at 0, -inf below 0 (PyTorch's and SciPy's).
inline double entr(double x) {
  if (std::isnan(x)) return x;
  if (x > 0) return -x * std::log(x);
  if (x == 0) return 0;
  return -kInf;
}

}  // namespace ember::cpu::special
