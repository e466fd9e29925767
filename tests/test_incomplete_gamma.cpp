// igamma / igammac (ops/incomplete_gamma.hpp) against 50-digit reference values over a grid of a
// and x spanning the power series and the continued fraction, their edges, dtypes, gradients in
// x (PyTorch's, and finite differences to second order) and errors.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace test_incomplete_gamma {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

namespace {
/// |got - want| <= rel |want| + 1e-300 elementwise (subnormal values keep few digits).
bool near(const Tensor& got, const F& want, double rel) {
  const F g = vals(got);
  if (g.size() != want.size()) return false;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - want[i]) <= rel * std::abs(want[i]) + 1e-300)) return false;
  return true;
}
}  // namespace

TEST_CASE("igamma and igammac: 50-digit reference values on a grid of a and x") {
  const Tensor a = tensor<double>({1e-3, 0.1, 0.5, 1, 2.5, 10, 50, 150}).view({-1, 1});
  const Tensor x = tensor<double>({1e-4, 0.05, 0.5, 1, 3, 10, 40, 200}).view({1, -1});
  // Reference values from mpmath at 50 digits (PyTorch 1.13 agrees to 1e-11 but at a = 50,
  // x = 40, where its value is 1.2e-9 off).
  const F p = {0.9914031196674433, 0.9975343725331066, 0.9994399333435292, 0.9997803916424144, 0.9999869268601987,
               0.9999999958306922, 1.0, 1.0, 0.41846137523796295, 0.7755386354510305, 0.9414024458901336,
               0.9758726562736723, 0.9984347282528856, 0.9999994452014282, 1.0, 1.0, 0.011283415555849618,
               0.24817036595415073, 0.6826894921370859, 0.8427007929497149, 0.9856941215645704, 0.999992255783569,
               1.0, 1.0, 9.999500016666251e-05, 0.04877057549928599, 0.3934693402873666, 0.6321205588285577,
               0.950212931632136, 0.9999546000702375, 1.0, 1.0, 3.008796191247676e-11, 0.00016231661192261503,
               0.03743422675270363, 0.15085496391539036, 0.6937810815867216, 0.9987502694369687, 0.9999999999999991,
               1.0, 2.755481412796599e-47, 2.5715803516000752e-20, 1.7096700293489033e-10, 1.1142547833872067e-07,
               0.0011024881301154798, 0.5420702855281478, 0.9999999960740678, 1.0, 3.2876270844580753e-265,
               2.780587716828697e-130, 1.7887765104351365e-80, 1.2337508979097351e-65, 1.2485354871541929e-42,
               1.8547268838697993e-19, 0.07033506665939496, 1.0, 0.0, 0.0, 7.462776140322725e-309,
               6.481830476248712e-264, 3.289466060484363e-193, 8.509523870866718e-118, 2.0587951899818663e-40,
               0.9999032137800506};
  const F q = {0.008596880332556643, 0.0024656274668934225, 0.0005600666564707498, 0.0002196083575855564,
               1.3073139801213742e-05, 4.169307817190262e-09, 1.0412296580236109e-22, 6.925828153633919e-93,
               0.581538624762037, 0.22446136454896942, 0.05859755410986648, 0.024127343726327778,
               0.001565271747114354, 5.547985717901907e-07, 1.5797414197837044e-20, 1.229973056529154e-90,
               0.9887165844441503, 0.7518296340458492, 0.3173105078629141, 0.15729920705028513, 0.01430587843542964,
               7.744216431044084e-06, 3.744097384202899e-19, 5.5072482372124675e-89, 0.9999000049998333,
               0.951229424500714, 0.6065306597126334, 0.36787944117144233, 0.049787068367863944,
               4.5399929762484854e-05, 4.248354255291589e-18, 1.3838965267367376e-87, 0.9999999999699121,
               0.9998376833880774, 0.9625657732472964, 0.8491450360846097, 0.3062189184132784, 0.0012497305630313753,
               8.391825114831611e-16, 2.9666446590828848e-84, 1.0, 1.0, 0.999999999829033, 0.9999998885745217,
               0.9988975118698845, 0.4579297144718522, 3.925932226286188e-09, 2.044095593580732e-72, 1.0, 1.0, 1.0,
               1.0, 1.0, 1.0, 0.9296649333406051, 1.6927979958857087e-37, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
               9.678621994933577e-05};
  CHECK(near(igamma(a, x), p, 1e-11));
  CHECK(near(igammac(a, x), q, 1e-11));
  CHECK(near(special::gammainc(a, x), p, 1e-11));
  CHECK(near(a.igammac(x), q, 1e-11));
}

TEST_CASE("igamma and igammac: tiny a (Q without cancelling) and huge a near x = a") {
  // (a, x, P, Q): mpmath at 40-50 digits; a = x = 1e16 from Temme's expansion
  // (P = 1/2 + 1 / (3 sqrt(2 pi a)) + O(a^-3/2)).
  const std::vector<std::array<double, 4>> cases = {
      {1e-05, 1.0, 0.9999978061382085, 2.1938617914074714e-06},
      {1e-10, 0.5, 0.9999999999440227, 5.597735948054988e-11},
      {1e-12, 0.1, 0.9999999999981771, 1.8229239584184573e-12},
      {1e-18, 0.001, 1.0, 6.33153936413615e-18},
      {1e-300, 1e-300, 1.0, 6.901983122333122e-298},
      {1e5, 1e5, 0.5004205221103651, 0.4995794778896348},
      {1e6, 1001000.0, 0.8413447863683403, 0.15865521363165971},
      {3e5, 300547.7225575052, 0.841344880322439, 0.15865511967756096},
      {1e8, 1e8, 0.5000132980760141, 0.49998670192398587},
      {1e10, 1e10, 0.5000013298076014, 0.4999986701923987},
      {1e12, 999999000000.0, 0.15865525393141672, 0.8413447460685832},
      {1e16, 1e16, 0.5000000013298076, 0.4999999986701924}};
  for (const auto& row : cases) {
    const double a = row[0], x = row[1], p = row[2], q = row[3];  // named: clang 14 cannot capture bindings
    CAPTURE(a);
    CAPTURE(x);
    const Tensor at = tensor<double>({a}), xt = tensor<double>({x});
    CHECK(near(igamma(at, xt), {p}, 1e-12));
    CHECK(near(igammac(at, xt), {q}, 1e-12));
  }
  // A subnormal a: P = 1 and Q = a E1(x) (PyTorch 1.13 gives 1.1e-310 for Q here).
  CHECK(igamma(tensor<double>({1e-310}), tensor<double>({0.5})).item<double>() == 1.0);
  const double q_sub = igammac(tensor<double>({1e-310}), tensor<double>({0.5})).item<double>();
  CHECK((q_sub > 0 && q_sub < 1e-309));
}

TEST_CASE("igamma and igammac: edges, dtypes, in place and errors") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor a = tensor<double>({0, 0, -1, 2, inf, inf, 3, 2.5, nan, nan, nan, inf});
  const Tensor x = tensor<double>({1, 0, 1, -1, 1, inf, inf, 0, 1, 0, inf, nan});
  const F p = vals(igamma(a, x)), q = vals(igammac(a, x));
  // PyTorch 1.13's, its checks' order deciding the NaN cases (P(NaN, 0) = 0, P(NaN, inf) = 1).
  const F want_p = {1, nan, nan, nan, 0, nan, 1, 0, nan, 0, 1, 0}, want_q = {0, nan, nan, nan, 1, nan, 0, 1, nan, 1, 0, 1};
  for (size_t i = 0; i < p.size(); ++i) {
    CAPTURE(i);
    CHECK((std::isnan(want_p[i]) ? std::isnan(p[i]) : p[i] == want_p[i]));
    CHECK((std::isnan(want_q[i]) ? std::isnan(q[i]) : q[i] == want_q[i]));
  }
  // Dtypes: f32 stays f32, an integer operand promotes, f16 rounds once.
  CHECK(igamma(tensor<float>({1}), tensor<float>({2})).dtype() == DType::F32);
  const Tensor promoted = igamma(tensor<float>({1}), tensor<int64_t>({2}));
  CHECK(promoted.dtype() == DType::F32);
  CHECK(std::abs(promoted.item<double>() - 0.8646647167633873) < 1e-7);
  CHECK(igammac(tensor<float>({1}).to(DType::F16), tensor<float>({2}).to(DType::F16)).dtype() == DType::F16);
  // Broadcasting and in place.
  CHECK(igamma(tensor<double>({1, 2}).view({2, 1}), tensor<double>({1, 2, 3})).sizes() == Shape({2, 3}));
  Tensor in_place = tensor<double>({2.5});
  in_place.igamma_(tensor<double>({3}));
  CHECK(std::abs(in_place.item<double>() - 0.6937810815867218) < 1e-14);
  in_place = tensor<double>({2.5});
  in_place.igammac_(tensor<double>({3}));
  CHECK(std::abs(in_place.item<double>() - 0.30621891841327825) < 1e-14);
  // In place and recorded: a (this tensor) is saved from before the write (PyTorch 1.13's
  // gradient in x).
  const Tensor xg = tensor<double>({3}).requires_grad_();
  Tensor recorded = tensor<double>({2.5}) * 1;
  recorded.igamma_(xg);
  recorded.sum().backward();
  CHECK(std::abs(xg.grad().item<double>() - 0.19460869331856584) < 1e-14);
  CHECK_ERROR(igamma(tensor<int64_t>({1}), tensor<int64_t>({2})),
              "[igamma] expects floating tensors (or one floating and one integer), got i64 and i64");
  CHECK_ERROR(igammac(tensor<double>({1, 2}), tensor<double>({1, 2, 3})), "[igammac]");
  CHECK_ERROR(tensor<int64_t>({1}).igamma_(tensor<double>({1})), "[igamma_]");
}

TEST_CASE("igamma and igammac: the gradient in x, to second order; none in a") {
  const Tensor a = tensor<double>({0.7, 2, 5.5});
  const Tensor x = tensor<double>({0.3, 2, 7}).requires_grad_();
  igamma(a, x).sum().backward();
  // PyTorch 1.13's.
  CHECK(close_relative(x.grad(), F{0.8189965519314124, 0.2706705664732254, 0.1106682494175954}, 1e-13));
  check_grads([&](const TensorList& in) { return igamma(a, in[0]); }, {leaf(tensor<double>({0.3, 2, 7}))}, "igamma");
  check_grads([&](const TensorList& in) { return igammac(tensor<double>({1.5, 3}).view({2, 1}), in[0]); },
              {leaf(tensor<double>({0.5, 4, 9}))}, "igammac broadcast");
  // The derivative in a: not implemented, as PyTorch's; the error comes at backward.
  const Tensor ag = tensor<double>({1.5}).requires_grad_();
  const Tensor y = igamma(ag, tensor<double>({2}));
  CHECK(y.requires_grad());
  CHECK_ERROR(y.sum().backward(), "[igamma] the derivative in the first argument (a) is not implemented");
}

}  // namespace test_incomplete_gamma
