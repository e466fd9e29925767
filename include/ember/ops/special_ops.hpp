#pragma once
/// Small math helpers with libtorch's names, and torch::special's namespace.
///
///   Tensor kl = special::xlogy(p, p / q).sum();        // 0 log 0 counts as 0
///   Tensor lse = logaddexp(log_a, log_b);               // log(e^a + e^b) without overflow
///   Tensor z = special::ndtri(u);                       // normal quantiles of uniforms
///   Tensor w = special::i0(beta * (1 - t.square()).sqrt()) / special::i0(beta);  // Kaiser window
///
/// The elementwise functions themselves are ops of ops/unary_list.def and binary_list.def,
/// differentiable (except signbit): sinc, i0, i0e, i1, i1e, erfcx, entr, ndtr, ndtri, log_ndtr
/// are computed in double and rounded once; xlogy, xlog1py, logaddexp, logaddexp2 and
/// heaviside are SIMD kernels in the tensor's dtype (f16/bf16 in f32). CUDA refuses them by
/// name. This header adds the composites (deg2rad, float_power, ldexp, ...) and the `special`
/// names.

#include <ember/core/tensor_methods.hpp>
#include <ember/ops/descriptors.hpp>
#include <ember/ops/functions.hpp>

#include <cmath>

namespace ember {

namespace detail {
/// The checks of a binary composite under its own name (the ops it calls would name
/// themselves); returns the broadcast shape.
template <class P>
Shape check_binary_composite(const BasicTensor<P>& a, const BasicTensor<P>& b, const char* op) {
  EMBER_CHECK(a.defined() && b.defined(), "[{}] needs two defined tensors", op);
  EMBER_CHECK(a.device() == b.device(), "[{}] the tensors are on {} and {}", op, a.device(), b.device());
  return ops::broadcast_shapes(a.sizes(), b.sizes(), op);
}

/// `v` broadcast to `shape` on the host, contiguous, its values first rounded to the op's
/// result dtype `dt` (as PyTorch's kernels see them: a 0-d i64 300 beside an i8 tensor is 44)
/// and then held in `wide`, which holds every value of dt exactly.
template <class P>
BasicTensor<P> host_operand(const BasicTensor<P>& v, const Shape& shape, DType dt, DType wide) {
  return broadcast_to(v.detach(), shape).to(kCPU, dt).to(wide).contiguous();
}
}  // namespace detail

template <class P>
BasicTensor<P> BasicTensor<P>::deg2rad() const {
  return mul(3.14159265358979323846 / 180);  // integers become the default float, as PyTorch
}
template <class P>
BasicTensor<P> BasicTensor<P>::rad2deg() const {
  return mul(180 / 3.14159265358979323846);
}
/// x itself (unary plus); bool tensors are refused, as PyTorch.
template <class P>
BasicTensor<P> BasicTensor<P>::positive() const {
  EMBER_CHECK(dtype() != DType::Bool, "[positive] is not defined for bool tensors");
  return *this;
}
/// The sign; for real tensors the same as sign(), and a bool tensor is its own sign.
template <class P>
BasicTensor<P> BasicTensor<P>::sgn() const {
  return dtype() == DType::Bool ? clone() : sign();
}
/// pow in f64 whatever the operands' dtypes (torch.float_power): exact integer powers of
/// integers beyond f32's 24 bits, and no integer overflow.
template <class P>
BasicTensor<P> BasicTensor<P>::float_power(const BasicTensor& exponent) const {
  detail::check_binary_composite(*this, exponent, "float_power");
  return to(DType::F64).pow(exponent.to(DType::F64));
}
template <class P>
BasicTensor<P> BasicTensor<P>::float_power(Scalar exponent) const {
  return to(DType::F64).pow(exponent.to_double());
}
/// x * 2^e (torch.ldexp), in the promoted floating dtype.
template <class P>
BasicTensor<P> BasicTensor<P>::ldexp(const BasicTensor& e) const {
  detail::check_binary_composite(*this, e, "ldexp");
  return mul(e.scalar_like(2.0).pow(e));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::sgn_() {
  return dtype() == DType::Bool ? *this : sign_();
}
template <class P>
BasicTensor<P>& BasicTensor<P>::float_power_(const BasicTensor& exponent) {
  EMBER_CHECK(dtype() == DType::F64, "[float_power_] the base is {}, but the result is f64: only an f64 tensor takes it "
              "in place", dtype());
  const BasicTensor base = input_for_inplace(exponent);  // x.float_power_(x): the copy on both sides
  return assign_result(base.float_power(exponent.is_same(*this) ? base : exponent), "float_power_");
}
template <class P>
BasicTensor<P>& BasicTensor<P>::float_power_(Scalar exponent) {
  EMBER_CHECK(dtype() == DType::F64, "[float_power_] the base is {}, but the result is f64: only an f64 tensor takes it "
              "in place", dtype());
  return assign_result(input_for_inplace().float_power(exponent), "float_power_");
}
template <class P>
BasicTensor<P>& BasicTensor<P>::ldexp_(const BasicTensor& e) {
  const BasicTensor base = input_for_inplace(e);
  return assign_result(base.ldexp(e.is_same(*this) ? base : e), "ldexp_");
}
template <class P>
BasicTensor<P> BasicTensor<P>::true_divide(const BasicTensor& o) const {
  detail::check_binary_composite(*this, o, "true_divide");
  return div(o);
}

template <class P>
BasicTensor<P> deg2rad(const BasicTensor<P>& x) {
  return x.deg2rad();
}
template <class P>
BasicTensor<P> rad2deg(const BasicTensor<P>& x) {
  return x.rad2deg();
}
template <class P>
BasicTensor<P> positive(const BasicTensor<P>& x) {
  return x.positive();
}
template <class P>
BasicTensor<P> sgn(const BasicTensor<P>& x) {
  return x.sgn();
}
template <class P>
BasicTensor<P> float_power(const BasicTensor<P>& x, const BasicTensor<P>& e) {
  return x.float_power(e);
}
template <class P>
BasicTensor<P> float_power(const BasicTensor<P>& x, Scalar e) {
  return x.float_power(e);
}
template <class P>
BasicTensor<P> float_power(Scalar x, const BasicTensor<P>& e) {
  return e.scalar_like(x).float_power(e);
}
template <class P>
BasicTensor<P> ldexp(const BasicTensor<P>& x, const BasicTensor<P>& e) {
  return x.ldexp(e);
}
template <class P>
BasicTensor<P> true_divide(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  return a.true_divide(b);
}

/// torch::special's names. The gamma family (gammaln, digamma, psi, polygamma, multigammaln)
/// is in ops/gamma_ops.hpp.
namespace special {
// The ones that are Ember's free functions under the same name.
using ember::entr;
using ember::erf;
using ember::erfc;
using ember::erfcx;
using ember::erfinv;
using ember::exp2;
using ember::expm1;
using ember::i0;
using ember::i0e;
using ember::i1;
using ember::i1e;
using ember::log1p;
using ember::log_ndtr;
using ember::log_softmax;
using ember::logit;
using ember::ndtr;
using ember::ndtri;
using ember::round;
using ember::sinc;
using ember::softmax;
using ember::xlog1py;
using ember::xlogy;

template <class P>
BasicTensor<P> expit(const BasicTensor<P>& x) {
  return x.sigmoid();
}
template <class P>
BasicTensor<P> logit(const BasicTensor<P>& x, double eps) {
  return x.logit(eps);
}
template <class P>
BasicTensor<P> logsumexp(const BasicTensor<P>& x, const Shape& dims, bool keepdim = false) {
  return x.logsumexp(dims, keepdim);
}
}  // namespace special

}  // namespace ember
