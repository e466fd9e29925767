#pragma once
/// The tape: nodes, edges, saved tensors and the per-tensor autograd metadata.
///
/// A differentiable op called with grad mode on and an input that requires grad creates a
/// Node: it holds what its backward needs (saved tensors, shapes) and one Edge per input,
/// pointing at the node that produced that input (or at the leaf's AccumulateGrad). The
/// output's AutogradMeta points back at the node (`grad_fn`). Nothing here is templated on
/// the policy: the formulas are (autograd/derivatives.hpp), behind Node::apply.

#include <ember/core/tensor_impl.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ember::autograd {

using ember::detail::TensorImpl;
using TensorRef = ember::detail::Ref<TensorImpl>;

struct Node;

/// Where a gradient goes: input `input_nr` of node `fn` (null: nowhere, no grad needed).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

/// Shape, dtype and device an output of a node had: the engine checks incoming gradients
/// against them and makes zeros for outputs that received none.
struct OutputInfo {
  Shape sizes;
  DType dtype = DType::F32;
  Device device = kCPU;
};

/// A hook on a tensor's gradient: returns a replacement, or an undefined ref to keep it.
using GradHook = std::function<TensorRef(const TensorRef&)>;

/// The few tensor operations the engine and AccumulateGrad need, bound to the policy that
/// recorded the node, so that they are recorded too under create_graph.
struct PolicyOps {
  TensorRef (*add)(const TensorRef& a, const TensorRef& b);
  void (*add_inplace)(const TensorRef& a, const TensorRef& b);
  TensorRef (*zeros)(const OutputInfo& like);
  TensorRef (*ones)(const OutputInfo& like);
  TensorRef (*clone)(const TensorRef& t);
  TensorRef (*to_dtype)(const TensorRef& t, DType dtype);
  TensorRef (*sum_to)(const TensorRef& t, IntArrayRef shape);
  bool (*all_finite)(const TensorRef& t);
  /// A view's history made afresh from its root's current one (see AutogradMeta::root_fn);
  /// null when the root no longer requires grad.
  std::shared_ptr<Node> (*view_history)(const TensorImpl& view);
};

struct Node : std::enable_shared_from_this<Node> {
  /// Frees the nodes only this one holds (through `next`) one after another rather than each
  /// from its parent's destructor: a chain of ~150K nodes (a long unrolled loop) overflowed an
  /// 8 MiB stack when its output was dropped. Out of line (meta.cpp).
  virtual ~Node();
  /// Gradients of the inputs (one per edge in `next`; undefined where not needed) from the
  /// gradients of the outputs (one per output, each defined: the engine fills zeros).
  virtual std::vector<TensorRef> apply(std::vector<TensorRef>& grads) = 0;
  /// Frees saved tensors after a backward pass that did not retain the graph.
  virtual void release_saved() {}
  /// e.g. "MulBackward".
  virtual std::string name() const = 0;

  std::vector<Edge> next;
  std::vector<OutputInfo> outputs;
  const PolicyOps* ops = nullptr;
  /// Hooks registered on non-leaf outputs: (output index, hook), run before apply (an empty
  /// function: a removed hook).
  std::vector<std::pair<uint32_t, GradHook>> pre_hooks;
  /// Creation order: the engine runs ready nodes newest first, as PyTorch does.
  uint64_t sequence = 0;
  /// Set after a backward that did not retain the graph; a second backward through a node
  /// that saved tensors is then an error. Atomic: a leaf's accumulator may be run by graphs on
  /// several threads.
  std::atomic<bool> released{false};
  /// Run even when no gradient reaches it, on zero-filled gradients (custom Functions, as
  /// PyTorch materializes their gradients); other nodes are skipped then.
  bool run_without_grads = false;
  /// Whether outputs that received no gradient get zeros before apply (false: undefined, for
  /// custom Functions that called ctx->set_materialize_grads(false)).
  bool materialize_grads = true;
  /// Whether the node's formula saved tensors. A node that saved none keeps its formula after
  /// a backward without retain_graph and can run again, as in PyTorch: grad(loss, {a}) and
  /// then grad(loss, {b}) through an AddBackward.
  bool saved_tensors = true;

  bool needs_input_grad(size_t i) const { return i < next.size() && next[i].valid(); }
};

/// The gradient retain_grad() keeps for a non-leaf, and the node whose hook fills it: an
/// in-place op on the tensor moves the hook to the new history (the gradient retained is the
/// tensor's current value's, as PyTorch); the old node's hook then does nothing.
struct RetainedGrad {
  TensorRef grad;
  const Node* node = nullptr;
};

/// What a tensor that takes part in autograd carries (TensorImpl::autograd; null otherwise).
struct AutogradMeta {
  /// Set by requires_grad_() on a leaf. A non-leaf requires grad because it has a grad_fn.
  bool requires_grad = false;
  /// .grad() of a leaf, or of a non-leaf after retain_grad().
  TensorRef grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  /// A leaf's AccumulateGrad, while some graph holds it.
  std::weak_ptr<Node> grad_accumulator;
  /// Hooks of a leaf: run on the incoming gradient before it is accumulated (an empty
  /// function: a removed hook).
  std::vector<GradHook> leaf_hooks;
  /// Where the hook with handle i (register_hook's return value) lives: at `index` of
  /// leaf_hooks, or of `node`'s pre_hooks.
  struct HookSlot {
    bool leaf = false;
    std::weak_ptr<Node> node;
    size_t index = 0;
  };
  std::vector<HookSlot> hook_slots;
  /// retain_grad() on a non-leaf: a hook on grad_fn writes into this cell (not into the
  /// tensor itself: the graph must not own the tensor that owns the graph).
  std::shared_ptr<RetainedGrad> retained_grad;
  /// For a view with a history: its root's grad_fn when that history was made. When the root's
  /// history has changed since (an in-place op on the root or on another view of it), the
  /// view's gradient must flow into the root's new history, so gradient_edge rebuilds it into
  /// `view_fn` (PyTorch regenerates a view's grad_fn when its base's version moved). Only
  /// compared, never dereferenced; the view's own graph keeps that node alive, so it is never
  /// reused. `grad_fn` itself is left alone (requires_grad reads it without a lock); root_fn,
  /// view_fn and `rebuilt` are read and written under one mutex (meta.cpp), as a view may be
  /// used on several threads at once.
  const Node* root_fn = nullptr;
  std::shared_ptr<Node> view_fn;  ///< the rebuilt history, when `rebuilt` (null: no gradient)
  bool rebuilt = false;
  /// For a root: its history when detach_() removed it. Views whose history was made from
  /// that one keep it; views of an older value (written in place since) lose their gradient.
  const Node* detached_fn = nullptr;
  /// For a root: the histories it had before shape changes in place (squeeze_, t_, ...) since
  /// its last other change of history. Its values did not change, so a view made from one of
  /// them keeps its history (compared only, as root_fn; the root's history holds them).
  std::vector<const Node*> reshaped_from;
};

/// A tensor's metadata, created on first use.
AutogradMeta& meta_of(TensorImpl& t);
/// Forgets a leaf's AccumulateGrad (set_data or module.to gave the leaf another shape, dtype or
/// device: graphs made before keep theirs, new ones get a new one).
void reset_grad_accumulator(TensorImpl& t);
inline AutogradMeta* meta_if(const TensorImpl& t) { return t.autograd; }
/// Whether t takes part in autograd: a leaf marked requires_grad, or an op result with a grad_fn.
inline bool requires_grad(const TensorImpl& t) {
  const AutogradMeta* m = t.autograd;
  return m && (m->requires_grad || m->grad_fn);
}
inline bool is_leaf(const TensorImpl& t) { return !t.autograd || !t.autograd->grad_fn; }
/// The edge that a gradient for t follows: its grad_fn, or its leaf accumulator (made with
/// `ops` the first time); an invalid edge when t does not require grad.
Edge gradient_edge(const TensorImpl& t, const PolicyOps* ops);
/// Makes `node` the history of output `output_nr` of an op (shape/dtype/device recorded).
void set_history(TensorImpl& out, const std::shared_ptr<Node>& node, uint32_t output_nr);
/// The history of a tensor overwritten by values without one (fill_, copy_ of a constant): a
/// zero gradient to its previous history `old`, as PyTorch's FillBackward. Saves nothing, so
/// it may run again after a backward without retain_graph.
std::shared_ptr<Node> make_overwrite_node(const Edge& old, const PolicyOps* ops);
/// Makes `fn`'s output `output_nr` fill `cell` (retain_grad), taking it from any older node.
void attach_retain_hook(Node& fn, uint32_t output_nr, const std::shared_ptr<RetainedGrad>& cell,
                        const PolicyOps* ops);
/// A fresh alias of t (same storage and geometry) without autograd metadata.
TensorRef detached(const TensorImpl& t);
/// Next creation number for a node.
uint64_t next_sequence();
/// How many tensors this thread saved for backward (SavedTensor from a tensor) since the last
/// call; resets the count. make_node calls it first thing: the formula's closure, built just
/// before, holds every tensor saved since the previous node. A count left over by a path that
/// made no node only makes the next node free its formula after backward (the safe side).
uint32_t take_saved_count();

/// A tensor saved for backward, with the storage version it had when saved. Unpacking a
/// tensor modified in place since is an error naming the node and both versions. Outputs of
/// the node itself are saved without their grad_fn (that would be a reference cycle) and get
/// it back when unpacked under create_graph.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const TensorImpl& t, bool is_output);
  /// The saved value; `node` is the node unpacking it (for messages and for outputs).
  TensorRef unpack(const Node& node) const;
  void reset() { data_.reset(); }
  bool defined() const { return static_cast<bool>(data_) || was_undefined_; }

 private:
  TensorRef data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool output_requires_grad_ = false;
  bool was_undefined_ = false;
};

namespace detail {
/// Installs TensorImpl's AutogradMeta deleter (done by meta_of, so once metadata exists).
void install_meta_deleter();
}  // namespace detail

}  // namespace ember::autograd
