#pragma once
/// RAdam (Liu et al.: Adam with the variance of the adaptive step rectified; plain momentum
/// steps while rho_t <= 5), as torch.optim.RAdam, with PyTorch 2.x's decoupled_weight_decay
/// and maximize.

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct RAdamOptions : OptimizerOptions {
  explicit RAdamOptions(double lr = 1e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, decoupled_weight_decay) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(RAdamOptions, "RAdam")
};

class RAdam : public Optimizer {
 public:
  explicit RAdam(std::vector<Tensor> params, const RAdamOptions& defaults = RAdamOptions());
  RAdam(std::vector<ParamGroup> groups, const RAdamOptions& defaults = RAdamOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
