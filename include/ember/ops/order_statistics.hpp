#pragma once
/// Order statistics and NaN-aware reductions, as libtorch's: median, nanmedian, mode, quantile,
/// nanquantile, nanmean, aminmax.
///
///   auto [m, i] = median(x, 1);                  // the lower middle value of each row, its index
///   Tensor q = quantile(x, 0.9, 1);              // the 90th percentile of each row (linear)
///   Tensor iqr = quantile(x, tensor<float>({0.25f, 0.75f}));  // both quartiles of all of x
///
/// Written with sort (stable, NaN last) and gather, so values are differentiable as PyTorch's:
/// the gradient goes to the selected elements (quantile: shared by the two it interpolates, and
/// to a tensor q through the linear interpolation's weight; a slice holding NaN: its last NaN;
/// median of all elements: shared by every element equal to it). quantile takes f32 and f64
/// inputs, as PyTorch's.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/functions.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace ember {

namespace detail {

/// The value and index at sorted position k of each slice along dim (k: an i64 tensor with
/// the slice shape, keepdim).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> median_at(const BasicTensor<P>& x, int64_t dim, bool keepdim, bool ignore_nan,
                                                    const char* op) {
  dim = wrap_dim(dim, x.dim(), op);
  EMBER_CHECK(x.dim() == 0 || x.size(dim) > 0, "[{}] cannot take the median of an empty dim {} of shape {}", op, dim,
              x.sizes());
  const BasicTensor<P> src = x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t d = x.dim() == 0 ? 0 : dim;
  auto [sorted, order] = src.sort(d);  // stable: ties and NaN (last) keep their input order
  const int64_t n = src.size(d);
  BasicTensor<P> k;
  if (src.is_floating_point()) {
    const BasicTensor<P> finite_or_inf = src.isnan().logical_not().sum({d}, true);  // non-NaN count
    if (ignore_nan) {
      // The lower middle of the non-NaN values; a slice of NaN only gives its first NaN.
      k = (finite_or_inf - 1).clamp_min(0).div(int64_t{2}, "floor");
    } else {
      // Any NaN makes the median NaN: the first NaN (the first one after the numbers).
      k = where(finite_or_inf.lt(n), finite_or_inf, full_like(finite_or_inf, (n - 1) / 2));
    }
  } else {
    Shape s = src.sizes();
    s[static_cast<size_t>(d)] = 1;
    k = full<P>(s, (n - 1) / 2, TensorOptions(DType::I64).device(src.device()));
  }
  BasicTensor<P> values = sorted.gather(d, k), indices = order.gather(d, k);
  if (x.dim() == 0) return {values.reshape({}), indices.reshape({})};
  if (!keepdim) values = values.squeeze(d), indices = indices.squeeze(d);
  return {values, indices};
}

/// The quantiles at `rank` (f64 fractional positions, the shape of `sorted` but for a last dim
/// of 1) of each slice along the last dim of `sorted` (NaN last), PyTorch's interpolations.
/// The linear form's weight is rank - floor(rank), so the result is differentiable in q
/// through the rank, as PyTorch's.
template <class P>
BasicTensor<P> quantile_at_rank(const BasicTensor<P>& sorted, const BasicTensor<P>& rank,
                                std::string_view interpolation) {
  const BasicTensor<P> below = rank.detach().floor();
  if (interpolation == "lower") return sorted.gather(-1, below.to(DType::I64));
  if (interpolation == "higher") return sorted.gather(-1, rank.detach().ceil().to(DType::I64));
  if (interpolation == "nearest") return sorted.gather(-1, rank.detach().round().to(DType::I64));  // halves to even
  const BasicTensor<P> lo = sorted.gather(-1, below.to(DType::I64));
  const BasicTensor<P> hi = sorted.gather(-1, rank.detach().ceil().to(DType::I64));
  if (interpolation == "midpoint") return lo.lerp(hi, full_like(lo, 0.5));
  return lo.lerp(hi, (rank - below).to(sorted.dtype()));  // linear
}

template <class P>
BasicTensor<P> quantile_impl(const BasicTensor<P>& x, const BasicTensor<P>& q, std::optional<int64_t> dim,
                             bool keepdim, std::string_view interpolation, bool ignore_nan, const char* op) {
  // f32 and f64 only, as PyTorch (q is rounded to the input's dtype).
  EMBER_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::F64, "[{}] expects an f32 or f64 tensor, got {}", op,
              x.dtype());
  EMBER_CHECK(q.dim() <= 1, "[{}] q must be a number or a 1-d tensor, got shape {}", op, q.sizes());
  EMBER_CHECK(q.device() == x.device(), "[{}] q must be on the input's device {}, got {}", op, x.device(), q.device());
  EMBER_CHECK(interpolation == "linear" || interpolation == "lower" || interpolation == "higher" ||
                  interpolation == "midpoint" || interpolation == "nearest",
              "[{}] interpolation must be linear, lower, higher, midpoint or nearest, got '{}'", op, interpolation);
  const BasicTensor<P> qd = q.detach().to(kCPU, DType::F64).contiguous();
  for (int64_t i = 0; i < qd.numel(); ++i) {
    const double v = qd.template data_ptr<double>()[i];
    EMBER_CHECK(v >= 0 && v <= 1, "[{}] q values must be in [0, 1], got {}", op, v);
  }
  EMBER_CHECK(x.numel() > 0, "[{}] expects a non-empty input, got shape {}", op, x.sizes());
  // The dim to reduce goes last; without a dim, all of x is one slice.
  BasicTensor<P> v;
  int64_t d = -1;
  if (dim) {
    d = wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), op);
    v = x.dim() == 0 ? x.reshape({1}) : x.transpose(d, -1);
  } else {
    v = x.reshape({-1});
  }
  const int64_t n = v.size(-1), nq = q.dim() == 0 ? 1 : q.size(0);
  EMBER_CHECK(n > 0, "[{}] cannot take a quantile over an empty dim of shape {}", op, x.sizes());
  if (nq == 0) {  // an empty q: (0, the result's shape)
    const BasicTensor<P> half = full<P>({}, 0.5, TensorOptions(DType::F64).device(x.device()));
    Shape s = quantile_impl(x, half, dim, keepdim, interpolation, ignore_nan, op).sizes();
    s.insert(0, 0);
    return empty<P>(s, TensorOptions(x.dtype()).device(x.device()));
  }
  // Every q against every slice: sorted (Q, ..., n), ranks (Q, ..., 1). q is rounded to x's
  // dtype first, as PyTorch's; the ranks are computed in f64, as libtorch 2.15's (1.13 and
  // earlier 2.x releases computed them in x's dtype, which cannot count past 2^24 in f32).
  Shape expanded = v.sizes();
  expanded.insert(0, nq);
  const BasicTensor<P> sorted = v.sort(-1).first.unsqueeze(0).expand(expanded);
  Shape q_shape(static_cast<size_t>(v.dim() + 1), 1);
  q_shape[0] = nq;
  const BasicTensor<P> qx = q.to(x.dtype()).to(DType::F64).reshape(q_shape);
  const BasicTensor<P> numbers = v.isnan().logical_not().sum({-1}, true).unsqueeze(0);  // non-NaN values per slice
  BasicTensor<P> rank;
  if (ignore_nan) {
    // Ranks among the numbers; a slice of NaN only gets rank 0, a NaN. (where, not clamp_min:
    // a rank of exactly 0 keeps its gradient in q, as PyTorch's masked_fill of ranks < 0.)
    const BasicTensor<P> r = qx * (numbers.to(DType::F64) - 1.0);
    rank = where(r.lt(0.0), zeros_like(r), r);
  } else {
    // Every value counts; a slice holding NaN takes its last sorted value, a NaN, whatever q is
    // (so its gradient goes to that NaN, as PyTorch's).
    rank = where(numbers.lt(n), full_like(numbers, n - 1).to(DType::F64), qx * static_cast<double>(n - 1));
  }
  BasicTensor<P> r = quantile_at_rank(sorted, rank, interpolation);  // (Q, ..., 1)
  if (!dim) {
    Shape s(static_cast<size_t>(keepdim ? x.dim() : 0), 1);
    s.insert(0, nq);
    r = r.reshape(s);
  } else if (x.dim() == 0) {
    r = r.reshape({nq});
  } else {
    r = r.transpose(d + 1, -1);  // back to x's order (after q's dim), size 1 at dim
    if (!keepdim) r = r.squeeze(d + 1);
  }
  return q.dim() == 0 ? r.select(0, 0) : r;
}

}  // namespace detail

namespace detail {
/// The median of all elements, value v, with PyTorch's gradient for the no-dim form: shared
/// evenly by every element equal to v (every NaN when v is NaN). An empty input gives NaN.
template <class P>
BasicTensor<P> median_all(const BasicTensor<P>& x, bool ignore_nan, const char* op) {
  if (x.numel() == 0) return full<P>({}, std::numeric_limits<double>::quiet_NaN(), TensorOptions(x.dtype()).device(x.device()));
  const BasicTensor<P> v = median_at(x.reshape({-1}), 0, false, ignore_nan, op).first.detach();
  if (!x.requires_grad()) return v;
  const BasicTensor<P> hit = v.isnan().template item<bool>() ? x.isnan() : x.eq(v);
  // v + sum((x - v) over the hits) / count: the value is v exactly, the gradient 1 / count on each hit.
  const BasicTensor<P> count = hit.sum().to(x.dtype());
  return v + (x - v).masked_fill(hit.logical_not(), 0.0).sum() / count;
}
}  // namespace detail

/// The lower of the two middle values of all elements (NaN when any is NaN; NaN when empty).
template <class P>
BasicTensor<P> median(const BasicTensor<P>& x) {
  return detail::median_all(x, false, "median");
}
/// (values, indices) of the lower middle value of each slice along dim; a slice holding NaN
/// gives NaN and the index of its first NaN. Ties: the first in input order.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> median(const BasicTensor<P>& x, int64_t dim, bool keepdim = false) {
  return detail::median_at(x, dim, keepdim, false, "median");
}
/// median ignoring NaN (NaN only where a slice holds nothing else).
template <class P>
BasicTensor<P> nanmedian(const BasicTensor<P>& x) {
  return detail::median_all(x, true, "nanmedian");
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> nanmedian(const BasicTensor<P>& x, int64_t dim, bool keepdim = false) {
  return detail::median_at(x, dim, keepdim, true, "nanmedian");
}

/// The q-th quantiles (q in [0, 1]: a number, or a 1-d tensor whose length becomes the first
/// dim of the result) of all of x, or of each slice along dim, with PyTorch's interpolation
/// between sorted values: "linear", "lower", "higher", "midpoint" or "nearest". NaN in a slice
/// makes its quantiles NaN.
template <class P>
BasicTensor<P> quantile(const BasicTensor<P>& x, const BasicTensor<P>& q, std::optional<int64_t> dim = std::nullopt,
                        bool keepdim = false, std::string_view interpolation = "linear") {
  EMBER_CHECK(q.dtype() == x.dtype(), "[quantile] q must have the input's dtype {}, got {}", x.dtype(), q.dtype());
  return detail::quantile_impl(x, q, dim, keepdim, interpolation, false, "quantile");
}
template <class P>
BasicTensor<P> quantile(const BasicTensor<P>& x, double q, std::optional<int64_t> dim = std::nullopt,
                        bool keepdim = false, std::string_view interpolation = "linear") {
  const BasicTensor<P> qt = full<P>({}, q, TensorOptions(DType::F64).device(x.device()));
  return detail::quantile_impl(x, qt, dim, keepdim, interpolation, false, "quantile");
}
/// quantile ignoring NaN (NaN only where a slice holds nothing else).
template <class P>
BasicTensor<P> nanquantile(const BasicTensor<P>& x, const BasicTensor<P>& q, std::optional<int64_t> dim = std::nullopt,
                           bool keepdim = false, std::string_view interpolation = "linear") {
  EMBER_CHECK(q.dtype() == x.dtype(), "[nanquantile] q must have the input's dtype {}, got {}", x.dtype(), q.dtype());
  return detail::quantile_impl(x, q, dim, keepdim, interpolation, true, "nanquantile");
}
template <class P>
BasicTensor<P> nanquantile(const BasicTensor<P>& x, double q, std::optional<int64_t> dim = std::nullopt,
                           bool keepdim = false, std::string_view interpolation = "linear") {
  const BasicTensor<P> qt = full<P>({}, q, TensorOptions(DType::F64).device(x.device()));
  return detail::quantile_impl(x, qt, dim, keepdim, interpolation, true, "nanquantile");
}

/// (values, indices) of the most frequent value of each slice along dim, as torch::mode: of
/// equally frequent values the smallest, and the index of its last occurrence. NaN never
/// equals NaN, so each NaN counts once (a slice of NaN only gives its first). The values are
/// differentiable: the gradient goes to that last occurrence.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> mode(const BasicTensor<P>& x, int64_t dim = -1, bool keepdim = false) {
  constexpr const char* op = "mode";
  EMBER_CHECK(x.defined(), "[{}] needs a defined tensor", op);
  dim = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  const BasicTensor<P> src = x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t n = src.size(dim);
  EMBER_CHECK(n > 0, "[{}] cannot take the mode of an empty dim {} of shape {}", op, dim, x.sizes());
  auto [sorted, order] = src.sort(dim);  // stable: a run of equal values ends at its last occurrence
  // Each slice's longest run of equal values (the first such: the smallest value), on the host.
  const bool floating = src.is_floating_point();
  const BasicTensor<P> rows =
      sorted.detach().movedim(dim, -1).to(kCPU, floating ? DType::F64 : DType::I64).contiguous();
  Shape kshape = rows.sizes();
  kshape[kshape.size() - 1] = 1;
  BasicTensor<P> k = empty<P>(kshape, TensorOptions(DType::I64));
  int64_t* kp = k.template data_ptr<int64_t>();
  auto longest_runs = [&](const auto* v) {
    for (int64_t s = 0; s < rows.numel() / n; ++s) {
      const auto* row = v + s * n;
      int64_t best_count = 0;
      for (int64_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && row[j] == row[i];) ++j;
        if (j - i > best_count) best_count = j - i, kp[s] = j - 1;
      }
    }
  };
  if (floating) longest_runs(rows.template data_ptr<double>());
  else longest_runs(rows.template data_ptr<int64_t>());
  k = k.movedim(-1, dim).to(src.device());
  BasicTensor<P> values = sorted.gather(dim, k), indices = order.gather(dim, k);
  if (x.dim() == 0) return {values.reshape({}), indices.reshape({})};
  if (!keepdim) values = values.squeeze(dim), indices = indices.squeeze(dim);
  return {values, indices};
}

/// The mean of the non-NaN elements over dims (all when empty); NaN where none is left.
template <class P>
BasicTensor<P> nanmean(const BasicTensor<P>& x, const Shape& dims = {}, bool keepdim = false) {
  EMBER_CHECK(x.is_floating_point(), "[nanmean] expects a floating tensor, got {}", x.dtype());
  const BasicTensor<P> count = x.isnan().logical_not().sum(dims, keepdim);
  return x.nansum(dims, keepdim) / count.to(x.dtype());
}

/// (min, max) over dim, or over all elements: one call, as libtorch's aminmax.
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> aminmax(const BasicTensor<P>& x, std::optional<int64_t> dim = std::nullopt,
                                                  bool keepdim = false) {
  const Shape dims = dim ? Shape{*dim} : Shape{};
  EMBER_CHECK(dim ? (x.dim() == 0 || x.size(wrap_dim(*dim, x.dim(), "aminmax")) > 0) : x.numel() > 0,
              "[aminmax] cannot reduce an empty {} of shape {}", dim ? "dim" : "input", x.sizes());
  return {x.amin(dims, keepdim), x.amax(dims, keepdim)};
}

template <class P>
BasicTensor<P> BasicTensor<P>::nanmean(const Shape& dims, bool keepdim) const {
  return ember::nanmean(*this, dims, keepdim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::nanmedian() const {
  return ember::nanmedian(*this);
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::nanmedian(int64_t dim, bool keepdim) const {
  return ember::nanmedian(*this, dim, keepdim);
}
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::aminmax(std::optional<int64_t> dim, bool keepdim) const {
  return ember::aminmax(*this, dim, keepdim);
}
template <class P>
BasicTensor<P> BasicTensor<P>::quantile(double q, std::optional<int64_t> dim, bool keepdim,
                                        std::string_view interpolation) const {
  return ember::quantile(*this, q, dim, keepdim, interpolation);
}
template <class P>
BasicTensor<P> BasicTensor<P>::quantile(const BasicTensor& q, std::optional<int64_t> dim, bool keepdim,
                                        std::string_view interpolation) const {
  return ember::quantile(*this, q, dim, keepdim, interpolation);
}
template <class P>
BasicTensor<P> BasicTensor<P>::nanquantile(double q, std::optional<int64_t> dim, bool keepdim,
                                           std::string_view interpolation) const {
  return ember::nanquantile(*this, q, dim, keepdim, interpolation);
}
template <class P>
BasicTensor<P> BasicTensor<P>::nanquantile(const BasicTensor& q, std::optional<int64_t> dim, bool keepdim,
                                           std::string_view interpolation) const {
  return ember::nanquantile(*this, q, dim, keepdim, interpolation);
}

}  // namespace ember
