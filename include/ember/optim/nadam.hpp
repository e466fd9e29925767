#pragma once
/// NAdam (Dozat: Adam with Nesterov momentum) with the momentum-decay schedule
/// mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay)), as torch.optim.NAdam in PyTorch 2.x
/// (PyTorch 1.13 multiplied mu_t into the next-step product twice; 2.0 fixed it). Also
/// PyTorch 2.x's decoupled_weight_decay (p *= 1 - lr * weight_decay) and maximize.
///
/// The product of the mu_t is per-parameter state in double. PyTorch 2.x keeps it in a 0-d
/// tensor of its default dtype (f32 unless set otherwise): with f64 parameters Ember matches a
/// PyTorch run whose default dtype is f64, and differs from a default one by that rounding
/// (~1e-8 relative).

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct NAdamOptions : OptimizerOptions {
  explicit NAdamOptions(double lr = 2e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(double, momentum_decay) = 4e-3;
  EMBER_ARG(bool, decoupled_weight_decay) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(NAdamOptions, "NAdam")
};

class NAdam : public Optimizer {
 public:
  explicit NAdam(std::vector<Tensor> params, const NAdamOptions& defaults = NAdamOptions());
  NAdam(std::vector<ParamGroup> groups, const NAdamOptions& defaults = NAdamOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
