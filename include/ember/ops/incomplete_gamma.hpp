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
/// P(inf, finite x) = 0, P(a, inf) = 1). Computed on the host in double, by the power series
/// below x = a + 1 and the continued fraction above it, and rounded once. Differentiable in x
/// (dP/dx = x^(a-1) e^-x / Gamma(a), to any order); the derivative in a is not implemented, as
/// PyTorch's: a backward that needs it fails.

#include <ember/autograd/function.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/special_ops.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace ember {

namespace detail {

/// P(a, x) (lower) or Q(a, x) for finite a, x > 0.
inline double incomplete_gamma_inner(double a, double x, bool lower) {
  int sign = 0;
  // x^a e^-x / Gamma(a), in logs (lgamma_r: lgamma's sign is a global in glibc).
  const double log_front = a * std::log(x) - x - lgamma_r(a, &sign);
  constexpr int kMaxTerms = 1000000;
  if (x < a + 1) {
    // P = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n)): terms fall once n > x - a.
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < kMaxTerms && std::abs(term) > std::abs(sum) * 1e-17; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    const double p = sum * std::exp(log_front);
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

/// P(a, x) or Q(a, x) with PyTorch's values outside a, x > 0 finite.
inline double incomplete_gamma(double a, double x, bool lower) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return nan;
  if (a == 0) return x > 0 ? (lower ? 1.0 : 0.0) : nan;
  if (x == 0) return lower ? 0.0 : 1.0;
  if (std::isinf(a)) return std::isinf(x) ? nan : (lower ? 0.0 : 1.0);
  if (std::isinf(x)) return lower ? 1.0 : 0.0;
  return incomplete_gamma_inner(a, x, lower);
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
    if (autograd::GradMode::is_enabled() && (a.requires_grad() || x.requires_grad())) {
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
  return assign_result(ember::igamma(*this, x), "igamma_");
}
template <class P>
BasicTensor<P>& BasicTensor<P>::igammac_(const BasicTensor& x) {
  return assign_result(ember::igammac(*this, x), "igammac_");
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
