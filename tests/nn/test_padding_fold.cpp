// The padding layers and Fold/Unfold: what the golden cases (tests/data/nn_golden) do not
// show: option forms, reprs, round trips against convolution, and every refusal.
#include <doctest/doctest.h>
#include "../error_text.hpp"
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include <limits>
#include <string>

namespace test_padding_fold {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {
double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(DType::F64) - b.to(DType::F64)).abs().amax().item<double>();
}
bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

TEST_CASE("padding layers: F::pad with their mode, one number or two per dim, batched or not") {
  namespace F = nn::F;
  manual_seed(5);
  Tensor x = randn({2, 3, 4, 5});
  CHECK(max_diff(nn::ReflectionPad2d(2)(x), ember::pad(x, {2, 2, 2, 2}, "reflect")) == 0.0);
  CHECK(max_diff(nn::ReplicationPad2d(nn::ReplicationPad2dOptions({1, 0, 2, 3}))(x),
                 ember::pad(x, {1, 0, 2, 3}, "replicate")) == 0.0);
  CHECK(max_diff(nn::CircularPad1d(nn::CircularPad1dOptions({2, 1}))(x.select(0, 0)),
                 ember::pad(x.select(0, 0), {2, 1}, "circular")) == 0.0);
  CHECK(max_diff(nn::ConstantPad3d(nn::ConstantPad3dOptions({1}, 2.5))(x), ember::pad(x, {1, 1, 1, 1, 1, 1}, "constant", 2.5)) ==
        0.0);
  CHECK(max_diff(nn::ZeroPad2d(1)(x), ember::pad(x, {1, 1, 1, 1})) == 0.0);
  CHECK(nn::ZeroPad2d(1)->padding == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(starts_with(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 2, 3, 4}))->to_string(),
                    "ReflectionPad2d((1, 2, 3, 4))"));
  CHECK(starts_with(nn::ConstantPad1d(nn::ConstantPad1dOptions({1, 2}, 3.5))->to_string(),
                    "ConstantPad1d(padding=(1, 2), value=3.5)"));
  // Gradients reach the input through the padding's index maps.
  Tensor xg = x.clone().requires_grad_();
  nn::ReflectionPad2d(1)(xg).sum().backward();
  CHECK(xg.grad().sum().item<double>() == doctest::Approx(2.0 * 3 * 6 * 7));

  CHECK_ERROR(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 2, 3})), "[ReflectionPad2d]", "1 or 4 values",
              "got 3");
  CHECK_ERROR(nn::ReflectionPad1d(nn::ReflectionPad1dOptions({1, 1}).value(2)), "[ReflectionPad1d]",
              "takes no value");
  CHECK_ERROR(nn::ReflectionPad2d(2)(x.flatten(0, 2)), "[ReflectionPad2d]", "3-d or 4-d input", "[24, 5]");
  CHECK_ERROR(nn::ReflectionPad2d(4)(x), "[pad]", "reflect padding", "must be smaller than dim");
  CHECK_ERROR(nn::ReplicationPad3d(1)(x.narrow(2, 0, 0)), "[pad]", "empty dim");
}

TEST_CASE("unfold and fold: sliding blocks as columns, convolution as a product, fold as unfold's adjoint") {
  namespace F = nn::F;
  manual_seed(6);
  Tensor x = randn({2, 3, 6, 7}, DType::F64), w = randn({4, 3, 3, 2}, DType::F64);
  // A convolution is the weight times the unfolded input.
  Tensor cols = F::unfold(x, {3, 2}, {2, 1}, {1, 0}, {1, 2});
  Tensor conv = F::conv2d(x, w, {}, {1, 2}, {1, 0}, {2, 1});
  Tensor via_cols = w.reshape({4, -1}).matmul(cols).view(conv.sizes());
  CHECK(max_diff(via_cols, conv) < 1e-12);
  CHECK(max_diff(nn::Unfold(nn::UnfoldOptions({3, 2}).dilation({2, 1}).padding({1, 0}).stride({1, 2}))(x), cols) == 0.0);
  CHECK(max_diff(F::unfold(x, F::UnfoldFuncOptions({3, 2}).dilation({2, 1}).padding({1, 0}).stride({1, 2})), cols) ==
        0.0);
  CHECK(max_diff(F::unfold(x.select(0, 1), {3, 2}, {2, 1}, {1, 0}, {1, 2}), cols.select(0, 1)) == 0.0);
  // fold is unfold's adjoint: <unfold(x), c> = <x, fold(c)>.
  Tensor c = randn(cols.sizes(), DType::F64);
  Tensor folded = F::fold(c, {6, 7}, {3, 2}, {2, 1}, {1, 0}, {1, 2});
  CHECK((cols * c).sum().item<double>() == doctest::Approx((x * folded).sum().item<double>()).epsilon(1e-12));
  CHECK(max_diff(nn::Fold(nn::FoldOptions({6, 7}, {3, 2}).dilation({2, 1}).padding({1, 0}).stride({1, 2}))(c),
                 folded) == 0.0);
  CHECK(max_diff(F::fold(c.select(0, 0), F::FoldFuncOptions({6, 7}, {3, 2}).dilation({2, 1}).padding({1, 0}).stride({1, 2})),
                 folded.select(0, 0)) == 0.0);
  // Non-overlapping blocks: fold(unfold(x)) is x.
  CHECK(max_diff(F::fold(F::unfold(x, {2, 7}, {1}, {0}, {2, 7}), {6, 7}, {2, 7}, {1}, {0}, {2, 7}), x) == 0.0);
  CHECK(starts_with(nn::Unfold(nn::UnfoldOptions({2, 3}))->to_string(),
                    "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)"));
  CHECK(starts_with(nn::Fold(nn::FoldOptions({4, 5}, {2}))->to_string(),
                    "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)"));

  CHECK_ERROR(F::unfold(x.flatten(0, 2), {2}), "[unfold]", "(N, C, H, W) or (C, H, W)", "[36, 7]");
  CHECK_ERROR(F::unfold(x, {7}), "[unfold]", "no block positions");
  CHECK_ERROR(F::unfold(x.to(DType::I32), {2}), "[unfold]", "f32 and f64", "i32");
  CHECK_ERROR(F::unfold(x, {2, 2, 2}), "[unfold]", "kernel_size needs 1 or 2 values");
  CHECK_ERROR(F::fold(c, {6, 8}, {3, 2}, {2, 1}, {1, 0}, {1, 2}), "[fold]", "block positions", "has 12");
  CHECK_ERROR(F::fold(c.narrow(1, 0, 5), {6, 7}, {3, 2}, {2, 1}, {1, 0}, {1, 2}), "[fold]", "not a multiple",
              "6 taps");
  CHECK_ERROR(F::fold(c.flatten(), {6, 7}, {3, 2}), "[fold]", "(N, C * kernel taps, L)");
  CHECK_ERROR(F::fold(c, {0, 7}, {3, 2}), "[fold]", "output_size must be positive");
  CHECK_ERROR(nn::Fold(nn::FoldOptions({4, 5, 6}, {2})), "[Fold]", "output_size needs 1 or 2 values");
}

TEST_CASE("affine_grid and grid_sample: identity warps, the option form and refusals") {
  namespace F = nn::F;
  manual_seed(8);
  Tensor img = randn({2, 3, 5, 7}, DType::F64);
  // The identity affine map samples every pixel at its own centre: the image comes back.
  Tensor identity = tensor<double>({{1, 0, 0}, {0, 1, 0}}).unsqueeze(0).expand({2, 2, 3}).contiguous();
  for (bool align : {false, true}) {
    Tensor grid = F::affine_grid(identity, {2, 3, 5, 7}, align);
    CHECK(grid.sizes() == Shape{2, 5, 7, 2});
    CHECK(max_diff(F::grid_sample(img, grid, "bilinear", "zeros", align), img) < 1e-12);
    CHECK(max_diff(F::grid_sample(img, grid, "nearest", "border", align), img) == 0.0);
  }
  // A shift by one pixel (2 / W in normalised x) reads the right neighbour; the last column
  // reads past the edge: 0 with zeros padding, the edge with border padding.
  Tensor shift = tensor<double>({{1, 0, 2.0 / 7}, {0, 1, 0}}).unsqueeze(0).expand({2, 2, 3}).contiguous();
  Tensor grid = F::affine_grid(shift, {2, 3, 5, 7});
  Tensor zeros_pad = F::grid_sample(img, grid);
  CHECK(max_diff(zeros_pad.narrow(3, 0, 6), img.narrow(3, 1, 6)) < 1e-12);
  CHECK(zeros_pad.narrow(3, 6, 1).abs().amax().item<double>() < 1e-12);
  Tensor border = F::grid_sample(img, grid, F::GridSampleFuncOptions().padding_mode(kBorder));
  CHECK(max_diff(border.narrow(3, 6, 1), img.narrow(3, 6, 1)) < 1e-12);
  CHECK(F::grid_sample(img, grid.narrow(1, 0, 2)).sizes() == Shape{2, 3, 2, 7});

  // Bicubic through the identity grid is exact too: the cubic kernel is 1 at 0 and 0 at the
  // other whole taps.
  CHECK(max_diff(F::grid_sample(img, F::affine_grid(identity, {2, 3, 5, 7}, true), "bicubic", "zeros", true), img) <
        1e-12);

  CHECK_ERROR(F::grid_sample(img, grid, "bilinaer"), "[grid_sample]", "bilinear, nearest or bicubic", "'bilinaer'");
  CHECK_ERROR(F::grid_sample(img, grid, "bilinear", "circular"), "[grid_sample]", "zeros, border or reflection");
  CHECK_ERROR(F::grid_sample(img.select(0, 0), grid), "[grid_sample]", "(N, C, H, W) or (N, C, D, H, W)");
  CHECK_ERROR(F::grid_sample(img, grid.narrow(3, 0, 1)), "[grid_sample]", "grid of shape (2, Ho, Wo, 2)");
  CHECK_ERROR(F::grid_sample(img, grid.to(DType::F32)), "[grid_sample]", "one dtype");
  CHECK_ERROR(F::affine_grid(identity, {2, 3, 5}), "[affine_grid]", "(N, C, H, W) or (N, C, D, H, W)");
  CHECK_ERROR(F::affine_grid(identity.narrow(0, 0, 1), {2, 3, 5, 7}), "[affine_grid]", "theta of shape (2, 2, 3)");
  CHECK_ERROR(F::affine_grid(identity, {2, 3, 0, 7}), "[affine_grid]", "empty spatial dim");
}

TEST_CASE("affine_grid and grid_sample over volumes: identity and shifted warps, refusals") {
  namespace F = nn::F;
  manual_seed(9);
  Tensor vol = randn({2, 3, 4, 5, 6}, DType::F64);
  Tensor identity =
      tensor<double>({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}}).unsqueeze(0).expand({2, 3, 4}).contiguous();
  for (bool align : {false, true}) {
    Tensor grid = F::affine_grid(identity, {2, 3, 4, 5, 6}, align);
    CHECK(grid.sizes() == Shape{2, 4, 5, 6, 3});
    CHECK(max_diff(F::grid_sample(vol, grid, "bilinear", "zeros", align), vol) < 1e-12);
    CHECK(max_diff(F::grid_sample(vol, grid, "nearest", "reflection", align), vol) == 0.0);
  }
  // One voxel along z (2 / D in normalised z) reads the next slice; the last slice reads past
  // the edge: zeros, or the edge with border padding.
  Tensor shift =
      tensor<double>({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 2.0 / 4}}).unsqueeze(0).expand({2, 3, 4}).contiguous();
  Tensor grid = F::affine_grid(shift, {2, 3, 4, 5, 6});
  Tensor zeros_pad = F::grid_sample(vol, grid);
  CHECK(max_diff(zeros_pad.narrow(2, 0, 3), vol.narrow(2, 1, 3)) < 1e-12);
  CHECK(zeros_pad.narrow(2, 3, 1).abs().amax().item<double>() < 1e-12);
  Tensor border = F::grid_sample(vol, grid, "bilinear", "border");
  CHECK(max_diff(border.narrow(2, 3, 1), vol.narrow(2, 3, 1)) < 1e-12);

  CHECK_ERROR(F::grid_sample(vol, grid, "bicubic"), "[grid_sample]", "bicubic needs 4-d", "[2, 3, 4, 5, 6]");
  CHECK_ERROR(F::grid_sample(vol, grid.narrow(4, 0, 2)), "[grid_sample]", "grid of shape (2, Do, Ho, Wo, 3)");
  CHECK_ERROR(F::grid_sample(vol, grid.select(1, 0)), "[grid_sample]", "grid of shape (2, Do, Ho, Wo, 3)");
  CHECK_ERROR(F::affine_grid(identity.narrow(2, 0, 3), {2, 3, 4, 5, 6}), "[affine_grid]", "theta of shape (2, 3, 4)");
  CHECK_ERROR(F::affine_grid(identity, {2, 3, 4, 5, 0}), "[affine_grid]", "empty spatial dim");
  CHECK(F::grid_sample(vol.narrow(1, 0, 0), grid).sizes() == Shape{2, 0, 4, 5, 6});
}

TEST_CASE("nearest grid_sample: a grid that needs a gradient gets a zero one (as PyTorch's)") {
  // The samples do not change with the grid (almost everywhere): PyTorch records the op and
  // gives the grid zeros; a backward through the samples alone must not fail. Non-finite
  // coordinates keep their weight of 1 (the zeros padding there) and a zero gradient.
  Tensor img = randn({1, 2, 4, 5});
  Tensor grid = tensor<float>({0.3f, -0.7f, 0.9f, 0.1f, std::numeric_limits<float>::quiet_NaN(), 0.5f, -1.5f, 2.0f})
                    .reshape({1, 2, 2, 2})
                    .requires_grad_();
  Tensor y = nn::F::grid_sample(img, grid, "nearest", "zeros", false);
  REQUIRE(y.requires_grad());
  Tensor plain = nn::F::grid_sample(img, grid.detach(), "nearest", "zeros", false);
  CHECK((y.detach() - plain).abs().nan_to_num(0.0, 0.0, 0.0).max().item<double>() == 0.0);
  CHECK(y.isnan().eq(plain.isnan()).all().item<bool>());
  (y * randn(y.sizes())).sum().backward();
  REQUIRE(grid.grad().defined());
  CHECK(grid.grad().abs().max().item<double>() == 0.0);
}

TEST_CASE("grid_sample: first and second derivatives against finite differences (bilinear and bicubic)") {
  // libtorch 1.13 has no double backward for grid_sample (ember-vs-libtorch compares it with
  // PyTorch 2 only), so both orders are checked here too. Grid points stay inside, away from
  // the padding's kinks.
  manual_seed(31);
  Tensor img = randn({1, 2, 4, 5}, DType::F64).requires_grad_();
  Tensor grid = (rand({1, 3, 2, 2}, DType::F64) * 1.6 - 0.8).requires_grad_();
  for (const char* mode : {"bilinear", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        CAPTURE(mode);
        CAPTURE(padding);
        CAPTURE(align);
        auto f = [&](const std::vector<Tensor>& in) { return nn::F::grid_sample(in[0], in[1], mode, padding, align); };
        std::string why;
        CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, {img, grid}, {}, &why), why);
        CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, {img, grid}, {}, &why), why);
      }
}

}  // namespace test_padding_fold
