// Footprint test of an nn program: the same kind of inference-only build as main.cpp, through
// nn modules (a small CNN in a Sequential) and a state file, as an embedded deployment loads its trained
// weights. check.sh asserts that the modules pulled in no autograd and no CUDA symbols.
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/nn/serialize.hpp>

#include <cstdio>
#include <memory>
#include <sstream>

using P = ember::InferencePolicy;
namespace nn = ember::nn;

/// A small CNN for 1x8x8 inputs: conv, batch norm, ReLU, pooling, then an MLP head.
static std::shared_ptr<nn::BasicSequentialImpl<P>> make_net() {
  return std::make_shared<nn::BasicSequentialImpl<P>>(
      std::make_shared<nn::BasicConvImpl<2, P>>(nn::ConvOptions(1, 4, {3}).padding(1)),
      std::make_shared<nn::BasicBatchNormImpl<2, P>>(nn::BatchNormOptions(4)), std::make_shared<nn::BasicReLUImpl<P>>(),
      std::make_shared<nn::BasicMaxPoolImpl<2, P>>(nn::IntArgs{2}), std::make_shared<nn::BasicFlattenImpl<P>>(),
      std::make_shared<nn::BasicLinearImpl<P>>(64, 32), std::make_shared<nn::BasicReLUImpl<P>>(),
      std::make_shared<nn::BasicLinearImpl<P>>(32, 4));
}

int main() {
  ember::manual_seed(0);
  auto trained = make_net();
  trained->eval();
  std::stringstream file;  // what a training program would have written with nn::save
  nn::save(*trained, file);
  ember::manual_seed(1);
  auto deployed = make_net();
  deployed->eval();
  nn::load(*deployed, file);
  // What deployment code does besides forward (each must link no autograd code either).
  deployed->to(ember::DType::F32);
  deployed->zero_grad();
  deployed = std::static_pointer_cast<nn::BasicSequentialImpl<P>>(deployed->clone());
  const auto x = ember::randn<P>({8, 1, 8, 8});
  const auto y = deployed->forward(x).softmax(-1);
  const double diff = (trained->forward(x).softmax(-1) - y).abs().max().item<double>();
  const float total = y.sum().item<float>();  // each row sums to 1
  std::printf("%s\nrow sums total %.4f (expect 8), loaded model differs by %g (expect 0)\n",
              ember::to_string(y.narrow(0, 0, 2)).c_str(), total, diff);
  return (total > 7.99f && total < 8.01f && diff == 0.0) ? 0 : 1;
}
