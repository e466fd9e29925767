// Weight averaging (optim/swa_utils.hpp): AveragedModel's averages against plain reference
// loops over the same formulas, update_bn's statistics against the batches' own, errors.
// SWALR's learning rates are in the PyTorch golden fixture (test_optim_golden.cpp).

#include <doctest/doctest.h>

#include <ember/nn.hpp>
#include <ember/optim.hpp>
#include <ember/optim/swa_utils.hpp>

#include <cmath>
#include <tuple>
#include <vector>

#include "../error_text.hpp"

namespace test_swa_utils {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// Linear(3, 4) -> BatchNorm1d(4) -> Linear(4, 2), in f64.
nn::Sequential make_net(int64_t hidden = 4) {
  nn::Sequential net(nn::Linear(3, hidden), nn::BatchNorm1d(hidden), nn::Linear(hidden, 2));
  net->to(DType::F64);
  return net;
}

/// Weights k: every parameter and running statistic a function of k; num_batches_tracked 3k + 1.
void set_weights(nn::Sequential& net, int k) {
  autograd::NoGradGuard ng;
  int i = 0;
  for (auto& [name, p] : net->named_parameters()) {
    Tensor v = (arange(0, p.numel(), 1, TensorOptions(DType::F64)) * (0.1 + 0.05 * i++) + 0.7 * k).sin();
    p.copy_(v.reshape(p.sizes()));
  }
  auto* bn = net[1]->as<nn::BatchNorm1d>();
  bn->running_mean.copy_(arange(0, 4, 1, TensorOptions(DType::F64)) * 0.5 + k);
  bn->running_var.fill_(1.0 + k);
  bn->num_batches_tracked.fill_(int64_t{3 * k + 1});
}

std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

/// The models' weights for k = 0..n-1, by parameter (or buffer) name.
std::map<std::string, std::vector<std::vector<double>>> history(int n, bool buffers) {
  std::map<std::string, std::vector<std::vector<double>>> h;
  nn::Sequential net = make_net();
  for (int k = 0; k < n; ++k) {
    set_weights(net, k);
    for (auto& [name, p] : buffers ? net->named_buffers() : net->named_parameters()) h[name].push_back(values_of(p));
  }
  return h;
}

}  // namespace

TEST_CASE("AveragedModel: SWA is the running mean, buffers follow the model, names are PyTorch's") {
  nn::Sequential net = make_net();
  optim::AveragedModel swa(net);
  CHECK(swa->n_averaged.item<int64_t>() == 0);
  const int n = 4;
  for (int k = 0; k < n; ++k) {
    set_weights(net, k);
    swa->update_parameters(net);
  }
  CHECK(swa->n_averaged.item<int64_t>() == n);
  // The reference: PyTorch's get_swa_avg_fn, a + (w - a) / (k + 1), element by element.
  auto h = history(n, false);
  for (auto& item : swa->module->named_parameters()) {
    const std::string& name = item.first;
    const Tensor& p = item.second;
    CAPTURE(name);
    const auto& ws = h.at(name);
    std::vector<double> want = ws[0], got = values_of(p);
    for (int k = 1; k < n; ++k)
      for (size_t e = 0; e < want.size(); ++e) want[e] = want[e] + (ws[k][e] - want[e]) / static_cast<double>(k + 1);
    REQUIRE(got.size() == want.size());
    for (size_t e = 0; e < want.size(); ++e) {
      CHECK(got[e] == want[e]);
      double mean = 0;
      for (int k = 0; k < n; ++k) mean += ws[k][e] / n;
      CHECK(got[e] == doctest::Approx(mean).epsilon(1e-12));
    }
  }
  // Without use_buffers the buffers are the model's latest.
  auto* bn = (*swa->module)[1]->as<nn::BatchNorm1d>();
  REQUIRE(bn);
  CHECK(values_of(bn->running_var) == std::vector<double>(4, 1.0 + (n - 1)));
  CHECK(bn->num_batches_tracked.item<int64_t>() == 3 * (n - 1) + 1);
  // The copy is deep: the model's weights are its own.
  CHECK(values_of(net[0]->as<nn::Linear>()->weight) != values_of((*swa->module)[0]->as<nn::Linear>()->weight));

  auto names = swa->named_parameters();
  CHECK(names.size() == 6);
  CHECK(names[0].first == "module.0.weight");
  auto buffers = swa->named_buffers();
  CHECK(buffers.contains("module.1.running_mean"));
  // PyTorch's state_dict order: the module's own buffer, then the submodule's entries.
  auto dict = swa->state_dict();
  CHECK(dict[0].first == "n_averaged");
  CHECK(dict[1].first == "module.0.weight");

  // forward runs the averaged weights: a fresh model given them computes the same.
  net->eval();
  swa->eval();
  nn::Sequential same = make_net();
  same->load_state_dict(swa->module->state_dict());
  same->eval();
  Tensor x = randn({5, 3}, TensorOptions(DType::F64));
  Tensor y = swa(x);
  CHECK(y.sizes() == Shape{5, 2});
  CHECK(values_of(y) == values_of(same(x)));
  CHECK(values_of(y) != values_of(net(x)));
  // On a device (the CPU is the one every build has): the copy and n_averaged live there.
  optim::AveragedModel on_cpu(net, nullptr, optim::AveragedModelOptions().device(Device::cpu()));
  on_cpu->update_parameters(net);
  CHECK(on_cpu->n_averaged.device() == Device::cpu());
  CHECK(values_of(on_cpu->module->parameters()[0]) == values_of(net->parameters()[0]));
}

TEST_CASE("AveragedModel: use_buffers averages the buffers too (integers truncated, as PyTorch)") {
  nn::Sequential net = make_net();
  optim::AveragedModel swa(net, nullptr, optim::AveragedModelOptions().use_buffers(true));
  const int n = 4;
  for (int k = 0; k < n; ++k) {
    set_weights(net, k);
    swa->update_parameters(net);
  }
  auto h = history(n, true);
  auto* bn = (*swa->module)[1]->as<nn::BatchNorm1d>();
  std::vector<double> want = h.at("1.running_mean")[0];
  for (int k = 1; k < n; ++k)
    for (size_t e = 0; e < want.size(); ++e)
      want[e] = want[e] + (h.at("1.running_mean")[k][e] - want[e]) / static_cast<double>(k + 1);
  CHECK(values_of(bn->running_mean) == want);
  // num_batches_tracked 1, 4, 7, 10: 1, then 1 + 3/2 -> 2, 2 + 5/3 -> 3, 3 + 7/4 -> 4 (PyTorch
  // divides into a float and copies the result back into the integer buffer).
  CHECK(bn->num_batches_tracked.item<int64_t>() == 4);
  CHECK(bn->num_batches_tracked.dtype() == DType::I64);
}

TEST_CASE("AveragedModel: exponential moving averages, as PyTorch's two EMA functions") {
  const int n = 5;
  const double decay = 0.9;
  auto h = history(n, false);
  for (int form = 0; form < 2; ++form) {
    CAPTURE(form);
    nn::Sequential net = make_net();
    optim::AveragedModel ema(net, form == 0 ? optim::get_ema_multi_avg_fn(decay) : optim::get_ema_avg_fn(decay));
    for (int k = 0; k < n; ++k) {
      set_weights(net, k);
      ema->update_parameters(net);
    }
    for (auto& item : ema->module->named_parameters()) {
      const std::string& name = item.first;
      const Tensor& p = item.second;
      CAPTURE(name);
      const auto& ws = h.at(name);
      std::vector<double> want = ws[0];
      const double w = 1 - decay;  // lerp's weight, < 0.5: a + w (b - a)
      for (int k = 1; k < n; ++k)
        for (size_t e = 0; e < want.size(); ++e)
          want[e] = form == 0 ? want[e] + w * (ws[k][e] - want[e]) : decay * want[e] + (1 - decay) * ws[k][e];
      CHECK(values_of(p) == want);
    }
  }
  // A user's function: the running maximum.
  nn::Sequential net = make_net();
  optim::AveragedModel running_max(net, [](Tensor& a, const Tensor& c, int64_t) { a.copy_(maximum(a, c)); });
  for (int k = 0; k < n; ++k) {
    set_weights(net, k);
    running_max->update_parameters(net);
  }
  std::vector<double> want = h.at("0.bias")[0];
  for (int k = 1; k < n; ++k)
    for (size_t e = 0; e < want.size(); ++e) want[e] = std::max(want[e], h.at("0.bias")[k][e]);
  CHECK(values_of((*running_max->module)[0]->as<nn::Linear>()->bias) == want);
}

TEST_CASE("AveragedModel: an f32 EMA over a training loop follows the weights") {
  manual_seed(3);
  nn::Linear net(4, 1);
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05));
  optim::AveragedModel ema(net, optim::get_ema_multi_avg_fn(0.75));
  Tensor x = randn({32, 4}), y = x.sum({1}, true);
  std::vector<float> want;
  for (int s = 0; s < 20; ++s) {
    opt.zero_grad();
    ((net(x) - y).square().mean()).backward();
    opt.step();
    ema->update_parameters(net);
    const auto w = net->weight.detach().contiguous();
    if (s == 0) want.assign(w.data_ptr<float>(), w.data_ptr<float>() + 4);
    else
      for (int e = 0; e < 4; ++e) want[e] = want[e] + 0.25f * (w.data_ptr<float>()[e] - want[e]);  // lerp, weight 0.25
  }
  const auto got = ema->module->weight.detach().contiguous();
  for (int e = 0; e < 4; ++e) CHECK(got.data_ptr<float>()[e] == want[e]);
}

TEST_CASE("AveragedModel errors: another structure, bad decay, empty handles; a failed update changes nothing") {
  nn::Sequential net = make_net();
  optim::AveragedModel swa(net);
  swa->update_parameters(net);
  const std::vector<double> before = values_of((*swa->module)[0]->as<nn::Linear>()->weight);
  nn::Sequential wider = make_net(5);
  CHECK_ERROR(swa->update_parameters(wider), "[AveragedModel]", "'0.weight'", "[5, 3] in the model", "[4, 3]");
  nn::Sequential shorter(nn::Linear(3, 4));
  CHECK_ERROR(swa->update_parameters(shorter), "[AveragedModel]", "the model has 2 parameters",
              "the averaged copy 6");
  CHECK(swa->n_averaged.item<int64_t>() == 1);
  CHECK(values_of((*swa->module)[0]->as<nn::Linear>()->weight) == before);

  CHECK_ERROR(optim::get_ema_multi_avg_fn(1.5), "[get_ema_multi_avg_fn]", "decay", "1.5");
  CHECK_ERROR(optim::get_ema_avg_fn(std::nan("")), "[get_ema_avg_fn]", "decay", "nan");
  nn::Sequential empty{nullptr};
  CHECK_ERROR(optim::AveragedModel<nn::SequentialImpl>(empty), "[AveragedModel]", "empty handle");
  CHECK_ERROR(swa->update_parameters(std::shared_ptr<nn::SequentialImpl>()), "[AveragedModel]", "empty handle");
  CHECK_ERROR(swa->update_parameters(empty), "empty module handle");
  CHECK_ERROR(optim::update_bn(std::vector<Tensor>{}, empty), "empty module handle");

  // Buffers that do not match (without use_buffers they are copied): refused, nothing changes.
  nn::Sequential no_stats(nn::Linear(3, 4), nn::BatchNorm1d(nn::BatchNormOptions(4).track_running_stats(false)),
                          nn::Linear(4, 2));
  no_stats->to(DType::F64);
  CHECK_ERROR(swa->update_parameters(no_stats), "[AveragedModel]", "the model has 0 buffers", "averaged copy 3");
  CHECK(swa->n_averaged.item<int64_t>() == 1);

  // A layer shared by two places: its clone would not be shared, so no update could pair them.
  nn::Linear shared(2, 2);
  nn::Sequential tied(shared, nn::ReLU(), shared);
  CHECK_ERROR(optim::AveragedModel<nn::SequentialImpl>(tied), "[AveragedModel]", "shares parameters",
              "2 parameters");
}

TEST_CASE("update_bn: running statistics from one equal-weight pass; mode and momentum restored") {
  manual_seed(11);
  nn::Sequential net = make_net();
  auto* bn = net[1]->as<nn::BatchNorm1d>();
  bn->options.momentum(0.3);
  set_weights(net, 2);  // stale statistics, to be replaced
  net->eval();
  std::vector<Tensor> batches = {randn({5, 3}, TensorOptions(DType::F64)), randn({7, 3}, TensorOptions(DType::F64)),
                                 randn({6, 3}, TensorOptions(DType::F64))};
  // The reference: each batch's mean and unbiased variance of the first layer's output,
  // averaged with equal weight per batch (PyTorch's momentum None).
  std::vector<double> mean(4, 0.0), var(4, 0.0);
  {
    autograd::NoGradGuard ng;
    for (const Tensor& b : batches) {
      Tensor z = net[0]->as<nn::Linear>()->forward(b);
      auto m = values_of(z.mean({0})), v = values_of(z.var({0}, 1));
      for (int c = 0; c < 4; ++c) mean[c] += m[c] / 3, var[c] += v[c] / 3;
    }
  }
  optim::update_bn(batches, net);
  for (int c = 0; c < 4; ++c) {
    CHECK(values_of(bn->running_mean)[c] == doctest::Approx(mean[c]).epsilon(1e-12));
    CHECK(values_of(bn->running_var)[c] == doctest::Approx(var[c]).epsilon(1e-12));
  }
  CHECK(bn->num_batches_tracked.item<int64_t>() == 3);
  CHECK(bn->options.momentum() == std::optional<double>(0.3));
  CHECK(!net->is_training());

  // Batches as (input, target) tuples give the same statistics; so does an AveragedModel.
  const std::vector<double> first = values_of(bn->running_mean);
  std::vector<std::tuple<Tensor, Tensor>> pairs;
  for (const Tensor& b : batches) pairs.emplace_back(b, zeros({b.size(0)}));
  set_weights(net, 2);
  optim::update_bn(pairs, net);
  CHECK(values_of(bn->running_mean) == first);
  optim::AveragedModel swa(net);
  auto* swa_bn = (*swa->module)[1]->as<nn::BatchNorm1d>();
  swa_bn->reset_running_stats();
  optim::update_bn(batches, swa);
  CHECK(values_of(swa_bn->running_mean) == first);
  CHECK(swa_bn->num_batches_tracked.item<int64_t>() == 3);
  // Batches as lists of tensors (a Stack collate's vectors): the first is the input.
  std::vector<std::vector<Tensor>> lists;
  for (const Tensor& b : batches) lists.push_back({b, zeros({b.size(0)})});
  set_weights(net, 2);
  optim::update_bn(lists, net);
  CHECK(values_of(bn->running_mean) == first);
  // A layer whose momentum was None keeps None.
  bn->options.momentum(std::nullopt);
  optim::update_bn(batches, net);
  CHECK(!bn->options.momentum().has_value());
  CHECK(values_of(bn->running_mean) == first);
  bn->options.momentum(0.3);

  // A forward that fails midway: the error reaches the caller; the layer, the mode and the
  // statistics are as before the call.
  set_weights(net, 1);
  const std::vector<double> stale = values_of(bn->running_mean);
  std::vector<Tensor> bad = {batches[0], randn({4, 5}, TensorOptions(DType::F64))};
  CHECK_ERROR(optim::update_bn(bad, net), "[Linear]");
  CHECK(bn->options.momentum() == std::optional<double>(0.3));
  CHECK(!net->is_training());
  CHECK(values_of(bn->running_mean) == stale);
  CHECK(bn->num_batches_tracked.item<int64_t>() == 4);

  // Without batch normalisation nothing runs (the bad batch is never seen).
  nn::Sequential plain(nn::Linear(3, 2));
  optim::update_bn(bad, plain);
}

TEST_CASE("SWALR: per-group targets, and errors") {
  Tensor w = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  optim::SGD opt({optim::ParamGroup({w}), optim::ParamGroup({b}, optim::SGDOptions(0.5))}, optim::SGDOptions(0.1));
  optim::SWALR s(opt, {0.01, 0.02}, 3, optim::AnnealStrategy::Linear);
  CHECK(s.swa_lrs() == std::vector<double>{0.01, 0.02});
  for (int i = 0; i < 5; ++i) s.step();
  CHECK(s.get_last_lr()[0] == doctest::Approx(0.01));
  CHECK(s.get_last_lr()[1] == doctest::Approx(0.02));
  // A refused scheduler leaves the optimiser as it was (no initial_lr recorded).
  optim::SGD fresh(std::vector<Tensor>{zeros({1}).requires_grad_()}, optim::SGDOptions(0.1));
  CHECK_ERROR(optim::SWALR(fresh, -0.1), "[SWALR]", "swa_lr", "-0.1");
  CHECK(!fresh.param_groups()[0].initial_lr.has_value());
  CHECK_ERROR(optim::SWALR(opt, -0.1), "[SWALR]", "swa_lr", "-0.1");
  CHECK_ERROR(optim::SWALR(opt, 0.1, -1), "[SWALR]", "anneal_epochs", "-1");
  CHECK_ERROR(optim::SWALR(opt, {0.1, 0.2, 0.3}), "[SWALR]", "swa_lr", "list of 3");
}

}  // namespace test_swa_utils
