#pragma once
/// Custom differentiable operations, as libtorch's torch::autograd::Function:
///
///   struct ScaledTanh : ember::autograd::Function<ScaledTanh> {
///     static constexpr const char* name = "ScaledTanh";          // optional: "ScaledTanhBackward"
///     static Tensor forward(AutogradContext* ctx, const Tensor& x, double k) {
///       Tensor y = (x * k).tanh();
///       ctx->save_for_backward({y});
///       ctx->saved_data["k"] = k;
///       return y;
///     }
///     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
///       Tensor y = ctx->get_saved_variables()[0];
///       double k = std::any_cast<double>(ctx->saved_data["k"]);
///       return {grads[0] * (1 - y * y) * k, Tensor()};   // one per forward argument
///     }
///   };
///   Tensor y = ScaledTanh::apply(x, 2.0);
///
/// forward runs without recording; backward runs recorded under create_graph, so a custom
/// function is twice differentiable when its backward is written with differentiable ops.
/// A forward that modifies an input in place calls ctx->mark_dirty({x}) and returns x: x
/// itself then carries the function's history (its root's too, when x is a view).

#include <ember/autograd/function_node.hpp>
#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/layer.hpp>
#include <ember/autograd/tensor_autograd.hpp>
#include <ember/dispatch/default_policy.hpp>

#include <algorithm>
#include <any>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember::autograd {

template <class Derived, class P = DefaultPolicy>
struct Function;

template <class P = DefaultPolicy>
class BasicAutogradContext {
 public:
  using TensorT = BasicTensor<P>;

  /// Tensors backward needs; checked for in-place modification when unpacked.
  void save_for_backward(std::vector<TensorT> ts) { to_save_ = std::move(ts); }
  std::vector<TensorT> get_saved_variables() const {
    EMBER_CHECK(node_ != nullptr, "[autograd::Function] saved tensors are available in backward only");
    std::vector<TensorT> out;
    for (const SavedTensor& s : saved_) out.emplace_back(s.unpack(*node_));
    return out;
  }
  /// Outputs that must not require grad (indices, masks).
  void mark_non_differentiable(const std::vector<TensorT>& ts) {
    for (const TensorT& t : ts) non_diff_.push_back(&t.impl());
  }
  /// Inputs that forward modified in place. Each must also be returned; it then takes the
  /// function's history (as after a built-in in-place op), instead of being returned as a
  /// new alias with the input's old history untouched.
  void mark_dirty(const std::vector<TensorT>& ts) {
    for (const TensorT& t : ts) dirty_.push_back(&t.impl());
  }
  /// Whether backward must produce a gradient for forward argument i.
  bool needs_input_grad(size_t i) const { return i < needs_.size() && needs_[i]; }
  /// With false, backward gets an undefined tensor (not zeros) for each output that received
  /// no gradient, as libtorch's: it saves filling and adding zeros. Call it in forward.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// Anything else backward needs (numbers, shapes).
  std::unordered_map<std::string, std::any> saved_data;

 private:
  template <class D, class Q>
  friend struct Function;
  std::vector<TensorT> to_save_;
  std::vector<SavedTensor> saved_;
  std::vector<const TensorImpl*> non_diff_;
  std::vector<const TensorImpl*> dirty_;
  std::vector<bool> needs_;
  bool materialize_grads_ = true;
  const Node* node_ = nullptr;
};

using AutogradContext = BasicAutogradContext<>;

namespace detail {
template <class D>
constexpr const char* function_name() {
  if constexpr (requires { D::name; }) return D::name;
  else return "CustomFunction";
}
template <class P, class A>
constexpr bool is_tensor_arg = std::is_same_v<std::decay_t<A>, BasicTensor<P>>;
}  // namespace detail

template <class Derived, class P>
struct Function {
  using TensorT = BasicTensor<P>;
  using Ctx = BasicAutogradContext<P>;

  template <class... Args>
  static auto apply(Args&&... args) {
    auto ctx = std::make_shared<Ctx>();
    // Which arguments are tensors that require grad.
    std::vector<const TensorImpl*> inputs;
    auto note = [&](const auto& a) {
      if constexpr (detail::is_tensor_arg<P, decltype(a)>) {
        inputs.push_back(a.defined() ? &a.impl() : nullptr);
        ctx->needs_.push_back(a.defined() && a.requires_grad());
      } else {
        inputs.push_back(nullptr);
        ctx->needs_.push_back(false);
      }
    };
    (note(args), ...);
    bool record = GradMode::is_enabled();
    bool any = false;
    for (bool b : ctx->needs_) any = any || b;
    record = record && any;

    auto result = [&] {
      NoGradGuard ng;
      return Derived::forward(ctx.get(), std::forward<Args>(args)...);
    }();
    std::vector<TensorT*> outs;
    if constexpr (std::is_same_v<decltype(result), TensorT>) {
      outs.push_back(&result);
    } else {
      for (TensorT& t : result) outs.push_back(&t);
    }
    // Only apply reads the dirty list (kept in ctx, it would dangle in the node).
    const std::vector<const TensorImpl*> dirty = std::move(ctx->dirty_);
    ctx->dirty_.clear();
    auto is_dirty = [&](const TensorImpl* t) { return std::find(dirty.begin(), dirty.end(), t) != dirty.end(); };
    auto non_differentiable = [&](const TensorImpl* t) {
      for (const TensorImpl* nd : ctx->non_diff_)
        if (nd == t) return true;
      return !is_floating(t->dtype);
    };
    // A dirty output takes the function's history only when it gets one at all (recording,
    // differentiable); otherwise it is returned as an alias without history, as PyTorch does.
    auto rebased = [&](const TensorImpl* t) { return record && is_dirty(t) && !non_differentiable(t); };
    for (const TensorImpl* d : dirty) {
      bool is_input = false, returned = false;
      for (const TensorImpl* in : inputs) is_input = is_input || in == d;
      for (TensorT* o : outs) returned = returned || (o->defined() && &o->impl() == d);
      EMBER_CHECK(is_input && returned,
                  "[autograd::Function] {}: a tensor marked dirty (shape {}) {}; the inputs forward modifies in place "
                  "must be marked and returned",
                  detail::function_name<Derived>(), d->sizes, is_input ? "was not returned" : "is not an input");
      // As after a built-in in-place op: a leaf that requires grad (or a view of one) must not
      // have been modified while recording. (PyTorch 1.13 lets a view of such a leaf through
      // and rebases the leaf; Ember refuses it, as it does for its built-in in-place ops.)
      if (rebased(d)) Recorder<P>::check_dirty(*d, detail::function_name<Derived>());
      // Saved references to the old value must see the change even when forward wrote through
      // a raw pointer (PyTorch bumps the version here too).
      ember::detail::bump_version(*d->storage);
    }
    // An output that is an input (or its storage) is returned as a new alias, so that its
    // history does not overwrite the input's; unless it is dirty and takes a history.
    for (TensorT* o : outs) {
      if (!o->defined() || rebased(&o->impl())) continue;
      for (const TensorImpl* in : inputs) {
        if (in != &o->impl()) continue;
        *o = TensorT(ember::autograd::detached(o->impl()));
        // mark_non_differentiable named the input; the mark is for the output it became.
        for (const TensorImpl*& nd : ctx->non_diff_)
          if (nd == in) nd = &o->impl();
      }
    }
    if (!record) {
      // Nothing can read them without a node (get_saved_variables needs one); saving would
      // also refuse tensors made under InferenceModeGuard.
      ctx->to_save_.clear();
      (void)take_saved_count();  // for no node: the next node's count starts clean
      return result;
    }
    const size_t n_args = sizeof...(Args);
    auto body = [ctx, n_args](const Node& self, detail::Grads<P>& grads) -> detail::Grads<P> {
      ctx->node_ = &self;
      std::vector<TensorT> g(grads.begin(), grads.end());
      std::vector<TensorT> r = Derived::backward(ctx.get(), std::move(g));
      EMBER_CHECK(r.size() == n_args,
                  "[autograd::Function] {}::backward returned {} gradients; expected {} (one per forward argument, "
                  "undefined for arguments without one)",
                  detail::function_name<Derived>(), r.size(), n_args);
      return r;
    };
    auto node = detail::make_node<P>(detail::function_name<Derived>(),
                                     std::span<const TensorImpl* const>(inputs.data(), inputs.size()), std::move(body),
                                     &Recorder<P>::policy_ops());
    node->run_without_grads = true;  // backward sees zero-filled gradients, as PyTorch's
    node->materialize_grads = ctx->materialize_grads_;
    uint32_t nr = 0;
    std::vector<std::pair<const TensorImpl*, TensorT>> dirty_values;  // a dirty output -> its alias
    for (TensorT* o : outs) {
      uint32_t this_nr = nr++;
      if (!o->defined()) continue;
      const bool non_diff = non_differentiable(&o->impl());
      if (node->outputs.size() <= this_nr) node->outputs.resize(this_nr + 1);
      node->outputs[this_nr] = {o->sizes(), o->dtype(), o->device()};
      if (non_diff) continue;
      // After the aliasing above, an output that is still dirty is one that takes this history.
      if (!is_dirty(&o->impl())) {
        set_history(o->impl(), node, this_nr);
        continue;
      }
      // The modified input takes this node's history through an alias that carries it (and
      // its view root a CopySlices node, as for a built-in in-place op on a view).
      TensorT value(ember::autograd::detached(o->impl()));
      set_history(value.impl(), node, this_nr);
      Recorder<P>::rebase_dirty(o->impl(), value.impl());
      dirty_values.emplace_back(&o->impl(), value);
    }
    // Saved outputs are kept without their history (no reference cycle).
    for (const TensorT& t : ctx->to_save_) {
      bool is_out = false;
      for (TensorT* o : outs) is_out = is_out || (o->defined() && &o->impl() == &t.impl());
      const TensorImpl* saved = &t.impl();
      for (const auto& [dirty, value] : dirty_values)  // the alias knows its output number
        if (dirty == saved) saved = &value.impl();
      ctx->saved_.emplace_back(*saved, is_out);
    }
    ctx->to_save_.clear();
    // Saved after the node was made, so make_node could not count them. Without any, the
    // node runs again after a backward without retain_graph (PyTorch frees only the saved
    // tensors; ctx and its saved_data stay).
    node->saved_tensors = !ctx->saved_.empty();
    (void)take_saved_count();
    return result;
  }
};

}  // namespace ember::autograd
