// isin, unique_consecutive, combinations (ops/set_ops.hpp): PyTorch 1.13's results, promotion,
// NaN and signed zeros, every dim, empty and 0-d inputs, gradients, errors.

#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace test_set_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

TEST_CASE("isin: PyTorch's results, promotion before comparing, NaN in nothing, invert") {
  CHECK(ints(isin(tensor<double>({1, 2, 3, kNaN}), tensor<double>({2, kNaN}))) == I{0, 1, 0, 0});
  CHECK(ints(isin(tensor({1, 2, 3}), tensor({2.5f, 3.0f}))) == I{0, 0, 1});
  CHECK(ints(isin(tensor({1, 2}), 2)) == I{0, 1});
  const Tensor one = isin(2, tensor({1, 2}));
  CHECK(one.dim() == 0);
  CHECK(one.item<bool>());
  CHECK(ints(isin(tensor({1, 2, 3, 4}).view({2, 2}), tensor({4}).view({1, 1}), false, true)) == I{1, 1, 1, 0});
  // Compared in the promoted dtype: 2^24 + 1 as f32 is 2^24 (PyTorch: true).
  CHECK(ints(isin(tensor({int64_t{16777217}}), tensor({16777216.0f}))) == I{1});
  CHECK(ints(isin(tensor({-0.0f, 1e20f, 3.0f}), tensor({0.0f, 1e20f, 2.0f}))) == I{1, 1, 0});
  CHECK(ints(isin(tensor({1, 2}).to(DType::U8), tensor({2}).to(DType::I8))) == I{0, 1});
  // Integers beyond 2^53 stay exact (compared as i64, not through double).
  const int64_t big = (int64_t{1} << 60) + 1;
  CHECK(ints(isin(tensor({big, big - 1}), tensor({big}))) == I{1, 0});
  // Shapes, dtypes and the empty cases.
  const Tensor r = isin(randn({3, 4, 5}), tensor({0.0f}));
  CHECK(r.sizes() == Shape{3, 4, 5});
  CHECK(r.dtype() == DType::Bool);
  CHECK(isin(zeros({0, 3}), tensor({1.0f})).sizes() == Shape{0, 3});
  CHECK(ints(isin(tensor({1.0f, 2.0f}), zeros({0}))) == I{0, 0});
  CHECK(ints(isin(tensor({1.0f, 2.0f}), zeros({0}), false, true)) == I{1, 1});
  // Against a plain double loop on random integers (many duplicates).
  manual_seed(5);
  const Tensor e = randint(0, 50, {200}), t = randint(0, 50, {30});
  const I ev = ints(e), tv = ints(t), got = ints(isin(e, t));
  for (size_t i = 0; i < ev.size(); ++i)
    CHECK(got[i] == (std::find(tv.begin(), tv.end(), ev[i]) != tv.end() ? 1 : 0));
  CHECK_ERROR(isin(Tensor(), tensor({1})), "[isin]", "defined");
  CHECK_ERROR(isin(Tensor(), 2), "[isin]", "defined");
}

TEST_CASE("unique_consecutive: runs, inverse and counts, NaN and -0, along a dim") {
  auto [v, inv, cnt] = unique_consecutive(tensor({1, 1, 2, 2, 3, 1, 1, 2}), true, true);
  CHECK(ints(v) == I{1, 2, 3, 1, 2});
  CHECK(ints(inv) == I{0, 0, 1, 1, 2, 3, 3, 4});
  CHECK(ints(cnt) == I{2, 2, 1, 2, 1});
  CHECK(v.dtype() == DType::I64);
  // NaN starts a run of its own; -0 and 0 are one run (the first kept).
  auto [vn, in_, cn] = unique_consecutive(tensor<double>({kNaN, kNaN, 1.0, -0.0, 0.0}), false, true);
  const F got = vals(vn);
  CHECK(got.size() == 4);
  CHECK((std::isnan(got[0]) && std::isnan(got[1]) && got[2] == 1.0 && got[3] == 0.0 && std::signbit(got[3])));
  CHECK(!in_.defined());
  CHECK(ints(cn) == I{1, 1, 1, 2});
  // The flattened tensor; inverse in x's shape.
  auto [v2, inv2, cnt2] = unique_consecutive(tensor({1, 1, 1, 2}).view({2, 2}), true, true);
  CHECK(ints(v2) == I{1, 2});
  CHECK(inv2.sizes() == Shape{2, 2});
  CHECK(ints(inv2) == I{0, 0, 0, 1});
  CHECK(ints(cnt2) == I{3, 1});
  // Along a dim: slices compared whole.
  const Tensor a = tensor({1, 1, 1, 1, 2, 2, 1, 1}).view({4, 2});
  auto [r0, i0, c0] = unique_consecutive(a, true, true, 0);
  CHECK(r0.sizes() == Shape{3, 2});
  CHECK(ints(r0) == I{1, 1, 2, 2, 1, 1});
  CHECK(ints(i0) == I{0, 0, 1, 2});
  CHECK(ints(c0) == I{2, 1, 1});
  auto [r1, i1, c1] = unique_consecutive(a, true, true, -1);
  CHECK(r1.sizes() == Shape{4, 1});
  CHECK(ints(i1) == I{0, 0});
  CHECK(ints(c1) == I{2});
  // A 3-d tensor along its middle dim, against slices compared by hand.
  const Tensor b = tensor({1, 2, 1, 2, 3, 4, 5, 6, 5, 6, 5, 6}).view({2, 3, 2}).transpose(0, 2);  // (2, 3, 2) strided
  auto [rb, ib, cb] = unique_consecutive(b, true, true, 1);
  CHECK(rb.sizes() == Shape{2, 2, 2});
  CHECK(ints(ib) == I{0, 0, 1});
  CHECK(ints(rb) == I{1, 5, 3, 5, 2, 6, 4, 6});  // PyTorch's
  CHECK(ints(cb) == I{2, 1});
  // 0-d, empty, bool.
  auto [s, si, sc] = unique_consecutive(tensor({5}).view({}), true, true);
  CHECK(ints(s) == I{5});
  CHECK(s.sizes() == Shape{1});
  CHECK(si.dim() == 0);
  CHECK(ints(sc) == I{1});
  auto [e, ei, ec] = unique_consecutive(zeros({0}), true, true);
  CHECK(e.numel() == 0);
  CHECK(ei.numel() == 0);
  CHECK(ec.numel() == 0);
  auto [ez, ezi, ezc] = unique_consecutive(zeros({0, 3}), true, true, 0);
  CHECK(ez.sizes() == Shape{0, 3});
  CHECK(ezc.numel() == 0);
  CHECK(ints(std::get<0>(unique_consecutive(tensor({true, true, false})))) == I{1, 0});
  CHECK_ERROR(unique_consecutive(zeros({2, 0}), false, false, 0), "[unique_consecutive]", "[2, 0]");
  CHECK_ERROR(unique_consecutive(zeros({0, 0}), false, false, 0), "[unique_consecutive]", "[0, 0]");  // as PyTorch
  CHECK_ERROR(unique_consecutive(tensor({1}).view({}), false, false, 0), "[unique_consecutive]", "0-d");
  CHECK_ERROR(unique_consecutive(tensor({1, 2}), false, false, 1), "unique_consecutive");
}

TEST_CASE("unique_dim: distinct slices in lexicographic order, inverse and counts, NaN and -0") {
  // torch.unique(a, dim=0, return_inverse=True, return_counts=True): rows [[1, 1], [1, 2],
  // [3, 1]], inverse [2, 1, 2, 0, 1], counts [1, 2, 2]; dim=1: a (5, 2) result whose rows are
  // [1, 3], [2, 1], ... (the columns swapped), inverse [1, 0], counts [1, 1].
  const Tensor a = tensor({3, 1, 1, 2, 3, 1, 1, 1, 1, 2}).view({5, 2});
  auto [r0, i0, c0] = unique_dim(a, 0, true, true, true);
  CHECK(r0.sizes() == Shape{3, 2});
  CHECK(ints(r0) == I{1, 1, 1, 2, 3, 1});
  CHECK(ints(i0) == I{2, 1, 2, 0, 1});
  CHECK(ints(c0) == I{1, 2, 2});
  auto [r1, i1, c1] = unique_dim(a, -1, true, true, true);
  CHECK(r1.sizes() == Shape{5, 2});
  CHECK(ints(r1) == I{1, 3, 2, 1, 1, 3, 1, 1, 2, 1});
  CHECK(ints(i1) == I{1, 0});
  CHECK(ints(c1) == I{1, 1});
  // A strided input gives the same; without inverse or counts those stay undefined.
  auto [rt, it, ct] = unique_dim(a.t().contiguous().t(), 0);
  CHECK(ints(rt) == I{1, 1, 1, 2, 3, 1});
  CHECK((!it.defined() && !ct.defined()));
  // -0 equals 0 (torch: columns [[-0, 0.5], [0, 1]], inverse [1, 0, 1], counts [1, 2]);
  // a slice holding NaN is after the numbers and equal to no other slice.
  auto [rz, iz, cz] = unique_dim(tensor<double>({0.5, -0.0, 0.5, 1.0, 0.0, 1.0}).view({2, 3}), 1, true, true, true);
  CHECK(vals(rz) == F{-0.0, 0.5, 0.0, 1.0});
  CHECK(ints(iz) == I{1, 0, 1});
  CHECK(ints(cz) == I{1, 2});
  auto [rs, is, cs] = unique_dim(tensor<double>({-0.0, 1.0, 0.0, 1.0}).view({2, 2}), 0, true, true, true);
  CHECK(ints(cs) == I{2});  // rows [-0, 1] and [0, 1] are one
  CHECK(ints(is) == I{0, 0});
  CHECK(std::signbit(vals(rs)[0]));  // the first in x's order is kept
  // (Ember's own rule, not libtorch's: its comparator skips a NaN position, leaving the order
  // of such slices open.)
  auto [rn, in, cn] = unique_dim(tensor<double>({kNaN, 1.0, kNaN, 1.0, 0.0, 1.0}).view({3, 2}), 0, true, true, true);
  CHECK(rn.sizes() == Shape{3, 2});
  CHECK(ints(in) == I{1, 2, 0});
  CHECK(ints(cn) == I{1, 1, 1});
  // Against a loop: random small integers, every row's run holds rows equal to it.
  manual_seed(3);
  const Tensor big = randint(0, 3, {40, 3});
  auto [rb, ib, cb] = unique_dim(big, 0, true, true, true);
  CHECK(cb.sum().item<int64_t>() == 40);
  CHECK(equal(rb.index_select(0, ib), big));
  for (int64_t k = 1; k < rb.size(0); ++k) {  // strictly increasing rows
    const I prev = ints(rb.select(0, k - 1)), cur = ints(rb.select(0, k));
    CHECK(std::lexicographical_compare(prev.begin(), prev.end(), cur.begin(), cur.end()));
  }
  // The last dim of a 3-d tensor: (2, 2) slices [[1, 2], [3, 4]] twice and [[0, 0], [0, 0]]
  // (torch: values (2, 2, 2) [[[0, 1], [0, 3]], [[0, 2], [0, 4]]], inverse [1, 0, 1]).
  const Tensor c3 = tensor({1, 0, 1, 3, 0, 3, 2, 0, 2, 4, 0, 4}).view({2, 2, 3});
  auto [r3, i3, c3n] = unique_dim(c3, 2, true, true, true);
  CHECK(r3.sizes() == Shape{2, 2, 2});
  CHECK(ints(r3) == I{0, 1, 0, 3, 0, 2, 0, 4});
  CHECK(ints(i3) == I{1, 0, 1});
  CHECK(ints(c3n) == I{1, 2});
  // bool, an empty dim, and refusals (torch's rule for other empty dims).
  auto [rbool, ibool, cbool] = unique_dim(tensor({true, false, true}), 0, true, true, true);
  CHECK(ints(rbool) == I{0, 1});
  CHECK(ints(ibool) == I{1, 0, 1});
  auto [e, ei, ec] = unique_dim(zeros({0, 3}), 0, true, true, true);
  CHECK(e.sizes() == Shape{0, 3});
  CHECK((ei.numel() == 0 && ec.numel() == 0 && ei.dtype() == DType::I64));
  CHECK_ERROR(unique_dim(zeros({2, 0}), 0), "[unique_dim]", "[2, 0]");
  CHECK_ERROR(unique_dim(tensor({1}).view({}), 0), "[unique_dim]", "0-d");
  CHECK_ERROR(unique_dim(tensor({1, 2}), 1), "unique_dim");
}

TEST_CASE("combinations: lexicographic rows, with replacement, empty cases, gradient, refusals") {
  const Tensor x = tensor({1.0f, 2.0f, 3.0f});
  const Tensor c = combinations(x, 2);
  CHECK(c.sizes() == Shape{3, 2});
  CHECK(vals(c) == F{1, 2, 1, 3, 2, 3});
  CHECK(vals(combinations(x, 2, true)) == F{1, 1, 1, 2, 1, 3, 2, 2, 2, 3, 3, 3});
  CHECK(combinations(x, 1).sizes() == Shape{3, 1});
  CHECK(vals(combinations(x, 3)) == F{1, 2, 3});
  CHECK(combinations(x, 0).sizes() == Shape{0});
  CHECK(combinations(x, 4).sizes() == Shape{0, 4});
  CHECK(combinations(x, 4, true).sizes() == Shape{15, 4});  // C(6, 4)
  CHECK(combinations(zeros({0}), 2).sizes() == Shape{0, 2});
  CHECK(combinations(zeros({0}), 2, true).sizes() == Shape{0, 2});
  // Every row increasing (strictly without replacement), rows in lexicographic order, C(7, 3) of them.
  const I rows = ints(combinations(arange(7), 3));
  CHECK(rows.size() == 35 * 3);
  for (size_t k = 0; k + 3 <= rows.size(); k += 3) {
    CHECK((rows[k] < rows[k + 1] && rows[k + 1] < rows[k + 2]));
    if (k >= 3) CHECK(std::lexicographical_compare(rows.begin() + k - 3, rows.begin() + k, rows.begin() + k, rows.begin() + k + 3));
  }
  // Differentiable: each of n elements is in C(n - 1, r - 1) rows.
  Tensor l = leaf(tensor<double>({0.5, -1.0, 2.0, 3.0}));
  combinations(l, 2).sum().backward();
  CHECK(vals(l.grad()) == F{3, 3, 3, 3});
  Tensor none = leaf(tensor<double>({1.0, 2.0}));
  combinations(none, 3).sum().backward();  // no rows, but still x's graph (as PyTorch's)
  CHECK(vals(none.grad()) == F{0, 0});
  CHECK(combinations(tensor({1, 2, 3}).to(DType::I8), 2).dtype() == DType::I8);
  CHECK_ERROR(combinations(zeros({2, 2}), 2), "[combinations]", "1-d", "[2, 2]");
  CHECK_ERROR(combinations(x, -1), "[combinations]", "non-negative");
  CHECK_ERROR(combinations(arange(100000), 3), "[combinations]", "2^28");
  CHECK_ERROR(combinations(tensor({1}), int64_t{1} << 40, true), "[combinations]", "2^28");
  CHECK_ERROR(combinations(Tensor(), 2), "[combinations]", "defined");
  CHECK(ints(combinations(tensor({7}), 3, true)) == I{7, 7, 7});
  CHECK(combinations(arange(2000), 2).sizes() == Shape{1999000, 2});
}

}  // namespace test_set_ops
