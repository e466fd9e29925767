#pragma once
/// The derivatives of the special functions whose textbook formulas cancel or overflow
/// somewhere in range (autograd/derivatives.hpp calls these). Each is written with Ember ops,
/// so it can be differentiated again, and each switches between two forms with where: the
/// branch a where discards still receives a zero gradient in double backward, so its input is
/// clamped to where that branch is finite (0 * inf would make NaN).

#include <ember/ops/functions.hpp>

#include <numbers>

namespace ember::autograd::detail {

/// sinc'(x) = (cos(pi x) - sinc(x)) / x. Near 0 both terms are 1 - O(x^2) and cancel (the
/// gradient at 6e-8 came out 0.3% off), so below |x| = 0.1 the Taylor series
/// pi^2 x sum_k (-1)^k 2k t^(k-1) / (2k+1)!, t = (pi x)^2, to k = 6 (the next term is 1e-17
/// of the sum there).
template <class P>
BasicTensor<P> sinc_derivative(const BasicTensor<P>& x) {
  constexpr double pi = std::numbers::pi;
  const BasicTensor<P> small = x.abs().lt(0.1);
  const BasicTensor<P> xs = where(small, x, 0.0);  // the series' input
  const BasicTensor<P> xl = where(small, 1.0, x);  // the quotient's: never 0
  const BasicTensor<P> t = (xs * pi).square();
  const BasicTensor<P> series =
      xs * (pi * pi) *
      (((((t * (1.0 / 518918400) - 1.0 / 3991680) * t + 1.0 / 45360) * t - 1.0 / 840) * t + 1.0 / 30) * t - 1.0 / 3);
  // + 0: the series is -0 at x = 0, and sinc'(0) is +0 (as PyTorch's).
  return where(small, series + 0.0, ((xl * pi).cos() - xl.sinc()) / xl);
}

/// I1'(x) = I0(x) - I1(x) / x, as I0(x) (1 - (i1e(x) / i0e(x)) / x): I0 - I1/x is inf - inf
/// once both overflow (|x| > 714 in f64, 89 in f32), where the product is inf. Near 0 the
/// form's own derivative takes I1'/x - I1/x^2, two terms of size 1/(2x) that cancel to O(x)
/// (the second derivative at 1e-40 came out 5e24), so below |x| = 0.01 the series
/// 1/2 + 3x^2/16 + 5x^4/384 + 7x^6/18432 (the next term is below 1e-21). +-inf are taken at
/// +-1e4, where I0 is already inf in every dtype (at inf itself i1e / i0e is 0 / 0); through a
/// where, so that NaN still reaches the second derivative (nan_to_num's gradient drops it).
template <class P>
BasicTensor<P> bessel_i1_derivative(const BasicTensor<P>& x) {
  const BasicTensor<P> small = x.abs().lt(0.01);
  const BasicTensor<P> finite = where(x.isinf(), x.sign() * 1e4, x);
  const BasicTensor<P> xs = where(small, x, 0.0), xl = where(small, 1.0, finite);
  const BasicTensor<P> s = xs.square();
  const BasicTensor<P> series = ((s * (7.0 / 18432) + 5.0 / 384) * s + 3.0 / 16) * s + 0.5;
  return where(small, series, xl.i0() * (1.0 - xl.i1e() / (xl.i0e() * xl)));
}

/// i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1 / x); below |x| = 0.01 the same as e^-|x| (I1'(x) -
/// sign(x) I1(x)) with I1' from its series (the form above cancels there in its derivative).
template <class P>
BasicTensor<P> bessel_i1e_derivative(const BasicTensor<P>& x) {
  const BasicTensor<P> small = x.abs().lt(0.01);
  const BasicTensor<P> xs = where(small, x, 0.0), xl = where(small, 1.0, x);
  const BasicTensor<P> near_zero = (bessel_i1_derivative(xs) - xs.sign() * xs.i1()) * xs.abs().neg().exp();
  return where(small, near_zero, xl.i0e() - xl.i1e() * (xl.sign() + xl.reciprocal()));
}

/// erfcx'(x) = 2x erfcx(x) - 2/sqrt(pi). For large x both terms are near 2/sqrt(pi) and the
/// difference, -1/(sqrt(pi) x^2), loses eps x^2 of itself (all of it by x = 1e8 in f64); above
/// x = 50 in f64 (10 in the narrower dtypes, whose eps is larger) the asymptotic series
/// -1/(sqrt(pi) x^2) (1 - 3/(2x^2) + 15/(4x^4) - 105/(8x^6) + 945/(16x^8)), whose next term
/// is below 4e-15 at 50 (3e-8 at 10).
template <class P>
BasicTensor<P> erfcx_derivative(const BasicTensor<P>& x) {
  const double two_over_sqrt_pi = std::numbers::inv_sqrtpi * 2;
  const double from = x.dtype() == DType::F64 ? 50.0 : 10.0;
  const BasicTensor<P> large = x.gt(from);
  const BasicTensor<P> xb = where(large, x, from), xf = where(large, 1.0, x);
  const BasicTensor<P> r = xb.square().reciprocal();
  const BasicTensor<P> series =
      r * (-std::numbers::inv_sqrtpi) * ((((r * (945.0 / 16) - 105.0 / 8) * r + 15.0 / 4) * r - 1.5) * r + 1.0);
  return where(large, series, xf * xf.erfcx() * 2.0 - two_over_sqrt_pi);
}

/// (log Phi)'(x) = phi(x) / Phi(x). Below 0 as sqrt(2/pi) / erfcx(-x / sqrt 2), finite where
/// phi and Phi both underflow (about |x| far in the tail, +inf at -inf); above 0 as
/// phi(x) / Phi(x) directly, where erfcx(-x / sqrt 2) would overflow (its derivative gave
/// inf / inf there). The second derivative (tending to -1 in the lower tail) squares erfcx
/// on its way and overflows below x = -1.3e154 (f64).
template <class P>
BasicTensor<P> log_ndtr_derivative(const BasicTensor<P>& x) {
  const double inv_sqrt_2pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;
  const BasicTensor<P> upper = x.gt(0.0);
  const BasicTensor<P> xu = where(upper, x, 0.0), xl = where(upper, 0.0, x);
  const BasicTensor<P> lower_form = (xl * (-1 / std::numbers::sqrt2)).erfcx().reciprocal() * (2 * inv_sqrt_2pi);
  const BasicTensor<P> upper_form = (xu.square() * -0.5).exp() * inv_sqrt_2pi / xu.ndtr();
  return where(upper, upper_form, lower_form);
}

}  // namespace ember::autograd::detail
