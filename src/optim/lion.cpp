// Lion: options and the per-group update (see lion.hpp).

#include <ember/optim/lion.hpp>

#include "common.hpp"

namespace ember::optim {

std::vector<OptionField> LionOptions::fields() {
  return {{"lr", &lr_},
          {"beta1", &std::get<0>(betas_)},
          {"beta2", &std::get<1>(betas_)},
          {"weight_decay", &weight_decay_},
          {"maximize", &maximize_}};
}
void LionOptions::validate() const {
  detail::check_non_negative("Lion", "lr", lr_);
  detail::check_beta("Lion", betas_, /*closed=*/true);
  detail::check_non_negative("Lion", "weight_decay", weight_decay_);
}

Lion::Lion(std::vector<Tensor> params, const LionOptions& defaults)
    : Lion(detail::one_group(std::move(params)), defaults) {}
Lion::Lion(std::vector<ParamGroup> groups, const LionOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames Lion::state_names() const {
  StateNames n;
  n.buffers[0] = "exp_avg";
  n.step = false;  // the update does not depend on the step count
  return n;
}

void Lion::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const LionOptions&>(options);
  for (Item& it : items) ensure_buffer(it, 0);
  fused::LionArgs a{o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(), o.maximize()};
  fused::lion(a, detail::views(items), static_cast<int64_t>(items.size()));
}

}  // namespace ember::optim
