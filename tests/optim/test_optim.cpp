// Optimisers beyond the golden values: state dicts (a save/load round trip continues bit for
// bit), autograd bookkeeping (no-grad updates that bump version counters), skipped
// parameters, gradient layouts, threads and SIMD tails, parameter groups, options by name,
// training a small regression problem with every optimiser, and error messages.

#include <doctest/doctest.h>

#include "support.hpp"

#include <cmath>
#include <string>

namespace test_optim {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using optim_test::bit_equal;
using optim_test::OptionMap;
using optim_test::values_of;

namespace {

using optim_test::error_of;
using optim_test::has;


/// Options that switch on every buffer and branch of each optimiser (momentum, amsgrad,
/// centering, weight decay, ...), for the tests that must exercise all of its state.
OptionMap rich_options(const std::string& name) {
  if (name == "SGD") return {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", 1}, {"weight_decay", 0.01}};
  if (name == "Adam" || name == "AdamW") return {{"lr", 0.01}, {"amsgrad", 1}, {"weight_decay", 0.02}};
  if (name == "RMSprop") return {{"lr", 0.01}, {"momentum", 0.9}, {"centered", 1}, {"weight_decay", 0.01}};
  if (name == "Adagrad") return {{"lr", 0.1}, {"lr_decay", 0.01}, {"initial_accumulator_value", 0.1}};
  if (name == "Adadelta") return {{"lr", 1.0}, {"weight_decay", 0.01}};
  if (name == "Adamax") return {{"lr", 0.01}, {"weight_decay", 0.01}};
  if (name == "NAdam") return {{"lr", 0.01}, {"weight_decay", 0.01}};
  if (name == "RAdam") return {{"lr", 0.01}, {"weight_decay", 0.01}};
  if (name == "Rprop") return {{"lr", 0.05}, {"etaplus", 1.3}, {"step_size_max", 0.2}};
  // t0 = 0: the average copies the parameter for two steps and averages from step 3 on.
  if (name == "ASGD") return {{"lr", 0.05}, {"lambd", 0.1}, {"t0", 0}, {"weight_decay", 0.01}};
  return {{"lr", 0.01}, {"weight_decay", 0.1}};  // Lion
}

/// A deterministic gradient for step s of parameter i (no RNG state shared between runs).
Tensor grad_for(const Tensor& p, int s, int i) {
  return (arange(0, p.numel(), 1, TensorOptions(DType::F64)) * (0.37 + 0.11 * i) + 0.5 * s)
      .sin()
      .reshape(p.sizes())
      .to(p.dtype());
}

std::vector<Tensor> make_params(DType dt, uint64_t seed) {
  manual_seed(seed);
  return {randn({3, 5}, TensorOptions(dt)).requires_grad_(), randn({37}, TensorOptions(dt)).requires_grad_(),
          randn({2}, TensorOptions(dt)).requires_grad_()};
}

/// One step with grad_for gradients; parameter `skip` (if >= 0) gets none.
void step_with(optim::Optimizer& opt, std::vector<Tensor>& ps, int s, int skip = -1) {
  for (size_t i = 0; i < ps.size(); ++i)
    ps[i].set_grad(static_cast<int>(i) == skip ? Tensor() : grad_for(ps[i], s, static_cast<int>(i)));
  opt.step();
}

std::vector<Tensor> clones(const std::vector<Tensor>& ps) {
  std::vector<Tensor> out;
  for (const Tensor& p : ps) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

}  // namespace

TEST_CASE("optim: save, load into a fresh optimiser, continue: bit-identical to never stopping") {
  for (DType dt : {DType::F64, DType::F32}) {
    for (const std::string& name : optim_test::optimizer_names()) {
      CAPTURE(name);
      CAPTURE(dt);
      std::vector<Tensor> a = make_params(dt, 7);
      // Two groups: the second with a different learning rate, so that options round-trip too.
      OptionMap o = rich_options(name), o2 = o;
      o2["lr"] = o.at("lr") * 0.5;
      std::vector<optim::ParamGroup> ga;
      ga.emplace_back(std::vector<Tensor>{a[0], a[1]});
      ga.emplace_back(std::vector<Tensor>{a[2]}, optim_test::make_options(name, o2));
      auto A = optim_test::make_optimizer(name, std::move(ga), *optim_test::make_options(name, o));
      for (int s = 1; s <= 3; ++s) step_with(*A, a, s, s == 2 ? 1 : -1);  // param 1 misses a step

      optim::StateDict saved = A->state_dict();
      std::vector<Tensor> b = clones(a);
      // The fresh optimiser starts from other options: loading must restore the saved ones.
      std::vector<optim::ParamGroup> gb;
      gb.emplace_back(std::vector<Tensor>{b[0], b[1]});
      gb.emplace_back(std::vector<Tensor>{b[2]});
      OptionMap other = o;
      other["lr"] = 123.0;
      auto B = optim_test::make_optimizer(name, std::move(gb), *optim_test::make_options(name, other));
      B->load_state_dict(saved);
      CHECK(B->param_groups()[1].options().get_lr() == o2.at("lr"));
      for (int s = 4; s <= 7; ++s) {
        step_with(*A, a, s);
        step_with(*B, b, s);
      }
      for (size_t i = 0; i < a.size(); ++i) CHECK_MESSAGE(bit_equal(a[i], b[i]), "parameter ", i);
      // The state too (ASGD's average and mu never reach the parameters).
      const optim::StateDict sa = A->state_dict(), sb = B->state_dict();
      REQUIRE(sa.state.size() == sb.state.size());
      for (const auto& entry : sa.state) {
        const int64_t index = entry.first;
        const optim::StateDict::Param &pa = entry.second, &pb = sb.state.at(index);
        CHECK(pa.numbers == pb.numbers);
        REQUIRE(pa.tensors.size() == pb.tensors.size());
        for (const auto& buffer : pa.tensors)
          CHECK_MESSAGE(bit_equal(buffer.second, pb.tensors.at(buffer.first)), index, " ", buffer.first);
      }
      // The dict is a snapshot: continuing training did not change it.
      const optim::Optimizer::StateNames names = A->state_names();
      if (names.step) CHECK(saved.state.at(0).numbers.at("step") == 3);
      if (names.step) CHECK(saved.state.at(1).numbers.at("step") == 2);
      CHECK(A->state_dict().state.at(0).tensors.size() == saved.state.at(0).tensors.size());
      for (const auto& [key, t] : saved.state.at(0).tensors)
        CHECK(!bit_equal(t, A->state_dict().state.at(0).tensors.at(key)));
    }
  }
}

TEST_CASE("optim: libtorch-style construction; AdamW's first step is p (1 - lr wd) - lr g / (|g| + eps)") {
  std::vector<Tensor> params = {tensor<double>({1.0, -2.0, 0.5}).requires_grad_()};
  optim::AdamW opt(params, optim::AdamWOptions(1e-3).weight_decay(0.01));
  const std::vector<double> g = {0.3, -4.0, 1e-3};
  params[0].set_grad(tensor<double>({g[0], g[1], g[2]}));
  opt.step();
  // Bias correction makes the first Adam step lr * g / (|g| + eps) (up to eps scaling).
  const std::vector<double> p0 = {1.0, -2.0, 0.5};
  std::vector<double> v = values_of(params[0]);
  for (size_t i = 0; i < 3; ++i) {
    const double want = p0[i] * (1 - 1e-3 * 0.01) - 1e-3 * g[i] / (std::abs(g[i]) + 1e-8);
    CHECK(v[i] == doctest::Approx(want).epsilon(1e-9));
  }
}

TEST_CASE("optim: Adam with decoupled_weight_decay is AdamW; state dicts saved without the flag load") {
  // PyTorch's AdamW is Adam(decoupled_weight_decay=True): the same updates, bit for bit.
  auto run = [](auto make) {
    Tensor p = tensor<double>({1.0, -2.0, 0.5, 3.0}).requires_grad_();
    auto opt = make(p);
    for (int s = 0; s < 5; ++s) {
      p.set_grad(tensor<double>({0.3, -4.0, 1e-3, 0.7}) * (1.0 + s));
      opt->step();
    }
    return values_of(p);
  };
  const auto adam_decoupled = run([](const Tensor& p) {
    return std::make_unique<optim::Adam>(std::vector<Tensor>{p},
                                         optim::AdamOptions(0.01).weight_decay(0.1).amsgrad(true).decoupled_weight_decay(true));
  });
  const auto adamw = run([](const Tensor& p) {
    return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamWOptions(0.01).weight_decay(0.1).amsgrad(true));
  });
  const auto adam_l2 = run([](const Tensor& p) {
    return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, optim::AdamOptions(0.01).weight_decay(0.1).amsgrad(true));
  });
  CHECK(adam_decoupled == adamw);
  CHECK(adam_decoupled != adam_l2);
  // The flag is in the state dict; one saved before the flag existed loads with it off.
  Tensor q = zeros({2}).requires_grad_();
  optim::Adam adam({q}, optim::AdamOptions(0.01).decoupled_weight_decay(true));
  optim::StateDict d = adam.state_dict();
  CHECK(d.param_groups[0].options.at("decoupled_weight_decay") == 1);
  d.param_groups[0].options.erase("decoupled_weight_decay");
  adam.load_state_dict(d);
  CHECK(!static_cast<const optim::AdamOptions&>(adam.param_groups()[0].options()).decoupled_weight_decay());
}

TEST_CASE("optim: state dict contents use PyTorch's names and numbering") {
  std::vector<Tensor> p = make_params(DType::F64, 3);
  optim::Adam adam({optim::ParamGroup({p[0]}), optim::ParamGroup({p[1], p[2]}, optim::AdamOptions(0.5).amsgrad(true))},
                   optim::AdamOptions(0.01));
  p[0].set_grad(ones_like(p[0]));
  p[2].set_grad(ones_like(p[2]));
  adam.step();
  optim::StateDict d = adam.state_dict();
  CHECK(d.optimizer == "Adam");
  REQUIRE(d.param_groups.size() == 2);
  CHECK(d.param_groups[0].params == std::vector<int64_t>{0});
  CHECK(d.param_groups[1].params == std::vector<int64_t>{1, 2});
  CHECK(d.param_groups[0].options.at("lr") == 0.01);
  CHECK(d.param_groups[1].options.at("lr") == 0.5);
  CHECK(d.param_groups[1].options.at("amsgrad") == 1);
  CHECK(d.param_groups[0].options.at("beta2") == 0.999);
  // Parameter 1 had no gradient: no state yet.
  REQUIRE(d.state.size() == 2);
  CHECK(d.state.count(1) == 0);
  CHECK(d.state.at(0).numbers.at("step") == 1);
  CHECK(d.state.at(0).tensors.count("exp_avg") == 1);
  CHECK(d.state.at(0).tensors.count("max_exp_avg_sq") == 0);  // group 0 has no amsgrad
  CHECK(d.state.at(2).tensors.count("max_exp_avg_sq") == 1);
  // After one step of ones, exp_avg = (1 - beta1) * 1.
  for (double v : values_of(d.state.at(0).tensors.at("exp_avg"))) CHECK(v == doctest::Approx(0.1).epsilon(1e-15));
  // Loading casts buffers to the parameter's dtype.
  std::vector<Tensor> q = make_params(DType::F32, 3);
  optim::Adam adam32({optim::ParamGroup({q[0]}), optim::ParamGroup({q[1], q[2]})});
  adam32.load_state_dict(d);
  REQUIRE(adam32.state(q[0]));
  CHECK(adam32.state(q[0])->buffers[0].dtype() == DType::F32);
  CHECK(adam32.state(q[1]) == nullptr);
  CHECK(static_cast<const optim::AdamOptions&>(adam32.param_groups()[1].options()).amsgrad());
}

TEST_CASE("optim: subnormal state flushes to zero inside the update, and only there") {
  // A zero gradient decays exp_avg by beta1 each step; from the subnormal range it would never
  // reach zero (and every step would run at microcode-assist speed). 37 elements: vector
  // bodies and a padded tail.
  Tensor p = full({37}, 1.0f).requires_grad_(true);
  optim::Adam adam({p}, optim::AdamOptions(0.01));
  p.set_grad(zeros_like(p));
  adam.step();
  REQUIRE(adam.state(p));
  Tensor m = adam.state(p)->buffers[0];
  m.fill_(1e-39);  // subnormal in f32 (the smallest normal is 1.18e-38)
  CHECK(values_of(m)[0] != 0.0);
  adam.step();
  for (double v : values_of(m)) CHECK(v == 0.0);
  for (double v : values_of(p)) CHECK(v == 1.0);
  // The caller's arithmetic is untouched afterwards: subnormals still exist outside.
  volatile float tiny = 1e-38f;
  volatile float smaller = tiny * 0.01f;
  CHECK(smaller != 0.0f);
}

TEST_CASE("optim: updates run under no-grad and bump the version counter") {
  Tensor w = tensor<double>({1.0, 2.0, 3.0}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1).momentum(0.9));
  Tensor y = (w * w).sum();  // saves w for backward
  w.set_grad(ones_like(w));
  const uint32_t v0 = w.version();
  opt.step();
  CHECK(w.version() > v0);
  CHECK(w.is_leaf());
  CHECK(w.requires_grad());
  CHECK(!w.grad_fn());
  CHECK(values_of(w) == std::vector<double>{0.9, 1.9, 2.9});
  // Autograd sees the in-place write: backward through the graph that saved w fails.
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("modified by an in-place operation"), Error);
  // The momentum buffer is versioned too.
  const optim::ParamState* st = opt.state(w);
  REQUIRE(st);
  const uint32_t b0 = st->buffers[0].version();
  opt.step();
  CHECK(st->buffers[0].version() > b0);
}

TEST_CASE("optim: parameters without a gradient are skipped and keep no state") {
  for (const std::string& name : optim_test::optimizer_names()) {
    CAPTURE(name);
    std::vector<Tensor> p = make_params(DType::F64, 11);
    auto opt = optim_test::make_optimizer(name, p, rich_options(name));
    std::vector<double> before = values_of(p[2]), moved = values_of(p[0]);
    step_with(*opt, p, 1, 2);
    CHECK(values_of(p[2]) == before);
    CHECK(opt->state(p[2]) == nullptr);
    CHECK(opt->state(p[0]) != nullptr);
    CHECK(values_of(p[0]) != moved);
  }
}

TEST_CASE("optim: zero_grad drops or zeroes every gradient") {
  std::vector<Tensor> p = make_params(DType::F32, 1);
  optim::Adam opt(p);
  for (Tensor& t : p) t.set_grad(ones_like(t));
  opt.zero_grad(false);
  for (Tensor& t : p) {
    REQUIRE(t.grad().defined());
    CHECK(t.grad().abs().sum().item<double>() == 0.0);
  }
  opt.zero_grad();
  for (Tensor& t : p) CHECK(!t.grad().defined());
  opt.step();  // nothing to do
  for (Tensor& t : p) CHECK(opt.state(t) == nullptr);
}

TEST_CASE("optim: a non-contiguous gradient gives the same update as its contiguous copy") {
  for (const std::string& name : optim_test::optimizer_names()) {
    CAPTURE(name);
    manual_seed(5);
    Tensor a = randn({4, 3}, TensorOptions(DType::F64)).requires_grad_();
    Tensor b = a.detach().clone().requires_grad_();
    auto oa = optim_test::make_optimizer(name, {a}, rich_options(name));
    auto ob = optim_test::make_optimizer(name, {b}, rich_options(name));
    for (int s = 0; s < 3; ++s) {
      Tensor g = randn({3, 4}, TensorOptions(DType::F64)).t();  // [4, 3], transposed strides
      REQUIRE(!g.is_contiguous());
      a.set_grad(g);
      b.set_grad(g.contiguous());
      oa->step();
      ob->step();
    }
    CHECK(bit_equal(a, b));
  }
}

TEST_CASE("optim: SIMD bodies, scalar tails, threads and mixed dtypes give the same elements") {
  for (const std::string& name : optim_test::optimizer_names()) {
    CAPTURE(name);
    // One 37-element parameter (SIMD body + tail) against 37 one-element parameters (scalar
    // path only): every element must come out the same.
    manual_seed(9);
    Tensor big = randn({37}, TensorOptions(DType::F32)).requires_grad_();
    std::vector<Tensor> singles;
    for (int64_t i = 0; i < 37; ++i) singles.push_back(big.detach()[i].clone().reshape({1}).requires_grad_());
    auto ob = optim_test::make_optimizer(name, {big}, rich_options(name));
    auto os = optim_test::make_optimizer(name, singles, rich_options(name));
    for (int s = 1; s <= 3; ++s) {
      Tensor g = grad_for(big, s, 0);
      big.set_grad(g);
      for (int64_t i = 0; i < 37; ++i) singles[i].set_grad(g[i].clone().reshape({1}));
      ob->step();
      os->step();
    }
    std::vector<double> v = values_of(big);
    for (int64_t i = 0; i < 37; ++i) CHECK(values_of(singles[i])[0] == v[i]);

    // A parameter above the parallel grain, split across 2 threads, against 1 thread; and an
    // f32 and an f64 parameter in one group against each alone.
    manual_seed(10);
    Tensor x = randn({70001}, TensorOptions(DType::F64)).requires_grad_();
    Tensor y = x.detach().clone().requires_grad_();
    Tensor f = randn({13}, TensorOptions(DType::F32)).requires_grad_();
    Tensor f_alone = f.detach().clone().requires_grad_();
    auto ox = optim_test::make_optimizer(name, {x, f}, rich_options(name));
    auto oy = optim_test::make_optimizer(name, {y}, rich_options(name));
    auto of = optim_test::make_optimizer(name, {f_alone}, rich_options(name));
    for (int s = 1; s <= 2; ++s) {
      x.set_grad(grad_for(x, s, 1));
      y.set_grad(grad_for(y, s, 1));
      f.set_grad(grad_for(f, s, 2));
      f_alone.set_grad(grad_for(f, s, 2));
      set_num_threads(2);
      ox->step();
      set_num_threads(1);
      oy->step();
      of->step();
    }
    CHECK(bit_equal(x, y));
    CHECK(bit_equal(f, f_alone));
  }
}

TEST_CASE("optim: step(closure) evaluates the closure with grad mode on and returns its loss") {
  Tensor w = tensor<double>({2.0}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.25));
  int calls = 0;
  autograd::NoGradGuard off;  // the closure must record anyway
  Tensor loss = opt.step([&] {
    ++calls;
    opt.zero_grad();
    Tensor l = (w * w).sum();
    l.backward();
    return l;
  });
  CHECK(calls == 1);
  CHECK(loss.item<double>() == 4.0);
  CHECK(values_of(w)[0] == 1.0);  // 2 - 0.25 * 4
}

TEST_CASE("optim: parameter groups take the defaults or their own options, independently") {
  std::vector<Tensor> p = make_params(DType::F64, 2);
  optim::SGD opt({p[0]}, optim::SGDOptions(0.1).momentum(0.5));
  opt.add_param_group(optim::ParamGroup({p[1]}));
  opt.add_param_group(optim::ParamGroup({p[2]}, optim::SGDOptions(0.3)));
  REQUIRE(opt.param_groups().size() == 3);
  CHECK(opt.size() == 3);
  CHECK(opt.param_groups()[1].options().get("momentum") == 0.5);  // a copy of the defaults
  CHECK(opt.param_groups()[2].options().get("momentum") == 0);
  opt.param_groups()[1].options().set_lr(0.7);
  CHECK(opt.param_groups()[0].options().get_lr() == 0.1);
  CHECK(opt.defaults().get_lr() == 0.1);
  auto& o2 = static_cast<optim::SGDOptions&>(opt.param_groups()[2].options());
  o2.lr(0.4).nesterov(true).momentum(0.9);
  CHECK(opt.param_groups()[2].options().values().at("nesterov") == 1);
  // The per-group learning rate is what step() uses: one step of a unit gradient.
  std::vector<std::vector<double>> before;
  for (Tensor& t : p) {
    before.push_back(values_of(t));
    t.set_grad(ones_like(t));
  }
  opt.step();
  CHECK(values_of(p[1])[0] == doctest::Approx(before[1][0] - 0.7).epsilon(1e-15));
  // Nesterov with a fresh buffer b = g: the step is g + momentum * b = 1.9.
  CHECK(values_of(p[2])[0] == doctest::Approx(before[2][0] - 0.4 * 1.9).epsilon(1e-15));
  // Copies of a group are deep.
  optim::ParamGroup copy = opt.param_groups()[0];
  copy.options().set_lr(9.0);
  CHECK(opt.param_groups()[0].options().get_lr() == 0.1);
}

TEST_CASE("optim: options by name") {
  optim::AdamWOptions o(0.002);
  CHECK(o.get("weight_decay") == 1e-2);  // AdamW's default
  CHECK(o.get("beta1") == 0.9);
  o.set("beta2", 0.95);
  CHECK(std::get<1>(o.betas()) == 0.95);
  o.set("amsgrad", 1);
  CHECK(o.amsgrad());
  CHECK(o.has("eps"));
  CHECK(!o.has("momentum"));
  CHECK(o.values().size() == 7);
  CHECK_ERROR(o.set("momentum", 0.9), "[AdamW]", "momentum", "lr, beta1, beta2");
  CHECK_ERROR(o.set("amsgrad", 0.5), "[AdamW]", "amsgrad", "0.5");
  CHECK_ERROR(o.get("rho"), "[AdamW]", "rho");
  // The defaults PyTorch documents.
  CHECK(optim::AdamOptions().lr() == 1e-3);
  CHECK(optim::AdamOptions().eps() == 1e-8);
  CHECK(optim::RMSpropOptions().lr() == 1e-2);
  CHECK(optim::RMSpropOptions().alpha() == 0.99);
  CHECK(optim::AdagradOptions().eps() == 1e-10);
  CHECK(optim::AdadeltaOptions().lr() == 1.0);
  CHECK(optim::AdadeltaOptions().eps() == 1e-6);
  CHECK(optim::AdamaxOptions().lr() == 2e-3);
  CHECK(optim::NAdamOptions().momentum_decay() == 4e-3);
  CHECK(optim::LionOptions().lr() == 1e-4);
  CHECK(std::get<1>(optim::LionOptions().betas()) == 0.99);
  CHECK(optim::RpropOptions().lr() == 1e-2);
  CHECK(optim::RpropOptions().etas() == std::make_tuple(0.5, 1.2));
  CHECK(optim::RpropOptions().step_sizes() == std::make_tuple(1e-6, 50.0));
  CHECK(optim::ASGDOptions().lr() == 1e-2);
  CHECK(optim::ASGDOptions().lambd() == 1e-4);
  CHECK(optim::ASGDOptions().alpha() == 0.75);
  CHECK(optim::ASGDOptions().t0() == 1e6);
}

TEST_CASE("optim: every optimiser fits a small linear regression") {
  // y = X w* + b* + noise over 128 samples of 8 features; the model starts at zero. Loss
  // after 300 full-batch steps must be below initial / factor (each factor sits well below
  // what the optimiser reached when this test was written: see the MESSAGE lines).
  struct Run {
    std::string name;
    OptionMap options;
    double factor;
  };
  const std::vector<Run> runs = {
      {"SGD", {{"lr", 0.05}, {"momentum", 0.9}}, 1e4},
      {"Adam", {{"lr", 0.05}}, 1e4},
      {"AdamW", {{"lr", 0.05}, {"weight_decay", 1e-4}}, 1e4},
      {"RMSprop", {{"lr", 0.01}}, 50},
      {"Adagrad", {{"lr", 0.5}}, 1e4},
      {"Adadelta", {{"lr", 10.0}}, 1e2},
      {"Adamax", {{"lr", 0.1}}, 1e4},
      {"NAdam", {{"lr", 0.05}}, 1e4},
      {"RAdam", {{"lr", 0.05}}, 1e3},
      {"Lion", {{"lr", 0.02}}, 1e3},
      {"Rprop", {{"lr", 0.01}}, 1e4},
      {"ASGD", {{"lr", 0.05}}, 1e4},
  };
  manual_seed(42);
  Tensor X = randn({128, 8});
  Tensor w_true = randn({8, 1});
  Tensor y = X.matmul(w_true) + 0.5 + randn({128, 1}) * 0.01;
  for (const Run& r : runs) {
    CAPTURE(r.name);
    Tensor w = zeros({8, 1}).requires_grad_();
    Tensor b = zeros({1}).requires_grad_();
    auto opt = optim_test::make_optimizer(r.name, {w, b}, r.options);
    auto loss_fn = [&] {
      Tensor d = X.matmul(w) + b - y;
      return (d * d).mean();
    };
    const double initial = loss_fn().item<double>();
    double last = initial;
    for (int s = 0; s < 300; ++s) {
      opt->zero_grad();
      Tensor l = loss_fn();
      l.backward();
      opt->step();
      last = l.item<double>();
    }
    last = loss_fn().item<double>();
    MESSAGE(r.name, ": loss ", initial, " -> ", last, " (", initial / last, "x)");
    CHECK(last < initial / r.factor);
  }
}

TEST_CASE("optim errors: options out of range name the option and its value") {
  Tensor w = zeros({2}).requires_grad_();
  CHECK_ERROR(optim::SGD({w}, optim::SGDOptions(-0.1)), "[SGD]", "lr", "-0.1");
  CHECK_ERROR(optim::SGD({w}, optim::SGDOptions(0.1).momentum(-1)), "[SGD]", "momentum", "-1");
  CHECK_ERROR(optim::SGD({w}, optim::SGDOptions(0.1).nesterov(true)), "[SGD]", "nesterov", "momentum");
  CHECK_ERROR(optim::SGD({w}, optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)), "[SGD]",
              "dampening", "0.1");
  CHECK_ERROR(optim::Adam({w}, optim::AdamOptions(-1e-3)), "[Adam]", "lr", "-0.001");
  CHECK_ERROR(optim::Adam({w}, optim::AdamOptions().betas({1.5, 0.999})), "[Adam]", "betas[0]", "1.5");
  CHECK_ERROR(optim::AdamW({w}, optim::AdamWOptions().betas({0.9, 1.0})), "[AdamW]", "betas[1]", "[0, 1)", "1");
  CHECK_ERROR(optim::AdamW({w}, optim::AdamWOptions().weight_decay(-0.01)), "[AdamW]", "weight_decay", "-0.01");
  CHECK_ERROR(optim::Adam({w}, optim::AdamOptions().eps(-1)), "[Adam]", "eps", "-1");
  CHECK_ERROR(optim::RMSprop({w}, optim::RMSpropOptions().alpha(-0.5)), "[RMSprop]", "alpha", "-0.5");
  CHECK_ERROR(optim::Adagrad({w}, optim::AdagradOptions().lr_decay(-1)), "[Adagrad]", "lr_decay", "-1");
  CHECK_ERROR(optim::Adagrad({w}, optim::AdagradOptions().initial_accumulator_value(-2)), "[Adagrad]",
              "initial_accumulator_value", "-2");
  CHECK_ERROR(optim::Adadelta({w}, optim::AdadeltaOptions().rho(1.5)), "[Adadelta]", "rho", "1.5");
  CHECK_ERROR(optim::Adamax({w}, optim::AdamaxOptions().betas({0.9, -0.1})), "[Adamax]", "betas[1]", "-0.1");
  CHECK_ERROR(optim::NAdam({w}, optim::NAdamOptions().momentum_decay(-1)), "[NAdam]", "momentum_decay", "-1");
  CHECK_ERROR(optim::RAdam({w}, optim::RAdamOptions(std::nan(""))), "[RAdam]", "lr", "nan");
  CHECK_ERROR(optim::Lion({w}, optim::LionOptions().betas({0.9, 1.1})), "[Lion]", "betas[1]", "[0, 1]", "1.1");
  CHECK_ERROR(optim::Rprop({w}, optim::RpropOptions().etas({0.5, 0.9})), "[Rprop]", "etaminus < 1 < etaplus",
              "(0.5, 0.9)");
  CHECK_ERROR(optim::Rprop({w}, optim::RpropOptions().etas({0.0, 1.2})), "[Rprop]", "(0, 1.2)");
  CHECK_ERROR(optim::Rprop({w}, optim::RpropOptions().etas({std::nan(""), 1.2})), "[Rprop]", "(nan, 1.2)");
  CHECK_ERROR(optim::Rprop({w}, optim::RpropOptions().step_sizes({0.1, 0.01})), "[Rprop]", "step_sizes",
              "(0.1, 0.01)");
  CHECK_ERROR(optim::Rprop({w}, optim::RpropOptions(-1)), "[Rprop]", "lr", "-1");
  CHECK_ERROR(optim::ASGD({w}, optim::ASGDOptions().lambd(-1e-4)), "[ASGD]", "lambd", "-0.0001");
  CHECK_ERROR(optim::ASGD({w}, optim::ASGDOptions().alpha(std::nan(""))), "[ASGD]", "alpha", "nan");
  CHECK_ERROR(optim::ASGD({w}, optim::ASGDOptions().t0(std::nan(""))), "[ASGD]", "t0", "nan");
  CHECK_ERROR(optim::ASGD({w}, optim::ASGDOptions().weight_decay(-2)), "[ASGD]", "weight_decay", "-2");
  // A group's own options are checked too, and must be of the optimiser's kind.
  CHECK_ERROR(optim::Adam({optim::ParamGroup({w}, optim::AdamOptions(-5))}), "[Adam]", "lr", "-5");
  CHECK_ERROR(optim::Adam({optim::ParamGroup({w}, optim::SGDOptions(0.1))}), "[Adam]", "SGD options");
}

TEST_CASE("optim errors: parameters must be distinct leaves that require grad") {
  Tensor w = zeros({2, 3}).requires_grad_();
  Tensor v = zeros({4}).requires_grad_();
  CHECK_ERROR(optim::SGD({w * 2}, optim::SGDOptions(0.1)), "[SGD]", "not a leaf", "MulBackward", "[2, 3]");
  {
    // A frozen parameter (no requires_grad) is accepted and left alone, as PyTorch: a model's
    // parameters() can be passed whole with some layers frozen.
    Tensor frozen = ones({3}), live = ones({2}).requires_grad_();
    optim::SGD sgd({frozen, live}, optim::SGDOptions(0.1));
    live.sum().backward();
    sgd.step();
    CHECK(frozen.sum().item<double>() == 3.0);
    CHECK(live.sum().item<double>() == doctest::Approx(1.8));
    // Without momentum SGD keeps no state, and its state dict has no entries (PyTorch's too).
    CHECK(sgd.state_dict().state.empty());
  }
  CHECK_ERROR(optim::Adam({optim::ParamGroup({w, v}), optim::ParamGroup({v})}), "[Adam]", "parameter 0 of group 1",
              "more than once", "[4]");
  CHECK_ERROR(optim::Adam({w, v, w}), "[Adam]", "parameter 2 of group 0", "more than once");
  optim::Adam adam({w});
  CHECK_ERROR(adam.add_param_group(optim::ParamGroup({v, w})), "[Adam]", "parameter 1 of group 1", "more than once");
  CHECK(adam.param_groups().size() == 1);  // the failed group was not added
  CHECK_ERROR(optim::Adam(std::vector<Tensor>{}), "[Adam]", "empty parameter list");
  CHECK_ERROR(optim::Adam({Tensor()}), "[Adam]", "undefined");
  CHECK_ERROR(optim::SGD({zeros({2}, TensorOptions(DType::F16)).requires_grad_()}, optim::SGDOptions(0.1)), "[SGD]",
              "f16", "f32 and f64");
  CHECK_ERROR(optim::Adam({zeros({3, 2}).t().detach().requires_grad_()}), "[Adam]", "not contiguous");
}

TEST_CASE("optim errors: a mismatched state dict names what differs and changes nothing") {
  std::vector<Tensor> p = make_params(DType::F64, 4);
  optim::Adam adam({optim::ParamGroup({p[0]}), optim::ParamGroup({p[1], p[2]})}, optim::AdamOptions(0.01));
  for (Tensor& t : p) t.set_grad(ones_like(t));
  adam.step();
  const optim::StateDict good = adam.state_dict();

  optim::SGD sgd({p[0]}, optim::SGDOptions(0.1));
  CHECK_ERROR(sgd.load_state_dict(good), "[SGD]", "saved by Adam");

  optim::Adam one_group({p[0], p[1], p[2]});
  CHECK_ERROR(one_group.load_state_dict(good), "[Adam]", "2 parameter groups", "1");

  optim::Adam sizes({optim::ParamGroup({p[0], p[1]}), optim::ParamGroup({p[2]})});
  CHECK_ERROR(sizes.load_state_dict(good), "[Adam]", "group 0 has 1 parameters in the state dict and 2");

  optim::StateDict bad = good;
  bad.state.at(0).tensors.at("exp_avg") = zeros({7}, TensorOptions(DType::F64));
  CHECK_ERROR(adam.load_state_dict(bad), "[Adam]", "exp_avg", "parameter 0", "[7]", "[3, 5]");
  bad = good;
  bad.state.at(0).tensors["momentum_buffer"] = zeros({3, 5}, TensorOptions(DType::F64));
  CHECK_ERROR(adam.load_state_dict(bad), "[Adam]", "unknown buffer", "momentum_buffer");
  bad = good;
  bad.state.at(0).numbers["step"] = 1.5;
  CHECK_ERROR(adam.load_state_dict(bad), "[Adam]", "step", "1.5");
  bad = good;
  bad.state[5] = bad.state.at(0);
  CHECK_ERROR(adam.load_state_dict(bad), "[Adam]", "parameter 5");
  bad = good;
  bad.param_groups[1].options["momentum"] = 0.9;
  CHECK_ERROR(adam.load_state_dict(bad), "[Adam]", "unknown option", "momentum");
  bad = good;
  bad.param_groups[0].options.erase("eps");
  CHECK_ERROR(adam.load_state_dict(bad), "[Adam]", "lacks option", "eps");
  bad = good;
  bad.param_groups[0].options["beta1"] = 2.0;
  CHECK_ERROR(adam.load_state_dict(bad), "[Adam]", "betas[0]", "2");
  // None of the failed loads changed the optimiser.
  optim::StateDict now = adam.state_dict();
  CHECK(now.param_groups[0].options == good.param_groups[0].options);
  for (const auto& [i, ps] : good.state)
    for (const auto& [k, t] : ps.tensors) CHECK(bit_equal(now.state.at(i).tensors.at(k), t));
}

TEST_CASE("Rprop: a sign flip shrinks the step and skips the move; a NaN gradient moves nothing (PyTorch's sign)") {
  Tensor w = tensor<double>({1.0, 2.0}).requires_grad_();
  optim::Rprop opt(std::vector<Tensor>{w}, optim::RpropOptions(0.1));
  auto step = [&](std::vector<double> g) {
    w.set_grad(tensor<double>({g[0], g[1]}));
    opt.step();
    return std::make_pair(values_of(w), values_of(opt.state(w)->buffers[1]));
  };
  // No previous gradient: the first step moves by lr against the sign.
  auto [w1, s1] = step({0.5, -0.5});
  CHECK(w1 == std::vector<double>{0.9, 2.1});
  CHECK(s1 == std::vector<double>{0.1, 0.1});
  // Element 0: NaN (torch.sign gives 0): same step size, no move, prev becomes NaN. Element 1:
  // the sign flips: step size * 0.5, no move, prev becomes 0.
  auto [w2, s2] = step({std::nan(""), 1.0});
  CHECK(w2 == std::vector<double>{0.9, 2.1});
  CHECK(s2 == std::vector<double>{0.1, 0.05});
  // After NaN or a flip, the next step moves by the kept step size.
  auto [w3, s3] = step({1.0, 1.0});
  CHECK(w3 == std::vector<double>{0.9 - 0.1, 2.1 - 0.05});
  CHECK(s3 == std::vector<double>{0.1, 0.05});
  // Same sign twice: the step grows by etaplus.
  auto [w4, s4] = step({1.0, 1.0});
  CHECK(s4 == std::vector<double>{0.1 * 1.2, 0.05 * 1.2});
  CHECK(w4 == std::vector<double>{0.9 - 0.1 - 0.1 * 1.2, 2.1 - 0.05 - 0.05 * 1.2});
}

}  // namespace test_optim
