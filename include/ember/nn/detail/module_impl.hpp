#pragma once
/// Member definitions of nn::BasicModule (included by nn/module.hpp). For DefaultPolicy they
/// are instantiated once in src/nn/module.cpp (extern template below).

#include <ember/nn/module.hpp>

#include <algorithm>
#include <unordered_set>

namespace ember::nn {

namespace detail {
/// Replaces t's values by convert(t) in place (handles stay valid); its gradient goes along,
/// converted the same way (PyTorch's _apply converts param.grad too).
template <class P, class F>
void convert_in_place(BasicTensor<P>& t, F&& convert) {
  BasicTensor<P> v = convert(t), g;
  if constexpr (autograd::detail::has_autograd<P>()) g = t.grad();
  ember::detail::adopt_elements(t.impl(), v.impl());
  // A graph made before keeps its accumulator (old dtype/device); new graphs get a new one.
  if constexpr (autograd::detail::has_autograd<P>()) autograd::reset_grad_accumulator(t.impl());
  t.zero_grad();
  if constexpr (autograd::detail::has_autograd<P>())
    if (g.defined()) t.set_grad(convert(g));
}
inline void check_name(const std::string& name, const std::string& owner, const char* what) {
  EMBER_CHECK(!name.empty() && name.find('.') == std::string::npos,
              "[register_{}] {} name '{}' must be non-empty and contain no '.'", what, owner, name);
}
}  // namespace detail

template <class P>
void BasicModule<P>::check_free_name(const std::string& name, const char* what) const {
  detail::check_name(name, type_name_, what);
  // One namespace for all three kinds, as PyTorch's attributes: a parameter and a buffer of
  // one name would give state_dict() the key twice.
  auto clash = [&](const auto& list, const char* kind) {
    for (const auto& e : list)
      EMBER_CHECK(e.first != name, "[register_{}] {} already has a {} named '{}'", what, type_name_, kind, name);
  };
  clash(params_, "parameter");
  clash(buffers_, "buffer");
  clash(children_, "submodule");
}

template <class P>
auto BasicModule<P>::register_parameter(std::string name, TensorT t, bool requires_grad) -> TensorT& {
  check_free_name(name, "parameter");
  if (t.defined()) {
    constexpr bool records = autograd::detail::has_autograd<P>();
    EMBER_CHECK(!requires_grad || t.is_floating_point() || !records,
                "[register_parameter] parameter '{}' of {} must be floating point to require grad, got {}", name,
                type_name_, t.dtype());
    EMBER_CHECK(t.is_leaf(), "[register_parameter] parameter '{}' of {} must be a leaf tensor (detach it first)",
                name, type_name_);
    // A policy without the Autograd layer records no gradients: its parameters are plain tensors.
    if constexpr (records)
      if (requires_grad != t.requires_grad()) t.requires_grad_(requires_grad);
  }
  params_.emplace_back(std::move(name), std::move(t));
  return params_.back().second;
}

template <class P>
auto BasicModule<P>::register_buffer(std::string name, TensorT t, bool persistent) -> TensorT& {
  check_free_name(name, "buffer");
  if (!persistent) non_persistent_.push_back(name);
  buffers_.emplace_back(std::move(name), std::move(t));
  return buffers_.back().second;
}

template <class P>
void BasicModule<P>::add_child(std::string name, ModulePtr m) {
  check_free_name(name, "module");
  EMBER_CHECK(m != nullptr, "[register_module] submodule '{}' of {} is empty", name, type_name_);
  children_.emplace_back(std::move(name), std::move(m));
}

template <class P>
void BasicModule<P>::unregister_module(const std::string& name) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  EMBER_CHECK(it != children_.end(), "[unregister_module] {} has no submodule named '{}'", type_name_, name);
  child_unregistering(name);  // may refuse (throws) before anything changed
  children_.erase(it);
}

template <class P>
void BasicModule<P>::set_children(std::vector<std::pair<std::string, ModulePtr>> children) {
  // Every check first: a refusal leaves the registrations as they were.
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string& name = children[i].first;  // (not a structured binding: lambdas capture it)
    const ModulePtr& m = children[i].second;
    detail::check_name(name, type_name_, "module");
    EMBER_CHECK(m != nullptr, "[register_module] submodule '{}' of {} is empty", name, type_name_);
    auto taken = [&](const auto& list) {
      return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
    };
    EMBER_CHECK(!taken(params_) && !taken(buffers_) &&
                    std::none_of(children.begin(), children.begin() + static_cast<std::ptrdiff_t>(i),
                                 [&](const auto& e) { return e.first == name; }),
                "[register_module] {} already has an attribute named '{}'", type_name_, name);
  }
  children_ = std::move(children);
}

template <class P>
void BasicModule<P>::collect(BasicTensorList<P>& out, const std::string& prefix, bool params, bool recurse,
                             Memo& modules, Memo& tensors) const {
  if (!modules.insert(this).second) return;  // a module registered twice: listed under its first name
  for (const auto& [n, t] : params ? params_ : buffers_)
    if (t.defined() && tensors.insert(&t.impl()).second) out.insert(prefix + n, t);
  if (!recurse) return;
  for (const auto& [n, c] : children_) c->collect(out, prefix + n + ".", params, true, modules, tensors);
}

template <class P>
std::vector<BasicTensor<P>> BasicModule<P>::parameters(bool recurse) const {
  std::vector<TensorT> out;
  std::unordered_set<const void*> seen;  // a module registered twice shares its parameters
  for (auto& [n, t] : named_parameters(recurse))
    if (seen.insert(&t.impl()).second) out.push_back(t);
  return out;
}

template <class P>
BasicTensorList<P> BasicModule<P>::named_parameters(bool recurse) const {
  BasicTensorList<P> out("Parameter");
  Memo modules, tensors;
  collect(out, "", true, recurse, modules, tensors);
  return out;
}

template <class P>
std::vector<BasicTensor<P>> BasicModule<P>::buffers(bool recurse) const {
  std::vector<TensorT> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

template <class P>
BasicTensorList<P> BasicModule<P>::named_buffers(bool recurse) const {
  BasicTensorList<P> out("Buffer");
  Memo modules, tensors;
  collect(out, "", false, recurse, modules, tensors);
  return out;
}

template <class P>
auto BasicModule<P>::children() const -> std::vector<ModulePtr> {
  std::vector<ModulePtr> out;
  for (auto& [n, c] : children_) out.push_back(c);
  return out;
}

template <class P>
auto BasicModule<P>::modules(bool include_self) -> std::vector<ModulePtr> {
  std::vector<ModulePtr> out;
  for (auto& [n, m] : named_modules("", include_self)) out.push_back(m);
  return out;
}

template <class P>
auto BasicModule<P>::named_children() const -> OrderedDict<std::string, ModulePtr> {
  OrderedDict<std::string, ModulePtr> out("Submodule");
  for (const auto& [n, c] : children_) out.insert(n, c);
  return out;
}

template <class P>
auto BasicModule<P>::named_modules(const std::string& prefix, bool include_self)
    -> OrderedDict<std::string, ModulePtr> {
  OrderedDict<std::string, ModulePtr> out("Module");
  Memo seen;
  seen.insert(this);
  if (include_self) {
    ModulePtr self = this->weak_from_this().lock();
    EMBER_CHECK(self != nullptr,
                "[modules] {} is not owned by a std::shared_ptr (make it with std::make_shared or a module handle)",
                type_name_);
    out.insert(prefix, self);
  }
  for (auto& [n, c] : children_) c->named_modules_into(out, prefix.empty() ? n : prefix + "." + n, c, seen);
  return out;
}

template <class P>
void BasicModule<P>::named_modules_into(OrderedDict<std::string, ModulePtr>& out, const std::string& prefix,
                                        const ModulePtr& self, Memo& seen) {
  if (!seen.insert(this).second) return;
  out.insert(prefix, self);
  for (auto& [n, c] : children_) c->named_modules_into(out, prefix + "." + n, c, seen);
}

template <class P>
int64_t BasicModule<P>::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const TensorT& t : parameters())
    if (!trainable_only || t.requires_grad()) n += t.numel();
  return n;
}

template <class P>
void BasicModule<P>::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

template <class P>
void BasicModule<P>::to(DType dtype) {
  EMBER_CHECK(is_floating(dtype), "[module.to] modules convert to floating dtypes only, got {}", dtype);
  ember::detail::NoGradGuardFor<P> ng;
  auto convert = [&](TensorT& t) {
    if (!t.defined() || !t.is_floating_point() || t.dtype() == dtype) return;
    detail::convert_in_place(t, [&](const TensorT& x) { return x.to(dtype); });
  };
  for (auto& [n, t] : params_) convert(t);
  for (auto& [n, t] : buffers_) convert(t);
  for (auto& [n, c] : children_) c->to(dtype);
}

template <class P>
void BasicModule<P>::to(Device device) {
  ember::detail::NoGradGuardFor<P> ng;
  auto move = [&](TensorT& t) {
    if (!t.defined() || t.device() == device) return;
    detail::convert_in_place(t, [&](const TensorT& x) { return x.to(device); });
  };
  for (auto& [n, t] : params_) move(t);
  for (auto& [n, t] : buffers_) move(t);
  for (auto& [n, c] : children_) c->to(device);
}

template <class P>
void BasicModule<P>::zero_grad(bool set_to_none) {
  for (TensorT t : parameters()) t.zero_grad(set_to_none);
}

template <class P>
void BasicModule<P>::apply(const std::function<void(BasicModule&)>& fn) {
  for (auto& [n, c] : children_) c->apply(fn);
  fn(*this);
}

template <class P>
BasicTensorList<P> BasicModule<P>::state_dict() const {
  BasicTensorList<P> out;
  std::function<void(const BasicModule&, const std::string&)> walk = [&](const BasicModule& m, const std::string& pre) {
    for (const auto& [n, t] : m.params_)
      if (t.defined()) out.insert(pre + n, t.detach());
    for (const auto& [n, t] : m.buffers_)
      if (t.defined() && m.persistent(n)) out.insert(pre + n, t.detach());
    for (const auto& [n, c] : m.children_) walk(*c, pre + n + ".");
  };
  walk(*this, "");
  return out;
}

template <class P>
LoadResult BasicModule<P>::load_state_dict(const BasicTensorList<P>& dict, bool strict) {
  const BasicTensorList<P> mine = state_dict();
  LoadResult r;
  std::vector<std::string> mismatches;
  for (const auto& [name, src] : dict) {
    const TensorT* dst = mine.find(name);
    if (dst == nullptr) {
      r.unexpected_keys.push_back(name);
    } else if (!src.defined()) {
      mismatches.push_back(EMBER_FORMAT("'{}': undefined tensor in the state dict", name));
    } else if (src.sizes() != dst->sizes()) {
      mismatches.push_back(EMBER_FORMAT("'{}': shape {} in the state dict, {} in the module", name, src.sizes(),
                                       dst->sizes()));
    } else if (src.dtype() != dst->dtype()) {
      mismatches.push_back(EMBER_FORMAT("'{}': dtype {} in the state dict, {} in the module", name, src.dtype(),
                                       dst->dtype()));
    }
  }
  for (const auto& [name, t] : mine)
    if (!dict.contains(name)) r.missing_keys.push_back(name);
  if (!mismatches.empty() || (strict && (!r.missing_keys.empty() || !r.unexpected_keys.empty()))) {
    std::string msg = EMBER_FORMAT("[load_state_dict] the state dict does not fit {}:", type_name_);
    for (const auto& k : r.missing_keys) msg += EMBER_FORMAT("\n  missing key '{}'", k);
    for (const auto& k : r.unexpected_keys) msg += EMBER_FORMAT("\n  unexpected key '{}'", k);
    for (const auto& m : mismatches) msg += "\n  mismatch " + m;
    if (strict || !mismatches.empty()) EMBER_FAIL("{}", msg);
  }
  ember::detail::NoGradGuardFor<P> ng;
  for (const auto& [name, src] : dict)
    if (const TensorT* dst = mine.find(name)) TensorT(*dst).copy_(src);
  return r;
}

template <class P>
auto BasicModule<P>::clone() const -> ModulePtr {
  EMBER_FAIL("[clone] {} cannot be cloned: derive it from nn::Cloneable<{}Impl> and rebuild its state in reset()",
             type_name_, type_name_);
}

template <class P>
void BasicModule<P>::copy_state_into(BasicModule& dst) const {
  auto copy_list = [&](const auto& from, auto& to, const char* what) {
    for (const auto& entry : from) {
      // Named, not a structured binding: clang before 16 cannot capture those in a lambda.
      const std::string& n = entry.first;
      const TensorT& t = entry.second;
      auto it = std::find_if(to.begin(), to.end(), [&](const auto& e) { return e.first == n; });
      EMBER_CHECK(it != to.end(), "[clone] reset() of {} did not recreate {} '{}'", type_name_, what, n);
      if (!t.defined()) continue;
      TensorT fresh = t.detach().clone();
      ember::detail::adopt_elements(it->second.impl(), fresh.impl());
      if constexpr (autograd::detail::has_autograd<P>())
        if (t.requires_grad() != it->second.requires_grad()) it->second.requires_grad_(t.requires_grad());
    }
  };
  copy_list(params_, dst.params_, "parameter");
  copy_list(buffers_, dst.buffers_, "buffer");
  dst.training_ = training_;
  for (const auto& child : children_) {
    const std::string& n = child.first;
    const auto& c = child.second;
    auto it = std::find_if(dst.children_.begin(), dst.children_.end(), [&](const auto& e) { return e.first == n; });
    EMBER_CHECK(it != dst.children_.end(), "[clone] reset() of {} did not recreate submodule '{}'", type_name_, n);
    c->copy_state_into(*it->second);
  }
}

template <class P>
void BasicModule<P>::print_tree(std::string& out, int indent) const {
  out += type_name_ + "(";
  const std::string extra = extra_repr();
  // As PyTorch's repr: a one-line extra_repr of a module without children stays on the
  // module's line; otherwise each of its lines goes on a line of its own, indented.
  const bool one_line = extra.find('\n') == std::string::npos;
  if (children_.empty() && one_line) {
    out += extra + ")";
    return;
  }
  // Appends, not "\n" + std::string(...): GCC 12 warns (-Wrestrict, a false positive) about
  // the concatenation of a literal and a temporary string at -O2.
  const auto new_line = [&out](int spaces) {
    out += '\n';
    out.append(static_cast<size_t>(spaces), ' ');
  };
  for (size_t start = 0; !extra.empty() && start <= extra.size();) {
    const size_t end = std::min(extra.find('\n', start), extra.size());
    new_line(indent + 2);
    out.append(extra, start, end - start);
    start = end + 1;
  }
  for (const auto& [n, c] : children_) {
    new_line(indent + 2);
    out += '(';
    out += n;
    out += "): ";
    c->print_tree(out, indent + 2);
  }
  new_line(indent);
  out += ')';
}

template <class P>
std::string BasicModule<P>::to_string() const {
  std::string out;
  print_tree(out, 0);
  out += EMBER_FORMAT("\nparameters: {} ({} trainable)", num_parameters(), num_parameters(true));
  return out;
}

extern template class BasicModule<DefaultPolicy>;

}  // namespace ember::nn
