// ember::linalg (include/ember/linalg.hpp): values written down from PyTorch 1.13 runs
// (python3-torch, f64, quoted beside each check), identities of the factorisations on random
// batches in f32 and f64, finite-difference gradchecks (first and second derivatives), and
// errors.

#include <doctest/doctest.h>

#include <ember/autograd/gradcheck.hpp>
#include <ember/ember.hpp>
#include <ember/linalg.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "error_text.hpp"

namespace test_linalg {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;

namespace {

std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

bool near(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i])))) return false;
  return true;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.detach().to(DType::F64) - b.detach().to(DType::F64)).abs().max().item<double>();
}

/// Uniform draws in [lo, hi), f64.
Tensor uniform(const Shape& s, std::pair<double, double> range) {
  return rand(s, TensorOptions(DType::F64)) * (range.second - range.first) + range.first;
}

Tensor mat(std::vector<double> v, Shape s) { return tensor<double>(v).reshape(s); }

// PyTorch's fixtures: a general 3 x 3, a symmetric positive-definite one, a tall 3 x 2.
Tensor general() { return mat({4, -2, 1, 3, 6, -4, 2, 1, 8}, {3, 3}); }
Tensor spd() { return mat({4, 2, 0.6, 2, 5, 1, 0.6, 1, 3}, {3, 3}); }
Tensor tall() { return mat({1, 2, 3, 4, 5, 6}, {3, 2}); }

/// Random well-conditioned matrices: a random batch plus n on the diagonal.
Tensor well_conditioned(Shape s, DType t = DType::F64) {
  const int64_t n = s.back();
  return (uniform(s, {-1.0, 1.0}) + eye(n, n) * static_cast<double>(n)).to(t);
}

/// A random symmetric positive-definite batch: X X^T + I.
Tensor random_spd(Shape s, DType t = DType::F64) {
  Tensor x = uniform(s, {-1.0, 1.0});
  return (x.matmul(x.mT()) + eye(s.back(), s.back())).to(t);
}

Tensor leaf(const Tensor& t) { return t.detach().clone().requires_grad_(); }

}  // namespace

TEST_CASE("linalg: det, slogdet, logdet, inv, solve against PyTorch") {
  const Tensor a = general();
  CHECK(linalg::det(a).item<double>() == doctest::Approx(263.0).epsilon(1e-14));  // torch.linalg.det: 263.0
  auto [sign, logabs] = linalg::slogdet(a * -1.0);
  CHECK(sign.item<double>() == -1.0);
  CHECK(logabs.item<double>() == doctest::Approx(5.57215403217776384).epsilon(1e-14));
  CHECK(std::isnan(logdet(a * -1.0).item<double>()));  // torch.logdet(-A): nan
  CHECK(logdet(a).item<double>() == doctest::Approx(5.572154032177764).epsilon(1e-14));
  CHECK(near(values_of(linalg::inv(a)),
             {0.1977186311787072, 0.06463878326996197, 0.007604562737642585, -0.12167300380228138,
              0.11406844106463879, 0.07224334600760457, -0.034220532319391636, -0.030418250950570346,
              0.1140684410646388}));
  CHECK(near(values_of(inverse(a)), values_of(linalg::inv(a)), 0));
  const Tensor b = tensor<double>({1, -2, 3});
  CHECK(near(values_of(linalg::solve(a, b)), {0.09125475285171106, -0.1330798479087452, 0.36882129277566544}));
  CHECK(near(values_of(linalg::matrix_power(a, -2)),
             {0.03096763000766238, 0.01992221949139065, 0.007040726336942849, -0.04040827538348104,
              0.002949298095967845, 0.015556101721869628, -0.006968439618904422, -0.009151498503664937,
              0.010553860833610436}));
  // A singular matrix: det 0, sign 0, log|det| -inf.
  const Tensor z = mat({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3});
  CHECK(linalg::det(z).item<double>() == 0.0);
  auto [zs, zl] = linalg::slogdet(z);
  CHECK(zs.item<double>() == 0.0);
  CHECK(zl.item<double>() == -std::numeric_limits<double>::infinity());
  CHECK(linalg::matrix_rank(z).item<int64_t>() == 2);  // torch.linalg.matrix_rank: 2
  // An empty matrix: det 1 (the empty product), as PyTorch.
  CHECK(linalg::det(zeros({2, 0, 0}, TensorOptions(DType::F64))).sizes() == Shape{2});
  CHECK(values_of(linalg::det(zeros({2, 0, 0}, TensorOptions(DType::F64)))) == std::vector<double>{1, 1});
}

TEST_CASE("linalg: cholesky, eigvalsh, svdvals, pinv, qr, norms against PyTorch") {
  CHECK(near(values_of(linalg::cholesky(spd())), {2.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.3, 0.35, 1.6695807857064}));
  CHECK(near(values_of(linalg::cholesky(spd(), true)), values_of(linalg::cholesky(spd()).mT())));
  CHECK(near(values_of(linalg::eigvalsh(spd())), {2.372468984808981, 2.7225082073229028, 6.905022807868114}));
  CHECK(near(values_of(linalg::svdvals(tall())), {9.525518091565107, 0.5143005806586443}));
  CHECK(near(values_of(linalg::pinv(tall())),
             {-1.3333333333333337, -0.33333333333333287, 0.6666666666666665, 1.0833333333333337, 0.333333333333333,
              -0.4166666666666666},
             1e-12));
  // Householder QR with LAPACK's sign choice: R's diagonal has the opposite sign of the pivot.
  CHECK(near(values_of(std::get<1>(linalg::qr(tall()))), {-5.916079783099616, -7.437357441610946, 0.0, 0.828078671210825}));
  const Tensor a = general();
  CHECK(linalg::matrix_norm(a, "nuc").item<double>() == doctest::Approx(20.29220171252416).epsilon(1e-13));
  CHECK(linalg::matrix_norm(a, 2).item<double>() == doctest::Approx(9.385549506960281).epsilon(1e-13));
  CHECK(linalg::matrix_norm(a, -1).item<double>() == 9.0);
  CHECK(linalg::matrix_norm(a, std::numeric_limits<double>::infinity()).item<double>() == 13.0);
  CHECK(linalg::cond(a).item<double>() == doctest::Approx(2.2654014672180973).epsilon(1e-13));
  CHECK(linalg::cond(a, "fro").item<double>() == doctest::Approx(3.716478651072783).epsilon(1e-13));
  CHECK(near(values_of(linalg::cross(tensor<double>({1, 2, 3}), tensor<double>({-1, 0.5, 2}))), {2.5, -5.0, 2.5}));
  CHECK(linalg::vector_norm(tensor<double>({3, -4, 0}), 0).item<double>() == 2.0);
  CHECK(linalg::vector_norm(tensor<double>({3, -4, 0})).item<double>() == 5.0);
  CHECK(linalg::vector_norm(tensor<double>({3, -4, 0}), std::numeric_limits<double>::infinity()).item<double>() == 4.0);
}

TEST_CASE("linalg: factorisations reconstruct random batches in f32 and f64") {
  for (DType t : {DType::F64, DType::F32}) {
    CAPTURE(t);
    const double tol = t == DType::F64 ? 1e-10 : 2e-4;
    const Tensor a = well_conditioned({2, 3, 5, 5}, t);
    CHECK(max_abs_diff(a.matmul(linalg::inv(a)), eye(5, 5)) < tol);
    const Tensor b = uniform({3, 5, 2}, {-1.0, 1.0}).to(t);  // batch dims broadcast: (2, 3) with (3)
    const Tensor x = linalg::solve(a, b);
    CHECK(x.sizes() == Shape{2, 3, 5, 2});
    CHECK(max_abs_diff(a.matmul(x), b.expand({2, 3, 5, 2})) < tol);
    const Tensor xr = linalg::solve(a, b.mT(), false);  // X A = B
    CHECK(max_abs_diff(xr.matmul(a), b.mT().expand({2, 3, 2, 5})) < tol);
    const Tensor v = uniform({2, 3, 5}, {-1.0, 1.0}).to(t);  // a batch of vectors
    CHECK(max_abs_diff(a.matmul(linalg::solve(a, v).unsqueeze(-1)).squeeze(-1), v) < tol);
    // det against the product of LU-free eigenvalues of an SPD batch, and slogdet against det.
    const Tensor s = random_spd({4, 6, 6}, t);
    CHECK(max_abs_diff(linalg::det(s), linalg::eigvalsh(s).prod(-1)) < tol * linalg::det(s).abs().max().item<double>());
    auto [sg, la] = linalg::slogdet(a);
    CHECK(max_abs_diff(sg * la.exp(), linalg::det(a)) < tol * linalg::det(a).abs().max().item<double>());
    // Cholesky: L L^T = S, L lower; cholesky_solve and cholesky_inverse.
    const Tensor l = linalg::cholesky(s);
    CHECK(max_abs_diff(l.matmul(l.mT()), s) < tol * 10);
    CHECK(max_abs_diff(l, l.tril()) == 0);
    const Tensor rhs = uniform({4, 6, 3}, {-1.0, 1.0}).to(t);
    CHECK(max_abs_diff(s.matmul(cholesky_solve(rhs, l)), rhs) < tol * 10);
    CHECK(max_abs_diff(cholesky_solve(rhs, l.mT(), true), cholesky_solve(rhs, l)) < tol);
    CHECK(max_abs_diff(cholesky_inverse(l), linalg::inv(s)) < tol);
    // Triangular solves, all four forms.
    const Tensor u = well_conditioned({3, 4, 4}, t).triu();
    const Tensor c = uniform({3, 4, 2}, {-1.0, 1.0}).to(t);
    CHECK(max_abs_diff(u.matmul(linalg::solve_triangular(u, c, true)), c) < tol);
    CHECK(max_abs_diff(linalg::solve_triangular(u.mT(), c.mT(), false, false).matmul(u.mT()), c.mT()) < tol);
    const Tensor unit = u.triu(1) + eye(4, 4).to(t);
    CHECK(max_abs_diff(unit.matmul(linalg::solve_triangular(u, c, true, true, true)), c) < tol);
    CHECK(max_abs_diff(std::get<0>(triangular_solve(c, u, true, true)), linalg::solve(u.mT(), c)) < tol);
  }
}

TEST_CASE("linalg: qr, eigh and svd: identities of the factors, every mode") {
  for (DType t : {DType::F64, DType::F32}) {
    CAPTURE(t);
    const double tol = t == DType::F64 ? 1e-10 : 2e-4;
    for (Shape s : {Shape{2, 6, 4}, Shape{2, 4, 6}, Shape{5, 5}}) {
      CAPTURE(s);
      const Tensor a = uniform(s, {-1.0, 1.0}).to(t);
      const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
      auto [q, r] = linalg::qr(a);
      CHECK(q.size(-1) == k);
      CHECK(max_abs_diff(q.matmul(r), a) < tol);
      CHECK(max_abs_diff(q.mT().matmul(q), eye(k, k)) < tol);
      CHECK(max_abs_diff(r, r.triu()) == 0);
      auto [qc, rc] = linalg::qr(a, "complete");
      CHECK(qc.size(-1) == m);
      CHECK(rc.size(-2) == m);
      CHECK(max_abs_diff(qc.matmul(rc), a) < tol);
      CHECK(max_abs_diff(qc.mT().matmul(qc), eye(m, m)) < tol);
      auto [qn, rr] = linalg::qr(a, "r");
      CHECK(qn.numel() == 0);
      CHECK(max_abs_diff(rr, r) == 0);

      auto [u, sv, vh] = linalg::svd(a, false);
      CHECK(max_abs_diff((u * sv.unsqueeze(-2)).matmul(vh), a) < tol);
      CHECK(max_abs_diff(u.mT().matmul(u), eye(k, k)) < tol);
      CHECK(max_abs_diff(vh.matmul(vh.mT()), eye(k, k)) < tol);
      CHECK(max_abs_diff(sv, sv.sort(-1, true).first) == 0);  // descending
      auto [uf, sf, vhf] = linalg::svd(a);
      CHECK(uf.size(-1) == m);
      CHECK(vhf.size(-2) == n);
      CHECK(max_abs_diff(uf.mT().matmul(uf), eye(m, m)) < tol);
      CHECK(max_abs_diff(vhf.mT().matmul(vhf), eye(n, n)) < tol);
      CHECK(max_abs_diff(sf, sv) < tol);
      CHECK(max_abs_diff(linalg::svdvals(a), sv) < tol);
      // pinv: the Penrose conditions.
      const Tensor p = linalg::pinv(a);
      CHECK(max_abs_diff(a.matmul(p).matmul(a), a) < tol * 10);
      CHECK(max_abs_diff(p.matmul(a).matmul(p), p) < tol * 100);
      CHECK(max_abs_diff(pinverse(a), p) < tol);
    }
    // Indefinite with eigenvalues bounded away from 0 (Q diag(d) Q^T): pinv and inv then agree
    // to the dtype's precision whatever the draw (random_spd - 3 I could come near singular).
    const Tensor qm = std::get<0>(linalg::qr(uniform({3, 5, 5}, {-1.0, 1.0}).to(t)));
    const Tensor spectrum = tensor<double>({-3.0, -1.5, -0.75, 1.0, 2.5}).to(t);
    const Tensor rotated = (qm * spectrum.unsqueeze(-2)).matmul(qm.mT());
    const Tensor sym = (rotated + rotated.mT()) * 0.5;
    auto [w, v] = linalg::eigh(sym);
    CHECK(max_abs_diff(v * w.unsqueeze(-2), sym.matmul(v)) < tol * 10);
    CHECK(max_abs_diff(w, w.sort(-1).first) == 0);  // ascending
    CHECK(max_abs_diff(v.mT().matmul(v), eye(5, 5)) < tol);
    // Only one triangle is read: garbage in the other changes nothing.
    const Tensor lower_only = sym.tril() + sym.triu(1) * 7.0;
    CHECK(max_abs_diff(linalg::eigvalsh(lower_only), w) < tol);
    CHECK(max_abs_diff(linalg::eigvalsh(sym.triu() + sym.tril(-1) * 7.0, "U"), w) < tol);
    CHECK(max_abs_diff(linalg::pinv(sym, std::nullopt, std::nullopt, true), linalg::inv(sym)) < tol * 100);
  }
}

TEST_CASE("linalg: gradients against finite differences, first and second order") {
  std::string why;
  using V = std::vector<Tensor>;
  const Tensor a = leaf(well_conditioned({2, 3, 3}));
  const Tensor b = leaf(uniform({2, 3, 2}, {-1.0, 1.0}));
  auto check2 = [&](auto f, const V& in, const std::string& what) {
    CAPTURE(what);
    CHECK_MESSAGE(autograd::gradcheck(f, in, {}, &why), why);
    CHECK_MESSAGE(autograd::gradgradcheck(f, in, {}, &why), why);
  };
  check2([](const V& v) { return linalg::det(v[0]); }, {a}, "det");
  check2([](const V& v) { return std::get<1>(linalg::slogdet(v[0])); }, {a}, "slogdet");
  check2([](const V& v) { return linalg::inv(v[0]); }, {a}, "inv");
  check2([](const V& v) { return linalg::solve(v[0], v[1]); }, {a, b}, "solve");
  check2([](const V& v) { return linalg::solve(v[0], v[1].mT(), false); }, {a, b}, "solve left=false");
  check2([](const V& v) { return linalg::solve(v[0], v[1].select(-1, 0)); }, {a, b}, "solve vectors");
  check2([](const V& v) { return linalg::matrix_power(v[0], -3); }, {a}, "matrix_power");
  check2([](const V& v) { return linalg::solve_triangular(v[0], v[1], true); }, {a, b}, "solve_triangular upper");
  check2([](const V& v) { return linalg::solve_triangular(v[0], v[1], false, true, true); }, {a, b},
         "solve_triangular unit lower");
  check2([](const V& v) { return linalg::solve_triangular(v[0], v[1].mT(), false, false); }, {a, b},
         "solve_triangular right");
  // Symmetric inputs through X + X^T (the factorisations read one triangle only, so a
  // finite difference of one off-diagonal entry alone is not a symmetric change).
  const Tensor x = leaf(random_spd({2, 4, 4}));
  check2([](const V& v) { return linalg::cholesky(v[0] + v[0].mT()); }, {x}, "cholesky");
  check2([](const V& v) { return linalg::cholesky(v[0] + v[0].mT(), true); }, {x}, "cholesky upper");
  check2([](const V& v) { return cholesky_solve(v[1], linalg::cholesky(v[0] + v[0].mT())); },
         {x, leaf(uniform({2, 4, 2}, {-1.0, 1.0}))}, "cholesky_solve");
  check2([](const V& v) { return linalg::eigvalsh(v[0] + v[0].mT()); }, {x}, "eigvalsh");
  check2([](const V& v) { return linalg::pinv(v[0]); }, {leaf(uniform({2, 5, 3}, {-1.0, 1.0}))}, "pinv tall");
  check2([](const V& v) { return linalg::pinv(v[0]); }, {leaf(uniform({2, 3, 5}, {-1.0, 1.0}))}, "pinv wide");
  check2([](const V& v) { return linalg::pinv(v[0] + v[0].mT(), 1e-15, true); }, {x}, "pinv hermitian");
  check2([](const V& v) { return linalg::svdvals(v[0]); }, {leaf(uniform({2, 5, 3}, {-1.0, 1.0}))}, "svdvals");
  check2([](const V& v) { return linalg::matrix_norm(v[0], "nuc"); }, {a}, "nuclear norm");
  check2([](const V& v) { return linalg::cond(v[0]); }, {a}, "cond");
  check2([](const V& v) { return linalg::cross(v[0], v[0].exp(), 1); }, {a}, "cross");

  // Eigenvectors and singular vectors are defined up to sign: check functions that do not
  // depend on it (projections v v^T, and U diag(c) Vh), with distinct values (random).
  check2(
      [](const V& v) {
        auto [w, vec] = linalg::eigh(v[0] + v[0].mT());
        return V{w, (vec * vec.narrow(-1, 0, 1).sign()).narrow(-1, 0, 2)};
      },
      {x}, "eigh vectors");
  for (Shape s : {Shape{2, 5, 3}, Shape{2, 3, 5}, Shape{4, 4}}) {
    CAPTURE(s);
    const Tensor m = leaf(uniform(s, {-1.0, 1.0}));
    check2(
        [](const V& v) {
          auto [u, sv, vh] = linalg::svd(v[0], false);
          const Tensor c = arange(1.0, static_cast<double>(sv.size(-1)) + 1, 1.0, TensorOptions(DType::F64));
          // U diag(c) Vh and U U^T, V V^T are sign-free; each tests a part of the backward.
          return V{sv, (u * c).matmul(vh), u.matmul(u.mT()), vh.mT().matmul(vh)};
        },
        {m}, "svd vectors");
  }
  for (Shape s : {Shape{2, 5, 3}, Shape{2, 3, 5}, Shape{4, 4}}) {
    CAPTURE(s);
    const Tensor m = leaf(uniform(s, {-1.0, 1.0}));
    check2(
        [](const V& v) {
          auto [q, r] = linalg::qr(v[0]);
          // Householder's signs are a smooth function of A away from zero pivots.
          return V{q, r};
        },
        {m}, "qr");
  }
}

TEST_CASE("linalg: det's gradient at a singular matrix is its cofactor matrix") {
  // PyTorch 1.13 returns zeros here (its LU path divides by the zero pivot); the cofactor
  // matrix is the derivative (PyTorch 2 computes it through the SVD, as Ember does).
  const Tensor z = leaf(mat({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3}));
  linalg::det(z).backward();
  CHECK(near(values_of(z.grad()), {4, 4, -4, -2, -2, 2, 0, 0, 0}, 1e-12));
  // The general case: det(A) A^-T (PyTorch: [52, -32, -9, 17, 30, -8, 2, 19, 30]).
  const Tensor a = leaf(general());
  linalg::det(a).backward();
  CHECK(near(values_of(a.grad()), {52, -32, -9, 17, 30, -8, 2, 19, 30}, 1e-12));
}

TEST_CASE("linalg: lstsq and matrix_exp against PyTorch") {
  const Tensor a = mat({1, 2, 3, 4, 5, 7}, {3, 2});
  const Tensor b = tensor<double>({1, 0, 2});
  // torch.linalg.lstsq(A, b, driver=...): solution [-1.7857142857142851, 1.4999999999999996];
  // residuals [0.6429] but for gelsy; rank 2 but for gels; singular values for gelsd, gelss.
  for (const char* driver : {"gelsy", "gelsd", "gels", "gelss"}) {
    CAPTURE(std::string(driver));
    auto [x, res, rank, sv] = linalg::lstsq(a, b, std::nullopt, driver);
    CHECK(near(values_of(x), {-1.7857142857142851, 1.4999999999999996}, 1e-13));
    const std::string d = driver;
    CHECK(res.numel() == (d == "gelsy" ? 0 : 1));
    if (res.numel() == 1) CHECK(res.item<double>() == doctest::Approx(0.6428571428571428).epsilon(1e-12));
    CHECK(rank.numel() == (d == "gels" ? 0 : 1));
    if (rank.numel() == 1) CHECK(rank.item<int64_t>() == 2);
    CHECK(sv.numel() == (d == "gelsd" || d == "gelss" ? 2 : 0));
  }
  // Rank-deficient: the minimum-norm solution (PyTorch: [[0.1, 0.1571], [0.2, 0.3143]], rank 1).
  const Tensor z = mat({1, 2, 2, 4, 3, 6}, {3, 2}), bm = mat({1, 0, 0, 1, 2, 3}, {3, 2});
  auto [xz, rz, kz, sz] = linalg::lstsq(z, bm, std::nullopt, "gelsd");
  CHECK(near(values_of(xz), {0.1, 11.0 / 70, 0.2, 22.0 / 70}, 1e-12));
  CHECK(kz.item<int64_t>() == 1);
  CHECK(rz.numel() == 0);
  // Gradients of the solution, through the pseudo-inverse.
  std::string why;
  const Tensor al = leaf(a), bl = leaf(bm);
  auto f = [](const std::vector<Tensor>& v) { return std::get<0>(linalg::lstsq(v[0], v[1])); };
  CHECK_MESSAGE(autograd::gradcheck(f, {al, bl}, {}, &why), why);

  // torch.linalg.matrix_exp of a 3 x 3 matrix, and the gradient of sum(exp(3 X) * arange(9)).
  const Tensor m = mat({0, -1, 0.5, 1, 0, 2, 0.3, -2, 0}, {3, 3});
  CHECK(near(values_of(linalg::matrix_exp(m)),
             {0.5241921865545532, -0.6366158112657675, -0.4752188576144381, 0.5096515291461963, -0.7930622404360006,
              0.797115564583142, -0.5390598788078058, -0.7336334235233564, -0.42803992934223306},
             1e-13));
  const Tensor ml = leaf(m);
  (linalg::matrix_exp(ml * 3.0) * arange(9.0, TensorOptions(DType::F64)).reshape({3, 3})).sum().backward();
  CHECK(near(values_of(ml.grad()),
             {5.902812156070265, 5.755406599117202, 11.886183873049617, -1.926173415846549, 27.686573288154896,
              -12.392678358818051, 15.7062338140739, 14.402711973732567, 23.553510221685656},
             1e-12));
  // Batches with different norms (each scaled by its own power of two), f32, and exp(0) = I.
  const Tensor batch = stack({m * 0.01, m * 40.0, zeros({3, 3}, TensorOptions(DType::F64))});
  const Tensor e = linalg::matrix_exp(batch);
  CHECK(max_abs_diff(e.select(0, 2), eye(3, 3)) < 1e-15);
  // Each matrix scaled by its own power of two: the same as alone (up to the GEMM's rounding,
  // which may differ between a batched and a single product, e.g. on aarch64).
  const Tensor alone = linalg::matrix_exp(m * 40.0);
  CHECK(max_abs_diff(e.select(0, 1), alone) <= 1e-12 * alone.abs().max().item<double>());
  // exp(X) exp(-X) = I, and exp of a skew-symmetric matrix is a rotation.
  const Tensor skew = m - m.mT();
  const Tensor moderate = batch * 0.1;  // norms up to 16: four squarings
  CHECK(max_abs_diff(linalg::matrix_exp(moderate).matmul(linalg::matrix_exp(moderate * -1.0)), eye(3, 3).expand({3, 3, 3})) < 1e-12);
  const Tensor rot = linalg::matrix_exp(skew.to(DType::F32));
  CHECK(rot.dtype() == DType::F32);
  CHECK(max_abs_diff(rot.matmul(rot.mT()), eye(3, 3)) < 1e-6);
  CHECK(linalg::det(rot).item<float>() == doctest::Approx(1.0f).epsilon(1e-6));
  CHECK_MESSAGE(autograd::gradcheck([](const std::vector<Tensor>& v) { return linalg::matrix_exp(v[0]); },
                                    {leaf(batch.narrow(0, 0, 2) * 0.05)}, {}, &why),
                why);
  CHECK_MESSAGE(autograd::gradgradcheck([](const std::vector<Tensor>& v) { return linalg::matrix_exp(v[0]); },
                                        {leaf(m)}, {}, &why),
                why);
  CHECK_ERROR(linalg::lstsq(a, tensor<double>({1, 2})), "linalg.lstsq", "do not fit");
  CHECK_ERROR(linalg::lstsq(a, b, std::nullopt, "gelsx"), "linalg.lstsq", "driver");
  CHECK_ERROR(linalg::matrix_exp(a), "linalg.matrix_exp", "square");
}

TEST_CASE("linalg: matrix_power(A, 0) is the identity with a zero gradient, as PyTorch's") {
  const Tensor a = leaf(well_conditioned({2, 3, 3}));
  const Tensor i = linalg::matrix_power(a, 0);
  CHECK(max_abs_diff(i, eye(3, 3).expand({2, 3, 3})) == 0);
  i.sum().backward();
  CHECK(max_abs_diff(a.grad(), zeros({2, 3, 3})) == 0);
  CHECK_FALSE(linalg::matrix_power(a.detach(), 0).requires_grad());
}

TEST_CASE("linalg: f32 gradients agree with f64 ones, and CPU tensors that do not require grad record nothing") {
  const Tensor a64 = leaf(well_conditioned({3, 3}));
  const Tensor a32 = leaf(a64.to(DType::F32));
  linalg::inv(a64).sum().backward();
  linalg::inv(a32).sum().backward();
  CHECK(max_abs_diff(a64.grad(), a32.grad()) < 1e-5);
  const Tensor plain = well_conditioned({3, 3});
  CHECK_FALSE(linalg::inv(plain).requires_grad());
  {
    NoGradGuard ng;
    CHECK_FALSE(linalg::det(a64).requires_grad());
  }
}

TEST_CASE("linalg: bad input is refused with the op, the shapes and the matrix") {
  using ember_test::has;
  const Tensor a = general();
  CHECK_ERROR(linalg::inv(ones({2, 3}, TensorOptions(DType::F64))), "linalg.inv", "square", "[2, 3]");
  CHECK_ERROR(linalg::det(ones({3}, TensorOptions(DType::F64))), "linalg.det", "at least 2 dims");
  CHECK_ERROR(linalg::inv(ones({2, 2}, TensorOptions(DType::I64))), "linalg.inv", "f32 or f64");
  CHECK_ERROR(linalg::inv(ones({2, 2}, TensorOptions(DType::F16))), "linalg.inv", "f32 or f64");
  Tensor batch = stack({a, mat({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3})});
  CHECK_ERROR(linalg::inv(batch), "linalg.inv", "matrix 1", "singular");
  CHECK_ERROR(linalg::solve(batch, ones({2, 3}, TensorOptions(DType::F64))), "linalg.solve", "matrix 1", "singular");
  CHECK_ERROR(linalg::solve(a, ones({4, 2}, TensorOptions(DType::F64))), "linalg.solve", "[3, 3]", "[4, 2]");
  CHECK_ERROR(linalg::solve(a, ones({3, 2}, TensorOptions(DType::F32))), "linalg.solve", "one dtype");
  CHECK_ERROR(linalg::solve(stack({a, a}), ones({3, 3, 1}, TensorOptions(DType::F64))), "linalg.solve");
  // Not positive-definite: the leading minor of order 2 of matrix 1.
  Tensor npd = stack({spd(), mat({1, 2, 0, 2, 1, 0, 0, 0, 1}, {3, 3})});
  CHECK_ERROR(linalg::cholesky(npd), "linalg.cholesky", "matrix 1", "order 2", "not positive-definite");
  Tensor nan_pd = spd().clone();
  nan_pd.data_ptr<double>()[4] = std::numeric_limits<double>::quiet_NaN();
  CHECK_ERROR(linalg::cholesky(nan_pd), "linalg.cholesky", "order 2");
  Tensor nan_m = a.clone();
  nan_m.data_ptr<double>()[7] = std::numeric_limits<double>::infinity();  // row 2, column 1
  CHECK_ERROR(linalg::eigh(nan_m), "linalg.eigh", "matrix 0", "inf");
  CHECK_ERROR(linalg::svd(nan_m), "linalg.svd", "matrix 0", "inf");
  CHECK_ERROR(linalg::svdvals(nan_m), "linalg.svdvals");
  CHECK_ERROR(linalg::pinv(nan_m), "linalg.pinv");
  CHECK_ERROR(linalg::eigh(a, "X"), "linalg.eigh", "UPLO");
  CHECK_ERROR(linalg::qr(a, "full"), "linalg.qr", "mode", "full");
  CHECK_ERROR(linalg::matrix_norm(a, 3.0), "linalg.matrix_norm", "ord");
  CHECK_ERROR(linalg::matrix_norm(a, "max"), "linalg.matrix_norm", "max");
  CHECK_ERROR(linalg::matrix_norm(a, "fro", {0, 0}), "linalg.matrix_norm", "two different dims");
  CHECK_ERROR(linalg::cross(ones({2, 4}, TensorOptions(DType::F64)), ones({2, 4}, TensorOptions(DType::F64))),
              "linalg.cross", "size 3");
  CHECK_ERROR(linalg::multi_dot(std::vector<Tensor>{ones({2, 3}), ones({4, 2})}), "linalg.multi_dot", "do not fit");
  CHECK_ERROR(linalg::pinv(a, -1.0), "linalg.pinv", "tolerances");
  CHECK_ERROR(cholesky_solve(ones({4, 1}, TensorOptions(DType::F64)), linalg::cholesky(spd())), "cholesky_solve");

  // Backward through modes that are not differentiable, as PyTorch.
  const Tensor tall_leaf = leaf(uniform({5, 3}, {-1.0, 1.0}));
  CHECK_ERROR(std::get<1>(linalg::qr(tall_leaf, "r")).sum().backward(), "linalg.qr", "mode \"r\"");
  CHECK_ERROR(std::get<0>(linalg::qr(tall_leaf, "complete")).sum().backward(), "linalg.qr", "complete");
  CHECK_ERROR(linalg::solve(a, tensor<double>({1, 2, 3}), false), "linalg.solve", "left=true");
}

TEST_CASE("linalg: svd with full_matrices ignores the gradients of the extra columns, as PyTorch's") {
  std::string why;
  for (Shape s : {Shape{5, 3}, Shape{3, 5}}) {
    CAPTURE(s);
    const Tensor m = leaf(uniform(s, {-1.0, 1.0}));
    auto f = [](const std::vector<Tensor>& v) {
      constexpr int64_t k = 3;  // min(m, n)
      auto [u, sv, vh] = linalg::svd(v[0], true);
      const Tensor uk = u.narrow(-1, 0, k), vk = vh.narrow(-2, 0, k);
      return std::vector<Tensor>{sv, uk.matmul(uk.mT()), vk.mT().matmul(vk), (uk * sv).matmul(vk)};
    };
    CHECK_MESSAGE(autograd::gradcheck(f, {m}, {}, &why), why);
    // The whole of U (extra columns included) in the loss: accepted, the extra part ignored.
    const Tensor x = leaf(m);
    auto [u, sv, vh] = linalg::svd(x, true);
    (u.sum() * 0.0 + sv.sum()).backward();
    const Tensor y = leaf(m);
    linalg::svdvals(y).sum().backward();
    CHECK(max_abs_diff(x.grad(), y.grad()) < 1e-12);
  }
}

TEST_CASE("linalg: gradients of one output alone (the others unused)") {
  std::string why;
  using V = std::vector<Tensor>;
  for (Shape s : {Shape{2, 5, 3}, Shape{2, 3, 5}, Shape{4, 4}}) {
    CAPTURE(s);
    const Tensor m = leaf(uniform(s, {-1.0, 1.0}));
    CHECK_MESSAGE(autograd::gradcheck([](const V& v) { return std::get<0>(linalg::qr(v[0])); }, {m}, {}, &why), why);
    CHECK_MESSAGE(autograd::gradcheck([](const V& v) { return std::get<1>(linalg::qr(v[0])); }, {m}, {}, &why), why);
    CHECK_MESSAGE(autograd::gradcheck(
                      [](const V& v) {
                        const Tensor u = std::get<0>(linalg::svd(v[0], false));
                        return u.matmul(u.mT());
                      },
                      {m}, {}, &why),
                  why);
    CHECK_MESSAGE(autograd::gradcheck(
                      [](const V& v) {
                        const Tensor vh = std::get<2>(linalg::svd(v[0], false));
                        return vh.mT().matmul(vh);
                      },
                      {m}, {}, &why),
                  why);
  }
  const Tensor x = leaf(random_spd({2, 4, 4}));
  CHECK_MESSAGE(autograd::gradcheck(
                    [](const V& v) {
                      const Tensor vec = std::get<1>(linalg::eigh(v[0] + v[0].mT()));
                      return vec.matmul(vec.mT() * tensor<double>({1, 2, 3, 4}).unsqueeze(-1));  // V diag V^T
                    },
                    {x}, {}, &why),
                why);
}

TEST_CASE("linalg: inference mode, singular and near-singular matrices, empty shapes") {
  {
    InferenceModeGuard guard;
    const Tensor a = well_conditioned({2, 3, 3}), s = random_spd({2, 3, 3});
    CHECK(linalg::inv(a).sizes() == Shape{2, 3, 3});
    CHECK(linalg::solve(a, a).sizes() == Shape{2, 3, 3});
    CHECK(linalg::det(a).sizes() == Shape{2});
    CHECK(std::get<1>(linalg::svd(a)).sizes() == Shape{2, 3});
    CHECK(std::get<0>(linalg::eigh(s)).sizes() == Shape{2, 3});
    CHECK(linalg::cholesky(s).sizes() == Shape{2, 3, 3});
    CHECK(linalg::pinv(a).sizes() == Shape{2, 3, 3});
    CHECK(linalg::matrix_exp(a).sizes() == Shape{2, 3, 3});
  }
  std::string why;
  // Rank n - 1 in exact arithmetic, but LU's last pivot is rounding, not 0: det's gradient
  // must still be the cofactor matrix (through the SVD), which finite differences see.
  const Tensor x = uniform({4, 3}, {-1.0, 1.0});
  const Tensor near_singular = leaf(x.matmul(x.mT()));
  CHECK(std::abs(linalg::det(near_singular).item<double>()) < 1e-13);
  CHECK_MESSAGE(autograd::gradcheck([](const std::vector<Tensor>& v) { return linalg::det(v[0]); }, {near_singular},
                                    {}, &why),
                why);
  // A batch mixing singular and regular matrices.
  const Tensor mixed = leaf(stack({general(), mat({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3})}));
  linalg::det(mixed).sum().backward();
  CHECK(near(values_of(mixed.grad()), {52, -32, -9, 17, 30, -8, 2, 19, 30, 4, 4, -4, -2, -2, 2, 0, 0, 0}, 1e-12));
  // slogdet's backward at a singular matrix: infinite, not an error for the batch.
  const Tensor sl = leaf(stack({general(), mat({1, 2, 3, 2, 4, 6, 1, 0, 1}, {3, 3})}));
  std::get<1>(linalg::slogdet(sl)).select(0, 0).backward();
  CHECK(near(values_of(sl.grad().select(0, 0)), values_of(linalg::inv(general()).mT())));
  CHECK(std::isnan(sl.grad().select(0, 1).sum().item<double>()));
  // cond: inf for a singular matrix in every norm, zeros for empty matrices.
  const Tensor sing = mat({1, 2, 2, 4}, {2, 2});
  CHECK(std::isinf(linalg::cond(sing, 1.0).item<double>()));
  CHECK(std::isinf(linalg::cond(sing, "fro").item<double>()));
  CHECK(linalg::cond(zeros({3, 0, 0}, TensorOptions(DType::F64))).sizes() == Shape{3});
  // Empty matrices and zero-size batches.
  const TensorOptions f64(DType::F64);
  CHECK(linalg::inv(zeros({0, 0}, f64)).sizes() == Shape{0, 0});
  CHECK(linalg::inv(zeros({0, 3, 3}, f64)).sizes() == Shape{0, 3, 3});
  CHECK(linalg::solve(well_conditioned({3, 3}), zeros({3, 0}, f64)).sizes() == Shape{3, 0});
  auto [q0, r0] = linalg::qr(zeros({4, 0}, f64));
  CHECK(q0.sizes() == Shape{4, 0});
  CHECK(r0.sizes() == Shape{0, 0});
  auto [u0, s0, v0] = linalg::svd(zeros({0, 3}, f64));
  CHECK(u0.sizes() == Shape{0, 0});
  CHECK(s0.sizes() == Shape{0});
  CHECK(v0.sizes() == Shape{3, 3});
  CHECK(max_abs_diff(v0, eye(3, 3)) == 0);
  CHECK(std::get<0>(linalg::eigh(zeros({2, 0, 0}, f64))).sizes() == Shape{2, 0});
  CHECK(linalg::pinv(zeros({0, 0}, f64), 1e-15, true).sizes() == Shape{0, 0});
  CHECK(linalg::pinv(zeros({2, 0, 3}, f64)).sizes() == Shape{2, 3, 0});
  // eigh reads one triangle: NaN in the other is fine.
  Tensor half_nan = spd().clone();
  half_nan.data_ptr<double>()[2] = std::numeric_limits<double>::quiet_NaN();  // upper
  CHECK(near(values_of(linalg::eigvalsh(half_nan)), values_of(linalg::eigvalsh(spd()))));
  CHECK_ERROR(linalg::eigvalsh(half_nan, "U"), "linalg.eigvalsh", "nan");
}

TEST_CASE("linalg: tolerances, overloads, dims and copies") {
  // A diag(3, 1e-3, 0) matrix: ranks and pseudo-inverses by atol, rtol and libtorch's forms.
  const Tensor d = mat({3, 0, 0, 0, 1e-3, 0, 0, 0, 0}, {3, 3});
  CHECK(linalg::matrix_rank(d).item<int64_t>() == 2);
  CHECK(linalg::matrix_rank(d, 1e-2).item<int64_t>() == 1);                 // libtorch's tol (absolute)
  CHECK(linalg::matrix_rank(d, 0.0, 1e-2).item<int64_t>() == 1);            // atol, rtol: not hermitian
  CHECK(linalg::matrix_rank(d, 1e-4, std::nullopt).item<int64_t>() == 2);
  CHECK(linalg::matrix_rank(d, 1e-2, true).item<int64_t>() == 1);           // hermitian: |eigenvalues|
  CHECK(near(values_of(linalg::pinv(d)), {1.0 / 3, 0, 0, 0, 1000, 0, 0, 0, 0}));
  CHECK(near(values_of(linalg::pinv(d, 1e-2)), {1.0 / 3, 0, 0, 0, 0, 0, 0, 0, 0}));  // rcond
  CHECK(near(values_of(linalg::pinv(d, 0.5, 0.0)), {1.0 / 3, 0, 0, 0, 0, 0, 0, 0, 0}));  // atol
  CHECK(near(values_of(linalg::pinv(d, 1e-6, 1e-4)), {1.0 / 3, 0, 0, 0, 1000, 0, 0, 0, 0}));  // max(atol, rtol s)
  CHECK(near(values_of(linalg::pinv(d, 1e-6, 1e-3)), {1.0 / 3, 0, 0, 0, 0, 0, 0, 0, 0}));
  // matrix_norm over other dims, keepdim; vector_norm over dims.
  const Tensor x = uniform({2, 3, 4}, {-1.0, 1.0});
  const Tensor n02 = linalg::matrix_norm(x, 1.0, {0, 2}, true);
  CHECK(n02.sizes() == Shape{1, 3, 1});
  CHECK(max_abs_diff(n02.reshape({3}), linalg::matrix_norm(x.permute({1, 0, 2}), 1.0)) < 1e-15);
  CHECK(linalg::matrix_norm(x, "fro", {-1, 0}, true).sizes() == Shape{1, 3, 1});
  CHECK(linalg::vector_norm(x, 3.0, Shape{0, 2}, true).sizes() == Shape{1, 3, 1});
  CHECK(max_abs_diff(linalg::vector_norm(x, 2.0, Shape{1}), x.pow(2.0).sum({1}).sqrt()) < 1e-15);
  // vector_norm(0) counts, with a zero gradient (PyTorch's).
  const Tensor v = leaf(tensor<double>({3, 0, -1}));
  linalg::vector_norm(v, 0).backward();
  CHECK(values_of(v.grad()) == std::vector<double>{0, 0, 0});
  // matrix_power(A, 1) is a copy, not A.
  const Tensor a = general();
  Tensor p1 = linalg::matrix_power(a, 1);
  p1.fill_(0.0);
  CHECK(a.abs().sum().item<double>() > 0);
}

TEST_CASE("linalg: multi_dot picks the cheapest order and keeps the values") {
  const Tensor a = uniform({10, 100}, {-1.0, 1.0}).to(DType::F64), b = uniform({100, 5}, {-1.0, 1.0}).to(DType::F64),
               c = uniform({5, 50}, {-1.0, 1.0}).to(DType::F64), v = uniform({50}, {-1.0, 1.0}).to(DType::F64);
  const Tensor r = linalg::multi_dot(std::vector<Tensor>{a, b, c, v});
  CHECK(r.sizes() == Shape{10});
  CHECK(max_abs_diff(r, a.matmul(b).matmul(c).matmul(v.unsqueeze(1)).squeeze(1)) < 1e-10);
  const Tensor row = linalg::multi_dot(std::vector<Tensor>{v, c.mT(), b.mT()});
  CHECK(row.sizes() == Shape{100});
}

TEST_CASE("linalg: libtorch's Tensor methods and older free forms") {
  const Tensor a = general(), s = spd();
  CHECK(a.det().item<double>() == doctest::Approx(263.0).epsilon(1e-14));
  CHECK(max_abs_diff(a.inverse(), linalg::inv(a)) == 0);
  CHECK(a.logdet().item<double>() == doctest::Approx(5.572154032177764).epsilon(1e-14));
  CHECK(std::get<0>(a.slogdet()).item<double>() == 1.0);
  const Tensor l = s.cholesky();
  CHECK(max_abs_diff(l, linalg::cholesky(s)) == 0);
  CHECK(max_abs_diff(s.cholesky(true), l.mT()) < 1e-15);
  CHECK(max_abs_diff(cholesky(s), l) == 0);
  const Tensor b = mat({1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(max_abs_diff(b.cholesky_solve(l), linalg::solve(s, b)) < 1e-13);
  CHECK(max_abs_diff(l.cholesky_inverse(), linalg::inv(s)) < 1e-13);
  CHECK(max_abs_diff(tall().pinverse(), linalg::pinv(tall())) == 0);
  CHECK(max_abs_diff(a.matrix_power(3), a.matmul(a).matmul(a)) < 1e-10);
  CHECK(max_abs_diff(matrix_power(a, 2), a.matmul(a)) < 1e-12);
  CHECK(max_abs_diff((a * 0.1).matrix_exp(), matrix_exp(a * 0.1)) == 0);
  auto [x, copy] = b.triangular_solve(a.triu());
  CHECK(max_abs_diff(a.triu().matmul(x), b) < 1e-13);
  CHECK(max_abs_diff(copy, a.triu()) == 0);
  // torch::qr(some) and torch::svd(some, compute_uv): V, not Vh; zero U and V without compute_uv.
  auto [q, r] = tall().qr();
  CHECK(q.sizes() == Shape{3, 2});
  CHECK(std::get<0>(tall().qr(false)).sizes() == Shape{3, 3});
  CHECK(max_abs_diff(q.matmul(r), tall()) < 1e-13);
  auto [u, sv, v] = tall().svd();
  CHECK(u.sizes() == Shape{3, 2});
  CHECK(v.sizes() == Shape{2, 2});
  CHECK(max_abs_diff((u * sv).matmul(v.mT()), tall()) < 1e-13);
  CHECK(std::get<0>(svd(tall(), false)).sizes() == Shape{3, 3});
  auto [u0, s0, v0] = tall().svd(true, false);
  CHECK(u0.sizes() == Shape{3, 3});
  CHECK(v0.sizes() == Shape{2, 2});
  CHECK(max_abs_diff(u0, zeros({3, 3})) == 0);
  CHECK(max_abs_diff(s0, sv) < 1e-14);
}

TEST_CASE("linalg: lu, lu_factor, lu_solve, lu_unpack against PyTorch") {
  // PyTorch: lu_factor of general()'s rows (2, 0, 1).
  const Tensor a = general().index_select(0, tensor<int64_t>({2, 0, 1}));
  // Plain variables, not structured bindings: clang 14 cannot capture those in CHECK_ERROR.
  const auto factored = linalg::lu_factor(a);
  const Tensor packed = std::get<0>(factored), pivots = std::get<1>(factored);
  CHECK(pivots.dtype() == DType::I32);
  CHECK(values_of(pivots) == std::vector<double>{2, 3, 3});
  CHECK(near(values_of(packed), {4.0, -2.0, 1.0, 0.75, 7.5, -4.75, 0.5, 0.26666666666666666, 8.766666666666666}));
  auto [p, l, u] = linalg::lu(a);
  CHECK(values_of(p) == std::vector<double>{0, 0, 1, 1, 0, 0, 0, 1, 0});
  CHECK(max_abs_diff(p.matmul(l).matmul(u), a) < 1e-14);
  auto [p2, l2, u2] = lu_unpack(packed, pivots);
  CHECK(max_abs_diff(p2, p) == 0);
  CHECK(max_abs_diff(l2, l) == 0);
  CHECK(max_abs_diff(u2, u) == 0);
  // A wide matrix (PyTorch's packed LU and pivots).
  const Tensor w = mat({1, 2, 3, 4, 5, 6, 7, 9, 2, -1, 0, 3}, {3, 4});
  auto [wp, wpiv] = linalg::lu_factor(w);
  CHECK(values_of(wpiv) == std::vector<double>{2, 3, 3});
  CHECK(near(values_of(wp), {5.0, 6.0, 7.0, 9.0, 0.4, -3.4000000000000004, -2.8000000000000003, -0.6000000000000001, 0.2,
                             -0.23529411764705874, 0.9411764705882354, 2.058823529411765}));
  // lu_solve, plain and adjoint (PyTorch's values), and the right-hand forms.
  const Tensor b = mat({1, 2, 3}, {3, 1});
  CHECK(near(values_of(linalg::lu_solve(packed, pivots, b)), {0.596958174904943, 0.17110266159695817, -0.04562737642585552}));
  CHECK(near(values_of(linalg::lu_solve(packed, pivots, b, true, true)),
             {0.49429657794676807, -0.1482889733840304, 0.2015209125475285}));
  const Tensor bt = mat({1, 2, 3, -1, 0, 2}, {2, 3});
  CHECK(max_abs_diff(linalg::lu_solve(packed, pivots, bt, false).matmul(a), bt) < 1e-13);
  CHECK(max_abs_diff(linalg::lu_solve(packed, pivots, bt, false, true).matmul(a.mT()), bt) < 1e-13);
  // A tall matrix (PyTorch: packed [5, 6, 0.2, 0.8, 0.6, 0.5], pivots [3, 3]).
  auto [tp, tpiv] = linalg::lu_factor(tall());
  CHECK(values_of(tpiv) == std::vector<double>{3, 3});
  CHECK(near(values_of(tp), {5.0, 6.0, 0.2, 0.7999999999999998, 0.6000000000000001, 0.49999999999999944}));
  // LAPACK's pivot rule: the first largest |value| by a strict >, so a NaN below the diagonal
  // is passed over (PyTorch: pivots [3, 2, 3]); a subnormal pivot divides instead of
  // multiplying by an infinite reciprocal (PyTorch: L = I, U = A).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(values_of(std::get<1>(linalg::lu_factor(mat({0, 1, 0, nan, 0, 1, 2, 0, 0}, {3, 3})))) ==
        std::vector<double>{3, 2, 3});
  auto [sp, sl, su] = linalg::lu(mat({1e-310, 0, 0, 1}, {2, 2}));
  CHECK(values_of(sl) == std::vector<double>{1, 0, 0, 1});
  CHECK(values_of(su) == std::vector<double>{1e-310, 0, 0, 1});
  // Random rectangular batches: P L U = A; f32 too.
  for (DType t : {DType::F64, DType::F32}) {
    for (Shape s : {Shape{2, 5, 3}, Shape{2, 3, 5}, Shape{4, 4}}) {
      CAPTURE(s);
      const Tensor m = uniform(s, {-1.0, 1.0}).to(t);
      auto [pm, lm, um] = linalg::lu(m);
      CHECK(max_abs_diff(pm.matmul(lm).matmul(um), m) < (t == DType::F64 ? 1e-14 : 1e-6));
      CHECK(lm.size(-1) == std::min(s[s.size() - 2], s.back()));
    }
  }
  // Empty shapes: a 3 x 0 matrix (P = I, L 3 x 0, U 0 x 0) and an empty batch.
  auto [ep, el, eu] = linalg::lu(zeros({3, 0}, TensorOptions(DType::F64)));
  CHECK(max_abs_diff(ep, eye(3, 3)) == 0);
  CHECK(el.sizes() == Shape{3, 0});
  CHECK(eu.sizes() == Shape{0, 0});
  CHECK(std::get<0>(linalg::lu(zeros({0, 2, 2}, TensorOptions(DType::F64)))).sizes() == Shape{0, 2, 2});
  CHECK(std::get<1>(linalg::lu_factor(zeros({3, 0}, TensorOptions(DType::F64)))).sizes() == Shape{0});
  CHECK(std::get<0>(linalg::lu_factor(zeros({0, 2, 2}, TensorOptions(DType::F64)))).sizes() == Shape{0, 2, 2});
  // lu_solve broadcasts LU's batch with B's.
  const Tensor lub = well_conditioned({2, 3, 3});
  auto [blu, bpiv] = linalg::lu_factor(lub);
  const Tensor rhs1 = uniform({3, 2}, {-1.0, 1.0}), rhs2 = uniform({4, 1, 3, 2}, {-1.0, 1.0});
  CHECK(max_abs_diff(linalg::lu_solve(blu, bpiv, rhs1), linalg::solve(lub, rhs1)) < 1e-13);
  const Tensor x4 = linalg::lu_solve(blu, bpiv, rhs2);
  CHECK(x4.sizes() == Shape{4, 2, 3, 2});
  CHECK(max_abs_diff(x4, linalg::solve(lub, rhs2)) < 1e-13);
  CHECK(max_abs_diff(linalg::lu_solve(blu, bpiv, rhs2.mT(), false), linalg::solve(lub, rhs2.mT(), false)) < 1e-13);
  // User pivots may swap with an earlier row (any 1-based row is a legal swap).
  auto [up, ul, uu] = lu_unpack(packed, tensor<int64_t>({2, 1, 3}).to(DType::I32));
  CHECK(values_of(up) == std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  // Gradients: of L and U (square, wide, tall), and through lu_factor + lu_solve.
  std::string why;
  using V = std::vector<Tensor>;
  for (Shape s : {Shape{2, 4, 4}, Shape{2, 3, 5}, Shape{2, 5, 3}}) {
    CAPTURE(s);
    const Tensor m = leaf(uniform(s, {-1.0, 1.0}));
    auto f = [](const V& v) {
      auto [pm, lm, um] = linalg::lu(v[0]);
      return V{lm, um};
    };
    CHECK_MESSAGE(autograd::gradcheck(f, {m}, {}, &why), why);
    CHECK_MESSAGE(autograd::gradgradcheck(f, {m}, {}, &why), why);
    CHECK_MESSAGE(autograd::gradcheck([](const V& v) { return std::get<2>(linalg::lu(v[0])); }, {m}, {}, &why), why);
    CHECK_MESSAGE(autograd::gradcheck([](const V& v) { return std::get<1>(linalg::lu(v[0])); }, {m}, {}, &why), why);
    CHECK_MESSAGE(autograd::gradcheck([](const V& v) { return std::get<0>(linalg::lu_factor(v[0])); }, {m}, {}, &why),
                  why);
  }
  const Tensor sq = leaf(well_conditioned({2, 3, 3})), rhs = leaf(uniform({2, 3, 2}, {-1.0, 1.0}));
  for (int form = 0; form < 4; ++form) {
    CAPTURE(form);
    auto f = [form](const V& v) {
      auto [lu, piv] = linalg::lu_factor(v[0]);
      const bool left = form < 2, adjoint = form % 2 == 1;
      return linalg::lu_solve(lu, piv, left ? v[1] : v[1].mT(), left, adjoint);
    };
    CHECK_MESSAGE(autograd::gradcheck(f, {sq, rhs}, {}, &why), why);
  }
  // Errors: a singular matrix for lu_factor (lu factorises it), pivots that do not fit.
  const Tensor sing = mat({1, 2, 2, 4}, {2, 2});
  CHECK_ERROR(linalg::lu_factor(sing), "linalg.lu_factor", "matrix 0", "zero pivot");
  auto [sgp, sgl, sgu] = linalg::lu(sing);  // factorised anyway: U[1, 1] = 0
  CHECK(max_abs_diff(sgp.matmul(sgl).matmul(sgu), sing) == 0);
  CHECK(sgu.index({1, 1}).item<double>() == 0);
  CHECK_ERROR(linalg::lu_solve(packed, pivots.to(DType::I64), b), "linalg.lu_solve", "i32");
  CHECK_ERROR(linalg::lu_solve(packed, pivots.narrow(0, 0, 2), b), "linalg.lu_solve", "[2]", "[3, 3]");
  CHECK_ERROR(lu_unpack(packed, full_like(pivots, 7)), "lu_unpack", "pivot 0", "7", "[1, 3]");
  CHECK_ERROR(linalg::lu_solve(packed, pivots, mat({1, 2}, {2, 1})), "linalg.lu_solve", "do not fit");
  CHECK_ERROR(linalg::lu(a, false), "linalg.lu", "without pivoting");
}

}  // namespace test_linalg
