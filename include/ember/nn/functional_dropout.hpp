#pragma once
/// nn::functional's dropout variants beside dropout and dropout2d (functional.hpp), as
/// torch.nn.functional's: dropout1d and dropout3d zero whole channels of 1-d and 3-d
/// feature maps; alpha_dropout and feature_alpha_dropout keep a SELU network's inputs at zero
/// mean and unit variance by setting dropped elements (or channels) to SELU's negative
/// saturation value and rescaling.

#include <ember/nn/functional.hpp>

#include <cmath>

namespace ember::nn::functional {

namespace detail {
/// The shape of a per-channel mask for an input with `spatial` trailing dims after (N, C), or
/// after (C) when it is unbatched: ones over the spatial dims.
template <class P>
Shape channel_mask_shape(const BasicTensor<P>& x, int64_t spatial) {
  Shape s = x.sizes();
  for (int64_t d = x.dim() - spatial; d < x.dim(); ++d) s[static_cast<size_t>(d)] = 1;
  return s;
}

template <class P>
void check_dropout(const BasicTensor<P>& x, double p, const char* op) {
  EMBER_CHECK(p >= 0 && p <= 1, "[{}] p must be in [0, 1], got {}", op, p);
  EMBER_CHECK(x.is_floating_point(), "[{}] needs a floating-point input, got {}", op, x.dtype());
}

/// Alpha dropout with a keep mask of `mask_shape`: kept elements become a x + b, dropped ones
/// a alpha' + b, where alpha' = -1.7580993408473766 (SELU's scale times its alpha, negated)
/// and a, b restore the mean and variance (PyTorch's constants).
template <class P>
BasicTensor<P> apply_alpha_dropout(const BasicTensor<P>& x, const Shape& mask_shape, double p, bool inplace) {
  constexpr double alpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1.0) * (1.0 - p));
  BasicTensor<P> keep = rand<P>(mask_shape, TensorOptions(DType::F32).device(x.device())).ge(p).to(x.dtype());
  BasicTensor<P> shift = (keep - 1.0) * (alpha * a) + alpha * a * p;
  if (inplace) return BasicTensor<P>(x).mul_(keep * a).add_(shift);
  return x * (keep * a) + shift;
}
}  // namespace detail

/// Zeroes whole channels (dim 1) of an (N, C, L) or (C, L) input.
template <class P>
BasicTensor<P> dropout1d(const BasicTensor<P>& x, double p = 0.5, bool training = true, bool inplace = false) {
  detail::check_dropout(x, p, "dropout1d");
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3, "[dropout1d] expects (C, L) or (N, C, L), got shape {}", x.sizes());
  if (!training || p == 0) return x;
  return detail::apply_dropout(x, detail::channel_mask_shape(x, 1), p, inplace);
}

/// Zeroes whole channels (dim 1) of an (N, C, D, H, W) or (C, D, H, W) input.
template <class P>
BasicTensor<P> dropout3d(const BasicTensor<P>& x, double p = 0.5, bool training = true, bool inplace = false) {
  detail::check_dropout(x, p, "dropout3d");
  EMBER_CHECK(x.dim() == 4 || x.dim() == 5, "[dropout3d] expects (C, D, H, W) or (N, C, D, H, W), got shape {}",
              x.sizes());
  if (!training || p == 0) return x;
  return detail::apply_dropout(x, detail::channel_mask_shape(x, 3), p, inplace);
}

/// Alpha dropout of single elements (for SELU networks); with p = 1 every element is 0.
template <class P>
BasicTensor<P> alpha_dropout(const BasicTensor<P>& x, double p = 0.5, bool training = false, bool inplace = false) {
  detail::check_dropout(x, p, "alpha_dropout");
  if (!training || p == 0) return x;
  if (p == 1) return inplace ? BasicTensor<P>(x).mul_(0.0) : x * 0.0;
  return detail::apply_alpha_dropout(x, x.sizes(), p, inplace);
}

/// Alpha dropout of whole channels (dim 1) of an (N, C, ...) input (at least 2 dims).
template <class P>
BasicTensor<P> feature_alpha_dropout(const BasicTensor<P>& x, double p = 0.5, bool training = false,
                                     bool inplace = false) {
  detail::check_dropout(x, p, "feature_alpha_dropout");
  EMBER_CHECK(x.dim() >= 2, "[feature_alpha_dropout] expects (N, C, ...) input, got shape {}", x.sizes());
  if (!training || p == 0) return x;
  if (p == 1) return inplace ? BasicTensor<P>(x).mul_(0.0) : x * 0.0;
  return detail::apply_alpha_dropout(x, detail::channel_mask_shape(x, x.dim() - 2), p, inplace);
}

}  // namespace ember::nn::functional
