#pragma once
/// Fractional max pooling (Graham, 2014), as torch.nn.functional.fractional_max_pool2d/3d:
/// windows of kernel_size at pseudo-random positions, so that the output has output_size
/// points (or output_ratio of the input's) per spatial dim.
///
///   Tensor y = F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(3).output_ratio(0.5));
///
/// One uniform sample per batch element, channel and dim places the windows (PyTorch's
/// intervals: start_i = floor((i + u) a) - floor(u a), a = (in - k) / (out - 1), the last at
/// in - k, computed in the input's precision); pass `_random_samples` (N, C, dims) to fix them.
/// The first maximum of a window wins, a NaN wins over numbers (the last NaN, as PyTorch's).
/// The values are gathered at the winners, so gradients (first and second) flow as max
/// pooling's: to each window's winner. The winners are found on the host, one thread (a CUDA
/// input goes there and back).

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/nn/functional_conv.hpp>
#include <ember/nn/options.hpp>

#include <array>
#include <cmath>
#include <initializer_list>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ember::nn {

namespace functional {
/// Per-dim floating arguments: one value for all dims, or one per dim (output_ratio(0.5)).
struct DoubleArgs : std::vector<double> {
  DoubleArgs(double v) : std::vector<double>{v} {}  // NOLINT: implicit, as libtorch's ExpandingArray
  DoubleArgs(std::initializer_list<double> v) : std::vector<double>(v) {}
  DoubleArgs(std::vector<double> v) : std::vector<double>(std::move(v)) {}  // NOLINT
};
}  // namespace functional

/// Options of FractionalMaxPool2d/3d and their functional forms: kernel_size, and output_size
/// or output_ratio (out = floor(in * ratio); the modules take one of them, a ratio in (0, 1)).
template <int ND>
struct FractionalMaxPoolOptions {
  FractionalMaxPoolOptions(functional::IntArgs kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT
  EMBER_ARG(functional::IntArgs, kernel_size);
  EMBER_ARG(std::optional<functional::IntArgs>, output_size);
  EMBER_ARG(std::optional<functional::DoubleArgs>, output_ratio);
  EMBER_ARG(Tensor, _random_samples);  ///< (N, C, ND) in [0, 1], the input's dtype; undefined: drawn per call
};
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions<3>;

namespace functional {
using FractionalMaxPool2dFuncOptions = FractionalMaxPool2dOptions;
using FractionalMaxPool3dFuncOptions = FractionalMaxPool3dOptions;

namespace detail {

/// The window starts along one dim for sample u (PyTorch's generate_intervals), in T's
/// precision, written to starts[0 .. out).
template <class T>
void fractional_starts(T u, int64_t in, int64_t out, int64_t k, int64_t* starts) {
  if (out == 0) return;
  if (out > 1) {
    const T alpha = static_cast<T>(in - k) / static_cast<T>(out - 1);
    for (int64_t i = 0; i + 1 < out; ++i)
      starts[i] = static_cast<int64_t>((static_cast<T>(i) + u) * alpha) - static_cast<int64_t>(u * alpha);
  }
  starts[out - 1] = in - k;
}

/// The winner of each output point's window in one plane (values v, row-major over `in`),
/// written to idx: the first maximum, or the last NaN (PyTorch's rule).
template <class T, int ND>
void fractional_plane_winners(const T* v, const std::array<const int64_t*, 3>& starts, const int64_t* in,
                              const int64_t* out, const int64_t* k, int64_t* idx) {
  std::array<int64_t, 3> o{}, at{};  // the output point, the offset within its window
  for (int64_t flat = 0;; ++flat) {
    int64_t best = -1;
    double best_v = 0;
    at.fill(0);
    for (bool more = true; more;) {
      int64_t pos = 0;
      for (int d = 0; d < ND; ++d) pos = pos * in[d] + starts[static_cast<size_t>(d)][o[static_cast<size_t>(d)]] + at[static_cast<size_t>(d)];
      const double val = static_cast<double>(v[pos]);
      if (best < 0 || val > best_v || std::isnan(val)) best = pos, best_v = val;
      more = false;
      for (int d = ND - 1; d >= 0 && !more; --d) {
        if (++at[static_cast<size_t>(d)] < k[d]) more = true;
        else at[static_cast<size_t>(d)] = 0;
      }
    }
    idx[flat] = best;
    int d = ND - 1;  // the next output point
    for (; d >= 0 && ++o[static_cast<size_t>(d)] == out[d]; --d) o[static_cast<size_t>(d)] = 0;
    if (d < 0) return;
  }
}

/// {values, indices (i64, flat within each input plane)} of fractional max pooling over the
/// last `nd` dims of x ((N, C, *) or (C, *)). As PyTorch's functional form: output_size wins
/// over output_ratio, a ratio is not bounded (the module's is), and an output size of 0 gives
/// an empty result.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> fractional_max_pool(const BasicTensor<P>& x, int nd,
                                                               const IntArgs& kernel_size,
                                                               const std::optional<IntArgs>& output_size,
                                                               const std::optional<DoubleArgs>& output_ratio,
                                                               const Tensor& random_samples, const char* op) {
  EMBER_CHECK(x.defined(), "[{}] got an undefined tensor", op);
  EMBER_CHECK(x.dim() == nd + 1 || x.dim() == nd + 2, "[{}] expects a {}-d or {}-d (batched) input, got shape {}", op,
              nd + 1, nd + 2, x.sizes());
  EMBER_CHECK(x.is_floating_point(), "[{}] expects a floating input, got {}", op, x.dtype());
  for (int64_t d = x.dim() - nd; d < x.dim(); ++d)
    EMBER_CHECK(x.size(d) > 0, "[{}] expects non-empty spatial dims, got shape {}", op, x.sizes());
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == static_cast<size_t>(nd),
              "[{}] kernel_size must have 1 or {} values, got {}", op, nd, kernel_size.size());
  EMBER_CHECK(output_size || output_ratio, "[{}] needs output_size or output_ratio", op);
  const bool batched = x.dim() == nd + 2;
  const BasicTensor<P> xb = batched ? x : x.unsqueeze(0);
  const int64_t n = xb.size(0), c = xb.size(1);
  std::array<int64_t, 3> in{}, k{}, out{};
  int64_t plane = 1, outs = 1;
  Shape out_shape{n, c};
  for (int d = 0; d < nd; ++d) {
    const auto ud = static_cast<size_t>(d);
    in[ud] = xb.size(2 + d);
    k[ud] = kernel_size[kernel_size.size() == 1 ? 0 : ud];
    EMBER_CHECK(k[ud] > 0, "[{}] kernel_size must be positive, got {}", op, k[ud]);
    if (output_size) {
      EMBER_CHECK(output_size->size() == 1 || output_size->size() == static_cast<size_t>(nd),
                  "[{}] output_size must have 1 or {} values, got {}", op, nd, output_size->size());
      out[ud] = (*output_size)[output_size->size() == 1 ? 0 : ud];
    } else {
      EMBER_CHECK(output_ratio->size() == 1 || output_ratio->size() == static_cast<size_t>(nd),
                  "[{}] output_ratio must have 1 or {} values, got {}", op, nd, output_ratio->size());
      const double r = (*output_ratio)[output_ratio->size() == 1 ? 0 : ud];
      EMBER_CHECK(r >= 0 && std::isfinite(r), "[{}] output_ratio must be finite and >= 0, got {}", op, r);
      out[ud] = static_cast<int64_t>(static_cast<double>(in[ud]) * r);
    }
    EMBER_CHECK(out[ud] >= 0, "[{}] the output size must be >= 0, got {} in dim {}", op, out[ud], d);
    // PyTorch 1.13's bounds: output + kernel - 1 <= input in 2-d, < input in 3-d.
    EMBER_CHECK(nd == 2 ? out[ud] + k[ud] - 1 <= in[ud] : out[ud] + k[ud] - 1 < in[ud],
                "[{}] kernel size {} is too large for {} outputs from input size {} in dim {} (needs output + kernel - 1 "
                "{} input)",
                op, k[ud], out[ud], in[ud], d, nd == 2 ? "<=" : "<");
    plane *= in[ud], outs *= out[ud];
    out_shape.push_back(out[ud]);
  }
  // The samples: given (checked: they place windows in memory), or drawn as PyTorch draws them.
  BasicTensor<P> u = option_tensor<P>(random_samples);
  const Shape want{n, c, static_cast<int64_t>(nd)};
  if (u.defined()) {
    EMBER_CHECK(u.sizes() == want && u.dtype() == x.dtype() && u.device() == x.device(),
                "[{}] _random_samples must be a tensor of shape {} (batch, channels, dims) of the input's dtype {} on "
                "its device, got {} of shape {} on {}",
                op, want, x.dtype(), u.dtype(), u.sizes(), u.device());
  } else {
    u = rand<P>(want, TensorOptions(x.dtype()).device(x.device()));
  }
  const BasicTensor<P> hu = u.detach().to(kCPU, DType::F64).contiguous();
  const double* uv = hu.template data_ptr<double>();
  for (int64_t i = 0; i < hu.numel(); ++i)
    EMBER_CHECK(uv[i] >= 0 && uv[i] <= 1, "[{}] _random_samples must be in [0, 1], got {}", op, uv[i]);
  // The windows' winners on the host, reading f32/f64 in place (f16/bf16 through f32).
  const bool wide = x.dtype() == DType::F64;
  const BasicTensor<P> hx = xb.detach().to(kCPU, wide ? DType::F64 : DType::F32).contiguous();
  BasicTensor<P> idx = empty<P>(Shape{n, c, outs}, TensorOptions(DType::I64));
  int64_t* iv = idx.template data_ptr<int64_t>();
  std::vector<int64_t> starts(static_cast<size_t>(out[0] + out[1] + out[2]));
  for (int64_t s = 0; s < n * c && outs > 0; ++s) {
    std::array<const int64_t*, 3> first{};
    int64_t* next = starts.data();
    for (int d = 0; d < nd; ++d) {
      const auto ud = static_cast<size_t>(d);
      const double sample = uv[s * nd + (nd == 2 ? 1 - d : d)];  // 2-d samples are (w, h), 3-d (t, h, w)
      // In the input's precision, as PyTorch's (f32 for f16 and bf16, as its CUDA kernel).
      if (wide) fractional_starts<double>(sample, in[ud], out[ud], k[ud], next);
      else fractional_starts<float>(static_cast<float>(sample), in[ud], out[ud], k[ud], next);
      first[ud] = next;
      next += out[ud];
    }
    if (wide) {
      const double* v = hx.template data_ptr<double>() + s * plane;
      if (nd == 2) fractional_plane_winners<double, 2>(v, first, in.data(), out.data(), k.data(), iv + s * outs);
      else fractional_plane_winners<double, 3>(v, first, in.data(), out.data(), k.data(), iv + s * outs);
    } else {
      const float* v = hx.template data_ptr<float>() + s * plane;
      if (nd == 2) fractional_plane_winners<float, 2>(v, first, in.data(), out.data(), k.data(), iv + s * outs);
      else fractional_plane_winners<float, 3>(v, first, in.data(), out.data(), k.data(), iv + s * outs);
    }
  }
  idx = idx.to(x.device());
  const BasicTensor<P> values = xb.flatten(2).gather(2, idx).reshape(out_shape);
  BasicTensor<P> indices = idx.reshape(out_shape);
  if (!batched) return {values.squeeze(0), indices.squeeze(0)};
  return {values, indices};
}

}  // namespace detail

/// {values, indices} (indices flat within each input plane, as max_pool2d's).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> fractional_max_pool2d_with_indices(const BasicTensor<P>& x,
                                                                              const FractionalMaxPool2dFuncOptions& o) {
  return detail::fractional_max_pool(x, 2, o.kernel_size(), o.output_size(), o.output_ratio(), o._random_samples(),
                                     "fractional_max_pool2d");
}
template <class P>
BasicTensor<P> fractional_max_pool2d(const BasicTensor<P>& x, const FractionalMaxPool2dFuncOptions& o) {
  return std::get<0>(fractional_max_pool2d_with_indices(x, o));
}
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> fractional_max_pool3d_with_indices(const BasicTensor<P>& x,
                                                                              const FractionalMaxPool3dFuncOptions& o) {
  return detail::fractional_max_pool(x, 3, o.kernel_size(), o.output_size(), o.output_ratio(), o._random_samples(),
                                     "fractional_max_pool3d");
}
template <class P>
BasicTensor<P> fractional_max_pool3d(const BasicTensor<P>& x, const FractionalMaxPool3dFuncOptions& o) {
  return std::get<0>(fractional_max_pool3d_with_indices(x, o));
}

}  // namespace functional

}  // namespace ember::nn
