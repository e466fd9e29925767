// torch::special's functions and the small math helpers (ops/special_ops.hpp): PyTorch 1.13's
// values and gradients, the edges (zeros, infinities, tails far past where the naive formulas
// overflow), second derivatives, dtypes and errors. (The op table checks the kernels against
// kernels_cpu/reference on every dtype and layout; ember-vs-libtorch compares them with libtorch.)

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace test_special_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// The gradient of sum(f(x)) at x (f64).
Tensor grad_of(Tensor (*f)(const Tensor&), const Tensor& x) {
  Tensor l = leaf(x);
  f(l).sum().backward();
  return l.grad();
}
}  // namespace

TEST_CASE("Bessel functions i0, i0e, i1, i1e: PyTorch's values, both sides of the series switch") {
  const Tensor x = tensor<double>({0.0, 0.5, -1.0, 3.0, 10.0, -29.0, 31.0, 50.0, 100.0, 700.0});
  CHECK(close_relative(x.i0(), {1.0, 1.0634833707413236, 1.2660658777520082, 4.880792585865024, 2815.716628466254,
                                292520631785.69086, 2089962966491.9038, 2.9325537838493355e+20, 1.0737517071310738e+42,
                                1.5295933476718735e+302},
                       1e-14));
  CHECK(close_relative(special::i0e(x), {1.0, 0.6450352704491501, 0.46575960759364043, 0.24300035416182536,
                                         0.1278333371634286, 0.07440746822222559, 0.07194649669698383,
                                         0.056561626647454184, 0.03994437929909668, 0.015081295651531355},
                       1e-14));
  CHECK(close_relative(special::i1(x), {0.0, 0.25789430539089636, -0.5651591039924851, 3.9533702174026093,
                                        2670.988303701255, -287432108126.2548, 2055972795294.565,
                                        2.9030785901035566e+20, 1.0683693903381625e+42, 1.5285003902339006e+302},
                       1e-14));
  CHECK(close_relative(x.i1e(), {0.0, 0.15642080318487173, -0.2079104153497085, 0.19682671329730084,
                                 0.1212626813844555, -0.07311311793938836, 0.07077639283438569, 0.055993123892895395,
                                 0.03974415302513025, 0.015070519444716846},
                       1e-14));
  // Overflow only where the value does (I0(713.9) = 1.5e308 is finite, I0(714) is not); the scaled
  // forms never overflow; the infinities are the limits (libtorch gives NaN for i0(inf)).
  const Tensor big = tensor<double>({713.9, 714.0, 1e300, kInf, -kInf, kNaN});
  CHECK(close_relative(big.i0().narrow(0, 0, 1), {1.6481551866951379e+308}, 1e-13));
  CHECK(close_relative(big.i0().narrow(0, 1, 5), {kInf, kInf, kInf, kInf, kNaN}, 0));
  CHECK(close_relative(big.i1().narrow(0, 2, 4), {kInf, kInf, -kInf, kNaN}, 0));
  CHECK(close_relative(big.i0e(), {0.014933701655598236, 0.014932655474843706, 3.9894228040143264e-151, 0, 0, kNaN}, 1e-13));
  // Past 2.9e307, 2 pi x overflows: the scale is taken as 1/sqrt(2 pi) / sqrt(x).
  const Tensor top = tensor<double>({1e308, std::numeric_limits<double>::max()});
  CHECK(close_relative(top.i0e().narrow(0, 0, 1), {3.989422804014327e-155}, 1e-13));
  CHECK(close_relative(top.i0(), {kInf, kInf}, 0));
  CHECK(close_relative(top.neg().i1(), {-kInf, -kInf}, 0));
  CHECK(vals(tensor<double>({-kInf}).i1e())[0] == 0.0);
  CHECK(std::signbit(vals(tensor<double>({-kInf}).i1e())[0]));
  // f32 and integers compute in double and round once; integers give the default float.
  CHECK(tensor({3}).i0().dtype() == DType::F32);
  CHECK(tensor({3.0f}).i0().item<float>() == static_cast<float>(4.880792585865024));
}

TEST_CASE("Bessel functions: PyTorch's gradients, 1/2 at 0, second order") {
  const Tensor x = tensor<double>({0.0, 0.5, -1.0, 3.0, 10.0, -29.0});
  CHECK(close_relative(grad_of([](const Tensor& t) { return t.i1(); }, x),
                       {0.5, 0.5476947599595309, 0.700906773759523, 3.563002513397487, 2548.6177980961284,
                        282609179781.3372},
                       1e-13));
  CHECK(close_relative(grad_of([](const Tensor& t) { return t.i1e(); }, x),
                       {0.5, 0.17577286089453492, 0.049938776894223436, -0.01943526356790909, -0.005555612359472467,
                        -0.001226791715072728},
                       1e-12));
  CHECK(close_relative(grad_of([](const Tensor& t) { return t.i0e(); }, x.narrow(0, 1, 5)),
                       {-0.4886144672642784, 0.25784919224393194, -0.04617364086452452, -0.006570655778973089,
                        0.0012943502828372255},
                       1e-12));
  CHECK(close_relative(grad_of([](const Tensor& t) { return t.i0(); }, x), vals(x.i1()), 1e-15));
  const Tensor u = tensor<double>({-2.5, -0.7, 0.3, 1.9, 4.0});
  check_grads([](const TensorList& in) { return in[0].i0() + in[0].i1() * 2.0; }, {leaf(u)}, "i0, i1");
  check_grads([](const TensorList& in) { return in[0].i0e() - in[0].i1e(); }, {leaf(u)}, "i0e, i1e");
  // At exactly 0: i1' = 1/2 and i1'' = 0 (odd), with no 0/0 from the guarded division.
  Tensor z = leaf(tensor<double>({0.0}));
  Tensor g = autograd::grad({z.i1().sum()}, {z}, {}, true, true)[0];
  CHECK(vals(g) == F{0.5});
  CHECK(vals(autograd::grad({g.sum()}, {z})[0]) == F{0.0});
}

TEST_CASE("erfcx: PyTorch's values, both tails, gradient") {
  const Tensor x = tensor<double>({-20.0, -5.0, -1.0, 0.0, 0.5, 3.0, 25.0, 27.0, 100.0, 1e10});
  CHECK(close_relative(special::erfcx(x), {1.0442939379528289e+174, 144009798674.66104, 5.008980080762283, 1.0,
                                           0.6156903441929258, 0.17900115118138998, 0.022549572432641357,
                                           0.02088160799042094, 0.005641613782989433, 5.641895835477563e-11},
                       1e-14));
  // erfc(30) underflows and e^900 overflows; their product is 0.0187958888614167...
  CHECK(close_relative(tensor<double>({30.0, 1e300, kInf, -27.0, -kInf}).erfcx(),
                       {0.01879588886141675, 5.641895835477562e-301, 0, kInf, kInf}, 1e-14));
  CHECK(close_relative(grad_of([](const Tensor& t) { return t.erfcx(); }, x.narrow(0, 0, 8)),
                       {-4.1771757518113154e+175, -1440097986747.7388, -11.14633932862008, -1.1283791670955126,
                        -0.5126888229025868, -0.05437226000717277, -0.0009005454634447574, -0.0007723356127817826},
                       1e-9));  // the derivative cancels (2 x erfcx(x) - 2 / sqrt(pi)) in both libraries
  check_grads([](const TensorList& in) { return in[0].erfcx(); }, {leaf(tensor<double>({-1.5, 0.2, 2.5}))}, "erfcx");
}

TEST_CASE("ndtr, log_ndtr, ndtri: PyTorch's values, far tails, gradients") {
  const Tensor x = tensor<double>({-40.0, -20.0, -3.0, -1.0, 0.0, 0.7, 5.0, 9.0});
  // mpmath's values; PyTorch's are within 7e-15 (0.0013498980316301035, 0.15865525393145702).
  CHECK(close_relative(special::ndtr(x).narrow(0, 2, 6), {0.0013498980316300946, 0.15865525393145705, 0.5,
                                                          0.758036347776927, 0.9999997133484281, 1.0},
                       1e-15));
  // Phi(-20) = 2.75e-89, which PyTorch prints as 0 only because its f64 print rounds; the
  // lower tail keeps its relative precision down to the subnormals.
  CHECK(close_relative(special::ndtr(tensor<double>({-20.0, -37.0})), {2.7536241186062337e-89, 5.725571222524577e-300},
                       1e-14));
  CHECK(close_relative(special::log_ndtr(x), {-804.6084420137539, -203.9171553710973, -6.60772622151035,
                                              -1.841021645009264, -0.6931471805599453, -0.27702394227713123,
                                              -2.866516129637633e-07, -1.1285884059538406e-19},
                       1e-14));
  CHECK(close_relative(special::log_ndtr(tensor<double>({-1e10, -kInf, kInf})), {-5e+19, -kInf, 0}, 1e-15));
  const Tensor p = tensor<double>({1e-300, 1e-20, 0.001, 0.3, 0.5, 0.75, 0.999, 1 - 1e-12});
  CHECK(close_relative(special::ndtri(p), {-37.0470962993612, -9.262340089798409, -3.090232306167813,
                                           -0.5244005127080409, 0.0, 0.6744897501960817, 3.090232306167813,
                                           7.0344869100478356},
                       1e-14));
  // Near the centre the quantile keeps its relative precision (p - 1/2 is exact there).
  CHECK(close_relative(special::ndtri(tensor<double>({0.5 + 1e-12, 0.5 - 1e-15})),
                       {2.5065728237018603e-12, -2.50462478220459e-15}, 1e-12));
  CHECK(close_relative(special::ndtri(tensor<double>({0.0, 1.0, -0.1, 1.5, kNaN})), {-kInf, kInf, kNaN, kNaN, kNaN}, 0));
  // Subnormal p: solved in log space (Phi(x) - p has no digits left there).
  CHECK(close_relative(special::ndtri(tensor<double>({1e-310, 1e-320, 4.9406564584124654e-324})),
                       {-37.663060331949524, -38.26912534303265, -38.467405617144344}, 1e-14));
  // ndtr(ndtri(p)) = p.
  const Tensor q = tensor<double>({1e-250, 3e-17, 0.02, 0.4999, 0.93});
  CHECK(close_relative(special::ndtr(special::ndtri(q)), vals(q), 1e-13));
  // Gradients (PyTorch's): log_ndtr's stays finite and ~|x| in the far lower tail.
  CHECK(close_relative(grad_of([](const Tensor& t) { return special::log_ndtr(t); }, x),
                       {40.024968847212364, 20.049753068528464, 3.2830986549304386, 1.525135276160982,
                        0.7978845608028654, 0.41192475041929066, 1.4867199409049054e-06, 1.0279773571668917e-18},
                       1e-12));
  CHECK(close_relative(grad_of([](const Tensor& t) { return special::ndtri(t); }, p.narrow(0, 1, 7)),
                       {1.0674725333014075e+19, 296.9923515892307, 2.876103659264292, 2.5066282746310002,
                        3.146865080561092, 296.9923515892307, 139445764410.29645},
                       1e-9));
  const Tensor u = tensor<double>({0.05, 0.3, 0.62, 0.97});
  check_grads([](const TensorList& in) { return special::ndtri(in[0]); }, {leaf(u)}, "ndtri");
  check_grads([](const TensorList& in) { return special::log_ndtr(in[0]) + special::ndtr(in[0]); },
              {leaf(tensor<double>({-6.0, -1.2, 0.4, 2.0}))}, "log_ndtr, ndtr");
}

TEST_CASE("sinc and entr: PyTorch's values, exact zeros at the integers, gradients") {
  const Tensor x = tensor<double>({-2.5, -0.3, 1e-9, 0.25, 1.5, 7.2});
  CHECK(close_relative(x.sinc(), {0.12732395447351627, 0.8583936913341398, 1.0, 0.9003163161571061,
                                  -0.2122065907891938, -0.02598581343857328},
                       1e-14));
  // sin(pi x) at the nearest integer's distance: exact zeros where sin(pi * x) leaves 1e-16.
  CHECK(vals(tensor<double>({1.0, -3.0, 1e5, 4503599627370497.0}).sinc()) == F{0, 0, 0, 0});
  CHECK(close_relative(tensor<double>({0.0, kInf, kNaN}).sinc(), {1.0, kNaN, kNaN}, 0));
  CHECK(close_relative(grad_of([](const Tensor& t) { return t.sinc(); }, x),
                       {0.05092958178940638, 0.9020281301388888, -3.289868133696453e-09, -0.7728381398822339,
                        0.14147106052612907, -0.10875433068560757},
                       1e-14));  // PyTorch: 0 at 1e-9, where cos(pi x) - sinc(x) cancels to nothing
  CHECK(vals(grad_of([](const Tensor& t) { return t.sinc(); }, tensor<double>({0.0}))) == F{0.0});
  check_grads([](const TensorList& in) { return in[0].sinc(); }, {leaf(tensor<double>({-2.2, -0.4, 0.6, 1.7}))}, "sinc");

  CHECK(close_relative(special::entr(tensor<double>({1e-300, 0.5, 1.0, 2.0, 1e10})),
                       {6.907755278982137e-298, 0.34657359027997264, -0.0, -1.3862943611198906, -230258509299.40457},
                       1e-15));
  CHECK(close_relative(special::entr(tensor<double>({0.0, -0.5, -kInf, kInf, kNaN})), {0, -kInf, -kInf, -kInf, kNaN}, 0));
  check_grads([](const TensorList& in) { return special::entr(in[0]); }, {leaf(tensor<double>({0.3, 1.0, 2.5}))}, "entr");
}

TEST_CASE("xlogy, xlog1py: 0 log 0 is 0, NaN still propagates, gradients") {
  const Tensor a = tensor<double>({0.0, 0.0, 2.0, -1.5, 3.0}), b = tensor<double>({0.0, 2.0, 0.5, 4.0, 1e-3});
  CHECK(close_relative(a.xlogy(b), {0.0, 0.0, -1.3862943611198906, -2.0794415416798357, -20.72326583694641}, 1e-15));
  CHECK(close_relative(special::xlog1py(a, b), {0.0, 0.0, 0.8109302162163288, -2.4141568686511503, 0.0029985009992505992},
                       1e-15));
  CHECK(close_relative(tensor<double>({0.0, 0.0, 0.0, kInf}).xlogy(tensor<double>({kNaN, -1.0, kInf, 1.0})),
                       {kNaN, 0, 0, kNaN}, 0));
  // Numbers on either side; integers compute in the default float.
  CHECK(close_relative(special::xlogy(2.0, tensor<double>({0.5, 4.0})), {-1.3862943611198906, 2.772588722239781}, 1e-15));
  CHECK(xlogy(tensor({0, 2}), tensor({3, 3})).dtype() == DType::F32);
  Tensor la = leaf(a), lb = leaf(b);
  la.xlogy(lb).sum().backward();
  CHECK(close_relative(la.grad(), {0.0, 0.6931471805599453, -0.6931471805599453, 1.3862943611198906, -6.907755278982137},
                       1e-15));
  CHECK(close_relative(lb.grad(), {kNaN, 0.0, 4.0, -0.375, 3000.0}, 1e-15));  // 0 / 0 at (0, 0), as PyTorch
  // d/dx is log(y) at x = 0 too (x log 2 is smooth in x), except where log(y) is -inf or NaN.
  Tensor zx = leaf(tensor<double>({0.0, 0.0, 0.0, 1.0, 0.0})), zy = leaf(tensor<double>({-1.0, 0.0, kNaN, 0.0, kInf}));
  zx.xlogy(zy).sum().backward();
  CHECK(close_relative(zx.grad(), {0.0, 0.0, kNaN, -kInf, kInf}, 0));
  Tensor px = leaf(tensor<double>({0.0, 0.0})), py = leaf(tensor<double>({-1.0, 1.0}));
  special::xlog1py(px, py).sum().backward();
  CHECK(close_relative(px.grad(), {0.0, 0.6931471805599453}, 1e-15));
  const Tensor u = tensor<double>({-1.2, 0.7, 2.0}), v = tensor<double>({0.4, 1.5, 3.0});
  check_grads([](const TensorList& in) { return in[0].xlogy(in[1]) + in[0].xlog1py(in[1]); }, {leaf(u), leaf(v)}, "xlogy");
}

TEST_CASE("logaddexp, logaddexp2: no overflow, equal infinities, gradients") {
  const Tensor a = tensor<double>({1000.0, -1000.0, 0.5, 30.0, -3.0}), b = tensor<double>({1000.5, -999.0, 0.5, -30.0, 2.0});
  CHECK(close_relative(logaddexp(a, b), {1000.9740769841801, -998.6867383124818, 1.1931471805599454, 30.0,
                                         2.006715348489118},
                       1e-15));
  CHECK(close_relative(a.logaddexp2(b), {1001.2715533031636, -998.4150374992788, 1.5, 30.0, 2.0443941193584534}, 1e-15));
  const Tensor inf_a = tensor<double>({kInf, -kInf, kInf, -kInf, kNaN}), inf_b = tensor<double>({kInf, -kInf, -kInf, 3.0, 1.0});
  CHECK(close_relative(inf_a.logaddexp(inf_b), {kInf, -kInf, kInf, 3.0, kNaN}, 0));
  CHECK(close_relative(inf_a.logaddexp2(inf_b), {kInf, -kInf, kInf, 3.0, kNaN}, 0));
  // f32 keeps the small term: log(e^-100 + e^-100) = -100 + log 2.
  CHECK(tensor({-100.0f}).logaddexp(tensor({-100.0f})).item<float>() == static_cast<float>(-100.0 + std::log(2.0)));
  Tensor la = leaf(a), lb = leaf(b);
  la.logaddexp2(lb).sum().backward();
  CHECK(close_relative(la.grad(), {0.4142135623730951, 0.3333333333333333, 0.5, 1.0, 0.030303030303030304}, 1e-15));
  CHECK(close_relative(lb.grad(), {0.585786437626905, 0.6666666666666666, 0.5, 8.673617379884035e-19, 0.9696969696969697},
                       1e-13));
  const Tensor u = tensor<double>({-1.2, 0.7, 2.0}), v = tensor<double>({0.4, 1.5, -3.0});
  check_grads([](const TensorList& in) { return in[0].logaddexp(in[1]) * in[0].logaddexp2(in[1]); }, {leaf(u), leaf(v)},
              "logaddexp");
}

TEST_CASE("heaviside: values at 0, every dtype, one dtype for both, gradient to the values") {
  CHECK(close_relative(tensor<double>({-2.0, 0.0, -0.0, 3.0, kNaN, -kInf}).heaviside(tensor<double>({5.0})),
                       {0, 5, 5, 1, 0, 0}, 0));
  CHECK(ints(tensor({-2, 0, 7}).heaviside(tensor({9, 9, 9}))) == I{0, 9, 1});
  CHECK(ints(tensor({false, true, false}).heaviside(tensor({true, false, false}))) == I{1, 1, 0});
  CHECK(tensor({false}).heaviside(tensor({true})).dtype() == DType::Bool);
  CHECK(ints(tensor({-1, 0}).to(DType::U8).heaviside(tensor({4, 4}).to(DType::U8))) == I{1, 4});  // 255 > 0
  CHECK_ERROR(tensor({1.0f}).heaviside(tensor<double>({1.0})), "[heaviside]", "same dtype", "f32", "f64");
  CHECK_ERROR(tensor({1}).heaviside(tensor({1.0f})), "[heaviside]", "same dtype");
  // A number the tensor's dtype holds is taken (PyTorch has no form for it); one that would
  // change the dtype is not.
  CHECK(close_relative(tensor({0.0f, 2.0f}).heaviside(0.5), {0.5, 1.0}, 0));
  CHECK(tensor({0.0f}).heaviside(0.5).dtype() == DType::F32);
  CHECK_ERROR(tensor({false}).heaviside(3), "[heaviside]", "same dtype");
  Tensor x = leaf(tensor<double>({-1.0, 0.0, 2.0, 0.0})), v = leaf(tensor<double>({0.5}));
  (x.heaviside(v) * tensor<double>({1.0, 2.0, 3.0, 4.0})).sum().backward();
  CHECK(vals(x.grad()) == F{0, 0, 0, 0});
  CHECK(vals(v.grad()) == F{6.0});
}

TEST_CASE("signbit, sgn, positive, deg2rad, float_power, ldexp, true_divide") {
  CHECK(ints(tensor<double>({-0.0, 0.0, -kNaN, kNaN, -1e-310, 2.0, -kInf}).signbit()) == I{1, 0, 1, 0, 1, 0, 1});
  CHECK(ints(tensor({-3, 0, 4}).signbit()) == I{1, 0, 0});
  CHECK(ints(tensor({200}).to(DType::U8).signbit()) == I{0});
  CHECK(ints(tensor({true}).signbit()) == I{0});
  CHECK(ints(tensor({-0.0f}).to(DType::F16).signbit()) == I{1});
  CHECK(tensor({1.0f}).signbit().dtype() == DType::Bool);

  CHECK(ints(tensor({-2, 0, 5}).sgn()) == I{-1, 0, 1});
  CHECK(ints(tensor({true, false}).sgn()) == I{1, 0});
  CHECK(ints(tensor({-2, 5}).positive()) == I{-2, 5});
  CHECK_ERROR(tensor({true}).positive(), "[positive]", "bool");

  CHECK(tensor({180}).deg2rad().dtype() == DType::F32);
  CHECK(close_relative(tensor<double>({180.0, -90.0}).deg2rad(), {3.141592653589793, -1.5707963267948966}, 1e-16));
  CHECK(close_relative(rad2deg(tensor<double>({3.141592653589793})), {180.0}, 1e-16));

  // float_power is f64 whatever the operands: 3^33 is exact there (f32 rounds it, i32 wraps).
  const Tensor fp = float_power(tensor({3}).to(DType::I32), 33);
  CHECK(fp.dtype() == DType::F64);
  CHECK(vals(fp)[0] == 5559060566555523.0);
  CHECK(float_power(2, tensor({0.5f})).dtype() == DType::F64);
  CHECK(close_relative(tensor({2.0f}).float_power(tensor({-1}).to(DType::I8)), {0.5}, 0));

  CHECK(close_relative(ldexp(tensor<double>({1.5, -3.0}), tensor({3, -2})), {12.0, -0.75}, 0));
  CHECK(ldexp(tensor({1, 2}), tensor({1, 2})).dtype() == DType::F32);
  CHECK(close_relative(tensor({7, 8}).true_divide(tensor({2, 2})), {3.5, 4.0}, 0));
}

TEST_CASE("special functions refuse what they cannot compute, and name themselves") {
  // A floating result cannot be written in place into an integer tensor.
  CHECK_ERROR(tensor({1, 2}).i0e_(), "[i0e_]", "f32", "i64");
  CHECK_ERROR(tensor({1, 2}).xlogy_(tensor({1, 2})), "[xlogy");
  // The composites check under their own names.
  CHECK_ERROR(ldexp(tensor({1.0f, 2.0f}), tensor({1, 2, 3})), "[ldexp]", "cannot be broadcast");
  CHECK_ERROR(float_power(tensor({1.0f, 2.0f}), tensor({1.0f, 2.0f, 3.0f})), "[float_power]");
  CHECK_ERROR(true_divide(tensor({1.0f, 2.0f}), tensor({1.0f, 2.0f, 3.0f})), "[true_divide]");
  CHECK_ERROR(ldexp(tensor({1.0f}), Tensor()), "[ldexp]", "defined");
  if (!cuda::is_available()) return;  // CUDA refuses them by name; no device here
  const Tensor x = tensor({1.0f}).to(Device::cuda(0));
  CHECK_ERROR(x.i0e(), "[i0e]");
  CHECK_ERROR(x.logaddexp(x), "[logaddexp]");
}

TEST_CASE("special derivatives keep their precision where the textbook forms cancel or overflow") {
  // Each pair: the first derivative at x, and the second, against mpmath's.
  auto derivatives = [](Tensor (*f)(const Tensor&), const Tensor& at) {
    Tensor x = leaf(at);
    Tensor d1 = autograd::grad({f(x).sum()}, {x}, {}, true, true)[0];
    Tensor d2 = autograd::grad({d1.sum()}, {x})[0];
    return std::pair{d1, d2};
  };
  // sinc near 0, on both sides of the series switch at 0.1.
  auto [s1, s2] = derivatives([](const Tensor& t) { return t.sinc(); }, tensor<double>({6e-8, 0.05, 0.0999, 0.1001, -0.7}));
  CHECK(close_relative(s1, {-1.9739208802178648e-07, -0.16408789296847295, -0.32543195527576435, -0.3260705612366908,
                            1.3652403755203533},
                       1e-12));
  CHECK(std::abs(vals(s2)[0] + 3.289868133696453) < 1e-9);  // sinc''(0) = -pi^2 / 3
  // erfcx for large x: 2x erfcx(x) - 2/sqrt(pi) has lost everything by 1e8.
  auto [e1, e2] = derivatives([](const Tensor& t) { return t.erfcx(); }, tensor<double>({49.9, 50.1, 1e4, 1e8}));
  CHECK(close_relative(e1, {-0.00022644489477001144, -0.00022464163694684927, -5.641895750849127e-09,
                            -5.641895835477562e-17},
                       1e-11));
  CHECK(close_relative(e2.narrow(0, 2, 1), {1.1283791332441388e-12}, 1e-9));
  // I1 and i1e near 0: the second derivatives are O(x), not the difference of two 1/(2x).
  auto [b1, b2] = derivatives([](const Tensor& t) { return t.i1(); }, tensor<double>({1e-40, 0.005, -0.02}));
  CHECK(close_relative(b2, {3.75e-41, 0.0018750065104237875, -0.007500416673958396}, 1e-9));
  auto [bn1, bn2] = derivatives([](const Tensor& t) { return t.i1(); }, tensor<double>({kNaN, kInf}));
  CHECK(close_relative(bn1, {kNaN, kInf}, 0));
  CHECK(std::isnan(vals(bn2)[0]));  // NaN reaches the second derivative too
  auto [c1, c2] = derivatives([](const Tensor& t) { return t.i1e(); }, tensor<double>({0.005, -0.02}));
  CHECK(close_relative(c1, {0.49502336475391, 0.48037037675540745}, 1e-12));
  CHECK(close_relative(c2, {-0.9906686136029056, 0.9631913318783256}, 1e-9));
  CHECK(vals(derivatives([](const Tensor& t) { return t.i1e(); }, tensor<double>({1e-300})).first) == F{0.5});
  // I1' = I0 - I1/x is inf - inf once both overflow; the ratio form stays finite, then inf.
  CHECK(close_relative(grad_of([](const Tensor& t) { return t.i1(); }, tensor<double>({600.0, -600.0, 800.0, kInf, -kInf})),
                       {6.1360701016950665e+258, 6.1360701016950665e+258, kInf, kInf, kInf}, 1e-12));
  Tensor f32 = tensor({80.0f, 100.0f}).requires_grad_();
  f32.i1().sum().backward();
  CHECK(close_relative(f32.grad(), {2.4444326595895763e+33, kInf}, 1e-6));
  // log_ndtr: finite on both sides, +inf at -inf (the limit: the derivative grows as |x|).
  auto [l1, l2] = derivatives([](const Tensor& t) { return special::log_ndtr(t); }, tensor<double>({3.0, -3.0, 40.0, 1e300}));
  CHECK(close_relative(l1.narrow(0, 0, 2), {0.004437839042125664, 3.2830986549304364}, 1e-12));
  auto [t1, t2] = derivatives([](const Tensor& t) { return special::log_ndtr(t); }, tensor<double>({-100.0, -710.0}));
  CHECK(close_relative(t1, {100.00999800099926, 710.0014084451163}, 1e-14));  // PyTorch: 2e-14, 1.7e-11 off
  CHECK(close_relative(t2, {-0.9999000599500517, -0.9999980162902246}, 1e-9));  // PyTorch: 2e-9, 8.5e-6 off
  CHECK(close_relative(l2.narrow(0, 0, 2), {-0.013333211541740806, -0.9294408132147319}, 1e-10));
  CHECK(vals(l1.narrow(0, 2, 2)) == F{0, 0});
  CHECK(vals(l2.narrow(0, 2, 2)) == F{0, 0});
  CHECK(vals(grad_of([](const Tensor& t) { return special::log_ndtr(t); }, tensor<double>({-kInf}))) == F{kInf});
}

}  // namespace test_special_ops
