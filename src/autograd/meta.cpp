// Per-tensor autograd metadata, saved tensors and leaf accumulation.

#include <ember/autograd/grad_mode.hpp>
#include <ember/autograd/node.hpp>

#include "accumulate_grad.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace ember::autograd {

namespace {
/// The nodes an outer ~Node on this thread is freeing; null when none is running.
thread_local std::vector<std::shared_ptr<Node>>* t_freeing = nullptr;
}  // namespace

Node::~Node() {
  // Derived members (saved tensors) are gone already; what is left to free is the graph
  // below, through `next`. A child held only here is moved to the list of the outermost
  // destructor on this thread, which frees the list's nodes one at a time, each adding its own
  // children: the stack stays two frames deep however long the graph is (PyTorch's
  // deleteNode does the same). A child others still hold is released here, at once: when the
  // other holder is this node's next edge (y + y), that edge then takes it to the list rather
  // than freeing it from `next`'s destructor, which nests again.
  auto take = [](std::vector<Edge>& edges, std::vector<std::shared_ptr<Node>>& list) {
    for (Edge& e : edges) {
      if (!e.fn) continue;
      if (e.fn.use_count() == 1) list.push_back(std::move(e.fn));
      else e.fn.reset();
    }
  };
  if (t_freeing) {
    take(next, *t_freeing);
    return;
  }
  std::vector<std::shared_ptr<Node>> list;
  take(next, list);
  if (list.empty()) return;
  t_freeing = &list;
  while (!list.empty()) {
    std::shared_ptr<Node> n = std::move(list.back());
    list.pop_back();
    n.reset();  // its ~Node adds its children to `list`
  }
  t_freeing = nullptr;
}

namespace {

void delete_meta(AutogradMeta* m) { delete m; }

std::atomic<uint64_t> g_sequence{0};
/// Guards the lazy creation of leaves' accumulators: graphs built on several threads may
/// share a leaf (parameters), and each leaf must get exactly one AccumulateGrad.
std::mutex g_accumulator_mu;

}  // namespace

namespace detail {
void install_meta_deleter() {
  static std::once_flag once;
  std::call_once(once, [] { ember::detail::g_grad_meta_deleter = &delete_meta; });
}
}  // namespace detail

AutogradMeta& meta_of(TensorImpl& t) {
  if (!t.autograd) {
    detail::install_meta_deleter();
    t.autograd = new AutogradMeta();
  }
  return *t.autograd;
}

uint64_t next_sequence() { return g_sequence.fetch_add(1, std::memory_order_relaxed); }

namespace {
const Node* grad_fn_of(const TensorImpl& t) { return t.autograd ? t.autograd->grad_fn.get() : nullptr; }
/// Whether `root` had history `fn` before only shape changes in place (AutogradMeta::reshaped_from).
bool reshaped_since(const TensorImpl& root, const Node* fn) {
  const AutogradMeta* rm = root.autograd;
  return rm && std::find(rm->reshaped_from.begin(), rm->reshaped_from.end(), fn) != rm->reshaped_from.end();
}
/// Serialises the rebuilding of views' histories (a view used on several threads at once).
std::mutex g_view_mu;
}  // namespace

void reset_grad_accumulator(TensorImpl& t) {
  if (!t.autograd) return;
  std::lock_guard<std::mutex> lock(g_accumulator_mu);
  t.autograd->grad_accumulator.reset();
}

Edge gradient_edge(const TensorImpl& t, const PolicyOps* ops) {
  AutogradMeta* m = t.autograd;
  if (!m) return {};
  if (m->grad_fn && t.view_of) [[unlikely]] {  // a view: its history may need rebuilding
    std::lock_guard<std::mutex> lock(g_view_mu);
    // Rebuilt when an in-place op gave the root a new history. A root that lost its history
    // (detach_()) leaves its views' histories as they are, as PyTorch does.
    const Node* root_now = grad_fn_of(*t.view_of);
    // (A root that only changed shape since holds the same values: this view's history stands.
    // root_fn stays the node this view's graph keeps alive, never one that could be freed.)
    if (root_now && m->root_fn != root_now && !reshaped_since(*t.view_of, m->root_fn)) {
      m->view_fn = ops->view_history(t);
      m->root_fn = root_now;
      m->rebuilt = true;
      // retain_grad() follows the view to its new history, as it follows in-place ops.
      if (m->view_fn && m->retained_grad) attach_retain_hook(*m->view_fn, 0, m->retained_grad, ops);
    } else if (!root_now && m->root_fn) {
      // The root was detach_()ed. Written in place before that (its last history is not the
      // one this view's history was made from), the view's value depends on a history that is
      // gone: no gradient, as PyTorch.
      const AutogradMeta* rm = t.view_of->autograd;
      if (rm && rm->detached_fn && rm->detached_fn != m->root_fn && !reshaped_since(*t.view_of, m->root_fn)) {
        m->view_fn.reset();
        m->rebuilt = true;
      }
    }
    if (m->rebuilt) return m->view_fn ? Edge{m->view_fn, 0} : Edge{};
  }
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  std::lock_guard<std::mutex> lock(g_accumulator_mu);
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(TensorRef::share(const_cast<TensorImpl*>(&t)), ops);
    acc->sequence = next_sequence();
    acc->outputs.push_back({t.sizes, t.dtype, t.device()});
    m->grad_accumulator = acc;
  }
  return {std::move(acc), 0};
}

namespace {
struct OverwriteBackward final : Node {
  std::vector<TensorRef> apply(std::vector<TensorRef>&) override {
    std::vector<TensorRef> out(next.size());
    if (!next.empty() && next[0].valid()) out[0] = ops->zeros(next[0].fn->outputs[next[0].input_nr]);
    return out;
  }
  std::string name() const override { return "OverwriteBackward"; }
};
}  // namespace

std::shared_ptr<Node> make_overwrite_node(const Edge& old, const PolicyOps* ops) {
  auto n = std::make_shared<OverwriteBackward>();
  n->ops = ops;
  n->sequence = next_sequence();
  n->next.push_back(old);
  return n;
}

void attach_retain_hook(Node& fn, uint32_t output_nr, const std::shared_ptr<RetainedGrad>& cell,
                        const PolicyOps* ops) {
  cell->node = &fn;
  fn.pre_hooks.push_back({output_nr, [cell, ops, self = &fn](const TensorRef& g) {
                            if (cell->node != self) return TensorRef();  // moved on by an in-place op
                            if (!cell->grad) {
                              cell->grad = GradMode::is_enabled() ? g : ops->clone(g);
                            } else {
                              cell->grad = ops->add(cell->grad, g);
                            }
                            return TensorRef();
                          }});
}

void set_history(TensorImpl& out, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& m = meta_of(out);
  m.grad_fn = node;
  m.output_nr = output_nr;
  if (!m.reshaped_from.empty()) [[unlikely]] m.reshaped_from.clear();  // a new history (inplace_view_ops.hpp keeps it)
  if (m.retained_grad && m.retained_grad->node != node.get() && node->ops)
    attach_retain_hook(*node, output_nr, m.retained_grad, node->ops);
  if (out.view_of) {
    std::lock_guard<std::mutex> lock(g_view_mu);
    m.root_fn = grad_fn_of(*out.view_of);
    m.view_fn.reset();
    m.rebuilt = false;
  }
  if (node->outputs.size() <= output_nr) node->outputs.resize(output_nr + 1);
  node->outputs[output_nr] = {out.sizes, out.dtype, out.device()};
}

TensorRef detached(const TensorImpl& t) {
  return ember::detail::make_view(t.storage, t.dtype, t.sizes, t.strides, t.offset);
}

namespace {
thread_local uint32_t t_saved_count = 0;
}  // namespace

uint32_t take_saved_count() {
  return std::exchange(t_saved_count, 0u);
}

SavedTensor::SavedTensor(const TensorImpl& t, bool is_output) : is_output_(is_output) {
  ++t_saved_count;
  EMBER_CHECK(t.storage->versioned,
              "[autograd] a tensor created under InferenceModeGuard cannot be saved for backward; clone it "
              "outside inference mode first");
  version_ = t.storage->version.load(std::memory_order_relaxed);
  if (is_output) {
    // The node being built owns this output's history; keep the data only.
    output_requires_grad_ = true;
    output_nr_ = t.autograd ? t.autograd->output_nr : 0;
    data_ = detached(t);
  } else {
    data_ = TensorRef::share(const_cast<TensorImpl*>(&t));
  }
}

TensorRef SavedTensor::unpack(const Node& node) const {
  EMBER_CHECK(!node.released.load(std::memory_order_relaxed),
              "[backward] trying to backward through {} a second time (its saved tensors were freed after the "
              "first backward); pass retain_graph=true to the first backward if you need to go through the "
              "graph twice",
              node.name());
  if (!data_) return {};
  uint32_t now = data_->storage->version.load(std::memory_order_relaxed);
  EMBER_CHECK(now == version_,
              "[backward] one of the tensors {} saved for backward (shape {}, {}) was modified by an in-place "
              "operation: it is at version {}, expected version {}. Clone it before modifying it in place, or "
              "modify a copy",
              node.name(), data_->sizes, data_->dtype, now, version_);
  if (!is_output_ || !GradMode::is_enabled()) return data_;
  // create_graph: the output regains its history so that the formula is differentiable.
  TensorRef t = detached(*data_);
  AutogradMeta& m = meta_of(*t);
  m.grad_fn = const_cast<Node&>(node).shared_from_this();
  m.output_nr = output_nr_;
  return t;
}

std::mutex& leaf_lock(const TensorImpl& leaf) {
  static std::mutex locks[64];
  return locks[(reinterpret_cast<uintptr_t>(&leaf) / alignof(TensorImpl)) % 64];
}

void check_hook_result(const TensorRef& r, const OutputInfo& want, const char* where) {
  EMBER_CHECK(r->sizes == want.sizes, "[register_hook] a hook on {} changed the gradient's shape from {} to {}", where,
              want.sizes, r->sizes);
  EMBER_CHECK(r->dtype == want.dtype, "[register_hook] a hook on {} changed the gradient's dtype from {} to {}", where,
              want.dtype, r->dtype);
  EMBER_CHECK(r->device() == want.device, "[register_hook] a hook on {} moved the gradient from {} to {}", where,
              want.device, r->device());
}

std::vector<TensorRef> AccumulateGrad::apply(std::vector<TensorRef>& grads) {
  TensorRef g = std::move(grads[0]);
  AutogradMeta& m = meta_of(*variable);
  // Hooks run before the leaf's lock is taken: a hook may itself run a backward that reaches
  // this leaf (or another leaf whose lock is the same one of the fixed set).
  // By index, on a copy of each hook: a hook may remove itself or register others.
  for (size_t k = 0; k < m.leaf_hooks.size(); ++k) {
    if (!g) break;
    const GradHook h = m.leaf_hooks[k];
    if (!h) continue;  // removed
    TensorRef r = h(g);
    if (r) {
      check_hook_result(r, outputs[0], "a leaf");
      g = std::move(r);
    }
  }
  if (!g) return {};
  std::lock_guard<std::mutex> lock(leaf_lock(*variable));
  if (!m.grad) {
    // Keep the incoming gradient when nothing else can see it (a fresh, dense result the
    // engine holds alone, without a history); otherwise copy it (recorded under create_graph),
    // so that later accumulation in place cannot write into a tensor the user or another node
    // holds, nor into the root gradient the caller passed.
    bool exclusive = g.use_count() == 1 && g->storage.use_count() == 1 && g->contiguous && !g->autograd;
    // A view that alone holds its root, covering all of it (the transpose of a weight gradient
    // computed in the transposed layout): its storage is unshared too; keep it as a plain
    // tensor on that storage rather than copying it.
    const TensorImpl* root = g->view_of.get();
    const bool sole_view = g.use_count() == 1 && g->contiguous && !g->autograd && root &&
                           g->view_of.use_count() == 1 && !root->autograd && g->storage.use_count() == 2 &&
                           g->offset == 0 && g->numel == root->numel;
    if (!GradMode::is_enabled() && sole_view) {
      m.grad = ember::detail::make_view(g->storage, g->dtype, g->sizes, g->strides, 0);
    } else {
      m.grad = exclusive ? std::move(g) : ops->clone(g);
    }
  } else if (GradMode::is_enabled()) {
    m.grad = ops->add(m.grad, g);  // create_graph: out of place, recorded
  } else if (m.grad->autograd && m.grad->autograd->grad_fn) {
    m.grad = ops->add(m.grad, g);  // a grad with history (from create_graph) is never written in place
  } else {
    ops->add_inplace(m.grad, g);
  }
  return {};
}

}  // namespace ember::autograd
