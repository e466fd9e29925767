#pragma once
/// In-place ops under autograd. Note [In-place ops and autograd]: an in-place op that must be
/// recorded runs as its out-of-place form on a clone of the target's old value (recorded,
/// so the formulas exist once and saved inputs are never the overwritten storage), then the
/// new values are copied into the target without recording, and the target takes the
/// result's history. When the target is a view of a tensor that requires grad (x.narrow(..)
/// .mul_(2)), the view's root gets a CopySlices node: the gradient of the root's old value is
/// the incoming gradient with the written region zeroed, and the written region's gradient
/// flows to the new values. The clone costs one copy of the target, on the training path only.
/// Included by autograd/derivatives.hpp.

// derivatives.hpp first (it includes this file at its end): its detail::ops_of is used here.
#include <ember/autograd/derivatives.hpp>
#include <ember/autograd/function_node.hpp>
#include <ember/autograd/inplace_check.hpp>
#include <ember/autograd/layer.hpp>

namespace ember::autograd {

namespace detail {

/// After `target` was overwritten with the values of `value` (null: a constant), make its
/// history (and its root's, when it is a view) say so.
template <class P>
void rebase_history(TensorImpl& target, const TensorImpl* value) {
  const PolicyOps* ops = ops_of<P>();
  AutogradMeta* m = target.autograd;
  TensorRef base = target.view_of;
  bool value_grad = value && requires_grad(*value);
  if (!base || (!requires_grad(*base) && !value_grad)) {
    if (value_grad) {
      set_history(target, value->autograd->grad_fn, value->autograd->output_nr);
    } else if (m && m->grad_fn && !base) {
      // Overwritten by values without a history (fill_, copy_ from a constant): the tensor
      // still requires grad, with a history that passes a zero gradient back (PyTorch's
      // FillBackward). Views made before the write see it (their root's history changed),
      // unlike after detach_().
      set_history(target, make_overwrite_node(Edge{m->grad_fn, m->output_nr}, ops), 0);
    } else if (m) {
      m->grad_fn.reset();
    }
    return;
  }
  // A view of `base`: base's old value outside the written region, `value` inside it.
  T<P> pos = view_positions<P>(*base, target, "copy_");
  T<P> keep;
  {
    NoGradGuard ng;
    T<P> flat_keep = ones<P>({base->numel}, TensorOptions(DType::Bool));
    T<P> cpu_pos = pos.is_cpu() ? pos : pos.cpu();
    bool* k = flat_keep.template data_ptr<bool>();
    const int64_t* p = cpu_pos.template data_ptr<int64_t>();
    for (int64_t i = 0; i < cpu_pos.numel(); ++i) k[p[i]] = false;
    keep = flat_keep.view(base->sizes);
    if (!base->device().is_cpu()) keep = keep.to(base->device());
  }
  Shape view_sizes = target.sizes;
  auto copy_slices = [pos, keep, view_sizes](const Node&, Grads<P>& gs) -> Grads<P> {
    const T<P>& g = gs[0];
    T<P> g_region = index_select(g.reshape({-1}), 0, pos.reshape({-1})).view(view_sizes);
    return {where(keep, g, 0.0), g_region};
  };
  auto cs = std::make_shared<FnNode<P, decltype(copy_slices)>>("copy_slices", std::move(copy_slices));
  cs->ops = ops;
  cs->sequence = next_sequence();
  cs->next = {gradient_edge(*base, ops), value ? gradient_edge(*value, ops) : Edge{}};
  set_history(*base, cs, 0);
  // Other views of base made before this write see base's new history when next used
  // (gradient_edge: AutogradMeta::root_fn).
  set_history(target, view_node<P>(*base, target), 0);
}

/// The in-place result must fit its target exactly, as the kernels' own in-place path demands.
inline void check_inplace_result(const TensorImpl& target, const TensorImpl& value, const char* op) {
  EMBER_CHECK(value.sizes == target.sizes,
              "[{}_] the result of shape {} cannot be written in place into a tensor of shape {}", op, value.sizes,
              target.sizes);
  EMBER_CHECK(is_floating(target.dtype) || !is_floating(value.dtype),
              "[{}_] result type {} cannot be written in place into a tensor of dtype {}", op, value.dtype,
              target.dtype);
}

template <class P>
void write_back(TensorImpl& target, const T<P>& value) {
  NoGradGuard ng;
  dispatch<P>(ops::CopyInto{}, target, value.impl());
}

/// The old value of a tensor about to be overwritten, with its history (recorded clone).
template <class P>
T<P> old_value(const TensorImpl& t) {
  return wrap<P>(t).clone();
}

}  // namespace detail

template <class P>
TensorRef Recorder<P>::inplace(const ops::Unary& op, const TensorImpl&, TensorImpl* target) {
  detail::check_inplace_target(*target, op.name());
  detail::T<P> value = detail::old_value<P>(*target).apply(ops::Unary{op.op, op.p});
  detail::check_inplace_result(*target, value.impl(), op.name());
  detail::write_back<P>(*target, value);
  detail::rebase_history<P>(*target, &value.impl());
  return TensorRef::share(target);
}

template <class P>
TensorRef Recorder<P>::inplace(const ops::Binary& op, const TensorImpl&, const TensorImpl& b, TensorImpl* target) {
  detail::check_inplace_target(*target, op.name());
  detail::T<P> old = detail::old_value<P>(*target);
  // An operand sharing the target's storage (x.mul_(x)) is read before the write, too.
  detail::T<P> other = b.storage.get() == target->storage.get() ? detail::old_value<P>(b) : detail::wrap<P>(b);
  detail::T<P> value = detail::T<P>::wrap(dispatch<P>(op, old.impl(), other.impl()));
  detail::check_inplace_result(*target, value.impl(), op.name());
  detail::write_back<P>(*target, value);
  detail::rebase_history<P>(*target, &value.impl());
  return TensorRef::share(target);
}

template <class P>
void Recorder<P>::inplace(const ops::IndexPutInto& op, TensorImpl& dst, ImplSpan indices, const TensorImpl& values) {
  detail::check_inplace_target(dst, "index_put");
  ops::check_writable(dst, op.name());
  detail::T<P> old = detail::old_value<P>(dst);
  detail::T<P> vals = values.storage.get() == dst.storage.get() ? detail::old_value<P>(values) : detail::wrap<P>(values);
  detail::T<P> value =
      detail::T<P>::wrap(dispatch<P>(ops::IndexPut{op.accumulate, op.name()}, old.impl(), indices, vals.impl()));
  detail::write_back<P>(dst, value);
  detail::rebase_history<P>(dst, &value.impl());
}

template <class P>
void Recorder<P>::inplace(const ops::CopyInto&, TensorImpl& dst, const TensorImpl& src) {
  detail::check_inplace_target(dst, "copy");
  {
    NoGradGuard ng;
    dispatch<P>(ops::CopyInto{}, dst, src);  // checks shapes, converts, crosses devices
  }
  if (!requires_grad(src)) return detail::rebase_history<P>(dst, nullptr);
  // The new values as a function of src: broadcast, then converted to dst's dtype and device.
  detail::T<P> value = detail::wrap<P>(src).expand(dst.sizes);
  if (value.device() != dst.device()) value = value.to(dst.device());
  if (value.dtype() != dst.dtype) value = value.to(dst.dtype);
  detail::rebase_history<P>(dst, &value.impl());
}

template <class P>
void Recorder<P>::inplace(const ops::Fill& op, TensorImpl& dst) {
  detail::check_inplace_target(dst, "fill");
  {
    NoGradGuard ng;
    dispatch<P>(op, dst);
  }
  detail::rebase_history<P>(dst, nullptr);
}

template <class P>
void Recorder<P>::check_dirty(const TensorImpl& target, const char* function) {
  detail::check_inplace_target(target, function, "");
}

template <class P>
void Recorder<P>::rebase_dirty(TensorImpl& target, const TensorImpl& value) {
  detail::rebase_history<P>(target, &value);
}

}  // namespace ember::autograd
