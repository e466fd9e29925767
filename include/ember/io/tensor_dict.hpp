#pragma once
/// BasicTensorDict<P>: named tensors in a fixed order, with lookup by name. The model-file
/// readers return one (in the file's order) and the writers take one (and keep its order).
///
///   ember::io::TensorDict d{{"weight", w}, {"bias", b}};
///   d.insert("running_mean", m);
///   for (const auto& [name, t] : d) ...
///   d.at("weight")                  // fails naming the missing key

#include <ember/core/error.hpp>
#include <ember/core/tensor.hpp>
#include <ember/dispatch/default_policy.hpp>

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::io {

namespace detail {
using TensorRef = ember::detail::Ref<ember::detail::TensorImpl>;
/// What the compiled readers return and the writers take, free of any policy.
using NamedTensors = std::vector<std::pair<std::string, TensorRef>>;
}  // namespace detail

template <class P = DefaultPolicy>
class BasicTensorDict {
 public:
  using value_type = std::pair<std::string, BasicTensor<P>>;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  BasicTensorDict() = default;
  /// Fails on a repeated name.
  BasicTensorDict(std::initializer_list<value_type> items) {
    for (const auto& [name, t] : items) insert(name, t);
  }
  /// Wraps what a reader returned (names already unique).
  explicit BasicTensorDict(detail::NamedTensors items) {
    for (auto& [name, t] : items) insert(std::move(name), BasicTensor<P>(std::move(t)));
  }

  /// Appends `t` under `name`; a name already present is an error.
  void insert(std::string name, BasicTensor<P> t) {
    EMBER_CHECK(t.defined(), "[TensorDict] tensor '{}' is undefined", name);
    auto [it, fresh] = index_.emplace(name, items_.size());
    EMBER_CHECK(fresh, "[TensorDict] the name '{}' is already present", name);
    items_.emplace_back(std::move(name), std::move(t));
  }
  bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }
  /// The tensor named `name`; fails naming it when absent.
  const BasicTensor<P>& at(std::string_view name) const {
    auto it = index_.find(name);
    EMBER_CHECK(it != index_.end(), "[TensorDict] no tensor named '{}' among {} tensors", name, items_.size());
    return items_[it->second].second;
  }
  const BasicTensor<P>& operator[](std::string_view name) const { return at(name); }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  /// The names, in order.
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    k.reserve(items_.size());
    for (const auto& item : items_) k.push_back(item.first);
    return k;
  }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

  /// The entries as the compiled writers take them.
  detail::NamedTensors refs() const {
    detail::NamedTensors r;
    r.reserve(items_.size());
    for (const auto& [name, t] : items_) r.emplace_back(name, t.impl_ref());
    return r;
  }

 private:
  std::vector<value_type> items_;
  std::map<std::string, size_t, std::less<>> index_;
};

using TensorDict = BasicTensorDict<>;

}  // namespace ember::io
