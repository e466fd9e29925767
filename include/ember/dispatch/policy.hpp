#pragma once
/// Policy = Backends x Layers, resolved at compile time. See docs/design.md, "The dispatcher".
///
/// An op call enters the policy's layer chain: each layer is a class with a nested
/// `template <class P, class Next> struct Impl` (P: the whole policy, for layers that call
/// ops themselves, as Autograd's formulas do) whose static `call(op, args...)` does its work
/// and calls `Next::call(op, args...)`. The last link is the backend switch: it picks, from
/// the runtime device, one of the compiled-in backends (a `switch`, no function-pointer
/// table) and runs the op's kernel there. No virtual call, no lookup, no lock.

#include <ember/core/device.hpp>
#include <ember/core/error.hpp>

#include <type_traits>

namespace ember {

/// Backend tags. A backend provides the kernels of `ember::detail::kernels<Backend>`.
struct Cpu {
  static constexpr DeviceType device_type = DeviceType::Cpu;
  static constexpr const char* name = "cpu";
};
struct Cuda {
  static constexpr DeviceType device_type = DeviceType::Cuda;
  static constexpr const char* name = "cuda";
};

template <class B0, class... Bs>
struct Backends {
  using first = B0;
  static constexpr bool has(DeviceType t) { return B0::device_type == t || ((Bs::device_type == t) || ...); }
  static constexpr int count = 1 + sizeof...(Bs);
};

template <class... Ls>
struct Layers {};

template <class B, class L>
struct Policy {
  using backends = B;
  using layers = L;
};

namespace detail {

/// Calls f.template operator()<Backend>() for the backend serving `device`, or fails.
template <class BL, class F>
decltype(auto) visit_backend(Device device, const char* op, F&& f) {
  if constexpr (BL::count == 1) {
    using B = typename BL::first;
    if (EMBER_LIKELY(device.type() == B::device_type)) return f.template operator()<B>();
  } else {
    switch (device.type()) {
      case DeviceType::Cpu:
        if constexpr (BL::has(DeviceType::Cpu)) return f.template operator()<Cpu>();
        break;
      case DeviceType::Cuda:
        if constexpr (BL::has(DeviceType::Cuda)) return f.template operator()<Cuda>();
        break;
    }
  }
  EMBER_FAIL("[{}] device {} is not served by this policy's backends", op, device);
}

/// The last link: runs op.template run<Backend>(args...) on the backend of the op's device.
template <class BackendList>
struct BackendCall {
  template <class Op, class... A>
  static decltype(auto) call(const Op& op, A&&... a) {
    return op.template run<BackendList>(std::forward<A>(a)...);
  }
};

template <class P, class LayerList, class Last>
struct ChainOf;
template <class P, class Last>
struct ChainOf<P, Layers<>, Last> {
  using type = Last;
};
template <class P, class L, class... Rest, class Last>
struct ChainOf<P, Layers<L, Rest...>, Last> {
  using type = typename L::template Impl<P, typename ChainOf<P, Layers<Rest...>, Last>::type>;
};

/// The full chain of a policy: Layers..., then the backend switch.
template <class P>
using chain_t = typename ChainOf<P, typename P::layers, BackendCall<typename P::backends>>::type;

/// Does the policy's layer list contain layer L?
template <class L, class LayerList>
struct has_layer : std::false_type {};
template <class L, class... Ls>
struct has_layer<L, Layers<Ls...>> : std::bool_constant<(std::is_same_v<L, Ls> || ...)> {};

}  // namespace detail

/// Enters the layer chain of P with op descriptor `op`.
template <class P, class Op, class... A>
decltype(auto) dispatch(const Op& op, A&&... a) {
  return detail::chain_t<P>::call(op, std::forward<A>(a)...);
}

}  // namespace ember
