#pragma once
/// Membership and runs, as libtorch's: isin, unique_consecutive, combinations.
///
///   Tensor keep = isin(tokens, stop_words, false, true);   // true where a token is not a stop word
///   auto [runs, id, len] = unique_consecutive(labels, true, true);  // run-length encoding
///   Tensor pairs = combinations(points_index, 2);            // every unordered pair, as rows
///
/// isin's and unique_consecutive's results are detached (PyTorch's unique_consecutive records
/// a backward that raises); combinations is an index_select of its input, differentiable.

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
    // Empty: only along dim (PyTorch refuses a 0 elsewhere, and more than one 0).
    bool others_nonzero = true;
    for (int64_t k = 0; k < x.dim(); ++k) others_nonzero = others_nonzero && (k == d || x.size(k) > 0);
    EMBER_CHECK(others_nonzero, "[{}] shape {} has a dim of size 0 other than dim {}: its slices cannot be compared",
                op, x.sizes(), d);
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

}  // namespace ember
