#pragma once
/// Linear, Bilinear, Identity, Flatten, Unflatten.

#include <ember/nn/functional.hpp>
#include <ember/nn/functional_layers.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>

#include <cmath>

namespace ember::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  EMBER_ARG(int64_t, in_features);
  EMBER_ARG(int64_t, out_features);
  EMBER_ARG(bool, bias) = true;
};

/// y = x W^T + b, W: (out, in). Initialised as PyTorch: kaiming_uniform(a = sqrt 5), b ~ U(+-1/sqrt(in)).
template <class P = DefaultPolicy>
class BasicLinearImpl : public Cloneable<BasicLinearImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicLinearImpl(int64_t in, int64_t out) : BasicLinearImpl(LinearOptions(in, out)) {}
  explicit BasicLinearImpl(const LinearOptions& o) : Cloneable<BasicLinearImpl<P>, P>("Linear"), options(o) { reset(); }
  void reset() override {
    EMBER_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
                "[Linear] in_features ({}) and out_features ({}) must be non-negative", options.in_features(),
                options.out_features());
    weight = this->register_parameter("weight", empty<P>({options.out_features(), options.in_features()}));
    bias = this->register_parameter("bias", options.bias() ? empty<P>({options.out_features()}) : TensorT());
    reset_parameters();
  }
  void reset_parameters() {
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (bias.defined()) {
      double bound = options.in_features() > 0 ? 1.0 / std::sqrt(static_cast<double>(options.in_features())) : 0.0;
      init::uniform_(bias, -bound, bound);
    }
  }
  TensorT forward(const TensorT& x) {
    EMBER_CHECK(x.dim() >= 1 && x.size(-1) == options.in_features(),
                "[Linear] expects inputs with {} features in the last dim, got shape {}", options.in_features(),
                x.sizes());
    return linear(x, weight, bias);
  }
  /// relu(forward(x)), through linear_relu (Sequential's Linear followed by ReLU).
  TensorT forward_relu(const TensorT& x) {
    EMBER_CHECK(x.dim() >= 1 && x.size(-1) == options.in_features(),
                "[Linear] expects inputs with {} features in the last dim, got shape {}", options.in_features(),
                x.sizes());
    return linear_relu(x, weight, bias);
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("in_features={}, out_features={}, bias={}", options.in_features(), options.out_features(),
                       options.bias() ? "True" : "False");
  }
  LinearOptions options;
  TensorT weight, bias;
};
using LinearImpl = BasicLinearImpl<>;
EMBER_MODULE(Linear);
/// Linear's handle for any policy (nn::Linear under DefaultPolicy).
template <class P = DefaultPolicy>
using BasicLinear = detail::PolicyHolder<P, Linear, BasicLinearImpl<P>>;

struct BilinearOptions {
  BilinearOptions(int64_t in1, int64_t in2, int64_t out) : in1_features_(in1), in2_features_(in2), out_features_(out) {}
  EMBER_ARG(int64_t, in1_features);
  EMBER_ARG(int64_t, in2_features);
  EMBER_ARG(int64_t, out_features);
  EMBER_ARG(bool, bias) = true;
};

/// y_k = x1^T W_k x2 + b_k, W: (out, in1, in2); init U(+-1/sqrt(in1)) as PyTorch.
template <class P = DefaultPolicy>
class BasicBilinearImpl : public Cloneable<BasicBilinearImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicBilinearImpl(int64_t in1, int64_t in2, int64_t out) : BasicBilinearImpl(BilinearOptions(in1, in2, out)) {}
  explicit BasicBilinearImpl(const BilinearOptions& o) : Cloneable<BasicBilinearImpl<P>, P>("Bilinear"), options(o) {
    reset();
  }
  void reset() override {
    weight = this->register_parameter(
        "weight", empty<P>({options.out_features(), options.in1_features(), options.in2_features()}));
    bias = this->register_parameter("bias", options.bias() ? empty<P>({options.out_features()}) : TensorT());
    double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(options.in1_features(), 1)));
    init::uniform_(weight, -bound, bound);
    if (bias.defined()) init::uniform_(bias, -bound, bound);
  }
  TensorT forward(const TensorT& x1, const TensorT& x2) { return F::bilinear(x1, x2, weight, bias); }
  std::string extra_repr() const override {
    return EMBER_FORMAT("in1_features={}, in2_features={}, out_features={}, bias={}", options.in1_features(),
                       options.in2_features(), options.out_features(), options.bias() ? "True" : "False");
  }
  BilinearOptions options;
  TensorT weight, bias;
};
using BilinearImpl = BasicBilinearImpl<>;
EMBER_MODULE(Bilinear);
template <class P = DefaultPolicy>
using BasicBilinear = detail::PolicyHolder<P, Bilinear, BasicBilinearImpl<P>>;

template <class P = DefaultPolicy>
class BasicIdentityImpl : public Cloneable<BasicIdentityImpl<P>, P> {
 public:
  BasicIdentityImpl() : Cloneable<BasicIdentityImpl<P>, P>("Identity") {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return x; }
};
using IdentityImpl = BasicIdentityImpl<>;
EMBER_MODULE(Identity);
template <class P = DefaultPolicy>
using BasicIdentity = detail::PolicyHolder<P, Identity, BasicIdentityImpl<P>>;

struct FlattenOptions {
  EMBER_ARG(int64_t, start_dim) = 1;
  EMBER_ARG(int64_t, end_dim) = -1;
};
template <class P = DefaultPolicy>
class BasicFlattenImpl : public Cloneable<BasicFlattenImpl<P>, P> {
 public:
  explicit BasicFlattenImpl(const FlattenOptions& o = {}) : Cloneable<BasicFlattenImpl<P>, P>("Flatten"), options(o) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return x.flatten(options.start_dim(), options.end_dim()); }
  std::string extra_repr() const override {
    return EMBER_FORMAT("start_dim={}, end_dim={}", options.start_dim(), options.end_dim());
  }
  FlattenOptions options;
};
using FlattenImpl = BasicFlattenImpl<>;
EMBER_MODULE(Flatten);
template <class P = DefaultPolicy>
using BasicFlatten = detail::PolicyHolder<P, Flatten, BasicFlattenImpl<P>>;

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, Shape sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  EMBER_ARG(int64_t, dim);
  EMBER_ARG(Shape, sizes);
};

template <class P = DefaultPolicy>
class BasicUnflattenImpl : public Cloneable<BasicUnflattenImpl<P>, P> {
 public:
  BasicUnflattenImpl(int64_t dim, Shape sizes)
      : Cloneable<BasicUnflattenImpl<P>, P>("Unflatten"), dim(dim), sizes(std::move(sizes)) {}
  explicit BasicUnflattenImpl(const UnflattenOptions& o) : BasicUnflattenImpl(o.dim(), o.sizes()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return x.unflatten(dim, sizes); }
  std::string extra_repr() const override { return EMBER_FORMAT("dim={}, unflattened_size={}", dim, sizes); }
  int64_t dim;
  Shape sizes;
};
using UnflattenImpl = BasicUnflattenImpl<>;
EMBER_MODULE(Unflatten);
template <class P = DefaultPolicy>
using BasicUnflatten = detail::PolicyHolder<P, Unflatten, BasicUnflattenImpl<P>>;

extern template class BasicLinearImpl<DefaultPolicy>;
extern template class BasicBilinearImpl<DefaultPolicy>;

}  // namespace ember::nn
