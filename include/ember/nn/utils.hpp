#pragma once
/// nn::utils: gradient clipping and flattening parameters into one vector.

#include <ember/autograd/grad_mode.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

namespace ember::nn::utils {

/// Scales gradients in place so that their total p-norm is at most max_norm; returns the
/// total norm before clipping (inf for p = INFINITY). Non-finite norms are an error when
/// error_if_nonfinite.
template <class P>
BasicTensor<P> clip_grad_norm_(const std::vector<BasicTensor<P>>& params, double max_norm, double norm_type = 2.0,
                               bool error_if_nonfinite = false) {
  ember::detail::NoGradGuardFor<P> ng;
  std::vector<BasicTensor<P>> norms;
  for (const auto& p : params) {
    BasicTensor<P> g = p.grad();
    if (g.defined()) norms.push_back(g.to(DType::F64).norm(norm_type).reshape({1}));
  }
  if (norms.empty()) return zeros<P>({}, TensorOptions(DType::F64));
  BasicTensor<P> all = cat(norms, 0);
  BasicTensor<P> total = std::isinf(norm_type) ? all.amax() : all.norm(norm_type);
  double t = total.template item<double>();
  EMBER_CHECK(!error_if_nonfinite || std::isfinite(t),
              "[clip_grad_norm_] the total norm of order {} of the gradients is {}; set error_if_nonfinite=false to "
              "clip anyway",
              norm_type, t);
  // Multiplied even at 1, as PyTorch: a NaN or inf total norm reaches every gradient (NaN),
  // rather than leaving the non-finite ones among finite ones.
  const double coef = std::min(max_norm / (t + 1e-6), 1.0);
  if (coef < 1.0 || !std::isfinite(t))
    for (const auto& p : params) {
      BasicTensor<P> g = p.grad();
      if (g.defined()) g.mul_(std::isnan(t) ? t : coef);
    }
  return total;
}

/// Clamps every gradient element into [-clip_value, clip_value], in place.
template <class P>
void clip_grad_value_(const std::vector<BasicTensor<P>>& params, double clip_value) {
  EMBER_CHECK(clip_value >= 0, "[clip_grad_value_] clip_value must be non-negative, got {}", clip_value);
  ember::detail::NoGradGuardFor<P> ng;
  for (const auto& p : params) {
    BasicTensor<P> g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

/// All parameters flattened and concatenated (a copy).
template <class P>
BasicTensor<P> parameters_to_vector(const std::vector<BasicTensor<P>>& params) {
  std::vector<BasicTensor<P>> flat;
  for (const auto& p : params) flat.push_back(p.reshape({-1}));
  EMBER_CHECK(!flat.empty(), "[parameters_to_vector] no parameters");
  return cat(flat, 0);
}

/// Copies consecutive slices of `vec` into the parameters (the inverse of parameters_to_vector).
template <class P>
void vector_to_parameters(const BasicTensor<P>& vec, const std::vector<BasicTensor<P>>& params) {
  int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  EMBER_CHECK(vec.dim() == 1 && vec.numel() == total,
              "[vector_to_parameters] a vector of shape {} does not hold the {} parameter elements", vec.sizes(), total);
  ember::detail::NoGradGuardFor<P> ng;
  int64_t off = 0;
  for (auto p : params) {
    p.copy_(vec.narrow(0, off, p.numel()).view(p.sizes()));
    off += p.numel();
  }
}

// Braced lists, as libtorch's callers write them: clip_grad_norm_({w, b}, 1.0).
template <class P>
BasicTensor<P> clip_grad_norm_(std::initializer_list<BasicTensor<P>> params, double max_norm, double norm_type = 2.0,
                               bool error_if_nonfinite = false) {
  return clip_grad_norm_(std::vector<BasicTensor<P>>(params), max_norm, norm_type, error_if_nonfinite);
}
template <class P>
void clip_grad_value_(std::initializer_list<BasicTensor<P>> params, double clip_value) {
  clip_grad_value_(std::vector<BasicTensor<P>>(params), clip_value);
}
template <class P>
BasicTensor<P> parameters_to_vector(std::initializer_list<BasicTensor<P>> params) {
  return parameters_to_vector(std::vector<BasicTensor<P>>(params));
}

}  // namespace ember::nn::utils
