#pragma once
/// Every activation as a module (ReLU, GELU, ...), plus Softmax/LogSoftmax/Softmin over a dim
/// and Softmax2d. Each forwards to its nn::functional form (nn/functional_activation.hpp).

#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>
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
  EMBER_MODULE(Name);                                                                     \
  template <class P = DefaultPolicy>                                                      \
  using Basic##Name = detail::PolicyHolder<P, Name, Basic##Name##Impl<P>>

EMBER_ACTIVATION_MODULE(Sigmoid, F::sigmoid(x));
EMBER_ACTIVATION_MODULE(Tanh, F::tanh(x));
EMBER_ACTIVATION_MODULE(Softsign, F::softsign(x));
EMBER_ACTIVATION_MODULE(LogSigmoid, F::logsigmoid(x));
EMBER_ACTIVATION_MODULE(Tanhshrink, F::tanhshrink(x));
#undef EMBER_ACTIVATION_MODULE

/// An activation whose only option is libtorch's `inplace`: with it, forward overwrites its
/// input and returns it (ReLU(ReLUOptions().inplace(true)), or ReLU(true)).
#define EMBER_INPLACE_ACTIVATION_MODULE(Name, expr, inplace_call)                         \
  struct Name##Options {                                                                  \
    Name##Options(bool inplace = false) : inplace_(inplace) {} /* NOLINT: implicit */     \
    EMBER_ARG(bool, inplace);                                                             \
  };                                                                                      \
  template <class P = DefaultPolicy>                                                      \
  class Basic##Name##Impl : public Cloneable<Basic##Name##Impl<P>, P> {                   \
   public:                                                                                \
    explicit Basic##Name##Impl(const Name##Options& o = {})                               \
        : Cloneable<Basic##Name##Impl<P>, P>(#Name), options(o) {}                       \
    void reset() override {}                                                              \
    BasicTensor<P> forward(const BasicTensor<P>& x) {                                     \
      if (options.inplace()) return BasicTensor<P>(x).inplace_call;                       \
      return expr;                                                                        \
    }                                                                                     \
    std::string extra_repr() const override { return options.inplace() ? "inplace=True" : ""; } \
    Name##Options options;                                                                \
  };                                                                                      \
  using Name##Impl = Basic##Name##Impl<>;                                                 \
  EMBER_MODULE(Name);                                                                     \
  template <class P = DefaultPolicy>                                                      \
  using Basic##Name = detail::PolicyHolder<P, Name, Basic##Name##Impl<P>>

EMBER_INPLACE_ACTIVATION_MODULE(ReLU, F::relu(x), relu_());
EMBER_INPLACE_ACTIVATION_MODULE(ReLU6, F::relu6(x), relu6_());
EMBER_INPLACE_ACTIVATION_MODULE(SELU, F::selu(x), selu_());
// libtorch's have no options; PyTorch's take inplace.
EMBER_INPLACE_ACTIVATION_MODULE(SiLU, F::silu(x), silu_());
EMBER_INPLACE_ACTIVATION_MODULE(Mish, F::mish(x), mish_());
EMBER_INPLACE_ACTIVATION_MODULE(Hardsigmoid, F::hardsigmoid(x), hardsigmoid_());
EMBER_INPLACE_ACTIVATION_MODULE(Hardswish, F::hardswish(x), hardswish_());
#undef EMBER_INPLACE_ACTIVATION_MODULE

namespace detail {
/// Whether options that may have libtorch's inplace flag set it.
template <class O>
bool inplace_of(const O& o) {
  if constexpr (requires { o.inplace(); }) return o.inplace();
  return false;
}
}  // namespace detail

/// libtorch's options of the activations with one number (and, where libtorch has one, an
/// inplace flag).
struct LeakyReLUOptions {
  EMBER_ARG(double, negative_slope) = 0.01;
  EMBER_ARG(bool, inplace) = false;
};
struct ELUOptions {
  EMBER_ARG(double, alpha) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};
struct CELUOptions {
  EMBER_ARG(double, alpha) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};
struct HardshrinkOptions {
  HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT: implicit, as in libtorch
  EMBER_ARG(double, lambda);
};
struct SoftshrinkOptions {
  SoftshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  EMBER_ARG(double, lambda);
};

/// An activation with one numeric option (checked by `valid`, refused with `why`), printed
/// as PyTorch does; built from the number or from Name##Options (whose `OptArg` is it).
#define EMBER_PARAM_ACTIVATION_MODULE(Name, Arg, OptArg, dflt, expr, inplace_stmt, repr, valid, why)      \
  template <class P = DefaultPolicy>                                                            \
  class Basic##Name##Impl : public Cloneable<Basic##Name##Impl<P>, P> {                         \
   public:                                                                                      \
    explicit Basic##Name##Impl(double Arg = dflt) : Cloneable<Basic##Name##Impl<P>, P>(#Name), Arg(Arg) { \
      EMBER_CHECK(valid, "[" #Name "] " why ", got {}", Arg);                                    \
    }                                                                                           \
    explicit Basic##Name##Impl(const Name##Options& o) : Basic##Name##Impl(o.OptArg()) {        \
      inplace = detail::inplace_of(o);                                                          \
    }                                                                                           \
    void reset() override {}                                                                    \
    BasicTensor<P> forward(const BasicTensor<P>& x) {                                           \
      inplace_stmt                                                                              \
      return expr;                                                                              \
    }                                                                                           \
    std::string extra_repr() const override {                                                   \
      return EMBER_FORMAT(repr, Arg) + (inplace ? ", inplace=True" : "");                        \
    }                                                                                           \
    double Arg;                                                                                 \
    bool inplace = false;                                                                       \
  };                                                                                            \
  using Name##Impl = Basic##Name##Impl<>;                                                       \
  EMBER_MODULE(Name);                                                                           \
  template <class P = DefaultPolicy>                                                            \
  using Basic##Name = detail::PolicyHolder<P, Name, Basic##Name##Impl<P>>

EMBER_PARAM_ACTIVATION_MODULE(LeakyReLU, negative_slope, negative_slope, 0.01, F::leaky_relu(x, negative_slope),
                              if (inplace) return BasicTensor<P>(x).leaky_relu_(negative_slope);, "negative_slope={}", !std::isnan(negative_slope),
                              "negative_slope must be a number");
EMBER_PARAM_ACTIVATION_MODULE(ELU, alpha, alpha, 1.0, F::elu(x, alpha),
                              if (inplace) return BasicTensor<P>(x).elu_(alpha);, "alpha={}", !std::isnan(alpha),
                              "alpha must be a number");
EMBER_PARAM_ACTIVATION_MODULE(CELU, alpha, alpha, 1.0, F::celu(x, alpha),
                              if (inplace) return BasicTensor<P>(x).celu_(alpha);, "alpha={}",
                              alpha != 0 && !std::isnan(alpha), "alpha cannot be 0 (it divides)");
// Hardshrink keeps NaN (zero only inside [-lambd, lambd]), as PyTorch. libtorch has no
// inplace flag for the shrinks: their options have none, so `inplace` stays false.
EMBER_PARAM_ACTIVATION_MODULE(Hardshrink, lambd, lambda, 0.5, F::hardshrink(x, lambd), , "{}",
                              lambd >= 0, "lambda must be non-negative");
EMBER_PARAM_ACTIVATION_MODULE(Softshrink, lambd, lambda, 0.5, F::softshrink(x, lambd), , "{}",
                              lambd >= 0, "lambda must be non-negative");
#undef EMBER_PARAM_ACTIVATION_MODULE

struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  EMBER_ARG(double, threshold);
  EMBER_ARG(double, value);
  EMBER_ARG(bool, inplace) = false;
};

/// y = x where x > threshold, else value.
template <class P = DefaultPolicy>
class BasicThresholdImpl : public Cloneable<BasicThresholdImpl<P>, P> {
 public:
  BasicThresholdImpl(double threshold, double value)
      : Cloneable<BasicThresholdImpl<P>, P>("Threshold"), threshold(threshold), value(value) {}
  explicit BasicThresholdImpl(const ThresholdOptions& o) : BasicThresholdImpl(o.threshold(), o.value()) {
    inplace = o.inplace();
  }
  void reset() override {}
  /// NaN stays NaN (only x <= threshold is replaced), and the result keeps x's dtype.
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    if (inplace) return BasicTensor<P>(x).masked_fill_(x.le(threshold), value);
    return F::threshold(x, threshold, value);
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("threshold={}, value={}{}", threshold, value, inplace ? ", inplace=True" : "");
  }
  double threshold, value;
  bool inplace = false;
};
using ThresholdImpl = BasicThresholdImpl<>;
EMBER_MODULE(Threshold);
template <class P = DefaultPolicy>
using BasicThreshold = detail::PolicyHolder<P, Threshold, BasicThresholdImpl<P>>;

struct PReLUOptions {
  EMBER_ARG(int64_t, num_parameters) = 1;
  EMBER_ARG(double, init) = 0.25;
};

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
  explicit BasicPReLUImpl(const PReLUOptions& o) : BasicPReLUImpl(o.num_parameters(), o.init()) {}
  void reset() override { weight = this->register_parameter("weight", full<P>({num_parameters}, init)); }
  TensorT forward(const TensorT& x) { return F::prelu(x, weight); }
  std::string extra_repr() const override { return EMBER_FORMAT("num_parameters={}", num_parameters); }
  int64_t num_parameters;
  double init;
  TensorT weight;
};
using PReLUImpl = BasicPReLUImpl<>;
EMBER_MODULE(PReLU);
template <class P = DefaultPolicy>
using BasicPReLU = detail::PolicyHolder<P, PReLU, BasicPReLUImpl<P>>;

struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT: implicit, as in libtorch
  EMBER_ARG(int64_t, dim);
};

/// GLU: a * sigmoid(b), where a and b are the halves of the input along `dim`.
template <class P = DefaultPolicy>
class BasicGLUImpl : public Cloneable<BasicGLUImpl<P>, P> {
 public:
  explicit BasicGLUImpl(int64_t dim = -1) : Cloneable<BasicGLUImpl<P>, P>("GLU"), dim(dim) {}
  explicit BasicGLUImpl(const GLUOptions& o) : BasicGLUImpl(o.dim()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::glu(x, dim); }
  std::string extra_repr() const override { return EMBER_FORMAT("dim={}", dim); }
  int64_t dim;
};
using GLUImpl = BasicGLUImpl<>;
EMBER_MODULE(GLU);
template <class P = DefaultPolicy>
using BasicGLU = detail::PolicyHolder<P, GLU, BasicGLUImpl<P>>;

struct GELUOptions {
  EMBER_ARG(std::string, approximate) = "none";  ///< none or tanh (kNone, kTanh)
};

/// GELU, exact (approximate = "none") or with the tanh approximation.
template <class P = DefaultPolicy>
class BasicGELUImpl : public Cloneable<BasicGELUImpl<P>, P> {
 public:
  explicit BasicGELUImpl(std::string approximate = "none")
      : Cloneable<BasicGELUImpl<P>, P>("GELU"), approximate(std::move(approximate)) {
    EMBER_CHECK(this->approximate == "none" || this->approximate == "tanh",
                "[GELU] approximate must be 'none' or 'tanh', got '{}'", this->approximate);
  }
  explicit BasicGELUImpl(const GELUOptions& o) : BasicGELUImpl(o.approximate()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::gelu(x, approximate); }
  std::string extra_repr() const override { return approximate == "none" ? "" : "approximate='tanh'"; }
  std::string approximate;
};
using GELUImpl = BasicGELUImpl<>;
EMBER_MODULE(GELU);
template <class P = DefaultPolicy>
using BasicGELU = detail::PolicyHolder<P, GELU, BasicGELUImpl<P>>;

struct SoftplusOptions {
  EMBER_ARG(double, beta) = 1.0;
  EMBER_ARG(double, threshold) = 20.0;
};

template <class P = DefaultPolicy>
class BasicSoftplusImpl : public Cloneable<BasicSoftplusImpl<P>, P> {
 public:
  explicit BasicSoftplusImpl(double beta = 1.0, double threshold = 20.0)
      : Cloneable<BasicSoftplusImpl<P>, P>("Softplus"), beta(beta), threshold(threshold) {}
  explicit BasicSoftplusImpl(const SoftplusOptions& o) : BasicSoftplusImpl(o.beta(), o.threshold()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::softplus(x, beta, threshold); }
  std::string extra_repr() const override { return EMBER_FORMAT("beta={}, threshold={}", beta, threshold); }
  double beta, threshold;
};
using SoftplusImpl = BasicSoftplusImpl<>;
EMBER_MODULE(Softplus);
template <class P = DefaultPolicy>
using BasicSoftplus = detail::PolicyHolder<P, Softplus, BasicSoftplusImpl<P>>;

struct HardtanhOptions {
  EMBER_ARG(double, min_val) = -1.0;
  EMBER_ARG(double, max_val) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};

template <class P = DefaultPolicy>
class BasicHardtanhImpl : public Cloneable<BasicHardtanhImpl<P>, P> {
 public:
  explicit BasicHardtanhImpl(double min_val = -1.0, double max_val = 1.0)
      : Cloneable<BasicHardtanhImpl<P>, P>("Hardtanh"), min_val(min_val), max_val(max_val) {
    EMBER_CHECK(min_val < max_val, "[Hardtanh] min_val ({}) must be below max_val ({})", min_val, max_val);
  }
  explicit BasicHardtanhImpl(const HardtanhOptions& o) : BasicHardtanhImpl(o.min_val(), o.max_val()) {
    inplace = o.inplace();
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    if (inplace) return BasicTensor<P>(x).hardtanh_(min_val, max_val);
    return F::hardtanh(x, min_val, max_val);
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("min_val={}, max_val={}{}", min_val, max_val, inplace ? ", inplace=True" : "");
  }
  double min_val, max_val;
  bool inplace = false;
};
using HardtanhImpl = BasicHardtanhImpl<>;
EMBER_MODULE(Hardtanh);
template <class P = DefaultPolicy>
using BasicHardtanh = detail::PolicyHolder<P, Hardtanh, BasicHardtanhImpl<P>>;

/// The dim of Softmax, LogSoftmax and Softmin.
struct SoftmaxOptions {
  explicit SoftmaxOptions(int64_t dim) : dim_(dim) {}
  EMBER_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;
using SoftminOptions = SoftmaxOptions;

/// Softmax / LogSoftmax over `dim`.
template <class P = DefaultPolicy>
class BasicSoftmaxImpl : public Cloneable<BasicSoftmaxImpl<P>, P> {
 public:
  explicit BasicSoftmaxImpl(int64_t dim) : Cloneable<BasicSoftmaxImpl<P>, P>("Softmax"), dim(dim) {}
  explicit BasicSoftmaxImpl(const SoftmaxOptions& o) : BasicSoftmaxImpl(o.dim()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::softmax(x, dim); }
  std::string extra_repr() const override { return EMBER_FORMAT("dim={}", dim); }
  int64_t dim;
};
using SoftmaxImpl = BasicSoftmaxImpl<>;
EMBER_MODULE(Softmax);
template <class P = DefaultPolicy>
using BasicSoftmax = detail::PolicyHolder<P, Softmax, BasicSoftmaxImpl<P>>;

template <class P = DefaultPolicy>
class BasicLogSoftmaxImpl : public Cloneable<BasicLogSoftmaxImpl<P>, P> {
 public:
  explicit BasicLogSoftmaxImpl(int64_t dim) : Cloneable<BasicLogSoftmaxImpl<P>, P>("LogSoftmax"), dim(dim) {}
  explicit BasicLogSoftmaxImpl(const SoftmaxOptions& o) : BasicLogSoftmaxImpl(o.dim()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::log_softmax(x, dim); }
  std::string extra_repr() const override { return EMBER_FORMAT("dim={}", dim); }
  int64_t dim;
};
using LogSoftmaxImpl = BasicLogSoftmaxImpl<>;
EMBER_MODULE(LogSoftmax);
template <class P = DefaultPolicy>
using BasicLogSoftmax = detail::PolicyHolder<P, LogSoftmax, BasicLogSoftmaxImpl<P>>;

/// Softmin over `dim`: softmax(-x).
template <class P = DefaultPolicy>
class BasicSoftminImpl : public Cloneable<BasicSoftminImpl<P>, P> {
 public:
  explicit BasicSoftminImpl(int64_t dim) : Cloneable<BasicSoftminImpl<P>, P>("Softmin"), dim(dim) {}
  explicit BasicSoftminImpl(const SoftmaxOptions& o) : BasicSoftminImpl(o.dim()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::softmin(x, dim); }
  std::string extra_repr() const override { return EMBER_FORMAT("dim={}", dim); }
  int64_t dim;
};
using SoftminImpl = BasicSoftminImpl<>;
EMBER_MODULE(Softmin);
template <class P = DefaultPolicy>
using BasicSoftmin = detail::PolicyHolder<P, Softmin, BasicSoftminImpl<P>>;

struct RReLUOptions {
  EMBER_ARG(double, lower) = 1.0 / 8;
  EMBER_ARG(double, upper) = 1.0 / 3;
  EMBER_ARG(bool, inplace) = false;
};

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
  explicit BasicRReLUImpl(const RReLUOptions& o) : BasicRReLUImpl(o.lower(), o.upper()) { inplace = o.inplace(); }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::rrelu(x, lower, upper, this->is_training(), inplace); }
  std::string extra_repr() const override {
    return EMBER_FORMAT("lower={}, upper={}{}", lower, upper, inplace ? ", inplace=True" : "");
  }
  double lower, upper;
  bool inplace = false;
};
using RReLUImpl = BasicRReLUImpl<>;
EMBER_MODULE(RReLU);
template <class P = DefaultPolicy>
using BasicRReLU = detail::PolicyHolder<P, RReLU, BasicRReLUImpl<P>>;

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
template <class P = DefaultPolicy>
using BasicSoftmax2d = detail::PolicyHolder<P, Softmax2d, BasicSoftmax2dImpl<P>>;

}  // namespace ember::nn
