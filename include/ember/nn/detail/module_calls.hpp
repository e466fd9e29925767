#pragma once
/// How AnyModule and Sequential call, and clone, a module whose type they knew only when it
/// was added: one table of plain functions per module type (ModuleCalls), made at compile time
/// from the type's forward().
///
/// What a forward() may look like:
///  - one forward (not overloaded, not a template; a member function or a static one): its
///    own parameter types, each argument taken from an AnyValue; the arities its default
///    arguments allow are accepted too (forward(src, mask = {}) takes 1 or 2), with the
///    defaults the function declares;
///  - an overload set or a template: the one-Tensor call only (as Sequential took before it
///    took other signatures). Probing other arities would instantiate a template's body,
///    which is a hard error where that body does not compile for them (libtorch's AnyModule
///    takes no overloaded or template forward at all);
///  - forward_values(std::span<AnyValue>) -> AnyValue (Sequential): the values as they come.
/// The parameters a call passes are taken by value or const reference (a non-const reference
/// would write into a temporary), and forward must return a value. A module that breaks either
/// rule for every arity is refused at compile time (AnyModule's constructor, Sequential's
/// push_back and replace_module are constrained on it).

#include <ember/core/error.hpp>
#include <ember/core/tensor.hpp>
#include <ember/nn/any_value.hpp>

#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ember::nn {

template <class P>
class BasicModule;

namespace detail {

/// Whether M::clone() makes an M: M declares its own clone() (the member pointer's class is
/// M itself), or is nn::Cloneable<M>. A class derived from a module without either clones as
/// its base (containers refuse to clone it as itself).
template <class C, class F>
C member_class(F C::*);  // the class that declares a member (unevaluated use only)
template <class M>
constexpr bool clones_as_itself() {
  if constexpr (requires { &M::clone; }) {
    if constexpr (std::is_same_v<decltype(member_class(&M::clone)), M>) return true;
  }
  if constexpr (requires { typename M::cloned_type; }) return std::is_same_v<typename M::cloned_type, M>;
  return false;
}

template <class P>
struct ModuleCalls {
  using TensorT = BasicTensor<P>;
  /// forward(args...): the arguments may be moved from or converted in place. `owner` and
  /// `position` name the caller in errors ("AnyModule", or "Sequential" and the index).
  AnyValue (*call)(BasicModule<P>* m, std::span<AnyValue> args, const char* owner, int64_t position);
  /// forward(const Tensor&) with a Tensor result, without AnyValues; nullptr where forward
  /// does not take one Tensor or does not return one.
  TensorT (*tensor_call)(BasicModule<P>* m, const TensorT& x);
  bool clones_as_itself;  ///< module->clone() makes the type `call` casts to
};

// ---- forward()'s signature ---------------------------------------------------------------
template <class F>
struct ForwardSignature {
  static constexpr bool known = false;
};
template <class R, class... A>
struct KnownSignature {
  static constexpr bool known = true;
  using Result = R;
  using Args = std::tuple<A...>;
};
template <class R, class... A>
struct ForwardSignature<R (*)(A...)> : KnownSignature<R, A...> {};  // a static forward
template <class R, class... A>
struct ForwardSignature<R (*)(A...) noexcept> : KnownSignature<R, A...> {};
// Member functions: every cv-, ref- and noexcept-qualification a forward may carry.
#define EMBER_DETAIL_FORWARD_SIGNATURE(QUALIFIERS) \
  template <class R, class C, class... A>          \
  struct ForwardSignature<R (C::*)(A...) QUALIFIERS> : KnownSignature<R, A...> {};
EMBER_DETAIL_FORWARD_SIGNATURE()
EMBER_DETAIL_FORWARD_SIGNATURE(const)
EMBER_DETAIL_FORWARD_SIGNATURE(&)
EMBER_DETAIL_FORWARD_SIGNATURE(const&)
EMBER_DETAIL_FORWARD_SIGNATURE(noexcept)
EMBER_DETAIL_FORWARD_SIGNATURE(const noexcept)
EMBER_DETAIL_FORWARD_SIGNATURE(& noexcept)
EMBER_DETAIL_FORWARD_SIGNATURE(const& noexcept)
#undef EMBER_DETAIL_FORWARD_SIGNATURE

template <class M>
struct SingleForward {  // forward is one member function: its signature
  static constexpr bool value = false;
};
template <class M>
  requires requires { &M::forward; }
struct SingleForward<M> : ForwardSignature<decltype(&M::forward)> {
  static constexpr bool value = ForwardSignature<decltype(&M::forward)>::known;
};

/// Sequential and what derives from it without a forward of its own: a subclass's forward
/// hides Sequential's forward template (the second requirement), and is then what runs.
template <class M, class P>
concept ForwardsValues = requires(M& m, std::span<AnyValue> v, const BasicTensor<P>& x) {
  { m.forward_values(v) } -> std::same_as<AnyValue>;
  m.template forward<BasicTensor<P>>(x);
};

template <class A>
constexpr bool takes_argument_by_value_or_const_ref() {
  return !std::is_lvalue_reference_v<A> || std::is_const_v<std::remove_reference_t<A>>;
}

/// Whether forward takes the first K of its declared parameters (the rest defaulted).
template <class M, class Args, size_t... I>
constexpr bool callable_with_first(std::index_sequence<I...>) {
  return requires(M& m) { m.forward(std::declval<std::tuple_element_t<I, Args>>()...); };
}
template <class Args, size_t... I>
constexpr bool first_by_value_or_const_ref(std::index_sequence<I...>) {
  return (takes_argument_by_value_or_const_ref<std::tuple_element_t<I, Args>>() && ...);
}
template <class M, size_t K>
constexpr bool single_takes() {
  using Args = typename SingleForward<M>::Args;
  if constexpr (K > std::tuple_size_v<Args> || std::is_void_v<typename SingleForward<M>::Result>) return false;
  else if constexpr (!first_by_value_or_const_ref<Args>(std::make_index_sequence<K>())) return false;
  else return callable_with_first<M, Args>(std::make_index_sequence<K>());
}

/// An overload set or template forward: whether forward(const Tensor&) is callable and
/// returns a value.
template <class M, class T>
constexpr bool takes_one_tensor() {
  if constexpr (!requires(M& m, const T& x) { m.forward(x); }) return false;
  else return !std::is_void_v<decltype(std::declval<M&>().forward(std::declval<const T&>()))>;
}

template <class M, class P>
constexpr uint32_t forward_arities() {
  if constexpr (ForwardsValues<M, P>) {
    return ~uint32_t{0};
  } else if constexpr (SingleForward<M>::value) {
    constexpr size_t n = std::tuple_size_v<typename SingleForward<M>::Args>;
    static_assert(n < 32, "AnyModule: forward() has too many parameters");
    return []<size_t... K>(std::index_sequence<K...>) {
      return ((single_takes<M, K>() ? uint32_t{1} << K : 0u) | ...);
    }(std::make_index_sequence<n + 1>());
  } else {
    return takes_one_tensor<M, BasicTensor<P>>() ? 2u : 0u;
  }
}

/// Whether AnyModule and Sequential can call M (see the top of this file).
template <class M, class P>
concept CallableModule = std::is_base_of_v<BasicModule<P>, M> && (forward_arities<M, P>() != 0);

// ---- arguments ----------------------------------------------------------------------------
std::string describe_arities(uint32_t arities);  // "1", "1 or 2", "1 to 3" (src/nn/module_calls.cpp)
[[noreturn]] void fail_argument(const char* owner, int64_t position, const std::string& module, size_t index,
                                std::string_view want, std::string_view got);
[[noreturn]] void fail_arity(const char* owner, int64_t position, const std::string& module, uint32_t arities,
                             size_t got);

template <class T, class... U>
inline constexpr bool is_one_of = (std::is_same_v<T, U> || ...);
/// The number types an argument converts between (not bool, not the character types).
template <class T>
inline constexpr bool is_number = is_one_of<T, signed char, short, int, long, long long, unsigned char, unsigned short,
                                            unsigned, unsigned long, unsigned long long, float, double>;

/// The held number as D when it converts exactly (int 3 -> int64_t or double), or from a
/// floating type to another (double -> float rounds, as C++ does, but a finite value does not
/// become infinite); floating -> integer and bool <-> number never.
template <class D, class S>
bool convert_number(const AnyValue& v, std::optional<D>& out) {
  const S* s = v.try_get<S>();
  if (s == nullptr) return false;
  if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {
    if (std::in_range<D>(*s)) out = static_cast<D>(*s);
  } else if constexpr (std::is_integral_v<S>) {
    // Exact when the magnitude, less its trailing zero bits, fits D's mantissa.
    using U = std::make_unsigned_t<S>;
    U mag = *s < 0 ? static_cast<U>(U{0} - static_cast<U>(*s)) : static_cast<U>(*s);
    if (mag != 0) mag = static_cast<U>(mag >> std::countr_zero(mag));
    if (std::bit_width(mag) <= std::numeric_limits<D>::digits) out = static_cast<D>(*s);
  } else if constexpr (std::is_floating_point_v<D>) {
    const D d = static_cast<D>(*s);
    if (std::isfinite(d) == std::isfinite(*s)) out = d;
  }
  return true;  // S was the held type: stop looking
}
template <class D>
std::optional<D> number_as(const AnyValue& v) {
  std::optional<D> out;
  [&]<class... S>(std::type_identity<S>...) { (void)(convert_number<D, S>(v, out) || ...); }(
      std::type_identity<signed char>{}, std::type_identity<short>{}, std::type_identity<int>{},
      std::type_identity<long>{}, std::type_identity<long long>{}, std::type_identity<unsigned char>{},
      std::type_identity<unsigned short>{}, std::type_identity<unsigned>{}, std::type_identity<unsigned long>{},
      std::type_identity<unsigned long long>{}, std::type_identity<float>{}, std::type_identity<double>{});
  return out;
}

/// Argument `index` as a D: the held D itself, or a number or C string converted in place.
template <class D, class P>
D& argument_as(std::span<AnyValue> args, size_t index, BasicModule<P>* m, const char* owner, int64_t position) {
  AnyValue& v = args[index];
  if (D* p = v.try_get<D>()) return *p;
  if constexpr (is_number<D>) {
    if (std::optional<D> n = number_as<D>(v)) {
      v = AnyValue(*n);
      return *v.try_get<D>();
    }
  } else if constexpr (std::is_same_v<D, std::string> || std::is_same_v<D, std::string_view>) {
    const char* const* s = v.try_get<const char*>();
    if (s == nullptr) {
      if (char* const* w = v.try_get<char*>()) s = const_cast<const char* const*>(w);
    }
    if (s != nullptr && *s != nullptr) {
      v = AnyValue(D(*s));  // a string_view of the caller's string, which outlives the call
      return *v.try_get<D>();
    }
  }
  fail_argument(owner, position, m->name(), index, type_name<D>(), v.type_name());
}

template <class R>
AnyValue result_value(R&& r) {
  return AnyValue(std::forward<R>(r));
}

template <class M, class P, size_t... I>
AnyValue call_single(BasicModule<P>* b, std::span<AnyValue> args, const char* owner, int64_t position,
                     std::index_sequence<I...>) {
  using Args = typename SingleForward<M>::Args;
  return result_value(static_cast<M*>(b)->forward(std::forward<std::tuple_element_t<I, Args>>(
      argument_as<std::remove_cvref_t<std::tuple_element_t<I, Args>>>(args, I, b, owner, position))...));
}
template <class M, class P, size_t... I>
AnyValue call_tensors(BasicModule<P>* b, std::span<AnyValue> args, const char* owner, int64_t position,
                      std::index_sequence<I...>) {
  return result_value(static_cast<M*>(b)->forward(
      std::as_const(argument_as<BasicTensor<P>>(args, I, b, owner, position))...));
}

template <class M>
constexpr size_t most_arguments() {
  if constexpr (SingleForward<M>::value) return std::tuple_size_v<typename SingleForward<M>::Args>;
  else return 1;
}

template <class M, class P>
AnyValue call_forward(BasicModule<P>* b, std::span<AnyValue> args, const char* owner, int64_t position) {
  if constexpr (ForwardsValues<M, P>) {
    return static_cast<M*>(b)->forward_values(args);
  } else {
    constexpr uint32_t arities = forward_arities<M, P>();
    constexpr size_t most = most_arguments<M>();
    std::optional<AnyValue> out;
    [&]<size_t... K>(std::index_sequence<K...>) {
      (void)((args.size() == K && ((arities >> K) & 1u) != 0 &&
              (out.emplace([&] {
                 if constexpr (((arities >> K) & 1u) == 0) return AnyValue(0);  // not reached
                 else if constexpr (SingleForward<M>::value)
                   return call_single<M>(b, args, owner, position, std::make_index_sequence<K>());
                 else return call_tensors<M>(b, args, owner, position, std::make_index_sequence<K>());
               }()),
               true)) ||
             ...);
    }(std::make_index_sequence<most + 1>());
    if (!out) fail_arity(owner, position, b->name(), arities, args.size());
    return std::move(*out);
  }
}

template <class M, class P>
BasicTensor<P> call_tensor(BasicModule<P>* b, const BasicTensor<P>& x) {
  return static_cast<M*>(b)->forward(x);
}

/// Whether forward(const Tensor&) is among the accepted calls and returns a Tensor.
template <class M, class P>
constexpr bool takes_and_returns_tensor() {
  using T = BasicTensor<P>;
  if constexpr (!requires(M& m, const T& x) {
                  { m.forward(x) } -> std::convertible_to<T>;
                }) {
    return false;
  } else if constexpr (ForwardsValues<M, P> || !SingleForward<M>::value) {
    return true;
  } else {
    using Args = typename SingleForward<M>::Args;
    if constexpr (std::tuple_size_v<Args> == 0) return false;
    else return std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, Args>>, T> && ((forward_arities<M, P>() & 2u) != 0);
  }
}

template <class M, class P>
constexpr auto tensor_call_for() -> BasicTensor<P> (*)(BasicModule<P>*, const BasicTensor<P>&) {
  if constexpr (takes_and_returns_tensor<M, P>()) return &call_tensor<M, P>;
  else return nullptr;
}

template <class M, class P>
  requires CallableModule<M, P>
inline constexpr ModuleCalls<P> module_calls{
    &call_forward<M, P>,
    tensor_call_for<M, P>(),
    clones_as_itself<M>(),
};

}  // namespace detail
}  // namespace ember::nn
