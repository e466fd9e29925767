#pragma once
// The node at each leaf (private to src/autograd/meta.cpp).

#include <ember/autograd/node.hpp>

#include <mutex>

namespace ember::autograd {

/// Node for a leaf: adds incoming gradients into the leaf's .grad().
struct AccumulateGrad final : Node {
  AccumulateGrad(TensorRef leaf, const PolicyOps* policy_ops) : variable(std::move(leaf)) { ops = policy_ops; }
  std::vector<TensorRef> apply(std::vector<TensorRef>& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  TensorRef variable;
};

/// Graphs built on several threads may share a leaf, so accumulation into a leaf's .grad() is
/// serialised by a lock chosen by the leaf (one of a fixed set), not owned by its
/// AccumulateGrad: a leaf's accumulator is re-created once no graph holds it, and two
/// accumulators' own locks ordered nothing between one graph's last write and the next
/// graph's first read (ThreadSanitizer caught it in test_autograd_function's concurrent test).
std::mutex& leaf_lock(const TensorImpl& leaf);

/// Fails unless a hook's result `r` has the shape, dtype and device of the gradient it
/// replaces (PyTorch: "hook '0' has changed the size of value").
void check_hook_result(const TensorRef& r, const OutputInfo& want, const char* where);

}  // namespace ember::autograd
