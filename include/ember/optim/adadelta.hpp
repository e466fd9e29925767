#pragma once
/// Adadelta (Zeiler) with L2 weight decay and maximize, as torch.optim.Adadelta.

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct AdadeltaOptions : OptimizerOptions {
  explicit AdadeltaOptions(double lr = 1.0) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, rho) = 0.9;
  EMBER_ARG(double, eps) = 1e-6;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(AdadeltaOptions, "Adadelta")
};

class Adadelta : public Optimizer {
 public:
  explicit Adadelta(std::vector<Tensor> params, const AdadeltaOptions& defaults = AdadeltaOptions());
  Adadelta(std::vector<ParamGroup> groups, const AdadeltaOptions& defaults = AdadeltaOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
