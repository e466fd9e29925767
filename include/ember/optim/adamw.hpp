#pragma once
/// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay, p *= 1 - lr * weight_decay
/// before the Adam step, as torch.optim.AdamW (default weight_decay 1e-2).

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct AdamWOptions : OptimizerOptions {
  explicit AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 1e-2;
  EMBER_ARG(bool, amsgrad) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(AdamWOptions, "AdamW")
};

class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults = AdamWOptions());
  StateNames state_names() const override;
  unsigned required_buffers(const OptimizerOptions& options) const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
