#pragma once
/// Loss modules over functional_margin_losses.hpp and functional_likelihood_losses.hpp:
/// SoftMarginLoss, HingeEmbeddingLoss, MultiMarginLoss, MultiLabelMarginLoss,
/// MultiLabelSoftMarginLoss, TripletMarginWithDistanceLoss, PoissonNLLLoss, GaussianNLLLoss.
/// Options as libtorch's (SoftMarginLossOptions(kSum), MultiMarginLossOptions().p(2), ...);
/// a class weight is a buffer named "weight", as PyTorch's.

#include <ember/nn/functional_likelihood_losses.hpp>
#include <ember/nn/functional_margin_losses.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>
#include <ember/nn/reduction.hpp>

#include <functional>
#include <optional>
#include <string>

namespace ember::nn {

/// The options of a loss with only a reduction.
struct SoftMarginLossOptions {
  SoftMarginLossOptions(LossReduction reduction = "mean") : reduction_(std::move(reduction)) {}  // NOLINT: implicit
  EMBER_ARG(LossReduction, reduction);
};
using MultiLabelMarginLossOptions = SoftMarginLossOptions;

struct HingeEmbeddingLossOptions {
  EMBER_ARG(double, margin) = 1.0;
  EMBER_ARG(LossReduction, reduction) = "mean";
};

struct MultiMarginLossOptions {
  EMBER_ARG(int64_t, p) = 1;
  EMBER_ARG(double, margin) = 1.0;
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(LossReduction, reduction) = "mean";
};

struct MultiLabelSoftMarginLossOptions {
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(LossReduction, reduction) = "mean";
};

struct TripletMarginWithDistanceLossOptions {
  /// Empty: pairwise_distance.
  EMBER_ARG(std::optional<std::function<Tensor(const Tensor&, const Tensor&)>>, distance_function);
  EMBER_ARG(double, margin) = 1.0;
  EMBER_ARG(bool, swap) = false;
  EMBER_ARG(LossReduction, reduction) = "mean";
};

struct PoissonNLLLossOptions {
  EMBER_ARG(bool, log_input) = true;
  EMBER_ARG(bool, full) = false;
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(LossReduction, reduction) = "mean";
};

struct GaussianNLLLossOptions {
  EMBER_ARG(bool, full) = false;
  EMBER_ARG(double, eps) = 1e-6;
  EMBER_ARG(LossReduction, reduction) = "mean";
};

/// A loss module holding its options: forward(input, target) calls `call`.
#define EMBER_OPTIONS_LOSS(Name, call)                                                                      \
  template <class P = DefaultPolicy>                                                                        \
  class Basic##Name##Impl : public Cloneable<Basic##Name##Impl<P>, P> {                                     \
   public:                                                                                                  \
    explicit Basic##Name##Impl(const Name##Options& o = {}) : Cloneable<Basic##Name##Impl<P>, P>(#Name), options(o) {} \
    void reset() override {}                                                                                \
    BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) { return call; }     \
    Name##Options options;                                                                                  \
  };                                                                                                        \
  using Name##Impl = Basic##Name##Impl<>;                                                                   \
  EMBER_MODULE(Name);                                                                                       \
  template <class P = DefaultPolicy>                                                                        \
  using Basic##Name = detail::PolicyHolder<P, Name, Basic##Name##Impl<P>>

EMBER_OPTIONS_LOSS(SoftMarginLoss, F::soft_margin_loss(input, target, options.reduction()));
EMBER_OPTIONS_LOSS(MultiLabelMarginLoss, F::multilabel_margin_loss(input, target, options.reduction()));
EMBER_OPTIONS_LOSS(HingeEmbeddingLoss,
                   F::hinge_embedding_loss(input, target, options.margin(), options.reduction()));
EMBER_OPTIONS_LOSS(PoissonNLLLoss, F::poisson_nll_loss(input, target, options.log_input(), options.full(),
                                                       options.eps(), options.reduction()));
#undef EMBER_OPTIONS_LOSS

/// A loss with a class weight, registered as the buffer "weight" (undefined when none).
#define EMBER_WEIGHTED_LOSS(Name, call)                                                                     \
  template <class P = DefaultPolicy>                                                                        \
  class Basic##Name##Impl : public Cloneable<Basic##Name##Impl<P>, P> {                                     \
   public:                                                                                                  \
    explicit Basic##Name##Impl(const Name##Options& o = {}) : Cloneable<Basic##Name##Impl<P>, P>(#Name), options(o) { \
      reset();                                                                                              \
    }                                                                                                       \
    void reset() override {                                                                                 \
      weight = this->register_buffer("weight", BasicTensor<P>(options.weight().impl_ref()));                \
    }                                                                                                       \
    BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) { return call; }     \
    Name##Options options;                                                                                  \
    BasicTensor<P> weight;                                                                                  \
  };                                                                                                        \
  using Name##Impl = Basic##Name##Impl<>;                                                                   \
  EMBER_MODULE(Name);                                                                                       \
  template <class P = DefaultPolicy>                                                                        \
  using Basic##Name = detail::PolicyHolder<P, Name, Basic##Name##Impl<P>>

EMBER_WEIGHTED_LOSS(MultiMarginLoss, F::multi_margin_loss(input, target, options.p(), options.margin(), weight,
                                                         options.reduction()));
EMBER_WEIGHTED_LOSS(MultiLabelSoftMarginLoss,
                    F::multilabel_soft_margin_loss(input, target, weight, options.reduction()));
#undef EMBER_WEIGHTED_LOSS

template <class P = DefaultPolicy>
class BasicGaussianNLLLossImpl : public Cloneable<BasicGaussianNLLLossImpl<P>, P> {
 public:
  explicit BasicGaussianNLLLossImpl(const GaussianNLLLossOptions& o = {})
      : Cloneable<BasicGaussianNLLLossImpl<P>, P>("GaussianNLLLoss"), options(o) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target, const BasicTensor<P>& var) {
    return F::gaussian_nll_loss(input, target, var, options.full(), options.eps(), options.reduction());
  }
  GaussianNLLLossOptions options;
};
using GaussianNLLLossImpl = BasicGaussianNLLLossImpl<>;
EMBER_MODULE(GaussianNLLLoss);
template <class P = DefaultPolicy>
using BasicGaussianNLLLoss = detail::PolicyHolder<P, GaussianNLLLoss, BasicGaussianNLLLossImpl<P>>;

namespace detail {
/// The options' distance (a function of the default policy's tensors, as libtorch's options
/// hold one of torch::Tensor) as one of P's tensors; empty stays empty (pairwise_distance).
template <class P>
F::DistanceFunction<P> policy_distance(const TripletMarginWithDistanceLossOptions& o) {
  if (!o.distance_function()) return {};
  return [f = *o.distance_function()](const BasicTensor<P>& a, const BasicTensor<P>& b) {
    return BasicTensor<P>(f(Tensor(a.impl_ref()), Tensor(b.impl_ref())).impl_ref());
  };
}
}  // namespace detail

template <class P = DefaultPolicy>
class BasicTripletMarginWithDistanceLossImpl : public Cloneable<BasicTripletMarginWithDistanceLossImpl<P>, P> {
 public:
  explicit BasicTripletMarginWithDistanceLossImpl(const TripletMarginWithDistanceLossOptions& o = {})
      : Cloneable<BasicTripletMarginWithDistanceLossImpl<P>, P>("TripletMarginWithDistanceLoss"), options(o) {
    EMBER_CHECK(o.margin() > 0, "[TripletMarginWithDistanceLoss] margin must be positive, got {}", o.margin());
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& anchor, const BasicTensor<P>& positive,
                         const BasicTensor<P>& negative) {
    return F::triplet_margin_with_distance_loss(anchor, positive, negative, detail::policy_distance<P>(options),
                                                options.margin(), options.swap(), options.reduction());
  }
  TripletMarginWithDistanceLossOptions options;
};
using TripletMarginWithDistanceLossImpl = BasicTripletMarginWithDistanceLossImpl<>;
EMBER_MODULE(TripletMarginWithDistanceLoss);
template <class P = DefaultPolicy>
using BasicTripletMarginWithDistanceLoss = detail::PolicyHolder<P, TripletMarginWithDistanceLoss, BasicTripletMarginWithDistanceLossImpl<P>>;

}  // namespace ember::nn
