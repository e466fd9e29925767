#pragma once
/// nn::functional activations: the functional form of every activation module, as
/// `torch::nn::functional` has them (F::relu(x), F::leaky_relu(x, 0.2), F::gelu(x, "tanh"),
/// F::softmax(x, dim), F::rrelu(x, lo, hi, training), F::normalize(x), ...).
///
/// The forms with default options are Ember's own free functions (ember::relu,
/// ember::leaky_relu, ...) brought in by name rather than redefined, so that a call such as
/// `relu(x)` stays unambiguous where both namespaces are visible; the forms that take options
/// are overloads with the options as trailing arguments. The modules in
/// nn/modules/activation.hpp forward to these, so a check lives in one place.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>

#include <cmath>
#include <string_view>

namespace ember::nn::functional {

using ember::celu;
using ember::elu;
using ember::gelu;
using ember::hardsigmoid;
using ember::hardswish;
using ember::hardtanh;
using ember::leaky_relu;
using ember::log_softmax;
using ember::mish;
using ember::relu;
using ember::relu6;
using ember::selu;
using ember::sigmoid;
using ember::silu;
using ember::softmax;
using ember::softplus;
using ember::softsign;
using ember::tanh;

namespace detail {
// The parameter checks, shared with the inplace forms (functional_options_activation.hpp).
inline void check_leaky_relu(double negative_slope) {
  EMBER_CHECK(!std::isnan(negative_slope), "[leaky_relu] negative_slope must be a number, got {}", negative_slope);
}
inline void check_elu(double alpha) { EMBER_CHECK(!std::isnan(alpha), "[elu] alpha must be a number, got {}", alpha); }
inline void check_celu(double alpha) {
  EMBER_CHECK(alpha != 0 && !std::isnan(alpha), "[celu] alpha cannot be 0 (it divides) or NaN, got {}", alpha);
}
}  // namespace detail

template <class P>
BasicTensor<P> leaky_relu(const BasicTensor<P>& x, double negative_slope) {
  detail::check_leaky_relu(negative_slope);
  return x.leaky_relu(negative_slope);
}
template <class P>
BasicTensor<P> elu(const BasicTensor<P>& x, double alpha) {
  detail::check_elu(alpha);
  return x.elu(alpha);
}
/// max(0, x) + min(0, alpha (exp(x / alpha) - 1)); alpha 0 is refused (it divides), as PyTorch.
template <class P>
BasicTensor<P> celu(const BasicTensor<P>& x, double alpha) {
  detail::check_celu(alpha);
  return x.celu(alpha);
}
/// approximate: "none" (erf form) or "tanh".
template <class P>
BasicTensor<P> gelu(const BasicTensor<P>& x, std::string_view approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", "[gelu] approximate must be 'none' or 'tanh', got '{}'",
              approximate);
  return approximate == "tanh" ? x.gelu_tanh() : x.gelu();
}
/// log(1 + exp(beta x)) / beta, linear where beta x > threshold.
template <class P>
BasicTensor<P> softplus(const BasicTensor<P>& x, double beta, double threshold = 20.0) {
  return x.softplus(beta, threshold);
}
/// clamp(x, min_val, max_val); with min_val > max_val every element is max_val, as PyTorch's
/// functional form (the Hardtanh module refuses such bounds).
template <class P>
BasicTensor<P> hardtanh(const BasicTensor<P>& x, double min_val, double max_val) {
  return x.hardtanh(min_val, max_val);
}

/// x - tanh(x).
template <class P>
BasicTensor<P> tanhshrink(const BasicTensor<P>& x) {
  return x - x.tanh();
}
/// log(sigmoid(x)) = 0 - softplus(-x), without overflow for large |x| (+0 where softplus
/// underflows, as log(1): PyTorch's too).
template <class P>
BasicTensor<P> logsigmoid(const BasicTensor<P>& x) {
  return 0.0 - x.neg().softplus(1.0, 20.0);
}
/// 0 inside [-lambd, lambd], x outside; NaN stays NaN and passes the gradient (as PyTorch's
/// scalar kernel; its vector kernel gives 0 there).
template <class P>
BasicTensor<P> hardshrink(const BasicTensor<P>& x, double lambd = 0.5) {
  EMBER_CHECK(lambd >= 0, "[hardshrink] lambda must be non-negative, got {}", lambd);
  return where(x.ge(-lambd).logical_and(x.le(lambd)), 0.0, x);
}
/// x - lambd above lambd, x + lambd below -lambd, 0 between; NaN stays NaN (PyTorch 2's) and
/// passes the gradient, as hardshrink.
template <class P>
BasicTensor<P> softshrink(const BasicTensor<P>& x, double lambd = 0.5) {
  EMBER_CHECK(lambd >= 0, "[softshrink] lambda must be non-negative, got {}", lambd);
  return where(x.gt(lambd), x - lambd, where(x.lt(-lambd), x + lambd, where(x.isnan(), x, 0.0)));
}
/// x where x > threshold, else value; NaN stays NaN and the result keeps x's dtype.
template <class P>
BasicTensor<P> threshold(const BasicTensor<P>& x, double threshold, double value) {
  return x.scalar_like(value).to(x.dtype()).where(x.le(threshold), x);
}

/// a * sigmoid(b), where a and b are the two halves of x along dim.
template <class P>
BasicTensor<P> glu(const BasicTensor<P>& x, int64_t dim = -1) {
  EMBER_CHECK(x.dim() >= 1, "[glu] expects at least one dim, got a 0-d tensor");
  EMBER_CHECK(x.size(dim) % 2 == 0, "[glu] dim {} of shape {} must have an even size", dim, x.sizes());
  const int64_t h = x.size(dim) / 2;
  return x.narrow(dim, 0, h) * x.narrow(dim, h, h).sigmoid();
}

/// max(0, x) + weight * min(0, x). weight holds one slope, or one per channel (dim 1 of an
/// input of 2 or more dims), as PyTorch's prelu.
template <class P>
BasicTensor<P> prelu(const BasicTensor<P>& x, const BasicTensor<P>& weight) {
  EMBER_CHECK(weight.defined() && weight.dim() <= 1, "[prelu] weight must be 0-d or 1-d, got shape {}",
              weight.defined() ? weight.sizes() : Shape{});
  BasicTensor<P> w = weight;
  if (weight.numel() != 1) {
    const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
    EMBER_CHECK(weight.numel() == channels,
                "[prelu] weight has {} slopes but the input of shape {} has {} channels (dim 1)", weight.numel(),
                x.sizes(), channels);
    Shape s(static_cast<size_t>(x.dim()), 1);
    s[1] = channels;
    w = weight.reshape(s);
  }
  return where(x.gt(0.0), x, w * x);  // at 0 the input's gradient is the slope, as PyTorch's
}

/// Randomized leaky ReLU: when training, each element at or below 0 is scaled by its own
/// slope drawn from U(lower, upper) (the gradient uses the same slope); otherwise the slope is
/// (lower + upper) / 2.
/// With `inplace`, x is overwritten and returned (as PyTorch's rrelu_).
template <class P>
BasicTensor<P> rrelu(const BasicTensor<P>& x, double lower = 1.0 / 8, double upper = 1.0 / 3, bool training = false,
                     bool inplace = false) {
  EMBER_CHECK(lower <= upper && std::isfinite(lower) && std::isfinite(upper),
              "[rrelu] needs finite bounds with lower <= upper, got lower {} and upper {}", lower, upper);
  if (!training) return inplace ? BasicTensor<P>(x).leaky_relu_((lower + upper) / 2) : x.leaky_relu((lower + upper) / 2);
  EMBER_CHECK(is_floating(x.dtype()), "[rrelu] expects a floating-point input when training, got {}", x.dtype());
  BasicTensor<P> slope = rand<P>(x.sizes(), TensorOptions(x.dtype()).device(x.device())) * (upper - lower) + lower;
  BasicTensor<P> factor = where(x.le(0.0), slope, 1.0);
  return inplace ? BasicTensor<P>(x).mul_(factor) : x * factor;
}

/// softmax / log_softmax computed in `dtype` (x is converted first), as PyTorch's dtype
/// argument: F::softmax(half_logits, -1, DType::F32) for a stable f32 result.
template <class P>
BasicTensor<P> softmax(const BasicTensor<P>& x, int64_t dim, DType dtype) {
  return x.softmax(dim, dtype);
}
template <class P>
BasicTensor<P> log_softmax(const BasicTensor<P>& x, int64_t dim, DType dtype) {
  return x.log_softmax(dim, dtype);
}

/// softmax(-x) over dim.
template <class P>
BasicTensor<P> softmin(const BasicTensor<P>& x, int64_t dim) {
  return x.neg().softmax(dim);
}

/// x / max(||x||_p over dim, eps), as PyTorch's F.normalize.
template <class P>
BasicTensor<P> normalize(const BasicTensor<P>& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12) {
  EMBER_CHECK(x.dim() >= 1, "[normalize] expects at least one dim, got a 0-d tensor");
  return x / x.norm(p, {dim}, true).clamp_min(eps);
}

/// ||x1 - x2 + eps||_p over the last dim (the distance of TripletMarginLoss).
template <class P>
BasicTensor<P> pairwise_distance(const BasicTensor<P>& x1, const BasicTensor<P>& x2, double p = 2.0, double eps = 1e-6,
                                 bool keepdim = false) {
  const int64_t d = std::max(x1.dim(), x2.dim()) - 1;
  EMBER_CHECK(d >= 0, "[pairwise_distance] expects inputs with at least one dim, got shapes {} and {}", x1.sizes(),
              x2.sizes());
  return (x1 - x2 + eps).norm(p, {d}, keepdim);
}

}  // namespace ember::nn::functional
