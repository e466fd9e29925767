#pragma once
// One functor per elementwise op. Each is written once over V, which is either a scalar
// (float, double, integers) or an xsimd batch; the driver in elementwise.cpp runs the batch
// form on contiguous runs when the functor sets kSimd. Math goes through the vm:: wrappers so
// one body serves both. Reduced floats (f16, bf16) are computed in float.

#include "gamma_functions.hpp"
#include "int_wrapping.hpp"
#include "special_functions.hpp"

#include <ember/ops/op_kinds.hpp>

#include "simd.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ember::cpu::EMBER_CPU_ARCH {

template <class V>
inline constexpr bool is_batch_v = xsimd::is_batch<V>::value;

template <class V>
struct scalar_of { using type = V; };
template <class T, class A>
struct scalar_of<xsimd::batch<T, A>> { using type = T; };
template <class V>
using scalar_t = typename scalar_of<V>::type;

// ---- math over scalars and batches ----------------------------------------------------------
namespace vm {
#define EMBER_VM1(name)                                 \
  template <class V>                                    \
  inline V name(const V& x) {                           \
    if constexpr (is_batch_v<V>) return xsimd::name(x); \
    else return std::name(x);                           \
  }
EMBER_VM1(exp)
EMBER_VM1(exp2)
EMBER_VM1(expm1)
EMBER_VM1(log1p)
EMBER_VM1(sqrt)
EMBER_VM1(sin)
EMBER_VM1(cos)
EMBER_VM1(tan)
EMBER_VM1(asin)
EMBER_VM1(acos)
EMBER_VM1(atan)
EMBER_VM1(sinh)
EMBER_VM1(cosh)
EMBER_VM1(tanh)
EMBER_VM1(asinh)
EMBER_VM1(acosh)
EMBER_VM1(atanh)
EMBER_VM1(abs)
#undef EMBER_VM1
/// exp, exp2 and expm1 up to the top of the range, for the exp, exp2 and expm1 ops. xsimd 8.1
/// returns inf from (emax + 1/2) ln 2 on (exp and expm1: 88.376 for f32, 709.436 for f64;
/// exp2: from emax, 127 and 1023), where the results stay finite up to ln(max) (88.723,
/// 709.783) and emax + 1 (128, 1024). Batches with a lane up there are evaluated again, at
/// x / 2 squared (about 2 ulp) and at x - 1 doubled (exact). At the bottom, xsimd flushes the
/// subnormal results of exp and exp2 to 0 (exp(-100) in f32 is 3.8e-44, as PyTorch and the C
/// library give it): lanes below ln(min) (-87.3, -708.3) and emin (-126, -1022) are taken at
/// x / 2 squared, a normal number squared once into the subnormal range. The check costs exp
/// ~9% at the top (a comparison and a branch on ~13 cycles per batch; shifting every lane's
/// argument cost 30%) and 5-6% more for both ends (64k floats in L2, AVX2 and AVX-512, /tmp
/// harness), so functors that only use exp of arguments in the normal range (sigmoid's exp(-x)
/// at x < -88.4 is below the normal range anyway) call vm::exp and xsimd's form directly.
///
/// with_edge_lanes: fast(x), with the lanes where |x| >= `edge` (f32, f64) taken from
/// edge_fn(x), in the rare batches that have one. The test is x^2 >= edge^2: one constant, as
/// the top-only test had (|x|'s sign mask, or a second threshold, cost 7%: AVX2's 16 registers
/// fell short of the constants and the loop reloaded them).
template <class V, class Fast, class Edge>
inline V with_edge_lanes(const V& x, double edge_f32, double edge_f64, Fast fast, Edge edge_fn) {
  using S = typename V::value_type;
  const V r = fast(x);
  const double edge = std::is_same_v<S, float> ? edge_f32 : edge_f64;
  const auto at_edge = x * x >= V(S(edge * edge));
  if (!xsimd::any(at_edge)) return r;
  return xsimd::select(at_edge, edge_fn(x), r);
}
template <class V, class Fast, class Top>
inline V with_top_lanes(const V& x, double from_f32, double from_f64, Fast fast, Top top) {
  using S = typename V::value_type;
  const V r = fast(x);
  const auto at_top = x >= V(S(std::is_same_v<S, float> ? from_f32 : from_f64));
  if (!xsimd::any(at_top)) return r;
  return xsimd::select(at_top, top(x), r);
}
template <class V>
inline V exp_to_max(const V& x) {
  if constexpr (is_batch_v<V>) {
    const auto half_squared = [](const V& a) {  // both ends: above 88.3 and below ln(min)
      const V h = xsimd::exp(a * V(0.5));
      return h * h;
    };
    return with_edge_lanes(x, 87.3, 708.3, [](const V& a) { return xsimd::exp(a); }, half_squared);
  } else {
    return std::exp(x);
  }
}
template <class V>
inline V exp2_to_max(const V& x) {
  if constexpr (is_batch_v<V>) {
    const auto ends = [](const V& a) {  // the top at x - 1 doubled, the bottom at x / 2 squared
      const V h = xsimd::exp2(a * V(0.5));
      return xsimd::select(a > V(0), xsimd::exp2(a - V(1)) * V(2), h * h);
    };
    return with_edge_lanes(x, 126, 1022, [](const V& a) { return xsimd::exp2(a); }, ends);
  } else {
    return std::exp2(x);
  }
}
template <class V>
inline V expm1_to_max(const V& x) {  // exp(x) - 1 rounds to exp(x) up there
  if constexpr (is_batch_v<V>) return with_top_lanes(x, 88.3, 709.4, [](const V& a) { return xsimd::expm1(a); }, exp_to_max<V>);
  else return std::expm1(x);
}
/// log, log2 and log10. xsimd 8.1's f64 forms take a subnormal input as if its exponent were
/// emin (log(1e-310) = -746.5, not -713.8; f32 is right): such lanes are scaled by 2^54 first
/// and the logarithm of 2^54 taken off after.
template <class V>
inline auto subnormal_lanes(const V& x) {
  using S = scalar_t<V>;
  return x < V(std::numeric_limits<S>::min()) && x > V(S(0));
}
#define EMBER_VM_LOG(name, log_of_2)                                                        \
  template <class V>                                                                      \
  inline V name(const V& x) {                                                             \
    if constexpr (is_batch_v<V> && std::is_same_v<scalar_t<V>, double>) {                 \
      const auto sub = subnormal_lanes(x);                                                \
      if (!xsimd::any(sub)) return xsimd::name(x);                                        \
      const V r = xsimd::name(xsimd::select(sub, x * V(0x1p54), x));                      \
      return xsimd::select(sub, r - V(54 * (log_of_2)), r);                               \
    } else if constexpr (is_batch_v<V>) {                                                 \
      return xsimd::name(x);                                                              \
    } else {                                                                              \
      return std::name(x);                                                                \
    }                                                                                     \
  }
EMBER_VM_LOG(log, 0.69314718055994530942)
EMBER_VM_LOG(log2, 1.0)
EMBER_VM_LOG(log10, 0.30102999566398119521)
#undef EMBER_VM_LOG
// Rounding to an integer keeps the sign of x (trunc(-0.5) is -0). xsimd 8's SSE2 forms
// convert through integers and return +0 there, so the sign is put back.
#define EMBER_VM_ROUND(name, xname)                                        \
  template <class V>                                                       \
  inline V name(const V& x) {                                              \
    if constexpr (is_batch_v<V>) return xsimd::copysign(xsimd::xname(x), x); \
    else return std::xname(x);                                             \
  }
EMBER_VM_ROUND(floor, floor)
EMBER_VM_ROUND(ceil, ceil)
EMBER_VM_ROUND(trunc, trunc)
EMBER_VM_ROUND(round_even, nearbyint)  // torch.round: half to even
#undef EMBER_VM_ROUND
template <class V, class C>
inline V select(const C& c, const V& a, const V& b) {
  if constexpr (is_batch_v<V>) return xsimd::select(c, a, b);
  else return c ? a : b;
}
template <class V>
inline V max(const V& a, const V& b) {  // b wins when equal; NaN handling by callers
  if constexpr (is_batch_v<V>) return xsimd::max(a, b);
  else return a > b ? a : b;
}
template <class V>
inline V min(const V& a, const V& b) {
  if constexpr (is_batch_v<V>) return xsimd::min(a, b);
  else return a < b ? a : b;
}
template <class V>
inline auto isnan(const V& x) {  // not `x != x`: xsimd's batch != is an ordered compare (false for NaN)
  if constexpr (is_batch_v<V>) return xsimd::isnan(x);
  else return x != x;
}
}  // namespace vm

template <class V>
using elem_t = typename std::conditional_t<is_batch_v<V>, V, xsimd::batch<float>>::value_type;

/// double -> S: saturating at S's range for integer S, IEEE rounding for float (overflow to
/// +-inf). A plain cast of an out-of-range value is UB in C++ for both.
template <class S>
inline S sat_cast(double v) {
  if constexpr (std::is_integral_v<S>) {
    if (v <= static_cast<double>(std::numeric_limits<S>::lowest())) return std::numeric_limits<S>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<S>::max())) return std::numeric_limits<S>::max();
  } else if constexpr (std::is_same_v<S, float>) {
    constexpr double kMax = std::numeric_limits<float>::max();
    constexpr double kHalfwayToInf = 0x1.ffffffp127;  // ties round to even: to infinity
    if (v >= kHalfwayToInf || v <= -kHalfwayToInf) return v > 0 ? std::numeric_limits<float>::infinity()
                                                                 : -std::numeric_limits<float>::infinity();
    if (v > kMax || v < -kMax) return v > 0 ? std::numeric_limits<float>::max() : std::numeric_limits<float>::lowest();
  }
  return static_cast<S>(v);
}

template <class V>
inline V splat(double v) {
  return V(static_cast<scalar_t<V>>(v));
}

// ---- unary ------------------------------------------------------------------------------------
/// Whether functors built on xsimd's transcendental functions (erf, expm1, log1p, tanh, ...)
/// run them over batches. Each batch form is several KB of inlined code per type; x86-64's
/// size-first baseline build (CPUs without AVX2 only) runs them element by element instead.
#ifdef EMBER_KERNELS_SIZE_FIRST
inline constexpr bool kSimdTranscendental = false;
#else
inline constexpr bool kSimdTranscendental = true;
#endif
/// Whether this build has a fused multiply-add instruction. The batch forms of fmod,
/// remainder, floor division and hypot rely on fma's single rounding (fmod's to be exact);
/// without one (x86-64's SSE2 baseline) they run element by element.
#if defined(__FMA__) || (defined(__ARM_FEATURE_FMA) && defined(__aarch64__))  // not 32-bit NEON: its division is an estimate
inline constexpr bool kHasFma = true;
#else
inline constexpr bool kHasFma = false;
#endif

/// Runs a scalar function on each lane of two batches: the slow path of batch forms that
/// handle the common range fast and leave edge values to the standard library.
template <class V, class F>
inline V per_lane(const V& a, const V& b, F scalar) {
  using S = scalar_t<V>;
  alignas(64) S xa[V::size], xb[V::size];
  a.store_aligned(xa);
  b.store_aligned(xb);
  for (size_t i = 0; i < V::size; ++i) xa[i] = scalar(xa[i], xb[i]);
  return V::load_aligned(xa);
}

/// The same for one batch.
template <class V, class F>
inline V per_lane(const V& a, F scalar) {
  alignas(64) scalar_t<V> xa[V::size];
  a.store_aligned(xa);
  for (size_t i = 0; i < V::size; ++i) xa[i] = scalar(xa[i]);
  return V::load_aligned(xa);
}

namespace vm {
/// erf and erfc. f64 batches take the standard library lane by lane: xsimd 8.1's double forms
/// were off by up to 67 ulp (erf(2.203125)) and 6e-9 relative in erfc's tail (x near 26), and
/// flushed erfc's subnormal results to 0, while a tensor of fewer than one vector's elements
/// got the library's values (PyTorch's f64 values are the library's too). xsimd's f32 erfc
/// flushes its subnormal results (x > 9.19) to 0 as well: lanes from 9.1 on take the library's.
template <class V>
inline V erf(const V& x) {
  if constexpr (is_batch_v<V> && std::is_same_v<scalar_t<V>, double>)
    return per_lane(x, [](double a) { return std::erf(a); });
  else if constexpr (is_batch_v<V>) return xsimd::erf(x);
  else return std::erf(x);
}
template <class V>
inline V erfc(const V& x) {
  if constexpr (is_batch_v<V> && std::is_same_v<scalar_t<V>, double>) {
    return per_lane(x, [](double a) { return std::erfc(a); });
  } else if constexpr (is_batch_v<V>) {
    const auto library = [](const V& a) { return per_lane(a, [](float v) { return std::erfc(v); }); };
    return with_top_lanes(x, 9.1, 0.0, [](const V& a) { return xsimd::erfc(a); }, library);
  } else {
    return std::erfc(x);
  }
}
}  // namespace vm

/// For f32 batches: 1 + erf(x / sqrt(2)) (twice the standard normal CDF) and
/// exp(-x^2 / 2), the pieces of gelu and its derivative. For |x / sqrt(2)| = z < 2/3,
/// erf(z) / z is a polynomial in z^2; above, erfc(z) exp(z^2) is a polynomial in
/// z / (1 + z) - 0.65 (fitted on [2/3, 12], where exp(-z^2) reaches float's underflow), so
/// that for negative x the CDF comes as erfc itself, without 1 + erf's cancellation.
/// Chebyshev fits (mpmath.chebyfit; relative error 2e-8 and absolute 1e-9 on values >= 0.047):
/// both branches cost one exp, one division and 15 fmas, against xsimd::erf's branches.
template <class V>
inline void normal_cdf2_f32(const V& x, V& cdf2, V& e) {
  const V xs = x * V(0.70710678118654752f), z = xsimd::abs(xs), s = z * z;
  e = xsimd::exp(-s);
  V p = V(0.00436414385662f);
  p = xsimd::fma(p, s, V(-0.0265425590596f));
  p = xsimd::fma(p, s, V(0.112787301899f));
  p = xsimd::fma(p, s, V(-0.376123595832f));
  p = xsimd::fma(p, s, V(1.1283791423f));
  const V zc = xsimd::min(z, V(12.f));  // keeps u finite for x = +-inf (e is 0 there)
  const V u = zc / (V(1.f) + zc) - V(0.65f);
  V q = V(-1.9133205143025108f);
  q = xsimd::fma(q, u, V(0.0027061363287114089f));
  q = xsimd::fma(q, u, V(1.1597929984170245f));
  q = xsimd::fma(q, u, V(0.61377497179725987f));
  q = xsimd::fma(q, u, V(-0.22594176306568231f));
  q = xsimd::fma(q, u, V(-0.56763015649838403f));
  q = xsimd::fma(q, u, V(-0.22136627046679321f));
  q = xsimd::fma(q, u, V(0.41118526022163156f));
  q = xsimd::fma(q, u, V(0.48235488170842208f));
  q = xsimd::fma(q, u, V(-0.97758502825809882f));
  q = xsimd::fma(q, u, V(0.27155288661323057f));
  const V ec = e * q;  // erfc(z)
  cdf2 = xsimd::select(z < V(2.f / 3.f), V(1.f) + xs * p, xsimd::select(x < V(0.f), ec, V(2.f) - ec));
}

template <ops::UnaryOp Op>
struct UnaryFn;

#define EMBER_UNARY_FN(E, simd, ...)                           \
  template <>                                                   \
  struct UnaryFn<ops::UnaryOp::E> {                             \
    static constexpr bool kSimd = simd;                         \
    ops::UnaryParams p;                                         \
    template <class V>                                          \
    V operator()(const V& x) const {                            \
      using S = scalar_t<V>;                                    \
      (void)sizeof(S);                                          \
      __VA_ARGS__                                               \
    }                                                           \
  };

// Integer negation wraps: -INT64_MIN is INT64_MIN, as in PyTorch (computed unsigned, no UB).
// Floating negation flips the sign bit (neg(0.0) is -0.0, as PyTorch; 0 - x gave +0.0).
EMBER_UNARY_FN(Neg, true, {
  if constexpr (std::is_integral_v<S> && !is_batch_v<V>) return wrapping(S(0), x, '-');
  else if constexpr (std::is_integral_v<S>) return V(S(0)) - x;
  else return -x;
})
// abs(-0.0) is +0.0, as PyTorch (x < 0 ? -x : x kept the sign of -0.0).
EMBER_UNARY_FN(Abs, true, {
  if constexpr (std::is_unsigned_v<S>) return x;
  else if constexpr (is_batch_v<V>) return xsimd::abs(x);
  else if constexpr (std::is_integral_v<S>) return x < S(0) ? wrapping(S(0), x, '-') : x;
  else if constexpr (std::is_floating_point_v<S>) return std::fabs(x);
  else return x < S(0) ? S(-x) : S(x > S(0) ? x : S(0));
})
// sign(NaN) is 0, as PyTorch's (x > 0) - (x < 0) (NumPy gives NaN).
EMBER_UNARY_FN(Sign, true, {
  if constexpr (std::is_unsigned_v<S>) return x > S(0) ? S(1) : S(0);
  else if constexpr (is_batch_v<V>) {
    const V zero(S(0)), one(S(1));
    return vm::select(x > zero, one, vm::select(x < zero, -one, zero));
  } else return S((x > 0) - (x < 0));
})
EMBER_UNARY_FN(Exp, true, { return vm::exp_to_max(x); })
EMBER_UNARY_FN(Exp2, true, { return vm::exp2_to_max(x); })
// expm1(-0) and log1p(-0) are -0, as the C library's and PyTorch's (xsimd's batch forms
// give +0). Here only: elu and its kin call vm::expm1 for x < 0 alone.
EMBER_UNARY_FN(Expm1, true, { return vm::select(x == V(S(0)), x, vm::expm1_to_max(x)); })
EMBER_UNARY_FN(Log, true, { return vm::log(x); })
EMBER_UNARY_FN(Log2, true, { return vm::log2(x); })
EMBER_UNARY_FN(Log10, true, { return vm::log10(x); })
EMBER_UNARY_FN(Log1p, true, { return vm::select(x == V(S(0)), x, vm::log1p(x)); })
EMBER_UNARY_FN(Sqrt, true, { return vm::sqrt(x); })
EMBER_UNARY_FN(Rsqrt, true, { return V(S(1)) / vm::sqrt(x); })
EMBER_UNARY_FN(Reciprocal, true, { return V(S(1)) / x; })
EMBER_UNARY_FN(Square, true, {
  if constexpr (std::is_integral_v<S> && !is_batch_v<V>) return wrapping(x, x, '*');  // wraps, as PyTorch's
  else return x * x;
})
EMBER_UNARY_FN(Sin, true, { return vm::sin(x); })
EMBER_UNARY_FN(Cos, true, { return vm::cos(x); })
EMBER_UNARY_FN(Tan, true, { return vm::tan(x); })
EMBER_UNARY_FN(Asin, true, { return vm::asin(x); })
EMBER_UNARY_FN(Acos, true, { return vm::acos(x); })
EMBER_UNARY_FN(Atan, true, { return vm::atan(x); })
EMBER_UNARY_FN(Sinh, true, { return vm::sinh(x); })
EMBER_UNARY_FN(Cosh, true, { return vm::cosh(x); })
EMBER_UNARY_FN(Tanh, true, { return vm::tanh(x); })
EMBER_UNARY_FN(Asinh, kSimdTranscendental, { return vm::asinh(x); })
// xsimd 8.1's acosh returns a number below its domain (acosh(0) = 0, acosh(-inf) = inf).
EMBER_UNARY_FN(Acosh, kSimdTranscendental, {
  if constexpr (is_batch_v<V>) return xsimd::select(x >= V(S(1)), vm::acosh(x), V(std::numeric_limits<S>::quiet_NaN()));
  else return vm::acosh(x);
})
EMBER_UNARY_FN(Atanh, kSimdTranscendental, { return vm::atanh(x); })
EMBER_UNARY_FN(Sigmoid, true, { return V(S(1)) / (V(S(1)) + vm::exp(-x)); })
// p.a = eps when p.has_a (a negative eps is none, as in PyTorch): log(z / (1 - z)) with z
// clamped to [eps, 1 - eps]
EMBER_UNARY_FN(Logit, kSimdTranscendental, {
  V z = x;
  if (p.has_a && p.a >= 0) z = vm::select(vm::isnan(x), x, vm::min(vm::max(x, splat<V>(p.a)), splat<V>(1 - p.a)));
  return vm::log(z / (V(S(1)) - z));
})
// NaN fails x < 0 and passes through; -0 stays -0, as PyTorch's relu (clamp_min(x, 0)).
EMBER_UNARY_FN(Relu, true, { return vm::select(x < V(S(0)), V(S(0)), x); })
// NaN fails both comparisons and passes through; -0 stays -0 (PyTorch's hardtanh(0, 6)).
EMBER_UNARY_FN(Relu6, true, {
  const V zero(S(0)), six(S(6));
  return vm::select(x < zero, zero, vm::select(x > six, six, x));
})
// p.a = negative slope
EMBER_UNARY_FN(LeakyRelu, true, { return vm::select(x > V(S(0)), x, x * splat<V>(p.a)); })
// p.a = alpha
// elu, selu, celu: alpha (exp(x) - 1) for x < 0, x (scaled) otherwise, as PyTorch 2: -0 takes
// the x branch and stays -0 whatever alpha's sign (libtorch 1.13 gave a zero of alpha's sign).
EMBER_UNARY_FN(Elu, kSimdTranscendental, { return vm::select(x < V(S(0)), V(S(p.a)) * vm::expm1(x), x); })
EMBER_UNARY_FN(Selu, kSimdTranscendental, {
  constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  return V(S(kScale)) * vm::select(x < V(S(0)), V(S(kAlpha)) * vm::expm1(x), x);
})
EMBER_UNARY_FN(Celu, kSimdTranscendental, {
  return vm::select(x < V(S(0)), V(S(p.a)) * vm::expm1(x / V(S(p.a))), x);
})
EMBER_UNARY_FN(Gelu, kSimdTranscendental, {
  if constexpr (is_batch_v<V> && std::is_same_v<S, float>) {
    V cdf2, e;
    normal_cdf2_f32(x, cdf2, e);
    return V(0.5f) * x * cdf2;
  } else {  // the CDF as erfc(-x / sqrt(2)) / 2: 1 + erf cancels to 0 for negative x
    return V(S(0.5)) * x * vm::erfc(x * V(S(-0.70710678118654752440)));
  }
})
EMBER_UNARY_FN(GeluTanh, kSimdTranscendental, {
  const V k0(S(0.7978845608028654)), k1(S(0.044715));
  return V(S(0.5)) * x * (V(S(1)) + vm::tanh(k0 * (x + k1 * x * x * x)));
})
EMBER_UNARY_FN(Silu, true, { return x / (V(S(1)) + vm::exp(-x)); })
EMBER_UNARY_FN(Mish, kSimdTranscendental, {
  V sp = vm::select(x > V(S(20)), x, vm::log1p(vm::exp(x)));
  return x * vm::tanh(sp);
})
// p.a = beta, p.b = threshold: x when beta * x > threshold, else log1p(exp(beta x)) / beta
EMBER_UNARY_FN(Softplus, kSimdTranscendental, {
  V bx = V(S(p.a)) * x;
  return vm::select(bx > V(S(p.b)), x, vm::log1p(vm::exp(bx)) / V(S(p.a)));
})
EMBER_UNARY_FN(Softsign, true, { return x / (V(S(1)) + vm::abs(x)); })
/// Lower and upper bounds given in double, for comparisons in a floating type S: the integer
/// kernels compare in double (a bound outside an integer type's range must not be cast first,
/// that is UB); for a floating x the same answers come from comparisons in S, because
/// double(x) < lo exactly when x < the smallest S >= lo, and double(x) > hi exactly when x >
/// the largest S <= hi. `lo_val`/`hi_val` are the bounds as results (sat_cast, as before).
template <class S>
struct BoundsIn {
  S lo_cmp, lo_val, hi_cmp, hi_val;
  BoundsIn(double lo, bool has_lo, double hi, bool has_hi)
      : lo_cmp(has_lo ? at_or_above(lo) : -std::numeric_limits<S>::infinity()),
        lo_val(sat_cast<S>(lo)),
        hi_cmp(has_hi ? -at_or_above(-hi) : std::numeric_limits<S>::infinity()),
        hi_val(sat_cast<S>(hi)) {}
  /// The smallest S >= v (NaN stays NaN: every comparison with it is false, as in double).
  static S at_or_above(double v) {
    constexpr S kMax = std::numeric_limits<S>::max();
    if (v != v) return std::numeric_limits<S>::quiet_NaN();
    if (v > static_cast<double>(kMax)) return std::numeric_limits<S>::infinity();
    if (v < -static_cast<double>(kMax)) return v == -std::numeric_limits<double>::infinity() ? -std::numeric_limits<S>::infinity() : -kMax;
    S f = static_cast<S>(v);
    return static_cast<double>(f) < v ? std::nextafter(f, std::numeric_limits<S>::infinity()) : f;
  }
};
/// The bounds for both floating compute types, made once per op call.
struct FloatBounds {
  BoundsIn<float> f32;
  BoundsIn<double> f64;
  FloatBounds(double lo, bool has_lo, double hi, bool has_hi) : f32(lo, has_lo, hi, has_hi), f64(lo, has_lo, hi, has_hi) {}
  template <class S>
  const BoundsIn<S>& in() const {
    if constexpr (std::is_same_v<S, float>) return f32;
    else return f64;
  }
};

// p.a = min, p.b = max
template <>
struct UnaryFn<ops::UnaryOp::Hardtanh> {
  static constexpr bool kSimd = true;
  ops::UnaryParams p;
  FloatBounds bounds;
  explicit UnaryFn(const ops::UnaryParams& q) : p(q), bounds(q.a, true, q.b, true) {}
  template <class V>
  V operator()(const V& x) const {
    using S = scalar_t<V>;
    if constexpr (std::is_floating_point_v<S>) {  // NaN fails both comparisons
      const BoundsIn<S>& k = bounds.in<S>();
      // min(max(x, lo), hi), as PyTorch's: hi wins when min > max.
      V r = vm::select(x < V(k.lo_cmp), V(k.lo_val), x);
      return vm::select(r > V(k.hi_cmp), V(k.hi_val), r);
    } else {
      double v = static_cast<double>(x);
      return v > p.b || p.a > p.b ? sat_cast<S>(p.b) : (v < p.a ? sat_cast<S>(p.a) : x);
    }
  }
};
EMBER_UNARY_FN(Hardsigmoid, true, {  // NaN propagates, as in PyTorch
  return vm::select(vm::isnan(x), x, vm::min(vm::max(x / V(S(6)) + V(S(0.5)), V(S(0))), V(S(1))));
})
EMBER_UNARY_FN(Hardswish, true, { return x * vm::min(vm::max(x + V(S(3)), V(S(0))), V(S(6))) / V(S(6)); })
EMBER_UNARY_FN(Erf, kSimdTranscendental, { return vm::erf(x); })
// erfc is positive: xsimd's f32 form returned -0 far in the tail (erfc(1e30)); |r| is +0 there.
EMBER_UNARY_FN(Erfc, kSimdTranscendental, { return vm::abs(vm::erfc(x)); })
EMBER_UNARY_FN(Erfinv, false, {
  // Giles' single-precision approximation refined by two Newton steps on erf.
  if (x <= S(-1)) return x == S(-1) ? -std::numeric_limits<S>::infinity() : std::numeric_limits<S>::quiet_NaN();
  if (x >= S(1)) return x == S(1) ? std::numeric_limits<S>::infinity() : std::numeric_limits<S>::quiet_NaN();
  if (x != x) return x;
  double xd = static_cast<double>(x);
  double w = -std::log((1.0 - xd) * (1.0 + xd)), r;
  if (w < 5.0) {
    w -= 2.5;
    r = 2.81022636e-08;
    r = 3.43273939e-07 + r * w;
    r = -3.5233877e-06 + r * w;
    r = -4.39150654e-06 + r * w;
    r = 0.00021858087 + r * w;
    r = -0.00125372503 + r * w;
    r = -0.00417768164 + r * w;
    r = 0.246640727 + r * w;
    r = 1.50140941 + r * w;
  } else {
    w = std::sqrt(w) - 3.0;
    r = -0.000200214257;
    r = 0.000100950558 + r * w;
    r = 0.00134934322 + r * w;
    r = -0.00367342844 + r * w;
    r = 0.00573950773 + r * w;
    r = -0.0076224613 + r * w;
    r = 0.00943887047 + r * w;
    r = 1.00167406 + r * w;
    r = 2.83297682 + r * w;
  }
  r *= xd;
  for (int i = 0; i < 2; ++i) r -= (std::erf(r) - xd) / (1.1283791670955126 * std::exp(-r * r));
  return static_cast<S>(r);
})
// ln|Gamma(x)| and psi^(n)(x) (p.a = n; 0: digamma), computed in double and rounded once.
EMBER_UNARY_FN(Lgamma, false, { return sat_cast<S>(gamma::log_gamma(static_cast<double>(x))); })
EMBER_UNARY_FN(Digamma, false, {
  return sat_cast<S>(gamma::polygamma(static_cast<int64_t>(p.a), static_cast<double>(x)));
})
// torch::special's functions of one argument, in double and rounded once
// (kernels_cpu/special_functions.hpp).
#define EMBER_SPECIAL_FN(E, fn) EMBER_UNARY_FN(E, false, { return sat_cast<S>(cpu::special::fn(static_cast<double>(x))); })
EMBER_SPECIAL_FN(Sinc, sinc)
EMBER_SPECIAL_FN(I0, i0)
EMBER_SPECIAL_FN(I0e, i0e)
EMBER_SPECIAL_FN(I1, i1)
EMBER_SPECIAL_FN(I1e, i1e)
EMBER_SPECIAL_FN(Erfcx, erfcx)
EMBER_SPECIAL_FN(Entr, entr)
EMBER_SPECIAL_FN(Ndtr, ndtr)
EMBER_SPECIAL_FN(Ndtri, ndtri)
EMBER_SPECIAL_FN(LogNdtr, log_ndtr)
#undef EMBER_SPECIAL_FN
EMBER_UNARY_FN(Floor, true, {
  if constexpr (std::is_integral_v<S>) return x;
  else return vm::floor(x);
})
EMBER_UNARY_FN(Ceil, true, {
  if constexpr (std::is_integral_v<S>) return x;
  else return vm::ceil(x);
})
EMBER_UNARY_FN(Round, true, {
  if constexpr (std::is_integral_v<S>) return x;
  else return vm::round_even(x);
})
EMBER_UNARY_FN(Trunc, true, {
  if constexpr (std::is_integral_v<S>) return x;
  else return vm::trunc(x);
})
EMBER_UNARY_FN(Frac, true, { return x - vm::trunc(x); })
// p.a/p.has_a = min, p.b/p.has_b = max; NaN propagates; the max wins when min > max
template <>
struct UnaryFn<ops::UnaryOp::Clamp> {
  static constexpr bool kSimd = true;
  ops::UnaryParams p;
  FloatBounds bounds;
  /// Both bounds given and one of them NaN: every result is NaN (PyTorch; one NaN bound alone
  /// is ignored).
  bool nan_bound;
  explicit UnaryFn(const ops::UnaryParams& q)
      : p(q), bounds(q.a, q.has_a, q.b, q.has_b), nan_bound(q.has_a && q.has_b && (q.a != q.a || q.b != q.b)) {}
  template <class V>
  V operator()(const V& x) const {
    using S = scalar_t<V>;
    if constexpr (std::is_floating_point_v<S>)
      if (nan_bound) return V(std::numeric_limits<S>::quiet_NaN());
    if constexpr (std::is_same_v<S, bool>) {
      bool r = x;
      if (p.has_a) r = r || (p.a != 0);
      if (p.has_b) r = r && (p.b != 0);
      return r;
    } else if constexpr (std::is_floating_point_v<S>) {  // NaN fails both comparisons
      const BoundsIn<S>& k = bounds.in<S>();
      V r = vm::select(x < V(k.lo_cmp), V(k.lo_val), x);
      return vm::select(r > V(k.hi_cmp), V(k.hi_val), r);
    } else {  // the bounds converted to S, as PyTorch's (Tensor::clamp checked that they fit)
      S r = x;
      if (p.has_a && r < static_cast<S>(p.ia)) r = static_cast<S>(p.ia);
      if (p.has_b && r > static_cast<S>(p.ib)) r = static_cast<S>(p.ib);
      return r;
    }
  }
};
// p.a = nan value, p.b = +inf value (p.has_a: given), p.c = -inf value (p.has_b: given)
EMBER_UNARY_FN(NanToNum, true, {
  if constexpr (std::is_floating_point_v<S>) {
    constexpr S kInf = std::numeric_limits<S>::infinity();
    const V nan_val(S(p.a)), pos_val(p.has_a ? S(p.b) : std::numeric_limits<S>::max()),
        neg_val(p.has_b ? S(p.c) : std::numeric_limits<S>::lowest());
    return vm::select(vm::isnan(x), nan_val, vm::select(x == V(kInf), pos_val, vm::select(x == V(-kInf), neg_val, x)));
  } else {
    return x;
  }
})
#undef EMBER_UNARY_FN

/// bitwise_not over integers and bool.
struct BitwiseNotFn {
  static constexpr bool kSimd = false;
  template <class S>
  S operator()(S v) const {
    if constexpr (std::is_same_v<S, bool>) return !v;
    else return static_cast<S>(~v);
  }
};

// Ops whose result type differs from the input (bool out) are handled in the kernel directly.

// ---- binary -----------------------------------------------------------------------------------
/// Integer ops that have no answer (division by zero) set this flag; the
/// kernel turns it into an ember::Error after the loop.
inline thread_local bool t_integer_fault = false;

template <ops::BinaryOp Op>
struct BinaryFn;

#define EMBER_BINARY_FN(E, simd, ...)            \
  template <>                                     \
  struct BinaryFn<ops::BinaryOp::E> {             \
    static constexpr bool kSimd = simd;           \
    static constexpr ops::BinaryOp kOp = ops::BinaryOp::E; \
    template <class V>                            \
    V operator()(const V& a, const V& b) const {  \
      using S = scalar_t<V>;                      \
      (void)sizeof(S);                            \
      __VA_ARGS__                                 \
    }                                             \
  };

template <class S>
inline S int_div_trunc(S a, S b) {
  if (b == 0) {
    t_integer_fault = true;
    return 0;
  }
  if constexpr (std::is_signed_v<S>) {
    if (b == S(-1)) return static_cast<S>(-static_cast<std::make_unsigned_t<S>>(a));  // no overflow trap
  }
  return static_cast<S>(a / b);
}
template <class S>
inline S int_mod_trunc(S a, S b) {
  if (b == 0) {
    t_integer_fault = true;
    return 0;
  }
  if constexpr (std::is_signed_v<S>) {
    if (b == S(-1)) return 0;
  }
  return static_cast<S>(a % b);
}

/// fmod over batches, exactly (fmod's result is always representable): q = trunc(a / b) is
/// the true truncated quotient or one more in magnitude when a / b rounds up to an integer,
/// and a - q * b in one fma rounding is exact either way (it is a multiple of b's ulp smaller
/// than |b|, or of a's when |a| < |b|); the second case has the wrong sign and gets |b| back.
/// Lanes with |a / b| >= 2^(digits - 1) (where that argument needs more bits), b = 0, inf or
/// NaN take std::fmod.
template <class V>
inline V fmod_batch(const V& a, const V& b) {
  using S = scalar_t<V>;
  constexpr S kMaxQuotient = S(1) * static_cast<S>(uint64_t{1} << (std::numeric_limits<S>::digits - 1));
  const V q = xsimd::trunc(a / b);
  if (!xsimd::all(xsimd::abs(q) < V(kMaxQuotient) && xsimd::abs(b) < V(std::numeric_limits<S>::infinity())))
    return per_lane(a, b, [](S x, S y) { return std::fmod(x, y); });
  V r = xsimd::fnma(q, b, a);
  const V zero(S(0));
  r = xsimd::select(r != zero && ((r < zero) != (a < zero)), r + xsimd::copysign(b, a), r);
  return xsimd::select(r == zero, xsimd::copysign(zero, a), r);
}

EMBER_BINARY_FN(Add, true, {
  if constexpr (std::is_same_v<S, bool>) return a || b;
  else if constexpr (std::is_integral_v<S> && !is_batch_v<V>) return wrapping(a, b, '+');
  else return a + b;
})
EMBER_BINARY_FN(Sub, true, {
  if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool> && !is_batch_v<V>) return wrapping(a, b, '-');
  else return a - b;
})
EMBER_BINARY_FN(Mul, true, {
  if constexpr (std::is_same_v<S, bool>) return a && b;
  else if constexpr (std::is_integral_v<S> && !is_batch_v<V>) return wrapping(a, b, '*');
  else return a * b;
})
EMBER_BINARY_FN(Div, true, { return a / b; })
EMBER_BINARY_FN(DivTrunc, true, {
  if constexpr (std::is_integral_v<S>) return int_div_trunc(a, b);
  else return vm::trunc(a / b);
})
// PyTorch's floor division of floats: from fmod, so that the quotient is exact.
EMBER_BINARY_FN(DivFloor, kHasFma, {
  if constexpr (std::is_integral_v<S>) {
    S q = int_div_trunc(a, b);
    if constexpr (std::is_signed_v<S>) {
      if (b != 0 && (a % (b == -1 ? 1 : b)) != 0 && ((a < 0) != (b < 0))) --q;
    }
    return q;
  } else if constexpr (is_batch_v<V>) {
    const V zero(S(0)), one(S(1));
    const V m = fmod_batch(a, b);
    V d = (a - m) / b;
    d = xsimd::select(m != zero && ((b < zero) != (m < zero)), d - one, d);
    V f = xsimd::floor(d);
    f = xsimd::select(d - f > V(S(0.5)), f + one, f);
    f = xsimd::select(d == zero, xsimd::copysign(zero, a / b), f);
    return xsimd::select(b == zero, a / b, f);
  } else {
    if (b == S(0)) return a / b;
    S m = std::fmod(a, b);
    S d = (a - m) / b;
    if (m != S(0) && ((b < S(0)) != (m < S(0)))) d -= S(1);
    S f = std::floor(d);
    if (d - f > S(0.5)) f += S(1);
    return d == S(0) ? std::copysign(S(0), a / b) : f;
  }
})
EMBER_BINARY_FN(Remainder, kHasFma, {
  if constexpr (std::is_integral_v<S>) {
    S r = int_mod_trunc(a, b);
    if constexpr (std::is_signed_v<S>) {
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
    }
    return r;
  } else if constexpr (is_batch_v<V>) {
    const V zero(S(0)), r = fmod_batch(a, b);
    return xsimd::select(r != zero && ((r < zero) != (b < zero)), r + b, r);
  } else {
    S r = std::fmod(a, b);
    if (r != S(0) && ((r < S(0)) != (b < S(0)))) r += b;
    return r;
  }
})
EMBER_BINARY_FN(Fmod, kHasFma, {
  if constexpr (std::is_integral_v<S>) return int_mod_trunc(a, b);
  else if constexpr (is_batch_v<V>) return fmod_batch(a, b);
  else return std::fmod(a, b);
})
EMBER_BINARY_FN(Pow, false, {
  if constexpr (std::is_same_v<S, bool>) return a || !b;
  else if constexpr (std::is_integral_v<S>) {
    if constexpr (std::is_signed_v<S>) {
      if (b < 0) {  // PyTorch's: 1, +-1 for -1, else 0 (a negative scalar exponent is refused earlier)
        if (a == 1) return S(1);
        if (a == -1) return (b & 1) ? S(-1) : S(1);
        return S(0);
      }
    }
    using U = std::make_unsigned_t<S>;
    U r = 1, base = static_cast<U>(a);
    for (S e = b; e > 0; e >>= 1) {
      if (e & 1) r = static_cast<U>(r * base);
      base = static_cast<U>(base * base);
    }
    return static_cast<S>(r);
  } else {
    return std::pow(a, b);
  }
})
// xsimd's atan2 gives NaN for 0/0 and inf/inf; std::atan2 gives the signed angles there.
EMBER_BINARY_FN(Atan2, kSimdTranscendental, {
  if constexpr (is_batch_v<V>) {
    const V zero(S(0)), inf(std::numeric_limits<S>::infinity());
    const auto both_zero = a == zero && b == zero, both_inf = xsimd::abs(a) == inf && xsimd::abs(b) == inf;
    if (xsimd::any(both_zero || both_inf)) return per_lane(a, b, [](S x, S y) { return std::atan2(x, y); });
    return xsimd::atan2(a, b);
  } else {
    return std::atan2(a, b);
  }
})
// maximum/minimum propagate NaN (a + b is NaN when either is); fmax/fmin return the other
// operand when one is NaN. Ties (+0 vs -0) return a, in scalar and vector code alike.
EMBER_BINARY_FN(Maximum, true, {
  if constexpr (std::is_floating_point_v<S>) return vm::select(vm::isnan(a) || vm::isnan(b), a + b, vm::select(a >= b, a, b));
  else return a >= b ? a : b;
})
EMBER_BINARY_FN(Minimum, true, {
  if constexpr (std::is_floating_point_v<S>) return vm::select(vm::isnan(a) || vm::isnan(b), a + b, vm::select(a <= b, a, b));
  else return a <= b ? a : b;
})
EMBER_BINARY_FN(Fmax, true, {
  if constexpr (std::is_floating_point_v<S>) return vm::select(a >= b || vm::isnan(b), a, b);
  else return a >= b ? a : b;
})
EMBER_BINARY_FN(Fmin, true, {
  if constexpr (std::is_floating_point_v<S>) return vm::select(a <= b || vm::isnan(b), a, b);
  else return a <= b ? a : b;
})
// sqrt(a^2 + b^2) with one fma (within an ulp of std::hypot) where the squares can neither
// overflow nor lose precision to underflow; std::hypot's scaling for the other lanes.
EMBER_BINARY_FN(Hypot, kHasFma, {
  if constexpr (is_batch_v<V>) {
    constexpr int kE = std::numeric_limits<S>::max_exponent / 2 - 4;  // 2^kE squared is far from overflow
    const V m = xsimd::max(xsimd::abs(a), xsimd::abs(b));
    if (!xsimd::all((m < V(std::ldexp(S(1), kE)) && m > V(std::ldexp(S(1), -kE))) || m == V(S(0))))
      return per_lane(a, b, [](S x, S y) { return std::hypot(x, y); });
    return xsimd::sqrt(xsimd::fma(a, a, b * b));
  } else if constexpr (kHasFma) {  // the same formula as the batches, so tails agree with them
    constexpr int kE = std::numeric_limits<S>::max_exponent / 2 - 4;
    const S m = std::max(std::abs(a), std::abs(b));
    if ((m < std::ldexp(S(1), kE) && m > std::ldexp(S(1), -kE)) || m == S(0)) return std::sqrt(std::fma(a, a, b * b));
    return std::hypot(a, b);
  } else {
    return std::hypot(a, b);
  }
})
// x log(y) and x log1p(y), 0 where x is 0 unless y is NaN (PyTorch's and SciPy's): the
// entropy terms p log p of distributions with zero probabilities.
EMBER_BINARY_FN(Xlogy, kSimdTranscendental, {
  const V zero(S(0));
  return vm::select(a == zero && !vm::isnan(b), zero, a * vm::log(b));
})
EMBER_BINARY_FN(Xlog1py, kSimdTranscendental, {
  const V zero(S(0));
  const V l = vm::select(b == zero, b, vm::log1p(b));  // log1p(-0) = -0 (xsimd's gives +0), as the log1p op
  return vm::select(a == zero && !vm::isnan(b), zero, a * l);
})
// log(e^a + e^b) as max + log1p(e^-|a - b|): no overflow, and exact where one side dominates.
// Equal infinities give themselves (a - b would be NaN); a NaN on either side gives NaN.
EMBER_BINARY_FN(LogAddExp, kSimdTranscendental, {
  const V inf(std::numeric_limits<S>::infinity());
  // exp_to_max keeps the subnormal results that xsimd's exp flushes (they matter when max is tiny).
  const V r = vm::max(a, b) + vm::log1p(vm::exp_to_max(-vm::abs(a - b)));
  return vm::select(a == b && vm::abs(a) == inf, a, r);
})
EMBER_BINARY_FN(LogAddExp2, kSimdTranscendental, {
  const V inf(std::numeric_limits<S>::infinity());
  // Divided by ln 2 (not times 1 / ln 2): log1p(1) / ln 2 is exactly 1, so equal operands give
  // a + 1 exactly (the product rounds to 1 - 2^-24 in f32, and -1 with -1 to -0 in f16).
  const V r = vm::max(a, b) + vm::log1p(vm::exp2_to_max(-vm::abs(a - b))) / V(S(0.69314718055994530942));
  return vm::select(a == b && vm::abs(a) == inf, a, r);
})
// The step function: b where a is 0, else 1 where a > 0 and 0 below (NaN included, as PyTorch).
EMBER_BINARY_FN(Heaviside, true, {
  if constexpr (std::is_same_v<S, bool>) return a ? a : b;
  else if constexpr (std::is_integral_v<S>) return a == S(0) ? b : static_cast<S>(a > S(0));
  else return vm::select(a == V(S(0)), b, vm::select(a > V(S(0)), V(S(1)), V(S(0))));
})
EMBER_BINARY_FN(Copysign, true, {
  if constexpr (is_batch_v<V>) return xsimd::copysign(a, b);
  else return std::copysign(a, b);
})
// grad * (Phi(x) + x phi(x)), Phi and phi the standard normal CDF and density.
EMBER_BINARY_FN(GeluBackward, kSimdTranscendental, {
  const V x = b;
  if constexpr (is_batch_v<V> && std::is_same_v<S, float>) {
    V cdf2, e;
    normal_cdf2_f32(x, cdf2, e);
    return a * xsimd::fma(x * V(0.39894228040143267794f), e, V(0.5f) * cdf2);
  } else {
    const V cdf = V(S(0.5)) * vm::erfc(x * V(S(-0.70710678118654752440)));
    const V pdf = vm::exp(x * x * V(S(-0.5))) * V(S(0.39894228040143267794));
    return a * (cdf + x * pdf);
  }
})
// grad * s (1 + x (1 - s)), s = sigmoid(x).
EMBER_BINARY_FN(SiluBackward, kSimdTranscendental, {
  const V x = b, one(S(1));
  const V s = one / (one + vm::exp(-x));
  return a * (s * (one + x * (one - s)));
})
EMBER_BINARY_FN(ReluBackward, true, {
  return vm::select(b <= V(S(0)), V(S(0)), a);  // not (b > 0): NaN passes the gradient
})
EMBER_BINARY_FN(BitwiseAnd, false, { return static_cast<V>(a & b); })
EMBER_BINARY_FN(BitwiseOr, false, { return static_cast<V>(a | b); })
EMBER_BINARY_FN(BitwiseXor, false, { return static_cast<V>(a ^ b); })
EMBER_BINARY_FN(ShiftLeft, false, {
  using U = std::make_unsigned_t<S>;
  if (b < 0 || b >= S(sizeof(S) * 8)) return S(0);
  return static_cast<S>(static_cast<U>(a) << b);
})
EMBER_BINARY_FN(ShiftRight, false, {
  if (b < 0 || b >= S(sizeof(S) * 8)) return (std::is_signed_v<S> && a < 0) ? S(-1) : S(0);
  return static_cast<S>(a >> b);
})
#undef EMBER_BINARY_FN

/// Comparison and logical ops: bool result from two operands of the compute type.
template <class S>
inline bool compare(ops::BinaryOp op, S a, S b) {
  switch (op) {
    case ops::BinaryOp::Eq: return a == b;
    case ops::BinaryOp::Ne: return a != b;
    case ops::BinaryOp::Lt: return a < b;
    case ops::BinaryOp::Le: return a <= b;
    case ops::BinaryOp::Gt: return a > b;
    case ops::BinaryOp::Ge: return a >= b;
    case ops::BinaryOp::LogicalAnd: return (a != S(0)) && (b != S(0));
    case ops::BinaryOp::LogicalOr: return (a != S(0)) || (b != S(0));
    case ops::BinaryOp::LogicalXor: return (a != S(0)) != (b != S(0));
    default: return false;
  }
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
