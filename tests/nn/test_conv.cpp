// Convolution, pooling, channel normalisation and resampling against plain reference loops
// (f64), and gradcheck/gradgradcheck of each (im2col and col2im are each other's adjoint).

#include <doctest/doctest.h>
#include "../error_text.hpp"
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include "../helping_queue.hpp"
#include "reference_conv.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace test_conv {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.detach().to(DType::F64) - b.detach().to(DType::F64)).abs().amax().item<double>();
}

void check_grads(const std::string& what, const Fn& f, const std::vector<Tensor>& in, bool second = true) {
  std::string why;
  bool ok = autograd::gradcheck<DefaultPolicy>(f, in, {}, &why);
  CHECK_MESSAGE(ok, what << ": " << why);
  if (ok && second) CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, in, {}, &why), what << " (2nd): " << why);
}

Tensor r64(Shape s) { return randn(s, DType::F64).requires_grad_(); }

Tensor ref_max_pool2d(const Tensor& x, int64_t k, int64_t s, int64_t p, Tensor* indices) {
  auto X = x.detach().contiguous();
  int64_t n = X.size(0), c = X.size(1), h = X.size(2), w = X.size(3);
  int64_t oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1;
  Tensor out = zeros({n, c, oh, ow}, DType::F64), idx = zeros({n, c, oh, ow}, DType::I64);
  auto xa = X.accessor<double, 4>();
  auto oa = out.accessor<double, 4>();
  auto ia = idx.accessor<int64_t, 4>();
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double m = -std::numeric_limits<double>::infinity();
          int64_t mi = -1;
          for (int64_t u = 0; u < k; ++u)
            for (int64_t v = 0; v < k; ++v) {
              int64_t y = i * s - p + u, xx = j * s - p + v;
              if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
              const double val = xa[a][b][y][xx];
              if (val > m || std::isnan(val)) m = val, mi = y * w + xx;  // PyTorch: a NaN wins
            }
          oa[a][b][i][j] = m;
          ia[a][b][i][j] = mi;
        }
  if (indices) *indices = idx;
  return out;
}

}  // namespace

TEST_CASE("conv2d matches direct loops: stride, padding, dilation, groups, bias") {
  manual_seed(20);
  struct Case {
    int64_t s, p, d, groups;
  };
  for (Case cs : {Case{1, 0, 1, 1}, Case{2, 1, 1, 1}, Case{1, 2, 2, 1}, Case{2, 1, 1, 2}, Case{1, 1, 1, 4}}) {
    CAPTURE(cs.s);
    CAPTURE(cs.p);
    CAPTURE(cs.d);
    CAPTURE(cs.groups);
    Tensor x = randn({2, 4, 7, 6}, DType::F64), w = randn({8, 4 / cs.groups, 3, 3}, DType::F64),
           b = randn({8}, DType::F64);
    Tensor got = nn::F::conv2d(x, w, b, {cs.s}, {cs.p}, {cs.d}, cs.groups);
    CHECK(max_diff(got, test::ref_conv2d(x, w, b, cs.s, cs.p, cs.p, cs.d, cs.groups)) < 1e-12);
  }
  // Unbatched input, and conv1d / conv3d as 2-d convolutions with a size-1 dim.
  Tensor x = randn({3, 9}, DType::F64), w = randn({2, 3, 4}, DType::F64);
  Tensor c1 = nn::F::conv1d(x, w, {}, {2}, {1});
  Tensor c2 = nn::F::conv2d(x.unsqueeze(1).unsqueeze(0), w.unsqueeze(2), {}, {1, 2}, {0, 1}).squeeze(2).squeeze(0);
  CHECK(max_diff(c1, c2) < 1e-12);
  Tensor v = randn({1, 2, 3, 5, 5}, DType::F64), k = randn({3, 2, 1, 3, 3}, DType::F64);
  Tensor c3 = nn::F::conv3d(v, k, {}, {1}, {0, 1, 1});
  for (int64_t t = 0; t < 3; ++t)
    CHECK(max_diff(c3.select(2, t), nn::F::conv2d(v.select(2, t), k.select(2, 0), {}, {1}, {1})) < 1e-12);
  // 1x1 kernels, stride 1, no padding: a product per sample on the input as it lies (1-d, 2-d,
  // 3-d, unbatched); with stride 2 or padding they take im2col. Values and gradients.
  for (auto sp : {std::pair<int64_t, int64_t>{1, 0}, {2, 0}, {1, 1}}) {
    const int64_t s = sp.first, p = sp.second;  // not bound: clang 14 cannot capture bindings
    Tensor xp = randn({3, 5, 4, 7}, DType::F64).requires_grad_(), wp = randn({6, 5, 1, 1}, DType::F64).requires_grad_(),
           bp = randn({6}, DType::F64).requires_grad_();
    CHECK(max_diff(nn::F::conv2d(xp, wp, bp, {s}, {p}), test::ref_conv2d(xp.detach(), wp.detach(), bp.detach(), s, p, p)) <
          1e-12);
    std::string why;
    auto f = [s, p](const std::vector<Tensor>& in) { return nn::F::conv2d(in[0], in[1], in[2], {s}, {p}); };
    CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, {xp, wp, bp}, {}, &why), why);
  }
  Tensor x1 = randn({2, 3, 8}, DType::F64), w1 = randn({4, 3, 1}, DType::F64);
  CHECK(max_diff(nn::F::conv1d(x1, w1), nn::F::conv2d(x1.unsqueeze(2), w1.unsqueeze(2)).squeeze(2)) < 1e-12);
  Tensor x3 = randn({2, 3, 2, 3, 4}, DType::F64), w3 = randn({4, 3, 1, 1, 1}, DType::F64);
  CHECK(max_diff(nn::F::conv3d(x3, w3).select(2, 1), nn::F::conv2d(x3.select(2, 1), w3.select(2, 0))) < 1e-12);
  // Empty batches and zero input channels (the product over an empty dim is zeros).
  CHECK(nn::F::conv2d(randn({0, 3, 8, 8}), randn({4, 3, 1, 1})).sizes() == Shape{0, 4, 8, 8});
  CHECK(nn::F::conv2d(randn({2, 0, 3, 3}), randn({4, 0, 1, 1}), ones({4})).sum().item<float>() == 72.0f);
  Tensor xu = randn({3, 4, 5}, DType::F64);  // unbatched (C, H, W)
  CHECK(max_diff(nn::F::conv2d(xu, w3.select(2, 0)), nn::F::conv2d(xu.unsqueeze(0), w3.select(2, 0)).squeeze(0)) < 1e-12);
  CHECK(nn::F::conv2d(xu, w3.select(2, 0)).sizes() == Shape{4, 4, 5});
  CHECK_THROWS_WITH_AS(nn::F::conv2d(randn({1, 3, 5, 5}), randn({4, 2, 3, 3})),
                       doctest::Contains("[conv2d] weight of shape [4, 2, 3, 3] expects 2 input channels"), Error);
  CHECK_THROWS_WITH_AS(nn::F::conv2d(randn({1, 3, 2, 2}), randn({4, 3, 3, 3})), doctest::Contains("does not fit"),
                       Error);
}

// Depthwise convolutions (groups == channels, one output channel each) run their own kernel:
// values against the reference loops for kernel sizes, strides, paddings and dilations,
// gradients by gradcheck (the fused backward) and gradgradcheck (the recorded form), and the
// same values as the im2col path when that is forced.
TEST_CASE("depthwise conv2d: own kernel against reference loops, gradients, forced im2col") {
  manual_seed(26);
  struct Case {
    int64_t k, s, p, d;
  };
  for (Case cs : {Case{3, 1, 1, 1}, Case{3, 2, 1, 1}, Case{5, 1, 2, 1}, Case{3, 1, 2, 2}, Case{1, 1, 0, 1},
                  Case{3, 2, 0, 1}, Case{2, 3, 1, 1}}) {
    CAPTURE(cs.k);
    CAPTURE(cs.s);
    CAPTURE(cs.p);
    CAPTURE(cs.d);
    for (bool bias : {true, false}) {
      Tensor x = randn({2, 5, 9, 8}, DType::F64), w = randn({5, 1, cs.k, cs.k}, DType::F64);
      Tensor b = bias ? randn({5}, DType::F64) : Tensor();
      Tensor got = nn::F::conv2d(x, w, b, {cs.s}, {cs.p}, {cs.d}, 5);
      CHECK(max_diff(got, test::ref_conv2d(x, w, b, cs.s, cs.p, cs.p, cs.d, 5)) < 1e-12);
      Tensor x32 = x.to(DType::F32), w32 = w.to(DType::F32), b32 = bias ? b.to(DType::F32) : Tensor();
      CHECK(max_diff(nn::F::conv2d(x32, w32, b32, {cs.s}, {cs.p}, {cs.d}, 5).to(DType::F64), got) < 1e-4);
    }
    std::string why;
    auto f = [cs](const std::vector<Tensor>& in) { return nn::F::conv2d(in[0], in[1], in[2], {cs.s}, {cs.p}, {cs.d}, 3); };
    std::vector<Tensor> in = {randn({2, 3, 6, 7}, DType::F64).requires_grad_(), randn({3, 1, cs.k, cs.k}, DType::F64).requires_grad_(),
                              randn({3}, DType::F64).requires_grad_()};
    CHECK_MESSAGE(autograd::gradcheck<DefaultPolicy>(f, in, {}, &why), why);
    CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(f, in, {}, &why), why);
  }
  // An empty image padded to a non-empty output holds the bias (the op called directly).
  {
    ops::ConvGeometry g;
    g.kernel = {1, 1, 1}, g.pad_before = {1, 1, 0}, g.pad_after = {1, 1, 0};
    Tensor e = Tensor::wrap(dispatch<DefaultPolicy>(ops::DepthwiseConv{g}, zeros({1, 2, 0, 4}).impl(),
                                                   ones({2, 1, 1, 1}).impl(), &tensor({3.f, -1.f}).impl()));
    CHECK(e.sizes() == Shape{1, 2, 2, 6});
    CHECK(e.select(1, 0).eq(3.0).all().item<bool>());
    CHECK(e.select(1, 1).eq(-1.0).all().item<bool>());
  }
  // Unbatched input; and the im2col path (forced) agrees, forward and backward.
  Tensor xu = randn({4, 7, 7}, DType::F64), wu = randn({4, 1, 3, 3}, DType::F64);
  CHECK(max_diff(nn::F::conv2d(xu, wu, {}, {1}, {1}, {1}, 4), nn::F::conv2d(xu.unsqueeze(0), wu, {}, {1}, {1}, {1}, 4).squeeze(0)) < 1e-12);
  Tensor x = randn({3, 6, 10, 9}).requires_grad_(), w = randn({6, 1, 3, 3}).requires_grad_(), b = randn({6}).requires_grad_();
  Tensor g = randn({3, 6, 5, 5});
  Tensor y = nn::F::conv2d(x, w, b, {2}, {1}, {1}, 6);
  y.backward(g);
  Tensor gx = x.grad().clone(), gw = w.grad().clone(), gb = b.grad().clone();
  set_conv_algorithm(ConvAlgorithm::Im2col);
  Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_(), b2 = b.detach().requires_grad_();
  Tensor y2 = nn::F::conv2d(x2, w2, b2, {2}, {1}, {1}, 6);
  y2.backward(g);
  set_conv_algorithm(ConvAlgorithm::Auto);
  CHECK(max_diff(y, y2) < 1e-5);
  CHECK(max_diff(gx, x2.grad()) < 1e-5);
  CHECK(max_diff(gw, w2.grad()) < 1e-4);
  CHECK(max_diff(gb, b2.grad()) < 1e-4);
}

// The depthwise kernels' vector paths against the im2col path: rows of several blocks of
// four vectors with a partial last vector, odd row counts (a last single row), non-square
// kernels, mixed strides (rows split into phases), asymmetric 'same' padding and kernels of
// more than nine taps (the weight gradient's groups of taps), in f32 and f64.
TEST_CASE("depthwise conv2d: wide rows, non-square kernels and mixed strides agree with im2col") {
  manual_seed(27);
  struct Case {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool same;
  };
  for (Case cs : {Case{3, 3, 1, 1, 1, 1, 1, 1, false}, Case{3, 5, 1, 2, 1, 2, 1, 1, false}, Case{5, 5, 2, 1, 2, 0, 1, 2, false},
                  Case{4, 4, 1, 1, 0, 0, 1, 1, true}, Case{7, 7, 1, 1, 3, 3, 1, 1, false}, Case{3, 3, 3, 3, 0, 2, 2, 1, false},
                  Case{1, 4, 1, 1, 0, 0, 1, 2, true}, Case{2, 3, 2, 3, 1, 1, 1, 1, false},
                  // Strides far wider than the image: one window per row and column, and no
                  // scratch in proportion to the stride (it was 36 GB per thread at 1e9).
                  Case{2, 3, 1000000, 1000000000, 1, 2, 1, 2, false}}) {
    CAPTURE(cs.kh);
    CAPTURE(cs.kw);
    CAPTURE(cs.sh);
    CAPTURE(cs.sw);
    for (DType dt : {DType::F32, DType::F64}) {
      Tensor x = randn({2, 3, 13, 45}, dt), w = randn({3, 1, cs.kh, cs.kw}, dt), b = randn({3}, dt);
      auto options = [&] {
        auto o = nn::F::Conv2dFuncOptions().stride({cs.sh, cs.sw}).dilation({cs.dh, cs.dw}).groups(3);
        return cs.same ? o.padding(kSame) : o.padding({cs.ph, cs.pw});
      };
      auto run = [&](ConvAlgorithm algorithm, const Tensor& gy) {
        set_conv_algorithm(algorithm);
        Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_(), bg = b.detach().requires_grad_();
        Tensor y = nn::F::conv2d(xg, wg, options().bias(bg));
        if (gy.defined()) y.backward(gy);
        set_conv_algorithm(ConvAlgorithm::Auto);
        return std::vector<Tensor>{y.detach(), xg.grad(), wg.grad(), bg.grad()};
      };
      Tensor gy = randn(run(ConvAlgorithm::Auto, Tensor())[0].sizes(), dt);
      std::vector<Tensor> own = run(ConvAlgorithm::Auto, gy), ref = run(ConvAlgorithm::Im2col, gy);
      const double tol = dt == DType::F64 ? 1e-11 : 2e-4;
      for (size_t i = 0; i < own.size(); ++i) {
        CAPTURE(i);
        CHECK(own[i].sizes() == ref[i].sizes());
        CHECK(max_diff(own[i], ref[i]) <= tol * (1 + ref[i].abs().amax().item<double>()));
      }
    }
  }
}

// Two depthwise convolutions of different geometry, each the task of an outer parallel
// region, under an executor that runs queued tasks while it waits: the second convolution
// starts on the thread where the first waits for its planes. Each task must build its own
// tap layout (a table in the waiting caller's scratch was rewritten by the second call).
TEST_CASE("depthwise conv2d: interleaved calls under a work-stealing executor") {
  autograd::NoGradGuard ng;
  manual_seed(28);
  Tensor xa = randn({2, 8, 40, 40}), wa = randn({8, 1, 3, 3});
  Tensor xb = randn({2, 8, 40, 40}), wb = randn({8, 1, 5, 5});
  auto conv_a = [&] { return nn::F::conv2d(xa, wa, {}, {1, 2}, {1}, {1}, 8); };
  auto conv_b = [&] { return nn::F::conv2d(xb, wb, {}, {2, 3}, {2}, {2}, 8); };
  const Tensor want_a = conv_a(), want_b = conv_b();
  Tensor got[2];
  test::HelpingQueue helper;
  set_executor(Executor{&helper, &test::HelpingQueue::run, 2});
  detail::parallel_for(2, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) got[i] = i == 0 ? conv_a() : conv_b();
  });
  set_executor(Executor{});
  CHECK(max_diff(got[0], want_a) == 0.0);
  CHECK(max_diff(got[1], want_b) == 0.0);
}

// Size arguments take what libtorch's ExpandingArray takes: one integer for every dim, a
// braced list, or a vector; each form means the same layer.
TEST_CASE("conv and pooling options accept an integer, a braced list or a vector per size argument") {
  manual_seed(3);
  Tensor x = randn({2, 3, 9, 9});
  nn::Conv2d a(nn::Conv2dOptions(3, 4, 3).stride(2).padding(1));
  nn::Conv2d b(nn::Conv2dOptions(3, 4, {3, 3}).stride({2, 2}).padding(std::vector<int64_t>{1, 1}));
  {
    autograd::NoGradGuard no_grad;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  CHECK(a->options.kernel_size() == nn::functional::IntArgs{3});
  CHECK(a(x).sizes() == Shape{2, 4, 5, 5});
  CHECK((a(x) - b(x)).abs().amax().item<float>() == 0.0f);
  namespace F = nn::functional;
  CHECK((F::avg_pool2d(x, 2) - F::avg_pool2d(x, {2, 2}, {2, 2})).abs().amax().item<float>() == 0.0f);
  CHECK(nn::MaxPool2d(2)(x).sizes() == Shape{2, 3, 4, 4});
  CHECK(nn::MaxPool2d(nn::PoolOptions({3}).stride(2))(x).sizes() == Shape{2, 3, 4, 4});
  CHECK(nn::AvgPool2d(nn::PoolOptions(3).stride(3))(x).sizes() == Shape{2, 3, 3, 3});
  CHECK(nn::AvgPool2d(3)(x).sizes() == Shape{2, 3, 3, 3});
}

TEST_CASE("conv modules: padding='same', padding modes, PyTorch's init bounds and printing") {
  manual_seed(21);
  nn::Conv2d same(nn::Conv2dOptions(2, 3, {4}).padding_str("same").dilation({2}));
  Tensor x = randn({1, 2, 9, 8});
  CHECK(same(x).sizes() == Shape{1, 3, 9, 8});
  nn::Conv2d refl(nn::Conv2dOptions(2, 3, {3}).padding({1}).padding_mode("reflect"));
  Tensor y = refl(x);
  Tensor manual = nn::F::conv2d(pad(x, {1, 1, 1, 1}, "reflect"), refl->weight, refl->bias);
  CHECK(max_diff(y, manual) < 1e-5);
  nn::Conv2d big(nn::Conv2dOptions(16, 8, {3}));
  double bound = 1.0 / std::sqrt(16.0 * 9);
  CHECK(big->weight.abs().amax().item<double>() <= bound + 1e-7);
  CHECK(big->bias.abs().amax().item<double>() <= bound + 1e-7);
  CHECK(nn::Conv2d(nn::Conv2dOptions(1, 32, {3}).padding({1}))->to_string().rfind(
            "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))", 0) == 0);
  CHECK_THROWS_WITH_AS(nn::Conv2d(nn::Conv2dOptions(3, 4, {3}).groups(2)), doctest::Contains("groups=2 must divide"),
                       Error);
}

TEST_CASE("conv_transpose is the adjoint of conv; output sizes as PyTorch") {
  manual_seed(22);
  for (int64_t s : {1, 2}) {
    for (int64_t groups : {1, 2}) {
      CAPTURE(s);
      CAPTURE(groups);
      Tensor x = randn({2, 4, 6, 5}, DType::F64), w = randn({4, 6 / groups, 3, 3}, DType::F64);
      // <conv_transpose(x), z> = <x, conv(z)>: as a conv weight, w maps 6 channels to 4.
      Tensor y = nn::F::conv_transpose2d(x, w, {}, {s}, {1}, {0}, groups);
      Tensor z = randn(y.sizes(), DType::F64);
      Tensor back = nn::F::conv2d(z, w, {}, {s}, {1}, {1}, groups);
      CHECK(std::abs((y * z).sum().item<double>() - (x * back).sum().item<double>()) < 1e-9);
    }
  }
  Tensor x = randn({1, 2, 5}, DType::F64);
  CHECK(nn::F::conv_transpose1d(x, randn({2, 3, 3}, DType::F64), {}, {2}, {1}, {1}).sizes() == Shape{1, 3, 10});
  nn::ConvTranspose2d ct(nn::ConvTransposeOptions(2, 3, {3}).stride({2}).padding({1}).output_padding({1}));
  CHECK(ct(randn({1, 2, 4, 4})).sizes() == Shape{1, 3, 8, 8});
  // forward(x, output_size): a stride-2 decoder back to the odd size a convolution came from.
  // Sizes 7 and 8 are reachable from 4 (output_padding 0 or 1), spatial or whole-shape,
  // batched or not; the option's output_padding is then ignored.
  Tensor x4 = randn({1, 2, 4, 4});
  CHECK(ct->forward(x4, {7, 8}).sizes() == Shape{1, 3, 7, 8});
  CHECK(ct->forward(x4, {1, 3, 7, 7}).sizes() == Shape{1, 3, 7, 7});
  CHECK(ct->forward(x4.select(0, 0), {3, 8, 7}).sizes() == Shape{3, 8, 7});
  nn::ConvTranspose2d plain(nn::ConvTransposeOptions(2, 3, {3}).stride({2}).padding({1}));
  plain->weight = ct->weight, plain->bias = ct->bias;
  CHECK(ct->forward(x4, {7, 8}).eq(nn::F::conv_transpose2d(x4, ct->weight, ct->bias, {2}, {1}, {0, 1})).all().item<bool>());
  CHECK(plain->forward(x4).eq(ct->forward(x4, {7, 7})).all().item<bool>());
  CHECK_THROWS_WITH_AS(ct->forward(x4, {9, 7}),
                       doctest::Contains("requested an output size of [9, 7], but valid sizes range from [7, 7] to [8, 8]"),
                       Error);
  CHECK_THROWS_WITH_AS(ct->forward(x4, {6, 7}), doctest::Contains("valid sizes range from [7, 7]"), Error);
  CHECK_THROWS_WITH_AS(ct->forward(x4, {7}), doctest::Contains("output_size must have 2 or 4 elements"), Error);
}

TEST_CASE("conv_transpose: output_padding up to the dilation, beyond every window; output sizes below 1 refused") {
  // output_padding may reach the dilation when it exceeds the stride (PyTorch's rule): the
  // elements after the last window get only the bias. Values from PyTorch 1.13
  // (F.conv_transpose1d/2d with the same arguments); these were refused before.
  Tensor x1 = tensor<double>({1, 2}).view({1, 1, 2});
  Tensor y1 = nn::F::conv_transpose1d(x1, tensor<double>({1, 10}).view({1, 1, 2}), tensor<double>({0.5}), {1}, {0}, {1},
                                      1, {2});
  CHECK(y1.sizes() == Shape{1, 1, 5});
  CHECK(y1.eq(tensor<double>({1.5, 2.5, 10.5, 20.5, 0.5}).view({1, 1, 5})).all().item<bool>());
  Tensor x2 = arange(1, 7, DType::F64).view({1, 1, 2, 3});
  Tensor w2 = tensor<double>({1, 10, 100, 1000}).view({1, 1, 2, 2});
  Tensor y2 = nn::F::conv_transpose2d(x2, w2, {}, {1, 2}, {0, 1}, {1, 1}, 1, {2, 2});
  CHECK(y2.eq(tensor<double>({0, 12, 0, 23, 0, 30, 0, 45, 0, 56, 0, 60, 0, 1200, 0, 2300, 0, 3000, 0, 4500, 0, 5600,
                              0, 6000, 0, 0, 0, 0, 0, 0})
                  .view({1, 1, 5, 6}))
            .all()
            .item<bool>());
  // A 1-tap kernel with a padding wider than the output: no element inside a window, the
  // output is the bias alone (PyTorch 1.13: [[[0.5]]] and [[[0.5, 0.5]]]).
  Tensor one = ones({1, 1, 1}, DType::F64), half = tensor<double>({0.5});
  CHECK(nn::F::conv_transpose1d(one, one, half, {1}, {2}, {4}, 1, {5}).eq(0.5).all().item<bool>());
  CHECK(nn::F::conv_transpose1d(one, one, half, {1}, {2}, {4}, 1, {5}).sizes() == Shape{1, 1, 1});
  CHECK(nn::F::conv_transpose1d(ones({1, 1, 2}, DType::F64), one, half, {1}, {3}, {6}, 1, {7}).sizes() == Shape{1, 1, 2});
  manual_seed(23);
  check_grads("conv_transpose2d output_padding beyond the windows",
              [](const std::vector<Tensor>& v) { return nn::F::conv_transpose2d(v[0], v[1], v[2], {1, 2}, {0, 1}, {1, 1}, 1, {2, 2}); },
              {r64({2, 2, 3, 3}), r64({2, 3, 2, 2}), r64({3})});
  // An output size below 1 is refused, as PyTorch ("Output size is too small"); it gave an
  // empty tensor.
  CHECK_THROWS_WITH_AS(nn::F::conv_transpose2d(randn({1, 1, 1, 5}), randn({1, 1, 1, 1}), {}, {3}, {1}),
                       doctest::Contains("is too small"), Error);
}

TEST_CASE("im2col/col2im with the batch inside the columns are the (K, N, L) permutation of the default") {
  manual_seed(37);
  for (int nd : {1, 2, 3}) {
    ops::ConvGeometry g;
    g.nd = nd;
    Shape xs{2, 3};
    for (int d = 0; d < nd; ++d) {
      g.kernel[d] = 3 - d % 2, g.stride[d] = 1 + d % 2, g.dilation[d] = 1 + (d == 1);
      g.pad_before[d] = g.pad_after[d] = d == 0 ? 1 : 0;
      xs.push_back(7 - d);
    }
    Tensor x = randn(xs, DType::F64);
    Tensor a = nn::F::detail::im2col(x, g);  // (N, K, L)
    ops::ConvGeometry gb = g;
    gb.batch_in_columns = true;
    Tensor b = nn::F::detail::im2col(x, gb);  // (K, N, L)
    REQUIRE(b.sizes() == Shape{a.size(1), a.size(0), a.size(2)});
    CHECK(max_diff(b, a.permute({1, 0, 2})) == 0.0);
    std::array<int64_t, 3> spatial{1, 1, 1};
    for (int d = 0; d < nd; ++d) spatial[static_cast<size_t>(d)] = xs[2 + static_cast<size_t>(d)];
    Tensor cols = randn(a.sizes(), DType::F64);
    Tensor ia = nn::F::detail::col2im(cols, g, spatial);
    Tensor ib = nn::F::detail::col2im(cols.permute({1, 0, 2}).contiguous(), gb, spatial);
    CHECK(max_diff(ia, ib) < 1e-12);  // the same sums (in another order: not bit-equal in general)
    CHECK_THROWS_AS(nn::F::detail::col2im(cols.narrow(1, 0, a.size(1) - 1).contiguous(), gb, spatial), Error);
  }
}

TEST_CASE("2x2 max pooling with stride 2 (its own kernel): ties, NaNs, odd sizes, f32 and f64") {
  manual_seed(31);
  for (DType dt : {DType::F32, DType::F64}) {
    // Widths with 1-5 windows and 10 (the f32 kernel takes four windows at a time, then a tail).
    for (Shape s : {Shape{2, 3, 7, 6}, Shape{1, 2, 8, 9}, Shape{1, 1, 2, 2}, Shape{2, 2, 5, 21}, Shape{1, 3, 4, 8}}) {
      // Halves in [-2, 2]: many ties inside a window (the first maximum wins), and a few NaNs
      // (a NaN wins over numbers; of two NaNs, the later one).
      Tensor x = (randn(s, DType::F64) * 2).round() / 2;
      Tensor nan_at = rand(s, DType::F64).lt(0.08);
      x = where(nan_at, std::numeric_limits<double>::quiet_NaN(), x);
      Tensor idx_ref;
      Tensor ref = ref_max_pool2d(x, 2, 2, 0, &idx_ref);
      auto [v, idx] = nn::F::max_pool2d_with_indices(x.to(dt), {2}, {2});
      CHECK(max_diff(idx, idx_ref) == 0.0);
      Tensor vd = v.to(DType::F64);
      CHECK(max_diff(vd.isnan().to(DType::F64), ref.isnan().to(DType::F64)) == 0.0);
      CHECK(max_diff(where(vd.isnan(), 0.0, vd), where(ref.isnan(), 0.0, ref)) == 0.0);
    }
  }
}

TEST_CASE("pooling: no window along a dim is refused, with and without ceil_mode") {
  // PyTorch refuses these ("Output size is too small"). With ceil_mode, a kernel wider than
  // the padded input got one window (C++'s -1 / 2 is 0, PyTorch's div_rtn -1); without, an
  // empty result came back.
  Tensor x = randn({1, 1, 6, 3});
  CHECK_THROWS_WITH_AS(nn::F::max_pool2d(x, {3, 4}, {2, 2}, {0, 1}, {1, 2}, true), doctest::Contains("output size"), Error);
  CHECK_THROWS_WITH_AS(nn::F::max_pool2d(x, {3, 4}, {2, 2}, {0, 1}, {1, 2}, false), doctest::Contains("output size"), Error);
  CHECK_THROWS_WITH_AS(nn::F::avg_pool2d(randn({1, 1, 1, 3}), {4, 2}, {3, 3}, {0, 1}, true), doctest::Contains("output size"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::F::avg_pool2d(randn({1, 3, 2}), {1, 4}, {1, 2}), doctest::Contains("output size"), Error);
  // 3-d average pooling also refuses an input smaller than the kernel where padding or
  // ceil_mode would still give a window (PyTorch's avg_pool3d does; its 1-d/2-d do not).
  CHECK_THROWS_WITH_AS(nn::F::avg_pool3d(randn({1, 1, 2, 1, 2}), {2, 2, 2}, {2, 2, 2}, {1, 0, 0}, true),
                       doctest::Contains("smaller than the kernel: 1 < 2 in spatial dim 1"), Error);
  CHECK(nn::F::avg_pool3d(randn({1, 1, 2, 2, 2}), {2, 2, 2}, {2, 2, 2}, {1, 0, 0}, true).sizes() == Shape{1, 1, 2, 1, 1});
  CHECK(nn::F::avg_pool2d(randn({1, 1, 1, 2}), {2, 2}, {2, 2}, {1, 0}, true).sizes() == Shape{1, 1, 1, 1});
  // The largest kernel that still fits keeps its one window.
  CHECK(nn::F::max_pool2d(x, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true).sizes() == Shape{1, 1, 3, 1});
}

TEST_CASE("pooling matches direct loops (values and PyTorch's indices), ceil_mode, count_include_pad") {
  manual_seed(23);
  Tensor x = randn({2, 3, 7, 6}, DType::F64);
  Tensor idx_ref;
  Tensor ref = ref_max_pool2d(x, 3, 2, 1, &idx_ref);
  auto [v, idx] = nn::F::max_pool2d_with_indices(x, {3}, {2}, {1});
  CHECK(max_diff(v, ref) == 0.0);
  CHECK(max_diff(idx, idx_ref) == 0.0);
  CHECK(nn::F::max_pool2d(x, {2}).sizes() == Shape{2, 3, 3, 3});
  CHECK(nn::F::max_pool2d(x, {2}, {2}, {0}, {1}, true).sizes() == Shape{2, 3, 4, 3});
  // avg with padding: include the padding in the divisor or not.
  Tensor ones4 = ones({1, 1, 4, 4}, DType::F64);
  CHECK(nn::F::avg_pool2d(ones4, {3}, {1}, {1}).select(2, 0).select(2, 0).item<double>() ==
        doctest::Approx(4.0 / 9));
  CHECK(nn::F::avg_pool2d(ones4, {3}, {1}, {1}, false, false).amin().item<double>() == doctest::Approx(1.0));
  // ceil_mode: the overhanging window averages only what it covers.
  Tensor ramp = arange(5).to(DType::F64).reshape({1, 1, 5});
  Tensor a = nn::F::avg_pool1d(ramp, {2}, {2}, {0}, true);
  CHECK(a.sizes() == Shape{1, 1, 3});
  CHECK(a.select(2, 2).item<double>() == doctest::Approx(4.0));
  // Adaptive pooling against direct window loops.
  Tensor img = randn({1, 2, 7, 5}, DType::F64);
  Tensor ad = nn::F::adaptive_avg_pool2d(img, {3, 2}), am = nn::F::adaptive_max_pool2d(img, {3, 2});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      int64_t hs = i * 7 / 3, he = ((i + 1) * 7 + 2) / 3, ws = j * 5 / 2, we = ((j + 1) * 5 + 1) / 2;
      Tensor win = img.narrow(2, hs, he - hs).narrow(3, ws, we - ws);
      CHECK(max_diff(ad.select(2, i).select(2, j), win.mean({2, 3})) < 1e-12);
      CHECK(max_diff(am.select(2, i).select(2, j), win.amax({2, 3})) == 0.0);
    }
  nn::MaxPool2d mp(nn::PoolOptions({2}));
  CHECK(mp->to_string().rfind("MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)", 0) == 0);
}

// The fused batch norm (CPU, f32/f64) against the composite formula it replaced, forward and
// backward, training and evaluation: planes with a vector part and a tail (inner 33), rows of
// one element per channel ((N, C), BatchNorm1d), with and without weight and bias.
TEST_CASE("fused batch_norm matches the composite formula, values and gradients") {
  manual_seed(25);
  for (const Shape& shape : {Shape{5, 7, 3, 11}, Shape{9, 6}, Shape{3, 4, 17}}) {
    for (bool training : {true, false}) {
      for (bool affine : {true, false}) {
        const int64_t c = shape[1];
        Shape dims{0}, bs(shape.size(), 1);
        for (size_t d = 2; d < shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
        bs[1] = c;
        Tensor x = (randn(shape) * 3.0 + 1.0).requires_grad_(true);
        Tensor w = affine ? (randn({c}) + 1.0).requires_grad_(true) : Tensor();
        Tensor b = affine ? randn({c}).requires_grad_(true) : Tensor();
        Tensor rm = randn({c}), rv = rand({c}) + 0.5;
        Tensor rm2 = rm.clone(), rv2 = rv.clone();
        Tensor y = nn::F::batch_norm(x, rm, rv, w, b, training, 0.2, 1e-3);
        // The composite: batch statistics (biased variance) or the running ones.
        Tensor xd = x.detach().requires_grad_(true);
        Tensor wd = affine ? w.detach().requires_grad_(true) : Tensor();
        Tensor bd = affine ? b.detach().requires_grad_(true) : Tensor();
        Tensor mean = training ? xd.mean(dims) : rm2, var = training ? xd.var(dims, 0) : rv2;
        Tensor want = (xd - mean.reshape(bs)) * (var.reshape(bs) + 1e-3).rsqrt();
        if (affine) want = want * wd.reshape(bs) + bd.reshape(bs);
        CHECK(max_diff(y, want) < 1e-4);
        if (training) {
          const double count = static_cast<double>(x.numel() / c);
          Tensor m = xd.detach().mean(dims), v = xd.detach().var(dims, 0) * (count / (count - 1));
          CHECK(max_diff(rm, rm2 * 0.8 + m * 0.2) < 1e-5);
          CHECK(max_diff(rv, rv2 * 0.8 + v * 0.2) < 1e-4);
        } else {
          CHECK(max_diff(rm, rm2) == 0);  // evaluation leaves them alone
        }
        Tensor g = randn(shape);
        y.backward(g);
        want.backward(g);
        CHECK(max_diff(x.grad(), xd.grad()) < 1e-4);
        if (affine) {
          CHECK(max_diff(w.grad(), wd.grad()) < 1e-3);
          CHECK(max_diff(b.grad(), bd.grad()) < 1e-4);
        }
      }
    }
  }
}

// Bad inputs to the fused batch normalisation and depthwise convolution: each refused with
// an ember::Error naming the op and what is wrong.
TEST_CASE("fused batch_norm and depthwise convolution reject bad inputs") {
  Tensor x = randn({4, 3, 5, 5});
  CHECK_THROWS_WITH_AS(nn::F::batch_norm(x, Tensor(), Tensor(), ones({4}), Tensor(), true),
                       doctest::Contains("[batch_norm] weight must hold one value per channel (3)"), Error);
  CHECK_THROWS_WITH_AS(nn::F::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false),
                       doctest::Contains("[batch_norm] evaluation needs running statistics"), Error);
  CHECK_THROWS_WITH_AS(nn::F::batch_norm(randn({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                       doctest::Contains("more than one value per channel"), Error);
  CHECK_THROWS_WITH_AS(nn::F::batch_norm(x, zeros({2}), ones({3}), Tensor(), Tensor(), false),
                       doctest::Contains("[batch_norm] running_mean must hold one value per channel"), Error);
  ops::ConvGeometry g;
  g.kernel = {3, 3, 1}, g.pad_before = {1, 1, 0}, g.pad_after = {1, 1, 0};
  auto dw = [&](const Tensor& in, const Tensor& w) {
    return Tensor::wrap(dispatch<DefaultPolicy>(ops::DepthwiseConv{g}, in.impl(), w.impl(), nullptr));
  };
  CHECK_THROWS_WITH_AS(dw(x, randn({3, 2, 3, 3})), doctest::Contains("[depthwise_conv] expects a weight of shape (3, 1, 3, 3)"),
                       Error);
  CHECK_THROWS_WITH_AS(dw(x, randn({3, 1, 3, 3}, DType::F64)), doctest::Contains("[depthwise_conv] expects a weight"), Error);
  CHECK_THROWS_WITH_AS(dw(x.to(DType::I32), randn({3, 1, 3, 3})), doctest::Contains("[depthwise_conv] supports f32 and f64"),
                       Error);
  CHECK_THROWS_WITH_AS(dw(randn({4, 3, 5}), randn({3, 1, 3, 3})), doctest::Contains("expects an (N, C, H, W) input"), Error);
  g.stride = {1, int64_t{1} << 40, 1};  // the other convolutions' limit: window arithmetic in int64
  CHECK_THROWS_WITH_AS(dw(x, randn({3, 1, 3, 3})), doctest::Contains("must be below 2^31"), Error);
  g.stride = {1, 1, 1};
  CHECK_THROWS_WITH_AS(
      Tensor::wrap(dispatch<DefaultPolicy>(ops::DepthwiseConvBackward{g}, randn({4, 3, 4, 5}).impl(), x.impl(),
                                           randn({3, 1, 3, 3}).impl())
                       .dx),
      doctest::Contains("[depthwise_conv_backward] expects a gradient of shape (4, 3, 5, 5)"), Error);
}

TEST_CASE("batch/group/instance norm, interpolation and pixel shuffle") {
  manual_seed(24);
  nn::BatchNorm2d bn(nn::BatchNormOptions(3));
  Tensor x = randn({4, 3, 2, 2}) * 2.0 + 1.0;
  Tensor y = bn(x);
  Tensor m = x.mean({0, 2, 3}), v = x.var({0, 2, 3}, 0);
  CHECK(max_diff(y.mean({0, 2, 3}), zeros({3})) < 1e-5);
  CHECK(max_diff(bn->running_mean, m * 0.1) < 1e-6);
  CHECK(max_diff(bn->running_var, ones({3}) * 0.9 + x.var({0, 2, 3}, 1) * 0.1) < 1e-5);
  CHECK(bn->num_batches_tracked.item<int64_t>() == 1);
  bn->eval();
  Tensor e = bn(x);
  Tensor expect = (x - bn->running_mean.reshape({1, 3, 1, 1})) / (bn->running_var.reshape({1, 3, 1, 1}) + 1e-5).sqrt();
  CHECK(max_diff(e, expect) < 1e-5);
  (void)v;
  nn::GroupNorm gn(2, 4);
  Tensor z = randn({2, 4, 3});
  Tensor g0 = z.narrow(1, 0, 2);
  Tensor ref0 = (g0 - g0.mean({1, 2}, true)) / (g0.var({1, 2}, 0, true) + 1e-5).sqrt();
  CHECK(max_diff(gn(z).narrow(1, 0, 2), ref0) < 1e-5);
  nn::InstanceNorm2d in(4);
  Tensor q = randn({2, 4, 3, 3});
  CHECK(max_diff(in(q).mean({2, 3}), zeros({2, 4})) < 1e-5);

  Tensor small = arange(6).to(DType::F64).reshape({1, 1, 2, 3});
  Tensor near = nn::F::interpolate(small, {4, 6});
  CHECK(near.select(2, 3).select(2, 5).item<double>() == 5.0);
  CHECK(near.select(2, 1).select(2, 1).item<double>() == 0.0);
  // Bilinear with align_corners: corners are kept, the middle of a row averages its neighbours.
  Tensor bl = nn::F::interpolate(small, {2, 5}, "bilinear", true);
  CHECK(bl.select(2, 0).select(2, 1).item<double>() == doctest::Approx(0.5));
  CHECK(bl.select(2, 1).select(2, 4).item<double>() == doctest::Approx(5.0));
  // align_corners=false: PyTorch's half-pixel rule: out (0,1) of a 2x3 -> 2x6 resize reads x = 0.25.
  Tensor hp = nn::F::interpolate(small, {2, 6}, "bilinear", false);
  CHECK(hp.select(2, 0).select(2, 1).item<double>() == doctest::Approx(0.25));
  Tensor ps = nn::F::pixel_shuffle(arange(8).to(DType::F64).reshape({1, 4, 1, 2}), 2);
  CHECK(ps.sizes() == Shape{1, 1, 2, 4});
  // out[0,0,h*2+i, w*2+j] = in[0, i*2+j, h, w]
  CHECK(ps.select(2, 1).select(2, 3).item<double>() == 7.0);
  CHECK(ps.select(2, 0).select(2, 1).item<double>() == 2.0);
}

TEST_CASE("gradcheck: convolution, pooling, normalisation, resampling") {
  manual_seed(25);
  check_grads("conv2d stride/pad/dilation",
              [](const auto& x) { return nn::F::conv2d(x[0], x[1], x[2], {2}, {1}, {2}); },
              {r64({1, 2, 6, 5}), r64({3, 2, 2, 2}), r64({3})});
  check_grads("conv2d groups", [](const auto& x) { return nn::F::conv2d(x[0], x[1], {}, {1}, {1}, {1}, 2); },
              {r64({2, 4, 4, 4}), r64({2, 2, 3, 3})});
  check_grads("conv1d", [](const auto& x) { return nn::F::conv1d(x[0], x[1], x[2], {1}, {2}); },
              {r64({2, 2, 5}), r64({3, 2, 3}), r64({3})});
  check_grads("conv_transpose2d",
              [](const auto& x) { return nn::F::conv_transpose2d(x[0], x[1], x[2], {2}, {1}, {1}); },
              {r64({1, 2, 3, 3}), r64({2, 3, 3, 3}), r64({3})});
  check_grads("max_pool2d", [](const auto& x) { return nn::F::max_pool2d(x[0], {2}, {1}, {1}); },
              {r64({1, 2, 4, 4})});
  check_grads("avg_pool2d", [](const auto& x) { return nn::F::avg_pool2d(x[0], {3}, {2}, {1}, true, false); },
              {r64({1, 2, 5, 5})});
  check_grads("adaptive_avg_pool2d", [](const auto& x) { return nn::F::adaptive_avg_pool2d(x[0], {2, 3}); },
              {r64({1, 2, 5, 4})});
  check_grads("adaptive_max_pool2d", [](const auto& x) { return nn::F::adaptive_max_pool2d(x[0], {2, 3}); },
              {r64({1, 2, 5, 4})});
  check_grads("batch_norm", [](const auto& x) { return nn::F::batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true); },
              {r64({4, 3, 2}), r64({3}), r64({3})});
  check_grads("batch_norm (N, C)", [](const auto& x) { return nn::F::batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true); },
              {r64({5, 3}), r64({3}), r64({3})});
  Tensor rm = r64({3}).detach(), rv = (r64({3}).abs() + 0.5).detach();  // statistics: no gradient
  check_grads("batch_norm, running statistics",
              [rm, rv](const auto& x) { return nn::F::batch_norm(x[0], rm, rv, x[1], x[2], false); },
              {r64({4, 3, 2}), r64({3}), r64({3})});
  check_grads("group_norm", [](const auto& x) { return nn::F::group_norm(x[0], 2, x[1], x[2]); },
              {r64({2, 4, 3}), r64({4}), r64({4})});
  check_grads("bilinear", [](const auto& x) { return nn::F::interpolate(x[0], {5, 4}, "bilinear"); },
              {r64({1, 2, 3, 3})});
  check_grads("nearest", [](const auto& x) { return nn::F::interpolate(x[0], {5, 4}); }, {r64({1, 2, 3, 3})});
  check_grads("pixel_shuffle", [](const auto& x) { return nn::F::pixel_shuffle(x[0], 2); }, {r64({1, 4, 2, 2})});
  check_grads("linear", [](const auto& x) { return nn::F::interpolate(x[0], {7}, "linear", true); }, {r64({2, 1, 4})});
  check_grads("bicubic", [](const auto& x) { return nn::F::interpolate(x[0], {5, 3}, "bicubic"); },
              {r64({1, 2, 3, 4})});
  check_grads("trilinear", [](const auto& x) { return nn::F::interpolate(x[0], {3, 2, 5}, "trilinear"); },
              {r64({1, 1, 2, 3, 3})});
  check_grads("bilinear antialias",
              [](const auto& x) { return nn::F::interpolate(x[0], {2, 3}, "bilinear", false, {}, true); },
              {r64({1, 1, 5, 7})});
  check_grads("bicubic antialias",
              [](const auto& x) { return nn::F::interpolate(x[0], {3, 2}, "bicubic", false, {}, true); },
              {r64({1, 1, 7, 5})});
  check_grads("nearest-exact 3-D", [](const auto& x) { return nn::F::interpolate(x[0], {3, 4, 1}, "nearest-exact"); },
              {r64({1, 1, 2, 3, 2})});
  check_grads("adaptive_avg_pool3d", [](const auto& x) { return nn::F::adaptive_avg_pool3d(x[0], {2, 1, 3}); },
              {r64({1, 2, 3, 2, 4})});
}

namespace {
/// im2col by its definition, one element at a time: column (c, tap) of window l reads
/// x[n][c][o_d * stride_d - pad_before_d + k_d * dilation_d] (pad_value outside).
Tensor ref_im2col(const Tensor& x, const ops::ConvGeometry& g) {
  Tensor xc = x.contiguous();
  const double* in = xc.data_ptr<double>();
  int nd = g.nd;
  int64_t n = x.size(0), c = x.size(1), taps = g.kernel_numel(), l = 1, plane = 1;
  std::array<int64_t, 3> sz{1, 1, 1}, out{1, 1, 1};
  for (int d = 0; d < nd; ++d) sz[d] = x.size(2 + d), out[d] = g.out_size(d, sz[d]), l *= out[d], plane *= sz[d];
  Tensor cols = zeros({n, c * taps, l}, DType::F64);
  double* col = cols.data_ptr<double>();
  for (int64_t ni = 0; ni < n * c; ++ni)
    for (int64_t tap = 0; tap < taps; ++tap)
      for (int64_t li = 0; li < l; ++li) {
        int64_t t = tap, w = li, src = 0;
        bool inside = true;
        std::array<int64_t, 3> k{}, o{};
        for (int d = nd - 1; d >= 0; --d) k[d] = t % g.kernel[d], t /= g.kernel[d], o[d] = w % out[d], w /= out[d];
        for (int d = 0; d < nd; ++d) {
          int64_t i = o[d] * g.stride[d] - g.pad_before[d] + k[d] * g.dilation[d];
          inside = inside && i >= 0 && i < sz[d];
          src = src * sz[d] + i;
        }
        col[(ni * taps + tap) * l + li] = inside ? in[ni * plane + src] : g.pad_value;
      }
  return cols;
}
}  // namespace

// Stride 2 along the last dim has its own f32 row loops (vector shuffles over pairs of
// elements, a scalar tail): every row width from 1 to 40 with padding on either side, against
// the definition; col2im against the same additions done one element at a time in tap order
// (so the f32 sums must agree bit for bit).
TEST_CASE("im2col and col2im at stride 2 in f32 match their definitions for every row width") {
  manual_seed(43);
  for (int64_t width = 1; width <= 40; ++width)
    for (int64_t kernel = 1; kernel <= 3; ++kernel) {
      CAPTURE(width);
      CAPTURE(kernel);
      ops::ConvGeometry g;
      g.nd = 2;
      g.kernel[0] = 2, g.kernel[1] = kernel;
      g.stride[0] = 1, g.stride[1] = 2;
      g.pad_before[1] = kernel / 2, g.pad_after[1] = (width + kernel) % 2;
      if (g.out_size(1, width) <= 0) continue;
      Tensor x = randn({2, 3, 3, width});
      x.index_put_({0, 0, 0}, -0.0);  // im2col copies a signed zero as it is
      Tensor cols = Tensor::wrap(dispatch<DefaultPolicy>(ops::Im2Col{g}, x.impl()));
      Tensor ref = ref_im2col(x.to(DType::F64), g).to(DType::F32);
      REQUIRE(cols.sizes() == ref.sizes());
      CHECK(max_diff(cols.to(DType::F64), ref.to(DType::F64)) == 0.0);
      // col2im of random columns (one in eight -0.0) against per-element additions.
      Tensor c = randn(cols.sizes());
      c = c.masked_fill(rand(cols.sizes()).lt(0.125), -0.0);
      std::array<int64_t, 3> spatial{3, width, 1};
      Tensor back = Tensor::wrap(dispatch<DefaultPolicy>(ops::Col2Im{g, spatial}, c.impl())).contiguous();
      const int64_t oh = g.out_size(0, 3), ow = g.out_size(1, width), taps = 2 * kernel, l = oh * ow;
      std::vector<float> want(static_cast<size_t>(2 * 3 * 3 * width), 0.f);
      const Tensor cc = c.contiguous();
      const float* cp = cc.data_ptr<float>();
      for (int64_t plane = 0; plane < 6; ++plane)
        for (int64_t tap = 0; tap < taps; ++tap)
          for (int64_t o = 0; o < l; ++o) {
            const int64_t i = o / ow, j = (o % ow) * 2 - g.pad_before[1] + tap % kernel, r = i + tap / kernel;
            if (j < 0 || j >= width) continue;
            want[static_cast<size_t>((plane * 3 + r) * width + j)] += cp[(plane * taps + tap) * l + o];
          }
      const float* got = back.data_ptr<float>();
      bool same_bits = true;
      for (size_t e = 0; e < want.size(); ++e)
        same_bits = same_bits && std::memcmp(&got[e], &want[e], sizeof(float)) == 0;
      CHECK(same_bits);
    }
}

TEST_CASE("im2col, col2im and the max-pool argmax match their definitions on random geometries (1-3 dims)") {
  manual_seed(41);
  uint64_t state = 12345;
  auto pick = [&](int64_t lo, int64_t hi) {  // deterministic, independent of Ember's generator
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  int checked = 0;
  for (int trial = 0; trial < 120; ++trial) {
    ops::ConvGeometry g;
    g.nd = static_cast<int>(pick(1, 3));
    Shape shape{pick(1, 2), pick(1, 3)};
    for (int d = 0; d < g.nd; ++d) {
      g.kernel[d] = pick(1, 4);
      g.stride[d] = pick(1, 3);
      g.dilation[d] = pick(1, 2);
      g.pad_before[d] = pick(0, g.kernel[d] / 2);
      g.pad_after[d] = pick(0, g.kernel[d] / 2 + 1);  // asymmetric, as 'same' and ceil_mode make it
      shape.push_back(pick(g.nd == 3 ? 2 : 3, g.nd == 3 ? 6 : 11));
    }
    bool fits = true;
    for (int d = 0; d < g.nd; ++d) fits = fits && g.out_size(d, shape[2 + d]) > 0;
    if (!fits) continue;
    ++checked;
    CAPTURE(trial);
    Tensor x = randn(shape, DType::F64);
    g.pad_value = trial % 2 ? 0.0 : -1.5;
    Tensor cols = BasicTensor<DefaultPolicy>::wrap(dispatch<DefaultPolicy>(ops::Im2Col{g}, x.impl()));
    Tensor ref = ref_im2col(x, g);
    REQUIRE(cols.sizes() == ref.sizes());
    CHECK(max_diff(cols, ref) == 0.0);
    // A transposed (non-contiguous) input gives the same columns.
    Tensor xt = x.transpose(0, 1).contiguous().transpose(0, 1);
    CHECK(max_diff(BasicTensor<DefaultPolicy>::wrap(dispatch<DefaultPolicy>(ops::Im2Col{g}, xt.impl())), ref) == 0.0);
    // col2im is the adjoint of im2col (with zero padding): <im2col(x), c> == <x, col2im(c)>.
    g.pad_value = 0.0;
    Tensor c = randn(cols.sizes(), DType::F64);
    std::array<int64_t, 3> spatial{1, 1, 1};
    for (int d = 0; d < g.nd; ++d) spatial[d] = shape[2 + d];
    Tensor back = BasicTensor<DefaultPolicy>::wrap(dispatch<DefaultPolicy>(ops::Col2Im{g, spatial}, c.impl()));
    CHECK(back.sizes() == x.sizes());
    CHECK(std::abs((ref_im2col(x, g) * c).sum().item<double>() - (x * back).sum().item<double>()) < 1e-9);
    // Max-pool argmax: the first largest tap that reads the input (padding never wins).
    bool any_empty = false;
    g.pad_value = -std::numeric_limits<double>::infinity();
    Tensor wins = ref_im2col(x, g).reshape({shape[0], shape[1], g.kernel_numel(), -1});
    for (int64_t t = 0; t < wins.size(3); ++t) any_empty = any_empty || std::isinf(wins.select(3, t).amax().item<double>());
    if (any_empty) continue;  // a window of dilated taps all on padding: refused, checked below
    auto [v, i] = dispatch<DefaultPolicy>(ops::MaxPool{g}, x.impl());
    Tensor vals = Tensor::wrap(v), idx = Tensor::wrap(i);
    Tensor ref_vals = std::get<0>(wins.max(2));
    CHECK(max_diff(vals.flatten(2), ref_vals) == 0.0);
    CHECK(max_diff(gather(x.flatten(2), 2, idx.flatten(2)), ref_vals) == 0.0);  // indices point at the maxima
    // The backward kernel routes each gradient to its index: the adjoint of that gather.
    std::array<int64_t, 3> sp{1, 1, 1};
    for (int d = 0; d < g.nd; ++d) sp[d] = shape[2 + d];
    Tensor gy = randn(vals.sizes(), DType::F64);
    Tensor gx = Tensor::wrap(dispatch<DefaultPolicy>(ops::MaxPoolBackward{g.nd, sp}, gy.impl(), idx.impl()));
    Tensor expect_gx = zeros({shape[0], shape[1], x.numel() / (shape[0] * shape[1])}, DType::F64);
    expect_gx = scatter_add(expect_gx, 2, idx.flatten(2), gy.flatten(2));
    CHECK(max_diff(gx.flatten(2), expect_gx) < 1e-12);
  }
  CHECK(checked > 60);
  // Windows that read nothing but padding cannot be max-pooled.
  ops::ConvGeometry g;
  g.nd = 1, g.kernel[0] = 2, g.dilation[0] = 3, g.pad_before[0] = 1, g.pad_after[0] = 2;  // taps at -1 and 2
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::MaxPool{g}, randn({1, 1, 1}).impl()),
                       doctest::Contains("reads only padding"), Error);
  // The backward kernel refuses indices outside the plane and indices that are not int64.
  Tensor gy = randn({1, 1, 2}, DType::F64);
  Tensor bad_idx = from_blob(std::vector<int64_t>{0, 5}.data(), {1, 1, 2}, TensorOptions(DType::I64)).clone();
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::MaxPoolBackward{1, {4, 1, 1}}, gy.impl(), bad_idx.impl()),
                       doctest::Contains("[max_pool_backward] index 5"), Error);
  CHECK_THROWS_WITH_AS(dispatch<DefaultPolicy>(ops::MaxPoolBackward{1, {4, 1, 1}}, gy.impl(),
                                               bad_idx.to(DType::I32).impl()),
                       doctest::Contains("[max_pool_backward] expects int64 indices"), Error);
}

namespace {
std::vector<double> flat(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}
}  // namespace

TEST_CASE("3x3 convolution: a non-finite pixel reaches only its own windows, whichever algorithm is asked for") {
  // Winograd's tile transform turned a whole tile NaN around one inf (0 * inf); such inputs
  // now take another path. Every output whose window misses the inf equals the im2col path's.
  manual_seed(41);
  Tensor x = randn({1, 8, 12, 12}, DType::F64), w = randn({8, 8, 3, 3}, DType::F64);
  x.index_put_({0, 3, 5, 5}, std::numeric_limits<double>::infinity());
  set_conv_algorithm(ConvAlgorithm::Im2col);
  Tensor want = nn::F::conv2d(x, w, {}, {1}, {1});
  for (ConvAlgorithm a : {ConvAlgorithm::Auto, ConvAlgorithm::Winograd, ConvAlgorithm::Winograd2x2,
                          ConvAlgorithm::Winograd4x4}) {
    set_conv_algorithm(a);
    Tensor y = nn::F::conv2d(x, w, {}, {1}, {1});
    Tensor outside = ones({1, 8, 12, 12}, DType::Bool);
    outside.index_put_({Slice(), Slice(), Slice(4, 7), Slice(4, 7)}, false);
    CHECK(y.isnan().logical_and(outside).any().item<bool>() == false);
    CHECK(max_diff(where(outside, y, 0.0), where(outside, want, 0.0)) < 1e-12);
  }
  set_conv_algorithm(ConvAlgorithm::Auto);
}

TEST_CASE("resampling and pooling: PyTorch's source pixels, non-finite values stay local, first-max gradients") {
  const double inf = std::numeric_limits<double>::infinity();
  namespace F = nn::F;
  Tensor cols = arange(5, DType::F64).reshape({1, 1, 1, 5});
  // Nearest with a scale factor: twice the size takes i / 2, the same size copies (PyTorch's
  // special cases), whatever the factor that led there.
  CHECK(flat(F::interpolate(cols, {1, 10}, "nearest", false, {2.1, 2.1})) ==
        std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4});
  // PyTorch 2's 1-d and 3-d kernels keep floor(i / factor) there.
  const std::vector<double> by_factor = {0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5};
  CHECK(flat(F::interpolate(arange(6, DType::F64).reshape({1, 1, 6}), {12}, "nearest", false, {2.1})) == by_factor);
  CHECK(flat(F::interpolate(arange(6, DType::F64).reshape({1, 1, 1, 1, 6}), {1, 1, 12}, "nearest", false, {1, 1, 2.1})) ==
        by_factor);
  CHECK(flat(F::interpolate(arange(2, DType::F64).reshape({1, 1, 2}), {2}, "nearest", false, {1.1})) ==
        std::vector<double>{0, 0});
  Tensor three = arange(3, DType::F64).reshape({1, 1, 1, 3});
  CHECK(flat(F::interpolate(three, {1, 3}, "nearest", false, {1.2, 1.2})) == std::vector<double>{0, 1, 2});
  CHECK(flat(F::interpolate(three, {1, 3}, "bilinear", false, {1.2, 1.2})) == std::vector<double>{0, 1, 2});
  // The source index in float, as PyTorch: 30 -> 22, output 11 reads pixel 15 (in double
  // arithmetic 11 * 30 / 22 lands just below 15).
  Tensor wide = arange(30, DType::F64).reshape({1, 1, 1, 30});
  CHECK(flat(F::interpolate(wide, {1, 22}))[11] == 15.0);
  // An inf reaches only the outputs that read it (a matrix product made every output NaN).
  // The unchanged H dim still weighs its two taps 1 and 0, as PyTorch's kernel: inf * 0 is
  // NaN in the outputs that read the inf.
  Tensor with_inf = tensor<double>({inf, 1.0, 2.0, 3.0}).reshape({1, 1, 1, 4});
  std::vector<double> up = flat(F::interpolate(with_inf, {1, 8}, "bilinear"));
  for (int i = 0; i < 3; ++i) CHECK(std::isnan(up[i]));
  CHECK(std::vector<double>(up.begin() + 3, up.end()) == std::vector<double>{1.25, 1.75, 2.25, 2.75, 3.0});
  CHECK(flat(F::adaptive_avg_pool1d(with_inf.reshape({1, 1, 4}), 2)) == std::vector<double>{inf, 2.5});
  CHECK(flat(F::adaptive_avg_pool2d(with_inf.reshape({1, 2, 2}), {1, 2})) == std::vector<double>{inf, 2.0});
  CHECK_THROWS_WITH_AS(nn::Upsample(nn::F::IntArgs{4, 4}, 2.0), doctest::Contains("not both"), Error);
  CHECK_THROWS_WITH_AS(nn::Upsample(nn::UpsampleOptions().size({4, 4}).recompute_scale_factor(true)),
                       doctest::Contains("recompute_scale_factor is not meaningful with an explicit size"), Error);

  // Antialiased shrinking reads only each output's own window (values from PyTorch 1.13): the
  // window of output 0 holds the inf (weight > 0: inf, not the NaN that a padding tap of weight
  // 0 would add); output 1's window starts at pixel 2.
  Tensor inf_first = cat({tensor<double>({inf}), arange(1, 9, DType::F64)}).reshape({1, 1, 1, 9});
  std::vector<double> aa = flat(F::interpolate(inf_first, {1, 3}, "bilinear", false, {}, true));
  CHECK(aa[0] == inf);
  CHECK(aa[1] == doctest::Approx(4.0));
  CHECK(aa[2] == doctest::Approx(6.75));
  Tensor inf_last = cat({arange(1, 9, DType::F64), tensor<double>({inf})}).reshape({1, 1, 1, 9});
  aa = flat(F::interpolate(inf_last, {1, 3}, "bilinear", false, {}, true));
  CHECK(aa[0] == doctest::Approx(2.25));
  CHECK(aa[1] == doctest::Approx(5.0));
  CHECK(aa[2] == inf);
  Tensor cube = arange(24, DType::F64).reshape({1, 1, 2, 3, 4});
  cube.index_put_({0, 0, 0, 0, 0}, inf);
  CHECK(flat(F::adaptive_avg_pool3d(cube, {1, 2, 2})) == std::vector<double>{inf, 10.5, 12.5, 14.5});

  // Adaptive max pooling over uneven windows: the gradient of a tie goes to the first maximum.
  Tensor z = zeros({1, 1, 3, 3}, DType::F64).requires_grad_();
  F::adaptive_max_pool2d(z, {2, 2}).sum().backward();
  CHECK(flat(z.grad()) == std::vector<double>{1, 1, 0, 1, 1, 0, 0, 0, 0});
  CHECK_THROWS_WITH_AS(F::adaptive_max_pool2d(z, {0, 2}), doctest::Contains("must be positive"), Error);

  // A dilated max pool may pad up to half its effective kernel (PyTorch >= 2): 'same' size.
  Tensor x = randn({1, 2, 7, 7}, DType::F64);
  CHECK(nn::MaxPool2d(nn::PoolOptions(3).stride(1).padding(2).dilation(2))(x).sizes() == Shape{1, 2, 7, 7});
  CHECK_THROWS_WITH_AS(nn::MaxPool2d(nn::PoolOptions(3).stride(1).padding(3).dilation(2))(x),
                       doctest::Contains("half the effective kernel size 5"), Error);

  // PixelShuffle of an unbatched (C r^2, H, W) input.
  Tensor ps = randn({8, 2, 3});
  CHECK(flat(nn::PixelShuffle(2)(ps)) == flat(nn::PixelShuffle(2)(ps.unsqueeze(0)).squeeze(0)));
}

TEST_CASE("EmbeddingBag max: padding-only bags are 0, ties send the gradient to the first row; offsets checks") {
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(4, 2).mode("max").padding_idx(0));
  {
    autograd::NoGradGuard ng;
    bag->weight.copy_(tensor<float>({{0.0f, 0.0f}, {1.0f, 2.0f}, {1.0f, 2.0f}, {0.5f, 3.0f}}));
  }
  Tensor out = bag(tensor<int64_t>({0, 0, 1, 2, 3}), tensor<int64_t>({0, 2}));
  CHECK(flat(out) == std::vector<double>{0, 0, 1, 3});
  out.sum().backward();
  // Row 1 wins feature 0 (tied with row 2: the first), row 3 feature 1.
  CHECK(flat(bag->weight.grad()) == std::vector<double>{0, 0, 1, 0, 0, 0, 0, 1});
  CHECK_THROWS_WITH_AS(bag(tensor<int64_t>({1, 2, 3}), tensor<int64_t>({1, 2})),
                       doctest::Contains("offsets[0] must be 0"), Error);
  nn::EmbeddingBag sum(nn::EmbeddingBagOptions(4, 2).mode("sum"));
  CHECK_THROWS_WITH_AS(sum(tensor<int64_t>({{1, 2}}), Tensor(), ones({2, 1})),
                       doctest::Contains("per_sample_weights must have the input's shape"), Error);
}

TEST_CASE("normalisation: f16 statistics in f32, shape checks, cumulative BatchNorm, unbatched InstanceNorm2d") {
  namespace F = nn::F;
  // Squares of 300 and 600 overflow f16 (max 65504): the statistics are taken in f32.
  Tensor h = tensor<float>({0.0f, 600.0f}).to(DType::F16);
  CHECK(flat(F::layer_norm(h, {2})) == std::vector<double>{-1.0, 1.0});
  std::vector<double> r = flat(F::rms_norm(tensor<float>({300.0f, 400.0f}).to(DType::F16), {2}));
  CHECK(r[0] == doctest::Approx(300.0 / std::sqrt(125000.0)).epsilon(1e-3));
  CHECK(r[1] == doctest::Approx(400.0 / std::sqrt(125000.0)).epsilon(1e-3));
  CHECK(flat(F::group_norm(h.reshape({1, 2, 1}), 1)) == std::vector<double>{-1.0, 1.0});
  Tensor rm = zeros({1}, DType::F16), rv = ones({1}, DType::F16);
  CHECK(flat(F::batch_norm(h.reshape({2, 1}), rm, rv, {}, {}, true)) == std::vector<double>{-1.0, 1.0});
  CHECK(flat(rm) == std::vector<double>{30.0});
  CHECK_THROWS_WITH_AS(F::rms_norm(randn({2, 5}), {4}), doctest::Contains("does not end with the normalized shape"),
                       Error);
  CHECK_THROWS_WITH_AS(F::group_norm(randn({1, 2, 1, 1}), 2), doctest::Contains("more than 1 value per group"), Error);

  // momentum = None: the running statistics are the plain average of the batches so far.
  nn::BatchNorm1d bn(nn::BatchNormOptions(1).momentum(std::nullopt));
  bn(tensor<float>({{1.0f}, {3.0f}}));   // mean 2
  bn(tensor<float>({{5.0f}, {9.0f}}));   // mean 7
  bn(tensor<float>({{0.0f}, {0.0f}}));   // mean 0
  CHECK(bn->running_mean.item<float>() == doctest::Approx(3.0));
  CHECK(bn->to_string().find("momentum=None") != std::string::npos);

  // InstanceNorm2d of an unbatched (C, H, W) input, and of a single pixel (no statistic).
  nn::InstanceNorm2d in(2);
  Tensor img = randn({2, 3, 3});
  CHECK(flat(in(img)) == flat(in(img.unsqueeze(0)).squeeze(0)));
  CHECK_THROWS_WITH_AS(in(randn({1, 2, 1, 1})), doctest::Contains("more than 1 spatial element"), Error);
}

TEST_CASE("interpolate: modes for 1, 2 and 3 spatial dims, Upsample, and what each refuses") {
  namespace F = nn::F;
  // Linear over (N, C, L), as PyTorch: 8 -> 3 reads positions 0.8333, 3.5, 6.1667.
  Tensor ramp = arange(8, DType::F64).reshape({1, 1, 8});
  std::vector<double> lin = flat(F::interpolate(ramp, {3}, "linear"));
  CHECK(lin[0] == doctest::Approx(5.0 / 6));
  CHECK(lin[1] == doctest::Approx(3.5));
  CHECK(lin[2] == doctest::Approx(37.0 / 6));
  // nearest-exact takes the pixel whose centre is nearest, integers included: 6 -> 4 reads 0, 2, 3, 5.
  Tensor bytes = arange(6, DType::U8).reshape({1, 1, 6});
  Tensor ne = F::interpolate(bytes, {4}, "nearest-exact");
  CHECK(ne.dtype() == DType::U8);
  CHECK(flat(ne) == std::vector<double>{0, 2, 3, 5});
  // area is adaptive average pooling of the same rank.
  Tensor vol = randn({2, 3, 4, 5, 6}, DType::F64);
  CHECK(max_diff(F::interpolate(vol, {2, 3, 3}, "area"), F::adaptive_avg_pool3d(vol, {2, 3, 3})) == 0.0);
  CHECK(F::adaptive_avg_pool3d(vol.select(0, 0), {1, 1, 1}).sizes() == Shape{3, 1, 1, 1});
  // A 5-D resize is the three 1-D resizes in turn (trilinear = linear along W, H, then D).
  Tensor tri = F::interpolate(vol, {3, 7, 4}, "trilinear", true);
  Tensor along = F::interpolate(vol.reshape({-1, 1, 6}), {4}, "linear", true).reshape({2, 3, 4, 5, 4});
  along = F::interpolate(along.transpose(3, 4).reshape({-1, 1, 5}), {7}, "linear", true)
              .reshape({2, 3, 4, 4, 7})
              .transpose(3, 4);
  along = F::interpolate(along.permute({0, 1, 3, 4, 2}).reshape({-1, 1, 4}), {3}, "linear", true)
              .reshape({2, 3, 7, 4, 3})
              .permute({0, 1, 4, 2, 3});
  CHECK(max_diff(tri, along) < 1e-12);
  // Upsample: size or factors for any rank; its repr lists several factors.
  nn::Upsample up3(nn::UpsampleOptions().scale_factor({2.0, 1.0, 0.5}).mode(kTrilinear));
  CHECK(up3(vol).sizes() == Shape{2, 3, 8, 5, 3});
  CHECK(up3->extra_repr() == "scale_factor=(2, 1, 0.5), mode='trilinear'");
  CHECK(nn::Upsample(nn::UpsampleOptions().size({9}).mode(kLinear))(ramp).sizes() == Shape{1, 1, 9});
  CHECK(nn::Upsample(nn::UpsampleOptions().size({9}))->extra_repr() == "size=9, mode='nearest'");

  Tensor img = randn({1, 2, 4, 4});
  CHECK_ERROR(F::interpolate(img, {8, 8}, "linear"), "[interpolate]", "mode 'linear' needs 3-D input");
  CHECK_ERROR(F::interpolate(ramp.to(DType::F32), {4}, "bicubic"), "[interpolate]", "needs 4-D input");
  CHECK_ERROR(F::interpolate(img, {8, 8}, "nearest", true), "[interpolate]", "align_corners can only be set");
  CHECK_ERROR(F::interpolate(img, {2, 2}, "area", false, {}, true), "[interpolate]", "antialias is offered");
  CHECK_ERROR(F::interpolate(img, {8, 8}, "lanczos"), "[interpolate]", "got 'lanczos'");
  CHECK_ERROR(F::interpolate(img.to(DType::I32), {8, 8}, "bilinear"), "[interpolate]", "floating-point input");
  CHECK_ERROR(F::interpolate(img.flatten(0, 2), {8, 8}), "[interpolate]", "got shape [8, 4]");
  CHECK_ERROR(F::interpolate(img, {8, 8, 8}), "[interpolate]", "size needs 1 or 2 values, got 3");
  CHECK_ERROR(F::interpolate(img, {8, 0}), "[interpolate]", "must be positive, got 0");
  CHECK_ERROR(F::interpolate(img, {8, 8}, "nearest", false, {2, 2, 2}), "[interpolate]", "1 or 2 scale factors");
  CHECK_ERROR(F::interpolate(img, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2, 2})),
              "[interpolate]", "takes 1 or 2 scale factors, got 3");
  CHECK_ERROR(nn::Upsample(nn::UpsampleOptions().size({4}).mode("cubic")), "[Upsample]", "got 'cubic'");
  // area (adaptive average pooling) and nearest-exact, as PyTorch's Upsample passes them on.
  CHECK(nn::Upsample(nn::UpsampleOptions().size({2}).mode("area"))(arange(4, DType::F64).view({1, 1, 4}))
            .eq(tensor<double>({0.5, 2.5}).view({1, 1, 2}))
            .all()
            .item<bool>());
  CHECK_ERROR(F::adaptive_avg_pool3d(img.flatten(0, 1), {2, 2, 2}), "[adaptive_avg_pool3d]", "got shape [2, 4, 4]");
  CHECK_ERROR(F::adaptive_avg_pool3d(vol, {2, 0, 2}), "[adaptive_avg_pool3d]", "must be positive");
  CHECK_ERROR(F::adaptive_avg_pool3d(zeros({1, 1, 0, 2, 2}), {1, 1, 1}), "[adaptive_avg_pool3d]", "empty spatial dim");
  // A scale factor is 0 (none) or positive and finite, its inverse (the source step) too.
  CHECK_ERROR(F::interpolate(img, {8, 8}, "bilinear", false, {2, -1}), "[interpolate]", "positive and finite, got -1");
  CHECK_ERROR(F::interpolate(img, {8, 8}, "bilinear", false, {NAN}), "[interpolate]", "positive and finite, got nan");
  CHECK_ERROR(F::interpolate(img, {8, 8}, "nearest", false, {1e-300}), "[interpolate]", "got 1e-300");
  CHECK(F::interpolate(img, {8, 8}, "bilinear", false, {0, 2}).sizes() == Shape{1, 2, 8, 8});

  // No elements (an empty batch): empty results of the requested size, at once, whatever the
  // size, and still connected to the input for autograd.
  Tensor none = zeros({0, 2, 4, 4}).requires_grad_();
  Tensor up = F::interpolate(none, {int64_t{1} << 40, 3}, "bilinear");
  CHECK(up.sizes() == Shape{0, 2, int64_t{1} << 40, 3});
  CHECK(up.requires_grad());
  Tensor pooled = F::adaptive_max_pool2d(none, {int64_t{1} << 40, 3});
  CHECK(pooled.sizes() == Shape{0, 2, int64_t{1} << 40, 3});
  pooled.sum().backward();
  CHECK(none.grad().sizes() == Shape{0, 2, 4, 4});
  // Beyond memory: an Error from the allocation, not a loop over 2^40 output cells.
  CHECK_THROWS_AS(F::adaptive_max_pool2d(img, {int64_t{1} << 40, 3}), Error);
  CHECK_ERROR(F::adaptive_max_pool3d(zeros({1, 1, 2, 2, 2}), {int64_t{1} << 40, int64_t{1} << 40, 3}),
              "[adaptive_max_pool3d]", "overflows int64");
}

TEST_CASE("max_unpool inverts max_pool; adaptive max pooling's indices; pixel_unshuffle inverts pixel_shuffle") {
  namespace F = nn::F;
  manual_seed(31);
  // Unpooling a max pool's output puts each maximum back where it was: where the input equals
  // its unpooled self, the unpooled value is the input's, and everything else is 0.
  Tensor x = randn({2, 3, 6, 8});
  Tensor v, i;
  std::tie(v, i) = F::max_pool2d_with_indices(x, {2});
  Tensor u = F::max_unpool2d(v, i, {2});
  CHECK(u.sizes() == x.sizes());
  CHECK(u.ne(0.0).sum().item<int64_t>() == v.numel());
  CHECK(where(u.ne(0.0), u - x, zeros_like(x)).abs().amax().item<float>() == 0.0f);
  CHECK(max_diff(F::max_pool2d(u, {2}), v) == 0.0);
  // The module, the option form and unbatched input agree with the positional form.
  nn::MaxUnpool2d unpool(nn::MaxUnpool2dOptions(2));
  CHECK(max_diff(unpool(v, i), u) == 0.0);
  CHECK(max_diff(F::max_unpool2d(v, i, F::MaxUnpool2dFuncOptions({2, 2}).stride({2})), u) == 0.0);
  CHECK(max_diff(F::max_unpool2d(v.select(0, 1), i.select(0, 1), {2}), u.select(0, 1)) == 0.0);
  CHECK(unpool->to_string().rfind("MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))", 0) == 0);
  // output_size picks among the sizes a pool could have read: a 7-wide input pools to 3 too.
  Tensor v7, i7;
  std::tie(v7, i7) = F::max_pool1d_with_indices(randn({1, 2, 7}), {2});
  CHECK(F::max_unpool1d(v7, i7, {2}).sizes() == Shape{1, 2, 6});
  CHECK(F::max_unpool1d(v7, i7, {2}, {}, {0}, {1, 2, 7}).sizes() == Shape{1, 2, 7});
  CHECK_ERROR(F::max_unpool1d(v7, i7, {2}, {}, {0}, {8}), "[max_unpool1d]", "output size 8", "between 4 and 8");
  CHECK_ERROR(F::max_unpool1d(v7, i7, {2}, {}, {0}, {6, 7}), "[max_unpool1d]", "output_size needs 1 or 3 values");
  // Indices that fit no output position, or that do not match the values, are refused.
  CHECK_ERROR(F::max_unpool2d(v, i + 100, {2}), "[max_unpool2d]", "out of range for an output plane of 48");
  CHECK_ERROR(F::max_unpool2d(v, zeros_like(i) - 1, {2}), "[max_unpool2d]", "index -1 is out of range");
  CHECK_ERROR(F::max_unpool2d(v, i.to(DType::I32), {2}), "[max_unpool2d]", "indices must be i64", "got i32");
  CHECK_ERROR(F::max_unpool2d(v, i.narrow(3, 0, 2), {2}), "[max_unpool2d]", "of the input's shape [2, 3, 3, 4]");
  CHECK_ERROR(F::max_unpool2d(v, Tensor(), {2}), "[max_unpool2d]", "got none");
  CHECK_ERROR(F::max_unpool2d(v.to(DType::I64), i, {2}), "[max_unpool2d]", "floating-point input");
  CHECK_ERROR(F::max_unpool2d(v, i, {0}), "[max_unpool2d]", "kernel");
  CHECK_ERROR(nn::MaxUnpool3d(nn::MaxUnpool3dOptions({2, 2})), "[MaxUnpool3d]", "kernel_size");
  // The gradient reads the unpooled positions back.
  Tensor vg = v.clone().requires_grad_();
  Tensor g = randn(u.sizes());
  F::max_unpool2d(vg, i, {2}).backward(g);
  CHECK(max_diff(vg.grad(), g.flatten(2).gather(2, i.flatten(2)).view(v.sizes())) == 0.0);

  // Adaptive max pooling's indices, on windows of uneven size, name the maxima's positions.
  Tensor y = randn({2, 2, 7, 5});
  auto [av, ai] = F::adaptive_max_pool2d_with_indices(y, {3, 2});
  CHECK(max_diff(av, F::adaptive_max_pool2d(y, {3, 2})) == 0.0);
  CHECK(max_diff(y.flatten(2).gather(2, ai.flatten(2)).view(av.sizes()), av) == 0.0);
  auto [mv, mi] = nn::AdaptiveMaxPool3d(nn::F::IntArgs{2, 1, 3})->forward_with_indices(randn({2, 5, 3, 7}));
  CHECK(mi.sizes() == Shape{2, 2, 1, 3});
  CHECK(mi.dtype() == DType::I64);
  auto [ev, ei] = F::adaptive_max_pool1d_with_indices(zeros({0, 3, 5}), 2);
  CHECK(ev.sizes() == Shape{0, 3, 2});
  CHECK(ei.sizes() == Shape{0, 3, 2});

  // pixel_unshuffle is pixel_shuffle's inverse.
  Tensor img = randn({2, 3, 4, 6});
  Tensor packed = F::pixel_unshuffle(img, 2);
  CHECK(packed.sizes() == Shape{2, 12, 2, 3});
  CHECK(max_diff(F::pixel_shuffle(packed, 2), img) == 0.0);
  CHECK(max_diff(nn::PixelUnshuffle(2)(img.select(0, 0)), packed.select(0, 0)) == 0.0);
  CHECK(max_diff(F::pixel_unshuffle(img, F::PixelUnshuffleFuncOptions(2)), packed) == 0.0);
  CHECK(nn::PixelUnshuffle(2)->to_string().rfind("PixelUnshuffle(downscale_factor=2)", 0) == 0);
  CHECK_ERROR(F::pixel_unshuffle(img, 4), "[pixel_unshuffle]", "got shape [2, 3, 4, 6]");
  CHECK_ERROR(F::pixel_unshuffle(img, 0), "[pixel_unshuffle]", "must be positive");
  // Leading dims beyond the batch are kept, as PyTorch's (*, C, H, W).
  Tensor stack5 = randn({2, 3, 4, 4, 6});
  CHECK(max_diff(F::pixel_unshuffle(stack5, 2).select(1, 2), F::pixel_unshuffle(stack5.select(1, 2), 2)) == 0.0);
  CHECK(max_diff(F::pixel_shuffle(F::pixel_unshuffle(stack5, 2), 2), stack5) == 0.0);
  CHECK_ERROR(F::pixel_shuffle(randn({4, 2}), 2), "[pixel_shuffle]", "3 or more dims");
}

}  // namespace test_conv
