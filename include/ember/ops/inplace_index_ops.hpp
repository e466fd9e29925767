#pragma once
/// index_fill, masked_scatter and masked_fill with a tensor value, and the in-place forms of
/// the index ops, as libtorch's methods: scatter_, scatter_add_, scatter_reduce_, index_add_,
/// index_copy_, index_fill_, masked_scatter_.
///
///   logits.index_fill_(1, banned_tokens, -INFINITY);   // forbid some classes
///   counts.index_add_(0, labels, ones);                 // a histogram by label
///   x.masked_scatter_(mask, replacements);              // mask's true places, in order
///
/// Each in-place form writes its out-of-place result back with copy_ (Note [In-place ops and
/// autograd]: a recorded call then differentiates like the out-of-place op; a leaf that needs
/// a gradient is refused, as in PyTorch). A recorded call computes from a clone of the tensor:
/// the out-of-place op may save its input for backward (scatter_reduce's amax, prod, mean),
/// which the write-back would otherwise overwrite. It costs a second pass over the tensor; the
/// index kernels would write in place directly, which the optimisers and data paths do not need
/// yet.

#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/inplace_check.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/shape_ops.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

namespace ember {

namespace detail {
/// What an in-place index op computes from: self, or a clone of it when the call will be
/// recorded (see above). With grad mode on, refuses a leaf that requires grad, by the op's name.
template <class P>
BasicTensor<P> inplace_source(const BasicTensor<P>& self, const char* op, const BasicTensor<P>& other = {}) {
  if constexpr (autograd::detail::has_autograd<P>()) {
    if (!autograd::GradMode::is_enabled()) return self;  // under NoGradGuard: straight through
    autograd::detail::check_inplace_target(self.impl(), op, "");
    const bool recorded = self.requires_grad() || (other.defined() && other.requires_grad());
    return recorded ? self.clone() : self;
  } else {
    (void)op, (void)other;
    return self;
  }
}
/// A 0-d value tensor for x: on x's device, in x's dtype; an integer or bool x takes only a
/// value it can hold (as the Scalar forms), checked on the host.
template <class P>
BasicTensor<P> fill_value(const BasicTensor<P>& x, const BasicTensor<P>& value, const char* op) {
  EMBER_CHECK(value.dim() == 0, "[{}] value must be a 0-d tensor, got shape {}", op, value.sizes());
  if (!is_floating(x.dtype())) check_scalar_fits(value.item(), x.dtype(), op);
  return value.to(x.device(), x.dtype());
}
}  // namespace detail

/// x with the slices at `index` along dim set to a 0-d value tensor (differentiable in x and
/// in value; a repeated index counts once).
template <class P>
BasicTensor<P> index_fill(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index,
                          const BasicTensor<P>& value) {
  const BasicTensor<P> v = detail::fill_value(x, value, "index_fill");
  EMBER_CHECK(index.dim() <= 1, "[index_fill] index must be 0-d or 1-d, got shape {}", index.sizes());
  EMBER_CHECK(index.dtype() == DType::I64, "[index_fill] index must be i64, got {}", index.dtype());
  EMBER_CHECK(index.device() == x.device(), "[index_fill] index is on {}, x on {}", index.device(), x.device());
  if (x.dim() == 0) return index_fill(x.reshape({1}), dim, index, v).reshape({});
  const int64_t d = wrap_dim(dim, x.dim(), "index_fill");
  const int64_t n = x.size(d);
  BasicTensor<P> slots = index.reshape({index.numel()});
  if (slots.numel() > 0) {
    const int64_t lo = slots.min().template item<int64_t>(), hi = slots.max().template item<int64_t>();
    EMBER_CHECK(lo >= -n && hi < n, "[index_fill] index {} is out of range for dim {} of size {}", lo < -n ? lo : hi,
                d, n);
    if (lo < 0) slots = where(slots.lt(0), slots + n, slots);  // negative positions count from the end, as PyTorch
  }
  // One write per slice: the value's gradient sums each filled slice once, as PyTorch's.
  // (On the host: a small index vector, and unique has no device kernel.)
  slots = std::get<0>(unique(slots.to(kCPU))).to(x.device());
  Shape s = x.sizes();
  s[static_cast<size_t>(d)] = slots.numel();
  return x.index_copy(d, slots, v.expand(s));
}
template <class P>
BasicTensor<P> index_fill(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index, Scalar value) {
  detail::check_scalar_fits(value, x.dtype(), "index_fill");
  return index_fill(x, dim, index, full<P>({}, value, x.options()));
}

/// x with the positions where mask (bool, broadcast with x) is true taken, in row-major order,
/// from the first elements of source (x's dtype, at least that many elements).
template <class P>
BasicTensor<P> masked_scatter(const BasicTensor<P>& x, const BasicTensor<P>& mask, const BasicTensor<P>& source) {
  EMBER_CHECK(mask.dtype() == DType::Bool, "[masked_scatter] mask must be bool, got {}", mask.dtype());
  EMBER_CHECK(source.dtype() == x.dtype(), "[masked_scatter] source is {}, x is {}: they need one dtype",
              source.dtype(), x.dtype());
  const Shape shape = ops::broadcast_shapes(x.sizes(), mask.sizes(), "masked_scatter");
  const BasicTensor<P> m = mask.expand(shape);
  const int64_t count = m.sum().template item<int64_t>();
  EMBER_CHECK(source.numel() >= count, "[masked_scatter] source has {} elements for {} true places in mask of shape {}",
              source.numel(), count, mask.sizes());
  const BasicTensor<P> base = x.sizes() == shape ? x : x.expand(shape).contiguous();
  return index_put(base, {m}, source.reshape({source.numel()}).narrow(0, 0, count));
}

// ---- BasicTensor's method forms (declared in core/tensor.hpp) -----------------------------------

/// masked_fill with a 0-d value tensor: differentiable in the value too.
template <class P>
BasicTensor<P> BasicTensor<P>::masked_fill(const BasicTensor& mask, const BasicTensor& value) const {
  EMBER_CHECK(mask.dtype() == DType::Bool, "[masked_fill] mask must be bool, got {}", mask.dtype());
  return detail::fill_value(*this, value, "masked_fill").where(mask, *this);
}
template <class P>
BasicTensor<P> BasicTensor<P>::index_fill(int64_t dim, const BasicTensor& index, Scalar value) const {
  return ember::index_fill(*this, dim, index, value);
}
template <class P>
BasicTensor<P> BasicTensor<P>::index_fill(int64_t dim, const BasicTensor& index, const BasicTensor& value) const {
  return ember::index_fill(*this, dim, index, value);
}
template <class P>
BasicTensor<P> BasicTensor<P>::masked_scatter(const BasicTensor& mask, const BasicTensor& source) const {
  return ember::masked_scatter(*this, mask, source);
}
template <class P>
BasicTensor<P> BasicTensor<P>::scatter_reduce(int64_t dim, const BasicTensor& index, const BasicTensor& src,
                                              std::string_view reduce, bool include_self) const {
  return ember::scatter_reduce(*this, dim, index, src, reduce, include_self);
}

template <class P>
BasicTensor<P>& BasicTensor<P>::scatter_(int64_t dim, const BasicTensor& index, const BasicTensor& src) {
  return copy_(ember::scatter(detail::inplace_source(*this, "scatter_", src), dim, index, src));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::scatter_(int64_t dim, const BasicTensor& index, Scalar value) {
  return copy_(ember::scatter(detail::inplace_source(*this, "scatter_"), dim, index, value));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::scatter_add_(int64_t dim, const BasicTensor& index, const BasicTensor& src) {
  return copy_(ember::scatter_add(detail::inplace_source(*this, "scatter_add_", src), dim, index, src));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::scatter_reduce_(int64_t dim, const BasicTensor& index, const BasicTensor& src,
                                                std::string_view reduce, bool include_self) {
  return copy_(ember::scatter_reduce(detail::inplace_source(*this, "scatter_reduce_", src), dim, index, src, reduce,
                                    include_self));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::index_add_(int64_t dim, const BasicTensor& index, const BasicTensor& src,
                                           Scalar alpha) {
  return copy_(ember::index_add(detail::inplace_source(*this, "index_add_", src), dim, index, src, alpha));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::index_copy_(int64_t dim, const BasicTensor& index, const BasicTensor& src) {
  return copy_(ember::index_copy(detail::inplace_source(*this, "index_copy_", src), dim, index, src));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::index_fill_(int64_t dim, const BasicTensor& index, Scalar value) {
  return copy_(ember::index_fill(detail::inplace_source(*this, "index_fill_"), dim, index, value));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::index_fill_(int64_t dim, const BasicTensor& index, const BasicTensor& value) {
  return copy_(ember::index_fill(detail::inplace_source(*this, "index_fill_", value), dim, index, value));
}
namespace detail {
/// An in-place masked op writes x's shape: the mask must broadcast to it (checked before any
/// work, not found out from the result's shape).
template <class P>
void check_mask_fits(const BasicTensor<P>& x, const BasicTensor<P>& mask, const char* op) {
  EMBER_CHECK(mask.defined(), "[{}] needs a defined mask", op);
  EMBER_CHECK(ops::broadcast_shapes(x.sizes(), mask.sizes(), op) == Shape(x.sizes()),
              "[{}] mask of shape {} does not broadcast to x's shape {}", op, mask.sizes(), x.sizes());
}
}  // namespace detail

template <class P>
BasicTensor<P>& BasicTensor<P>::masked_scatter_(const BasicTensor& mask, const BasicTensor& source) {
  detail::check_mask_fits(*this, mask, "masked_scatter_");
  return copy_(ember::masked_scatter(detail::inplace_source(*this, "masked_scatter_", source), mask, source));
}
template <class P>
BasicTensor<P>& BasicTensor<P>::masked_fill_(const BasicTensor& mask, const BasicTensor& value) {
  detail::check_mask_fits(*this, mask, "masked_fill_");
  return copy_(detail::inplace_source(*this, "masked_fill_", value).masked_fill(mask, value));
}

namespace detail {
/// `index` (i64, any shape) as positions into x read as 1-d: flattened, each checked on the
/// host to lie in [-numel, numel), negatives moved from the end.
/// The first element of an i64 index tensor (read on the host) outside [lo, hi), or none.
template <class P>
std::optional<int64_t> index_outside(const BasicTensor<P>& index, int64_t lo, int64_t hi) {
  const BasicTensor<P> host = index.reshape({-1}).to(kCPU).contiguous();
  const int64_t* p = host.template data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    if (p[i] < lo || p[i] >= hi) return p[i];
  return std::nullopt;
}
template <class P>
BasicTensor<P> flat_positions(const BasicTensor<P>& x, const BasicTensor<P>& index, const char* op) {
  EMBER_CHECK(x.defined() && index.defined(), "[{}] needs defined tensors", op);
  EMBER_CHECK(index.dtype() == DType::I64, "[{}] index must be i64, got {}", op, index.dtype());
  EMBER_CHECK(index.device() == x.device(), "[{}] index is on {} but the tensor is on {}", op, index.device(),
              x.device());
  const int64_t n = x.numel();
  const BasicTensor<P> flat = index.reshape({-1});
  if (const std::optional<int64_t> bad = index_outside(flat, -n, n))
    EMBER_FAIL("[{}] index {} is out of range for a tensor of {} elements", op, *bad, n);
  return where(flat.lt(int64_t{0}), flat + n, flat);
}
/// put's result, computed out of place from `self`.
template <class P>
BasicTensor<P> put_into(const BasicTensor<P>& self, const BasicTensor<P>& index, const BasicTensor<P>& source,
                        bool accumulate, const char* op) {
  EMBER_CHECK(source.defined(), "[{}] needs a defined source", op);
  EMBER_CHECK(source.dtype() == self.dtype(), "[{}] source must have the tensor's dtype {}, got {}", op, self.dtype(),
              source.dtype());
  EMBER_CHECK(source.device() == self.device(), "[{}] source is on {} but the tensor is on {}", op, source.device(),
              self.device());
  EMBER_CHECK(index.defined() && source.numel() == index.numel(),
              "[{}] source ({} elements) and index ({} elements) must have one count", op, source.numel(),
              index.defined() ? index.numel() : 0);
  const BasicTensor<P> at = flat_positions(self, index, op);
  const BasicTensor<P> flat = self.reshape({-1}), values = source.reshape({-1});
  return (accumulate ? flat.index_add(0, at, values) : flat.index_copy(0, at, values)).reshape(self.sizes());
}
}  // namespace detail

template <class P>
BasicTensor<P> BasicTensor<P>::take(const BasicTensor& index) const {
  const BasicTensor at = detail::flat_positions(*this, index, "take");
  return reshape({-1}).index_select(0, at).reshape(index.sizes());
}
template <class P>
BasicTensor<P> BasicTensor<P>::put(const BasicTensor& index, const BasicTensor& source, bool accumulate) const {
  return detail::put_into(*this, index, source, accumulate, "put");
}
template <class P>
BasicTensor<P>& BasicTensor<P>::put_(const BasicTensor& index, const BasicTensor& source, bool accumulate) {
  return copy_(detail::put_into(detail::inplace_source(*this, "put_", source), index, source, accumulate, "put_"));
}
template <class P>
BasicTensor<P> take(const BasicTensor<P>& x, const BasicTensor<P>& index) {
  return x.take(index);
}
template <class P>
BasicTensor<P> put(const BasicTensor<P>& x, const BasicTensor<P>& index, const BasicTensor<P>& source,
                   bool accumulate = false) {
  return x.put(index, source, accumulate);
}

/// torch.index_reduce: x's slices index[i] along dim reduced with source's slice i by "prod",
/// "mean", "amax" or "amin"; with include_self, x's own values take part (a mean counts them as
/// one more element). Slices no index names keep x's values. index: 1-d i64 in [0, size).
template <class P>
BasicTensor<P> index_reduce(const BasicTensor<P>& x, int64_t dim, const BasicTensor<P>& index,
                            const BasicTensor<P>& source, std::string_view reduce, bool include_self = true) {
  constexpr const char* op = "index_reduce";
  EMBER_CHECK(x.defined() && index.defined() && source.defined(), "[{}] needs defined tensors", op);
  EMBER_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "[{}] reduce must be prod, mean, amax or amin, got '{}'", op, reduce);
  EMBER_CHECK(x.dtype() != DType::Bool, "[{}] is not defined for bool tensors", op);
  EMBER_CHECK(index.dim() <= 1 && (index.dtype() == DType::I64 || index.dtype() == DType::I32),
              "[{}] index must be a 1-d i64 or i32 tensor, got {} of shape {}", op, index.dtype(), index.sizes());
  if (index.dtype() == DType::I32) return index_reduce(x, dim, index.to(DType::I64), source, reduce, include_self);
  if (x.dim() <= 1 && source.dim() <= 1 && (x.dim() == 0 || source.dim() == 0)) {
    // A 0-d tensor is a slice of one element, as PyTorch's (a 0-d self, or a 0-d source).
    (void)wrap_dim(dim, 1, op);
    EMBER_CHECK(source.numel() == index.numel(), "[{}] source of shape {} must have one element per index ({})", op,
                source.sizes(), index.numel());
    const BasicTensor<P> r = index_reduce(x.reshape({-1}), 0, index, source.reshape({-1}), reduce, include_self);
    return r.reshape(x.sizes());
  }
  const int64_t d = wrap_dim(dim, x.dim(), op);
  EMBER_CHECK(source.dtype() == x.dtype() && source.device() == x.device() && index.device() == x.device(),
              "[{}] source ({} on {}) and index (on {}) must match the tensor ({} on {})", op, source.dtype(),
              source.device(), index.device(), x.dtype(), x.device());
  Shape want = x.sizes();
  want[static_cast<size_t>(d)] = index.numel();
  EMBER_CHECK(source.sizes() == want, "[{}] source of shape {} must have shape {} (the tensor's {} with index's {} along dim {})",
              op, source.sizes(), want, x.sizes(), index.numel(), d);
  if (const std::optional<int64_t> bad = detail::index_outside(index, 0, x.size(d)))
    EMBER_FAIL("[{}] index {} is out of range for dim {} of size {}", op, *bad, d, x.size(d));
  // Each element of source is reduced into the element of x at index[i] along d: scatter_reduce
  // with the index spread over source's shape.
  Shape along(static_cast<size_t>(x.dim()), 1);
  along[static_cast<size_t>(d)] = index.numel();
  return x.scatter_reduce(d, index.reshape(along).expand(source.sizes()), source, reduce, include_self);
}
template <class P>
BasicTensor<P> BasicTensor<P>::index_reduce(int64_t dim, const BasicTensor& index, const BasicTensor& source,
                                            std::string_view reduce, bool include_self) const {
  return ember::index_reduce(*this, dim, index, source, reduce, include_self);
}
template <class P>
BasicTensor<P>& BasicTensor<P>::index_reduce_(int64_t dim, const BasicTensor& index, const BasicTensor& source,
                                              std::string_view reduce, bool include_self) {
  return copy_(ember::index_reduce(detail::inplace_source(*this, "index_reduce_", source), dim, index, source, reduce,
                                   include_self));
}

}  // namespace ember
