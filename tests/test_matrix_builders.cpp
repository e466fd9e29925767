// kron, tensordot, trace, block_diag, cartesian_prod, tril/triu_indices, diag_embed,
// diagflat, vander, diff, cov, corrcoef: values written down from PyTorch 1.13, identities
// against other ops, gradchecks in f64 (first and second order), errors.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>

#include "error_text.hpp"
#include "support/tensor_values.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace test_matrix_builders {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using namespace ember::test;
using V = TensorList;

namespace {
double max_diff(const Tensor& a, const F& b) {
  const F v = vals(a);
  REQUIRE(v.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < v.size(); ++i) m = std::max(m, std::abs(v[i] - b[i]));
  return m;
}
}  // namespace

TEST_CASE("kron and tensordot") {
  const Tensor a = tensor<float>({1, 2, 3, 4}).view({2, 2}), b = tensor<float>({0, 5, 6, 7}).view({2, 2});
  CHECK(vals(kron(a, b)) == F{0, 5, 0, 10, 6, 7, 12, 14, 0, 15, 0, 20, 18, 21, 24, 28});
  const Tensor k3 = kron(tensor<float>({1, -1}), arange(6.0).view({3, 2}));  // ranks 1 and 2
  CHECK(k3.sizes() == Shape{3, 4});
  CHECK(vals(k3) == F{0, 1, -0.0, -1, 2, 3, -2, -3, 4, 5, -4, -5});
  CHECK(a.kron(full({}, 2.0)).sizes() == Shape{2, 2});
  CHECK(kron(tensor<uint8_t>({1, 2}), tensor<double>({1.5, 2}).view({2, 1})).dtype() == DType::F64);  // promotes
  // (A x B)(C x D) = AC x BD.
  const Tensor c = tensor<float>({2, -1, 0, 3}).view({2, 2}), d = tensor<float>({1, 1, -2, 0.5}).view({2, 2});
  CHECK(max_diff(kron(a, b).mm(kron(c, d)), vals(kron(a.mm(c), b.mm(d)))) < 1e-4);

  const Tensor A = arange(24.0).view({2, 3, 4}), B = arange(12.0).view({4, 3});
  CHECK(vals(tensordot(A, B, {1, 2}, {1, 0})) == F{440, 1232});
  const Tensor t1 = tensordot(A, arange(8.0).view({4, 2}), 1);
  CHECK(t1.sizes() == Shape{2, 3, 2});
  CHECK(vals(t1) == F{28, 34, 76, 98, 124, 162, 172, 226, 220, 290, 268, 354});
  CHECK(tensordot(A, B, 0).sizes() == Shape{2, 3, 4, 4, 3});
  CHECK(vals(tensordot(A, B.t(), 2)) == vals(tensordot(A, B, {1, 2}, {1, 0})));
  CHECK(ints(tensordot(ones({2, 3}, DType::I32), ones({3, 2}, DType::I32), 1)) == I{3, 3, 3, 3});
  // A contracted pair of sizes 3 and 1 sums the 3 side (PyTorch).
  CHECK(vals(tensordot(arange(6.0).view({2, 3}), ones({1, 2}), {1}, {0})) == F{3, 3, 12, 12});
  CHECK_ERROR(tensordot(ones({2, 3}), ones({4, 2}), 1), "[tensordot]", "size 3", "size 4");
  CHECK_ERROR(tensordot(ones({2, 3}), ones({3, 2}), 3), "[tensordot]", "3 dims");
  CHECK_ERROR(tensordot(ones({2, 3}), ones({3, 2}), -1), "[tensordot]", "non-negative");
  CHECK_ERROR(tensordot(ones({2, 3}), ones({3, 2}, DType::F64), 1), "[tensordot]", "one dtype");
  CHECK_ERROR(tensordot(ones({2, 3}), ones({3, 2}), {1, 1}, {0, 0}), "[tensordot]", "more than once");
  CHECK_ERROR(tensordot(ones({2, 3}), ones({3, 2}), {1}, {0, 1}), "[tensordot]", "one length");

  check_grads([](const V& v) { return kron(v[0], v[1]); }, {leaf(a), leaf(arange(6.0).view({3, 2}))}, "kron");
  check_grads([](const V& v) { return tensordot(v[0], v[1], {1, 2}, {1, 0}); },
              {leaf(arange(24.0).view({2, 3, 4}) * 0.1), leaf(arange(12.0).view({4, 3}) * 0.1)}, "tensordot");
}

TEST_CASE("trace, block_diag, cartesian_prod, tril_indices, triu_indices") {
  CHECK(vals(trace(arange(12.0).view({3, 4}))) == F{15});
  const Tensor ti = arange(9, DType::I32).view({3, 3}).trace();
  CHECK(ti.dtype() == DType::I64);
  CHECK(ints(ti) == I{12});
  CHECK_ERROR(trace(ones({3})), "[trace]", "matrix");
  check_grads([](const V& v) { return trace(v[0]); }, {leaf(arange(6.0).view({2, 3}))}, "trace");

  const Tensor bd = block_diag({full({}, 1.0), tensor<float>({2, 3}), tensor<float>({4, 5, 6, 7}).view({2, 2})});
  CHECK(bd.sizes() == Shape{4, 5});
  CHECK(vals(bd) == F{1, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 4, 5, 0, 0, 0, 6, 7});
  CHECK(block_diag({ones({2, 2}, DType::I32), ones({1}, DType::F64)}).dtype() == DType::F64);
  CHECK(block_diag({ones({2, 2}), ones({0})}).sizes() == Shape{3, 2});  // an empty row block
  CHECK(block_diag(std::vector<Tensor>{}).sizes() == Shape{1, 0});
  // PyTorch's result_type: a 0-d block only raises the category (i64 0-d with i32: i32).
  CHECK(block_diag({ones({2, 2}, DType::I32), full({}, 5, DType::I64)}).dtype() == DType::I32);
  CHECK(block_diag({ones({2, 2}, DType::F32), full({}, 5, DType::F64)}).dtype() == DType::F32);
  CHECK(block_diag({ones({2, 2}, DType::I32), full({}, 5.0, DType::F64)}).dtype() == DType::F64);
  CHECK_ERROR(block_diag({ones({2, 2, 2})}), "[block_diag]", "at most 2 dims");
  check_grads([](const V& v) { return block_diag({v[0], v[1]}); }, {leaf(arange(6.0).view({2, 3})), leaf(ones({2}))},
              "block_diag");

  const Tensor cp = cartesian_prod({tensor<int64_t>({1, 2}), tensor<int64_t>({3, 4, 5})});
  CHECK(cp.sizes() == Shape{6, 2});
  CHECK(ints(cp) == I{1, 3, 1, 4, 1, 5, 2, 3, 2, 4, 2, 5});
  CHECK(cartesian_prod({arange(3.0), arange(2.0), arange(4.0)}).sizes() == Shape{24, 3});
  CHECK(ints(cartesian_prod({tensor<int64_t>({7, 8})})) == I{7, 8});
  CHECK_ERROR(cartesian_prod({tensor<int64_t>({1}), tensor<double>({1})}), "[cartesian_prod]", "f64");
  CHECK_ERROR(cartesian_prod({ones({2, 2})}), "[cartesian_prod]", "1-d");

  CHECK(ints(tril_indices(3, 4, 1)) == I{0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 1, 0, 1, 2, 0, 1, 2, 3});
  CHECK(ints(triu_indices(4, 3, -1)) == I{0, 0, 0, 1, 1, 1, 2, 2, 3, 0, 1, 2, 0, 1, 2, 1, 2, 2});
  CHECK(ints(tril_indices(4, 3, -2)) == I{2, 3, 3, 0, 0, 1});
  CHECK(tril_indices(0, 2).sizes() == Shape{2, 0});
  CHECK(tril_indices(3, 3, 10).size(1) == 9);
  CHECK(triu_indices(3, 3, -10).size(1) == 9);
  CHECK(triu_indices(3, 3, 10).size(1) == 0);
  CHECK(tril_indices(3, 3, 0, DType::I32).dtype() == DType::I32);
  CHECK_ERROR(tril_indices(-1, 2), "[tril_indices]", "non-negative");
  // Sizes at int64's limits: answered without visiting every row.
  CHECK(ints(tril_indices(1, INT64_MAX)) == I{0, 0});
  CHECK(ints(triu_indices(INT64_MAX, 1, 0)) == I{0, 0});
  CHECK(ints(tril_indices(INT64_MAX, 2, -(INT64_MAX - 2))) == I{INT64_MAX - 2, INT64_MAX - 1, INT64_MAX - 1, 0, 0, 1});
  CHECK(tril_indices(INT64_MAX, 0).sizes() == Shape{2, 0});
  CHECK_ERROR(tril_indices(int64_t{1} << 40, int64_t{1} << 40), "[tril_indices]", "2^40");
  CHECK_ERROR(triu_indices(int64_t{1} << 21, int64_t{1} << 21), "[triu_indices]", "2^40");
  CHECK_ERROR(triu_indices(3, 3, 0, DType::F32), "[triu_indices]", "f32");
  // Each index pair picks exactly the elements tril/triu keep.
  const Tensor m = arange(20.0).view({4, 5}) + 1;
  for (int64_t k : {-5, -2, 0, 1, 3, 6}) {
    CAPTURE(k);
    const Tensor lo = tril_indices(4, 5, k), up = triu_indices(4, 5, k);
    CHECK(vals(m.index({lo[0], lo[1]}).sum()) == vals(m.tril(k).sum()));
    CHECK(vals(m.index({up[0], up[1]}).sum()) == vals(m.triu(k).sum()));
  }
}

TEST_CASE("diag_embed, diagflat, vander") {
  const Tensor x = tensor<float>({1, 2, 3, 4}).view({2, 2});
  const Tensor e = diag_embed(x, 1, 0, 2);
  CHECK(e.sizes() == Shape{3, 2, 3});
  CHECK(vals(e) == F{0, 1, 0, 0, 3, 0, 0, 0, 2, 0, 0, 4, 0, 0, 0, 0, 0, 0});
  const Tensor d = x.diag_embed();
  CHECK(d.sizes() == Shape{2, 2, 2});
  CHECK(vals(d.diagonal(0, -2, -1)) == vals(x));
  CHECK(vals(d.sum()) == F{10});
  // Infinities stay on the diagonal (no inf * 0 off it).
  CHECK(vals(diag_embed(tensor<double>({INFINITY, 1.0}))) == F{INFINITY, 0, 0, 1});
  CHECK_ERROR(diag_embed(x, 0, 1, 1), "[diag_embed]", "one dim");
  CHECK_ERROR(diag_embed(full({}, 1.0)), "[diag_embed]", "0-d");
  check_grads([](const V& v) { return diag_embed(v[0], -1); }, {leaf(arange(6.0).view({2, 3}))}, "diag_embed");

  const Tensor f = diagflat(x, -1);
  CHECK(f.sizes() == Shape{5, 5});
  CHECK(vals(f.diagonal(-1)) == F{1, 2, 3, 4});
  CHECK(vals(f.sum()) == F{10});

  CHECK(vals(vander(tensor<float>({1, 2, 3}), 4)) == F{1, 1, 1, 1, 8, 4, 2, 1, 27, 9, 3, 1});
  const Tensor vi = vander(tensor<int32_t>({2, -1}), std::nullopt, true);
  CHECK(vi.dtype() == DType::I64);
  CHECK(ints(vi) == I{1, 2, 1, -1});
  CHECK(vander(tensor<float>({1, 2}), 0).sizes() == Shape{2, 0});
  CHECK(vander(empty({0}), int64_t{1} << 62).sizes() == Shape{0, int64_t{1} << 62});
  CHECK_ERROR(vander(ones({2, 2})), "[vander]", "1-d");
  CHECK_ERROR(vander(ones({2}), -1), "[vander]", "non-negative");
  check_grads([](const V& v) { return vander(v[0], 4); }, {leaf(tensor<double>({0.5, -1.5, 2}))}, "vander");
}

TEST_CASE("diff, cov, corrcoef") {
  CHECK(vals(diff(tensor<float>({1, 4, 9, 16, 2, 3, 5, 8}).view({2, 4}), 2, 1)) == F{2, 2, 1, 1});
  CHECK(vals(diff(tensor<float>({1, 4}), 1, 0, tensor<float>({0}), tensor<float>({5, 7}))) == F{1, 3, 1, 2});
  CHECK(vals(tensor<float>({1, 4, 9, 16}).view({2, 2}).diff(1, 0)) == F{8, 12});
  CHECK(ints(diff(tensor<bool>({true, false, false, true}))) == I{1, 0, 1});
  CHECK(diff(tensor<bool>({true, false})).dtype() == DType::Bool);
  CHECK(ints(diff(tensor<uint8_t>({3, 1}))) == I{254});  // wraps, as PyTorch
  CHECK(diff(arange(5), 7).numel() == 0);
  // n = 0 returns x: prepend and append are not joined (PyTorch, NumPy).
  CHECK(vals(diff(tensor<float>({1, 4}), 0, 0, tensor<float>({0}))) == F{1, 4});
  const Tensor same = arange(5.0);
  CHECK(diff(same, 0).data_ptr() != same.data_ptr());  // n = 0: a copy
  CHECK(diff(ones({3}), 1, 0, ones({2}, DType::F64)).dtype() == DType::F64);
  CHECK_ERROR(diff(full({}, 1.0)), "[diff]", "0-d");
  CHECK_ERROR(diff(ones({3}), -1), "[diff]", "non-negative");
  CHECK_ERROR(diff(ones({3}), 1, 0, ones({2, 2})), "[diff]", "rank");
  check_grads([](const V& v) { return diff(v[0], 2, 1, v[1]); },
              {leaf(tensor<double>({1, 4, 9, 16, 2, 3, 5, 8}).view({2, 4})), leaf(ones({2, 1}))}, "diff");

  const Tensor X = tensor<float>({0, 1, 5, 2, 2, 3, -1, 4, 1, 1, 2, 8}).view({3, 4});
  const Tensor fw = tensor<int64_t>({1, 2, 3, 1}), aw = tensor<float>({0.5, 1, 2, 0.25});
  // PyTorch 1.13's values (f32).
  CHECK(max_diff(cov(X), {4.66666651, -3.33333325, 1.0, -3.33333325, 4.66666651, 3.66666675, 1.0, 3.66666675, 11.33333302}) < 1e-5);
  CHECK(max_diff(X.cov(0), {3.5, -2.5, 0.75, -2.5, 3.5, 2.75, 0.75, 2.75, 8.5}) < 1e-6);
  CHECK(max_diff(cov(X, 1, fw), {4.90476179, -4.23809528, 0.30952394, -4.23809528, 4.90476179, 2.02380943, 0.30952394,
                                 2.02380943, 6.28571367}) < 1e-5);
  CHECK(max_diff(cov(X, 1, {}, aw), {7.1714282, -6.08571386, 0.85714281, -6.08571386, 6.25714254, 0.85714281, 0.85714281,
                                     0.85714281, 4.49999952}) < 1e-5);
  CHECK(max_diff(cov(X, 2, fw, aw), {5.89309025, -5.37157774, 0.86049545, -5.37157774, 5.39243793, -0.14080834,
                                     0.86049545, -0.14080834, 2.0782268}) < 1e-5);
  const Tensor cv = cov(X.select(0, 0));
  CHECK(cv.dim() == 0);
  CHECK(max_diff(cv, {4.66666651}) < 1e-5);
  CHECK(cov(arange(6, DType::I64).view({2, 3})).dtype() == DType::F32);  // integers: the default float
  CHECK(cov(X, 1, {}, aw.to(DType::F64)).dtype() == DType::F64);
  CHECK(std::isinf(vals(cov(X, 5))[0]));  // no degrees of freedom left: divides by 0
  CHECK(std::isnan(vals(cov(ones({2, 0})))[0]));
  // Frequency weights are repetitions of the observations.
  const Tensor repeated = X.repeat_interleave(fw, 1);
  CHECK(max_diff(cov(X, 1, fw), vals(cov(repeated))) < 1e-5);
  CHECK_ERROR(cov(ones({2, 3, 4})), "[cov]", "at most 2 dims");
  CHECK_ERROR(cov(tensor<bool>({true, false})), "[cov]", "bool");
  CHECK_ERROR(cov(ones({2, 3}), 1, ones({3})), "[cov]", "fweights", "integer");
  CHECK_ERROR(cov(ones({2, 3}), 1, tensor<int64_t>({1, -1, 2})), "[cov]", "fweights", "negative");
  CHECK_ERROR(cov(ones({2, 3}), 1, {}, tensor<int64_t>({1, 1, 2})), "[cov]", "aweights", "floating");
  CHECK_ERROR(cov(ones({2, 3}), 1, {}, tensor<float>({1, -1, 2})), "[cov]", "aweights", "negative");
  CHECK_ERROR(cov(ones({2, 3}), 1, {}, tensor<float>({1, 1})), "[cov]", "2 elements for 3 observations");
  CHECK_ERROR(cov(ones({2, 3}), 1, tensor<int64_t>({0, 0, 0})), "[cov]", "sum to zero");

  CHECK(max_diff(corrcoef(X), {1.0, -0.71428573, 0.13750479, -0.71428573, 1.0, 0.50418419, 0.13750479, 0.50418419, 1.0}) <
        1e-6);
  CHECK(vals(corrcoef(tensor<float>({1, 2, 3}))) == F{1});
  CHECK_ERROR(corrcoef(zeros({2, 2, 2})), "[corrcoef]", "at most 2 dims", "[2, 2, 2]");
  CHECK_ERROR(corrcoef(tensor({true, false})), "[corrcoef]", "bool");
  const F flat = vals(tensor<float>({1, 2, 3, 1, 1, 1}).view({2, 3}).corrcoef());
  CHECK(flat[0] == 1);
  CHECK((std::isnan(flat[1]) && std::isnan(flat[2]) && std::isnan(flat[3])));  // a constant variable
  check_grads([](const V& v) { return cov(v[0], 1, tensor<int64_t>({1, 2, 3, 1}), v[1]); },
              {leaf(X), leaf(aw)}, "cov");
  check_grads([](const V& v) { return corrcoef(v[0]); }, {leaf(X)}, "corrcoef");
}

}  // namespace test_matrix_builders
