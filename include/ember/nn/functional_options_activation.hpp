#pragma once
/// libtorch's option-struct forms of the functional activations, normalize and the distances:
///   F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2).inplace(true))
///   F::gelu(x, F::GELUFuncOptions().approximate("tanh"))
///   F::normalize(x, F::NormalizeFuncOptions().p(1).dim(-1))
///   F::cosine_similarity(a, b, F::CosineSimilarityFuncOptions().dim(0))
/// As in libtorch, most of these options are the modules' own (LeakyReLUFuncOptions is
/// LeakyReLUOptions). With inplace, the call overwrites x and returns it, as the modules do.

#include <ember/nn/functional_activation.hpp>
#include <ember/nn/modules/activation.hpp>
#include <ember/nn/modules/distance.hpp>
#include <ember/nn/options.hpp>

#include <concepts>
#include <optional>

namespace ember::nn::functional {

// Templates on exactly the options type, as in functional_options.hpp: HardshrinkOptions(0.5)
// and GLUOptions(1) convert from numbers and must not compete with the positional forms.

using ReLUFuncOptions = ReLUOptions;
using ReLU6FuncOptions = ReLU6Options;
using SELUFuncOptions = SELUOptions;
template <class P, std::same_as<ReLUOptions> O>
BasicTensor<P> relu(const BasicTensor<P>& x, const O& o) {
  return o.inplace() ? BasicTensor<P>(x).relu_() : x.relu();
}
template <class P, std::same_as<ReLU6Options> O>
BasicTensor<P> relu6(const BasicTensor<P>& x, const O& o) {
  return o.inplace() ? BasicTensor<P>(x).relu6_() : x.relu6();
}
template <class P, std::same_as<SELUOptions> O>
BasicTensor<P> selu(const BasicTensor<P>& x, const O& o) {
  return o.inplace() ? BasicTensor<P>(x).selu_() : x.selu();
}

using LeakyReLUFuncOptions = LeakyReLUOptions;
using ELUFuncOptions = ELUOptions;
using CELUFuncOptions = CELUOptions;
template <class P, std::same_as<LeakyReLUOptions> O>
BasicTensor<P> leaky_relu(const BasicTensor<P>& x, const O& o) {
  detail::check_leaky_relu(o.negative_slope());
  return o.inplace() ? BasicTensor<P>(x).leaky_relu_(o.negative_slope()) : leaky_relu(x, o.negative_slope());
}
template <class P, std::same_as<ELUOptions> O>
BasicTensor<P> elu(const BasicTensor<P>& x, const O& o) {
  detail::check_elu(o.alpha());
  return o.inplace() ? BasicTensor<P>(x).elu_(o.alpha()) : elu(x, o.alpha());
}
template <class P, std::same_as<CELUOptions> O>
BasicTensor<P> celu(const BasicTensor<P>& x, const O& o) {
  detail::check_celu(o.alpha());
  return o.inplace() ? BasicTensor<P>(x).celu_(o.alpha()) : celu(x, o.alpha());
}

using HardtanhFuncOptions = HardtanhOptions;
template <class P, std::same_as<HardtanhOptions> O>
BasicTensor<P> hardtanh(const BasicTensor<P>& x, const O& o) {
  return o.inplace() ? BasicTensor<P>(x).hardtanh_(o.min_val(), o.max_val()) : hardtanh(x, o.min_val(), o.max_val());
}
using ThresholdFuncOptions = ThresholdOptions;
template <class P, std::same_as<ThresholdOptions> O>
BasicTensor<P> threshold(const BasicTensor<P>& x, const O& o) {
  if (o.inplace()) return BasicTensor<P>(x).masked_fill_(x.le(o.threshold()), o.value());
  return threshold(x, o.threshold(), o.value());
}

using GELUFuncOptions = GELUOptions;
template <class P, std::same_as<GELUOptions> O>
BasicTensor<P> gelu(const BasicTensor<P>& x, const O& o) {
  return gelu(x, o.approximate());
}
using SoftplusFuncOptions = SoftplusOptions;
template <class P, std::same_as<SoftplusOptions> O>
BasicTensor<P> softplus(const BasicTensor<P>& x, const O& o) {
  return softplus(x, o.beta(), o.threshold());
}
using HardshrinkFuncOptions = HardshrinkOptions;
using SoftshrinkFuncOptions = SoftshrinkOptions;
template <class P, std::same_as<HardshrinkOptions> O>
BasicTensor<P> hardshrink(const BasicTensor<P>& x, const O& o) {
  return hardshrink(x, o.lambda());
}
template <class P, std::same_as<SoftshrinkOptions> O>
BasicTensor<P> softshrink(const BasicTensor<P>& x, const O& o) {
  return softshrink(x, o.lambda());
}
using GLUFuncOptions = GLUOptions;
template <class P, std::same_as<GLUOptions> O>
BasicTensor<P> glu(const BasicTensor<P>& x, const O& o) {
  return glu(x, o.dim());
}

/// RReLU's options with the training flag (random slopes only while training).
struct RReLUFuncOptions {
  EMBER_ARG(double, lower) = 1.0 / 8;
  EMBER_ARG(double, upper) = 1.0 / 3;
  EMBER_ARG(bool, training) = false;
  EMBER_ARG(bool, inplace) = false;
};
template <class P, std::same_as<RReLUFuncOptions> O>
BasicTensor<P> rrelu(const BasicTensor<P>& x, const O& o) {
  return rrelu(x, o.lower(), o.upper(), o.training(), o.inplace());
}

struct NormalizeFuncOptions {
  EMBER_ARG(double, p) = 2.0;
  EMBER_ARG(int64_t, dim) = 1;
  EMBER_ARG(double, eps) = 1e-12;
};
template <class P, std::same_as<NormalizeFuncOptions> O>
BasicTensor<P> normalize(const BasicTensor<P>& x, const O& o) {
  return normalize(x, o.p(), o.dim(), o.eps());
}

using CosineSimilarityFuncOptions = CosineSimilarityOptions;
using PairwiseDistanceFuncOptions = PairwiseDistanceOptions;
template <class P, std::same_as<CosineSimilarityOptions> O>
BasicTensor<P> cosine_similarity(const BasicTensor<P>& x1, const BasicTensor<P>& x2, const O& o) {
  return cosine_similarity(x1, x2, o.dim(), o.eps());
}
template <class P, std::same_as<PairwiseDistanceOptions> O>
BasicTensor<P> pairwise_distance(const BasicTensor<P>& x1, const BasicTensor<P>& x2, const O& o) {
  return pairwise_distance(x1, x2, o.p(), o.eps(), o.keepdim());
}

}  // namespace ember::nn::functional
