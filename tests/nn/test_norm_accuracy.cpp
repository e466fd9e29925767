// The f32 normalisations against the same computation in f64, where f32 arithmetic cancels
// (Note [Normalisation in f64] in kernels_cpu/layer_norm.cpp): rows whose spread is small next
// to their mean, and output gradients that are large next to their spread. Computed in f32,
// both lose most digits (errors of 1e-3 and more here). Ember's layer normalisation (and group
// normalisation, through it) keeps f64 statistics and differentiates in f64, so each f32
// gradient is the f64 one rounded; batch normalisation shifts its sums. The test name contains "layer_norm" so that the baseline and
// AVX2 runs (tests/nn/meson.build) take it too.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace test_norm_accuracy {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

/// How far an f32 result is from the f64 one: per element, |got - want| / (|want| + floor)
/// with floor = 1e-6 * max |want| (elements that cancel to ~0 divide by that), or in all,
/// max |got - want| / max |want|.
enum class Measure { PerElement, Overall };

double relative_error(const Tensor& got, const Tensor& want, Measure how) {
  REQUIRE(got.dtype() == DType::F32);
  REQUIRE(want.dtype() == DType::F64);
  const Tensor diff = (got.to(DType::F64) - want).abs();
  const double scale = want.abs().amax().item<double>();
  if (how == Measure::Overall) return diff.amax().item<double>() / scale;
  return (diff / (want.abs() + 1e-6 * scale)).amax().item<double>();
}

double max_abs(const Tensor& t) { return t.abs().amax().item<double>(); }

/// Values around `mean` with a spread of `spread`: f32 numbers (the f64 runs take the same).
Tensor offset_values(const Shape& shape, double mean, double spread) {
  return (randn(shape, DType::F64) * spread + mean).to(DType::F32);
}

/// Runs `f` on f32 inputs and on the same values in f64; checks the output (measured by
/// `out_how`) and the input gradients (for the output gradient dy, by `how`) within `tol`.
void check_against_f64(const char* what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                       const std::vector<Tensor>& ins32, const Tensor& dy32, Measure out_how, Measure how, double tol) {
  std::vector<Tensor> a, b;
  for (const Tensor& t : ins32) {
    a.push_back(t.detach().clone().requires_grad_());
    b.push_back(t.detach().to(DType::F64).requires_grad_());
  }
  Tensor y32 = f(a), y64 = f(b);
  const std::string name(what);
  CHECK_MESSAGE(relative_error(y32, y64, out_how) < tol, (name + " output"));
  y32.backward(dy32);
  y64.backward(dy32.to(DType::F64));
  for (size_t i = 0; i < a.size(); ++i)
    CHECK_MESSAGE(relative_error(a[i].grad(), b[i].grad(), how) < tol,
                  (name + " gradient " + std::to_string(i)));
}

}  // namespace

TEST_CASE("normalisation in f64: f32 layer_norm, group_norm, batch_norm and instance_norm near the f64 result where f32 cancels") {
  manual_seed(73);
  // About two roundings of f32, per element where the result is the f64 one rounded (layer
  // norm's gradients, its output without an affine part), else of the largest value. The f32
  // arithmetic these kernels replaced was off by 1e-3 (outputs) to 3x (gradients), relative to
  // the largest value, on these inputs.
  const double tol = 2.5e-7;
  // Rows around 1000 with a spread of 0.01 (37 columns: vector bodies and scalar tails), an
  // output gradient around 50 with a spread of 0.1, and a weight around 3.
  const Tensor x = offset_values({6, 37}, 1000, 0.01), dy = offset_values({6, 37}, 50, 0.1);
  const Tensor w = offset_values({37}, 3, 0.5), b = offset_values({37}, 0, 1);
  check_against_f64("layer_norm", [](const std::vector<Tensor>& v) { return nn::F::layer_norm(v[0], {37}, v[1], v[2]); },
                    {x, w, b}, dy, Measure::Overall, Measure::PerElement, tol);
  check_against_f64("layer_norm without parameters",
                    [](const std::vector<Tensor>& v) { return nn::F::layer_norm(v[0], {37}); }, {x}, dy,
                    Measure::PerElement, Measure::PerElement, tol);

  // group_norm normalises through layer_norm's kernel.
  const Tensor img = offset_values({2, 6, 3, 5}, -500, 0.02), dimg = offset_values({2, 6, 3, 5}, 20, 0.05);
  check_against_f64("group_norm", [](const std::vector<Tensor>& v) { return nn::F::group_norm(v[0], 3); }, {img}, dimg,
                    Measure::PerElement, Measure::PerElement, tol);

  // batch_norm computes in f32 with shifted sums (Note [Shifted sums in batch normalisation]):
  // within f32 roundings of the largest value (the old kernel's weight gradient was off by 3x
  // its size here).
  const Tensor wc = offset_values({6}, 2, 0.5), bc = offset_values({6}, 0, 1);
  for (bool training : {true, false}) {
    check_against_f64(
        training ? "batch_norm (training)" : "batch_norm (evaluation)",
        [training](const std::vector<Tensor>& v) {
          const DType dt = v[0].dtype();
          Tensor rm = full({6}, -500.0, dt), rv = full({6}, 1.0 / 4096, dt);  // exact in f32
          return nn::F::batch_norm(v[0], rm, rv, v[1], v[2], training, 0.1, 1e-5);
        },
        {img, wc, bc}, dimg, Measure::Overall, Measure::Overall, tol);
  }
  // instance_norm with weights: batch normalisation of the (1, N * C, spatial) view, as
  // PyTorch's, so the weight multiplies inside the fused backward. As y = norm(x) * w + b in
  // separate ops, dy * w was rounded to f32 before the backward's cancellation: off by 5e-6 of
  // the largest gradient here.
  check_against_f64(
      "instance_norm",
      [](const std::vector<Tensor>& v) { return nn::F::instance_norm(v[0], v[1], v[2]); },
      {img, wc, bc}, dimg, Measure::Overall, Measure::Overall, tol);

  // An output gradient with a large offset (300, spread 10) over ordinary values: the weight
  // gradient sum(dy * xhat) cancels to a few units from terms of ~600. Its sum(dy - p) *
  // sum(x - mean) part is 0 by the mean's definition; computed from f32 sums it added their
  // rounding times 300.
  const Tensor plain = offset_values({3, 4, 7, 5}, 0.5, 2), doffset = offset_values({3, 4, 7, 5}, 300, 10);
  check_against_f64(
      "batch_norm (a gradient with a large offset)",
      [](const std::vector<Tensor>& v) {
        Tensor none;
        return nn::F::batch_norm(v[0], none, none, v[1], v[2], true, 0.1, 1e-5);
      },
      {plain, offset_values({4}, 1, 0.3), offset_values({4}, 0, 1)}, doffset, Measure::Overall, Measure::Overall, tol);

  // Ordinary values (mean 3, spread 1; 196-value planes): no worse than plain f32 sums.
  const Tensor big = offset_values({4, 5, 14, 14}, 3, 1), dbig = offset_values({4, 5, 14, 14}, 0, 1);
  check_against_f64(
      "batch_norm (ordinary values)",
      [](const std::vector<Tensor>& v) {
        const DType dt = v[0].dtype();
        Tensor rm = zeros({5}, dt), rv = ones({5}, dt);
        return nn::F::batch_norm(v[0], rm, rv, v[1], v[2], true, 0.1, 1e-5);
      },
      {big, offset_values({5}, 1, 0.3), offset_values({5}, 0, 1)}, dbig, Measure::Overall, Measure::Overall, 2e-6);

  // Evaluation: the statistics are constants, so an infinite input still has the finite
  // gradient dy * weight * rstd (a (x - mean) * 0 term made it NaN).
  Tensor xi = tensor<float>({{1.0f, std::numeric_limits<float>::infinity()}, {2.0f, 3.0f}}).requires_grad_();
  Tensor rm = zeros({2}), rv = ones({2});
  nn::F::batch_norm(xi, rm, rv, Tensor(), Tensor(), false).sum().backward();
  CHECK(xi.grad().isfinite().all().item<bool>());

  // group_norm's double backward goes through layer_norm's recorded formula.
  auto r = [](Shape s) { return randn(s, DType::F64).requires_grad_(); };
  std::string why;
  auto gn = [](const std::vector<Tensor>& v) { return nn::F::group_norm(v[0], 2, v[1], v[2]); };
  CHECK_MESSAGE(autograd::gradgradcheck<DefaultPolicy>(gn, {r({2, 4, 3}), r({4}), r({4})}, {}, &why), why);
}

TEST_CASE("layer_norm, group_norm and batch_norm edges: non-finite values, long planes, negative eps, no samples") {
  manual_seed(5);
  const double inf = std::numeric_limits<double>::infinity();
  // Evaluation with an infinite x: dw = sum(dy * (x - mean)) * rstd is inf, as PyTorch's.
  Tensor x = tensor<float>({{1.0f}, {std::numeric_limits<float>::infinity()}, {2.0f}}).requires_grad_();
  Tensor w = ones({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  Tensor rm = zeros({1}), rv = ones({1});
  nn::F::batch_norm(x, rm, rv, w, b, false).sum().backward();
  CHECK(w.grad().item<double>() == inf);
  CHECK(x.grad().isfinite().all().item<bool>());
  // Training on a NaN: the running variance and mean become NaN (PyTorch's).
  Tensor xn = tensor<float>({{1.0f, 2.0f}, {std::numeric_limits<float>::quiet_NaN(), 3.0f}, {2.0f, 5.0f}});
  Tensor rm2 = zeros({2}), rv2 = ones({2});
  nn::F::batch_norm(xn, rm2, rv2, Tensor(), Tensor(), true);
  CHECK(std::isnan(rv2[0].item<double>()));
  CHECK(std::isnan(rm2[0].item<double>()));
  CHECK(std::isfinite(rv2[1].item<double>()));
  // Evaluation with an infinite running mean: y = (x - inf) * rstd = -inf.
  Tensor rm3 = full({1}, inf), rv3 = ones({1});
  CHECK(nn::F::batch_norm(tensor<float>({{1.0f}, {2.0f}}), rm3, rv3, Tensor(), Tensor(), false)
            .eq(-inf)
            .all()
            .item<bool>());

  // Training with one infinite dy: the weight and bias gradients are inf (PyTorch's), not a
  // NaN from the sums' small corrections.
  Tensor xt = tensor<float>({{0.1f, 0.2f, 0.7f}, {0.4f, 0.5f, 0.6f}}).reshape({2, 1, 3}).requires_grad_();
  Tensor wt = ones({1}).requires_grad_(), bt = zeros({1}).requires_grad_();
  Tensor dyt = ones({2, 1, 3});
  dyt.index_put_({0, 0, 2}, inf);
  Tensor rm4 = zeros({1}), rv4 = ones({1});
  nn::F::batch_norm(xt, rm4, rv4, wt, bt, true).backward(dyt);
  CHECK(wt.grad().item<double>() == inf);
  CHECK(bt.grad().item<double>() == inf);
  // Training with an infinite weight: dx = (dy - mean(dy) - (x - mean) * k) * inf, signed
  // infinities as PyTorch's ([inf, -inf, -inf, inf, inf, inf]), not NaN from folded constants.
  Tensor xw = tensor<float>({{0.1f, 0.2f, 0.7f}, {0.4f, 0.5f, 0.6f}}).reshape({2, 1, 3}).requires_grad_();
  Tensor ww = full({1}, inf).requires_grad_(), bw = zeros({1}).requires_grad_();
  Tensor rm6 = zeros({1}), rv6 = ones({1});
  nn::F::batch_norm(xw, rm6, rv6, ww, bw, true).backward(tensor<float>({{1.f, -2.f, 0.5f}, {0.3f, 1.f, 1.f}}).reshape({2, 1, 3}));
  const float finf = std::numeric_limits<float>::infinity();
  CHECK(xw.grad().flatten().eq(tensor<float>({finf, -finf, -finf, finf, finf, finf})).all().item<bool>());
  // A constant channel with eps = 0: rstd is 0, so y = bias and the gradients of x and the
  // weight are 0 (PyTorch's InvStd), not NaN.
  Tensor xc = full({2, 1, 3}, 2.0).requires_grad_(), wc0 = full({1}, 1.5).requires_grad_();
  Tensor bc0 = full({1}, 0.25).requires_grad_(), rm5 = zeros({1}), rv5 = ones({1});
  Tensor yc = nn::F::batch_norm(xc, rm5, rv5, wc0, bc0, true, 0.1, 0.0);
  CHECK(yc.eq(0.25).all().item<bool>());
  yc.backward(randn({2, 1, 3}));
  CHECK(xc.grad().eq(0).all().item<bool>());
  CHECK(wc0.grad().item<double>() == 0);

  // Long planes (32768 values): the sums stay near f64's (their T lanes are added up in f64
  // every 256 values).
  manual_seed(6);
  const Tensor big = (randn({2, 2, 128, 256}) + 2.0), dbig = randn({2, 2, 128, 256}) + 0.5;
  Tensor xa = big.clone().requires_grad_(), wa = full({2}, 1.5).requires_grad_(), ba = zeros({2}).requires_grad_();
  Tensor xb = big.to(DType::F64).requires_grad_(), wb = full({2}, 1.5, DType::F64).requires_grad_(),
         bb = zeros({2}, DType::F64).requires_grad_();
  Tensor r1 = zeros({2}), v1 = ones({2}), r2 = zeros({2}, DType::F64), v2 = ones({2}, DType::F64);
  nn::F::batch_norm(xa, r1, v1, wa, ba, true).backward(dbig);
  nn::F::batch_norm(xb, r2, v2, wb, bb, true).backward(dbig.to(DType::F64));
  // The weight gradient sums products of both signs: its error is measured against the sum
  // of their magnitudes, sum |dy * xhat|, the scale of an f32 sum's rounding.
  const Tensor x64 = big.to(DType::F64), d64 = dbig.to(DType::F64);
  auto [var64, mean64] = x64.var_mean({0, 2, 3}, 0, true);
  const Tensor terms = (d64 * (x64 - mean64) * (var64 + 1e-5).rsqrt()).abs().sum({0, 2, 3});
  const double dw_err = ((wa.grad().to(DType::F64) - wb.grad()).abs() / terms).amax().item<double>();
  // (Without the f64 sums of runs: 1.2e-8 to 2.3e-8, and the variance 1.5e-7 with SSE2.)
  CHECK(dw_err < 1e-8);
  CHECK(relative_error(ba.grad(), bb.grad(), Measure::PerElement) < 1e-6);
  CHECK(relative_error(r1, r2, Measure::PerElement) < 1e-6);
  CHECK(relative_error(v1, v2, Measure::PerElement) < 1e-7);

  // group_norm: a negative eps (PyTorch accepts it) takes the composite path; no samples give
  // an empty result.
  Tensor g = randn({2, 4, 5}) * 3.0;
  Tensor yg = nn::F::group_norm(g, 2, {}, {}, -1e-6);
  CHECK(yg.isfinite().all().item<bool>());
  Tensor gv = g.reshape({2, 2, 10});
  auto [var, mean] = gv.var_mean({2}, 0, true);
  CHECK(max_abs(yg - ((gv - mean) * (var - 1e-6).rsqrt()).reshape({2, 4, 5})) < 1e-5);
  CHECK(nn::F::group_norm(zeros({0, 4, 5}), 2).sizes() == Shape{0, 4, 5});

  // instance_norm (batch normalisation of the (1, N * C, L) view): a negative or infinite eps
  // (PyTorch takes them) and empty inputs take the composite path; weights name themselves.
  Tensor in = randn({2, 3, 7}), iw = randn({3}), ib = randn({3});
  auto [ivar, imean] = in.var_mean({2}, 0, true);
  const Tensor expect = (in - imean) * (ivar - 1e-3).rsqrt() * iw.reshape({1, 3, 1}) + ib.reshape({1, 3, 1});
  CHECK(max_abs(nn::F::instance_norm(in, iw, ib, -1e-3) - expect) < 1e-5);
  CHECK(max_abs(nn::F::instance_norm(in, iw, ib, inf) - ib.reshape({1, 3, 1}).expand({2, 3, 7})) == 0);
  for (Shape empty : {Shape{0, 3, 5}, Shape{2, 0, 5}, Shape{2, 3, 0}})
    CHECK(nn::F::instance_norm(zeros(empty), empty[1] ? iw : Tensor(), Tensor()).sizes() == empty);
  CHECK_THROWS_WITH_AS(nn::F::instance_norm(in, randn({2})), doctest::Contains("[instance_norm] weight must have shape [3]"),
                       Error);

  // batch_norm: running statistics that require grad are refused (PyTorch's too); with grad
  // mode off they are plain tensors.
  Tensor rmg = zeros({3}).requires_grad_(), rvg = ones({3});
  CHECK_THROWS_WITH_AS(nn::F::batch_norm(in, rmg, rvg, Tensor(), Tensor(), false), doctest::Contains("must not require grad"),
                       Error);
  {
    NoGradGuard no_grad;
    CHECK(nn::F::batch_norm(in, rmg, rvg, Tensor(), Tensor(), false).sizes() == in.sizes());
  }

  // The bias gradient is sum(dy) even where the sums of dy minus its pivot overflow f32: two
  // values of 3e38 among zeros make the pivot 3.75e37, and the 62 zeros' -3.75e37 summed -inf.
  Tensor xo = randn({4, 1, 16}), bo = zeros({1}).requires_grad_();
  Tensor dyo = zeros({4, 1, 16});
  dyo.index_put_({tensor<int64_t>({0}), tensor<int64_t>({0}), tensor<int64_t>({0, 1})}, 3e38);
  nn::F::batch_norm(xo, Tensor(), Tensor(), Tensor(), bo, true).backward(dyo);
  CHECK(bo.grad().item<double>() == inf);
}

}  // namespace test_norm_accuracy
