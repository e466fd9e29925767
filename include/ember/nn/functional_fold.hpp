#pragma once
/// nn::functional's unfold and fold, as torch.nn.functional's: unfold cuts an image
/// (N, C, H, W) into its sliding blocks, the columns of (N, C * kh * kw, L), one per block
/// position (channel-major rows, as PyTorch's); fold sums such columns back into an image,
/// overlapping blocks adding up. They are im2col and col2im (the convolution's own kernels,
/// each the other's adjoint, so autograd comes with them). Unbatched (C, H, W) and
/// (C * kh * kw, L) inputs are accepted too.

#include <ember/nn/functional_conv.hpp>

#include <array>
#include <string>

namespace ember::nn::functional {

namespace detail {
/// The block geometry shared by fold and unfold: two spatial dims, PyTorch's argument order.
inline ops::ConvGeometry block_geometry(const IntArgs& kernel, const IntArgs& dilation, const IntArgs& padding,
                                        const IntArgs& stride, const char* op) {
  return geometry(2, kernel, stride.empty() ? IntArgs{1} : stride, padding, dilation, op);
}

/// Block positions per spatial dim for an image of `size`; each must be at least one.
inline std::array<int64_t, 2> block_counts(const ops::ConvGeometry& g, const std::array<int64_t, 2>& size,
                                           const char* op) {
  std::array<int64_t, 2> n{};
  for (int d = 0; d < 2; ++d) {
    n[d] = g.out_size(d, size[d]);
    EMBER_CHECK(n[d] >= 1,
                "[{}] a {}x{} block (dilation {}x{}) does not fit an image of {}x{} padded by {}x{}: no block positions "
                "in spatial dim {}",
                op, g.kernel[0], g.kernel[1], g.dilation[0], g.dilation[1], size[0], size[1], g.pad_before[0],
                g.pad_before[1], d);
  }
  return n;
}

inline void check_block_dtype(DType t, const char* op) {
  EMBER_CHECK(t == DType::F32 || t == DType::F64, "[{}] supports f32 and f64 input, got {}", op, t);
}
}  // namespace detail

/// (N, C, H, W) or (C, H, W) -> (N, C * kh * kw, L) or (C * kh * kw, L): every block of
/// kernel_size, at the given dilation, on the image padded by `padding`, stepped by `stride`.
template <class P>
BasicTensor<P> unfold(const BasicTensor<P>& x, IntArgs kernel_size, IntArgs dilation = {1}, IntArgs padding = {0},
                      IntArgs stride = {1}) {
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, "[unfold] expects (N, C, H, W) or (C, H, W) input, got shape {}",
              x.sizes());
  detail::check_block_dtype(x.dtype(), "unfold");
  const ops::ConvGeometry g = detail::block_geometry(kernel_size, dilation, padding, stride, "unfold");
  const BasicTensor<P> xb = x.dim() == 3 ? x.unsqueeze(0) : x;
  (void)detail::block_counts(g, {xb.size(2), xb.size(3)}, "unfold");
  BasicTensor<P> cols = detail::im2col(xb, g);
  return x.dim() == 3 ? cols.squeeze(0) : cols;
}

/// unfold's adjoint: (N, C * kh * kw, L) or (C * kh * kw, L) -> (N, C, H, W) or (C, H, W)
/// for output_size (H, W), where L must be the number of block positions in that image.
template <class P>
BasicTensor<P> fold(const BasicTensor<P>& cols, IntArgs output_size, IntArgs kernel_size, IntArgs dilation = {1},
                    IntArgs padding = {0}, IntArgs stride = {1}) {
  EMBER_CHECK(cols.dim() == 2 || cols.dim() == 3,
              "[fold] expects (N, C * kernel taps, L) or (C * kernel taps, L) input, got shape {}", cols.sizes());
  detail::check_block_dtype(cols.dtype(), "fold");
  const ops::ConvGeometry g = detail::block_geometry(kernel_size, dilation, padding, stride, "fold");
  const auto out = detail::expand_arg(output_size, 2, "fold", "output_size");
  EMBER_CHECK(out[0] > 0 && out[1] > 0, "[fold] output_size must be positive, got {}x{}", out[0], out[1]);
  const BasicTensor<P> cb = cols.dim() == 2 ? cols.unsqueeze(0) : cols;
  const int64_t taps = g.kernel_numel();
  EMBER_CHECK(cb.size(1) % taps == 0, "[fold] {} rows (dim {}) are not a multiple of the {}x{} kernel's {} taps",
              cb.size(1), cols.dim() - 2, g.kernel[0], g.kernel[1], taps);
  const auto n = detail::block_counts(g, {out[0], out[1]}, "fold");
  EMBER_CHECK(cb.size(2) == n[0] * n[1],
              "[fold] an output of {}x{} holds {} x {} = {} block positions, but the input of shape {} has {}", out[0],
              out[1], n[0], n[1], n[0] * n[1], cols.sizes(), cb.size(2));
  BasicTensor<P> img = detail::col2im(cb, g, {out[0], out[1], 1});
  return cols.dim() == 2 ? img.squeeze(0) : img;
}

}  // namespace ember::nn::functional
