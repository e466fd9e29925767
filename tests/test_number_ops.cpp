// gcd, lcm, frexp (ops/integer_math.hpp), inner (ops/matrix_builders.hpp) and unravel_index
// (ops/free_forms.hpp). Expected values are PyTorch 1.13's for the same calls (unravel_index,
// which 1.13 lacks: NumPy's, with PyTorch 2's negative indices).

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace test_number_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;
using ember_test::error_of;
using ember_test::has;

TEST_CASE("gcd and lcm: signs, zeros, INT64_MIN, broadcasting and promotion") {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const Tensor a = tensor<int64_t>({-12, 0, 7, 0, kMin});
  const Tensor b = tensor<int64_t>({18, 0, -21, -5, 0});
  CHECK(ints(gcd(a, b)) == I{6, 0, 7, 5, kMin});
  CHECK(ints(lcm(tensor<int64_t>({-4, 0, 6, 3}), tensor<int64_t>({6, 5, -4, -7}))) == I{12, 0, 12, 21});
  // Broadcasting, and PyTorch's promotion (u8 with i8 is i16 there; Ember's next wider is i32).
  const Tensor g = gcd(tensor<int64_t>({12, 18, 30}).to(DType::I32).view({3, 1}), tensor<int64_t>({4, 9}).to(DType::I32));
  CHECK(g.dtype() == DType::I32);
  CHECK(g.sizes() == Shape{3, 2});
  CHECK(ints(g) == I{4, 3, 2, 9, 2, 3});
  CHECK(gcd(tensor<int64_t>({4}).to(DType::U8), tensor<int64_t>({6}).to(DType::I8)).dtype() == DType::I32);
  CHECK(gcd(tensor<int64_t>({4}).to(DType::U8), scalar_tensor(6, DType::I64)).dtype() == DType::U8);  // 0-d: lower rank
  // The 0-d operand is first cast to the result dtype, as PyTorch's kernel sees it: 300 is
  // i8's 44 (PyTorch 1.13: gcd = 2, lcm = -124) and -4 is u8's 252.
  const Tensor i8_6 = tensor<int64_t>({6}).to(DType::I8);
  CHECK(ints(gcd(i8_6, scalar_tensor(300, DType::I64))) == I{2});
  CHECK(ints(lcm(i8_6, scalar_tensor(300, DType::I64))) == I{-124});
  CHECK(ints(gcd(tensor<int64_t>({6}).to(DType::U8), scalar_tensor(-4, DType::I64))) == I{6});
  CHECK(ints(tensor<int64_t>({8}).gcd(tensor<int64_t>({12}))) == I{4});
  Tensor x = tensor<int64_t>({4, 6});
  x.lcm_(tensor<int64_t>({6}));
  CHECK(ints(x) == I{12, 6});
  x.gcd_(tensor<int64_t>({8}));
  CHECK(ints(x) == I{4, 2});
  // Overflow wraps in the dtype, then the magnitude is taken there (PyTorch 1.13's values).
  const Tensor i32a = tensor<int64_t>({46341, -2147483648LL}).to(DType::I32);
  const Tensor i32b = tensor<int64_t>({46343, 0}).to(DType::I32);
  CHECK(ints(lcm(i32a, i32b)) == I{2147386333, 0});
  CHECK(ints(gcd(i32a, i32b)) == I{1, -2147483648LL});
  // Narrower than int: computed in int, then narrowed (PyTorch: lcm(int8 12, int8 -11) = -124).
  CHECK(ints(lcm(tensor<int64_t>({12}).to(DType::I8), tensor<int64_t>({-11}).to(DType::I8))) == I{-124});
  CHECK(has(error_of([] { gcd(tensor<float>({4}), tensor<float>({6})); }), "[gcd] expects integer tensors, got f32"));
  CHECK(has(error_of([] { lcm(tensor<int64_t>({1, 2}), tensor<int64_t>({1, 2, 3})); }), "[lcm]"));
  CHECK(has(error_of([] { gcd(tensor<bool>({true}), tensor<bool>({true})); }), "[gcd] expects integer tensors"));
}

TEST_CASE("frexp: mantissa in [0.5, 1) and exponent, subnormals, specials, every floating dtype") {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = tensor<float>({0.f, -0.f, 1.f, -3.5f, static_cast<float>(inf), 1e-40f, 6.f});
  auto [m, e] = frexp(x);
  CHECK(m.dtype() == DType::F32);
  CHECK(e.dtype() == DType::I32);
  const F mv = vals(m);
  CHECK(mv[0] == 0);
  CHECK(std::signbit(mv[1]));
  CHECK(mv[2] == 0.5);
  CHECK(mv[3] == -0.875);
  CHECK(mv[4] == inf);
  CHECK(mv[5] == doctest::Approx(0.5444).epsilon(1e-3));
  CHECK(mv[6] == 0.75);
  CHECK(ints(e) == I{0, 0, 1, 2, 0, -132, 3});
  CHECK(std::isnan(vals(frexp(tensor<double>({std::nan("")})).first)[0]));
  // m * 2^e rebuilds x exactly.
  const Tensor y = randn({50}, DType::F64) * 1e5;
  auto [my, ey] = y.frexp();
  CHECK(vals(my.ldexp(ey)) == vals(y));
  auto [mh, eh] = frexp(tensor<double>({0.75, 1e-5}).to(DType::F16));
  CHECK(mh.dtype() == DType::F16);
  CHECK(vals(mh) == F{0.75, 0.65625});
  CHECK(ints(eh) == I{0, -16});
  CHECK(has(error_of([] { frexp(tensor<int64_t>({1})); }), "[frexp] expects a floating tensor, got i64"));
  // The mantissa's gradient is 2^-exponent (PyTorch 1.13: [0.25, 8, inf] in f32), its values
  // those of the plain path.
  const Tensor z = tensor<float>({3.f, 0.1f, 1e-40f}).requires_grad_();
  auto [mz, ez] = frexp(z);
  CHECK(vals(mz) == vals(frexp(z.detach()).first));
  mz.sum().backward();
  const F gz = vals(z.grad());
  CHECK(gz[0] == 0.25);
  CHECK(gz[1] == 8);
  CHECK(std::isinf(gz[2]));
  check_grads([](const TensorList& t) { return frexp(t[0]).first; }, {leaf(tensor<double>({3, -0.1, 7e5}))},
              "frexp");
}

TEST_CASE("nextafter: the neighbouring value toward the other operand, as PyTorch 1.13's") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const Tensor a = tensor<double>({1, 0, 1, nan, -0.0, 3});
  const Tensor b = tensor<double>({2, 1, 1, 1, 0, -inf});
  const F f32 = vals(nextafter(a.to(DType::F32), b.to(DType::F32)));
  CHECK(f32[0] == 1.0000001192092896);
  CHECK(f32[1] == 1.401298464324817e-45);
  CHECK(f32[2] == 1);
  CHECK(std::isnan(f32[3]));
  CHECK(f32[4] == 0);
  CHECK_FALSE(std::signbit(f32[4]));  // b itself where they are equal
  CHECK(f32[5] == 2.999999761581421);
  const F f64 = vals(a.nextafter(b));
  CHECK(f64[0] == 1.0000000000000002);
  CHECK(f64[1] == 5e-324);
  CHECK(f64[5] == 2.9999999999999996);
  const Tensor bf = nextafter(tensor<double>({1, 1, 0, -2}).to(DType::BF16), tensor<double>({2, 0, -1, -inf}).to(DType::BF16));
  CHECK(bf.dtype() == DType::BF16);
  const F bv = vals(bf);
  CHECK(bv[0] == 1.0078125);  // PyTorch 1.13: 1.0078
  CHECK(bv[1] == 1 - 1.0 / 256);
  CHECK(bv[2] < 0);
  CHECK(bv[2] > -1e-38);
  CHECK(bv[3] == -2.015625);
  CHECK(nextafter(tensor<float>({1.f}), tensor<double>({2.0})).dtype() == DType::F64);  // promoted
  // Operands rounded to the result's dtype first, as PyTorch's: equal there, so b.
  const Tensor one_bf16 = tensor<double>({1}).to(DType::BF16);
  CHECK(vals(nextafter(one_bf16, scalar_tensor(1.001, DType::F64))) == F{1});
  CHECK(vals(nextafter(tensor<int64_t>({257}), tensor<double>({256}).to(DType::BF16))) == F{256});
  CHECK(vals(nextafter(scalar_tensor(1e-50, DType::F64), tensor<double>({0}).to(DType::BF16))) == F{0});
  Tensor inplace = tensor<float>({1.f, 2.f});
  inplace.nextafter_(tensor<float>({0.f}));
  CHECK(vals(inplace) == F{0.99999994039535522, 1.9999998807907104});
  CHECK(ember_test::has(ember_test::error_of([] { nextafter(tensor<int64_t>({1}), tensor<int64_t>({2})); }),
                        "[nextafter] expects f32, f64 or bf16 tensors, got i64 and i64"));
  CHECK(ember_test::has(ember_test::error_of([] { nextafter(tensor<float>({1}).to(DType::F16), tensor<float>({2}).to(DType::F16)); }),
                        "[nextafter] expects f32, f64 or bf16"));
}

TEST_CASE("inner: sums over both last dims; a 0-d operand multiplies") {
  const Tensor a = arange(6).to(DType::F64).view({2, 3});
  const Tensor b = arange(12).to(DType::F64).view({4, 3});
  const Tensor r = inner(a, b);
  CHECK(r.sizes() == Shape{2, 4});
  // row i of a with row j of b, by hand
  F want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += (3 * i + k) * (3 * j + k);
      want.push_back(s);
    }
  CHECK(vals(r) == want);
  CHECK(vals(inner(tensor<double>({1, 2, 3}), tensor<double>({4, 5, 6}))) == F{32});
  CHECK(vals(inner(scalar_tensor(2.0, DType::F64), tensor<double>({1, 3}))) == F{2, 6});
  CHECK(has(error_of([&] { inner(a, a.t()); }), "[inner] the last dims must match, got shapes [2, 3] and [3, 2]"));
  const Tensor la = leaf(a), lb = leaf(b);
  inner(la, lb).sum().backward();
  CHECK(vals(la.grad()) == vals(b.sum({0}).expand({2, 3})));
}

TEST_CASE("unravel_index: coordinates of flat indices, negative ones from the end") {
  const Tensor idx = tensor<int64_t>({4, 1, 5, -1, 0}).view({5});
  const std::vector<Tensor> c = unravel_index(idx, {2, 3});
  REQUIRE(c.size() == 2);
  CHECK(ints(c[0]) == I{1, 0, 1, 1, 0});
  CHECK(ints(c[1]) == I{1, 1, 2, 2, 0});
  CHECK(c[0].dtype() == DType::I64);
  const std::vector<Tensor> c3 = unravel_index(tensor<int32_t>({{23, 7}}), {2, 3, 4});
  CHECK(c3[0].sizes() == Shape{1, 2});
  CHECK(ints(c3[0]) == I{1, 0});
  CHECK(ints(c3[1]) == I{2, 1});
  CHECK(ints(c3[2]) == I{3, 3});
  CHECK(unravel_index(empty({0}, DType::I64), {0, 3})[1].numel() == 0);
  CHECK(has(error_of([&] { unravel_index(idx, {2, 2}); }), "[unravel_index] index 5 is outside [-4, 4) for shape [2, 2]"));
  CHECK(has(error_of([&] { unravel_index(tensor<int64_t>({-7}), {2, 3}); }), "index -7 is outside [-6, 6)"));
  CHECK(has(error_of([] { unravel_index(tensor<float>({1.f}), {2}); }), "[unravel_index] expects an integer tensor"));
}

}  // namespace test_number_ops
