// AutocastGuard and the Autocast layer (include/ember/autocast/): which ops run in bf16 and
// which in f32, gradients through the casts, nesting, per-thread state, the inference cache of
// parameter casts and its invalidation, whole models (MLP, CNN, Transformer) under autocast,
// and the layer composed into a user's policy.

#include <doctest/doctest.h>
#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include <cmath>
#include <string_view>
#include <thread>

namespace test_autocast {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// |a - b| / |b| over all elements (f64), for results computed in bf16 against f32.
double relative_error(const Tensor& a, const Tensor& b) {
  const Tensor ad = a.to(DType::F64), bd = b.to(DType::F64);
  return (ad - bd).norm().item<double>() / bd.norm().item<double>();
}

/// Same shape, dtype and values.
bool same(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.eq(b).all().item<bool>();
}

}  // namespace

TEST_CASE("autocast: products run in bf16, f64 and integer products are left alone") {
  manual_seed(1);
  const Tensor a = randn({8, 16}), b = randn({16, 4});
  const Tensor want = a.matmul(b);
  CHECK_FALSE(autocast::is_enabled());
  {
    AutocastGuard autocast;
    CHECK(autocast::is_enabled());
    CHECK(autocast::dtype() == DType::BF16);
    const Tensor got = a.matmul(b);
    CHECK(got.dtype() == DType::BF16);
    CHECK(relative_error(got, want) < 1e-2);
    CHECK(mm(a, b).dtype() == DType::BF16);
    CHECK(bmm(a.unsqueeze(0), b.unsqueeze(0)).dtype() == DType::BF16);
    CHECK(addmm(randn({8, 4}), a, b).dtype() == DType::BF16);
    CHECK(linear(a, b.t(), randn({4})).dtype() == DType::BF16);      // fused form: bias cast with it
    CHECK(linear(randn({16}), b.t(), randn({4})).dtype() == DType::BF16);  // 1-d input: the general form
    CHECK(a.to(DType::F64).matmul(b.to(DType::F64)).dtype() == DType::F64);
    CHECK(a.to(DType::I64).matmul(b.to(DType::I64)).dtype() == DType::I64);
    // Elementwise ops and reductions are not listed: they keep their inputs' dtype.
    CHECK((a + a).dtype() == DType::F32);
    CHECK(a.sum().dtype() == DType::F32);
  }
  CHECK_FALSE(autocast::is_enabled());
  CHECK(a.matmul(b).dtype() == DType::F32);
}

TEST_CASE("autocast: softmax and log_softmax run in f32, and so does a classifier's loss") {
  manual_seed(2);
  const Tensor x = randn({4, 10}).to(DType::BF16);
  CHECK(x.log_softmax(1).dtype() == DType::BF16);  // outside a guard: the input's dtype
  AutocastGuard autocast;
  CHECK(x.log_softmax(1).dtype() == DType::F32);
  CHECK(x.softmax(1).dtype() == DType::F32);
  CHECK(relative_error(x.log_softmax(1), x.to(DType::F32).log_softmax(1)) < 1e-6);
  // A classifier's loss: bf16 logits from the Linear, the loss from f32 log-probabilities.
  nn::Linear head(10, 3);
  const Tensor logits = head(randn({4, 10}));
  CHECK(logits.dtype() == DType::BF16);
  const Tensor loss = nn::F::cross_entropy(logits, tensor({0, 1, 2, 0}).to(DType::I64));
  CHECK(loss.dtype() == DType::F32);
  // With class weights in f32 or bf16, and with soft labels in f32: all in f32, as PyTorch's.
  const Tensor labels = tensor({0, 1, 2, 0}).to(DType::I64);
  const Tensor w = tensor<float>({1.f, 2.f, 0.5f});
  const Tensor want = nn::F::cross_entropy(logits.to(DType::F32), labels, w);
  CHECK(nn::F::cross_entropy(logits, labels, w).item<float>() == doctest::Approx(want.item<float>()).epsilon(1e-6));
  CHECK(nn::F::cross_entropy(logits, labels, w.to(DType::BF16)).dtype() == DType::F32);
  nn::CrossEntropyLoss weighted(nn::CrossEntropyLossOptions().weight(w));
  CHECK(weighted(logits, labels).item<float>() == doctest::Approx(want.item<float>()).epsilon(1e-6));
  const Tensor soft = randn({4, 3}).softmax(1);
  CHECK(nn::F::cross_entropy(logits, soft).dtype() == DType::F32);
  // Label smoothing's mean in f32 too (601 targets: bf16 would count 600).
  const Tensor many_logits = randn({601, 3}).to(DType::BF16);
  const Tensor many_labels = randint(0, 3, {601});
  const Tensor smooth = nn::F::cross_entropy(many_logits, many_labels, {}, -100, "mean", 0.1);
  CHECK(smooth.dtype() == DType::F32);
  CHECK(smooth.item<float>() ==
        doctest::Approx(nn::F::cross_entropy(many_logits.to(DType::F32), many_labels, {}, -100, "mean", 0.1)
                            .item<float>()).epsilon(1e-6));
}

TEST_CASE("autocast: a parameter given other elements over the same storage is cast again") {
  Tensor p = tensor<float>({{1.f, 2.f}, {3.f, 4.f}}).requires_grad_();
  const Tensor x = eye(2);
  NoGradGuard no_grad;  // where parameters' casts are cached
  AutocastGuard autocast;
  CHECK(equal(x.matmul(p).to(DType::F32).reshape({-1}), tensor<float>({1.f, 2.f, 3.f, 4.f})));
  p.set_data(p.detach().t());  // the same storage and version, transposed
  CHECK(equal(x.matmul(p).to(DType::F32).reshape({-1}), tensor<float>({1.f, 3.f, 2.f, 4.f})));
  p.t_();  // an in-place view op moves the version: cast again too
  CHECK(equal(x.matmul(p).to(DType::F32).reshape({-1}), tensor<float>({1.f, 2.f, 3.f, 4.f})));
}

TEST_CASE("autocast: gradients reach f32 parameters as f32, close to an f32 run's") {
  manual_seed(3);
  // Smooth activations: behind a ReLU, a pre-activation within bf16's rounding of zero may flip
  // its mask, and with few samples one flip moves a gradient by several percent (as in PyTorch).
  nn::Sequential net(nn::Linear(12, 32), nn::Tanh(), nn::Linear(32, 32), nn::Tanh(), nn::Linear(32, 1));
  const Tensor x = randn({16, 12}), y = randn({16, 1});
  auto grads = [&](bool autocast_on, bool backward_inside) {
    net->zero_grad();
    std::vector<Tensor> out;
    {
      AutocastGuard guard(DType::BF16, autocast_on);
      Tensor loss = nn::F::mse_loss(net(x), y);
      CHECK(loss.dtype() == DType::F32);  // bf16 prediction against an f32 target promotes
      if (backward_inside) loss.backward();
      else out.push_back(loss);
    }
    if (!backward_inside) out[0].backward();
    std::vector<Tensor> g;
    for (const Tensor& p : net->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  const std::vector<Tensor> f32 = grads(false, false), outside = grads(true, false), inside = grads(true, true);
  {
    // An f32 forward whose backward() is called inside a guard: its products are not cast.
    net->zero_grad();
    Tensor loss = nn::F::mse_loss(net(x), y);
    AutocastGuard autocast;
    loss.backward();
    for (size_t i = 0; i < f32.size(); ++i) CHECK(same(net->parameters()[i].grad(), f32[i]));
  }
  REQUIRE(f32.size() == outside.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    INFO("parameter ", i);
    CHECK(outside[i].dtype() == DType::F32);
    CHECK(relative_error(outside[i], f32[i]) < 2e-2);
    // backward() inside the guard runs in the dtypes the forward recorded: the same gradients.
    CHECK(same(inside[i], outside[i]));
  }
}

TEST_CASE("autocast: guards nest, f16 can be chosen, other dtypes are refused, state is per thread") {
  const Tensor a = randn({3, 5}), b = randn({5, 2});
  {
    AutocastGuard outer;
    {
      AutocastGuard off(false);
      CHECK_FALSE(autocast::is_enabled());
      CHECK(a.matmul(b).dtype() == DType::F32);
      {
        AutocastGuard half(DType::F16);
        CHECK(a.matmul(b).dtype() == DType::F16);
      }
      CHECK(a.matmul(b).dtype() == DType::F32);
    }
    CHECK(a.matmul(b).dtype() == DType::BF16);
    DType other_thread = DType::Bool;
    std::thread([&] { other_thread = a.matmul(b).dtype(); }).join();
    CHECK(other_thread == DType::F32);
  }
  CHECK(autocast::detail::t_state.depth == 0);
  CHECK_THROWS_WITH_AS(AutocastGuard{DType::F32}, doctest::Contains("[autocast]"), Error);
  CHECK_THROWS_WITH_AS(AutocastGuard{DType::I8}, doctest::Contains("got i8"), Error);
  CHECK_FALSE(autocast::is_enabled());  // a refused guard leaves the state as it was
}

TEST_CASE("autocast inference: parameters are cast once per guard, and again after an in-place write") {
  manual_seed(4);
  nn::Linear layer(64, 32);
  const Tensor x = randn({1, 64});
  autograd::NoGradGuard no_grad;
  AutocastGuard autocast;
  // The casts are ops of their own (Autocast is the outermost layer): count them.
  auto casts_in = [&](Tensor& out) {
    profiler::Profile prof;
    out = layer(x);
    int n = 0;
    for (const profiler::Event& e : prof.events()) n += std::string_view(e.name) == "to";
    return n;
  };
  Tensor first, again, flipped;
  CHECK(casts_in(first) == 3);  // input, weight, bias
  CHECK(first.dtype() == DType::BF16);
  CHECK(casts_in(again) == 1);  // the input only: the parameters' casts are cached
  CHECK(same(again, first));
  // An optimiser step writes the weight in place: the cached bf16 copy must not be used.
  layer->weight.mul_(-1.0);
  layer->bias.mul_(-1.0);
  CHECK(casts_in(flipped) == 3);
  CHECK(same(flipped, -first));
  // The cached result equals a cast made from scratch.
  const Tensor fresh = linear(x.to(DType::BF16), layer->weight.to(DType::BF16), layer->bias.to(DType::BF16));
  CHECK(same(flipped, fresh));
  // Module::to gives the parameters new storage (the same tensors): cast again, even when the
  // new storage's version equals the old one's (a fresh layer: both written once).
  nn::Linear fresh_layer(64, 32);
  auto casts_of_fresh = [&] {
    profiler::Profile prof;
    Tensor out = fresh_layer(x);
    int n = 0;
    for (const profiler::Event& e : prof.events()) n += std::string_view(e.name) == "to";
    return n;
  };
  CHECK(casts_of_fresh() == 3);
  fresh_layer->to(DType::F16);
  CHECK(casts_of_fresh() == 3);
  CHECK(casts_of_fresh() == 1);
}

TEST_CASE("autocast training: an MLP, a CNN and a Transformer layer train under a guard") {
  manual_seed(5);
  SUBCASE("MLP regression: loss falls 10x in 150 Adam steps") {
    nn::Sequential net(nn::Linear(4, 64), nn::ReLU(), nn::Linear(64, 1));
    const Tensor x = randn({64, 4});
    const Tensor y = (x.narrow(1, 0, 1) * 2 - x.narrow(1, 1, 1)).tanh();
    optim::Adam opt(net->parameters(), optim::AdamOptions(1e-2));
    double first = 0, last = 0;
    for (int step = 0; step < 150; ++step) {
      opt.zero_grad();
      Tensor loss;
      {
        AutocastGuard autocast;
        loss = nn::F::mse_loss(net(x), y);
      }
      loss.backward();
      opt.step();
      last = loss.item<double>();
      if (step == 0) first = last;
    }
    INFO("mse " << first << " -> " << last);
    CHECK(last < first / 10);
  }
  SUBCASE("CNN without conv biases (bf16 activations reach the next im2col) with BatchNorm") {
    nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1).bias(false)), nn::BatchNorm2d(4), nn::ReLU(),
                       nn::Conv2d(nn::Conv2dOptions(4, 4, 3).padding(1).bias(false)), nn::MaxPool2d(2), nn::Flatten(),
                       nn::Linear(4 * 4 * 4, 2));
    const Tensor x = randn({8, 1, 8, 8}), y = tensor({0, 1, 0, 1, 0, 1, 0, 1}).to(DType::I64);
    Tensor loss;
    {
      AutocastGuard autocast;
      loss = nn::F::cross_entropy(net(x), y);
    }
    CHECK(loss.dtype() == DType::F32);
    loss.backward();
    for (const Tensor& p : net->parameters()) {
      CHECK(p.grad().defined());
      CHECK(p.grad().dtype() == DType::F32);
      CHECK(p.grad().isfinite().all().item<bool>());
    }
  }
  SUBCASE("Transformer encoder layer: close to its f32 output") {
    nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(32, 4).dim_feedforward(64).dropout(0));
    const Tensor x = randn({6, 2, 32});
    const Tensor want = layer(x);
    Tensor got;
    {
      AutocastGuard autocast;
      got = layer(x);
    }
    CHECK(got.dtype() == DType::F32);  // the residual adds and the norms are f32
    CHECK(relative_error(got, want) < 3e-2);
    got.sum().backward();
    CHECK(layer->parameters()[0].grad().dtype() == DType::F32);
  }
}

TEST_CASE("autocast: a bf16 activation meets f32 parameters in linear, layer_norm and attention masks") {
  manual_seed(6);
  AutocastGuard autocast;
  // linear's general form (a 1-d input): the second layer gets a bf16 activation, f32 bias.
  nn::Sequential mlp(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 2));
  CHECK(mlp(randn({4})).dtype() == DType::BF16);
  nn::RNNCell cell(3, 5);
  Tensor h = cell(randn({3}));
  CHECK(cell(randn({3}), h).sizes() == Shape{5});  // the second step: a bf16 hidden state
  // layer_norm runs in f32 (as PyTorch's autocast): bf16 input, f32 weight and bias.
  nn::Linear lin(8, 16);
  nn::LayerNorm norm(nn::LayerNormOptions({16}));
  const Tensor hidden = lin(randn({4, 8}));
  REQUIRE(hidden.dtype() == DType::BF16);
  const Tensor y = norm(hidden);
  CHECK(y.dtype() == DType::F32);
  Tensor want;
  {
    AutocastGuard off(false);
    want = norm(hidden.to(DType::F32));
  }
  CHECK(same(y, want));
  // A bf16 query with an f32 additive mask.
  const Tensor q = randn({2, 5, 8}).to(DType::BF16), mask = randn({5, 5});
  CHECK(nn::F::scaled_dot_product_attention(q, q, q, mask).sizes() == Shape{2, 5, 8});
}

TEST_CASE("autocast leaves f32 algorithms alone: Winograd's transform, adaptive pooling, affine_grid") {
  manual_seed(7);
  const Tensor x = randn({2, 16, 12, 12});
  nn::Conv2d conv(nn::Conv2dOptions(16, 16, 3).padding(1));
  const ConvAlgorithm before = conv_algorithm();
  set_conv_algorithm(ConvAlgorithm::Winograd4x4);
  const Tensor want_conv = conv(x);
  Tensor got_conv;
  {
    AutocastGuard autocast;
    got_conv = conv(x);
  }
  set_conv_algorithm(before);
  CHECK(same(got_conv, want_conv));  // f32 throughout, bit for bit: no bf16 transform
  {
    // A model moved to bf16 and fed f32: the transform runs on the weight in f32.
    nn::Conv2d half_conv(nn::Conv2dOptions(16, 16, 3).padding(1));
    half_conv->to(DType::BF16);
    set_conv_algorithm(ConvAlgorithm::Winograd4x4);
    const Tensor want_half = nn::F::conv2d(x, half_conv->weight.to(DType::F32), half_conv->bias.to(DType::F32), {1}, {1});
    Tensor got_half;
    {
      AutocastGuard autocast;
      got_half = half_conv(x);
    }
    set_conv_algorithm(before);
    CHECK(got_half.dtype() == DType::F32);
    CHECK(relative_error(got_half, want_half) < 1e-2);  // the bias add is bf16 + f32 -> f32
  }

  const Tensor want_pool = nn::F::adaptive_avg_pool2d(x, {5, 3});
  const Tensor theta = randn({2, 2, 3}) * 0.3;
  const Tensor want_grid = nn::F::affine_grid(theta, {2, 16, 7, 9}, false);
  const Tensor want_sample = nn::F::grid_sample(x, want_grid);
  AutocastGuard autocast;
  CHECK(same(nn::F::adaptive_avg_pool2d(x, {5, 3}), want_pool));
  const Tensor grid = nn::F::affine_grid(theta, {2, 16, 7, 9}, false);
  CHECK(same(grid, want_grid));
  CHECK(same(nn::F::grid_sample(x, grid), want_sample));
  // A spatial transformer's theta comes from a Linear, hence bf16: the grid is f32 anyway, and
  // grid_sample takes bf16 inputs or grids in f32.
  const Tensor theta_bf16 = theta.to(DType::BF16);
  const Tensor grid_from_bf16 = nn::F::affine_grid(theta_bf16, {2, 16, 7, 9}, false);
  CHECK(grid_from_bf16.dtype() == DType::F32);
  CHECK(nn::F::grid_sample(x, grid_from_bf16).dtype() == DType::F32);
  CHECK(nn::F::grid_sample(x.to(DType::BF16), grid).dtype() == DType::F32);
  // An f64 mask is refused clearly (its probabilities would be f64, which autocast leaves).
  const Tensor q = randn({2, 5, 8}).to(DType::BF16);
  CHECK_THROWS_WITH_AS(nn::F::scaled_dot_product_attention(q, q, q, randn({5, 5}).to(DType::F64)),
                       doctest::Contains("[scaled_dot_product_attention] attn_mask"), Error);
}

namespace {
using AutocastInference = Policy<Backends<Cpu>, Layers<autocast::Autocast>>;
}

TEST_CASE("autocast composes into a user's policy without autograd") {
  const auto a = randn<AutocastInference>({4, 6}), b = randn<AutocastInference>({6, 3});
  CHECK(a.matmul(b).dtype() == DType::F32);
  AutocastGuard autocast;
  CHECK(a.matmul(b).dtype() == DType::BF16);
}

}  // namespace test_autocast
