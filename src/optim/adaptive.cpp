// RMSprop, Adagrad and Adadelta: options, and the per-group update (PyTorch's semantics; the
// element loops are in the fused kernels).

#include <ember/optim/adadelta.hpp>
#include <ember/optim/adagrad.hpp>
#include <ember/optim/rmsprop.hpp>

#include "common.hpp"

namespace ember::optim {

// ---- RMSprop ----------------------------------------------------------------------------------

std::vector<OptionField> RMSpropOptions::fields() {
  return {{"lr", &lr_},
          {"alpha", &alpha_},
          {"eps", &eps_},
          {"weight_decay", &weight_decay_},
          {"momentum", &momentum_},
          {"centered", &centered_},
          {"maximize", &maximize_}};
}
void RMSpropOptions::validate() const {
  detail::check_non_negative("RMSprop", "lr", lr_);
  detail::check_non_negative("RMSprop", "eps", eps_);
  detail::check_non_negative("RMSprop", "momentum", momentum_);
  detail::check_non_negative("RMSprop", "weight_decay", weight_decay_);
  detail::check_non_negative("RMSprop", "alpha", alpha_);
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults)
    : RMSprop(detail::one_group(std::move(params)), defaults) {}
RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames RMSprop::state_names() const {
  StateNames n;
  n.buffers[0] = "square_avg";
  n.buffers[1] = "momentum_buffer";
  n.buffers[2] = "grad_avg";
  return n;
}
unsigned RMSprop::required_buffers(const OptimizerOptions&) const { return 1u; }

void RMSprop::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const RMSpropOptions&>(options);
  for (Item& it : items) {
    ensure_buffer(it, 0);
    if (o.momentum() > 0) ensure_buffer(it, 1);
    if (o.centered()) ensure_buffer(it, 2);
    ++it.state->step;  // kept for state dicts (as PyTorch does); the update does not use it
  }
  fused::RMSpropArgs a{o.lr(), o.alpha(), o.eps(), o.weight_decay(), o.momentum(), o.centered(), o.maximize()};
  fused::rmsprop(a, detail::views(items), static_cast<int64_t>(items.size()));
}

// ---- Adagrad ----------------------------------------------------------------------------------

std::vector<OptionField> AdagradOptions::fields() {
  return {{"lr", &lr_},
          {"lr_decay", &lr_decay_},
          {"weight_decay", &weight_decay_},
          {"initial_accumulator_value", &initial_accumulator_value_},
          {"eps", &eps_},
          {"maximize", &maximize_}};
}
void AdagradOptions::validate() const {
  detail::check_non_negative("Adagrad", "lr", lr_);
  detail::check_non_negative("Adagrad", "lr_decay", lr_decay_);
  detail::check_non_negative("Adagrad", "weight_decay", weight_decay_);
  detail::check_non_negative("Adagrad", "initial_accumulator_value", initial_accumulator_value_);
  detail::check_non_negative("Adagrad", "eps", eps_);
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults)
    : Adagrad(detail::one_group(std::move(params)), defaults) {}
Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames Adagrad::state_names() const {
  StateNames n;
  n.buffers[0] = "sum";
  return n;
}

void Adagrad::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const AdagradOptions&>(options);
  fused::AdagradCoef* c = detail::scratch<fused::AdagradCoef>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    // PyTorch fills the accumulator when the optimiser is built; filling it at the first
    // update gives the same values.
    ensure_buffer(items[i], 0, o.initial_accumulator_value());
    const double step = static_cast<double>(++items[i].state->step);
    c[i].clr = o.lr() / (1 + (step - 1) * o.lr_decay());
  }
  fused::AdagradArgs a{o.eps(), o.weight_decay(), o.maximize()};
  fused::adagrad(a, detail::views(items), c, static_cast<int64_t>(items.size()));
}

// ---- Adadelta ---------------------------------------------------------------------------------

std::vector<OptionField> AdadeltaOptions::fields() {
  return {{"lr", &lr_}, {"rho", &rho_}, {"eps", &eps_}, {"weight_decay", &weight_decay_}, {"maximize", &maximize_}};
}
void AdadeltaOptions::validate() const {
  detail::check_non_negative("Adadelta", "lr", lr_);
  EMBER_CHECK(rho_ >= 0 && rho_ <= 1, "[Adadelta] rho must be in [0, 1], got {}", rho_);
  detail::check_non_negative("Adadelta", "eps", eps_);
  detail::check_non_negative("Adadelta", "weight_decay", weight_decay_);
}

Adadelta::Adadelta(std::vector<Tensor> params, const AdadeltaOptions& defaults)
    : Adadelta(detail::one_group(std::move(params)), defaults) {}
Adadelta::Adadelta(std::vector<ParamGroup> groups, const AdadeltaOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames Adadelta::state_names() const {
  StateNames n;
  n.buffers[0] = "square_avg";
  n.buffers[1] = "acc_delta";
  return n;
}

void Adadelta::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const AdadeltaOptions&>(options);
  for (Item& it : items) {
    ensure_buffer(it, 0);
    ensure_buffer(it, 1);
    ++it.state->step;  // kept for state dicts (as PyTorch does); the update does not use it
  }
  fused::AdadeltaArgs a{o.lr(), o.rho(), o.eps(), o.weight_decay(), o.maximize()};
  fused::adadelta(a, detail::views(items), static_cast<int64_t>(items.size()));
}

}  // namespace ember::optim
