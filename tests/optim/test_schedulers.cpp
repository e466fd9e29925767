// LR schedulers beyond the golden sequences: state dicts (stop, save optimiser and scheduler,
// load both into fresh objects, continue: the same learning rates), shared initial_lr,
// resuming with last_epoch, and error messages.

#include <doctest/doctest.h>

#include "support.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <type_traits>

namespace test_schedulers {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

using optim_test::error_of;
using optim_test::has;


/// An SGD optimiser with momentum over two one-element groups (lr 0.1 and 0.05).
struct Setup {
  Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  optim::SGD opt{{optim::ParamGroup({a}), optim::ParamGroup({b}, optim::SGDOptions(0.05).momentum(0.9))},
                 optim::SGDOptions(0.1).momentum(0.9)};
};

using Make = std::function<std::shared_ptr<optim::LRScheduler>(optim::Optimizer&)>;

}  // namespace

TEST_CASE("schedulers: save optimiser and scheduler, load into fresh ones, continue: the same learning rates") {
  using namespace optim;
  const std::vector<std::pair<std::string, Make>> makers = {
      {"StepLR", [](Optimizer& o) { return std::make_shared<StepLR>(o, 3, 0.5); }},
      {"MultiStepLR", [](Optimizer& o) { return std::make_shared<MultiStepLR>(o, std::vector<int64_t>{2, 9}, 0.5); }},
      {"ConstantLR", [](Optimizer& o) { return std::make_shared<ConstantLR>(o, 0.5, 9); }},
      {"LinearLR", [](Optimizer& o) { return std::make_shared<LinearLR>(o, 0.2, 1.0, 12); }},
      {"ExponentialLR", [](Optimizer& o) { return std::make_shared<ExponentialLR>(o, 0.9); }},
      {"CosineAnnealingLR", [](Optimizer& o) { return std::make_shared<CosineAnnealingLR>(o, 7, 0.01); }},
      {"CosineAnnealingWarmRestarts",
       [](Optimizer& o) { return std::make_shared<CosineAnnealingWarmRestarts>(o, 3, 2, 0.001); }},
      {"PolynomialLR", [](Optimizer& o) { return std::make_shared<PolynomialLR>(o, 14, 1.5); }},
      {"LambdaLR", [](Optimizer& o) { return std::make_shared<LambdaLR>(o, [](int64_t e) { return 1.0 / (1 + e); }); }},
      {"OneCycleLR", [](Optimizer& o) { return std::make_shared<OneCycleLR>(o, OneCycleLROptions({1.0, 0.5}, 20)); }},
      {"CyclicLR",
       [](Optimizer& o) { return std::make_shared<CyclicLR>(o, CyclicLROptions(0.01, 0.1).step_size_up(3)); }},
      {"SequentialLR",
       [](Optimizer& o) {
         std::vector<std::shared_ptr<LRScheduler>> s = {std::make_shared<LinearLR>(o, 0.5, 1.0, 4),
                                                        std::make_shared<CosineAnnealingWarmRestarts>(o, 4)};
         return std::make_shared<SequentialLR>(o, s, std::vector<int64_t>{6});
       }},
      {"MultiplicativeLR",
       [](Optimizer& o) { return std::make_shared<MultiplicativeLR>(o, [](int64_t e) { return 1.0 - 0.02 * e; }); }},
      {"ChainedScheduler",
       [](Optimizer& o) {
         std::vector<std::shared_ptr<LRScheduler>> s = {std::make_shared<LinearLR>(o, 0.5, 1.0, 5),
                                                        std::make_shared<CosineAnnealingLR>(o, 9)};
         return std::make_shared<ChainedScheduler>(o, s);
       }},
  };
  for (const auto& maker : makers) {
    const auto& name = std::get<0>(maker);
    const auto& make = std::get<1>(maker);
    CAPTURE(name);
    Setup x;
    auto sx = make(x.opt);
    CHECK(std::string(sx->name()) == name);
    for (int s = 0; s < 8; ++s) sx->step();
    const StateDict od = x.opt.state_dict();
    const SchedulerState ss = sx->state_dict();

    Setup y;
    auto sy = make(y.opt);
    y.opt.load_state_dict(od);  // restores the groups' lr, momentum and initial_lr
    sy->load_state_dict(ss);
    CHECK(sy->last_epoch() == sx->last_epoch());
    CHECK(sy->get_last_lr() == sx->get_last_lr());
    for (int s = 0; s < 11; ++s) {
      sx->step();
      sy->step();
      CHECK(sy->get_last_lr() == sx->get_last_lr());
      for (size_t g = 0; g < 2; ++g) {
        CHECK(y.opt.param_groups()[g].options().get_lr() == x.opt.param_groups()[g].options().get_lr());
        CHECK(y.opt.param_groups()[g].options().get("momentum") == x.opt.param_groups()[g].options().get("momentum"));
      }
    }
  }
}

TEST_CASE("schedulers: ReduceLROnPlateau state round trip and accessors") {
  using namespace optim;
  Setup x, y;
  ReduceLROnPlateau px(x.opt, ReduceLROnPlateauOptions().patience(1).factor(0.5));
  ReduceLROnPlateau py(y.opt, ReduceLROnPlateauOptions().patience(1).factor(0.5));
  CHECK(px.get_last_lr() == std::vector<double>{0.1, 0.05});
  const std::vector<double> metrics = {3, 2, 2, 2, 2, 1.5, 1.5, 1.5, 1.5, 1.5};
  for (int i = 0; i < 4; ++i) px.step(metrics[i]);
  CHECK(px.best() == 2);
  CHECK(px.num_bad_epochs() == 0);  // the reduction at epoch 4 reset it
  CHECK(px.get_last_lr() == std::vector<double>{0.05, 0.025});
  y.opt.load_state_dict(x.opt.state_dict());
  py.load_state_dict(px.state_dict());
  CHECK(py.last_epoch() == 4);
  for (size_t i = 4; i < metrics.size(); ++i) {
    px.step(metrics[i]);
    py.step(metrics[i]);
    CHECK(py.get_last_lr() == px.get_last_lr());
  }
  CHECK(px.get_last_lr()[0] < 0.05);
}

TEST_CASE("schedulers: the first scheduler records initial_lr, later ones share it") {
  using namespace optim;
  Setup x;
  LinearLR warm(x.opt, 0.5, 1.0, 4);
  CHECK(x.opt.param_groups()[0].initial_lr == 0.1);
  CHECK(x.opt.param_groups()[0].options().get_lr() == 0.05);
  // A second scheduler starts from the recorded initial_lr, not the warmed-up rate.
  ExponentialLR decay(x.opt, 0.5);
  CHECK(decay.get_last_lr()[0] == 0.05);  // epoch 0 leaves the current rate
  decay.step();
  CHECK(x.opt.param_groups()[0].options().get_lr() == 0.025);
  // initial_lr travels with the optimiser's state dict.
  CHECK(x.opt.state_dict().param_groups[1].options.at("initial_lr") == 0.05);
  // Resuming at a later epoch needs it: a fresh optimiser has none.
  Setup fresh;
  CHECK_ERROR(StepLR(fresh.opt, 3, 0.5, 5), "[StepLR]", "initial_lr", "last_epoch = 5");
  // With it, the resumed scheduler continues where a running one would be.
  fresh.opt.load_state_dict(x.opt.state_dict());
  StepLR resumed(fresh.opt, 3, 0.5, 5);
  CHECK(resumed.last_epoch() == 6);
}

TEST_CASE("schedulers: get_last_lr is what the groups hold, one per group") {
  using namespace optim;
  Setup x;
  CosineAnnealingLR s(x.opt, 10);
  for (int i = 0; i < 5; ++i) {
    s.step();
    REQUIRE(s.get_last_lr().size() == 2);
    CHECK(s.get_last_lr()[0] == x.opt.param_groups()[0].options().get_lr());
    CHECK(s.get_last_lr()[1] == x.opt.param_groups()[1].options().get_lr());
  }
  // The closed form at epoch 5 of 10: halfway, (0.1 + 0) / 2.
  CHECK(s.get_last_lr()[0] == doctest::Approx(0.05).epsilon(1e-15));
}

TEST_CASE("schedulers errors: arguments and states that do not fit name the scheduler and value") {
  using namespace optim;
  Setup x;
  CHECK_ERROR(StepLR(x.opt, 0), "[StepLR]", "step_size", "0");
  CHECK_ERROR(ConstantLR(x.opt, 1.5), "[ConstantLR]", "factor", "1.5");
  CHECK_ERROR(LinearLR(x.opt, 0.0), "[LinearLR]", "start_factor", "0");
  CHECK_ERROR(LinearLR(x.opt, 0.5, 2.0), "[LinearLR]", "end_factor", "2");
  CHECK_ERROR(CosineAnnealingLR(x.opt, 0), "[CosineAnnealingLR]", "T_max", "0");
  CHECK_ERROR(CosineAnnealingWarmRestarts(x.opt, 0), "[CosineAnnealingWarmRestarts]", "T_0", "0");
  CHECK_ERROR(CosineAnnealingWarmRestarts(x.opt, 5, 0), "[CosineAnnealingWarmRestarts]", "T_mult", "0");
  {
    CosineAnnealingWarmRestarts warm(x.opt, 5);
    warm.step(7.75);
    CHECK(warm.last_epoch() == 7);
    const std::vector<double> before = warm.get_last_lr();
    CHECK_ERROR(warm.step(-0.5), "[CosineAnnealingWarmRestarts]", "non-negative epoch", "-0.5");
    CHECK_ERROR(warm.step(std::nan("")), "[CosineAnnealingWarmRestarts]", "non-negative epoch", "nan");
    CHECK(warm.get_last_lr() == before);
    CHECK(warm.last_epoch() == 7);
  }
  CHECK_ERROR(PolynomialLR(x.opt, 0), "[PolynomialLR]", "total_iters", "0");
  CHECK_ERROR(StepLR(x.opt, 3, 0.1, -2), "[StepLR]", "last_epoch", "-2");
  CHECK_ERROR(LambdaLR(x.opt, std::vector<LambdaLR::Lambda>{[](int64_t) { return 1.0; }}), "[LambdaLR]", "2 lr_lambdas",
              "got 1");
  CHECK_ERROR(OneCycleLR(x.opt, OneCycleLROptions({0.1, 0.2, 0.3}, 10)), "[OneCycleLR]", "max_lr", "list of 3");
  CHECK_ERROR(OneCycleLR(x.opt, OneCycleLROptions(0.1, 0)), "[OneCycleLR]", "total_steps", "0");
  CHECK_ERROR(OneCycleLR(x.opt, OneCycleLROptions(0.1, 10).pct_start(1.5)), "[OneCycleLR]", "pct_start", "1.5");
  CHECK_ERROR(CyclicLR(x.opt, CyclicLROptions(0.1, 1.0).step_size_up(0)), "[CyclicLR]", "step_size_up", "0");
  CHECK_ERROR(ReduceLROnPlateau(x.opt, ReduceLROnPlateauOptions().factor(1.0)), "[ReduceLROnPlateau]", "factor", "1");
  CHECK_ERROR(ReduceLROnPlateau(x.opt, ReduceLROnPlateauOptions().min_lr({0.1, 0.2, 0.3})), "[ReduceLROnPlateau]",
              "min_lr", "list of 3");
  // A list of one is a list (PyTorch: ValueError), not one number for every group.
  CHECK_ERROR(ReduceLROnPlateau(x.opt, ReduceLROnPlateauOptions().min_lr({0.01})), "[ReduceLROnPlateau]", "min_lr",
              "list of 2 values", "list of 1");
  CHECK_ERROR(CyclicLR(x.opt, CyclicLROptions({0.01}, 0.1)), "[CyclicLR]", "base_lr", "list of 1");
  // A phase of OneCycleLR with no steps (pct_start * total_steps - 1 == 0) divides by zero
  // in PyTorch; here it is an error instead of a NaN learning rate.
  CHECK_ERROR(OneCycleLR(x.opt, OneCycleLROptions(0.1, 10).pct_start(0.1)), "[OneCycleLR]", "zero length",
              "pct_start 0.1");

  // Momentum cycling needs an optimiser with momentum or beta1.
  Tensor w = zeros({1}).requires_grad_();
  Adagrad adagrad({w});
  CHECK_ERROR(CyclicLR(adagrad, CyclicLROptions(0.01, 0.1)), "[CyclicLR]", "momentum or beta1", "Adagrad");
  CyclicLR no_momentum(adagrad, CyclicLROptions(0.01, 0.1).cycle_momentum(false));
  CHECK(no_momentum.get_last_lr()[0] == 0.01);
  // ... and cycles beta1 for the Adam family.
  Tensor v = zeros({1}).requires_grad_();
  Adam adam({v});
  CyclicLR cyc(adam, CyclicLROptions(0.01, 0.1).step_size_up(2));
  CHECK(adam.param_groups()[0].options().get("beta1") == 0.9);  // max_momentum at the start of a cycle
  cyc.step();
  CHECK(adam.param_groups()[0].options().get("beta1") == doctest::Approx(0.85));

  // Stepping OneCycleLR past its total is an error, as in PyTorch.
  Setup y;
  OneCycleLR one(y.opt, OneCycleLROptions(0.1, 3));
  for (int i = 0; i < 3; ++i) one.step();
  CHECK_ERROR(one.step(), "[OneCycleLR]", "tried to step 5 times", "total_steps is 3");
  // epochs * steps_per_epoch, PyTorch's other form, is the same schedule.
  Setup e1, e2;
  OneCycleLR by_total(e1.opt, OneCycleLROptions(0.1, 20)), by_epochs(e2.opt, OneCycleLROptions(0.1, 4, 5));
  for (int i = 0; i < 19; ++i) {
    by_total.step(), by_epochs.step();
    CHECK(by_epochs.get_last_lr() == by_total.get_last_lr());
  }
  CHECK_ERROR(OneCycleLROptions(0.1, 0, 5), "[OneCycleLR]", "must be positive, got 0 and 5");

  // SequentialLR: milestones and optimisers must fit.
  Setup z, other;
  auto s1 = std::make_shared<ExponentialLR>(z.opt, 0.9);
  auto s2 = std::make_shared<StepLR>(z.opt, 2);
  auto foreign = std::make_shared<StepLR>(other.opt, 2);
  CHECK_ERROR(SequentialLR(z.opt, {s1, s2}, std::vector<int64_t>{}), "[SequentialLR]", "2 schedulers and 0 milestones");
  CHECK_ERROR(SequentialLR(z.opt, {s1, foreign}, std::vector<int64_t>{3}), "[SequentialLR]", "scheduler 1");
  // ChainedScheduler and MultiplicativeLR: the same checks.
  CHECK_ERROR(ChainedScheduler(z.opt, {}), "[ChainedScheduler]", "at least one scheduler");
  CHECK_ERROR(ChainedScheduler(z.opt, {s1, foreign}), "[ChainedScheduler]", "scheduler 1");
  CHECK_ERROR(ChainedScheduler(z.opt, {s1}).load_state_dict(SequentialLR(z.opt, {s1, s2}, std::vector<int64_t>{3}).state_dict()),
              "[ChainedScheduler]", "saved by SequentialLR");
  CHECK_ERROR(MultiplicativeLR(z.opt, std::vector<MultiplicativeLR::Lambda>{[](int64_t) { return 1.0; }}),
              "[MultiplicativeLR]", "2 lr_lambdas");
  // A ChainedScheduler cannot restart at a SequentialLR milestone (a step to epoch 0 would
  // replace its children's product by the last child's closed form); first it may be.
  Setup c1;
  auto chained = [&](Optimizer& o) {
    return std::make_shared<ChainedScheduler>(
        o, std::vector<std::shared_ptr<LRScheduler>>{std::make_shared<ConstantLR>(o, 0.1, 4),
                                                     std::make_shared<ExponentialLR>(o, 0.9)});
  };
  CHECK_ERROR(SequentialLR(c1.opt, {std::make_shared<StepLR>(c1.opt, 2), chained(c1.opt)}, std::vector<int64_t>{3}),
              "[SequentialLR]", "scheduler 1 is a ChainedScheduler");
  auto nested = std::make_shared<SequentialLR>(
      c1.opt, std::vector<std::shared_ptr<LRScheduler>>{std::make_shared<StepLR>(c1.opt, 2)}, std::vector<int64_t>{});
  CHECK_ERROR(SequentialLR(c1.opt, {std::make_shared<StepLR>(c1.opt, 2), nested}, std::vector<int64_t>{3}),
              "[SequentialLR]", "scheduler 1 is a SequentialLR");
  Setup c2, c3;
  auto chain_alone = chained(c3.opt);
  SequentialLR seq(c2.opt, {chained(c2.opt), std::make_shared<StepLR>(c2.opt, 2)}, std::vector<int64_t>{6});
  CHECK(chain_alone->last_epoch() == 0);
  for (int i = 0; i < 5; ++i) {
    seq.step(), chain_alone->step();
    CHECK(seq.get_last_lr() == chain_alone->get_last_lr());  // the chained product, 0.1 * 0.9^t before 4
  }
  CHECK(chain_alone->last_epoch() == 5);
  // A state with a child of another kind changes no child, not even the ones before it.
  SchedulerState wrong = chain_alone->state_dict();
  wrong.children[0].values["last_epoch"] = 1;
  wrong.children[0].lists["last_lr"] = {0.5, 0.5};
  wrong.children[1].scheduler = "StepLR";
  const SchedulerState before = chain_alone->state_dict();
  CHECK_ERROR(chain_alone->load_state_dict(wrong), "[ChainedScheduler]", "scheduler 1 is ExponentialLR, the state's is StepLR");
  const SchedulerState after = chain_alone->state_dict();
  CHECK(after.children[0].values == before.children[0].values);
  CHECK(after.children[0].lists == before.children[0].lists);

  // States from another scheduler, or over other groups.
  StepLR step(z.opt, 2);
  ExponentialLR expo(z.opt, 0.5);
  CHECK_ERROR(step.load_state_dict(expo.state_dict()), "[StepLR]", "saved by ExponentialLR");
  SchedulerState st = step.state_dict();
  st.lists["base_lrs"].push_back(1.0);
  CHECK_ERROR(step.load_state_dict(st), "[StepLR]", "base_lrs", "3 values", "2 parameter groups");
  st = step.state_dict();
  st.values["last_epoch"] = 2.5;
  CHECK_ERROR(step.load_state_dict(st), "[StepLR]", "last_epoch", "whole number", "2.5");
  st = step.state_dict();
  st.values.erase("last_epoch");
  CHECK_ERROR(step.load_state_dict(st), "[StepLR]", "lacks", "last_epoch");
  // A group added after the scheduler was made.
  z.opt.add_param_group(optim::ParamGroup({zeros({1}).requires_grad_()}));
  CHECK_ERROR(step.step(), "[StepLR]", "3 parameter groups", "made for 2");
}

TEST_CASE("schedulers: resumed warm restarts, nested SequentialLR, groups added under ReduceLROnPlateau") {
  using namespace optim;
  // CosineAnnealingWarmRestarts resumed past two periods: T_cur wraps by a remainder, as
  // PyTorch's T_cur % T_i (epoch 26 with T_0 = 10 -> T_cur 6, not 16).
  for (int64_t t_mult : {1, 2}) {
    CAPTURE(t_mult);
    Setup x;
    x.opt.param_groups()[0].initial_lr = 0.1;
    x.opt.param_groups()[1].initial_lr = 0.05;
    CosineAnnealingWarmRestarts s(x.opt, 10, t_mult, 0.0, 25);
    const double t_i = 10.0 * static_cast<double>(t_mult);
    CHECK(s.get_last_lr()[0] == doctest::Approx(0.1 * (1 + std::cos(std::numbers::pi * 6 / t_i)) / 2).epsilon(1e-14));
    s.step();
    CHECK(s.get_last_lr()[0] == doctest::Approx(0.1 * (1 + std::cos(std::numbers::pi * 7 / t_i)) / 2).epsilon(1e-14));
  }

  // A SequentialLR inside a SequentialLR: the outer one takes back the first steps of the
  // leaves (PyTorch's recursive_undo), so epoch 0 is the first leaf's epoch 0.
  {
    Tensor w = zeros({1}).requires_grad_();
    SGD opt({w}, SGDOptions(1.0));
    auto a = std::make_shared<LambdaLR>(opt, [](int64_t e) { return 1.0 / (1.0 + static_cast<double>(e)); });
    auto b = std::make_shared<LambdaLR>(opt, [](int64_t e) { return 100.0 + static_cast<double>(e); });
    auto inner = std::make_shared<SequentialLR>(opt, std::vector<std::shared_ptr<LRScheduler>>{a, b},
                                                std::vector<int64_t>{3});
    auto c = std::make_shared<LambdaLR>(opt, [](int64_t e) { return 1000.0 + static_cast<double>(e); });
    SequentialLR outer(opt, {inner, c}, std::vector<int64_t>{6});
    const double expected[] = {1, 0.5, 100, 101, 102, 103, 1000, 1001};  // traced through PyTorch's source
    for (int e = 0; e < 8; ++e) {
      CAPTURE(e);
      CHECK(opt.param_groups()[0].options().get_lr() == doctest::Approx(expected[e]).epsilon(1e-15));
      outer.step();
    }
  }

  // ReduceLROnPlateau with one min_lr for all groups covers groups added later; a list of
  // min_lr fails, when it comes to reducing.
  for (bool scalar : {true, false}) {
    CAPTURE(scalar);
    Setup x;
    ReduceLROnPlateau plateau(x.opt, scalar ? ReduceLROnPlateauOptions().patience(0).min_lr(0.04)
                                            : ReduceLROnPlateauOptions().patience(0).min_lr({0.04, 0.04}));
    plateau.step(1.0);
    x.opt.add_param_group(ParamGroup({zeros({1}).requires_grad_()}, SGDOptions(0.2)));
    plateau.step(0.5);  // better: no reduction, no check
    CHECK(plateau.get_last_lr().size() == 3);
    if (scalar) {
      plateau.step(0.9);  // worse: every group reduced by 10x, down to min_lr
      CHECK(plateau.get_last_lr() == std::vector<double>{0.04, 0.04, 0.2 * 0.1 < 0.04 ? 0.04 : 0.02});
    } else {
      CHECK_ERROR(plateau.step(0.9), "[ReduceLROnPlateau]", "3 parameter groups", "min_lr lists 2");
    }
  }
}

// libtorch's names for two optim types: code written against torch::optim compiles unchanged.
static_assert(std::is_same_v<optim::ReduceLROnPlateauScheduler, optim::ReduceLROnPlateau>);
static_assert(std::is_same_v<optim::OptimizerParamGroup, optim::ParamGroup>);

}  // namespace test_schedulers
