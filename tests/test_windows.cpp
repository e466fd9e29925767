// Window functions (ops/windows.hpp) against PyTorch 1.13's values for the same calls (f64),
// against their formulas for longer windows, and their options and errors.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <cmath>
#include <numbers>

namespace test_windows {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

namespace {
bool near(const Tensor& got, const F& want, double tol = 1e-15) {
  if (got.numel() != static_cast<int64_t>(want.size())) return false;
  const F g = vals(got);
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(g[i] - want[i]) <= tol)) return false;
  return true;
}
}  // namespace

TEST_CASE("windows: PyTorch 1.13's values, periodic and symmetric") {
  const TensorOptions f64(DType::F64);
  CHECK(near(hann_window(5, f64), {0.0, 0.3454915028125263, 0.9045084971874737, 0.9045084971874737, 0.3454915028125264}));
  CHECK(near(hann_window(5, false, f64), {0.0, 0.49999999999999994, 1.0, 0.5000000000000001, 0.0}));
  CHECK(near(hamming_window(6, f64), {0.08000000000000002, 0.30999999999999994, 0.7699999999999999, 1.0,
                                      0.7700000000000002, 0.31000000000000033}));
  CHECK(near(hamming_window(6, false, 0.6, 0.3, f64),
             {0.3, 0.5072949016875158, 0.8427050983124842, 0.8427050983124842, 0.5072949016875158, 0.3}));
  CHECK(near(blackman_window(5, f64),
             {0.0, 0.20077014326253045, 0.8492298567374694, 0.8492298567374696, 0.20077014326253056}));
  CHECK(near(blackman_window(5, false, f64), {0.0, 0.33999999999999997, 1.0, 0.3400000000000001, 0.0}));
  CHECK(near(bartlett_window(5, f64), {0.0, 0.4, 0.8, 0.7999999999999998, 0.3999999999999999}));
  CHECK(near(bartlett_window(6, false, f64), {0.0, 0.4, 0.8, 0.7999999999999998, 0.3999999999999999, 0.0}));
  CHECK(near(kaiser_window(6, f64), {5.2773441320097665e-05, 0.054759364131249516, 0.5188447216723606, 1.0,
                                     0.5188447216723606, 0.054759364131249516},
             1e-14));
  CHECK(near(kaiser_window(6, false, 5.0, f64), {0.036710892271286676, 0.4149036392433668, 0.9138124838692001,
                                                 0.9138124838692001, 0.4149036392433668, 0.036710892271286676},
             1e-14));
  // Past I0's range the middle is NaN and the ends 0, as PyTorch 1.13's.
  const F big = vals(kaiser_window(4, true, 800.0, f64));
  CHECK((big[0] == 0 && big[1] == 0 && std::isnan(big[2]) && big[3] == 0));
  const F huge = vals(kaiser_window(5, false, 1e7, f64));
  CHECK((huge[0] == 0 && std::isnan(huge[2]) && huge[4] == 0));
  // A negative beta is the same window (I0 is even; PyTorch 1.13 accepts it too).
  CHECK(kaiser_window(7, false, -3.0, f64).equal(kaiser_window(7, false, 3.0, f64)));
}

TEST_CASE("windows: the formulas over longer windows, lengths 0 and 1, options and errors") {
  const int64_t n = 33;
  const F hann = vals(hann_window(n, false, kFloat64));
  const F hamming = vals(hamming_window(n, kFloat64));
  const F bartlett = vals(bartlett_window(n, false, kFloat64));
  for (int64_t i = 0; i < n; ++i) {
    const double pi = std::numbers::pi;
    CHECK(std::abs(hann[i] - std::pow(std::sin(pi * i / (n - 1)), 2)) < 1e-15);  // sin^2 form of Hann
    CHECK(std::abs(hamming[i] - (0.54 - 0.46 * std::cos(2 * pi * i / n))) < 1e-15);
    CHECK(std::abs(bartlett[i] - (i <= (n - 1) / 2 ? 2.0 * i / (n - 1) : 2.0 - 2.0 * i / (n - 1))) < 1e-15);
  }
  // Symmetric windows are symmetric and peak at 1 in the middle; periodic ones are the first
  // n points of the n + 1 point symmetric window.
  const Tensor k = kaiser_window(n, false, 8.6, kFloat64);
  CHECK(k.equal(k.flip({0})));
  CHECK(k[n / 2].item<double>() == 1.0);
  CHECK(blackman_window(n, kFloat64).equal(blackman_window(n + 1, false, kFloat64).narrow(0, 0, n)));
  // Lengths 0 and 1, the default dtype f32 rounded once, requires_grad.
  CHECK(hann_window(0).sizes() == Shape({0}));
  CHECK(vals(kaiser_window(1, kFloat64)) == F{1.0});
  CHECK(vals(hamming_window(1, false)) == F{1.0});
  const Tensor f = hann_window(4);
  CHECK(f.dtype() == DType::F32);
  CHECK(vals(f) == F{0.0, 0.5, 1.0, 0.5});  // PyTorch 1.13's f32 values
  CHECK(bartlett_window(5, TensorOptions(DType::BF16)).dtype() == DType::BF16);
  CHECK(hann_window(3, TensorOptions().requires_grad(true)).requires_grad());
  CHECK_ERROR(hann_window(-1), "[hann_window] the window length must be >= 0, got -1");
  CHECK_ERROR(hamming_window(4, TensorOptions(DType::I64)), "[hamming_window] needs a floating dtype, got i64");
  CHECK_ERROR(kaiser_window(4, true, std::nan("")), "[kaiser_window] beta must be finite, got nan");
  CHECK_ERROR(blackman_window(-5, false), "[blackman_window]");
  CHECK_ERROR(bartlett_window(-2), "[bartlett_window]");
}

}  // namespace test_windows
