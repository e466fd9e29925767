#pragma once
/// Stochastic gradient descent with momentum, dampening, Nesterov momentum, L2 weight decay
/// and maximize, as torch.optim.SGD: the momentum buffer starts as the first (decayed)
/// gradient, then b = momentum * b + (1 - dampening) * g.

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct SGDOptions : OptimizerOptions {
  /// The learning rate has no default, as libtorch's SGDOptions (PyTorch >= 2.2 defaults to 1e-3).
  explicit SGDOptions(double lr) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, momentum) = 0;
  EMBER_ARG(double, dampening) = 0;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, nesterov) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(SGDOptions, "SGD")
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);
  StateNames state_names() const override;
  unsigned required_buffers(const OptimizerOptions& options) const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
