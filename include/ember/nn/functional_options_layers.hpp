#pragma once
/// libtorch's option-struct forms of the functional convolution, pooling, resampling, padding,
/// normalisation and embedding calls:
///   F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding(1))
///   F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2))
///   F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2}).mode(kBilinear))
///   F::pad(x, F::PadFuncOptions({1, 1, 2, 2}).mode(kReflect))
///   F::batch_norm(x, mean, var, F::BatchNormFuncOptions().weight(w).bias(b).training(true))
/// Where libtorch's FuncOptions are its module options, Ember's are too (MaxPool2dFuncOptions
/// is PoolOptions). Each form forwards to the positional one, so both check alike.
///
/// PoolOptions serves max and average pooling alike; a field that the pool lacks (dilation for
/// average pooling, divisor_override for max pooling and avg_pool1d) is refused, not ignored.
///
/// Not offered, as Ember's layers lack them: sparse embedding gradients (sparse(true) is
/// refused).

#include <ember/nn/functional_conv.hpp>
#include <ember/nn/functional_layers.hpp>
#include <ember/nn/functional_resample.hpp>
#include <ember/nn/functional_fold.hpp>
#include <ember/nn/functional_grid.hpp>
#include <ember/nn/modules/channel.hpp>
#include <ember/nn/modules/conv.hpp>
#include <ember/nn/modules/fold.hpp>
#include <ember/nn/options.hpp>

#include <concepts>
#include <optional>
#include <string>
#include <vector>

namespace ember::nn::functional {

namespace detail {
/// Average pooling has no dilation: PoolOptions' (shared with max pooling) must be all ones.
inline void check_no_dilation(const IntArgs& dilation, const char* op) {
  for (int64_t d : dilation) EMBER_CHECK(d == 1, "[{}] has no dilation, got a dilation of {}", op, d);
}
}  // namespace detail

// The forms below are templates on the options type, constrained to exactly that type: an
// options struct that converts from a number or a list (PoolOptions(2), PadFuncOptions({...}))
// must not make a positional call such as max_pool2d(x, 2) ambiguous.

/// Convolution options without the layer's sizes: the bias comes with them.
struct ConvFuncOptions : detail::ConvPaddingArg<ConvFuncOptions> {
  EMBER_ARG(Tensor, bias);
  EMBER_ARG(IntArgs, stride) = {1};
  EMBER_ARG(IntArgs, dilation) = {1};
  EMBER_ARG(int64_t, groups) = 1;
  // padding(numbers), padding(kSame / kValid): ConvPaddingArg.
};
using Conv1dFuncOptions = ConvFuncOptions;
using Conv2dFuncOptions = ConvFuncOptions;
using Conv3dFuncOptions = ConvFuncOptions;

template <class P, std::same_as<ConvFuncOptions> O>
BasicTensor<P> conv1d(const BasicTensor<P>& x, const BasicTensor<P>& w, const O& o) {
  return detail::conv_padded(x, w, detail::option_tensor<P>(o.bias()), 1, o.stride(), o.padding(), o.padding_str(),
                             "zeros", o.dilation(), o.groups(), "conv1d");
}
template <class P, std::same_as<ConvFuncOptions> O>
BasicTensor<P> conv2d(const BasicTensor<P>& x, const BasicTensor<P>& w, const O& o) {
  return detail::conv_padded(x, w, detail::option_tensor<P>(o.bias()), 2, o.stride(), o.padding(), o.padding_str(),
                             "zeros", o.dilation(), o.groups(), "conv2d");
}
template <class P, std::same_as<ConvFuncOptions> O>
BasicTensor<P> conv3d(const BasicTensor<P>& x, const BasicTensor<P>& w, const O& o) {
  return detail::conv_padded(x, w, detail::option_tensor<P>(o.bias()), 3, o.stride(), o.padding(), o.padding_str(),
                             "zeros", o.dilation(), o.groups(), "conv3d");
}

struct ConvTransposeFuncOptions {
  EMBER_ARG(Tensor, bias);
  EMBER_ARG(IntArgs, stride) = {1};
  EMBER_ARG(IntArgs, padding) = {0};
  EMBER_ARG(IntArgs, output_padding) = {0};
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(IntArgs, dilation) = {1};
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions;

template <class P, std::same_as<ConvTransposeFuncOptions> O>
BasicTensor<P> conv_transpose1d(const BasicTensor<P>& x, const BasicTensor<P>& w, const O& o) {
  return conv_transpose1d(x, w, detail::option_tensor<P>(o.bias()), o.stride(), o.padding(), o.output_padding(),
                          o.groups(), o.dilation());
}
template <class P, std::same_as<ConvTransposeFuncOptions> O>
BasicTensor<P> conv_transpose2d(const BasicTensor<P>& x, const BasicTensor<P>& w, const O& o) {
  return conv_transpose2d(x, w, detail::option_tensor<P>(o.bias()), o.stride(), o.padding(), o.output_padding(),
                          o.groups(), o.dilation());
}
template <class P, std::same_as<ConvTransposeFuncOptions> O>
BasicTensor<P> conv_transpose3d(const BasicTensor<P>& x, const BasicTensor<P>& w, const O& o) {
  return conv_transpose3d(x, w, detail::option_tensor<P>(o.bias()), o.stride(), o.padding(), o.output_padding(),
                          o.groups(), o.dilation());
}

// Pooling: libtorch's pooling FuncOptions are its module options (PoolOptions here).
using MaxPool1dFuncOptions = PoolOptions;
using MaxPool2dFuncOptions = PoolOptions;
using MaxPool3dFuncOptions = PoolOptions;
using AvgPool1dFuncOptions = PoolOptions;
using AvgPool2dFuncOptions = PoolOptions;
using AvgPool3dFuncOptions = PoolOptions;
// Adaptive pooling's options are the output size, so the positional forms take them as they are.
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPool3dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;
using AdaptiveMaxPool3dFuncOptions = AdaptiveMaxPool3dOptions;

template <class P, std::same_as<PoolOptions> O>
BasicTensor<P> max_pool1d(const BasicTensor<P>& x, const O& o) {
  nn::detail::check_no_divisor_override(o, "max_pool1d");
  return max_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
template <class P, std::same_as<PoolOptions> O>
BasicTensor<P> max_pool2d(const BasicTensor<P>& x, const O& o) {
  nn::detail::check_no_divisor_override(o, "max_pool2d");
  return max_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
template <class P, std::same_as<PoolOptions> O>
BasicTensor<P> max_pool3d(const BasicTensor<P>& x, const O& o) {
  nn::detail::check_no_divisor_override(o, "max_pool3d");
  return max_pool3d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
template <class P, std::same_as<PoolOptions> O>
std::pair<BasicTensor<P>, BasicTensor<P>> max_pool3d_with_indices(const BasicTensor<P>& x, const O& o) {
  nn::detail::check_no_divisor_override(o, "max_pool3d_with_indices");
  return max_pool3d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
template <class P, std::same_as<PoolOptions> O>
std::pair<BasicTensor<P>, BasicTensor<P>> max_pool1d_with_indices(const BasicTensor<P>& x, const O& o) {
  nn::detail::check_no_divisor_override(o, "max_pool1d_with_indices");
  return max_pool1d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
template <class P, std::same_as<PoolOptions> O>
std::pair<BasicTensor<P>, BasicTensor<P>> max_pool2d_with_indices(const BasicTensor<P>& x, const O& o) {
  nn::detail::check_no_divisor_override(o, "max_pool2d_with_indices");
  return max_pool2d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
// Average pooling has no dilation: a PoolOptions dilation other than 1 is refused, not ignored.
template <class P, std::same_as<PoolOptions> O>
BasicTensor<P> avg_pool1d(const BasicTensor<P>& x, const O& o) {
  detail::check_no_dilation(o.dilation(), "avg_pool1d");
  return detail::avg_pool_nd(x, 1, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                             "avg_pool1d", o.divisor_override());
}
template <class P, std::same_as<PoolOptions> O>
BasicTensor<P> avg_pool2d(const BasicTensor<P>& x, const O& o) {
  detail::check_no_dilation(o.dilation(), "avg_pool2d");
  return detail::avg_pool_nd(x, 2, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                             "avg_pool2d", o.divisor_override());
}
template <class P, std::same_as<PoolOptions> O>
BasicTensor<P> avg_pool3d(const BasicTensor<P>& x, const O& o) {
  detail::check_no_dilation(o.dilation(), "avg_pool3d");
  return detail::avg_pool_nd(x, 3, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                             "avg_pool3d", o.divisor_override());
}

/// Resampling of (N, C, L), (N, C, H, W) or (N, C, D, H, W) to `size`, or by `scale_factor`
/// (output floor(in * scale)), one or the other. As PyTorch, the scales place the source
/// pixels unless recompute_scale_factor is set; align_corners may only be given to the
/// interpolating modes, antialias only to bilinear and bicubic.
struct InterpolateFuncOptions {
  EMBER_ARG(std::optional<std::vector<int64_t>>, size);
  EMBER_ARG(std::optional<std::vector<double>>, scale_factor);
  /// nearest, linear, bilinear, bicubic, trilinear, area or nearest-exact (kNearest, kLinear,
  /// kBilinear, kBicubic, kTrilinear, kArea, kNearestExact)
  EMBER_ARG(std::string, mode) = "nearest";
  EMBER_ARG(std::optional<bool>, align_corners);
  EMBER_ARG(std::optional<bool>, recompute_scale_factor);
  EMBER_ARG(bool, antialias) = false;
};

template <class P, std::same_as<InterpolateFuncOptions> O>
BasicTensor<P> interpolate(const BasicTensor<P>& x, const O& o) {
  EMBER_CHECK(o.size().has_value() != o.scale_factor().has_value(),
              "[interpolate] needs either size or scale_factor, not both (got {})",
              o.size() ? "both" : "neither");
  EMBER_CHECK(!o.align_corners() || detail::interpolating_mode(o.mode()),
              "[interpolate] align_corners can only be set with the interpolating modes linear, bilinear, bicubic "
              "and trilinear, got mode '{}'",
              o.mode());
  const bool align = o.align_corners().value_or(false);
  if (o.size()) return interpolate(x, IntArgs(*o.size()), o.mode(), align, {}, o.antialias());
  return detail::interpolate_scaled(x, *o.scale_factor(), o.mode(), align, o.recompute_scale_factor().value_or(false),
                                    "interpolate", o.antialias());
}

/// torch.nn.functional.pad's arguments: pad = {left_last, right_last, left_prev, ...}.
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT: implicit, as in libtorch
  EMBER_ARG(std::vector<int64_t>, pad);
  EMBER_ARG(std::string, mode) = "constant";  ///< constant, reflect, replicate, circular
  EMBER_ARG(double, value) = 0.0;
};
template <class P, std::same_as<PadFuncOptions> O>
BasicTensor<P> pad(const BasicTensor<P>& x, const O& o) {
  EMBER_CHECK(o.mode() == "constant" || o.value() == 0, "[pad] padding mode '{}' takes no value, got value {}",
              o.mode(), o.value());
  return ember::pad(x, o.pad(), o.mode(), o.value());
}

using PixelShuffleFuncOptions = PixelShuffleOptions;
template <class P, std::same_as<PixelShuffleOptions> O>
BasicTensor<P> pixel_shuffle(const BasicTensor<P>& x, const O& o) {
  return pixel_shuffle(x, o.upscale_factor());
}

using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;
template <class P, std::same_as<PixelUnshuffleOptions> O>
BasicTensor<P> pixel_unshuffle(const BasicTensor<P>& x, const O& o) {
  return pixel_unshuffle(x, o.downscale_factor());
}

/// max_unpool's: the module's plus the output size (empty: the default).
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(IntArgs kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT
  MaxUnpoolFuncOptions(std::initializer_list<int64_t> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, stride);  ///< empty: kernel_size
  EMBER_ARG(IntArgs, padding) = {0};
  EMBER_ARG(IntArgs, output_size);
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions;
template <class P, std::same_as<MaxUnpoolFuncOptions> O>
BasicTensor<P> max_unpool1d(const BasicTensor<P>& x, const BasicTensor<P>& indices, const O& o) {
  return max_unpool1d(x, indices, o.kernel_size(), o.stride(), o.padding(), o.output_size());
}
template <class P, std::same_as<MaxUnpoolFuncOptions> O>
BasicTensor<P> max_unpool2d(const BasicTensor<P>& x, const BasicTensor<P>& indices, const O& o) {
  return max_unpool2d(x, indices, o.kernel_size(), o.stride(), o.padding(), o.output_size());
}
template <class P, std::same_as<MaxUnpoolFuncOptions> O>
BasicTensor<P> max_unpool3d(const BasicTensor<P>& x, const BasicTensor<P>& indices, const O& o) {
  return max_unpool3d(x, indices, o.kernel_size(), o.stride(), o.padding(), o.output_size());
}

using LPPool1dFuncOptions = LPPoolOptions;
using LPPool2dFuncOptions = LPPoolOptions;
using LPPool3dFuncOptions = LPPoolOptions;
template <class P, std::same_as<LPPoolOptions> O>
BasicTensor<P> lp_pool1d(const BasicTensor<P>& x, const O& o) {
  return lp_pool1d(x, o.norm_type(), o.kernel_size(), o.stride(), o.ceil_mode());
}
template <class P, std::same_as<LPPoolOptions> O>
BasicTensor<P> lp_pool2d(const BasicTensor<P>& x, const O& o) {
  return lp_pool2d(x, o.norm_type(), o.kernel_size(), o.stride(), o.ceil_mode());
}
template <class P, std::same_as<LPPoolOptions> O>
BasicTensor<P> lp_pool3d(const BasicTensor<P>& x, const O& o) {
  return lp_pool3d(x, o.norm_type(), o.kernel_size(), o.stride(), o.ceil_mode());
}
using LocalResponseNormFuncOptions = LocalResponseNormOptions;
template <class P, std::same_as<LocalResponseNormOptions> O>
BasicTensor<P> local_response_norm(const BasicTensor<P>& x, const O& o) {
  return local_response_norm(x, o.size(), o.alpha(), o.beta(), o.k());
}

/// grid_sample's: F::grid_sample(x, grid, F::GridSampleFuncOptions().mode(kNearest).padding_mode(kBorder)).
struct GridSampleFuncOptions {
  EMBER_ARG(std::string, mode) = "bilinear";
  EMBER_ARG(std::string, padding_mode) = "zeros";
  EMBER_ARG(bool, align_corners) = false;
};
template <class P, std::same_as<GridSampleFuncOptions> O>
BasicTensor<P> grid_sample(const BasicTensor<P>& x, const BasicTensor<P>& grid, const O& o) {
  return grid_sample(x, grid, o.mode(), o.padding_mode(), o.align_corners());
}

using UnfoldFuncOptions = UnfoldOptions;
template <class P, std::same_as<UnfoldOptions> O>
BasicTensor<P> unfold(const BasicTensor<P>& x, const O& o) {
  return unfold(x, o.kernel_size(), o.dilation(), o.padding(), o.stride());
}
using FoldFuncOptions = FoldOptions;
template <class P, std::same_as<FoldOptions> O>
BasicTensor<P> fold(const BasicTensor<P>& x, const O& o) {
  return fold(x, o.output_size(), o.kernel_size(), o.dilation(), o.padding(), o.stride());
}

/// batch_norm's options besides the running statistics (positional, as libtorch's).
struct BatchNormFuncOptions {
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(Tensor, bias);
  EMBER_ARG(bool, training) = false;
  EMBER_ARG(double, momentum) = 0.1;
  EMBER_ARG(double, eps) = 1e-5;
};
template <class P, std::same_as<BatchNormFuncOptions> O>
BasicTensor<P> batch_norm(const BasicTensor<P>& x, const BasicTensor<P>& running_mean,
                          const BasicTensor<P>& running_var, const O& o) {
  return functional::batch_norm(x, running_mean, running_var, detail::option_tensor<P>(o.weight()),
                    detail::option_tensor<P>(o.bias()), o.training(), o.momentum(), o.eps());
}

struct LayerNormFuncOptions {
  LayerNormFuncOptions(Shape normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(Shape, normalized_shape);
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(Tensor, bias);
  EMBER_ARG(double, eps) = 1e-5;
};
template <class P, std::same_as<LayerNormFuncOptions> O>
BasicTensor<P> layer_norm(const BasicTensor<P>& x, const O& o) {
  return layer_norm(x, o.normalized_shape(), detail::option_tensor<P>(o.weight()), detail::option_tensor<P>(o.bias()),
                    o.eps());
}

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  EMBER_ARG(int64_t, num_groups);
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(Tensor, bias);
  EMBER_ARG(double, eps) = 1e-5;
};
template <class P, std::same_as<GroupNormFuncOptions> O>
BasicTensor<P> group_norm(const BasicTensor<P>& x, const O& o) {
  return group_norm(x, o.num_groups(), detail::option_tensor<P>(o.weight()), detail::option_tensor<P>(o.bias()),
                    o.eps());
}

/// Instance normalisation from each sample's own statistics (use_input_stats, updating the
/// running statistics when given) or from the running statistics.
struct InstanceNormFuncOptions {
  EMBER_ARG(Tensor, running_mean);
  EMBER_ARG(Tensor, running_var);
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(Tensor, bias);
  EMBER_ARG(bool, use_input_stats) = true;
  EMBER_ARG(double, momentum) = 0.1;
  EMBER_ARG(double, eps) = 1e-5;
};
template <class P, std::same_as<InstanceNormFuncOptions> O>
BasicTensor<P> instance_norm(const BasicTensor<P>& x, const O& o) {
  return detail::instance_norm_stats(x, detail::option_tensor<P>(o.running_mean()),
                                     detail::option_tensor<P>(o.running_var()), detail::option_tensor<P>(o.weight()),
                                     detail::option_tensor<P>(o.bias()), o.use_input_stats(), o.momentum(), o.eps());
}

struct EmbeddingFuncOptions {
  EMBER_ARG(std::optional<int64_t>, padding_idx);
  EMBER_ARG(std::optional<double>, max_norm);
  EMBER_ARG(double, norm_type) = 2.0;
  EMBER_ARG(bool, scale_grad_by_freq) = false;
  EMBER_ARG(bool, sparse) = false;  ///< not offered: true is refused
};
template <class P, std::same_as<EmbeddingFuncOptions> O>
BasicTensor<P> embedding(const BasicTensor<P>& idx, const BasicTensor<P>& weight, const O& o) {
  EMBER_CHECK(!o.sparse(), "[embedding] sparse gradients are not offered (sparse=true)");
  return functional::embedding(idx, weight, o.padding_idx(), o.max_norm(), o.norm_type(), o.scale_grad_by_freq());
}

struct EmbeddingBagFuncOptions {
  EMBER_ARG(Tensor, offsets);
  EMBER_ARG(std::string, mode) = "mean";  ///< sum, mean or max (kSum, kMean, kMax)
  EMBER_ARG(Tensor, per_sample_weights);
  EMBER_ARG(std::optional<int64_t>, padding_idx);
  EMBER_ARG(std::optional<double>, max_norm);
  EMBER_ARG(double, norm_type) = 2.0;
  EMBER_ARG(bool, scale_grad_by_freq) = false;
  EMBER_ARG(bool, sparse) = false;  ///< not offered: true is refused
  EMBER_ARG(bool, include_last_offset) = false;
};
template <class P, std::same_as<EmbeddingBagFuncOptions> O>
BasicTensor<P> embedding_bag(const BasicTensor<P>& input, const BasicTensor<P>& weight, const O& o) {
  EMBER_CHECK(!o.sparse(), "[embedding_bag] sparse gradients are not offered (sparse=true)");
  return embedding_bag(input, weight, detail::option_tensor<P>(o.offsets()), o.mode(),
                       detail::option_tensor<P>(o.per_sample_weights()), o.padding_idx(), o.max_norm(), o.norm_type(),
                       o.scale_grad_by_freq(), o.include_last_offset());
}

}  // namespace ember::nn::functional
