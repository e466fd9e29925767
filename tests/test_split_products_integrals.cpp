// libtorch's smaller functions: tensor_split, hsplit/vsplit/dsplit, column_stack, dstack,
// broadcast_tensors, ravel; mv, addmv, addr, addbmm, vdot; std_mean, msort, isposinf/isneginf,
// floor_divide, logspace; trapezoid and cumulative_trapezoid. Expected values are PyTorch
// 1.13's for the same calls (written down by hand from a Python session); gradchecks in f64;
// errors.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace test_split_products_integrals {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;
using V = TensorList;

namespace {
std::vector<F> all_vals(const std::vector<Tensor>& ts) {
  std::vector<F> out;
  for (const Tensor& t : ts) out.push_back(vals(t));
  return out;
}
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("tensor_split, hsplit, vsplit, dsplit: numpy's pieces, as views") {
  const Tensor x = arange(10.0);
  CHECK(all_vals(tensor_split(x, 3)) == std::vector<F>{{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  // Indices are slice bounds: negative from the end, clamped, a lower one gives an empty piece.
  CHECK(all_vals(x.tensor_split(I{2, -3, 1, 20})) ==
        std::vector<F>{{0, 1}, {2, 3, 4, 5, 6}, {}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {}});
  std::vector<int64_t> sizes;
  for (const Tensor& t : tensor_split(arange(2.0), 4)) sizes.push_back(t.numel());
  CHECK(sizes == I{1, 1, 0, 0});
  const Tensor m = arange(12.0).view({3, 4});
  const auto cols = m.tensor_split(2, 1);
  CHECK(cols[1].data_ptr<float>() == m.data_ptr<float>() + 2);  // a view
  CHECK(all_vals(hsplit(m, 2)) == std::vector<F>{{0, 1, 4, 5, 8, 9}, {2, 3, 6, 7, 10, 11}});
  CHECK(all_vals(hsplit(m, I{1, 3})) == std::vector<F>{{0, 4, 8}, {1, 2, 5, 6, 9, 10}, {3, 7, 11}});
  CHECK(all_vals(hsplit(arange(4.0), 2)) == std::vector<F>{{0, 1}, {2, 3}});  // 1-D: along dim 0
  CHECK(all_vals(vsplit(m, I{1})) == std::vector<F>{{0, 1, 2, 3}, {4, 5, 6, 7, 8, 9, 10, 11}});
  const auto depth = dsplit(arange(24.0).view({2, 3, 4}), 2);
  REQUIRE(depth.size() == 2);
  for (const Tensor& t : depth) CHECK(t.sizes() == Shape{2, 3, 2});

  CHECK_ERROR(tensor_split(full({}, 1.0), 2), "[tensor_split]", "0-d");
  CHECK_ERROR(tensor_split(x, 0), "[tensor_split]", "positive", "0");
  CHECK_ERROR(tensor_split(m, 2, 2), "[tensor_split]");
  CHECK_ERROR(hsplit(m, 3), "[hsplit]", "size 4", "3 equal sections");
  CHECK_ERROR(vsplit(arange(4.0), 2), "[vsplit]", "at least 2 dims", "[4]");
  CHECK_ERROR(dsplit(m, I{1}), "[dsplit]", "at least 3 dims", "[3, 4]");
  check_grads([](const V& v) { return tensor_split(v[0], I{1, 3}, 1)[1] * 3.0; }, {leaf(m)}, "tensor_split");
}

TEST_CASE("column_stack, dstack, broadcast_tensors, ravel") {
  const Tensor cs =
      column_stack({tensor({1.0, 2.0}), tensor({3.0, 4.0, 5.0, 6.0}).view({2, 2}), full({2}, 7.0, DType::F64)});
  CHECK(cs.sizes() == Shape{2, 4});
  CHECK(vals(cs) == F{1, 3, 4, 7, 2, 5, 6, 7});
  CHECK(vals(column_stack({full({}, 1.0), full({}, 2.0)})) == F{1, 2});
  CHECK(column_stack({full({}, 1.0), full({}, 2.0)}).sizes() == Shape{1, 2});
  const Tensor ds = dstack({tensor({1.0, 2.0}), tensor({3.0, 4.0})});
  CHECK(ds.sizes() == Shape{1, 2, 2});
  CHECK(vals(ds) == F{1, 3, 2, 4});
  CHECK_ERROR(column_stack(std::vector<Tensor>{}), "[column_stack]", "non-empty");
  CHECK_ERROR(dstack(std::vector<Tensor>{}), "[dstack]", "non-empty");

  const Tensor w = arange(3.0), b = full({2, 1}, 5.0);
  const auto bt = broadcast_tensors({w, b, full({}, 1.0)});
  REQUIRE(bt.size() == 3);
  for (const Tensor& t : bt) CHECK(t.sizes() == Shape{2, 3});
  CHECK(bt[0].data_ptr<float>() == w.data_ptr<float>());  // views
  CHECK(vals(bt[1]) == F{5, 5, 5, 5, 5, 5});
  CHECK_ERROR(broadcast_tensors({w, arange(4.0)}), "[broadcast_tensors]", "[3]", "[4]");

  const Tensor mt = arange(6.0).view({2, 3}).t();
  CHECK(vals(ravel(mt)) == F{0, 3, 1, 4, 2, 5});
  CHECK(mt.ravel().sizes() == Shape{6});
  const Tensor c = arange(6.0);
  CHECK(c.view({2, 3}).ravel().data_ptr() == c.data_ptr());  // contiguous: a view
  // Always contiguous, as PyTorch's: a strided or expanded 1-D tensor is copied.
  const Tensor every_other = c.index({Slice(0, None, 2)});
  const Tensor r = ravel(every_other);
  CHECK(r.is_contiguous());
  CHECK(r.data_ptr() != c.data_ptr());
  CHECK(vals(r) == F{0, 2, 4});
  CHECK(ravel(full({}, 2.0).expand({3})).is_contiguous());
}

TEST_CASE("mv, addmv, addr, addbmm, vdot") {
  const Tensor a = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).view({2, 3}), v = tensor({1.0, -1.0, 2.0});
  CHECK(vals(mv(a, v)) == F{5, 11});
  CHECK(vals(a.mv(v)) == F{5, 11});
  CHECK(vals(addmv(tensor({10.0, 20.0}), a, v, 0.5, 2)) == F{15, 32});
  CHECK(vals(tensor({10.0}).addmv(a, v)) == F{15, 21});
  CHECK(vals(full({}, 1.0, DType::F64).addmv(a, v)) == F{6, 12});
  // beta = 0: the input is ignored, NaN included (PyTorch's rule).
  CHECK(vals(addmv(tensor({kNaN, 1.0}), a, v, 0)) == F{5, 11});
  CHECK(vals(addr(ones({2, 3}, DType::F64), tensor({1.0, 2.0}), tensor({3.0, 4.0, 5.0}), 2, -1)) ==
        F{-1, -2, -3, -4, -6, -8});
  const Tensor b1 = arange(12, DType::F64).view({2, 2, 3}), b2 = arange(12, DType::F64).view({2, 3, 2}) - 5;
  const Tensor in = tensor({1.0, 2.0, 3.0, 4.0}).view({2, 2});
  CHECK(vals(addbmm(in, b1, b2, 0.5, 0.25)) == F{16, 22.5, 17, 28});
  CHECK(vals(in.addbmm(b1, b2)) == vals(in + b1.bmm(b2).sum({0})));
  CHECK(vdot(tensor({1.0, 2.0, 3.0}), tensor({4.0, -5.0, 6.0})).item<double>() == 12);

  CHECK_ERROR(mv(a, tensor({1.0, 2.0})), "[mv]", "[2, 3]", "[2]");
  CHECK_ERROR(mv(v, v), "[mv]");
  CHECK_ERROR(addmv(tensor({1.0, 2.0, 3.0}), a, v), "[addmv]", "[3]", "[2]");
  CHECK_ERROR(addr(in, a, v), "[addr]", "two vectors");
  CHECK_ERROR(addbmm(in, b1, b1), "[addbmm]", "[2, 2, 3]");
  CHECK_ERROR(vdot(v, tensor({1.0})), "[vdot]", "[3]", "[1]");

  check_grads([](const V& t) { return addmv(t[0], t[1], t[2], 0.5, 2); },
              {leaf(tensor({1.0, 2.0})), leaf(a), leaf(v)}, "addmv");
  check_grads([](const V& t) { return addr(t[0], t[1], t[2], 2, -1); },
              {leaf(ones({2, 3})), leaf(tensor({1.0, 2.0})), leaf(v)}, "addr");
  check_grads([](const V& t) { return addbmm(t[0], t[1], t[2], 0.5, 0.25); }, {leaf(in), leaf(b1), leaf(b2)},
              "addbmm");
}

TEST_CASE("std_mean, msort, isposinf and isneginf, floor_divide, logspace") {
  const Tensor y = tensor({1.0, 4.0, 9.0, 16.0, 2.0, 3.0, 5.0, 7.0}).view({2, 4});
  auto [s, mu] = std_mean(y, {1});
  CHECK(close_relative(s, {std::sqrt(129.0 / 3), std::sqrt(14.75 / 3)}, 1e-14));  // sums of squares 129, 14.75
  CHECK(vals(mu) == F{7.5, 4.25});
  auto [s0, mu0] = std_mean(y, {1}, 0, true);
  CHECK(s0.sizes() == Shape{2, 1});
  CHECK(close_relative(s0, {std::sqrt(129.0 / 4), std::sqrt(14.75 / 4)}, 1e-14));
  auto [v, m] = var_mean(y);
  CHECK(close_relative(v, {std::pow(vals(y.std())[0], 2)}, 1e-12));
  // std's gradient where the std is 0 is 0 (as std's own, and PyTorch's), not NaN.
  const Tensor flat = ones({3}, DType::F64).requires_grad_();
  auto [sf, mf] = std_mean(flat);
  (sf + mf).backward();
  CHECK(vals(flat.grad()) == F{1.0 / 3, 1.0 / 3, 1.0 / 3});
  check_grads([](const V& t) { auto [sd, mean] = std_mean(t[0], {1}); return sd * mean; }, {leaf(y)}, "std_mean");

  const Tensor ms = msort(tensor({3.0, 1.0, 1.0, 2.0, 2.0, kNaN}).view({3, 2}));
  const F msv = vals(ms);
  CHECK(F(msv.begin(), msv.end() - 1) == F{1, 1, 2, 2, 3});
  CHECK(std::isnan(msv.back()));  // NaN sorts last
  CHECK(msort(full({}, 1.0)).item<float>() == 1);  // 0-d: itself, as PyTorch's

  const Tensor fl = tensor<float>({1.0f, INFINITY, -INFINITY, NAN});
  CHECK(ints(isposinf(fl)) == I{0, 1, 0, 0});
  CHECK(ints(isneginf(fl)) == I{0, 0, 1, 0});
  CHECK(isposinf(fl).dtype() == DType::Bool);
  CHECK(ints(isneginf(fl.to(DType::F16))) == I{0, 0, 1, 0});
  CHECK(ints(isposinf(tensor<int64_t>({1, 2}))) == I{0, 0});  // integers hold no infinity

  CHECK(ints(floor_divide(tensor<int64_t>({7, -7, 7, -7}), tensor<int64_t>({2, 2, -2, -2}))) == I{3, -4, -4, 3});
  CHECK(vals(floor_divide(tensor({-7.5, 7.5}), 2)) == F{-4, 3});

  const Tensor ls = logspace(-1, 2, 4);
  CHECK(ls.dtype() == DType::F32);
  CHECK(vals(ls) == F{double(0.1f), 1, 10, 100});
  CHECK(vals(logspace(0, 3, 4, 2.0, DType::F64)) == F{1, 2, 4, 8});
  CHECK(ints(logspace(0, 2, 3, 10.0, DType::I64)) == I{1, 10, 100});
  // Integer dtypes truncate start and end first, as PyTorch's: 10^0.5 is not 3 here.
  CHECK(ints(logspace(0.5, 2.5, 3, 10.0, DType::I64)) == I{1, 10, 100});
  CHECK(ints(logspace(0.5, 9, 1, 10.0, DType::I32)) == I{1});
  CHECK(logspace(0, 1, 3, 10.0, TensorOptions().requires_grad(true)).requires_grad());
  CHECK(logspace(0, 1, 0).numel() == 0);
  CHECK_ERROR(logspace(0, 1, -1), "[logspace]", "-1");
}

TEST_CASE("trapezoid and cumulative_trapezoid, with spacing or sample points") {
  const Tensor y = tensor({1.0, 4.0, 9.0, 16.0, 2.0, 3.0, 5.0, 7.0}).view({2, 4});
  CHECK(vals(trapezoid(y)) == F{21.5, 12.5});
  CHECK(vals(trapezoid(y, 0.5, 0)) == F{0.75, 1.75, 3.5, 5.75});
  const Tensor xs = tensor({0.0, 1.0, 3.0, 6.0});
  CHECK(vals(trapezoid(y, xs)) == F{53, 28.5});
  CHECK(vals(trapezoid(y, tensor({0.0, 1.0, 3.0, 6.0, 0.0, 2.0, 4.0, 8.0}).view({2, 4}))) == F{53, 37});
  CHECK(vals(cumulative_trapezoid(y)) == F{2.5, 9, 21.5, 2.5, 6.5, 12.5});
  CHECK(vals(cumulative_trapezoid(y, xs)) == F{2.5, 15.5, 53, 2.5, 10.5, 28.5});
  const Tensor cd = cumulative_trapezoid(y, 2.0, 0);
  CHECK(cd.sizes() == Shape{1, 4});
  CHECK(vals(cd) == F{3, 7, 14, 23});
  // Integers integrate in floating point; one sample or none integrate to 0.
  CHECK(trapezoid(tensor<int64_t>({1, 2, 4})).item<double>() == 4.5);
  CHECK(trapezoid(tensor({5.0})).item<double>() == 0);
  CHECK(vals(trapezoid(zeros({2, 0}))) == F{0, 0});
  CHECK(trapezoid(zeros({2, 0}, DType::I32)).dtype() == DType::I32);  // no samples: y's dtype
  CHECK(cumulative_trapezoid(zeros({2, 0})).sizes() == Shape{2, 0});
  CHECK(cumulative_trapezoid(zeros({2, 0}), zeros({0}, DType::F64)).sizes() == Shape{2, 0});
  CHECK_ERROR(cumulative_trapezoid(zeros({2, 0}), tensor({1.0, 2.0})), "[cumulative_trapezoid]", "one point");

  CHECK_ERROR(trapezoid(y, tensor({0.0, 1.0})), "[trapezoid]", "one point per sample", "[2]");
  CHECK_ERROR(trapezoid(full({}, 1.0)), "[trapezoid]", "0-d");
  CHECK_ERROR(trapezoid(tensor<bool>({true, false})), "[trapezoid]", "bool");
  CHECK_ERROR(cumulative_trapezoid(y, 1.0, 2), "[cumulative_trapezoid]");
  check_grads([&](const V& t) { return trapezoid(t[0], t[1]); }, {leaf(y), leaf(xs)}, "trapezoid");
  check_grads([](const V& t) { return cumulative_trapezoid(t[0], 0.5, 0); }, {leaf(y)}, "cumulative_trapezoid");
}

}  // namespace test_split_products_integrals
