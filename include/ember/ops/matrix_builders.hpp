#pragma once
/// Building and contracting matrices, as libtorch's: kron, tensordot, inner, trace, block_diag,
/// cartesian_prod, tril_indices, triu_indices, diag_embed, diagflat, vander.
///
///   Tensor K = kron(A, B);                          // the Kronecker product
///   Tensor y = tensordot(x, W, {1, 2}, {0, 1});     // contract x's dims 1, 2 with W's 0, 1
///   Tensor ij = triu_indices(n, n, 1);              // (2, n(n-1)/2) upper-triangle coordinates
///   Tensor D = diag_embed(batch_of_vectors);        // (..., n) -> (..., n, n) diagonal matrices
///
/// Composites of views, mul, mm, cat and copies into fresh tensors: differentiable in every
/// tensor argument.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace ember {

/// The Kronecker product: for shapes a (a0, a1, ...) and b (b0, b1, ...) (the shorter padded
/// with leading 1s), shape (a0 b0, a1 b1, ...) with block (i0, i1, ...) = a[i0, i1, ...] * b.
template <class P>
BasicTensor<P> kron(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  const int64_t n = std::max(a.dim(), b.dim());
  auto padded = [n](const BasicTensor<P>& t) {
    Shape s(static_cast<size_t>(n - t.dim()), 1);
    for (int64_t v : t.sizes()) s.push_back(v);
    return s;
  };
  const Shape as = padded(a), bs = padded(b);
  Shape ai, bi, out;  // a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...): one broadcast product
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    ai.push_back(as[i]), ai.push_back(1);
    bi.push_back(1), bi.push_back(bs[i]);
    out.push_back(detail::checked_mul(as[i], bs[i], "kron"));
  }
  return a.reshape(ai).mul(b.reshape(bi)).reshape(out);
}

/// Sums a * b over the pairs of dims (dims_a[i], dims_b[i]); the result has a's other dims,
/// then b's. A pair of sizes n and 1 sums the n side first (as PyTorch). One dtype, as mm.
template <class P>
BasicTensor<P> tensordot(const BasicTensor<P>& a, const BasicTensor<P>& b, const Shape& dims_a, const Shape& dims_b) {
  EMBER_CHECK(dims_a.size() == dims_b.size(), "[tensordot] dim lists {} and {} must have one length", dims_a,
              dims_b);
  EMBER_CHECK(a.dtype() == b.dtype(), "[tensordot] operands must have one dtype, got {} and {}", a.dtype(), b.dtype());
  Shape da, db;
  for (int64_t d : dims_a) da.push_back(wrap_dim(d, a.dim(), "tensordot"));
  for (int64_t d : dims_b) db.push_back(wrap_dim(d, b.dim(), "tensordot"));
  detail::check_distinct_dims(da, a.dim(), "tensordot");
  detail::check_distinct_dims(db, b.dim(), "tensordot");
  BasicTensor<P> x = a, y = b;
  int64_t k = 1;
  for (size_t i = 0; i < da.size(); ++i) {
    const int64_t sa = x.size(da[i]), sb = y.size(db[i]);
    if (sa != sb) {
      EMBER_CHECK(sa == 1 || sb == 1,
                  "[tensordot] contracted dims differ: size {} (dim {} of {}) and size {} (dim {} of {})", sa, da[i],
                  a.sizes(), sb, db[i], b.sizes());
      if (sa == 1) y = y.sum(Shape{db[i]}, true, y.dtype());  // in the operands' dtype: mm takes one
      else x = x.sum(Shape{da[i]}, true, x.dtype());
    }
    k = detail::checked_mul(k, x.size(da[i]), "tensordot");
  }
  auto listed = [](const Shape& dims, int64_t d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); };
  Shape perm_a, perm_b, out;
  int64_t m = 1, n = 1;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (!listed(da, d)) perm_a.push_back(d), out.push_back(x.size(d)), m = detail::checked_mul(m, x.size(d), "tensordot");
  for (int64_t d : da) perm_a.push_back(d);
  for (int64_t d : db) perm_b.push_back(d);
  for (int64_t d = 0; d < b.dim(); ++d)
    if (!listed(db, d)) perm_b.push_back(d), out.push_back(y.size(d)), n = detail::checked_mul(n, y.size(d), "tensordot");
  return x.permute(perm_a).reshape({m, k}).mm(y.permute(perm_b).reshape({k, n})).reshape(out);
}

/// Sums a * b over the last dims of both (torch::inner): a's other dims, then b's. A 0-d
/// operand multiplies the other.
template <class P>
BasicTensor<P> inner(const BasicTensor<P>& a, const BasicTensor<P>& b) {
  EMBER_CHECK(a.defined() && b.defined(), "[inner] needs two defined tensors");
  if (a.dim() == 0 || b.dim() == 0) return a.mul(b);
  EMBER_CHECK(a.size(-1) == b.size(-1), "[inner] the last dims must match, got shapes {} and {}", a.sizes(),
              b.sizes());
  EMBER_CHECK(a.dtype() == b.dtype() && a.device() == b.device(), "[inner] operands must have one dtype and device, "
              "got {} on {} and {} on {}", a.dtype(), a.device(), b.dtype(), b.device());
  return tensordot(a, b, Shape{a.dim() - 1}, Shape{b.dim() - 1});
}
/// Contracts a's last `dims` dims with b's first `dims`.
template <class P>
BasicTensor<P> tensordot(const BasicTensor<P>& a, const BasicTensor<P>& b, int64_t dims = 2) {
  EMBER_CHECK(dims >= 0, "[tensordot] dims must be non-negative, got {}", dims);
  EMBER_CHECK(dims <= a.dim() && dims <= b.dim(), "[tensordot] cannot contract {} dims of shapes {} and {}", dims,
              a.sizes(), b.sizes());
  Shape da, db;
  for (int64_t i = 0; i < dims; ++i) da.push_back(a.dim() - dims + i), db.push_back(i);
  return tensordot(a, b, da, db);
}

/// The sum of a matrix's main diagonal (integers sum in i64, as sum).
template <class P>
BasicTensor<P> trace(const BasicTensor<P>& x) {
  EMBER_CHECK(x.dim() == 2, "[trace] expects a matrix, got shape {}", x.sizes());
  return x.diagonal().sum();
}

/// The block-diagonal matrix of the inputs (0-d: 1 x 1, 1-d: one row), in their promoted dtype.
template <class P>
BasicTensor<P> block_diag(const std::vector<BasicTensor<P>>& ts) {
  if (ts.empty()) return empty<P>({1, 0});
  // PyTorch's result_type: 0-d blocks only raise the category of the others.
  const DType t = ops::result_type(detail::impls<P>(ts));
  int64_t rows = 0, cols = 0;
  std::vector<BasicTensor<P>> blocks;
  for (size_t i = 0; i < ts.size(); ++i) {
    EMBER_CHECK(ts[i].dim() <= 2, "[block_diag] input {} has shape {}; blocks have at most 2 dims", i, ts[i].sizes());
    EMBER_CHECK(ts[i].device() == ts[0].device(), "[block_diag] input {} is on {}, input 0 on {}", i, ts[i].device(),
                ts[0].device());
    blocks.push_back(ts[i].dim() == 2 ? ts[i] : ts[i].reshape({1, ts[i].numel()}));
    rows = detail::checked_add(rows, blocks.back().size(0), "block_diag");
    cols = detail::checked_add(cols, blocks.back().size(1), "block_diag");
  }
  BasicTensor<P> r = zeros<P>({rows, cols}, TensorOptions(t).device(ts[0].device()));
  int64_t r0 = 0, c0 = 0;
  for (const BasicTensor<P>& b : blocks) {
    r.narrow(0, r0, b.size(0)).narrow(1, c0, b.size(1)).copy_(b);
    r0 += b.size(0), c0 += b.size(1);
  }
  return r;
}
template <class P>
BasicTensor<P> block_diag(std::initializer_list<BasicTensor<P>> ts) {
  return block_diag(std::vector<BasicTensor<P>>(ts));
}

/// Every combination of one element from each 1-d input, as rows (itertools.product); one
/// input is returned as it is.
template <class P>
BasicTensor<P> cartesian_prod(const std::vector<BasicTensor<P>>& ts) {
  EMBER_CHECK(!ts.empty(), "[cartesian_prod] expects at least one tensor");
  for (size_t i = 0; i < ts.size(); ++i) {
    EMBER_CHECK(ts[i].dim() == 1, "[cartesian_prod] input {} has shape {}; expected 1-d tensors", i, ts[i].sizes());
    EMBER_CHECK(ts[i].dtype() == ts[0].dtype(), "[cartesian_prod] input {} is {}, input 0 is {}", i, ts[i].dtype(),
                ts[0].dtype());
  }
  if (ts.size() == 1) return ts[0];
  std::vector<BasicTensor<P>> cols;
  for (const BasicTensor<P>& g : meshgrid(ts, "ij")) cols.push_back(g.reshape({-1}));
  return stack(cols, 1);
}
template <class P>
BasicTensor<P> cartesian_prod(std::initializer_list<BasicTensor<P>> ts) {
  return cartesian_prod(std::vector<BasicTensor<P>>(ts));
}

namespace detail {
/// The (2, count) coordinates of a row x col matrix's lower (or upper) triangle from diagonal
/// `offset`, row by row; i64 or i32.
template <class P>
BasicTensor<P> triangle_indices(int64_t row, int64_t col, int64_t offset, TensorOptions o, bool lower,
                                const char* op) {
  EMBER_CHECK(row >= 0 && col >= 0, "[{}] row and col must be non-negative, got {} and {}", op, row, col);
  const DType t = o.dtype_or(DType::I64);
  EMBER_CHECK(t == DType::I64 || t == DType::I32, "[{}] makes i64 or i32 indices, not {}", op, t);
  if (row == 0 || col == 0) return empty<P>({2, 0}, TensorOptions(t).device(o.device_or(kCPU)));
  // Sizes near int64's limits are legal (a 1 x 2^63-1 matrix has one lower-triangle element at
  // offset 0), so row arithmetic runs in 128 bits.
  __extension__ using wide = __int128;
  offset = std::clamp<int64_t>(offset, -row, col);  // beyond these no row changes
  // Row i keeps columns [first(i), last(i)): [0, i + offset] (lower) or [i + offset, col)
  // (upper), within [0, col).
  auto first = [&](wide i) { return lower ? int64_t{0} : static_cast<int64_t>(std::clamp<wide>(i + offset, 0, col)); };
  auto last = [&](wide i) { return lower ? static_cast<int64_t>(std::clamp<wide>(i + offset + 1, 0, col)) : col; };
  // Rows [p0, p1) keep part of a row. Before p0 rows keep nothing (lower) or all (upper); from
  // p1 on, all (lower) or nothing (upper).
  const int64_t p0 = static_cast<int64_t>(std::clamp<wide>(-static_cast<wide>(offset) + (lower ? 0 : 1), 0, row));
  const int64_t p1 = static_cast<int64_t>(std::clamp<wide>(static_cast<wide>(col) - offset - (lower ? 1 : 0), p0, row));
  // Counted without visiting every row: the full rows at once, then the partial ones (each adds
  // at least one, so the cap bounds the loop; no memory holds 2^40 index pairs anyway).
  constexpr int64_t cap = int64_t{1} << 40;
  wide count = static_cast<wide>(lower ? row - p1 : p0) * col;
  for (int64_t i = p0; i < p1 && count <= cap; ++i) count += last(i) - first(i);
  EMBER_CHECK(count <= cap, "[{}] a {} x {} matrix at offset {} has more than 2^40 index pairs", op, row, col, offset);
  const int64_t n = static_cast<int64_t>(count);
  BasicTensor<P> r = empty<P>({2, n}, TensorOptions(DType::I64));
  int64_t* rows = r.template data_ptr<int64_t>();
  int64_t* cols = rows + n;
  for (int64_t i = lower ? p0 : 0; i < (lower ? row : p1); ++i)  // every row visited keeps something
    for (int64_t j = first(i); j < last(i); ++j) *rows++ = i, *cols++ = j;
  return r.to(o.device_or(kCPU), t);
}
}  // namespace detail
/// Coordinates (2, count) of the lower triangle of a row x col matrix, diagonal `offset` and
/// below, in row-major order (tril's kept positions).
template <class P = DefaultPolicy>
BasicTensor<P> tril_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions o = {}) {
  return detail::triangle_indices<P>(row, col, offset, o, true, "tril_indices");
}
/// Coordinates of the upper triangle, diagonal `offset` and above (triu's kept positions).
template <class P = DefaultPolicy>
BasicTensor<P> triu_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions o = {}) {
  return detail::triangle_indices<P>(row, col, offset, o, false, "triu_indices");
}

/// Matrices with x's last dim on diagonal `offset` of the plane (dim1, dim2) of the result,
/// which has one dim more than x; zero elsewhere.
template <class P>
BasicTensor<P> diag_embed(const BasicTensor<P>& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1) {
  EMBER_CHECK(x.dim() >= 1, "[diag_embed] expects at least 1 dim, got a 0-d tensor");
  const int64_t rank = x.dim() + 1;
  const int64_t d1 = wrap_dim(dim1, rank, "diag_embed"), d2 = wrap_dim(dim2, rank, "diag_embed");
  EMBER_CHECK(d1 != d2, "[diag_embed] dim1 {} and dim2 {} name one dim", dim1, dim2);
  EMBER_CHECK(offset > std::numeric_limits<int64_t>::min(), "[diag_embed] offset {} is out of range", offset);
  const int64_t m = detail::checked_add(x.size(-1), offset < 0 ? -offset : offset, "diag_embed");
  Shape s;
  for (int64_t d = 0, k = 0; d < rank; ++d) s.push_back(d == d1 || d == d2 ? m : x.size(k++));
  BasicTensor<P> r = zeros<P>(s, x.options());
  r.diagonal(offset, d1, d2).copy_(x);
  return r;
}
/// The square matrix with the flattened x on diagonal `offset`.
template <class P>
BasicTensor<P> diagflat(const BasicTensor<P>& x, int64_t offset = 0) {
  return diag(x.reshape({-1}), offset);
}

/// The Vandermonde matrix of a vector x: column j is x^(N-1-j) (increasing: x^j); N defaults
/// to x's length. Integers and bool compute in i64. Products of x, as PyTorch's (cumprod).
template <class P>
BasicTensor<P> vander(const BasicTensor<P>& x, std::optional<int64_t> N = std::nullopt, bool increasing = false) {
  EMBER_CHECK(x.dim() == 1, "[vander] x must be 1-d, got shape {}", x.sizes());
  const int64_t n = N.value_or(x.size(0));
  EMBER_CHECK(n >= 0, "[vander] N must be non-negative, got {}", n);
  const DType t = promote_types(x.dtype(), DType::I64);
  if (n == 0) return empty<P>({x.size(0), 0}, TensorOptions(t).device(x.device()));
  const BasicTensor<P> v = x.to(t).unsqueeze(1);
  BasicTensor<P> r = cat({ones<P>({x.size(0), 1}, v.options()), v.expand({x.size(0), n - 1})}, 1).cumprod(1);
  return increasing ? r : r.flip(1);
}

// ---- BasicTensor's method forms (declared in core/tensor.hpp) -----------------------------------

template <class P>
BasicTensor<P> BasicTensor<P>::kron(const BasicTensor& o) const {
  return ember::kron(*this, o);
}
template <class P>
BasicTensor<P> BasicTensor<P>::trace() const {
  return ember::trace(*this);
}
template <class P>
BasicTensor<P> BasicTensor<P>::diag_embed(int64_t offset, int64_t dim1, int64_t dim2) const {
  return ember::diag_embed(*this, offset, dim1, dim2);
}
template <class P>
BasicTensor<P> BasicTensor<P>::diagflat(int64_t offset) const {
  return ember::diagflat(*this, offset);
}

}  // namespace ember
