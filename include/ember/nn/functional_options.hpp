#pragma once
/// libtorch's option-struct forms of the most used functional calls, for code written against
/// torch::nn::functional:
///   F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().label_smoothing(0.1))
///   F::nll_loss(logp, y, F::NLLLossFuncOptions().ignore_index(0))
///   F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training()))
///   F::log_softmax(x, F::LogSoftmaxFuncOptions(1))
/// Each forwards to the positional form. Included by <ember/nn.hpp> after the modules, whose
/// option structs the loss forms share (as libtorch's do).

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_activation.hpp>
#include <ember/nn/modules/loss.hpp>
#include <ember/nn/options.hpp>

#include <concepts>
#include <optional>

namespace ember::nn::functional {

using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using NLLLossFuncOptions = NLLLossOptions;

// The options forms are templates on the options type: a plain parameter would make
// cross_entropy(x, y, {}) ambiguous between an empty weight and default options.
template <class P, std::same_as<CrossEntropyFuncOptions> O>
BasicTensor<P> cross_entropy(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return cross_entropy(input, target, BasicTensor<P>(o.weight().impl_ref()), o.ignore_index(), o.reduction(),
                       o.label_smoothing());
}
template <class P, std::same_as<NLLLossFuncOptions> O>
BasicTensor<P> nll_loss(const BasicTensor<P>& input, const BasicTensor<P>& target, const O& o) {
  return nll_loss(input, target, BasicTensor<P>(o.weight().impl_ref()), o.ignore_index(), o.reduction());
}

struct DropoutFuncOptions {
  EMBER_ARG(double, p) = 0.5;
  EMBER_ARG(bool, training) = true;
  EMBER_ARG(bool, inplace) = false;
};
template <class P>
BasicTensor<P> dropout(const BasicTensor<P>& x, const DropoutFuncOptions& o) {
  return dropout(x, o.p(), o.training(), o.inplace());
}

/// The dim, and optionally the dtype to compute in.
struct SoftmaxFuncOptions {
  explicit SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  EMBER_ARG(int64_t, dim);
  EMBER_ARG(std::optional<DType>, dtype);
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
template <class P>
BasicTensor<P> softmax(const BasicTensor<P>& x, const SoftmaxFuncOptions& o) {
  return o.dtype() ? x.softmax(o.dim(), *o.dtype()) : x.softmax(o.dim());
}
template <class P>
BasicTensor<P> log_softmax(const BasicTensor<P>& x, const SoftmaxFuncOptions& o) {
  return o.dtype() ? x.log_softmax(o.dim(), *o.dtype()) : x.log_softmax(o.dim());
}

}  // namespace ember::nn::functional
