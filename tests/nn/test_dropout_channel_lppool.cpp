// Dropout1d/3d, AlphaDropout, FeatureAlphaDropout (random: checked by structure and
// statistics), LocalResponseNorm, ChannelShuffle and LPPool beyond their golden cases.
#include <doctest/doctest.h>
#include "../error_text.hpp"
#include <ember/nn.hpp>

#include <cmath>
#include <string>

namespace test_dropout_channel_lppool {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(DType::F64) - b.to(DType::F64)).abs().amax().item<double>();
}
}  // namespace

TEST_CASE("dropout1d/3d drop whole channels; alpha dropout keeps a SELU network's mean and variance") {
  namespace F = nn::F;
  manual_seed(3);
  Tensor x = ones({8, 16, 5});
  Tensor y = F::dropout1d(x, 0.5);
  // Each channel is all 0 or all 2.
  Tensor per_channel = y.amax({2}), per_channel_min = y.amin({2});
  CHECK(max_diff(per_channel, per_channel_min) == 0.0);
  CHECK(per_channel.eq(0.0).logical_or(per_channel.eq(2.0)).all().item<bool>());
  CHECK(per_channel.eq(0.0).any().item<bool>());
  CHECK(per_channel.eq(2.0).any().item<bool>());
  Tensor v = ones({4, 8, 2, 3, 2});
  Tensor z = F::dropout3d(v, 0.25);
  CHECK(max_diff(z.amax({2, 3, 4}), z.amin({2, 3, 4})) == 0.0);
  CHECK(max_diff(F::dropout3d(v, 0.25, false), v) == 0.0);
  CHECK(F::dropout1d(ones({3, 4}), 0.5).sizes() == Shape{3, 4});  // unbatched (C, L)

  // Alpha dropout of standard normal input: mean 0 and variance 1 stay (within sampling error),
  // and the dropped elements all take one value, a * alpha' + b.
  Tensor s = randn({200000}, DType::F64);
  Tensor a = F::alpha_dropout(s, 0.3, true);
  CHECK(a.mean().item<double>() == doctest::Approx(0.0).epsilon(0.01).scale(1.0));
  CHECK(a.var().item<double>() == doctest::Approx(1.0).epsilon(0.02));
  const double alpha = 1.7580993408473766, k = 1.0 / std::sqrt((alpha * alpha * 0.3 + 1.0) * 0.7);
  const double dropped = -alpha * k + alpha * k * 0.3;
  const double share = a.sub(dropped).abs().lt(1e-12).to(DType::F64).mean().item<double>();
  CHECK(share == doctest::Approx(0.3).epsilon(0.02));
  CHECK(max_diff(F::alpha_dropout(s, 0.3), s) == 0.0);  // the functional default: not training
  CHECK(F::alpha_dropout(s, 1.0, true).abs().amax().item<double>() == 0.0);
  Tensor fa = F::feature_alpha_dropout(randn({6, 10, 4}), 0.5, true);
  Tensor dropped_channel = fa.sub(-alpha / std::sqrt((alpha * alpha * 0.5 + 1.0) * 0.5) * 0.5).abs().lt(1e-6);
  CHECK(dropped_channel.all(2).to(DType::I64).sum().item<int64_t>() > 0);  // some whole channels dropped

  // Modules follow train()/eval(); option forms forward.
  nn::AlphaDropout m(0.3);
  CHECK(max_diff(m(s), s) > 0.0);
  m->eval();
  CHECK(max_diff(m(s), s) == 0.0);
  CHECK(nn::Dropout3d(nn::Dropout3dOptions(0.2).inplace(true))->to_string().rfind("Dropout3d(p=0.2, inplace=True)", 0) ==
        0);
  CHECK(max_diff(F::alpha_dropout(s, F::AlphaDropoutFuncOptions().p(0.3)), s) == 0.0);
  CHECK(max_diff(F::feature_alpha_dropout(v, {}), v) == 0.0);
  Tensor w = ones({2, 3, 4});
  F::dropout1d(w, F::Dropout1dFuncOptions().p(1.0).inplace(true));
  CHECK(w.abs().sum().item<float>() == 0.0f);

  CHECK_ERROR(F::dropout1d(ones({2, 3, 4, 5}), 0.5), "[dropout1d]", "(C, L) or (N, C, L)");
  CHECK_ERROR(F::dropout3d(ones({2, 3, 4}), 0.5), "[dropout3d]", "got shape [2, 3, 4]");
  CHECK_ERROR(F::alpha_dropout(s, 1.5, true), "[alpha_dropout]", "p must be in [0, 1]");
  CHECK_ERROR(F::feature_alpha_dropout(ones({3}), 0.5, true), "[feature_alpha_dropout]", "(N, C, ...)");
  CHECK_ERROR(F::dropout1d(ones({2, 3}, DType::I64), 0.5), "[dropout1d]", "floating-point");
  CHECK_ERROR(nn::FeatureAlphaDropout(-0.1), "[FeatureAlphaDropout]", "p must be in [0, 1]");
}

TEST_CASE("local_response_norm, channel_shuffle and lp_pool against their definitions") {
  namespace F = nn::F;
  manual_seed(4);
  // LRN by the definition: channel c sums squares over [c - size/2, c + (size-1)/2].
  Tensor x = randn({2, 5, 3}, DType::F64);
  Tensor y = F::local_response_norm(x, 3, 0.1, 0.5, 2.0);
  for (int64_t c = 0; c < 5; ++c) {
    Tensor sum = zeros({2, 3}, DType::F64);
    for (int64_t j = std::max<int64_t>(c - 1, 0); j <= std::min<int64_t>(c + 1, 4); ++j) sum = sum + x.select(1, j).square();
    CHECK(max_diff(y.select(1, c), x.select(1, c) / (sum * (0.1 / 3) + 2.0).pow(0.5)) < 1e-12);
  }
  CHECK(max_diff(nn::LocalResponseNorm(nn::LocalResponseNormOptions(3).alpha(0.1).beta(0.5).k(2.0))(x), y) == 0.0);
  CHECK(max_diff(F::local_response_norm(x, F::LocalResponseNormFuncOptions(3).alpha(0.1).beta(0.5).k(2.0)), y) == 0.0);
  CHECK(F::local_response_norm(zeros({0, 3, 2}), 2).sizes() == Shape{0, 3, 2});
  // A window wider than the channels reads every channel: no more work than 2C - 1 terms.
  Tensor all = x.square().sum({1}, true);
  CHECK(max_diff(F::local_response_norm(x, int64_t{1} << 30, 1.0, 1.0, 1.0),
                 x / (all / static_cast<double>(int64_t{1} << 30) + 1.0)) < 1e-12);
  CHECK_ERROR(F::local_response_norm(x.select(0, 0), 3), "[local_response_norm]", "3 or more dims");
  CHECK_ERROR(F::local_response_norm(x, 0), "[local_response_norm]", "size must be positive");

  // channel_shuffle interleaves the groups: channels 0..5 in 2 groups -> 0 3 1 4 2 5.
  Tensor ch = arange(6).to(DType::F32).view({1, 6, 1});
  CHECK(max_diff(F::channel_shuffle(ch, 2).flatten(), tensor<float>({0, 3, 1, 4, 2, 5})) == 0.0);
  CHECK(max_diff(nn::ChannelShuffle(3)(ch), F::channel_shuffle(ch, 3)) == 0.0);
  CHECK(nn::ChannelShuffle(3)->to_string().rfind("ChannelShuffle(groups=3)", 0) == 0);
  CHECK_ERROR(F::channel_shuffle(ch, 4), "[channel_shuffle]", "divide the 6 channels", "got 4");
  CHECK_ERROR(F::channel_shuffle(ch.view({6, 1}), 2), "[channel_shuffle]", "3 or more dims");

  // lp_pool with p = 1 on non-negative input is sum pooling; p = 2 a window's 2-norm.
  Tensor img = rand({2, 3, 6, 6}, DType::F64);
  CHECK(max_diff(F::lp_pool2d(img, 1.0, {2}), F::avg_pool2d(img, {2}) * 4.0) < 1e-12);
  Tensor two = F::lp_pool2d(img, 2.0, {3}, {3});
  CHECK(two.index({0, 0, 0, 0}).item<double>() ==
        doctest::Approx(img.index({0, 0}).narrow(0, 0, 3).narrow(1, 0, 3).square().sum().sqrt().item<double>()));
  CHECK(max_diff(nn::LPPool2d(nn::LPPool2dOptions(2.0, {3}).stride({3}))(img), two) == 0.0);
  CHECK(max_diff(F::lp_pool2d(img, F::LPPool2dFuncOptions(2.0, {3}).stride({3})), two) == 0.0);
  CHECK(nn::LPPool1d(2.0, 3)->to_string().rfind("LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)",
                                                  0) == 0);
  CHECK_ERROR(F::lp_pool2d(img, 0.0, {2}), "[lp_pool2d]", "norm_type must be positive");
  CHECK_ERROR(F::lp_pool1d(img, 2.0, {2}), "[lp_pool1d]");
  CHECK_ERROR(nn::LPPool3d(nn::LPPool3dOptions(2.0, {2, 2})), "[LPPool3d]", "kernel_size needs 1 or 3 values");
}

TEST_CASE("F::gumbel_softmax: samples follow softmax(logits); hard gives one-hot rows with the soft gradient") {
  namespace F = nn::functional;
  manual_seed(7);
  const Tensor logits = tensor<double>({{1.0, 0.0, -1.0}});
  // The argmax of logits + Gumbel noise is a sample of softmax(logits): count the winners.
  const int64_t n = 20000;
  const Tensor batch = logits.expand({n, 3}).contiguous();
  const Tensor soft = F::gumbel_softmax(batch, 1.0);
  CHECK(soft.sum(1).sub(1.0).abs().amax().item<double>() < 1e-12);  // rows are distributions
  const Tensor wins = F::one_hot(soft.argmax(1), 3).sum(0).to(DType::F64).div(static_cast<double>(n));
  const Tensor want = logits.softmax(1).squeeze(0);
  CHECK(wins.sub(want).abs().amax().item<double>() < 0.015);  // ~5 standard errors
  // hard: exactly one-hot in the forward pass, the soft sample's gradient in the backward.
  Tensor x = tensor<double>({{0.5, -0.2, 0.1, 2.0}, {1.0, 1.0, -3.0, 0.0}}).requires_grad_();
  manual_seed(8);
  const Tensor hard = F::gumbel_softmax(x, 0.3, true);
  CHECK(hard.sum(1).eq(1.0).all().item<bool>());
  CHECK(hard.eq(0.0).logical_or(hard.eq(1.0)).all().item<bool>());
  const Tensor w = tensor<double>({{1.0, 2.0, 3.0, 4.0}, {-1.0, 0.5, 0.0, 2.0}});
  hard.mul(w).sum().backward();
  const Tensor g_hard = x.grad().clone();
  x.zero_grad();
  manual_seed(8);  // the same noise
  const Tensor soft_again = F::gumbel_softmax(x, 0.3, false);
  soft_again.mul(w).sum().backward();
  CHECK(g_hard.sub(x.grad()).abs().amax().item<double>() < 1e-12);
  CHECK(soft_again.argmax(1).eq(hard.argmax(1)).all().item<bool>());
  // Along another dim, and in f32.
  CHECK(F::gumbel_softmax(randn({3, 5}), 1.0, true, 0).sum(0).eq(1.0f).all().item<bool>());
  CHECK_ERROR(F::gumbel_softmax(logits, 0.0), "[gumbel_softmax]", "tau");
  CHECK_ERROR(F::gumbel_softmax(arange(3), 1.0), "[gumbel_softmax]", "i64");
  CHECK_ERROR(F::gumbel_softmax(logits, 1.0, false, 2), "[gumbel_softmax]");
}

}  // namespace test_dropout_channel_lppool
