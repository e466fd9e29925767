#pragma once
/// Datasets: anything with `size()` and `get(index)` (the Dataset concept), TensorDataset over
/// tensors that share dim 0, and map() to apply a transform to every example.
///
///   data::TensorDataset ds({images, labels});          // example: {images[i], labels[i]}
///   auto aug = data::map(ds, data::field(0, data::RandomHorizontalFlip()));
///
/// A dataset may also offer `get(index, SampleContext&)`: the DataLoader then passes the
/// sample's own generator, so random transforms are reproducible (Note [Per-sample seeds] in
/// data/generator.hpp). Datasets used with num_workers > 0 are read from several threads at
/// once: `get` must be safe to call concurrently (it is const).

#include <ember/data/generator.hpp>
#include <ember/ember.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::data {

/// What a dataset's `get(index, ctx)` receives from the DataLoader for one sample.
struct SampleContext {
  int64_t epoch = 0;
  int64_t index = 0;
  /// Seeded by sample_seed(loader seed, epoch, index), stream `repeat`.
  Generator rng;

  /// The context the DataLoader builds for sample `index` of `epoch` under `seed`, drawn for
  /// the (repeat + 1)-th time in that epoch (Note [Per-sample seeds]).
  static SampleContext make(uint64_t seed, int64_t epoch, int64_t index, uint32_t repeat = 0) {
    return {epoch, index,
            Generator(sample_seed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index)), repeat)};
  }
};

/// A map-style dataset: `size()` examples, example i from `get(i)` (const, thread-safe).
template <class D>
concept Dataset = requires(const D& d, int64_t i) {
  { d.size() } -> std::convertible_to<int64_t>;
  d.get(i);
};

/// The example type of dataset D.
template <Dataset D>
using example_t = std::remove_cvref_t<decltype(std::declval<const D&>().get(int64_t{}))>;

/// Example i of `d`, through get(i, ctx) when the dataset takes a context.
template <Dataset D>
example_t<D> get_example(const D& d, int64_t i, SampleContext& ctx) {
  if constexpr (requires { d.get(i, ctx); })
    return d.get(i, ctx);
  else
    return d.get(i);
}

/// Tensors that share their first dimension; example i is the vector of their rows i (views,
/// no copy). Typical use: TensorDataset({inputs, targets}).
class TensorDataset {
 public:
  explicit TensorDataset(std::vector<Tensor> tensors);
  TensorDataset(std::initializer_list<Tensor> tensors) : TensorDataset(std::vector<Tensor>(tensors)) {}

  /// Row `index` of every tensor; index in [0, size()).
  std::vector<Tensor> get(int64_t index) const;
  int64_t size() const { return size_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
  int64_t size_ = 0;
};

/// `base` with `transform` applied to each example. The transform is called as
/// transform(example, rng) when it takes a Generator&, else as transform(example).
template <Dataset D, class F>
class MapDataset {
 public:
  MapDataset(D base, F transform) : base_(std::move(base)), transform_(std::move(transform)) {}

  /// Example i with the transform drawing from the context's generator.
  auto get(int64_t index, SampleContext& ctx) const {
    return call_transform(transform_, get_example(base_, index, ctx), ctx.rng);
  }
  /// Example i outside a DataLoader: random transforms draw as in epoch 0 under seed 0.
  auto get(int64_t index) const {
    SampleContext ctx = SampleContext::make(0, 0, index);
    return get(index, ctx);
  }
  int64_t size() const { return static_cast<int64_t>(base_.size()); }
  const D& base() const { return base_; }

  /// transform(x, rng) or transform(x), whichever it accepts.
  template <class T, class X>
  static auto call_transform(const T& t, X&& x, Generator& rng) {
    if constexpr (std::is_invocable_v<const T&, X&&, Generator&>)
      return std::invoke(t, std::forward<X>(x), rng);
    else
      return std::invoke(t, std::forward<X>(x));
  }

 private:
  D base_;
  F transform_;
};

/// `dataset` with `transform` applied to every example (see MapDataset).
template <Dataset D, class F>
MapDataset<D, F> map(D dataset, F transform) {
  return MapDataset<D, F>(std::move(dataset), std::move(transform));
}

namespace detail {
/// Calls f on field k of an example: a Tensor (k must be 0), a vector of tensors, or a
/// pair/tuple (its Tensor members; k must name one).
template <class E, class G>
void visit_field(E& example, size_t k, G&& f) {
  using T = std::remove_cvref_t<E>;
  if constexpr (std::is_same_v<T, Tensor>) {
    EMBER_CHECK(k == 0, "[field] the example is a single tensor; field {} does not exist", k);
    f(example);
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    EMBER_CHECK(k < example.size(), "[field] the example has {} fields; field {} does not exist", example.size(), k);
    f(example[k]);
  } else {
    constexpr size_t n = std::tuple_size_v<T>;
    bool found = false;
    [&]<size_t... I>(std::index_sequence<I...>) {
      (([&] {
         if constexpr (std::is_same_v<std::remove_cvref_t<std::tuple_element_t<I, T>>, Tensor>) {
           if (I == k) {
             f(std::get<I>(example));
             found = true;
           }
         }
       }()),
       ...);
    }(std::make_index_sequence<n>{});
    EMBER_CHECK(found, "[field] field {} of a {}-field example is not a Tensor (or does not exist)", k, n);
  }
}
}  // namespace detail

/// An example transform that applies tensor transform `t` to field `k` only (e.g. the
/// images of {images, labels}). `t` takes (const Tensor&) or (const Tensor&, Generator&).
template <class T>
auto field(size_t k, T t) {
  return [k, t = std::move(t)]<class E>(E example, Generator& rng) {
    detail::visit_field(example, k, [&](Tensor& x) {
      if constexpr (std::is_invocable_v<const T&, const Tensor&, Generator&>)
        x = t(x, rng);
      else
        x = t(x);
    });
    return example;
  };
}

}  // namespace ember::data
