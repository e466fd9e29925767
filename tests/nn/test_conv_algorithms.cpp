// The convolution algorithms besides im2col: Winograd F(2x2, 3x3) and F(4x4, 3x3)
// (ops/winograd_ops.hpp) and the direct kernels (ops/direct_conv_ops.hpp). Winograd against
// direct loops (reference_conv.hpp) in f64 and f32, its transforms against their adjoints,
// gradcheck/gradgradcheck through it; the direct kernels likewise; and which convolutions
// ConvAlgorithm::Auto sends where.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include "reference_conv.hpp"

#include <limits>
#include <string>
#include <vector>

namespace test_conv_algorithms {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// Sets the convolution algorithm for one scope.
struct AlgorithmGuard {
  ConvAlgorithm saved = conv_algorithm();
  explicit AlgorithmGuard(ConvAlgorithm a) { set_conv_algorithm(a); }
  ~AlgorithmGuard() { set_conv_algorithm(saved); }
};

/// Largest |a - b| relative to 1 + the largest |b|.
double rel_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  Tensor a64 = a.detach().to(DType::F64), b64 = b.detach().to(DType::F64);
  return (a64 - b64).abs().amax().item<double>() / (1.0 + b64.abs().amax().item<double>());
}

double dot(const Tensor& a, const Tensor& b) { return (a * b).sum().item<double>(); }

ops::WinogradTiles tiles_of(int64_t n, int64_t h, int64_t w, int64_t pt, int64_t pl, int64_t oh, int64_t ow,
                            int64_t m = 2) {
  ops::WinogradTiles t;
  t.n = n, t.h = h, t.w = w, t.pad_top = pt, t.pad_left = pl, t.oh = oh, t.ow = ow, t.m = m;
  return t;
}

/// The two Winograd tile sizes, and f32's tolerance against f64 loops for each: F(4x4)'s
/// transforms scale inputs by up to 8 before the products, so it rounds ~10x more.
struct WinogradVariant {
  ConvAlgorithm algorithm;
  double f32_tolerance;
};
constexpr WinogradVariant kWinogradVariants[] = {{ConvAlgorithm::Winograd2x2, 2e-6},
                                                 {ConvAlgorithm::Winograd4x4, 1e-5}};

template <class Op>
Tensor run_op(const Op& op, const Tensor& x) {
  return Tensor::wrap(dispatch<DefaultPolicy>(op, x.impl()));
}

}  // namespace

TEST_CASE("winograd conv2d matches direct loops: odd and even sizes, padding 0-2, wide rows, f64 and f32") {
  manual_seed(61);
  struct Case {
    int64_t n, c, o, h, w, pad;
  };
  // 300 columns = 150 2x2 tiles: more than one block of tiles per row (kernels_cpu/winograd.cpp);
  // in 4x4 tiles 28 x 28 is 49 tiles, 40 x 40 100 (two blocks of kernels_cpu/winograd4.cpp,
  // the second starting inside a tile row).
  for (const WinogradVariant& variant : kWinogradVariants)
  for (Case k : {Case{2, 3, 4, 7, 6, 1}, Case{1, 2, 5, 5, 9, 0}, Case{3, 4, 2, 6, 6, 2}, Case{1, 1, 1, 3, 3, 0},
                 Case{1, 3, 2, 4, 300, 1}, Case{2, 16, 8, 14, 14, 1}, Case{1, 2, 3, 1, 1, 1}, Case{1, 2, 2, 28, 28, 1},
                 Case{1, 2, 2, 21, 19, 2}, Case{1, 2, 2, 40, 40, 1}}) {
    AlgorithmGuard winograd(variant.algorithm);
    CAPTURE(variant.algorithm);
    CAPTURE(k.n);
    CAPTURE(k.c);
    CAPTURE(k.o);
    CAPTURE(k.h);
    CAPTURE(k.w);
    CAPTURE(k.pad);
    Tensor x = randn({k.n, k.c, k.h, k.w}, DType::F64), w = randn({k.o, k.c, 3, 3}, DType::F64),
           b = randn({k.o}, DType::F64);
    Tensor want = test::ref_conv2d(x, w, b, 1, k.pad, k.pad);
    CHECK(rel_diff(nn::F::conv2d(x, w, b, {1}, {k.pad}), want) < 1e-13);
    CHECK(rel_diff(nn::F::conv2d(x.to(DType::F32), w.to(DType::F32), b.to(DType::F32), {1}, {k.pad}), want) <
          variant.f32_tolerance);
  }
  AlgorithmGuard winograd(ConvAlgorithm::Winograd);
  // Unbatched, no bias, a different padding per dim; the Conv2d module with padding='same'.
  Tensor x = randn({3, 5, 8}, DType::F64), w = randn({4, 3, 3, 3}, DType::F64);
  CHECK(rel_diff(nn::F::conv2d(x, w, {}, {1}, {2, 0}), test::ref_conv2d(x.unsqueeze(0), w, {}, 1, 2, 0).squeeze(0)) <
        1e-13);
  nn::Conv2d same(nn::Conv2dOptions(3, 4, {3}).padding_str("same"));
  same->to(DType::F64);
  CHECK(rel_diff(same(x.unsqueeze(0)), test::ref_conv2d(x.unsqueeze(0), same->weight, same->bias, 1, 1, 1)) < 1e-13);
}

TEST_CASE("winograd transforms: each op's adjoint satisfies <A x, y> = <x, A^T y>") {
  manual_seed(62);
  // 300 columns: 150 tiles per row, more than one block (kernels_cpu/winograd.cpp); 4x4 tiles
  // over 40 x 40 outputs: 100 tiles, two blocks (winograd4.cpp).
  for (auto t : {tiles_of(2, 5, 7, 1, 1, 5, 7), tiles_of(1, 6, 4, 0, 2, 4, 6), tiles_of(1, 3, 140, 1, 1, 3, 140),
                 tiles_of(1, 4, 300, 1, 1, 4, 300), tiles_of(1, 5, 301, 0, 2, 3, 303), tiles_of(2, 5, 7, 1, 1, 5, 7, 4),
                 tiles_of(1, 6, 4, 0, 2, 4, 6, 4), tiles_of(1, 9, 10, 1, 0, 9, 8, 4), tiles_of(1, 40, 40, 1, 1, 40, 40, 4),
                 tiles_of(1, 5, 301, 0, 2, 3, 303, 4)}) {
    CAPTURE(t.m);
    CAPTURE(t.h);
    CAPTURE(t.w);
    CAPTURE(t.pad_top);
    CAPTURE(t.pad_left);
    Tensor x = randn({t.n, 3, t.h, t.w}, DType::F64), v = randn({t.positions(), 3, t.tiles()}, DType::F64);
    const double lhs = dot(run_op(ops::WinogradInput{t}, x), v), rhs = dot(x, run_op(ops::WinogradInputAdjoint{t}, v));
    CHECK(std::abs(lhs - rhs) < 1e-10 * (1 + std::abs(lhs)));
    Tensor m = randn({t.positions(), 2, t.tiles()}, DType::F64), y = randn({t.n, 2, t.oh, t.ow}, DType::F64);
    const double l2 = dot(run_op(ops::WinogradOutput{t}, m), y), r2 = dot(m, run_op(ops::WinogradOutputAdjoint{t}, y));
    CHECK(std::abs(l2 - r2) < 1e-10 * (1 + std::abs(l2)));
  }
}

TEST_CASE("gradcheck and gradgradcheck through winograd conv2d") {
  manual_seed(63);
  auto r64 = [](Shape s) { return randn(s, DType::F64).requires_grad_(); };
  for (const WinogradVariant& variant : kWinogradVariants)
  for (int64_t pad : {0, 1, 2}) {
    AlgorithmGuard winograd(variant.algorithm);
    CAPTURE(variant.algorithm);
    CAPTURE(pad);
    std::string why;
    auto f = [pad](const std::vector<Tensor>& in) { return nn::F::conv2d(in[0], in[1], in[2], {1}, {pad}); };
    std::vector<Tensor> in{r64({2, 2, 5, 4}), r64({3, 2, 3, 3}), r64({3})};
    bool ok = autograd::gradcheck<DefaultPolicy>(f, in, {}, &why);
    CHECK_MESSAGE(ok, why);
    if (ok) CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, in, {}, &why), why);
  }
}

TEST_CASE("ConvAlgorithm: Auto takes winograd for 3x3 stride-1 convolutions with >= 8 channels each way") {
  manual_seed(64);
  auto conv_with = [](ConvAlgorithm a, const Tensor& x, const Tensor& w, nn::F::IntArgs stride = {1}) {
    AlgorithmGuard guard(a);
    return nn::F::conv2d(x, w, {}, stride, {1});
  };
  auto same_bits = [](const Tensor& a, const Tensor& b) { return a.eq(b).all().item<bool>(); };
  Tensor x = randn({2, 8, 10, 10}), w = randn({8, 8, 3, 3});
  Tensor winograd = conv_with(ConvAlgorithm::Winograd, x, w), im2col = conv_with(ConvAlgorithm::Im2col, x, w);
  CHECK(rel_diff(winograd, im2col) < 1e-5);
  CHECK_FALSE(same_bits(winograd, im2col));  // the two roundings differ, so the checks below can tell them apart
  CHECK(same_bits(conv_with(ConvAlgorithm::Auto, x, w), winograd));
  // Fewer than 8 input channels: im2col.
  Tensor x4 = randn({2, 4, 10, 10}), w4 = randn({8, 4, 3, 3});
  CHECK(same_bits(conv_with(ConvAlgorithm::Auto, x4, w4), conv_with(ConvAlgorithm::Im2col, x4, w4)));
  CHECK_FALSE(same_bits(conv_with(ConvAlgorithm::Winograd, x4, w4), conv_with(ConvAlgorithm::Im2col, x4, w4)));
  // Stride 2 is not Winograd's, whatever the setting.
  CHECK(same_bits(conv_with(ConvAlgorithm::Winograd, x, w, {2}), conv_with(ConvAlgorithm::Im2col, x, w, {2})));
  // The tile size: 10 x 10 outputs multiply less in 4x4 tiles (9 x 36 against 25 x 16); 5 x 5
  // is a tie (4 x 36 = 9 x 16), which goes to 2x2.
  const Tensor f4 = conv_with(ConvAlgorithm::Winograd4x4, x, w), f2 = conv_with(ConvAlgorithm::Winograd2x2, x, w);
  CHECK_FALSE(same_bits(f4, f2));
  CHECK(same_bits(winograd, f4));
  Tensor x5 = randn({2, 8, 5, 5});
  CHECK(same_bits(conv_with(ConvAlgorithm::Winograd, x5, w), conv_with(ConvAlgorithm::Winograd2x2, x5, w)));
  CHECK_FALSE(same_bits(conv_with(ConvAlgorithm::Winograd4x4, x5, w), conv_with(ConvAlgorithm::Winograd2x2, x5, w)));
  // More than 128 x 128 channels: 2x2 (F(4x4)'s transformed weights outgrow the cache).
  Tensor xw = randn({1, 136, 10, 10}), ww = randn({136, 136, 3, 3}) * 0.05;
  CHECK(same_bits(conv_with(ConvAlgorithm::Winograd, xw, ww), conv_with(ConvAlgorithm::Winograd2x2, xw, ww)));
}

TEST_CASE("winograd transforms reject inputs that do not fit their tiling") {
  auto t = tiles_of(2, 5, 7, 1, 1, 5, 7);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradInput{t}, randn({2, 3, 5, 6})),
                       doctest::Contains("[winograd_input] expects images of shape (2, C, 5, 7), got [2, 3, 5, 6]"),
                       Error);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradInputAdjoint{t}, randn({16, 3, 5})),
                       doctest::Contains("[winograd_input_adjoint] expects transformed tiles of shape (16, C, 24)"),
                       Error);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradOutput{t}, randn({9, 3, 24})),
                       doctest::Contains("[winograd_output] expects transformed tiles of shape (16, C, 24)"), Error);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradOutputAdjoint{t}, randn({2, 3, 5, 8})),
                       doctest::Contains("[winograd_output_adjoint] expects images of shape (2, C, 5, 7)"), Error);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradInput{t}, zeros({2, 3, 5, 7}, DType::I32)),
                       doctest::Contains("[winograd_input] supports f32 and f64, got i32"), Error);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradInput{tiles_of(1, 5, 5, -1, 0, 5, 5)}, randn({1, 3, 5, 5})),
                       doctest::Contains("[winograd_input] invalid tiling"), Error);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradInput{tiles_of(1, 5, 5, 1, 1, 5, 5, 3)}, randn({1, 3, 5, 5})),
                       doctest::Contains("tiles 3x3 (2x2 or 4x4)"), Error);
  CHECK_THROWS_WITH_AS(run_op(ops::WinogradOutput{tiles_of(2, 5, 7, 1, 1, 5, 7, 4)}, randn({16, 3, 4})),
                       doctest::Contains("[winograd_output] expects transformed tiles of shape (36, C, 8)"), Error);
  auto conv = [&](const Tensor& x, const Tensor& u) {
    return Tensor::wrap(dispatch<DefaultPolicy>(ops::WinogradConv{t}, x.impl(), u.impl()));
  };
  CHECK_THROWS_WITH_AS(conv(randn({2, 3, 5, 7}), randn({16, 4, 2})),
                       doctest::Contains("[winograd_conv] expects transformed weights of shape (16, O, 3) and dtype f32, "
                                         "got [16, 4, 2] (f32)"),
                       Error);
  CHECK_THROWS_WITH_AS(conv(randn({2, 3, 5, 7}), randn({16, 4, 3}, DType::F64)),
                       doctest::Contains("[winograd_conv] expects transformed weights"), Error);
  auto back = [&](const Tensor& dy) {
    return dispatch<DefaultPolicy>(ops::WinogradConvBackward{t}, dy.impl(), randn({2, 3, 5, 7}).impl(),
                                   randn({16, 4, 3}).impl());
  };
  CHECK_THROWS_WITH_AS(back(randn({2, 4, 5, 6})),
                       doctest::Contains("[winograd_conv_backward] expects a gradient of shape (2, 4, 5, 7)"), Error);
}

TEST_CASE("winograd ops over zero input or output channels give zeros (padded chunk buffers)") {
  for (int64_t m : {2, 4}) {
    CAPTURE(m);
    auto t = tiles_of(2, 9, 9, 1, 1, 9, 9, m);
    Tensor y = Tensor::wrap(
        dispatch<DefaultPolicy>(ops::WinogradConv{t}, randn({2, 0, 9, 9}).impl(), randn({t.positions(), 3, 0}).impl()));
    CHECK(y.sizes() == Shape{2, 3, 9, 9});
    CHECK(y.eq(0).all().item<bool>());
    auto g = dispatch<DefaultPolicy>(ops::WinogradConvBackward{t}, randn({2, 0, 9, 9}).impl(), randn({2, 3, 9, 9}).impl(),
                                     randn({t.positions(), 0, 3}).impl());
    CHECK(Tensor::wrap(g.dx).eq(0).all().item<bool>());
    CHECK(Tensor::wrap(g.du).numel() == 0);
  }
}

TEST_CASE("winograd conv2d backward in chunks of samples: gradients as im2col's, the same for any thread count") {
  manual_seed(65);
  // 14 x 14 outputs = 49 2x2 tiles per sample: chunks of 5 samples (src/ops/winograd.cpp), so
  // a batch of 13 runs as 5 + 5 + 3, spread over the threads; 16 4x4 tiles: chunks of 4.
  for (const WinogradVariant& variant : kWinogradVariants) {
  CAPTURE(variant.algorithm);
  Tensor x = randn({13, 8, 14, 14}, DType::F64), w = randn({16, 8, 3, 3}, DType::F64), gy = randn({13, 16, 14, 14}, DType::F64);
  auto grads = [&](ConvAlgorithm a, int threads) {
    AlgorithmGuard guard(a);
    const int saved = get_num_threads();
    set_num_threads(threads);
    Tensor xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_();
    Tensor y = nn::F::conv2d(xg, wg, {}, {1}, {1});
    y.backward(gy);
    set_num_threads(saved);
    return std::vector<Tensor>{y.detach(), xg.grad(), wg.grad()};
  };
  const auto want = grads(ConvAlgorithm::Im2col, 1), one = grads(variant.algorithm, 1),
             three = grads(variant.algorithm, 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(rel_diff(one[i], want[i]) < 1e-13);
    CHECK(one[i].eq(three[i]).all().item<bool>());
  }
  // 40 samples of 8 x 8 tiles: one sample per chunk (64 tiles fill the GEMM's panels), so
  // du is summed in groups of consecutive chunks; and rows of 150 tiles (two blocks).
  for (Shape xs : {Shape{40, 2, 16, 16}, Shape{2, 2, 5, 300}}) {
    CAPTURE(xs);
    Tensor x2 = randn(xs, DType::F64), w2 = randn({3, 2, 3, 3}, DType::F64);
    Tensor gy2 = randn({xs[0], 3, xs[2], xs[3]}, DType::F64);
    auto grads2 = [&](ConvAlgorithm a, int threads) {
      AlgorithmGuard guard(a);
      const int saved = get_num_threads();
      set_num_threads(threads);
      Tensor xg = x2.clone().requires_grad_(), wg = w2.clone().requires_grad_();
      nn::F::conv2d(xg, wg, {}, {1}, {1}).backward(gy2);
      set_num_threads(saved);
      return std::vector<Tensor>{xg.grad(), wg.grad()};
    };
    const auto want2 = grads2(ConvAlgorithm::Im2col, 1), one2 = grads2(variant.algorithm, 1),
               three2 = grads2(variant.algorithm, 3);
    for (size_t i = 0; i < 2; ++i) {
      CHECK(rel_diff(one2[i], want2[i]) < 1e-13);
      CHECK(one2[i].eq(three2[i]).all().item<bool>());
    }
  }
  // f32 through the AVX GEMM: the same checks at f32's precision.
  AlgorithmGuard guard(variant.algorithm);
  Tensor xf = x.to(DType::F32).requires_grad_(), wf = w.to(DType::F32).requires_grad_();
  nn::F::conv2d(xf, wf, {}, {1}, {1}).backward(gy.to(DType::F32));
  CHECK(rel_diff(xf.grad(), want[1]) < variant.f32_tolerance);
  CHECK(rel_diff(wf.grad(), want[2]) < variant.f32_tolerance);
  }
}

TEST_CASE("direct conv2d matches direct loops: kernel sizes, 1 and 3 channels, padding, narrow rows, f64 and f32") {
  manual_seed(71);
  AlgorithmGuard direct(ConvAlgorithm::Direct);
  struct Case {
    int64_t n, c, o, h, w, kh, kw, ph, pw;
  };
  // o = 5, 1: a last block of fewer than four output channels; w = 3, 5: rows narrower than a
  // vector (element by element) or ending in a partial vector; 5x5 over one channel.
  for (Case k : {Case{2, 1, 32, 28, 28, 3, 3, 1, 1}, Case{3, 3, 5, 9, 11, 3, 3, 0, 2}, Case{1, 1, 1, 6, 3, 2, 2, 1, 0},
                 Case{2, 1, 8, 12, 13, 5, 5, 2, 2}, Case{1, 3, 4, 7, 21, 1, 3, 0, 1}, Case{1, 2, 6, 4, 40, 3, 1, 2, 0}}) {
    CAPTURE(k.c);
    CAPTURE(k.o);
    CAPTURE(k.h);
    CAPTURE(k.w);
    CAPTURE(k.kh);
    CAPTURE(k.kw);
    Tensor x = randn({k.n, k.c, k.h, k.w}, DType::F64), w = randn({k.o, k.c, k.kh, k.kw}, DType::F64),
           b = randn({k.o}, DType::F64);
    Tensor want = test::ref_conv2d(x, w, b, 1, k.ph, k.pw);
    CHECK(rel_diff(nn::F::conv2d(x, w, b, {1}, {k.ph, k.pw}), want) < 1e-13);
    CHECK(rel_diff(nn::F::conv2d(x, w, {}, {1}, {k.ph, k.pw}) + b.reshape({1, k.o, 1, 1}), want) < 1e-13);
    CHECK(rel_diff(nn::F::conv2d(x.to(DType::F32), w.to(DType::F32), b.to(DType::F32), {1}, {k.ph, k.pw}), want) <
          2e-6);
  }
  // An infinite input reaches exactly the outputs whose windows hold it, as with im2col.
  Tensor x = randn({1, 1, 9, 9}), w = randn({4, 1, 3, 3});
  x.index_put_({0, 0, 4, 8}, std::numeric_limits<float>::infinity());
  Tensor got = nn::F::conv2d(x, w, {}, {1}, {1});
  Tensor want = [&] {
    AlgorithmGuard im2col(ConvAlgorithm::Im2col);
    return nn::F::conv2d(x, w, {}, {1}, {1});
  }();
  CHECK(got.isfinite().eq(want.isfinite()).all().item<bool>());
  CHECK(rel_diff(got.nan_to_num(0, 0, 0), want.nan_to_num(0, 0, 0)) < 2e-6);
}

TEST_CASE("gradcheck and gradgradcheck through direct conv2d") {
  manual_seed(72);
  AlgorithmGuard direct(ConvAlgorithm::Direct);
  auto r64 = [](Shape s) { return randn(s, DType::F64).requires_grad_(); };
  std::string why;
  auto f = [](const std::vector<Tensor>& in) { return nn::F::conv2d(in[0], in[1], in[2], {1}, {1, 2}); };
  std::vector<Tensor> in{r64({2, 2, 5, 4}), r64({3, 2, 3, 2}), r64({3})};
  bool ok = autograd::gradcheck<DefaultPolicy>(f, in, {}, &why);
  CHECK_MESSAGE(ok, why);
  if (ok) CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, in, {}, &why), why);
  auto no_bias = [](const std::vector<Tensor>& in) { return nn::F::conv2d(in[0], in[1], {}, {1}, {0}); };
  std::vector<Tensor> in2{r64({1, 3, 4, 6}), r64({2, 3, 2, 2})};
  CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(no_bias, in2, {}, &why), why);
}

TEST_CASE("direct conv2d backward in chunks of samples: gradients as im2col's, the same for any thread count") {
  manual_seed(73);
  // 13 samples: chunks of 4, 4, 4 and 1 (src/ops/direct_conv.cpp).
  Tensor x = randn({13, 3, 11, 10}, DType::F64), w = randn({6, 3, 3, 3}, DType::F64), b = randn({6}, DType::F64),
         gy = randn({13, 6, 11, 10}, DType::F64);
  auto grads = [&](ConvAlgorithm a, int threads) {
    AlgorithmGuard guard(a);
    const int saved = get_num_threads();
    set_num_threads(threads);
    Tensor xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_(), bg = b.clone().requires_grad_();
    Tensor y = nn::F::conv2d(xg, wg, bg, {1}, {1});
    y.backward(gy);
    set_num_threads(saved);
    return std::vector<Tensor>{y.detach(), xg.grad(), wg.grad(), bg.grad()};
  };
  const auto want = grads(ConvAlgorithm::Im2col, 1), one = grads(ConvAlgorithm::Direct, 1),
             three = grads(ConvAlgorithm::Direct, 3);
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(rel_diff(one[i], want[i]) < 1e-13);
    CHECK(one[i].eq(three[i]).all().item<bool>());
  }
  // Only the weight and bias need gradients (a network's first layer): no input gradient.
  AlgorithmGuard guard(ConvAlgorithm::Direct);
  Tensor wf = w.to(DType::F32).requires_grad_(), bf = b.to(DType::F32).requires_grad_();
  nn::F::conv2d(x.to(DType::F32), wf, bf, {1}, {1}).backward(gy.to(DType::F32));
  CHECK(rel_diff(wf.grad(), want[2]) < 2e-6);
  CHECK(rel_diff(bf.grad(), want[3]) < 2e-6);
  // f32 rows narrower than a vector (element by element) and ending in a partial vector of one
  // new lane (9, 17 columns: the masked lanes include output column width - 2, which reads
  // the input's last column), with an infinite input there: the taps that read it get an
  // infinite gradient, as with im2col, and no masked lane adds a 0 * inf = NaN.
  for (int64_t width : {5, 9, 17}) {
    CAPTURE(width);
    Tensor xs = randn({3, 1, 6, width}), ws = randn({5, 1, 3, 3}), gs = randn({3, 5, 6, width});
    xs.index_put_({1, 0, 2, width - 1}, std::numeric_limits<float>::infinity());
    auto weight_grad = [&](ConvAlgorithm a) {
      AlgorithmGuard g(a);
      Tensor wc = ws.clone().requires_grad_(), bc = zeros({5}).requires_grad_();
      nn::F::conv2d(xs, wc, bc, {1}, {1}).backward(gs);
      return wc.grad();
    };
    const Tensor got = weight_grad(ConvAlgorithm::Direct), want_w = weight_grad(ConvAlgorithm::Im2col);
    CHECK(got.isnan().eq(want_w.isnan()).all().item<bool>());
    CHECK(got.isinf().eq(want_w.isinf()).all().item<bool>());
    CHECK(want_w.isinf().any().item<bool>());
    CHECK(rel_diff(got.nan_to_num(0, 0, 0), want_w.nan_to_num(0, 0, 0)) < 2e-6);
  }
  // A last block of one output channel and a last group of one tap (5 channels, 2x2 = 4 taps).
  Tensor x1 = randn({3, 1, 7, 10}, DType::F64), w1 = randn({5, 1, 2, 2}, DType::F64),
         gy1 = randn({3, 5, 8, 11}, DType::F64);
  auto weight_grad1 = [&](ConvAlgorithm a) {
    AlgorithmGuard g(a);
    Tensor wc = w1.clone().requires_grad_();
    nn::F::conv2d(x1, wc, {}, {1}, {1}).backward(gy1);
    return wc.grad();
  };
  CHECK(rel_diff(weight_grad1(ConvAlgorithm::Direct), weight_grad1(ConvAlgorithm::Im2col)) < 1e-13);
}

TEST_CASE("ConvAlgorithm: Auto takes the direct kernels when an output reads at most 32 inputs") {
  manual_seed(74);
  // Which kernel ran, from the op that made the output (these convolutions have no bias).
  auto algorithm_of = [](ConvAlgorithm a, const Tensor& x, const Tensor& w, nn::F::IntArgs stride = {1}) {
    AlgorithmGuard guard(a);
    return std::string(nn::F::conv2d(x, w.detach().requires_grad_(), {}, stride, {1}).grad_fn()->name());
  };
  Tensor x = randn({2, 3, 12, 12}), w = randn({16, 3, 3, 3});  // 27 inputs per output
  CHECK(algorithm_of(ConvAlgorithm::Auto, x, w) == "DirectConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Winograd, x, w) == "WinogradConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Im2col, x, w) != "DirectConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Auto, x, w, {2}) != "DirectConvBackward");  // stride 2: im2col
  // 4 channels x 9 = 36 inputs: im2col under Auto and under Direct (it does not apply);
  // 8 channels each way: Winograd.
  Tensor x4 = randn({2, 4, 12, 12}), w4 = randn({16, 4, 3, 3});
  CHECK(algorithm_of(ConvAlgorithm::Auto, x4, w4) != "DirectConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Direct, x4, w4) != "DirectConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Auto, randn({2, 8, 12, 12}), randn({8, 8, 3, 3})) == "WinogradConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Auto, x4, w4) != "WinogradConvBackward");
  // 512 channels each way on a 7 x 7 image: im2col; on 14 x 14: Winograd.
  CHECK(algorithm_of(ConvAlgorithm::Auto, randn({1, 512, 7, 7}), randn({512, 512, 3, 3})) != "WinogradConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Auto, randn({1, 512, 14, 14}), randn({512, 512, 3, 3})) == "WinogradConvBackward");
  // 1x1 kernels stay with im2col under Auto; empty channels too (and give zeros).
  CHECK(algorithm_of(ConvAlgorithm::Auto, x, randn({16, 3, 1, 1})) != "DirectConvBackward");
  CHECK(algorithm_of(ConvAlgorithm::Direct, x, randn({16, 3, 1, 1})) == "DirectConvBackward");
  Tensor empty_out = nn::F::conv2d(randn({2, 0, 5, 5}), randn({4, 0, 3, 3}));
  CHECK(empty_out.sizes() == Shape{2, 4, 3, 3});
  CHECK(empty_out.abs().sum().item<double>() == 0.0);
}

TEST_CASE("direct conv ops reject inputs that do not fit their geometry") {
  ops::DirectConvGeometry g;
  g.n = 2, g.c = 1, g.h = 5, g.w = 5, g.o = 4, g.kh = 3, g.kw = 3, g.pad_top = 1, g.pad_left = 1, g.oh = 5, g.ow = 5;
  auto conv = [&](const ops::DirectConvGeometry& geo, const Tensor& x, const Tensor& w) {
    return Tensor::wrap(dispatch<DefaultPolicy>(ops::DirectConv{geo}, x.impl(), w.impl(), nullptr));
  };
  CHECK_THROWS_WITH_AS(conv(g, randn({2, 1, 5, 6}), randn({4, 1, 3, 3})),
                       doctest::Contains("[direct_conv] expects an input of shape (2, 1, 5, 5), got [2, 1, 5, 6]"), Error);
  CHECK_THROWS_WITH_AS(conv(g, randn({2, 1, 5, 5}), randn({4, 1, 3, 2})),
                       doctest::Contains("[direct_conv] expects a weight of shape (4, 1, 3, 3) and dtype f32"), Error);
  ops::DirectConvGeometry wide = g;
  wide.c = 4;
  CHECK_THROWS_WITH_AS(conv(wide, randn({2, 4, 5, 5}), randn({4, 4, 3, 3})),
                       doctest::Contains("[direct_conv] reads at most 32 inputs per output"), Error);
  ops::DirectConvGeometry bad = g;
  bad.oh = 9;  // more output rows than the padding allows
  bad.pad_top = -1;
  CHECK_THROWS_WITH_AS(conv(bad, randn({2, 1, 5, 5}), randn({4, 1, 3, 3})),
                       doctest::Contains("[direct_conv] invalid geometry"), Error);
  Tensor b3 = randn({3});
  CHECK_THROWS_WITH_AS(Tensor::wrap(dispatch<DefaultPolicy>(ops::DirectConv{g}, randn({2, 1, 5, 5}).impl(),
                                                            randn({4, 1, 3, 3}).impl(), &b3.impl())),
                       doctest::Contains("[direct_conv] expects a bias of shape (4)"), Error);
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::DirectConvBackward{g}, randn({2, 4, 5, 4}).impl(),
                                               randn({2, 1, 5, 5}).impl(), randn({4, 1, 3, 3}).impl()),
                       doctest::Contains("[direct_conv_backward] expects a gradient of shape (2, 4, 5, 5)"), Error);
}

}  // namespace test_conv_algorithms
