#pragma once
/// Collation: turning the examples of a batch into batch tensors.
///
/// Stack (the DataLoader's default) stacks per field: a Tensor example gives a [B, ...]
/// tensor; a vector of tensors gives a vector of stacked tensors; a pair/tuple gives a tuple
/// with each Tensor field stacked and each number field made a [B] tensor (bool stays bool,
/// other integers become i64, floating f64, as PyTorch's default_collate). collate_then(collate, f) applies a batch
/// transform after collating, with the batch's own generator when f takes one.
///
/// Note [Batches cross threads]: Ember's CPU allocator caches freed blocks per thread. A batch
/// made on a worker and freed on the training thread would land in the training thread's
/// cache, which only grows when the workers keep allocating: an unbounded leak over an
/// epoch. So Stack writes batches into memory of their own (malloc'd, freed by the last
/// tensor that uses it, through from_blob's deleter), and the DataLoader moves any batch
/// tensor a custom collate left in the cache into such memory before handing it over.

#include <ember/data/generator.hpp>
#include <ember/ember.hpp>

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::data {

namespace detail {
/// Stacks equal-shaped tensors into a new [B, ...] tensor in memory of its own (see Note
/// [Batches cross threads]); errors name `what` (the field) and the offending example.
Tensor stack_owned(const std::vector<Tensor>& rows, const std::string& what);
/// A [B] i64 or f64 tensor in memory of its own from numbers.
Tensor numbers_owned(const std::vector<int64_t>& values);
Tensor numbers_owned(const std::vector<double>& values);
Tensor bools_owned(const std::vector<uint8_t>& values);  ///< 0 or 1 each
/// `t` itself when its memory is its own or on a device; else a copy in memory of its own.
Tensor own_memory(const Tensor& t);

template <class T>
inline constexpr bool is_tensor_v = std::is_same_v<std::remove_cvref_t<T>, Tensor>;

template <class T>
struct is_tuple_like : std::false_type {};
template <class... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};

/// Calls f(Tensor&) on every tensor of a batch (a Tensor, a vector of batches, a pair/tuple);
/// other values are left alone.
template <class B, class F>
void for_each_tensor(B& batch, F&& f) {
  using T = std::remove_cvref_t<B>;
  if constexpr (std::is_same_v<T, Tensor>) {
    f(batch);
  } else if constexpr (is_tuple_like<T>::value) {
    std::apply([&](auto&... parts) { (for_each_tensor(parts, f), ...); }, batch);
  } else if constexpr (requires { batch.begin(); batch.end(); }) {
    for (auto& part : batch) for_each_tensor(part, f);
  }
}
}  // namespace detail

/// The default collate: stack per field (see above).
struct Stack {
  template <class E>
  auto operator()(std::vector<E>&& examples) const {
    EMBER_CHECK(!examples.empty(), "[collate] cannot collate an empty batch");
    if constexpr (std::is_same_v<E, Tensor>) {
      return detail::stack_owned(examples, "the example");
    } else if constexpr (std::is_same_v<E, std::vector<Tensor>>) {
      size_t fields = examples[0].size();
      std::vector<Tensor> out;
      out.reserve(fields);
      for (size_t k = 0; k < fields; ++k) {
        std::vector<Tensor> rows;
        rows.reserve(examples.size());
        for (size_t i = 0; i < examples.size(); ++i) {
          EMBER_CHECK(examples[i].size() == fields, "[collate] example {} of the batch has {} fields, example 0 has {}",
                      i, examples[i].size(), fields);
          rows.push_back(std::move(examples[i][k]));
        }
        out.push_back(detail::stack_owned(rows, "field " + std::to_string(k)));
      }
      return out;
    } else if constexpr (detail::is_tuple_like<E>::value) {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return std::make_tuple(collate_field<I>(examples)...);
      }(std::make_index_sequence<std::tuple_size_v<E>>{});
    } else {
      static_assert(sizeof(E) == 0,
                    "data::Stack collates Tensor, std::vector<Tensor> and pairs/tuples of tensors and numbers; "
                    "pass your own collate function to the DataLoader for other example types");
    }
  }

 private:
  template <size_t I, class E>
  static Tensor collate_field(std::vector<E>& examples) {
    using F = std::remove_cvref_t<std::tuple_element_t<I, E>>;
    if constexpr (std::is_same_v<F, Tensor>) {
      std::vector<Tensor> rows;
      rows.reserve(examples.size());
      for (auto& e : examples) rows.push_back(std::move(std::get<I>(e)));
      return detail::stack_owned(rows, "field " + std::to_string(I));
    } else if constexpr (std::is_same_v<F, bool>) {  // a bool tensor, as PyTorch's default_collate
      std::vector<uint8_t> v;
      v.reserve(examples.size());
      for (auto& e : examples) v.push_back(std::get<I>(e) ? 1 : 0);
      return detail::bools_owned(v);
    } else if constexpr (std::is_arithmetic_v<F>) {
      using N = std::conditional_t<std::is_floating_point_v<F>, double, int64_t>;
      std::vector<N> v;
      v.reserve(examples.size());
      for (auto& e : examples) v.push_back(static_cast<N>(std::get<I>(e)));
      return detail::numbers_owned(v);
    } else {
      static_assert(sizeof(F) == 0, "data::Stack collates tuple fields that are Tensors or numbers");
    }
  }
};

/// Calls collate(examples, rng) or collate(examples), whichever it accepts.
template <class C, class E>
auto invoke_collate(const C& collate, std::vector<E>&& examples, Generator& rng) {
  if constexpr (std::is_invocable_v<const C&, std::vector<E>&&, Generator&>)
    return std::invoke(collate, std::move(examples), rng);
  else
    return std::invoke(collate, std::move(examples));
}

/// A collate that runs `collate`, then batch transform `transform` (called with the batch's
/// generator when it takes a Generator&; see batch_seed in data/generator.hpp).
template <class C, class F>
struct CollateThen {
  C collate;
  F transform;
  template <class E>
  auto operator()(std::vector<E>&& examples, Generator& rng) const {
    auto batch = invoke_collate(collate, std::move(examples), rng);
    if constexpr (std::is_invocable_v<const F&, decltype(batch)&&, Generator&>)
      return std::invoke(transform, std::move(batch), rng);
    else
      return std::invoke(transform, std::move(batch));
  }
};

/// `collate` followed by batch transform `transform`, e.g.
/// collate_then(Stack(), field(0, RandomHorizontalFlip())).
template <class C, class F>
CollateThen<C, F> collate_then(C collate, F transform) {
  return {std::move(collate), std::move(transform)};
}

}  // namespace ember::data
