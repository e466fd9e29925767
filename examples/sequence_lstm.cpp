// An LSTM solves the adding problem: each step carries a random value and a marker; exactly
// two steps are marked, and the target is the sum of their values. A model must remember the
// marked values across the whole sequence; predicting the mean (1.0) gives an MSE of ~0.167.
//
//   build/examples/sequence_lstm [--steps N] [--length L] [--hidden H] [--seed S] [--help]
//
// The last line is `key=value` pairs for scripts: test_mse=...

#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include "cli.hpp"

#include <cstdio>
#include <random>

using namespace ember;

namespace {

struct Args {
  int steps = 1500;
  int length = 20;
  int hidden = 32;
  uint64_t seed = 7;
};

Args parse(int argc, char** argv) {
  Args a;
  ember_examples::Cli("sequence_lstm", "Trains an LSTM on the adding problem; prints test_mse at the end.")
      .flag("--steps", a.steps, "N", "optimiser steps of 64 sequences", 0)
      .flag("--length", a.length, "L", "sequence length (two steps are marked)", 2)
      .flag("--hidden", a.hidden, "H", "LSTM hidden size", 1)
      .flag("--seed", a.seed, "S", "seed of the data and the weights")
      .parse(argc, argv);
  return a;
}

/// (L, N, 2) inputs (value, marker) and (N, 1) targets.
std::pair<Tensor, Tensor> adding_batch(int n, int len, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(0, 1);
  std::uniform_int_distribution<int> pos(0, len - 1);
  Tensor x = zeros({len, n, 2}), y = zeros({n, 1});
  float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int b = 0; b < n; ++b) {
    int i = pos(rng), j = pos(rng);
    while (j == i) j = pos(rng);
    for (int t = 0; t < len; ++t) xp[(t * n + b) * 2] = u(rng);
    xp[(i * n + b) * 2 + 1] = 1, xp[(j * n + b) * 2 + 1] = 1;
    yp[b] = xp[(i * n + b) * 2] + xp[(j * n + b) * 2];
  }
  return {x, y};
}

struct AdderImpl : nn::Module {
  explicit AdderImpl(int hidden) : nn::Module("Adder") {
    lstm = register_module("lstm", nn::LSTM(2, hidden));
    head = register_module("head", nn::Linear(hidden, 1));
  }
  Tensor forward(const Tensor& x) {
    auto [out, state] = lstm(x);
    return head(state.first.squeeze(0));  // the last hidden state
  }
  nn::LSTM lstm{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(Adder);

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  return ember_examples::run_main("sequence_lstm", [&] {
    manual_seed(args.seed);
    std::mt19937_64 rng(args.seed);
    Adder model(args.hidden);
    optim::Adam opt(model->parameters(), optim::AdamOptions(1e-2));
    for (int step = 1; step <= args.steps; ++step) {
      auto [x, y] = adding_batch(64, args.length, rng);
      opt.zero_grad();
      Tensor loss = nn::F::mse_loss(model(x), y);
      loss.backward();
      nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      opt.step();
      if (step % 250 == 0) std::printf("step %5d  mse %.5f\n", step, loss.item<double>());
    }
    auto [tx, ty] = adding_batch(1000, args.length, rng);
    double test;
    {
      autograd::NoGradGuard ng;
      test = nn::F::mse_loss(model(tx), ty).item<double>();
    }
    std::printf("steps=%d length=%d hidden=%d baseline_mse=0.1667 test_mse=%.5f\n", args.steps, args.length, args.hidden,
                test);
    return 0;
  });
}
