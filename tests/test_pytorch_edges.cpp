// Values and gradients at edge points (zeros, ties, NaN, huge magnitudes, reduced floats)
// where a formula that is right in general can still differ from PyTorch's. Expected values
// are libtorch 1.13's for the same inputs (reviewed against PyTorch's derivatives.yaml and
// kernels); where newer PyTorch differs, the comment says so.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace test_pytorch_edges {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> vals(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  const double* p = h.data_ptr<double>();
  return std::vector<double>(p, p + h.numel());
}

/// Equal values, NaN matching NaN and infinities matching exactly.
void check_vals(const Tensor& t, const std::vector<double>& expect, double tol = 1e-6) {
  REQUIRE(t.defined());
  std::vector<double> v = vals(t);
  REQUIRE(v.size() == expect.size());
  for (size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(expect[i])) CHECK(std::isnan(v[i]));
    else if (std::isinf(expect[i]) || tol == 0) CHECK(v[i] == expect[i]);
    else CHECK(v[i] == doctest::Approx(expect[i]).epsilon(tol));
  }
}

Tensor leaf(std::initializer_list<double> v, DType dt = DType::F64) {
  return tensor<double>(v).to(dt).detach().requires_grad_();
}

/// x.grad() after backward of sum(f(x) * [1, 2, ...]) (weights tell the entries apart).
template <class F>
Tensor grad_of(const Tensor& x, F f) {
  Tensor y = f(x);
  Tensor w = arange(1, y.numel() + 1).to(y.dtype()).view(y.sizes());
  (y * w).sum().backward();
  return x.grad();
}

}  // namespace

TEST_CASE("edge gradients: std of a constant, norms at zero, max with NaN") {
  check_vals(grad_of(leaf({2, 2, 2}), [](const Tensor& x) { return x.std(); }), {0, 0, 0});
  check_vals(grad_of(leaf({5}), [](const Tensor& x) { return x.std({}, 0); }), {0});
  // A constant row among others, over dim 1: only the other row gets a gradient.
  Tensor x = tensor<double>({1, 1, 1, 3}).view({2, 2}).requires_grad_();
  check_vals(grad_of(x, [](const Tensor& t) { return t.std({1}); }), {0, 0, -std::sqrt(2.0), std::sqrt(2.0)});
  check_vals(grad_of(leaf({0, 0, 0}), [](const Tensor& t) { return t.norm(3); }), {0, 0, 0});
  check_vals(grad_of(leaf({0, 0, 0}), [](const Tensor& t) { return t.norm(1.5); }), {0, 0, 0});
  check_vals(grad_of(leaf({0, 1, 4}), [](const Tensor& t) { return t.norm(0.5); }), {0, 3, 1.5});
  check_vals(grad_of(leaf({1, kNaN, 3}), [](const Tensor& t) { return t.max(); }), {0, 1, 0});
  check_vals(grad_of(leaf({kNaN, 1, kNaN}), [](const Tensor& a) { return a.maximum(tensor<double>({1, kNaN, kNaN})); }),
             {1, 2, 3});
  check_vals(grad_of(leaf({kNaN, 1, kNaN}), [](const Tensor& a) { return a.minimum(tensor<double>({1, kNaN, kNaN})); }),
             {1, 2, 3});
}

TEST_CASE("edge gradients: activations at NaN and logit's eps") {
  check_vals(grad_of(leaf({kNaN, 0.5, 7}), [](const Tensor& t) { return t.hardtanh(-1, 1); }), {1, 2, 0});
  check_vals(grad_of(leaf({kNaN, 3, 7}), [](const Tensor& t) { return t.relu6(); }), {1, 2, 0});
  check_vals(grad_of(leaf({kNaN, -1}), [](const Tensor& t) { return t.elu(); }), {1, 2 * std::exp(-1.0)});
  check_vals(grad_of(leaf({kNaN}), [](const Tensor& t) { return t.selu(); }), {1.0507009873554804934193349852946});
  check_vals(grad_of(leaf({kNaN}), [](const Tensor& t) { return t.celu(); }), {1});
  // hardswish's kinks take their outer side, as PyTorch 2: 0 at -3, g at 3.
  check_vals(grad_of(leaf({-3, 3, kNaN, 0}), [](const Tensor& t) { return t.hardswish(); }), {0, 2, 3, 2}, 0);
  // eps = 0 clamps to [0, 1]: log(0) = -inf with a zero gradient; without eps, NaN outside [0, 1].
  check_vals(leaf({-0.5, 1.5}).logit(0.0), {-kInf, kInf});
  check_vals(grad_of(leaf({-0.5, 1.5}), [](const Tensor& t) { return t.logit(0.0); }), {0, 0});
  check_vals(leaf({-0.5, 0.25}).logit(), {kNaN, std::log(1.0 / 3.0)});
  check_vals(grad_of(leaf({-0.5, 0.25}), [](const Tensor& t) { return t.logit(); }), {kNaN, 2 / (0.25 * 0.75)});
  check_vals(leaf({0.25}).logit(-1.0), {std::log(1.0 / 3.0)});  // a negative eps: no clamp
}

TEST_CASE("edge gradients: clamp with tensor bounds gives each side its part, as PyTorch 2") {
  Tensor x = leaf({0, 1, 2, 3}), lo = leaf({0, 0, 0, 3}), hi = leaf({2, 2, 2, 1});
  Tensor y = x.clamp(lo, hi);
  check_vals(y, {0, 1, 2, 1});
  (y * tensor<double>({1, 2, 3, 4})).sum().backward();
  check_vals(x.grad(), {0.5, 2, 1.5, 0});  // a tie with a bound is shared (libtorch 1.13: all to x)
  check_vals(lo.grad(), {0.5, 0, 0, 0});
  check_vals(hi.grad(), {0, 0, 1.5, 4});   // lo > hi: the value is hi, and so is the gradient
  Tensor x2 = leaf({-5, 5});
  Tensor lo2 = leaf({0, 0}), hi2 = leaf({1, 1});
  (x2.clamp(lo2, hi2) * tensor<double>({1, 2})).sum().backward();
  check_vals(x2.grad(), {0, 0});
  check_vals(lo2.grad(), {1, 0});
  check_vals(hi2.grad(), {0, 2});
  // A NaN bound or a NaN x gives NaN, and x no gradient there.
  Tensor x3 = leaf({1, 2, kNaN});
  Tensor y3 = x3.clamp(tensor<double>({kNaN, 0, 0}), tensor<double>({5, kNaN, 5}));
  check_vals(y3, {kNaN, kNaN, kNaN});
  Tensor x4 = leaf({kNaN, 0.5});
  (x4.clamp(tensor<double>({0, 0}), tensor<double>({1, 1})) * tensor<double>({1, 2})).sum().backward();
  check_vals(x4.grad(), {1, 2});  // a NaN x keeps its gradient (PyTorch 2; 1.13 gave 0)
  // Every case of x, lo, hi in {0, 1, 2, NaN} (x slowest), in halves of g, as libtorch 2.15
  // gives them: ties, equal bounds, lo > hi and NaN on each side.
  const char* want_x = "2112000000002222012202120000022200120012002200222222222222222222";
  const char* want_lo = "0110022000200000000000100020000000000000000000000000000000000000";
  const char* want_hi = "0000200022000000210020002200000022102210220000000000200022000000";
  std::vector<double> xs, los, his;
  const double v[] = {0, 1, 2, kNaN};
  for (double a : v)
    for (double b : v)
      for (double c : v) xs.push_back(a), los.push_back(b), his.push_back(c);
  Tensor tx = tensor<double>(xs).requires_grad_(), tlo = tensor<double>(los).requires_grad_();
  Tensor thi = tensor<double>(his).requires_grad_();
  tx.clamp(tlo, thi).sum().backward();
  const std::vector<double> gx = vals(tx.grad()), glo = vals(tlo.grad()), ghi = vals(thi.grad());
  for (size_t i = 0; i < 64; ++i) {
    CAPTURE(i);
    CHECK(gx[i] * 2 == want_x[i] - '0');
    CHECK(glo[i] * 2 == want_lo[i] - '0');
    CHECK(ghi[i] * 2 == want_hi[i] - '0');
  }
}

TEST_CASE("edge gradients: scans at large magnitudes, cancellation and infinities") {
  check_vals(grad_of(leaf({1000, 1000, 999}), [](const Tensor& t) { return t.logcumsumexp(0); }),
             {3.2669564, 2.2669564, 0.4660872}, 1e-6);
  check_vals(grad_of(leaf({-1000, -1000}), [](const Tensor& t) { return t.logcumsumexp(0); }), {2, 1});
  check_vals(grad_of(leaf({100, 100, 99}, DType::F32), [](const Tensor& t) { return t.logcumsumexp(0); }),
             {3.2669564, 2.2669564, 0.4660872}, 1e-5);
  check_vals(grad_of(leaf({0, 0}), [](const Tensor& t) { return t.cumsum(0).sqrt(); }), {kInf, kInf});
  // The reverse sum of an upstream gradient [1e8, 1, 1] in f32: 1e8, 2, 1 (not 1e8, 1, 1).
  Tensor c = leaf({1, 1, 1}, DType::F32);
  c.cumsum(0).backward(tensor<float>({1e8f, 1, 1}));
  check_vals(c.grad(), {1e8, 2, 1});
}

TEST_CASE("edge values: norms, logsumexp, round, reduced-float var and clamp's type") {
  check_vals(tensor<float>({0, 2, 0, -3}).norm(0), {2});
  check_vals(tensor<float>({0, 2, 0, -3, 1, 0}).view({2, 3}).norm(0, {1}), {1, 2});
  check_vals(tensor<float>({1, 2, 0.5, -3}).norm(-kInf), {0.5});
  CHECK_THROWS_WITH_AS(tensor<int64_t>({3, 4}).norm(2), doctest::Contains("[norm]"), Error);
  check_vals(empty({2, 0}).logsumexp({1}), {-kInf, -kInf});
  check_vals(tensor<float>({501, 1500}).round(-3), {1000, 2000}, 0);
  check_vals(tensor<float>({1.2345f}).round(2), {1.23}, 1e-6);
  CHECK_THROWS_AS(tensor<int64_t>({15}).round(-1), Error);
  check_vals(tensor<float>({1000, 1004}).to(DType::BF16).var(), {8});
  // Clamp with both bounds and one NaN: NaN (one NaN bound alone is ignored).
  check_vals(tensor<float>({1, 5, 3}).clamp(kNaN, 4), {kNaN, kNaN, kNaN});
  check_vals(tensor<float>({1, 5, 3}).clamp(kNaN, std::nullopt), {1, 5, 3});
  // min > max: max wins, for hardtanh as for clamp.
  check_vals(tensor<float>({-3, 0, 3}).hardtanh(2, -1), {-1, -1, -1});
  check_vals(tensor<float>({-3, 0, 3}).clamp(2, -1), {-1, -1, -1});
  // An integer tensor with floating bounds clamps in floating point; in place it cannot.
  Tensor ci = tensor<int64_t>({0, 1, 2, 3}).to(DType::I32).clamp(0.5, 2.5);
  CHECK(ci.dtype() == kDefaultFloat);
  check_vals(ci, {0.5, 1, 2, 2.5});
  Tensor ii = tensor<int64_t>({0, 1, 2, 3}).to(DType::I32);
  CHECK_THROWS_WITH_AS(ii.clamp_(0.5, 2.5), doctest::Contains("[clamp_]"), Error);
  CHECK(tensor<bool>({true, false}).clamp(0, 0).dtype() == DType::I64);
}

TEST_CASE("edge values: inverse hyperbolic functions over the whole range, in every kernel width") {
  // 40 elements: the SIMD body and a scalar tail both see the edge values (repeated).
  auto repeat40 = [](std::vector<double> v) {
    std::vector<double> r;
    while (r.size() < 40) r.insert(r.end(), v.begin(), v.end());
    r.resize(40);
    return r;
  };
  auto check = [&](DType dt, Tensor (*f)(const Tensor&), double (*ref)(double), std::vector<double> xs) {
    xs = repeat40(xs);
    Tensor x = tensor(xs).to(dt);
    std::vector<double> want;
    for (double v : vals(x)) want.push_back(ref(v));  // of the input as rounded to dt
    check_vals(f(x), want, dt == DType::F64 ? 1e-14 : 3e-7);
  };
  for (DType dt : {DType::F32, DType::F64}) {
    CAPTURE(dt);
    check(dt, [](const Tensor& t) { return t.asinh(); }, [](double v) { return std::asinh(v); },
          {0.0, -0.0, 1e-30, -1e-30, 1e-5, 0.5, -3, 1e10, -1e30, kInf, -kInf, kNaN});
    // Below the domain (1 and up) NaN, down to -inf.
    check(dt, [](const Tensor& t) { return t.acosh(); }, [](double v) { return std::acosh(v); },
          {1.0, 1.0 + 1e-6, 1.5, 1e10, 1e30, kInf, 0.999, 0.0, -0.0, -2, -kInf, kNaN});
    check(dt, [](const Tensor& t) { return t.atanh(); }, [](double v) { return std::atanh(v); },
          {0.0, -0.0, 1e-30, 0.5, -0.999, 1.0, -1.0, 1.5, -2, kInf, -kInf, kNaN});
  }
  // Integers compute in the default float dtype, reduced floats in float and back.
  Tensor i = tensor<int64_t>({1, 2}).acosh();
  CHECK(i.dtype() == kDefaultFloat);
  check_vals(i, {0, std::acosh(2.0)});
  Tensor h = tensor<float>({0.5f}).to(DType::F16).atanh();
  CHECK(h.dtype() == DType::F16);
  check_vals(h, {std::atanh(0.5)}, 1e-3);
  // Gradients at the edges, as PyTorch's formulas give them: acosh'(1) and atanh'(+-1) are
  // inf; asinh' at a huge x is 0 (1 / sqrt(x^2 + 1) with x^2 overflowing in f32).
  Tensor a = tensor<float>({1, 2}).requires_grad_(true);
  a.acosh().sum().backward();
  check_vals(a.grad(), {kInf, 1 / std::sqrt(3.0)});
  Tensor t = tensor<float>({1, -1, 0.5}).requires_grad_(true);
  t.atanh().sum().backward();
  check_vals(t.grad(), {kInf, kInf, 1 / 0.75});
  Tensor s = tensor<float>({1e30f, 0}).requires_grad_(true);
  s.asinh().sum().backward();
  check_vals(s.grad(), {0, 1});
  // In place, as the other unary ops.
  Tensor ip = tensor<double>({0.25});
  ip.atanh_();
  check_vals(ip, {std::atanh(0.25)}, 1e-15);
}

TEST_CASE("edge values: outer promotes and takes bools, as PyTorch's elementwise definition") {
  Tensor io = tensor<int64_t>({1, 2}).outer(tensor<float>({0.5f}));
  CHECK(io.dtype() == DType::F32);
  CHECK(io.sizes() == Shape{2, 1});
  check_vals(io, {0.5, 1.0});
  Tensor fd = tensor<float>({2}).outer(tensor<double>({0.25, 3}));
  CHECK(fd.dtype() == DType::F64);
  check_vals(fd, {0.5, 6});
  Tensor bb = tensor<bool>({true, false}).outer(tensor<bool>({true, true, false}));
  CHECK(bb.dtype() == DType::Bool);
  check_vals(bb, {1, 1, 0, 0, 0, 0});
  CHECK_THROWS_WITH_AS(tensor<float>({1, 2}).outer(tensor<double>({{1.0}})), doctest::Contains("[outer] expects 1-d"),
                       Error);
  // Mixed dtypes differentiate through the product.
  Tensor a = tensor<float>({1, 2}).requires_grad_(true);
  a.outer(tensor<double>({3, 4})).sum().backward();
  check_vals(a.grad(), {7, 7});
}

TEST_CASE("edge values: conversions, sign, lerp, addcmul/addcdiv and alpha, as PyTorch") {
  // A double converts to bool in its own precision (1e-50 went through float, to 0: false).
  Tensor b = tensor<double>({1e-50, -1e-300, 0.0, kNaN}).to(DType::Bool);
  const bool* bp = b.data_ptr<bool>();
  CHECK((bp[0] && bp[1] && !bp[2] && bp[3]));
  check_vals(tensor<float>({kNaN, -2, 0, 3}).sign(), {0, -1, 0, 1});
  check_vals(tensor<double>({kNaN}).sign(), {0});
  // lerp is exact at weight 1 (start + 1 * (end - start) loses end when |start| >> |end|).
  check_vals(tensor<float>({3}).lerp(tensor<float>({1e-8f}), 1.0), {double(1e-8f)}, 0);
  check_vals(tensor<float>({3}).lerp(tensor<float>({1e-8f}), tensor<float>({1.0f})), {double(1e-8f)}, 0);
  check_vals(tensor<float>({1}).lerp(tensor<float>({3}), 0.25), {1.5});
  CHECK_THROWS_WITH_AS(tensor<int64_t>({1}).lerp(tensor<int64_t>({3}), 0.5), doctest::Contains("[lerp]"), Error);
  CHECK_THROWS_WITH_AS(tensor<float>({1}).lerp(tensor<double>({3}), 0.5), doctest::Contains("[lerp]"), Error);
  // Integer addcdiv is refused; integer addcmul casts value to the tensor's type (0.5 -> 0).
  Tensor i1 = tensor<int64_t>({1}), i3 = tensor<int64_t>({3}), i2 = tensor<int64_t>({2});
  CHECK_THROWS_WITH_AS(i1.addcdiv(i3, i2), doctest::Contains("[addcdiv]"), Error);
  Tensor am = i1.addcmul(i3, i2, 0.5);
  CHECK(am.dtype() == DType::I64);
  CHECK(am.item<int64_t>() == 1);
  Tensor amf = i1.addcmul(tensor<float>({3}), tensor<float>({2}), 0.5);  // a float result keeps 0.5
  CHECK(amf.dtype() == DType::F32);
  check_vals(amf, {4});
  // add/sub alpha: no floating alpha for integer results; a bool result takes it as a bool.
  CHECK_THROWS_WITH_AS(tensor<int64_t>({1}).to(DType::I32).add(tensor<int64_t>({2}).to(DType::I32), 2.5),
                       doctest::Contains("alpha"), Error);
  Tensor ba = tensor<bool>({false}).add(tensor<bool>({true}), 2);
  CHECK(ba.dtype() == DType::Bool);
  CHECK(ba.item<bool>());
  check_vals(tensor<float>({1}).add(tensor<float>({2}), 2.5), {6});
  // Subtracting with a bool operand is refused even when the other one promotes.
  CHECK_THROWS_WITH_AS(tensor<bool>({true}).sub(1), doctest::Contains("[sub]"), Error);
  CHECK_THROWS_WITH_AS(tensor<int64_t>({2}).sub(tensor<bool>({true})), doctest::Contains("[sub]"), Error);
}

TEST_CASE("edge values: log_softmax at large magnitudes, negative-p norms, linear's bias, f32 scans") {
  // (x - max) - log(sum): at 1e7 in f32, max + log(sum) rounded log(2) away (gave -1).
  check_vals(tensor<float>({1e7f, 1e7f}).log_softmax(0), {-std::log(2.0), -std::log(2.0)}, 1e-6);
  check_vals(tensor<float>({1e7f, 1e7f, 1e7f, 1e7f}).view({2, 2}).log_softmax(0), {-std::log(2.0), -std::log(2.0),
                                                                                -std::log(2.0), -std::log(2.0)},
             1e-6);
  check_vals(tensor<double>({1e17, 1e17}).log_softmax(0), {-std::log(2.0), -std::log(2.0)}, 1e-12);
  // p < 0: a zero entry makes the norm 0 (0^p = inf).
  check_vals(tensor<float>({0, 1, 2, 4}).norm(-1), {0});
  check_vals(tensor<float>({1, 2}).norm(-1), {2.0 / 3.0});
  // linear: a bias that is not one row broadcasts against [..., out], as PyTorch.
  Tensor x = randn({2, 3, 4}), w = randn({5, 4}), b = randn({3, 5});
  Tensor want = x.matmul(w.t()) + b;
  Tensor got = linear(x, w, b);
  REQUIRE(got.sizes() == Shape{2, 3, 5});
  CHECK((got - want).abs().amax().item<float>() < 1e-5f);
  CHECK_THROWS_AS(linear(x, w, randn({6, 1})), Error);
  CHECK(linear(randn({2, 3, 0}), randn({5, 0}), randn({5})).sizes() == Shape{2, 3, 5});
  // A million-element f32 cumsum accumulates in double (PyTorch's acc_type): the last entry is
  // the f32 rounding of the exact sum. Along a middle dim too.
  Tensor u = full({1 << 20}, 0.1f);
  const double exact = static_cast<double>(0.1f) * (1 << 20);
  CHECK(std::abs(u.cumsum(0)[-1].item<float>() - exact) / exact < 1e-7);
  CHECK(std::abs(u.view({1 << 18, 4}).cumsum(0)[-1][0].item<float>() - exact / 4) / (exact / 4) < 1e-7);
  // chunk of an empty dim: distinct pieces (not x itself three times).
  Tensor e = empty({0});
  auto pieces = chunk(e, 3);
  REQUIRE(pieces.size() == 3);
  CHECK(&pieces[0].impl() != &e.impl());
}

TEST_CASE("edge values: factories, reduced-float conversions and printing") {
  // f16/bf16 to an integer saturates like f32 (a direct cast was undefined behaviour).
  Tensor h = tensor<double>({200, 1000, kInf, kNaN, -1000}).to(DType::F16);
  Tensor h8 = h.to(DType::I8);
  const int8_t* p8 = h8.data_ptr<int8_t>();
  CHECK((p8[0] == 127 && p8[1] == 127 && p8[2] == 127 && p8[3] == 0 && p8[4] == -128));
  Tensor b32 = tensor<double>({kInf, -kInf}).to(DType::BF16).to(DType::I32);
  CHECK(b32.data_ptr<int32_t>()[0] == std::numeric_limits<int32_t>::max());
  CHECK(b32.data_ptr<int32_t>()[1] == std::numeric_limits<int32_t>::lowest());
  // rand in f16/bf16 stays below 1 (rounding f32 draws up to 1.0 happened once in ~500).
  manual_seed(5);
  CHECK(rand({1 << 20}, DType::BF16).to(DType::F32).amax().item<float>() < 1.0f);
  CHECK(rand({1 << 20}, DType::F16).to(DType::F32).amax().item<float>() < 1.0f);
  CHECK_THROWS_WITH_AS(eye(3, -5), doctest::Contains("[eye]"), Error);
  CHECK(eye(2, 3).sizes() == Shape{2, 3});
  CHECK_THROWS_WITH_AS(arange(0.0, kInf), doctest::Contains("[arange]"), Error);
  CHECK_THROWS_WITH_AS(arange(0.0, 1e19), doctest::Contains("[arange]"), Error);
  // int64 prints exactly (through double, INT64_MAX printed as its negation).
  CHECK(to_string(tensor<int64_t>({std::numeric_limits<int64_t>::max(), (int64_t(1) << 53) + 1})) ==
        "tensor([9223372036854775807,    9007199254740993])");
  // A summarised 4-d tensor: blank lines between blocks, each block indented.
  std::string s4 = to_string(arange(10 * 2 * 2 * 30).view({10, 2, 2, 30}));
  CHECK(s4.find("...,\n\n\n        [[[") != std::string::npos);
  CHECK(s4.find("\n ") != std::string::npos);
  CHECK(s4.find(" \n") == std::string::npos);  // no line ends in the indent meant for the next
}

TEST_CASE("edge values: arange, linspace and randint, exact as PyTorch") {
  // Integer arange counts and fills in int64 (through double, 2^53 + 1 was lost).
  const int64_t big = (int64_t(1) << 53) + 1;
  Tensor a = arange(big, big + 4);
  REQUIRE(a.numel() == 4);
  for (int64_t i = 0; i < 4; ++i) CHECK(a[i].item<int64_t>() == big + i);
  // An integer dtype with floating arguments: the count from the arguments as given, the
  // values from start and step truncated (PyTorch 2, NumPy; libtorch 1.13 gave [-1, 0]).
  CHECK(arange(-1.5, 1.5, 1, DType::I64).eq(tensor<int64_t>({-1, 0, 1})).all().item<bool>());
  CHECK(arange(0.5, 5.5, 1.5, DType::I64).eq(tensor<int64_t>({0, 1, 2, 3})).all().item<bool>());
  CHECK(arange(5, 0.5, -1.5, DType::I32).eq(tensor<int32_t>({5, 4, 3})).all().item<bool>());
  CHECK(arange(0, 1, 0.1, DType::I64).eq(zeros({10}, DType::I64)).all().item<bool>());  // step 0.1 truncates to 0
  // An integer start stays exact; only the last value must fit int64, not the end or step * i.
  CHECK(arange(Scalar(big), Scalar(double(big) + 3.5), 1, DType::I64)[0].item<int64_t>() == big);
  CHECK(arange(-9e18, 9e18, 4e18, DType::I64)[4].item<int64_t>() == int64_t{7000000000000000000});
  CHECK(arange(0.0, 1e19, 1e18, DType::I64).numel() == 10);
  CHECK_THROWS_AS(arange(0.0, 1.5e19, 5e18, DType::I64), Error);  // 0, 5e18, 1e19: past int64
  CHECK(arange(10, 0, -3).numel() == 4);  // 10, 7, 4, 1
  CHECK(arange(0, 10, 3).numel() == 4);   // 0, 3, 6, 9
  CHECK_THROWS_AS(arange(0, 10, -1), Error);
  // One step is just start (the second half's end - 0 * step gave end).
  CHECK(linspace(0, 1, 1).item<float>() == 0.f);
  CHECK(linspace(-3, 5, 1, DType::I32).item<int32_t>() == -3);
  // Only the ends used must fit the dtype; an integer dtype steps between the converted ends.
  CHECK(linspace(0, 1e10, 1, DType::I8).item<int8_t>() == 0);
  CHECK(linspace(0, 1e10, 0, DType::I8).numel() == 0);
  CHECK(linspace(-2.5, 7, 4, DType::I32).eq(tensor<int32_t>({-2, 1, 4, 7})).all().item<bool>());
  // linspace ends exactly on end.
  CHECK(linspace(-0.7, 0.3, 11, DType::F64)[-1].item<double>() == 0.3);
  CHECK(linspace(0.1, 0.9, 7, DType::F64)[0].item<double>() == 0.1);
  // randint: the range must fit the dtype; large bounds stay exact.
  CHECK_THROWS_WITH_AS(randint(0, 300, {3}, DType::U8), doctest::Contains("[randint]"), Error);
  Tensor r = randint((int64_t(1) << 62), (int64_t(1) << 62) + 3, {1000});
  const int64_t lo = r.amin().item<int64_t>() - (int64_t(1) << 62), hi = r.amax().item<int64_t>() - (int64_t(1) << 62);
  CHECK((lo == 0 && hi == 2));
}

TEST_CASE("numbers that do not fit the dtype are refused where they become elements, as PyTorch") {
  // libtorch 1.13: "value cannot be converted to type uint8_t without overflow".
  CHECK_THROWS_WITH_AS(full({1}, 300, DType::U8), doctest::Contains("[full] value 300 cannot be converted to u8"),
                       Error);
  check_vals(full({1}, -1, DType::U8), {255}, 0);  // negative values down to -max wrap, as PyTorch allows
  check_vals(full({1}, -255, DType::U8), {1}, 0);
  CHECK_THROWS_AS(full({1}, -256, DType::U8), Error);
  CHECK_THROWS_AS(full({1}, -129, DType::I8), Error);
  check_vals(full({1}, 65504.0, DType::F16), {65504}, 0);
  CHECK_THROWS_AS(full({1}, 65519.0, DType::F16), Error);
  CHECK_THROWS_AS(full({1}, 70000, DType::F16), Error);
  CHECK_THROWS_AS(full({1}, 1e39), Error);  // the default dtype, f32
  check_vals(full({1}, kInf), {kInf}, 0);
  check_vals(full({1}, kNaN), {kNaN}, 0);
  check_vals(full({1}, 2.7, DType::I32), {2}, 0);
  check_vals(full({1}, -2.7, DType::I32), {-2}, 0);
  CHECK_THROWS_AS(full({1}, 2147483647.5, DType::I32), Error);
  CHECK_THROWS_AS(full({1}, kInf, DType::I32), Error);
  CHECK_THROWS_AS(full({1}, kNaN, DType::I64), Error);
  check_vals(full({2}, -2.5, DType::I64), {-2, -2}, 0);  // i64 is signed, though its bounds look symmetric in double
  check_vals(full({1}, -9223372036854775808.0, DType::I64), {-9223372036854775808.0}, 0);
  check_vals(zeros({1}, DType::I64).fill_(-1.0), {-1}, 0);
  CHECK(tensor<float>({-3}).sum().item<int64_t>() == -3);
  check_vals(full({1}, -0.0, DType::U8), {0}, 0);
  CHECK_THROWS_AS(full({1}, -0.5, DType::U8), Error);  // libtorch refuses it too
  CHECK_THROWS_AS(full({1}, 9.3e18, DType::I64), Error);
  CHECK_THROWS_AS(full({1}, 9223372036854775808.0, DType::I64), Error);
  check_vals(full({1}, std::numeric_limits<int64_t>::max(), DType::I64), {9223372036854775807.0}, 0);
  CHECK_THROWS_AS(full({1}, -1.5, DType::U8), Error);
  check_vals(full({1}, 300, DType::Bool), {1}, 0);
  CHECK_THROWS_WITH_AS(zeros({1}, DType::I32).fill_(3e9), doctest::Contains("[fill_]"), Error);
  Tensor mask = tensor<bool>({true, false});
  CHECK_THROWS_WITH_AS(zeros({2}, DType::U8).masked_fill(mask, 256), doctest::Contains("[masked_fill]"), Error);
  CHECK_THROWS_AS(zeros({2}, DType::F16).masked_fill(mask, 1e5), Error);
  CHECK_THROWS_WITH_AS(tensor<int64_t>({300}).item<int8_t>(), doctest::Contains("[item]"), Error);
  CHECK_THROWS_AS(tensor<double>({1e300}).item<float>(), Error);
  CHECK(tensor<double>({2.5}).item<int32_t>() == 2);
  Tensor u = zeros({2}, DType::U8);
  CHECK_THROWS_AS(u.index_put_({0}, 300), Error);
  CHECK(vals(u) == std::vector<double>{0, 0});  // nothing written
  // An unsigned 64-bit number beyond int64 is refused where it becomes a Scalar (Python's
  // torch: "Overflow when unpacking long"), not read as a negative one.
  CHECK_THROWS_WITH_AS(zeros({1}, DType::I64).fill_(UINT64_MAX),
                       doctest::Contains("[Scalar] 18446744073709551615 does not fit int64"), Error);
  CHECK_THROWS_AS(tensor<int64_t>({1}) + (uint64_t(1) << 63), Error);
  check_vals(full({1}, uint64_t(INT64_MAX), DType::I64), {9223372036854775807.0}, 0);
}

TEST_CASE("signed zeros: neg(0.0) is -0.0 and abs(-0.0) is +0.0, as PyTorch") {
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    CAPTURE(dt);
    Tensor z = tensor<double>({0.0, -0.0}).to(dt);
    std::vector<double> n = vals(z.neg()), a = vals(z.abs());
    CHECK(std::signbit(n[0]));
    CHECK_FALSE(std::signbit(n[1]));
    CHECK_FALSE(std::signbit(a[0]));
    CHECK_FALSE(std::signbit(a[1]));
    // Strided (non-vector) path too.
    Tensor s = tensor<double>({0.0, 1.0, -0.0, 1.0}).to(dt).narrow(0, 0, 4).view({2, 2}).t().select(0, 0);
    std::vector<double> sn = vals(s.neg()), sa = vals(s.abs());
    CHECK(std::signbit(sn[0]));
    CHECK_FALSE(std::signbit(sa[1]));
  }
}

TEST_CASE("edge shapes (review): argmax over all elements with keepdim, 0-d transpose dims, empty inf norm") {
  // torch.argmax(x, keepdim=True) without a dim keeps every dim as 1.
  Tensor x = arange(24, TensorOptions(DType::F32)).view({2, 3, 4});
  CHECK(x.argmax(std::nullopt, true).sizes() == Shape{1, 1, 1});
  CHECK(x.argmax(std::nullopt, true).item<int64_t>() == 23);
  CHECK(x.argmin(std::nullopt, true).sizes() == Shape{1, 1, 1});
  CHECK(x.argmax().sizes() == Shape{});
  // A 0-d tensor takes dims 0 and -1 only.
  Tensor s = full({}, 1.0);
  CHECK(s.transpose(0, -1).dim() == 0);
  CHECK_THROWS_WITH_AS(s.transpose(3, 7), doctest::Contains("[transpose] dim 3 out of range"), Error);
  // The largest |x| over nothing has no value (PyTorch: "cannot compute the inf norm on an empty
  // tensor"); over a non-empty dim of an empty tensor it is an empty result.
  CHECK_THROWS_WITH_AS(zeros({0}).norm(kInf), doctest::Contains("[norm] the inf norm over an empty dim"), Error);
  CHECK_THROWS_WITH_AS(zeros({2, 0}).norm(kInf, Shape{1}), doctest::Contains("[norm]"), Error);
  CHECK(zeros({0, 3}).norm(kInf, Shape{1}).sizes() == Shape{0});
}

TEST_CASE("edge values: clamp of integers is exact beyond 2^53, and its bounds convert as PyTorch's") {
  auto ints = [](const Tensor& t) {
    Tensor c = t.contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  };
  const int64_t big = int64_t{1} << 60;
  Tensor x = tensor<int64_t>({big + 1, big + 3, -big - 1, 5});
  CHECK(ints(x.clamp(Scalar(big + 2), Scalar(big + 2))) == std::vector<int64_t>(4, big + 2));
  CHECK(ints(x.clamp_min(Scalar(big + 2))) == std::vector<int64_t>{big + 2, big + 3, big + 2, big + 2});
  CHECK(ints(x.clamp_max(Scalar(-big))) == std::vector<int64_t>{-big, -big, -big - 1, -big});
  Tensor y = x.clone();
  y.clamp_(Scalar(-big), Scalar(big + 2));
  CHECK(ints(y) == std::vector<int64_t>{big + 1, big + 2, -big, 5});
  // Bounds convert to the tensor's dtype: negative ones wrap for uint8 (-1 is 255), and
  // one outside a signed dtype's range is refused (PyTorch: "cannot be converted").
  Tensor u = tensor<int64_t>({1, 2, 200}).to(DType::U8);
  CHECK(ints(u.clamp_min(Scalar(-1)).to(DType::I64)) == std::vector<int64_t>{255, 255, 255});
  CHECK(ints(u.clamp_max(Scalar(-56)).to(DType::I64)) == std::vector<int64_t>{1, 2, 200});
  Tensor i8 = tensor<int64_t>({1, -4}).to(DType::I8);
  CHECK(ints(i8.clamp(Scalar(-2), Scalar(2)).to(DType::I64)) == std::vector<int64_t>{1, -2});
  CHECK_THROWS_WITH_AS(i8.clamp_min(Scalar(-200)), doctest::Contains("[clamp]"), Error);
  CHECK_THROWS_WITH_AS(i8.clamp_(Scalar(0), Scalar(128)), doctest::Contains("[clamp]"), Error);
}

TEST_CASE("edge values: sign and square of bool, all and any of uint8, as PyTorch") {
  const Tensor b = tensor<bool>({true, false});
  CHECK(b.sign().dtype() == DType::Bool);
  CHECK((b.sign() == b).all().item<bool>());
  Tensor bi = b.clone();
  CHECK((bi.sign_() == b).all().item<bool>());
  CHECK(b.square().dtype() == DType::I64);
  check_vals(b.square(), {1, 0}, 0);
  const Tensor u = tensor<int64_t>({0, 3, 5, 7}).to(DType::U8).view({2, 2});
  CHECK(u.all().dtype() == DType::U8);
  CHECK(u.any({1}).dtype() == DType::U8);
  check_vals(u.all(), {0}, 0);
  check_vals(u.any(), {1}, 0);
  check_vals(u.all({1}), {0, 1}, 0);
  CHECK(tensor<int64_t>({1, 2}).all().dtype() == DType::Bool);  // other dtypes give bool
}

TEST_CASE("edge values: f64 erf and erfc in vectors equal the library's (PyTorch's) values") {
  // xsimd's f64 forms were 67 ulp off at 2.203125, 4e-11 relative in erfc(10) and flushed
  // erfc(27) (subnormal) to 0; a tensor shorter than one vector got the library's values, so
  // a result depended on the tensor's length. 13 elements: whole vectors (2, 4 or 8 doubles)
  // and a tail; then the same values as every other element of a wider tensor (strided).
  const std::vector<double> xs = {2.203125, 10.0, 26.0,  27.0,    -3.0,    0.5, -0.0,
                                  1e-300,   5.5,  -26.5, 0.84375, 1.0, 3.25};
  const Tensor x = tensor(xs);
  std::vector<double> erf_want, erfc_want;
  for (double v : xs) erf_want.push_back(std::erf(v)), erfc_want.push_back(std::erfc(v));
  CHECK(vals(x.erf()) == erf_want);
  CHECK(vals(x.erfc()) == erfc_want);
  const Tensor strided = stack({x, zeros({13}, DType::F64)}, 1).view({-1}).index({Slice(0, None, 2)});
  REQUIRE(strided.stride(0) == 2);
  CHECK(vals(strided.erf()) == erf_want);
  CHECK(vals(strided.erfc()) == erfc_want);
  CHECK(vals(x.erfc()).at(3) > 0);  // subnormal, not 0
  // f32 (xsimd's flushed erfc's subnormal results, x > 9.19, to 0; PyTorch's are subnormal).
  const std::vector<float> xf = {9.0f, 9.2f, 9.3f, 9.5f, 10.0f, 10.05f, 10.1f, 8.0f, 9.25f};
  const std::vector<double> ef = vals(tensor(xf).erfc());
  for (size_t i = 0; i < xf.size(); ++i) {
    CAPTURE(xf[i]);
    CHECK(std::fabs(ef[i] - std::erfc(xf[i])) <= std::max<double>(std::numeric_limits<float>::denorm_min(), 6e-7 * std::erfc(xf[i])));
  }
  CHECK(ef.at(3) > 0);
}

TEST_CASE("edge values: exp and exp2 of vectors give subnormal results, as PyTorch and the C library") {
  // xsimd flushed them to 0 (exp(-100) in f32 is 3.8e-44). 19 values: whole vectors and a
  // tail, normal results beside subnormal ones, 0 below the smallest subnormal, and -inf.
  const std::vector<float> xs = {-100.0f, -87.5f, -103.9f, -104.5f, -90.0f, -95.0f, -101.0f, -87.0f, -1.0f, -60.0f,
                                 -86.9f,  -88.0f, -99.0f,  -102.0f, -103.0f, -91.5f, -97.25f, -150.0f,
                                 -std::numeric_limits<float>::infinity()};
  const Tensor x = tensor(xs);
  const std::vector<double> got = vals(x.exp()), got2 = vals((x * 1.45f).exp2()), x2 = vals(x * 1.45f);
  for (size_t i = 0; i < xs.size(); ++i) {
    // Within 1 ulp of the normal result, or 1 subnormal step (1.4e-45) of a subnormal one.
    const double want = std::exp(xs[i]), want2 = std::exp2(static_cast<float>(x2[i]));
    const double step = std::numeric_limits<float>::denorm_min();
    CAPTURE(xs[i]);
    CHECK(std::fabs(got[i] - want) <= std::max(step, 1.2e-7 * want));
    CHECK(std::fabs(got2[i] - want2) <= std::max(step, 1.2e-7 * want2));
  }
  CHECK(got.at(0) > 0);  // 3.8e-44, not 0
  // f64: exp(-720) is 2.0e-313.
  const std::vector<double> xd = {-710.0, -720.0, -745.0, -745.2, -708.5, -730.0, -740.0, -700.0, -1.0};
  const std::vector<double> gd = vals(tensor(xd).exp()), gd2 = vals((tensor(xd) * 1.45).exp2());
  for (size_t i = 0; i < xd.size(); ++i) {
    const double step = std::numeric_limits<double>::denorm_min();
    CHECK(std::fabs(gd[i] - std::exp(xd[i])) <= std::max(step, 2.3e-16 * std::exp(xd[i])));
    CHECK(std::fabs(gd2[i] - std::exp2(xd[i] * 1.45)) <= std::max(step, 2.3e-16 * std::exp2(xd[i] * 1.45)));
  }
}

TEST_CASE("edge values: the divisor's gradient is -(a / b) / b, as PyTorch (b^2 overflowed first)") {
  // f32, b = 1e30: b^2 is inf, so -a / b^2 gave NaN for a = inf and -0 for a = 1e30.
  Tensor a = tensor<float>({std::numeric_limits<float>::infinity(), 1e30f, 3.f}).requires_grad_();
  Tensor b = tensor<float>({1e30f, 1e30f, 2.f}).requires_grad_();
  (a / b).sum().backward();
  check_vals(b.grad(), {-kInf, -1e-30, -0.75});
  check_vals(a.grad(), {1e-30, 1e-30, 0.5});
}

TEST_CASE("edge values: elu, selu and celu keep the sign of zero whatever alpha's, as PyTorch 2") {
  Tensor z = tensor<double>({0.0, -0.0, -1e-300});
  for (const Tensor& y : {z.elu(-1.0), z.elu(1.0), z.celu(-1.0), z.celu(0.5), z.selu(), z.to(DType::F32).elu(-1.0),
                          z.to(DType::F32).selu(), z.to(DType::F16).elu(1.0)}) {
    std::vector<double> v = vals(y);
    CHECK((v[0] == 0 && !std::signbit(v[0]) && v[1] == 0 && std::signbit(v[1])));
  }
  CHECK(vals(z.elu(-1.0))[2] > 0);  // x < 0: alpha (exp(x) - 1), of alpha's sign
  CHECK(vals(z.elu(1.0))[2] < 0);
}

TEST_CASE("edge values: f16/bf16 times or over a 0-d operand of another dtype computes in f32, as PyTorch 2") {
  // The operand's own value, not the operand rounded to f16 first: 1e10 is inf in f16, so
  // 0 * f16(1e10) was NaN and inf / f16(1e10) NaN; 6e-8 rounds to the f16 subnormal 5.96e-8.
  Tensor h = tensor<float>({0.f, 1.f, -std::numeric_limits<float>::infinity(), 5.96046448e-8f}).to(DType::F16);
  check_vals(h * 1e10, {0, kInf, -kInf, 596.0}, 1e-3);
  check_vals(h / 1e10, {0, 0, -kInf, 0}, 0);  // 1 / 1e10 underflows f16 to 0
  const Tensor six = tensor<float>({6e-8f}).view({});        // a 0-d f32 tensor
  check_vals(h / six, {0, kInf, -kInf, 0.99365234375}, 0);  // f16(5.96e-8 / 6e-8), not 1
  check_vals(h.div(six, "floor"), {0, kInf, kNaN, 0}, 0);     // -inf // x is NaN (fmod-based, as PyTorch)
  check_vals(h.div(six, "trunc"), {0, kInf, -kInf, 0}, 0);
  check_vals(h * int64_t{100000}, {0, kInf, -kInf, 0.0059604644775390625}, 1e-3);  // 100000 is inf in f16
  // bf16: 1 + 2^-8 is a tie that bf16 rounds to 1, so 3 * bf16(1 + 2^-8) would be 3.
  check_vals(tensor<float>({3.f}).to(DType::BF16) * 1.00390625, {3.015625}, 0);
  // A scalar first is the second operand (s * t is t * s, as libtorch and Python).
  check_vals(1e10 * h, {0, kInf, -kInf, 596.0}, 1e-3);
  check_vals(mul(Scalar(1e10), h), {0, kInf, -kInf, 596.0}, 1e-3);
  // In place too, as Python's h.mul_(1e10) (libtorch's C++ Tensor::mul_(Scalar) rounds the
  // scalar first); where the operand is exact in f16 both ways agree (the one-pass kernel).
  Tensor g = h.clone();
  g.mul_(1e10);
  check_vals(g, {0, kInf, -kInf, 596.0}, 1e-3);
  CHECK(h.mul(1e10).version() == 0);  // a new result, not bumped as an in-place target
  check_vals(h * 0.5, {0, 0.5, -kInf, 0}, 0);  // half the smallest subnormal: a tie, to even (0)
  // Only mul and the divisions (add and sub round the operand first, as PyTorch 2).
  check_vals(h + 1e10, {kInf, kInf, kNaN, kInf}, 0);
  CHECK(h.mul(1e10).dtype() == DType::F16);
}

TEST_CASE("edge gradients: atan2 at the origin and fmax/fmin ties, as PyTorch 2") {
  // The reciprocal of a^2 + b^2 is taken as 0 where that sum is 0 (libtorch 1.13: NaN).
  Tensor a = leaf({0, 1e-200, 1, 0, 0}), b = leaf({0, 0, 0, 1e-200, -0.0});
  a.atan2(b).sum().backward();
  check_vals(a.grad(), {0, 0, 0, 0, 0}, 0);
  check_vals(b.grad(), {0, 0, -1, 0, 0}, 0);
  CHECK(std::signbit(vals(a.grad())[4]));   // g * b * 0 with b = -0
  CHECK(std::signbit(vals(b.grad())[0]));   // g * -a * 0 with a = +0
  // fmax/fmin: ties share the gradient (as maximum/minimum); a NaN side loses to a number.
  Tensor x = leaf({1, 2, kInf, kNaN, 1, kNaN}), y = leaf({1, 1, kInf, 1, kNaN, kNaN});
  x.fmax(y).sum().backward();
  check_vals(x.grad(), {0.5, 1, 0.5, 0, 1, 1}, 0);
  check_vals(y.grad(), {0.5, 0, 0.5, 1, 0, 0}, 0);
  Tensor x2 = leaf({1, 2, kInf, kNaN, 1, kNaN}), y2 = leaf({1, 1, kInf, 1, kNaN, kNaN});
  x2.fmin(y2).sum().backward();
  check_vals(x2.grad(), {0.5, 0, 0.5, 0, 1, 1}, 0);
  check_vals(y2.grad(), {0.5, 1, 0.5, 1, 0, 0}, 0);
  // clamp with scalar bounds: strictly inside only (libtorch 1.13 passed g at a bound).
  check_vals(grad_of(leaf({0.5, 1, 2, 3, 3.5, kNaN}), [](const Tensor& t) { return t.clamp(1.0, 3.0); }),
             {0, 0, 3, 0, 0, 0}, 0);
  check_vals(grad_of(leaf({1, 2, 3}), [](const Tensor& t) { return t.clamp_max(3.0); }), {1, 2, 0}, 0);
}

TEST_CASE("clamp with tensor bounds: one result type over all three operands, as PyTorch") {
  // Pairwise, x with lo and then that with hi, lost a 0-d bound's rank after the first step.
  const Tensor x = tensor<int64_t>({5, -5});
  const Tensor y1 = x.clamp(tensor<double>({0}).view({}), tensor<float>({1, 1}));
  CHECK(y1.dtype() == DType::F32);
  check_vals(y1, {1, 0}, 0);
  CHECK(x.clamp(tensor<float>({0}).view({}), tensor<double>({2}).view({})).dtype() == DType::F64);
  CHECK(x.clamp(tensor<int32_t>({0}).view({}), tensor<int32_t>({3, 3})).dtype() == DType::I64);  // both dimensioned
  CHECK(tensor<float>({1, 7}).clamp(tensor<double>({2}).view({}), tensor<double>({5}).view({})).dtype() == DType::F32);
}

TEST_CASE("clamp and lerp with tensor operands name themselves in their errors") {
  const Tensor a = zeros({2}), b = zeros({3});
  CHECK_THROWS_WITH_AS(a.clamp(a, b), doctest::Contains("[clamp] shapes [2] and [3]"), Error);
  CHECK_THROWS_WITH_AS(a.lerp(a, b), doctest::Contains("[lerp] shapes [2] and [3]"), Error);
}

TEST_CASE("edge gradients: lerp's are PyTorch's g (1 - w), g w, g (end - start), also at inf and -0") {
  // Through the where of lerp's two forms, the unselected one's inf * 0 gave NaN, and
  // g - g (1 - w) lost the sign of a -0 weight.
  Tensor s = leaf({kInf, -0.0, 1}), e = leaf({kInf, -0.0, 3}), w = leaf({kInf, -0.0, 0.75});
  (s.lerp(e, w) * tensor<double>({1, 2, 3})).sum().backward();
  check_vals(s.grad(), {-kInf, 2, 0.75}, 0);
  check_vals(e.grad(), {kInf, 0, 2.25}, 0);
  check_vals(w.grad(), {kNaN, 0, 6}, 0);
  CHECK(std::signbit(vals(e.grad())[1]));
  check_vals(tensor<double>({1, 1}).lerp(tensor<double>({3, 3}), tensor<double>({0.25, 0.75})), {1.5, 2.5}, 0);
}

TEST_CASE("edge gradients: sign, floor, ceil, round and trunc pass exact +0, whatever the incoming gradient") {
  // PyTorch's derivative is zeros_like(grad): +0 also for a negative, infinite or NaN grad
  // (g * 0 would give -0 and NaN there), and a 0-norm (a count) takes the same zero.
  for (int op = 0; op < 5; ++op) {
    CAPTURE(op);
    Tensor x = tensor<double>({-1.5, 0.25, 2.5}).requires_grad_();
    Tensor y = op == 0 ? x.sign() : op == 1 ? x.floor() : op == 2 ? x.ceil() : op == 3 ? x.round() : x.trunc();
    y.backward(tensor<double>({-2.0, -kInf, kNaN}));
    for (double g : vals(x.grad())) {
      CHECK(g == 0);
      CHECK(!std::signbit(g));
    }
  }
  // The same for the piecewise-constant binary ops: floor/trunc division, copysign's sign
  // operand.
  for (int op = 0; op < 3; ++op) {
    CAPTURE(op);
    Tensor a = tensor<double>({3, 5}).requires_grad_(), b = tensor<double>({2, -2}).requires_grad_();
    Tensor y = op == 0 ? a.div(b, "floor") : op == 1 ? a.div(b, "trunc") : a.copysign(b);
    y.backward(tensor<double>({-1.0, kInf}));
    for (const Tensor& t : {a, b}) {
      if (op == 2 && t.is_same(a)) continue;  // copysign's magnitude operand takes +-g
      for (double g : vals(t.grad())) {
        CHECK(g == 0);
        CHECK(!std::signbit(g));
      }
    }
  }
  Tensor x = tensor<double>({-1.5, 0.0, kNaN, 2.0}).requires_grad_();
  Tensor n = x.norm(0.0);
  CHECK(n.item<double>() == 3);  // NaN counts, as PyTorch
  n.backward(full({}, -1.0, TensorOptions(DType::F64)));
  for (double g : vals(x.grad())) {
    CHECK(g == 0);
    CHECK(!std::signbit(g));
  }
}

TEST_CASE("f16/bf16 norms sum in f32 and round once, as PyTorch 2") {
  // sum |x|^3 = 2.008e6 is beyond f16's 65504; the norm, 126.1, is not.
  for (DType t : {DType::F16, DType::BF16}) {
    Tensor x = tensor<double>({100, -100, 20}).to(t);
    for (double p : {3.0, 2.0, 0.5}) {
      CAPTURE(p);
      Tensor n = x.norm(p);
      CHECK(n.dtype() == t);
      const double want = std::pow(2 * std::pow(100.0, p) + std::pow(20.0, p), 1 / p);
      CHECK(n.item<double>() == doctest::Approx(want).epsilon(t == DType::F16 ? 1e-3 : 8e-3));
    }
  }
}

}  // namespace test_pytorch_edges
