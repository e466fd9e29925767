// Golden tests against PyTorch: tests/data/optim/optimizers.txt holds, per case, an
// optimiser with its options (and a second parameter group with other options in some
// cases), initial parameters, the gradient of every step (some missing) and the parameters
// PyTorch computed after each step; schedulers.txt holds learning-rate sequences. Both are
// written by tools/gen_optim_golden.py (run by hand with python3-torch; never by the build).
// Here Ember replays each case and must agree to 1e-12 (f64) or 2e-6 (f32) relative.

#include <doctest/doctest.h>

#include "support.hpp"

#include <ember/optim/swa_utils.hpp>
#include "../support/golden_reader.hpp"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>
#include <utility>

#ifndef EMBER_TEST_DATA_DIR
#define EMBER_TEST_DATA_DIR "tests/data"
#endif

namespace test_optim_golden {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using optim_test::OptionMap;

namespace {

// ---- reading the fixtures -----------------------------------------------------------------------

/// Reads "k=v" tokens to the end of the line; false (with `why`) when one is malformed.
bool parse_options(std::istringstream& ls, OptionMap& out, std::string& why) {
  std::string tok;
  while (ls >> tok) {
    size_t eq = tok.find('=');
    if (eq == std::string::npos) return why = "expected key=value, got '" + tok + "'", false;
    char* end = nullptr;
    double v = std::strtod(tok.c_str() + eq + 1, &end);
    if (*end != '\0') return why = "bad number in '" + tok + "'", false;
    out[tok.substr(0, eq)] = v;
  }
  return true;
}

/// Reads ": v v v ..." to the end of the line; false (with `why`) when malformed.
bool parse_numbers(std::istringstream& ls, std::vector<double>& out, std::string& why) {
  std::string colon, tok;
  if (!(ls >> colon) || colon != ":") return why = "expected ':'", false;
  while (ls >> tok) {
    char* end = nullptr;
    double x = std::strtod(tok.c_str(), &end);
    if (end != tok.c_str() + tok.size()) return why = "bad number '" + tok + "'", false;
    out.push_back(x);
  }
  return true;
}

struct OptCase {
  std::string name, optimizer, dtype;
  OptionMap defaults;
  struct Group {
    int first = 0, count = 0;
    OptionMap options;
  };
  std::vector<Group> groups;
  std::vector<Shape> shapes;
  std::vector<std::vector<double>> init;
  int steps = 0;
  // [step - 1][param]: gradient (absent = none) and the value after the step
  std::vector<std::map<int, std::vector<double>>> grads, values;
  // [step - 1][(param, buffer name)]: a state buffer after the step (state records)
  std::vector<std::map<std::pair<int, std::string>, std::vector<double>>> states;
};

template <class Case>
struct Fixture {
  std::vector<Case> cases;
  std::string error;
};

bool grow(std::vector<std::map<int, std::vector<double>>>& v, int step) {
  if (step < 1 || step > 1000) return false;
  if (static_cast<int>(v.size()) < step) v.resize(step);
  return true;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t i = 0; i < s.ndim(); ++i) n *= s[i];
  return n;
}

/// The closing "total N" record of both optimiser fixtures: N must be the number of cases read
/// (a truncated file must not pass as a smaller one).
std::string read_total(std::istringstream& ls, size_t cases, bool& total) {
  size_t n = 0;
  if (!(ls >> n) || n != cases) return "'total' does not match the cases read";
  total = true;
  return "";
}

Fixture<OptCase> load_optimizers(const std::string& path) {
  Fixture<OptCase> fx;
  std::string why;
  bool total = false;
  OptCase* cur = nullptr;
  auto record = [&](const std::string& key, std::istringstream& ls, int) -> std::string {
    if (total) {
      return "text after the 'total' line";
    } else if (key == "case") {
      if (cur) return "'case' inside a case";
      cur = &fx.cases.emplace_back();
      if (!(ls >> cur->name)) return "case without a name";
    } else if (!cur && key != "total") {
      return "'" + key + "' outside a case";
    } else if (key == "optimizer") {
      if (!(ls >> cur->optimizer >> cur->dtype) || (cur->dtype != "f64" && cur->dtype != "f32"))
        return "bad 'optimizer' line";
    } else if (key == "defaults") {
      if (!parse_options(ls, cur->defaults, why)) return why;
    } else if (key == "group") {
      OptCase::Group g;
      if (!(ls >> g.first >> g.count)) return "bad 'group' line";
      if (!parse_options(ls, g.options, why)) return why;
      cur->groups.push_back(g);
    } else if (key == "param") {
      int i = -1, ndim = -1;
      if (!(ls >> i >> ndim) || i != static_cast<int>(cur->shapes.size()) || ndim < 0) return "bad 'param' line";
      Shape s;
      for (int d = 0; d < ndim; ++d) {
        int64_t n = -1;
        if (!(ls >> n) || n < 0) return "bad dims";
        s.push_back(n);
      }
      std::vector<double> v;
      if (!parse_numbers(ls, v, why)) return why;
      if (static_cast<int64_t>(v.size()) != numel_of(s)) return "value count does not match the dims";
      cur->shapes.push_back(s);
      cur->init.push_back(std::move(v));
    } else if (key == "grad" || key == "value") {
      int step = 0, i = -1;
      if (!(ls >> step >> i) || i < 0 || i >= static_cast<int>(cur->shapes.size())) return "bad record";
      auto& dst = key == "grad" ? cur->grads : cur->values;
      if (!grow(dst, step)) return "bad step";
      cur->steps = std::max(cur->steps, step);
      std::string rest;
      std::streampos pos = ls.tellg();
      if (key == "grad" && (ls >> rest) && rest == "none") return "";
      ls.clear();
      ls.seekg(pos);
      std::vector<double> v;
      if (!parse_numbers(ls, v, why)) return why;
      if (static_cast<int64_t>(v.size()) != numel_of(cur->shapes[i])) return "value count does not match";
      dst[step - 1][i] = std::move(v);
    } else if (key == "state") {
      int step = 0, i = -1;
      std::string buffer;
      if (!(ls >> step >> i >> buffer) || i < 0 || i >= static_cast<int>(cur->shapes.size()) || step < 1 ||
          step > 1000)
        return "bad 'state' record";
      if (static_cast<int>(cur->states.size()) < step) cur->states.resize(step);
      std::vector<double> v;
      if (!parse_numbers(ls, v, why)) return why;
      if (static_cast<int64_t>(v.size()) != numel_of(cur->shapes[i])) return "value count does not match";
      cur->states[step - 1][{i, buffer}] = std::move(v);
    } else if (key == "end") {
      int covered = 0;
      for (const auto& g : cur->groups) covered += g.count;
      if (cur->optimizer.empty() || cur->shapes.empty() || covered != static_cast<int>(cur->shapes.size()) ||
          static_cast<int>(cur->values.size()) != cur->steps)
        return "case " + cur->name + " is incomplete";
      cur = nullptr;
    } else if (key == "total") {
      return read_total(ls, fx.cases.size(), total);
    } else {
      return "unknown record '" + key + "'";
    }
    return "";
  };
  fx.error = test::read_golden(path, "ember-optim-golden", 1, record, [&] { return total ? "" : std::string("no 'total' line: the file is truncated"); });
  return fx;
}

struct SchedCase {
  std::string name, optimizer;
  OptionMap options;
  std::vector<double> group_lrs;
  std::map<int, std::vector<double>> lr, momentum;
  std::map<int, double> metric;
};

Fixture<SchedCase> load_schedulers(const std::string& path) {
  Fixture<SchedCase> fx;
  std::string why;
  bool total = false;
  SchedCase* cur = nullptr;
  auto record = [&](const std::string& key, std::istringstream& ls, int) -> std::string {
    if (total) {
      return "text after the 'total' line";
    } else if (key == "case") {
      if (cur) return "'case' inside a case";
      cur = &fx.cases.emplace_back();
      if (!(ls >> cur->name)) return "case without a name";
    } else if (!cur && key != "total") {
      return "'" + key + "' outside a case";
    } else if (key == "optimizer") {
      if (!(ls >> cur->optimizer)) return "bad 'optimizer' line";
      if (!parse_options(ls, cur->options, why)) return why;
    } else if (key == "group_lrs") {
      std::string tok;
      while (ls >> tok) cur->group_lrs.push_back(std::strtod(tok.c_str(), nullptr));
    } else if (key == "lr" || key == "momentum" || key == "metric") {
      int step = -1;
      std::vector<double> v;
      if (!(ls >> step) || step < 0) return "bad '" + key + "' line";
      if (!parse_numbers(ls, v, why)) return why;
      if (key == "metric") {
        if (v.size() != 1) return "a metric is one number";
        cur->metric[step] = v[0];
      } else {
        if (v.size() != cur->group_lrs.size()) return "one value per group expected";
        (key == "lr" ? cur->lr : cur->momentum)[step] = std::move(v);
      }
    } else if (key == "end") {
      if (cur->optimizer.empty() || cur->group_lrs.empty() || cur->lr.size() < 2)
        return "case " + cur->name + " is incomplete";
      cur = nullptr;
    } else if (key == "total") {
      return read_total(ls, fx.cases.size(), total);
    } else {
      return "unknown record '" + key + "'";
    }
    return "";
  };
  fx.error = test::read_golden(path, "ember-sched-golden", 1, record, [&] { return total ? "" : std::string("no 'total' line: the file is truncated"); });
  return fx;
}

const Fixture<OptCase>& optimizer_fixture() {
  static const Fixture<OptCase> fx = load_optimizers(std::string(EMBER_TEST_DATA_DIR) + "/optim/optimizers.txt");
  return fx;
}
const Fixture<SchedCase>& scheduler_fixture() {
  static const Fixture<SchedCase> fx = load_schedulers(std::string(EMBER_TEST_DATA_DIR) + "/optim/schedulers.txt");
  return fx;
}

Tensor tensor_of(const std::vector<double>& v, const Shape& s, DType dt) {
  Tensor t = empty(s, TensorOptions(DType::F64));
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t.to(dt);
}

/// "" when every element is within atol + rtol |expected|; else the first difference.
std::string compare(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol,
                    double& worst_rel) {
  std::string first;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(got[i] - want[i]);
    worst_rel = std::max(worst_rel, err / std::max(std::abs(want[i]), 1e-300));
    if (!(err <= atol + rtol * std::abs(want[i])) && first.empty())
      first = fmt::format("element {}: ember {:.17g}, torch {:.17g}", i, got[i], want[i]);
  }
  return first;
}

}  // namespace

TEST_CASE("optim golden: the fixtures are complete and cover every optimiser and option") {
  const auto& fx = optimizer_fixture();
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  std::set<std::string> seen, grouped;
  std::map<std::string, std::set<std::string>> flags;  // optimiser -> flags turned on in some case
  bool missing_grad = false;
  for (const OptCase& c : fx.cases) {
    seen.insert(c.optimizer);
    if (c.groups.size() > 1) grouped.insert(c.optimizer);
    std::vector<const OptionMap*> sets = {&c.defaults};
    for (const auto& g : c.groups) sets.push_back(&g.options);
    for (const OptionMap* o : sets)
      for (const auto& [k, v] : *o)
        if (v == 1 && (k == "nesterov" || k == "amsgrad" || k == "maximize" || k == "centered" ||
                       k == "decoupled_weight_decay"))
          flags[c.optimizer].insert(k);
    for (const auto& step : c.grads) missing_grad |= step.size() < c.shapes.size();
  }
  CHECK(missing_grad);
  for (const std::string& name : optim_test::optimizer_names()) {
    CHECK_MESSAGE(seen.count(name), "no golden case for ", name);
    CHECK_MESSAGE(grouped.count(name), "no two-group golden case for ", name);
    CHECK_MESSAGE(flags[name].count("maximize"), "no maximize case for ", name);
  }
  CHECK(flags["SGD"].count("nesterov"));
  CHECK(flags["Adam"].count("amsgrad"));
  CHECK(flags["AdamW"].count("amsgrad"));
  CHECK(flags["RMSprop"].count("centered"));
  CHECK(flags["NAdam"].count("decoupled_weight_decay"));
  CHECK(flags["RAdam"].count("decoupled_weight_decay"));
  // ASGD's average never reaches the parameters: its cases must record it.
  for (const OptCase& c : fx.cases) {
    CAPTURE(c.name);
    if (c.optimizer == "ASGD") CHECK(c.states.size() == static_cast<size_t>(c.steps));
  }
}

TEST_CASE("optim golden: every optimiser case matches PyTorch step by step") {
  const auto& fx = optimizer_fixture();
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  double worst64 = 0, worst32 = 0;
  for (const OptCase& c : fx.cases) {
    CAPTURE(c.name);
    const DType dt = c.dtype == "f32" ? DType::F32 : DType::F64;
    const double rtol = dt == DType::F64 ? 1e-12 : 2e-6, atol = dt == DType::F64 ? 1e-14 : 1e-6;
    std::vector<Tensor> params;
    for (size_t i = 0; i < c.shapes.size(); ++i)
      params.push_back(tensor_of(c.init[i], c.shapes[i], dt).requires_grad_());
    std::vector<optim::ParamGroup> groups;
    for (const OptCase::Group& g : c.groups) {
      OptionMap o = c.defaults;
      for (const auto& [k, v] : g.options) o[k] = v;
      std::vector<Tensor> ps(params.begin() + g.first, params.begin() + g.first + g.count);
      groups.emplace_back(std::move(ps), optim_test::make_options(c.optimizer, o));
    }
    auto opt =
        optim_test::make_optimizer(c.optimizer, std::move(groups), *optim_test::make_options(c.optimizer, c.defaults));
    for (int s = 1; s <= c.steps; ++s) {
      for (size_t i = 0; i < params.size(); ++i) {
        auto g = c.grads[s - 1].find(static_cast<int>(i));
        params[i].set_grad(g == c.grads[s - 1].end() ? Tensor() : tensor_of(g->second, c.shapes[i], dt));
      }
      opt->step();
      for (size_t i = 0; i < params.size(); ++i) {
        CAPTURE(s);
        CAPTURE(i);
        std::string diff = compare(optim_test::values_of(params[i]), c.values[s - 1].at(static_cast<int>(i)), rtol,
                                   atol, dt == DType::F64 ? worst64 : worst32);
        CHECK_MESSAGE(diff.empty(), c.name, " step ", s, " param ", i, ": ", diff);
      }
      if (static_cast<int>(c.states.size()) < s) continue;
      const optim::Optimizer::StateNames names = opt->state_names();
      for (const auto& [key, want] : c.states[s - 1]) {
        // Named copies, not a structured binding: clang before 16 cannot capture one in a lambda
        // (CAPTURE and the MESSAGE macros make lambdas).
        const auto i = key.first;
        const auto& buffer = key.second;
        CAPTURE(s);
        CAPTURE(buffer);
        const optim::ParamState* st = opt->state(params[static_cast<size_t>(i)]);
        REQUIRE(st != nullptr);
        int slot = -1;
        for (int b = 0; b < 3; ++b)
          if (names.buffers[b] && buffer == names.buffers[b]) slot = b;
        REQUIRE_MESSAGE(slot >= 0, c.optimizer, " has no state buffer ", buffer);
        std::string diff = compare(optim_test::values_of(st->buffers[slot]), want, rtol, atol,
                                   dt == DType::F64 ? worst64 : worst32);
        CHECK_MESSAGE(diff.empty(), c.name, " step ", s, " param ", i, " ", buffer, ": ", diff);
      }
    }
  }
  MESSAGE("largest relative difference from PyTorch: f64 ", worst64, ", f32 ", worst32);
}

// ---- schedulers ---------------------------------------------------------------------------------

namespace {

/// A scheduler under test: step(metric) (the metric for ReduceLROnPlateau; the epoch for
/// CosineAnnealingWarmRestarts' fractional steps).
struct Runner {
  std::shared_ptr<void> keep;
  std::function<void(double)> step;
  std::function<std::vector<double>()> last_lr;
};

template <class S>
Runner runner(std::shared_ptr<S> s) {
  return {s, [s](double) { s->step(); }, [s] { return s->get_last_lr(); }};
}

// The schedulers of tools/gen_optim_golden.py's SCHED_CASES, by case name.
std::function<Runner(optim::Optimizer&)> make_scheduler(const std::string& name) {
  using namespace optim;
  using O = Optimizer&;
  static const std::map<std::string, std::function<Runner(O)>> m = {
      {"step_lr", [](O o) { return runner(std::make_shared<StepLR>(o, 7, 0.5)); }},
      {"multistep_lr",
       [](O o) {
         return runner(std::make_shared<MultiStepLR>(o, std::vector<int64_t>{5, 12, 12, 30}, 0.3));
       }},
      {"constant_lr", [](O o) { return runner(std::make_shared<ConstantLR>(o, 0.5, 8)); }},
      {"linear_lr_warmup", [](O o) { return runner(std::make_shared<LinearLR>(o, 0.25, 1.0, 10)); }},
      {"linear_lr_decay", [](O o) { return runner(std::make_shared<LinearLR>(o, 1.0, 0.1, 15)); }},
      {"exponential_lr", [](O o) { return runner(std::make_shared<ExponentialLR>(o, 0.93)); }},
      {"cosine_lr", [](O o) { return runner(std::make_shared<CosineAnnealingLR>(o, 10, 0.001)); }},
      {"cosine_lr_zero_min", [](O o) { return runner(std::make_shared<CosineAnnealingLR>(o, 25)); }},
      {"warm_restarts_tmult2",
       [](O o) { return runner(std::make_shared<CosineAnnealingWarmRestarts>(o, 5, 2, 1e-4)); }},
      {"warm_restarts_tmult1", [](O o) { return runner(std::make_shared<CosineAnnealingWarmRestarts>(o, 7)); }},
      {"polynomial_lr", [](O o) { return runner(std::make_shared<PolynomialLR>(o, 20, 2.0)); }},
      {"polynomial_lr_default", [](O o) { return runner(std::make_shared<PolynomialLR>(o)); }},
      {"lambda_lr",
       [](O o) {
         std::vector<LambdaLR::Lambda> f = {[](int64_t e) { return std::pow(0.95, static_cast<double>(e)); },
                                            [](int64_t e) { return 1.0 / static_cast<double>(e + 1); }};
         return runner(std::make_shared<LambdaLR>(o, f));
       }},
      {"multiplicative_lr",
       [](O o) {
         std::vector<MultiplicativeLR::Lambda> f = {[](int64_t) { return 0.95; },
                                                    [](int64_t e) { return 1.0 - 0.01 * static_cast<double>(e); }};
         return runner(std::make_shared<MultiplicativeLR>(o, f));
       }},
      {"chained_warmup_decay",
       [](O o) {
         std::vector<std::shared_ptr<LRScheduler>> s = {std::make_shared<ConstantLR>(o, 0.2, 6),
                                                        std::make_shared<ExponentialLR>(o, 0.9),
                                                        std::make_shared<StepLR>(o, 7, 0.5)};
         return runner(std::make_shared<ChainedScheduler>(o, s));
       }},
      {"one_cycle_cos",
       [](O o) {
         return runner(std::make_shared<OneCycleLR>(o, OneCycleLROptions({0.5, 0.2}, 50)));
       }},
      {"one_cycle_linear_three_phase_adam",
       [](O o) {
         return runner(std::make_shared<OneCycleLR>(o, OneCycleLROptions(0.01, 40)
                                                           .pct_start(0.25)
                                                           .anneal_strategy(AnnealStrategy::Linear)
                                                           .three_phase(true)
                                                           .div_factor(10.0)
                                                           .final_div_factor(100.0)));
       }},
      {"cyclic_triangular",
       [](O o) {
         return runner(std::make_shared<CyclicLR>(o, CyclicLROptions(0.01, {0.1, 0.05}).step_size_up(5)));
       }},
      {"cyclic_triangular2",
       [](O o) {
         return runner(std::make_shared<CyclicLR>(o, CyclicLROptions(0.01, 0.1)
                                                         .step_size_up(4)
                                                         .step_size_down(6)
                                                         .mode(CyclicMode::Triangular2)
                                                         .base_momentum(0.7)
                                                         .max_momentum(0.95)));
       }},
      {"cyclic_exp_range_no_momentum",
       [](O o) {
         return runner(std::make_shared<CyclicLR>(
             o,
             CyclicLROptions(0.01, 0.1).step_size_up(3).mode(CyclicMode::ExpRange).gamma(0.97).cycle_momentum(false)));
       }},
      {"sequential_linear_cosine",
       [](O o) {
         std::vector<std::shared_ptr<LRScheduler>> s = {std::make_shared<LinearLR>(o, 0.1, 1.0, 5),
                                                        std::make_shared<CosineAnnealingLR>(o, 20)};
         return runner(std::make_shared<SequentialLR>(o, s, std::vector<int64_t>{5}));
       }},
      {"sequential_three",
       [](O o) {
         std::vector<std::shared_ptr<LRScheduler>> s = {std::make_shared<ConstantLR>(o, 0.5, 4),
                                                        std::make_shared<ExponentialLR>(o, 0.9),
                                                        std::make_shared<StepLR>(o, 3, 0.5)};
         return runner(std::make_shared<SequentialLR>(o, s, std::vector<int64_t>{4, 12}));
       }},
      {"sequential_warm_restarts",
       [](O o) {
         std::vector<std::shared_ptr<LRScheduler>> s = {std::make_shared<ExponentialLR>(o, 0.8),
                                                        std::make_shared<CosineAnnealingWarmRestarts>(o, 6, 2)};
         return runner(std::make_shared<SequentialLR>(o, s, std::vector<int64_t>{4}));
       }},
      // step(epoch) with fractional epochs: the fixture's metric records are the epochs.
      {"warm_restarts_fractional",
       [](O o) {
         auto s = std::make_shared<CosineAnnealingWarmRestarts>(o, 3, 2, 0.001);
         return Runner{s, [s](double e) { s->step(e); }, [s] { return s->get_last_lr(); }};
       }},
      {"warm_restarts_fractional_tmult1",
       [](O o) {
         auto s = std::make_shared<CosineAnnealingWarmRestarts>(o, 2);
         return Runner{s, [s](double e) { s->step(e); }, [s] { return s->get_last_lr(); }};
       }},
      {"swalr_cos",
       [](O o) { return runner(std::make_shared<SWALR>(o, PerGroup{0.01, 0.2}, 6)); }},
      {"swalr_linear",
       [](O o) { return runner(std::make_shared<SWALR>(o, 0.02, 4, AnnealStrategy::Linear)); }},
      {"swalr_no_annealing", [](O o) { return runner(std::make_shared<SWALR>(o, 0.03, 0)); }},
      {"plateau_min_rel",
       [](O o) {
         auto s = std::make_shared<ReduceLROnPlateau>(
             o, ReduceLROnPlateauOptions().factor(0.5).patience(2).cooldown(1).min_lr({0.01, 0.001}));
         return Runner{s, [s](double m) { s->step(m); }, [s] { return s->get_last_lr(); }};
       }},
      {"plateau_max_abs",
       [](O o) {
         auto s = std::make_shared<ReduceLROnPlateau>(o, ReduceLROnPlateauOptions()
                                                             .mode(PlateauMode::Max)
                                                             .threshold_mode(ThresholdMode::Abs)
                                                             .threshold(0.05)
                                                             .patience(3)
                                                             .factor(0.3));
         return Runner{s, [s](double m) { s->step(m); }, [s] { return s->get_last_lr(); }};
       }},
  };
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

}  // namespace

TEST_CASE("optim golden: every scheduler's learning rates (and momenta) match PyTorch's") {
  const auto& fx = scheduler_fixture();
  REQUIRE_MESSAGE(fx.error.empty(), fx.error);
  std::set<std::string> kinds;
  int exact = 0, total = 0;
  for (const SchedCase& c : fx.cases) {
    CAPTURE(c.name);
    auto make = make_scheduler(c.name);
    REQUIRE_MESSAGE(make, "no scheduler for golden case ", c.name);
    std::vector<optim::ParamGroup> groups;
    std::vector<Tensor> keep;
    for (double lr : c.group_lrs) {
      keep.push_back(zeros({1}, TensorOptions(DType::F64)).requires_grad_());
      OptionMap o = c.options;
      o["lr"] = lr;
      groups.emplace_back(std::vector<Tensor>{keep.back()}, optim_test::make_options(c.optimizer, o));
    }
    OptionMap d = c.options;
    d["lr"] = c.group_lrs[0];
    auto opt = optim_test::make_optimizer(c.optimizer, std::move(groups), *optim_test::make_options(c.optimizer, d));
    Runner r = make(*opt);
    const char* momentum = c.optimizer == "Adam" ? "beta1" : "momentum";
    for (const auto& entry : c.lr) {
      const auto& step = std::get<0>(entry);
      const auto& want = std::get<1>(entry);
      if (step > 0) r.step(c.metric.count(step) ? c.metric.at(step) : 0.0);
      std::vector<double> got = r.last_lr();
      REQUIRE(got.size() == want.size());
      for (size_t g = 0; g < want.size(); ++g) {
        CAPTURE(step);
        CAPTURE(g);
        ++total;
        exact += got[g] == want[g];
        CHECK(got[g] == doctest::Approx(want[g]).epsilon(1e-12));
        CHECK(opt->param_groups()[g].options().get_lr() == got[g]);
        auto m = c.momentum.find(step);
        if (m != c.momentum.end())
          CHECK(opt->param_groups()[g].options().get(momentum) == doctest::Approx(m->second[g]).epsilon(1e-12));
      }
    }
    kinds.insert(c.name.substr(0, c.name.find('_')));
  }
  MESSAGE(exact, " of ", total, " learning rates equal PyTorch's bit for bit");
  for (const char* k : {"step", "multistep", "constant", "linear", "exponential", "cosine", "warm", "polynomial",
                        "lambda", "one", "cyclic", "sequential", "plateau"})
    CHECK_MESSAGE(kinds.count(k), "no golden case for ", k);
}

}  // namespace test_optim_golden
