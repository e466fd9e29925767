// PyTorch interchange: models exported from PyTorch by tools/export_torch.py (an MLP, a CNN
// with BatchNorm, a two-layer LSTM, a Transformer encoder; tests/data/torch_models/) are built
// with the same architecture from Ember's modules, loaded strictly by name with nn::load, and
// must reproduce PyTorch's outputs on the stored inputs to 1e-5 (f32).

#include "io_test_util.hpp"

#include <ember/nn.hpp>
#include <ember/nn/serialize.hpp>

namespace test_torch_models {  // this file's own names in a unity build (tests/meson.build)

using namespace io_test;
using ember::io::TensorDict;

namespace {

std::string model_file(const std::string& name) { return data_dir() + "/torch_models/" + name; }
TensorDict io_of(const std::string& name) { return io::load_safetensors(model_file(name + "_io.safetensors")); }

/// Same shape, and every element within `tol` of PyTorch's.
void check_close(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-5) {
  INFO(what);
  REQUIRE(got.sizes() == want.sizes());
  REQUIRE(got.dtype() == want.dtype());
  const double diff = (got - want).abs().max().item<double>();
  CHECK_MESSAGE(diff <= tol, what << ": max |ember - torch| = " << diff);
}

nn::Sequential mlp() {
  return nn::Sequential(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 16), nn::Tanh(), nn::Linear(16, 4));
}

nn::Sequential cnn() {
  return nn::Sequential(nn::Conv2d(nn::ConvOptions(3, 8, {3}).padding({1})), nn::BatchNorm2d(8), nn::ReLU(),
                        nn::MaxPool2d(nn::PoolOptions({2})),
                        nn::Conv2d(nn::ConvOptions(8, 12, {3}).stride({2}).padding({1}).bias(false)),
                        nn::BatchNorm2d(12), nn::ReLU(), nn::AdaptiveAvgPool2d(nn::IntArgs{1}), nn::Flatten(),
                        nn::Linear(12, 5));
}

/// tools/export_torch.py's LstmModel: a two-layer batch-first LSTM and a linear head.
struct LstmModelImpl : nn::Module {
  LstmModelImpl() : nn::Module("LstmModel") {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(6, 10).num_layers(2).batch_first(true)));
    head = register_module("head", nn::Linear(10, 3));
  }
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& x, const Tensor& h0, const Tensor& c0) {
    auto [y, state] = lstm->forward(x, {h0, c0});
    return {head->forward(y), state.first, state.second};
  }
  nn::LSTM lstm{nullptr};
  nn::Linear head{nullptr};
};
EMBER_MODULE(LstmModel);

/// tools/export_torch.py's BiLstmModel: a bidirectional two-layer LSTM, sequence first.
struct BiLstmModelImpl : nn::Module {
  BiLstmModelImpl() : nn::Module("BiLstmModel") {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(5, 7).num_layers(2).bidirectional(true)));
  }
  nn::LSTM lstm{nullptr};
};
EMBER_MODULE(BiLstmModel);

nn::TransformerEncoder transformer() {
  auto layer = nn::TransformerEncoderLayer(nn::TransformerLayerOptions(32, 4).dim_feedforward(64).dropout(0.0));
  return nn::TransformerEncoder(layer, 2, nn::LayerNorm(nn::LayerNormOptions({32})));
}

}  // namespace

TEST_CASE("torch models: MLP matches PyTorch") {
  nn::Sequential m = mlp();
  m->eval();
  nn::load(*m, model_file("mlp.safetensors"));
  TensorDict io = io_of("mlp");
  check_close(m->forward(io.at("input")), io.at("output"), "mlp");
}

TEST_CASE("torch models: CNN with BatchNorm matches PyTorch in eval and in train mode") {
  nn::Sequential m = cnn();
  m->eval();
  nn::load(*m, model_file("cnn.safetensors"));
  // The exported running statistics are not the initial ones (PyTorch trained a few batches).
  for (const auto& [name, t] : m->state_dict())
    if (name == "1.running_mean") CHECK(t.abs().max().item<double>() > 0.05);
  TensorDict io = io_of("cnn");
  check_close(m->forward(io.at("input")), io.at("output"), "cnn eval");

  // One training-mode batch: batch statistics in the output, and the running statistics
  // (unbiased variance, momentum 0.1) and counters it leaves behind.
  m->train();
  check_close(m->forward(io.at("train.input")), io.at("train.output"), "cnn train");
  for (const auto& [name, t] : m->state_dict()) {
    if (!io.contains("train." + name)) continue;
    if (t.dtype() == DType::I64) check_same(t, io.at("train." + name), name);
    else check_close(t, io.at("train." + name), name);
  }
}

TEST_CASE("torch models: two-layer batch-first LSTM with initial states matches PyTorch") {
  LstmModel m;
  m->eval();
  nn::load(*m, model_file("lstm.safetensors"));
  TensorDict io = io_of("lstm");
  auto [y, h, c] = m->forward(io.at("input"), io.at("h0"), io.at("c0"));
  check_close(y, io.at("output"), "lstm output");
  check_close(h, io.at("h_n"), "lstm h_n");
  check_close(c, io.at("c_n"), "lstm c_n");
}

TEST_CASE("torch models: Transformer encoder matches PyTorch, with a causal and a padding mask") {
  nn::TransformerEncoder m = transformer();
  m->eval();
  nn::load(*m, model_file("transformer.safetensors"));
  TensorDict io = io_of("transformer");
  const Tensor& x = io.at("input");
  check_close(m->forward(x), io.at("output"), "transformer");
  check_close(m->forward(x, io.at("causal_mask")), io.at("output_causal"), "transformer, causal mask");
  check_close(m->forward(x, {}, io.at("padding_mask")), io.at("output_padded"), "transformer, padding mask");
}

TEST_CASE("torch models: bidirectional LSTM matches PyTorch") {
  BiLstmModel m;
  m->eval();
  nn::load(*m, model_file("lstm_bidir.safetensors"));
  TensorDict io = io_of("lstm_bidir");
  auto [y, state] = m->lstm->forward(io.at("input"));
  check_close(y, io.at("output"), "output");
  check_close(state.first, io.at("h_n"), "h_n");
  check_close(state.second, io.at("c_n"), "c_n");
}

TEST_CASE("torch models: batch-first, pre-norm, GELU Transformer encoder matches PyTorch") {
  auto layer = nn::TransformerEncoderLayer(nn::TransformerLayerOptions(16, 2)
                                               .dim_feedforward(32)
                                               .dropout(0.0)
                                               .activation("gelu")
                                               .batch_first(true)
                                               .norm_first(true));
  nn::TransformerEncoder m(layer, 2);
  m->eval();
  nn::load(*m, model_file("transformer_prenorm.safetensors"));
  TensorDict io = io_of("transformer_prenorm");
  const Tensor& x = io.at("input");
  check_close(m->forward(x), io.at("output"), "transformer_prenorm");
  check_close(m->forward(x, {}, io.at("padding_mask")), io.at("output_padded"), "transformer_prenorm, padding mask");
}

TEST_CASE("torch models: strict loading names the file and every mismatched key") {
  const std::string path = model_file("mlp.safetensors");
  nn::Sequential other(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 5));
  CHECK_ERROR(nn::load(*other, path), "[nn::load]", "mlp.safetensors", "mismatch '2.weight'", "[16, 16]",
              "unexpected key '4.weight'", "unexpected key '4.bias'");
  // Not strict: the keys that fit load, the others are reported.
  nn::Sequential shorter(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 16));
  nn::LoadResult r = nn::load(*shorter, path, false);
  CHECK(r.missing_keys.empty());
  CHECK(r.unexpected_keys == std::vector<std::string>{"4.bias", "4.weight"});
  check_same(shorter->state_dict()[0].second, io::load_safetensors(path).at("0.weight"), "0.weight");
}

}  // namespace test_torch_models
