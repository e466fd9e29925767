#pragma once
/// CosineSimilarity and PairwiseDistance: modules of two inputs, as libtorch's.

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_activation.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>

namespace ember::nn {

struct CosineSimilarityOptions {
  EMBER_ARG(int64_t, dim) = 1;
  EMBER_ARG(double, eps) = 1e-8;
};

/// Cosine similarity of x1 and x2 along `dim` (F::cosine_similarity).
template <class P = DefaultPolicy>
class BasicCosineSimilarityImpl : public Cloneable<BasicCosineSimilarityImpl<P>, P> {
 public:
  explicit BasicCosineSimilarityImpl(const CosineSimilarityOptions& o = {})
      : Cloneable<BasicCosineSimilarityImpl<P>, P>("CosineSimilarity"), options(o) {
    EMBER_CHECK(o.eps() >= 0, "[CosineSimilarity] eps must be non-negative, got {}", o.eps());
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x1, const BasicTensor<P>& x2) {
    return F::cosine_similarity(x1, x2, options.dim(), options.eps());
  }
  std::string extra_repr() const override { return EMBER_FORMAT("dim={}, eps={}", options.dim(), options.eps()); }
  CosineSimilarityOptions options;
};
using CosineSimilarityImpl = BasicCosineSimilarityImpl<>;
EMBER_MODULE(CosineSimilarity);
template <class P = DefaultPolicy>
using BasicCosineSimilarity = detail::PolicyHolder<P, CosineSimilarity, BasicCosineSimilarityImpl<P>>;

struct PairwiseDistanceOptions {
  EMBER_ARG(double, p) = 2.0;
  EMBER_ARG(double, eps) = 1e-6;
  EMBER_ARG(bool, keepdim) = false;
};

/// The p-norm of x1 - x2 + eps along the last dim (F::pairwise_distance).
template <class P = DefaultPolicy>
class BasicPairwiseDistanceImpl : public Cloneable<BasicPairwiseDistanceImpl<P>, P> {
 public:
  explicit BasicPairwiseDistanceImpl(const PairwiseDistanceOptions& o = {})
      : Cloneable<BasicPairwiseDistanceImpl<P>, P>("PairwiseDistance"), options(o) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x1, const BasicTensor<P>& x2) {
    return F::pairwise_distance(x1, x2, options.p(), options.eps(), options.keepdim());
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("p={}, eps={}, keepdim={}", options.p(), options.eps(), options.keepdim() ? "True" : "False");
  }
  PairwiseDistanceOptions options;
};
using PairwiseDistanceImpl = BasicPairwiseDistanceImpl<>;
EMBER_MODULE(PairwiseDistance);
template <class P = DefaultPolicy>
using BasicPairwiseDistance = detail::PolicyHolder<P, PairwiseDistance, BasicPairwiseDistanceImpl<P>>;

}  // namespace ember::nn
