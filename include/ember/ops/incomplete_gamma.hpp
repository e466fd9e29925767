#pragma once
/// The regularized incomplete gamma functions, as libtorch's: igamma(a, x) = P(a, x), the
/// lower one (torch::special::gammainc), and igammac(a, x) = Q(a, x) = 1 - P(a, x), the upper
/// one (gammaincc). P(a, x) is the Gamma(a, 1) distribution's CDF at x.
///
///   Tensor cdf = special::gammainc(shape, x / scale);   // Gamma(shape, scale) CDF
///   Tensor p_value = igammac(dof / 2, chi2 / 2);        // chi-squared upper tail
///
/// a, x >= 0, broadcast, any floating dtype (integers promote with a floating operand); NaN
/// where a or x is negative, and PyTorch's values at the edges (P(0, x > 0) = 1, P(a, 0) = 0,
/// P(inf, finite x) = 0, P(a, inf) = 1). Computed on the host in double and rounded once: for
/// x <= 1.5 and a < 1 by the alternating series (Q of a tiny a without cancelling), else by the
/// power series below x = a + 1 and the continued fraction above it (about 9 sqrt(a) terms near
/// x = a), and for a > 1e9 near x = a by Temme's uniform expansion; about 1e-12 relative where
/// the value is a normal double (checked against 50-digit references). Differentiable in x
/// (dP/dx = x^(a-1) e^-x / Gamma(a), to any order); the derivative in a is not implemented, as
/// PyTorch's: a backward from an a that requires grad fails (PyTorch fails only when a's
/// gradient is asked for; Ember also when only x's is, through autograd::grad).

#include <ember/autograd/function.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/special_ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

namespace ember {

namespace detail {

/// lgamma(1 + a), accurate for small |a| (where 1 + a would round a away): its Taylor series
/// -gamma a + sum_k zeta(k) (-a)^k / k.
inline double lgamma1p(double a) {
  if (std::abs(a) >= 0.01) {
    int sign = 0;
    return lgamma_r(1 + a, &sign);  // lgamma_r: lgamma's sign is a global in glibc
  }
  constexpr double zeta[] = {1.6449340668482264, 1.2020569031595943, 1.0823232337111382, 1.0369277551433699,
                             1.0173430619844491, 1.0083492773819228, 1.0040773561979443, 1.0020083928260822};
  double sum = -0.57721566490153286061 * a, power = -a;
  for (int k = 2; k < 10; ++k) {
    power *= -a;
    sum += zeta[k - 2] / k * power;
  }
  return sum;
}
/// log(1 + t) - t without cancelling for small |t|.
inline double log1pmx(double t) {
  if (std::abs(t) >= 0.1) return std::log1p(t) - t;
  double sum = 0, power = t;  // sum_k (-1)^(k+1) t^k / k from k = 2
  for (int k = 2; k < 60; ++k) {
    power *= -t;
    const double term = power / k;
    sum += term;
    if (std::abs(term) < 1e-17 * std::abs(sum)) break;
  }
  return sum;
}
/// log(x^a e^-x / Gamma(a)). For large a as a log1pmx((x - a) / a) + log(a / 2 pi) / 2 minus
/// Stirling's remainder: its terms are then small, where a log x - x - lgamma(a) subtracts
/// numbers of size a (an error of a eps).
inline double log_gamma_front(double a, double x) {
  if (a < 16) {
    int sign = 0;
    return a * std::log(x) - x - lgamma_r(a, &sign);
  }
  const double a2 = a * a;  // lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2)
  const double stirling = (1.0 / 12 - (1.0 / 360 - (1.0 / 1260 - (1.0 / 1680 - 1.0 / (1188 * a2)) / a2) / a2) / a2) / a;
  // a (log(x / a) - t), t = (x - a) / a: by log1pmx near x = a, else directly (1 + t would
  // round away the digits of an x far below a).
  const double t = (x - a) / a;
  const double main = std::abs(t) < 0.5 ? a * log1pmx(t) : a * std::log(x / a) - (x - a);
  return main + 0.5 * std::log(a / (2 * std::numbers::pi)) - stirling;
}

/// P(a, x) (lower) or Q(a, x) for finite a, x > 0.
inline double incomplete_gamma_inner(double a, double x, bool lower) {
  if (a > 1e9 && std::abs(x - a) < 0.3 * a) {
    // Temme's uniform expansion, its first two terms (the next is a^-3/2 of the whole):
    // Q = erfc(eta sqrt(a / 2)) / 2 + e^(-a eta^2 / 2) / sqrt(2 pi a) c0(eta), with
    // eta^2 / 2 = lambda - 1 - log lambda, lambda = x / a, c0 = 1 / (lambda - 1) - 1 / eta.
    const double d = (x - a) / a, eta2 = -2 * log1pmx(d), eta = std::copysign(std::sqrt(std::max(eta2, 0.0)), d);
    const double c0 = std::abs(eta) < 1e-3 ? -1.0 / 3 + eta / 12 : 1 / d - 1 / eta;
    const double r = std::exp(-a * eta2 / 2) / std::sqrt(2 * std::numbers::pi * a) * c0;
    const double z = eta * std::sqrt(a / 2);
    return lower ? 0.5 * std::erfc(-z) - r : 0.5 * std::erfc(z) + r;
  }
  constexpr int kMaxTerms = 2000000;  // ~9 sqrt(a) are needed near x = a (a <= 1e9 here)
  if (x <= 1.5 && a < 1) {
    // P = x^a / Gamma(a + 1) (1 + a sum_{n >= 1} (-x)^n / (n! (a + n))), and Q = 1 - P with its
    // 1 - x^a / Gamma(a + 1) taken by expm1: Q of a tiny a does not cancel.
    double sum = 0, term = 1;
    for (int n = 1; n < 200; ++n) {
      term *= -x / n;
      const double add = term / (a + n);
      sum += add;
      if (std::abs(add) < 1e-17 * std::abs(sum)) break;
    }
    const double log_front = a * std::log(x) - lgamma1p(a), front = std::exp(log_front);
    return lower ? front * (1 + a * sum) : -std::expm1(log_front) - front * a * sum;
  }
  const double log_front = log_gamma_front(a, x);
  if (x < a + 1) {
    // P = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n)): terms fall once n > x - a.
    double term = 1, sum = 1;
    for (int n = 1; n < kMaxTerms && std::abs(term) > std::abs(sum) * 1e-17; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    const double p = sum * std::exp(log_front) / a;
    return lower ? p : 1.0 - p;
  }
  // Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))),
  // evaluated forward by the modified Lentz method.
  constexpr double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < kMaxTerms; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::abs(step - 1) < 1e-16) break;
  }
  const double q = std::exp(log_front) * h;
  return lower ? 1.0 - q : q;
}

/// P(a, x) or Q(a, x) with PyTorch's values at the edges (checked in its order: P(NaN, 0) = 0,
/// P(NaN, inf) = 1, P(inf, NaN) = 0), NaN elsewhere outside a, x > 0 finite; within [0, 1].
inline double incomplete_gamma(double a, double x, bool lower) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a < 0 || x < 0) return nan;
  if (a == 0) return x > 0 ? (lower ? 1.0 : 0.0) : nan;
  if (x == 0) return lower ? 0.0 : 1.0;
  if (std::isinf(a)) return std::isinf(x) ? nan : (lower ? 0.0 : 1.0);
  if (std::isinf(x)) return lower ? 1.0 : 0.0;
  if (std::isnan(a) || std::isnan(x)) return nan;
  return std::clamp(incomplete_gamma_inner(a, x, lower), 0.0, 1.0);
}

/// The values of igamma / igammac, not recorded.
template <class P>
BasicTensor<P> incomplete_gamma_values(const BasicTensor<P>& a, const BasicTensor<P>& x, bool lower, const char* op) {
  const Shape shape = check_binary_composite(a, x, op);
  const TensorImpl* operands[] = {&a.impl(), &x.impl()};
  const DType dt = ops::result_type(operands);
  EMBER_CHECK(is_floating(dt), "[{}] expects floating tensors (or one floating and one integer), got {} and {}", op,
              a.dtype(), x.dtype());
  const BasicTensor<P> av = host_operand(a, shape, dt, DType::F64), xv = host_operand(x, shape, dt, DType::F64);
  BasicTensor<P> out = empty<P>(shape, TensorOptions(DType::F64));
  const double* ap = av.template data_ptr<double>();
  const double* xp = xv.template data_ptr<double>();
  double* o = out.template data_ptr<double>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = incomplete_gamma(ap[i], xp[i], lower);
  return out.to(a.device(), dt);
}

/// Records igamma / igammac: the gradient in x is +-x^(a-1) e^-x / Gamma(a), written with
/// differentiable ops (so its own derivatives follow); in a, not implemented (PyTorch neither).
template <class P>
struct IncompleteGamma : autograd::Function<IncompleteGamma<P>, P> {
  using T = BasicTensor<P>;
  static constexpr const char* name = "IncompleteGamma";
  static T forward(autograd::BasicAutogradContext<P>* ctx, const T& a, const T& x, bool lower) {
    ctx->save_for_backward({a, x});
    ctx->saved_data["lower"] = lower;
    return incomplete_gamma_values(a, x, lower, lower ? "igamma" : "igammac");
  }
  static std::vector<T> backward(autograd::BasicAutogradContext<P>* ctx, std::vector<T> grads) {
    const bool lower = std::any_cast<bool>(ctx->saved_data["lower"]);
    EMBER_CHECK(!ctx->needs_input_grad(0),
                "[{}] the derivative in the first argument (a) is not implemented (PyTorch's neither); detach a",
                lower ? "igamma" : "igammac");
    if (!ctx->needs_input_grad(1)) return {T(), T(), T()};
    std::vector<T> saved = ctx->get_saved_variables();
    const T& g = grads[0];
    const T a = saved[0].to(g.dtype()), x = saved[1].to(g.dtype());
    const T density = ((a - 1.0) * x.log() - x - a.lgamma()).exp();
    T gx = (lower ? g * density : g * density.neg()).sum_to_size(saved[1].sizes());
    return {T(), gx, T()};  // a, x, lower
  }
};

template <class P>
BasicTensor<P> incomplete_gamma_op(const BasicTensor<P>& a, const BasicTensor<P>& x, bool lower) {
  const char* op = lower ? "igamma" : "igammac";
  if constexpr (autograd::detail::has_autograd<P>()) {
    if (ember::detail::grad_enabled<P>() && (a.requires_grad() || x.requires_grad())) {
      (void)check_binary_composite(a, x, op);  // errors under the op's name before recording
      return IncompleteGamma<P>::apply(a, x, lower);
    }
  }
  return incomplete_gamma_values(a, x, lower, op);
}

}  // namespace detail

/// P(a, x), the regularized lower incomplete gamma function.
template <class P>
BasicTensor<P> igamma(const BasicTensor<P>& a, const BasicTensor<P>& x) {
  return detail::incomplete_gamma_op(a, x, true);
}
/// Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function.
template <class P>
BasicTensor<P> igammac(const BasicTensor<P>& a, const BasicTensor<P>& x) {
  return detail::incomplete_gamma_op(a, x, false);
}

template <class P>
BasicTensor<P> BasicTensor<P>::igamma(const BasicTensor& x) const {
  return ember::igamma(*this, x);
}
template <class P>
BasicTensor<P> BasicTensor<P>::igammac(const BasicTensor& x) const {
  return ember::igammac(*this, x);
}
template <class P>
BasicTensor<P>& BasicTensor<P>::igamma_(const BasicTensor& x) {
  return assign_result(ember::igamma(input_for_inplace(x), x), "igamma_");  // a is saved: a copy
}
template <class P>
BasicTensor<P>& BasicTensor<P>::igammac_(const BasicTensor& x) {
  return assign_result(ember::igammac(input_for_inplace(x), x), "igammac_");
}

namespace special {
template <class P>
BasicTensor<P> gammainc(const BasicTensor<P>& a, const BasicTensor<P>& x) {
  return ember::igamma(a, x);
}
template <class P>
BasicTensor<P> gammaincc(const BasicTensor<P>& a, const BasicTensor<P>& x) {
  return ember::igammac(a, x);
}
}  // namespace special

}  // namespace ember
