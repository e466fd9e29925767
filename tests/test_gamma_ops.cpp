// lgamma, digamma, polygamma, mvlgamma and torch::special's names: PyTorch 1.13's values, the
// closed forms at rational points, the poles and infinities, gradients to second order, errors.
// (The op table checks the kernels against kernels_cpu/reference on every dtype and layout.)

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace test_gamma_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

namespace {
constexpr double kPi = 3.14159265358979323846, kEuler = 0.57721566490153286061, kZeta3 = 1.2020569031595942854;
constexpr double kInf = std::numeric_limits<double>::infinity();
bool close(const Tensor& got, const F& want, double tol) { return close_relative(got, want, tol); }
}  // namespace

TEST_CASE("lgamma, digamma, polygamma: PyTorch's values and closed forms") {
  const Tensor x = tensor<double>({0.5, 3.0, -2.5, -10.3, 100.7, 1e-8, 7.25, 12.5, -0.3});
  // PyTorch 1.13, f64.
  CHECK(close(x.lgamma(), {0.57236494292470008, 0.69314718055994529, -0.056243716497674047, -14.457515440024208,
                           362.35677520343057, 18.420680738180209, 7.0521854507385395, 18.734347511936445,
                           1.4648400508576025},
              1e-14));
  CHECK(close(x.digamma(), {-1.9635100260214229, 0.92278433509846702, 1.1031566406452433, 4.6624034935820875,
                            4.607172338628299, -100000000.57721564, 1.9104535268837359, 2.4851956512749123,
                            2.1133097796353986},
              1e-14));
  CHECK(close(polygamma(2, x), {-16.828796644234316, -0.15411380631918856, -0.10820405164172819, 68.828988611036962,
                                -9.9598716852459084e-05, -2e+24, -0.021828952295197733, -0.0069324365857882419,
                                67.639081199883137},
              1e-13));
  CHECK(close(x.polygamma(3), {97.409091034002415, 0.11893940226682916, 194.74787621918756, 769.01933342439884,
                               1.987948843133754e-06, 5.9999999999999992e+32, 0.0064330375979401583,
                               0.0011534128049134052, 766.61989041916843},
              1e-13));
  // (At -2.5, mpmath's -4.0266930412329948: libtorch's -4.02669284 is 5e-8 off, its sum over
  // the terms from x up cancelling; Ember reflects a negative x to 1 - x.)
  CHECK(close(x.polygamma(10), {-7431824508.8587875, -21.43660662871304, -4.0266930412329948, 2048284893018.4995,
                                -3.5553929287587572e-15, -3.6288000000000073e+94, -0.0016787916731345138,
                                -5.6798535145671336e-06, 2048284690148.2078},
              1e-12));
  // PyTorch's trigamma is good to about 1e-9 here; the closed forms hold to rounding.
  CHECK(close(x.polygamma(1), {4.9348022020736781, 0.39493406693194577, 9.5392466449375206, 14.98688706572236,
                               0.0099799570877204414, 10000000000000004, 0.14787923316154666, 0.083285224601708827,
                               13.945160267262267},
              1e-8));
  const Tensor q = tensor<double>({0.5, 1, 2});
  CHECK(close(q.polygamma(1), {kPi * kPi / 2, kPi * kPi / 6, kPi * kPi / 6 - 1}, 1e-15));
  CHECK(close(q.digamma(), {-kEuler - 2 * std::log(2.0), -kEuler, 1 - kEuler}, 1e-15));
  CHECK(close(q.polygamma(2), {-14 * kZeta3, -2 * kZeta3, -2 * kZeta3 + 2}, 1e-15));
  CHECK(close(tensor<double>({0.5, 3, 5}).lgamma(), {0.5 * std::log(kPi), std::log(2.0), std::log(24.0)}, 1e-15));
  CHECK(vals(tensor<double>({1.0}).lgamma())[0] == 0);
  // Huge x: the terms of the zeta sum underflow, the tail carries the value (1 / x, -1 / x^2).
  CHECK(close(tensor<double>({1e200}).polygamma(1), {1e-200}, 1e-14));
  CHECK(close(tensor<double>({1e120}).polygamma(2), {-1e-240}, 1e-14));

  // Poles and infinities, as PyTorch where it is consistent: digamma -inf at +0, +inf at -0,
  // NaN at negative integers and -inf; the higher orders +-inf at the poles (trigamma: +inf,
  // where libtorch's reflection gives a large finite number), 0 at +inf, NaN at -inf.
  const Tensor e = tensor<double>({0.0, -0.0, -1, -3, kInf, -kInf});
  CHECK(close(e.lgamma(), {kInf, kInf, kInf, kInf, kInf, kInf}, 0));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(close(e.digamma(), {-kInf, kInf, nan, nan, kInf, nan}, 0));
  CHECK(close(e.polygamma(1).narrow(0, 0, 4), {kInf, kInf, kInf, kInf}, 0));
  CHECK(close(e.polygamma(2).narrow(0, 0, 4), {-kInf, -kInf, -kInf, -kInf}, 0));
  CHECK(vals(e.polygamma(1))[4] == 0);   // tends to 0 at +inf
  CHECK(vals(e.polygamma(2))[4] == 0);
  CHECK(std::isnan(vals(e.polygamma(1))[5]));
  CHECK(std::isnan(vals(e.polygamma(2))[5]));
  CHECK(close(tensor<double>({-1e15 - 0.5}).polygamma(1), {kPi * kPi}, 1e-12));  // reflection: any magnitude
  // Every order reflects a negative x (mpmath's polygamma at 40 digits; the sum over |x| terms
  // it replaces gave NaN below -1e6). Where cot(pi x) = -1 (x = k - 1/4) and |x| is huge, the
  // cot derivative alone is left: 4 pi^3 (n = 2), 16 pi^4 (n = 3).
  CHECK(close(tensor<double>({-2e6 - 0.5}).polygamma(2), {-2.4999975000017187491e-13}, 1e-14));
  CHECK(close(tensor<double>({-7.3}).polygamma(3), {769.01673398168238694}, 1e-14));
  CHECK(close(tensor<double>({-99999999.75}).polygamma(3), {16 * std::pow(kPi, 4)}, 1e-14));  // P_3(-1) = -16
  CHECK(close(tensor<double>({-99999999.75}).polygamma(4), {-24481.574782822516261}, 1e-14));
  CHECK(close(tensor<double>({-0.001}).polygamma(5), {1.1999999999999998513e+20}, 1e-14));
  CHECK(close(tensor<double>({-12.6}).polygamma(6), {-413775.16709394550485}, 1e-14));
  CHECK(close(tensor<double>({-1e15 - 0.25}).polygamma(2), {4 * kPi * kPi * kPi}, 1e-14));

  // f32 computes in f64 and rounds once; integers compute in the default float dtype.
  CHECK(close(tensor<float>({0.5f, 3.0f, -2.5f, 7.25f}).lgamma(), {0.5723649263381958, 0.6931471824645996,
                                                                   -0.056243717670440674, 7.052185535430908},
              1e-7));
  CHECK(arange(1, 4).lgamma().dtype() == DType::F32);
  CHECK(close(arange(1, 4).digamma(), {-kEuler, 1 - kEuler, 1.5 - kEuler}, 1e-7));

  Tensor y = tensor<double>({1.0, 2.0});
  y.polygamma_(1);
  CHECK(close(y, {kPi * kPi / 6, kPi * kPi / 6 - 1}, 1e-15));
  CHECK_ERROR(x.polygamma(-1), "[polygamma]", "-1");
  CHECK_ERROR(x.polygamma(20000), "[polygamma]");
  CHECK_ERROR(tensor<bool>({true}).lgamma().polygamma(-2), "[polygamma]");
}

TEST_CASE("mvlgamma and torch::special's names") {
  const Tensor x = tensor<double>({2.5, 3.0});
  CHECK(close(mvlgamma(x, 3), {1.8809954616117743, 2.694924879806965}, 1e-14));  // PyTorch 1.13
  CHECK(close(x.mvlgamma(1), vals(x.lgamma()), 0));
  CHECK(close(special::multigammaln(x, 2), vals(x.lgamma() + (x - 0.5).lgamma() + 0.5 * std::log(kPi)), 1e-15));
  CHECK(close(mvlgamma(tensor<int64_t>({2, 3}), 2), {0.4516, 1.5502}, 2e-4));  // integers: the default float
  CHECK(mvlgamma(full({}, 4.0), 2).dim() == 0);
  CHECK_ERROR(mvlgamma(tensor<double>({0.5, 3.0}), 3), "[mvlgamma]", "(p - 1) / 2 = 1");
  CHECK_ERROR(mvlgamma(x, 0), "[mvlgamma]", "at least 1");
  CHECK(close(special::gammaln(x), vals(x.lgamma()), 0));
  CHECK(close(special::psi(x), vals(special::digamma(x)), 0));
  CHECK(close(special::polygamma(2, x), vals(x.polygamma(2)), 0));
}

TEST_CASE("lgamma, digamma, polygamma, mvlgamma: gradients to second order") {
  const Tensor x = leaf(tensor<double>({0.7, 1.5, 3.2, -0.4, -2.6}));
  check_grads([](const TensorList& v) { return v[0].lgamma(); }, {x}, "lgamma");
  check_grads([](const TensorList& v) { return v[0].digamma(); }, {x}, "digamma");
  check_grads([](const TensorList& v) { return polygamma(2, v[0]); }, {x}, "polygamma 2");
  check_grads([](const TensorList& v) { return mvlgamma(v[0], 3); }, {leaf(tensor<double>({1.2, 2.5, 4.0}))}, "mvlgamma");
  // lgamma' = digamma, exactly (the same kernel).
  const Tensor z = leaf(tensor<double>({0.3, 2.0, 9.5}));
  z.lgamma().sum().backward();
  CHECK(close(z.grad(), vals(z.detach().digamma()), 0));
}

}  // namespace test_gamma_ops
