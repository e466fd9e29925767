// SGD: options and the per-group update (torch.optim.SGD semantics, see sgd.hpp).

#include <ember/optim/sgd.hpp>

#include "common.hpp"

namespace ember::optim {

std::vector<OptionField> SGDOptions::fields() {
  return {{"lr", &lr_},
          {"momentum", &momentum_},
          {"dampening", &dampening_},
          {"weight_decay", &weight_decay_},
          {"nesterov", &nesterov_},
          {"maximize", &maximize_}};
}

void SGDOptions::validate() const {
  detail::check_non_negative("SGD", "lr", lr_);
  detail::check_non_negative("SGD", "momentum", momentum_);
  detail::check_non_negative("SGD", "weight_decay", weight_decay_);
  EMBER_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0),
              "[SGD] nesterov needs momentum > 0 and dampening 0, got momentum {} and dampening {}", momentum_,
              dampening_);
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& defaults)
    : SGD(detail::one_group(std::move(params)), defaults) {}
SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults) : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames SGD::state_names() const {
  StateNames n;
  n.buffers[0] = "momentum_buffer";
  n.step = false;  // PyTorch's SGD keeps no step count
  return n;
}
// A state without a momentum buffer starts one from the next gradient, as PyTorch's SGD does
// when state['momentum_buffer'] is missing.
unsigned SGD::required_buffers(const OptimizerOptions&) const { return 0; }

void SGD::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const SGDOptions&>(options);
  fused::SgdCoef* c = detail::scratch<fused::SgdCoef>(items.size());
  if (o.momentum() != 0)
    for (size_t i = 0; i < items.size(); ++i) c[i].fresh = ensure_buffer(items[i], 0);
  fused::SgdArgs a{o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(), o.maximize()};
  fused::sgd(a, detail::views(items), c, static_cast<int64_t>(items.size()));
}

}  // namespace ember::optim
