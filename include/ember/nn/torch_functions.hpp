#pragma once
/// libtorch's free functions of the layers, in namespace ember, so that code written as
/// libtorch's examples write it keeps working with `torch::` changed to `ember::`:
///   x = ember::max_pool2d(ember::relu(conv1(x)), 2);
///   x = ember::dropout(x, 0.5, is_training());
///   loss = ember::nll_loss(ember::log_softmax(x, 1), target);
/// Each has libtorch's (ATen's) argument order. Where that order is nn::functional's, the
/// function is nn::functional's; where it differs (nll_loss, batch_norm, embedding, ...), a
/// wrapper here takes ATen's order. A reduction is a name ("mean", kSum), not ATen's integer
/// enum, so a call written with torch::Reduction does not compile instead of misreading it.
/// Included by <ember/nn.hpp>; not by <ember/ember.hpp>.
///
/// The wrappers share their names with nn::functional's forms, whose order differs: code that
/// brings both namespaces in (`using namespace ember::nn::functional`) must qualify those four
/// calls (nll_loss, binary_cross_entropy_with_logits, batch_norm, embedding; cross_entropy_loss
/// has its own name), and nn::functional's own code calls its forms qualified, as argument-
/// dependent lookup would find these (BasicTensor is in namespace ember).

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_activation.hpp>
#include <ember/nn/functional_conv.hpp>
#include <ember/nn/functional_distance.hpp>
#include <ember/nn/functional_resample.hpp>
#include <ember/nn/functional_layers.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ember {

// The same arguments in the same order as ATen's.
using nn::functional::adaptive_avg_pool1d;
using nn::functional::adaptive_avg_pool2d;
using nn::functional::adaptive_avg_pool3d;
using nn::functional::avg_pool1d;
using nn::functional::avg_pool2d;
using nn::functional::avg_pool3d;
using nn::functional::binary_cross_entropy;
using nn::functional::celu;
using nn::functional::conv1d;
using nn::functional::conv2d;
using nn::functional::conv3d;
using nn::functional::conv_transpose1d;
using nn::functional::conv_transpose2d;
using nn::functional::conv_transpose3d;
using nn::functional::cosine_embedding_loss;
using nn::functional::cdist;
using nn::functional::cosine_similarity;
using nn::functional::dropout;
using nn::functional::elu;
using nn::functional::gelu;
using nn::functional::glu;
using nn::functional::group_norm;
using nn::functional::hardshrink;
using nn::functional::hardtanh;
using nn::functional::huber_loss;
using nn::functional::kl_div;
using nn::functional::l1_loss;
using nn::functional::layer_norm;
using nn::functional::leaky_relu;
using nn::functional::margin_ranking_loss;
using nn::functional::max_pool1d;
using nn::functional::max_pool1d_with_indices;
using nn::functional::max_pool2d;
using nn::functional::max_pool2d_with_indices;
using nn::functional::max_pool3d;
using nn::functional::max_pool3d_with_indices;
using nn::functional::mse_loss;
using nn::functional::pairwise_distance;
using nn::functional::pdist;
using nn::functional::pixel_shuffle;
using nn::functional::pixel_unshuffle;
using nn::functional::prelu;
using nn::functional::rrelu;
using nn::functional::smooth_l1_loss;
using nn::functional::softplus;
using nn::functional::softshrink;
using nn::functional::threshold;
using nn::functional::triplet_margin_loss;

// ATen's order, which differs from nn::functional's.

/// torch::nll_loss(input, target, weight, reduction, ignore_index).
template <class P>
BasicTensor<P> nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const BasicTensor<P>& weight = {},
                        nn::LossReduction reduction = "mean", int64_t ignore_index = -100) {
  return nn::functional::nll_loss(input, target, weight, ignore_index, reduction);
}
/// torch::cross_entropy_loss(input, target, weight, reduction, ignore_index, label_smoothing).
template <class P>
BasicTensor<P> cross_entropy_loss(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                  const BasicTensor<P>& weight = {}, nn::LossReduction reduction = "mean",
                                  int64_t ignore_index = -100, double label_smoothing = 0.0) {
  return nn::functional::cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing);
}
/// torch::binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction).
template <class P>
BasicTensor<P> binary_cross_entropy_with_logits(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                                const BasicTensor<P>& weight = {},
                                                const BasicTensor<P>& pos_weight = {},
                                                nn::LossReduction reduction = "mean") {
  return nn::functional::binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight);
}
/// torch::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
/// cudnn_enabled): the running statistics are updated in place when training; cudnn_enabled is
/// ignored (Ember's kernels are its own).
template <class P>
BasicTensor<P> batch_norm(const BasicTensor<P>& input, const BasicTensor<P>& weight, const BasicTensor<P>& bias,
                          const BasicTensor<P>& running_mean, const BasicTensor<P>& running_var, bool training,
                          double momentum, double eps, bool /*cudnn_enabled*/ = true) {
  return nn::functional::batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
}
/// torch::layer_norm and torch::group_norm with ATen's trailing cudnn_enable (ignored).
template <class P>
BasicTensor<P> layer_norm(const BasicTensor<P>& input, const Shape& normalized_shape, const BasicTensor<P>& weight,
                          const BasicTensor<P>& bias, double eps, bool /*cudnn_enable*/) {
  return nn::functional::layer_norm(input, normalized_shape, weight, bias, eps);
}
template <class P>
BasicTensor<P> group_norm(const BasicTensor<P>& input, int64_t num_groups, const BasicTensor<P>& weight,
                          const BasicTensor<P>& bias, double eps, bool /*cudnn_enabled*/) {
  return nn::functional::group_norm(input, num_groups, weight, bias, eps);
}
/// torch::instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
/// momentum, eps, cudnn_enabled): the running statistics (optional) move by momentum when
/// use_input_stats, and normalise the input when not; cudnn_enabled is ignored.
template <class P>
BasicTensor<P> instance_norm(const BasicTensor<P>& input, const BasicTensor<P>& weight, const BasicTensor<P>& bias,
                             const BasicTensor<P>& running_mean, const BasicTensor<P>& running_var,
                             bool use_input_stats, double momentum, double eps, bool /*cudnn_enabled*/) {
  return nn::functional::detail::instance_norm_stats(input, running_mean, running_var, weight, bias, use_input_stats,
                                                     momentum, eps);
}
/// torch::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): the table
/// first; a negative padding_idx is none (ATen's rule; nn::functional's counts it from the
/// end). Sparse gradients are not offered: true is refused.
template <class P>
BasicTensor<P> embedding(const BasicTensor<P>& weight, const BasicTensor<P>& indices, int64_t padding_idx = -1,
                         bool scale_grad_by_freq = false, bool sparse = false) {
  EMBER_CHECK(!sparse, "[embedding] sparse gradients are not offered (sparse=true)");
  return nn::functional::embedding(indices, weight, padding_idx < 0 ? std::nullopt : std::optional<int64_t>(padding_idx),
                                   std::nullopt, 2.0, scale_grad_by_freq);
}
/// torch::embedding_renorm_(weight, indices, max_norm, norm_type): the rows indices reads
/// whose norm exceeds max_norm scaled in place to it (what Embedding's max_norm does first).
template <class P>
BasicTensor<P>& embedding_renorm_(BasicTensor<P>& weight, const BasicTensor<P>& indices, double max_norm,
                                  double norm_type) {
  nn::functional::detail::check_embedding_args(indices, weight, "embedding_renorm_");
  nn::functional::detail::embedding_renorm_(
      weight, nn::functional::detail::host_indices(indices.to(DType::I64).reshape({-1})), max_norm, norm_type,
      "embedding_renorm_");
  return weight;
}

}  // namespace ember
