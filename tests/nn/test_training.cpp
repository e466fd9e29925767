// End-to-end training smoke tests, one per model family: a few dozen Adam steps on a tiny
// synthetic task must cut the loss by a stated factor. They check that forward, backward and
// the optimiser work together (a sign error or a gradient that does not reach a layer stalls
// the loss), and are sized to run in about a second even in a debug ASan build.

#include <doctest/doctest.h>
#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include <vector>

namespace test_training {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// Runs `steps` Adam steps of `loss_fn` over `model`'s parameters; returns {first, last} loss.
template <class LossFn>
std::pair<double, double> train(nn::Module& model, LossFn loss_fn, int steps, double lr) {
  optim::Adam opt(model.parameters(), optim::AdamOptions(lr));
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = loss_fn();
    loss.backward();
    opt.step();
    last = loss.item<double>();
    if (s == 0) first = last;
  }
  return {first, last};
}

}  // namespace

TEST_CASE("training: a tiny CNN learns horizontal versus vertical bars (loss falls 100x in 40 steps)") {
  manual_seed(7);
  // 32 noisy 8x8 images: class 0 has a bright row, class 1 a bright column, at a random place.
  const int64_t n = 32;
  Tensor x = randn({n, 1, 8, 8}) * 0.3;
  std::vector<int64_t> labels;
  Tensor where_bar = randint(1, 7, {n}, TensorOptions(DType::I64)).contiguous();
  {
    autograd::NoGradGuard ng;
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = where_bar.data_ptr<int64_t>()[i];
      Tensor img = x.select(0, i).select(0, 0);
      (i % 2 == 0 ? img.select(0, k) : img.select(1, k)).add_(2.0);
      labels.push_back(i % 2);
    }
  }
  Tensor y = from_blob(labels.data(), {n}, TensorOptions(DType::I64)).clone();
  nn::Sequential model(nn::Conv2d(nn::ConvOptions(1, 4, {3}).padding({1})), nn::ReLU(),
                       nn::MaxPool2d(nn::PoolOptions({2})), nn::Flatten(), nn::Linear(4 * 4 * 4, 2));
  const std::pair<double, double> losses = train(*model, [&] { return nn::F::cross_entropy(model(x), y); }, 40, 0.02);
  const double first = losses.first, last = losses.second;  // INFO captures: no bindings (clang 14)
  INFO("cross-entropy " << first << " -> " << last);
  CHECK(last < first / 100);
  Tensor predicted = model(x).argmax(1);
  CHECK(predicted.eq(y).to(DType::F64).mean().item<double>() == 1.0);
}

TEST_CASE("training: a tiny causal Transformer learns next-token prediction (loss falls 20x in 60 steps)") {
  manual_seed(11);
  // Sequences of 8 tokens from a vocabulary of 8 counting up by 3 (mod 8) from a random start:
  // the next token follows from the current one, and the causal mask must not hide it.
  const int64_t vocab = 8, len = 8, batch = 16, d = 16;
  Tensor start = randint(0, vocab, {batch, 1}, TensorOptions(DType::I64));
  Tensor seq = (start + arange(len + 1, TensorOptions(DType::I64)).reshape({1, len + 1}) * int64_t{3})
                   .remainder(vocab);  // (batch, len + 1)
  Tensor inputs = seq.narrow(1, 0, len), targets = seq.narrow(1, 1, len);

  struct TinyGPTImpl : nn::Module {
    TinyGPTImpl(int64_t vocab, int64_t len, int64_t d) : nn::Module("TinyGPT") {
      tok = register_module("tok", nn::Embedding(vocab, d));
      pos = register_module("pos", nn::Embedding(len, d));
      auto layer = nn::TransformerEncoderLayer(
          nn::TransformerLayerOptions(d, 2).dim_feedforward(32).dropout(0.0).batch_first(true).norm_first(true));
      blocks = register_module("blocks", nn::TransformerEncoder(layer, 1));
      head = register_module("head", nn::Linear(d, vocab));
    }
    Tensor forward(const Tensor& ids) {
      int64_t l = ids.size(1);
      Tensor h = tok(ids) + pos(arange(l, TensorOptions(DType::I64))).unsqueeze(0);
      return head(blocks(h, nn::TransformerImpl::generate_square_subsequent_mask(l)));
    }
    nn::Embedding tok{nullptr}, pos{nullptr};
    nn::TransformerEncoder blocks{nullptr};
    nn::Linear head{nullptr};
  };
  auto model = std::make_shared<TinyGPTImpl>(vocab, len, d);
  auto loss_fn = [&] {
    return nn::F::cross_entropy(model->forward(inputs).reshape({-1, vocab}), targets.reshape({-1}));
  };
  const std::pair<double, double> losses = train(*model, loss_fn, 60, 0.01);
  const double first = losses.first, last = losses.second;
  INFO("cross-entropy " << first << " -> " << last);
  CHECK(last < first / 20);
  // Causality: changing the last token changes no earlier prediction.
  Tensor changed = inputs.clone();
  {
    autograd::NoGradGuard ng;
    changed.select(1, len - 1).fill_(int64_t{0});
  }
  Tensor a = model->forward(inputs).narrow(1, 0, len - 1), b = model->forward(changed).narrow(1, 0, len - 1);
  CHECK((a - b).abs().amax().item<double>() < 1e-5);
}

}  // namespace test_training
