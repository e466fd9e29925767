// Order statistics and counting (ops/order_statistics.hpp, ops/counting.hpp): values written
// down from PyTorch 1.13 runs (python3-torch, by hand, quoted beside each check), plain loops
// for the larger random cases, gradients, and errors.

#include <doctest/doctest.h>

#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error_text.hpp"

namespace test_statistics_ops {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-6) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return false;
    } else if (std::fabs(a[i] - b[i]) > tol * (1 + std::fabs(b[i]))) {
      return false;
    }
  }
  return true;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE("median and nanmedian: the lower middle value, its first index, NaN as PyTorch") {
  Tensor x = tensor<float>({{3.0f, 1.0f, 2.0f, NAN}, {4.0f, 4.0f, 1.0f, 2.0f}});
  auto [m, mi] = median(x, 1);  // torch: values [nan, 2], indices [3, 3]
  CHECK(same_values(values_of(m), {kNaN, 2}));
  CHECK(values_of(mi) == std::vector<double>{3, 3});
  auto [nm, nmi] = nanmedian(x, 1);  // torch: values [2, 2], indices [2, 3]
  CHECK(values_of(nm) == std::vector<double>{2, 2});
  CHECK(values_of(nmi) == std::vector<double>{2, 3});
  CHECK(values_of(median(tensor<float>({1.0f, 4.0f, 2.0f, 3.0f}))) == std::vector<double>{2});  // torch: 2
  CHECK(std::isnan(values_of(median(x))[0]));
  CHECK(values_of(nanmedian(x))[0] == 2);
  // Ties: the first in input order (torch: [[1, 5, 2], [3, 3, 1]].median(1) -> [2, 3], [2, 0]).
  auto [tm, ti] = median(tensor<int64_t>({{1, 5, 2}, {3, 3, 1}}), 1, true);
  CHECK(tm.sizes() == Shape{2, 1});
  CHECK(tm.dtype() == DType::I64);
  CHECK(values_of(tm) == std::vector<double>{2, 3});
  CHECK(values_of(ti) == std::vector<double>{2, 0});
  // All NaN: NaN, the first index.
  auto [an, ai] = nanmedian(tensor<double>({kNaN, kNaN}), 0);
  CHECK(std::isnan(values_of(an)[0]));
  CHECK(values_of(ai)[0] == 0);
  // The gradient goes to the median element.
  Tensor g = tensor<double>({5.0, 1.0, 3.0}).requires_grad_();
  median(g).backward();
  CHECK(values_of(g.grad()) == std::vector<double>{0, 0, 1});
  // Without a dim, PyTorch shares the gradient among the elements equal to the median.
  Tensor tied = tensor<double>({1.0, 2.0, 2.0, 3.0}).requires_grad_();
  Tensor tm2 = median(tied);
  CHECK(values_of(tm2)[0] == 2);
  tm2.backward();
  CHECK(values_of(tied.grad()) == std::vector<double>{0, 0.5, 0.5, 0});
  CHECK(std::isnan(values_of(median(zeros({0})))[0]));  // empty: NaN, as PyTorch
  CHECK_ERROR(median(zeros({2, 0}), 1), "[median]", "empty dim", "[2, 0]");
  CHECK_ERROR(median(zeros({2, 3}), 2), "[median]", "dim 2");
}

TEST_CASE("mode: the smallest most frequent value, its last index, NaN counted once each") {
  const double nan = std::nan("");
  auto [v, i] = mode(tensor<int64_t>({{1, 2, 2, 3, 3}, {5, 5, 4, 4, 1}}), 1);
  CHECK(values_of(v) == std::vector<double>{2, 4});
  CHECK(values_of(i) == std::vector<double>{2, 3});
  auto [vn, in] = mode(tensor<double>({nan, nan, nan, 1, 1, 2}));
  CHECK(vn.item<double>() == 1);
  CHECK(in.item<int64_t>() == 4);
  auto [va, ia] = mode(tensor<double>({nan, nan}));  // NaN only: the first
  CHECK(std::isnan(va.item<double>()));
  CHECK(ia.item<int64_t>() == 0);
  auto [vk, ik] = mode(tensor<float>({{2, 2, 1, 1}}), 1, true);
  CHECK(vk.sizes() == Shape{1, 1});
  CHECK(values_of(vk) == std::vector<double>{1});
  CHECK(values_of(ik) == std::vector<double>{3});
  auto [v0, i0] = mode(tensor<int64_t>({{1, 2}, {3, 3}, {3, 1}}), 0);
  CHECK(values_of(v0) == std::vector<double>{3, 1});
  CHECK(values_of(i0) == std::vector<double>{2, 2});
  auto [vs, is] = mode(scalar_tensor(5.0));
  CHECK(vs.dim() == 0);
  CHECK(vs.item<float>() == 5);
  CHECK(is.item<int64_t>() == 0);
  auto [vb, ib] = mode(tensor<bool>({true, false, true}));
  CHECK(vb.item<bool>());
  CHECK(ib.item<int64_t>() == 2);
  // The gradient goes to the last occurrence of the mode.
  Tensor x = tensor<double>({1, 2, 2, 0}).requires_grad_();
  mode(x).first.backward();
  CHECK(values_of(x.grad()) == std::vector<double>{0, 0, 1, 0});
  CHECK_THROWS_WITH_AS(mode(empty({2, 0}), 1), doctest::Contains("[mode] cannot take the mode of an empty dim 1"), Error);
  CHECK_THROWS_WITH_AS(mode(empty({2, 3}), 2), doctest::Contains("[mode]"), Error);
}

TEST_CASE("quantile and nanquantile: PyTorch's ranks and interpolations") {
  Tensor v = tensor<float>({1.0f, 2.0f, 4.0f, 8.0f, 16.0f});
  Tensor q = tensor<float>({0.3f, 0.5f, 0.625f});
  // torch.quantile(v, q, interpolation=...): lower [2, 4, 4], higher [4, 4, 8], midpoint
  // [3, 4, 6], nearest [2, 4, 4] (2.5 rounds to even), linear [2.4, 4, 6].
  CHECK(values_of(quantile(v, q, std::nullopt, false, "lower")) == std::vector<double>{2, 4, 4});
  CHECK(values_of(quantile(v, q, std::nullopt, false, "higher")) == std::vector<double>{4, 4, 8});
  CHECK(values_of(quantile(v, q, std::nullopt, false, "midpoint")) == std::vector<double>{3, 4, 6});
  CHECK(values_of(quantile(v, q, std::nullopt, false, "nearest")) == std::vector<double>{2, 4, 4});
  CHECK(same_values(values_of(quantile(v, q)), {2.4, 4, 6}));
  Tensor x = tensor<float>({{3.0f, 1.0f, 2.0f, NAN}, {4.0f, 4.0f, 1.0f, 2.0f}});
  Tensor q3 = tensor<float>({0.0f, 0.3f, 1.0f});
  // torch.quantile(x, q3, dim=1): [[nan, 1], [nan, 1.9], [nan, 4]]; nanquantile: [[1, 1],
  // [1.6, 1.9], [3, 4]].
  Tensor qx = quantile(x, q3, 1);
  CHECK(qx.sizes() == Shape{3, 2});
  CHECK(same_values(values_of(qx), {kNaN, 1, kNaN, 1.9, kNaN, 4}));
  CHECK(same_values(values_of(nanquantile(x, q3, 1)), {1, 1, 1.6, 1.9, 3, 4}));
  // keepdim, with and without a dim (torch: [[2, 3.5]] and [[2.5]]).
  Tensor s = tensor<float>({{1.0f, 2.0f}, {3.0f, 5.0f}});
  Tensor k0 = quantile(s, 0.5, 0, true);
  CHECK(k0.sizes() == Shape{1, 2});
  CHECK(values_of(k0) == std::vector<double>{2, 3.5});
  Tensor kall = quantile(s, 0.5, std::nullopt, true);
  CHECK(kall.sizes() == Shape{1, 1});
  CHECK(values_of(kall) == std::vector<double>{2.5});
  // A middle dim of a 3-d tensor against a loop over its slices.
  manual_seed(4);
  Tensor r = randn({3, 7, 4}, DType::F64);
  Tensor got = quantile(r, 0.35, 1);
  CHECK(got.sizes() == Shape{3, 4});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      std::vector<double> col = values_of(r.select(0, i).select(1, j));
      std::sort(col.begin(), col.end());
      const double rank = 0.35 * 6, lo = col[static_cast<size_t>(std::floor(rank))],
                   hi = col[static_cast<size_t>(std::ceil(rank))];
      CHECK(values_of(got.select(0, i).select(0, j))[0] == doctest::Approx(lo + (rank - std::floor(rank)) * (hi - lo)));
    }
  // Differentiable: finite differences in f64.
  std::string why;
  Tensor w = randn({2, 5}, DType::F64).requires_grad_();
  CHECK_MESSAGE(autograd::gradcheck([](const std::vector<Tensor>& in) { return quantile(in[0], 0.3, 1); }, {w}, {},
                                    &why),
                why);
  CHECK_ERROR(quantile(v, 1.5), "[quantile]", "[0, 1]", "1.5");
  CHECK_ERROR(quantile(v, q.to(DType::F64)), "[quantile]", "dtype");
  CHECK_ERROR(quantile(v, 0.5, std::nullopt, false, "cubic"), "[quantile]", "cubic");
  CHECK_ERROR(quantile(tensor<int64_t>({1, 2}), 0.5), "[quantile]", "f32 or f64", "i64");
  CHECK_ERROR(quantile(zeros({0}), 0.5), "[quantile]", "non-empty");
  CHECK_ERROR(quantile(v.to(DType::BF16), 0.5), "[quantile]", "f32 or f64", "bf16");
  CHECK_ERROR(quantile(v, tensor<float>({{0.5f}})), "[quantile]", "1-d", "[1, 1]");
  // Ranks in f64 from q rounded to the input's dtype, as libtorch 2.15: 0.3f * 35 is
  // 10.5000004, so "nearest" picks element 11 (1.13's f32 product rounded to 10.5 gave 10).
  CHECK(quantile(arange(36).to(DType::F32), 0.3, std::nullopt, false, "nearest").item<float>() == 11.0f);
  CHECK(quantile(arange(36).to(DType::F64), 0.3, std::nullopt, false, "nearest").item<double>() == 10.0);
  // An empty q: (0, the result's shape).
  CHECK(quantile(s, tensor<float>(std::vector<float>{}), 1).sizes() == Shape{0, 2});
}

TEST_CASE("quantile: differentiable in q through the linear weight; a NaN slice's gradient") {
  // d/dq of the linear quantile is (hi - lo) (n - 1): for v = [1, 2, 4, 8, 16] and q = 0.3 the
  // rank 1.2 lies between 2 and 4, so 2 * 4 = 8 (torch.autograd.grad gives 8 too).
  Tensor v = tensor<double>({1.0, 2.0, 4.0, 8.0, 16.0});
  Tensor q = tensor<double>({0.3, 0.9}).requires_grad_();
  quantile(v, q).sum().backward();
  CHECK(same_values(values_of(q.grad()), {8, 32}));  // 0.9: rank 3.6 between 8 and 16: 8 * 4
  std::string why;
  manual_seed(9);
  Tensor x = randn({3, 6}, DType::F64).requires_grad_();
  Tensor qs = tensor<double>({0.15, 0.55, 0.7}).requires_grad_();  // no whole rank (a kink)
  CHECK_MESSAGE(autograd::gradcheck([](const std::vector<Tensor>& in) { return quantile(in[0], in[1], 1); }, {x, qs}, {},
                                    &why),
                why);
  CHECK_MESSAGE(autograd::gradcheck([](const std::vector<Tensor>& in) { return nanquantile(in[0], in[1], 0, true); },
                                    {x, qs}, {}, &why),
                why);
  // The other interpolations do not depend on q continuously: no gradient reaches it.
  Tensor q2 = tensor<double>({0.3}).requires_grad_();
  Tensor lower = quantile(v, q2, std::nullopt, false, "lower");
  CHECK(values_of(lower) == std::vector<double>{2});
  CHECK_FALSE(lower.requires_grad());
  // A slice holding NaN: the result is its last NaN, which takes the gradient (PyTorch sends
  // it there too); nanquantile's gradient goes to the numbers it interpolates.
  Tensor y = tensor<double>({{1.0, kNaN, 3.0, kNaN}, {4.0, 2.0, 1.0, 3.0}}).requires_grad_();
  Tensor r = quantile(y, 0.5, 1);
  CHECK(std::isnan(values_of(r)[0]));
  r.sum().backward();
  CHECK(values_of(y.grad()) == std::vector<double>{0, 0, 0, 1, 0, 0.5, 0, 0.5});
  Tensor y2 = y.detach().clone().requires_grad_();
  nanquantile(y2, 0.5, 1).sum().backward();  // row 0: the middle of [1, 3]; row 1: of [2, 3]
  CHECK(values_of(y2.grad()) == std::vector<double>{0.5, 0, 0.5, 0, 0, 0.5, 0, 0.5});
}

TEST_CASE("nanmean and aminmax") {
  // torch.nanmean([[1, nan], [nan, nan]], dim=1): [1, nan].
  CHECK(same_values(values_of(nanmean(tensor<double>({{1.0, kNaN}, {kNaN, kNaN}}), {1})), {1, kNaN}));
  CHECK(values_of(nanmean(tensor<double>({1.0, kNaN, 3.0})))[0] == 2);
  auto [lo, hi] = aminmax(tensor<double>({{1.0, -2.0}, {7.0, 0.0}}), 1);
  CHECK(values_of(lo) == std::vector<double>{-2, 0});
  CHECK(values_of(hi) == std::vector<double>{1, 7});
  auto [alo, ahi] = aminmax(tensor<int64_t>({4, -3, 9}));
  CHECK(values_of(alo)[0] == -3);
  CHECK(values_of(ahi)[0] == 9);
  CHECK_ERROR(aminmax(zeros({0})), "[aminmax]", "empty input");
  auto [elo, ehi] = aminmax(zeros({0, 3}), 1);  // nothing to reduce over size-0 rows: empty results
  CHECK(elo.sizes() == Shape{0});
  CHECK(ehi.sizes() == Shape{0});
  CHECK_ERROR(aminmax(zeros({2, 0}), 1), "[aminmax]", "empty dim", "[2, 0]");
  CHECK_ERROR(nanmean(tensor<int64_t>({1})), "[nanmean]", "floating");
}

TEST_CASE("searchsorted and bucketize: PyTorch's positions, rows of sequences, NaN last") {
  Tensor seq = tensor<int64_t>({1, 3, 5, 7}), vals = tensor<int64_t>({3, 6, 9});
  // torch: searchsorted(seq, vals, right=True) [2, 3, 4]; bucketize(vals, seq) [1, 3, 4].
  CHECK(values_of(searchsorted(seq, vals, false, true)) == std::vector<double>{2, 3, 4});
  CHECK(values_of(searchsorted(seq, vals, false, false, "right")) == std::vector<double>{2, 3, 4});
  CHECK(values_of(bucketize(vals, seq)) == std::vector<double>{1, 3, 4});
  CHECK(bucketize(vals, seq, true).dtype() == DType::I32);
  // One sequence per row (torch: [[1, 3], [0, 3]]).
  Tensor rows = tensor<float>({{1.0f, 3.0f, 5.0f}, {2.0f, 4.0f, 6.0f}});
  CHECK(values_of(searchsorted(rows, tensor<float>({{3.0f, 6.0f}, {1.0f, 7.0f}}))) == std::vector<double>{1, 3, 0, 3});
  // NaN is the largest (torch: [3, 1]); values of any shape against a 1-d sequence.
  CHECK(values_of(searchsorted(tensor<double>({1.0, 3.0, kNaN}), tensor<double>({kNaN, 3.0}))) ==
        std::vector<double>{3, 1});
  Tensor grid = searchsorted(tensor<double>({0.0, 1.0}), tensor<double>({{-1.0, 0.5}, {1.0, 2.0}}));
  CHECK(grid.sizes() == Shape{2, 2});
  CHECK(values_of(grid) == std::vector<double>{0, 1, 1, 2});
  // Mixed integer sequence and floating values compare as numbers.
  CHECK(values_of(searchsorted(seq, tensor<double>({2.5, 7.0}))) == std::vector<double>{1, 3});
  CHECK_ERROR(searchsorted(rows, tensor<float>({1.0f})), "[searchsorted]", "leading dims", "[2, 3]", "[1]");
  CHECK_ERROR(searchsorted(seq, vals, false, true, "left"), "[searchsorted]", "contradicts");
  CHECK_ERROR(searchsorted(seq, vals, false, false, "middle"), "[searchsorted]", "middle");
  CHECK_ERROR(bucketize(vals, rows), "[bucketize]", "1-d", "[2, 3]");
  // Compared in the operands' common dtype, as PyTorch: a bool sequence with i64 values, and
  // an i64 sequence whose 2049 is 2048 in f16 (torch: [0, 1, 2] and [1]).
  CHECK(values_of(searchsorted(tensor<bool>({false, true}), tensor<int64_t>({0, 1, 2}))) ==
        std::vector<double>{0, 1, 2});
  CHECK(values_of(searchsorted(tensor<int64_t>({2049}), full({1}, 2048.0, DType::F16), false, true)) ==
        std::vector<double>{1});
  CHECK_ERROR(searchsorted(tensor<bool>({false, true}), tensor<bool>({true})), "[searchsorted]", "numeric");
}

TEST_CASE("searchsorted with a sorter, and of a single number") {
  // An unsorted sequence and the indices that sort it: positions in the sorted order
  // [1, 3, 3, 5, 9] (torch: [1, 0, 5, 3, 5] left, [3, 0, 5, 3, 5] right).
  Tensor seq = tensor<float>({5.0f, 1.0f, 3.0f, 3.0f, 9.0f}), sorter = tensor<int64_t>({1, 2, 3, 0, 4});
  Tensor vals = tensor<float>({3.0f, 0.0f, 10.0f, 4.0f, std::numeric_limits<float>::quiet_NaN()});
  CHECK(values_of(searchsorted(seq, vals, false, false, std::nullopt, sorter)) == std::vector<double>{1, 0, 5, 3, 5});
  CHECK(values_of(searchsorted(seq, vals, false, true, std::nullopt, sorter)) == std::vector<double>{3, 0, 5, 3, 5});
  CHECK(values_of(searchsorted(seq, vals, false, false, std::nullopt, seq.argsort())) ==
        std::vector<double>{1, 0, 5, 3, 5});
  // A sorter per row (torch: [[2], [3]]).
  Tensor rows = tensor<float>({{2.0f, 0.0f, 1.0f}, {9.0f, 7.0f, 8.0f}});
  CHECK(values_of(searchsorted(rows, tensor<float>({{1.5f}, {10.0f}}), false, false, std::nullopt,
                               tensor<int64_t>({{1, 2, 0}, {1, 2, 0}}))) == std::vector<double>{2, 3});
  CHECK_ERROR(searchsorted(seq, vals, false, false, std::nullopt, sorter.to(DType::I32)), "[searchsorted]", "i64",
              "i32");
  CHECK_ERROR(searchsorted(seq, vals, false, false, std::nullopt, sorter.narrow(0, 0, 4)), "[searchsorted]",
              "[5]", "[4]");
  // libtorch 1.13 reads past the row here; 2.x refuses, as Ember.
  CHECK_ERROR(searchsorted(seq, vals, false, false, std::nullopt, tensor<int64_t>({1, 2, 3, 0, 7})),
              "[searchsorted]", "sorter index 7", "out of range");
  CHECK_ERROR(searchsorted(seq, vals, false, false, std::nullopt, tensor<int64_t>({1, 2, -1, 0, 4})),
              "[searchsorted]", "sorter index -1");

  // One number: a 0-d i64 result. 2.5 against integers is compared in f32 (torch: 1); 0.1
  // against an f64 sequence stays the double 0.1 (torch: 0; an f32 0.1 is above it: 1).
  Tensor one = searchsorted(tensor<int64_t>({1, 3, 5}), 2.5);
  CHECK(one.dim() == 0);
  CHECK(one.dtype() == DType::I64);
  CHECK(one.item<int64_t>() == 1);
  CHECK(searchsorted(tensor<double>({0.1, 0.2}), 0.1).item<int64_t>() == 0);
  CHECK(searchsorted(tensor<int64_t>({1, 3, 5}), 1e39).item<int64_t>() == 3);  // inf in f32 (torch: 3)
  CHECK(searchsorted(tensor<double>({0.1, 0.2}), tensor<float>({0.1f})).item<int64_t>() == 1);
  CHECK(searchsorted(tensor<int64_t>({1, 3, 5}), 3, true, true).dtype() == DType::I32);
  CHECK(searchsorted(tensor<int64_t>({1, 3, 5}), 3, false, true).item<int64_t>() == 2);
  CHECK(searchsorted(seq, 4.0, false, false, std::nullopt, sorter).item<int64_t>() == 3);
  CHECK_ERROR(searchsorted(rows, 1.0), "[searchsorted]", "leading dims", "[2, 3]");
}

TEST_CASE("bincount and histc") {
  Tensor labels = tensor<int64_t>({1, 1, 3});
  CHECK(values_of(bincount(labels)) == std::vector<double>{0, 2, 0, 1});
  CHECK(bincount(labels).dtype() == DType::I64);
  CHECK(values_of(bincount(labels, {}, 6)) == std::vector<double>{0, 2, 0, 1, 0, 0});
  // Weights: f32 stays f32, others give f64 (torch's dtypes).
  Tensor bw = bincount(labels, tensor<float>({1.0f, 2.0f, 3.0f}));
  CHECK(bw.dtype() == DType::F32);
  CHECK(values_of(bw) == std::vector<double>{0, 3, 0, 3});
  CHECK(bincount(labels, tensor<int64_t>({1, 2, 3})).dtype() == DType::F64);
  CHECK(values_of(bincount(tensor<int64_t>(std::vector<int64_t>{}), {}, 2)) == std::vector<double>{0, 0});
  Tensor none = bincount(tensor<int64_t>(std::vector<int64_t>{}), tensor<float>({1.0f}), 3);  // PyTorch: i64 zeros
  CHECK(none.dtype() == DType::I64);
  CHECK(values_of(none) == std::vector<double>{0, 0, 0});
  CHECK_ERROR(bincount(tensor<int64_t>({1, -2})), "[bincount]", "non-negative", "-2");
  CHECK_ERROR(bincount(tensor<double>({1.0})), "[bincount]", "integer");
  CHECK_ERROR(bincount(labels, tensor<float>({1.0f})), "[bincount]", "weights", "length 3");

  // torch.histc([1, 2, 1, 4], bins=4, min=0, max=4): [0, 2, 1, 1]; without a range: the data's
  // [1, 2]: [2, 0, 0, 1].
  CHECK(values_of(histc(tensor<float>({1.0f, 2.0f, 1.0f, 4.0f}), 4, 0, 4)) == std::vector<double>{0, 2, 1, 1});
  Tensor auto_range = histc(tensor<float>({1.0f, 2.0f, 1.0f}), 4);
  CHECK(auto_range.dtype() == DType::F32);
  CHECK(values_of(auto_range) == std::vector<double>{2, 0, 0, 1});
  // max lands in the last bin; out of range and NaN are not counted (PyTorch 1.13 put NaN in
  // the first bin).
  CHECK(values_of(histc(tensor<double>({0.0, 0.5, 1.0, 1.5, 2.0, kNaN, 3.0}), 4, 0, 2)) ==
        std::vector<double>{1, 1, 1, 2});
  CHECK(values_of(histc(tensor<double>({5.0, 5.0}), 2)) == std::vector<double>{0, 2});  // range [4, 6]
  CHECK_ERROR(histc(tensor<double>({1.0}), 0), "[histc]", "bins", "0");
  CHECK_ERROR(histc(tensor<double>({1.0}), 4, 2, 1), "[histc]", "min=2 max=1");
  CHECK_ERROR(histc(tensor<int64_t>({1}), 4), "[histc]", "floating");
  CHECK_ERROR(histc(tensor<double>({1.0, std::numeric_limits<double>::infinity()}), 4), "[histc]", "not finite");
  // The data's range with a NaN is NaN (PyTorch's error too); bounds as the dtype holds them.
  CHECK_ERROR(histc(tensor<double>({1.0, kNaN, 2.0}), 4), "[histc]", "not finite");
  CHECK(values_of(histc(tensor<float>({0.1f}), 2, 0.0, 0.1)) == std::vector<double>{0, 1});
  // An f16/bf16 element's bin is computed step by step in its dtype, as PyTorch's kernel: in
  // bf16, (0.9375 + 3.109375) * 7 / (4 + 3.109375) is 4.0625 * 7 = 28.5 over 7.125, 4.0
  // (exactly: 3.98), so
  // torch.histc(tensor([-3.109375, 0.9375, 4.0], dtype=bfloat16), 7) is [1, 0, 0, 0, 1, 0, 1].
  CHECK(values_of(histc(tensor<float>({-3.109375f, 0.9375f, 4.0f}).to(DType::BF16), 7)) ==
        std::vector<double>{1, 0, 0, 0, 1, 0, 1});
  CHECK(values_of(histc(tensor<float>({-3.109375f, 0.9375f, 4.0f}), 7)) == std::vector<double>{1, 0, 0, 1, 0, 0, 1});
  // A one-value range widened by 1 each way that the dtype cannot hold apart (f16 2051 and
  // 2053 both round to 2052): the bins of [2051, 2053] in f64, not a division by zero; a
  // value f64 itself cannot widen is refused.
  CHECK(values_of(histc(full({2}, 2052.0, DType::F16), 3)) == std::vector<double>{0, 2, 0});
  // The order of the steps: (x - min) / (max - min) * bins, each rounded to the dtype, as
  // PyTorch 1.13's bf16 kernel ([1, 0, 0, 0, 0, 0, 2]; 2.078125 sits at 5.976 of 7 bins,
  // which bf16 rounds to 6; multiplying first gives 5.969). f32: [1, 0, 0, 0, 0, 1, 1].
  const Tensor edge = tensor<float>({-2.296875f, 2.078125f, 2.828125f});
  CHECK(values_of(histc(edge.to(DType::BF16), 7)) == std::vector<double>{1, 0, 0, 0, 0, 0, 2});
  CHECK(values_of(histc(edge, 7)) == std::vector<double>{1, 0, 0, 0, 0, 1, 1});
  CHECK_ERROR(histc(full({2}, 1e300, DType::F64), 3), "[histc]", "empty");
  Tensor many = histc(tensor<float>({0.25f, 0.75f}).to(DType::F16), 70000, 0, 1);  // more bins than f16 holds
  CHECK(many.select(0, 17500).item<double>() == 1);
  CHECK(many.select(0, 52500).item<double>() == 1);
}

TEST_CASE("histogram: counts and bin edges as PyTorch's, weights, density, given edges") {
  // Every expected value is PyTorch 1.13's for the same call.
  const Tensor x = tensor<float>({1.0f, 2.0f, 1.0f, 4.0f, 2.5f});
  auto [h, e] = histogram(x, 3);
  CHECK(values_of(h) == std::vector<double>{2, 2, 1});
  CHECK(values_of(e) == std::vector<double>{1, 2, 3, 4});
  CHECK(h.dtype() == DType::F32);
  CHECK(e.dtype() == DType::F32);
  auto [hr, er] = histogram(x, 3, {0.0, 5.0});
  CHECK(values_of(hr) == std::vector<double>{2, 2, 1});
  // The f32 edges bit for bit: PyTorch computes them in float (1.6666666269302368,
  // 3.3333334922790527), and a value between the two roundings lands in its bin.
  CHECK(values_of(er) == std::vector<double>{0, 1.6666666269302368, 3.3333334922790527, 5});
  CHECK(values_of(histogram(tensor<float>({3.3333332539f}), 3, {0.0, 5.0}).first) == std::vector<double>{0, 1, 0});
  // (PyTorch's f32 linspace uses this scalar formula below 16 elements; beyond, its SIMD
  // blocks count from each block's first element, so its last bits depend on the vector
  // width of the machine it runs on: 21 edges differ in two places between widths.)
  auto [h1, e1] = histogram(tensor<float>({2.0f, 2.0f}), 4);  // one value: [v - 0.5, v + 0.5]
  CHECK(values_of(h1) == std::vector<double>{0, 0, 2, 0});
  CHECK(values_of(e1) == std::vector<double>{1.5, 1.75, 2, 2.25, 2.5});
  auto [h0, e0] = histogram(zeros({0}), 2);  // no data: [0, 1]
  CHECK(values_of(h0) == std::vector<double>{0, 0});
  CHECK(values_of(e0) == std::vector<double>{0, 0.5, 1});
  auto [he, ee] = histogram(x, tensor<float>({0.0f, 1.0f, 2.5f, 5.0f}));
  CHECK(values_of(he) == std::vector<double>{0, 3, 2});
  CHECK(values_of(ee) == std::vector<double>{0, 1, 2.5, 5});
  auto [hw, ew] = histogram(x, 3, std::nullopt, tensor<float>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f}), true);
  CHECK(same_values(values_of(hw), {0.2667, 0.4667, 0.2667}, 1e-3));
  // NaN is left out, as NumPy's histogram (PyTorch 1.13 counts it in the last bin: [1, 2]).
  auto [hn, en] = histogram(tensor<float>({1.0f, NAN, 3.0f}), 2, std::pair{0.0, 4.0});
  CHECK(values_of(hn) == std::vector<double>{1, 1});
  auto [h2, e2] = histogram(tensor<float>({{1.0f, 2.0f}, {3.0f, 4.0f}}), 2);  // any shape, flattened
  CHECK(values_of(h2) == std::vector<double>{2, 2});
  auto [hd, ed] = histogram(tensor<float>({1.0f, 1.0f}), 2, std::nullopt, Tensor(), true);
  CHECK(values_of(hd) == std::vector<double>{0, 2});
  auto [hz, ez] = histogram(tensor<float>({5.0f}), 2, std::pair{0.0, 1.0}, Tensor(), true);  // 0 / 0
  CHECK(std::isnan(values_of(hz)[0]));
  CHECK(histogram(randn({10}, DType::F64), 4).first.dtype() == DType::F64);
  CHECK_ERROR(histogram(x, 0), "[histogram]", "bins");
  CHECK_ERROR(histogram(x, 3, std::pair{5.0, 0.0}), "[histogram]", "[5, 0]");
  CHECK_ERROR(histogram(x, tensor<double>({0.0, 1.0})), "[histogram]", "f64", "f32");
  CHECK_ERROR(histogram(x, 2, std::nullopt, ones({3})), "[histogram]", "[3]", "[5]");
  CHECK_ERROR(histogram(tensor<float>({1.0f, INFINITY}), 2), "[histogram]", "not finite");
  CHECK_ERROR(histogram(tensor<float>({1.0f, NAN}), 2), "[histogram]", "not finite");
  CHECK_ERROR(histogram(arange(3), 2), "[histogram]", "i64");
  CHECK_ERROR(histogram(ones({3}, DType::F16), 2), "[histogram]", "f16");  // as PyTorch 1.13
  CHECK_ERROR(histogram(ones({3}, DType::BF16), tensor<float>({0.0f, 1.0f}).to(DType::BF16)), "[histogram]", "bf16");
  CHECK_ERROR(histogram(x, tensor<float>({1.0f})), "[histogram]", "at least 2");
  CHECK_ERROR(histogram(x, tensor<float>({2.0f, 1.0f})), "[histogram]", "must not decrease");
  CHECK_ERROR(histogram(x, tensor<float>({{0.0f, 1.0f}})), "[histogram]", "1-d");
}

TEST_CASE("histogramdd: counts and bin edges as PyTorch's, weights, density, given edges, refusals") {
  // Every expected value is PyTorch 1.13's for the same call, but the NaN case (noted there).
  const Tensor x = tensor<float>({{0, 1}, {1, 2}, {2, 2}, {0.5, 1.5}, {3, 0}});
  auto [h, e] = histogramdd(x, std::vector<int64_t>{2, 3});
  CHECK(h.sizes() == Shape({2, 3}));
  CHECK(values_of(h) == std::vector<double>{0, 1, 2, 1, 0, 1});
  REQUIRE(e.size() == 2);
  CHECK(values_of(e[0]) == std::vector<double>{0, 1.5, 3});
  CHECK(same_values(values_of(e[1]), {0, 0.6667, 1.3333, 2}, 1e-4));
  CHECK(h.dtype() == DType::F32);
  // One count for every dim, a range, weights, density: [[0, 0.5], [0, 0.5]].
  auto [hw, ew] = histogramdd(x, 2, std::vector<double>{0, 2, 0, 2}, tensor<float>({1, 2, 3, 4, 5}), true);
  CHECK(values_of(hw) == std::vector<double>{0, 0.5, 0, 0.5});
  CHECK(values_of(ew[1]) == std::vector<double>{0, 1, 2});
  // Given edges: [[2], [3]].
  std::vector<Tensor> given{tensor<float>({0, 1, 3}), tensor<float>({0, 2})};
  auto [he, ee] = histogramdd(x, given);
  CHECK(he.sizes() == Shape({2, 1}));
  CHECK(values_of(he) == std::vector<double>{2, 3});
  // The edges returned are copies: the caller's tensors stay theirs (as PyTorch's).
  given[0].fill_(7.0);
  CHECK(values_of(ee[0]) == std::vector<double>{0, 1, 3});
  // No points: each range [0, 1]; one point: [v - 0.5, v + 0.5]; points of any batch shape.
  auto [h0, e0] = histogramdd(zeros({0, 2}), 2);
  CHECK(values_of(h0) == std::vector<double>{0, 0, 0, 0});
  CHECK(values_of(e0[1]) == std::vector<double>{0, 0.5, 1});
  auto [h1, e1] = histogramdd(tensor<float>({{1, 1}}), 2);
  CHECK(values_of(h1) == std::vector<double>{0, 0, 0, 1});
  CHECK(values_of(e1[0]) == std::vector<double>{0.5, 1, 1.5});
  CHECK(values_of(histogramdd(tensor<float>({1, 1, 2, 3}).reshape({1, 2, 2}), 2).first) == std::vector<double>{1, 0, 0, 1});
  CHECK(values_of(histogramdd(tensor<float>({1, 1, 2, 3}).reshape({1, 2, 2}), 2, std::nullopt, tensor<float>({{2, 5}})).first) ==
        std::vector<double>{2, 0, 0, 5});
  // Density over bins of unequal widths (volumes 1 x 0.5, 1 x 1.5, 2 x 0.5, 2 x 1.5).
  auto [hv, ev] = histogramdd(x, std::vector<Tensor>{tensor<float>({0, 1, 3}), tensor<float>({0, 0.5, 2})}, Tensor(), true);
  CHECK(same_values(values_of(hv), {0, 0.26666668, 0.2, 0.13333334}, 1e-6));
  // No coordinates: a 0-d count of the points (PyTorch's tensor(0.) for zeros(5, 0)).
  CHECK(histogramdd(zeros({5, 0}), std::vector<int64_t>{}).first.dim() == 0);
  // Three coordinates against a reference count; a NaN coordinate leaves its point out (NumPy's
  // rule, as Ember's histogram; PyTorch 1.13 counts it in a last bin).
  manual_seed(3);
  const Tensor p = rand({200, 3}, DType::F64);
  auto [h3, e3] = histogramdd(p, std::vector<int64_t>{2, 3, 4}, std::vector<double>{0, 1, 0, 1, 0, 1});
  std::vector<double> want(24, 0);
  const std::vector<double> pv = values_of(p);
  for (size_t i = 0; i < 200; ++i)
    want[static_cast<size_t>(static_cast<int64_t>(pv[i * 3] * 2) * 12 + static_cast<int64_t>(pv[i * 3 + 1] * 3) * 4 +
                             static_cast<int64_t>(pv[i * 3 + 2] * 4))] += 1;
  CHECK(values_of(h3) == want);
  auto [hn, en] = histogramdd(tensor<float>({{NAN, 1}, {0, 1}}), 2, std::vector<double>{0, 1, 0, 1});
  CHECK(values_of(hn) == std::vector<double>{0, 1, 0, 0});
  CHECK_ERROR(histogramdd(tensor<float>({1, 2}), 2), "[histogramdd]", "(*, D)", "[2]");
  CHECK_ERROR(histogramdd(x, std::vector<int64_t>{2}), "[histogramdd]", "each of the 2 dims, got 1");
  CHECK_ERROR(histogramdd(x, std::vector<int64_t>{2, 0}), "[histogramdd]", "bins must be positive, got 0 for dim 1");
  CHECK_ERROR(histogramdd(x, 2, std::vector<double>{0, 1}), "[histogramdd]", "range has 4 values", "got 2");
  CHECK_ERROR(histogramdd(x, 2, std::vector<double>{0, 1, 2, 1}), "[histogramdd]", "[2, 1] for dim 1");
  CHECK_ERROR(histogramdd(tensor<float>({{1, NAN}}), 2), "[histogramdd]", "not finite");
  CHECK_ERROR(histogramdd(x, 2, std::nullopt, ones({4})), "[histogramdd]", "weight has shape [4]", "[5]");
  CHECK_ERROR(histogramdd(x, std::vector<Tensor>{tensor<float>({0, 1}), tensor<double>({0, 1})}), "[histogramdd]",
              "dim 1", "f64");
  CHECK_ERROR(histogramdd(x, std::vector<Tensor>{tensor<float>({0, 1}), tensor<float>({1, 0})}), "[histogramdd]",
              "must not decrease");
  CHECK_ERROR(histogramdd(x, std::vector<Tensor>{tensor<float>({0, 1})}), "[histogramdd]", "each of the 2 dims, got 1");
  CHECK_ERROR(histogramdd(arange(4).reshape({2, 2}), 2), "[histogramdd]", "i64");
  CHECK_ERROR(histogramdd(tensor<float>({{0.5f, 0.5f, 0.5f}}), std::vector<int64_t>{1 << 21, 1 << 21, 1 << 22},
                          std::vector<double>{0, 1, 0, 1, 0, 1}),
              "[histogramdd]", "number of cells overflows");
  CHECK_ERROR(histogramdd(x, 2, std::vector<double>{NAN, 1, 0, 1}), "[histogramdd]", "not finite");
}

}  // namespace test_statistics_ops
