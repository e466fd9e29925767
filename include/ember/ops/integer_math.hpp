#pragma once
/// Number-theoretic and bit-level elementwise functions, as libtorch's: gcd, lcm (integers,
/// broadcasting, PyTorch's type promotion), frexp (mantissa and exponent of floats) and
/// nextafter (the neighbouring representable value).
///
///   Tensor g = gcd(a, b);                    // gcd(-12, 18) = 6, gcd(0, 0) = 0
///   auto [mantissa, exponent] = frexp(x);    // x = mantissa * 2^exponent, |mantissa| in [0.5, 1)
///
/// They run on the host (a tensor on another device goes there and back), over the broadcast
/// operands in one pass. frexp's mantissa is differentiable (2^-exponent, as PyTorch's); gcd
/// and lcm are integers; nextafter has no gradient (PyTorch has no formula).

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/descriptors.hpp>
#include <ember/ops/free_forms.hpp>
#include <ember/ops/special_ops.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace ember {

namespace detail {

/// |v| in unsigned arithmetic: |INT64_MIN| is 2^63 there, which callers cast back
/// (gcd(INT64_MIN, 0) is INT64_MIN, as PyTorch's).
inline uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }
inline uint64_t gcd_of_magnitudes(uint64_t x, uint64_t y) {
  while (y != 0) x = std::exchange(y, x % y);
  return x;
}

/// The magnitude v as PyTorch's kernels, computing in S, return it: for int and wider, v
/// wrapped to S, then std::abs there (the most negative value stays itself); for narrower
/// types, computed in int (C++'s promotion) and only then narrowed, so no second abs.
template <class S>
int64_t wrapped_magnitude(uint64_t v) {
  using U = std::make_unsigned_t<S>;
  const U u = static_cast<U>(v);
  const S s = static_cast<S>(u);  // modular (C++20)
  if constexpr (sizeof(S) < sizeof(int)) return s;
  else return s < 0 ? static_cast<S>(static_cast<U>(U(0) - u)) : s;
}
inline int64_t wrapped_magnitude(uint64_t v, DType dt) {
  switch (dt) {
    case DType::U8: return wrapped_magnitude<uint8_t>(v);
    case DType::I8: return wrapped_magnitude<int8_t>(v);
    case DType::I32: return wrapped_magnitude<int32_t>(v);
    default: return wrapped_magnitude<int64_t>(v);
  }
}

/// gcd or lcm of broadcast integer operands, in their promoted dtype (wrapping as the dtype's
/// integers do where lcm overflows, as PyTorch's).
template <class P>
BasicTensor<P> gcd_lcm(const BasicTensor<P>& a, const BasicTensor<P>& b, bool lcm, const char* op) {
  const Shape shape = check_binary_composite(a, b, op);
  const TensorImpl* operands[] = {&a.impl(), &b.impl()};
  const DType dt = ops::result_type(operands);
  EMBER_CHECK(!is_floating(dt) && dt != DType::Bool, "[{}] expects integer tensors, got {} and {}", op, a.dtype(),
              b.dtype());
  const BasicTensor<P> x = host_operand(a, shape, dt, DType::I64);
  const BasicTensor<P> y = host_operand(b, shape, dt, DType::I64);
  BasicTensor<P> out = empty<P>(shape, TensorOptions(DType::I64));
  const int64_t* xv = x.template data_ptr<int64_t>();
  const int64_t* yv = y.template data_ptr<int64_t>();
  int64_t* o = out.template data_ptr<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const uint64_t mx = magnitude(xv[i]), my = magnitude(yv[i]), g = gcd_of_magnitudes(mx, my);
    o[i] = wrapped_magnitude(!lcm ? g : g == 0 ? 0 : mx / g * my, dt);
  }
  return out.to(a.device(), dt);
}

}  // namespace detail

/// The greatest common divisor of each pair, never negative (but gcd(INT64_MIN, 0), whose
/// magnitude the dtype cannot hold, as for i32's and i8's smallest); gcd(0, 0) = 0.
template <class P>
BasicTensor<P> gcd(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return detail::gcd_lcm(a, b, false, "gcd");
}
/// The least common multiple of each pair; 0 where either is 0. Never negative unless it
/// overflows the dtype (then wrapped, and its magnitude taken there, as PyTorch's).
template <class P>
BasicTensor<P> lcm(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return detail::gcd_lcm(a, b, true, "lcm");
}

/// (mantissa, exponent) with x = mantissa * 2^exponent and |mantissa| in [0.5, 1), as
/// torch::frexp: the mantissa in x's floating dtype, the exponent as i32; 0, infinities and NaN
/// give themselves and exponent 0. The mantissa's gradient is the incoming one times
/// 2^-exponent.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> frexp(const BasicTensor<P>& x) {
  EMBER_CHECK(x.defined() && x.is_floating_point(), "[frexp] expects a floating tensor, got {}",
              x.defined() ? dtype_name(x.dtype()) : std::string_view("an undefined tensor"));
  // f64 holds every f16/bf16/f32 value and its mantissa exactly, so one f64 pass serves all.
  const BasicTensor<P> v = x.detach().to(kCPU, DType::F64).contiguous();
  BasicTensor<P> mantissa = empty_like(v);
  BasicTensor<P> exponent = empty<P>(v.sizes(), TensorOptions(DType::I32));
  const double* in = v.template data_ptr<double>();
  double* m = mantissa.template data_ptr<double>();
  int32_t* e = exponent.template data_ptr<int32_t>();
  for (int64_t i = 0; i < v.numel(); ++i) {
    int ex = 0;
    m[i] = std::isfinite(in[i]) ? std::frexp(in[i], &ex) : in[i];
    e[i] = static_cast<int32_t>(ex);
  }
  if (x.requires_grad()) {
    // Differentiable, as PyTorch's (d mantissa / dx = 2^-e): x * 2^-e, in two power-of-two
    // factors so that neither overflows for a subnormal x; each product is exact.
    BasicTensor<P> low = empty_like(v), high = empty_like(v);
    double* lo = low.template data_ptr<double>();
    double* hi = high.template data_ptr<double>();
    for (int64_t i = 0; i < v.numel(); ++i) {
      const int half = -e[i] / 2;
      lo[i] = std::ldexp(1.0, half);
      hi[i] = std::ldexp(1.0, -e[i] - half);
    }
    return {x * low.to(x.device(), x.dtype()) * high.to(x.device(), x.dtype()), exponent.to(x.device())};
  }
  return {mantissa.to(x.device(), x.dtype()), exponent.to(x.device())};
}

namespace detail {
/// The next value after x toward y in dtype dt (f64, f32 or bf16; x and y are values of it).
inline double next_toward(double x, double y, DType dt) {
  if (dt == DType::F64) return std::nextafter(x, y);
  if (dt == DType::F32) return static_cast<double>(std::nextafter(static_cast<float>(x), static_cast<float>(y)));
  // bf16: the IEEE step on its 16 bits (its values order as its bit patterns, by sign).
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  if (x == y) return y;
  if (x == 0) return static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>((std::signbit(y) ? 0x8000 : 0) | 1)));
  const uint16_t bits = BFloat16(static_cast<float>(x)).bits;
  return static_cast<float>(
      BFloat16::from_bits(static_cast<uint16_t>((x < y) == (x > 0) ? bits + 1 : bits - 1)));
}
}  // namespace detail

/// The next representable value after each element of `a` toward `b` (broadcast), as
/// torch::nextafter: f32, f64 and bf16 (PyTorch 1.13 refuses f16 too); `b` itself where they
/// are equal. Not differentiable (PyTorch has no formula either).
template <class P>
BasicTensor<P> nextafter(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  constexpr const char* op = "nextafter";
  const Shape shape = detail::check_binary_composite(a, b, op);
  const detail::TensorImpl* operands[] = {&a.impl(), &b.impl()};
  const DType dt = ops::result_type(operands);
  EMBER_CHECK(dt == DType::F32 || dt == DType::F64 || dt == DType::BF16,
              "[{}] expects f32, f64 or bf16 tensors, got {} and {}", op, a.dtype(), b.dtype());
  // A 0-d f64 1.001 beside a bf16 tensor is bf16's 1 there; f64 holds the results exactly.
  const BasicTensor<P> x = detail::host_operand(a, shape, dt, DType::F64);
  const BasicTensor<P> y = detail::host_operand(b, shape, dt, DType::F64);
  BasicTensor<P> out = empty<P>(shape, TensorOptions(DType::F64));
  const double* xv = x.template data_ptr<double>();
  const double* yv = y.template data_ptr<double>();
  double* o = out.template data_ptr<double>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = detail::next_toward(xv[i], yv[i], dt);
  return out.to(a.device(), dt);
}

template <class P>
BasicTensor<P> BasicTensor<P>::nextafter(const BasicTensor& o) const {
  return ember::nextafter(*this, o);
}
template <class P>
BasicTensor<P>& BasicTensor<P>::nextafter_(const BasicTensor& o) {
  return assign_result(ember::nextafter(*this, o), "nextafter_");
}
template <class P>
BasicTensor<P> BasicTensor<P>::gcd(const BasicTensor& o) const {
  return ember::gcd(*this, o);
}
template <class P>
BasicTensor<P> BasicTensor<P>::lcm(const BasicTensor& o) const {
  return ember::lcm(*this, o);
}
template <class P>
BasicTensor<P>& BasicTensor<P>::gcd_(const BasicTensor& o) {
  return assign_result(ember::gcd(*this, o), "gcd_");
}
template <class P>
BasicTensor<P>& BasicTensor<P>::lcm_(const BasicTensor& o) {
  return assign_result(ember::lcm(*this, o), "lcm_");
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::frexp() const {
  return ember::frexp(*this);
}

}  // namespace ember
