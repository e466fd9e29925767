#pragma once
/// RMSprop with momentum, centering (divide by the estimated standard deviation rather than
/// the root mean square), L2 weight decay and maximize, as torch.optim.RMSprop.

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct RMSpropOptions : OptimizerOptions {
  explicit RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, alpha) = 0.99;
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(double, momentum) = 0;
  EMBER_ARG(bool, centered) = false;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(RMSpropOptions, "RMSprop")
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults = RMSpropOptions());
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults = RMSpropOptions());
  StateNames state_names() const override;
  unsigned required_buffers(const OptimizerOptions& options) const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
