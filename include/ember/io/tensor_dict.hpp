#pragma once
/// BasicTensorDict<P>: named tensors in a fixed order, with lookup by name. The model-file
/// readers return one (in the file's order) and the writers take one (and keep its order).
///
///   ember::io::TensorDict d{{"weight", w}, {"bias", b}};
///   d.insert("running_mean", m);
///   for (const auto& [name, t] : d) ...
///   d.at("weight")                  // fails naming the missing key (also d["weight"])

#include <ember/core/error.hpp>
#include <ember/core/ordered_dict.hpp>
#include <ember/core/tensor.hpp>
#include <ember/dispatch/default_policy.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace ember::io {

namespace detail {
using TensorRef = ember::detail::Ref<ember::detail::TensorImpl>;
/// What the compiled readers return and the writers take, free of any policy.
using NamedTensors = std::vector<std::pair<std::string, TensorRef>>;
}  // namespace detail

/// An OrderedDict of tensors (key(), value(), find, contains, keys(), ...) that refuses
/// undefined tensors, since a file cannot hold one.
template <class P = DefaultPolicy>
class BasicTensorDict : public OrderedDict<std::string, BasicTensor<P>> {
  using Base = OrderedDict<std::string, BasicTensor<P>>;

 public:
  BasicTensorDict() : Base("Tensor") {}
  /// Fails on a repeated name.
  BasicTensorDict(std::initializer_list<typename Base::Item> items) : BasicTensorDict() {
    for (const auto& [name, t] : items) insert(name, t);
  }
  /// Wraps what a reader returned (names already unique).
  explicit BasicTensorDict(detail::NamedTensors items) : BasicTensorDict() {
    this->reserve(items.size());
    for (auto& [name, t] : items) insert(std::move(name), BasicTensor<P>(std::move(t)));
  }

  /// Appends `t` under `name`; an undefined tensor or a name already present is an error.
  BasicTensor<P>& insert(std::string name, BasicTensor<P> t) {
    EMBER_CHECK(t.defined(), "[TensorDict] tensor '{}' is undefined", name);
    return Base::insert(std::move(name), std::move(t));
  }
  /// Not offered: it would bypass insert's check.
  void update(const Base&) = delete;

  /// The entries as the compiled writers take them.
  detail::NamedTensors refs() const {
    detail::NamedTensors r;
    r.reserve(this->size());
    for (const auto& [name, t] : *this) {
      // insert refuses undefined tensors, but the values can be reassigned through d["name"].
      EMBER_CHECK(t.defined(), "[TensorDict] tensor '{}' is undefined", name);
      r.emplace_back(name, t.impl_ref());
    }
    return r;
  }
};

using TensorDict = BasicTensorDict<>;

}  // namespace ember::io
