// The backward engine: see include/ember/autograd/engine.hpp.

#include <ember/autocast/autocast_mode.hpp>
#include <ember/autograd/engine.hpp>
#include <ember/autograd/grad_mode.hpp>

#include "accumulate_grad.hpp"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace ember::autograd::detail {
namespace {

/// The forward op a backward node belongs to ("MulBackward" -> "mul"), for anomaly messages.
std::string forward_name(const std::string& node) {
  const std::string suffix = "Backward";
  std::string base = node.size() > suffix.size() && node.ends_with(suffix) ? node.substr(0, node.size() - suffix.size())
                                                                            : node;
  std::string out;
  for (size_t i = 0; i < base.size(); ++i) {
    char c = base[i];
    if (c >= 'A' && c <= 'Z') {
      if (i > 0) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

bool expandable_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

/// Checks (and where PyTorch does, repairs) gradient `g` meant for `info`.
TensorRef validate(TensorRef g, const OutputInfo& info, const Node& producer, size_t index, const PolicyOps* ops) {
  if (g->sizes != info.sizes) {
    EMBER_CHECK(expandable_to(info.sizes, g->sizes),
                "[backward] {} returned an invalid gradient at index {}: got shape {} but expected a shape "
                "compatible with {}",
                producer.name(), index, g->sizes, info.sizes);
    g = ops->sum_to(g, info.sizes);
  }
  EMBER_CHECK(g->device() == info.device,
              "[backward] {} returned a gradient at index {} on {}, but the tensor it is for is on {}",
              producer.name(), index, g->device(), info.device);
  if (g->dtype != info.dtype) {
    EMBER_CHECK(is_floating(g->dtype) && is_floating(info.dtype),
                "[backward] {} returned a gradient at index {} of dtype {} for a tensor of dtype {}",
                producer.name(), index, g->dtype, info.dtype);
    g = ops->to_dtype(g, info.dtype);
  }
  return g;
}

struct Task {
  Node* node;
  bool operator<(const Task& o) const { return node->sequence < o.node->sequence; }  // newest first
};

class GradModeScope {
 public:
  explicit GradModeScope(bool on) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(on); }
  ~GradModeScope() { GradMode::set_enabled(prev_); }

 private:
  bool prev_;
};

}  // namespace

std::vector<TensorRef> run_backward(BackwardRequest& rq) {
  const char* api = rq.api;
  const size_t n_out = rq.outputs.size();
  EMBER_CHECK(n_out > 0, "[{}] needs at least one output tensor", api);
  EMBER_CHECK(rq.grad_outputs.empty() || rq.grad_outputs.size() == n_out,
              "[{}] got {} tensors but {} gradients", api, n_out, rq.grad_outputs.size());
  rq.grad_outputs.resize(n_out);

  // Roots and their gradients.
  std::vector<Edge> roots(n_out);
  for (size_t i = 0; i < n_out; ++i) {
    const TensorRef& out = rq.outputs[i];
    EMBER_CHECK(out, "[{}] output {} is an undefined tensor", api, i);
    EMBER_CHECK(requires_grad(*out),
                "[{}] element {} of the tensors does not require grad and does not have a grad_fn (shape {})", api,
                i, out->sizes);
    roots[i] = gradient_edge(*out, rq.ops);
    TensorRef& g = rq.grad_outputs[i];
    if (!g) {
      EMBER_CHECK(out->numel == 1,
                  "[{}] grad can be created implicitly only for one-element outputs, got shape {}; pass a gradient",
                  api, out->sizes);
      g = rq.ops->ones(OutputInfo{out->sizes, out->dtype, out->device()});
    } else {
      EMBER_CHECK(g->sizes == out->sizes, "[{}] gradient {} has shape {} but output {} has shape {}", api, i,
                  g->sizes, i, out->sizes);
      EMBER_CHECK(g->device() == out->device(), "[{}] gradient {} is on {} but output {} is on {}", api, i,
                  g->device(), i, out->device());
      EMBER_CHECK(is_floating(g->dtype), "[{}] gradient {} has dtype {}; gradients are floating point", api, i,
                  g->dtype);
      if (g->dtype != out->dtype) g = rq.ops->to_dtype(g, out->dtype);  // as PyTorch, not an error
    }
  }

  // Discovery: dependency counts over the reachable graph.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> order;  // every reachable node
  {
    std::vector<Node*> stack;
    std::unordered_set<Node*> seen;
    for (const Edge& e : roots)
      if (e.valid() && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      order.push_back(n);
      for (const Edge& e : n->next) {
        if (!e.valid()) continue;
        ++deps[e.fn.get()];
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
  }

  // autograd::grad: where to capture, and which nodes lead to a capture at all.
  const bool capture_mode = !rq.inputs.empty();
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;  // node -> (input_nr, slot)
  std::unordered_set<Node*> needed;
  std::vector<TensorRef> captured(rq.inputs.size());
  if (capture_mode) {
    for (size_t i = 0; i < rq.inputs.size(); ++i) {
      const TensorRef& in = rq.inputs[i];
      EMBER_CHECK(in, "[{}] input {} is an undefined tensor", api, i);
      EMBER_CHECK(requires_grad(*in), "[{}] input {} (shape {}) does not require grad", api, i, in->sizes);
      Edge e = gradient_edge(*in, rq.ops);
      captures[e.fn.get()].push_back({e.input_nr, i});
    }
    // needed(n): n has a capture below it. Post-order over the reachable graph, with an
    // explicit stack (recursion overflowed the thread's stack at ~120K nodes).
    std::unordered_map<Node*, bool> leads;
    std::vector<std::pair<Node*, size_t>> path;  // a node and the next of its edges to visit
    for (Node* root : order) {
      if (!leads.emplace(root, false).second) continue;
      path.push_back({root, 0});
      while (!path.empty()) {
        Node* n = path.back().first;
        const size_t i = path.back().second;
        if (i == n->next.size()) {
          path.pop_back();
          if (!path.empty() && leads[n]) leads[path.back().first] = true;
          continue;
        }
        ++path.back().second;
        const Edge& e = n->next[i];
        if (!e.valid()) continue;
        Node* c = e.fn.get();
        if (captures.count(c)) leads[n] = true;
        auto [it, fresh] = leads.emplace(c, false);
        if (fresh) path.push_back({c, 0});  // a DAG: a known child is finished, its value final
        else if (it->second) leads[n] = true;
      }
    }
    for (Node* n : order)
      if (leads[n]) needed.insert(n);
    // backward(inputs=): the inputs' own nodes (the capturing ones) run too. A leaf's
    // accumulator (its hooks, its .grad); a non-leaf's grad_fn, as in PyTorch 1.13 (its hooks
    // run and it frees what it saved), though what it computes reaches only nodes that lead
    // to an input.
    if (rq.accumulate_inputs)
      for (const auto& capture : captures) needed.insert(capture.first);
  }

  GradModeScope mode(rq.create_graph);
  // Backward runs in the dtypes the forward recorded: a derivative's products are not cast,
  // even when backward() is called inside an AutocastGuard (the gradient of an f32 product
  // stays f32). A disabled guard leaves the outer guards' cache and depth as they are.
  autocast::AutocastGuard no_autocast(false);
  const bool anomaly = DetectAnomalyGuard::is_enabled();
  std::unordered_map<Node*, std::vector<TensorRef>> buffers;
  auto deliver = [&](const Edge& e, TensorRef g) {
    std::vector<TensorRef>& buf = buffers[e.fn.get()];
    if (buf.size() < e.fn->outputs.size()) buf.resize(e.fn->outputs.size());
    TensorRef& slot = buf[e.input_nr];
    slot = slot ? rq.ops->add(slot, g) : std::move(g);
  };
  // An output without a path to any leaf (a view whose root's history was detached) gives
  // no gradient, as PyTorch.
  for (size_t i = 0; i < n_out; ++i)
    if (roots[i].valid()) deliver(roots[i], rq.grad_outputs[i]);

  std::priority_queue<Task> ready;
  {
    std::unordered_set<Node*> queued;
    for (const Edge& e : roots)
      if (e.valid() && deps[e.fn.get()] == 0 && queued.insert(e.fn.get()).second) ready.push({e.fn.get()});
  }
  while (!ready.empty()) {
    Node* node = ready.top().node;
    ready.pop();
    std::vector<TensorRef> grads = std::move(buffers[node]);
    buffers.erase(node);
    grads.resize(node->outputs.size());
    // By index, on a copy of each hook: a hook may remove itself or register others.
    for (size_t k = 0; k < node->pre_hooks.size(); ++k) {
      const uint32_t idx = node->pre_hooks[k].first;
      const GradHook hook = node->pre_hooks[k].second;
      if (hook && idx < grads.size() && grads[idx]) {
        TensorRef r = hook(grads[idx]);
        if (r) {
          check_hook_result(r, node->outputs[idx], node->name().c_str());
          grads[idx] = std::move(r);
        }
      }
    }
    bool run = true;
    if (capture_mode) {
      auto it = captures.find(node);
      if (it != captures.end())
        for (auto [input_nr, slot] : it->second) captured[slot] = input_nr < grads.size() ? grads[input_nr] : TensorRef();
      run = needed.count(node) > 0;
    }
    // Only a node this pass runs gives up its saved tensors: autograd::grad for one input
    // leaves the rest of the graph usable (as PyTorch, which frees what it executed).
    const bool release = !rq.retain_graph && run;
    // A node that received no gradient at all passes none on: its inputs' gradients stay
    // undefined (a leaf keeps no .grad rather than a zero one), as PyTorch's.
    bool any_grad = false;
    for (const TensorRef& g : grads) any_grad = any_grad || static_cast<bool>(g);
    run = run && (any_grad || node->run_without_grads);
    std::vector<TensorRef> in_grads;
    if (run) {
      if (node->materialize_grads)
        for (size_t i = 0; i < grads.size(); ++i)
          if (!grads[i]) grads[i] = rq.ops->zeros(node->outputs[i]);
      in_grads = node->apply(grads);
      EMBER_CHECK(in_grads.size() == node->next.size() || in_grads.empty(),
                  "[backward] {} returned {} gradients for {} inputs", node->name(), in_grads.size(),
                  node->next.size());
    }
    if (release) {
      node->release_saved();
      node->released.store(true, std::memory_order_relaxed);
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      const Edge& e = node->next[i];
      if (!e.valid()) continue;
      if (i < in_grads.size() && in_grads[i]) {
        TensorRef g = validate(std::move(in_grads[i]), e.fn->outputs[e.input_nr], *node, i, rq.ops);
        if (anomaly) {
          EMBER_CHECK(rq.ops->all_finite(g),
                      "[backward] anomaly: {} returned NaN or Inf in its gradient {} (shape {}); the forward op "
                      "was '{}'",
                      node->name(), i, g->sizes, forward_name(node->name()));
        }
        // autograd::grad and backward(inputs=): a node that leads to no input neither runs
        // nor sees the gradient (its hooks and retain_grad stay quiet), as PyTorch's.
        if (!capture_mode || needed.count(e.fn.get()) || captures.count(e.fn.get())) deliver(e, std::move(g));
      }
      if (--deps[e.fn.get()] == 0) ready.push({e.fn.get()});
    }
  }

  if (!capture_mode || rq.accumulate_inputs) return {};
  for (size_t i = 0; i < captured.size(); ++i) {
    EMBER_CHECK(captured[i] || rq.allow_unused,
                "[{}] input {} (shape {}) was not used in the graph of the outputs; pass allow_unused=true if "
                "that is expected",
                api, i, rq.inputs[i]->sizes);
  }
  return captured;
}

}  // namespace ember::autograd::detail
