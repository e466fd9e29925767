// libtorch's side of the single-layer workloads (see layer_workloads.hpp for the definitions):
// the same layers, inputs and fixed output gradients through torch::nn. Built only with
// -Dlibtorch_compare=enabled.

#include <torch/torch.h>

#include "workloads.hpp"

#include <functional>
#include <memory>
#include <string>

namespace bench::libtorch {

RunFn make_layer(const std::string& name) {
  namespace tn = torch::nn;
  struct S {
    std::function<torch::Tensor()> forward;
    torch::Tensor grad;
  };
  auto s = std::make_shared<S>();
  torch::manual_seed(5);
  auto image = [] { return torch::randn({8, 64, 56, 56}).requires_grad_(true); };
  if (name == "layer_conv1x1") {
    tn::Conv2d c(tn::Conv2dOptions(64, 128, 1));
    torch::Tensor x = image();
    s->forward = [c, x]() mutable { return c(x); };
  } else if (name == "layer_conv3x3_s2") {
    tn::Conv2d c(tn::Conv2dOptions(64, 128, 3).stride(2).padding(1));
    torch::Tensor x = image();
    s->forward = [c, x]() mutable { return c(x); };
  } else if (name == "layer_depthwise3x3") {
    tn::Conv2d c(tn::Conv2dOptions(64, 64, 3).padding(1).groups(64));
    torch::Tensor x = image();
    s->forward = [c, x]() mutable { return c(x); };
  } else if (name == "layer_batchnorm2d") {
    tn::BatchNorm2d bn(64);
    torch::Tensor x = image();
    s->forward = [bn, x]() mutable { return bn(x); };
  } else if (name == "layer_avgpool2") {
    torch::Tensor x = image();
    s->forward = [x] { return torch::avg_pool2d(x, 2); };
  } else if (name == "layer_upsample2") {
    torch::Tensor x = image();
    s->forward = [x] { return torch::upsample_nearest2d(x, {112, 112}); };
  } else if (name == "layer_gelu") {
    torch::Tensor x = image();
    s->forward = [x] { return torch::gelu(x); };
  } else if (name == "layer_lstm" || name == "layer_gru") {
    torch::Tensor seq = torch::randn({50, 16, 32});
    if (name == "layer_lstm") {
      tn::LSTM rnn(tn::LSTMOptions(32, 128));
      s->forward = [rnn, seq]() mutable { return std::get<0>(rnn(seq)); };
    } else {
      tn::GRU rnn(tn::GRUOptions(32, 128));
      s->forward = [rnn, seq]() mutable { return std::get<0>(rnn(seq)); };
    }
  } else if (name == "layer_embedding") {
    tn::Embedding emb(10000, 128);
    torch::Tensor idx = torch::randint(0, 10000, {4096});
    s->forward = [emb, idx]() mutable { return emb(idx); };
  } else {
    return {};
  }
  s->grad = torch::randn_like(s->forward());
  return [s](int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) s->forward().backward(s->grad);
  };
}

}  // namespace bench::libtorch
