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
  /// Graphs built on several threads may share a leaf: accumulation is serialised.
  std::mutex mu;
};

}  // namespace ember::autograd
