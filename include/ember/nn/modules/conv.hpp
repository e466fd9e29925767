#pragma once
/// Layers over 1, 2 or 3 spatial dims: Conv, ConvTranspose, MaxPool, AvgPool, LPPool, AdaptiveAvgPool,
/// AdaptiveMaxPool, MaxUnpool, BatchNorm and InstanceNorm (1d/2d/3d each); GroupNorm, Upsample,
/// PixelShuffle, PixelUnshuffle.

#include <ember/nn/functional_conv.hpp>
#include <ember/nn/functional_resample.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/module.hpp>
#include <ember/nn/options.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace ember::nn {

using F::IntArgs;
using F::OptionalIntArgs;

/// A layer's name by its number of spatial dims: nd_name<2>("MaxPool") is "MaxPool2d".
template <int ND>
const char* nd_name(const char* (&&names)[3]) {
  static_assert(ND >= 1 && ND <= 3, "layers have 1, 2 or 3 spatial dims");
  return names[ND - 1];
}

inline std::string repr_args(const IntArgs& v, int nd) {
  std::string s = "(";
  for (int d = 0; d < nd; ++d) s += EMBER_FORMAT("{}{}", d ? ", " : "", v.size() == 1 ? v[0] : v[d]);
  return s + (nd == 1 ? ",)" : ")");
}

struct ConvOptions : F::detail::ConvPaddingArg<ConvOptions> {
  ConvOptions(int64_t in_channels, int64_t out_channels, IntArgs kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(std::move(kernel_size)) {}
  EMBER_ARG(int64_t, in_channels);
  EMBER_ARG(int64_t, out_channels);
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, stride) = {1};
  EMBER_ARG(IntArgs, dilation) = {1};
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(std::string, padding_mode) = "zeros";  ///< zeros, reflect, replicate, circular
  // padding(numbers), padding(kSame / kValid), padding_str(): ConvPaddingArg.
};

/// Convolution over ND spatial dims with PyTorch's init (kaiming_uniform a = sqrt 5; bias
/// U(+-1/sqrt(fan_in))), padding modes and padding="same".
template <int ND, class P = DefaultPolicy>
class BasicConvImpl : public Cloneable<BasicConvImpl<ND, P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicConvImpl(int64_t in, int64_t out, IntArgs k) : BasicConvImpl(ConvOptions(in, out, std::move(k))) {}
  explicit BasicConvImpl(const ConvOptions& o)
      : Cloneable<BasicConvImpl<ND, P>, P>(ND == 1 ? "Conv1d" : ND == 2 ? "Conv2d" : "Conv3d"), options(o) {
    reset();
  }
  void reset() override {
    const char* op = this->name().c_str();
    EMBER_CHECK(options.groups() > 0 && options.in_channels() % options.groups() == 0 &&
                    options.out_channels() % options.groups() == 0,
                "[{}] groups={} must divide in_channels={} and out_channels={}", op, options.groups(),
                options.in_channels(), options.out_channels());
    F::detail::check_conv_padding(options.stride(), options.padding_str(), options.padding_mode(), ND, op);
    auto k = F::detail::expand_arg(options.kernel_size(), ND, op, "kernel_size");
    Shape ws{options.out_channels(), options.in_channels() / options.groups()};
    int64_t fan_in = options.in_channels() / options.groups();
    for (int d = 0; d < ND; ++d) ws.push_back(k[d]), fan_in *= k[d];
    weight = this->register_parameter("weight", empty<P>(ws));
    bias = this->register_parameter("bias", options.bias() ? empty<P>({options.out_channels()}) : TensorT());
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (bias.defined()) {
      double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
      init::uniform_(bias, -bound, bound);
    }
  }
  TensorT forward(const TensorT& x) {
    return F::detail::conv_padded(x, weight, bias, ND, options.stride(), options.padding(), options.padding_str(),
                                  options.padding_mode(), options.dilation(), options.groups(), this->name().c_str());
  }
  std::string extra_repr() const override {
    std::string s = EMBER_FORMAT("{}, {}, kernel_size={}, stride={}", options.in_channels(), options.out_channels(),
                                repr_args(options.kernel_size(), ND), repr_args(options.stride(), ND));
    if (!options.padding_str().empty()) s += EMBER_FORMAT(", padding={}", options.padding_str());
    else if (options.padding() != IntArgs{0}) s += EMBER_FORMAT(", padding={}", repr_args(options.padding(), ND));
    if (options.dilation() != IntArgs{1}) s += EMBER_FORMAT(", dilation={}", repr_args(options.dilation(), ND));
    if (options.groups() != 1) s += EMBER_FORMAT(", groups={}", options.groups());
    if (!options.bias()) s += ", bias=False";
    if (options.padding_mode() != "zeros") s += EMBER_FORMAT(", padding_mode={}", options.padding_mode());
    return s;
  }
  ConvOptions options;
  TensorT weight, bias;
};
using Conv1dImpl = BasicConvImpl<1>;
using Conv2dImpl = BasicConvImpl<2>;
using Conv3dImpl = BasicConvImpl<3>;
EMBER_MODULE(Conv1d);
template <class P = DefaultPolicy>
using BasicConv1d = detail::PolicyHolder<P, Conv1d, BasicConvImpl<1, P>>;
EMBER_MODULE(Conv2d);
template <class P = DefaultPolicy>
using BasicConv2d = detail::PolicyHolder<P, Conv2d, BasicConvImpl<2, P>>;
EMBER_MODULE(Conv3d);
template <class P = DefaultPolicy>
using BasicConv3d = detail::PolicyHolder<P, Conv3d, BasicConvImpl<3, P>>;
using Conv1dOptions = ConvOptions;
using Conv2dOptions = ConvOptions;
using Conv3dOptions = ConvOptions;

struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, IntArgs kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(std::move(kernel_size)) {}
  EMBER_ARG(int64_t, in_channels);
  EMBER_ARG(int64_t, out_channels);
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, stride) = {1};
  EMBER_ARG(IntArgs, padding) = {0};
  EMBER_ARG(IntArgs, output_padding) = {0};
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(IntArgs, dilation) = {1};
};

template <int ND, class P = DefaultPolicy>
class BasicConvTransposeImpl : public Cloneable<BasicConvTransposeImpl<ND, P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicConvTransposeImpl(int64_t in, int64_t out, IntArgs k)
      : BasicConvTransposeImpl(ConvTransposeOptions(in, out, std::move(k))) {}
  explicit BasicConvTransposeImpl(const ConvTransposeOptions& o)
      : Cloneable<BasicConvTransposeImpl<ND, P>, P>(
            nd_name<ND>({"ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"})), options(o) {
    reset();
  }
  void reset() override {
    const char* op = this->name().c_str();
    EMBER_CHECK(options.groups() > 0 && options.in_channels() % options.groups() == 0 &&
                    options.out_channels() % options.groups() == 0,
                "[{}] groups={} must divide in_channels={} and out_channels={}", op, options.groups(),
                options.in_channels(), options.out_channels());
    auto k = F::detail::expand_arg(options.kernel_size(), ND, op, "kernel_size");
    Shape ws{options.in_channels(), options.out_channels() / options.groups()};
    // PyTorch computes fan_in from dim 1 of the weight for transposed convolutions.
    int64_t fan_in = options.out_channels() / options.groups();
    for (int d = 0; d < ND; ++d) ws.push_back(k[d]), fan_in *= k[d];
    weight = this->register_parameter("weight", empty<P>(ws));
    bias = this->register_parameter("bias", options.bias() ? empty<P>({options.out_channels()}) : TensorT());
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (bias.defined()) {
      double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
      init::uniform_(bias, -bound, bound);
    }
  }
  /// With output_size (spatial sizes, or the whole output shape): the output_padding that
  /// gives those sizes instead of options.output_padding(), as PyTorch's forward(input,
  /// output_size) chooses it (a stride-2 decoder undoing a convolution of an odd size).
  /// libtorch's C++ version differs: it ignores the dilation and takes every input as batched.
  TensorT forward(const TensorT& x, const std::vector<int64_t>& output_size = {}) {
    const char* op = this->name().c_str();
    const F::IntArgs output_padding =
        output_size.empty() ? options.output_padding()
                            : F::detail::output_padding_for_size(x, output_size, ND, options.kernel_size(),
                                                                 options.stride(), options.padding(),
                                                                 options.dilation(), op);
    return F::conv_transpose_nd(x, weight, bias, ND, options.stride(), options.padding(), output_padding,
                                options.groups(), options.dilation(), op);
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("{}, {}, kernel_size={}, stride={}", options.in_channels(), options.out_channels(),
                       repr_args(options.kernel_size(), ND), repr_args(options.stride(), ND));
  }
  ConvTransposeOptions options;
  TensorT weight, bias;
};
using ConvTranspose1dOptions = ConvTransposeOptions;  // libtorch's names
using ConvTranspose2dOptions = ConvTransposeOptions;
using ConvTranspose3dOptions = ConvTransposeOptions;
using ConvTranspose1dImpl = BasicConvTransposeImpl<1>;
using ConvTranspose2dImpl = BasicConvTransposeImpl<2>;
using ConvTranspose3dImpl = BasicConvTransposeImpl<3>;
EMBER_MODULE(ConvTranspose1d);
template <class P = DefaultPolicy>
using BasicConvTranspose1d = detail::PolicyHolder<P, ConvTranspose1d, BasicConvTransposeImpl<1, P>>;
EMBER_MODULE(ConvTranspose2d);
template <class P = DefaultPolicy>
using BasicConvTranspose2d = detail::PolicyHolder<P, ConvTranspose2d, BasicConvTransposeImpl<2, P>>;
EMBER_MODULE(ConvTranspose3d);
template <class P = DefaultPolicy>
using BasicConvTranspose3d = detail::PolicyHolder<P, ConvTranspose3d, BasicConvTransposeImpl<3, P>>;

struct PoolOptions {
  PoolOptions(IntArgs kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT
  // PoolOptions({2, 2}): without this, {2} could also make a PoolOptions to copy (ambiguous).
  PoolOptions(std::initializer_list<int64_t> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, stride);  ///< empty: kernel_size
  EMBER_ARG(IntArgs, padding) = {0};
  EMBER_ARG(IntArgs, dilation) = {1};
  EMBER_ARG(bool, ceil_mode) = false;
  EMBER_ARG(bool, count_include_pad) = true;  ///< average pooling only
  /// AvgPool2d/3d only: divide each window's sum by this instead of its element count.
  EMBER_ARG(std::optional<int64_t>, divisor_override);
};

namespace detail {
/// Max pooling has no divisor: PoolOptions' (shared with average pooling) must be unset.
inline void check_no_divisor_override(const PoolOptions& o, const char* op) {
  EMBER_CHECK(!o.divisor_override(), "[{}] has no divisor_override (got {})", op, *o.divisor_override());
}
}  // namespace detail
// libtorch's per-layer names for the pooling options.
using MaxPool1dOptions = PoolOptions;
using MaxPool2dOptions = PoolOptions;
using MaxPool3dOptions = PoolOptions;
using AvgPool1dOptions = PoolOptions;
using AvgPool2dOptions = PoolOptions;
using AvgPool3dOptions = PoolOptions;

template <int ND, class P = DefaultPolicy>
class BasicMaxPoolImpl : public Cloneable<BasicMaxPoolImpl<ND, P>, P> {
 public:
  explicit BasicMaxPoolImpl(const PoolOptions& o)
      : Cloneable<BasicMaxPoolImpl<ND, P>, P>(nd_name<ND>({"MaxPool1d", "MaxPool2d", "MaxPool3d"})), options(o) {
    detail::check_no_divisor_override(options, this->name().c_str());
  }
  /// MaxPool2d(2), as in libtorch.
  explicit BasicMaxPoolImpl(IntArgs kernel_size) : BasicMaxPoolImpl(PoolOptions(std::move(kernel_size))) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    return F::detail::max_pool_nd(x, ND, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                                  options.ceil_mode(), false, this->name().c_str())
        .first;
  }
  /// (values, indices) as PyTorch's return_indices=True.
  std::pair<BasicTensor<P>, BasicTensor<P>> forward_with_indices(const BasicTensor<P>& x) {
    return F::detail::max_pool_nd(x, ND, options.kernel_size(), options.stride(), options.padding(),
                                  options.dilation(), options.ceil_mode(), true, this->name().c_str());
  }
  std::string extra_repr() const override {
    IntArgs st = options.stride().empty() ? options.kernel_size() : options.stride();
    return EMBER_FORMAT("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                       options.kernel_size().size() == 1 ? EMBER_FORMAT("{}", options.kernel_size()[0])
                                                         : repr_args(options.kernel_size(), ND),
                       st.size() == 1 ? EMBER_FORMAT("{}", st[0]) : repr_args(st, ND),
                       options.padding().size() == 1 ? EMBER_FORMAT("{}", options.padding()[0])
                                                     : repr_args(options.padding(), ND),
                       options.dilation().size() == 1 ? EMBER_FORMAT("{}", options.dilation()[0])
                                                      : repr_args(options.dilation(), ND),
                       options.ceil_mode() ? "True" : "False");
  }
  PoolOptions options;
};
using MaxPool1dImpl = BasicMaxPoolImpl<1>;
using MaxPool2dImpl = BasicMaxPoolImpl<2>;
using MaxPool3dImpl = BasicMaxPoolImpl<3>;
EMBER_MODULE(MaxPool1d);
template <class P = DefaultPolicy>
using BasicMaxPool1d = detail::PolicyHolder<P, MaxPool1d, BasicMaxPoolImpl<1, P>>;
EMBER_MODULE(MaxPool2d);
template <class P = DefaultPolicy>
using BasicMaxPool2d = detail::PolicyHolder<P, MaxPool2d, BasicMaxPoolImpl<2, P>>;
EMBER_MODULE(MaxPool3d);
template <class P = DefaultPolicy>
using BasicMaxPool3d = detail::PolicyHolder<P, MaxPool3d, BasicMaxPoolImpl<3, P>>;

template <int ND, class P = DefaultPolicy>
class BasicAvgPoolImpl : public Cloneable<BasicAvgPoolImpl<ND, P>, P> {
 public:
  explicit BasicAvgPoolImpl(const PoolOptions& o)
      : Cloneable<BasicAvgPoolImpl<ND, P>, P>(nd_name<ND>({"AvgPool1d", "AvgPool2d", "AvgPool3d"})), options(o) {}
  /// AvgPool2d(2), as in libtorch.
  explicit BasicAvgPoolImpl(IntArgs kernel_size) : BasicAvgPoolImpl(PoolOptions(std::move(kernel_size))) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    return F::detail::avg_pool_nd(x, ND, options.kernel_size(), options.stride(), options.padding(),
                                  options.ceil_mode(), options.count_include_pad(), this->name().c_str(),
                                  options.divisor_override());
  }
  PoolOptions options;
};
using AvgPool1dImpl = BasicAvgPoolImpl<1>;
using AvgPool2dImpl = BasicAvgPoolImpl<2>;
using AvgPool3dImpl = BasicAvgPoolImpl<3>;
EMBER_MODULE(AvgPool1d);
template <class P = DefaultPolicy>
using BasicAvgPool1d = detail::PolicyHolder<P, AvgPool1d, BasicAvgPoolImpl<1, P>>;
EMBER_MODULE(AvgPool2d);
template <class P = DefaultPolicy>
using BasicAvgPool2d = detail::PolicyHolder<P, AvgPool2d, BasicAvgPoolImpl<2, P>>;
EMBER_MODULE(AvgPool3d);
template <class P = DefaultPolicy>
using BasicAvgPool3d = detail::PolicyHolder<P, AvgPool3d, BasicAvgPoolImpl<3, P>>;

struct LPPoolOptions {
  LPPoolOptions(double norm_type, IntArgs kernel_size) : norm_type_(norm_type), kernel_size_(std::move(kernel_size)) {}
  EMBER_ARG(double, norm_type);
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, stride);  ///< empty: kernel_size
  EMBER_ARG(bool, ceil_mode) = false;
};
using LPPool1dOptions = LPPoolOptions;
using LPPool2dOptions = LPPoolOptions;
using LPPool3dOptions = LPPoolOptions;

/// LPPool1d/2d/3d: each window's norm_type-norm.
template <int ND, class P = DefaultPolicy>
class BasicLPPoolImpl : public Cloneable<BasicLPPoolImpl<ND, P>, P> {
 public:
  explicit BasicLPPoolImpl(const LPPoolOptions& o)
      : Cloneable<BasicLPPoolImpl<ND, P>, P>(nd_name<ND>({"LPPool1d", "LPPool2d", "LPPool3d"})), options(o) {
    (void)F::detail::geometry(ND, o.kernel_size(), o.stride(), {0}, {1}, this->name().c_str());
    EMBER_CHECK(o.norm_type() > 0 && std::isfinite(o.norm_type()), "[{}] norm_type must be positive and finite, got {}",
                this->name(), o.norm_type());
  }
  BasicLPPoolImpl(double norm_type, IntArgs kernel_size) : BasicLPPoolImpl(LPPoolOptions(norm_type, std::move(kernel_size))) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    return F::detail::lp_pool_nd(x, ND, options.norm_type(), options.kernel_size(), options.stride(),
                                 options.ceil_mode(), this->name().c_str());
  }
  std::string extra_repr() const override {
    auto arg = [](const IntArgs& v) { return v.size() == 1 ? EMBER_FORMAT("{}", v[0]) : repr_args(v, ND); };
    return EMBER_FORMAT("norm_type={}, kernel_size={}, stride={}, ceil_mode={}", options.norm_type(),
                       arg(options.kernel_size()), options.stride().empty() ? "None" : arg(options.stride()),
                       options.ceil_mode() ? "True" : "False");
  }
  LPPoolOptions options;
};
using LPPool1dImpl = BasicLPPoolImpl<1>;
using LPPool2dImpl = BasicLPPoolImpl<2>;
using LPPool3dImpl = BasicLPPoolImpl<3>;
EMBER_MODULE(LPPool1d);
template <class P = DefaultPolicy>
using BasicLPPool1d = detail::PolicyHolder<P, LPPool1d, BasicLPPoolImpl<1, P>>;
EMBER_MODULE(LPPool2d);
template <class P = DefaultPolicy>
using BasicLPPool2d = detail::PolicyHolder<P, LPPool2d, BasicLPPoolImpl<2, P>>;
EMBER_MODULE(LPPool3d);
template <class P = DefaultPolicy>
using BasicLPPool3d = detail::PolicyHolder<P, LPPool3d, BasicLPPoolImpl<3, P>>;

// libtorch's names for the adaptive pools' options: the output size.
using AdaptiveAvgPool1dOptions = int64_t;
using AdaptiveAvgPool2dOptions = OptionalIntArgs;  // {std::nullopt, 7}: keep the input's height
using AdaptiveAvgPool3dOptions = OptionalIntArgs;
using AdaptiveMaxPool1dOptions = int64_t;
using AdaptiveMaxPool2dOptions = OptionalIntArgs;
using AdaptiveMaxPool3dOptions = OptionalIntArgs;

/// AdaptiveAvgPool1d/2d/3d and AdaptiveMaxPool1d/2d/3d: pooling to a fixed output size (2-d
/// and 3-d: std::nullopt in a dim keeps the input's size there).
template <int ND, bool Max, class P = DefaultPolicy>
class BasicAdaptivePoolImpl : public Cloneable<BasicAdaptivePoolImpl<ND, Max, P>, P> {
 public:
  explicit BasicAdaptivePoolImpl(OptionalIntArgs out)
      : Cloneable<BasicAdaptivePoolImpl<ND, Max, P>, P>(
            Max ? nd_name<ND>({"AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"})
                : nd_name<ND>({"AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"})),
        output_size(std::move(out)) {
    const char* op = this->name().c_str();
    EMBER_CHECK(output_size.size() == 1 || static_cast<int>(output_size.size()) == ND,
                "[{}] output_size needs 1 or {} values, got {}", op, ND, output_size.size());
    for (const std::optional<int64_t>& v : output_size) {
      EMBER_CHECK(ND > 1 || v.has_value(), "[{}] output_size must be a number (None only for 2-d and 3-d pools)", op);
      EMBER_CHECK(!v || *v > 0, "[{}] output size must be positive, got {}", op, v.value_or(0));
    }
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    const char* op = this->name().c_str();
    if constexpr (Max) return F::detail::adaptive_max_pool_nd(x, ND, resolved(x), false, op).first;
    else if constexpr (ND == 1) return F::adaptive_avg_pool1d(x, *output_size[0]);
    else if constexpr (ND == 2) return F::adaptive_avg_pool2d(x, output_size);
    else return F::adaptive_avg_pool3d(x, output_size);
  }
  /// (values, indices) as PyTorch's return_indices=True: each maximum's flat position in its
  /// (N, C) plane (AdaptiveMaxPool only).
  std::pair<BasicTensor<P>, BasicTensor<P>> forward_with_indices(const BasicTensor<P>& x)
    requires Max
  {
    return F::detail::adaptive_max_pool_nd(x, ND, resolved(x), true, this->name().c_str());
  }
  std::string extra_repr() const override {
    auto one = [](const std::optional<int64_t>& v) { return v ? EMBER_FORMAT("{}", *v) : std::string("None"); };
    if (ND == 1) return EMBER_FORMAT("output_size={}", one(output_size[0]));
    std::string s = "output_size=(";
    for (int d = 0; d < ND; ++d) s += (d ? ", " : "") + one(output_size.size() == 1 ? output_size[0] : output_size[d]);
    return s + ")";
  }
  OptionalIntArgs output_size;

 private:
  IntArgs resolved(const BasicTensor<P>& x) const {
    return F::detail::resolve_output_size(output_size, x, ND, this->name().c_str());
  }
};
template <class P = DefaultPolicy>
using BasicAdaptiveAvgPool1dImpl = BasicAdaptivePoolImpl<1, false, P>;
template <class P = DefaultPolicy>
using BasicAdaptiveAvgPool2dImpl = BasicAdaptivePoolImpl<2, false, P>;
template <class P = DefaultPolicy>
using BasicAdaptiveAvgPool3dImpl = BasicAdaptivePoolImpl<3, false, P>;
template <class P = DefaultPolicy>
using BasicAdaptiveMaxPool1dImpl = BasicAdaptivePoolImpl<1, true, P>;
template <class P = DefaultPolicy>
using BasicAdaptiveMaxPool2dImpl = BasicAdaptivePoolImpl<2, true, P>;
template <class P = DefaultPolicy>
using BasicAdaptiveMaxPool3dImpl = BasicAdaptivePoolImpl<3, true, P>;
using AdaptiveAvgPool1dImpl = BasicAdaptiveAvgPool1dImpl<>;
using AdaptiveAvgPool2dImpl = BasicAdaptiveAvgPool2dImpl<>;
using AdaptiveAvgPool3dImpl = BasicAdaptiveAvgPool3dImpl<>;
using AdaptiveMaxPool1dImpl = BasicAdaptiveMaxPool1dImpl<>;
using AdaptiveMaxPool2dImpl = BasicAdaptiveMaxPool2dImpl<>;
using AdaptiveMaxPool3dImpl = BasicAdaptiveMaxPool3dImpl<>;
EMBER_MODULE(AdaptiveAvgPool1d);
template <class P = DefaultPolicy>
using BasicAdaptiveAvgPool1d = detail::PolicyHolder<P, AdaptiveAvgPool1d, BasicAdaptiveAvgPool1dImpl<P>>;
EMBER_MODULE(AdaptiveAvgPool2d);
template <class P = DefaultPolicy>
using BasicAdaptiveAvgPool2d = detail::PolicyHolder<P, AdaptiveAvgPool2d, BasicAdaptiveAvgPool2dImpl<P>>;
EMBER_MODULE(AdaptiveAvgPool3d);
template <class P = DefaultPolicy>
using BasicAdaptiveAvgPool3d = detail::PolicyHolder<P, AdaptiveAvgPool3d, BasicAdaptiveAvgPool3dImpl<P>>;
EMBER_MODULE(AdaptiveMaxPool1d);
template <class P = DefaultPolicy>
using BasicAdaptiveMaxPool1d = detail::PolicyHolder<P, AdaptiveMaxPool1d, BasicAdaptiveMaxPool1dImpl<P>>;
EMBER_MODULE(AdaptiveMaxPool2d);
template <class P = DefaultPolicy>
using BasicAdaptiveMaxPool2d = detail::PolicyHolder<P, AdaptiveMaxPool2d, BasicAdaptiveMaxPool2dImpl<P>>;
EMBER_MODULE(AdaptiveMaxPool3d);
template <class P = DefaultPolicy>
using BasicAdaptiveMaxPool3d = detail::PolicyHolder<P, AdaptiveMaxPool3d, BasicAdaptiveMaxPool3dImpl<P>>;

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  EMBER_ARG(int64_t, num_features);
  EMBER_ARG(double, eps) = 1e-5;
  /// std::nullopt: the running statistics are the cumulative average of all batches so far
  /// (PyTorch's momentum=None).
  EMBER_ARG(std::optional<double>, momentum) = 0.1;
  EMBER_ARG(bool, affine) = true;
  EMBER_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;  // libtorch's names
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

/// BatchNorm over (N, C[, L]) (ND = 1), (N, C, H, W) (ND = 2) or (N, C, D, H, W) (ND = 3): weight 1, bias 0,
/// running_mean 0, running_var 1, num_batches_tracked, as PyTorch.
template <int ND, class P = DefaultPolicy>
class BasicBatchNormImpl : public Cloneable<BasicBatchNormImpl<ND, P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicBatchNormImpl(const BatchNormOptions& o)
      : Cloneable<BasicBatchNormImpl<ND, P>, P>(nd_name<ND>({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d"})), options(o) {
    reset();
  }
  void reset() override {
    int64_t c = options.num_features();
    weight = this->register_parameter("weight", options.affine() ? ones<P>({c}) : TensorT());
    bias = this->register_parameter("bias", options.affine() ? zeros<P>({c}) : TensorT());
    if (options.track_running_stats()) {
      running_mean = this->register_buffer("running_mean", zeros<P>({c}));
      running_var = this->register_buffer("running_var", ones<P>({c}));
      num_batches_tracked = this->register_buffer("num_batches_tracked", zeros<P>({}, TensorOptions(DType::I64)));
    }
  }
  /// Running mean 0, running variance 1, num_batches_tracked 0 (PyTorch's
  /// reset_running_stats); nothing without running statistics.
  void reset_running_stats() {
    if (!options.track_running_stats()) return;
    ember::detail::NoGradGuardFor<P> ng;
    running_mean.zero_();
    running_var.fill_(1.0);
    num_batches_tracked.zero_();
  }
  TensorT forward(const TensorT& x) {
    const char* op = this->name().c_str();
    if (ND == 1)
      EMBER_CHECK(x.dim() == 2 || x.dim() == 3, "[{}] expects (N, C) or (N, C, L), got shape {}", op, x.sizes());
    else if (ND == 2)
      EMBER_CHECK(x.dim() == 4, "[{}] expects (N, C, H, W), got shape {}", op, x.sizes());
    else
      EMBER_CHECK(x.dim() == 5, "[{}] expects (N, C, D, H, W), got shape {}", op, x.sizes());
    EMBER_CHECK(x.size(1) == options.num_features(), "[{}] expects {} channels, got shape {}", op,
                options.num_features(), x.sizes());
    // Batch statistics when training, or always without running statistics.
    bool use_batch = this->is_training() || !options.track_running_stats();
    double factor = options.momentum().value_or(0.0);
    if (this->is_training() && options.track_running_stats()) {
      ember::detail::NoGradGuardFor<P> ng;
      num_batches_tracked.add_(int64_t{1});
      if (!options.momentum()) factor = 1.0 / static_cast<double>(num_batches_tracked.template item<int64_t>());
    }
    return F::batch_norm(x, running_mean, running_var, weight, bias, use_batch, factor, options.eps());
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("{}, eps={}, momentum={}, affine={}, track_running_stats={}", options.num_features(),
                       options.eps(), options.momentum() ? EMBER_FORMAT("{}", *options.momentum()) : "None",
                       options.affine() ? "True" : "False", options.track_running_stats() ? "True" : "False");
  }
  BatchNormOptions options;
  TensorT weight, bias, running_mean, running_var, num_batches_tracked;
};
using BatchNorm1dImpl = BasicBatchNormImpl<1>;
using BatchNorm2dImpl = BasicBatchNormImpl<2>;
using BatchNorm3dImpl = BasicBatchNormImpl<3>;
EMBER_MODULE(BatchNorm1d);
template <class P = DefaultPolicy>
using BasicBatchNorm1d = detail::PolicyHolder<P, BatchNorm1d, BasicBatchNormImpl<1, P>>;
EMBER_MODULE(BatchNorm2d);
template <class P = DefaultPolicy>
using BasicBatchNorm2d = detail::PolicyHolder<P, BatchNorm2d, BasicBatchNormImpl<2, P>>;
EMBER_MODULE(BatchNorm3d);
template <class P = DefaultPolicy>
using BasicBatchNorm3d = detail::PolicyHolder<P, BatchNorm3d, BasicBatchNormImpl<3, P>>;

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  EMBER_ARG(int64_t, num_groups);
  EMBER_ARG(int64_t, num_channels);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(bool, affine) = true;
};

template <class P = DefaultPolicy>
class BasicGroupNormImpl : public Cloneable<BasicGroupNormImpl<P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicGroupNormImpl(int64_t groups, int64_t channels, double eps = 1e-5, bool affine = true)
      : Cloneable<BasicGroupNormImpl<P>, P>("GroupNorm"), num_groups(groups), num_channels(channels), eps(eps),
        affine(affine) {
    EMBER_CHECK(groups > 0 && channels % groups == 0, "[GroupNorm] {} channels are not divisible into {} groups",
                channels, groups);
    reset();
  }
  explicit BasicGroupNormImpl(const GroupNormOptions& o)
      : BasicGroupNormImpl(o.num_groups(), o.num_channels(), o.eps(), o.affine()) {}
  void reset() override {
    weight = this->register_parameter("weight", affine ? ones<P>({num_channels}) : TensorT());
    bias = this->register_parameter("bias", affine ? zeros<P>({num_channels}) : TensorT());
  }
  TensorT forward(const TensorT& x) {
    EMBER_CHECK(x.dim() >= 2 && x.size(1) == num_channels, "[GroupNorm] expects (N, {}, ...), got shape {}",
                num_channels, x.sizes());
    return F::group_norm(x, num_groups, weight, bias, eps);
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("{}, {}, eps={}, affine={}", num_groups, num_channels, eps, affine ? "True" : "False");
  }
  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  TensorT weight, bias;
};
using GroupNormImpl = BasicGroupNormImpl<>;
EMBER_MODULE(GroupNorm);
template <class P = DefaultPolicy>
using BasicGroupNorm = detail::PolicyHolder<P, GroupNorm, BasicGroupNormImpl<P>>;

struct InstanceNormOptions {
  explicit InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  EMBER_ARG(int64_t, num_features);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(double, momentum) = 0.1;
  EMBER_ARG(bool, affine) = false;
  /// running_mean / running_var buffers, updated in training and used in eval mode
  EMBER_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

/// Normalises each (sample, channel) over its ND spatial dims: (N, C) + spatial, or unbatched
/// (C) + spatial. With track_running_stats, training updates running_mean / running_var
/// (batch averages of the instances' statistics, by momentum) and eval mode normalises by
/// them, as PyTorch's (num_batches_tracked is kept for state_dict compatibility; PyTorch's
/// InstanceNorm does not count either).
template <int ND, class P = DefaultPolicy>
class BasicInstanceNormImpl : public Cloneable<BasicInstanceNormImpl<ND, P>, P> {
 public:
  using TensorT = BasicTensor<P>;
  explicit BasicInstanceNormImpl(int64_t channels, double eps = 1e-5, bool affine = false)
      : BasicInstanceNormImpl(InstanceNormOptions(channels).eps(eps).affine(affine)) {}
  explicit BasicInstanceNormImpl(const InstanceNormOptions& o)
      : Cloneable<BasicInstanceNormImpl<ND, P>, P>(nd_name<ND>({"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"})),
        num_features(o.num_features()),
        eps(o.eps()),
        momentum(o.momentum()),
        affine(o.affine()),
        track_running_stats(o.track_running_stats()) {
    reset();
  }
  void reset() override {
    weight = this->register_parameter("weight", affine ? ones<P>({num_features}) : TensorT());
    bias = this->register_parameter("bias", affine ? zeros<P>({num_features}) : TensorT());
    if (track_running_stats) {
      running_mean = this->register_buffer("running_mean", zeros<P>({num_features}));
      running_var = this->register_buffer("running_var", ones<P>({num_features}));
      num_batches_tracked = this->register_buffer("num_batches_tracked", zeros<P>({}, TensorOptions(DType::I64)));
    }
  }
  TensorT forward(const TensorT& x) {
    if (x.dim() == ND + 1) return forward(x.unsqueeze(0)).squeeze(0);  // unbatched
    EMBER_CHECK(x.dim() == ND + 2 && x.size(1) == num_features,
                "[{}] expects (N, {}) + {} spatial dims or ({}) + {} spatial dims, got shape {}", this->name(),
                num_features, ND, num_features, ND, x.sizes());
    if (!track_running_stats) return F::instance_norm(x, weight, bias, eps);
    return F::detail::instance_norm_stats(x, running_mean, running_var, weight, bias, this->is_training(), momentum,
                                          eps);
  }
  std::string extra_repr() const override {
    return EMBER_FORMAT("{}, eps={}, momentum={}, affine={}, track_running_stats={}", num_features, eps, momentum,
                       affine ? "True" : "False", track_running_stats ? "True" : "False");
  }
  int64_t num_features;
  double eps, momentum;
  bool affine, track_running_stats;
  TensorT weight, bias, running_mean, running_var, num_batches_tracked;
};
template <class P = DefaultPolicy>
using BasicInstanceNorm2dImpl = BasicInstanceNormImpl<2, P>;
using InstanceNorm1dImpl = BasicInstanceNormImpl<1>;
using InstanceNorm2dImpl = BasicInstanceNormImpl<2>;
using InstanceNorm3dImpl = BasicInstanceNormImpl<3>;
EMBER_MODULE(InstanceNorm1d);
template <class P = DefaultPolicy>
using BasicInstanceNorm1d = detail::PolicyHolder<P, InstanceNorm1d, BasicInstanceNormImpl<1, P>>;
EMBER_MODULE(InstanceNorm2d);
template <class P = DefaultPolicy>
using BasicInstanceNorm2d = detail::PolicyHolder<P, InstanceNorm2d, BasicInstanceNormImpl<2, P>>;
EMBER_MODULE(InstanceNorm3d);
template <class P = DefaultPolicy>
using BasicInstanceNorm3d = detail::PolicyHolder<P, InstanceNorm3d, BasicInstanceNormImpl<3, P>>;

/// libtorch's Upsample options: a size (one value for every spatial dim, or one per dim) or
/// scale factors (likewise), mode nearest, linear, bilinear, bicubic or trilinear (kNearest,
/// kLinear, kBilinear, kBicubic, kTrilinear; the interpolating ones need 3-, 4- and 5-D input).
struct UpsampleOptions {
  EMBER_ARG(IntArgs, size);
  EMBER_ARG(std::vector<double>, scale_factor);
  EMBER_ARG(std::string, mode) = "nearest";
  EMBER_ARG(bool, align_corners) = false;
  /// With a scale_factor: true computes the coordinates from the output size (as if that size
  /// had been given), not from the factor, as F::interpolate's option.
  EMBER_ARG(bool, recompute_scale_factor) = false;
};

template <class P = DefaultPolicy>
class BasicUpsampleImpl : public Cloneable<BasicUpsampleImpl<P>, P> {
 public:
  /// size, or a scale factor for every spatial dim when size is empty (0: none given).
  BasicUpsampleImpl(IntArgs size, double scale_factor = 0.0, std::string mode = "nearest", bool align_corners = false)
      : BasicUpsampleImpl(UpsampleOptions()
                              .size(std::move(size))
                              .scale_factor(scale_factor == 0 ? std::vector<double>{} : std::vector<double>{scale_factor})
                              .mode(std::move(mode))
                              .align_corners(align_corners)) {}
  explicit BasicUpsampleImpl(const UpsampleOptions& o)
      : Cloneable<BasicUpsampleImpl<P>, P>("Upsample"),
        size(o.size()),
        scale_factor(o.scale_factor()),
        mode(o.mode()),
        align_corners(o.align_corners()),
        recompute_scale_factor(o.recompute_scale_factor()) {
    if (!scale_factor.empty()) F::detail::check_scale_factors(scale_factor, "Upsample");
    EMBER_CHECK(!size.empty() != !scale_factor.empty(),
                "[Upsample] needs either a size or a positive scale_factor (not both), got {} size values and {} "
                "scale factors",
                size.size(), scale_factor.size());
    EMBER_CHECK(!(recompute_scale_factor && !size.empty()),
                "[Upsample] recompute_scale_factor is not meaningful with an explicit size");
    EMBER_CHECK(mode == "nearest" || mode == "nearest-exact" || mode == "area" || F::detail::interpolating_mode(mode),
                "[Upsample] mode must be nearest, nearest-exact, area, linear, bilinear, bicubic or trilinear, got '{}'",
                mode);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    if (!size.empty()) return F::interpolate(x, size, mode, align_corners);
    return F::detail::interpolate_scaled(x, scale_factor, mode, align_corners, recompute_scale_factor, "Upsample");
  }
  std::string extra_repr() const override {
    std::string s;
    if (size.size() == 1) s = EMBER_FORMAT("size={}", size[0]);
    else if (!size.empty()) s = "size=" + repr_args(size, static_cast<int>(size.size()));
    else if (std::all_of(scale_factor.begin(), scale_factor.end(), [&](double f) { return f == scale_factor[0]; }))
      s = EMBER_FORMAT("scale_factor={}", scale_factor[0]);
    else
      for (size_t d = 0; d < scale_factor.size(); ++d)
        s += EMBER_FORMAT("{}{}", d ? ", " : "scale_factor=(", scale_factor[d]) + (d + 1 == scale_factor.size() ? ")" : "");
    return EMBER_FORMAT("{}, mode='{}'", s, mode);
  }
  IntArgs size;
  std::vector<double> scale_factor;  ///< used when size is empty
  std::string mode;
  bool align_corners;
  bool recompute_scale_factor;
};
using UpsampleImpl = BasicUpsampleImpl<>;
EMBER_MODULE(Upsample);
template <class P = DefaultPolicy>
using BasicUpsample = detail::PolicyHolder<P, Upsample, BasicUpsampleImpl<P>>;

struct PixelShuffleOptions {
  explicit PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  EMBER_ARG(int64_t, upscale_factor);
};

template <class P = DefaultPolicy>
class BasicPixelShuffleImpl : public Cloneable<BasicPixelShuffleImpl<P>, P> {
 public:
  explicit BasicPixelShuffleImpl(int64_t r) : Cloneable<BasicPixelShuffleImpl<P>, P>("PixelShuffle"), upscale_factor(r) {}
  explicit BasicPixelShuffleImpl(const PixelShuffleOptions& o) : BasicPixelShuffleImpl(o.upscale_factor()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::pixel_shuffle(x, upscale_factor); }
  std::string extra_repr() const override { return EMBER_FORMAT("upscale_factor={}", upscale_factor); }
  int64_t upscale_factor;
};
using PixelShuffleImpl = BasicPixelShuffleImpl<>;
EMBER_MODULE(PixelShuffle);
template <class P = DefaultPolicy>
using BasicPixelShuffle = detail::PolicyHolder<P, PixelShuffle, BasicPixelShuffleImpl<P>>;

struct PixelUnshuffleOptions {
  explicit PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}
  EMBER_ARG(int64_t, downscale_factor);
};

template <class P = DefaultPolicy>
class BasicPixelUnshuffleImpl : public Cloneable<BasicPixelUnshuffleImpl<P>, P> {
 public:
  explicit BasicPixelUnshuffleImpl(int64_t r)
      : Cloneable<BasicPixelUnshuffleImpl<P>, P>("PixelUnshuffle"), downscale_factor(r) {}
  explicit BasicPixelUnshuffleImpl(const PixelUnshuffleOptions& o) : BasicPixelUnshuffleImpl(o.downscale_factor()) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return F::pixel_unshuffle(x, downscale_factor); }
  std::string extra_repr() const override { return EMBER_FORMAT("downscale_factor={}", downscale_factor); }
  int64_t downscale_factor;
};
using PixelUnshuffleImpl = BasicPixelUnshuffleImpl<>;
EMBER_MODULE(PixelUnshuffle);
template <class P = DefaultPolicy>
using BasicPixelUnshuffle = detail::PolicyHolder<P, PixelUnshuffle, BasicPixelUnshuffleImpl<P>>;

struct MaxUnpoolOptions {
  MaxUnpoolOptions(IntArgs kernel_size) : kernel_size_(std::move(kernel_size)) {}  // NOLINT
  MaxUnpoolOptions(std::initializer_list<int64_t> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  EMBER_ARG(IntArgs, kernel_size);
  EMBER_ARG(IntArgs, stride);  ///< empty: kernel_size
  EMBER_ARG(IntArgs, padding) = {0};
};
// libtorch's per-layer names.
using MaxUnpool1dOptions = MaxUnpoolOptions;
using MaxUnpool2dOptions = MaxUnpoolOptions;
using MaxUnpool3dOptions = MaxUnpoolOptions;

/// MaxUnpool1d/2d/3d: a max pool's inverse, given the pool's output and indices; every
/// position that held no maximum is 0.
template <int ND, class P = DefaultPolicy>
class BasicMaxUnpoolImpl : public Cloneable<BasicMaxUnpoolImpl<ND, P>, P> {
 public:
  explicit BasicMaxUnpoolImpl(const MaxUnpoolOptions& o)
      : Cloneable<BasicMaxUnpoolImpl<ND, P>, P>(nd_name<ND>({"MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"})),
        options(o) {
    (void)F::detail::geometry(ND, options.kernel_size(), options.stride(), options.padding(), {1},
                              this->name().c_str());
  }
  explicit BasicMaxUnpoolImpl(IntArgs kernel_size) : BasicMaxUnpoolImpl(MaxUnpoolOptions(std::move(kernel_size))) {}
  void reset() override {}
  /// `output_size` (ND values, or ND + 2 of which the last ND count) picks among the sizes the
  /// pooled input may have had, as PyTorch's.
  BasicTensor<P> forward(const BasicTensor<P>& x, const BasicTensor<P>& indices, const IntArgs& output_size = {}) {
    return F::detail::max_unpool_nd(x, indices, ND, options.kernel_size(), options.stride(), options.padding(),
                                    output_size, this->name().c_str());
  }
  std::string extra_repr() const override {
    IntArgs st = options.stride().empty() ? options.kernel_size() : options.stride();
    return EMBER_FORMAT("kernel_size={}, stride={}, padding={}", repr_args(options.kernel_size(), ND),
                       repr_args(st, ND), repr_args(options.padding(), ND));
  }
  MaxUnpoolOptions options;
};
using MaxUnpool1dImpl = BasicMaxUnpoolImpl<1>;
using MaxUnpool2dImpl = BasicMaxUnpoolImpl<2>;
using MaxUnpool3dImpl = BasicMaxUnpoolImpl<3>;
EMBER_MODULE(MaxUnpool1d);
template <class P = DefaultPolicy>
using BasicMaxUnpool1d = detail::PolicyHolder<P, MaxUnpool1d, BasicMaxUnpoolImpl<1, P>>;
EMBER_MODULE(MaxUnpool2d);
template <class P = DefaultPolicy>
using BasicMaxUnpool2d = detail::PolicyHolder<P, MaxUnpool2d, BasicMaxUnpoolImpl<2, P>>;
EMBER_MODULE(MaxUnpool3d);
template <class P = DefaultPolicy>
using BasicMaxUnpool3d = detail::PolicyHolder<P, MaxUnpool3d, BasicMaxUnpoolImpl<3, P>>;

}  // namespace ember::nn
