#pragma once
/// nn::functional's affine_grid and grid_sample, as torch.nn.functional's (spatial
/// transformers, warping, optical-flow losses), for 2-d images and 3-d volumes:
///   Tensor grid = F::affine_grid(theta, {N, C, H, W});          // theta (N, 2, 3)
///   Tensor out = F::grid_sample(img, grid, "bilinear", "zeros");  // img (N, C, Hi, Wi)
///   F::affine_grid(theta, {N, C, D, H, W})                        // theta (N, 3, 4)
/// The grid holds (x, y) or (x, y, z) in [-1, 1] per output point; modes bilinear (trilinear
/// on volumes), nearest and bicubic (images only, as PyTorch); padding zeros, border and
/// reflection; align_corners; PyTorch's coordinate rules. Composed of differentiable ops (a
/// gather per tap), so the gradient reaches both the input and the grid (the grid's is zero
/// for nearest, as PyTorch's).

#include <ember/nn/functional.hpp>

#include <array>
#include <string_view>

namespace ember::nn::functional {

/// The sampling grid of an affine map: theta (N, 2, 3) maps each output pixel's normalised
/// (x, y, 1) to the input's normalised (x, y), for size (N, C, H, W); theta (N, 3, 4) maps
/// (x, y, z, 1) to (x, y, z) for a volume's size (N, C, D, H, W). The grid is (N, H, W, 2) or
/// (N, D, H, W, 3).
template <class P>
BasicTensor<P> affine_grid(const BasicTensor<P>& theta, const Shape& size, bool align_corners = false) {
  // Under autocast (PyTorch runs grid sampling in f32): a bf16 theta from a Linear gives an
  // f32 grid, computed below with autocast off.
  if (autocast::reduced_on_cpu(theta))
    return affine_grid(theta.to(DType::F32), size, align_corners);
  EMBER_CHECK(size.size() == 4 || size.size() == 5,
              "[affine_grid] expects a size (N, C, H, W) or (N, C, D, H, W), got {}", size);
  const int64_t nd = static_cast<int64_t>(size.size()) - 2;
  EMBER_CHECK(theta.defined() && theta.dim() == 3 && theta.size(0) == size[0] && theta.size(1) == nd &&
                  theta.size(2) == nd + 1,
              "[affine_grid] expects theta of shape ({}, {}, {}) for size {}, got {}", size[0], nd, nd + 1, size,
              theta.defined() ? theta.sizes() : Shape{});
  EMBER_CHECK(theta.is_floating_point(), "[affine_grid] needs a floating-point theta, got {}", theta.dtype());
  for (int64_t d = 2; d < 2 + nd; ++d)
    EMBER_CHECK(size[static_cast<size_t>(d)] > 0, "[affine_grid] the output size {} has an empty spatial dim", size);
  const TensorOptions o = TensorOptions(theta.dtype()).device(theta.device());
  // Pixel centres in [-1, 1]: the corners themselves with align_corners, else shrunk by
  // (n - 1) / n so that the outer pixels' edges land on -1 and 1.
  // A single pixel sits at 0 either way (PyTorch's rule).
  auto axis = [&](int64_t n) {
    if (n == 1) return zeros<P>({1}, o);
    BasicTensor<P> a = linspace<P>(-1.0, 1.0, n, o);
    return align_corners ? a : a * (static_cast<double>(n - 1) / static_cast<double>(n));
  };
  // The spatial sizes, outermost first (D, H, W), and the base grid of (x, y[, z], 1) per point.
  Shape spatial;
  for (size_t d = 2; d < size.size(); ++d) spatial.push_back(size[d]);
  const int64_t points = ember::checked_numel(spatial, "affine_grid");
  Shape point_shape = spatial;
  point_shape.push_back(1);
  std::vector<BasicTensor<P>> columns;
  for (int64_t k = 0; k < nd; ++k) {  // x runs along the last dim, y the one before, z the first
    const size_t dim = static_cast<size_t>(nd - 1 - k);
    Shape view(static_cast<size_t>(nd + 1), 1);
    view[dim] = spatial[dim];
    columns.push_back(axis(spatial[dim]).view(view).expand(point_shape));
  }
  columns.push_back(ones<P>(point_shape, o));
  BasicTensor<P> base = cat(columns, nd).reshape({1, points, nd + 1});
  Shape out_shape{size[0]};
  for (int64_t s : spatial) out_shape.push_back(s);
  out_shape.push_back(nd);
  // Sampling coordinates, not a product autocast should round: bf16 moves a point by a
  // quarter pixel at width 256, and grid_sample wants the input's dtype.
  autocast::AutocastGuard exact(false);
  return base.matmul(theta.transpose(1, 2)).reshape(out_shape);  // (N, points, nd+1) @ (N, nd+1, nd)
}

namespace detail {
/// Normalised coordinates -> pixel coordinates (PyTorch's grid_sampler_unnormalize).
template <class P>
BasicTensor<P> grid_unnormalize(const BasicTensor<P>& coord, int64_t size, bool align_corners) {
  const double n = static_cast<double>(size);
  return align_corners ? (coord + 1.0) * ((n - 1) / 2) : ((coord + 1.0) * n - 1.0) / 2;
}

/// The padding mode's folding of pixel coordinates (PyTorch's compute_coordinates): border
/// clips, reflection reflects about the edges then clips, zeros leaves them.
template <class P>
BasicTensor<P> grid_fold(const BasicTensor<P>& c, int64_t size, std::string_view padding, bool align_corners) {
  const double n = static_cast<double>(size);
  if (padding == "border") return c.clamp(0.0, n - 1);
  if (padding == "reflection") {
    // Reflect about the edges (the pixel centres with align_corners, else the pixels' outer
    // edges -0.5 and size - 0.5), then clip.
    const double low = align_corners ? 0.0 : -0.5, span = align_corners ? n - 1 : n;
    if (span <= 0) return c * 0.0;
    BasicTensor<P> d = (c - low).abs();
    BasicTensor<P> flips = (d / span).floor().detach();
    BasicTensor<P> extra = d - flips * span;
    BasicTensor<P> even = (flips - (flips / 2.0).floor() * 2.0).eq(0.0);
    return where(even, extra + low, (span - extra) + low).clamp(0.0, n - 1);
  }
  return c;
}

/// The input flattened to (N, C, points) with spatial sizes size[0..nd) (x's first: W, H, D),
/// read at whole-number coordinates at[k] (each of the output's shape (N, points_out)), times
/// `weight`; taps outside the input read 0.
template <class P>
BasicTensor<P> grid_tap(const BasicTensor<P>& flat, size_t nd, const std::array<int64_t, 3>& size,
                        const std::array<BasicTensor<P>, 3>& at, const BasicTensor<P>& weight) {
  const int64_t n = flat.size(0), c = flat.size(1);
  BasicTensor<P> inside, index;
  for (size_t k = nd; k-- > 0;) {  // outermost coordinate first: index = (z * H + y) * W + x
    const double last = static_cast<double>(size[k] - 1);
    BasicTensor<P> in_k = at[k].ge(0.0).logical_and(at[k].le(last));
    inside = inside.defined() ? inside.logical_and(in_k) : in_k;
    BasicTensor<P> clamped = at[k].clamp(0.0, last);
    index = index.defined() ? index * static_cast<double>(size[k]) + clamped : clamped;
  }
  index = index.detach().to(DType::I64).reshape({n, 1, -1});
  BasicTensor<P> v = flat.gather(2, index.expand({n, c, index.size(2)}));
  return v * where(inside, weight, 0.0).reshape({n, 1, -1});
}

/// PyTorch's cubic convolution weights (A = -0.75) of the four taps floor - 1 .. floor + 2
/// at fraction t.
template <class P>
std::array<BasicTensor<P>, 4> cubic_weights(const BasicTensor<P>& t) {
  constexpr double a = -0.75;
  auto near = [&](const BasicTensor<P>& x) { return ((x * (a + 2) - (a + 3)) * x) * x + 1.0; };  // |x| <= 1
  auto far = [&](const BasicTensor<P>& x) { return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  return {far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)};
}
}  // namespace detail

/// Samples input (N, C, H, W) at the grid's (N, Ho, Wo, 2) normalised (x, y), giving
/// (N, C, Ho, Wo), or a volume (N, C, D, H, W) at (N, Do, Ho, Wo, 3) normalised (x, y, z),
/// giving (N, C, Do, Ho, Wo). mode "bilinear" (trilinear on volumes), "nearest" (round half
/// to even, as PyTorch) or "bicubic" (images only); padding_mode "zeros", "border" or
/// "reflection".
template <class P>
BasicTensor<P> grid_sample(const BasicTensor<P>& input, const BasicTensor<P>& grid, std::string_view mode = "bilinear",
                           std::string_view padding_mode = "zeros", bool align_corners = false) {
  if ((autocast::reduced_on_cpu(input) || autocast::reduced_on_cpu(grid)) && input.is_cpu() && grid.is_cpu() &&
      input.dtype() != DType::F64 && grid.dtype() != DType::F64)
    // Under autocast grid sampling runs in f32 (PyTorch's list): a bf16 input or grid is cast.
    return grid_sample(input.to(DType::F32), grid.to(DType::F32), mode, padding_mode, align_corners);
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5,
              "[grid_sample] expects (N, C, H, W) or (N, C, D, H, W) input, got shape {}", input.sizes());
  const int64_t nd = input.dim() - 2;
  EMBER_CHECK(grid.dim() == input.dim() && grid.size(0) == input.size(0) && grid.size(-1) == nd,
              "[grid_sample] expects a grid of shape ({}, {}{}) for input {}, got {}", input.size(0),
              nd == 2 ? "Ho, Wo, " : "Do, Ho, Wo, ", nd, input.sizes(), grid.sizes());
  EMBER_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic",
              "[grid_sample] mode must be bilinear, nearest or bicubic, got '{}'", mode);
  EMBER_CHECK(mode != "bicubic" || nd == 2, "[grid_sample] bicubic needs 4-d (N, C, H, W) input, got shape {}",
              input.sizes());
  EMBER_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
              "[grid_sample] padding_mode must be zeros, border or reflection, got '{}'", padding_mode);
  EMBER_CHECK(input.is_floating_point() && grid.dtype() == input.dtype(),
              "[grid_sample] needs floating-point input and grid of one dtype, got {} and {}", input.dtype(),
              grid.dtype());
  EMBER_CHECK(input.device() == grid.device(), "[grid_sample] input on {}, grid on {}", input.device(), grid.device());
  const int64_t n = input.size(0), c = input.size(1);
  const size_t dims = static_cast<size_t>(nd);
  Shape out_shape{n, c};
  for (int64_t d = 1; d <= nd; ++d) out_shape.push_back(grid.size(d));
  // size[k]: the input's extent along coordinate k (x: W, y: H, z: D).
  std::array<int64_t, 3> size{};
  for (size_t k = 0; k < dims; ++k) {
    size[k] = input.size(-1 - static_cast<int64_t>(k));
    EMBER_CHECK(size[k] > 0, "[grid_sample] input of shape {} has an empty spatial dim", input.sizes());
  }
  if (ember::checked_numel(out_shape, "grid_sample") == 0)
    return zeros<P>(out_shape, TensorOptions(input.dtype()).device(input.device()));
  BasicTensor<P> flat = input.reshape({n, c, -1});
  std::array<BasicTensor<P>, 3> coord;  // unnormalised, unfolded
  for (size_t k = 0; k < dims; ++k)
    coord[k] = detail::grid_unnormalize(grid.select(-1, static_cast<int64_t>(k)), size[k], align_corners);
  BasicTensor<P> out;
  auto add = [&out](const BasicTensor<P>& tap) { out = out.defined() ? out + tap : tap; };
  if (mode == "bicubic") {
    // Taps at floor - 1 .. floor + 2 along x and y, each tap's coordinate folded by the padding
    // mode on its own (PyTorch's get_value_bounded), weighted by the cubic kernel of the
    // fraction; the fractions carry the grid's gradient.
    BasicTensor<P> x0 = coord[0].floor().detach(), y0 = coord[1].floor().detach();
    const std::array<BasicTensor<P>, 4> wx = detail::cubic_weights(coord[0] - x0);
    const std::array<BasicTensor<P>, 4> wy = detail::cubic_weights(coord[1] - y0);
    for (size_t j = 0; j < 4; ++j) {
      BasicTensor<P> y = detail::grid_fold(y0 + (static_cast<double>(j) - 1), size[1], padding_mode, align_corners);
      for (size_t i = 0; i < 4; ++i) {
        BasicTensor<P> x = detail::grid_fold(x0 + (static_cast<double>(i) - 1), size[0], padding_mode, align_corners);
        add(detail::grid_tap(flat, dims, size, {x, y, {}}, wx[i] * wy[j]));
      }
    }
    return out.reshape(out_shape);
  }
  std::array<BasicTensor<P>, 3> folded;
  for (size_t k = 0; k < dims; ++k) folded[k] = detail::grid_fold(coord[k], size[k], padding_mode, align_corners);
  if (mode == "nearest") {
    std::array<BasicTensor<P>, 3> at;
    for (size_t k = 0; k < dims; ++k) at[k] = folded[k].round();
    // Weights of 1. Where the grid needs a gradient they are recorded as depending on it,
    // with the zero derivative of round (as PyTorch records nearest sampling for the grid): a
    // backward through the samples alone then gives the grid a zero gradient instead of
    // failing. nan_to_num keeps a weight of 1 at non-finite coordinates.
    BasicTensor<P> ones = ones_like(folded[0]);
    if (grid.requires_grad() && ember::detail::grad_enabled<P>())
      ones = ones + (at[0] - at[0].detach()).nan_to_num(0.0, 0.0, 0.0);
    out = detail::grid_tap(flat, dims, size, at, ones);
  } else {
    // 2^nd corners: corner bit k picks floor or floor + 1 along coordinate k, with weight
    // (1 - frac) or frac.
    std::array<BasicTensor<P>, 3> lo, frac;
    for (size_t k = 0; k < dims; ++k) {
      lo[k] = folded[k].floor().detach();
      frac[k] = folded[k] - lo[k];
    }
    for (size_t corner = 0; corner < (size_t{1} << dims); ++corner) {
      std::array<BasicTensor<P>, 3> at;
      BasicTensor<P> weight;
      for (size_t k = 0; k < dims; ++k) {
        const bool up = (corner >> k) & 1;
        at[k] = up ? lo[k] + 1.0 : lo[k];
        BasicTensor<P> w = up ? frac[k] : 1.0 - frac[k];
        weight = weight.defined() ? weight * w : w;
      }
      add(detail::grid_tap(flat, dims, size, at, weight));
    }
  }
  return out.reshape(out_shape);
}

}  // namespace ember::nn::functional
