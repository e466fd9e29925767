// Rprop: options and the per-group update (see rprop.hpp; the element loop is fused::rprop).

#include <ember/optim/rprop.hpp>

#include "common.hpp"

namespace ember::optim {

std::vector<OptionField> RpropOptions::fields() {
  return {{"lr", &lr_},
          {"etaminus", &std::get<0>(etas_)},
          {"etaplus", &std::get<1>(etas_)},
          {"step_size_min", &std::get<0>(step_sizes_)},
          {"step_size_max", &std::get<1>(step_sizes_)},
          {"maximize", &maximize_}};
}
void RpropOptions::validate() const {
  detail::check_non_negative("Rprop", "lr", lr_);
  const double minus = std::get<0>(etas_), plus = std::get<1>(etas_);
  // PyTorch's rule. It also keeps the update's three cases apart: a flipped sign is the only
  // one whose factor is etaminus.
  EMBER_CHECK(0 < minus && minus < 1 && 1 < plus, "[Rprop] etas must satisfy 0 < etaminus < 1 < etaplus, got ({}, {})",
              minus, plus);
  const double lo = std::get<0>(step_sizes_), hi = std::get<1>(step_sizes_);
  EMBER_CHECK(lo >= 0 && lo <= hi, "[Rprop] step_sizes must satisfy 0 <= min <= max, got ({}, {})", lo, hi);
}

Rprop::Rprop(std::vector<Tensor> params, const RpropOptions& defaults)
    : Rprop(detail::one_group(std::move(params)), defaults) {}
Rprop::Rprop(std::vector<ParamGroup> groups, const RpropOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames Rprop::state_names() const {
  StateNames n;
  n.buffers[0] = "prev";
  n.buffers[1] = "step_size";
  return n;
}

void Rprop::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const RpropOptions&>(options);
  for (Item& it : items) {
    ensure_buffer(it, 0);
    ensure_buffer(it, 1, o.lr());  // every element starts at the group's lr, as PyTorch
    ++it.state->step;              // kept for state dicts (as PyTorch does); the update does not use it
  }
  fused::RpropArgs a{std::get<0>(o.etas()), std::get<1>(o.etas()), std::get<0>(o.step_sizes()),
                     std::get<1>(o.step_sizes()), o.maximize()};
  fused::rprop(a, detail::views(items), static_cast<int64_t>(items.size()));
}

}  // namespace ember::optim
