#pragma once
/// LocalResponseNorm and ChannelShuffle: layers across the channels of (N, C, ...) input.

#include <ember/nn/functional_channel_ops.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>

#include <string>

namespace ember::nn {

struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}  // NOLINT: implicit, as libtorch's
  EMBER_ARG(int64_t, size);
  EMBER_ARG(double, alpha) = 1e-4;
  EMBER_ARG(double, beta) = 0.75;
  EMBER_ARG(double, k) = 1.0;
};

template <class P = DefaultPolicy>
class BasicLocalResponseNormImpl : public Cloneable<BasicLocalResponseNormImpl<P>, P> {
 public:
  explicit BasicLocalResponseNormImpl(const LocalResponseNormOptions& o)
      : Cloneable<BasicLocalResponseNormImpl<P>, P>("LocalResponseNorm"), options(o) {
    EMBER_CHECK(o.size() >= 1, "[LocalResponseNorm] size must be positive, got {}", o.size());
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    return F::local_response_norm(x, options.size(), options.alpha(), options.beta(), options.k());
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("{}, alpha={}, beta={}, k={}", options.size(), options.alpha(), options.beta(), options.k());
  }
  LocalResponseNormOptions options;
};
using LocalResponseNormImpl = BasicLocalResponseNormImpl<>;
EMBER_MODULE(LocalResponseNorm);
template <class P = DefaultPolicy>
using BasicLocalResponseNorm = detail::PolicyHolder<P, LocalResponseNorm, BasicLocalResponseNormImpl<P>>;

struct ChannelShuffleOptions {
  ChannelShuffleOptions(int64_t groups) : groups_(groups) {}  // NOLINT: implicit, as libtorch's
  EMBER_ARG(int64_t, groups);
};

template <class P = DefaultPolicy>
class BasicChannelShuffleImpl : public Cloneable<BasicChannelShuffleImpl<P>, P> {
 public:
  explicit BasicChannelShuffleImpl(const ChannelShuffleOptions& o)
      : Cloneable<BasicChannelShuffleImpl<P>, P>("ChannelShuffle"), groups(o.groups()) {
    EMBER_CHECK(groups >= 1, "[ChannelShuffle] groups must be positive, got {}", groups);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::channel_shuffle(x, groups); }
  std::string extra_repr() const override { return EMBER_FORMAT("groups={}", groups); }
  int64_t groups;
};
using ChannelShuffleImpl = BasicChannelShuffleImpl<>;
EMBER_MODULE(ChannelShuffle);
template <class P = DefaultPolicy>
using BasicChannelShuffle = detail::PolicyHolder<P, ChannelShuffle, BasicChannelShuffleImpl<P>>;

}  // namespace ember::nn
