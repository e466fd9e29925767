// libtorch code as written against torch::nn::functional: every F::foo(x, F::FooFuncOptions())
// form gives what the positional form gives (bit for bit: they run the same code), the inplace
// forms write into their input, and the options that are new computations (conv padding by
// name, interpolate by scale factor, lengths as tensors) are checked against a second route.
// Also the option structs of modules that took only plain arguments before: the RNN cells,
// Unflatten, and the new CosineSimilarity and PairwiseDistance modules.

#include "../error_text.hpp"

#include <doctest/doctest.h>
#include <ember/nn.hpp>

#include <vector>

namespace test_functional_options {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
namespace F = ember::nn::functional;

namespace {

bool same(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && a.eq(b).all().item<bool>(); }
bool close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  return a.sizes() == b.sizes() && (a - b).abs().max().item<double>() <= tol;
}

/// f applied to a copy of x returns the copy itself, overwritten with `expected`.
template <class Fn>
void check_writes_input(Fn f, const Tensor& x, const Tensor& expected) {
  Tensor y = x.clone();
  Tensor out = f(y);
  CHECK(out.data_ptr() == y.data_ptr());
  CHECK(same(y, expected));
}

}  // namespace

TEST_CASE("F::conv FuncOptions: bias, stride, padding, dilation and groups as the positional form") {
  manual_seed(11);
  Tensor x = randn({2, 4, 9, 8}), w = randn({6, 2, 3, 3}), b = randn({6});
  CHECK(same(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding({1, 2}).dilation(1).groups(2)),
             F::conv2d(x, w, b, {2}, {1, 2}, {1}, 2)));
  CHECK(same(F::conv2d(x, w, F::Conv2dFuncOptions().groups(2).dilation(2)), F::conv2d(x, w, {}, {1}, {0}, {2}, 2)));
  Tensor x1 = randn({2, 3, 10}), w1 = randn({5, 3, 4});
  CHECK(same(F::conv1d(x1, w1, F::Conv1dFuncOptions().stride(3).padding(2)), F::conv1d(x1, w1, {}, {3}, {2})));
  Tensor x3 = randn({1, 2, 5, 4, 6}), w3 = randn({3, 2, 2, 3, 2});
  CHECK(same(F::conv3d(x3, w3, F::Conv3dFuncOptions().padding(1)), F::conv3d(x3, w3, {}, {1}, {1})));
}

TEST_CASE("F::conv FuncOptions: padding by name, the same as padding the input by hand") {
  manual_seed(12);
  Tensor x = randn({2, 3, 7, 6}), b = randn({4});
  // Odd kernel: "same" is one pixel each side. Even kernel (4 x 2) with dilation 1: three
  // rows of padding, one before and two after (PyTorch puts the extra one after), and one
  // column after.
  Tensor w3 = randn({4, 3, 3, 3}), w42 = randn({4, 3, 4, 2});
  Tensor y = F::conv2d(x, w3, F::Conv2dFuncOptions().bias(b).padding(kSame));
  CHECK(y.sizes() == Shape{2, 4, 7, 6});
  CHECK(same(y, F::conv2d(x, w3, b, {1}, {1})));
  Tensor y2 = F::conv2d(x, w42, F::Conv2dFuncOptions().padding(kSame));
  CHECK(y2.sizes() == Shape{2, 4, 7, 6});
  CHECK(close(y2, F::conv2d(F::pad(x, {0, 1, 1, 2}), w42)));
  // Dilation 2 with the even kernel: 6 rows (3 + 3) and 2 columns (1 + 1).
  Tensor y3 = F::conv2d(x, w42, F::Conv2dFuncOptions().padding(kSame).dilation(2));
  CHECK(y3.sizes() == Shape{2, 4, 7, 6});
  CHECK(close(y3, F::conv2d(F::pad(x, {1, 1, 3, 3}), w42, {}, {1}, {0}, {2})));
  CHECK(same(F::conv2d(x, w3, F::Conv2dFuncOptions().padding(2).padding(kValid)), F::conv2d(x, w3)));
  // The last call wins, as for the module options.
  CHECK(same(F::conv2d(x, w3, F::Conv2dFuncOptions().padding(kSame).padding(0)), F::conv2d(x, w3)));
  // The module with the same weights and padding="same" takes the same route.
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, {4, 2}).padding(kSame).bias(false));
  {
    autograd::NoGradGuard ng;
    conv->weight.copy_(w42);
  }
  CHECK(same(conv(x), y2));
  CHECK_ERROR(F::conv2d(x, w3, F::Conv2dFuncOptions().padding(kSame).stride(2)), "[conv2d]", "'same' needs stride 1");
  CHECK_ERROR(F::conv2d(x, w3, F::Conv2dFuncOptions().padding_str("full")), "[conv2d]", "'same' or 'valid'",
              "'full'");
  // A padding mode is not a padding (libtorch refuses it at compile time; here, at once).
  CHECK_ERROR(F::Conv2dFuncOptions().padding(kReflect), "kSame or kValid", "'reflect'");
  CHECK_ERROR(nn::Conv2dOptions(3, 4, 3).padding(kZeros), "kSame or kValid", "'zeros'");
  CHECK_ERROR(F::conv2d(x, randn({4, 3, 3}), F::Conv2dFuncOptions()), "[conv2d]", "4 dims", "[4, 3, 3]");
}

TEST_CASE("F::conv_transpose FuncOptions as the positional form") {
  manual_seed(13);
  Tensor x = randn({2, 4, 5, 6}), w = randn({4, 3, 3, 2}), b = randn({6});
  CHECK(same(F::conv_transpose2d(
                 x, w, F::ConvTranspose2dFuncOptions().bias(b).stride(2).padding(1).output_padding(1).groups(2)),
             F::conv_transpose2d(x, w, b, {2}, {1}, {1}, 2)));
  Tensor x1 = randn({1, 2, 7}), w1 = randn({2, 3, 3});
  CHECK(same(F::conv_transpose1d(x1, w1, F::ConvTranspose1dFuncOptions().dilation(2)),
             F::conv_transpose1d(x1, w1, {}, {1}, {0}, {0}, 1, {2})));
}

TEST_CASE("F:: pooling FuncOptions as the positional form") {
  manual_seed(14);
  Tensor x = randn({2, 3, 9, 8}), x1 = randn({2, 3, 11});
  CHECK(same(F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1).ceil_mode(true)),
             F::max_pool2d(x, {3}, {2}, {1}, {1}, true)));
  CHECK(same(F::max_pool2d(x, F::MaxPool2dFuncOptions({2, 3}).dilation(2)), F::max_pool2d(x, {2, 3}, {}, {0}, {2})));
  CHECK(same(F::max_pool1d(x1, F::MaxPool1dFuncOptions(3).stride(2)), F::max_pool1d(x1, {3}, {2})));
  auto [v, i] = F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2));
  auto [v2, i2] = F::max_pool2d_with_indices(x, {2});
  CHECK(same(v, v2));
  CHECK(same(i, i2));
  auto [v1, i1] = F::max_pool1d_with_indices(x1, F::MaxPool1dFuncOptions(4).padding(1));
  CHECK(same(i1, F::max_pool1d_with_indices(x1, {4}, {}, {1}).second));
  CHECK(same(v1, F::max_pool1d(x1, {4}, {}, {1})));
  CHECK(same(F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).padding(1).count_include_pad(false)),
             F::avg_pool2d(x, {3}, {}, {1}, false, false)));
  CHECK(same(F::avg_pool1d(x1, F::AvgPool1dFuncOptions(2).ceil_mode(true)), F::avg_pool1d(x1, {2}, {}, {0}, true)));
  CHECK_ERROR(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).dilation({1, 2})), "[avg_pool2d]", "no dilation", "of 2");
  CHECK(same(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).dilation({1, 1})), F::avg_pool2d(x, {2})));
  // divisor_override: the window sum over the given divisor, whatever the padding counts.
  CHECK(same(F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).padding(1).divisor_override(5)),
             F::avg_pool2d(x, {3}, {}, {1}, false, true, 5)));
  CHECK((F::avg_pool2d(x, {2}, {}, {0}, false, true, -2) - F::avg_pool2d(x, {2}) * -2.0).abs().amax().item<float>() <
        1e-6f);
  CHECK_ERROR(F::avg_pool2d(x, {2}, {}, {0}, false, true, 0), "[avg_pool2d]", "divisor_override must not be 0");
  CHECK_ERROR(F::avg_pool1d(x1, F::AvgPool1dFuncOptions(2).divisor_override(2)), "[avg_pool1d]",
              "no divisor_override", "got 2");
  CHECK_ERROR(F::max_pool2d(x, F::MaxPool2dFuncOptions(2).divisor_override(3)), "[max_pool2d]", "no divisor_override");
  CHECK_ERROR(nn::MaxPool3d(nn::MaxPool3dOptions(2).divisor_override(3)), "[MaxPool3d]", "no divisor_override");
  CHECK_ERROR(nn::AvgPool1d(nn::AvgPool1dOptions(2).divisor_override(3))(x1), "[AvgPool1d]", "no divisor_override");
  // Adaptive pooling's options are its output size.
  CHECK(same(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({2, 3})), F::adaptive_avg_pool2d(x, {2, 3})));
  CHECK(F::adaptive_max_pool2d(x, F::AdaptiveMaxPool2dFuncOptions(1)).sizes() == Shape{2, 3, 1, 1});
  CHECK(F::adaptive_avg_pool1d(x1, F::AdaptiveAvgPool1dFuncOptions(4)).sizes() == Shape{2, 3, 4});
}

TEST_CASE("F::interpolate FuncOptions: by size, by scale factor, recompute_scale_factor") {
  manual_seed(15);
  Tensor x = randn({1, 2, 5, 4});
  CHECK(same(F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{7, 9}).mode(kBilinear)),
             F::interpolate(x, {7, 9}, "bilinear")));
  CHECK(same(F::interpolate(
                 x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8}).mode(kBilinear).align_corners(true)),
             F::interpolate(x, {8, 8}, "bilinear", true)));
  // Scale factors: the same as the Upsample module (checked against PyTorch elsewhere).
  for (const char* mode : {"nearest", "bilinear"}) {
    Tensor y = F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7, 2.5}).mode(mode));
    CHECK(y.sizes() == Shape{1, 2, 8, 10});
    nn::Upsample up(nn::UpsampleOptions().scale_factor({1.7, 2.5}).mode(mode));
    CHECK(same(y, up(x)));
    // With recompute_scale_factor the size ratio places the pixels instead: 5 -> 8 rows is a
    // ratio of 8/5, not 1.7 (nearest: output row 5 reads row 3, not 2), so the result is the
    // size form's and differs from the scaled one.
    Tensor r = F::interpolate(
        x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7, 2.5}).mode(mode).recompute_scale_factor(true));
    CHECK(same(r, F::interpolate(x, {8, 10}, mode)));
    CHECK(!same(r, y));
  }
  // One factor for both dims.
  CHECK(same(F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2})),
             F::interpolate(x, {10, 8})));
  CHECK_ERROR(F::interpolate(x, F::InterpolateFuncOptions()), "[interpolate]", "either size or scale_factor",
              "neither");
  CHECK_ERROR(F::interpolate(x, F::InterpolateFuncOptions()
                                    .size(std::vector<int64_t>{4, 4})
                                    .scale_factor(std::vector<double>{2})),
              "[interpolate]", "both");
  CHECK_ERROR(F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).align_corners(false)),
              "[interpolate]", "align_corners", "'nearest'");
  CHECK_ERROR(F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{0.0})), "[interpolate]",
              "positive", "0");
  CHECK_ERROR(F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1, 2, 3})),
              "[interpolate]", "1 or 2 scale factors", "3");
  CHECK_ERROR(F::interpolate(randn({5, 4}), F::InterpolateFuncOptions().scale_factor(std::vector<double>{2})),
              "[interpolate]", "(N, C, H, W)", "[5, 4]");
  CHECK_ERROR(F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).antialias(true)),
              "[interpolate]", "antialias", "'nearest'");
  // antialias reaches the resize, by size and by factor.
  auto aa = F::InterpolateFuncOptions().mode(kBicubic).antialias(true);
  CHECK(same(F::interpolate(x, F::InterpolateFuncOptions(aa).size(std::vector<int64_t>{2, 3})),
             F::interpolate(x, {2, 3}, "bicubic", false, {}, true)));
  CHECK(!same(F::interpolate(x, F::InterpolateFuncOptions(aa).size(std::vector<int64_t>{2, 3})),
              F::interpolate(x, {2, 3}, "bicubic")));
  CHECK(same(F::interpolate(x, F::InterpolateFuncOptions(aa).scale_factor(std::vector<double>{0.5})),
             F::interpolate(x, {x.size(2) / 2, x.size(3) / 2}, "bicubic", false, {0.5}, true)));
}

TEST_CASE("F::pad and F::pixel_shuffle FuncOptions") {
  manual_seed(16);
  Tensor x = randn({1, 2, 4, 5});
  CHECK(same(F::pad(x, F::PadFuncOptions({1, 2, 0, 3}).mode(kReflect)), F::pad(x, {1, 2, 0, 3}, "reflect")));
  CHECK(same(F::pad(x, F::PadFuncOptions({1, 1}).value(-2.5)), F::pad(x, {1, 1}, "constant", -2.5)));
  CHECK(F::pad(x, F::PadFuncOptions({1, 1}).value(-2.5)).index({0, 0, 0, 0}).item<float>() == -2.5f);
  CHECK(same(F::pad(x, F::PadFuncOptions({2, 2}).mode(kCircular)), F::pad(x, {2, 2}, "circular")));
  CHECK_ERROR(F::pad(x, F::PadFuncOptions({1}).mode(kReplicate)), "[pad]", "even length");
  CHECK_ERROR(F::pad(x, F::PadFuncOptions({1, 1}).mode(kReflect).value(2)), "[pad]", "'reflect' takes no value", "2");
  Tensor s = randn({2, 8, 3, 3});
  CHECK(same(F::pixel_shuffle(s, F::PixelShuffleFuncOptions(2)), F::pixel_shuffle(s, 2)));
}

TEST_CASE("F:: normalisation FuncOptions as the positional form") {
  manual_seed(17);
  Tensor x = randn({4, 3, 5, 2}), w = randn({3}), b = randn({3});
  Tensor m1 = zeros({3}), v1 = ones({3}), m2 = zeros({3}), v2 = ones({3});
  Tensor y1 = F::batch_norm(x, m1, v1, F::BatchNormFuncOptions().weight(w).bias(b).training(true).momentum(0.3));
  Tensor y2 = F::batch_norm(x, m2, v2, w, b, true, 0.3);
  CHECK(same(y1, y2));
  CHECK(same(m1, m2));  // the running statistics are updated in place alike
  CHECK(same(v1, v2));
  CHECK(!same(m1, zeros({3})));
  CHECK(same(F::batch_norm(x, m1, v1, F::BatchNormFuncOptions().eps(1e-3)),
             F::batch_norm(x, m1, v1, {}, {}, false, 0.1, 1e-3)));
  Tensor lw = randn({5, 2}), lb = randn({5, 2});
  CHECK(same(F::layer_norm(x, F::LayerNormFuncOptions({5, 2}).weight(lw).bias(lb).eps(1e-4)),
             F::layer_norm(x, {5, 2}, lw, lb, 1e-4)));
  CHECK(same(F::layer_norm(x, F::LayerNormFuncOptions({2})), F::layer_norm(x, {2})));
  Tensor g = randn({4, 6, 3}), gw = randn({6}), gb = randn({6});
  CHECK(same(F::group_norm(g, F::GroupNormFuncOptions(3).weight(gw).bias(gb).eps(1e-3)),
             F::group_norm(g, 3, gw, gb, 1e-3)));
  CHECK(same(F::instance_norm(x, F::InstanceNormFuncOptions().weight(w).bias(b)), F::instance_norm(x, w, b)));
  CHECK(same(F::normalize(x, F::NormalizeFuncOptions().p(1).dim(-1).eps(1e-6)), F::normalize(x, 1, -1, 1e-6)));
  CHECK(same(F::normalize(x, F::NormalizeFuncOptions()), F::normalize(x)));
}

TEST_CASE("F::embedding and F::embedding_bag FuncOptions") {
  manual_seed(18);
  Tensor w = randn({10, 4}), idx = tensor<int64_t>({{1, 2, 0}, {3, 0, 9}});
  CHECK(same(F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(0)), F::embedding(idx, w, 0)));
  Tensor flat = tensor<int64_t>({1, 2, 4, 5, 8}), offsets = tensor<int64_t>({0, 2});
  Tensor psw = randn({5});
  CHECK(same(F::embedding_bag(flat, w,
                              F::EmbeddingBagFuncOptions().offsets(offsets).mode(kSum).per_sample_weights(psw)),
             F::embedding_bag(flat, w, offsets, "sum", psw)));
  CHECK(same(F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().padding_idx(0)),
             F::embedding_bag(idx, w, {}, "mean", {}, 0)));
  CHECK(same(F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().mode(kMax)), F::embedding_bag(idx, w, {}, "max")));
}

TEST_CASE("F:: activation FuncOptions, and their inplace forms writing into the input") {
  manual_seed(19);
  Tensor x = randn({3, 8}) * 3;
  CHECK(same(F::relu(x, F::ReLUFuncOptions()), F::relu(x)));
  check_writes_input([](Tensor t) { return F::relu(t, F::ReLUFuncOptions(true)); }, x, F::relu(x));
  check_writes_input([](Tensor t) { return F::relu6(t, F::ReLU6FuncOptions().inplace(true)); }, x, F::relu6(x));
  check_writes_input([](Tensor t) { return F::selu(t, F::SELUFuncOptions(true)); }, x, F::selu(x));
  CHECK(same(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)), F::leaky_relu(x, 0.2)));
  check_writes_input([](Tensor t) { return F::leaky_relu(t, F::LeakyReLUFuncOptions().negative_slope(0.2).inplace(true)); },
                     x, F::leaky_relu(x, 0.2));
  CHECK(same(F::elu(x, F::ELUFuncOptions().alpha(0.5)), F::elu(x, 0.5)));
  check_writes_input([](Tensor t) { return F::elu(t, F::ELUFuncOptions().alpha(0.5).inplace(true)); }, x,
                     F::elu(x, 0.5));
  CHECK(same(F::celu(x, F::CELUFuncOptions().alpha(2)), F::celu(x, 2)));
  // The inplace forms check their parameters as the others do, before writing anything.
  Tensor kept = x.clone();
  CHECK_ERROR(F::celu(kept, F::CELUFuncOptions().alpha(0).inplace(true)), "[celu]", "alpha cannot be 0");
  CHECK_ERROR(F::elu(kept, F::ELUFuncOptions().alpha(NAN).inplace(true)), "[elu]", "alpha must be a number");
  CHECK_ERROR(F::leaky_relu(kept, F::LeakyReLUFuncOptions().negative_slope(NAN).inplace(true)), "[leaky_relu]",
              "negative_slope");
  CHECK(same(kept, x));
  check_writes_input([](Tensor t) { return F::celu(t, F::CELUFuncOptions().alpha(2).inplace(true)); }, x,
                     F::celu(x, 2));
  CHECK(same(F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(0.5)), F::hardtanh(x, -2, 0.5)));
  check_writes_input([](Tensor t) { return F::hardtanh(t, F::HardtanhFuncOptions().min_val(-2).inplace(true)); }, x,
                     F::hardtanh(x, -2, 1));
  CHECK(same(F::threshold(x, F::ThresholdFuncOptions(0.5, -7)), F::threshold(x, 0.5, -7)));
  check_writes_input([](Tensor t) { return F::threshold(t, F::ThresholdFuncOptions(0.5, -7).inplace(true)); }, x,
                     F::threshold(x, 0.5, -7));
  CHECK(same(F::gelu(x, F::GELUFuncOptions().approximate("tanh")), x.gelu_tanh()));
  CHECK(same(F::gelu(x, F::GELUFuncOptions()), x.gelu()));
  CHECK(same(F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(3)), F::softplus(x, 2, 3)));
  CHECK(same(F::hardshrink(x, F::HardshrinkFuncOptions(1.5)), F::hardshrink(x, 1.5)));
  CHECK(same(F::softshrink(x, F::SoftshrinkFuncOptions().lambda(0.7)), F::softshrink(x, 0.7)));
  CHECK(same(F::glu(x, F::GLUFuncOptions(1)), F::glu(x, 1)));
  CHECK(same(F::glu(x, F::GLUFuncOptions(0).dim(1)), F::glu(x, 1)));
  // RReLU in evaluation is a leaky ReLU with the mean slope; training draws slopes.
  CHECK(same(F::rrelu(x, F::RReLUFuncOptions().lower(0.1).upper(0.3)), F::leaky_relu(x, 0.2)));
  manual_seed(5);
  Tensor r1 = F::rrelu(x, F::RReLUFuncOptions().training(true));
  manual_seed(5);
  CHECK(same(r1, F::rrelu(x, 1.0 / 8, 1.0 / 3, true)));
  CHECK(!same(r1, F::rrelu(x, F::RReLUFuncOptions())));
  check_writes_input([](Tensor t) { return F::rrelu(t, F::RReLUFuncOptions().inplace(true)); }, x,
                     F::rrelu(x, F::RReLUFuncOptions()));
  CHECK(same(F::softmin(x, F::SoftminFuncOptions(1)), F::softmin(x, 1)));
  Tensor m = F::softmin(x, F::SoftminFuncOptions(0).dtype(DType::F64));
  CHECK(m.dtype() == DType::F64);
  CHECK(same(m, F::softmin(x.to(DType::F64), 0)));
}

TEST_CASE("F:: loss FuncOptions as the positional form") {
  manual_seed(20);
  Tensor a = randn({4, 5}), b = randn({4, 5}), p = rand({4, 5}), t = rand({4, 5});
  CHECK(same(F::mse_loss(a, b, F::MSELossFuncOptions(kSum)), F::mse_loss(a, b, "sum")));
  CHECK(same(F::mse_loss(a, b, F::MSELossFuncOptions()), F::mse_loss(a, b)));
  CHECK(same(F::l1_loss(a, b, F::L1LossFuncOptions().reduction(kNone)), F::l1_loss(a, b, "none")));
  CHECK(same(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().beta(0.5).reduction(kSum)),
             F::smooth_l1_loss(a, b, "sum", 0.5)));
  CHECK(same(F::huber_loss(a, b, F::HuberLossFuncOptions().delta(0.3)), F::huber_loss(a, b, "mean", 0.3)));
  // libtorch's reduction constructors: SmoothL1LossFuncOptions(kNone), KLDivFuncOptions(kBatchMean).
  CHECK(same(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions(kNone)), F::smooth_l1_loss(a, b, "none")));
  CHECK(same(F::huber_loss(a, b, F::HuberLossFuncOptions(kSum).delta(2)), F::huber_loss(a, b, "sum", 2)));
  Tensor w = rand({5});
  CHECK(same(F::binary_cross_entropy(p, t, F::BinaryCrossEntropyFuncOptions().weight(w).reduction(kSum)),
             F::binary_cross_entropy(p, t, w, "sum")));
  Tensor pw = rand({5}) * 3;
  CHECK(same(F::binary_cross_entropy_with_logits(a, t, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw)),
             F::binary_cross_entropy_with_logits(a, t, {}, "mean", pw)));
  Tensor lp = a.log_softmax(1), lq = b.log_softmax(1);
  CHECK(same(F::kl_div(lp, lq, F::KLDivFuncOptions().reduction(kSum).log_target(true)),
             F::kl_div(lp, lq, "sum", true)));
  CHECK(same(F::kl_div(lp, lq.exp(), F::KLDivFuncOptions(kBatchMean)), F::kl_div(lp, lq.exp(), "batchmean")));
  Tensor y = tensor({1.0f, -1.0f, 1.0f, -1.0f});
  CHECK(same(F::cosine_embedding_loss(a, b, y, F::CosineEmbeddingLossFuncOptions().margin(0.2)),
             F::cosine_embedding_loss(a, b, y, 0.2)));
  Tensor s1 = randn({4}), s2 = randn({4});
  CHECK(same(F::margin_ranking_loss(s1, s2, y, F::MarginRankingLossFuncOptions().margin(0.5).reduction(kNone)),
             F::margin_ranking_loss(s1, s2, y, 0.5, "none")));
  Tensor n = randn({4, 5});
  CHECK(same(F::triplet_margin_loss(a, b, n, F::TripletMarginLossFuncOptions().margin(2).p(1).swap(true)),
             F::triplet_margin_loss(a, b, n, 2, 1, 1e-6, true)));
  Tensor logits = randn({4, 5});
  Tensor cls = tensor<int64_t>({0, 3, 4, 1});
  CHECK(same(F::cross_entropy(logits, cls, F::CrossEntropyFuncOptions().label_smoothing(0.1)),
             F::cross_entropy(logits, cls, {}, -100, "mean", 0.1)));
}

TEST_CASE("F::ctc_loss and CTCLoss take the lengths as tensors too, as libtorch") {
  manual_seed(21);
  Tensor lp = randn({12, 3, 5}).log_softmax(2), targets = randint(1, 5, {3, 4});
  const std::vector<int64_t> in_len{12, 10, 11}, tg_len{4, 2, 3};
  Tensor in_t = tensor<int64_t>({12, 10, 11}), tg_t = tensor<int32_t>({4, 2, 3});
  Tensor expected = F::ctc_loss(lp, targets, in_len, tg_len, 0, "sum");
  CHECK(same(F::ctc_loss(lp, targets, in_len, tg_len, F::CTCLossFuncOptions().reduction(kSum)), expected));
  CHECK(same(F::ctc_loss(lp, targets, in_t, tg_t, F::CTCLossFuncOptions().reduction(kSum)), expected));
  CHECK(same(F::ctc_loss(lp, targets, in_t, tg_t), F::ctc_loss(lp, targets, in_len, tg_len)));  // default options
  nn::CTCLoss ctc(nn::CTCLossOptions().reduction(kSum));
  CHECK(same(ctc(lp, targets, in_t, tg_t), expected));
  CHECK(same(ctc(lp, targets, in_len, tg_len), expected));
  CHECK_ERROR(ctc(lp, targets, in_t.to(DType::F32), tg_t), "[ctc_loss]", "input_lengths", "integer", "f32");
  CHECK_ERROR(F::ctc_loss(lp, targets, in_t, tg_t.reshape({3, 1}), F::CTCLossFuncOptions()), "[ctc_loss]",
              "target_lengths", "[3, 1]");
  CHECK_ERROR(F::ctc_loss(lp, targets, in_t, Tensor(), F::CTCLossFuncOptions()), "[ctc_loss]", "target_lengths",
              "undefined");
}

TEST_CASE("F::dropout and F::dropout2d FuncOptions") {
  manual_seed(22);
  Tensor x = randn({4, 6, 3, 3});
  CHECK(same(F::dropout2d(x, F::Dropout2dFuncOptions().p(0.5).training(false)), x));
  CHECK(same(F::dropout2d(x, F::Dropout2dFuncOptions().p(1.0)), zeros({4, 6, 3, 3})));
  manual_seed(3);
  Tensor d1 = F::dropout2d(x, F::Dropout2dFuncOptions().p(0.4));
  manual_seed(3);
  CHECK(same(d1, F::dropout2d(x, 0.4)));
  manual_seed(3);
  Tensor d2 = F::dropout(x, F::DropoutFuncOptions().p(0.4));
  manual_seed(3);
  CHECK(same(d2, F::dropout(x, 0.4)));
}

TEST_CASE("F::cosine_similarity, F::pairwise_distance and their modules") {
  manual_seed(23);
  Tensor a = randn({4, 6}), b = randn({4, 6});
  Tensor cs = F::cosine_similarity(a, b, F::CosineSimilarityFuncOptions().dim(0).eps(1e-6));
  CHECK(same(cs, F::cosine_similarity(a, b, 0, 1e-6)));
  nn::CosineSimilarity cos_mod(nn::CosineSimilarityOptions().dim(0).eps(1e-6));
  CHECK(same(cos_mod(a, b), cs));
  CHECK(same(nn::CosineSimilarity()(a, b), F::cosine_similarity(a, b)));
  // A second route: the normalised rows' dot products.
  Tensor ref = (a / a.norm(2, {1}, true) * (b / b.norm(2, {1}, true))).sum({1});
  CHECK(close(nn::CosineSimilarity()(a, b), ref));
  // The inputs broadcast before the reduction: (4, 6) with (6) is four cosines (PyTorch: the
  // same), and a row against a (1, 6) batch of one.
  Tensor row = b.select(0, 2);
  CHECK(F::cosine_similarity(a, row).sizes() == Shape{4});
  CHECK(close(F::cosine_similarity(a, row), F::cosine_similarity(a, row.unsqueeze(0).expand({4, 6}).contiguous())));
  CHECK(close(F::cosine_similarity(row, a, 0), F::cosine_similarity(row.expand({4, 6}).contiguous(), a, 0)));
  CHECK_ERROR(F::cosine_similarity(a, randn({5})), "[cosine_similarity]", "[4, 6]", "[5]");
  Tensor pd = F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().p(1).keepdim(true));
  CHECK(same(pd, F::pairwise_distance(a, b, 1, 1e-6, true)));
  nn::PairwiseDistance pd_mod(nn::PairwiseDistanceOptions().p(1).keepdim(true));
  CHECK(same(pd_mod(a, b), pd));
  CHECK(pd.sizes() == Shape{4, 1});
  CHECK(close(nn::PairwiseDistance()(a, b), (a - b + 1e-6).square().sum({1}).sqrt()));
  CHECK(nn::PairwiseDistance()->parameters().empty());
  CHECK(pd_mod->extra_repr() == "p=1, eps=1e-06, keepdim=True");
  // Any p, as the functional form (and PyTorch) take.
  CHECK(same(nn::PairwiseDistance(nn::PairwiseDistanceOptions().p(-1))(a, b), F::pairwise_distance(a, b, -1)));
  CHECK_ERROR(nn::CosineSimilarity(nn::CosineSimilarityOptions().eps(-1)), "[CosineSimilarity]", "non-negative");
}

TEST_CASE("RNNCellOptions, LSTMCellOptions, GRUCellOptions and UnflattenOptions build the positional modules") {
  auto same_params = [](const auto& m1, const auto& m2) {
    auto p1 = m1->named_parameters(), p2 = m2->named_parameters();
    REQUIRE(p1.size() == p2.size());
    for (size_t i = 0; i < p1.size(); ++i) {
      CHECK(p1[i].key() == p2[i].key());
      CHECK(same(p1[i].value(), p2[i].value()));
    }
  };
  manual_seed(30);
  nn::RNNCell r1(nn::RNNCellOptions(3, 5).nonlinearity(kReLU).bias(false));
  manual_seed(30);
  nn::RNNCell r2(3, 5, false, "relu");
  same_params(r1, r2);
  CHECK(r1->nonlinearity == "relu");
  CHECK(!r1->bias_ih.defined());
  Tensor x = randn({2, 3});
  CHECK(same(r1(x), r2(x)));
  CHECK(r1(x).min().item<float>() >= 0.0f);  // relu, not tanh
  manual_seed(31);
  nn::LSTMCell l1(nn::LSTMCellOptions(3, 4));
  manual_seed(31);
  nn::LSTMCell l2(3, 4);
  same_params(l1, l2);
  manual_seed(32);
  nn::GRUCell g1(nn::GRUCellOptions(3, 4).bias(false));
  manual_seed(32);
  nn::GRUCell g2(3, 4, false);
  same_params(g1, g2);
  CHECK(g1->named_parameters().size() == 2);
  CHECK_ERROR(nn::RNNCell(nn::RNNCellOptions(3, 5).nonlinearity("gelu")), "[RNNCell]", "'gelu'");
  nn::Unflatten u(nn::UnflattenOptions(1, {2, 3}));
  CHECK(u(randn({4, 6, 5})).sizes() == Shape{4, 2, 3, 5});
}

namespace {
// libtorch's MNIST example network, its forward written as that example writes it, with
// torch:: changed to ember::.
struct MnistNetImpl : nn::Module {
  MnistNetImpl()
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 10, /*kernel_size=*/5)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(10, 20, /*kernel_size=*/5)))),
        fc1(register_module("fc1", nn::Linear(320, 50))),
        fc2(register_module("fc2", nn::Linear(50, 10))) {}
  Tensor forward(Tensor x) {
    x = ember::relu(ember::max_pool2d(conv1->forward(x), 2));
    x = ember::relu(ember::max_pool2d(conv2->forward(x), 2));
    x = x.view({-1, 320});
    x = ember::relu(fc1->forward(x));
    x = ember::dropout(x, /*p=*/0.5, /*training=*/is_training());
    x = fc2->forward(x);
    return ember::log_softmax(x, /*dim=*/1);
  }
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};
EMBER_MODULE(MnistNet);
}  // namespace

TEST_CASE("libtorch's free layer functions as ember::, in ATen's argument order") {
  manual_seed(40);
  MnistNet net;
  net->eval();
  Tensor x = randn({3, 1, 28, 28});
  Tensor target = tensor<int64_t>({1, 7, 3});
  Tensor out = net(x);
  CHECK(out.sizes() == Shape{3, 10});
  Tensor h = F::relu(F::max_pool2d(net->conv1(x), {2}));
  h = F::relu(F::max_pool2d(net->conv2(h), {2})).view({-1, 320});
  CHECK(same(out, F::log_softmax(net->fc2(F::relu(net->fc1(h))), 1)));
  // nll_loss: weight, then the reduction, then ignore_index (nn::functional: ignore_index first).
  Tensor w = rand({10});
  CHECK(same(ember::nll_loss(out, target), F::nll_loss(out, target)));
  CHECK(same(ember::nll_loss(out, target, w, kSum, 7), F::nll_loss(out, target, w, 7, "sum")));
  // The example's test loop: torch::nll_loss(output, targets, {}, torch::Reduction::Sum).
  CHECK(same(ember::nll_loss(out, target, {}, Reduction::Sum), F::nll_loss(out, target, {}, -100, "sum")));
  CHECK(same(ember::cross_entropy_loss(out, target, w, "none", 3, 0.2),
             F::cross_entropy(out, target, w, 3, "none", 0.2)));
  Tensor logits = randn({4, 5}), t = rand({4, 5}), pw = rand({5}) + 0.5;
  CHECK(same(ember::binary_cross_entropy_with_logits(logits, t, {}, pw, "sum"),
             F::binary_cross_entropy_with_logits(logits, t, {}, "sum", pw)));
  // batch_norm: weight and bias before the running statistics.
  Tensor xb = randn({4, 3, 2, 2}), g = randn({3}), b = randn({3});
  Tensor m1 = zeros({3}), v1 = ones({3}), m2 = zeros({3}), v2 = ones({3});
  CHECK(same(ember::batch_norm(xb, g, b, m1, v1, true, 0.2, 1e-5), F::batch_norm(xb, m2, v2, g, b, true, 0.2, 1e-5)));
  CHECK(same(m1, m2));
  // ATen's trailing cudnn flags are taken and ignored.
  CHECK(same(ember::batch_norm(xb, g, b, m1, v1, false, 0.1, 1e-5, true), F::batch_norm(xb, m1, v1, g, b)));
  CHECK(same(ember::layer_norm(xb, {2, 2}, {}, {}, 1e-5, true), F::layer_norm(xb, {2, 2})));
  CHECK(same(ember::group_norm(xb, 3, g, b, 1e-5, true), F::group_norm(xb, 3, g, b)));
  // embedding: the table first; padding_idx -1 is none.
  Tensor table = randn({6, 2}), idx = tensor<int64_t>({{0, 5}, {2, 0}});
  CHECK(same(ember::embedding(table, idx), F::embedding(idx, table)));
  CHECK(same(ember::embedding(table, idx, 0), F::embedding(idx, table, 0)));
  CHECK(same(ember::embedding(table, idx, -2), F::embedding(idx, table)));  // ATen: negative is none
  CHECK_ERROR(ember::embedding(table, idx, -1, false, true), "[embedding]", "sparse");
  Tensor scaled = table.clone().requires_grad_(true);
  ember::embedding(scaled, idx, -1, true).sum().backward();
  CHECK(same(scaled.grad().index({0}), ones({2})));  // row 0 is read twice: 2 x 1 / 2, not 2
  Tensor rows = table.clone().requires_grad_(true);
  ember::embedding(rows, idx, 0).sum().backward();
  CHECK(same(rows.grad().index({0}), zeros({2})));  // the padding row gets no gradient
  CHECK(same(rows.grad().index({5}), ones({2})));
  // A few of the shared ones, through ember::.
  const Tensor &cw = net->conv1->weight, &cb = net->conv1->bias;
  CHECK(same(ember::conv2d(x, cw, cb, 2, 1), F::conv2d(x, cw, cb, 2, 1)));
  CHECK(same(ember::avg_pool2d(x, 3, 2), F::avg_pool2d(x, {3}, {2})));
  CHECK(same(ember::layer_norm(x, {28}), F::layer_norm(x, {28})));
  CHECK(same(ember::mse_loss(logits, t, "sum"), F::mse_loss(logits, t, "sum")));
  // ATen's activations with parameters: torch::leaky_relu(x, 0.2), torch::gelu(x, "tanh").
  CHECK(same(ember::leaky_relu(logits, 0.2), F::leaky_relu(logits, 0.2)));
  CHECK(same(ember::leaky_relu(logits), logits.leaky_relu()));
  CHECK(same(ember::gelu(logits, "tanh"), logits.gelu_tanh()));
  CHECK(same(ember::elu(logits, 0.5), F::elu(logits, 0.5)));
  CHECK(same(ember::celu(logits, 2), F::celu(logits, 2)));
  CHECK(same(ember::softplus(logits, 2, 5), F::softplus(logits, 2, 5)));
  CHECK(same(ember::hardtanh(logits, -0.5, 0.5), F::hardtanh(logits, -0.5, 0.5)));
}

TEST_CASE("F::foo(x, {}) means libtorch's default options, not a zero first argument") {
  manual_seed(41);
  Tensor x = randn({4, 6}), y = randn({4, 6}), z = randn({4, 6});
  // Without the braced overloads these would run with a slope, alpha, beta, lambda, p or
  // margin of 0, or along dim 0.
  CHECK(same(F::leaky_relu(x, {}), F::leaky_relu(x, 0.01)));
#if defined(__clang__)  // the braces are the point here: clang warns of them around a scalar
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wbraced-scalar-init"
#endif
  CHECK(same(F::leaky_relu(x, {0.2}), F::leaky_relu(x, 0.2)));  // a value in braces is still the value
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
  CHECK(same(F::elu(x, {}), F::elu(x, 1.0)));
  CHECK(same(F::celu(x, {}), F::celu(x, 1.0)));
  CHECK(same(F::hardtanh(x, {}), F::hardtanh(x, -1.0, 1.0)));
  CHECK(same(F::softplus(x, {}), F::softplus(x, 1.0)));
  CHECK(same(F::hardshrink(x, {}), F::hardshrink(x, 0.5)));
  CHECK(same(F::softshrink(x, {}), F::softshrink(x, 0.5)));
  CHECK(same(F::glu(x, {}), F::glu(x, -1)));
  CHECK(same(F::normalize(x, {}), F::normalize(x, 2.0, 1)));
  CHECK(same(F::gelu(x, {}), F::gelu(x)));
  CHECK(same(F::rrelu(x, {}), F::rrelu(x)));
  CHECK(same(F::cosine_similarity(x, y, {}), F::cosine_similarity(x, y, 1)));
  CHECK(same(F::pairwise_distance(x, y, {}), F::pairwise_distance(x, y, 2.0)));
  CHECK(same(F::triplet_margin_loss(x, y, z, {}), F::triplet_margin_loss(x, y, z, 1.0)));
  CHECK(same(F::mse_loss(x, y, {}), F::mse_loss(x, y)));
  Tensor sign = x.sign(), labels = tensor<int64_t>({1, 0, 5, 2}), counts = y.abs().floor();
  CHECK(same(F::hinge_embedding_loss(x, sign, {}), F::hinge_embedding_loss(x, sign, 1.0)));
  CHECK(same(F::multi_margin_loss(x, labels, {}), F::multi_margin_loss(x, labels, 1, 1.0)));
  CHECK(same(F::poisson_nll_loss(x, counts, {}), F::poisson_nll_loss(x, counts, true)));
  CHECK(same(F::soft_margin_loss(x, sign, {}), F::soft_margin_loss(x, sign)));
  CHECK(same(F::multilabel_soft_margin_loss(x, sign.abs(), {}), F::multilabel_soft_margin_loss(x, sign.abs())));
  CHECK(same(F::gaussian_nll_loss(x, y, z.abs(), {}), F::gaussian_nll_loss(x, y, z.abs())));
  CHECK(same(F::triplet_margin_with_distance_loss(x, y, z, {}), F::triplet_margin_with_distance_loss(x, y, z)));
  // dropout's default is p = 0.5 in training: about half the elements are zeroed.
  const double zeroed = F::dropout(ones({10000}), {}).eq(0.0).to(DType::F64).mean().item<double>();
  CHECK(zeroed > 0.45);
  CHECK(zeroed < 0.55);
  CHECK(F::dropout2d(ones({2, 400, 1, 1}), {}).eq(0.0).any().item<bool>());
}

}  // namespace test_functional_options
