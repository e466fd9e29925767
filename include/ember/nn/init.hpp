#pragma once
/// nn::init: in-place initialisers with PyTorch's rules (fans, gains, modes). They run under
/// no-grad, so they may be applied to parameters that require grad.

#include <ember/autograd/grad_mode.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::nn::init {

/// fan_in and fan_out of a weight as PyTorch computes them (dims 0 and 1, times the receptive field).
inline std::pair<int64_t, int64_t> calculate_fans(const Shape& s) {
  EMBER_CHECK(s.size() >= 2, "[init] fan in and fan out need at least 2 dims, got shape {}", s);
  int64_t receptive = 1;
  for (size_t i = 2; i < s.size(); ++i) receptive *= s[i];
  return {s[1] * receptive, s[0] * receptive};
}

/// The recommended gain for a nonlinearity (PyTorch's calculate_gain).
inline double calculate_gain(std::string_view nonlinearity, double param = 0.01) {
  if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
      nonlinearity == "conv3d" || nonlinearity == "sigmoid" || nonlinearity == "conv_transpose1d" ||
      nonlinearity == "conv_transpose2d" || nonlinearity == "conv_transpose3d")
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4.0;
  EMBER_FAIL("[calculate_gain] unsupported nonlinearity '{}'", nonlinearity);
}

namespace detail {
template <class P>
void assign(BasicTensor<P>& t, const BasicTensor<P>& values) {
  ember::detail::NoGradGuardFor<P> ng;
  t.copy_(values);
}
template <class P>
TensorOptions like(const BasicTensor<P>& t) {
  return TensorOptions(t.is_floating_point() ? t.dtype() : DType::F32).device(t.device());
}
}  // namespace detail

template <class P>
BasicTensor<P> uniform_(BasicTensor<P> t, double a = 0.0, double b = 1.0) {
  EMBER_CHECK(t.is_floating_point(), "[uniform_] needs a floating tensor, got {}", t.dtype());
  EMBER_CHECK(a <= b, "[uniform_] expects a <= b, got a={} > b={}", a, b);
  EMBER_CHECK(std::isfinite(a) && std::isfinite(b), "[uniform_] bounds must be finite, got [{}, {}]", a, b);
  detail::assign(t, rand<P>(t.sizes(), TensorOptions(DType::F64)) * (b - a) + a);
  return t;
}
template <class P>
BasicTensor<P> normal_(BasicTensor<P> t, double mean = 0.0, double std = 1.0) {
  EMBER_CHECK(t.is_floating_point(), "[normal_] needs a floating tensor, got {}", t.dtype());
  EMBER_CHECK(std >= 0, "[normal_] expects std >= 0, got {}", std);
  detail::assign(t, randn<P>(t.sizes(), TensorOptions(DType::F64)) * std + mean);
  return t;
}
template <class P>
BasicTensor<P> constant_(BasicTensor<P> t, double v) {
  ember::detail::NoGradGuardFor<P> ng;
  t.fill_(v);
  return t;
}
template <class P>
BasicTensor<P> zeros_(BasicTensor<P> t) {
  return constant_(t, 0.0);
}
template <class P>
BasicTensor<P> ones_(BasicTensor<P> t) {
  return constant_(t, 1.0);
}
template <class P>
BasicTensor<P> eye_(BasicTensor<P> t) {
  EMBER_CHECK(t.dim() == 2, "[eye_] needs a 2-d tensor, got shape {}", t.sizes());
  detail::assign(t, eye<P>(t.size(0), t.size(1), TensorOptions(DType::F64)));
  return t;
}
template <class P>
BasicTensor<P> xavier_uniform_(BasicTensor<P> t, double gain = 1.0) {
  auto [fan_in, fan_out] = calculate_fans(t.sizes());
  double a = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(t, -a, a);
}
template <class P>
BasicTensor<P> xavier_normal_(BasicTensor<P> t, double gain = 1.0) {
  auto [fan_in, fan_out] = calculate_fans(t.sizes());
  return normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}
/// mode: "fan_in" or "fan_out"; nonlinearity as calculate_gain (a = leaky_relu slope).
template <class P>
BasicTensor<P> kaiming_uniform_(BasicTensor<P> t, double a = 0.0, std::string_view mode = "fan_in",
                                 std::string_view nonlinearity = "leaky_relu") {
  auto [fan_in, fan_out] = calculate_fans(t.sizes());
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out", "[kaiming_uniform_] mode must be fan_in or fan_out, got '{}'",
              mode);
  if (t.numel() == 0) return t;  // as PyTorch: a no-op (Linear(0, n)'s fan is 0, its bound infinite)
  double fan = static_cast<double>(mode == "fan_in" ? fan_in : fan_out);
  double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(fan);
  return uniform_(t, -bound, bound);
}
template <class P>
BasicTensor<P> kaiming_normal_(BasicTensor<P> t, double a = 0.0, std::string_view mode = "fan_in",
                                std::string_view nonlinearity = "leaky_relu") {
  auto [fan_in, fan_out] = calculate_fans(t.sizes());
  EMBER_CHECK(mode == "fan_in" || mode == "fan_out", "[kaiming_normal_] mode must be fan_in or fan_out, got '{}'",
              mode);
  if (t.numel() == 0) return t;  // as PyTorch: a no-op
  double fan = static_cast<double>(mode == "fan_in" ? fan_in : fan_out);
  return normal_(t, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(fan));
}
/// Normal(mean, std) restricted to [a, b] (by inverse-CDF sampling, as PyTorch).
template <class P>
BasicTensor<P> trunc_normal_(BasicTensor<P> t, double mean = 0.0, double std = 1.0, double a = -2.0,
                              double b = 2.0) {
  EMBER_CHECK(a < b, "[trunc_normal_] needs a < b, got a={} b={}", a, b);
  auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
  double l = cdf((a - mean) / std), u = cdf((b - mean) / std);
  BasicTensor<P> v = rand<P>(t.sizes(), TensorOptions(DType::F64)) * (2 * u - 2 * l) + (2 * l - 1);
  v = v.clamp(-1 + 1e-15, 1 - 1e-15).erfinv() * (std * std::sqrt(2.0)) + mean;
  detail::assign(t, v.clamp(a, b));
  return t;
}
/// A (semi-)orthogonal matrix (rows or columns orthonormal), from the QR decomposition of a
/// normal sample with the sign convention PyTorch uses; tensors of rank > 2 are flattened
/// after dim 0.
template <class P>
BasicTensor<P> orthogonal_(BasicTensor<P> t, double gain = 1.0) {
  EMBER_CHECK(t.dim() >= 2, "[orthogonal_] needs at least 2 dims, got shape {}", t.sizes());
  int64_t rows = t.size(0), cols = t.numel() / std::max<int64_t>(rows, 1);
  bool transpose = rows < cols;
  int64_t m = transpose ? cols : rows, n = transpose ? rows : cols;  // m >= n
  BasicTensor<P> a = randn<P>({m, n}, TensorOptions(DType::F64)).contiguous();
  std::vector<double> q(static_cast<size_t>(m * n));
  const double* src = a.template data_ptr<double>();
  for (int64_t i = 0; i < m * n; ++i) q[i] = src[i];
  // Modified Gram-Schmidt on the columns; r's diagonal signs fix the sign as in PyTorch (q * sign(diag r)).
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += q[i * n + k] * q[i * n + j];
      for (int64_t i = 0; i < m; ++i) q[i * n + j] -= dot * q[i * n + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += q[i * n + j] * q[i * n + j];
    norm = std::sqrt(norm);
    EMBER_CHECK(norm > 0, "[orthogonal_] degenerate sample");
    for (int64_t i = 0; i < m; ++i) q[i * n + j] /= norm;
  }
  BasicTensor<P> qt = from_blob<P>(q.data(), {m, n}, TensorOptions(DType::F64)).clone();
  if (transpose) qt = qt.t();
  detail::assign(t, (qt * gain).reshape(t.sizes()));
  return t;
}

/// The identity of a convolution (3-5 dims): in each of `groups` groups, output channel d
/// passes input channel d through the kernel's centre (the first min(out / groups, in)
/// channels); everything else is 0. As PyTorch's dirac_.
template <class P>
BasicTensor<P> dirac_(BasicTensor<P> t, int64_t groups = 1) {
  EMBER_CHECK(t.dim() >= 3 && t.dim() <= 5, "[dirac_] needs a 3-, 4- or 5-d tensor, got shape {}", t.sizes());
  EMBER_CHECK(groups > 0 && t.size(0) % groups == 0, "[dirac_] groups {} must be positive and divide dim 0 ({})",
              groups, t.size(0));
  const int64_t per_group = t.size(0) / groups, channels = std::min(per_group, t.size(1));
  BasicTensor<P> v = zeros<P>(t.sizes(), TensorOptions(DType::F64));
  double* p = v.template data_ptr<double>();
  int64_t centre = 0, stride = 1;  // the kernel's centre as an offset within one (out, in) slice
  for (int64_t d = t.dim() - 1; d >= 2; --d) {
    centre += (t.size(d) / 2) * stride;
    stride *= t.size(d);
  }
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t d = 0; d < channels; ++d) p[((g * per_group + d) * t.size(1) + d) * stride + centre] = 1.0;
  detail::assign(t, v);
  return t;
}

/// A sparse 2-d weight: Normal(0, std) with, in every column, ceil(sparsity * rows) entries at
/// random rows set to 0. As PyTorch's sparse_.
template <class P>
BasicTensor<P> sparse_(BasicTensor<P> t, double sparsity, double std = 0.01) {
  EMBER_CHECK(t.dim() == 2, "[sparse_] needs a 2-d tensor, got shape {}", t.sizes());
  EMBER_CHECK(sparsity >= 0 && sparsity <= 1, "[sparse_] sparsity must be in [0, 1], got {}", sparsity);
  EMBER_CHECK(std >= 0, "[sparse_] expects std >= 0, got {}", std);
  const int64_t rows = t.size(0), cols = t.size(1);
  const auto zeroed = static_cast<int64_t>(std::ceil(sparsity * static_cast<double>(rows)));
  // A random rank of each row within its column; the lowest `zeroed` ranks are cleared.
  BasicTensor<P> rank = rand<P>({rows, cols}, TensorOptions(DType::F64)).argsort(0).argsort(0);
  BasicTensor<P> v = randn<P>({rows, cols}, TensorOptions(DType::F64)) * std;
  detail::assign(t, where(rank.lt(zeroed), 0.0, v));
  return t;
}

}  // namespace ember::nn::init
