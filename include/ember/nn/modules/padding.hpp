#pragma once
/// The padding layers: ReflectionPad, ReplicationPad, CircularPad, ZeroPad and ConstantPad,
/// each 1d, 2d or 3d (padding the last 1, 2 or 3 dims of a batched or unbatched input), as
/// PyTorch's: ReflectionPad2d(ReflectionPad2dOptions({left, right, top, bottom})), or one
/// number for every side. Each is F::pad with its mode.

#include <ember/nn/module.hpp>
#include <ember/nn/modules/conv.hpp>
#include <ember/nn/options.hpp>

#include <string>
#include <vector>

namespace ember::nn {

/// The amount on each side (one number for all, or two per padded dim, last dim first:
/// {left, right, top, bottom, front, back}) and, for ConstantPad, the fill value.
struct PaddingOptions {
  PaddingOptions(int64_t padding) : padding_(padding) {}  // NOLINT: implicit, as libtorch's
  PaddingOptions(IntArgs padding) : padding_(std::move(padding)) {}  // NOLINT
  PaddingOptions(std::initializer_list<int64_t> padding) : padding_(padding) {}  // NOLINT
  /// ConstantPad's (padding, value), as libtorch's ConstantPad2dOptions(padding, value).
  PaddingOptions(IntArgs padding, double value) : padding_(std::move(padding)), value_(value) {}
  EMBER_ARG(IntArgs, padding);
  EMBER_ARG(double, value) = 0.0;  ///< ConstantPad only
};
// libtorch's per-layer names.
using ReflectionPad1dOptions = PaddingOptions;
using ReflectionPad2dOptions = PaddingOptions;
using ReflectionPad3dOptions = PaddingOptions;
using ReplicationPad1dOptions = PaddingOptions;
using ReplicationPad2dOptions = PaddingOptions;
using ReplicationPad3dOptions = PaddingOptions;
using CircularPad1dOptions = PaddingOptions;
using CircularPad2dOptions = PaddingOptions;
using CircularPad3dOptions = PaddingOptions;
using ZeroPad1dOptions = PaddingOptions;
using ZeroPad2dOptions = PaddingOptions;
using ZeroPad3dOptions = PaddingOptions;
using ConstantPad1dOptions = PaddingOptions;
using ConstantPad2dOptions = PaddingOptions;
using ConstantPad3dOptions = PaddingOptions;

/// What a padding layer fills the border with.
enum class PadKind { Reflection, Replication, Circular, Zero, Constant };

namespace detail {
template <PadKind K, int ND>
const char* pad_layer_name() {
  switch (K) {
    case PadKind::Reflection: return nd_name<ND>({"ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d"});
    case PadKind::Replication: return nd_name<ND>({"ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d"});
    case PadKind::Circular: return nd_name<ND>({"CircularPad1d", "CircularPad2d", "CircularPad3d"});
    case PadKind::Zero: return nd_name<ND>({"ZeroPad1d", "ZeroPad2d", "ZeroPad3d"});
    default: return nd_name<ND>({"ConstantPad1d", "ConstantPad2d", "ConstantPad3d"});
  }
}
constexpr const char* pad_mode(PadKind k) {
  return k == PadKind::Reflection ? "reflect"
         : k == PadKind::Replication ? "replicate"
         : k == PadKind::Circular    ? "circular"
                                     : "constant";
}
}  // namespace detail

/// Pads the last ND dims of an (N, C, *ND) or (C, *ND) input.
template <PadKind K, int ND, class P = DefaultPolicy>
class BasicPadImpl : public Cloneable<BasicPadImpl<K, ND, P>, P> {
 public:
  explicit BasicPadImpl(const PaddingOptions& o)
      : Cloneable<BasicPadImpl<K, ND, P>, P>(detail::pad_layer_name<K, ND>()), value(o.value()) {
    const char* op = this->name().c_str();
    const IntArgs& p = o.padding();
    EMBER_CHECK(p.size() == 1 || p.size() == static_cast<size_t>(2 * ND),
                "[{}] padding needs 1 or {} values (two per padded dim, last dim first), got {}", op, 2 * ND, p.size());
    padding.assign(static_cast<size_t>(2 * ND), p[0]);
    if (p.size() != 1) padding.assign(p.begin(), p.end());
    EMBER_CHECK(K == PadKind::Constant || value == 0.0,
                "[{}] fills its border from the input and takes no value, got {}", op, value);
  }
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    EMBER_CHECK(x.dim() == ND + 1 || x.dim() == ND + 2,
                "[{}] expects a {}-d or {}-d input (unbatched or batched), got shape {}", this->name(), ND + 1, ND + 2,
                x.sizes());
    return ember::pad(x, padding, detail::pad_mode(K), value);
  }
  std::string extra_repr() const override {
    std::string s = "(";
    for (size_t i = 0; i < padding.size(); ++i) s += EMBER_FORMAT("{}{}", i ? ", " : "", padding[i]);
    s += ")";
    return K == PadKind::Constant ? EMBER_FORMAT("padding={}, value={}", s, value) : s;
  }
  std::vector<int64_t> padding;  ///< 2 x ND values, last dim first
  double value;                  ///< the fill (ConstantPad; 0 otherwise)
};

#define EMBER_PAD_LAYERS(Kind)                                                                        \
  using Kind##Pad1dImpl = BasicPadImpl<PadKind::Kind, 1>;                                             \
  using Kind##Pad2dImpl = BasicPadImpl<PadKind::Kind, 2>;                                             \
  using Kind##Pad3dImpl = BasicPadImpl<PadKind::Kind, 3>;                                             \
  EMBER_MODULE(Kind##Pad1d);                                                                          \
  EMBER_MODULE(Kind##Pad2d);                                                                          \
  EMBER_MODULE(Kind##Pad3d);                                                                          \
  template <class P = DefaultPolicy>                                                                  \
  using Basic##Kind##Pad1d = detail::PolicyHolder<P, Kind##Pad1d, BasicPadImpl<PadKind::Kind, 1, P>>; \
  template <class P = DefaultPolicy>                                                                  \
  using Basic##Kind##Pad2d = detail::PolicyHolder<P, Kind##Pad2d, BasicPadImpl<PadKind::Kind, 2, P>>; \
  template <class P = DefaultPolicy>                                                                  \
  using Basic##Kind##Pad3d = detail::PolicyHolder<P, Kind##Pad3d, BasicPadImpl<PadKind::Kind, 3, P>>
EMBER_PAD_LAYERS(Reflection);
EMBER_PAD_LAYERS(Replication);
EMBER_PAD_LAYERS(Circular);
EMBER_PAD_LAYERS(Zero);
EMBER_PAD_LAYERS(Constant);
#undef EMBER_PAD_LAYERS

}  // namespace ember::nn
