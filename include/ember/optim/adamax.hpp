#pragma once
/// Adamax (Adam under the infinity norm) with L2 weight decay and maximize, as
/// torch.optim.Adamax: u = max(beta2 * u, |g| + eps).

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct AdamaxOptions : OptimizerOptions {
  explicit AdamaxOptions(double lr = 2e-3) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Betas, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(AdamaxOptions, "Adamax")
};

class Adamax : public Optimizer {
 public:
  explicit Adamax(std::vector<Tensor> params, const AdamaxOptions& defaults = AdamaxOptions());
  Adamax(std::vector<ParamGroup> groups, const AdamaxOptions& defaults = AdamaxOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
