#pragma once
/// Single layers, forward and backward (ms per pass): the layers whose speed users of CNNs,
/// sequence models and embeddings meet outside the five training steps. Each pass
/// runs the layer on a fixed input and backpropagates a fixed random gradient of the output's
/// shape (not the gradient of sum(), which is an expanded tensor that no real loss produces).
/// Parameter and input gradients accumulate across passes, as in training without
/// zero_grad; libtorch's twins (libtorch_layer_workloads.cpp) do the same.

#include <ember/nn.hpp>

#include "workloads.hpp"

#include <memory>
#include <string>
#include <vector>

namespace bench::layer_workloads {

using namespace ember;

/// The layer workloads' names, in table order.
inline const std::vector<std::string>& names() {
  static const std::vector<std::string> n = {
      "layer_conv1x1",   "layer_conv3x3_s2", "layer_depthwise3x3", "layer_batchnorm2d", "layer_avgpool2",
      "layer_upsample2", "layer_gelu",       "layer_lstm",         "layer_gru",         "layer_embedding"};
  return n;
}

/// The workload called `name` (see names()).
inline RunFn make(const std::string& name) {
  struct S {
    std::function<Tensor()> forward;
    Tensor grad;
  };
  auto s = std::make_shared<S>();
  manual_seed(5);
  // (8, 64, 56, 56): a ResNet/MobileNet stage at batch 8.
  auto image = [] { return randn({8, 64, 56, 56}).requires_grad_(true); };
  if (name == "layer_conv1x1") {
    nn::Conv2d c(nn::Conv2dOptions(64, 128, 1));
    Tensor x = image();
    s->forward = [c, x]() mutable { return c(x); };
  } else if (name == "layer_conv3x3_s2") {
    nn::Conv2d c(nn::Conv2dOptions(64, 128, 3).stride(2).padding(1));
    Tensor x = image();
    s->forward = [c, x]() mutable { return c(x); };
  } else if (name == "layer_depthwise3x3") {
    nn::Conv2d c(nn::Conv2dOptions(64, 64, 3).padding(1).groups(64));
    Tensor x = image();
    s->forward = [c, x]() mutable { return c(x); };
  } else if (name == "layer_batchnorm2d") {
    nn::BatchNorm2d bn(64);
    Tensor x = image();
    s->forward = [bn, x]() mutable { return bn(x); };
  } else if (name == "layer_avgpool2") {
    Tensor x = image();
    s->forward = [x] { return nn::F::avg_pool2d(x, 2); };
  } else if (name == "layer_upsample2") {  // nearest, 56 -> 112
    Tensor x = image();
    s->forward = [x] { return nn::F::interpolate(x, {112, 112}); };
  } else if (name == "layer_gelu") {
    Tensor x = image();
    s->forward = [x] { return x.gelu(); };
  } else if (name == "layer_lstm" || name == "layer_gru") {  // 50 steps, batch 16, 32 -> 128
    Tensor seq = randn({50, 16, 32});
    if (name == "layer_lstm") {
      nn::LSTM rnn(nn::LSTMOptions(32, 128));
      s->forward = [rnn, seq]() mutable { return rnn(seq).first; };
    } else {
      nn::GRU rnn(nn::GRUOptions(32, 128));
      s->forward = [rnn, seq]() mutable { return rnn(seq).first; };
    }
  } else if (name == "layer_embedding") {  // 4096 lookups of 128 in 10000
    nn::Embedding emb(10000, 128);
    Tensor idx = randint(0, 10000, {4096});
    s->forward = [emb, idx]() mutable { return emb(idx); };
  } else {
    return {};
  }
  s->grad = randn_like(s->forward());
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) s->forward().backward(s->grad);
  };
}

}  // namespace bench::layer_workloads
