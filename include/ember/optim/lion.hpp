#pragma once
/// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): the step is the
/// sign of an interpolation of momentum and gradient, with decoupled weight decay:
///   p *= 1 - lr * wd;  p -= lr * sign(beta1 * m + (1 - beta1) * g);  m = beta2 * m + (1 - beta2) * g
/// PyTorch has no Lion; this follows the paper's algorithm (defaults lr 1e-4, betas 0.9, 0.99).
/// Use a learning rate 3-10x smaller than AdamW's, and a weight decay that much larger.

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct LionOptions : OptimizerOptions {
  explicit LionOptions(double lr = 1e-4) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = std::make_tuple(0.9, 0.99);
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(LionOptions, "Lion")
};

class Lion : public Optimizer {
 public:
  explicit Lion(std::vector<Tensor> params, const LionOptions& defaults = LionOptions());
  Lion(std::vector<ParamGroup> groups, const LionOptions& defaults = LionOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
