#pragma once
/// Every activation as a module (ReLU, GELU, ...), plus Softmax/LogSoftmax/Softmin over a dim
/// and Softmax2d. Each forwards to its nn::functional form (nn/functional_activation.hpp).

#include <ember/nn/module.hpp>
#include <ember/nn/functional.hpp>
#include <ember/ops/functions.hpp>

#include <cmath>
#include <string>

namespace ember::nn {

/// An activation without parameters: `expr` is evaluated with `x` bound to the input.
#define EMBER_ACTIVATION_MODULE(Name, expr)                                               \
  template <class P = DefaultPolicy>                                                      \
  class Basic##Name##Impl : public Cloneable<Basic##Name##Impl<P>, P> {                   \
   public:                                                                                \
    Basic##Name##Impl() : Cloneable<Basic##Name##Impl<P>, P>(#Name) {}                   \
    void reset() override {}                                                              \
    BasicTensor<P> forward(const BasicTensor<P>& x) { return expr; }                      \
  };                                                                                      \
  using Name##Impl = Basic##Name##Impl<>;                                                 \
  EMBER_MODULE(Name)

EMBER_ACTIVATION_MODULE(ReLU, F::relu(x));
EMBER_ACTIVATION_MODULE(ReLU6, F::relu6(x));
EMBER_ACTIVATION_MODULE(SELU, F::selu(x));
EMBER_ACTIVATION_MODULE(SiLU, F::silu(x));
EMBER_ACTIVATION_MODULE(Mish, F::mish(x));
EMBER_ACTIVATION_MODULE(Sigmoid, F::sigmoid(x));
EMBER_ACTIVATION_MODULE(Tanh, F::tanh(x));
EMBER_ACTIVATION_MODULE(Softsign, F::softsign(x));
EMBER_ACTIVATION_MODULE(Hardsigmoid, F::hardsigmoid(x));
EMBER_ACTIVATION_MODULE(Hardswish, F::hardswish(x));
EMBER_ACTIVATION_MODULE(LogSigmoid, F::logsigmoid(x));
EMBER_ACTIVATION_MODULE(Tanhshrink, F::tanhshrink(x));
#undef EMBER_ACTIVATION_MODULE

/// An activation with one numeric option (checked by `valid`, refused with `why`), printed
/// as PyTorch does.
#define EMBER_PARAM_ACTIVATION_MODULE(Name, Arg, dflt, expr, repr, valid, why)                   \
  template <class P = DefaultPolicy>                                                            \
  class Basic##Name##Impl : public Cloneable<Basic##Name##Impl<P>, P> {                         \
   public:                                                                                      \
    explicit Basic##Name##Impl(double Arg = dflt) : Cloneable<Basic##Name##Impl<P>, P>(#Name), Arg(Arg) { \
      EMBER_CHECK(valid, "[" #Name "] " why ", got {}", Arg);                                    \
    }                                                                                           \
    void reset() override {}                                                                    \
    BasicTensor<P> forward(const BasicTensor<P>& x) { return expr; }                            \
    std::string extra_repr() const override { return fmt::format(repr, Arg); }                  \
    double Arg;                                                                                 \
  };                                                                                            \
  using Name##Impl = Basic##Name##Impl<>;                                                       \
  EMBER_MODULE(Name)

EMBER_PARAM_ACTIVATION_MODULE(LeakyReLU, negative_slope, 0.01, F::leaky_relu(x, negative_slope), "negative_slope={}",
                              !std::isnan(negative_slope), "negative_slope must be a number");
EMBER_PARAM_ACTIVATION_MODULE(ELU, alpha, 1.0, F::elu(x, alpha), "alpha={}", !std::isnan(alpha), "alpha must be a number");
EMBER_PARAM_ACTIVATION_MODULE(CELU, alpha, 1.0, F::celu(x, alpha), "alpha={}", alpha != 0 && !std::isnan(alpha),
                              "alpha cannot be 0 (it divides)");
// Hardshrink keeps NaN (zero only inside [-lambd, lambd]), as PyTorch.
EMBER_PARAM_ACTIVATION_MODULE(Hardshrink, lambd, 0.5, F::hardshrink(x, lambd), "{}",
                              lambd >= 0, "lambda must be non-negative");
EMBER_PARAM_ACTIVATION_MODULE(Softshrink, lambd, 0.5, F::softshrink(x, lambd), "{}", lambd >= 0, "lambda must be non-negative");
#undef EMBER_PARAM_ACTIVATION_MODULE

/// y = x where x > threshold, else value.
template <class P = DefaultPolicy>
class BasicThresholdImpl : public Cloneable<BasicThresholdImpl<P>, P> {
 public:
  BasicThresholdImpl(double threshold, double value)
      : Cloneable<BasicThresholdImpl<P>, P>("Threshold"), threshold(threshold), value(value) {}
  void reset() override {}
  /// NaN stays NaN (only x <= threshold is replaced), and the result keeps x's dtype.
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::threshold(x, threshold, value); }
  std::string extra_repr() const override { return fmt::format("threshold={}, value={}", threshold, value); }
  double threshold, value;
};
using ThresholdImpl = BasicThresholdImpl<>;
EMBER_MODULE(Threshold);

/// PReLU: max(0, x) + weight * min(0, x), with one learned slope (init 0.25) or one per
/// channel (dim 1 of the input), as PyTorch.
template <class P = DefaultPolicy>
class BasicPReLUImpl : public Cloneable<BasicPReLUImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicPReLUImpl(int64_t num_parameters = 1, double init = 0.25)
      : Cloneable<BasicPReLUImpl<P>, P>("PReLU"), num_parameters(num_parameters), init(init) {
    EMBER_CHECK(num_parameters >= 1, "[PReLU] num_parameters must be positive, got {}", num_parameters);
    reset();
  }
  void reset() override { weight = this->register_parameter("weight", full<P>({num_parameters}, init)); }
  TensorT forward(const TensorT& x) { return F::prelu(x, weight); }
  std::string extra_repr() const override { return fmt::format("num_parameters={}", num_parameters); }
  int64_t num_parameters;
  double init;
  TensorT weight;
};
using PReLUImpl = BasicPReLUImpl<>;
EMBER_MODULE(PReLU);

/// GLU: a * sigmoid(b), where a and b are the halves of the input along `dim`.
template <class P = DefaultPolicy>
class BasicGLUImpl : public Cloneable<BasicGLUImpl<P>, P> {
 public:
  explicit BasicGLUImpl(int64_t dim = -1) : Cloneable<BasicGLUImpl<P>, P>("GLU"), dim(dim) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::glu(x, dim); }
  std::string extra_repr() const override { return fmt::format("dim={}", dim); }
  int64_t dim;
};
using GLUImpl = BasicGLUImpl<>;
EMBER_MODULE(GLU);

/// GELU, exact (approximate = "none") or with the tanh approximation.
template <class P = DefaultPolicy>
class BasicGELUImpl : public Cloneable<BasicGELUImpl<P>, P> {
 public:
  explicit BasicGELUImpl(std::string approximate = "none")
      : Cloneable<BasicGELUImpl<P>, P>("GELU"), approximate(std::move(approximate)) {
    EMBER_CHECK(this->approximate == "none" || this->approximate == "tanh",
                "[GELU] approximate must be 'none' or 'tanh', got '{}'", this->approximate);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::gelu(x, approximate); }
  std::string extra_repr() const override { return approximate == "none" ? "" : "approximate='tanh'"; }
  std::string approximate;
};
using GELUImpl = BasicGELUImpl<>;
EMBER_MODULE(GELU);

template <class P = DefaultPolicy>
class BasicSoftplusImpl : public Cloneable<BasicSoftplusImpl<P>, P> {
 public:
  explicit BasicSoftplusImpl(double beta = 1.0, double threshold = 20.0)
      : Cloneable<BasicSoftplusImpl<P>, P>("Softplus"), beta(beta), threshold(threshold) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::softplus(x, beta, threshold); }
  std::string extra_repr() const override { return fmt::format("beta={}, threshold={}", beta, threshold); }
  double beta, threshold;
};
using SoftplusImpl = BasicSoftplusImpl<>;
EMBER_MODULE(Softplus);

template <class P = DefaultPolicy>
class BasicHardtanhImpl : public Cloneable<BasicHardtanhImpl<P>, P> {
 public:
  explicit BasicHardtanhImpl(double min_val = -1.0, double max_val = 1.0)
      : Cloneable<BasicHardtanhImpl<P>, P>("Hardtanh"), min_val(min_val), max_val(max_val) {
    EMBER_CHECK(min_val < max_val, "[Hardtanh] min_val ({}) must be below max_val ({})", min_val, max_val);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::hardtanh(x, min_val, max_val); }
  std::string extra_repr() const override { return fmt::format("min_val={}, max_val={}", min_val, max_val); }
  double min_val, max_val;
};
using HardtanhImpl = BasicHardtanhImpl<>;
EMBER_MODULE(Hardtanh);

/// Softmax / LogSoftmax over `dim`.
template <class P = DefaultPolicy>
class BasicSoftmaxImpl : public Cloneable<BasicSoftmaxImpl<P>, P> {
 public:
  explicit BasicSoftmaxImpl(int64_t dim) : Cloneable<BasicSoftmaxImpl<P>, P>("Softmax"), dim(dim) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::softmax(x, dim); }
  std::string extra_repr() const override { return fmt::format("dim={}", dim); }
  int64_t dim;
};
using SoftmaxImpl = BasicSoftmaxImpl<>;
EMBER_MODULE(Softmax);

template <class P = DefaultPolicy>
class BasicLogSoftmaxImpl : public Cloneable<BasicLogSoftmaxImpl<P>, P> {
 public:
  explicit BasicLogSoftmaxImpl(int64_t dim) : Cloneable<BasicLogSoftmaxImpl<P>, P>("LogSoftmax"), dim(dim) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::log_softmax(x, dim); }
  std::string extra_repr() const override { return fmt::format("dim={}", dim); }
  int64_t dim;
};
using LogSoftmaxImpl = BasicLogSoftmaxImpl<>;
EMBER_MODULE(LogSoftmax);

/// Softmin over `dim`: softmax(-x).
template <class P = DefaultPolicy>
class BasicSoftminImpl : public Cloneable<BasicSoftminImpl<P>, P> {
 public:
  explicit BasicSoftminImpl(int64_t dim) : Cloneable<BasicSoftminImpl<P>, P>("Softmin"), dim(dim) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::softmin(x, dim); }
  std::string extra_repr() const override { return fmt::format("dim={}", dim); }
  int64_t dim;
};
using SoftminImpl = BasicSoftminImpl<>;
EMBER_MODULE(Softmin);

/// RReLU: a leaky ReLU whose negative slope is drawn from U(lower, upper) per element while
/// training and is (lower + upper) / 2 in eval mode.
template <class P = DefaultPolicy>
class BasicRReLUImpl : public Cloneable<BasicRReLUImpl<P>, P> {
 public:
  explicit BasicRReLUImpl(double lower = 1.0 / 8, double upper = 1.0 / 3)
      : Cloneable<BasicRReLUImpl<P>, P>("RReLU"), lower(lower), upper(upper) {
    EMBER_CHECK(lower <= upper && std::isfinite(lower) && std::isfinite(upper),
                "[RReLU] needs finite bounds with lower <= upper, got lower {} and upper {}", lower, upper);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::rrelu(x, lower, upper, this->is_training()); }
  std::string extra_repr() const override { return fmt::format("lower={}, upper={}", lower, upper); }
  double lower, upper;
};
using RReLUImpl = BasicRReLUImpl<>;
EMBER_MODULE(RReLU);

/// Softmax over the channels (dim -3) of a (C, H, W) or (N, C, H, W) input.
template <class P = DefaultPolicy>
class BasicSoftmax2dImpl : public Cloneable<BasicSoftmax2dImpl<P>, P> {
 public:
  BasicSoftmax2dImpl() : Cloneable<BasicSoftmax2dImpl<P>, P>("Softmax2d") {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    EMBER_CHECK(x.dim() == 3 || x.dim() == 4, "[Softmax2d] expects a 3-d or 4-d input, got shape {}", x.sizes());
    return F::softmax(x, -3);
  }
};
using Softmax2dImpl = BasicSoftmax2dImpl<>;
EMBER_MODULE(Softmax2d);

}  // namespace ember::nn
