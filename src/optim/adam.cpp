// The Adam family: Adam, AdamW, Adamax, NAdam and RAdam. Options, and the per-group update:
// step counts and bias corrections in double here, the element loop in the fused kernel.
// The scalar formulas and their order are PyTorch's (torch/optim/*.py, _single_tensor_*).

#include <ember/optim/adam.hpp>
#include <ember/optim/adamax.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/nadam.hpp>
#include <ember/optim/radam.hpp>

#include "common.hpp"

#include <cmath>

namespace ember::optim {

namespace {

void check_adam_like(const char* opt, double lr, const Betas& betas, double eps, double weight_decay) {
  detail::check_non_negative(opt, "lr", lr);
  detail::check_non_negative(opt, "eps", eps);
  detail::check_beta(opt, betas);
  detail::check_non_negative(opt, "weight_decay", weight_decay);
}

void adam_update(const fused::AdamArgs& a, std::vector<Optimizer::Item>& items) {
  fused::AdamCoef* c = detail::scratch<fused::AdamCoef>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    Optimizer::Item& it = items[i];
    Optimizer::ensure_buffer(it, 0);
    Optimizer::ensure_buffer(it, 1);
    if (a.amsgrad) Optimizer::ensure_buffer(it, 2);
    const double step = static_cast<double>(++it.state->step);
    c[i].step_size = a.lr / (1 - std::pow(a.beta1, step));
    c[i].bias2_sqrt = std::sqrt(1 - std::pow(a.beta2, step));
  }
  fused::adam(a, detail::views(items), c, static_cast<int64_t>(items.size()));
}

Optimizer::StateNames adam_names(bool third) {
  Optimizer::StateNames n;
  n.buffers[0] = "exp_avg";
  n.buffers[1] = "exp_avg_sq";
  if (third) n.buffers[2] = "max_exp_avg_sq";
  return n;
}

}  // namespace

// ---- Adam -------------------------------------------------------------------------------------

std::vector<OptionField> AdamOptions::fields() {
  return {{"lr", &lr_},
          {"beta1", &std::get<0>(betas_)},
          {"beta2", &std::get<1>(betas_)},
          {"eps", &eps_},
          {"weight_decay", &weight_decay_},
          {"amsgrad", &amsgrad_},
          {"maximize", &maximize_},
          OptionField::added_later("decoupled_weight_decay", &decoupled_weight_decay_, false)};
}
void AdamOptions::validate() const { check_adam_like("Adam", lr_, betas_, eps_, weight_decay_); }

Adam::Adam(std::vector<Tensor> params, const AdamOptions& defaults)
    : Adam(detail::one_group(std::move(params)), defaults) {}
Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}
Optimizer::StateNames Adam::state_names() const { return adam_names(true); }
unsigned Adam::required_buffers(const OptimizerOptions&) const { return 3u; }

void Adam::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const AdamOptions&>(options);
  adam_update({o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(), o.amsgrad(),
               o.maximize(), o.decoupled_weight_decay()},
              items);
}

// ---- AdamW ------------------------------------------------------------------------------------

std::vector<OptionField> AdamWOptions::fields() {
  return {{"lr", &lr_},
          {"beta1", &std::get<0>(betas_)},
          {"beta2", &std::get<1>(betas_)},
          {"eps", &eps_},
          {"weight_decay", &weight_decay_},
          {"amsgrad", &amsgrad_},
          {"maximize", &maximize_}};
}
void AdamWOptions::validate() const { check_adam_like("AdamW", lr_, betas_, eps_, weight_decay_); }

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& defaults)
    : AdamW(detail::one_group(std::move(params)), defaults) {}
AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}
Optimizer::StateNames AdamW::state_names() const { return adam_names(true); }
unsigned AdamW::required_buffers(const OptimizerOptions&) const { return 3u; }

void AdamW::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const AdamWOptions&>(options);
  adam_update({o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(), o.amsgrad(),
               o.maximize(), /*decoupled=*/true},
              items);
}

// ---- Adamax -----------------------------------------------------------------------------------

std::vector<OptionField> AdamaxOptions::fields() {
  return {{"lr", &lr_},
          {"beta1", &std::get<0>(betas_)},
          {"beta2", &std::get<1>(betas_)},
          {"eps", &eps_},
          {"weight_decay", &weight_decay_},
          {"maximize", &maximize_}};
}
void AdamaxOptions::validate() const { check_adam_like("Adamax", lr_, betas_, eps_, weight_decay_); }

Adamax::Adamax(std::vector<Tensor> params, const AdamaxOptions& defaults)
    : Adamax(detail::one_group(std::move(params)), defaults) {}
Adamax::Adamax(std::vector<ParamGroup> groups, const AdamaxOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames Adamax::state_names() const {
  StateNames n;
  n.buffers[0] = "exp_avg";
  n.buffers[1] = "exp_inf";
  return n;
}

void Adamax::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const AdamaxOptions&>(options);
  const double beta1 = std::get<0>(o.betas());
  fused::AdamaxCoef* c = detail::scratch<fused::AdamaxCoef>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ensure_buffer(items[i], 0);
    ensure_buffer(items[i], 1);
    const double step = static_cast<double>(++items[i].state->step);
    c[i].clr = o.lr() / (1 - std::pow(beta1, step));
  }
  fused::AdamaxArgs a{beta1, std::get<1>(o.betas()), o.eps(), o.weight_decay(), o.maximize()};
  fused::adamax(a, detail::views(items), c, static_cast<int64_t>(items.size()));
}

// ---- NAdam ------------------------------------------------------------------------------------

std::vector<OptionField> NAdamOptions::fields() {
  return {{"lr", &lr_},
          {"beta1", &std::get<0>(betas_)},
          {"beta2", &std::get<1>(betas_)},
          {"eps", &eps_},
          {"weight_decay", &weight_decay_},
          {"momentum_decay", &momentum_decay_},
          {"decoupled_weight_decay", &decoupled_weight_decay_},
          {"maximize", &maximize_}};
}
void NAdamOptions::validate() const {
  check_adam_like("NAdam", lr_, betas_, eps_, weight_decay_);
  detail::check_non_negative("NAdam", "momentum_decay", momentum_decay_);
}

NAdam::NAdam(std::vector<Tensor> params, const NAdamOptions& defaults)
    : NAdam(detail::one_group(std::move(params)), defaults) {}
NAdam::NAdam(std::vector<ParamGroup> groups, const NAdamOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}

Optimizer::StateNames NAdam::state_names() const {
  StateNames n = adam_names(false);
  n.numbers[0] = "mu_product";
  return n;
}

void NAdam::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const NAdamOptions&>(options);
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas()), lr = o.lr(), md = o.momentum_decay();
  fused::NAdamCoef* c = detail::scratch<fused::NAdamCoef>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ensure_buffer(items[i], 0);
    ensure_buffer(items[i], 1);
    ParamState& st = *items[i].state;
    const double step = static_cast<double>(++st.step);
    const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * md));
    const double mu_next = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * md));
    double& mu_product = st.numbers[0];
    mu_product *= mu;
    const double mu_product_next = mu_product * mu_next;
    c[i].bias2 = 1 - std::pow(beta2, step);
    c[i].grad_coef = -lr * (1. - mu) / (1. - mu_product);
    c[i].avg_coef = (-lr * mu_next) / (1. - mu_product_next);
  }
  fused::NAdamArgs a{lr, beta1, beta2, o.eps(), o.weight_decay(), o.maximize(), o.decoupled_weight_decay()};
  fused::nadam(a, detail::views(items), c, static_cast<int64_t>(items.size()));
}

// ---- RAdam ------------------------------------------------------------------------------------

std::vector<OptionField> RAdamOptions::fields() {
  return {{"lr", &lr_},
          {"beta1", &std::get<0>(betas_)},
          {"beta2", &std::get<1>(betas_)},
          {"eps", &eps_},
          {"weight_decay", &weight_decay_},
          {"decoupled_weight_decay", &decoupled_weight_decay_},
          {"maximize", &maximize_}};
}
void RAdamOptions::validate() const { check_adam_like("RAdam", lr_, betas_, eps_, weight_decay_); }

RAdam::RAdam(std::vector<Tensor> params, const RAdamOptions& defaults)
    : RAdam(detail::one_group(std::move(params)), defaults) {}
RAdam::RAdam(std::vector<ParamGroup> groups, const RAdamOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {}
Optimizer::StateNames RAdam::state_names() const { return adam_names(false); }

void RAdam::update(const OptimizerOptions& options, std::vector<Item>& items) {
  const auto& o = static_cast<const RAdamOptions&>(options);
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
  const double rho_inf = 2 / (1 - beta2) - 1;
  fused::RAdamCoef* c = detail::scratch<fused::RAdamCoef>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ensure_buffer(items[i], 0);
    ensure_buffer(items[i], 1);
    const double step = static_cast<double>(++items[i].state->step);
    const double bias2 = 1 - std::pow(beta2, step);
    const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias2;
    c[i].bias1 = 1 - std::pow(beta1, step);
    c[i].bias2_sqrt = std::sqrt(bias2);
    c[i].rectified = rho_t > 5.;
    c[i].rect = c[i].rectified
                    ? std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    : 0.0;
  }
  fused::RAdamArgs a{o.lr(), beta1, beta2, o.eps(), o.weight_decay(), o.maximize(), o.decoupled_weight_decay()};
  fused::radam(a, detail::views(items), c, static_cast<int64_t>(items.size()));
}

}  // namespace ember::optim
