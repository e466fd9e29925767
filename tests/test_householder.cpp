// geqrf, linalg::householder_product (orgqr) and ormqr (include/ember/linalg/householder.hpp):
// values written down from PyTorch 1.13 (python3-torch, f64; the inputs are quoted beside
// them), identities against linalg::qr on random batches in f32 and f64, finite-difference
// gradchecks (first and second derivatives), and errors.

#include <doctest/doctest.h>

#include <ember/ember.hpp>
#include <ember/linalg/householder.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "support/tensor_values.hpp"

namespace test_householder {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
using test::check_grads;
using test::max_abs_diff;

namespace {

Tensor f64(std::initializer_list<std::initializer_list<double>> rows) { return tensor(rows).to(DType::F64); }

// b = [[2,1,0],[1,3,1],[0,1,4],[1,0,1]]: torch.geqrf(b), householder_product of it, and
// ormqr with C = [[1,2],[0,-1],[3,0.5],[-2,1]] (left) or C^T (right).
const Tensor& tall() {
  static const Tensor t = f64({{2.0, 1.0, 0.0}, {1.0, 3.0, 1.0}, {0.0, 1.0, 4.0}, {1.0, 0.0, 1.0}});
  return t;
}
const Tensor& tall_c() {
  static const Tensor t = f64({{1.0, 2.0}, {0.0, -1.0}, {3.0, 0.5}, {-2.0, 1.0}});
  return t;
}

}  // namespace

TEST_CASE("geqrf, householder_product, ormqr: PyTorch's values") {
  auto [qr, tau] = geqrf(tall());
  CHECK(max_abs_diff(qr, f64({{-2.449489742783178, -2.041241452319315, -0.816496580927726},
                              {0.22474487139158905, -2.6140645235596875, -2.040245481802682},
                              {0.0, 0.20281667315508528, -3.629150273454804},
                              {0.22474487139158905, -0.13862588954636468, 0.1719939104262339}})) < 1e-14);
  CHECK(max_abs_diff(tau, tensor({1.816496580927726, 1.8861665655342164, 1.9425360817364405}).to(DType::F64)) <
        1e-14);
  CHECK(max_abs_diff(linalg::householder_product(qr, tau),
                     f64({{-0.816496580927726, 0.25503068522533523, 0.040323891927275576},
                          {-0.408248290463863, -0.8288497269823396, 0.282267243490929},
                          {-0.0, -0.3825460278380029, -0.8871256224000629},
                          {-0.408248290463863, 0.3187883565316691, -0.3629150273454802}})) < 1e-14);
  const Tensor qc = f64({{0.3372706538427451, -2.384259680611472},
                         {-0.0778443394853981, 0.4116856575472386},
                         {-2.144979087705866, -0.3192156731091895},
                         {-3.04618671098327, -0.5421457818906519}});
  const Tensor qtc = f64({{0.0, -1.632993161855452},
                          {-1.5301841113520114, 1.4664264400456777},
                          {-1.8952229205819524, -1.0080972981818896},
                          {-2.8401877872187717, -0.6454972243679027}});
  CHECK(max_abs_diff(ormqr(qr, tau, tall_c()), qc) < 1e-14);
  CHECK(max_abs_diff(ormqr(qr, tau, tall_c(), true, true), qtc) < 1e-14);
  // C^T Q = (Q^T C)^T and C^T Q^T = (Q C)^T.
  CHECK(max_abs_diff(ormqr(qr, tau, tall_c().t().contiguous(), false, false), qtc.t()) < 1e-14);
  CHECK(max_abs_diff(ormqr(qr, tau, tall_c().t().contiguous(), false, true), qc.t()) < 1e-14);

  // A wide matrix: [[1.5, -0.25, 2, 0.5], [0.75, 1.25, -1, 3]]; the last reflector is empty (tau 0).
  auto [wq, wt] = geqrf(f64({{1.5, -0.25, 2.0, 0.5}, {0.75, 1.25, -1.0, 3.0}}));
  CHECK(max_abs_diff(wq, f64({{-1.6770509831248424, -0.3354101966249685, -1.3416407864998732, -1.7888543819998315},
                              {0.2360679774997897, 1.2298373876248843, -1.7888543819998315, 2.459674775249769}})) <
        1e-14);
  CHECK(max_abs_diff(wt, tensor({1.8944271909999157, 0.0}).to(DType::F64)) < 1e-14);
}

TEST_CASE("geqrf, householder_product, ormqr: identities against linalg::qr, batches, f32 and f64") {
  manual_seed(11);
  for (DType dt : {DType::F64, DType::F32}) {
    CAPTURE(dt);
    const double tol = dt == DType::F64 ? 1e-12 : 2e-5;
    for (const std::pair<int64_t, int64_t>& mn : {std::pair<int64_t, int64_t>{5, 3}, {4, 4}, {3, 5}, {6, 1}}) {
      const int64_t m = mn.first, n = mn.second;
      CAPTURE(m);
      CAPTURE(n);
      const Tensor a = randn({2, 3, m, n}, TensorOptions(dt));
      auto [qr, tau] = geqrf(a);
      const int64_t k = std::min(m, n);
      CHECK(tau.sizes() == Shape({2, 3, k}));
      auto [q_complete, r_complete] = linalg::qr(a, "complete");
      // R on and above the diagonal is linalg::qr's (the same reflectors, the same signs).
      CHECK(max_abs_diff(qr.triu(), r_complete) < tol * 10);
      // The full Q: ormqr of the identity, and Q R rebuilds A.
      const Tensor eye_m = eye(m, m, TensorOptions(dt)).expand({2, 3, m, m}).contiguous();
      const Tensor q_full = ormqr(qr, tau, eye_m);
      CHECK(max_abs_diff(q_full, q_complete) < tol * 10);
      CHECK(max_abs_diff(q_full.matmul(qr.triu()), a) < tol * 10);
      // Q^T Q = I, and the four ormqr forms against explicit products.
      const Tensor c = randn({2, 3, m, 2}, TensorOptions(dt));
      CHECK(max_abs_diff(ormqr(qr, tau, c), q_full.matmul(c)) < tol * 10);
      CHECK(max_abs_diff(ormqr(qr, tau, c, true, true), q_full.mT().matmul(c)) < tol * 10);
      CHECK(max_abs_diff(ormqr(qr, tau, c.mT(), false), c.mT().matmul(q_full)) < tol * 10);
      CHECK(max_abs_diff(ormqr(qr, tau, c.mT(), false, true), c.mT().matmul(q_full.mT())) < tol * 10);
      if (m >= n) {
        auto [q_reduced, r_reduced] = linalg::qr(a);
        CHECK(max_abs_diff(linalg::householder_product(qr, tau), q_reduced) < tol * 10);
        CHECK(max_abs_diff(orgqr(qr, tau), q_reduced) < tol * 10);
        // Fewer reflectors than columns: H_0 applied alone.
        // One reflector: I - tau_0 v v^T (first n columns), v built here from qr's column 0.
        const Tensor first = tau.narrow(-1, 0, 1);
        const Tensor v = cat(std::vector<Tensor>{ones({2, 3, 1}, TensorOptions(dt)), qr.select(-1, 0).narrow(-1, 1, m - 1)}, -1);
        const Tensor h0 = eye(m, m, TensorOptions(dt)) - first.unsqueeze(-1) * v.unsqueeze(-1) * v.unsqueeze(-2);
        CHECK(max_abs_diff(linalg::householder_product(qr, first), h0.narrow(-1, 0, n)) < tol * 10);
      }
    }
  }
  // What lies on and above the diagonal is never read (PyTorch's neither): an infinity there
  // changes nothing. A strided (transposed) input factorises as its contiguous copy.
  {
    const Tensor a = randn({5, 3}, TensorOptions(DType::F64));
    auto [qr, tau] = geqrf(a);
    Tensor spoiled = qr.clone();
    spoiled.index_put_({0, 2}, std::numeric_limits<double>::infinity());
    spoiled.index_put_({1, 1}, std::numeric_limits<double>::quiet_NaN());
    CHECK(max_abs_diff(linalg::householder_product(spoiled, tau), linalg::householder_product(qr, tau)) == 0.0);
    const Tensor c = randn({5, 2}, TensorOptions(DType::F64));
    CHECK(max_abs_diff(ormqr(spoiled, tau, c), ormqr(qr, tau, c)) == 0.0);
    const Tensor at = randn({3, 5}, TensorOptions(DType::F64)).t();
    auto [tq, tt] = geqrf(at);
    auto [cq, ct] = geqrf(at.contiguous());
    CHECK(max_abs_diff(tq, cq) == 0.0);
    CHECK(max_abs_diff(tt, ct) == 0.0);
  }
  // Empty matrices and no reflectors.
  auto [eq, et] = geqrf(zeros({2, 0, 3}));
  CHECK(eq.sizes() == Shape({2, 0, 3}));
  CHECK(et.sizes() == Shape({2, 0}));
  const Tensor a = randn({4, 3});
  CHECK(max_abs_diff(linalg::householder_product(a, zeros({0})), eye(4, 3)) == 0.0);
  const Tensor c = randn({4, 2});
  CHECK(max_abs_diff(ormqr(a, zeros({0}), c), c) == 0.0);
}

TEST_CASE("householder_product and ormqr: gradients against finite differences, first and second order") {
  manual_seed(5);
  using V = std::vector<Tensor>;
  const Tensor a = randn({2, 4, 3}, TensorOptions(DType::F64)).requires_grad_(true);
  const Tensor tau = (rand({2, 3}, TensorOptions(DType::F64)) + 0.5).requires_grad_(true);
  const Tensor c = randn({2, 4, 2}, TensorOptions(DType::F64)).requires_grad_(true);
  check_grads([](const V& v) { return linalg::householder_product(v[0], v[1]); }, {a, tau}, "householder_product");
  check_grads([](const V& v) { return ormqr(v[0], v[1], v[2]); }, {a, tau, c}, "ormqr");
  check_grads([](const V& v) { return ormqr(v[0], v[1], v[2], true, true); }, {a, tau, c}, "ormqr transpose");
  check_grads([](const V& v) { return ormqr(v[0], v[1], v[2].mT(), false, false); }, {a, tau, c}, "ormqr right");
  check_grads([](const V& v) { return ormqr(v[0], v[1], v[2].mT(), false, true); }, {a, tau, c}, "ormqr right transpose");
  // geqrf is not differentiable, as PyTorch's: the backward says so.
  auto [qr, t] = geqrf(a);
  CHECK(qr.requires_grad());
  CHECK_THROWS_WITH_AS(qr.sum().backward(), doctest::Contains("[geqrf] is not differentiable"), Error);
}

TEST_CASE("geqrf, householder_product, ormqr: bad input is an ember::Error naming the op and shapes") {
  const Tensor a = randn({4, 3});
  const Tensor tau = randn({3});
  CHECK_THROWS_WITH_AS(geqrf(randn({4})), doctest::Contains("[geqrf] expects a matrix"), Error);
  CHECK_THROWS_WITH_AS(geqrf(ones({2, 2}, TensorOptions(DType::I64))), doctest::Contains("f32 or f64"), Error);
  CHECK_THROWS_WITH_AS(linalg::householder_product(randn({3, 4}), randn({3})),
                       doctest::Contains("at least as many rows as columns, got shape [3, 4]"), Error);
  CHECK_THROWS_WITH_AS(linalg::householder_product(a, randn({4})),
                       doctest::Contains("tau holds 4 scalars, more than input's 3 columns"), Error);
  CHECK_THROWS_WITH_AS(linalg::householder_product(a, randn({2, 3})),
                       doctest::Contains("tau of shape [2, 3] does not fit input of shape [4, 3]"), Error);
  CHECK_THROWS_WITH_AS(linalg::householder_product(a, tau.to(DType::F64)), doctest::Contains("one dtype"), Error);
  CHECK_THROWS_WITH_AS(ormqr(a, tau, randn({3, 2})), doctest::Contains("does not fit Q (4 x 4) on the left"), Error);
  CHECK_THROWS_WITH_AS(ormqr(a, tau, randn({2, 3}), false),
                       doctest::Contains("does not fit Q (4 x 4) on the right"), Error);
  CHECK_THROWS_WITH_AS(ormqr(a, tau, randn({2, 4, 2})), doctest::Contains("must have input's batch dims"), Error);
  CHECK_THROWS_WITH_AS(ormqr(randn({2, 5}), randn({3}), randn({2, 2})),
                       doctest::Contains("[ormqr] tau holds 3 scalars, more than input's 2 rows"), Error);
}

}  // namespace test_householder
