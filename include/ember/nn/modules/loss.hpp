#pragma once
/// Loss modules over nn::functional: MSELoss, L1Loss, SmoothL1Loss, HuberLoss,
/// CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss, KLDivLoss, CosineEmbeddingLoss,
/// MarginRankingLoss, TripletMarginLoss.

#include <ember/nn/functional.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>
#include <ember/nn/reduction.hpp>

#include <string>
#include <vector>

namespace ember::nn {

/// A loss with a reduction (and optional extra options); forward(input, target).
#define EMBER_SIMPLE_LOSS(Name, call)                                                     \
  template <class P = DefaultPolicy>                                                      \
  class Basic##Name##Impl : public Cloneable<Basic##Name##Impl<P>, P> {                   \
   public:                                                                                \
    explicit Basic##Name##Impl(LossReduction reduction = "mean")                          \
        : Cloneable<Basic##Name##Impl<P>, P>(#Name), reduction(std::move(reduction)) {}   \
    explicit Basic##Name##Impl(const Name##Options& o) : Basic##Name##Impl(o.reduction()) {} \
    void reset() override {}                                                              \
    BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {   \
      return call;                                                                        \
    }                                                                                     \
    LossReduction reduction;                                                              \
  };                                                                                      \
  using Name##Impl = Basic##Name##Impl<>;                                                 \
  EMBER_MODULE(Name);                                                                     \
  template <class P = DefaultPolicy>                                                      \
  using Basic##Name = detail::PolicyHolder<P, Name, Basic##Name##Impl<P>>

/// libtorch's options of the losses with only a reduction: MSELoss(MSELossOptions(kSum)).
struct MSELossOptions {
  MSELossOptions(LossReduction reduction = "mean") : reduction_(std::move(reduction)) {}  // NOLINT: implicit
  EMBER_ARG(LossReduction, reduction);
};
using L1LossOptions = MSELossOptions;

EMBER_SIMPLE_LOSS(MSELoss, F::mse_loss(input, target, reduction));
EMBER_SIMPLE_LOSS(L1Loss, F::l1_loss(input, target, reduction));
#undef EMBER_SIMPLE_LOSS

struct SmoothL1LossOptions {
  SmoothL1LossOptions(LossReduction reduction = "mean") : reduction_(std::move(reduction)) {}  // NOLINT: as libtorch
  EMBER_ARG(LossReduction, reduction);
  EMBER_ARG(double, beta) = 1.0;
};

template <class P = DefaultPolicy>
class BasicSmoothL1LossImpl : public Cloneable<BasicSmoothL1LossImpl<P>, P> {
 public:
  explicit BasicSmoothL1LossImpl(LossReduction reduction = "mean", double beta = 1.0)
      : Cloneable<BasicSmoothL1LossImpl<P>, P>("SmoothL1Loss"), reduction(std::move(reduction)), beta(beta) {}
  explicit BasicSmoothL1LossImpl(const SmoothL1LossOptions& o) : BasicSmoothL1LossImpl(o.reduction(), o.beta()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {
    return F::smooth_l1_loss(input, target, reduction, beta);
  }
  LossReduction reduction;
  double beta;
};
using SmoothL1LossImpl = BasicSmoothL1LossImpl<>;
EMBER_MODULE(SmoothL1Loss);
template <class P = DefaultPolicy>
using BasicSmoothL1Loss = detail::PolicyHolder<P, SmoothL1Loss, BasicSmoothL1LossImpl<P>>;

struct HuberLossOptions {
  HuberLossOptions(LossReduction reduction = "mean") : reduction_(std::move(reduction)) {}  // NOLINT: as libtorch
  EMBER_ARG(LossReduction, reduction);
  EMBER_ARG(double, delta) = 1.0;
};

template <class P = DefaultPolicy>
class BasicHuberLossImpl : public Cloneable<BasicHuberLossImpl<P>, P> {
 public:
  explicit BasicHuberLossImpl(LossReduction reduction = "mean", double delta = 1.0)
      : Cloneable<BasicHuberLossImpl<P>, P>("HuberLoss"), reduction(std::move(reduction)), delta(delta) {}
  explicit BasicHuberLossImpl(const HuberLossOptions& o) : BasicHuberLossImpl(o.reduction(), o.delta()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {
    return F::huber_loss(input, target, reduction, delta);
  }
  LossReduction reduction;
  double delta;
};
using HuberLossImpl = BasicHuberLossImpl<>;
EMBER_MODULE(HuberLoss);
template <class P = DefaultPolicy>
using BasicHuberLoss = detail::PolicyHolder<P, HuberLoss, BasicHuberLossImpl<P>>;

struct CrossEntropyLossOptions {
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(LossReduction, reduction) = "mean";
  EMBER_ARG(double, label_smoothing) = 0.0;
};

template <class P = DefaultPolicy>
class BasicCrossEntropyLossImpl : public Cloneable<BasicCrossEntropyLossImpl<P>, P> {
 public:
  explicit BasicCrossEntropyLossImpl(const CrossEntropyLossOptions& o = {})
      : Cloneable<BasicCrossEntropyLossImpl<P>, P>("CrossEntropyLoss"), options(o) {
    reset();
  }
  void reset() override {
    weight = this->register_buffer("weight", BasicTensor<P>(options.weight().impl_ref()));
  }
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {
    return F::cross_entropy(input, target, weight, options.ignore_index(), options.reduction(),
                            options.label_smoothing());
  }
  CrossEntropyLossOptions options;
  BasicTensor<P> weight;
};
using CrossEntropyLossImpl = BasicCrossEntropyLossImpl<>;
EMBER_MODULE(CrossEntropyLoss);
template <class P = DefaultPolicy>
using BasicCrossEntropyLoss = detail::PolicyHolder<P, CrossEntropyLoss, BasicCrossEntropyLossImpl<P>>;

struct NLLLossOptions {
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(LossReduction, reduction) = "mean";
};

template <class P = DefaultPolicy>
class BasicNLLLossImpl : public Cloneable<BasicNLLLossImpl<P>, P> {
 public:
  explicit BasicNLLLossImpl(const NLLLossOptions& o = {}) : Cloneable<BasicNLLLossImpl<P>, P>("NLLLoss"), options(o) {
    reset();
  }
  void reset() override { weight = this->register_buffer("weight", BasicTensor<P>(options.weight().impl_ref())); }
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {
    return F::nll_loss(input, target, weight, options.ignore_index(), options.reduction());
  }
  NLLLossOptions options;
  BasicTensor<P> weight;
};
using NLLLossImpl = BasicNLLLossImpl<>;
EMBER_MODULE(NLLLoss);
template <class P = DefaultPolicy>
using BasicNLLLoss = detail::PolicyHolder<P, NLLLoss, BasicNLLLossImpl<P>>;

struct BCELossOptions {
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(LossReduction, reduction) = "mean";
};

template <class P = DefaultPolicy>
class BasicBCELossImpl : public Cloneable<BasicBCELossImpl<P>, P> {
 public:
  explicit BasicBCELossImpl(BasicTensor<P> weight = {}, LossReduction reduction = "mean")
      : Cloneable<BasicBCELossImpl<P>, P>("BCELoss"), reduction(std::move(reduction)), init_weight_(std::move(weight)) {
    reset();
  }
  explicit BasicBCELossImpl(const BCELossOptions& o)
      : BasicBCELossImpl(BasicTensor<P>(o.weight().impl_ref()), o.reduction()) {}
  void reset() override { weight = this->register_buffer("weight", init_weight_); }
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {
    return F::binary_cross_entropy(input, target, weight, reduction);
  }
  LossReduction reduction;
  BasicTensor<P> weight;

 private:
  BasicTensor<P> init_weight_;
};
using BCELossImpl = BasicBCELossImpl<>;
EMBER_MODULE(BCELoss);
template <class P = DefaultPolicy>
using BasicBCELoss = detail::PolicyHolder<P, BCELoss, BasicBCELossImpl<P>>;

struct BCEWithLogitsLossOptions {
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(LossReduction, reduction) = "mean";
  EMBER_ARG(Tensor, pos_weight);
};

template <class P = DefaultPolicy>
class BasicBCEWithLogitsLossImpl : public Cloneable<BasicBCEWithLogitsLossImpl<P>, P> {
 public:
  explicit BasicBCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& o = {})
      : Cloneable<BasicBCEWithLogitsLossImpl<P>, P>("BCEWithLogitsLoss"), options(o) {
    reset();
  }
  void reset() override {
    weight = this->register_buffer("weight", BasicTensor<P>(options.weight().impl_ref()));
    pos_weight = this->register_buffer("pos_weight", BasicTensor<P>(options.pos_weight().impl_ref()));
  }
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {
    return F::binary_cross_entropy_with_logits(input, target, weight, options.reduction(), pos_weight);
  }
  BCEWithLogitsLossOptions options;
  BasicTensor<P> weight, pos_weight;
};
using BCEWithLogitsLossImpl = BasicBCEWithLogitsLossImpl<>;
EMBER_MODULE(BCEWithLogitsLoss);
template <class P = DefaultPolicy>
using BasicBCEWithLogitsLoss = detail::PolicyHolder<P, BCEWithLogitsLoss, BasicBCEWithLogitsLossImpl<P>>;

struct KLDivLossOptions {
  KLDivLossOptions(LossReduction reduction = "mean") : reduction_(std::move(reduction)) {}  // NOLINT: as libtorch
  EMBER_ARG(LossReduction, reduction);  ///< none, mean, sum or batchmean (kBatchMean)
  EMBER_ARG(bool, log_target) = false;
};

template <class P = DefaultPolicy>
class BasicKLDivLossImpl : public Cloneable<BasicKLDivLossImpl<P>, P> {
 public:
  explicit BasicKLDivLossImpl(LossReduction reduction = "mean", bool log_target = false)
      : Cloneable<BasicKLDivLossImpl<P>, P>("KLDivLoss"), reduction(std::move(reduction)), log_target(log_target) {}
  explicit BasicKLDivLossImpl(const KLDivLossOptions& o) : BasicKLDivLossImpl(o.reduction(), o.log_target()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& input, const BasicTensor<P>& target) {
    return F::kl_div(input, target, reduction, log_target);
  }
  LossReduction reduction;
  bool log_target;
};
using KLDivLossImpl = BasicKLDivLossImpl<>;
EMBER_MODULE(KLDivLoss);
template <class P = DefaultPolicy>
using BasicKLDivLoss = detail::PolicyHolder<P, KLDivLoss, BasicKLDivLossImpl<P>>;

/// The margin and reduction of CosineEmbeddingLoss and MarginRankingLoss.
struct CosineEmbeddingLossOptions {
  EMBER_ARG(double, margin) = 0.0;
  EMBER_ARG(LossReduction, reduction) = "mean";
};
using MarginRankingLossOptions = CosineEmbeddingLossOptions;

/// Three-input losses: forward(a, b, y) or (anchor, positive, negative).
template <class P = DefaultPolicy>
class BasicCosineEmbeddingLossImpl : public Cloneable<BasicCosineEmbeddingLossImpl<P>, P> {
 public:
  explicit BasicCosineEmbeddingLossImpl(double margin = 0.0, LossReduction reduction = "mean")
      : Cloneable<BasicCosineEmbeddingLossImpl<P>, P>("CosineEmbeddingLoss"), margin(margin),
        reduction(std::move(reduction)) {}
  explicit BasicCosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& o)
      : BasicCosineEmbeddingLossImpl(o.margin(), o.reduction()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& a, const BasicTensor<P>& b, const BasicTensor<P>& y) {
    return F::cosine_embedding_loss(a, b, y, margin, reduction);
  }
  double margin;
  LossReduction reduction;
};
using CosineEmbeddingLossImpl = BasicCosineEmbeddingLossImpl<>;
EMBER_MODULE(CosineEmbeddingLoss);
template <class P = DefaultPolicy>
using BasicCosineEmbeddingLoss = detail::PolicyHolder<P, CosineEmbeddingLoss, BasicCosineEmbeddingLossImpl<P>>;

template <class P = DefaultPolicy>
class BasicMarginRankingLossImpl : public Cloneable<BasicMarginRankingLossImpl<P>, P> {
 public:
  explicit BasicMarginRankingLossImpl(double margin = 0.0, LossReduction reduction = "mean")
      : Cloneable<BasicMarginRankingLossImpl<P>, P>("MarginRankingLoss"), margin(margin),
        reduction(std::move(reduction)) {}
  explicit BasicMarginRankingLossImpl(const MarginRankingLossOptions& o)
      : BasicMarginRankingLossImpl(o.margin(), o.reduction()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& a, const BasicTensor<P>& b, const BasicTensor<P>& y) {
    return F::margin_ranking_loss(a, b, y, margin, reduction);
  }
  double margin;
  LossReduction reduction;
};
using MarginRankingLossImpl = BasicMarginRankingLossImpl<>;
EMBER_MODULE(MarginRankingLoss);
template <class P = DefaultPolicy>
using BasicMarginRankingLoss = detail::PolicyHolder<P, MarginRankingLoss, BasicMarginRankingLossImpl<P>>;

struct TripletMarginLossOptions {
  EMBER_ARG(double, margin) = 1.0;
  EMBER_ARG(double, p) = 2.0;
  EMBER_ARG(double, eps) = 1e-6;
  EMBER_ARG(bool, swap) = false;
  EMBER_ARG(LossReduction, reduction) = "mean";
};

template <class P = DefaultPolicy>
class BasicTripletMarginLossImpl : public Cloneable<BasicTripletMarginLossImpl<P>, P> {
 public:
  explicit BasicTripletMarginLossImpl(double margin = 1.0, double p = 2.0, double eps = 1e-6, bool swap = false,
                                      LossReduction reduction = "mean")
      : Cloneable<BasicTripletMarginLossImpl<P>, P>("TripletMarginLoss"), margin(margin), p(p), eps(eps), swap(swap),
        reduction(std::move(reduction)) {}
  explicit BasicTripletMarginLossImpl(const TripletMarginLossOptions& o)
      : BasicTripletMarginLossImpl(o.margin(), o.p(), o.eps(), o.swap(), o.reduction()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& a, const BasicTensor<P>& pos, const BasicTensor<P>& neg) {
    return F::triplet_margin_loss(a, pos, neg, margin, p, eps, swap, reduction);
  }
  double margin, p, eps;
  bool swap;
  LossReduction reduction;
};
using TripletMarginLossImpl = BasicTripletMarginLossImpl<>;
EMBER_MODULE(TripletMarginLoss);
template <class P = DefaultPolicy>
using BasicTripletMarginLoss = detail::PolicyHolder<P, TripletMarginLoss, BasicTripletMarginLossImpl<P>>;

struct CTCLossOptions {
  EMBER_ARG(int64_t, blank) = 0;
  EMBER_ARG(LossReduction, reduction) = "mean";
  EMBER_ARG(bool, zero_infinity) = false;
};

template <class P = DefaultPolicy>
class BasicCTCLossImpl : public Cloneable<BasicCTCLossImpl<P>, P> {
 public:
  explicit BasicCTCLossImpl(int64_t blank = 0, LossReduction reduction = "mean", bool zero_infinity = false)
      : Cloneable<BasicCTCLossImpl<P>, P>("CTCLoss"), blank(blank), reduction(std::move(reduction)),
        zero_infinity(zero_infinity) {}
  explicit BasicCTCLossImpl(const CTCLossOptions& o)
      : BasicCTCLossImpl(o.blank(), o.reduction(), o.zero_infinity()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& log_probs, const BasicTensor<P>& targets,
                         const std::vector<int64_t>& input_lengths, const std::vector<int64_t>& target_lengths) {
    return F::ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity);
  }
  /// The lengths as 0-d or 1-d integer tensors, as libtorch's CTCLoss takes them.
  BasicTensor<P> forward(const BasicTensor<P>& log_probs, const BasicTensor<P>& targets,
                         const BasicTensor<P>& input_lengths, const BasicTensor<P>& target_lengths) {
    return F::ctc_loss(log_probs, targets, F::detail::lengths_of(input_lengths, "input_lengths"),
                       F::detail::lengths_of(target_lengths, "target_lengths"), blank, reduction, zero_infinity);
  }
  int64_t blank;
  LossReduction reduction;
  bool zero_infinity;
};
using CTCLossImpl = BasicCTCLossImpl<>;
EMBER_MODULE(CTCLoss);
template <class P = DefaultPolicy>
using BasicCTCLoss = detail::PolicyHolder<P, CTCLoss, BasicCTCLossImpl<P>>;

}  // namespace ember::nn
