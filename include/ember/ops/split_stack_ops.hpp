#pragma once
/// NumPy-style splitting and stacking, as libtorch's: tensor_split (sections or indices),
/// hsplit, vsplit, dsplit, column_stack, dstack, broadcast_tensors and ravel.
///
///   auto parts = tensor_split(x, 3, 1);          // 3 near-equal pieces of dim 1 (views)
///   auto pieces = tensor_split(x, {2, 5});       // x[:2], x[2:5], x[5:]
///   auto cut = tensor_split(x, std::vector<int64_t>{2});  // x[:2], x[2:]: one index needs
///                                                // the vector (braced, {2} is 2 sections)
///   Tensor cols = column_stack({xs, ys});        // two (N) vectors as an (N, 2) matrix
///   auto same = broadcast_tensors({w, x, b});    // views with one common shape
///
/// Composites of narrow, expand, view and cat: views where those are, differentiable as
/// PyTorch's.

#include <ember/core/tensor_methods.hpp>
#include <ember/ops/rearrange_ops.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace ember {

/// `sections` pieces of dim: the first size % sections one element longer (numpy's
/// array_split); more sections than elements give empty pieces. Views.
template <class P>
std::vector<BasicTensor<P>> tensor_split(const BasicTensor<P>& x, int64_t sections, int64_t dim = 0) {
  EMBER_CHECK(x.dim() >= 1, "[tensor_split] expects at least 1 dim, got a 0-d tensor");
  EMBER_CHECK(sections > 0, "[tensor_split] the number of sections must be positive, got {}", sections);
  const int64_t d = wrap_dim(dim, x.dim(), "tensor_split"), n = x.size(d);
  std::vector<BasicTensor<P>> out;
  out.reserve(static_cast<size_t>(sections));
  int64_t start = 0;
  for (int64_t i = 0; i < sections; ++i) {
    const int64_t len = n / sections + (i < n % sections ? 1 : 0);
    out.push_back(x.narrow(d, start, len));
    start += len;
  }
  return out;
}

/// Pieces between the given indices along dim: x[:i0], x[i0:i1], ..., x[ik:]. Indices are
/// taken as Python slice bounds: negative ones count from the end, all are clamped to the
/// dim, and a bound below the one before gives an empty piece. Views.
template <class P>
std::vector<BasicTensor<P>> tensor_split(const BasicTensor<P>& x, const std::vector<int64_t>& indices,
                                         int64_t dim = 0) {
  EMBER_CHECK(x.dim() >= 1, "[tensor_split] expects at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "tensor_split"), n = x.size(d);
  auto bound = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  std::vector<BasicTensor<P>> out;
  out.reserve(indices.size() + 1);
  int64_t start = 0;
  for (int64_t i : indices) {
    const int64_t end = bound(i);
    out.push_back(x.narrow(d, start, std::max<int64_t>(end - start, 0)));
    start = end;
  }
  out.push_back(x.narrow(d, start, n - start));
  return out;
}

namespace detail {
/// hsplit/vsplit/dsplit by sections: equal pieces only (numpy's split, not array_split).
template <class P>
std::vector<BasicTensor<P>> split_equal(const BasicTensor<P>& x, int64_t sections, int64_t dim, int64_t min_rank,
                                        const char* op) {
  EMBER_CHECK(x.dim() >= min_rank, "[{}] expects at least {} dims, got shape {}", op, min_rank, x.sizes());
  EMBER_CHECK(sections > 0 && x.size(dim) % sections == 0,
              "[{}] cannot split dim {} of size {} (shape {}) into {} equal sections", op, dim, x.size(dim), x.sizes(),
              sections);
  return tensor_split(x, sections, dim);
}
template <class P>
std::vector<BasicTensor<P>> split_at(const BasicTensor<P>& x, const std::vector<int64_t>& indices, int64_t dim,
                                     int64_t min_rank, const char* op) {
  EMBER_CHECK(x.dim() >= min_rank, "[{}] expects at least {} dims, got shape {}", op, min_rank, x.sizes());
  return tensor_split(x, indices, dim);
}
}  // namespace detail

/// Splits along dim 1 (dim 0 of a 1-D tensor) into equal sections, or at indices.
template <class P>
std::vector<BasicTensor<P>> hsplit(const BasicTensor<P>& x, int64_t sections) {
  return detail::split_equal(x, sections, x.dim() == 1 ? 0 : 1, 1, "hsplit");
}
template <class P>
std::vector<BasicTensor<P>> hsplit(const BasicTensor<P>& x, const std::vector<int64_t>& indices) {
  return detail::split_at(x, indices, x.dim() == 1 ? 0 : 1, 1, "hsplit");
}
/// Splits along dim 0 of a tensor of at least 2 dims.
template <class P>
std::vector<BasicTensor<P>> vsplit(const BasicTensor<P>& x, int64_t sections) {
  return detail::split_equal(x, sections, 0, 2, "vsplit");
}
template <class P>
std::vector<BasicTensor<P>> vsplit(const BasicTensor<P>& x, const std::vector<int64_t>& indices) {
  return detail::split_at(x, indices, 0, 2, "vsplit");
}
/// Splits along dim 2 of a tensor of at least 3 dims.
template <class P>
std::vector<BasicTensor<P>> dsplit(const BasicTensor<P>& x, int64_t sections) {
  return detail::split_equal(x, sections, 2, 3, "dsplit");
}
template <class P>
std::vector<BasicTensor<P>> dsplit(const BasicTensor<P>& x, const std::vector<int64_t>& indices) {
  return detail::split_at(x, indices, 2, 3, "dsplit");
}

/// Tensors side by side as columns: 0-d and 1-D ones become (n, 1) columns, then hstack.
template <class P>
BasicTensor<P> column_stack(const std::vector<BasicTensor<P>>& ts) {
  EMBER_CHECK(!ts.empty(), "[column_stack] expects a non-empty list of tensors");
  std::vector<BasicTensor<P>> cols;
  cols.reserve(ts.size());
  for (const BasicTensor<P>& t : ts) cols.push_back(t.dim() <= 1 ? t.reshape({t.numel(), 1}) : t);
  return hstack(cols);
}
template <class P>
BasicTensor<P> column_stack(std::initializer_list<BasicTensor<P>> ts) {
  return column_stack(std::vector<BasicTensor<P>>(ts));
}

/// Tensors stacked along dim 2, each made at least 3-D first ((n) -> (1, n, 1), (m, n) ->
/// (m, n, 1)).
template <class P>
BasicTensor<P> dstack(const std::vector<BasicTensor<P>>& ts) {
  EMBER_CHECK(!ts.empty(), "[dstack] expects a non-empty list of tensors");
  std::vector<BasicTensor<P>> u;
  u.reserve(ts.size());
  for (const BasicTensor<P>& t : ts) u.push_back(atleast_3d(t));
  return cat(u, 2);
}
template <class P>
BasicTensor<P> dstack(std::initializer_list<BasicTensor<P>> ts) {
  return dstack(std::vector<BasicTensor<P>>(ts));
}

/// Views of the tensors expanded to their common broadcast shape.
template <class P>
std::vector<BasicTensor<P>> broadcast_tensors(const std::vector<BasicTensor<P>>& ts) {
  Shape shape;
  for (const BasicTensor<P>& t : ts) {
    EMBER_CHECK(t.defined(), "[broadcast_tensors] got an undefined tensor");
    shape = ops::broadcast_shapes(shape, t.sizes(), "broadcast_tensors");
  }
  std::vector<BasicTensor<P>> out;
  out.reserve(ts.size());
  for (const BasicTensor<P>& t : ts) out.push_back(t.expand(shape));
  return out;
}
template <class P>
std::vector<BasicTensor<P>> broadcast_tensors(std::initializer_list<BasicTensor<P>> ts) {
  return broadcast_tensors(std::vector<BasicTensor<P>>(ts));
}

/// All elements as a contiguous 1-D tensor: a view of a contiguous x, else a copy (as
/// PyTorch's; reshape would keep a strided or expanded 1-D view).
template <class P>
BasicTensor<P> ravel(const BasicTensor<P>& x) {
  return x.contiguous().view({-1});
}

template <class P>
std::vector<BasicTensor<P>> BasicTensor<P>::tensor_split(int64_t sections, int64_t dim) const {
  return ember::tensor_split(*this, sections, dim);
}
template <class P>
std::vector<BasicTensor<P>> BasicTensor<P>::tensor_split(const std::vector<int64_t>& indices, int64_t dim) const {
  return ember::tensor_split(*this, indices, dim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::ravel() const {
  return ember::ravel(*this);
}

}  // namespace ember
