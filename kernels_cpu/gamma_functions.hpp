#pragma once
// The log-gamma function and the polygamma functions psi^(n) (n = 0: digamma) in double, for
// the lgamma and digamma/polygamma kernels (f32 inputs are computed here too and rounded
// once). Scalar code: these are not on any hot path that SIMD would serve.

#include <cmath>
#include <cstdint>
#include <limits>

namespace ember::cpu::gamma {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// ln|Gamma(x)|. glibc's lgamma writes the global signgam (a data race between pool threads);
/// lgamma_r returns the sign through its argument instead.
inline double log_gamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

/// psi(x) = Gamma'(x) / Gamma(x), as PyTorch's: -inf at +0 and +inf at -0, NaN at the other
/// poles (negative integers) and at -inf.
inline double digamma(double x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::signbit(x) ? kInf : -kInf;
  if (x == kInf) return kInf;
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;  // a pole (and -inf)
    // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x), tan taken at x's distance from the
    // nearest integer (period 1; the subtraction is exact), which keeps large |x| and x near a
    // pole (-1e-40) accurate.
    return digamma(1 - x) - kPi / std::tan(kPi * (x - std::nearbyint(x)));
  }
  double shift = 0;  // psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series
  while (x < 10) {
    shift -= 1 / x;
    x += 1;
  }
  // ln x - 1/(2x) - sum_k B_2k / (2k x^2k), B_2k the Bernoulli numbers (k = 1..7).
  const double z = 1 / (x * x);
  const double series =
      z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return shift + std::log(x) - 0.5 / x - series;
}

/// Below this, the Hurwitz zeta function of a negative q is NaN: its series would need more
/// than a million terms before the asymptotic tail applies.
inline constexpr double kLowestZetaArgument = -1e6;

/// The Hurwitz zeta function zeta(s, q) = sum_k (q + k)^-s for an integer s >= 2 and any q:
/// the first terms summed until q + k >= 10, then the Euler-Maclaurin tail. +inf at the poles
/// (q a non-positive integer), NaN at q = -inf (and other q below kLowestZetaArgument), 0 at
/// q = +inf.
inline double hurwitz_zeta(int64_t s, double q) {
  if (std::isnan(q)) return q;
  if (q == kInf) return 0;
  if (q == -kInf) return kNaN;
  if (q <= 0 && q == std::floor(q)) return kInf;  // a pole
  if (q < kLowestZetaArgument) return kNaN;
  const double sd = static_cast<double>(s);
  double sum = 0, a = q;
  for (int k = 0; k < 9 || a < 10; ++k, a += 1) {
    const double term = std::pow(a, -sd);
    sum += term;
    // (Not when the terms underflow to 0 for a huge q: the tail below carries the value then.)
    if (a >= 10 && sum != 0 && std::fabs(term) <= 1e-17 * std::fabs(sum)) return sum;
  }
  // The terms from a on (Euler-Maclaurin): a^(1-s) / (s-1) + a^-s / 2
  // + sum_j B_2j / (2j)! s (s+1) ... (s+2j-2) a^(-s-2j+1), B_2j the Bernoulli numbers.
  static constexpr double kB2jOverFactorial[] = {1.0 / 12,       -1.0 / 720,     1.0 / 30240,
                                                 -1.0 / 1209600, 1.0 / 47900160, -691.0 / 1307674368000.0,
                                                 1.0 / 74724249600.0};
  double tail = std::pow(a, 1 - sd) / (sd - 1) + 0.5 * std::pow(a, -sd);
  double rising = sd, power = std::pow(a, -sd - 1);  // s (s+1) ... (s+2j-2), a^(-s-2j+1)
  for (int j = 0; j < 7; ++j) {
    tail += kB2jOverFactorial[j] * rising * power;
    rising *= (sd + 2 * j + 1) * (sd + 2 * j + 2);
    power /= a * a;
  }
  return sum + tail;
}

/// The highest order that polygamma reflects for a negative x: pi^(n+1) times the largest
/// coefficient of the cot derivative (about 2^n n!) stays finite up to here.
inline constexpr int64_t kMaxReflectedOrder = 100;

/// pi^(n+1) times the n-th derivative of cot at pi r, for 0 < |r| <= 1/2: P_n(cot(pi r)), where
/// P_0(c) = c and P_(k+1)(c) = -(1 + c^2) P_k'(c). P_n has only powers of c of n + 1's parity,
/// all with the sign (-1)^n, so it is evaluated as c^((n+1) mod 2) Q(c^2) without
/// cancellation. n <= kMaxReflectedOrder.
inline double pi_cot_derivative(int64_t n, double r) {
  double p[kMaxReflectedOrder + 3] = {0, 1};  // P_0 = c; coefficient k of c^k
  for (int64_t k = 0; k < n; ++k) {
    // P' then times -(1 + c^2): degree k + 1 -> k + 2.
    double next[kMaxReflectedOrder + 3] = {};
    for (int64_t j = 0; j <= k + 1; ++j) {
      const double derivative = (j + 1 <= k + 1) ? static_cast<double>(j + 1) * p[j + 1] : 0;
      next[j] -= derivative;
      next[j + 2] -= derivative;
    }
    for (int64_t j = 0; j <= k + 2; ++j) p[j] = next[j];
  }
  // cot(pi r) = cos(pi r) / sin(pi r), the cosine as sin(pi (1/2 - |r|)) (1/2 - |r| is exact
  // to within its rounding): exactly 0 at r = +-1/2, where cos(pi / 2) in floating point is not.
  const double c = std::sin(kPi * (0.5 - std::fabs(r))) / std::sin(kPi * r), c2 = c * c;
  // Q(c^2) by Horner over the powers of n + 1's parity, from the leading coefficient (so that
  // an infinite c, x within 1e-308 of a pole, gives an infinity and not 0 * inf).
  double q = p[n + 1];
  for (int64_t j = n - 1; j >= 0; j -= 2) q = q * c2 + p[j];
  return std::pow(kPi, static_cast<double>(n + 1)) * ((n + 1) % 2 == 1 ? c * q : q);
}

/// psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1; digamma for n = 0. A negative
/// non-integer x by reflection, psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi d^n/dx^n cot(pi x)
/// (trigamma: pi^2 / sin^2(pi x) - psi1(1 - x)), the cot taken at x's distance from the nearest
/// integer: accurate at any magnitude, in O(n^2) rather than a sum over |x| terms. (Orders
/// above kMaxReflectedOrder sum, and are NaN below kLowestZetaArgument.)
inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (n == 1 && x < 0 && x != std::floor(x) && x > -kInf) {
    const double sine = std::sin(kPi * (x - std::nearbyint(x)));
    return kPi * kPi / (sine * sine) - polygamma(1, 1 - x);
  }
  if (n <= kMaxReflectedOrder && x < 0 && x != std::floor(x) && x > -kInf) {
    const double mirror = polygamma(n, 1 - x);
    return (n % 2 == 0 ? mirror : -mirror) - pi_cot_derivative(n, x - std::nearbyint(x));
  }
  double factorial = 1;
  for (int64_t k = 2; k <= n; ++k) factorial *= static_cast<double>(k);
  const double z = hurwitz_zeta(n + 1, x);
  return (n % 2 == 1 ? factorial : -factorial) * z;
}

}  // namespace ember::cpu::gamma
