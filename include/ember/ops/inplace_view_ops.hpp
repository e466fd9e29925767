#pragma once
/// Shape changes in place, as libtorch's: squeeze_, unsqueeze_, t_, transpose_, swapdims_,
/// as_strided_, resize_, resize_as_; and set_data, which gives a tensor other elements
/// altogether. They change the tensor itself: every handle to it sees the change, as every
/// libtorch Tensor sharing one TensorImpl does. Only set_data changes values.
///   Tensor x = zeros({3});
///   x.unsqueeze_(0);   // x is 1x3
///   x.resize_({4, 5}); // x is 4x5, its storage grown, its first 3 values kept
///
/// Note [In-place view ops]: the new geometry is computed by the out-of-place view op, which
/// checks it and, under autograd, records it; the tensor then takes that view's sizes,
/// strides and offset and its history, so its gradient flows through the view's backward
/// into its old history (PyTorch's SqueezeBackward on a squeeze_()d tensor). As PyTorch, a
/// leaf that requires grad is refused under grad mode, and the storage version moves: a tensor
/// saved for backward before the change no longer describes the elements it saved. Unlike
/// PyTorch, a tensor with a history is refused under no-grad mode: its history would keep the
/// old shape and fail at backward; and a view of a leaf that requires grad may change shape
/// (its gradient still reaches the leaf). Views made of a tensor before it changed shape keep
/// their histories. A leaf reshaped under no-grad keeps its .grad in the old shape, as PyTorch's;
/// a gradient retained (retain_grad) before the change is dropped.

#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/inplace_check.hpp>
#include <ember/core/tensor.hpp>
#include <ember/core/tensor_methods.hpp>

#include <vector>

namespace ember {

namespace detail {

/// Checks that `t` may change shape in place under autograd (Note [In-place view ops]).
template <class P>
void check_inplace_view_target(const BasicTensor<P>& t, const char* op) {
  if constexpr (has_layer<autograd::Autograd, typename P::layers>::value) {
    const TensorImpl& ti = t.impl();
    if (!autograd::requires_grad(ti)) return;
    const bool leaf = autograd::is_leaf(ti);
    EMBER_CHECK(!leaf || !ember::detail::grad_enabled<P>(),
                "[{}] a leaf tensor that requires grad (shape {}) cannot change shape in place; do it under "
                "NoGradGuard, or use the out-of-place form",
                op, ti.sizes);
    EMBER_CHECK(leaf || ember::detail::grad_enabled<P>(),
                "[{}] under no-grad mode a tensor with a history (shape {}, produced by {}) cannot change shape in "
                "place: its history would keep the old shape; use the out-of-place form",
                op, ti.sizes, ti.autograd->grad_fn->name());
  }
}

/// Gives `t` the geometry and history of `v`, a view of it just made by the out-of-place op.
template <class P>
BasicTensor<P>& become_view(BasicTensor<P>& t, const BasicTensor<P>& v) {
  TensorImpl& ti = t.impl();
  const TensorImpl& vi = v.impl();
  const bool moved = ti.sizes != vi.sizes || ti.strides != vi.strides || ti.offset != vi.offset;
  ti.sizes = vi.sizes;
  ti.strides = vi.strides;
  ti.offset = vi.offset;
  ti.refresh();
  bump_version(*ti.storage);
  if constexpr (has_layer<autograd::Autograd, typename P::layers>::value) {
    if (vi.autograd && vi.autograd->grad_fn) {
      autograd::AutogradMeta& m = autograd::meta_of(ti);
      // A root's views made before keep their histories (its values did not change):
      // AutogradMeta::reshaped_from, which set_history clears.
      std::vector<const autograd::Node*> reshaped = std::move(m.reshaped_from);
      if (m.grad_fn && !ti.view_of) reshaped.push_back(m.grad_fn.get());
      // A gradient retained in the old geometry is not this tensor's any more.
      if (m.retained_grad && moved) m.retained_grad->grad.reset();
      autograd::set_history(ti, vi.autograd->grad_fn, vi.autograd->output_nr);
      if (!ti.view_of) m.reshaped_from = std::move(reshaped);
    }
  }
  return t;
}

}  // namespace detail

template <class P>
BasicTensor<P>& BasicTensor<P>::squeeze_() {
  detail::check_inplace_view_target(*this, "squeeze_");
  return detail::become_view(*this, squeeze());
}

template <class P>
BasicTensor<P>& BasicTensor<P>::squeeze_(int64_t d) {
  detail::check_inplace_view_target(*this, "squeeze_");
  wrap_dim(d, std::max<int64_t>(dim(), 1), "squeeze_");
  return detail::become_view(*this, squeeze(d));
}

template <class P>
BasicTensor<P>& BasicTensor<P>::unsqueeze_(int64_t d) {
  detail::check_inplace_view_target(*this, "unsqueeze_");
  wrap_dim(d, dim() + 1, "unsqueeze_");
  return detail::become_view(*this, unsqueeze(d));
}

template <class P>
BasicTensor<P>& BasicTensor<P>::transpose_(int64_t d0, int64_t d1) {
  detail::check_inplace_view_target(*this, "transpose_");
  wrap_dim(d0, std::max<int64_t>(dim(), 1), "transpose_");
  wrap_dim(d1, std::max<int64_t>(dim(), 1), "transpose_");
  return detail::become_view(*this, transpose(d0, d1));
}

template <class P>
BasicTensor<P>& BasicTensor<P>::t_() {
  EMBER_CHECK(dim() <= 2, "[t_] expects a tensor of rank <= 2, got shape {}", sizes());
  detail::check_inplace_view_target(*this, "t_");
  return detail::become_view(*this, t());
}

template <class P>
BasicTensor<P>& BasicTensor<P>::as_strided_(const Shape& new_sizes, const Shape& new_strides,
                                            std::optional<int64_t> offset) {
  constexpr const char* op = "as_strided_";
  detail::check_inplace_view_target(*this, op);
  // The geometry's checks under this op's name (as_strided would name itself).
  const int64_t start = offset.value_or(impl().offset);
  ops::check_as_strided(impl(), new_sizes, new_strides, start, op);
  return detail::become_view(*this, as_strided(new_sizes, new_strides, start));
}

template <class P>
BasicTensor<P>& BasicTensor<P>::resize_(const Shape& new_sizes) {
  constexpr const char* op = "resize_";
  Impl& ti = impl();
  if constexpr (detail::has_layer<autograd::Autograd, typename P::layers>::value) {
    EMBER_CHECK(!requires_grad(), "[{}] cannot resize a tensor that requires grad (shape {}); resize a clone()",
                op, sizes());
    // A view's elements must stay its root's for autograd to follow writes through it.
    EMBER_CHECK(!ti.view_of || !autograd::requires_grad(*ti.view_of) || new_sizes == ti.sizes,
                "[{}] cannot resize a view (shape {}) of a tensor that requires grad (shape {})", op, sizes(),
                ti.view_of->sizes);
  }
  if (new_sizes == ti.sizes) return *this;  // strides kept, as PyTorch's
  const int64_t n = checked_numel(new_sizes, op);
  if (n > 0) {
    int64_t end, nbytes;  // the bytes the new shape reaches from the storage's start
    EMBER_CHECK(!__builtin_add_overflow(ti.offset, n, &end) &&
                    !__builtin_mul_overflow(end, static_cast<int64_t>(itemsize(ti.dtype)), &nbytes),
                "[{}] shape {} of {} at offset {} is too large", op, new_sizes, ti.dtype, ti.offset);
    if (static_cast<size_t>(nbytes) > ti.storage->nbytes) detail::grow_storage(*ti.storage, static_cast<size_t>(nbytes), op);
  }
  ti.sizes = new_sizes;
  ti.strides = contiguous_strides(new_sizes);
  ti.refresh();
  detail::bump_version(*ti.storage);
  return *this;
}

template <class P>
void BasicTensor<P>::set_data(const BasicTensor& o) {
  constexpr const char* op = "set_data";
  EMBER_CHECK(o.defined(), "[{}] the new data is an undefined tensor", op);
  Impl& t = impl();
  const Impl& src = o.impl();
  if (&t == &src) return;
  if constexpr (detail::has_layer<autograd::Autograd, typename P::layers>::value) {
    EMBER_CHECK(!t.autograd || !t.autograd->grad_fn,
                "[{}] a tensor with a history (produced by {}) cannot take new data; detach() it first", op,
                t.autograd ? t.autograd->grad_fn->name() : "");
    EMBER_CHECK(!autograd::requires_grad(t) || ember::is_floating(src.dtype),
                "[{}] a tensor that requires grad cannot take {} data", op, src.dtype);
  }
  const bool other_kind = t.sizes != src.sizes || t.dtype != src.dtype || t.device() != src.device();
  // Nothing below can fail. (Autocast's cached cast of the old elements is
  // dropped when next looked up: it compares the geometry and dtype it was made from.)
  detail::adopt_elements(t, src);
  if constexpr (detail::has_layer<autograd::Autograd, typename P::layers>::value)
    if (other_kind) autograd::reset_grad_accumulator(t);  // graphs made before keep theirs
}

}  // namespace ember
