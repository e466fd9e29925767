#pragma once
/// Out-of-class members of BasicTensor: composites written with other ops, and the few
/// members with more than one line of logic.

#include <ember/core/tensor.hpp>

#include <cmath>
#include <limits>

namespace ember {

namespace detail {
/// Element 0 of a one-element CPU tensor as a Scalar of its category (src/tensor_api.cpp).
Scalar read_scalar(const TensorImpl& t, const char* op);
/// A 0-d CPU or device tensor holding v with dtype t, flagged as a wrapped number.
Ref<TensorImpl> make_scalar_tensor(Scalar v, DType t, Device device);
/// Number of elements selected by `dims` of x (all if empty).
int64_t reduced_count(const TensorImpl& x, IntArrayRef dims, const char* op);
/// x's shape with `dims` (all if empty) removed, or set to 1 when keepdim.
Shape reduced_shape(const TensorImpl& x, IntArrayRef dims, bool keepdim, const char* op);
}  // namespace detail

template <class P>
template <class T>
T BasicTensor<P>::item() const {
  EMBER_CHECK(numel() == 1, "[item] a tensor of shape {} has {} elements, not 1", sizes(), numel());
  BasicTensor host = is_cpu() ? *this : cpu();
  const Scalar v = detail::read_scalar(host.impl(), "item");
  if constexpr (std::is_same_v<T, Scalar>) {
    return v;
  } else {
    if constexpr (requires { dtype_of<T>::value; }) detail::check_scalar_fits(v, dtype_of<T>::value, "item");
    return v.template to<T>();
  }
}

template <class P>
bool BasicTensor<P>::is_nonzero() const {
  EMBER_CHECK(defined() && numel() == 1, "[is_nonzero] needs a tensor of one element, got shape {}",
              defined() ? sizes() : Shape());
  BasicTensor host = is_cpu() ? *this : cpu();
  return detail::read_scalar(host.impl(), "is_nonzero").template to<double>() != 0.0;  // NaN is true
}

template <class P>
BasicTensor<P> BasicTensor<P>::reshape(const Shape& shape) const {
  Shape target = ops::infer_shape(shape, numel(), "reshape");
  Shape st;
  if (ops::view_strides(impl(), target, st)) return view(target);
  return clone().view(target);
}

template <class P>
BasicTensor<P> BasicTensor<P>::transpose(int64_t d0, int64_t d1) const {
  int64_t n = dim();
  if (n == 0) {  // dims 0 and -1 only, as PyTorch
    wrap_dim(d0, n, "transpose");
    wrap_dim(d1, n, "transpose");
    return apply(ops::ViewOp{ops::ViewKind::Alias});
  }
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  Shape perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  std::swap(perm[d0], perm[d1]);
  return permute(perm);
}

template <class P>
BasicTensor<P> BasicTensor<P>::t() const {
  EMBER_CHECK(dim() <= 2, "[t] expects a tensor of rank <= 2, got shape {}", sizes());
  return dim() < 2 ? apply(ops::ViewOp{ops::ViewKind::Alias}) : transpose(0, 1);
}

template <class P>
BasicTensor<P> BasicTensor<P>::flatten(int64_t start, int64_t end) const {
  int64_t n = dim();
  if (n == 0) return reshape({1});
  start = wrap_dim(start, n, "flatten");
  end = wrap_dim(end, n, "flatten");
  EMBER_CHECK(start <= end, "[flatten] start dim {} is after end dim {}", start, end);
  Shape s;
  for (int64_t i = 0; i < start; ++i) s.push_back(size(i));
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m *= size(i);
  s.push_back(m);
  for (int64_t i = end + 1; i < n; ++i) s.push_back(size(i));
  return reshape(s);
}

template <class P>
BasicTensor<P> BasicTensor<P>::unflatten(int64_t d, const Shape& sizes_in) const {
  detail::check_not_0d(dim(), "unflatten");
  d = wrap_dim(d, dim(), "unflatten");
  Shape inner = ops::infer_shape(sizes_in, size(d), "unflatten");
  Shape s;
  for (int64_t i = 0; i < d; ++i) s.push_back(size(i));
  for (int64_t v : inner) s.push_back(v);
  for (int64_t i = d + 1; i < dim(); ++i) s.push_back(size(i));
  return view(s);
}

template <class P>
BasicTensor<P> BasicTensor<P>::index(std::span<const TensorIndex> idx) const {
  if (detail::has_tensor_index(idx)) return detail::index_with_tensors(*this, idx);
  std::vector<ops::ViewOp> steps;
  detail::apply_index(impl(), idx, steps);
  BasicTensor r = *this;
  for (const auto& s : steps) r = r.apply(s);
  if (steps.empty()) r = apply(ops::ViewOp{ops::ViewKind::Alias});
  return r;
}

template <class P>
BasicTensor<P>& BasicTensor<P>::index_put_(std::span<const TensorIndex> idx, Scalar v) {
  if (detail::has_tensor_index(idx)) {
    detail::check_scalar_fits(v, dtype(), "index_put_");
    return index_put_(idx, wrap(detail::make_scalar_tensor(v, dtype(), device())));
  }
  index(idx).fill_(v);
  return *this;
}

template <class P>
BasicTensor<P>& BasicTensor<P>::index_put_(std::span<const TensorIndex> idx, const BasicTensor& v) {
  if (detail::has_tensor_index(idx)) {
    detail::index_put_with_tensors(*this, idx, v);
    return *this;
  }
  BasicTensor dst = index(idx);
  // Leading size-1 dims of v beyond dst's rank are dropped first (PyTorch's setitem does the
  // same: z[0] = ones({1, 3}) for a row of 3).
  BasicTensor src = v;
  while (src.dim() > dst.dim() && src.size(0) == 1) src = src.squeeze(0);
  dst.copy_(src);
  return *this;
}

template <class P>
BasicTensor<P> BasicTensor<P>::to(Device d) const {
  if (d == device()) return *this;
  if constexpr (P::backends::has(DeviceType::Cuda)) {
    if (d.is_cuda() || is_cuda()) detail::cuda_ensure_initialized();
  }
  EMBER_CHECK(P::backends::has(d.type()), "[to] device {} is not served by this policy's backends", d);
  return wrap(dispatch<P>(ops::To{dtype(), d}, impl()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::scalar_like(Scalar v) const {
  // Floating scalars are held in f64 (as PyTorch's wrapped numbers): result_type ignores a
  // wrapped number's width, and holding 0.1 in f32 would round it before an f64 op. Next to
  // an f32/f64 tensor, though, any number computes in that tensor's dtype: made in it
  // directly (the same rounding as the cast), `x * 0.5` skips a cast op per call.
  const DType t = dtype();
  const bool exact = v.is_floating() || (v.default_dtype() == DType::I64 && v.to<int64_t>() >= -(int64_t{1} << 53) &&
                                         v.to<int64_t>() <= (int64_t{1} << 53));  // no double rounding via f64
  if ((t == DType::F32 || t == DType::F64) && exact) return wrap(detail::make_scalar_tensor(v, t, device()));
  return wrap(detail::make_scalar_tensor(v, v.is_floating() ? DType::F64 : v.default_dtype(), device()));
}

template <class P>
BasicTensor<P> BasicTensor<P>::div(const BasicTensor& o, const std::string& mode) const {
  return binary(division(mode, "div"), o);
}

template <class P>
BasicTensor<P> BasicTensor<P>::nan_to_num(double nan, std::optional<double> posinf,
                                          std::optional<double> neginf) const {
  ops::UnaryParams p;
  p.a = nan;
  p.b = posinf.value_or(std::numeric_limits<double>::infinity());
  p.c = neginf.value_or(-std::numeric_limits<double>::infinity());
  p.has_a = posinf.has_value();  // not given: the dtype's largest finite value
  p.has_b = neginf.has_value();
  return unary(ops::UnaryOp::NanToNum, p);
}

template <class P>
BasicTensor<P> BasicTensor<P>::round(int64_t decimals) const {
  if (decimals == 0) return round();
  EMBER_CHECK(is_floating_point(), "[round] decimals need a floating tensor, got {}", dtype());
  // As PyTorch: scale by 10^|decimals| and undo with the inverse operation, so that round(1500,
  // -3) is 2000 exactly (multiplying by 1e-3, which float cannot hold, gave 1999.9999).
  const double scale = std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals));
  return decimals > 0 ? mul(scale).round().div(scale) : div(scale).round().mul(scale);
}

template <class P>
BasicTensor<P> BasicTensor<P>::argmax(std::optional<int64_t> d, bool keepdim) const {
  // Over all elements; keepdim keeps every dim as 1, as PyTorch.
  if (!d) return flatten().arg(detail::ArgReduceOp::Max, 0, false, false).second.reshape(Shape(keepdim ? sizes().size() : 0, 1));
  return arg(detail::ArgReduceOp::Max, *d, keepdim, false).second;
}

template <class P>
BasicTensor<P> BasicTensor<P>::argmin(std::optional<int64_t> d, bool keepdim) const {
  if (!d) return flatten().arg(detail::ArgReduceOp::Min, 0, false, false).second.reshape(Shape(keepdim ? sizes().size() : 0, 1));
  return arg(detail::ArgReduceOp::Min, *d, keepdim, false).second;
}

template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> BasicTensor<P>::var_mean(const Shape& dims, double correction,
                                                                   bool keepdim) const {
  if (dtype() == DType::F16 || dtype() == DType::BF16) {  // in f32, rounded once (bf16 [1000, 1004] had var 16)
    auto [v, m] = to(DType::F32).var_mean(dims, correction, keepdim);
    return {v.to(dtype()), m.to(dtype())};
  }
  BasicTensor m = mean(dims, true);
  int64_t n = detail::reduced_count(impl(), dims, "var");
  BasicTensor v = sub(m).square().sum(dims, keepdim).div(std::max(0.0, static_cast<double>(n) - correction));
  return {v, keepdim ? m : m.reshape(detail::reduced_shape(impl(), dims, false, "var_mean"))};
}

template <class P>
BasicTensor<P> BasicTensor<P>::var(const Shape& dims, double correction, bool keepdim) const {
  return var_mean(dims, correction, keepdim).first;
}

namespace detail {
/// f(v) where v != 0 and `at_zero` where v == 0, with no gradient through f at 0: the
/// derivatives of sqrt and x^(1/p) are infinite there and would give 0 * inf = NaN (the
/// gradient of std of a constant, of a norm of zeros). PyTorch masks the same points.
template <class P, class F>
BasicTensor<P> masked_at_zero(const BasicTensor<P>& v, F f, double at_zero = 0.0) {
  BasicTensor<P> nz = v.ne(0.0);
  return f(v.where(nz, v.scalar_like(1.0).to(v.dtype()))).where(nz, v.scalar_like(at_zero).to(v.dtype()));
}
}  // namespace detail

template <class P>
BasicTensor<P> BasicTensor<P>::std(const Shape& dims, double correction, bool keepdim) const {
  return detail::masked_at_zero(var(dims, correction, keepdim), [](const BasicTensor& v) { return v.sqrt(); });
}

template <class P>
BasicTensor<P> BasicTensor<P>::logsumexp(const Shape& dims, bool keepdim) const {
  BasicTensor x = is_floating_point() ? *this : to(kDefaultFloat);
  if (x.numel() == 0) return x.exp().sum(dims, keepdim).log();  // -inf; amax has no identity
  BasicTensor m = x.amax(dims, true);
  BasicTensor safe_m = m.where(m.isfinite(), m.scalar_like(0.0).to(m.dtype()));  // all -inf rows stay -inf
  BasicTensor r = x.sub(safe_m).exp().sum(dims, true).log().add(safe_m);
  return keepdim ? r : r.reshape(detail::reduced_shape(impl(), dims, false, "logsumexp"));
}

/// The value is made an element of this tensor's dtype first (as PyTorch), so that the
/// selection stays in that dtype: a float Scalar against an integer tensor would otherwise
/// promote the whole result to f32 and back, rounding integers above 2^24.
template <class P>
BasicTensor<P> BasicTensor<P>::masked_fill(const BasicTensor& mask, Scalar v) const {
  detail::check_scalar_fits(v, dtype(), "masked_fill");
  return wrap(detail::make_scalar_tensor(v, dtype(), device())).where(mask, *this);
}

template <class P>
BasicTensor<P> BasicTensor<P>::norm(double p, const Shape& dims, bool keepdim) const {
  EMBER_CHECK(is_floating_point(), "[norm] needs a floating tensor, got {}", dtype());
  EMBER_CHECK(!std::isnan(p), "[norm] p is NaN");
  // f16/bf16 in f32, rounded once (as PyTorch 2): sum |x|^3 of f16 100s overflows f16.
  if (dtype() == DType::F16 || dtype() == DType::BF16) return to(DType::F32).norm(p, dims, keepdim).to(dtype());
  if (p == 1) return norm1(dims, keepdim);
  if (p == 2) return norm2(dims, keepdim);
  if (std::isinf(p) && p > 0) {
    // A maximum over nothing has no value (PyTorch errors too); -inf errors in amin.
    bool empty = dims.empty() && numel() == 0;
    for (int64_t d : dims) empty = empty || size(d) == 0;
    EMBER_CHECK(!empty, "[norm] the inf norm over an empty dim of shape {} (dims {}) has no value", sizes(), dims);
    return norm_inf(dims, keepdim);
  }
  if (std::isinf(p)) return abs().amin(dims, keepdim);     // p = -inf: the smallest |x|
  // The count of non-zeros (NaN counts), with PyTorch's zero gradient: sign's derivative is 0.
  if (p == 0) return sign().abs().masked_fill(isnan(), 1.0).sum(dims, keepdim);
  // (sum |x|^p)^(1/p), with PyTorch's zero gradients where the derivative is infinite: at
  // x = 0 for p < 1 (of |x|^p), at a zero norm for p > 1 (of s^(1/p)).
  BasicTensor a = abs();
  // (p < 0: 0^p = inf makes the norm 0, as PyTorch; no mask then.)
  BasicTensor powered =
      p > 0 && p < 1 ? detail::masked_at_zero(a, [p](const BasicTensor& v) { return v.pow(p); }) : a.pow(p);
  return detail::masked_at_zero(powered.sum(dims, keepdim), [p](const BasicTensor& v) { return v.pow(1.0 / p); });
}

template <class P>
BasicTensor<P> BasicTensor<P>::renorm(double p, int64_t dim, double maxnorm) const {
  EMBER_CHECK(defined() && this->dim() >= 2, "[renorm] needs a tensor of at least 2 dims, got shape {}",
              defined() ? sizes() : Shape());
  EMBER_CHECK(is_floating_point(), "[renorm] needs a floating tensor, got {}", dtype());
  EMBER_CHECK(p > 0, "[renorm] p must be > 0, got {}", p);
  EMBER_CHECK(maxnorm >= 0, "[renorm] maxnorm must be >= 0, got {}", maxnorm);
  if (is_reduced_float(dtype())) return to(DType::F32).renorm(p, dim, maxnorm).to(dtype());  // in f32, rounded once
  const int64_t d = wrap_dim(dim, this->dim(), "renorm");
  Shape others;  // the norm of each slice along d runs over every other dim
  for (int64_t i = 0; i < this->dim(); ++i)
    if (i != d) others.push_back(i);
  const BasicTensor norms = norm(p, others, true);
  // PyTorch's factor, with its 1e-7 guard; slices within the bound are untouched (factor 1).
  return mul(scalar_like(maxnorm).div(norms + 1e-7).where(norms.gt(maxnorm), scalar_like(1.0).to(norms.dtype())));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::renorm_(double p, int64_t dim, double maxnorm) {
  // From a copy while recorded: renorm saves its input, which the write-back moves on.
  return assign_result(input_for_inplace().renorm(p, dim, maxnorm), "renorm_");
}

}  // namespace ember
