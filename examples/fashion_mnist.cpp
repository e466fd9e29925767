// Ember's flagship example: a small CNN learns Fashion-MNIST (28x28 grey images of clothes,
// 10 classes), is saved to a checkpoint, reloaded into a fresh model, and checked to predict
// exactly the same.
//
//   build/examples/fashion_mnist [--data DIR] [--epochs N] [--batch B] [--workers W]
//                                [--checkpoint PATH] [--help]
//
// Data: Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist) puts the IDX
// files in /usr/share/datasets/fashion-mnist. Without it the example says how to install it
// and trains on a built-in synthetic task (striped patterns) instead. The last line is
// `key=value` pairs for scripts: test_accuracy=... reload_identical=1

#include <ember/data.hpp>
#include <ember/nn.hpp>
#include <ember/nn/serialize.hpp>
#include <ember/optim.hpp>

#include "cli.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

using namespace ember;

namespace {

struct Args {
  std::string data = "/usr/share/datasets/fashion-mnist";
  int epochs = 1;
  int batch = 64;
  int workers = 1;
  std::string checkpoint = "fashion_mnist_cnn.safetensors";
};

Args parse(int argc, char** argv) {
  Args a;
  ember_examples::Cli("fashion_mnist",
                      "Trains a small CNN on Fashion-MNIST (apt-get install dataset-fashion-mnist), saves and\n"
                      "reloads a checkpoint, prints test_accuracy.")
      .flag("--data", a.data, "DIR", "folder of the Fashion-MNIST IDX files")
      .flag("--epochs", a.epochs, "N", "passes over the training set", 0)
      .flag("--batch", a.batch, "B", "images per optimiser step", 1)
      .flag("--workers", a.workers, "W", "data loader threads", 0)
      .flag("--checkpoint", a.checkpoint, "PATH", "where the model is saved and reloaded from")
      .parse(argc, argv);
  return a;
}

/// conv 1->32 3x3, ReLU, maxpool 2, conv 32->64 3x3, ReLU, maxpool 2, linear 3136->128, ReLU, linear 128->10.
struct CnnImpl : nn::Module {
  CnnImpl() : nn::Module("Cnn") {
    features = register_module(
        "features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, {3}).padding({1})), nn::ReLU(),
                                   nn::MaxPool2d(nn::PoolOptions({2})),
                                   nn::Conv2d(nn::Conv2dOptions(32, 64, {3}).padding({1})), nn::ReLU(),
                                   nn::MaxPool2d(nn::PoolOptions({2}))));
    classifier = register_module("classifier",
                                 nn::Sequential(nn::Flatten(), nn::Linear(3136, 128), nn::ReLU(), nn::Linear(128, 10)));
  }
  Tensor forward(const Tensor& x) { return classifier(features(x)); }
  nn::Sequential features{nullptr}, classifier{nullptr};
};
EMBER_MODULE(Cnn);

/// Images as f32 (N, 1, 28, 28) normalised with Fashion-MNIST's mean and deviation.
Tensor prepare(const Tensor& u8) { return ((u8.to(DType::F32) / 255.0 - 0.2860) / 0.3530).unsqueeze(1); }

/// A stand-in task when the dataset is missing: class k is stripes at angle and period k.
data::MnistData synthetic(int64_t n, uint64_t seed) {
  manual_seed(seed);
  Tensor labels = randint(0, 10, {n});
  Tensor yy = arange(28).to(DType::F32).reshape({1, 28, 1}), xx = arange(28).to(DType::F32).reshape({1, 1, 28});
  Tensor k = labels.to(DType::F32).reshape({n, 1, 1});
  Tensor phase = (xx * (k / 9.0) + yy * (1.0 - k / 9.0)) * (0.4 + k * 0.05);
  Tensor img = (phase.sin() * 0.5 + 0.5 + randn({n, 28, 28}) * 0.15).clamp(0.0, 1.0) * 255.0;
  return {img.to(DType::U8), labels};
}

double accuracy(Cnn& model, const Tensor& images, const Tensor& labels) {
  autograd::NoGradGuard ng;
  int64_t correct = 0, n = images.size(0);
  for (int64_t s = 0; s < n; s += 1000) {
    int64_t len = std::min<int64_t>(1000, n - s);
    Tensor pred = model(prepare(images.narrow(0, s, len))).argmax(1);
    correct += pred.eq(labels.narrow(0, s, len)).sum().item<int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  return ember_examples::run_main("fashion_mnist", [&] {
    data::MnistData train, test;
    bool real = std::filesystem::exists(args.data);
    if (real) {
      train = data::load_mnist(args.data, true);
      test = data::load_mnist(args.data, false);
    } else {
      std::fprintf(stderr,
                   "note: Fashion-MNIST not found in %s; install it with\n"
                   "  apt-get install dataset-fashion-mnist\n"
                   "(or pass --data DIR). Training on a built-in synthetic task instead.\n",
                   args.data.c_str());
      train = synthetic(12000, 1);
      test = synthetic(2000, 2);
    }
    std::printf("%s: %lld training and %lld test images\n", real ? "Fashion-MNIST" : "synthetic",
                static_cast<long long>(train.images.size(0)), static_cast<long long>(test.images.size(0)));

    manual_seed(0);
    Cnn model;
    optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
    data::TensorDataset ds({train.images, train.labels});
    data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(args.batch).shuffle(true).num_workers(args.workers));
    auto t0 = std::chrono::steady_clock::now();
    for (int epoch = 1; epoch <= args.epochs; ++epoch) {
      model->train();
      double running = 0;
      int64_t step = 0;
      for (auto& batch : loader) {
        opt.zero_grad();
        Tensor loss = nn::F::cross_entropy(model(prepare(batch[0])), batch[1]);
        loss.backward();
        opt.step();
        running = step == 0 ? loss.item<double>() : 0.98 * running + 0.02 * loss.item<double>();
        if (++step % 200 == 0) std::printf("epoch %d step %5lld  loss %.4f\n", epoch, static_cast<long long>(step), running);
      }
      model->eval();
      std::printf("epoch %d  test_accuracy %.4f\n", epoch, accuracy(model, test.images, test.labels));
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    model->eval();  // also with --epochs 0
    double acc = accuracy(model, test.images, test.labels);

    // Save, reload into a fresh model, and check that the predictions are bit-identical.
    nn::save(*model, args.checkpoint, {{"example", "fashion_mnist"}});
    Cnn fresh;
    nn::load(*fresh, args.checkpoint);
    fresh->eval();
    Tensor probe = prepare(test.images.narrow(0, 0, 256));
    bool identical;
    {
      autograd::NoGradGuard ng;
      identical = model(probe).eq(fresh(probe)).all().item<bool>();
    }
    std::printf("dataset=%s epochs=%d seconds=%.1f test_accuracy=%.4f checkpoint=%s reload_identical=%d\n",
                real ? "fashion-mnist" : "synthetic", args.epochs, secs, acc, args.checkpoint.c_str(), identical ? 1 : 0);
    return identical ? 0 : 1;
  });
}
