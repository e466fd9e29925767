// nn modules under InferencePolicy (Backends<Cpu>, no layers: no autograd): the embedded
// inference build. Each module is made twice from the same seed, once per policy; both must
// hold the same parameters under the same names and compute the same outputs, and the
// inference one must load what a DefaultPolicy program saved.

#include <doctest/doctest.h>
#include <ember/nn.hpp>
#include <ember/nn/serialize.hpp>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace test_inference_policy {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using IP = InferencePolicy;
using ITensor = BasicTensor<IP>;

namespace {

ITensor to_inference(const Tensor& t) { return to_policy<IP>(t); }
template <class T>
T to_inference(const T& v) { return v; }  // options, numbers

double max_diff(const Tensor& a, const ITensor& b) {
  REQUIRE(a.defined() == b.defined());
  if (!a.defined()) return 0.0;
  REQUIRE(a.sizes() == b.sizes());
  REQUIRE(a.dtype() == b.dtype());
  if (a.numel() == 0) return 0.0;
  const Tensor d = a.detach().to(DType::F64) - Tensor(b.impl_ref()).to(DType::F64);
  return d.abs().max().item<double>();
}
double max_diff(const std::pair<Tensor, Tensor>& a, const std::pair<ITensor, ITensor>& b) {
  return std::max(max_diff(a.first, b.first), max_diff(a.second, b.second));
}
double max_diff(const std::pair<Tensor, std::pair<Tensor, Tensor>>& a,
                const std::pair<ITensor, std::pair<ITensor, ITensor>>& b) {
  return std::max(max_diff(a.first, b.first), max_diff(a.second, b.second));
}

double max_diff(const nn::ASMoutput& a, const nn::BasicASMoutput<IP>& b) {
  return std::max(max_diff(a.output, b.output), max_diff(a.loss, b.loss));
}

/// A user's module written once for any policy, holding Ember's modules through their
/// policy's handles (nn::BasicLinear<P> is nn::Linear under DefaultPolicy).
template <class P>
struct TwoLayerImpl : nn::Cloneable<TwoLayerImpl<P>, P> {
  TwoLayerImpl() : nn::Cloneable<TwoLayerImpl<P>, P>("TwoLayer") { reset(); }
  void reset() override {
    fc1 = this->register_module("fc1", nn::BasicLinear<P>(6, 8));
    fc2 = this->register_module("fc2", nn::BasicLinear<P>(8, 2));
  }
  BasicTensor<P> forward(const BasicTensor<P>& x) { return fc2(fc1(x).relu()); }
  nn::BasicLinear<P> fc1{nullptr}, fc2{nullptr};
};
/// The same with more kinds of handle: every module has one (nn::BasicConv2d<P>, ...).
template <class P>
struct SmallCnnImpl : nn::Cloneable<SmallCnnImpl<P>, P> {
  SmallCnnImpl() : nn::Cloneable<SmallCnnImpl<P>, P>("SmallCnn") { reset(); }
  void reset() override {
    pad = this->register_module("pad", nn::BasicReflectionPad2d<P>(nn::IntArgs{1}));
    conv = this->register_module("conv", nn::BasicConv2d<P>(3, 4, nn::IntArgs{3}));
    bn = this->register_module("bn", nn::BasicBatchNorm2d<P>(nn::BatchNormOptions(4)));
    act = this->register_module("act", nn::BasicGELU<P>());
    pool = this->register_module("pool", nn::BasicMaxPool2d<P>(nn::IntArgs{2}));
    rnn = this->register_module("rnn", nn::BasicGRU<P>(nn::GRUOptions(16, 5).batch_first(true)));
    loss = this->register_module("loss", nn::BasicMSELoss<P>());
  }
  /// (N, 3, 8, 8) -> 4 channels of 4x4 -> a sequence of 4 channels of 16 features -> GRU.
  BasicTensor<P> forward(const BasicTensor<P>& x) {
    BasicTensor<P> h = pool(act(bn(conv(pad(x)))));
    BasicTensor<P> y = rnn(h.flatten(2)).first;
    return loss(y, zeros_like(y));
  }
  nn::BasicReflectionPad2d<P> pad{nullptr};
  nn::BasicConv2d<P> conv{nullptr};
  nn::BasicBatchNorm2d<P> bn{nullptr};
  nn::BasicGELU<P> act{nullptr};
  nn::BasicMaxPool2d<P> pool{nullptr};
  nn::BasicGRU<P> rnn{nullptr};
  nn::BasicMSELoss<P> loss{nullptr};
};

// Under DefaultPolicy the policy's handles are the named ones, members included.
static_assert(std::is_same_v<nn::BasicConv2d<DefaultPolicy>, nn::Conv2d>);
static_assert(std::is_same_v<nn::BasicGELU<>, nn::GELU>);
static_assert(std::is_same_v<nn::BasicReflectionPad2d<>, nn::ReflectionPad2d>);
static_assert(std::is_same_v<nn::BasicMSELoss<>, nn::MSELoss>);
static_assert(std::is_same_v<nn::BasicLSTM<>, nn::LSTM>);
static_assert(std::is_same_v<nn::BasicEmbedding<>, nn::Embedding>);
static_assert(std::is_same_v<nn::BasicEmbeddingBag<IP>, nn::ModuleHolder<nn::BasicEmbeddingBagImpl<IP>>>);
static_assert(std::is_same_v<nn::BasicAdaptiveAvgPool2d<IP>, nn::ModuleHolder<nn::BasicAdaptivePoolImpl<2, false, IP>>>);
static_assert(std::is_same_v<nn::BasicLinear<DefaultPolicy>, nn::Linear>);
static_assert(std::is_same_v<nn::BasicSequential<DefaultPolicy>, nn::Sequential>);
static_assert(std::is_same_v<decltype(nn::MultiheadAttentionImpl::out_proj), nn::Linear>);
static_assert(std::is_same_v<decltype(nn::TransformerEncoderLayerImpl::self_attn), nn::MultiheadAttention>);
static_assert(std::is_same_v<decltype(nn::TransformerEncoderLayerImpl::norm1), nn::LayerNorm>);
static_assert(std::is_same_v<decltype(nn::TransformerDecoderLayerImpl::dropout3), nn::Dropout>);
static_assert(std::is_same_v<decltype(nn::TransformerEncoderImpl::layers), nn::ModuleList>);
static_assert(std::is_same_v<decltype(nn::TransformerImpl::decoder), nn::TransformerDecoder>);
static_assert(std::is_same_v<decltype(nn::AdaptiveLogSoftmaxWithLossImpl::tail), nn::ModuleList>);
static_assert(std::is_same_v<decltype(nn::BasicTransformerEncoderLayerImpl<IP>::linear1),
                             nn::ModuleHolder<nn::BasicLinearImpl<IP>>>);

/// make<P>() builds the module under policy P. Both are made from one seed, put in training
/// mode or not, and called on the same inputs; parameters and buffers must agree exactly, the
/// outputs within `tolerance` (0: exactly).
template <class Make, class... In>
void check_same_as_default(Make make, bool train, double tolerance, const In&... inputs) {
  manual_seed(11);
  auto d = make.template operator()<DefaultPolicy>();
  manual_seed(11);
  auto i = make.template operator()<IP>();
  d->train(train);
  i->train(train);
  INFO(d->name());
  const auto dp = d->named_parameters();
  const auto ip = i->named_parameters();
  REQUIRE(dp.size() == ip.size());
  for (size_t k = 0; k < dp.size(); ++k) {
    CHECK(dp[k].key() == ip[k].key());
    CHECK(max_diff(dp[k].value(), ip[k].value()) == 0.0);
  }
  manual_seed(5);
  const auto yd = d->forward(inputs...);
  manual_seed(5);
  const auto yi = i->forward(to_inference(inputs)...);
  CHECK(max_diff(yd, yi) <= tolerance);
  // Buffers updated by forward (BatchNorm's running statistics) agree too.
  const auto db = d->named_buffers();
  const auto ib = i->named_buffers();
  REQUIRE(db.size() == ib.size());
  for (size_t k = 0; k < db.size(); ++k) CHECK(max_diff(db[k].value(), ib[k].value()) == 0.0);
}

}  // namespace

// The recurrent modules: with autograd on, their gates are contiguous copies (one gradient node
// for all of them) where the inference policy takes strided views, and the activations'
// contiguous and strided loops may round the last bit differently (seen: 6e-8 in an LSTMCell).
// Their outputs are within [-1, 1] (h) or a few units (c).
constexpr double kRecurrentTolerance = 1e-6;

TEST_CASE("InferencePolicy: layers hold the same parameters and compute the same outputs") {
  manual_seed(1);
  const Tensor x2 = randn({5, 6});
  const Tensor img = randn({2, 3, 8, 8});
  const Tensor seq = randn({4, 2, 6});  // (L, N, features)
  using namespace nn;
  check_same_as_default([]<class P>() { return std::make_shared<BasicLinearImpl<P>>(6, 4); }, false, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicBilinearImpl<P>>(6, 6, 3); }, false, 0.0, x2, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicConvImpl<2, P>>(ConvOptions(3, 4, {3}).padding(1)); },
                        false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicConvTransposeImpl<2, P>>(3, 2, IntArgs{2}); }, false, 0.0,
                        img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicMaxPoolImpl<2, P>>(IntArgs{2}); }, false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicAvgPoolImpl<2, P>>(IntArgs{2}); }, false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicAdaptiveAvgPool2dImpl<P>>(OptionalIntArgs{3}); },
                        false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicBatchNormImpl<2, P>>(BatchNormOptions(3)); }, true, 0.0,
                        img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicBatchNormImpl<2, P>>(BatchNormOptions(3)); }, false, 0.0,
                        img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicLayerNormImpl<P>>(LayerNormOptions({6})); }, false, 0.0,
                        x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicGroupNormImpl<P>>(3, 3); }, false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicRMSNormImpl<P>>(RMSNormOptions({6})); }, false, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicPReLUImpl<P>>(); }, false, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicDropoutImpl<P>>(0.5); }, true, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicUpsampleImpl<P>>(UpsampleOptions().scale_factor({2.0}).mode("bilinear")); },
                        false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicPixelShuffleImpl<P>>(2); }, false, 0.0, randn({1, 8, 2, 2}));
  check_same_as_default([]<class P>() { return std::make_shared<BasicLSTMImpl<P>>(LSTMOptions(6, 5).num_layers(2).bidirectional(true)); },
                        false, kRecurrentTolerance, seq);
  check_same_as_default([]<class P>() { return std::make_shared<BasicGRUImpl<P>>(6, 5); }, false, kRecurrentTolerance, seq);
  check_same_as_default([]<class P>() { return std::make_shared<BasicRNNImpl<P>>(6, 5); }, false, kRecurrentTolerance, seq);
  check_same_as_default([]<class P>() { return std::make_shared<BasicLSTMCellImpl<P>>(6, 5); }, false, kRecurrentTolerance, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicGRUCellImpl<P>>(6, 5); }, false, kRecurrentTolerance, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicEmbeddingImpl<P>>(10, 4); }, false, 0.0,
                        tensor<int64_t>({1, 7, 3, 3}));
  check_same_as_default([]<class P>() { return std::make_shared<BasicReLUImpl<P>>(); }, false, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicSoftmaxImpl<P>>(1); }, false, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicFlattenImpl<P>>(); }, false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicConvImpl<1, P>>(ConvOptions(5, 3, {2}).stride(2)); },
                        false, 0.0, x2.unsqueeze(0));
  check_same_as_default([]<class P>() { return std::make_shared<BasicInstanceNormImpl<2, P>>(InstanceNormOptions(3).affine(true)); },
                        false, 0.0, img);
  check_same_as_default([]<class P>() { return std::make_shared<BasicGLUImpl<P>>(); }, false, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<BasicEmbeddingBagImpl<P>>(10, 4); }, false, 0.0,
                        tensor<int64_t>({1, 7, 3, 3, 0, 9}), tensor<int64_t>({0, 2, 5}));
  check_same_as_default(
      []<class P>() {
        return std::make_shared<BasicAdaptiveLogSoftmaxWithLossImpl<P>>(AdaptiveLogSoftmaxWithLossOptions(6, 12, {4, 8}));
      },
      false, 0.0, x2, tensor<int64_t>({0, 5, 11, 3, 9}));
  check_same_as_default([]<class P>() { return std::make_shared<TwoLayerImpl<P>>(); }, false, 0.0, x2);
  check_same_as_default([]<class P>() { return std::make_shared<SmallCnnImpl<P>>(); }, true, kRecurrentTolerance, img);
}

TEST_CASE("InferencePolicy: attention and the Transformer family") {
  manual_seed(2);
  const Tensor src = randn({5, 2, 8});
  const Tensor tgt = randn({3, 2, 8});
  using namespace nn;
  check_same_as_default([]<class P>() { return std::make_shared<BasicMultiheadAttentionImpl<P>>(8, 2); }, false, 0.0, src, src,
                        src);
  check_same_as_default(
      []<class P>() {
        return std::make_shared<BasicTransformerEncoderLayerImpl<P>>(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
      },
      false, 0.0, src);
  check_same_as_default(
      []<class P>() {
        return std::make_shared<BasicTransformerDecoderLayerImpl<P>>(TransformerDecoderLayerOptions(8, 2).dim_feedforward(16));
      },
      false, 0.0, tgt, src);
  check_same_as_default(
      []<class P>() {
        return std::make_shared<BasicTransformerImpl<P>>(
            TransformerOptions().d_model(8).nhead(2).num_encoder_layers(2).num_decoder_layers(1).dim_feedforward(16));
      },
      false, 0.0, src, tgt);
  // The encoder from a layer of the policy's own (TransformerEncoderOptions holds DefaultPolicy's).
  check_same_as_default(
      []<class P>() {
        return std::make_shared<BasicTransformerEncoderImpl<P>>(
            BasicTransformerEncoderLayer<P>(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).norm_first(true)), 2,
            BasicLayerNorm<P>(LayerNormOptions({8})));
      },
      false, 0.0, src);
}

TEST_CASE("InferencePolicy: Sequential, clone, to(dtype), state_dict and files saved by a training program") {
  using namespace nn;
  auto make_mlp = []<class P>() {
    return std::make_shared<BasicSequentialImpl<P>>(std::make_shared<BasicLinearImpl<P>>(6, 16),
                                                    std::make_shared<BasicReLUImpl<P>>(),
                                                    std::make_shared<BasicLinearImpl<P>>(16, 3));
  };
  manual_seed(3);
  const Tensor x = randn({4, 6});
  check_same_as_default(make_mlp, false, 0.0, x);

  // Trained (here: made) under DefaultPolicy, saved, loaded by an inference program.
  manual_seed(4);
  auto trained = make_mlp.template operator()<DefaultPolicy>();
  std::stringstream file;
  nn::save(*trained, file);
  manual_seed(99);  // different initial weights
  auto deployed = make_mlp.template operator()<IP>();
  CHECK(max_diff(trained->forward(x), deployed->forward(to_inference(x))) > 0.0);
  nn::load(*deployed, file);
  CHECK(max_diff(trained->forward(x), deployed->forward(to_inference(x))) == 0.0);

  // state_dict / load_state_dict, clone and dtype conversion within the inference policy.
  auto copy = std::dynamic_pointer_cast<BasicSequentialImpl<IP>>(deployed->clone());
  REQUIRE(copy != nullptr);
  CHECK(max_diff(trained->forward(x), copy->forward(to_inference(x))) == 0.0);
  copy->to(DType::F64);
  CHECK(copy->parameters()[0].dtype() == DType::F64);
  CHECK(max_diff(trained->forward(x).to(DType::F64), copy->forward(to_inference(x).to(DType::F64))) < 1e-6);
  auto other = make_mlp.template operator()<IP>();
  other->load_state_dict(deployed->state_dict());
  CHECK(max_diff(trained->forward(x), other->forward(to_inference(x))) == 0.0);
  // In memory, without a file: the training program's state dict seen through the policy.
  manual_seed(98);
  auto served = make_mlp.template operator()<IP>();
  served->load_state_dict(to_policy<IP>(trained->state_dict()));
  CHECK(max_diff(trained->forward(x), served->forward(to_inference(x))) == 0.0);
  std::string trained_repr = trained->to_string();
  const std::string trainable = "(163 trainable)";
  REQUIRE(trained_repr.find(trainable) != std::string::npos);
  trained_repr.replace(trained_repr.find(trainable), trainable.size(), "(0 trainable)");
  CHECK(other->to_string() == trained_repr);
  other->zero_grad();  // nothing to train: a no-op
  CHECK(other->num_parameters() == trained->num_parameters());
}

TEST_CASE("to_policy shares the elements and drops autograd") {
  Tensor w = randn({2, 3}).requires_grad_();
  const Tensor view = w.detach().t();  // strided, offset 0
  ITensor i = to_policy<IP>(view);
  CHECK(i.sizes() == Shape({3, 2}));
  CHECK(i.strides() == view.strides());
  {
    NoGradGuard ng;
    w.select(0, 1).fill_(5.0);
  }
  CHECK(i.select(1, 1).sum().item<double>() == 15.0);  // the write is seen: shared storage
  const Tensor back = to_policy<DefaultPolicy>(to_policy<IP>(w));
  CHECK_FALSE(back.requires_grad());
  CHECK(back.data_ptr<float>() == w.data_ptr<float>());
  CHECK_FALSE(to_policy<IP>(Tensor()).defined());
  const auto dict = to_policy<IP>(nn::Linear(3, 2)->state_dict());
  CHECK(dict.keys() == std::vector<std::string>{"weight", "bias"});
}

TEST_CASE("InferencePolicy: parameters need not be floating point (nothing requires grad)") {
  nn::BasicModule<IP> m("Counter");
  m.register_parameter("steps", zeros<IP>({2}, TensorOptions(DType::I64)));
  CHECK(m.named_parameters()[0].value().dtype() == DType::I64);
  nn::Module d("Counter");
  CHECK_THROWS_WITH_AS(d.register_parameter("steps", zeros({2}, TensorOptions(DType::I64))),
                       doctest::Contains("must be floating point to require grad, got i64"), Error);
}

}  // namespace test_inference_policy
