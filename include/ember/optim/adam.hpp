#pragma once
/// Adam (Kingma & Ba) with L2 weight decay added to the gradient, AMSGrad and maximize, as
/// torch.optim.Adam; with decoupled_weight_decay, AdamW's decay (p *= 1 - lr * weight_decay),
/// as PyTorch's Adam(decoupled_weight_decay=True).

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct AdamOptions : OptimizerOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, amsgrad) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_ARG(bool, decoupled_weight_decay) = false;
  EMBER_OPTIM_OPTIONS(AdamOptions, "Adam")
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, const AdamOptions& defaults = AdamOptions());
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults = AdamOptions());
  StateNames state_names() const override;
  unsigned required_buffers(const OptimizerOptions& options) const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
