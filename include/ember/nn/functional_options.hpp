#pragma once
/// libtorch's option-struct forms of the functional losses, dropout and softmax, for code
/// written against torch::nn::functional:
///   F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().label_smoothing(0.1))
///   F::mse_loss(x, y, F::MSELossFuncOptions(kSum))
///   F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training()))
///   F::log_softmax(x, F::LogSoftmaxFuncOptions(1))
/// Each forwards to the positional form. Included by <ember/nn.hpp> after the modules, whose
/// option structs the loss forms share (as libtorch's do). The layers' and activations' forms
/// are in functional_options_layers.hpp and functional_options_activation.hpp, included here.

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_activation.hpp>
#include <ember/nn/functional_options_activation.hpp>
#include <ember/nn/functional_options_layers.hpp>
#include <ember/nn/modules/loss.hpp>
#include <ember/nn/modules/margin_loss.hpp>
#include <ember/nn/options.hpp>

#include <concepts>
#include <initializer_list>
#include <optional>

namespace ember::nn::functional {

using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using NLLLossFuncOptions = NLLLossOptions;

// The options forms are templates on the options type: a plain parameter would make
// cross_entropy(x, y, {}) ambiguous between an empty weight and default options.
template <class P, std::same_as<CrossEntropyFuncOptions> O>
BasicTensor<P> cross_entropy(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return cross_entropy(input, target, detail::option_tensor<P>(o.weight()), o.ignore_index(), o.reduction(),
                       o.label_smoothing());
}
template <class P, std::same_as<NLLLossFuncOptions> O>
BasicTensor<P> nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return functional::nll_loss(input, target, detail::option_tensor<P>(o.weight()), o.ignore_index(), o.reduction());
}

using MSELossFuncOptions = MSELossOptions;
using L1LossFuncOptions = L1LossOptions;  // the same type: a reduction
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using KLDivFuncOptions = KLDivLossOptions;
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;
using MarginRankingLossFuncOptions = MarginRankingLossOptions;
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
using CTCLossFuncOptions = CTCLossOptions;

template <class P, std::same_as<MSELossOptions> O>
BasicTensor<P> mse_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return mse_loss(input, target, o.reduction());
}
template <class P, std::same_as<MSELossOptions> O>
BasicTensor<P> l1_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return l1_loss(input, target, o.reduction());
}
template <class P, std::same_as<SmoothL1LossOptions> O>
BasicTensor<P> smooth_l1_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return smooth_l1_loss(input, target, o.reduction(), o.beta());
}
template <class P, std::same_as<HuberLossOptions> O>
BasicTensor<P> huber_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return huber_loss(input, target, o.reduction(), o.delta());
}
template <class P, std::same_as<BCELossOptions> O>
BasicTensor<P> binary_cross_entropy(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return binary_cross_entropy(input, target, detail::option_tensor<P>(o.weight()), o.reduction());
}
template <class P, std::same_as<BCEWithLogitsLossOptions> O>
BasicTensor<P> binary_cross_entropy_with_logits(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                                const O& o) {
  return functional::binary_cross_entropy_with_logits(input, target, detail::option_tensor<P>(o.weight()),
                                                      o.reduction(), detail::option_tensor<P>(o.pos_weight()));
}
template <class P, std::same_as<KLDivLossOptions> O>
BasicTensor<P> kl_div(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return kl_div(input, target, o.reduction(), o.log_target());
}
template <class P, std::same_as<CosineEmbeddingLossOptions> O>
BasicTensor<P> cosine_embedding_loss(const BasicTensor<P>& a, const BasicTensor<P>& b, const BasicTensor<P>& y,
                                     const O& o) {
  return cosine_embedding_loss(a, b, y, o.margin(), o.reduction());
}
template <class P, std::same_as<MarginRankingLossOptions> O>
BasicTensor<P> margin_ranking_loss(const BasicTensor<P>& a, const BasicTensor<P>& b, const BasicTensor<P>& y,
                                   const O& o) {
  return margin_ranking_loss(a, b, y, o.margin(), o.reduction());
}
template <class P, std::same_as<TripletMarginLossOptions> O>
BasicTensor<P> triplet_margin_loss(const BasicTensor<P>& anchor, const BasicTensor<P>& pos, const BasicTensor<P>& neg,
                                   const O& o) {
  return triplet_margin_loss(anchor, pos, neg, o.margin(), o.p(), o.eps(), o.swap(), o.reduction());
}
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;  // libtorch's spelling
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
using MultiMarginLossFuncOptions = MultiMarginLossOptions;
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
using TripletMarginWithDistanceLossFuncOptions = TripletMarginWithDistanceLossOptions;
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;
using GaussianNLLLossFuncOptions = GaussianNLLLossOptions;

// SoftMarginLossOptions is also MultiLabelMarginLossOptions: a reduction.
template <class P, std::same_as<SoftMarginLossOptions> O>
BasicTensor<P> soft_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return soft_margin_loss(input, target, o.reduction());
}
template <class P, std::same_as<SoftMarginLossOptions> O>
BasicTensor<P> multilabel_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return multilabel_margin_loss(input, target, o.reduction());
}
template <class P, std::same_as<HingeEmbeddingLossOptions> O>
BasicTensor<P> hinge_embedding_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return hinge_embedding_loss(input, target, o.margin(), o.reduction());
}
template <class P, std::same_as<MultiMarginLossOptions> O>
BasicTensor<P> multi_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return multi_margin_loss(input, target, o.p(), o.margin(), detail::option_tensor<P>(o.weight()), o.reduction());
}
template <class P, std::same_as<MultiLabelSoftMarginLossOptions> O>
BasicTensor<P> multilabel_soft_margin_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return multilabel_soft_margin_loss(input, target, detail::option_tensor<P>(o.weight()), o.reduction());
}
template <class P, std::same_as<TripletMarginWithDistanceLossOptions> O>
BasicTensor<P> triplet_margin_with_distance_loss(const BasicTensor<P>& anchor, const BasicTensor<P>& positive,
                                                 const BasicTensor<P>& negative, const O& o) {
  return triplet_margin_with_distance_loss(anchor, positive, negative, nn::detail::policy_distance<P>(o), o.margin(),
                                           o.swap(), o.reduction());
}
template <class P, std::same_as<PoissonNLLLossOptions> O>
BasicTensor<P> poisson_nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return poisson_nll_loss(input, target, o.log_input(), o.full(), o.eps(), o.reduction());
}
template <class P, std::same_as<GaussianNLLLossOptions> O>
BasicTensor<P> gaussian_nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target,
                                 const BasicTensor<P>& var, const O& o) {
  return gaussian_nll_loss(input, target, var, o.full(), o.eps(), o.reduction());
}

template <class P, std::same_as<CTCLossOptions> O>
BasicTensor<P> ctc_loss(const BasicTensor<P>& log_probs, const BasicTensor<P>& targets,
                        const std::vector<int64_t>& input_lengths, const std::vector<int64_t>& target_lengths,
                        const O& o) {
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, o.blank(), o.reduction(), o.zero_infinity());
}
/// The lengths as 0-d or 1-d integer tensors, as libtorch passes them (no positional form
/// takes four tensors, so the options may default here).
template <class P>
BasicTensor<P> ctc_loss(const BasicTensor<P>& log_probs, const BasicTensor<P>& targets,
                        const BasicTensor<P>& input_lengths, const BasicTensor<P>& target_lengths,
                        const CTCLossOptions& o = {}) {
  return ctc_loss(log_probs, targets, detail::lengths_of(input_lengths, "input_lengths"),
                  detail::lengths_of(target_lengths, "target_lengths"), o.blank(), o.reduction(), o.zero_infinity());
}

struct DropoutFuncOptions {
  EMBER_ARG(double, p) = 0.5;
  EMBER_ARG(bool, training) = true;
  EMBER_ARG(bool, inplace) = false;
};
using Dropout2dFuncOptions = DropoutFuncOptions;
template <class P, std::same_as<DropoutFuncOptions> O>
BasicTensor<P> dropout(const BasicTensor<P>& x, const O& o) {
  return dropout(x, o.p(), o.training(), o.inplace());
}
template <class P, std::same_as<DropoutFuncOptions> O>
BasicTensor<P> dropout2d(const BasicTensor<P>& x, const O& o) {
  return dropout2d(x, o.p(), o.training(), o.inplace());
}
using Dropout1dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;
template <class P, std::same_as<DropoutFuncOptions> O>
BasicTensor<P> dropout1d(const BasicTensor<P>& x, const O& o) {
  return dropout1d(x, o.p(), o.training(), o.inplace());
}
template <class P, std::same_as<DropoutFuncOptions> O>
BasicTensor<P> dropout3d(const BasicTensor<P>& x, const O& o) {
  return dropout3d(x, o.p(), o.training(), o.inplace());
}
/// alpha_dropout's and feature_alpha_dropout's: as dropout's, but not training by default
/// (PyTorch's functional default).
struct AlphaDropoutFuncOptions {
  EMBER_ARG(double, p) = 0.5;
  EMBER_ARG(bool, training) = false;
  EMBER_ARG(bool, inplace) = false;
};
using FeatureAlphaDropoutFuncOptions = AlphaDropoutFuncOptions;
template <class P, std::same_as<AlphaDropoutFuncOptions> O>
BasicTensor<P> alpha_dropout(const BasicTensor<P>& x, const O& o) {
  return alpha_dropout(x, o.p(), o.training(), o.inplace());
}
template <class P, std::same_as<AlphaDropoutFuncOptions> O>
BasicTensor<P> feature_alpha_dropout(const BasicTensor<P>& x, const O& o) {
  return feature_alpha_dropout(x, o.p(), o.training(), o.inplace());
}

/// The dim, and optionally the dtype to compute in.
struct SoftmaxFuncOptions {
  explicit SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  EMBER_ARG(int64_t, dim);
  EMBER_ARG(std::optional<DType>, dtype);
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
using SoftminFuncOptions = SoftmaxFuncOptions;
template <class P>
BasicTensor<P> softmax(const BasicTensor<P>& x, const SoftmaxFuncOptions& o) {
  return o.dtype() ? x.softmax(o.dim(), *o.dtype()) : x.softmax(o.dim());
}
template <class P>
BasicTensor<P> log_softmax(const BasicTensor<P>& x, const SoftmaxFuncOptions& o) {
  return o.dtype() ? x.log_softmax(o.dim(), *o.dtype()) : x.log_softmax(o.dim());
}
/// With a dtype, x is converted first, as PyTorch's softmin.
template <class P>
BasicTensor<P> softmin(const BasicTensor<P>& x, const SoftmaxFuncOptions& o) {
  return softmin(o.dtype() ? x.to(*o.dtype()) : x, o.dim());
}

// `F::leaky_relu(x, {})` is libtorch's call with default options. Without the overloads below
// the braces would value-initialise the positional form's first optional argument instead: a
// slope, dropout p or shrink lambda of 0, dim 0, norm p 0, margin 0, all silently. Braces
// prefer an initializer_list parameter over any other ([over.ics.rank]), so these take them
// (and nothing else: DefaultOptions converts from no value).
namespace detail {
struct DefaultOptions {};
}  // namespace detail
#define EMBER_BRACED_DEFAULTS(name, Options)                                                            \
  template <class P>                                                                                    \
  BasicTensor<P> name(const BasicTensor<P>& x, std::initializer_list<detail::DefaultOptions>) {         \
    return name(x, Options());                                                                          \
  }
EMBER_BRACED_DEFAULTS(dropout, DropoutFuncOptions)
EMBER_BRACED_DEFAULTS(dropout2d, DropoutFuncOptions)
EMBER_BRACED_DEFAULTS(dropout1d, DropoutFuncOptions)
EMBER_BRACED_DEFAULTS(dropout3d, DropoutFuncOptions)
EMBER_BRACED_DEFAULTS(alpha_dropout, AlphaDropoutFuncOptions)
EMBER_BRACED_DEFAULTS(feature_alpha_dropout, AlphaDropoutFuncOptions)
EMBER_BRACED_DEFAULTS(leaky_relu, LeakyReLUOptions)
EMBER_BRACED_DEFAULTS(elu, ELUOptions)
EMBER_BRACED_DEFAULTS(celu, CELUOptions)
EMBER_BRACED_DEFAULTS(hardtanh, HardtanhOptions)
EMBER_BRACED_DEFAULTS(gelu, GELUOptions)
EMBER_BRACED_DEFAULTS(softplus, SoftplusOptions)
EMBER_BRACED_DEFAULTS(hardshrink, HardshrinkOptions)
EMBER_BRACED_DEFAULTS(softshrink, SoftshrinkOptions)
EMBER_BRACED_DEFAULTS(glu, GLUOptions)
EMBER_BRACED_DEFAULTS(rrelu, RReLUFuncOptions)
EMBER_BRACED_DEFAULTS(normalize, NormalizeFuncOptions)
#undef EMBER_BRACED_DEFAULTS
// Two-input forms: the distances, and the losses whose positional third argument is not the
// reduction (a margin, p, log_input): without these, {} would set it to 0 or false.
#define EMBER_BRACED_DEFAULTS2(name, Options)                                                              \
  template <class P>                                                                                       \
  BasicTensor<P> name(const BasicTensor<P>& x1, const BasicTensor<P>& x2,                                  \
                      std::initializer_list<detail::DefaultOptions>) {                                     \
    return name(x1, x2, Options());                                                                        \
  }
EMBER_BRACED_DEFAULTS2(cosine_similarity, CosineSimilarityOptions)
EMBER_BRACED_DEFAULTS2(pairwise_distance, PairwiseDistanceOptions)
EMBER_BRACED_DEFAULTS2(soft_margin_loss, SoftMarginLossOptions)
EMBER_BRACED_DEFAULTS2(multilabel_margin_loss, SoftMarginLossOptions)
EMBER_BRACED_DEFAULTS2(hinge_embedding_loss, HingeEmbeddingLossOptions)
EMBER_BRACED_DEFAULTS2(multi_margin_loss, MultiMarginLossOptions)
EMBER_BRACED_DEFAULTS2(multilabel_soft_margin_loss, MultiLabelSoftMarginLossOptions)
EMBER_BRACED_DEFAULTS2(poisson_nll_loss, PoissonNLLLossOptions)
#undef EMBER_BRACED_DEFAULTS2
// Three-input losses (anchor, positive, negative; input, target, var).
#define EMBER_BRACED_DEFAULTS3(name, Options)                                                              \
  template <class P>                                                                                       \
  BasicTensor<P> name(const BasicTensor<P>& x1, const BasicTensor<P>& x2, const BasicTensor<P>& x3,         \
                      std::initializer_list<detail::DefaultOptions>) {                                     \
    return name(x1, x2, x3, Options());                                                                    \
  }
EMBER_BRACED_DEFAULTS3(triplet_margin_loss, TripletMarginLossOptions)
EMBER_BRACED_DEFAULTS3(gaussian_nll_loss, GaussianNLLLossOptions)
EMBER_BRACED_DEFAULTS3(triplet_margin_with_distance_loss, TripletMarginWithDistanceLossOptions)
#undef EMBER_BRACED_DEFAULTS3

}  // namespace ember::nn::functional
