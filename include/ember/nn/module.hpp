#pragma once
/// nn::Module: the base of layers and models, as libtorch's torch::nn::Module.
///
///   struct NetImpl : ember::nn::Module {
///     NetImpl() { fc = register_module("fc", nn::Linear(4, 2)); }
///     Tensor forward(const Tensor& x) { return fc(x).relu(); }
///     nn::Linear fc{nullptr};
///   };
///   EMBER_MODULE(Net);   // Net: a shared handle to a NetImpl, Net net; net(x); net->parameters()
///
/// Parameters, buffers and submodules are registered by name, in order; names of nested
/// parameters are dotted exactly as PyTorch forms them ("layers.0.weight"), so PyTorch
/// state dicts load by name. `BasicModule<P>` takes the policy; `Module` is the default one.

#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/tensor_autograd.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/ordered_dict.hpp>
#include <ember/core/tensor.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/nn/detail/module_calls.hpp>

#include <algorithm>
#include <concepts>
#include <deque>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ember::nn {

/// Named tensors in order (a state dict, named_parameters()): an OrderedDict, whose items are
/// also std::pairs, so `for (auto& [name, t] : net->named_parameters())` works as well as
/// libtorch's `p.key()` / `p.value()`.
template <class P = DefaultPolicy>
using BasicTensorList = OrderedDict<std::string, BasicTensor<P>>;
using NamedTensors = BasicTensorList<>;

/// What a non-strict load_state_dict did not match.
struct LoadResult {
  std::vector<std::string> missing_keys;     ///< in the module, not in the dict
  std::vector<std::string> unexpected_keys;  ///< in the dict, not in the module
};

template <class P = DefaultPolicy>
class BasicModule : public std::enable_shared_from_this<BasicModule<P>> {
 public:
  using TensorT = BasicTensor<P>;
  using ModulePtr = std::shared_ptr<BasicModule>;

  /// `type_name` is what printing shows ("Linear"); user modules may leave the default.
  explicit BasicModule(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~BasicModule() = default;
  BasicModule(const BasicModule&) = default;
  BasicModule& operator=(const BasicModule&) = default;

  const std::string& name() const { return type_name_; }
  /// This module as T (an Impl type, or a handle type such as nn::Linear for LinearImpl), or
  /// nullptr when it is not one: `if (auto* fc = m->as<nn::Linear>()) ...`, as libtorch's.
  template <class T>
  auto* as() {
    if constexpr (requires { typename T::element_type; }) return dynamic_cast<typename T::element_type*>(this);
    else return dynamic_cast<T*>(this);
  }
  template <class T>
  const auto* as() const {
    return const_cast<BasicModule*>(this)->template as<T>();
  }

  // ---- registration -------------------------------------------------------------------------
  /// Adds a parameter (a leaf; requires grad unless told otherwise) and returns the stored
  /// handle. An undefined tensor registers an absent parameter (e.g. bias=false).
  TensorT& register_parameter(std::string name, TensorT t, bool requires_grad = true);
  /// Adds a buffer: state that is moved with the module but not trained, and saved in
  /// state_dict() unless `persistent` is false (a cache, e.g. a precomputed mask).
  TensorT& register_buffer(std::string name, TensorT t, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    static_assert(std::is_base_of_v<BasicModule, M>, "register_module needs an nn::Module");
    add_child(std::move(name), m);
    return m;
  }
  /// For module holders (nn::Linear, user types made with EMBER_MODULE).
  template <class H>
    requires requires(H h) { h.ptr(); }
  H register_module(std::string name, H holder) {
    add_child(std::move(name), holder.ptr());
    return holder;
  }
  /// Replaces a registered submodule (e.g. to swap a layer); the name must exist. Inside
  /// Sequential and ModuleList the replacement is also what forward() and [i] use.
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> m) {
    static_assert(std::is_base_of_v<BasicModule, M>, "replace_module needs an nn::Module");
    const detail::ModuleCalls<P>* calls = nullptr;
    if constexpr (detail::CallableModule<M, P>) calls = &detail::module_calls<M, P>;
    replace_child(name, m, calls);
    return m;
  }
  /// For module holders, and nn::AnyModule (whose calls are those of the type it was made from).
  template <class H>
    requires requires(H h) { h.ptr(); }
  H replace_module(const std::string& name, H holder) {
    if constexpr (requires(const H& h) { { h.calls() } -> std::same_as<const detail::ModuleCalls<P>*>; }) {
      replace_child(name, holder.ptr(), holder.calls());
    } else {
      replace_module(name, holder.ptr());
    }
    return holder;
  }

  /// Removes the registered submodule `name` (libtorch's unregister_module): its parameters
  /// and buffers leave parameters(), state_dict(), to() and train()/eval(). A user's module
  /// whose forward() calls the child through a member keeps calling it, untrained and unmoved,
  /// as libtorch's: remove only children forward() does not use. Ember's own such modules
  /// (MultiheadAttention, the Transformer family, AdaptiveLogSoftmaxWithLoss, AveragedModel)
  /// refuse, and so do Sequential and ModuleList (a position names each of their modules);
  /// ModuleDict's pop uses it.
  void unregister_module(const std::string& name);

  // ---- traversal ----------------------------------------------------------------------------
  std::vector<TensorT> parameters(bool recurse = true) const;
  BasicTensorList<P> named_parameters(bool recurse = true) const;
  std::vector<TensorT> buffers(bool recurse = true) const;
  BasicTensorList<P> named_buffers(bool recurse = true) const;
  std::vector<ModulePtr> children() const;
  OrderedDict<std::string, ModulePtr> named_children() const;
  /// This module (first, when include_self) and all its descendants, depth first; a module
  /// registered in two places is listed once, under its first name (as PyTorch), and likewise
  /// a shared parameter or buffer in named_parameters() / named_buffers().
  std::vector<ModulePtr> modules(bool include_self = true);
  OrderedDict<std::string, ModulePtr> named_modules(const std::string& prefix = "", bool include_self = true);
  /// Number of parameter elements (all, or only those that require grad).
  int64_t num_parameters(bool trainable_only = false) const;

  // ---- state ----------------------------------------------------------------------------------
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Converts floating-point parameters and buffers in place (handles stay valid).
  void to(DType dtype);
  void to(Device device);
  void to(Device device, DType dtype) { to(device), to(dtype); }
  void zero_grad(bool set_to_none = true);
  /// Calls fn on every module of the tree, children before their parent (as PyTorch).
  void apply(const std::function<void(BasicModule&)>& fn);

  /// Parameters and persistent buffers by dotted name (shared ones under each of their names).
  BasicTensorList<P> state_dict() const;
  /// Copies values by name. Strict: every missing key, unexpected key and shape or dtype
  /// mismatch is reported in one error. Not strict: mismatched shapes/dtypes still fail;
  /// missing and unexpected keys are returned.
  LoadResult load_state_dict(const BasicTensorList<P>& dict, bool strict = true);

  /// A deep copy (fresh parameters with the same values). Modules derive from
  /// nn::Cloneable<Derived> to support it; containers implement it themselves.
  virtual ModulePtr clone() const;

  /// What follows the type name in printing, e.g. "in_features=4, out_features=2, bias=True".
  virtual std::string extra_repr() const { return {}; }
  /// The module tree as PyTorch prints it, then the parameter count.
  std::string to_string() const;

 protected:
  /// Deep-copies this module's parameter and buffer values and training flag into `dst`, which
  /// has the same structure (made by reset()), and recurses into children by name.
  void copy_state_into(BasicModule& dst) const;
  void clear_registrations() {
    params_.clear();
    buffers_.clear();
    non_persistent_.clear();
    children_.clear();
  }
  void print_tree(std::string& out, int indent) const;
  /// The direct submodules in registration order, without named_children()'s copy.
  const std::vector<std::pair<std::string, ModulePtr>>& child_list() const { return children_; }
  /// Sets this module's training flag only (clone() of containers: the children keep theirs).
  void set_training_flag(bool on) { training_ = on; }
  /// What replace_module hands a container: the new module and, when it has a forward()
  /// that containers can call, the calls made for its type (nullptr otherwise).
  struct Replacement {
    ModulePtr module;
    const detail::ModuleCalls<P>* calls;
  };
  void replace_child(const std::string& name, ModulePtr m, const detail::ModuleCalls<P>* calls) {
    EMBER_CHECK(m != nullptr, "[replace_module] the replacement for '{}' of {} is empty", name, type_name_);
    for (auto& [n, c] : children_)
      if (n == name) {
        child_replaced(name, Replacement{m, calls});  // may refuse (throws) before anything changed
        c = std::move(m);
        return;
      }
    EMBER_FAIL("[replace_module] {} has no submodule named '{}'", type_name_, name);
  }
  /// Called by replace_module before the child `name` is replaced; containers that keep their
  /// own list of children update it (or refuse, by throwing).
  virtual void child_replaced(const std::string& /*name*/, const Replacement& /*r*/) {}
  /// Called by unregister_module before the child `name` goes; containers may refuse (throw).
  virtual void child_unregistering(const std::string& /*name*/) {}
  /// Replaces every child registration at once (ModuleList::insert renames by position); the
  /// names must be distinct and not those of this module's parameters or buffers.
  void set_children(std::vector<std::pair<std::string, ModulePtr>> children);
  std::string type_name_;

 private:
  using Memo = std::unordered_set<const void*>;
  void add_child(std::string name, ModulePtr m);
  void check_free_name(const std::string& name, const char* what) const;
  void collect(BasicTensorList<P>& out, const std::string& prefix, bool params, bool recurse, Memo& modules,
               Memo& tensors) const;
  void named_modules_into(OrderedDict<std::string, ModulePtr>& out, const std::string& prefix,
                          const ModulePtr& self, Memo& seen);
  bool persistent(const std::string& buffer) const {
    return std::find(non_persistent_.begin(), non_persistent_.end(), buffer) == non_persistent_.end();
  }
  std::deque<std::pair<std::string, TensorT>> params_;
  std::deque<std::pair<std::string, TensorT>> buffers_;
  std::vector<std::string> non_persistent_;  // names of buffers left out of state_dict()
  std::vector<std::pair<std::string, ModulePtr>> children_;
  bool training_ = true;
};

using Module = BasicModule<>;

namespace detail {
/// Ember's modules whose forward() calls submodules held as members refuse unregister_module.
inline void refuse_member_child(const std::string& module, const std::string& child) {
  EMBER_FAIL("[unregister_module] {}'s forward() uses its submodule '{}': removed, it would still run, no longer "
             "trained, moved or saved", module, child);
}
}  // namespace detail

/// Base for modules that can be deep-copied: Derived must rebuild its parameters and
/// submodules in reset() (as libtorch's Cloneable requires); clone() copy-constructs Derived
/// (copying its options), calls reset(), then copies the values over by name.
template <class Derived, class P = DefaultPolicy>
class Cloneable : public BasicModule<P> {
 public:
  using BasicModule<P>::BasicModule;
  /// The dynamic type clone() makes: a class derived from Derived without a Cloneable of its
  /// own clones as Derived (Sequential refuses to clone such a module as itself).
  using cloned_type = Derived;
  /// (Re)creates the parameters, buffers and submodules from the options.
  virtual void reset() = 0;
  std::shared_ptr<BasicModule<P>> clone() const override {
    ember::detail::NoGradGuardFor<P> ng;
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->clear_registrations();
    copy->reset();
    this->copy_state_into(*copy);
    return copy;
  }
};

/// A shared handle to a module implementation, as libtorch's ModuleHolder: `Linear fc(4, 2);
/// fc(x); fc->weight`. `Linear fc{nullptr}` is an empty handle to assign later.
template <class Impl>
class ModuleHolder {
 public:
  using element_type = Impl;
  ModuleHolder()
    requires std::is_default_constructible_v<Impl>
      : impl_(std::make_shared<Impl>()) {}
  ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit, as in libtorch
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT
  template <class A0, class... A>
    requires(!std::is_same_v<std::decay_t<A0>, ModuleHolder> && !std::is_same_v<std::decay_t<A0>, std::nullptr_t> &&
             !std::is_same_v<std::decay_t<A0>, std::shared_ptr<Impl>> && std::is_constructible_v<Impl, A0, A...>)
  explicit ModuleHolder(A0&& a0, A&&... a) : impl_(std::make_shared<Impl>(std::forward<A0>(a0), std::forward<A>(a)...)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    EMBER_CHECK(impl_ != nullptr, "[module] use of an empty module handle (constructed with nullptr)");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }
  template <class... A>
  decltype(auto) operator()(A&&... a) const {
    return get()->forward(std::forward<A>(a)...);
  }
  /// Indexing of containers: seq[0], dict["key"].
  template <class K>
  decltype(auto) operator[](K&& key) const {
    return (*get())[std::forward<K>(key)];
  }

 private:
  std::shared_ptr<Impl> impl_;
};

namespace detail {
/// The handle type for a module of policy P held by another module of P: the library's named
/// holder (nn::Linear) under DefaultPolicy, so that members keep the types users know, and a
/// plain ModuleHolder of P's Impl under any other policy (BasicLinear<InferencePolicy>).
template <class P, class DefaultHolder, class Impl>
using PolicyHolder = std::conditional_t<std::is_same_v<P, DefaultPolicy>, DefaultHolder, ModuleHolder<Impl>>;
}  // namespace detail

/// The module tree as to_string() prints it: `std::cout << *net` and `std::cout << net`.
template <class P>
std::ostream& operator<<(std::ostream& os, const BasicModule<P>& m) {
  return os << m.to_string();
}
template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& m) {
  return os << m->to_string();
}

}  // namespace ember::nn

/// `Name() = default;` for EMBER_MODULE: deleted where NameImpl has no default constructor,
/// which clang reports (-Wdefaulted-function-deleted) once per module and translation unit.
/// Not a constrained constructor template instead: a class local to a function cannot have
/// member templates, and EMBER_MODULE must work there too.
#if defined(__clang__)
#define EMBER_DETAIL_DEFAULTED_HOLDER_CTOR(Name)                            \
  _Pragma("clang diagnostic push")                                          \
  _Pragma("clang diagnostic ignored \"-Wdefaulted-function-deleted\"")     \
  Name() = default;                                                         \
  _Pragma("clang diagnostic pop")
#else
#define EMBER_DETAIL_DEFAULTED_HOLDER_CTOR(Name) Name() = default;
#endif

/// Declares `Name`, a ModuleHolder of `NameImpl`.
#define EMBER_MODULE(Name)                                                   \
  class Name : public ::ember::nn::ModuleHolder<Name##Impl> {                \
   public:                                                                   \
    using ::ember::nn::ModuleHolder<Name##Impl>::ModuleHolder;               \
    EMBER_DETAIL_DEFAULTED_HOLDER_CTOR(Name)                                 \
    Name(std::nullptr_t) : ::ember::nn::ModuleHolder<Name##Impl>(nullptr) {} \
  }

#include <ember/nn/detail/module_impl.hpp>
