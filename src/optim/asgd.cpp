// ASGD: options and the per-group update (see asgd.hpp; the element loop is fused::asgd).

#include <ember/optim/asgd.hpp>

#include "common.hpp"

#include <algorithm>
#include <cmath>

namespace ember::optim {

std::vector<OptionField> ASGDOptions::fields() {
  return {{"lr", &lr_},         {"lambd", &lambd_}, {"alpha", &alpha_}, {"t0", &t0_}, {"weight_decay", &weight_decay_},
          {"maximize", &maximize_}};
}
void ASGDOptions::validate() const {
  detail::check_non_negative("ASGD", "lr", lr_);
  detail::check_non_negative("ASGD", "weight_decay", weight_decay_);
  // PyTorch checks only the two above; a negative or NaN lambd or alpha turns eta negative,
  // growing or NaN, and a NaN t0 stops the averaging silently.
  detail::check_non_negative("ASGD", "lambd", lambd_);
  detail::check_non_negative("ASGD", "alpha", alpha_);
  EMBER_CHECK(!std::isnan(t0_), "[ASGD] t0 must be a number, got {}", t0_);
}

ASGD::ASGD(std::vector<Tensor> params, const ASGDOptions& defaults)
    : ASGD(detail::one_group(std::move(params)), defaults) {}
ASGD::ASGD(std::vector<ParamGroup> groups, const ASGDOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames ASGD::state_names() const {
  StateNames n;
  n.buffers[0] = "ax";
  n.numbers[0] = "eta";
  n.numbers[1] = "mu";
  return n;
}

void ASGD::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const ASGDOptions&>(options);
  const double lr = o.lr(), lambd = o.lambd();
  fused::AsgdCoef* c = detail::scratch<fused::AsgdCoef>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ParamState& st = *items[i].state;
    double& eta = st.numbers[0];
    double& mu = st.numbers[1];
    if (ensure_buffer(items[i], 0)) eta = lr, mu = 1;  // a new state: PyTorch's initial eta and mu
    // This step uses the eta and mu the previous step left (eta from that step's lr), then
    // sets the next ones from the new step count, as PyTorch does.
    const double step = static_cast<double>(++st.step);
    c[i] = {eta, mu};
    eta = lr / std::pow(1 + lambd * lr * step, o.alpha());
    mu = 1 / std::max(1.0, step - o.t0());
  }
  fused::AsgdArgs a{lambd, o.weight_decay(), o.maximize()};
  fused::asgd(a, detail::views(items), c, static_cast<int64_t>(items.size()));
}

}  // namespace ember::optim
