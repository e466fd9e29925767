#pragma once
/// Plain scalar reference implementations of Ember's ops: the oracle of the op-table tests
/// (tests/test_ops_table.cpp). Written independently of kernels_cpu/functors.hpp: one obvious
/// loop per op, all math in double, PyTorch's semantics spelled out. Arrays are flat row-major
/// std::vector<double> plus a shape. Header-only; depends only on the op enums.
///
/// Integer dtypes have their own entry points (unary_int, binary_int) computing in int64 and
/// wrapping to the dtype's width (wrap_int), as PyTorch does.

#include <ember/ops/op_kinds.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace ember::ref {

using Dims = std::vector<int64_t>;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- geometry -----------------------------------------------------------------------------------
inline int64_t numel(const Dims& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
inline Dims contiguous_strides(const Dims& s) {
  Dims st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(s[i], 1);
  }
  return st;
}
/// Multi-index of linear position `i` in shape `s`.
inline Dims unravel(int64_t i, const Dims& s) {
  Dims idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return idx;
}

/// A dense row-major array of doubles.
struct Array {
  Dims shape;
  std::vector<double> v;
  Array() = default;
  Array(Dims s, double fill = 0) : shape(std::move(s)), v(static_cast<size_t>(ref::numel(shape)), fill) {}
  Array(Dims s, std::vector<double> vals) : shape(std::move(s)), v(std::move(vals)) {
    if (static_cast<int64_t>(v.size()) != ref::numel(shape)) throw std::invalid_argument("ref::Array: size mismatch");
  }
  int64_t numel() const { return static_cast<int64_t>(v.size()); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  double& at(const Dims& idx) { return v[static_cast<size_t>(offset(idx))]; }
  double at(const Dims& idx) const { return v[static_cast<size_t>(offset(idx))]; }
  int64_t offset(const Dims& idx) const {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + idx[d];
    return o;
  }
};

/// Reads a strided view (element strides, offset) of `base` into a dense Array.
inline Array from_strided(const double* base, const Dims& shape, const Dims& strides, int64_t offset = 0) {
  Array a(shape);
  for (int64_t i = 0; i < a.numel(); ++i) {
    Dims idx = unravel(i, shape);
    int64_t o = offset;
    for (size_t d = 0; d < shape.size(); ++d) o += idx[d] * strides[d];
    a.v[static_cast<size_t>(i)] = base[o];
  }
  return a;
}

/// NumPy broadcasting of two shapes; throws when incompatible.
inline Dims broadcast_shape(const Dims& a, const Dims& b) {
  size_t n = std::max(a.size(), b.size());
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) throw std::invalid_argument("ref::broadcast_shape: incompatible");
    out[i] = da == 1 ? db : da;
  }
  return out;
}
/// The element of `a` that position `idx` of the broadcast shape reads.
inline double broadcast_at(const Array& a, const Dims& idx) {
  size_t lead = idx.size() - a.shape.size();
  int64_t o = 0;
  for (size_t d = 0; d < a.shape.size(); ++d) o = o * a.shape[d] + (a.shape[d] == 1 ? 0 : idx[lead + d]);
  return a.v[static_cast<size_t>(o)];
}
inline Array broadcast_to(const Array& a, const Dims& shape) {
  Array r(shape);
  for (int64_t i = 0; i < r.numel(); ++i) r.v[static_cast<size_t>(i)] = broadcast_at(a, unravel(i, shape));
  return r;
}

// ---- integer helpers ----------------------------------------------------------------------------
/// Wraps an int64 value to an integer type of `bits` bits (two's complement), as a C++ cast.
inline int64_t wrap_int(int64_t v, int bits, bool is_signed) {
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_signed && (u >> (bits - 1)) & 1) return static_cast<int64_t>(u | ~mask);
  return static_cast<int64_t>(u);
}

// ---- scalar math ----------------------------------------------------------------------------------
/// Inverse error function: a Winitzki starting point refined by Halley steps on std::erf.
inline double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return kNaN;
  if (y == 1) return kInf;
  if (y == -1) return -kInf;
  if (y == 0) return y;
  const double pi = 3.14159265358979323846, a = 0.147;
  double ln = std::log((1 - y) * (1 + y));
  double t = 2 / (pi * a) + ln / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - ln / a) - t), y);
  for (int i = 0; i < 60; ++i) {
    double f = std::erf(x) - y;
    double fp = 2 / std::sqrt(pi) * std::exp(-x * x);
    double step = f / fp;
    step /= 1 + x * step;  // Halley: f'' = -2x f'
    x -= step;
    if (std::fabs(step) <= 1e-17 * std::fabs(x)) break;
  }
  return x;
}

/// psi^(n)(x) (n = 0: digamma) by plain summation, independent of the kernels' series: the
/// recurrence up to x + k >= 40 (digamma) or 100 (n >= 1), then three or four terms of the
/// asymptotic expansion (enough there for double precision). Negative x by reflection (digamma and trigamma), the poles as the
/// kernels place them.
inline double polygamma(int n, double x) {
  const double pi = 3.14159265358979323846;
  if (std::isnan(x)) return x;
  if (n == 0) {
    if (x == 0) return std::signbit(x) ? kInf : -kInf;
    if (x == kInf) return kInf;
    if (x < 0) {
      if (x == std::floor(x)) return kNaN;
      return polygamma(0, 1 - x) - pi / std::tan(pi * (x - std::round(x)));
    }
    double acc = 0;
    for (; x < 40; x += 1) acc -= 1 / x;
    const double z = 1 / (x * x);
    return acc + std::log(x) - 0.5 / x - z * (1.0 / 12 - z * (1.0 / 120 - z / 252));
  }
  if (x == kInf) return n % 2 == 1 ? 0.0 : -0.0;  // the sign of the approach
  if (x == -kInf) return kNaN;
  if (x <= 0 && x == std::floor(x)) return n % 2 == 1 ? kInf : -kInf;
  if (n == 1 && x < 0) {
    const double s = std::sin(pi * (x - std::round(x)));
    return pi * pi / (s * s) - polygamma(1, 1 - x);
  }
  double fact = 1;
  for (int k = 2; k <= n; ++k) fact *= k;
  const double s = n + 1;
  double acc = 0;
  for (; x < 100; x += 1) acc += std::pow(x, -s);
  // sum_{k >= 0} (x + k)^-s ~ x^(1-s)/(s-1) + x^-s/2 + s x^(-s-1)/12 - s(s+1)(s+2) x^(-s-3)/720
  acc += std::pow(x, 1 - s) / (s - 1) + 0.5 * std::pow(x, -s) + s * std::pow(x, -s - 1) / 12 -
         s * (s + 1) * (s + 2) * std::pow(x, -s - 3) / 720;
  return (n % 2 == 1 ? fact : -fact) * acc;
}

/// The modified Bessel function I_order(x) (order 0 or 1), from the C++17 special functions
/// of the standard library in long double (whose exponent range holds I up to 11000); e^-|x| I
/// when `scaled`. Beyond 11000 I is inf in double, and e^-x I is the asymptotic series'
/// first four terms (the fifth is below 1e-17 there).
inline double bessel_i(int order, double x, bool scaled) {
  if (std::isnan(x)) return x;
  const long double ax = std::fabs(x);
  long double v;
  if (ax <= 11000) {
    v = std::cyl_bessel_il(static_cast<long double>(order), ax);
    if (scaled) v *= std::exp(-ax);
  } else if (!scaled) {
    v = kInf;
  } else {
    const long double r = 1 / ax, sign = order == 0 ? 1 : -1;
    const long double c1 = order == 0 ? 1.0L / 8 : 3.0L / 8, c2 = order == 0 ? 9.0L / 128 : 15.0L / 128,
                      c3 = order == 0 ? 225.0L / 3072 : 315.0L / 3072;
    v = (1 + sign * (c1 * r + c2 * r * r + c3 * r * r * r)) / std::sqrt(2 * 3.141592653589793238462643383279502884L * ax);
  }
  return static_cast<double>(order == 1 && std::signbit(x) ? -v : v);  // I1 is odd, -0 included
}

/// e^(x^2) erfc(x) in long double (its exponent range holds both factors up to |x| = 100);
/// the leading terms of the asymptotic series beyond.
inline double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x >= 100) {  // 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k; eight terms are below 1e-30 here
    const long double r = 1 / (2 * static_cast<long double>(x) * x);
    long double term = 1, sum = 1;
    for (int k = 1; k < 8; ++k) sum += (term *= -(2 * k - 1) * r);
    return static_cast<double>(sum / (x * std::sqrt(3.14159265358979323846L)));
  }
  const long double lx = x;
  return static_cast<double>(std::exp(lx * lx) * std::erfc(lx));
}

/// The standard normal CDF in long double.
inline long double ndtr_l(double x) { return 0.5L * std::erfc(-static_cast<long double>(x) / std::sqrt(2.0L)); }

/// The normal quantile by bisection on the CDF (in long double): slow, and obviously right.
inline double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid == lo || mid == hi) break;
    (ndtr_l(mid) < p ? lo : hi) = mid;
  }
  return std::fabs(ndtr_l(lo) - p) < std::fabs(ndtr_l(hi) - p) ? lo : hi;
}

/// torch.round: half to even.
inline double round_half_even(double x) {
  if (!std::isfinite(x)) return x;
  const double f = std::floor(x), d = x - f;
  const double r = d > 0.5 ? f + 1 : d < 0.5 ? f : std::fmod(f, 2) == 0 ? f : f + 1;
  return std::copysign(r, x);  // a zero result keeps x's sign (round(-0.4) and round(-0.5) are -0)
}

/// Unary op on a floating value. `finite_max` is the largest finite value of the tensor's
/// dtype (nan_to_num's default replacement for infinities).
inline double unary(ops::UnaryOp op, double x, const ops::UnaryParams& p = {},
                    double finite_max = std::numeric_limits<double>::max()) {
  using U = ops::UnaryOp;
  const bool nan = std::isnan(x);
  switch (op) {
    case U::Neg: return -x;
    case U::Abs: return std::fabs(x);
    case U::Sign: return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;  // NaN: 0, as PyTorch
    case U::Exp: return std::exp(x);
    case U::Exp2: return std::exp2(x);
    case U::Expm1: return std::expm1(x);
    case U::Log: return std::log(x);
    case U::Log2: return std::log2(x);
    case U::Log10: return std::log10(x);
    case U::Log1p: return std::log1p(x);
    case U::Sqrt: return std::sqrt(x);
    case U::Rsqrt: return 1.0 / std::sqrt(x);
    case U::Reciprocal: return 1.0 / x;
    case U::Square: return x * x;
    case U::Sin: return std::sin(x);
    case U::Cos: return std::cos(x);
    case U::Tan: return std::tan(x);
    case U::Asin: return std::asin(x);
    case U::Acos: return std::acos(x);
    case U::Atan: return std::atan(x);
    case U::Sinh: return std::sinh(x);
    case U::Cosh: return std::cosh(x);
    case U::Tanh: return std::tanh(x);
    case U::Asinh: return std::asinh(x);
    case U::Acosh: return std::acosh(x);
    case U::Atanh: return std::atanh(x);
    case U::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case U::Logit: {
      double z = x;
      if (p.has_a && p.a >= 0 && !nan) z = std::min(std::max(x, p.a), 1.0 - p.a);
      return std::log(z / (1.0 - z));
    }
    case U::Relu: return x < 0 ? 0.0 : x;  // NaN and -0 pass through
    case U::Relu6: return nan ? x : std::min(std::max(x, 0.0), 6.0);
    case U::LeakyRelu: return x > 0 ? x : x * p.a;
    // alpha (exp(x) - 1) for x < 0, as PyTorch 2: -0 takes the other branch and stays -0.
    case U::Elu: return x < 0 ? p.a * std::expm1(x) : x;
    case U::Selu: {
      const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
      return scale * (x < 0 ? alpha * std::expm1(x) : x);
    }
    case U::Celu: return x < 0 ? p.a * std::expm1(x / p.a) : x;
    case U::Gelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));  // not 1 + erf: no cancellation
    case U::GeluTanh: {
      const double k = std::sqrt(2.0 / 3.14159265358979323846);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case U::Silu: return x / (1.0 + std::exp(-x));
    case U::Mish: return x * std::tanh(std::log1p(std::exp(x)));
    case U::Softplus: return p.a * x > p.b ? x : std::log1p(std::exp(p.a * x)) / p.a;
    case U::Softsign: return x / (1.0 + std::fabs(x));
    case U::Hardtanh: return nan ? x : std::min(std::max(x, p.a), p.b);
    case U::Hardsigmoid: return nan ? x : std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
    case U::Hardswish: return nan ? x : x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
    case U::Erf: return std::erf(x);
    case U::Erfc: return std::erfc(x);
    case U::Erfinv: return erfinv(x);
    case U::Lgamma: return std::lgamma(x);
    case U::Digamma: return polygamma(static_cast<int>(p.a), x);
    case U::Sinc: {
      if (x == 0) return 1;
      if (!std::isfinite(x)) return kNaN;
      if (x == std::floor(x)) return 0.0;  // sin(k pi) = 0
      const long double t = 3.141592653589793238462643383279502884L * x;
      return static_cast<double>(std::sin(t) / t);
    }
    case U::I0: return bessel_i(0, x, false);
    case U::I0e: return bessel_i(0, x, true);
    case U::I1: return bessel_i(1, x, false);
    case U::I1e: return bessel_i(1, x, true);
    case U::Erfcx: return erfcx(x);
    case U::Entr: return nan ? x : x > 0 ? -x * std::log(x) : x == 0 ? 0.0 : -kInf;
    case U::Ndtr: return static_cast<double>(ndtr_l(x));
    case U::Ndtri: return ndtri(x);
    case U::LogNdtr: {
      if (x >= -100) {
        const double r = static_cast<double>(std::log(ndtr_l(x)));
        return r == 0 ? -0.0 : r;  // log Phi < 0: the zero it rounds to is -0
      }
      // Mills' ratio: Phi(x) = phi(x) / |x| (1 - 1/x^2 + 3/x^4 - 15/x^6 + ...); the next term, 105/x^8, is 1e-14 at most.
      const long double lx = x, r = 1 / (lx * lx);
      return static_cast<double>(-lx * lx / 2 - std::log(-lx) - std::log(2 * 3.141592653589793238462643383279502884L) / 2 +
                                 std::log1p(-r + 3 * r * r - 15 * r * r * r));
    }
    case U::Floor: return std::floor(x);
    case U::Ceil: return std::ceil(x);
    case U::Round: return round_half_even(x);
    case U::Trunc: return std::trunc(x);
    case U::Frac: return std::isinf(x) ? kNaN : x - std::trunc(x);
    case U::Clamp: {
      if (p.has_a && p.has_b && (std::isnan(p.a) || std::isnan(p.b))) return std::nan("");
      if (nan) return x;
      double r = x;
      if (p.has_a) r = std::max(r, p.a);
      if (p.has_b) r = std::min(r, p.b);
      return r;
    }
    case U::NanToNum:
      if (nan) return p.a;
      if (x == kInf) return p.has_a ? p.b : finite_max;
      if (x == -kInf) return p.has_b ? p.c : -finite_max;
      return x;
    case U::Isnan: return nan ? 1 : 0;
    case U::Isinf: return std::isinf(x) ? 1 : 0;
    case U::Isfinite: return std::isfinite(x) ? 1 : 0;
    case U::Signbit: return std::signbit(x) ? 1 : 0;
    case U::LogicalNot: return x == 0 ? 1 : 0;
    case U::BitwiseNot: break;
  }
  throw std::invalid_argument("ref::unary: op has no floating form");
}

/// Unary op on an integer (or bool, as 0/1) value of a dtype with `bits` bits; the result
/// before wrapping (pass it through wrap_int). Ops of the Same/Int/Pred/Logical rules only.
inline int64_t unary_int(ops::UnaryOp op, int64_t x, const ops::UnaryParams& p = {}, bool is_bool = false) {
  using U = ops::UnaryOp;
  auto cast = [](double v) { return static_cast<int64_t>(std::trunc(v)); };
  switch (op) {
    case U::Neg: return static_cast<int64_t>(0 - static_cast<uint64_t>(x));
    case U::Abs: return x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x;
    case U::Sign: return (x > 0) - (x < 0);
    case U::Square: return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(x));
    case U::Relu: return x > 0 ? x : 0;
    case U::Relu6: return std::min<int64_t>(std::max<int64_t>(x, 0), 6);
    case U::Hardtanh: return std::min(std::max(x, cast(p.a)), cast(p.b));
    case U::Floor:
    case U::Ceil:
    case U::Round:
    case U::Trunc:
    case U::NanToNum: return x;
    case U::Clamp: {
      if (is_bool) {
        bool r = x != 0;
        if (p.has_a) r = r || p.a != 0;
        if (p.has_b) r = r && p.b != 0;
        return r;
      }
      int64_t r = x;
      if (p.has_a) r = std::max(r, p.ia);
      if (p.has_b) r = std::min(r, p.ib);
      return r;
    }
    case U::Isnan:
    case U::Isinf: return 0;
    case U::Isfinite: return 1;
    case U::Signbit: return x < 0;
    case U::LogicalNot: return x == 0;
    case U::BitwiseNot: return is_bool ? !x : ~x;
    default: break;
  }
  throw std::invalid_argument("ref::unary_int: op has no integer form");
}

/// Binary op on floating values, PyTorch semantics. `narrow` marks ops computed in a
/// dtype narrower than double (f32, and f16/bf16 which compute in f32): the quotient of
/// div_trunc is then rounded to float before truncation, as the real computation does.
inline double binary(ops::BinaryOp op, double a, double b, bool narrow = false) {
  using B = ops::BinaryOp;
  const bool an = std::isnan(a), bn = std::isnan(b);
  switch (op) {
    case B::Add: return a + b;
    case B::Sub: return a - b;
    case B::Mul: return a * b;
    case B::Div: return a / b;
    case B::DivTrunc: {
      double q = a / b;
      if (narrow) q = static_cast<double>(static_cast<float>(q));
      return std::trunc(q);
    }
    case B::DivFloor: {
      // Python's a // b, consistent with remainder (PyTorch's div_floor_floating).
      if (b == 0) return a / b;
      double mod = std::fmod(a, b);
      double div = (a - mod) / b;
      if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
      if (div == 0) return std::copysign(0.0, a / b);
      double fl = std::floor(div);
      if (div - fl > 0.5) fl += 1;
      return fl;
    }
    case B::Remainder: {
      double mod = std::fmod(a, b);
      if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
      return mod;
    }
    case B::Fmod: return std::fmod(a, b);
    case B::Pow: return std::pow(a, b);
    case B::Atan2: return std::atan2(a, b);
    case B::Maximum: return an || bn ? kNaN : std::max(a, b);
    case B::Minimum: return an || bn ? kNaN : std::min(a, b);
    case B::Fmax: return an ? b : bn ? a : std::max(a, b);
    case B::Fmin: return an ? b : bn ? a : std::min(a, b);
    case B::Hypot: return std::hypot(a, b);
    case B::Copysign: return std::copysign(a, b);
    case B::Xlogy: return a == 0 && !bn ? 0.0 : a * std::log(b);
    case B::Xlog1py: return a == 0 && !bn ? 0.0 : a * std::log1p(b);
    case B::LogAddExp: case B::LogAddExp2: {
      const long double base = op == B::LogAddExp ? 2.718281828459045235360287471352662498L : 2.0L;
      if (an || bn) return kNaN;
      if (a == b && std::isinf(a)) return a;
      // The sum of the powers, scaled by the larger one so that it cannot overflow.
      if (std::max(a, b) == kInf) return kInf;
      const long double m = std::max(a, b), s = std::pow(base, a - m) + std::pow(base, b - m);
      return static_cast<double>(m + std::log(s) / std::log(base));
    }
    case B::Heaviside: return a == 0 ? b : a > 0 ? 1.0 : 0.0;
    case B::ReluBackward: return b <= 0 ? 0.0 : a;
    case B::GeluBackward:
      return a * (0.5 * std::erfc(-b / std::sqrt(2.0)) + b * std::exp(-0.5 * b * b) * 0.39894228040143267794);
    case B::SiluBackward: {
      const double s = 1 / (1 + std::exp(-b));
      return a * s * (1 + b * (1 - s));
    }
    case B::Eq: return a == b;
    case B::Ne: return a != b;
    case B::Lt: return a < b;
    case B::Le: return a <= b;
    case B::Gt: return a > b;
    case B::Ge: return a >= b;
    case B::LogicalAnd: return (a != 0) && (b != 0);
    case B::LogicalOr: return (a != 0) || (b != 0);
    case B::LogicalXor: return (a != 0) != (b != 0);
    default: break;
  }
  throw std::invalid_argument("ref::binary: op has no floating form");
}

/// Binary op on integers of a dtype with `bits` bits (bool: bits = 1, values 0/1); the
/// result before wrapping. Sets `fault` where PyTorch raises (division by zero, negative
/// integer powers of integers other than +-1).
inline int64_t binary_int(ops::BinaryOp op, int64_t a, int64_t b, int bits, bool is_signed, bool& fault) {
  using B = ops::BinaryOp;
  using u64 = uint64_t;
  const bool is_bool = bits == 1;
  auto trunc_div = [&](int64_t x, int64_t y) -> int64_t {
    if (y == -1) return static_cast<int64_t>(0 - static_cast<u64>(x));
    return x / y;
  };
  auto trunc_mod = [&](int64_t x, int64_t y) -> int64_t { return y == -1 ? 0 : x % y; };
  switch (op) {
    case B::Add: return is_bool ? (a || b) : static_cast<int64_t>(static_cast<u64>(a) + static_cast<u64>(b));
    case B::Sub: return static_cast<int64_t>(static_cast<u64>(a) - static_cast<u64>(b));
    case B::Mul: return is_bool ? (a && b) : static_cast<int64_t>(static_cast<u64>(a) * static_cast<u64>(b));
    case B::DivTrunc:
      if (b == 0) return fault = true, 0;
      return trunc_div(a, b);
    case B::DivFloor: {
      if (b == 0) return fault = true, 0;
      int64_t q = trunc_div(a, b), r = trunc_mod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) --q;
      return q;
    }
    case B::Remainder: {
      if (b == 0) return fault = true, 0;
      int64_t r = trunc_mod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case B::Fmod:
      if (b == 0) return fault = true, 0;
      return trunc_mod(a, b);
    case B::Pow: {
      if (is_bool) return a || !b;
      if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b % 2 == 0) ? 1 : -1;
        return 0;  // PyTorch's integer pow
      }
      u64 r = 1;
      for (int64_t i = 0; i < b; ++i) r *= static_cast<u64>(a);
      return static_cast<int64_t>(r);
    }
    case B::Heaviside: return a == 0 ? b : a > 0;
    case B::Maximum:
    case B::Fmax: return std::max(a, b);
    case B::Minimum:
    case B::Fmin: return std::min(a, b);
    case B::Eq: return a == b;
    case B::Ne: return a != b;
    case B::Lt: return a < b;
    case B::Le: return a <= b;
    case B::Gt: return a > b;
    case B::Ge: return a >= b;
    case B::LogicalAnd: return (a != 0) && (b != 0);
    case B::LogicalOr: return (a != 0) || (b != 0);
    case B::LogicalXor: return (a != 0) != (b != 0);
    case B::BitwiseAnd: return a & b;
    case B::BitwiseOr: return a | b;
    case B::BitwiseXor: return a ^ b;
    case B::ShiftLeft:
      if (b < 0 || b >= bits) return 0;
      return static_cast<int64_t>(static_cast<u64>(a) << b);
    case B::ShiftRight:
      if (b < 0 || b >= bits) return (is_signed && a < 0) ? -1 : 0;
      return a >> b;  // arithmetic for negative values
    default: break;
  }
  throw std::invalid_argument("ref::binary_int: op has no integer form");
}

// ---- elementwise over arrays ----------------------------------------------------------------------
template <class F>
inline Array map(const Array& x, F&& f) {
  Array r(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) r.v[static_cast<size_t>(i)] = f(x.v[static_cast<size_t>(i)]);
  return r;
}
/// f(a, b) over the broadcast shape of a and b.
template <class F>
inline Array zip(const Array& a, const Array& b, F&& f) {
  Array r(broadcast_shape(a.shape, b.shape));
  for (int64_t i = 0; i < r.numel(); ++i) {
    Dims idx = unravel(i, r.shape);
    r.v[static_cast<size_t>(i)] = f(broadcast_at(a, idx), broadcast_at(b, idx));
  }
  return r;
}

// ---- reductions over a dim mask ---------------------------------------------------------------------
/// Dims of `shape` selected by `mask` set to 1 (keepdim) or removed.
inline Dims reduced_shape(const Dims& shape, uint64_t mask, bool keepdim) {
  Dims r;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (mask >> d & 1) {
      if (keepdim) r.push_back(1);
    } else {
      r.push_back(shape[d]);
    }
  }
  return r;
}

/// Calls f(out_index, values) for every output position, with the reduced values in
/// row-major order of the reduced dims.
template <class F>
inline void for_each_group(const Array& x, uint64_t mask, F&& f) {
  Dims keep = reduced_shape(x.shape, mask, true);
  int64_t nout = numel(keep);
  std::vector<std::vector<double>> groups(static_cast<size_t>(nout));
  for (int64_t i = 0; i < x.numel(); ++i) {
    Dims idx = unravel(i, x.shape);
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o = o * keep[d] + ((mask >> d & 1) ? 0 : idx[d]);
    groups[static_cast<size_t>(o)].push_back(x.v[static_cast<size_t>(i)]);
  }
  for (int64_t o = 0; o < nout; ++o) f(o, groups[static_cast<size_t>(o)]);
}

/// The reduction of one group of values. Empty groups give the identity (amax/amin of an
/// empty group has none and returns NaN here; Ember refuses it).
inline double reduce_values(ops::ReduceOp op, const std::vector<double>& g) {
  using R = ops::ReduceOp;
  double acc = 0;
  bool any_nan = false;
  for (double v : g) any_nan |= std::isnan(v);
  switch (op) {
    case R::Sum:
    case R::Mean:
      for (double v : g) acc += v;
      return op == R::Mean ? (g.empty() ? kNaN : acc / static_cast<double>(g.size())) : acc;
    case R::Nansum:
      for (double v : g)
        if (!std::isnan(v)) acc += v;
      return acc;
    case R::Prod:
      acc = 1;
      for (double v : g) acc *= v;
      return acc;
    case R::Amax:
    case R::Amin: {
      if (g.empty()) return kNaN;
      if (any_nan) return kNaN;
      acc = g[0];
      for (double v : g) acc = op == R::Amax ? std::max(acc, v) : std::min(acc, v);
      return acc;
    }
    case R::All:
      for (double v : g)
        if (v == 0) return 0;
      return 1;
    case R::Any:
      for (double v : g)
        if (v != 0) return 1;
      return 0;
    case R::CountNonzero:
      for (double v : g) acc += v != 0;
      return acc;
    case R::Norm1:
      for (double v : g) acc += std::fabs(v);
      return acc;
    case R::Norm2:
      for (double v : g) acc += v * v;
      return std::sqrt(acc);
    case R::NormInf:
      if (any_nan) return kNaN;
      for (double v : g) acc = std::max(acc, std::fabs(v));
      return acc;
  }
  return kNaN;
}

inline Array reduce(ops::ReduceOp op, const Array& x, uint64_t mask, bool keepdim) {
  Array r(reduced_shape(x.shape, mask, keepdim));
  for_each_group(x, mask, [&](int64_t o, const std::vector<double>& g) {
    r.v[static_cast<size_t>(o)] = reduce_values(op, g);
  });
  return r;
}

// ---- along one dim: softmax, scans, arg-reductions ----------------------------------------------------
/// Calls f(indices of the elements along `dim` for one position of the other dims).
template <class F>
inline void for_each_line(const Dims& shape, int64_t dim, F&& f) {
  if (shape.empty()) {
    f(std::vector<int64_t>{0});
    return;
  }
  Dims st = contiguous_strides(shape);
  Dims other = shape;
  other[static_cast<size_t>(dim)] = 1;
  int64_t n = numel(other), len = shape[static_cast<size_t>(dim)];
  for (int64_t i = 0; i < n; ++i) {
    Dims idx = unravel(i, other);
    int64_t base = 0;
    for (size_t d = 0; d < idx.size(); ++d) base += idx[d] * st[d];
    std::vector<int64_t> line(static_cast<size_t>(len));
    for (int64_t k = 0; k < len; ++k) line[static_cast<size_t>(k)] = base + k * st[static_cast<size_t>(dim)];
    f(line);
  }
}

/// softmax / log_softmax along dim: exp(x - max) / sum, with max NaN-propagating (a +inf
/// or NaN in a line makes the whole line NaN, an all -inf line is NaN), as PyTorch.
inline Array softmax(const Array& x, int64_t dim, bool log) {
  Array r(x.shape);
  for_each_line(x.shape, dim, [&](const std::vector<int64_t>& line) {
    double m = -kInf;
    for (int64_t i : line) {
      double v = x.v[static_cast<size_t>(i)];
      m = std::isnan(v) || std::isnan(m) ? kNaN : std::max(m, v);
    }
    double s = 0;
    for (int64_t i : line) s += std::exp(x.v[static_cast<size_t>(i)] - m);
    for (int64_t i : line) {
      double d = x.v[static_cast<size_t>(i)] - m;
      r.v[static_cast<size_t>(i)] = log ? d - std::log(s) : std::exp(d) / s;
    }
  });
  return r;
}

enum class Cum { Sum, Prod, Max, Min, Logsumexp };

/// log(exp(a) + exp(b)) with PyTorch's handling of infinities and NaN.
inline double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  if (std::isinf(a) && a == b) return a;
  double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}

/// Scans along dim. cummax/cummin also fill `indices`: the last index of the running
/// extreme (ties take the later element; a NaN takes over and stays).
inline Array cumulative(Cum op, const Array& x, int64_t dim, Array* indices = nullptr) {
  Array r(x.shape);
  if (indices) *indices = Array(x.shape);
  for_each_line(x.shape, dim, [&](const std::vector<int64_t>& line) {
    double acc = 0;
    int64_t best = 0;
    for (size_t k = 0; k < line.size(); ++k) {
      double v = x.v[static_cast<size_t>(line[k])];
      if (k == 0) {
        acc = v;
      } else {
        switch (op) {
          case Cum::Sum: acc += v; break;
          case Cum::Prod: acc *= v; break;
          case Cum::Max:
          case Cum::Min:
            if (std::isnan(v) || (!std::isnan(acc) && (op == Cum::Max ? v >= acc : v <= acc))) {
              acc = v;
              best = static_cast<int64_t>(k);
            }
            break;
          case Cum::Logsumexp: acc = log_add_exp(acc, v); break;
        }
      }
      r.v[static_cast<size_t>(line[k])] = acc;
      if (indices) indices->v[static_cast<size_t>(line[k])] = static_cast<double>(best);
    }
  });
  return r;
}

/// max/min along dim with indices: the first occurrence of the extreme; the first NaN wins.
inline std::pair<Array, Array> arg_reduce(bool is_max, const Array& x, int64_t dim, bool keepdim) {
  uint64_t mask = x.shape.empty() ? 0 : uint64_t{1} << dim;
  Dims out = reduced_shape(x.shape, mask, keepdim);
  Array vals(out), idx(out);
  int64_t o = 0;
  // Lines are visited in row-major order of the other dims, which is the output order.
  for_each_line(x.shape, x.shape.empty() ? 0 : dim, [&](const std::vector<int64_t>& line) {
    double best = x.v[static_cast<size_t>(line[0])];
    int64_t bi = 0;
    for (size_t k = 1; k < line.size() && !std::isnan(best); ++k) {
      double v = x.v[static_cast<size_t>(line[k])];
      if (std::isnan(v) || (is_max ? v > best : v < best)) best = v, bi = static_cast<int64_t>(k);
    }
    vals.v[static_cast<size_t>(o)] = best;
    idx.v[static_cast<size_t>(o)] = static_cast<double>(bi);
    ++o;
  });
  return {vals, idx};
}

// ---- matmul ---------------------------------------------------------------------------------------
/// torch.matmul: 1-d operands are promoted (and the added dim removed), batch dims broadcast.
inline Array matmul(const Array& a, const Array& b) {
  if (a.shape.empty() || b.shape.empty()) throw std::invalid_argument("ref::matmul: 0-d operand");
  Dims as = a.shape, bs = b.shape;
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) throw std::invalid_argument("ref::matmul: inner dims differ");
  Dims ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Dims batch = broadcast_shape(ba, bb);
  Dims full_a = batch, full_b = batch;
  full_a.push_back(m), full_a.push_back(k);
  full_b.push_back(k), full_b.push_back(n);
  Array A = broadcast_to(Array(as, a.v), full_a), B = broadcast_to(Array(bs, b.v), full_b);
  int64_t nb = numel(batch);
  Dims out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(n);
  Array r(out);
  for (int64_t t = 0; t < nb; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += A.v[static_cast<size_t>((t * m + i) * k + p)] * B.v[static_cast<size_t>((t * k + p) * n + j)];
        r.v[static_cast<size_t>((t * m + i) * n + j)] = s;
      }
  return r;
}

}  // namespace ember::ref
