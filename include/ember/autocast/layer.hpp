#pragma once
/// The Autocast layer of the policy chain (the state and the guard: autocast/autocast_mode.hpp).
/// It sits above Autograd, so the casts it makes are recorded and gradients flow back through
/// them in the parameters' own dtypes. Ops outside its two lists compile to a plain forward,
/// and a listed op outside a guard costs one thread-local load.
///
/// - Lowered (run in the autocast dtype): ops::Matmul, which is every matrix product, Linear's
///   and the convolutions' GEMMs included. Its f32, f16 and bf16 CPU operands are cast (f64
///   ones are not, as in PyTorch).
/// - Run in f32: softmax and log_softmax (so losses are computed from f32 log-probabilities),
///   and the ops whose CPU kernels are f32/f64 only, which a bf16 activation would otherwise
///   reach under autocast: the fused attention (multi-head attention's packed projection is
///   a Linear, hence bf16), im2col/col2im, max pooling and the direct, depthwise and Winograd
///   convolutions (after a convolution without bias, whose output is its GEMM's). Their
///   f16/bf16 CPU inputs are cast to f32. nn::functional::layer_norm and grid_sample run in
///   f32 under a guard (they cast bf16 inputs and parameters themselves: their checks would
///   otherwise refuse the mix), and affine_grid makes an f32 grid from a bf16 theta. scaled_dot_product_attention called with bf16 tensors takes its composite
///   form: bf16 products, an f32 softmax, a bf16 result. BatchNorm is left alone: it updates
///   its running statistics in place, and a cast copy would lose the update.
/// - Kept f32 by the functions that use them internally (a local AutocastGuard(false)):
///   Winograd's weight transform, adaptive average pooling's averaging products and
///   affine_grid's coordinates: products that are part of an f32 algorithm, not model math.

#include <ember/autocast/autocast_mode.hpp>
#include <ember/autograd/grad_mode.hpp>
#include <ember/ops/attention_op.hpp>
#include <ember/ops/conv_ops.hpp>
#include <ember/ops/depthwise_conv_ops.hpp>
#include <ember/ops/direct_conv_ops.hpp>
#include <ember/ops/norm_ops.hpp>
#include <ember/ops/reduction_ops.hpp>
#include <ember/ops/winograd_ops.hpp>

#include <type_traits>
#include <utility>

namespace ember::autocast {

namespace detail {

using ember::detail::TensorImpl;
using CastRef = ember::detail::Ref<TensorImpl>;

template <class Op>
inline constexpr bool kLowered = std::is_same_v<Op, ops::Matmul>;
template <class Op, class... List>
inline constexpr bool kOneOf = (std::is_same_v<Op, List>|| ...);
template <class Op>
inline constexpr bool kFloat32 =
    kOneOf<Op, ops::Softmax, ops::Attention, ops::Im2Col, ops::Col2Im, ops::MaxPool, ops::DirectConv,
           ops::DepthwiseConv, ops::WinogradConv, ops::WinogradInput>;

/// A cast of `src` made under this guard with grad mode off, or null (src/autocast.cpp). Only
/// parameters (leaves that require grad) are cached, and an entry is dropped once `src` was
/// written in place, or given other storage, geometry or dtype, since.
const TensorImpl* find_cast(const TensorImpl& src, DType dtype);
void keep_cast(const TensorImpl& src, const CastRef& cast);
/// Whether src is a parameter whose casts may be cached (a leaf that requires grad).
bool cacheable(const TensorImpl& src);

/// Maps an op's arguments: tensors that need a cast are replaced by casts held here (through
/// the rest of the chain, Next, so that Autograd records them); everything else passes as is.
template <class Next>
class ArgCaster {
 public:
  static constexpr int kMaxCasts = 5;  // the most tensor arguments of a listed op (attention: 4)
  ArgCaster(DType lowered, bool lower) : lowered_(lowered), lower_(lower) {}

  template <class T>
  decltype(auto) operator()(T&& x) {
    using D = std::remove_cvref_t<T>;
    // Every tensor argument of a listed op is an input (none writes into an argument).
    if constexpr (std::is_same_v<D, TensorImpl>) {
      return static_cast<const TensorImpl&>(adapt(x));
    } else if constexpr (std::is_same_v<D, const TensorImpl*> || std::is_same_v<D, TensorImpl*>) {
      return x ? static_cast<const TensorImpl*>(&adapt(*x)) : static_cast<const TensorImpl*>(nullptr);
    } else {
      return std::forward<T>(x);
    }
  }

 private:
  const TensorImpl& adapt(const TensorImpl& x) {
    if (x.device().type() != DeviceType::Cpu) return x;
    const DType to = target(x.dtype);
    if (to == x.dtype) return x;
    const bool cache = lower_ && !autograd::GradMode::is_enabled() && cacheable(x);
    if (cache)
      if (const TensorImpl* hit = find_cast(x, to)) return *hit;
    CastRef& slot = held_[count_++];
    slot = Next::call(ops::To{to, x.device()}, x);
    if (cache) keep_cast(x, slot);
    return *slot;
  }
  DType target(DType t) const {
    if (lower_) return (t == DType::F32 || is_reduced_float(t)) ? lowered_ : t;
    return is_reduced_float(t) ? DType::F32 : t;
  }

  DType lowered_;
  bool lower_;
  CastRef held_[kMaxCasts];
  int count_ = 0;
};

}  // namespace detail

struct Autocast {
  template <class P, class Next>
  struct Impl {
    template <class Op, class... A>
    static decltype(auto) call(const Op& op, A&&... a) {
      if constexpr (detail::kLowered<Op> || detail::kFloat32<Op>) {
        static_assert(sizeof...(A) <= detail::ArgCaster<Next>::kMaxCasts, "more tensor arguments than casts held");
        if (EMBER_UNLIKELY(is_enabled())) {
          detail::ArgCaster<Next> cast(dtype(), detail::kLowered<Op>);
          return Next::call(op, cast(std::forward<A>(a))...);
        }
      }
      return Next::call(op, std::forward<A>(a)...);
    }
  };
};

}  // namespace ember::autocast
