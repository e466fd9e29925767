#pragma once
// Helpers shared by the optimiser tests: building any optimiser by name from named options
// (as the golden fixtures describe them), and reading tensors back as doubles.

#include <ember/ember.hpp>
#include <ember/optim.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../error_text.hpp"

namespace ember::optim_test {

using OptionMap = std::map<std::string, double>;

/// Every optimiser Ember has, by name.
inline const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"SGD",   "Adam",  "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                                 "Adamax", "NAdam", "RAdam", "Lion",    "Rprop",   "ASGD"};
  return names;
}

/// Options of optimiser `name` with each entry of `set` applied through the generic setter
/// (SGD's lr, which has no default, is taken from `set`).
inline std::unique_ptr<optim::OptimizerOptions> make_options(const std::string& name, const OptionMap& set) {
  std::unique_ptr<optim::OptimizerOptions> o;
  if (name == "SGD") o = std::make_unique<optim::SGDOptions>(set.count("lr") ? set.at("lr") : 0.01);
  else if (name == "Adam") o = std::make_unique<optim::AdamOptions>();
  else if (name == "AdamW") o = std::make_unique<optim::AdamWOptions>();
  else if (name == "RMSprop") o = std::make_unique<optim::RMSpropOptions>();
  else if (name == "Adagrad") o = std::make_unique<optim::AdagradOptions>();
  else if (name == "Adadelta") o = std::make_unique<optim::AdadeltaOptions>();
  else if (name == "Adamax") o = std::make_unique<optim::AdamaxOptions>();
  else if (name == "NAdam") o = std::make_unique<optim::NAdamOptions>();
  else if (name == "RAdam") o = std::make_unique<optim::RAdamOptions>();
  else if (name == "Lion") o = std::make_unique<optim::LionOptions>();
  else if (name == "Rprop") o = std::make_unique<optim::RpropOptions>();
  else if (name == "ASGD") o = std::make_unique<optim::ASGDOptions>();
  else EMBER_FAIL("[optim_test] unknown optimiser {}", name);
  for (const auto& [k, v] : set) o->set(k, v);
  return o;
}

/// Optimiser `name` over `groups` with defaults `o` (of that optimiser's options type).
inline std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<optim::ParamGroup> groups,
                                                        const optim::OptimizerOptions& o) {
  using namespace optim;
  if (name == "SGD") return std::make_unique<SGD>(std::move(groups), static_cast<const SGDOptions&>(o));
  if (name == "Adam") return std::make_unique<Adam>(std::move(groups), static_cast<const AdamOptions&>(o));
  if (name == "AdamW") return std::make_unique<AdamW>(std::move(groups), static_cast<const AdamWOptions&>(o));
  if (name == "RMSprop") return std::make_unique<RMSprop>(std::move(groups), static_cast<const RMSpropOptions&>(o));
  if (name == "Adagrad") return std::make_unique<Adagrad>(std::move(groups), static_cast<const AdagradOptions&>(o));
  if (name == "Adadelta")
    return std::make_unique<Adadelta>(std::move(groups), static_cast<const AdadeltaOptions&>(o));
  if (name == "Adamax") return std::make_unique<Adamax>(std::move(groups), static_cast<const AdamaxOptions&>(o));
  if (name == "NAdam") return std::make_unique<NAdam>(std::move(groups), static_cast<const NAdamOptions&>(o));
  if (name == "RAdam") return std::make_unique<RAdam>(std::move(groups), static_cast<const RAdamOptions&>(o));
  if (name == "Lion") return std::make_unique<Lion>(std::move(groups), static_cast<const LionOptions&>(o));
  if (name == "Rprop") return std::make_unique<Rprop>(std::move(groups), static_cast<const RpropOptions&>(o));
  if (name == "ASGD") return std::make_unique<ASGD>(std::move(groups), static_cast<const ASGDOptions&>(o));
  EMBER_FAIL("[optim_test] unknown optimiser {}", name);
}

inline std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& name, std::vector<Tensor> params,
                                                        const OptionMap& set) {
  std::vector<optim::ParamGroup> groups;
  groups.emplace_back(std::move(params));
  return make_optimizer(name, std::move(groups), *make_options(name, set));
}

/// A tensor's values as doubles (row-major).
inline std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  const double* p = h.data_ptr<double>();
  return std::vector<double>(p, p + h.numel());
}

/// Whether two tensors hold the same bytes (same dtype and shape).
inline bool bit_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor x = a.detach().contiguous(), y = b.detach().contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.nbytes())) == 0;
}

using ::ember_test::error_of;
using ::ember_test::has;

}  // namespace ember::optim_test
