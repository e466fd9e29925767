// Learns the forward dynamics of a simulated two-link planar arm, as an embedded controller
// would: a fixed-size batch of fresh transitions every tick and one optimiser step per tick.
//
//   build/examples/robot_dynamics [--ticks N] [--batch B] [--lr LR] [--seed S] [--help]
//
// The model maps (q1, q2, dq1, dq2, tau1, tau2) to the joint accelerations; the simulator
// is the rigid-body model of two uniform links (mass matrix, Coriolis and gravity terms)
// written out below. After training, the model is deployed as a controller's firmware would
// run it: rebuilt for InferencePolicy (no autograd code on its path) from the trained weights,
// and checked to predict exactly what the trained model does. The last line is `key=value`
// pairs for scripts: val_mse=... deployed_max_diff=...

#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include "cli.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace ember;

namespace {

struct Args {
  int ticks = 3000;
  int batch = 64;
  double lr = 2e-3;
  uint64_t seed = 1;
};

Args parse(int argc, char** argv) {
  Args a;
  ember_examples::Cli("robot_dynamics", "Learns a two-link arm's forward dynamics online; prints val_mse at the end.")
      .flag("--ticks", a.ticks, "N", "control ticks, one optimiser step each", 1)
      .flag("--batch", a.batch, "B", "fresh transitions per tick", 1)
      .flag("--lr", a.lr, "LR", "Adam learning rate", 0)
      .flag("--seed", a.seed, "S", "seed of the simulator and the weights")
      .parse(argc, argv);
  return a;
}

/// Two uniform links of mass 1 kg and length 1 m under gravity: ddq = M(q)^-1 (tau - C(q, dq) dq - g(q)).
struct TwoLinkArm {
  double m1 = 1, m2 = 1, l1 = 1, l2 = 1, g = 9.81;
  void accel(const double* s, double* out) const {
    double q1 = s[0], q2 = s[1], dq1 = s[2], dq2 = s[3], t1 = s[4], t2 = s[5];
    double lc1 = l1 / 2, lc2 = l2 / 2, i1 = m1 * l1 * l1 / 12, i2 = m2 * l2 * l2 / 12;
    double c2 = std::cos(q2), s2 = std::sin(q2);
    double m11 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * c2) + i1 + i2;
    double m12 = m2 * (lc2 * lc2 + l1 * lc2 * c2) + i2, m22 = m2 * lc2 * lc2 + i2;
    double h = m2 * l1 * lc2 * s2;
    double c1 = -h * dq2 * dq1 - h * (dq1 + dq2) * dq2, cc2 = h * dq1 * dq1;
    double g1 = (m1 * lc1 + m2 * l1) * g * std::cos(q1) + m2 * lc2 * g * std::cos(q1 + q2);
    double g2 = m2 * lc2 * g * std::cos(q1 + q2);
    double r1 = t1 - c1 - g1, r2 = t2 - cc2 - g2, det = m11 * m22 - m12 * m12;
    out[0] = (m22 * r1 - m12 * r2) / det;
    out[1] = (m11 * r2 - m12 * r1) / det;
  }
};

/// A batch of random states and torques, with the true accelerations (scaled by 1/10).
std::pair<Tensor, Tensor> sample(const TwoLinkArm& arm, int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> ang(-M_PI, M_PI), vel(-2, 2), tau(-10, 10);
  Tensor x = empty({n, 6}), y = empty({n, 2});
  float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int i = 0; i < n; ++i) {
    double s[6] = {ang(rng), ang(rng), vel(rng), vel(rng), tau(rng), tau(rng)}, a[2];
    arm.accel(s, a);
    for (int j = 0; j < 6; ++j) xp[i * 6 + j] = static_cast<float>(j < 2 ? s[j] : s[j] / 5);
    for (int j = 0; j < 2; ++j) yp[i * 2 + j] = static_cast<float>(a[j] / 10);
  }
  return {x, y};
}

/// sin/cos features of the angles make the periodic dynamics easy to fit.
template <class P>
BasicTensor<P> features(const BasicTensor<P>& x) {
  BasicTensor<P> q = x.narrow(1, 0, 2);
  return cat(std::vector<BasicTensor<P>>{q.sin(), q.cos(), x.narrow(1, 2, 4)}, 1);
}

/// The network, for the training policy or the deployed one.
template <class P>
std::shared_ptr<nn::BasicSequentialImpl<P>> make_model() {
  return std::make_shared<nn::BasicSequentialImpl<P>>(nn::BasicLinear<P>(8, 128), nn::BasicSiLU<P>(),
                                                      nn::BasicLinear<P>(128, 128), nn::BasicSiLU<P>(),
                                                      nn::BasicLinear<P>(128, 2));
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  return ember_examples::run_main("robot_dynamics", [&] {
    manual_seed(args.seed);
    std::mt19937_64 rng(args.seed);
    TwoLinkArm arm;

    nn::Sequential model(make_model<DefaultPolicy>());
    optim::Adam opt(model->parameters(), optim::AdamOptions(args.lr));
    nn::MSELoss mse;

    auto [vx, vy] = sample(arm, 2048, rng);  // held-out validation set
    auto t0 = std::chrono::steady_clock::now();
    double running = 0;
    for (int tick = 1; tick <= args.ticks; ++tick) {
      auto [x, y] = sample(arm, args.batch, rng);
      opt.zero_grad();
      Tensor loss = mse(model(features(x)), y);
      loss.backward();
      opt.step();
      running = 0.98 * running + 0.02 * loss.item<double>();
      if (tick % 500 == 0) std::printf("tick %5d  train_mse %.5f\n", tick, running);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double val;
    Tensor predicted;
    {
      autograd::NoGradGuard ng;
      predicted = model(features(vx));
      val = mse(predicted, vy).item<double>();
    }

    // Deployment: the same network for InferencePolicy, loaded with the trained weights (in
    // memory here; a device would nn::load the file that nn::save wrote).
    using Deployed = BasicTensor<InferencePolicy>;
    auto deployed = make_model<InferencePolicy>();
    deployed->load_state_dict(to_policy<InferencePolicy>(model->state_dict()));
    const Deployed on_device = deployed->forward(features(to_policy<InferencePolicy>(vx)));
    const Tensor deployed_out = to_policy<DefaultPolicy>(on_device);
    // NaN where training diverged (a large --lr) is NaN in both: compared as equal.
    const double deployed_diff = (predicted - deployed_out).nan_to_num(0.0).abs().max().item<double>();
    const bool same = deployed_diff == 0.0 && predicted.isnan().equal(deployed_out.isnan());
    std::printf("ticks=%d batch=%d seconds=%.2f us_per_tick=%.1f val_mse=%.5f deployed_max_diff=%g\n", args.ticks,
                args.batch, secs, 1e6 * secs / args.ticks, val, deployed_diff);
    if (!same) std::fprintf(stderr, "robot_dynamics: the deployed model's predictions differ from the trained model's\n");
    return same ? 0 : 1;
  });
}
