#pragma once
/// Number-theoretic and bit-level elementwise functions, as libtorch's: gcd, lcm (integers,
/// broadcasting, PyTorch's type promotion) and frexp (mantissa and exponent of floats).
///
///   Tensor g = gcd(a, b);                    // gcd(-12, 18) = 6, gcd(0, 0) = 0
///   auto [mantissa, exponent] = frexp(x);    // x = mantissa * 2^exponent, |mantissa| in [0.5, 1)
///
/// They run on the host (a tensor on another device goes there and back), over the broadcast
/// operands in one pass; none is differentiable (integers, and frexp's pieces are steps).

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/descriptors.hpp>
#include <ember/ops/free_forms.hpp>

#include <cmath>
#include <cstdint>
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

/// gcd or lcm of broadcast integer operands, in their promoted dtype (wrapping as the dtype's
/// integers do where lcm overflows, as PyTorch's).
template <class P>
BasicTensor<P> gcd_lcm(const BasicTensor<P>& a, const BasicTensor<P>& b, bool lcm, const char* op) {
  EMBER_CHECK(a.defined() && b.defined(), "[{}] needs two defined tensors", op);
  EMBER_CHECK(a.device() == b.device(), "[{}] the tensors are on {} and {}", op, a.device(), b.device());
  const TensorImpl* operands[] = {&a.impl(), &b.impl()};
  const DType dt = ops::result_type(operands);
  EMBER_CHECK(!is_floating(dt) && dt != DType::Bool, "[{}] expects integer tensors, got {} and {}", op, a.dtype(),
              b.dtype());
  const Shape shape = ops::broadcast_shapes(a.sizes(), b.sizes(), op);
  const BasicTensor<P> x = broadcast_to(a, shape).to(kCPU, DType::I64).contiguous();
  const BasicTensor<P> y = broadcast_to(b, shape).to(kCPU, DType::I64).contiguous();
  BasicTensor<P> out = empty<P>(shape, TensorOptions(DType::I64));
  const int64_t* xv = x.template data_ptr<int64_t>();
  const int64_t* yv = y.template data_ptr<int64_t>();
  int64_t* o = out.template data_ptr<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const uint64_t mx = magnitude(xv[i]), my = magnitude(yv[i]), g = gcd_of_magnitudes(mx, my);
    if (!lcm) o[i] = static_cast<int64_t>(g);
    else o[i] = g == 0 ? 0 : static_cast<int64_t>(mx / g * my);
  }
  return out.to(a.device(), dt);
}

}  // namespace detail

/// The greatest common divisor of each pair, never negative (but gcd(INT64_MIN, 0), whose
/// magnitude int64 cannot hold); gcd(0, 0) = 0.
template <class P>
BasicTensor<P> gcd(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return detail::gcd_lcm(a, b, false, "gcd");
}
/// The least common multiple of each pair, never negative; 0 where either is 0.
template <class P>
BasicTensor<P> lcm(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return detail::gcd_lcm(a, b, true, "lcm");
}

/// (mantissa, exponent) with x = mantissa * 2^exponent and |mantissa| in [0.5, 1), as
/// torch::frexp: the mantissa in x's floating dtype, the exponent as i32; 0, infinities and NaN
/// give themselves and exponent 0.
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
  return {mantissa.to(x.device(), x.dtype()), exponent.to(x.device())};
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
