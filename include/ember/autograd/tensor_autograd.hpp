#pragma once
/// The autograd members of BasicTensor and the free functions `autograd::backward` and
/// `autograd::grad`. Usable with any policy whose layers include autograd::Autograd.

#include <ember/autograd/engine.hpp>
#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/layer.hpp>
#include <ember/core/tensor.hpp>
#include <ember/core/tensor_instances.hpp>

#include <initializer_list>
#include <optional>
#include <type_traits>
#include <vector>

namespace ember {

namespace autograd::detail {
template <class P>
void require_autograd() {
  static_assert(has_autograd<P>(), "this policy has no autograd::Autograd layer: it cannot record gradients");
}
}  // namespace autograd::detail

template <class P>
BasicTensor<P>& BasicTensor<P>::requires_grad_(bool on) {
  autograd::detail::require_autograd<P>();
  Impl& t = impl();
  if (!on && !t.autograd) return *this;
  EMBER_CHECK(!on || ember::is_floating(t.dtype),
              "[requires_grad_] only floating-point tensors can require gradients, got {}", t.dtype);
  EMBER_CHECK(autograd::is_leaf(t) || on,
              "[requires_grad_] a non-leaf tensor (produced by {}) cannot be marked as not requiring grad; use "
              "detach()",
              t.autograd->grad_fn->name());
  autograd::meta_of(t).requires_grad = on;
  return *this;
}

template <class P>
bool BasicTensor<P>::requires_grad() const {
  if constexpr (autograd::detail::has_autograd<P>()) return autograd::requires_grad(impl());
  else return false;  // (and no call into autograd code, even unoptimised)
}

template <class P>
BasicTensor<P> BasicTensor<P>::grad() const {
  const autograd::AutogradMeta* m = impl().autograd;
  if (!m) return {};
  if (m->grad_fn) return m->retained_grad ? BasicTensor(m->retained_grad->grad) : BasicTensor();
  return BasicTensor(m->grad);
}

template <class P>
void BasicTensor<P>::set_grad(const BasicTensor& g) {
  autograd::detail::require_autograd<P>();
  if (g.defined()) {
    EMBER_CHECK(g.sizes() == sizes() && g.dtype() == dtype() && g.device() == device(),
                "[set_grad] the gradient ({} {} on {}) must match the tensor ({} {} on {})", g.sizes(), g.dtype(),
                g.device(), sizes(), dtype(), device());
  }
  autograd::meta_of(impl()).grad = g.impl_ref();
}

template <class P>
void BasicTensor<P>::zero_grad(bool set_to_none) {
  autograd::AutogradMeta* m = impl().autograd;
  if (!m || !m->grad) return;
  if (set_to_none) {
    m->grad.reset();
  } else {
    ember::detail::NoGradGuardFor<P> ng;
    BasicTensor(m->grad).zero_();
  }
}

template <class P>
std::shared_ptr<autograd::Node> BasicTensor<P>::grad_fn() const {
  const autograd::AutogradMeta* m = impl().autograd;
  if (!m || !m->grad_fn) return nullptr;
  // Through gradient_edge: a view's history may have been rebuilt (AutogradMeta::root_fn).
  return autograd::gradient_edge(impl(), &autograd::Recorder<P>::policy_ops()).fn;
}

template <class P>
bool BasicTensor<P>::is_leaf() const {
  if constexpr (autograd::detail::has_autograd<P>()) return autograd::is_leaf(impl());
  else return true;
}

template <class P>
void BasicTensor<P>::retain_grad() {
  autograd::detail::require_autograd<P>();
  autograd::AutogradMeta* m = impl().autograd;
  EMBER_CHECK(m && (m->grad_fn || m->requires_grad),
              "[retain_grad] called on a tensor (shape {}) that does not require grad", sizes());
  if (!m->grad_fn || m->retained_grad) return;  // leaves keep .grad() anyway
  const autograd::PolicyOps* ops = &autograd::Recorder<P>::policy_ops();
  const autograd::Edge e = autograd::gradient_edge(impl(), ops);  // a view's rebuilt history too
  if (!e.fn) return;
  m->retained_grad = std::make_shared<autograd::RetainedGrad>();
  autograd::attach_retain_hook(*e.fn, e.input_nr, m->retained_grad, ops);
}

template <class P>
bool BasicTensor<P>::retains_grad() const {
  const autograd::AutogradMeta* m = impl().autograd;
  return m && m->retained_grad != nullptr;
}

template <class P>
BasicTensor<P> BasicTensor<P>::detach() const {
  if constexpr (autograd::detail::has_autograd<P>()) {
    return BasicTensor(autograd::detached(impl()));
  } else {  // no autograd metadata to drop: a plain alias of the same elements
    const Impl& t = impl();
    return BasicTensor(ember::detail::make_view(t.storage, t.dtype, t.sizes, t.strides, t.offset));
  }
}

template <class P>
BasicTensor<P>& BasicTensor<P>::detach_() {
  // A view's history is tied to its root's (in-place writes through either reach both);
  // PyTorch refuses this too.
  EMBER_CHECK(!impl().view_of || !requires_grad(),
              "[detach_] cannot detach a view in place (shape {}); use detach() for a new tensor", sizes());
  autograd::AutogradMeta* m = impl().autograd;
  if (m) {
    if (m->grad_fn) m->detached_fn = m->grad_fn.get();
    m->grad_fn.reset();
    m->requires_grad = false;
  }
  return *this;
}

template <class P>
template <class F>
unsigned BasicTensor<P>::register_hook(F&& hook) const {
  autograd::detail::require_autograd<P>();
  Impl& t = impl();
  EMBER_CHECK(autograd::requires_grad(t),
              "[register_hook] cannot register a hook on a tensor (shape {}) that does not require grad", sizes());
  autograd::GradHook h = [fn = std::forward<F>(hook)](const autograd::TensorRef& g) -> autograd::TensorRef {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, BasicTensor>>) {
      fn(BasicTensor(g));
      return {};
    } else {
      BasicTensor r = fn(BasicTensor(g));
      return r.impl_ref();
    }
  };
  autograd::AutogradMeta& m = autograd::meta_of(t);
  autograd::AutogradMeta::HookSlot slot;
  if (m.grad_fn) {
    const autograd::Edge e = autograd::gradient_edge(t, &autograd::Recorder<P>::policy_ops());
    if (e.fn) {
      slot = {false, e.fn, e.fn->pre_hooks.size()};
      e.fn->pre_hooks.push_back({e.input_nr, std::move(h)});
    }
  } else {
    slot = {true, {}, m.leaf_hooks.size()};
    m.leaf_hooks.push_back(std::move(h));
  }
  m.hook_slots.push_back(std::move(slot));
  return static_cast<unsigned>(m.hook_slots.size() - 1);
}

template <class P>
void BasicTensor<P>::remove_hook(unsigned handle) const {
  autograd::AutogradMeta* m = impl().autograd;
  EMBER_CHECK(m && handle < m->hook_slots.size(), "[remove_hook] no hook with handle {} on this tensor (shape {})",
              handle, sizes());
  const autograd::AutogradMeta::HookSlot& slot = m->hook_slots[handle];
  if (slot.leaf) {
    m->leaf_hooks[slot.index] = nullptr;
  } else if (std::shared_ptr<autograd::Node> node = slot.node.lock()) {
    node->pre_hooks[slot.index].second = nullptr;
  }
  // A hook whose node is gone went with its graph.
}

namespace autograd {

/// Accumulates the gradients of `tensors` (weighted by `grad_tensors`, default ones for
/// one-element tensors) into the leaves' .grad(). With `inputs` (libtorch's `inputs=`), into
/// those tensors' .grad() only: leaves through their accumulators (hooks run), non-leaves by
/// retain_grad(); an input the graph does not reach keeps its .grad(). Only the nodes that
/// lead to an input run, and the inputs' own nodes (as PyTorch 1.13), and only they give up
/// their saved tensors.
template <class P>
void backward(const std::vector<BasicTensor<P>>& tensors, const std::vector<BasicTensor<P>>& grad_tensors = {},
              std::optional<bool> retain_graph = {}, bool create_graph = false,
              const std::vector<BasicTensor<P>>& inputs = {}) {
  detail::require_autograd<P>();
  detail::BackwardRequest rq;
  for (const auto& t : tensors) rq.outputs.push_back(t.impl_ref());
  for (const auto& g : grad_tensors) rq.grad_outputs.push_back(g.impl_ref());
  for (size_t i = 0; i < inputs.size(); ++i) {
    BasicTensor<P> in = inputs[i];
    EMBER_CHECK(in.defined(), "[backward] input {} is an undefined tensor", i);
    EMBER_CHECK(in.requires_grad(), "[backward] input {} (shape {}) does not require grad", i, in.sizes());
    if (!in.is_leaf()) in.retain_grad();
    rq.inputs.push_back(in.impl_ref());
  }
  rq.accumulate_inputs = !inputs.empty();
  rq.allow_unused = true;
  rq.retain_graph = retain_graph.value_or(create_graph);
  rq.create_graph = create_graph;
  rq.ops = &Recorder<P>::policy_ops();
  detail::run_backward(rq);
}

/// The gradients of `outputs` with respect to `inputs` (returned, not accumulated into .grad()).
/// With create_graph they carry history, so they can be differentiated again. An input the
/// outputs do not depend on is an error unless allow_unused (then its gradient is undefined).
template <class P>
std::vector<BasicTensor<P>> grad(const std::vector<BasicTensor<P>>& outputs, const std::vector<BasicTensor<P>>& inputs,
                                 const std::vector<BasicTensor<P>>& grad_outputs = {},
                                 std::optional<bool> retain_graph = {}, bool create_graph = false,
                                 bool allow_unused = false) {
  detail::require_autograd<P>();
  EMBER_CHECK(!inputs.empty(), "[autograd::grad] needs at least one input");
  detail::BackwardRequest rq;
  rq.api = "autograd::grad";
  for (const auto& t : outputs) rq.outputs.push_back(t.impl_ref());
  for (const auto& g : grad_outputs) rq.grad_outputs.push_back(g.impl_ref());
  for (const auto& t : inputs) rq.inputs.push_back(t.impl_ref());
  rq.retain_graph = retain_graph.value_or(create_graph);
  rq.create_graph = create_graph;
  rq.allow_unused = allow_unused;
  rq.ops = &Recorder<P>::policy_ops();
  std::vector<TensorRef> r = detail::run_backward(rq);
  std::vector<BasicTensor<P>> out;
  out.reserve(r.size());
  for (auto& g : r) out.emplace_back(std::move(g));
  return out;
}

// Braced lists, as libtorch's callers write them: `backward({loss})`, `grad({y}, {x})`. (A
// braced list does not deduce the policy of the std::vector forms above; one std::vector
// argument among braced lists does, so the forms above serve the mixed calls.)
template <class P>
void backward(std::initializer_list<BasicTensor<P>> tensors, const std::vector<BasicTensor<P>>& grad_tensors = {},
              std::optional<bool> retain_graph = {}, bool create_graph = false,
              const std::vector<BasicTensor<P>>& inputs = {}) {
  backward<P>(std::vector<BasicTensor<P>>(tensors), grad_tensors, retain_graph, create_graph, inputs);
}
template <class P>
std::vector<BasicTensor<P>> grad(std::initializer_list<BasicTensor<P>> outputs,
                                 std::initializer_list<BasicTensor<P>> inputs,
                                 const std::vector<BasicTensor<P>>& grad_outputs = {},
                                 std::optional<bool> retain_graph = {}, bool create_graph = false,
                                 bool allow_unused = false) {
  return grad<P>(std::vector<BasicTensor<P>>(outputs), std::vector<BasicTensor<P>>(inputs), grad_outputs,
                 retain_graph, create_graph, allow_unused);
}

}  // namespace autograd

// After autograd::backward, which it calls.
template <class P>
void BasicTensor<P>::backward(const BasicTensor& grad, std::optional<bool> retain_graph, bool create_graph,
                              const std::vector<BasicTensor>& inputs) const {
  autograd::backward<P>({*this}, {grad}, retain_graph, create_graph, inputs);
}

// backward's DefaultPolicy instances are compiled into the library.
EMBER_TENSOR_AUTOGRAD_INSTANCES(extern template)

}  // namespace ember
