// Built by CI's clang stage with clang++ -Wall -Wextra -Werror against the installed Ember
// (compiled by g++): Ember's headers must instantiate cleanly under clang, and a clang program
// must link and train with a GCC-built library. Exits 0 when the losses fell as stated.
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include <cstdio>

int main() {
  using namespace ember;
  manual_seed(0);
  // A regression MLP with Adam: the loss must fall at least tenfold.
  nn::Sequential mlp{nn::Linear(4, 32), nn::ReLU(), nn::Linear(32, 1)};
  optim::Adam adam(mlp->parameters(), optim::AdamOptions(1e-2));
  Tensor x = randn({64, 4}), y = x.sum({1}, true);
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    adam.zero_grad();
    Tensor loss = nn::F::mse_loss(mlp(x), y);
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  // A small CNN and an LSTM with SGD on fixed labels, through a DataLoader.
  nn::Sequential cnn{nn::Conv2d(nn::Conv2dOptions(1, 4, {3}).padding({1})), nn::ReLU(),
                     nn::MaxPool2d(nn::MaxPool2dOptions({2})), nn::Flatten(), nn::Linear(4 * 4 * 4, 3)};
  nn::LSTM lstm(nn::LSTMOptions(3, 8));
  std::vector<Tensor> params = cnn->parameters();
  for (const Tensor& p : lstm->parameters()) params.push_back(p);
  optim::SGD sgd(params, optim::SGDOptions(0.05).momentum(0.9));
  data::TensorDataset images({randn({32, 1, 8, 8}), randint(0, 3, {32})});
  double cnn_first = 0, cnn_last = 0;
  for (int epoch = 0; epoch < 30; ++epoch) {
    for (auto& batch : data::DataLoader(images, data::DataLoaderOptions(32))) {
      sgd.zero_grad();
      Tensor logits = cnn(batch[0]);
      auto [out, state] = lstm->forward(logits.unsqueeze(0));
      Tensor loss = nn::F::cross_entropy(logits + 0.0 * out.squeeze(0).sum(), batch[1]);
      loss.backward();
      sgd.step();
      (epoch == 0 ? cnn_first : cnn_last) = loss.item<double>();
    }
  }
  std::printf("mlp_loss_first=%.4f mlp_loss_last=%.5f cnn_loss_first=%.4f cnn_loss_last=%.5f\n", first, last,
              cnn_first, cnn_last);
  return last < first / 10 && cnn_last < cnn_first / 4 ? 0 : 1;
}
