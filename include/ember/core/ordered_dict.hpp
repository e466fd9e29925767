#pragma once
/// OrderedDict<Key, Value>: entries in insertion order with lookup by key, as libtorch's
/// torch::OrderedDict (what named_parameters() and state_dict() return):
///
///   for (auto& p : net->named_parameters()) fmt::print("{} {}\n", p.key(), p.value().sizes());
///   for (auto& [name, t] : net->named_parameters()) ...   // an item is also a std::pair
///   Tensor w = net->named_parameters()["fc.weight"];       // fails naming the missing key
///   if (Tensor* b = params.find("fc.bias")) ...
///
/// Keys are unique: inserting one that is present fails, naming it.

#include <ember/core/error.hpp>

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ember {

template <class Key, class Value>
class OrderedDict {
 public:
  /// One entry: key() and value() as in libtorch, first and second as a std::pair.
  class Item : public std::pair<Key, Value> {
   public:
    using std::pair<Key, Value>::pair;
    const Key& key() const { return this->first; }
    Value& value() { return this->second; }
    const Value& value() const { return this->second; }
    const std::pair<Key, Value>& pair() const { return *this; }
    Value& operator*() { return this->second; }
    const Value& operator*() const { return this->second; }
    Value* operator->() { return &this->second; }
    const Value* operator->() const { return &this->second; }
  };
  using value_type = Item;
  using iterator = typename std::vector<Item>::iterator;
  using const_iterator = typename std::vector<Item>::const_iterator;

  /// `key_description` names the keys in error messages ("Parameter 'w' is already present").
  OrderedDict() = default;
  explicit OrderedDict(std::string key_description) : key_description_(std::move(key_description)) {}
  /// Fails on a repeated key.
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& item : items) insert(item.first, item.second);
  }

  const std::string& key_description() const { return key_description_; }

  /// Appends (key, value) and returns the stored value; a key already present is an error.
  Value& insert(Key key, Value value) {
    auto [it, fresh] = index_.emplace(key, items_.size());
    EMBER_CHECK(fresh, "[OrderedDict] {} '{}' is already present", key_description_, key);
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  /// Inserts every entry of `other`, in order; a key already present is an error (as libtorch's).
  void update(const OrderedDict& other) {
    for (const Item& item : other) insert(item.first, item.second);
  }
  /// Removes `key`, keeping the order of the rest; an absent key is an error.
  void erase(const Key& key) {
    auto it = index_.find(key);
    EMBER_CHECK(it != index_.end(), "[OrderedDict] {} '{}' is not present", key_description_, key);
    const size_t pos = it->second;
    index_.erase(it);
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(pos));
    for (auto& [k, i] : index_)
      if (i > pos) --i;
  }
  void clear() {
    items_.clear();
    index_.clear();
  }
  void reserve(size_t n) { items_.reserve(n); }

  /// The value stored under `key`, or nullptr.
  template <class K>
  Value* find(const K& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  template <class K>
  const Value* find(const K& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  template <class K>
  bool contains(const K& key) const {
    return index_.find(key) != index_.end();
  }
  /// The value stored under `key`; fails naming it when absent.
  Value& operator[](const Key& key) { return at(key); }
  const Value& operator[](const Key& key) const { return at(key); }
  template <class K>
  Value& at(const K& key) {
    return const_cast<Value&>(std::as_const(*this).at(key));
  }
  template <class K>
  const Value& at(const K& key) const {
    const Value* v = find(key);
    EMBER_CHECK(v != nullptr, "[OrderedDict] {} '{}' is not among the {} entries", key_description_, key,
                items_.size());
    return *v;
  }
  /// The entry at position i (insertion order); fails when i is out of range.
  Item& operator[](size_t i) { return const_cast<Item&>(std::as_const(*this)[i]); }
  const Item& operator[](size_t i) const {
    EMBER_CHECK(i < items_.size(), "[OrderedDict] index {} is out of range for {} entries", i, items_.size());
    return items_[i];
  }
  Item& front() { return (*this)[size_t{0}]; }
  const Item& front() const { return (*this)[size_t{0}]; }
  Item& back() { return (*this)[items_.size() - 1]; }
  const Item& back() const { return (*this)[items_.size() - 1]; }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  bool empty() const { return items_.empty(); }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

  const std::vector<Item>& items() const { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.second);
    return out;
  }
  std::vector<std::pair<Key, Value>> pairs() const { return {items_.begin(), items_.end()}; }

 private:
  std::string key_description_ = "Key";
  std::vector<Item> items_;
  std::map<Key, size_t, std::less<>> index_;  // transparent: find(std::string_view) on string keys
};

}  // namespace ember
