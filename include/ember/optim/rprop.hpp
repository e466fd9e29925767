#pragma once
/// Rprop (resilient backpropagation) with maximize, as torch.optim.Rprop: each element keeps
/// its own step size, grown by etaplus while its gradient keeps its sign and shrunk by
/// etaminus when the sign flips (that step then leaves the element alone), clamped to
/// step_sizes; the update moves by the step size against the gradient's sign. Meant for
/// full-batch training: it reads only the gradient's sign, which minibatch noise scrambles.
/// Like every fused update, it flushes subnormals to zero (see optim/fused.hpp): a gradient,
/// or a product of two successive gradients, below 2^-126 in f32 counts as 0 here (no move,
/// no change of the step size), where PyTorch moves by a whole step.

#include <ember/optim/optimizer.hpp>

namespace ember::optim {

/// (etaminus, etaplus) of Rprop.
using Etas = std::tuple<double, double>;
/// (smallest, largest) step size of Rprop.
using StepSizes = std::tuple<double, double>;

struct RpropOptions : OptimizerOptions {
  /// lr is each element's first step size.
  explicit RpropOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(Etas, etas) = std::make_tuple(0.5, 1.2);
  EMBER_ARG(StepSizes, step_sizes) = std::make_tuple(1e-6, 50.0);
  EMBER_ARG(bool, maximize) = false;
  EMBER_OPTIM_OPTIONS(RpropOptions, "Rprop")
};

class Rprop : public Optimizer {
 public:
  explicit Rprop(std::vector<Tensor> params, const RpropOptions& defaults = RpropOptions());
  Rprop(std::vector<ParamGroup> groups, const RpropOptions& defaults = RpropOptions());
  StateNames state_names() const override;

 protected:
  void update(const OptimizerOptions& options, std::vector<Item>& items) override;
};

}  // namespace ember::optim
