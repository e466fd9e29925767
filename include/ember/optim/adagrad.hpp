#pragma once
/// Adagrad with learning-rate decay, L2 weight decay, an initial accumulator value and
/// maximize, as torch.optim.Adagrad: lr_t = lr / (1 + (step - 1) * lr_decay). One difference:
/// a group's own initial_accumulator_value is used for its parameters (PyTorch fills every
/// accumulator from the constructor's value and ignores the groups').

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct AdagradOptions : OptimizerOptions {
  explicit AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, lr_decay) = 0;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(double, initial_accumulator_value) = 0;
  EMBER_ARG(double, eps) = 1e-10;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(AdagradOptions, "Adagrad")
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults = AdagradOptions());
  Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults = AdagradOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
