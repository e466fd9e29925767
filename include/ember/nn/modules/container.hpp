#pragma once
/// Containers: Sequential (heterogeneous, modules or callables), ModuleList, ModuleDict,
/// ParameterList, ParameterDict. Children are named "0", "1", ... (ModuleDict: by key), as in PyTorch; a
/// Sequential's may be named instead, as PyTorch's Sequential(OrderedDict(...)):
///   nn::Sequential net({{"conv", nn::Conv2d(1, 8, 3)}, {"act", nn::ReLU()}});   // conv.weight

#include <ember/nn/module.hpp>
#include <ember/nn/modules/any.hpp>
#include <ember/nn/modules/linear.hpp>  // Sequential runs Linear + ReLU as Linear::forward_relu

#include <array>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace ember::nn {

template <class P>
class BasicReLUImpl;  // modules/activation.hpp
template <int ND, class P>
class BasicMaxPoolImpl;  // modules/conv.hpp

/// Wraps a callable Tensor -> Tensor as a module (no parameters), for Sequential.
template <class P = DefaultPolicy>
class BasicFunctionalImpl : public Cloneable<BasicFunctionalImpl<P>, P> {
 public:
  using Fn = std::function<BasicTensor<P>(const BasicTensor<P>&)>;
  explicit BasicFunctionalImpl(Fn fn) : Cloneable<BasicFunctionalImpl<P>, P>("Functional"), fn(std::move(fn)) {}
  void reset() override {}
  BasicTensor<P> forward(const BasicTensor<P>& x) { return fn(x); }
  Fn fn;
};
using FunctionalImpl = BasicFunctionalImpl<>;
EMBER_MODULE(Functional);
template <class P = DefaultPolicy>
using BasicFunctional = detail::PolicyHolder<P, Functional, BasicFunctionalImpl<P>>;

template <class P>
class BasicSequentialImpl;

/// A name and a module (or callable) for Sequential's named form.
template <class P = DefaultPolicy>
class BasicNamedModule {
 public:
  template <class M>
  BasicNamedModule(std::string name, M&& m)  // NOLINT: implicit, for the braced list
      : name_(std::move(name)),
        append_([m = std::decay_t<M>(std::forward<M>(m))](BasicSequentialImpl<P>& seq, std::string n) {
          seq.push_back(std::move(n), m);  // a copy: the same list may build several Sequentials
        }) {}

 private:
  friend class BasicSequentialImpl<P>;
  std::string name_;
  std::function<void(BasicSequentialImpl<P>&, std::string)> append_;
};
using NamedModule = BasicNamedModule<>;

template <class P = DefaultPolicy>
class BasicSequentialImpl : public BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;
  using ModulePtr = std::shared_ptr<BasicModule<P>>;
  BasicSequentialImpl() : BasicModule<P>("Sequential") {}
  template <class... M>
  explicit BasicSequentialImpl(M&&... modules) : BasicModule<P>("Sequential") {
    (push_back(std::forward<M>(modules)), ...);
  }
  /// Named children in order: Sequential({{"fc", nn::Linear(2, 3)}, {"act", nn::ReLU()}}).
  explicit BasicSequentialImpl(std::initializer_list<BasicNamedModule<P>> named) : BasicModule<P>("Sequential") {
    for (const BasicNamedModule<P>& m : named) m.append_(*this, m.name_);
  }

  /// Appends a module (a handle, a shared_ptr or an AnyModule) or a callable Tensor -> Tensor,
  /// named by its position ("0", "1", ...). A module may take and return anything (see forward).
  template <class M>
  void push_back(M&& m) {
    push_back(std::to_string(entries_.size()), std::forward<M>(m));
  }
  /// The same under a name of one's own (as libtorch's push_back(name, module)).
  template <class M>
  void push_back(std::string name, M&& m) {
    using D = std::decay_t<M>;
    if constexpr (std::is_same_v<D, BasicAnyModule<P>>) {
      EMBER_CHECK(!m.is_empty(), "[Sequential] push_back of an empty AnyModule");
      add_entry(std::move(name), m.ptr(), m.calls(), Kind::Other);
    } else if constexpr (requires(const D& h) { h.ptr(); }) {
      add(std::move(name), m.ptr());
    } else if constexpr (requires { typename D::element_type; } &&
                         requires(const D& p) { static_cast<std::shared_ptr<typename D::element_type>>(p); }) {
      add(std::move(name), m);
    } else {
      static_assert(std::is_invocable_r_v<TensorT, D&, const TensorT&>,
                    "Sequential takes modules, AnyModules, or callables Tensor -> Tensor");
      add(std::move(name),
          std::make_shared<BasicFunctionalImpl<P>>(typename BasicFunctionalImpl<P>::Fn(std::forward<M>(m))));
    }
  }
  /// Runs the modules in order. When each takes a Tensor and returns one, with two rewrites
  /// that compute the same values and gradients:
  ///  - A ReLU directly followed by a max pooling runs as the pooling then the ReLU (ReLU is
  ///    monotone and NaN-propagating, so it commutes with taking a window's maximum; the
  ///    window's winner is the same element, or the gradient is zero either way), at a quarter
  ///    of the ReLU's work for 2x2 windows (cnn_small_step: ~1.5 ms of a 20 ms training step).
  ///  - A Linear directly followed by a ReLU runs as one linear_relu, the ReLU applied in the
  ///    product's stores: the output is written once and one tensor is made instead of two.
  /// Only modules added as Ember's own ReLU, MaxPool1d/2d and Linear types are rewritten; a
  /// type derived from them, added as itself, runs as written. Otherwise as the general
  /// forward below, the result taken as a Tensor.
  TensorT forward(const TensorT& x) {
    if (!tensor_chain_) return forward<TensorT>(AnyValue(x));
    TensorT y = x;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const BasicAnyModule<P>& m = modules_[i];
      if (entries_[i].kind == Kind::Linear && i + 1 < entries_.size() && entries_[i + 1].kind == Kind::Relu) {
        y = static_cast<BasicLinearImpl<P>*>(m.ptr().get())->forward_relu(y);
        ++i;
      } else if (entries_[i].kind == Kind::Relu && i + 1 < entries_.size() && entries_[i + 1].kind == Kind::MaxPool) {
        const BasicAnyModule<P>& pool = modules_[++i];
        y = m.calls()->tensor_call(m.ptr().get(), pool.calls()->tensor_call(pool.ptr().get(), y));
      } else {
        y = m.calls()->tensor_call(m.ptr().get(), y);
      }
    }
    return y;
  }
  /// The general form, as libtorch's Sequential::forward<R>(inputs...): the first module takes
  /// the arguments, each next module the result of the one before; the last result is
  /// returned as an R. ember::Error names the module whose forward() does not take what it
  /// is given.
  ///   nn::Sequential net(nn::LSTM(8, 16), TakeOutput(), nn::Linear(16, 2));
  ///   Tensor y = net->forward(x);                       // LSTM's pair reaches TakeOutput
  ///   Tensor z = pair_net->forward(a, b);               // a first module of two arguments
  template <class R = TensorT, class... A>
  R forward(A&&... args) {
    if constexpr (std::is_same_v<R, TensorT> && sizeof...(A) == 1 &&
                  (std::is_same_v<std::remove_cvref_t<A>, TensorT> && ...)) {
      if (tensor_chain_) return forward(static_cast<const TensorT&>(args)...);
    }
    std::array<AnyValue, sizeof...(A)> values{nn::detail::to_any_value(std::forward<A>(args))...};
    return nn::detail::result_as<R>(forward_values(values), "Sequential", [&] {
      return modules_.empty() ? std::string("the empty Sequential")
                              : EMBER_FORMAT("the last module ({})", modules_.back().ptr()->name());
    });
  }
  /// The same with the arguments as AnyValues (they may be moved from), the result as one;
  /// an empty Sequential returns its one argument.
  AnyValue forward_values(std::span<AnyValue> args) {
    if (entries_.empty()) {
      EMBER_CHECK(args.size() == 1, "[Sequential] an empty Sequential passes on one argument, got {}", args.size());
      return std::move(args[0]);
    }
    AnyValue y = modules_[0].calls()->call(modules_[0].ptr().get(), args, "Sequential", 0);
    for (size_t i = 1; i < modules_.size(); ++i)
      y = modules_[i].calls()->call(modules_[i].ptr().get(), std::span<AnyValue>(&y, 1), "Sequential",
                                    static_cast<int64_t>(i));
    return y;
  }
  size_t size() const { return entries_.size(); }
  bool is_empty() const { return entries_.empty(); }
  /// The modules in order as AnyModules, as libtorch's: for (const nn::AnyModule& m : *seq) m.ptr() ...
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }
  ModulePtr operator[](size_t i) const {
    EMBER_CHECK(i < entries_.size(), "[Sequential] index {} is out of range for {} modules", i, entries_.size());
    return modules_[i].ptr();
  }
  /// The module at i as its concrete type (checked).
  template <class Impl>
  std::shared_ptr<Impl> ptr(size_t i) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[i]);
    EMBER_CHECK(p != nullptr, "[Sequential] module {} is a {}, not the requested type", i, (*this)[i]->name());
    return p;
  }
  /// The same as a reference, as libtorch's seq->at<LinearImpl>(0).
  template <class Impl>
  Impl& at(size_t i) const {
    return *ptr<Impl>(i);
  }
  /// Appends the modules of `other` (shared, not copied), named by their new positions, as
  /// libtorch's extend.
  void extend(const BasicSequentialImpl& other) {
    EMBER_CHECK(&other != this, "[Sequential] extend with itself");
    // Every new positional name is checked first: a failure leaves this Sequential as it was.
    for (size_t k = 0; k < other.entries_.size(); ++k) {
      const std::string name = std::to_string(entries_.size() + k);
      for (const Entry& mine : entries_)
        EMBER_CHECK(mine.name != name, "[Sequential] extend: the position {} is already the name of a module", name);
    }
    for (size_t k = 0; k < other.entries_.size(); ++k)
      add_entry(std::to_string(entries_.size()), other.modules_[k].ptr(), other.modules_[k].calls(),
                other.entries_[k].kind);
  }
  template <class H>
    requires requires(const H& h) { h.ptr(); }
  void extend(const H& other) {
    extend(*other);  // an empty handle is an ember::Error, not a null dereference
  }
  ModulePtr clone() const override {
    auto copy = std::make_shared<BasicSequentialImpl>();
    for (size_t i = 0; i < entries_.size(); ++i) {
      const ModulePtr& m = modules_[i].ptr();
      const nn::detail::ModuleCalls<P>* calls = modules_[i].calls();
      // Each entry's call casts to the type it was added as; the clone must be of that type.
      EMBER_CHECK(calls->clones_as_itself,
                  "[Sequential] module {} ({}) cannot be cloned as its own type: its clone() is inherited from a "
                  "base class and would make a base object (give it a clone() of its own, e.g. derive it from "
                  "nn::Cloneable<YourImpl> and rebuild it in reset())",
                  i, m->name());
      copy->add_entry(entries_[i].name, m->clone(), calls, entries_[i].kind);
    }
    copy->set_training_flag(this->is_training());  // the children keep their own
    return copy;
  }

 protected:
  void child_replaced(const std::string& name, const typename BasicModule<P>::Replacement& r) override {
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].name != name) continue;
      EMBER_CHECK(r.calls != nullptr,
                  "[Sequential] the replacement for module {} ({}) has no forward() a Sequential can call", i,
                  r.module->name());
      // Kind::Other: forward()'s rewrites are only for Ember's own types as added.
      entries_[i].kind = Kind::Other;
      modules_[i] = BasicAnyModule<P>(r.module, r.calls);
      update_tensor_chain();
    }
  }
  void child_unregistering(const std::string& name) override {
    EMBER_FAIL("[unregister_module] '{}' is one of a Sequential's layers: removing it would change what forward() "
               "runs; build a new Sequential instead", name);
  }

 private:
  enum class Kind : uint8_t { Other, Relu, MaxPool, Linear };  // see forward
  /// The i-th module's name and kind; its module and calls (made for the type it was added
  /// as) are modules_[i].
  struct Entry {
    std::string name;
    Kind kind;
  };
  template <class Impl>
  void add(std::string name, const std::shared_ptr<Impl>& m) {
    static_assert(nn::detail::CallableModule<Impl, P>,
                  "Sequential takes modules whose forward() returns a value and takes its arguments by value or "
                  "const reference (nn/detail/module_calls.hpp)");
    constexpr Kind kind = std::is_same_v<Impl, BasicReLUImpl<P>>    ? Kind::Relu
                          : std::is_same_v<Impl, BasicLinearImpl<P>> ? Kind::Linear
                          : std::is_same_v<Impl, BasicMaxPoolImpl<1, P>> || std::is_same_v<Impl, BasicMaxPoolImpl<2, P>>
                              ? Kind::MaxPool
                              : Kind::Other;
    add_entry(std::move(name), m, &nn::detail::module_calls<Impl, P>, kind);
  }
  void add_entry(std::string name, ModulePtr m, const nn::detail::ModuleCalls<P>* calls, Kind kind) {
    modules_.reserve(entries_.size() + 1);  // both grow or neither, and before the child is registered
    entries_.reserve(entries_.size() + 1);
    this->register_module(name, m);
    modules_.push_back(BasicAnyModule<P>(std::move(m), calls));
    entries_.push_back({std::move(name), kind});
    tensor_chain_ = tensor_chain_ && calls->tensor_call != nullptr;
  }
  void update_tensor_chain() {
    tensor_chain_ = true;
    for (const BasicAnyModule<P>& m : modules_) tensor_chain_ = tensor_chain_ && m.calls()->tensor_call != nullptr;
  }
  std::vector<Entry> entries_;
  std::vector<BasicAnyModule<P>> modules_;  // parallel to entries_; what begin()/end() iterate
  bool tensor_chain_ = true;  // every module takes a Tensor and returns one: forward(Tensor)'s path
};
using SequentialImpl = BasicSequentialImpl<>;
/// EMBER_MODULE(Sequential) plus the named form: a braced list cannot go through the
/// handle's forwarding constructor.
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() = default;
  Sequential(std::nullptr_t) : ModuleHolder<SequentialImpl>(nullptr) {}  // NOLINT
  Sequential(std::initializer_list<NamedModule> named)                     // NOLINT
      : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>(named)) {}
};
template <class P = DefaultPolicy>
using BasicSequential = detail::PolicyHolder<P, Sequential, BasicSequentialImpl<P>>;

/// Holds submodules in order; has no forward (iterate it yourself).
template <class P = DefaultPolicy>
class BasicModuleListImpl : public BasicModule<P> {
 public:
  using ModulePtr = std::shared_ptr<BasicModule<P>>;
  BasicModuleListImpl() : BasicModule<P>("ModuleList") {}
  /// ModuleList(nn::Linear(2, 2), nn::ReLU()), as libtorch's.
  template <class... M>
    requires(sizeof...(M) > 0 && ((requires(const std::decay_t<M>& h) { h.ptr(); } ||
                                   std::is_convertible_v<std::decay_t<M>, ModulePtr>) && ...))
  explicit BasicModuleListImpl(M&&... modules) : BasicModule<P>("ModuleList") {
    (push_back(std::forward<M>(modules)), ...);
  }
  template <class M>
  void push_back(M&& m) {
    if constexpr (requires { m.ptr(); }) {
      add(m.ptr());
    } else {
      add(m);
    }
  }
  size_t size() const { return mods_.size(); }
  bool is_empty() const { return mods_.empty(); }
  ModulePtr operator[](size_t i) const {
    EMBER_CHECK(i < mods_.size(), "[ModuleList] index {} is out of range for {} modules", i, mods_.size());
    return mods_[i];
  }
  template <class Impl>
  std::shared_ptr<Impl> ptr(size_t i) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[i]);
    EMBER_CHECK(p != nullptr, "[ModuleList] module {} is a {}, not the requested type", i, (*this)[i]->name());
    return p;
  }
  template <class Impl>
  Impl& at(size_t i) const {
    return *ptr<Impl>(i);
  }
  /// Inserts a module before position `index` (size(): at the end), as libtorch's insert: the
  /// modules after it move one position on, and so do their names ("2" becomes "3", and its
  /// parameters' names with it).
  template <class M>
  void insert(size_t index, M&& m) {
    EMBER_CHECK(index <= mods_.size(), "[ModuleList] insert at {} is out of range for {} modules", index, mods_.size());
    ModulePtr p;
    if constexpr (requires { m.ptr(); }) p = m.ptr();
    else p = m;
    EMBER_CHECK(p != nullptr, "[ModuleList] insert at {}: the module is empty", index);
    std::vector<ModulePtr> mods = mods_;
    mods.insert(mods.begin() + static_cast<std::ptrdiff_t>(index), std::move(p));
    std::vector<std::pair<std::string, ModulePtr>> named;
    for (size_t i = 0; i < mods.size(); ++i) named.emplace_back(std::to_string(i), mods[i]);
    this->set_children(std::move(named));  // checks first: a refusal leaves the list as it was
    mods_ = std::move(mods);
  }
  /// Appends the modules of `other` (shared, not copied), as libtorch's extend.
  void extend(const BasicModuleListImpl& other) {
    EMBER_CHECK(&other != this, "[ModuleList] extend with itself");
    for (const ModulePtr& m : other.mods_) add(m);
  }
  /// The modules of a Sequential, in order (libtorch's extend takes any container).
  void extend(const BasicSequentialImpl<P>& other) {
    for (size_t i = 0; i < other.size(); ++i) add(other[i]);
  }
  template <class H>
    requires requires(const H& h) { h.ptr(); }
  void extend(const H& other) {
    extend(*other);  // an empty handle is an ember::Error, not a null dereference
  }
  auto begin() const { return mods_.begin(); }
  auto end() const { return mods_.end(); }
  ModulePtr clone() const override {
    auto copy = std::make_shared<BasicModuleListImpl>();
    for (auto& m : mods_) copy->add(m->clone());
    copy->set_training_flag(this->is_training());  // the children keep their own
    return copy;
  }

 protected:
  void child_replaced(const std::string& name, const typename BasicModule<P>::Replacement& r) override {
    for (size_t i = 0; i < mods_.size(); ++i)
      if (std::to_string(i) == name) mods_[i] = r.module;
  }
  void child_unregistering(const std::string& name) override {
    EMBER_FAIL("[unregister_module] a ModuleList's modules are named by position ('{}'): removing one would rename "
               "the others; build a new ModuleList instead", name);
  }

 private:
  void add(ModulePtr m) {
    this->register_module(std::to_string(mods_.size()), m);
    mods_.push_back(std::move(m));
  }
  std::vector<ModulePtr> mods_;
};
using ModuleListImpl = BasicModuleListImpl<>;
EMBER_MODULE(ModuleList);
template <class P = DefaultPolicy>
using BasicModuleList = detail::PolicyHolder<P, ModuleList, BasicModuleListImpl<P>>;

/// Submodules by key, in insertion order.
template <class P = DefaultPolicy>
class BasicModuleDictImpl : public BasicModule<P> {
 public:
  using ModulePtr = std::shared_ptr<BasicModule<P>>;
  BasicModuleDictImpl() : BasicModule<P>("ModuleDict") {}
  template <class M>
  void insert(const std::string& key, M&& m) {
    if constexpr (requires { m.ptr(); }) {
      this->register_module(key, m.ptr());
    } else {
      this->register_module(key, m);
    }
  }
  bool contains(const std::string& key) const {
    for (auto& [n, c] : this->child_list())
      if (n == key) return true;
    return false;
  }
  ModulePtr operator[](const std::string& key) const {
    for (auto& [n, c] : this->child_list())
      if (n == key) return c;
    EMBER_FAIL("[ModuleDict] no module with key '{}'", key);
  }
  size_t size() const { return this->child_list().size(); }
  bool empty() const { return this->child_list().empty(); }  // libtorch's name (ModuleList's is is_empty)
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (auto& [n, c] : this->child_list()) k.push_back(n);
    return k;
  }
  std::vector<ModulePtr> values() const {
    std::vector<ModulePtr> v;
    for (auto& [n, c] : this->child_list()) v.push_back(c);
    return v;
  }
  /// (key, module) pairs in insertion order; also what a range-for over the dict visits.
  const std::vector<std::pair<std::string, ModulePtr>>& items() const { return this->child_list(); }
  auto begin() const { return items().begin(); }
  auto end() const { return items().end(); }
  /// The module under `key` as its concrete type (checked); at<T>(key) gives a reference, as
  /// libtorch's dict->at<T>(key).
  template <class Impl>
  std::shared_ptr<Impl> ptr(const std::string& key) const {
    auto p = std::dynamic_pointer_cast<Impl>((*this)[key]);
    EMBER_CHECK(p != nullptr, "[ModuleDict] module '{}' is a {}, not the requested type", key, (*this)[key]->name());
    return p;
  }
  template <class Impl>
  Impl& at(const std::string& key) const {
    return *ptr<Impl>(key);
  }
  /// Removes the module under `key` and returns it, as libtorch's pop.
  ModulePtr pop(const std::string& key) {
    ModulePtr m = (*this)[key];  // names the missing key
    this->unregister_module(key);
    return m;
  }
  /// Removes every module, as libtorch's clear.
  void clear() {
    for (const std::string& k : keys()) this->unregister_module(k);
  }
  /// Inserts the modules of `other` (shared), replacing those under keys this dict has.
  void update(const BasicModuleDictImpl& other) {
    for (const auto& [k, m] : other.items()) {
      if (contains(k)) this->replace_module(k, m);
      else insert(k, m);
    }
  }
  template <class H>
    requires requires(const H& h) { h.ptr(); }
  void update(const H& other) {
    update(*other);  // an empty handle is an ember::Error, not a null dereference
  }
  ModulePtr clone() const override {
    auto copy = std::make_shared<BasicModuleDictImpl>();
    for (auto& [n, c] : this->child_list()) copy->insert(n, c->clone());
    copy->set_training_flag(this->is_training());  // the children keep their own
    return copy;
  }
};
using ModuleDictImpl = BasicModuleDictImpl<>;
EMBER_MODULE(ModuleDict);
template <class P = DefaultPolicy>
using BasicModuleDict = detail::PolicyHolder<P, ModuleDict, BasicModuleDictImpl<P>>;

/// Parameters in order, named "0", "1", ...
template <class P = DefaultPolicy>
class BasicParameterListImpl : public BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicParameterListImpl() : BasicModule<P>("ParameterList") {}
  TensorT& append(TensorT t, bool requires_grad = true) {
    TensorT& r = this->register_parameter(std::to_string(params_.size()), std::move(t), requires_grad);
    params_.push_back(r);
    return r;
  }
  size_t size() const { return params_.size(); }
  const TensorT& operator[](size_t i) const {
    EMBER_CHECK(i < params_.size(), "[ParameterList] index {} is out of range for {} parameters", i, params_.size());
    return params_[i];
  }
  auto begin() const { return params_.begin(); }
  auto end() const { return params_.end(); }
  std::shared_ptr<BasicModule<P>> clone() const override {
    auto copy = std::make_shared<BasicParameterListImpl>();
    for (const TensorT& t : params_) copy->append(t.detach().clone(), t.requires_grad());
    copy->set_training_flag(this->is_training());
    return copy;
  }
  std::string extra_repr() const override {
    std::string s;
    for (size_t i = 0; i < params_.size(); ++i)
      s += EMBER_FORMAT("{}({}): Parameter containing: [{} of size {}]", i ? "\n" : "", i, params_[i].dtype(),
                       params_[i].sizes());
    return s;
  }

 private:
  std::vector<TensorT> params_;
};
using ParameterListImpl = BasicParameterListImpl<>;
EMBER_MODULE(ParameterList);
template <class P = DefaultPolicy>
using BasicParameterList = detail::PolicyHolder<P, ParameterList, BasicParameterListImpl<P>>;

/// Parameters by key, in insertion order (keys follow register_parameter's rules: no '.',
/// not empty, unique: inserting under a taken key is an error, where PyTorch's pd[k] = p
/// replaces). Parameters require grad unless inserted with requires_grad false (libtorch's
/// insert keeps the tensor's own flag).
template <class P = DefaultPolicy>
class BasicParameterDictImpl : public BasicModule<P> {
 public:
  using TensorT = BasicTensor<P>;
  BasicParameterDictImpl() : BasicModule<P>("ParameterDict") {}
  TensorT& insert(const std::string& key, TensorT t, bool requires_grad = true) {
    TensorT& r = this->register_parameter(key, std::move(t), requires_grad);
    items_.emplace_back(key, r);
    return r;
  }
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  const TensorT& operator[](const std::string& key) const {
    const TensorT* t = find(key);
    if (t == nullptr) EMBER_FAIL("[ParameterDict] no parameter with key '{}'", key);
    return *t;
  }
  const TensorT& get(const std::string& key) const { return (*this)[key]; }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }  // libtorch's name
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& [n, t] : items_) k.push_back(n);
    return k;
  }
  std::vector<TensorT> values() const {
    std::vector<TensorT> v;
    for (const auto& [n, t] : items_) v.push_back(t);
    return v;
  }
  const std::vector<std::pair<std::string, TensorT>>& items() const { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  std::shared_ptr<BasicModule<P>> clone() const override {
    auto copy = std::make_shared<BasicParameterDictImpl>();
    for (const auto& [k, t] : items_) copy->insert(k, t.detach().clone(), t.requires_grad());
    copy->set_training_flag(this->is_training());
    return copy;
  }
  std::string extra_repr() const override {
    std::string s;
    for (size_t i = 0; i < items_.size(); ++i)
      s += EMBER_FORMAT("{}({}): Parameter containing: [{} of size {}]", i ? "\n" : "", items_[i].first,
                       items_[i].second.dtype(), items_[i].second.sizes());
    return s;
  }

 private:
  const TensorT* find(const std::string& key) const {
    for (const auto& [n, t] : items_)
      if (n == key) return &t;
    return nullptr;
  }
  std::vector<std::pair<std::string, TensorT>> items_;
};
using ParameterDictImpl = BasicParameterDictImpl<>;
EMBER_MODULE(ParameterDict);
template <class P = DefaultPolicy>
using BasicParameterDict = detail::PolicyHolder<P, ParameterDict, BasicParameterDictImpl<P>>;

}  // namespace ember::nn
