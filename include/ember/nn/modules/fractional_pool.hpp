#pragma once
/// FractionalMaxPool2d and FractionalMaxPool3d, as libtorch's: fractional max pooling
/// (nn/functional_fractional_pool.hpp) with new window positions at every call, unless the
/// options fix them (_random_samples).

#include <ember/nn/functional_fractional_pool.hpp>
#include <ember/nn/module.hpp>

#include <tuple>

namespace ember::nn {

/// FractionalMaxPool2d / 3d: new window positions at every call unless the options fix them.
template <int ND, class P = DefaultPolicy>
class BasicFractionalMaxPoolImpl : public Cloneable<BasicFractionalMaxPoolImpl<ND, P>, P> {
 public:
  explicit BasicFractionalMaxPoolImpl(const FractionalMaxPoolOptions<ND>& o)
      : Cloneable<BasicFractionalMaxPoolImpl<ND, P>, P>(ND == 2 ? "FractionalMaxPool2d" : "FractionalMaxPool3d"),
        options(o) {
    reset();
  }
  /// Checks the options and registers _random_samples as a buffer, as libtorch's reset().
  void reset() override {
    const char* op = ND == 2 ? "FractionalMaxPool2d" : "FractionalMaxPool3d";
    EMBER_CHECK(options.output_size().has_value() != options.output_ratio().has_value(),
                "[{}] needs exactly one of output_size and output_ratio", op);
    if (options.output_ratio())
      for (double r : *options.output_ratio())
        EMBER_CHECK(r > 0 && r < 1, "[{}] output_ratio must be in (0, 1), got {}", op, r);
    _random_samples = this->register_buffer("_random_samples", functional::detail::option_tensor<P>(options._random_samples()));
  }
  BasicTensor<P> forward(const BasicTensor<P>& x) { return std::get<0>(forward_with_indices(x)); }
  std::tuple<BasicTensor<P>, BasicTensor<P>> forward_with_indices(const BasicTensor<P>& x) {
    return functional::detail::fractional_max_pool(x, ND, options.kernel_size(), options.output_size(),
                                                   options.output_ratio(), Tensor(_random_samples.impl_ref()),
                                                   this->name().c_str());
  }
  FractionalMaxPoolOptions<ND> options;
  BasicTensor<P> _random_samples;  ///< the options' samples as a buffer (moved by to()); undefined: drawn per call
};
using FractionalMaxPool2dImpl = BasicFractionalMaxPoolImpl<2>;
using FractionalMaxPool3dImpl = BasicFractionalMaxPoolImpl<3>;
EMBER_MODULE(FractionalMaxPool2d);
template <class P = DefaultPolicy>
using BasicFractionalMaxPool2d = detail::PolicyHolder<P, FractionalMaxPool2d, BasicFractionalMaxPoolImpl<2, P>>;
EMBER_MODULE(FractionalMaxPool3d);
template <class P = DefaultPolicy>
using BasicFractionalMaxPool3d = detail::PolicyHolder<P, FractionalMaxPool3d, BasicFractionalMaxPoolImpl<3, P>>;

}  // namespace ember::nn
