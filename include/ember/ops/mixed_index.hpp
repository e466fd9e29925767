#pragma once
/// Index expressions that mix index tensors with integers, slices, None and Ellipsis:
/// x.index({Slice(), idx}), x.index({Ellipsis, mask}), x.index_put_({0, Slice(), idx}, v).
/// As PyTorch: the integers, slices, None and Ellipsis apply first (a view, each index tensor
/// standing for full slices over the dims it indexes: one for an i64 tensor, as many as it
/// has for a bool mask); the index tensors then pick along their dims. The picked dims are
/// replaced by the broadcast shape of the index tensors, where the first of them was when they
/// are next to each other, else in front.

#include <ember/core/tensor.hpp>
#include <ember/ops/descriptors.hpp>

#include <span>
#include <utility>
#include <vector>

namespace ember::detail {

/// The view of x that advanced indexing acts on, with the indexed dims moved to the front.
template <class P>
struct AdvancedIndexPlan {
  BasicTensor<P> front;                 ///< the view, indexed dims first (in order), then the rest
  std::vector<BasicTensor<P>> tensors;  ///< the index tensors, in order
  int64_t indexed_dims = 0;             ///< how many leading dims of `front` they index
  /// Where PyTorch puts the broadcast dims among the remaining ones: the first indexed dim
  /// when the index tensors are next to each other, else 0 (in front).
  int64_t result_position = 0;
};

template <class P>
AdvancedIndexPlan<P> plan_advanced_index(const BasicTensor<P>& x, std::span<const TensorIndex> idx) {
  using K = TensorIndex::Kind;
  auto dims_of = [](const TensorIndex& i) -> int64_t {  // input dims an entry consumes
    if (i.kind == K::Integer || i.kind == K::Slice) return 1;
    if (i.kind != K::Tensor) return 0;
    return i.tensor->dtype == DType::Bool ? i.tensor->ndim() : 1;
  };
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& i : idx) {
    consumed += dims_of(i);
    ellipses += i.kind == K::Ellipsis;
    if (i.kind == K::Tensor)
      EMBER_CHECK(i.tensor->dtype == DType::Bool ? i.tensor->ndim() > 0
                                                 : i.tensor->dtype == DType::I64 || i.tensor->dtype == DType::I32,
                  "[index] an index tensor must be i64, i32 or a bool mask of rank >= 1, got a {} tensor of shape {}",
                  i.tensor->dtype, i.tensor->sizes);
  }
  EMBER_CHECK(ellipses <= 1, "[index] at most one Ellipsis is allowed");
  EMBER_CHECK(consumed <= x.dim(), "[index] too many indices ({}) for a tensor of shape {}", consumed, x.sizes());

  // The basic part, each index tensor replaced by full slices; and where each lands in it.
  std::vector<TensorIndex> basic;
  std::vector<std::pair<int64_t, int64_t>> spans;  // (first dim in the view, dims)
  std::vector<int64_t> x_dims;                      // the first dim of x each tensor indexes
  AdvancedIndexPlan<P> plan;
  int64_t d = 0, in = 0;  // dims of the view produced so far; dims of x consumed so far
  for (const TensorIndex& i : idx) {
    switch (i.kind) {
      case K::Integer: basic.push_back(i), ++in; break;
      case K::Slice: basic.push_back(i), ++d, ++in; break;
      case K::None: basic.push_back(i), ++d; break;
      case K::Ellipsis: basic.push_back(i), d += x.dim() - consumed, in += x.dim() - consumed; break;
      case K::Tensor: {
        const int64_t k = dims_of(i);
        for (int64_t j = 0; j < k; ++j) basic.push_back(Slice());
        spans.emplace_back(d, k);
        x_dims.push_back(in);
        plan.tensors.push_back(BasicTensor<P>(i.tensor));
        d += k, in += k;
        break;
      }
    }
  }
  const BasicTensor<P> view = x.index(std::span<const TensorIndex>(basic));

  // Checked here, where the dims can be named as x's (the picking below runs on a permuted
  // view).
  for (size_t s = 0; s < spans.size(); ++s) {
    const BasicTensor<P>& t = plan.tensors[s];
    const auto [first, k] = spans[s];
    if (t.dtype() == DType::Bool) {
      Shape covered;
      for (int64_t j = first; j < first + k; ++j) covered.push_back(view.size(j));
      EMBER_CHECK(t.sizes() == covered,
                  "[index] a mask of shape {} does not match the shape {} of the dims it indexes (dims {} to {} of "
                  "the indexed tensor of shape {})",
                  t.sizes(), covered, x_dims[s], x_dims[s] + k - 1, x.sizes());
    } else if (t.numel() > 0) {
      const int64_t n = view.size(first), lo = t.min().template item<int64_t>(), hi = t.max().template item<int64_t>();
      for (int64_t bad : {lo, hi})
        EMBER_CHECK(bad >= -n && bad < n, "[index] index {} is out of bounds for dim {} with size {}", bad, x_dims[s],
                    n);
    }
  }

  bool adjacent = true;
  for (size_t s = 1; s < spans.size(); ++s) adjacent &= spans[s].first == spans[s - 1].first + spans[s - 1].second;
  Shape perm;
  std::vector<bool> is_indexed(static_cast<size_t>(view.dim()), false);
  for (auto [first, k] : spans)
    for (int64_t j = first; j < first + k; ++j) perm.push_back(j), is_indexed[static_cast<size_t>(j)] = true;
  plan.indexed_dims = perm.ndim();
  for (int64_t j = 0; j < view.dim(); ++j)
    if (!is_indexed[static_cast<size_t>(j)]) perm.push_back(j);
  plan.front = view.permute(perm);
  plan.result_position = adjacent ? spans.front().first : 0;
  return plan;
}

/// The permutation that moves `count` dims at the front of a rank-n tensor to `position`
/// (after the next `position` dims); its inverse when `inverse`.
inline Shape move_front_dims(int64_t n, int64_t count, int64_t position, bool inverse) {
  Shape perm;
  if (!inverse) {
    for (int64_t j = 0; j < position; ++j) perm.push_back(count + j);
    for (int64_t j = 0; j < count; ++j) perm.push_back(j);
  } else {
    for (int64_t j = 0; j < count; ++j) perm.push_back(position + j);
    for (int64_t j = 0; j < position; ++j) perm.push_back(j);
  }
  for (int64_t j = count + position; j < n; ++j) perm.push_back(j);
  return perm;
}

/// The entries with each 0-d integer tensor turned into its integer, as PyTorch does (so it
/// selects, and does not separate the index tensors around it; a 0-d u8 is a mask there, which
/// Ember refuses); and the index tensors left.
template <class P>
std::vector<BasicTensor<P>> integers_for_0d_tensors(std::span<const TensorIndex> idx, std::vector<TensorIndex>& out) {
  std::vector<BasicTensor<P>> tensors;
  out.assign(idx.begin(), idx.end());
  for (TensorIndex& i : out) {
    if (i.kind != TensorIndex::Kind::Tensor) continue;
    BasicTensor<P> t(i.tensor);
    if (t.dim() == 0 && is_integral(t.dtype()) && t.dtype() != DType::U8) i = TensorIndex(t.template item<int64_t>());
    else tensors.push_back(std::move(t));
  }
  return tensors;
}

template <class P>
BasicTensor<P> index_with_tensors(const BasicTensor<P>& x, std::span<const TensorIndex> given) {
  std::vector<TensorIndex> idx;
  std::vector<BasicTensor<P>> tensors = integers_for_0d_tensors<P>(given, idx);
  if (tensors.empty()) return x.index(std::span<const TensorIndex>(idx));  // basic indexing after all
  if (tensors.size() == idx.size()) return x.index(tensors);              // only tensors: leading dims
  AdvancedIndexPlan<P> plan = plan_advanced_index(x, std::span<const TensorIndex>(idx));
  BasicTensor<P> r = plan.front.index(plan.tensors);  // broadcast dims first, then the rest
  if (plan.result_position == 0) return r;
  const int64_t broadcast_dims = r.dim() - (plan.front.dim() - plan.indexed_dims);
  return r.permute(move_front_dims(r.dim(), broadcast_dims, plan.result_position, false));
}

template <class P>
void index_put_with_tensors(const BasicTensor<P>& x, std::span<const TensorIndex> given, const BasicTensor<P>& v) {
  std::vector<TensorIndex> idx;
  std::vector<BasicTensor<P>> tensors = integers_for_0d_tensors<P>(given, idx);
  BasicTensor<P> target = x;  // a handle: index_put_ writes into x's storage
  if (tensors.empty()) {
    target.index_put_(std::span<const TensorIndex>(idx), v);
    return;
  }
  // Leading size-1 dims of the values are dropped, as PyTorch's assignment does
  // (broadcasting puts back any that are needed).
  BasicTensor<P> values = v;
  while (values.dim() > 0 && values.size(0) == 1) values = values.squeeze(0);
  if (tensors.size() == idx.size()) {
    target.index_put_(tensors, values);
    return;
  }
  AdvancedIndexPlan<P> plan = plan_advanced_index(x, std::span<const TensorIndex>(idx));
  if (plan.result_position != 0) {
    // v is shaped as the indexing result, whose broadcast dims sit at result_position; the
    // write through `front` takes them first. Masks count their true elements.
    Shape broadcast;
    for (const BasicTensor<P>& t : plan.tensors) {
      Shape s = t.dtype() == DType::Bool ? Shape{t.count_nonzero().template item<int64_t>()} : t.sizes();
      broadcast = broadcast.empty() ? s : ops::broadcast_shapes(broadcast, s, "index_put_");
    }
    Shape result;
    for (int64_t j = plan.indexed_dims; j < plan.front.dim(); ++j) result.push_back(plan.front.size(j));
    for (size_t j = 0; j < broadcast.size(); ++j)
      result.insert(static_cast<size_t>(plan.result_position) + j, broadcast[j]);
    EMBER_CHECK(values.dim() <= result.ndim() && ops::broadcast_shapes(values.sizes(), result, "index_put_") == result,
                "[index_put_] values of shape {} do not broadcast to the indexed shape {}", v.sizes(), result);
    values = values.expand(result).permute(
        move_front_dims(result.ndim(), broadcast.ndim(), plan.result_position, true));
  }
  plan.front.index_put_(plan.tensors, values);
}

}  // namespace ember::detail
