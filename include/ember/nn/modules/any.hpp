#pragma once
/// nn::AnyModule: a module of any type behind one handle, called with whatever its forward()
/// takes, as libtorch's torch::nn::AnyModule.
///
///   std::vector<nn::AnyModule> parts{nn::Linear(4, 8), nn::LSTM(8, 16), MyHead()};
///   Tensor y = parts[0].forward(x);                        // forward<Tensor> by default
///   auto [out, state] = parts[1].forward<std::pair<Tensor, std::pair<Tensor, Tensor>>>(y);
///   nn::AnyValue v = parts[2].any_forward(out, 0.5);      // the result, of any type
///
/// A module whose forward is overloaded or a template (Ember's LSTM, GRU and RNN, which also
/// take their state as a pair or tuple) is called with one Tensor only: give such a module a
/// single forward of its own to pass it more.
///
/// The arguments are matched against forward()'s parameters when called: their number (default
/// arguments count: forward(src, mask = {}) takes 1 or 2) and types (exactly, but for numbers
/// that convert without loss, int -> int64_t or double, and C strings -> std::string). A
/// mismatch is an ember::Error naming the module, the argument and both types. Which forward()
/// shapes are callable: nn/detail/module_calls.hpp.

#include <ember/nn/any_value.hpp>
#include <ember/nn/detail/module_calls.hpp>
#include <ember/nn/module.hpp>

#include <array>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

namespace ember::nn {

namespace detail {
template <class A>
AnyValue to_any_value(A&& a) {
  if constexpr (std::is_same_v<std::remove_cvref_t<A>, AnyValue>) return std::forward<A>(a);  // passed on as it is
  else return AnyValue(std::forward<A>(a));
}
/// A forward's result as the R its caller asked for (AnyValue: as it is, no check); otherwise
/// "[op] <who()> returned a X, not the Y asked for" (who() is only called then).
template <class R, class Who>
R result_as(AnyValue&& result, const char* op, Who&& who) {
  if constexpr (std::is_same_v<R, AnyValue>) {
    return std::move(result);
  } else {
    EMBER_CHECK(result.holds<R>(), "[{}] {} returned a {}, not the {} asked for", op, who(),
                readable_type_name(result.type_name()), readable_type_name(type_name<R>()));
    return std::move(result).template get<R>();  // given up, not copied
  }
}
}  // namespace detail

template <class P>
class BasicSequentialImpl;

template <class P = DefaultPolicy>
class BasicAnyModule {
 public:
  using TensorT = BasicTensor<P>;
  using ModulePtr = std::shared_ptr<BasicModule<P>>;

  /// An empty AnyModule (forward() is an error); assign a module later.
  BasicAnyModule() = default;
  template <class M>
    requires detail::CallableModule<M, P>
  BasicAnyModule(std::shared_ptr<M> module)  // NOLINT: implicit, as a module handle converts
      : module_(std::move(module)), calls_(&detail::module_calls<M, P>) {
    EMBER_CHECK(module_ != nullptr, "[AnyModule] constructed from an empty module pointer");
  }
  /// From a module handle (nn::Linear, a user's EMBER_MODULE type).
  template <class H>
    requires requires(const H& h) { h.ptr(); } && detail::CallableModule<typename H::element_type, P>
  BasicAnyModule(const H& holder)  // NOLINT: implicit, as libtorch's
      : BasicAnyModule(holder.ptr()) {}
  /// From a module object (an rvalue, as libtorch's: a copy of an Impl would share its
  /// parameters and children with the original), moved into a new shared one.
  template <class M>
    requires(!std::is_lvalue_reference_v<M> && detail::CallableModule<std::remove_cvref_t<M>, P>)
  explicit BasicAnyModule(M&& module)
      : BasicAnyModule(std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(module))) {}

  /// forward(args...) as an R (Tensor unless told; AnyValue: as any_forward): ember::Error
  /// when forward() takes other arguments or returns another type.
  template <class R = TensorT, class... A>
  R forward(A&&... args) {
    if constexpr (std::is_same_v<R, TensorT> && sizeof...(A) == 1 &&
                  (std::is_same_v<std::remove_cvref_t<A>, TensorT> && ...)) {
      if (calls_ != nullptr && calls_->tensor_call != nullptr) return calls_->tensor_call(module_.get(), args...);
    }
    return detail::result_as<R>(any_forward(std::forward<A>(args)...), "AnyModule",
                                [&] { return EMBER_FORMAT("{}'s forward()", module_->name()); });
  }
  /// forward(args...) with its result as an AnyValue; AnyValue arguments pass on as they are.
  template <class... A>
  AnyValue any_forward(A&&... args) {
    std::array<AnyValue, sizeof...(A)> values{detail::to_any_value(std::forward<A>(args))...};
    return forward_values(values);
  }
  /// The same with the arguments already AnyValues (they may be moved from).
  AnyValue forward_values(std::span<AnyValue> args) {
    EMBER_CHECK(calls_ != nullptr, "[AnyModule] forward() of an empty AnyModule");
    return calls_->call(module_.get(), args, "AnyModule", -1);
  }

  /// The module (nullptr when empty).
  const ModulePtr& ptr() const { return module_; }
  /// The module as T, checked: an Impl type (LinearImpl) gives a shared_ptr to it.
  template <class T>
  std::shared_ptr<T> ptr() const {
    check_not_empty("ptr");
    auto p = std::dynamic_pointer_cast<T>(module_);
    EMBER_CHECK(p != nullptr, "[AnyModule] ptr<T>(): the module is a {}, not a {}", module_->name(),
                detail::type_name<T>());
    return p;
  }
  /// The module as T, checked: an Impl type gives a reference, a handle type (nn::Linear) a
  /// handle to the same module.
  template <class T>
  decltype(auto) get() const {
    if constexpr (requires(const T& h) { h.ptr(); }) return T(ptr<typename T::element_type>());
    else return static_cast<T&>(*ptr<T>());
  }
  /// A deep copy of the module (module->clone()), callable the same way.
  BasicAnyModule clone() const {
    check_not_empty("clone");
    EMBER_CHECK(calls_->clones_as_itself,
                "[AnyModule] clone(): the {} was added as a type whose clone() is inherited from a base class and "
                "would make a base object (give it a clone() of its own, e.g. derive it from nn::Cloneable<YourImpl>)",
                module_->name());
    BasicAnyModule copy;
    copy.module_ = module_->clone();
    copy.calls_ = calls_;
    return copy;
  }
  bool is_empty() const { return module_ == nullptr; }
  /// The calls made for the module's type when it was added (nullptr when empty).
  const detail::ModuleCalls<P>* calls() const { return calls_; }

 private:
  friend class BasicSequentialImpl<P>;
  BasicAnyModule(ModulePtr module, const detail::ModuleCalls<P>* calls) : module_(std::move(module)), calls_(calls) {}
  void check_not_empty(const char* what) const {
    EMBER_CHECK(module_ != nullptr, "[AnyModule] {}() of an empty AnyModule", what);
  }
  ModulePtr module_;
  const detail::ModuleCalls<P>* calls_ = nullptr;
};
using AnyModule = BasicAnyModule<>;

}  // namespace ember::nn
