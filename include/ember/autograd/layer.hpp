#pragma once
/// The Autograd layer of the policy chain. With grad mode off, or when no input requires
/// grad, an op passes straight through (one thread-local load and a few pointer tests).
/// Otherwise the op runs and `Recorder<P>` attaches a node with the op's derivative to its
/// output; in-place ops are recorded as their out-of-place form followed by a copy, so that
/// every formula exists once (Note [In-place ops and autograd] in docs/design.md).
///
/// Recorder<P>'s members are defined in autograd/derivatives.hpp. For DefaultPolicy they are
/// compiled once into the library (src/autograd/derivatives.cpp) and declared `extern
/// template` in default_policy.hpp, so user code never instantiates the formulas. A program
/// with its own policy that includes the Autograd layer includes derivatives.hpp once, in one
/// of its own translation units, and instantiates `template struct Recorder<ItsPolicy>;`.

#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/node.hpp>
#include <ember/ops/attention_op.hpp>
#include <ember/ops/conv_ops.hpp>
#include <ember/ops/depthwise_conv_ops.hpp>
#include <ember/ops/direct_conv_ops.hpp>
#include <ember/ops/index_ops.hpp>
#include <ember/ops/norm_ops.hpp>
#include <ember/ops/reduction_ops.hpp>
#include <ember/ops/softmax_backward_op.hpp>
#include <ember/ops/view_ops.hpp>
#include <ember/ops/winograd_ops.hpp>

#include <span>
#include <utility>
#include <vector>

namespace ember::autograd {

using ImplSpan = std::span<const TensorImpl* const>;
using RefPair = std::pair<TensorRef, TensorRef>;

/// Attaches derivative nodes to op results (one overload per op descriptor). `inplace_*`
/// members run the whole in-place op themselves.
template <class P>
struct Recorder {
  static void record(const ops::Unary& op, const TensorRef& out, const TensorImpl& x);
  static void record(const ops::Binary& op, const TensorRef& out, const TensorImpl& a, const TensorImpl& b);
  static void record(const ops::Where& op, const TensorRef& out, const TensorImpl& c, const TensorImpl& a,
                     const TensorImpl& b);
  static void record(const ops::ClampTensors& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& lo,
                     const TensorImpl& hi);
  static void record(const ops::Lerp& op, const TensorRef& out, const TensorImpl& start, const TensorImpl& end,
                     const TensorImpl& weight);
  static void record(const ops::To& op, const TensorRef& out, const TensorImpl& x);
  static void record(const ops::Reduce& op, const TensorRef& out, const TensorImpl& x);
  static void record(const ops::ArgReduce& op, const RefPair& out, const TensorImpl& x);
  static void record(const ops::Softmax& op, const TensorRef& out, const TensorImpl& x);
  static void record(const ops::Cumulative& op, const RefPair& out, const TensorImpl& x);
  static void record(const ops::Matmul& op, const TensorRef& out, const TensorImpl& a, const TensorImpl& b,
                     const TensorImpl* c = nullptr);
  static void record(const ops::ViewOp& op, const TensorRef& out, const TensorImpl& x);
  static void record(const ops::Cat& op, const TensorRef& out, ImplSpan xs);
  static void record(const ops::IndexSelect& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& index);
  static void record(const ops::Gather& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& index);
  static void record(const ops::Scatter& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& index,
                     const TensorImpl& src);
  static void record(const ops::IndexAdd& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& index,
                     const TensorImpl& src);
  static void record(const ops::MaskedSelect& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& mask);
  static void record(const ops::Sort& op, const RefPair& out, const TensorImpl& x);
  static void record(const ops::Topk& op, const RefPair& out, const TensorImpl& x);
  static void record(const ops::IndexPut& op, const TensorRef& out, const TensorImpl& x, ImplSpan indices,
                     const TensorImpl& values);
  static void record(const ops::IndexTensor& op, const TensorRef& out, const TensorImpl& x, ImplSpan indices);
  static void record(const ops::Im2Col& op, const TensorRef& out, const TensorImpl& x);
  static void record(const ops::Col2Im& op, const TensorRef& out, const TensorImpl& cols);
  static void record(const ops::WinogradInput& op, const TensorRef& out, const TensorImpl& x);
  static void record(const ops::WinogradInputAdjoint& op, const TensorRef& out, const TensorImpl& v);
  static void record(const ops::WinogradOutput& op, const TensorRef& out, const TensorImpl& m);
  static void record(const ops::WinogradOutputAdjoint& op, const TensorRef& out, const TensorImpl& y);
  static void record(const ops::WinogradConv& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& u);
  static void record(const ops::WinogradConvBackward& op, const ops::WinogradConvGrads& out, const TensorImpl& dy,
                     const TensorImpl& x, const TensorImpl& u);
  static void record(const ops::DirectConv& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& w,
                     const TensorImpl* b);
  static void record(const ops::DirectConvBackward& op, const ops::DirectConvGrads& out, const TensorImpl& dy,
                     const TensorImpl& x, const TensorImpl& w);
  static void record(const ops::DepthwiseConv& op, const TensorRef& out, const TensorImpl& x, const TensorImpl& w,
                     const TensorImpl* b);
  static void record(const ops::DepthwiseConvBackward& op, const ops::DepthwiseConvGrads& out, const TensorImpl& dy,
                     const TensorImpl& x, const TensorImpl& w);
  static void record(const ops::MaxPool& op, const RefPair& out, const TensorImpl& x);
  static void record(const ops::MaxPoolBackward& op, const TensorRef& out, const TensorImpl& grad,
                     const TensorImpl& indices);
  static void record(const ops::LayerNorm& op, const ops::LayerNormResult& out, const TensorImpl& x,
                     const TensorImpl* weight, const TensorImpl* bias);
  static void record(const ops::LayerNormBackward& op, const ops::LayerNormGrads& out, const TensorImpl& dy,
                     const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight);
  static void record(const ops::BatchNorm& op, const ops::BatchNormResult& out, const TensorImpl& x,
                     const TensorImpl* weight, const TensorImpl* bias, const TensorImpl* running_mean,
                     const TensorImpl* running_var);
  static void record(const ops::BatchNormBackward& op, const ops::BatchNormGrads& out, const TensorImpl& dy,
                     const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight);
  static void record(const ops::SoftmaxBackward& op, const TensorRef& out, const TensorImpl& grad,
                     const TensorImpl& y);
  static void record(const ops::Attention& op, const ops::AttentionResult& out, const TensorImpl& q,
                     const TensorImpl* k, const TensorImpl* v, const TensorImpl* mask);
  static void record(const ops::AttentionBackward& op, const ops::AttentionGrads& out, const TensorImpl& dout,
                     const TensorImpl& q, const TensorImpl* k, const TensorImpl* v, const TensorImpl& probs);
  /// Ops whose results are never differentiable (integer or boolean outputs).
  static void record(const ops::Nonzero&, const TensorRef&, const TensorImpl&) {}
  static void record(const ops::Unique&, const std::vector<TensorRef>&, const TensorImpl&) {}

  static TensorRef inplace(const ops::Unary& op, const TensorImpl& x, TensorImpl* target);
  static TensorRef inplace(const ops::Binary& op, const TensorImpl& a, const TensorImpl& b, TensorImpl* target);
  static void inplace(const ops::CopyInto& op, TensorImpl& dst, const TensorImpl& src);
  static void inplace(const ops::Fill& op, TensorImpl& dst);
  static void inplace(const ops::IndexPutInto& op, TensorImpl& dst, ImplSpan indices, const TensorImpl& values);
  /// A custom Function's forward modified `target` in place (mark_dirty). check_dirty: it may
  /// be (not a leaf that requires grad, nor a view of one); rebase_dirty: it (and its view
  /// root) now take the history of `value`, an alias of it carrying the function's node.
  static void check_dirty(const TensorImpl& target, const char* function);
  static void rebase_dirty(TensorImpl& target, const TensorImpl& value);

  /// The PolicyOps table of P (engine helpers).
  static const PolicyOps& policy_ops();
};

namespace detail {

inline bool any_grad(const TensorImpl& t) { return requires_grad(t); }
inline bool any_grad(const TensorImpl* t) { return t && requires_grad(*t); }
// Optional operands arrive as `&tensor.impl()` (impl() returns a non-const reference): without
// this overload the catch-all template below is the better match for a TensorImpl*, and an op
// whose only operand needing a gradient is optional (a first-layer norm's weight) went
// unrecorded.
inline bool any_grad(TensorImpl* t) { return t && requires_grad(*t); }
inline bool any_grad(ImplSpan ts) {
  for (const TensorImpl* t : ts)
    if (t && requires_grad(*t)) return true;
  return false;
}
template <class T>
inline bool any_grad(const T&) {
  return false;
}

template <class Op, class... A>
inline constexpr bool kInplaceForm = (std::is_same_v<Op, ops::Unary> && sizeof...(A) == 2) ||
                                     (std::is_same_v<Op, ops::Binary> && sizeof...(A) == 3) ||
                                     std::is_same_v<Op, ops::CopyInto> || std::is_same_v<Op, ops::Fill> ||
                                     std::is_same_v<Op, ops::IndexPutInto>;

/// Whether a tensor argument (or the tensor it is a view of) has autograd metadata. In-place
/// forms are recorded when any argument has it, because the target's history (and its root's)
/// must be checked and rewritten even when no other input requires grad.
inline bool has_meta(const TensorImpl& t) { return t.autograd != nullptr || (t.view_of && t.view_of->autograd); }
inline bool has_meta(const TensorImpl* t) { return t && has_meta(*t); }
inline bool has_meta(TensorImpl* t) { return t && has_meta(*t); }
inline bool has_meta(ImplSpan) { return false; }  // index tensors: never differentiable

}  // namespace detail

struct Autograd {
  template <class P, class Next>
  struct Impl {
    template <class Op, class... A>
    static decltype(auto) call(const Op& op, A&&... a) {
      if constexpr (detail::kInplaceForm<Op, A...>) {
        if (!GradMode::is_enabled() || !(detail::has_meta(a) || ...))
          return Next::call(op, std::forward<A>(a)...);
        return Recorder<P>::inplace(op, a...);
      } else {
        if (!GradMode::is_enabled() || !(detail::any_grad(a) || ...))
          return Next::call(op, std::forward<A>(a)...);
        auto out = Next::call(op, a...);
        Recorder<P>::record(op, out, a...);
        return out;
      }
    }
  };
};

}  // namespace ember::autograd
