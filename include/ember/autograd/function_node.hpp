#pragma once
/// The building blocks of derivative formulas: a node type that runs a lambda, saved tensors
/// typed by policy, and the shape helpers every formula needs (sum_to, expand back over
/// reduced dims). Formulas are written with Ember ops on BasicTensor<P>, so that under
/// create_graph the backward pass is itself recorded (double backward).

#include <ember/autograd/node.hpp>
#include <ember/core/factories.hpp>
#include <ember/core/tensor.hpp>
#include <ember/core/tensor_methods.hpp>

#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ember::autograd::detail {

template <class P>
using T = BasicTensor<P>;
template <class P>
using Grads = std::vector<BasicTensor<P>>;

template <class P>
T<P> wrap(const TensorImpl& t) {
  return T<P>(TensorRef::share(const_cast<TensorImpl*>(&t)));
}

/// "log_softmax" -> "LogSoftmaxBackward".
inline std::string backward_name(const char* op) {
  std::string s;
  bool up = true;
  for (const char* c = op; *c; ++c) {
    if (*c == '_') {
      up = true;
      continue;
    }
    s += up && *c >= 'a' && *c <= 'z' ? static_cast<char>(*c - 'a' + 'A') : *c;
    up = false;
  }
  return s + "Backward";
}

/// A tensor saved for backward, unpacked as a BasicTensor<P>.
template <class P>
struct Saved {
  SavedTensor s;
  Saved() = default;
  explicit Saved(const TensorImpl& t, bool is_output = false) : s(t, is_output) {}
  T<P> get(const Node& n) const { return T<P>(s.unpack(n)); }
};

/// The lock of one FnNode's closure, in place of a std::mutex, whose header (<mutex>, with
/// chrono and system_error) every program that includes Ember parsed for this one member. It
/// is held while one backward pass runs the node's formula or frees it. A futex-style lock on
/// C++20's atomic wait: 0 free, 1 held, 2 held with a thread asleep on it; an unlock wakes a
/// sleeper only when there may be one (atomic_flag's notify bumped a process-wide counter on
/// every unlock). Two passes meeting on one node are rare; the second sleeps, as on a mutex.
class NodeLock {
 public:
  void lock() noexcept {
    int seen = 0;
    if (state_.compare_exchange_strong(seen, 1, std::memory_order_acquire)) return;
    if (seen != 2) seen = state_.exchange(2, std::memory_order_acquire);
    while (seen != 0) {  // held: mark it contended and sleep until it changes
      state_.wait(2, std::memory_order_relaxed);
      seen = state_.exchange(2, std::memory_order_acquire);
    }
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  std::atomic<int> state_{0};
};
/// Holds a NodeLock for its scope.
class NodeLockGuard {
 public:
  explicit NodeLockGuard(NodeLock& l) noexcept : l_(l) { l_.lock(); }
  ~NodeLockGuard() { l_.unlock(); }
  NodeLockGuard(const NodeLockGuard&) = delete;
  NodeLockGuard& operator=(const NodeLockGuard&) = delete;

 private:
  NodeLock& l_;
};

/// A node whose backward is the lambda F(const Node&, Grads<P>&) -> Grads<P> (one per input).
template <class P, class F>
struct FnNode final : Node {
  FnNode(const char* op, F&& f) : op_(op), fn_(std::move(f)) {}
  std::vector<TensorRef> apply(std::vector<TensorRef>& grads) override {
    // Backward passes on several threads may share this node: one may free the closure while
    // another runs it. The second then gets the 'second time' error, not a freed closure.
    NodeLockGuard hold(lock_);
    EMBER_CHECK(fn_.has_value(),
                "[backward] trying to backward through {} a second time: the graph was freed by the first "
                "backward; pass retain_graph=true to the first backward to go through it again",
                name());
    Grads<P> g;
    g.reserve(grads.size());
    for (TensorRef& r : grads) g.emplace_back(std::move(r));
    Grads<P> res = (*fn_)(static_cast<const Node&>(*this), g);
    std::vector<TensorRef> out(next.size());
    for (size_t i = 0; i < res.size() && i < out.size(); ++i)
      if (res[i].defined() && needs_input_grad(i)) out[i] = res[i].impl_ref();
    return out;
  }
  void release_saved() override {
    if (!saved_tensors) return;  // nothing to free: the formula may run again
    NodeLockGuard hold(lock_);
    fn_.reset();
  }
  std::string name() const override { return backward_name(op_); }

 private:
  const char* op_;
  NodeLock lock_;
  std::optional<F> fn_;
};

/// A node named after op `op` with one edge per input (null inputs get no edge).
template <class P, class F>
std::shared_ptr<Node> make_node(const char* op, std::initializer_list<const TensorImpl*> inputs, F f,
                                const PolicyOps* ops) {
  // First, before gradient_edge below can build a view's history node of its own.
  const bool saved = take_saved_count() != 0;
  auto n = std::make_shared<FnNode<P, F>>(op, std::move(f));
  n->saved_tensors = saved;
  n->ops = ops;
  n->sequence = next_sequence();
  n->next.reserve(inputs.size());
  for (const TensorImpl* in : inputs) n->next.push_back(in ? gradient_edge(*in, ops) : Edge{});
  return n;
}

/// The same for a runtime list of inputs (cat).
template <class P, class F>
std::shared_ptr<Node> make_node(const char* op, std::span<const TensorImpl* const> inputs, F f, const PolicyOps* ops) {
  // First, before gradient_edge below can build a view's history node of its own.
  const bool saved = take_saved_count() != 0;
  auto n = std::make_shared<FnNode<P, F>>(op, std::move(f));
  n->saved_tensors = saved;
  n->ops = ops;
  n->sequence = next_sequence();
  n->next.reserve(inputs.size());
  for (const TensorImpl* in : inputs) n->next.push_back(in ? gradient_edge(*in, ops) : Edge{});
  return n;
}

/// g summed down to `shape` (the inverse of broadcasting shape up to g's shape).
template <class P>
T<P> sum_to(const T<P>& g, const Shape& shape) {
  if (g.sizes() == shape) return g;
  int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  Shape dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 1 && g.size(lead + static_cast<int64_t>(i)) != 1) dims.push_back(lead + static_cast<int64_t>(i));
  T<P> r = dims.empty() ? g : g.sum(dims, true);
  return r.reshape(shape);
}

/// The gradient of a reduction over `dims` (all if empty) of a tensor of shape `in`, from the
/// gradient g of its result: g with the reduced dims restored (size 1), expanded to `in`.
template <class P>
T<P> expand_reduced(const T<P>& g, const Shape& in, const Shape& dims, bool keepdim) {
  T<P> r = g;
  if (!keepdim) {
    int64_t n = static_cast<int64_t>(in.size());
    Shape keep = in;
    if (dims.empty()) {
      for (size_t i = 0; i < keep.size(); ++i) keep[i] = 1;
    } else {
      for (int64_t d : dims) keep[wrap_dim(d, n, "backward")] = 1;
    }
    r = r.reshape(keep);
  }
  return r.expand(in);
}

template <class P>
T<P> zeros_like_t(const T<P>& x) {
  return zeros<P>(x.sizes(), TensorOptions(x.dtype()).device(x.device()));
}

}  // namespace ember::autograd::detail
