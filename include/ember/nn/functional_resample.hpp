#pragma once
/// nn::functional's resampling: interpolate over one, two or three spatial dims ((N, C, L),
/// (N, C, H, W), (N, C, D, H, W)) in the modes nearest, nearest-exact, linear / bilinear /
/// trilinear, bicubic and area, with antialias for bilinear and bicubic; pixel_shuffle and
/// pixel_unshuffle; max_unpool (max_pool's inverse).
///
/// Source pixels and weights are PyTorch 1.13's (UpSample.h and UpSampleKernel.cpp), computed
/// in the same precision (float for float32 and narrower inputs, double for double), so results
/// match PyTorch's to rounding. Each spatial dim is resampled in turn, the last first, as
/// PyTorch's kernels nest them: every output pixel along the dim reads a few source pixels
/// ("taps") and sums them weighted. A tap is an index_select and a product, so autograd and
/// every device work unchanged, and an inf or NaN reaches only the outputs whose taps read it.

#include <ember/nn/functional_conv.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <vector>

namespace ember::nn::functional {

namespace detail {

/// Where each output pixel along one dim reads: `taps` source indices and weights per output,
/// row-major (out x taps). No weights: one tap of weight 1 (nearest). `used[o]`, when given,
/// counts the taps output o really has; its other taps only pad the row (weight 0) and are
/// masked out, so that a padding tap reading an inf adds no 0 * inf = NaN.
struct ResampleTaps {
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<int64_t> used;
};

/// PyTorch's area_pixel_compute_scale in T: the source distance between neighbouring outputs.
/// A scale factor of 0 means none was given (the size ratio places the pixels).
template <class T>
T source_step(int64_t in, int64_t out, bool align_corners, double scale_factor) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  return scale_factor > 0 ? static_cast<T>(1.0 / scale_factor) : static_cast<T>(in) / static_cast<T>(out);
}

/// PyTorch's area_pixel_compute_source_index: the (fractional) source position of output o. The
/// half-pixel form is evaluated in double and rounded to T once, as PyTorch's mixed expression.
template <class T>
T source_position(T step, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return step * static_cast<T>(o);
  const T real = static_cast<T>(static_cast<double>(step) * (static_cast<double>(o) + 0.5) - 0.5);
  return !cubic && real < T(0) ? T(0) : real;
}

/// nearest (legacy: floor(o * scale); for images, PyTorch 2's 2-d kernel copies at the same
/// size and takes o / 2 at twice the size, also when a scale factor such as 2.1 gave that
/// size, while its 1-d and 3-d kernels keep floor(o * scale): `size_shortcuts`) or
/// nearest-exact (floor((o + 0.5) * scale), the pixel whose centre is nearest).
inline ResampleTaps nearest_taps(int64_t in, int64_t out, double scale_factor, bool exact, bool size_shortcuts) {
  const float scale = source_step<float>(in, out, false, scale_factor);
  ResampleTaps t;
  for (int64_t o = 0; o < out; ++o) {
    int64_t i;
    if (exact) i = static_cast<int64_t>(std::floor(static_cast<float>((static_cast<double>(o) + 0.5) * scale)));
    else if (size_shortcuts && out == in) i = o;
    else if (size_shortcuts && out == 2 * in) i = o >> 1;
    else i = static_cast<int64_t>(std::floor(static_cast<float>(o) * scale));
    t.index.push_back(std::min(i, in - 1));
  }
  return t;
}

/// Linear: two neighbours weighted 1 - l and l; a copy at the same size.
template <class T>
ResampleTaps linear_taps(int64_t in, int64_t out, bool align_corners, double scale_factor) {
  const T step = source_step<T>(in, out, align_corners, scale_factor);
  ResampleTaps t;
  t.taps = 2;
  for (int64_t o = 0; o < out; ++o) {
    if (out == in) {
      t.index.insert(t.index.end(), {o, o});
      t.weight.insert(t.weight.end(), {1.0, 0.0});
      continue;
    }
    const T real = source_position<T>(step, o, align_corners, false);
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const T l1 = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1));
    t.index.insert(t.index.end(), {i0, i0 + (i0 < in - 1 ? 1 : 0)});
    t.weight.insert(t.weight.end(), {static_cast<double>(T(1) - l1), static_cast<double>(l1)});
  }
  return t;
}

/// Keys' cubic convolution kernel with parameter a, |x| < 1 and 1 <= |x| < 2.
template <class T>
T cubic_near(T x, T a) {
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <class T>
T cubic_far(T x, T a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/// Bicubic (a = -0.75): four neighbours around the source position, indices clamped to the
/// border. No copy at the same size: PyTorch's kernel does none either (a scale factor may
/// still move the pixels).
template <class T>
ResampleTaps cubic_taps(int64_t in, int64_t out, bool align_corners, double scale_factor) {
  const T step = source_step<T>(in, out, align_corners, scale_factor);
  const T a = T(-0.75);
  ResampleTaps t;
  t.taps = 4;
  for (int64_t o = 0; o < out; ++o) {
    const T real = source_position<T>(step, o, align_corners, true);
    const int64_t i = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const T l = std::min(std::max(real - static_cast<T>(i), T(0)), T(1));
    const T r = static_cast<T>(1.0 - static_cast<double>(l));
    const T w[4] = {cubic_far<T>(static_cast<T>(static_cast<double>(l) + 1.0), a), cubic_near<T>(l, a),
                    cubic_near<T>(r, a), cubic_far<T>(static_cast<T>(static_cast<double>(r) + 1.0), a)};
    for (int64_t k = 0; k < 4; ++k) {
      t.index.push_back(std::clamp<int64_t>(i - 1 + k, 0, in - 1));
      t.weight.push_back(static_cast<double>(w[k]));
    }
  }
  return t;
}

/// Antialiased bilinear (triangle filter) or bicubic (Keys, a = -0.5) as PyTorch's
/// _compute_weights_aa: when shrinking, the filter is stretched by the scale so that every
/// source pixel contributes; the weights of each output are normalised to sum to one.
template <class T>
ResampleTaps antialias_taps(int64_t in, int64_t out, bool align_corners, double scale_factor, bool cubic) {
  const T scale = source_step<T>(in, out, align_corners, scale_factor);
  const int base = cubic ? 4 : 2;
  const T support = static_cast<T>(scale >= T(1) ? (base * 0.5) * static_cast<double>(scale) : base * 0.5);
  const T invscale = static_cast<T>(scale >= T(1) ? 1.0 / static_cast<double>(scale) : 1.0);
  auto filter = [cubic](T x) -> T {
    x = std::abs(x);
    if (!cubic) return x < T(1) ? static_cast<T>(1.0 - static_cast<double>(x)) : T(0);
    if (x < T(1)) return cubic_near<T>(x, T(-0.5));
    if (x < T(2)) return cubic_far<T>(x, T(-0.5));
    return T(0);
  };
  ResampleTaps t;
  t.taps = static_cast<int64_t>(std::ceil(static_cast<float>(support))) * 2 + 1;
  std::vector<T> w(static_cast<size_t>(t.taps));
  for (int64_t o = 0; o < out; ++o) {
    const T center = static_cast<T>(static_cast<double>(scale) * (static_cast<double>(o) + 0.5));
    const int64_t lo = std::max(static_cast<int64_t>(static_cast<double>(center - support) + 0.5), int64_t{0});
    const int64_t n = std::clamp<int64_t>(
        std::min(static_cast<int64_t>(static_cast<double>(center + support) + 0.5), in) - lo, 0, t.taps);
    T total = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T x = static_cast<T>(
          (static_cast<double>(static_cast<T>(j + lo) - center) + 0.5) * static_cast<double>(invscale));
      w[static_cast<size_t>(j)] = filter(x);
      total += w[static_cast<size_t>(j)];
    }
    for (int64_t j = 0; j < t.taps; ++j) {
      const bool real_tap = j < n;
      t.index.push_back(real_tap ? lo + j : std::min(lo, in - 1));
      t.weight.push_back(!real_tap ? 0.0 : static_cast<double>(total != T(0) ? w[static_cast<size_t>(j)] / total
                                                                                 : w[static_cast<size_t>(j)]));
    }
    t.used.push_back(n);
  }
  return t;
}

/// x resampled along `dim` to `out` pixels: sum over k of weight[., k] * x[index[., k]],
/// tap by tap from the first, in x's dtype.
template <class P>
BasicTensor<P> apply_taps(const BasicTensor<P>& x, int64_t dim, int64_t out, const ResampleTaps& t) {
  auto tap_index = [&](int64_t k) {
    std::vector<int64_t> v(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) v[static_cast<size_t>(o)] = t.index[static_cast<size_t>(o * t.taps + k)];
    return ember::detail::index_tensor_1d<P>(std::move(v), x.device());
  };
  if (t.weight.empty()) return index_select(x, dim, tap_index(0));
  Shape ws(static_cast<size_t>(x.dim()), 1);
  ws[static_cast<size_t>(dim)] = out;
  BasicTensor<P> y;
  for (int64_t k = 0; k < t.taps; ++k) {
    std::vector<double> wk(static_cast<size_t>(out));
    bool padded = false;
    for (int64_t o = 0; o < out; ++o) {
      wk[static_cast<size_t>(o)] = t.weight[static_cast<size_t>(o * t.taps + k)];
      padded = padded || (!t.used.empty() && t.used[static_cast<size_t>(o)] <= k);
    }
    BasicTensor<P> w = from_blob<P>(wk.data(), {out}, TensorOptions(DType::F64)).clone().to(x.dtype()).reshape(ws);
    if (!x.is_cpu()) w = w.to(x.device());
    BasicTensor<P> term = index_select(x, dim, tap_index(k)) * w;
    if (padded) {
      std::vector<int64_t> real(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o) real[static_cast<size_t>(o)] = t.used[static_cast<size_t>(o)] > k ? 1 : 0;
      BasicTensor<P> keep = ember::detail::index_tensor_1d<P>(std::move(real), x.device()).reshape(ws).ne(0);
      term = where(keep, term, 0.0);
    }
    y = k == 0 ? term : y + term;
  }
  return y;
}

/// The taps of `mode` for one dim of an `nd`-d resampling, in float for float32 and narrower
/// inputs, double for double.
inline ResampleTaps mode_taps(std::string_view mode, DType dtype, int64_t in, int64_t out, bool align_corners,
                              double scale_factor, bool antialias, int nd) {
  const bool f64 = dtype == DType::F64;
  if (mode == "nearest" || mode == "nearest-exact")
    return nearest_taps(in, out, scale_factor, mode != "nearest", nd == 2);
  if (antialias) {
    const bool cubic = mode == "bicubic";
    return f64 ? antialias_taps<double>(in, out, align_corners, scale_factor, cubic)
               : antialias_taps<float>(in, out, align_corners, scale_factor, cubic);
  }
  if (mode == "bicubic")
    return f64 ? cubic_taps<double>(in, out, align_corners, scale_factor)
               : cubic_taps<float>(in, out, align_corners, scale_factor);
  return f64 ? linear_taps<double>(in, out, align_corners, scale_factor)
             : linear_taps<float>(in, out, align_corners, scale_factor);
}

/// The spatial rank a mode needs (0: any of 1, 2, 3).
inline int mode_spatial_dims(std::string_view mode) {
  if (mode == "linear") return 1;
  if (mode == "bilinear" || mode == "bicubic") return 2;
  if (mode == "trilinear") return 3;
  return 0;
}
inline bool interpolating_mode(std::string_view mode) { return mode_spatial_dims(mode) != 0; }
}  // namespace detail

/// Resampling of (N, C, L), (N, C, H, W) or (N, C, D, H, W) to `size` (one value for every
/// spatial dim, or one per dim), as torch.nn.functional.interpolate:
///   - mode nearest, nearest-exact or area (adaptive average pooling) for any of the three;
///     linear for (N, C, L), bilinear and bicubic for (N, C, H, W), trilinear for 5-D;
///   - align_corners (interpolating modes only) maps the corner pixels' centres onto each other;
///   - `scale_factor` (one for all dims, or one per dim; 0 = none) places the source pixels by
///     the factor, not by the size ratio, as PyTorch does when the size came from a factor;
///   - antialias (bilinear and bicubic) widens the filter when shrinking.
template <class P>
BasicTensor<P> interpolate(const BasicTensor<P>& x, IntArgs size, std::string_view mode = "nearest",
                           bool align_corners = false, std::vector<double> scale_factor = {},
                           bool antialias = false) {
  EMBER_CHECK(x.dim() >= 3 && x.dim() <= 5,
              "[interpolate] expects (N, C, L), (N, C, H, W) or (N, C, D, H, W) input, got shape {}", x.sizes());
  const int nd = static_cast<int>(x.dim()) - 2;
  const bool known = mode == "nearest" || mode == "nearest-exact" || mode == "area" || detail::interpolating_mode(mode);
  EMBER_CHECK(known,
              "[interpolate] mode must be nearest, nearest-exact, linear, bilinear, bicubic, trilinear or area, got "
              "'{}'",
              mode);
  const int needs = detail::mode_spatial_dims(mode);
  EMBER_CHECK(needs == 0 || needs == nd, "[interpolate] mode '{}' needs {}-D input, got shape {}", mode, needs + 2,
              x.sizes());
  EMBER_CHECK(!align_corners || detail::interpolating_mode(mode),
              "[interpolate] align_corners can only be set with the interpolating modes linear, bilinear, bicubic "
              "and trilinear, got mode '{}'",
              mode);
  EMBER_CHECK(!antialias || mode == "bilinear" || mode == "bicubic",
              "[interpolate] antialias is offered for modes bilinear and bicubic, got mode '{}'", mode);
  EMBER_CHECK(mode == "nearest" || mode == "nearest-exact" || is_floating(x.dtype()),
              "[interpolate] mode '{}' needs a floating-point input, got {}", mode, x.dtype());
  const auto o = detail::expand_arg(size, nd, "interpolate", "size");
  for (int d = 0; d < nd; ++d) {
    EMBER_CHECK(o[d] > 0, "[interpolate] output size must be positive, got {}", o[d]);
    EMBER_CHECK(x.size(2 + d) > 0, "[interpolate] input of shape {} has an empty spatial dim", x.sizes());
  }
  EMBER_CHECK(scale_factor.empty() || scale_factor.size() == 1 || static_cast<int>(scale_factor.size()) == nd,
              "[interpolate] takes 1 or {} scale factors, got {}", nd, scale_factor.size());
  // The source step is 1 / factor in float: it must be finite too.
  for (double f : scale_factor)
    EMBER_CHECK(f == 0 || (f > 0 && std::isfinite(f) && std::isfinite(static_cast<float>(1.0 / f))),
                "[interpolate] scale factors must be 0 (none) or positive and finite, got {}", f);
  Shape out_shape{x.size(0), x.size(1)};
  for (int d = 0; d < nd; ++d) out_shape.push_back(o[d]);
  // An input with no elements needs no taps; otherwise sizes beyond memory fail here, as an
  // allocation, before the host loops below run over them (the caching allocator hands the
  // block on to the result).
  if (x.numel() == 0) return detail::resized_empty(x, out_shape, nd);
  (void)empty<P>(out_shape, TensorOptions(x.dtype()).device(x.device()));
  if (mode == "area") {
    if (nd == 1) return adaptive_avg_pool1d(x, o[0]);
    if (nd == 2) return adaptive_avg_pool2d(x, {o[0], o[1]});
    return adaptive_avg_pool3d(x, {o[0], o[1], o[2]});
  }
  // The last dim first: for nearest the smaller input is gathered first and the backward
  // runs the other way round (whole-row adds on the large gradient).
  BasicTensor<P> y = x;
  for (int d = nd - 1; d >= 0; --d) {
    const double sf = scale_factor.empty() ? 0.0 : scale_factor.size() == 1 ? scale_factor[0] : scale_factor[d];
    const int64_t dim = 2 + d;
    y = detail::apply_taps(y, dim, o[d],
                           detail::mode_taps(mode, x.dtype(), x.size(dim), o[d], align_corners, sf, antialias, nd));
  }
  return y;
}

namespace detail {
/// One scale factor for every spatial dim, or one per dim (`nd`; 0: not known yet), each
/// positive and finite (shared with Upsample, which checks at construction).
inline void check_scale_factors(const std::vector<double>& scale, const char* op, int nd = 0) {
  EMBER_CHECK(!scale.empty() && scale.size() <= 3 && (nd == 0 || scale.size() == 1 || static_cast<int>(scale.size()) == nd),
              "[{}] takes 1 or {} scale factors, got {}", op, nd == 0 ? "one per spatial dim (up to 3)" : std::to_string(nd),
              scale.size());
  for (double f : scale) EMBER_CHECK(f > 0 && std::isfinite(f), "[{}] scale factors must be positive, got {}", op, f);
}

/// interpolate by scale factors (one for every spatial dim, or one per dim): the output is
/// floor(in * scale). As PyTorch, the factors, not the rounded size ratio, place the source
/// pixels, unless `recompute` (recompute_scale_factor) asks for the size ratio.
template <class P>
BasicTensor<P> interpolate_scaled(const BasicTensor<P>& x, const std::vector<double>& scale, std::string_view mode,
                                  bool align_corners, bool recompute, const char* op, bool antialias = false) {
  EMBER_CHECK(x.dim() >= 3 && x.dim() <= 5,
              "[{}] expects (N, C, L), (N, C, H, W) or (N, C, D, H, W) input, got shape {}", op, x.sizes());
  const int nd = static_cast<int>(x.dim()) - 2;
  check_scale_factors(scale, op, nd);
  IntArgs size;
  for (int d = 0; d < nd; ++d) {
    const double f = scale.size() == 1 ? scale[0] : scale[static_cast<size_t>(d)];
    const double out = std::floor(static_cast<double>(x.size(2 + d)) * f);
    EMBER_CHECK(out < 0x1p62, "[{}] scale factor {} makes dim {} of size {} too large", op, f, 2 + d, x.size(2 + d));
    size.push_back(static_cast<int64_t>(out));
  }
  return interpolate(x, size, mode, align_corners, recompute ? std::vector<double>{} : scale, antialias);
}
}  // namespace detail

namespace detail {
/// f applied to x (*, C, H, W) as one batch (N, C, H, W), the leading dims (none: unbatched)
/// restored on the result.
template <class P, class F>
BasicTensor<P> over_image_batch(const BasicTensor<P>& x, const char* op, F f) {
  EMBER_CHECK(x.dim() >= 3, "[{}] expects (*, C, H, W) input of 3 or more dims, got shape {}", op, x.sizes());
  if (x.dim() == 4) return f(x);
  Shape lead = x.sizes();
  lead.resize(static_cast<size_t>(x.dim() - 3));
  int64_t batch = 1;
  for (int64_t s : lead) batch *= s;  // a product of existing sizes: no overflow
  BasicTensor<P> y = f(x.reshape({batch, x.size(-3), x.size(-2), x.size(-1)}));
  for (int64_t d = 1; d < 4; ++d) lead.push_back(y.size(d));
  return y.reshape(lead);
}
}  // namespace detail

/// (*, C r^2, H, W) -> (*, C, H r, W r).
template <class P>
BasicTensor<P> pixel_shuffle(const BasicTensor<P>& x, int64_t r) {
  EMBER_CHECK(r > 0 && r < (int64_t{1} << 31), "[pixel_shuffle] upscale factor must be positive and below 2^31, got {}",
              r);
  return detail::over_image_batch(x, "pixel_shuffle", [r](const BasicTensor<P>& xb) {
    EMBER_CHECK(xb.size(1) % (r * r) == 0, "[pixel_shuffle] expects (*, C * {}^2, H, W), got {} channels", r,
                xb.size(1));
    int64_t n = xb.size(0), c = xb.size(1) / (r * r), h = xb.size(2), w = xb.size(3);
    return xb.reshape({n, c, r, r, h, w}).permute({0, 1, 4, 2, 5, 3}).reshape({n, c, h * r, w * r});
  });
}
/// (*, C, H r, W r) -> (*, C r^2, H, W): pixel_shuffle's inverse.
template <class P>
BasicTensor<P> pixel_unshuffle(const BasicTensor<P>& x, int64_t r) {
  EMBER_CHECK(r > 0 && r < (int64_t{1} << 31),
              "[pixel_unshuffle] downscale factor must be positive and below 2^31, got {}", r);
  return detail::over_image_batch(x, "pixel_unshuffle", [r, &x](const BasicTensor<P>& xb) {
    EMBER_CHECK(xb.size(2) % r == 0 && xb.size(3) % r == 0,
                "[pixel_unshuffle] expects (*, C, H * {}, W * {}), got shape {}", r, r, x.sizes());
    int64_t n = xb.size(0), c = xb.size(1), h = xb.size(2) / r, w = xb.size(3) / r;
    // (C r^2 can exceed int64 only when H or W is 0: no element bounds it then.)
    const int64_t channels = ember::detail::checked_mul(c, r * r, "pixel_unshuffle");
    return xb.reshape({n, c, h, r, w, r}).permute({0, 1, 3, 5, 2, 4}).reshape({n, channels, h, w});
  });
}

namespace detail {
/// max_unpool's output size per spatial dim: PyTorch's (in - 1) stride - 2 padding + kernel,
/// or `output_size` (nd values, or nd + 2 of which the last nd count), which must lie strictly
/// within one stride of it (the sizes a max pool with this geometry can have come from).
inline std::array<int64_t, 3> unpool_size(const ops::ConvGeometry& g, const Shape& in, const IntArgs& output_size,
                                          const char* op) {
  const int nd = g.nd;
  const size_t given = output_size.size();
  EMBER_CHECK(given == 0 || given == static_cast<size_t>(nd) || given == static_cast<size_t>(nd) + 2,
              "[{}] output_size needs {} or {} values, got {}", op, nd, nd + 2, given);
  std::array<int64_t, 3> out{1, 1, 1};
  for (int d = 0; d < nd; ++d) {
    const int64_t i = in[in.size() - static_cast<size_t>(nd) + static_cast<size_t>(d)];
    // kernel, stride and padding are below 2^31 (check_geometry); i is a tensor size.
    const int64_t dflt = ember::detail::checked_add(ember::detail::checked_mul(i - 1, g.stride[d], op),
                                                    g.kernel[d] - 2 * g.pad_before[d], op);
    out[d] = dflt;
    if (given != 0) {
      const int64_t want = output_size[given - static_cast<size_t>(nd) + static_cast<size_t>(d)];
      EMBER_CHECK(want > dflt - g.stride[d] && want < dflt + g.stride[d],
                  "[{}] output size {} of spatial dim {} must be between {} and {} (exclusive) for input size {}", op,
                  want, d, dflt - g.stride[d], dflt + g.stride[d], i);
      out[d] = want;
    }
    EMBER_CHECK(out[d] > 0, "[{}] input size {} unpools to a non-positive size {} (kernel {}, stride {}, padding {})",
                op, i, out[d], g.kernel[d], g.stride[d], g.pad_before[d]);
  }
  return out;
}

/// max_pool's inverse: each value goes to the position its index names in its (N, C) output
/// plane (flat over the output's spatial dims, as max_pool's indices); everything else is 0.
/// The gradient reads those positions back (scatter's, as PyTorch's).
template <class P>
BasicTensor<P> max_unpool_nd(const BasicTensor<P>& x, const BasicTensor<P>& indices, int nd, IntArgs kernel,
                             IntArgs stride, IntArgs padding, const IntArgs& output_size, const char* op) {
  bool unbatched;
  BasicTensor<P> xb = batched(x, nd, op, unbatched);
  EMBER_CHECK(is_floating(x.dtype()), "[{}] needs a floating-point input, got {}", op, x.dtype());
  EMBER_CHECK(indices.defined() && indices.dtype() == DType::I64 && indices.sizes() == x.sizes(),
              "[{}] indices must be i64 of the input's shape {}, got {} of shape {}", op, x.sizes(),
              indices.defined() ? EMBER_FORMAT("{}", indices.dtype()) : "none",
              indices.defined() ? indices.sizes() : Shape{});
  EMBER_CHECK(indices.device() == x.device(), "[{}] indices are on {}, the input on {}", op, indices.device(),
              x.device());
  const ops::ConvGeometry g = geometry(nd, kernel, stride, padding, {1}, op);
  const auto o = unpool_size(g, xb.sizes(), output_size, op);
  const int64_t n = xb.size(0), c = xb.size(1);
  Shape out_shape{n, c};
  int64_t plane = 1;
  for (int d = 0; d < nd; ++d) {
    out_shape.push_back(o[d]);
    plane = ember::detail::checked_mul(plane, o[d], op);
  }
  BasicTensor<P> ib = (unbatched ? indices.unsqueeze(0) : indices).reshape({n, c, -1});
  if (ib.numel() > 0) {
    const int64_t lo = ib.amin().template item<int64_t>(), hi = ib.amax().template item<int64_t>();
    EMBER_CHECK(lo >= 0 && hi < plane, "[{}] index {} is out of range for an output plane of {} elements (shape {})",
                op, lo < 0 ? lo : hi, plane, out_shape);
  }
  BasicTensor<P> out = zeros<P>({n, c, plane}, TensorOptions(x.dtype()).device(x.device()))
                           .scatter(2, ib, xb.reshape({n, c, -1}))
                           .reshape(out_shape);
  return unbatched ? out.squeeze(0) : out;
}
}  // namespace detail

/// max_pool's inverse for (N, C, L) or (C, L) input and the indices that max_pool1d returned
/// with it; the output has size (L - 1) stride - 2 padding + kernel, or output_size.
template <class P>
BasicTensor<P> max_unpool1d(const BasicTensor<P>& x, const BasicTensor<P>& indices, IntArgs kernel,
                            IntArgs stride = {}, IntArgs padding = {0}, const IntArgs& output_size = {}) {
  return detail::max_unpool_nd(x, indices, 1, kernel, stride, padding, output_size, "max_unpool1d");
}
template <class P>
BasicTensor<P> max_unpool2d(const BasicTensor<P>& x, const BasicTensor<P>& indices, IntArgs kernel,
                            IntArgs stride = {}, IntArgs padding = {0}, const IntArgs& output_size = {}) {
  return detail::max_unpool_nd(x, indices, 2, kernel, stride, padding, output_size, "max_unpool2d");
}
template <class P>
BasicTensor<P> max_unpool3d(const BasicTensor<P>& x, const BasicTensor<P>& indices, IntArgs kernel,
                            IntArgs stride = {}, IntArgs padding = {0}, const IntArgs& output_size = {}) {
  return detail::max_unpool_nd(x, indices, 3, kernel, stride, padding, output_size, "max_unpool3d");
}

}  // namespace ember::nn::functional
