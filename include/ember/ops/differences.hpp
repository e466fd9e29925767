#pragma once
/// Differences along a dim and between variables, as libtorch's: diff (n-th forward
/// difference), cov (weighted covariance matrix), corrcoef (Pearson correlation), and
/// integration by the trapezoidal rule (trapezoid, cumulative_trapezoid).
///
///   Tensor v = diff(positions, 1, 0);            // velocities from a (T, 3) trajectory
///   Tensor C = cov(samples.t());                 // (features, features) from (N, features) rows
///   Tensor R = corrcoef(samples.t());            // correlations in [-1, 1]
///
/// Composites of narrow, sub, sum and mm: differentiable as PyTorch's.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cstdint>

namespace ember {

/// The n-th forward difference along dim: x[i + 1] - x[i], n times (bool: x[i + 1] != x[i]).
/// prepend and append, when given, are joined to x along dim first (they have x's rank and
/// its sizes in the other dims). Larger n than the dim's length gives an empty dim.
template <class P>
BasicTensor<P> diff(const BasicTensor<P>& x, int64_t n = 1, int64_t dim = -1, const BasicTensor<P>& prepend = {},
                    const BasicTensor<P>& append = {}) {
  EMBER_CHECK(x.dim() >= 1, "[diff] expects at least 1 dim, got a 0-d tensor");
  EMBER_CHECK(n >= 0, "[diff] the order n must be non-negative, got {}", n);
  const int64_t d = wrap_dim(dim, x.dim(), "diff");
  for (const BasicTensor<P>* extra : {&prepend, &append})
    EMBER_CHECK(!extra->defined() || extra->dim() == x.dim(),
                "[diff] prepend and append need x's rank: shapes {} and {}", extra->sizes(), x.sizes());
  if (n == 0) return x.clone();  // prepend and append are not joined then (as PyTorch and NumPy)
  BasicTensor<P> r = x;
  if (prepend.defined() || append.defined()) {
    std::vector<BasicTensor<P>> parts;
    if (prepend.defined()) parts.push_back(prepend);
    parts.push_back(x);
    if (append.defined()) parts.push_back(append);
    r = cat(parts, d);
  }
  for (int64_t i = 0; i < n && r.size(d) > 0; ++i) {
    const int64_t len = r.size(d) - 1;
    const BasicTensor<P> next = r.narrow(d, 1, len), prev = r.narrow(d, 0, len);
    r = r.dtype() == DType::Bool ? next.logical_xor(prev) : next.sub(prev);
  }
  return r.is_same(x) ? x.clone() : r;  // a new tensor even when nothing was subtracted
}

/// The covariance matrix of the variables in x's rows (observations in columns; a vector is
/// one variable): sum_k w_k (x_ik - m_i)(x_jk - m_j) / (sum_k w_k - correction), with integer
/// frequency weights, floating importance weights (aweights changes the correction as
/// NumPy's), or none. A non-positive divisor becomes 0 (inf/NaN results, as PyTorch).
template <class P>
BasicTensor<P> cov(const BasicTensor<P>& x, int64_t correction = 1, const BasicTensor<P>& fweights = {},
                   const BasicTensor<P>& aweights = {}) {
  EMBER_CHECK(x.dim() <= 2, "[cov] expects at most 2 dims (variables, observations), got shape {}", x.sizes());
  EMBER_CHECK(x.dtype() != DType::Bool, "[cov] bool input is not supported");
  const BasicTensor<P> v = x.dim() < 2 ? x.reshape({1, x.numel()}) : x;
  const int64_t observations = v.size(1);
  auto check_weights = [&](const BasicTensor<P>& w, const char* name, bool floating) {
    EMBER_CHECK(w.dim() <= 1, "[cov] {} must have at most 1 dim, got shape {}", name, w.sizes());
    EMBER_CHECK(floating ? is_floating(w.dtype()) : is_integral(w.dtype()),
                "[cov] {} must have a {} dtype, got {}", name, floating ? "floating" : "integer", w.dtype());
    EMBER_CHECK(w.numel() == observations, "[cov] {} has {} elements for {} observations (x of shape {})", name,
                w.numel(), observations, x.sizes());
    EMBER_CHECK(w.device() == x.device(), "[cov] {} is on {}, x on {}", name, w.device(), x.device());
    EMBER_CHECK(observations == 0 || w.min().ge(0).template item<bool>(), "[cov] {} cannot be negative", name);
  };
  BasicTensor<P> w;
  if (fweights.defined()) check_weights(fweights, "fweights", false), w = fweights;
  if (aweights.defined()) check_weights(aweights, "aweights", true), w = w.defined() ? w * aweights : aweights;
  const BasicTensor<P> w_sum =
      w.defined() ? w.sum() : full<P>({}, observations, TensorOptions(DType::I64).device(x.device()));
  EMBER_CHECK(!w.defined() || w_sum.ne(0).template item<bool>(), "[cov] the weights sum to zero");
  const BasicTensor<P> mean = (w.defined() ? v * w : v).sum(1) / w_sum;
  BasicTensor<P> divisor = w.defined() && aweights.defined() && correction != 0
                               ? w_sum - (w * aweights).sum().mul(correction) / w_sum
                               : w_sum - correction;
  divisor = divisor.clamp_min(0);
  const BasicTensor<P> centred = v - mean.unsqueeze(1);
  return centred.mm((w.defined() ? centred * w : centred).t()).div(divisor).squeeze();
}

/// Pearson correlation coefficients of x's rows (variables), clamped to [-1, 1]: NaN for a
/// variable that does not vary.
template <class P>
BasicTensor<P> corrcoef(const BasicTensor<P>& x) {
  // cov's checks on x, under corrcoef's name (cov takes no weights here, so no others apply).
  EMBER_CHECK(x.dim() <= 2, "[corrcoef] expects at most 2 dims (variables, observations), got shape {}", x.sizes());
  EMBER_CHECK(x.dtype() != DType::Bool, "[corrcoef] bool input is not supported");
  const BasicTensor<P> c = cov(x);
  if (c.dim() == 0) return c / c;
  const BasicTensor<P> sd = c.diagonal().sqrt();
  return (c / sd.unsqueeze(1) / sd.unsqueeze(0)).clamp(-1, 1);
}

namespace detail {
/// trapezoid's checks; dim wrapped.
template <class P>
int64_t trapezoid_dim(const BasicTensor<P>& y, int64_t dim, const char* op) {
  EMBER_CHECK(y.dim() >= 1, "[{}] expects y with at least 1 dim, got a 0-d tensor", op);
  EMBER_CHECK(y.dtype() != DType::Bool, "[{}] bool y is not supported", op);
  return wrap_dim(dim, y.dim(), op);
}
/// The spacing between sample points x along dim, shaped to broadcast against y's intervals:
/// a 1-D x holds one point per sample of y's dim; a lower-rank x gets leading dims of 1.
template <class P>
BasicTensor<P> sample_spacing(const BasicTensor<P>& y, const BasicTensor<P>& x, int64_t d, const char* op) {
  EMBER_CHECK(x.dtype() != DType::Bool, "[{}] bool x is not supported", op);
  BasicTensor<P> xv = x;
  if (x.dim() == 1) {
    EMBER_CHECK(x.size(0) == y.size(d), "[{}] x of shape {} needs one point per sample of y's dim {} ({} in shape {})",
                op, x.sizes(), d, y.size(d), y.sizes());
    Shape shape(static_cast<size_t>(y.dim()), 1);
    shape[static_cast<size_t>(d)] = x.size(0);
    xv = x.view(shape);
  } else if (x.dim() < y.dim()) {
    Shape shape(static_cast<size_t>(y.dim() - x.dim()), 1);
    for (int64_t s : x.sizes()) shape.push_back(s);
    xv = x.view(shape);
  }
  const int64_t n = xv.size(d);
  if (n == 0) return xv - xv;  // no points: no intervals (broadcasts as PyTorch's empty slices)
  return xv.narrow(d, 1, n - 1) - xv.narrow(d, 0, n - 1);
}
/// y's interval sums y[i] + y[i + 1] along d (none for no samples).
template <class P>
BasicTensor<P> interval_sums(const BasicTensor<P>& y, int64_t d) {
  const int64_t n = y.size(d);
  if (n == 0) return y + y;
  return y.narrow(d, 0, n - 1) + y.narrow(d, 1, n - 1);
}
/// No samples integrate to zeros of y's shape without dim d, in y's dtype (PyTorch's).
template <class P>
BasicTensor<P> zeros_without(const BasicTensor<P>& y, int64_t d) {
  return zeros<P>(reduced_shape(y.impl(), Shape{d}, false, "trapezoid"), TensorOptions(y.dtype()).device(y.device()));
}
}  // namespace detail

/// The integral of samples y along dim by the trapezoidal rule, points dx apart (numpy's and
/// PyTorch's trapezoid; no samples or one sample: 0).
template <class P>
BasicTensor<P> trapezoid(const BasicTensor<P>& y, double dx = 1.0, int64_t dim = -1) {
  const int64_t d = detail::trapezoid_dim(y, dim, "trapezoid");
  if (y.size(d) == 0) return detail::zeros_without(y, d);
  // dx (sum y - (y_first + y_last) / 2): one pass over y.
  return (y.sum({d}) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * dx;
}
/// The same with the sample points x: a 1-D x of one point per sample, or x broadcasting
/// against y.
template <class P>
BasicTensor<P> trapezoid(const BasicTensor<P>& y, const BasicTensor<P>& x, int64_t dim = -1) {
  const int64_t d = detail::trapezoid_dim(y, dim, "trapezoid");
  if (y.size(d) == 0) return detail::zeros_without(y, d);
  return (detail::interval_sums(y, d) * detail::sample_spacing(y, x, d, "trapezoid")).sum({d}) / 2.0;
}
/// The running integrals: one fewer element along dim than y.
template <class P>
BasicTensor<P> cumulative_trapezoid(const BasicTensor<P>& y, double dx = 1.0, int64_t dim = -1) {
  const int64_t d = detail::trapezoid_dim(y, dim, "cumulative_trapezoid");
  return (detail::interval_sums(y, d) * (dx / 2.0)).cumsum(d);
}
template <class P>
BasicTensor<P> cumulative_trapezoid(const BasicTensor<P>& y, const BasicTensor<P>& x, int64_t dim = -1) {
  const int64_t d = detail::trapezoid_dim(y, dim, "cumulative_trapezoid");
  const BasicTensor<P> areas = detail::interval_sums(y, d) * detail::sample_spacing(y, x, d, "cumulative_trapezoid");
  return areas.cumsum(d) / 2.0;
}

// ---- BasicTensor's method forms (declared in core/tensor.hpp) -----------------------------------

template <class P>
BasicTensor<P> BasicTensor<P>::diff(int64_t n, int64_t dim, const BasicTensor& prepend, const BasicTensor& append) const {
  return ember::diff(*this, n, dim, prepend, append);
}
template <class P>
BasicTensor<P> BasicTensor<P>::cov(int64_t correction, const BasicTensor& fweights, const BasicTensor& aweights) const {
  return ember::cov(*this, correction, fweights, aweights);
}
template <class P>
BasicTensor<P> BasicTensor<P>::corrcoef() const {
  return ember::corrcoef(*this);
}

}  // namespace ember
