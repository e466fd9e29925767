#pragma once
/// Averaged SGD with L2 weight decay and maximize, as torch.optim.ASGD: SGD whose step size
/// eta decays as lr / (1 + lambd lr t)^alpha, with the parameter shrunk by 1 - lambd eta each
/// step, and a running average of the parameter ("ax" in the state): step k folds the new
/// parameter in with weight mu = 1 / max(1, k - 1 - t0), so the average follows the parameter
/// up to step t0 + 2 and is the mean of the iterates from there on. It is what Polyak-Ruppert
/// averaging evaluates; read it with state(p)->buffers[0] (the optimiser never writes it into
/// the parameter).
///
/// eta and mu are per-parameter state in double. PyTorch keeps them in 0-d tensors of its
/// default dtype, f32 unless set otherwise, which rounds them to f32: with f64 parameters Ember
/// matches a PyTorch run whose default dtype is f64, and differs from a default one by that
/// rounding.

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

struct ASGDOptions : OptimizerOptions {
  explicit ASGDOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, lambd) = 1e-4;  ///< decay term
  EMBER_ARG(double, alpha) = 0.75;  ///< power of the eta schedule
  EMBER_ARG(double, t0) = 1e6;      ///< the step after which averaging starts
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(ASGDOptions, "ASGD")
};

class ASGD : public Optimizer {
 public:
  explicit ASGD(std::vector<Tensor> params, const ASGDOptions& defaults = ASGDOptions());
  ASGD(std::vector<ParamGroup> groups, const ASGDOptions& defaults = ASGDOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
