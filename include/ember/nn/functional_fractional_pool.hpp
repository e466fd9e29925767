#pragma once
/// Fractional max pooling (Graham, 2014), as torch.nn.functional.fractional_max_pool2d/3d:
/// windows of kernel_size at pseudo-random positions, so that the output has output_size
/// points (or output_ratio of the input's) per spatial dim.
///
///   Tensor y = F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(3).output_ratio({0.5, 0.5}));
///
/// One uniform sample per batch element, channel and dim places the windows (PyTorch's
/// intervals: start_i = floor((i + u) a) - floor(u a), a = (in - k) / (out - 1), the last at
/// in - k, computed in the input's precision); pass `_random_samples` (N, C, dims) to fix them.
/// The first maximum of a window wins, a NaN wins over numbers (the last NaN, as PyTorch's).
/// The values are gathered at the winners, so gradients (first and second) flow as max
/// pooling's: to each window's winner.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/nn/functional_conv.hpp>
#include <ember/nn/options.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ember::nn {

/// Options of FractionalMaxPool2d/3d and their functional forms: kernel_size, and one of
/// output_size or output_ratio (each in (0, 1): out = floor(in * ratio)).
template <int ND>
struct FractionalMaxPoolOptions {
  FractionalMaxPoolOptions(functional::IntArgs kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT
  EMBER_ARG(functional::IntArgs, kernel_size);
  EMBER_ARG(std::optional<functional::IntArgs>, output_size);
  EMBER_ARG(std::optional<std::vector<double>>, output_ratio);
  EMBER_ARG(Tensor, _random_samples);  ///< (N, C, ND) in [0, 1); undefined: drawn per call
};
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions<3>;

namespace functional {
using FractionalMaxPool2dFuncOptions = FractionalMaxPool2dOptions;
using FractionalMaxPool3dFuncOptions = FractionalMaxPool3dOptions;

namespace detail {

/// The window starts along one dim for sample u (PyTorch's generate_intervals), in T's
/// precision (f32 for f32, f16 and bf16 inputs, f64 for f64).
template <class T>
std::vector<int64_t> fractional_starts(T u, int64_t in, int64_t out, int64_t k) {
  std::vector<int64_t> starts(static_cast<size_t>(out));
  if (out > 1) {
    const T alpha = static_cast<T>(in - k) / static_cast<T>(out - 1);
    for (int64_t i = 0; i + 1 < out; ++i)
      starts[static_cast<size_t>(i)] =
          static_cast<int64_t>((static_cast<T>(i) + u) * alpha) - static_cast<int64_t>(u * alpha);
  }
  starts[static_cast<size_t>(out - 1)] = in - k;
  return starts;
}

/// {values, indices (i64, flat within each input plane)} of fractional max pooling over the
/// last `nd` dims of x ((N, C, *) or (C, *)).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>> fractional_max_pool(const BasicTensor<P>& x, int nd,
                                                               const IntArgs& kernel_size,
                                                               const std::optional<IntArgs>& output_size,
                                                               const std::optional<std::vector<double>>& output_ratio,
                                                               const BasicTensor<P>& samples, const char* op) {
  EMBER_CHECK(x.defined(), "[{}] got an undefined tensor", op);
  EMBER_CHECK(x.dim() == nd + 1 || x.dim() == nd + 2, "[{}] expects a {}-d or {}-d (batched) input, got shape {}", op,
              nd + 1, nd + 2, x.sizes());
  EMBER_CHECK(x.is_floating_point(), "[{}] expects a floating input, got {}", op, x.dtype());
  for (int64_t d = 0; d < x.dim(); ++d)
    EMBER_CHECK(x.size(d) > 0 || (d == 0 && x.dim() == nd + 2), "[{}] expects non-empty dims (but the batch), got shape {}",
                op, x.sizes());
  EMBER_CHECK(kernel_size.size() == 1 || kernel_size.size() == static_cast<size_t>(nd),
              "[{}] kernel_size must have 1 or {} values, got {}", op, nd, kernel_size.size());
  EMBER_CHECK(output_size.has_value() != output_ratio.has_value(),
              "[{}] needs exactly one of output_size and output_ratio", op);
  const bool batched = x.dim() == nd + 2;
  const BasicTensor<P> xb = batched ? x : x.unsqueeze(0);
  const int64_t n = xb.size(0), c = xb.size(1);
  std::vector<int64_t> in(static_cast<size_t>(nd)), k(static_cast<size_t>(nd)), out(static_cast<size_t>(nd));
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
      EMBER_CHECK(r > 0 && r < 1, "[{}] output_ratio must be in (0, 1), got {}", op, r);
      out[ud] = static_cast<int64_t>(static_cast<double>(in[ud]) * r);
    }
    EMBER_CHECK(out[ud] > 0, "[{}] the output size must be positive, got {} in dim {} (input shape {})", op, out[ud],
                d, x.sizes());
    EMBER_CHECK(out[ud] + k[ud] - 1 <= in[ud],
                "[{}] kernel size {} is too large for {} outputs from input size {} in dim {} (needs output + kernel - 1 "
                "<= input)",
                op, k[ud], out[ud], in[ud], d);
  }
  // The samples: given (checked, they place windows in memory), or drawn in the input's dtype.
  BasicTensor<P> u = samples;
  const Shape want{n, c, static_cast<int64_t>(nd)};
  if (u.defined()) {
    EMBER_CHECK(u.sizes() == want && u.is_floating_point(),
                "[{}] _random_samples must be a floating tensor of shape {} (batch, channels, dims), got {} of shape {}",
                op, want, u.dtype(), u.sizes());
  } else {
    u = rand<P>(want, TensorOptions(x.dtype() == DType::F64 ? DType::F64 : DType::F32));
  }
  const bool wide = x.dtype() == DType::F64;
  const BasicTensor<P> hu = u.detach().to(kCPU, DType::F64).contiguous();
  const double* uv = hu.template data_ptr<double>();
  for (int64_t i = 0; i < hu.numel(); ++i)
    EMBER_CHECK(uv[i] >= 0 && uv[i] < 1, "[{}] _random_samples must be in [0, 1), got {}", op, uv[i]);
  // Each window's winner on the host, over f64 copies of the values (exact for every float dtype).
  const BasicTensor<P> hx = xb.detach().to(kCPU, DType::F64).contiguous();
  const double* xv = hx.template data_ptr<double>();
  int64_t plane = 1, outs = 1;
  for (int d = 0; d < nd; ++d) plane *= in[static_cast<size_t>(d)], outs *= out[static_cast<size_t>(d)];
  Shape out_shape{n, c};
  for (int d = 0; d < nd; ++d) out_shape.push_back(out[static_cast<size_t>(d)]);
  BasicTensor<P> idx = empty<P>(Shape{n, c, outs}, TensorOptions(DType::I64));
  int64_t* iv = idx.template data_ptr<int64_t>();
  for (int64_t s = 0; s < n * c; ++s) {
    // 2-d samples are (w, h), PyTorch's order; 3-d ones (t, h, w).
    std::vector<std::vector<int64_t>> starts(static_cast<size_t>(nd));
    for (int d = 0; d < nd; ++d) {
      const int sample = nd == 2 ? 1 - d : d;
      const double ud = uv[s * nd + sample];
      const auto dd = static_cast<size_t>(d);
      starts[dd] = wide ? fractional_starts<double>(ud, in[dd], out[dd], k[dd])
                        : fractional_starts<float>(static_cast<float>(ud), in[dd], out[dd], k[dd]);
    }
    const double* xs = xv + s * plane;
    for (int64_t o = 0; o < outs; ++o) {
      // The output point's window: its first input point per dim.
      std::vector<int64_t> lo(static_cast<size_t>(nd));
      int64_t rest = o;
      for (int d = nd - 1; d >= 0; --d) {
        const auto dd = static_cast<size_t>(d);
        lo[dd] = starts[dd][static_cast<size_t>(rest % out[dd])];
        rest /= out[dd];
      }
      int64_t best = -1;
      double best_v = 0;
      std::vector<int64_t> at(static_cast<size_t>(nd), 0);  // the offset within the window
      for (bool more = true; more;) {
        int64_t pos = 0;
        for (int d = 0; d < nd; ++d) {
          const auto dd = static_cast<size_t>(d);
          pos = pos * in[dd] + lo[dd] + at[dd];
        }
        const double v = xs[pos];
        if (best < 0 || v > best_v || std::isnan(v)) best = pos, best_v = v;
        more = false;
        for (int d = nd - 1; d >= 0 && !more; --d) {
          const auto dd = static_cast<size_t>(d);
          if (++at[dd] < k[dd]) more = true;
          else at[dd] = 0;
        }
      }
      iv[s * outs + o] = best;
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
