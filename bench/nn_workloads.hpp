#pragma once
/// Ember's side of the training and inference workloads of issue "nn, optim and data"; the
/// libtorch twins are in libtorch_nn_workloads.cpp. Each returns a RunFn that performs whole
/// steps: zero_grad, forward, loss, backward, optimiser step.

#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include "workloads.hpp"

#include <memory>

namespace bench::nn_workloads {

using namespace ember;

/// The robotics MLP, 64-256-256-8 with ReLU, for policy P (training, batch-1 inference, and
/// batch-1 inference under InferencePolicy use the same network and, from one seed, weights).
template <class P = DefaultPolicy>
nn::BasicSequential<P> robotics_mlp() {
  // Braces: the layers are made (and draw their weights) left to right.
  return nn::BasicSequential<P>{nn::BasicLinear<P>(64, 256), nn::BasicReLU<P>(), nn::BasicLinear<P>(256, 256),
                                nn::BasicReLU<P>(), nn::BasicLinear<P>(256, 8)};
}

/// 64-256-256-8 ReLU MLP, batch 32, MSE, Adam.
inline RunFn mlp_robotics_step(int) {
  struct S {
    nn::Sequential net = robotics_mlp();
    optim::Adam opt{net->parameters(), optim::AdamOptions(1e-3)};
    Tensor x = randn({32, 64}), y = randn({32, 8});
  };
  manual_seed(1);
  auto s = std::make_shared<S>();
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      s->opt.zero_grad();
      Tensor loss = nn::F::mse_loss(s->net(s->x), s->y);
      loss.backward();
      s->opt.step();
    }
  };
}

/// 784-512-512-10 ReLU MLP, batch 128, cross-entropy, SGD with momentum 0.9.
inline RunFn mlp_mnist_step(int) {
  struct S {
    nn::Sequential net{nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 512), nn::ReLU(), nn::Linear(512, 10)};
    optim::SGD opt{net->parameters(), optim::SGDOptions(0.01).momentum(0.9)};
    Tensor x = randn({128, 784}), y = randint(0, 10, {128});
  };
  manual_seed(2);
  auto s = std::make_shared<S>();
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      s->opt.zero_grad();
      Tensor loss = nn::F::cross_entropy(s->net(s->x), s->y);
      loss.backward();
      s->opt.step();
    }
  };
}

/// 1x28x28, batch 64: conv 1->32 3x3 pad 1, ReLU, maxpool 2, conv 32->64 3x3 pad 1, ReLU,
/// maxpool 2, flatten, linear 3136->128, ReLU, linear 128->10, cross-entropy, Adam.
inline RunFn cnn_small_step(int) {
  struct S {
    nn::Sequential net{nn::Conv2d(nn::Conv2dOptions(1, 32, {3}).padding({1})), nn::ReLU(),
                       nn::MaxPool2d(nn::PoolOptions({2})), nn::Conv2d(nn::Conv2dOptions(32, 64, {3}).padding({1})),
                       nn::ReLU(), nn::MaxPool2d(nn::PoolOptions({2})), nn::Flatten(), nn::Linear(3136, 128),
                       nn::ReLU(), nn::Linear(128, 10)};
    optim::Adam opt{net->parameters(), optim::AdamOptions(1e-3)};
    Tensor x = randn({64, 1, 28, 28}), y = randint(0, 10, {64});
  };
  manual_seed(3);
  auto s = std::make_shared<S>();
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      s->opt.zero_grad();
      Tensor loss = nn::F::cross_entropy(s->net(s->x), s->y);
      loss.backward();
      s->opt.step();
    }
  };
}

/// Vocabulary 256, d_model 128, 4 heads, 2 encoder layers, feed-forward 512, dropout 0,
/// sequence 64, batch 16, linear head, cross-entropy, AdamW. With `bf16`, forward and loss
/// run under an AutocastGuard (bf16 products; backward outside it, as in PyTorch's recipe).
inline RunFn transformer_step(bool bf16) {
  struct S {
    nn::Embedding emb{256, 128};
    nn::TransformerEncoder enc{
        nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(128, 4).dim_feedforward(512).dropout(0.0)), 2};
    nn::Linear head{128, 256};
    std::vector<Tensor> params() {
      std::vector<Tensor> p = emb->parameters();
      for (auto& t : enc->parameters()) p.push_back(t);
      for (auto& t : head->parameters()) p.push_back(t);
      return p;
    }
    optim::AdamW opt{params(), optim::AdamWOptions(1e-3)};
    Tensor tokens = randint(0, 256, {64, 16}), target = randint(0, 256, {64 * 16});
  };
  manual_seed(4);
  auto s = std::make_shared<S>();
  return [s, bf16](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      s->opt.zero_grad();
      Tensor loss;
      {
        AutocastGuard autocast(DType::BF16, bf16);
        Tensor logits = s->head(s->enc(s->emb(s->tokens)));  // (L, N, 256)
        loss = nn::F::cross_entropy(logits.reshape({-1, 256}), s->target);
      }
      loss.backward();
      s->opt.step();
    }
  };
}
inline RunFn transformer_small_step(int) { return transformer_step(false); }
inline RunFn transformer_small_step_bf16(int) { return transformer_step(true); }

/// The robotics MLP at batch 1 without grad: one inference. With `bf16`, under one
/// AutocastGuard (a serving loop's: the parameters' bf16 copies are made once and reused).
inline RunFn mlp_infer(bool bf16) {
  struct S {
    nn::Sequential net = robotics_mlp();
    Tensor x = randn({1, 64});
  };
  manual_seed(5);
  auto s = std::make_shared<S>();
  return [s, bf16](int64_t iters) {
    autograd::NoGradGuard ng;
    AutocastGuard autocast(DType::BF16, bf16);
    for (int64_t i = 0; i < iters; ++i) {
      Tensor y = s->net(s->x);
      escape(y.raw_data());
    }
  };
}
/// The same MLP (the same weights) built for InferencePolicy, as an embedded deployment would:
/// no layer on the op path (no autograd, autocast or profiler checks). libtorch's twin runs
/// under InferenceMode, its lightest form of inference.
inline RunFn mlp_infer_b1_inference_policy(int) {
  using IP = InferencePolicy;
  struct S {
    nn::BasicSequential<IP> net = robotics_mlp<IP>();
    BasicTensor<IP> x = randn<IP>({1, 64});
  };
  manual_seed(5);
  auto s = std::make_shared<S>();
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      BasicTensor<IP> y = s->net(s->x);
      escape(y.raw_data());
    }
  };
}
inline RunFn mlp_infer_b1(int) { return mlp_infer(false); }
inline RunFn mlp_infer_b1_bf16(int) { return mlp_infer(true); }

}  // namespace bench::nn_workloads
