#pragma once
/// Shape and indexing ops: cat stack hstack vstack split chunk unbind flip roll repeat
/// repeat_interleave tile pad gather scatter scatter_add scatter_reduce index_select
/// index_add index_copy index_put masked_select nonzero sort argsort topk kthvalue unique
/// one_hot tril triu diag meshgrid. Data movement goes through the index kernels
/// (ops/index_ops.hpp); the rest are composites of views and other ops.

#include <ember/core/factories.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/index_ops.hpp>

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

namespace ember {

namespace detail {
/// A list of tensors as the ops below read it: from a std::vector or a braced list.
template <class P>
using TensorSpan = std::span<const BasicTensor<P>>;
template <class P>
TensorSpan<P> as_span(std::initializer_list<BasicTensor<P>> ts) {
  return {ts.begin(), ts.size()};
}
template <class P>
std::vector<const TensorImpl*> impls(TensorSpan<P> ts) {
  std::vector<const TensorImpl*> v;
  v.reserve(ts.size());
  for (const auto& t : ts) v.push_back(&t.impl());
  return v;
}
template <class P>
BasicTensor<P> index_tensor_1d(std::vector<int64_t> v, Device d) {
  BasicTensor<P> t = empty<P>({static_cast<int64_t>(v.size())}, TensorOptions(DType::I64));
  if (!v.empty()) std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(int64_t));
  return d.is_cpu() ? t : t.to(d);
}

template <class P>
BasicTensor<P> cat_impl(TensorSpan<P> ts, int64_t dim) {
  auto v = impls<P>(ts);
  return BasicTensor<P>::wrap(dispatch<P>(ops::Cat{dim}, std::span<const TensorImpl* const>(v)));
}
template <class P>
BasicTensor<P> stack_impl(TensorSpan<P> ts, int64_t dim) {
  EMBER_CHECK(!ts.empty(), "[stack] expects a non-empty list of tensors");
  int64_t d = wrap_dim(dim, ts[0].dim() + 1, "stack");
  std::vector<BasicTensor<P>> u;
  for (const auto& t : ts) {
    EMBER_CHECK(t.sizes() == ts[0].sizes(), "[stack] all tensors need one shape, got {} and {}", ts[0].sizes(),
                t.sizes());
    u.push_back(t.unsqueeze(d));
  }
  return cat_impl<P>(u, d);
}
template <class P>
BasicTensor<P> hstack_impl(TensorSpan<P> ts) {
  EMBER_CHECK(!ts.empty(), "[hstack] expects a non-empty list of tensors");
  std::vector<BasicTensor<P>> u;  // 0-d inputs count as 1-D (atleast_1d, as PyTorch)
  for (const auto& t : ts) u.push_back(t.dim() == 0 ? t.reshape({1}) : t);
  return cat_impl<P>(u, u[0].dim() == 1 ? 0 : 1);
}
template <class P>
BasicTensor<P> vstack_impl(TensorSpan<P> ts) {
  std::vector<BasicTensor<P>> u;
  for (const auto& t : ts) u.push_back(t.dim() == 1 ? t.unsqueeze(0) : (t.dim() == 0 ? t.reshape({1, 1}) : t));
  return cat_impl<P>(u, 0);
}
}  // namespace detail

// Each list-taking op has two forms, so that both `cat(parts, 1)` (a std::vector) and
// `cat({a, b}, 1)` (a braced list, as in libtorch) deduce the policy.
template <class P>
BasicTensor<P> cat(const std::vector<BasicTensor<P>>& ts, int64_t dim = 0) {
  return detail::cat_impl<P>(ts, dim);
}
template <class P>
BasicTensor<P> cat(std::initializer_list<BasicTensor<P>> ts, int64_t dim = 0) {
  return detail::cat_impl<P>(detail::as_span(ts), dim);
}
template <class P>
BasicTensor<P> stack(const std::vector<BasicTensor<P>>& ts, int64_t dim = 0) {
  return detail::stack_impl<P>(ts, dim);
}
template <class P>
BasicTensor<P> stack(std::initializer_list<BasicTensor<P>> ts, int64_t dim = 0) {
  return detail::stack_impl<P>(detail::as_span(ts), dim);
}
template <class P>
BasicTensor<P> hstack(const std::vector<BasicTensor<P>>& ts) {
  return detail::hstack_impl<P>(ts);
}
template <class P>
BasicTensor<P> hstack(std::initializer_list<BasicTensor<P>> ts) {
  return detail::hstack_impl<P>(detail::as_span(ts));
}
template <class P>
BasicTensor<P> vstack(const std::vector<BasicTensor<P>>& ts) {
  return detail::vstack_impl<P>(ts);
}
template <class P>
BasicTensor<P> vstack(std::initializer_list<BasicTensor<P>> ts) {
  return detail::vstack_impl<P>(detail::as_span(ts));
}
/// libtorch's other names for cat and vstack.
template <class P>
BasicTensor<P> concat(const std::vector<BasicTensor<P>>& ts, int64_t dim = 0) {
  return cat(ts, dim);
}
template <class P>
BasicTensor<P> concat(std::initializer_list<BasicTensor<P>> ts, int64_t dim = 0) {
  return cat(ts, dim);
}
template <class P>
BasicTensor<P> concatenate(const std::vector<BasicTensor<P>>& ts, int64_t dim = 0) {
  return cat(ts, dim);
}
template <class P>
BasicTensor<P> concatenate(std::initializer_list<BasicTensor<P>> ts, int64_t dim = 0) {
  return cat(ts, dim);
}
template <class P>
BasicTensor<P> row_stack(const std::vector<BasicTensor<P>>& ts) {
  return vstack(ts);
}
template <class P>
BasicTensor<P> row_stack(std::initializer_list<BasicTensor<P>> ts) {
  return vstack(ts);
}

/// Pieces of `size` along dim (the last may be smaller); views.
template <class P>
std::vector<BasicTensor<P>> split(const BasicTensor<P>& x, int64_t size, int64_t dim = 0) {
  detail::check_not_0d(x.dim(), "split");
  int64_t d = wrap_dim(dim, x.dim(), "split");
  EMBER_CHECK(size > 0 || x.size(d) == 0, "[split] split size must be positive, got {}", size);
  std::vector<BasicTensor<P>> out;
  for (int64_t s = 0; s < x.size(d); s += size) out.push_back(x.narrow(d, s, std::min(size, x.size(d) - s)));
  if (out.empty()) out.push_back(x);
  return out;
}
/// Pieces with the given sizes along dim; they must add up to the dim's size.
template <class P>
std::vector<BasicTensor<P>> split(const BasicTensor<P>& x, const std::vector<int64_t>& sizes, int64_t dim = 0) {
  detail::check_not_0d(x.dim(), "split");
  int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  EMBER_CHECK(total == x.size(d), "[split] sizes add up to {} but dim {} has size {}", total, d, x.size(d));
  std::vector<BasicTensor<P>> out;
  int64_t pos = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(d, pos, s));
    pos += s;
  }
  return out;
}
template <class P>
std::vector<BasicTensor<P>> chunk(const BasicTensor<P>& x, int64_t chunks, int64_t dim = 0) {
  EMBER_CHECK(chunks > 0, "[chunk] chunks must be positive, got {}", chunks);
  detail::check_not_0d(x.dim(), "chunk");
  int64_t d = wrap_dim(dim, x.dim(), "chunk");
  if (x.size(d) == 0) {  // PyTorch: `chunks` empty pieces, each a view of its own
    std::vector<BasicTensor<P>> out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(x.narrow(d, 0, 0));
    return out;
  }
  int64_t size = (x.size(d) + chunks - 1) / chunks;
  return split(x, std::max<int64_t>(size, 1), d);
}
/// libtorch's unsafe_ forms of chunk and split: the same views.
template <class P>
std::vector<BasicTensor<P>> unsafe_chunk(const BasicTensor<P>& x, int64_t chunks, int64_t dim = 0) {
  return chunk(x, chunks, dim);
}
template <class P>
std::vector<BasicTensor<P>> unsafe_split(const BasicTensor<P>& x, int64_t size, int64_t dim = 0) {
  return split(x, size, dim);
}
template <class P>
std::vector<BasicTensor<P>> unbind(const BasicTensor<P>& x, int64_t dim = 0) {
  detail::check_not_0d(x.dim(), "unbind");
  int64_t d = wrap_dim(dim, x.dim(), "unbind");
  std::vector<BasicTensor<P>> out;
  for (int64_t i = 0; i < x.size(d); ++i) out.push_back(x.select(d, i));
  return out;
}

template <class P>
BasicTensor<P> index_select(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::IndexSelect{dim}, x.impl(), index.impl()));
}
template <class P>
BasicTensor<P> gather(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::Gather{dim}, x.impl(), index.impl()));
}
template <class P>
BasicTensor<P> scatter(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index, const BasicTensor<P>& src) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::Scatter{dim}, x.impl(), index.impl(), src.impl()));
}
template <class P>
BasicTensor<P> scatter(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index, Scalar value) {
  return scatter(x, dim, index, x.scalar_like(value).to(x.dtype()));
}
template <class P>
BasicTensor<P> scatter_add(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index,
                           const BasicTensor<P>& src) {
  return BasicTensor<P>::wrap(
      dispatch<P>(ops::Scatter{dim, detail::ScatterReduce::Sum, true}, x.impl(), index.impl(), src.impl()));
}
/// reduce: "sum", "prod", "mean", "amax", "amin" (PyTorch's scatter_reduce).
template <class P>
BasicTensor<P> scatter_reduce(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index,
                              const BasicTensor<P>& src, std::string_view reduce, bool include_self = true) {
  using R = detail::ScatterReduce;
  R r = reduce == "sum" ? R::Sum
        : reduce == "prod" ? R::Prod
        : reduce == "mean" ? R::Mean
        : reduce == "amax" ? R::Amax
        : reduce == "amin" ? R::Amin
                           : R::None;
  EMBER_CHECK(r != R::None, "[scatter_reduce] reduce must be sum, prod, mean, amax or amin, got '{}'", reduce);
  return BasicTensor<P>::wrap(dispatch<P>(ops::Scatter{dim, r, include_self}, x.impl(), index.impl(), src.impl()));
}
template <class P>
BasicTensor<P> index_add(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index, const BasicTensor<P>& src,
                         Scalar alpha = 1) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::IndexAdd{dim, alpha.to_double(), false}, x.impl(), index.impl(), src.impl()));
}
template <class P>
BasicTensor<P> index_copy(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index, const BasicTensor<P>& src) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::IndexAdd{dim, 1.0, true}, x.impl(), index.impl(), src.impl()));
}
/// x with values put at the positions of the index tensors (i64 or bool masks), as
/// torch.index_put; accumulate adds (duplicates accumulate too).
template <class P>
BasicTensor<P> index_put(const BasicTensor<P>& x, const std::vector<BasicTensor<P>>& indices,
                         const BasicTensor<P>& values, bool accumulate = false) {
  auto v = detail::impls<P>(indices);
  return BasicTensor<P>::wrap(dispatch<P>(ops::IndexPut{accumulate}, x.impl(),
                                          std::span<const detail::TensorImpl* const>(v), values.impl()));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::index_put_(const std::vector<BasicTensor>& indices, const BasicTensor& values,
                                           bool accumulate) {
  auto v = detail::impls<P>(indices);
  dispatch<P>(ops::IndexPutInto{accumulate}, impl(), std::span<const detail::TensorImpl* const>(v), values.impl());
  return *this;
}
template <class P>
BasicTensor<P>& BasicTensor<P>::index_put_(const std::vector<BasicTensor>& indices, Scalar v) {
  return index_put_(indices, wrap(detail::make_scalar_tensor(v, dtype(), device())));
}
/// Advanced indexing x[i0, i1, ...] with index tensors (i64 or bool masks).
template <class P>
BasicTensor<P> index(const BasicTensor<P>& x, const std::vector<BasicTensor<P>>& indices) {
  auto v = detail::impls<P>(indices);
  return BasicTensor<P>::wrap(dispatch<P>(ops::IndexTensor{}, x.impl(), std::span<const detail::TensorImpl* const>(v)));
}
template <class P>
BasicTensor<P> masked_select(const BasicTensor<P>& x, const BasicTensor<P>& mask) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::MaskedSelect{}, x.impl(), mask.impl()));
}
template <class P>
BasicTensor<P> masked_fill(const BasicTensor<P>& x, const BasicTensor<P>& mask, Scalar v) {
  return x.masked_fill(mask, v);
}
/// Coordinates of nonzero elements, shape [n, rank].
template <class P>
BasicTensor<P> nonzero(const BasicTensor<P>& x) {
  return BasicTensor<P>::wrap(dispatch<P>(ops::Nonzero{}, x.impl()));
}
/// (values, indices) sorted along dim; stable; NaN sorts last (first when descending).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> sort(const BasicTensor<P>& x, int64_t dim = -1, bool descending = false) {
  auto [v, i] = dispatch<P>(ops::Sort{dim, descending, true}, x.impl());
  return {BasicTensor<P>::wrap(std::move(v)), BasicTensor<P>::wrap(std::move(i))};
}
template <class P>
BasicTensor<P> argsort(const BasicTensor<P>& x, int64_t dim = -1, bool descending = false) {
  return sort(x, dim, descending).second;
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> topk(const BasicTensor<P>& x, int64_t k, int64_t dim = -1,
                                               bool largest = true, bool sorted = true) {
  auto [v, i] = dispatch<P>(ops::Topk{k, dim, largest, sorted}, x.impl());
  return {BasicTensor<P>::wrap(std::move(v)), BasicTensor<P>::wrap(std::move(i))};
}
/// The k-th smallest (1-based) along dim, with its index.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> kthvalue(const BasicTensor<P>& x, int64_t k, int64_t dim = -1,
                                                   bool keepdim = false) {
  int64_t d = wrap_dim(dim, x.dim(), "kthvalue");
  int64_t len = x.dim() ? x.size(d) : 1;
  EMBER_CHECK(k >= 1 && k <= len, "[kthvalue] k ({}) is out of range for dim {} of size {}", k, d, len);
  auto [v, i] = sort(x, d, false);
  if (x.dim() == 0) return {v, i};
  BasicTensor<P> vv = v.narrow(d, k - 1, 1), ii = i.narrow(d, k - 1, 1);
  return keepdim ? std::pair{vv.contiguous(), ii.contiguous()} : std::pair{vv.squeeze(d).contiguous(), ii.squeeze(d).contiguous()};
}
/// Sorted unique values, with inverse indices and counts when asked (undefined otherwise).
template <class P>
std::tuple<BasicTensor<P>, BasicTensor<P>, BasicTensor<P>> unique(const BasicTensor<P>& x, bool return_inverse = false,
                                                                  bool return_counts = false) {
  auto r = dispatch<P>(ops::Unique{return_inverse, return_counts}, x.impl());
  BasicTensor<P> vals = BasicTensor<P>::wrap(r[0]), inv, cnt;
  size_t k = 1;
  if (return_inverse) inv = BasicTensor<P>::wrap(r[k++]);
  if (return_counts) cnt = BasicTensor<P>::wrap(r[k++]);
  return {vals, inv, cnt};
}

template <class P>
BasicTensor<P> flip(const BasicTensor<P>& x, const Shape& dims) {
  detail::check_distinct_dims(dims, x.dim(), "flip");
  if (x.numel() <= 1) return x.clone();  // nothing to move (and no index vector for a huge empty dim)
  BasicTensor<P> r = x;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, x.dim(), "flip");
    std::vector<int64_t> idx(static_cast<size_t>(x.size(w)));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(idx.size() - 1 - i);
    r = index_select(r, w, detail::index_tensor_1d<P>(idx, x.device()));
  }
  return dims.empty() ? x.clone() : r;
}
template <class P>
BasicTensor<P> roll(const BasicTensor<P>& x, int64_t shift, std::optional<int64_t> dim = {}) {
  if (!dim) return roll(x.flatten(), shift, 0).view(x.sizes());
  int64_t d = wrap_dim(*dim, x.dim(), "roll");
  if (x.dim() == 0) return x.clone();
  int64_t n = x.size(d);
  if (n == 0) return x.clone();
  int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x.clone();
  return cat(std::vector<BasicTensor<P>>{x.narrow(d, n - s, s), x.narrow(d, 0, n - s)}, d);
}
/// Tiles x `repeats[i]` times along dim i (repeats may have more dims than x).
template <class P>
BasicTensor<P> repeat(const BasicTensor<P>& x, const Shape& repeats) {
  EMBER_CHECK(repeats.ndim() >= x.dim(), "[repeat] {} repeats given for a tensor of rank {}", repeats.size(), x.dim());
  Shape xs(repeats.size() - x.sizes().size(), 1);
  for (int64_t s : x.sizes()) xs.push_back(s);
  BasicTensor<P> v = x.reshape(xs);
  // [r0, s0, r1, s1, ...] expanded, then merged pairwise.
  Shape inter, exp, out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    EMBER_CHECK(repeats[i] >= 0, "[repeat] negative repeat {}", repeats[i]);
    inter.push_back(1), inter.push_back(xs[i]);
    exp.push_back(repeats[i]), exp.push_back(xs[i]);
    out.push_back(detail::checked_mul(repeats[i], xs[i], "repeat"));
  }
  return v.reshape(inter).expand(exp).contiguous().view(out);
}
template <class P>
BasicTensor<P> tile(const BasicTensor<P>& x, const Shape& reps) {
  Shape r = reps;
  while (r.ndim() < x.dim()) r.insert(0, 1);
  return repeat(x, r);
}
template <class P>
BasicTensor<P> repeat_interleave(const BasicTensor<P>& x, int64_t repeats, std::optional<int64_t> dim = {}) {
  EMBER_CHECK(repeats >= 0, "[repeat_interleave] negative repeats {}", repeats);
  if (dim) detail::check_not_0d(x.dim(), "repeat_interleave");
  BasicTensor<P> src = dim ? x : x.flatten();
  int64_t d = dim ? wrap_dim(*dim, x.dim(), "repeat_interleave") : 0;
  // The index built in a tensor, not a host vector: a size beyond memory fails as an
  // allocation (an Error) before any loop runs over it.
  const int64_t n = src.size(d);
  BasicTensor<P> idx = empty<P>({detail::checked_mul(n, repeats, "repeat_interleave")}, TensorOptions(DType::I64));
  int64_t* ip = idx.template data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t r = 0; r < repeats; ++r) *ip++ = i;
  return index_select(src, d, x.is_cpu() ? idx : idx.to(x.device()));
}

/// Pads the last dims: pad = {left_last, right_last, left_prev, right_prev, ...} as
/// torch.nn.functional.pad; mode "constant", "reflect", "replicate" or "circular".
template <class P>
BasicTensor<P> pad(const BasicTensor<P>& x, const std::vector<int64_t>& pad, std::string_view mode = "constant",
                   double value = 0.0) {
  EMBER_CHECK(pad.size() % 2 == 0 && static_cast<int64_t>(pad.size() / 2) <= x.dim(),
              "[pad] pad must have an even length of at most 2 x rank ({}), got {}", 2 * x.dim(), pad.size());
  if (mode == "constant") {
    Shape out = x.sizes();
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      int64_t d = x.dim() - 1 - static_cast<int64_t>(i);
      out[d] = detail::checked_add(out[d], detail::checked_add(pad[2 * i], pad[2 * i + 1], "pad"), "pad");
      EMBER_CHECK(out[d] >= 0, "[pad] padding {} {} leaves dim {} with negative size", pad[2 * i], pad[2 * i + 1], d);
    }
    BasicTensor<P> r = full<P>(out, value, TensorOptions(x.dtype()).device(x.device()));
    BasicTensor<P> dst = r, src = x;
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      int64_t d = x.dim() - 1 - static_cast<int64_t>(i);
      int64_t l = pad[2 * i], rr = pad[2 * i + 1];
      // Negative padding crops the source.
      int64_t src_start = l < 0 ? -l : 0, src_len = x.size(d) + std::min<int64_t>(l, 0) + std::min<int64_t>(rr, 0);
      src = src.narrow(d, src_start, std::max<int64_t>(src_len, 0));
      dst = dst.narrow(d, std::max<int64_t>(l, 0), std::max<int64_t>(src_len, 0));
    }
    dst.copy_(src);
    return r;
  }
  EMBER_CHECK(mode == "reflect" || mode == "replicate" || mode == "circular",
              "[pad] mode must be constant, reflect, replicate or circular, got '{}'", mode);
  BasicTensor<P> r = x;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t d = x.dim() - 1 - static_cast<int64_t>(i);
    int64_t n = x.size(d), l = pad[2 * i], rr = pad[2 * i + 1];
    const int64_t padded = detail::checked_add(n, detail::checked_add(l, rr, "pad"), "pad");
    // Negative padding crops, as PyTorch's (the loop below then starts or ends inside x).
    EMBER_CHECK(l >= -n && rr >= -n && padded >= 0,
                "[pad] {} padding ({}, {}) crops more than dim {} of size {} holds", mode, l, rr, d, n);
    if (mode == "reflect")
      EMBER_CHECK(l < n && rr < n, "[pad] reflect padding ({}, {}) must be smaller than dim {} of size {}", l, rr, d, n);
    if (mode == "circular")
      EMBER_CHECK(l <= n && rr <= n, "[pad] circular padding ({}, {}) must not exceed dim {} of size {}", l, rr, d, n);
    EMBER_CHECK(n > 0, "[pad] cannot {}-pad an empty dim {}", mode, d);
    if (mode == "circular" && (l < 0 || rr < 0)) {  // wraps around the cropped part (PyTorch)
      const int64_t lo = std::max<int64_t>(-l, 0), hi = n - std::max<int64_t>(-rr, 0);
      r = r.narrow(d, lo, hi - lo);
      n = hi - lo, l = std::max<int64_t>(l, 0), rr = std::max<int64_t>(rr, 0);
      if (n == 0) {
        EMBER_CHECK(l == 0 && rr == 0, "[pad] circular padding ({}, {}) of dim {}: nothing left to wrap around",
                    pad[2 * i], pad[2 * i + 1], d);
        continue;
      }
    }
    // In a tensor, so that a size beyond memory fails as an allocation before the loop.
    BasicTensor<P> idx = empty<P>({n + l + rr}, TensorOptions(DType::I64));
    int64_t* ip = idx.template data_ptr<int64_t>();
    for (int64_t j = -l; j < n + rr; ++j) {
      int64_t k = j;
      if (mode == "reflect") {
        if (k < 0) k = -k;
        if (k >= n) k = 2 * (n - 1) - k;
      } else if (mode == "replicate") {
        k = std::min(std::max<int64_t>(k, 0), n - 1);
      } else {
        k = ((k % n) + n) % n;
      }
      *ip++ = k;
    }
    r = index_select(r, d, x.is_cpu() ? idx : idx.to(x.device()));
  }
  return r;
}

/// torch::constant_pad_nd: pad in mode "constant" (negative amounts crop).
template <class P>
BasicTensor<P> constant_pad_nd(const BasicTensor<P>& x, const std::vector<int64_t>& amounts, double value = 0.0) {
  return pad(x, amounts, "constant", value);
}

template <class P>
BasicTensor<P> one_hot(const BasicTensor<P>& labels, int64_t num_classes = -1) {
  EMBER_CHECK(labels.dtype() == DType::I64 || labels.dtype() == DType::I32,
              "[one_hot] labels must be an integer tensor, got {}", labels.dtype());
  EMBER_CHECK(num_classes >= -1, "[one_hot] num_classes must be -1 (infer) or non-negative, got {}", num_classes);
  EMBER_CHECK(num_classes >= 0 || labels.numel() > 0,
              "[one_hot] cannot infer the number of classes from an empty tensor (shape {}); pass num_classes",
              labels.sizes());
  if (num_classes < 0) num_classes = detail::checked_add(labels.max().template item<int64_t>(), 1, "one_hot");
  if (labels.numel()) {
    EMBER_CHECK(labels.min().template item<int64_t>() >= 0, "[one_hot] labels must be non-negative");
    EMBER_CHECK(labels.max().template item<int64_t>() < num_classes, "[one_hot] label {} >= num_classes {}",
                labels.max().template item<int64_t>(), num_classes);
  }
  BasicTensor<P> classes = arange<P>(num_classes, TensorOptions(DType::I64).device(labels.device()));
  return labels.to(DType::I64).unsqueeze(-1).eq(classes).to(DType::I64);
}

namespace detail {
template <class P>
BasicTensor<P> triangle_mask(const BasicTensor<P>& x, int64_t k, bool lower, const char* op) {
  EMBER_CHECK(x.dim() >= 2, "[{}] needs at least 2 dims, got shape {}", op, x.sizes());
  int64_t r = x.size(-2), c = x.size(-1);
  TensorOptions o = TensorOptions(DType::I64).device(x.device());
  // col - row <= k as col <= row + k: one broadcast compare into the bool mask, without an
  // r x c i64 difference in between.
  k = std::clamp<int64_t>(k, -r, c);  // beyond these the mask no longer changes; row + k cannot wrap
  BasicTensor<P> rows = arange<P>(r, o).add(k).unsqueeze(1), cols = arange<P>(c, o).unsqueeze(0);
  return lower ? cols.le(rows) : cols.ge(rows);
}
}  // namespace detail
template <class P>
BasicTensor<P> tril(const BasicTensor<P>& x, int64_t k = 0) {
  return x.where(detail::triangle_mask(x, k, true, "tril"), x.scalar_like(0).to(x.dtype()));
}
template <class P>
BasicTensor<P> triu(const BasicTensor<P>& x, int64_t k = 0) {
  return x.where(detail::triangle_mask(x, k, false, "triu"), x.scalar_like(0).to(x.dtype()));
}
/// 1-d input: a square matrix with x on diagonal k; 2-d input: its diagonal k (a copy).
template <class P>
BasicTensor<P> diag(const BasicTensor<P>& x, int64_t k = 0) {
  EMBER_CHECK(x.dim() == 1 || x.dim() == 2, "[diag] expects a 1-d or 2-d tensor, got shape {}", x.sizes());
  if (x.dim() == 2) return x.diagonal(k).clone();
  EMBER_CHECK(k > std::numeric_limits<int64_t>::min(), "[diag] diagonal {} is out of range", k);
  int64_t n = detail::checked_add(x.size(0), k < 0 ? -k : k, "diag");
  BasicTensor<P> r = zeros<P>({n, n}, TensorOptions(x.dtype()).device(x.device()));
  r.diagonal(k).copy_(x);
  return r;
}
namespace detail {
template <class P>
std::vector<BasicTensor<P>> meshgrid_impl(TensorSpan<P> ts, std::string_view indexing) {
  EMBER_CHECK(indexing == "ij" || indexing == "xy", "[meshgrid] indexing must be 'ij' or 'xy', got '{}'", indexing);
  Shape shape;
  for (const auto& t : ts) {
    EMBER_CHECK(t.dim() <= 1, "[meshgrid] expects 0-d or 1-d tensors, got shape {}", t.sizes());
    shape.push_back(t.numel());
  }
  bool xy = indexing == "xy" && ts.size() >= 2;
  if (xy) std::swap(shape[0], shape[1]);
  std::vector<BasicTensor<P>> out;
  for (size_t i = 0; i < ts.size(); ++i) {
    size_t pos = i;
    if (xy && i < 2) pos = 1 - i;
    Shape vs(ts.size(), 1);
    vs[pos] = ts[i].numel();
    out.push_back(ts[i].reshape(vs).expand(shape));
  }
  return out;
}
}  // namespace detail
/// Coordinate grids ("ij" or "xy" indexing), as expanded views.
template <class P>
std::vector<BasicTensor<P>> meshgrid(const std::vector<BasicTensor<P>>& ts, std::string_view indexing = "ij") {
  return detail::meshgrid_impl<P>(ts, indexing);
}
template <class P>
std::vector<BasicTensor<P>> meshgrid(std::initializer_list<BasicTensor<P>> ts, std::string_view indexing = "ij") {
  return detail::meshgrid_impl<P>(detail::as_span(ts), indexing);
}

// ---- BasicTensor's method forms of the ops above (declared in core/tensor.hpp) -------------------
// Qualified calls: inside a member, an unqualified name finds the member itself.

template <class P>
std::vector<BasicTensor<P>> BasicTensor<P>::split(int64_t size, int64_t dim) const {
  return ember::split(*this, size, dim);
}
template <class P>
std::vector<BasicTensor<P>> BasicTensor<P>::split(const std::vector<int64_t>& sizes, int64_t dim) const {
  return ember::split(*this, sizes, dim);
}
template <class P>
std::vector<BasicTensor<P>> BasicTensor<P>::chunk(int64_t chunks, int64_t dim) const {
  return ember::chunk(*this, chunks, dim);
}
template <class P>
std::vector<BasicTensor<P>> BasicTensor<P>::unbind(int64_t dim) const {
  return ember::unbind(*this, dim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::index(const std::vector<BasicTensor>& indices) const {
  return ember::index(*this, indices);
}
template <class P>
BasicTensor<P> BasicTensor<P>::index_select(int64_t dim, const BasicTensor& index) const {
  return ember::index_select(*this, dim, index);
}
template <class P>
BasicTensor<P> BasicTensor<P>::gather(int64_t dim, const BasicTensor& index) const {
  return ember::gather(*this, dim, index);
}
template <class P>
BasicTensor<P> BasicTensor<P>::scatter(int64_t dim, const BasicTensor& index, const BasicTensor& src) const {
  return ember::scatter(*this, dim, index, src);
}
template <class P>
BasicTensor<P> BasicTensor<P>::scatter(int64_t dim, const BasicTensor& index, Scalar value) const {
  return ember::scatter(*this, dim, index, value);
}
template <class P>
BasicTensor<P> BasicTensor<P>::scatter_add(int64_t dim, const BasicTensor& index, const BasicTensor& src) const {
  return ember::scatter_add(*this, dim, index, src);
}
template <class P>
BasicTensor<P> BasicTensor<P>::index_add(int64_t dim, const BasicTensor& index, const BasicTensor& src,
                                         Scalar alpha) const {
  return ember::index_add(*this, dim, index, src, alpha);
}
template <class P>
BasicTensor<P> BasicTensor<P>::index_copy(int64_t dim, const BasicTensor& index, const BasicTensor& src) const {
  return ember::index_copy(*this, dim, index, src);
}
template <class P>
BasicTensor<P> BasicTensor<P>::masked_select(const BasicTensor& mask) const {
  return ember::masked_select(*this, mask);
}
template <class P>
BasicTensor<P> BasicTensor<P>::nonzero() const {
  return ember::nonzero(*this);
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::sort(int64_t dim, bool descending) const {
  return ember::sort(*this, dim, descending);
}
template <class P>
BasicTensor<P> BasicTensor<P>::argsort(int64_t dim, bool descending) const {
  return ember::argsort(*this, dim, descending);
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::topk(int64_t k, int64_t dim, bool largest,
                                                                bool sorted) const {
  return ember::topk(*this, k, dim, largest, sorted);
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return ember::kthvalue(*this, k, dim, keepdim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::flip(const Shape& dims) const {
  return ember::flip(*this, dims);
}
template <class P>
BasicTensor<P> BasicTensor<P>::roll(int64_t shift, std::optional<int64_t> dim) const {
  return ember::roll(*this, shift, dim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::repeat(const Shape& repeats) const {
  return ember::repeat(*this, repeats);
}
template <class P>
BasicTensor<P> BasicTensor<P>::tile(const Shape& reps) const {
  return ember::tile(*this, reps);
}
template <class P>
BasicTensor<P> BasicTensor<P>::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  return ember::repeat_interleave(*this, repeats, dim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::tril(int64_t k) const {
  return ember::tril(*this, k);
}
template <class P>
BasicTensor<P> BasicTensor<P>::triu(int64_t k) const {
  return ember::triu(*this, k);
}
template <class P>
BasicTensor<P>& BasicTensor<P>::fill_diagonal_(Scalar v, bool wrap) {
  EMBER_CHECK(dim() >= 2, "[fill_diagonal_] expects at least 2 dims, got shape {}", sizes());
  if (dim() > 2)
    for (int64_t d = 1; d < dim(); ++d)
      EMBER_CHECK(size(d) == size(0), "[fill_diagonal_] all dims must have one size beyond 2 dims, got shape {}",
                  sizes());
  // The diagonal as a view (each diagonal() folds two dims into one, last), filled through.
  auto fill_view = [&](BasicTensor<P> block) {
    while (block.dim() > 1) block = block.diagonal(0, 0, block.dim() - 1);
    block.fill_(v);
  };
  const int64_t rows = size(0), cols = size(1);
  if (dim() > 2 || !wrap || rows <= cols + 1) {
    fill_view(*this);
    return *this;
  }
  // A tall matrix, wrapped: a block of cols rows, one row skipped, the next block.
  for (int64_t start = 0; start < rows; start += cols + 1) fill_view(narrow(0, start, std::min(cols, rows - start)));
  return *this;
}
template <class P>
BasicTensor<P> BasicTensor<P>::diag(int64_t k) const {
  return ember::diag(*this, k);
}
template <class P>
BasicTensor<P> BasicTensor<P>::new_empty(const Shape& sizes) const {
  return ember::empty<P>(sizes, options());
}
template <class P>
BasicTensor<P> BasicTensor<P>::new_zeros(const Shape& sizes) const {
  return ember::zeros<P>(sizes, options());
}
template <class P>
BasicTensor<P> BasicTensor<P>::new_ones(const Shape& sizes) const {
  return ember::ones<P>(sizes, options());
}
template <class P>
BasicTensor<P> BasicTensor<P>::new_full(const Shape& sizes, Scalar v) const {
  return ember::full<P>(sizes, v, options());
}

template <class P>
BasicTensor<P> BasicTensor<P>::sum_to_size(const Shape& shape) const {
  const int64_t lead = dim() - static_cast<int64_t>(shape.size());
  bool expands = lead >= 0;
  for (size_t i = 0; expands && i < shape.size(); ++i)
    expands = shape[i] == 1 || shape[i] == size(lead + static_cast<int64_t>(i));
  EMBER_CHECK(expands, "[sum_to_size] size {} is not expandable to size {}", shape, sizes());
  Shape dims;  // the leading dims, and those that shape has as 1
  for (int64_t d = 0; d < dim(); ++d)
    if (d < lead || (shape[static_cast<size_t>(d - lead)] == 1 && size(d) != 1)) dims.push_back(d);
  return (dims.empty() ? *this : sum(dims, true)).reshape(shape);
}

}  // namespace ember

// Index expressions with index tensors (BasicTensor::index, index_put_), which use the ops above.
#include <ember/ops/mixed_index.hpp>
