#pragma once
/// nn::functional's affine_grid and grid_sample for 2-d images, as torch.nn.functional's
/// (spatial transformers, warping, optical-flow losses):
///   Tensor grid = F::affine_grid(theta, {N, C, H, W});          // theta (N, 2, 3)
///   Tensor out = F::grid_sample(img, grid, "bilinear", "zeros");  // img (N, C, Hi, Wi)
/// The grid holds (x, y) in [-1, 1] per output pixel; modes bilinear and nearest, padding
/// zeros, border and reflection, align_corners, with PyTorch's coordinate rules. Composed of
/// differentiable ops (a gather per corner), so the gradient reaches both the image and the
/// grid (the grid's is zero for nearest, as PyTorch's). 3-d volumes and bicubic are not offered.

#include <ember/nn/functional.hpp>

#include <string_view>

namespace ember::nn::functional {

/// The sampling grid of an affine map: theta (N, 2, 3) maps each output pixel's normalised
/// (x, y, 1) to the input's normalised (x, y); size is the output's (N, C, H, W).
template <class P>
BasicTensor<P> affine_grid(const BasicTensor<P>& theta, const Shape& size, bool align_corners = false) {
  EMBER_CHECK(size.size() == 4, "[affine_grid] expects a 4-d size (N, C, H, W) (5-d volumes are not offered), got {}",
              size);
  EMBER_CHECK(theta.defined() && theta.dim() == 3 && theta.size(0) == size[0] && theta.size(1) == 2 &&
                  theta.size(2) == 3,
              "[affine_grid] expects theta of shape ({}, 2, 3) for size {}, got {}", size[0], size,
              theta.defined() ? theta.sizes() : Shape{});
  EMBER_CHECK(theta.is_floating_point(), "[affine_grid] needs a floating-point theta, got {}", theta.dtype());
  EMBER_CHECK(size[2] > 0 && size[3] > 0, "[affine_grid] the output size {} has an empty spatial dim", size);
  const int64_t h = size[2], w = size[3];
  const TensorOptions o = TensorOptions(theta.dtype()).device(theta.device());
  // Pixel centres in [-1, 1]: the corners themselves with align_corners, else shrunk by
  // (n - 1) / n so that the outer pixels' edges land on -1 and 1.
  // A single pixel sits at 0 either way (PyTorch's rule).
  auto axis = [&](int64_t n) {
    if (n == 1) return zeros<P>({1}, o);
    BasicTensor<P> a = linspace<P>(-1.0, 1.0, n, o);
    return align_corners ? a : a * (static_cast<double>(n - 1) / static_cast<double>(n));
  };
  BasicTensor<P> xs = axis(w).view({1, w, 1}).expand({h, w, 1});
  BasicTensor<P> ys = axis(h).view({h, 1, 1}).expand({h, w, 1});
  BasicTensor<P> base = cat({xs, ys, ones<P>({h, w, 1}, o)}, 2).reshape({1, h * w, 3});
  return base.matmul(theta.transpose(1, 2)).reshape({size[0], h, w, 2});  // (N, H*W, 3) @ (N, 3, 2)
}

namespace detail {
/// Normalised coordinates -> pixel coordinates, then the padding mode's folding, as PyTorch's
/// grid_sampler_compute_source_index.
template <class P>
BasicTensor<P> grid_source_index(const BasicTensor<P>& coord, int64_t size, std::string_view padding,
                                 bool align_corners) {
  const double n = static_cast<double>(size);
  BasicTensor<P> c = align_corners ? (coord + 1.0) * ((n - 1) / 2) : ((coord + 1.0) * n - 1.0) / 2;
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

/// image (N, C, H, W) at integer pixel coordinates (ix, iy) of shape (N, Ho, Wo) (already
/// whole numbers), times `weight`; taps outside the image read 0.
template <class P>
BasicTensor<P> grid_tap(const BasicTensor<P>& flat, int64_t h, int64_t w, const BasicTensor<P>& ix,
                        const BasicTensor<P>& iy, const BasicTensor<P>& weight) {
  const int64_t n = flat.size(0), c = flat.size(1);
  BasicTensor<P> inside = ix.ge(0.0).logical_and(ix.le(static_cast<double>(w - 1)))
                              .logical_and(iy.ge(0.0))
                              .logical_and(iy.le(static_cast<double>(h - 1)));
  BasicTensor<P> index = (iy.clamp(0.0, static_cast<double>(h - 1)) * static_cast<double>(w) +
                          ix.clamp(0.0, static_cast<double>(w - 1)))
                             .detach()
                             .to(DType::I64)
                             .reshape({n, 1, -1});
  BasicTensor<P> v = flat.gather(2, index.expand({n, c, index.size(2)}));
  return v * where(inside, weight, 0.0).reshape({n, 1, -1});
}
}  // namespace detail

/// Samples image (N, C, H, W) at the grid's (N, Ho, Wo, 2) normalised (x, y): the output is
/// (N, C, Ho, Wo). mode "bilinear" or "nearest" (round half to even, as PyTorch);
/// padding_mode "zeros", "border" or "reflection".
template <class P>
BasicTensor<P> grid_sample(const BasicTensor<P>& input, const BasicTensor<P>& grid, std::string_view mode = "bilinear",
                           std::string_view padding_mode = "zeros", bool align_corners = false) {
  EMBER_CHECK(input.dim() == 4, "[grid_sample] expects (N, C, H, W) input (5-d volumes are not offered), got shape {}",
              input.sizes());
  EMBER_CHECK(grid.dim() == 4 && grid.size(0) == input.size(0) && grid.size(3) == 2,
              "[grid_sample] expects a grid of shape ({}, Ho, Wo, 2) for input {}, got {}", input.size(0),
              input.sizes(), grid.sizes());
  EMBER_CHECK(mode == "bilinear" || mode == "nearest", "[grid_sample] mode must be bilinear or nearest, got '{}'", mode);
  EMBER_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
              "[grid_sample] padding_mode must be zeros, border or reflection, got '{}'", padding_mode);
  EMBER_CHECK(input.is_floating_point() && grid.dtype() == input.dtype(),
              "[grid_sample] needs floating-point input and grid of one dtype, got {} and {}", input.dtype(),
              grid.dtype());
  EMBER_CHECK(input.device() == grid.device(), "[grid_sample] input on {}, grid on {}", input.device(), grid.device());
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const int64_t ho = grid.size(1), wo = grid.size(2);
  EMBER_CHECK(h > 0 && w > 0, "[grid_sample] input of shape {} has an empty spatial dim", input.sizes());
  if (n == 0 || c == 0 || ho == 0 || wo == 0) return zeros<P>({n, c, ho, wo}, TensorOptions(input.dtype()).device(input.device()));
  BasicTensor<P> ix = detail::grid_source_index(grid.select(3, 0), w, padding_mode, align_corners);
  BasicTensor<P> iy = detail::grid_source_index(grid.select(3, 1), h, padding_mode, align_corners);
  BasicTensor<P> flat = input.reshape({n, c, h * w});
  BasicTensor<P> out;
  if (mode == "nearest") {
    out = detail::grid_tap(flat, h, w, ix.round(), iy.round(), ones_like(ix));
  } else {
    BasicTensor<P> x0 = ix.floor().detach(), y0 = iy.floor().detach();
    BasicTensor<P> x1 = x0 + 1.0, y1 = y0 + 1.0;
    BasicTensor<P> wx1 = ix - x0, wx0 = 1.0 - wx1, wy1 = iy - y0, wy0 = 1.0 - wy1;
    out = detail::grid_tap(flat, h, w, x0, y0, wx0 * wy0) + detail::grid_tap(flat, h, w, x1, y0, wx1 * wy0) +
          detail::grid_tap(flat, h, w, x0, y1, wx0 * wy1) + detail::grid_tap(flat, h, w, x1, y1, wx1 * wy1);
  }
  return out.reshape({n, c, ho, wo});
}

}  // namespace ember::nn::functional
