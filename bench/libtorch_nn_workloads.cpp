// libtorch's side of the nn training and inference workloads (see nn_workloads.hpp for the
// definitions): the same architectures, losses and optimisers through torch::nn and
// torch::optim. Built only with -Dlibtorch_compare=enabled.

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "workloads.hpp"

#include <memory>
#include <string>

namespace bench::libtorch {

namespace {
/// torch.autocast("cpu", torch.bfloat16) in C++: on for a scope, then off and its cache of
/// casts cleared, as the Python context manager does when its outermost region ends.
struct AutocastScope {
  bool on;
  explicit AutocastScope(bool enable) : on(enable) {
    if (!on) return;
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  ~AutocastScope() {
    if (!on) return;
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
  }
};
}  // namespace

RunFn make_nn(const std::string& name) {
  namespace tn = torch::nn;
  if (name == "mlp_robotics_step" || name == "mlp_infer_b1" || name == "mlp_infer_b1_bf16" ||
      name == "mlp_infer_b1_inference_policy") {
    torch::manual_seed(1);
    auto net = std::make_shared<tn::Sequential>(tn::Linear(64, 256), tn::ReLU(), tn::Linear(256, 256), tn::ReLU(),
                                                tn::Linear(256, 8));
    if (name != "mlp_robotics_step") {
      auto x = std::make_shared<torch::Tensor>(torch::randn({1, 64}));
      const bool bf16 = name == "mlp_infer_b1_bf16";
      if (name == "mlp_infer_b1_inference_policy") {
        return [net, x](int64_t iters) {
          c10::InferenceMode guard;  // no autograd bookkeeping at all (Ember: InferencePolicy)
          for (int64_t i = 0; i < iters; ++i) {
            torch::Tensor y = (*net)->forward(*x);
            escape(y.data_ptr());
          }
        };
      }
      return [net, x, bf16](int64_t iters) {
        torch::NoGradGuard ng;
        AutocastScope autocast(bf16);
        for (int64_t i = 0; i < iters; ++i) {
          torch::Tensor y = (*net)->forward(*x);
          escape(y.data_ptr());
        }
      };
    }
    auto opt = std::make_shared<torch::optim::Adam>((*net)->parameters(), torch::optim::AdamOptions(1e-3));
    auto x = std::make_shared<torch::Tensor>(torch::randn({32, 64}));
    auto y = std::make_shared<torch::Tensor>(torch::randn({32, 8}));
    return [net, opt, x, y](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        opt->zero_grad();
        torch::Tensor loss = torch::mse_loss((*net)->forward(*x), *y);
        loss.backward();
        opt->step();
      }
    };
  }
  if (name == "mlp_mnist_step") {
    torch::manual_seed(2);
    auto net = std::make_shared<tn::Sequential>(tn::Linear(784, 512), tn::ReLU(), tn::Linear(512, 512), tn::ReLU(),
                                                tn::Linear(512, 10));
    auto opt = std::make_shared<torch::optim::SGD>((*net)->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    auto x = std::make_shared<torch::Tensor>(torch::randn({128, 784}));
    auto y = std::make_shared<torch::Tensor>(torch::randint(0, 10, {128}));
    return [net, opt, x, y](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        opt->zero_grad();
        torch::Tensor loss = torch::cross_entropy_loss((*net)->forward(*x), *y);
        loss.backward();
        opt->step();
      }
    };
  }
  if (name == "cnn_small_step") {
    torch::manual_seed(3);
    auto net = std::make_shared<tn::Sequential>(
        tn::Conv2d(tn::Conv2dOptions(1, 32, 3).padding(1)), tn::ReLU(), tn::MaxPool2d(2),
        tn::Conv2d(tn::Conv2dOptions(32, 64, 3).padding(1)), tn::ReLU(), tn::MaxPool2d(2), tn::Flatten(),
        tn::Linear(3136, 128), tn::ReLU(), tn::Linear(128, 10));
    auto opt = std::make_shared<torch::optim::Adam>((*net)->parameters(), torch::optim::AdamOptions(1e-3));
    auto x = std::make_shared<torch::Tensor>(torch::randn({64, 1, 28, 28}));
    auto y = std::make_shared<torch::Tensor>(torch::randint(0, 10, {64}));
    return [net, opt, x, y](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        opt->zero_grad();
        torch::Tensor loss = torch::cross_entropy_loss((*net)->forward(*x), *y);
        loss.backward();
        opt->step();
      }
    };
  }
  if (name == "transformer_small_step" || name == "transformer_small_step_bf16") {
    const bool bf16 = name == "transformer_small_step_bf16";
    torch::manual_seed(4);
    struct S {
      tn::Embedding emb{256, 128};
      tn::TransformerEncoder enc{
          tn::TransformerEncoderOptions(tn::TransformerEncoderLayerOptions(128, 4).dim_feedforward(512).dropout(0.0), 2)};
      tn::Linear head{128, 256};
      std::unique_ptr<torch::optim::AdamW> opt;
      torch::Tensor tokens = torch::randint(0, 256, {64, 16}), target = torch::randint(0, 256, {64 * 16});
    };
    auto s = std::make_shared<S>();
    std::vector<torch::Tensor> params = s->emb->parameters();
    for (auto& t : s->enc->parameters()) params.push_back(t);
    for (auto& t : s->head->parameters()) params.push_back(t);
    s->opt = std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-3));
    return [s, bf16](int64_t iters) {
      for (int64_t i = 0; i < iters; ++i) {
        s->opt->zero_grad();
        torch::Tensor loss;
        {
          AutocastScope autocast(bf16);
          torch::Tensor logits = s->head(s->enc(s->emb(s->tokens)));
          loss = torch::cross_entropy_loss(logits.reshape({-1, 256}), s->target);
        }
        loss.backward();
        s->opt->step();
      }
    };
  }
  return {};
}

}  // namespace bench::libtorch
