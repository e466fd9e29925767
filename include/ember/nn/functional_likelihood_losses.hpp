#pragma once
/// nn::functional's negative log-likelihood losses of count and real-valued targets, as
/// torch.nn.functional's: poisson_nll_loss and gaussian_nll_loss.

#include <ember/nn/functional.hpp>

#include <cmath>
#include <numbers>

namespace ember::nn::functional {

/// Poisson negative log-likelihood of target counts: exp(x) - t x when the input is the log
/// of the rate (log_input), else x - t log(x + eps). `full` adds Stirling's approximation of
/// log(t!), t log t - t + log(2 pi t) / 2, for targets above 1.
template <class P>
BasicTensor<P> poisson_nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, bool log_input = true,
                                bool full = false, double eps = 1e-8, LossReduction reduction = "mean") {
  detail::check_same_shape(input, target, "poisson_nll_loss");
  EMBER_CHECK(input.is_floating_point(), "[poisson_nll_loss] needs a floating-point input, got {}", input.dtype());
  BasicTensor<P> l = log_input ? input.exp() - target * input : input - target * (input + eps).log();
  if (full) {
    BasicTensor<P> stirling = target * target.log() - target + 0.5 * (2.0 * std::numbers::pi * target).log();
    l = l + where(target.gt(1.0), stirling, 0.0);
  }
  return detail::reduce(l, reduction, "poisson_nll_loss");
}

/// Gaussian negative log-likelihood of targets under means `input` and variances `var`:
/// (log(max(var, eps)) + (input - target)^2 / max(var, eps)) / 2, plus log(2 pi) / 2 with
/// `full`. var has the input's shape, or its last dim of size 1 or missing (one variance per
/// sample). Negative variances are refused. As PyTorch, var's gradient passes the clamp at
/// eps unchanged.
template <class P>
BasicTensor<P> gaussian_nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const BasicTensor<P>& var,
                                 bool full = false, double eps = 1e-6, LossReduction reduction = "mean") {
  constexpr const char* op = "gaussian_nll_loss";
  detail::check_same_shape(input, target, op);
  EMBER_CHECK(input.is_floating_point(), "[{}] needs a floating-point input, got {}", op, input.dtype());
  EMBER_CHECK(var.defined(), "[{}] needs a variance tensor", op);
  BasicTensor<P> v = var;
  if (v.sizes() != input.sizes()) {
    Shape batch = input.sizes();
    if (!batch.empty()) batch.resize(batch.size() - 1);
    Shape var_batch = v.sizes();
    if (!var_batch.empty()) var_batch.resize(var_batch.size() - 1);
    const bool per_sample = input.dim() >= 1 && v.sizes() == batch;
    const bool last_one = input.dim() >= 1 && v.dim() == input.dim() && v.size(-1) == 1 && var_batch == batch;
    EMBER_CHECK(per_sample || last_one,
                "[{}] var of shape {} must have the input's shape {}, or that shape with its last dim 1 or left out",
                op, var.sizes(), input.sizes());
    if (per_sample) v = v.unsqueeze(-1);
  }
  EMBER_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none",
              "[{}] reduction must be 'mean', 'sum' or 'none', got '{}'", op, reduction);
  EMBER_CHECK(v.numel() == 0 || v.amin().template item<double>() >= 0, "[{}] var has a negative entry: {}", op,
              v.amin().template item<double>());
  EMBER_CHECK(eps >= 0, "[{}] eps must be non-negative, got {}", op, eps);
  // max(var, eps) in value, var in gradient.
  BasicTensor<P> clamped = v + (v.detach().clamp_min(eps) - v.detach());
  BasicTensor<P> l = 0.5 * (clamped.log() + (input - target).square() / clamped);
  if (full) l = l + 0.5 * std::log(2.0 * std::numbers::pi);
  return detail::reduce(l, reduction, op);
}

}  // namespace ember::nn::functional
