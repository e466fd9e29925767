// Fractional max pooling (nn/functional_fractional_pool.hpp, nn/modules/fractional_pool.hpp):
// PyTorch 1.13's values and indices for fixed samples (python3-torch; the inputs are built the
// same way beside each check), a reference loop over random samples, NaN and ties, gradients
// against finite differences, the modules, and errors.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace test_fractional_pool {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
namespace F = nn::functional;

namespace {

std::vector<double> doubles(const Tensor& t) {
  const Tensor c = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
std::vector<int64_t> longs(const Tensor& t) {
  const Tensor c = t.to(DType::I64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

/// PyTorch's intervals, here in double: the reference for f64 inputs.
std::vector<int64_t> starts(double u, int64_t in, int64_t out, int64_t k) {
  std::vector<int64_t> s(static_cast<size_t>(out));
  const double alpha = out > 1 ? static_cast<double>(in - k) / static_cast<double>(out - 1) : 0;
  for (int64_t i = 0; i + 1 < out; ++i)
    s[static_cast<size_t>(i)] = static_cast<int64_t>((static_cast<double>(i) + u) * alpha) - static_cast<int64_t>(u * alpha);
  s[static_cast<size_t>(out - 1)] = in - k;
  return s;
}

}  // namespace

TEST_CASE("fractional_max_pool2d/3d: PyTorch's values and indices for fixed samples") {
  // x[0, 0, i, j] = (7 i + 3 j) % 11 - 5; x[0, 1] = x[0, 0] flipped along i, halved.
  Tensor x = empty({1, 2, 5, 6}, DType::F64);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const double v = static_cast<double>((i * 7 + j * 3) % 11) - 5.0;
      x.index_put_({0, 0, i, j}, v);
      x.index_put_({0, 1, 4 - i, j}, v * 0.5);
    }
  const Tensor s = tensor<double>({0.25, 0.75, 0.9, 0.1}).reshape({1, 2, 2});
  auto [y, idx] = F::fractional_max_pool2d_with_indices(
      x, F::FractionalMaxPool2dFuncOptions({2, 2}).output_size(F::IntArgs{3, 4})._random_samples(s));
  CHECK(y.sizes() == Shape({1, 2, 3, 4}));
  CHECK(doubles(y) == std::vector<double>{5.0, 5.0, 4.0, 3.0, 5.0, 5.0, 3.0, 3.0, 5.0, 4.0, 3.0, 5.0,
                                          2.5, 2.0, 1.5, 2.5, 2.5, 2.0, 2.0, 1.0, 2.5, 2.5, 2.0, 1.5});
  CHECK(longs(idx) == std::vector<int64_t>{7, 7, 3, 10, 7, 7, 10, 10, 18, 25, 21, 29,
                                           6, 1, 9, 5, 6, 14, 14, 17, 19, 19, 27, 22});
  // 3-d, f32 (the intervals in f32, as PyTorch's), output_ratio 0.5: x = sin(arange(240)).
  const Tensor x3 = arange(240, DType::F32).reshape({1, 2, 4, 5, 6}).sin();
  const Tensor s3 = tensor<float>({0.3f, 0.6f, 0.1f, 0.95f, 0.05f, 0.5f}).reshape({1, 2, 3});
  auto [y3, i3] = F::fractional_max_pool3d_with_indices(
      x3, F::FractionalMaxPool3dFuncOptions({2, 3, 2}).output_ratio(F::DoubleArgs{0.5, 0.5, 0.5})._random_samples(s3));
  CHECK(y3.sizes() == Shape({1, 2, 2, 2, 3}));
  CHECK(longs(i3) == std::vector<int64_t>{1, 33, 46, 13, 14, 58, 102, 63, 77, 102, 116, 77,
                                          1, 45, 46, 13, 45, 58, 102, 63, 70, 114, 75, 89});
  CHECK(y3.equal(x3.flatten(2).gather(2, i3.flatten(2)).reshape(y3.sizes())));
  // f32 intervals differ from f64 ones here (PyTorch 1.13: window 17 starts at 18 in f32, at
  // 17 in f64): x = arange(25) along W, H = 2, kernel 2, output (1, 22), u_w = 0x3ede9bd2.
  const Tensor xw = arange(25, DType::F32).repeat({2, 1}).reshape({1, 1, 2, 25});
  const Tensor sw = tensor<float>({0.43478256464004517f, 0.0f}).reshape({1, 1, 2});
  const auto fo = F::FractionalMaxPool2dFuncOptions(2).output_size(F::IntArgs{1, 22});
  const std::vector<int64_t> f32_want{1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23, 24};
  const std::vector<int64_t> f64_want{1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 21, 22, 23, 24};
  CHECK(longs(std::get<1>(F::fractional_max_pool2d_with_indices(xw, F::FractionalMaxPool2dFuncOptions(fo)._random_samples(sw)))) ==
        f32_want);
  CHECK(longs(std::get<1>(F::fractional_max_pool2d_with_indices(
            xw.to(DType::F64), F::FractionalMaxPool2dFuncOptions(fo)._random_samples(sw.to(DType::F64))))) == f64_want);
}

TEST_CASE("fractional_max_pool2d: a reference loop over random samples; NaN, ties, unbatched, the module") {
  manual_seed(21);
  const Tensor x = randn({3, 2, 9, 11}, DType::F64);
  const Tensor s = rand({3, 2, 2}, DType::F64);
  auto [y, idx] = F::fractional_max_pool2d_with_indices(
      x, F::FractionalMaxPool2dFuncOptions({2, 3}).output_size(F::IntArgs{4, 5})._random_samples(s));
  const std::vector<double> xv = doubles(x), yv = doubles(y), sv = doubles(s);
  const std::vector<int64_t> iv = longs(idx);
  bool all = true;
  for (int64_t p = 0; p < 6; ++p) {
    const std::vector<int64_t> sw = starts(sv[static_cast<size_t>(p * 2)], 11, 5, 3);
    const std::vector<int64_t> sh = starts(sv[static_cast<size_t>(p * 2 + 1)], 9, 4, 2);
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 5; ++w) {
        int64_t best = -1;
        for (int64_t i = sh[static_cast<size_t>(h)]; i < sh[static_cast<size_t>(h)] + 2; ++i)
          for (int64_t j = sw[static_cast<size_t>(w)]; j < sw[static_cast<size_t>(w)] + 3; ++j)
            if (best < 0 || xv[static_cast<size_t>(p * 99 + i * 11 + j)] > xv[static_cast<size_t>(p * 99 + best)])
              best = i * 11 + j;
        const size_t o = static_cast<size_t>(p * 20 + h * 5 + w);
        all = all && iv[o] == best && yv[o] == xv[static_cast<size_t>(p * 99 + best)];
      }
  }
  CHECK(all);
  // Ties: the first; NaN: the last NaN wins (PyTorch's).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto one = [](const Tensor& t) {
    return F::fractional_max_pool2d_with_indices(t, F::FractionalMaxPool2dFuncOptions(2).output_size(F::IntArgs{1}));
  };
  CHECK(std::get<1>(one(tensor<double>({3, 3, 3, 1}).reshape({1, 1, 2, 2}))).item<int64_t>() == 0);
  CHECK(std::get<1>(one(tensor<double>({nan, 1, 2, nan}).reshape({1, 1, 2, 2}))).item<int64_t>() == 3);
  const auto [nan_v, nan_i] = one(tensor<double>({nan, 1, nan, 4}).reshape({1, 1, 2, 2}));
  CHECK(std::isnan(nan_v.item<double>()));
  CHECK(nan_i.item<int64_t>() == 2);
  // Unbatched (C, H, W), samples (1, C, 2).
  const Tensor y0 = F::fractional_max_pool2d(
      x[0], F::FractionalMaxPool2dFuncOptions({2, 3}).output_size(F::IntArgs{4, 5})._random_samples(s.narrow(0, 0, 1)));
  CHECK(y0.equal(y[0]));
  // Drawn samples: seeded, and every window inside the input (the output_ratio form).
  manual_seed(5);
  const auto [a, ai] = F::fractional_max_pool2d_with_indices(x, F::FractionalMaxPool2dFuncOptions(3).output_ratio(0.5));
  manual_seed(5);
  CHECK(a.equal(F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(3).output_ratio(0.5))));
  CHECK(a.sizes() == Shape({3, 2, 4, 5}));
  CHECK(ai.min().item<int64_t>() >= 0);
  CHECK(ai.max().item<int64_t>() < 99);
  CHECK(a.equal(x.flatten(2).gather(2, ai.flatten(2)).reshape(a.sizes())));
  // As PyTorch's functional form: output_size wins over output_ratio; empty batches, channels
  // and outputs give empty results.
  CHECK(F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(2).output_size(F::IntArgs{3}).output_ratio(0.5))
            .sizes() == Shape({3, 2, 3, 3}));
  CHECK(F::fractional_max_pool2d(randn({0, 1, 4, 4}), F::FractionalMaxPool2dFuncOptions(2).output_size(F::IntArgs{2}))
            .sizes() == Shape({0, 1, 2, 2}));
  CHECK(F::fractional_max_pool2d(randn({0, 4, 4}), F::FractionalMaxPool2dFuncOptions(2).output_size(F::IntArgs{2}))
            .sizes() == Shape({0, 2, 2}));
  CHECK(F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(2).output_ratio(0.05)).sizes() ==
        Shape({3, 2, 0, 0}));
  // The module: fixed samples give the functional form's values; f32 too.
  nn::FractionalMaxPool2d pool(nn::FractionalMaxPool2dOptions({2, 3}).output_size(F::IntArgs{4, 5})._random_samples(s));
  CHECK(pool(x).equal(y));
  CHECK(std::get<1>(pool->forward_with_indices(x)).equal(idx));
  // The samples are a buffer: listed, and moved with the module (they must have the input's dtype).
  CHECK(pool->buffers().size() == 1);
  CHECK_THROWS_WITH_AS(pool(x.to(DType::F32)), doctest::Contains("of the input's dtype f32"), Error);
  pool->to(DType::F32);
  CHECK(pool(x.to(DType::F32)).equal(F::fractional_max_pool2d(
      x.to(DType::F32), F::FractionalMaxPool2dFuncOptions({2, 3}).output_size(F::IntArgs{4, 5})._random_samples(s.to(DType::F32)))));
  nn::FractionalMaxPool3d pool3(nn::FractionalMaxPool3dOptions(2).output_size(F::IntArgs{2}));
  CHECK(pool3(randn({1, 2, 4, 4, 4})).sizes() == Shape({1, 2, 2, 2, 2}));
}

TEST_CASE("fractional_max_pool2d/3d: gradients to each window's winner, against finite differences") {
  manual_seed(8);
  // Distinct values, away from ties (finite differences must not move a window's winner).
  const Tensor x = (randperm(2 * 7 * 8, DType::F64).reshape({1, 2, 7, 8}) * 0.1).requires_grad_(true);
  const Tensor s = rand({1, 2, 2}, DType::F64);
  std::string why;
  auto f = [&](const std::vector<Tensor>& v) {
    return F::fractional_max_pool2d(v[0], F::FractionalMaxPool2dFuncOptions(3).output_size(F::IntArgs{3, 4})._random_samples(s));
  };
  CHECK_MESSAGE(autograd::gradcheck(f, {x}, {}, &why), why);
  CHECK_MESSAGE(autograd::gradgradcheck(f, {x}, {}, &why), why);
  const Tensor x3 = (randperm(2 * 5 * 5 * 5, DType::F64).reshape({2, 5, 5, 5}) * 0.1).requires_grad_(true);
  const Tensor s3 = rand({1, 2, 3}, DType::F64);
  auto f3 = [&](const std::vector<Tensor>& v) {
    return F::fractional_max_pool3d(v[0], F::FractionalMaxPool3dFuncOptions({2, 2, 3}).output_size(F::IntArgs{3, 3, 2})._random_samples(s3));
  };
  CHECK_MESSAGE(autograd::gradcheck(f3, {x3}, {}, &why), why);
  // Overlapping windows: a winner of two windows gets both gradients.
  const Tensor ones_in = tensor<double>({0, 0, 0, 0, 9, 0, 0, 0, 0}).reshape({1, 1, 3, 3}).requires_grad_(true);
  F::fractional_max_pool2d(ones_in, F::FractionalMaxPool2dFuncOptions(2).output_size(F::IntArgs{2}))
      .sum()
      .backward();
  CHECK(ones_in.grad().select(2, 1).select(2, 1).item<double>() == 4.0);
}

TEST_CASE("fractional_max_pool2d/3d: another policy's tensors (InferencePolicy: no layers)") {
  const BasicTensor<InferencePolicy> x = randn<InferencePolicy>({1, 2, 5, 5});
  const auto y = F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(2).output_size(F::IntArgs{3}));
  CHECK(y.sizes() == Shape({1, 2, 3, 3}));
  CHECK(F::fractional_max_pool3d(randn<InferencePolicy>({2, 5, 5, 5}), F::FractionalMaxPool3dFuncOptions(2).output_ratio(0.5))
            .sizes() == Shape({2, 2, 2, 2}));
}

TEST_CASE("fractional_max_pool2d/3d: bad input is an ember::Error naming the op and the values") {
  const Tensor x = randn({1, 1, 10, 7});
  using O = F::FractionalMaxPool2dFuncOptions;
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(x, O(4).output_size(F::IntArgs{8, 5})),
                       doctest::Contains("[fractional_max_pool2d] kernel size 4 is too large for 8 outputs from input size 10 in dim 0"),
                       Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(x, O(2)), doctest::Contains("needs output_size or output_ratio"), Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(x, O(2).output_ratio(-0.5)),
                       doctest::Contains("output_ratio must be finite and >= 0, got -0.5"), Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(x, O(2).output_ratio(1.0)), doctest::Contains("too large"), Error);
  // 3-d takes PyTorch 1.13's strict bound: output + kernel - 1 < input.
  CHECK_THROWS_WITH_AS(F::fractional_max_pool3d(randn({1, 1, 4, 4, 4}), F::FractionalMaxPool3dFuncOptions(2).output_size(F::IntArgs{3})),
                       doctest::Contains("needs output + kernel - 1 < input"), Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(randn({10, 7}), O(2).output_size(F::IntArgs{2})),
                       doctest::Contains("expects a 3-d or 4-d (batched) input, got shape [10, 7]"), Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(ones({1, 1, 4, 4}, DType::I64), O(2).output_size(F::IntArgs{2})),
                       doctest::Contains("expects a floating input, got i64"), Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(x, O(2).output_size(F::IntArgs{2})._random_samples(rand({1, 1, 3}))),
                       doctest::Contains("_random_samples must be a tensor of shape [1, 1, 2]"), Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(x, O(2).output_size(F::IntArgs{2})._random_samples(full({1, 1, 2}, 1.5))),
                       doctest::Contains("_random_samples must be in [0, 1], got 1.5"), Error);
  CHECK(F::fractional_max_pool2d(x, O(2).output_size(F::IntArgs{2})._random_samples(full({1, 1, 2}, 1.0))).sizes() ==
        Shape({1, 1, 2, 2}));
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(x, O({2, 2, 2}).output_size(F::IntArgs{2})),
                       doctest::Contains("kernel_size must have 1 or 2 values, got 3"), Error);
  CHECK_THROWS_WITH_AS(F::fractional_max_pool2d(randn({1, 1, 0, 4}), O(2).output_size(F::IntArgs{2})),
                       doctest::Contains("expects non-empty spatial dims"), Error);
  CHECK_THROWS_WITH_AS(nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2).output_size(F::IntArgs{2}).output_ratio(0.5)),
                       doctest::Contains("[FractionalMaxPool2d] needs exactly one of output_size and output_ratio"), Error);
  CHECK_THROWS_WITH_AS(nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2).output_ratio(0.0)),
                       doctest::Contains("[FractionalMaxPool2d] output_ratio must be in (0, 1), got 0"), Error);
}

}  // namespace test_fractional_pool
