// Optimiser state that no longer matches its parameters: a parameter changed in place by
// Module::to, a parameter replaced in its group, state dicts missing what the next update
// reads, and schedules whose optimiser lost its initial_lr. Each case used to crash, corrupt
// the parameters or continue from silently reset state.

#include <doctest/doctest.h>

#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include "support.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace test_optim_state_edges {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::optim;

namespace {

using optim_test::error_of;
using optim_test::has;

/// One Adam step on a Linear of dtype `from`, then to(`to`) and a second step; returns the
/// weight after it.
Tensor adam_across_dtype(DType from, DType to) {
  manual_seed(0);
  nn::Linear lin(16, 8);
  lin->to(from);
  Adam opt(lin->parameters(), AdamOptions(1e-2));
  lin->forward(ones({4, 16}, TensorOptions(from))).sum().backward();
  opt.step();
  lin->to(to);
  opt.zero_grad();
  lin->forward(ones({4, 16}, TensorOptions(to))).sum().backward();
  opt.step();
  return lin->weight;
}

}  // namespace

TEST_CASE("optimiser state follows a parameter whose dtype Module::to changed") {
  for (auto dtypes : {std::pair{DType::F32, DType::F64}, std::pair{DType::F64, DType::F32}}) {
    const auto from = std::get<0>(dtypes);
    const auto to = std::get<1>(dtypes);
    CAPTURE(from);
    Tensor w = adam_across_dtype(from, to);
    CHECK(w.dtype() == to);
    CHECK(w.isfinite().all().item<bool>());
    // The same two steps with the parameter in `to` throughout (the first step's state cast):
    // Adam's second step moves every weight by about lr again.
    manual_seed(0);
    nn::Linear ref(16, 8);
    ref->to(to);
    Tensor w0 = ref->weight.clone();
    CHECK((w - w0).abs().max().item<double>() == doctest::Approx(2e-2).epsilon(0.05));
  }
  // The state itself now has the parameter's dtype.
  manual_seed(0);
  nn::Linear lin(4, 2);
  Adam opt(lin->parameters(), AdamOptions(1e-2));
  lin->forward(ones({1, 4})).sum().backward();
  opt.step();
  lin->to(DType::F64);
  lin->forward(ones({1, 4}, TensorOptions(DType::F64))).sum().backward();
  opt.step();
  CHECK(opt.state(lin->weight)->buffers[0].dtype() == DType::F64);
  CHECK(opt.state(lin->weight)->buffers[1].dtype() == DType::F64);
}

TEST_CASE("a parameter replaced in its group starts with fresh state") {
  Tensor keep = zeros({4}).requires_grad_();
  Adam opt(std::vector<Tensor>{keep, zeros({2}).requires_grad_()}, AdamOptions(0.1));
  for (Tensor& p : opt.param_groups()[0].params()) p.set_grad(ones_like(p));
  opt.step();
  // Replace parameter 1 the way PyTorch users do (param_groups[0]['params'][1] = q); the old
  // one's state keeps its address from being reused by q.
  opt.param_groups()[0].params()[1] = Tensor();
  for (int i = 0; i < 50; ++i) {
    Tensor q = zeros({2}).requires_grad_();
    opt.param_groups()[0].params()[1] = q;
    CHECK(opt.state(q) == nullptr);
    q.set_grad(ones_like(q));
    keep.set_grad(ones_like(keep));
    opt.step();
    // A fresh Adam's first step is -lr whatever the gradient's size.
    CHECK(q[0].item<double>() == doctest::Approx(-0.1));
    CHECK(opt.state(q)->step == 1);
  }
  CHECK(opt.state(keep)->step == 51);
}

TEST_CASE("the state of a parameter no group holds any more is dropped at the next step") {
  Tensor keep = zeros({4}).requires_grad_(), old = zeros({3}).requires_grad_();
  SGD opt(std::vector<Tensor>{keep, old}, SGDOptions(0.1).momentum(0.9));
  keep.set_grad(ones_like(keep));
  old.set_grad(ones_like(old));
  opt.step();
  REQUIRE(opt.state(old) != nullptr);
  opt.param_groups()[0].params()[1] = zeros({3}).requires_grad_();  // replaced, and frozen: no gradient
  opt.step();
  CHECK(opt.state(old) == nullptr);
  CHECK(opt.state(keep) != nullptr);
}

TEST_CASE("a parameter resized behind the optimiser's back is refused by name") {
  Tensor p = zeros({3}).requires_grad_();
  Adam opt(std::vector<Tensor>{p}, AdamOptions(0.1));
  p.set_grad(ones_like(p));
  opt.step();
  ember::detail::adopt_elements(p.impl(), zeros({5}).impl());  // as Module::to swaps values in place
  p.set_grad(ones({5}));
  std::string msg = error_of([&] { opt.step(); });
  CHECK_MESSAGE(has(msg, "[Adam] parameter 0 of group 0 has shape [5]"), msg);
  CHECK_MESSAGE(has(msg, "\"exp_avg\" has shape [3]"), msg);
}

TEST_CASE("load_state_dict requires what the next update reads") {
  Tensor p = ones({3, 2}).requires_grad_();
  Adam adam(std::vector<Tensor>{p}, AdamOptions(0.1).amsgrad(true));
  p.set_grad(ones_like(p));
  adam.step();
  const StateDict saved = adam.state_dict();
  adam.load_state_dict(saved);  // complete: accepted

  auto refused = [&](StateDict d, const char* part) {
    const ParamState before = *adam.state(p);
    std::string msg = error_of([&] { adam.load_state_dict(d); });
    CHECK_MESSAGE(has(msg, part), msg);
    CHECK(adam.state(p)->step == before.step);  // unchanged by the failed load
  };
  StateDict d = saved;
  d.state[0].numbers.erase("step");
  refused(d, "has no \"step\"");
  d = saved;
  d.state[0].tensors.erase("exp_avg_sq");
  refused(d, "has no buffer \"exp_avg_sq\"");
  d = saved;
  d.state[0].tensors.clear();
  refused(d, "has no buffer \"exp_avg\"");
  d = saved;
  d.state[0].tensors["exp_avg"] = ones({3, 2}, TensorOptions(DType::I64));
  refused(d, "must be a floating-point tensor of the parameter's shape");

  // A buffer an option switches on may be missing (amsgrad turned on during training): it
  // starts from zeros, as in a step. The optimiser's own dict, saved right after the switch,
  // loads.
  d = saved;
  d.state[0].tensors.erase("max_exp_avg_sq");
  adam.load_state_dict(d);
  CHECK(!adam.state(p)->buffers[2].defined());
  adam.step();
  CHECK(adam.state(p)->buffers[2].defined());
  Tensor p2 = ones({2}).requires_grad_();
  Adam toggled(std::vector<Tensor>{p2}, AdamOptions(0.1));
  p2.set_grad(ones_like(p2));
  toggled.step();
  toggled.param_groups()[0].options().set("amsgrad", 1);
  toggled.load_state_dict(toggled.state_dict());

  // NAdam's momentum product must be there and finite.
  Tensor q = ones({2}).requires_grad_();
  NAdam nadam(std::vector<Tensor>{q}, NAdamOptions(0.1));
  q.set_grad(ones_like(q));
  nadam.step();
  StateDict n = nadam.state_dict();
  n.state[0].numbers["mu_product"] = std::nan("");
  CHECK(has(error_of([&] { nadam.load_state_dict(n); }), "finite \"mu_product\" >= 0, got nan"));
  n.state[0].numbers["mu_product"] = -0.5;
  CHECK(has(error_of([&] { nadam.load_state_dict(n); }), "finite \"mu_product\" >= 0, got -0.5"));
  n.state[0].numbers.erase("mu_product");
  CHECK(has(error_of([&] { nadam.load_state_dict(n); }), "\"mu_product\" >= 0, got none"));

  // ASGD's eta and mu must be there, finite and >= 0.
  Tensor u = ones({2}).requires_grad_();
  ASGD asgd(std::vector<Tensor>{u}, ASGDOptions(0.1));
  u.set_grad(ones_like(u));
  asgd.step();
  StateDict ad = asgd.state_dict();
  CHECK(ad.state[0].numbers.at("eta") > 0);
  CHECK(ad.state[0].numbers.at("mu") == 1);
  ad.state[0].numbers["eta"] = std::numeric_limits<double>::infinity();
  CHECK(has(error_of([&] { asgd.load_state_dict(ad); }), "finite \"eta\" >= 0, got inf"));
  ad.state[0].numbers["eta"] = 0.1;
  ad.state[0].numbers.erase("mu");
  CHECK(has(error_of([&] { asgd.load_state_dict(ad); }), "\"mu\" >= 0, got none"));
  ad.state[0].numbers["mu"] = 0.5;
  ad.state[0].numbers["nu"] = 1;
  CHECK(has(error_of([&] { asgd.load_state_dict(ad); }), "unknown state \"nu\""));

  // RMSprop needs its average of squares; its momentum buffer and SGD's restart when missing.
  Tensor r = ones({2}).requires_grad_();
  RMSprop rms(std::vector<Tensor>{r}, RMSpropOptions(0.1).momentum(0.9));
  r.set_grad(ones_like(r));
  rms.step();
  StateDict rd = rms.state_dict();
  rd.state[0].tensors.erase("momentum_buffer");
  rms.load_state_dict(rd);
  rd.state[0].tensors.erase("square_avg");
  CHECK(has(error_of([&] { rms.load_state_dict(rd); }), "has no buffer \"square_avg\""));
  Tensor s = ones({2}).requires_grad_();
  SGD sgd(std::vector<Tensor>{s}, SGDOptions(0.1).momentum(0.9));
  s.set_grad(ones_like(s));
  sgd.step();
  StateDict sd = sgd.state_dict();
  sd.state[0].tensors.clear();
  sgd.load_state_dict(sd);
}

TEST_CASE("schedules whose optimiser lost initial_lr fail by name") {
  SGD plain(std::vector<Tensor>{ones({3}).requires_grad_()}, SGDOptions(0.1).momentum(0.9));
  const StateDict no_schedule = plain.state_dict();  // carries no initial_lr

  SGD opt(std::vector<Tensor>{ones({3}).requires_grad_()}, SGDOptions(0.1).momentum(0.9));
  OneCycleLR sched(opt, OneCycleLROptions(1.0, 10));
  sched.step();
  opt.load_state_dict(no_schedule);
  CHECK(has(error_of([&] { sched.step(); }), "[OneCycleLR] parameter group 0 has no initial_lr"));
}

}  // namespace test_optim_state_edges
