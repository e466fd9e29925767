#pragma once
/// nn::AnyValue: one value of any copyable type, as libtorch's torch::nn::AnyValue. It carries
/// the arguments and results of AnyModule::any_forward and the values that pass between the
/// modules of a Sequential whose modules take or return something other than one Tensor.
///
///   nn::AnyValue v(std::make_pair(h, c));
///   auto [h2, c2] = v.get<std::pair<Tensor, Tensor>>();   // ember::Error if it holds another type
///
/// The value lives in a std::any; the type's name, for error messages, comes from the
/// compiler's function signature.

#include <ember/core/error.hpp>

#include <any>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ember::nn {

namespace detail {
/// T's name as the compiler spells it ("long int", "std::pair<...>"), for messages only.
template <class T>
constexpr std::string_view type_name() {
#if defined(__clang__) || defined(__GNUC__)
  // GCC: "... type_name() [with T = long int; std::string_view = ...]"; clang: "... [T = long int]".
  constexpr std::string_view sig = __PRETTY_FUNCTION__;
  constexpr size_t start = sig.find("T = ") + 4;
  constexpr size_t semicolon = sig.find(';', start);
  constexpr size_t end = semicolon != std::string_view::npos ? semicolon : sig.rfind(']');
  return sig.substr(start, end - start);
#else
  return "a type without a printable name";
#endif
}
/// A type's name for a message: Ember's Tensor type (the default policy's) reads "Tensor"
/// wherever it appears, as in "std::pair<Tensor, Tensor>" (src/nn/module_calls.cpp).
std::string readable_type_name(std::string_view name);
}  // namespace detail

class AnyValue {
 public:
  template <class T>
    requires(!std::is_same_v<std::decay_t<T>, AnyValue> && std::is_copy_constructible_v<std::decay_t<T>>)
  explicit AnyValue(T&& value)
      : value_(std::in_place_type<std::decay_t<T>>, std::forward<T>(value)),
        type_name_(detail::type_name<std::decay_t<T>>()) {}

  AnyValue(const AnyValue&) = default;
  AnyValue& operator=(const AnyValue&) = default;
  /// A moved-from AnyValue holds nothing, and says so in errors.
  AnyValue(AnyValue&& o) noexcept : value_(std::move(o.value_)), type_name_(o.type_name_) { o.clear(); }
  AnyValue& operator=(AnyValue&& o) noexcept {
    if (this != &o) {
      value_ = std::move(o.value_);
      type_name_ = o.type_name_;
      o.clear();
    }
    return *this;
  }

  /// The value as T, or nullptr when it holds another type.
  template <class T>
  T* try_get() {
    return std::any_cast<T>(&value_);
  }
  template <class T>
  const T* try_get() const {
    return std::any_cast<T>(&value_);
  }
  /// A copy of the value as T (an rvalue AnyValue gives its value up); ember::Error names both
  /// types when it holds another.
  template <class T>
  T get() const& {
    return *checked<T>();
  }
  template <class T>
  T get() && {
    return std::move(*checked<T>());
  }
  /// Whether it holds a T.
  template <class T>
  bool holds() const {
    return try_get<T>() != nullptr;
  }
  /// The held type's name as the compiler spells it.
  std::string_view type_name() const { return type_name_; }

 private:
  template <class T>
  const T* checked() const {
    const T* p = try_get<T>();
    EMBER_CHECK(p != nullptr, "[AnyValue] get<{}>() of a value of type {}",
                detail::readable_type_name(detail::type_name<T>()), detail::readable_type_name(type_name_));
    return p;
  }
  template <class T>
  T* checked() {
    return const_cast<T*>(static_cast<const AnyValue*>(this)->checked<T>());
  }
  void clear() {
    value_.reset();
    type_name_ = "nothing (moved from)";
  }
  std::any value_;
  std::string_view type_name_;  // a literal in the program's image
};

}  // namespace ember::nn
