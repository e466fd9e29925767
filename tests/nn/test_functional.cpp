// nn::functional: the functional form of each layer and activation, checked against
// libtorch 1.13's torch::nn::functional on the same inputs (values printed by a libtorch
// program; where current PyTorch differs from 1.13 the comment says so), the modules against
// their functional forms, and Embedding::from_pretrained.

#include <doctest/doctest.h>
#include <ember/nn.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace test_functional {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> vals(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  const double* p = h.data_ptr<double>();
  return std::vector<double>(p, p + h.numel());
}

void check_vals(const Tensor& t, const Shape& shape, const std::vector<double>& expect, double tol = 1e-12) {
  REQUIRE(t.defined());
  CHECK(t.sizes() == shape);
  std::vector<double> v = vals(t);
  REQUIRE(v.size() == expect.size());
  for (size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(expect[i])) CHECK(std::isnan(v[i]));
    else CHECK(v[i] == doctest::Approx(expect[i]).epsilon(tol));
  }
}

Tensor edge_input() { return tensor<double>({-2.0, -0.5, 0.0, 0.3, 1.5, kNaN}); }
Tensor pair_input() { return tensor<double>({0.5, -1.0, 2.0, 0.25, 1.0, 3.0, -0.5, -2.0}).view({2, 4}); }

}  // namespace

TEST_CASE("functional activations match libtorch") {
  namespace F = nn::F;
  Tensor x = edge_input();
  // PyTorch >= 2.6 keeps NaN through softshrink (pytorch#138385); 1.13 gave 0.
  check_vals(F::softshrink(x, 0.4), {6}, {-1.6, -0.1, 0, 0, 1.1, kNaN});
  check_vals(F::hardshrink(x, 0.4), {6}, {-2, -0.5, 0, 0, 1.5, kNaN});
  check_vals(F::rrelu(x, 0.1, 0.3, false), {6}, {-0.4, -0.1, 0, 0.3, 1.5, kNaN});
  check_vals(F::logsigmoid(x), {6},
             {-2.1269280110429727, -0.97407698418010669, -0.69314718055994529, -0.55435524446852713,
              -0.20141327798275241, kNaN});
  // log(sigmoid(inf)) = log(1) = +0, as PyTorch's (-softplus(-x) would give -0).
  CHECK_FALSE(std::signbit(F::logsigmoid(tensor<double>({kInf})).item<double>()));
  check_vals(F::tanhshrink(x), {6},
             {-1.0359724199241831, -0.037882842739990263, 0, 0.0086873875484090868, 0.5948517463551336, kNaN});
  check_vals(F::threshold(x, 0.1, 20.0), {6}, {20, 20, 20, 0.3, 1.5, kNaN});
  check_vals(F::hardtanh(x, 2.0, 1.0), {6}, {1, 1, 1, 1, 1, kNaN});
  check_vals(F::celu(x, 0.5), {6}, {-0.49084218055563289, -0.31606027941427883, 0, 0.3, 1.5, kNaN});
  check_vals(F::gelu(x, "tanh"), {6},
             {-0.045402305912224938, -0.15428599017485606, 0, 0.18537092354275922, 1.3995715769802328, kNaN});
  check_vals(F::softplus(x, 2.0, 1.0), {6},
             {0.0090749639589048688, 0.15663084375911143, 0.34657359027997264, 0.5187439752429428, 1.5, kNaN});
  // The forms without options are Ember's free functions, with PyTorch's defaults.
  check_vals(F::leaky_relu(x), {6}, {-0.02, -0.005, 0, 0.3, 1.5, kNaN});
  check_vals(F::leaky_relu(x, 0.2), {6}, {-0.4, -0.1, 0, 0.3, 1.5, kNaN});
  check_vals(F::relu(x), {6}, {0, 0, 0, 0.3, 1.5, kNaN});

  Tensor y = pair_input();
  check_vals(F::glu(y, 0), {1, 4},
             {0.36552928931500245, -0.95257412682243336, 0.75508133759629081, 0.029800730505529387});
  check_vals(F::glu(y), {2, 2}, {0.44039853898894116, -0.56217650088579807, 0.37754066879814541, 0.35760876606635261});
  check_vals(F::normalize(y, 3.0, 1), {2, 4},
             {0.23913586035663351, -0.47827172071326701, 0.95654344142653402, 0.11956793017831675, 0.30250371654802771,
              0.90751114964408319, -0.15125185827401386, -0.60500743309605542});
  check_vals(F::normalize(zeros({2, 3}, DType::F64)), {2, 3}, {0, 0, 0, 0, 0, 0});
  check_vals(F::softmin(y, 0), {2, 4},
             {0.62245933120185459, 0.98201379003790845, 0.07585818002124356, 0.095349464899109504, 0.37754066879814546,
              0.017986209962091555, 0.92414181997875655, 0.90465053510089055});
  Tensor z = tensor<double>({1.0, 2.0, 0.5, -1.0}).view({1, 4});
  check_vals(F::pairwise_distance(y, z, 1.5), {2}, {4.2573589058390287, 2.0800831301533327});
  check_vals(F::pairwise_distance(y, z, 2.0, 1e-6, true), {2, 1}, {3.6142078661864478, 1.7320502302196665});
}

TEST_CASE("functional prelu and rrelu gradients") {
  namespace F = nn::F;
  Tensor x = tensor<double>({-1.0, 2.0, -3.0, 0.0, 4.0, -0.5}).view({1, 3, 2}).requires_grad_();
  Tensor w = tensor<double>({0.1, 0.2, 0.3}).requires_grad_();
  Tensor o = F::prelu(x, w);
  o.sum().backward();
  check_vals(o, {1, 3, 2}, {-0.1, 2, -0.6, 0, 4, -0.15});
  check_vals(x.grad(), {1, 3, 2}, {0.1, 1, 0.2, 0.2, 1, 0.3});  // at 0 the slope, as PyTorch
  check_vals(w.grad(), {3}, {-1, -3, -0.5});
  CHECK_THROWS_WITH_AS(F::prelu(x, tensor<double>({0.1, 0.2})), doctest::Contains("[prelu]"), Error);
  CHECK_THROWS_WITH_AS(F::prelu(x, w.view({3, 1})), doctest::Contains("[prelu]"), Error);

  // Training: each element at or below 0 gets its own slope in [lower, upper], and its
  // gradient is that slope; positive elements pass through with gradient 1.
  manual_seed(7);
  Tensor xr = tensor<double>({-1.0, 2.0, 0.0, -4.0, -4.0, -4.0, -4.0, -4.0}).requires_grad_();
  Tensor yr = F::rrelu(xr, 0.1, 0.3, true);
  yr.sum().backward();
  std::vector<double> out = vals(yr), g = vals(xr.grad()), in = vals(xr);
  CHECK(out[1] == 2.0);
  CHECK(g[1] == 1.0);
  CHECK(out[2] == 0.0);
  for (size_t i : {0u, 2u, 3u, 4u, 5u, 6u, 7u}) {
    CAPTURE(i);
    CHECK(g[i] >= 0.1);
    CHECK(g[i] <= 0.3);
    CHECK(out[i] == doctest::Approx(in[i] * g[i]));
  }
  CHECK(g[3] != g[4]);  // one slope per element, not one per call
  CHECK_THROWS_WITH_AS(F::rrelu(xr, 0.3, 0.1, true), doctest::Contains("[rrelu]"), Error);
  CHECK_THROWS_WITH_AS(F::celu(xr, 0.0), doctest::Contains("[celu]"), Error);
  CHECK_THROWS_WITH_AS(F::gelu(xr, "fast"), doctest::Contains("[gelu]"), Error);
  CHECK_THROWS_WITH_AS(F::glu(tensor<double>({1.0, 2.0, 3.0})), doctest::Contains("[glu]"), Error);
}

TEST_CASE("activation modules forward to their functional forms") {
  namespace F = nn::F;
  manual_seed(3);
  Tensor x = randn({2, 3, 4, 2}, DType::F64);
  auto same = [](const Tensor& a, const Tensor& b) { CHECK(vals(a) == vals(b)); };
  same(nn::ReLU()(x), F::relu(x));
  same(nn::LeakyReLU(0.3)(x), F::leaky_relu(x, 0.3));
  same(nn::ELU(0.7)(x), F::elu(x, 0.7));
  same(nn::CELU(0.7)(x), F::celu(x, 0.7));
  same(nn::GELU("tanh")(x), F::gelu(x, "tanh"));
  same(nn::Softplus(2.0, 3.0)(x), F::softplus(x, 2.0, 3.0));
  same(nn::Hardtanh(-0.5, 0.5)(x), F::hardtanh(x, -0.5, 0.5));
  same(nn::Hardshrink(0.3)(x), F::hardshrink(x, 0.3));
  same(nn::Softshrink(0.3)(x), F::softshrink(x, 0.3));
  same(nn::Threshold(0.1, -2.0)(x), F::threshold(x, 0.1, -2.0));
  same(nn::LogSigmoid()(x), F::logsigmoid(x));
  same(nn::Tanhshrink()(x), F::tanhshrink(x));
  same(nn::GLU(1)(x.narrow(1, 0, 2)), F::glu(x.narrow(1, 0, 2), 1));
  same(nn::Softmin(2)(x), F::softmin(x, 2));
  same(nn::Softmax(1)(x), F::softmax(x, 1));
  same(nn::LogSoftmax(1)(x), F::log_softmax(x, 1));
  nn::PReLU prelu(3, 0.2);
  same(prelu(x), F::prelu(x, prelu->weight));

  // RReLU: eval mode is the mean slope; training draws.
  nn::RReLU rrelu(0.1, 0.3);
  CHECK(rrelu->to_string().find("RReLU(lower=0.1, upper=0.3)") != std::string::npos);
  rrelu->eval();
  same(rrelu(x), F::leaky_relu(x, 0.2));
  rrelu->train();
  CHECK(vals(rrelu(x)) != vals(F::leaky_relu(x, 0.2)));
  CHECK_THROWS_WITH_AS(nn::RReLU(0.5, 0.2), doctest::Contains("[RReLU]"), Error);

  // Softmax2d: over the channels of (C, H, W) or (N, C, H, W).
  Tensor s2 = arange(12, DType::F64).view({3, 2, 2}) * 0.3;
  check_vals(nn::Softmax2d()(s2), {3, 2, 2},
             {0.065175055982266139, 0.065175055982266139, 0.065175055982266139, 0.065175055982266139,
              0.21638880630702367, 0.21638880630702373, 0.21638880630702359, 0.21638880630702373,
              0.71843613771071013, 0.71843613771071013, 0.71843613771071013, 0.71843613771071013});
  same(nn::Softmax2d()(x), F::softmax(x, 1));
  CHECK_THROWS_WITH_AS(nn::Softmax2d()(x.select(0, 0).select(0, 0)), doctest::Contains("[Softmax2d]"), Error);
}

TEST_CASE("functional embedding, embedding_bag and bilinear match libtorch") {
  namespace F = nn::F;
  Tensor w = arange(12, DType::F64).view({4, 3}).requires_grad_();
  Tensor idx = tensor<int64_t>({0, 2, 3, 2}).view({2, 2});
  Tensor e = F::embedding(idx, w, -2);  // padding_idx -2 is row 2: read, but no gradient
  (e * arange(12, DType::F64).view({2, 2, 3})).sum().backward();
  check_vals(e, {2, 2, 3}, {0, 1, 2, 6, 7, 8, 9, 10, 11, 6, 7, 8});
  check_vals(w.grad(), {4, 3}, {0, 1, 2, 0, 0, 0, 0, 0, 0, 6, 7, 8});
  CHECK_THROWS_WITH_AS(F::embedding(idx, w, 4), doctest::Contains("[embedding]"), Error);
  CHECK_THROWS_WITH_AS(F::embedding(idx, w.view({12})), doctest::Contains("[embedding]"), Error);
  CHECK_THROWS_WITH_AS(F::embedding(idx.to(DType::F32), w), doctest::Contains("[embedding]"), Error);

  Tensor w2 = arange(15, DType::F64).view({5, 3}).requires_grad_();
  Tensor in = tensor<int64_t>({1, 2, 4, 4, 3, 0}), off = tensor<int64_t>({0, 2, 2, 5});
  Tensor psw = tensor<double>({0.5, 2.0, 1.0, -1.0, 3.0, 0.25});
  check_vals(F::embedding_bag(in, w2, off, "mean", {}, 4), {4, 3}, {4.5, 5.5, 6.5, 0, 0, 0, 9, 10, 11, 0, 1, 2});
  check_vals(F::embedding_bag(in, w2, off, "sum", psw), {4, 3},
             {13.5, 16, 18.5, 0, 0, 0, 27, 30, 33, 0, 0.25, 0.5});
  Tensor bm = F::embedding_bag(in, w2, off, "max");
  bm.sum().backward();
  check_vals(bm, {4, 3}, {6, 7, 8, 0, 0, 0, 12, 13, 14, 0, 1, 2});
  check_vals(w2.grad(), {5, 3}, {1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1});
  // A (B, L) input with B = 0 gives no bags.
  check_vals(F::embedding_bag(empty({0, 3}, DType::I64), w2), {0, 3}, {});
  CHECK_THROWS_WITH_AS(F::embedding_bag(in, w2, off, "median"), doctest::Contains("[embedding_bag]"), Error);
  CHECK_THROWS_WITH_AS(F::embedding_bag(in, w2, off.to(DType::F32)), doctest::Contains("[embedding_bag]"), Error);

  Tensor x1 = tensor<double>({1.0, -1.0, 0.5, 2.0, 0.0, 1.0}).view({3, 2});
  Tensor x2 = tensor<double>({2.0, 0.0, 1.0, -1.0, 1.0, 0.5, 3.0, 1.0, -2.0}).view({3, 3});
  Tensor bw = arange(12, DType::F64).view({2, 2, 3}) * 0.1 - 0.5;
  Tensor bb = tensor<double>({0.25, -0.75});
  check_vals(F::bilinear(x1, x2, bw, bb), {3, 2},
             {-0.65000000000000013, -1.6499999999999999, 0.42499999999999993, 0.17500000000000004,
              -0.44999999999999984, -0.25},
             1e-12);
  CHECK_THROWS_WITH_AS(F::bilinear(x1, x2, bw, tensor<double>({1.0})), doctest::Contains("[bilinear]"), Error);
  CHECK_THROWS_WITH_AS(F::bilinear(x1, x1, bw), doctest::Contains("[bilinear]"), Error);

  // max_pool1d with indices (kernel 3, stride 2, padding 1).
  Tensor mp = tensor<double>({1.0, 3.0, 2.0, 5.0, 4.0, 0.0, 7.0}).view({1, 1, 7});
  auto [v, i] = F::max_pool1d_with_indices(mp, {3}, {2}, {1});
  check_vals(v, {1, 1, 4}, {3, 5, 5, 7});
  check_vals(i, {1, 1, 4}, {1, 3, 3, 6});
}

TEST_CASE("Embedding::from_pretrained copies the table, frozen by default") {
  Tensor pre = tensor<float>({1, 2, 3, 4, 5, 6}).view({3, 2});
  nn::Embedding emb = nn::Embedding::from_pretrained(pre, nn::EmbeddingFromPretrainedOptions().padding_idx(1));
  CHECK_FALSE(emb->weight.requires_grad());
  CHECK(emb->parameters().size() == 1);
  CHECK(vals(emb->parameters()[0]) == vals(pre));
  check_vals(emb(tensor<int64_t>({1, 2})), {2, 2}, {3, 4, 5, 6});  // the padding row keeps its values
  CHECK(emb->options.padding_idx() == 1);

  nn::Embedding trainable =
      nn::Embedding::from_pretrained(pre.to(DType::F64), nn::EmbeddingFromPretrainedOptions().freeze(false));
  CHECK(trainable->weight.requires_grad());
  CHECK(trainable->weight.dtype() == DType::F64);
  trainable(tensor<int64_t>({0, 0})).sum().backward();
  check_vals(trainable->weight.grad(), {3, 2}, {2, 2, 0, 0, 0, 0});

  nn::EmbeddingBag bag =
      nn::EmbeddingBag::from_pretrained(pre, nn::EmbeddingFromPretrainedOptions().mode("sum"));
  check_vals(bag(tensor<int64_t>({0, 2}).view({1, 2})), {1, 2}, {6, 8});
  CHECK_THROWS_WITH_AS(nn::Embedding::from_pretrained(pre.view({6})), doctest::Contains("[Embedding::from_pretrained]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Embedding::from_pretrained(pre.to(DType::I64)),
                       doctest::Contains("[Embedding::from_pretrained]"), Error);
}

TEST_CASE("functional embedding_bag refuses indices outside every bag") {
  Tensor w = arange(6, DType::F64).view({3, 2});
  CHECK_THROWS_WITH_AS(nn::F::embedding_bag(tensor<int64_t>({0, 1}), w, empty({0}, DType::I64)),
                       doctest::Contains("[embedding_bag]"), Error);
}

TEST_CASE("functional softmax and log_softmax with a dtype compute in it") {
  Tensor x = tensor<double>({1.0, 2.0, 3.0}).to(DType::F16);
  Tensor s = nn::F::softmax(x, 0, DType::F32), l = nn::F::log_softmax(x, 0, DType::F64);
  CHECK(s.dtype() == DType::F32);
  CHECK(l.dtype() == DType::F64);
  check_vals(l, {3}, {-2.4076059644443806, -1.4076059644443806, -0.40760596444438046});
  check_vals(s, {3}, {0.090030573170380462, 0.24472847105479764, 0.66524095577483361}, 1e-6);
  // The Tensor methods take the dtype too (libtorch's x.softmax(dim, dtype)).
  CHECK(x.softmax(0, DType::F64).dtype() == DType::F64);
  check_vals(x.log_softmax(0, DType::F32), {3}, {-2.4076059644443806, -1.4076059644443806, -0.40760596444438046}, 1e-6);
}

TEST_CASE("F:: option-struct forms, as libtorch spells them, equal the positional forms") {
  namespace F = nn::F;
  manual_seed(3);
  const Tensor logits = randn({4, 5}), y = tensor<int64_t>({0, 4, 2, 2});
  const Tensor w = rand({5}) + 0.5;
  auto same = [](const Tensor& a, const Tensor& b) { return a.eq(b).all().item<bool>(); };
  CHECK(same(F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().label_smoothing(0.1).weight(w)),
             F::cross_entropy(logits, y, w, -100, "mean", 0.1)));
  CHECK(same(F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().reduction("none").ignore_index(2)),
             F::cross_entropy(logits, y, Tensor(), 2, "none")));
  const Tensor logp = logits.log_softmax(1);
  CHECK(same(F::nll_loss(logp, y, F::NLLLossFuncOptions().reduction("sum")), F::nll_loss(logp, y, {}, -100, "sum")));
  // A braced {} is still the (empty) weight, not default options.
  CHECK(same(F::cross_entropy(logits, y, {}), F::cross_entropy(logits, y)));
  CHECK(same(F::nll_loss(logp, y, {}), F::nll_loss(logp, y)));
  CHECK(same(F::log_softmax(logits, F::LogSoftmaxFuncOptions(1)), logp));
  CHECK(same(F::softmax(logits, F::SoftmaxFuncOptions(0)), logits.softmax(0)));
  CHECK(F::softmax(logits, F::SoftmaxFuncOptions(1).dtype(DType::F64)).dtype() == DType::F64);
  CHECK(same(F::dropout(logits, F::DropoutFuncOptions().p(0.3).training(false)), logits));
  manual_seed(9);
  const Tensor d1 = F::dropout(logits, F::DropoutFuncOptions().p(0.3));
  manual_seed(9);
  CHECK(same(d1, F::dropout(logits, 0.3, true)));
  CHECK(!same(d1, logits));
}

TEST_CASE("embedding options: max_norm, norm_type, scale_grad_by_freq, include_last_offset") {
  namespace F = nn::F;
  // max_norm scales only the rows read whose norm exceeds it, in place, before the lookup.
  Tensor w = tensor<double>({{3, 4}, {0.3, 0.4}, {6, 8}});
  Tensor y = F::embedding(tensor<int64_t>({0, 1, 0}), w, std::nullopt, 1.0);
  CHECK(vals(w) == std::vector<double>{3 / (5 + 1e-7), 4 / (5 + 1e-7), 0.3, 0.4, 6, 8});
  CHECK(vals(y.select(0, 2)) == vals(w.select(0, 0)));
  Tensor w3 = tensor<double>({{1, 1}});  // the 3-norm is 2^(1/3)
  F::embedding(tensor<int64_t>({0}), w3, std::nullopt, 1.0, 3.0);
  CHECK(vals(w3)[0] == doctest::Approx(1 / (std::cbrt(2.0) + 1e-7)));
  CHECK_THROWS_WITH_AS(F::embedding(tensor<int64_t>({0, 3}), w, std::nullopt, 1.0),
                       doctest::Contains("[embedding] index 3 is out of range for 3 embeddings"), Error);
  CHECK_THROWS_WITH_AS(F::embedding(tensor<int64_t>({0}), w, std::nullopt, -1.0),
                       doctest::Contains("max_norm must be non-negative"), Error);

  // scale_grad_by_freq divides each row's gradient by its count in the batch; EmbeddingBag's
  // sum (whose torch 1.13 gradient miscounts) equals the per-row lookup summed per bag.
  Tensor table = randn({8, 3}, DType::F64);
  Tensor idx = tensor<int64_t>({1, 7, 1, 4, 4, 4, 0});
  Tensor g = randn({3, 3}, DType::F64);
  Tensor a = table.clone().requires_grad_(), b = table.clone().requires_grad_();
  F::embedding_bag(idx, a, tensor<int64_t>({0, 3, 4}), "sum", {}, {}, {}, 2.0, true).backward(g);
  Tensor rows = F::embedding(idx, b, {}, {}, 2.0, true);
  stack({rows.narrow(0, 0, 3).sum({0}), rows.narrow(0, 3, 1).sum({0}), rows.narrow(0, 4, 3).sum({0})}).backward(g);
  CHECK(vals(a.grad()) == vals(b.grad()));
  // Row 4 is read by bag 1 once and bag 2 twice: (g1 + 2 g2) / 3.
  CHECK(vals(b.grad().select(0, 4))[0] ==
        doctest::Approx((g.index({1, 0}).item<double>() + 2 * g.index({2, 0}).item<double>()) / 3));
  CHECK_THROWS_WITH_AS(F::embedding_bag(idx, a, tensor<int64_t>({0, 3}), "max", {}, {}, {}, 2.0, true),
                       doctest::Contains("scale_grad_by_freq"), Error);

  // include_last_offset: the last offset ends the last bag and must be the input's length.
  Tensor off = tensor<int64_t>({0, 3, 4, 7});
  CHECK(vals(F::embedding_bag(idx, table, off, "mean", {}, {}, {}, 2.0, false, true)) ==
        vals(F::embedding_bag(idx, table, off.narrow(0, 0, 3), "mean")));
  CHECK_THROWS_WITH_AS(F::embedding_bag(idx, table, tensor<int64_t>({0, 3, 6}), "sum", {}, {}, {}, 2.0, false, true),
                       doctest::Contains("last offset must be the number of indices 7, got 6"), Error);
  CHECK_THROWS_WITH_AS(F::embedding_bag(idx.view({1, 7}), table, {}, "sum", {}, {}, {}, 2.0, false, true),
                       doctest::Contains("include_last_offset is for 1-d input"), Error);
  // A refused call renormalises nothing: the checks come before max_norm's in-place scaling.
  Tensor before = table.clone();
  CHECK_THROWS_WITH_AS(F::embedding_bag(idx, table, tensor<int64_t>({0, 5, 3}), "sum", {}, {}, 0.1),
                       doctest::Contains("offsets 5 .. 3 are out of range"), Error);
  CHECK_THROWS_WITH_AS(F::embedding_bag(idx, table, off.narrow(0, 0, 3), "sum", ones({6}, DType::F64), {}, 0.1),
                       doctest::Contains("per_sample_weights must have the input's shape"), Error);
  CHECK(vals(table) == vals(before));

  // The modules and FuncOptions pass them on; sparse gradients are refused.
  nn::Embedding emb(nn::EmbeddingOptions(4, 2).max_norm(0.5).norm_type(1.0).scale_grad_by_freq(true));
  CHECK(emb->extra_repr() == "4, 2, max_norm=0.5, norm_type=1, scale_grad_by_freq=True");
  emb(tensor<int64_t>({0, 1, 2, 3}));
  CHECK(emb->weight.abs().sum(1).max().item<float>() <= 0.5f);
  CHECK_THROWS_WITH_AS(nn::Embedding(nn::EmbeddingOptions(4, 2).sparse(true)), doctest::Contains("sparse"), Error);
  CHECK_THROWS_WITH_AS(F::embedding(idx, table, F::EmbeddingFuncOptions().sparse(true)), doctest::Contains("sparse"),
                       Error);
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(8, 3).mode("sum").include_last_offset(true));
  CHECK(bag->extra_repr() == "8, 3, mode='sum', include_last_offset=True");
  CHECK(bag(idx, off).sizes() == Shape{3, 3});
  CHECK(vals(F::embedding_bag(idx, table, F::EmbeddingBagFuncOptions().offsets(off).include_last_offset(true))) ==
        vals(F::embedding_bag(idx, table, off, "mean", {}, {}, {}, 2.0, false, true)));
  CHECK_THROWS_WITH_AS(nn::EmbeddingBag(nn::EmbeddingBagOptions(8, 3).mode("max").scale_grad_by_freq(true)),
                       doctest::Contains("[EmbeddingBag] mode 'max'"), Error);
  Tensor wt = table.clone();
  ember::embedding_renorm_(wt, tensor<int64_t>({2}), 0.1, 2.0);
  CHECK(wt.select(0, 2).norm().item<double>() == doctest::Approx(0.1));
  CHECK(vals(wt.select(0, 3)) == vals(table.select(0, 3)));
}

TEST_CASE("nn: huge or empty arguments give an Error naming the op, never a crash or a hang") {
  namespace F = nn::F;
  const int64_t big = int64_t{1} << 21;
  // 2^22 outputs per dim: the window count 2^66 wrapped to 0 and im2col wrote past its output.
  CHECK_THROWS_AS(F::conv3d(ones({1, 1, 1, 1, 1}), ones({1, 1, 2, 2, 2}), {}, {1}, {big}), Error);
  CHECK_THROWS_WITH_AS(F::conv2d(ones({1, 1, 4, 4}), ones({1, 1, 3, 3}), {}, {1}, {int64_t{1} << 62}),
                       doctest::Contains("must be below 2^31"), Error);
  CHECK_THROWS_WITH_AS(F::conv_transpose2d(ones({1, 1, 4, 4}), ones({1, 1, 3, 3}), {}, {int64_t{1} << 62}),
                       doctest::Contains("must be below 2^31"), Error);
  CHECK_THROWS_AS(F::max_pool2d(ones({1, 1, 4, 4}), {int64_t{1} << 62}, {1}, {0}, {4}), Error);
  // A weight with no output channels divided by zero; as PyTorch, the output is empty.
  CHECK(F::conv2d(ones({1, 1, 4, 4}), ones({0, 1, 3, 3})).sizes() == Shape{1, 0, 2, 2});
  // Resampling to a size beyond memory fails as an allocation before its host loops.
  CHECK_THROWS_AS(F::interpolate(ones({1, 1, 2, 2}), {int64_t{1} << 50, 1}, "bicubic"), Error);
  CHECK_THROWS_WITH_AS(F::interpolate(ones({1, 1, 2, 2}), F::InterpolateFuncOptions().scale_factor(std::vector<double>{1e300})),
                       doctest::Contains("too large"), Error);
  CHECK_THROWS_WITH_AS(F::pixel_shuffle(ones({1, 4, 2, 2}), int64_t{1} << 32), doctest::Contains("[pixel_shuffle]"),
                       Error);
  const int64_t max = std::numeric_limits<int64_t>::max();
  CHECK_THROWS_WITH_AS(F::ctc_loss(zeros({5, 3, 3}), ones({1}, DType::I64), {5, 5, 5}, {max, max, 3}),
                       doctest::Contains("[ctc_loss]"), Error);
  CHECK_THROWS_WITH_AS(nn::LSTM(nn::LSTMOptions(1, int64_t{1} << 61)), doctest::Contains("[LSTM]"), Error);
  // Empty batches and sequences: PyTorch's results, or an error naming the layer.
  Tensor no_batch = zeros({5, 0, 3}), no_targets = zeros({0}, DType::I64);
  const std::vector<int64_t> no_lengths;
  CHECK(F::ctc_loss(no_batch, no_targets, no_lengths, no_lengths, 0, "sum").item<float>() == 0.0f);
  CHECK(std::isnan(F::ctc_loss(no_batch, no_targets, no_lengths, no_lengths).item<float>()));
  CHECK(F::ctc_loss(no_batch, no_targets, no_lengths, no_lengths, 0, "none").sizes() == Shape{0});
  CHECK_THROWS_WITH_AS(nn::LSTM(2, 3)(zeros({0, 1, 2})), doctest::Contains("[LSTM] expects a sequence of length > 0"),
                       Error);
  CHECK_THROWS_WITH_AS(F::dropout(tensor<int64_t>({1, 2, 3}), 0.5, true),
                       doctest::Contains("[dropout] with p = 0.5 needs a floating-point input"), Error);
  // p = 0 and p = 1 need no scaling: defined for integers too, keeping the dtype (as PyTorch).
  CHECK(vals(F::dropout(tensor<int64_t>({1, 2, 3}), 0.0, true)) == std::vector<double>{1, 2, 3});
  Tensor dropped = F::dropout(tensor<int64_t>({1, 2, 3}), 1.0, true);
  CHECK(dropped.dtype() == DType::I64);
  CHECK(vals(dropped) == std::vector<double>{0, 0, 0});
  Tensor w = empty({3});
  CHECK_THROWS_WITH_AS(nn::init::uniform_(w, -INFINITY, INFINITY), doctest::Contains("must be finite"), Error);
}

TEST_CASE("fused ops record when only an optional operand needs a gradient (a first layer's norm or bias)") {
  // The input holds data (no gradient); the weight and bias must still get theirs, equal to
  // those computed when the input also requires grad. Fused ops pass weight and bias as
  // optional operands, which the autograd layer missed (the output did not require grad).
  manual_seed(21);
  using Fn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  const Tensor none;
  Tensor rm = zeros({3}), rv = ones({3});
  struct Case {
    const char* name;
    Shape x, w, b;
    Fn f;
  };
  const std::vector<Case> cases = {
      {"batch_norm (training)", {4, 3, 5}, {3}, {3},
       [&](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::batch_norm(x, none, none, w, b, true); }},
      {"batch_norm (evaluation)", {4, 3, 5}, {3}, {3},
       [&](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::batch_norm(x, rm, rv, w, b, false); }},
      {"layer_norm", {4, 3, 5}, {5}, {5},
       [](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::layer_norm(x, {5}, w, b); }},
      {"group_norm", {2, 4, 5}, {4}, {4},
       [](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::group_norm(x, 2, w, b); }},
      {"instance_norm", {2, 3, 6}, {3}, {3},
       [](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::instance_norm(x, w, b); }},
      {"conv2d (direct)", {2, 2, 6, 6}, {4, 2, 3, 3}, {4},
       [](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::conv2d(x, w, b, {1}, {1}); }},
      {"conv2d (depthwise)", {2, 3, 6, 6}, {3, 1, 3, 3}, {3},
       [](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::conv2d(x, w, b, {1}, {1}, {1}, 3); }},
      {"conv2d (Winograd)", {2, 8, 6, 6}, {8, 8, 3, 3}, {8},
       [](const Tensor& x, const Tensor& w, const Tensor& b) { return nn::F::conv2d(x, w, b, {1}, {1}); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Tensor x = randn(c.x), w0 = randn(c.w), b0 = randn(c.b);
    for (int which = 0; which < 2; ++which) {  // the weight alone, then the bias alone
      CAPTURE(which);
      auto grads = [&](bool x_grad) {
        Tensor xi = x.detach().clone(), w = w0.detach().clone(), b = b0.detach().clone();
        if (x_grad) xi.requires_grad_();
        (which == 0 ? w : b).requires_grad_();
        Tensor y = c.f(xi, w, b);
        REQUIRE(y.requires_grad());
        (y * y).sum().backward();
        return (which == 0 ? w : b).grad();
      };
      CHECK((grads(false) - grads(true)).abs().max().item<double>() == 0.0);
    }
  }
}

}  // namespace test_functional
