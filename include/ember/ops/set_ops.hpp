#pragma once
/// Membership and runs, as libtorch's: isin, unique_consecutive, unique_dim, combinations.
///
///   Tensor keep = isin(tokens, stop_words, false, true);   // true where a token is not a stop word
///   auto [runs, id, len] = unique_consecutive(labels, true, true);  // run-length encoding
///   auto [rows, which, n] = unique_dim(edges, 0, true, true, true);  // distinct rows, counted
///   Tensor pairs = combinations(points_index, 2);            // every unordered pair, as rows
///
/// isin's, unique_consecutive's and unique_dim's results are detached (PyTorch's record a
/// backward that raises); combinations is an index_select of its input, differentiable.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/counting.hpp>
#include <ember/ops/descriptors.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

namespace ember {

/// Whether each element of `elements` equals some element of `test_elements` (a bool tensor of
/// elements' shape; with invert, whether it equals none). Both are compared in their promoted
/// dtype, as PyTorch's (an i64 2^24 + 1 is in an f32 {2^24}); NaN is in nothing; -0 equals 0.
/// assume_unique is accepted for libtorch's signature (the search does not need it). Sorted
/// once, then a binary search per element: O((n + m) log m) on the host.
template <class P>
BasicTensor<P> isin(const BasicTensor<P>& elements, const BasicTensor<P>& test_elements, bool assume_unique = false,
                    bool invert = false) {
  (void)assume_unique;
  constexpr const char* op = "isin";
  EMBER_CHECK(elements.defined() && test_elements.defined(), "[{}] needs two defined tensors", op);
  const BasicTensor<P> ed = elements.detach(), td = test_elements.detach();
  EMBER_CHECK(elements.device() == test_elements.device() || test_elements.impl().wrapped_number,
              "[{}] elements are on {} but test_elements on {}", op, elements.device(), test_elements.device());
  const DType common = ops::result_type({&elements.impl(), &test_elements.impl()});
  const bool floating = is_floating(common);
  const BasicTensor<P> e = detail::host_values(ed.to(common), floating);
  const BasicTensor<P> t = detail::host_values(td.to(common), floating);
  BasicTensor<P> out = empty<P>(elements.sizes(), TensorOptions(DType::Bool));
  bool* found = out.template data_ptr<bool>();
  auto run = [&]<class T>(const T* ev, const T* tv) {
    std::vector<T> sorted;
    sorted.reserve(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i)
      if (tv[i] == tv[i]) sorted.push_back(tv[i]);  // NaN equals nothing
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < e.numel(); ++i)
      found[i] = (ev[i] == ev[i] && std::binary_search(sorted.begin(), sorted.end(), ev[i])) != invert;
  };
  if (floating) run(e.template data_ptr<double>(), t.template data_ptr<double>());
  else run(e.template data_ptr<int64_t>(), t.template data_ptr<int64_t>());
  return out.to(elements.device());
}
template <class P>
BasicTensor<P> isin(const BasicTensor<P>& elements, Scalar test_element, bool assume_unique = false,
                    bool invert = false) {
  EMBER_CHECK(elements.defined(), "[isin] needs a defined tensor");
  return isin(elements, elements.scalar_like(test_element), assume_unique, invert);
}
template <class P>
BasicTensor<P> isin(Scalar element, const BasicTensor<P>& test_elements, bool assume_unique = false,
                    bool invert = false) {
  EMBER_CHECK(test_elements.defined(), "[isin] needs a defined tensor");
  return isin(test_elements.scalar_like(element), test_elements, assume_unique, invert);
}

namespace detail {
/// The check unique_consecutive and unique_dim share: slices along dim d of x can be compared
/// only if no other dim is empty (PyTorch's rule; an empty dim d itself is fine).
template <class P>
void check_comparable_slices(const BasicTensor<P>& x, int64_t d, const char* op) {
  bool others_nonzero = true;
  for (int64_t k = 0; k < x.dim(); ++k) others_nonzero = others_nonzero && (k == d || x.size(k) > 0);
  EMBER_CHECK(others_nonzero, "[{}] shape {} has a dim of size 0 other than dim {}: its slices cannot be compared", op,
              x.sizes(), d);
}
}  // namespace detail

/// The first element of every run of equal consecutive elements (of the flattened tensor, or
/// the first slice of every run of equal slices along dim), with, when asked, the run each
/// element (slice) belongs to (inverse: x's shape, or (size(dim),)) and each run's length
/// (counts), i64; undefined otherwise. NaN starts a run of its own (NaN != NaN); -0 and 0 are
/// one run. As torch.unique_consecutive; detached.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> unique_consecutive(const BasicTensor<P>& x,
                                                                              bool return_inverse = false,
                                                                              bool return_counts = false,
                                                                              std::optional<int64_t> dim = std::nullopt) {
  constexpr const char* op = "unique_consecutive";
  EMBER_CHECK(x.defined(), "[{}] needs a defined tensor", op);
  const BasicTensor<P> v = x.detach();
  int64_t d = 0;
  BasicTensor<P> along;  // the tensor whose dim d holds the elements (slices) compared
  if (dim) {
    EMBER_CHECK(x.dim() >= 1, "[{}] dim {} given for a 0-d tensor", op, *dim);
    d = wrap_dim(*dim, x.dim(), op);
    detail::check_comparable_slices(x, d, op);  // empty only along dim, as PyTorch
    along = v;
  } else {
    along = v.reshape({-1});
  }
  const int64_t n = along.size(d);
  const TensorOptions index_options = TensorOptions(DType::I64).device(x.device());
  // Where a new run starts: the first slice, and every slice unequal to the one before.
  BasicTensor<P> starts_new;
  if (n <= 1) {
    starts_new = ones<P>({n}, TensorOptions(DType::Bool).device(x.device()));
  } else {
    BasicTensor<P> differ = along.narrow(d, 1, n - 1).ne(along.narrow(d, 0, n - 1));
    if (along.dim() > 1) differ = differ.movedim(d, 0).reshape({n - 1, -1}).any(Shape{1}, false);
    starts_new = cat(std::vector<BasicTensor<P>>{ones<P>({1}, TensorOptions(DType::Bool).device(x.device())), differ});
  }
  const BasicTensor<P> starts = nonzero(starts_new).reshape({-1});
  BasicTensor<P> values = along.index_select(d, starts), inverse, counts;
  if (return_inverse) {
    inverse = starts_new.to(DType::I64).cumsum(0) - 1;
    if (!dim) inverse = inverse.reshape(x.sizes());
  }
  if (return_counts) {  // from each start to the next (the last to n)
    const int64_t runs = starts.size(0);
    counts = runs == 0 ? starts
                       : cat(std::vector<BasicTensor<P>>{starts.narrow(0, 1, runs - 1), full<P>({1}, n, index_options)}) -
                             starts;
  }
  return {values, inverse, counts};
}

/// The distinct slices of x along dim, in lexicographic order (a slice compared as its
/// elements in order; NaN after every number, -0 equal to 0), with the inverse (for each slice
/// of x, its position among them, an i64 vector) and the counts when asked (undefined
/// otherwise, where libtorch always fills them). As at::unique_dim (torch.unique(x, dim=d));
/// a slice holding NaN equals no other slice, and of equal slices (-0 and 0) the first in x's
/// order is kept. Detached; sorted on the host (stable), O(n log n) slice comparisons.
/// `sorted` is accepted for libtorch's signature: the result is always sorted, as PyTorch's.
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> unique_dim(const BasicTensor<P>& x, int64_t dim,
                                                                      bool sorted = true, bool return_inverse = false,
                                                                      bool return_counts = false) {
  (void)sorted;
  constexpr const char* op = "unique_dim";
  EMBER_CHECK(x.defined(), "[{}] needs a defined tensor", op);
  EMBER_CHECK(x.dim() >= 1, "[{}] dim {} given for a 0-d tensor", op, dim);
  const int64_t d = wrap_dim(dim, x.dim(), op);
  detail::check_comparable_slices(x, d, op);
  const BasicTensor<P> v = x.detach();
  const int64_t n = v.size(d);
  const TensorOptions index_options = TensorOptions(DType::I64).device(x.device());
  if (n == 0) {
    return {v.clone(), return_inverse ? empty<P>({0}, index_options) : BasicTensor<P>(),
            return_counts ? empty<P>({0}, index_options) : BasicTensor<P>()};
  }
  const bool floating = v.is_floating_point();
  const BasicTensor<P> rows = detail::host_values(v.movedim(d, 0).reshape({n, -1}), floating);
  const int64_t m = rows.size(1);
  std::vector<int64_t> order(static_cast<size_t>(n)), run_of(static_cast<size_t>(n)), first, counts;
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  auto run = [&]<class T>(const T* r) {
    // Lexicographic, NaN last in each position: a strict weak order, so the sort is defined.
    auto less = [&](int64_t a, int64_t b) {
      for (int64_t k = 0; k < m; ++k) {
        const T va = r[a * m + k], vb = r[b * m + k];
        const bool na = va != va, nb = vb != vb;
        if (na || nb) {
          if (na != nb) return nb;  // a number before NaN
          continue;
        }
        if (va != vb) return va < vb;
      }
      return false;
    };
    auto equal = [&](int64_t a, int64_t b) {
      for (int64_t k = 0; k < m; ++k)
        if (!(r[a * m + k] == r[b * m + k])) return false;  // NaN equals nothing
      return true;
    };
    std::stable_sort(order.begin(), order.end(), less);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = order[static_cast<size_t>(i)];
      if (i == 0 || !equal(order[static_cast<size_t>(i - 1)], row)) first.push_back(row), counts.push_back(0);
      run_of[static_cast<size_t>(row)] = static_cast<int64_t>(first.size()) - 1;
      ++counts.back();
    }
  };
  if (floating) run(rows.template data_ptr<double>());
  else run(rows.template data_ptr<int64_t>());
  const int64_t runs = static_cast<int64_t>(first.size());
  auto index = [&](std::vector<int64_t>& values, int64_t len) {
    return from_blob<P>(values.data(), {len}, TensorOptions(DType::I64)).clone().to(x.device());
  };
  BasicTensor<P> values = v.index_select(d, index(first, runs));
  return {values, return_inverse ? index(run_of, n) : BasicTensor<P>(),
          return_counts ? index(counts, runs) : BasicTensor<P>()};
}

/// Every combination of r elements of a 1-d tensor, as the rows of an (C, r) tensor in
/// lexicographic order of positions (itertools.combinations; with_replacement:
/// combinations_with_replacement). r = 0 gives an empty 1-d tensor, r > size (without
/// replacement) or an empty x an empty (0, r). Results of more than 2^28 elements are refused
/// before any is made (their positions alone would take 2 GiB).
template <class P>
BasicTensor<P> combinations(const BasicTensor<P>& x, int64_t r = 2, bool with_replacement = false) {
  constexpr const char* op = "combinations";
  EMBER_CHECK(x.defined(), "[{}] needs a defined tensor", op);
  EMBER_CHECK(x.dim() == 1, "[{}] expects a 1-d tensor, got shape {}", op, x.sizes());
  EMBER_CHECK(r >= 0, "[{}] r must be non-negative, got {}", op, r);
  const TensorOptions options = TensorOptions(x.dtype()).device(x.device());
  if (r == 0) return empty<P>({0}, options);
  const int64_t n = x.size(0);
  // No rows: still an index_select of x, so that the empty result is part of x's graph.
  if (n == 0 || (!with_replacement && r > n))
    return x.index_select(0, empty<P>({0}, TensorOptions(DType::I64).device(x.device()))).view({0, r});
  // C(n, r) or C(n + r - 1, r), exactly (each step is C(top - r + k, k)), while rows * r stays
  // below the cap; in 128 bits, so that no step overflows on the way.
  __extension__ using wide = __int128;
  constexpr wide kMaxElements = wide{1} << 28;
  EMBER_CHECK(r <= kMaxElements, "[{}] {} elements taken {} at a time make more than 2^28 values", op, n, r);
  const wide top = with_replacement ? wide{n} + r - 1 : wide{n};
  wide rows = 1;
  for (int64_t k = 1; k <= r; ++k) {
    rows = rows * (top - r + k) / k;
    EMBER_CHECK(rows * r <= kMaxElements, "[{}] {} elements taken {} at a time make more than 2^28 values", op, n, r);
  }
  // The positions, row after row, written straight into the index tensor.
  BasicTensor<P> positions = empty<P>({static_cast<int64_t>(rows * r)}, TensorOptions(DType::I64));
  int64_t* out = positions.template data_ptr<int64_t>();
  {
    std::vector<int64_t> pick(static_cast<size_t>(r));
    for (int64_t k = 0; k < r; ++k) pick[static_cast<size_t>(k)] = with_replacement ? 0 : k;
    for (;;) {
      out = std::copy(pick.begin(), pick.end(), out);
      // The rightmost position that can still move up, then everything after it just above.
      int64_t k = r - 1;
      while (k >= 0 && pick[static_cast<size_t>(k)] == (with_replacement ? n - 1 : n - r + k)) --k;
      if (k < 0) break;
      ++pick[static_cast<size_t>(k)];
      for (int64_t j = k + 1; j < r; ++j)
        pick[static_cast<size_t>(j)] = with_replacement ? pick[static_cast<size_t>(k)] : pick[static_cast<size_t>(j - 1)] + 1;
    }
  }
  return x.index_select(0, positions.to(x.device())).view({static_cast<int64_t>(rows), r});
}

template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::unique_consecutive(
    bool return_inverse, bool return_counts, std::optional<int64_t> dim) const {
  return ember::unique_consecutive(*this, return_inverse, return_counts, dim);
}

}  // namespace ember
