// cdist and pdist (nn/functional_distance.hpp): values against plain double loops for every
// kind of p, both Euclidean paths, batch broadcasting and blocks; gradients against finite
// differences (first and second order) in f64; PyTorch's zero gradient at a zero distance;
// errors.

#include <doctest/doctest.h>
#include <ember/autograd/gradcheck.hpp>
#include <ember/nn.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../error_text.hpp"

namespace test_distance_functions {  // this file's own names in a unity build (tests/meson.build)

using namespace ember;
namespace F = nn::functional;

namespace {

std::vector<double> values_of(const Tensor& t) {
  Tensor h = t.detach().to(DType::F64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

/// ||a - b||_p of two rows of doubles, by definition.
double dist(const double* a, const double* b, int64_t m, double p) {
  double acc = 0;
  for (int64_t k = 0; k < m; ++k) {
    const double d = std::fabs(a[k] - b[k]);
    if (p == 0) acc += d != 0;
    else if (std::isinf(p)) acc = std::max(acc, d);
    else acc += std::pow(d, p);
  }
  return p == 0 || std::isinf(p) ? acc : std::pow(acc, 1 / p);
}

/// The reference cdist of x1 (B, P, M) and x2 (B, R, M), both contiguous f64.
std::vector<double> cdist_ref(const Tensor& x1, const Tensor& x2, double p) {
  const int64_t b = x1.size(0), rows1 = x1.size(1), rows2 = x2.size(1), m = x1.size(2);
  std::vector<double> a = values_of(x1), c = values_of(x2), out;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t r = 0; r < rows1; ++r)
      for (int64_t q = 0; q < rows2; ++q)
        out.push_back(dist(&a[static_cast<size_t>((i * rows1 + r) * m)], &c[static_cast<size_t>((i * rows2 + q) * m)], m, p));
  return out;
}

/// Every element within rtol (relative, with 1 added to the scale); one assertion, naming the
/// worst element.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double rtol) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]) / (1.0 + std::max(std::fabs(got[i]), std::fabs(want[i])));
    if (!(err <= worst)) worst = err, at = i;  // NaN counts as the worst
  }
  CHECK_MESSAGE(worst <= rtol, "element ", at, ": ", got.empty() ? 0.0 : got[at], " vs ",
                want.empty() ? 0.0 : want[at], " (relative error ", worst, ")");
}

const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("cdist: every kind of p against a plain loop; both Euclidean paths; blocks") {
  manual_seed(5);
  for (double p : {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, kInf}) {
    CAPTURE(p);
    Tensor x1 = randn({2, 7, 5}, DType::F64), x2 = randn({2, 4, 5}, DType::F64);
    x2.narrow(1, 0, 1).copy_(x1.narrow(1, 2, 1));  // a zero distance, and a zero difference for p = 0
    check_close(values_of(F::cdist(x1, x2, p)), cdist_ref(x1, x2, p), 1e-12);
    // The matrix product form for p = 2 (always, or past 25 rows), within its rounding.
    if (p == 2) {
      check_close(values_of(F::cdist(x1, x2, p, 1)), cdist_ref(x1, x2, p), 1e-7);
      Tensor big = randn({2, 30, 5}, DType::F64);
      check_close(values_of(F::cdist(big, x2)), cdist_ref(big, x2, 2), 1e-7);
      check_close(values_of(F::cdist(big, x2, 2, 2)), cdist_ref(big, x2, 2), 1e-12);
    }
  }
  // f32, and more rows than one block holds (2^21 difference elements).
  Tensor a = randn({700, 64}), b = randn({60, 64});
  CHECK(F::cdist(a, b, 1.0).dtype() == DType::F32);
  check_close(values_of(F::cdist(a, b, 1.0)), cdist_ref(a.to(DType::F64).unsqueeze(0), b.to(DType::F64).unsqueeze(0), 1.0),
              2e-6);
}

TEST_CASE("cdist: batch dims broadcast; empty sets; no columns") {
  manual_seed(6);
  Tensor x1 = randn({3, 1, 4, 2}, DType::F64), x2 = randn({5, 6, 2}, DType::F64);
  Tensor d = F::cdist(x1, x2, 1.5);
  CHECK(d.sizes() == Shape{3, 5, 4, 6});
  check_close(values_of(d),
              cdist_ref(x1.expand({3, 5, 4, 2}).reshape({15, 4, 2}), x2.expand({3, 5, 6, 2}).reshape({15, 6, 2}), 1.5),
              1e-12);
  CHECK(F::cdist(randn({0, 3}), randn({4, 3})).sizes() == Shape{0, 4});
  CHECK(F::cdist(randn({2, 3}), randn({0, 3})).sizes() == Shape{2, 0});
  Tensor none = F::cdist(randn({2, 0}), randn({3, 0}), kInf);
  CHECK(none.sizes() == Shape{2, 3});
  CHECK(values_of(none) == std::vector<double>(6, 0.0));
  // libtorch's spelling, torch::cdist: ember::cdist.
  Tensor u = randn({1, 4, 3}, DType::F64);
  check_close(values_of(ember::cdist(u, u, 3.0)), cdist_ref(u, u, 3.0), 1e-12);
  CHECK(ember::pdist(u[0]).sizes() == Shape{6});
  // Empty sets stay connected to the inputs: a backward through them works.
  Tensor e1 = randn({0, 3}).requires_grad_(), e2 = randn({4, 3}).requires_grad_();
  F::cdist(e1, e2).sum().backward();
  CHECK(values_of(e2.grad()) == std::vector<double>(12, 0.0));
}

TEST_CASE("cdist: the matrix product form exactly past 25 rows (compute_mode 0), always (1) or never (2)") {
  // Rows near 1e4 that differ by about 1e-2 in f32: the matrix product form cancels |a|^2 and
  // |b|^2 of 1e8 (ulp 8) and loses the distances; the direct form keeps them.
  manual_seed(12);
  auto rows = [](int64_t n) { return full({n, 4}, 1e4) + randn({n, 4}) * 0.01; };
  Tensor few = rows(25), many = rows(26), other = rows(3);
  auto err = [&](const Tensor& a, std::optional<int64_t> mode) {
    std::vector<double> got = values_of(F::cdist(a, other, 2.0, mode));
    std::vector<double> want = cdist_ref(a.to(DType::F64).unsqueeze(0), other.to(DType::F64).unsqueeze(0), 2.0);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    return worst;
  };
  CHECK(err(few, std::nullopt) < 1e-3);
  CHECK(err(many, std::nullopt) > 0.1);
  CHECK(err(many, 2) < 1e-3);
  CHECK(err(few, 1) > 0.1);
  CHECK(err(few, 0) < 1e-3);
}

TEST_CASE("cdist: blocks of both sets, forward and backward, equal the whole computation") {
  manual_seed(13);
  // 2 x 600 x 4096: blocks of 512 columns' rows of x2 and single rows of x1; and 40 x 60 x 2048
  // in row blocks of 17.
  struct Case {
    Shape s1, s2;
    double p;
  };
  for (const Case& c : {Case{{5, 4096}, {600, 4096}, 1.0}, Case{{40, 2048}, {60, 2048}, 3.0},
                        Case{{40, 2048}, {60, 2048}, 2.0}}) {
    CAPTURE(c.p);
    Tensor a = randn(c.s1, DType::F64).requires_grad_(), b = randn(c.s2, DType::F64).requires_grad_();
    Tensor a2 = a.detach().clone().requires_grad_(), b2 = b.detach().clone().requires_grad_();
    Tensor w = randn({c.s1[0], c.s2[0]}, DType::F64);
    Tensor d = F::cdist(a, b, c.p, 2);
    Tensor whole = (a2.unsqueeze(-2) - b2.unsqueeze(-3)).norm(c.p, {-1});
    check_close(values_of(d), values_of(whole), 1e-12);
    (d * w).sum().backward();
    (whole * w).sum().backward();
    check_close(values_of(a.grad()), values_of(a2.grad()), 1e-10);
    check_close(values_of(b.grad()), values_of(b2.grad()), 1e-10);
  }
}

TEST_CASE("cdist and pdist gradients: finite differences, second order, zero at a zero distance") {
  manual_seed(7);
  std::string why;
  for (double p : {1.0, 1.5, 2.0, 3.0, kInf}) {
    for (int64_t mode : {1, 2}) {
      if (p != 2 && mode == 1) continue;
      CAPTURE(p);
      CAPTURE(mode);
      Tensor x1 = randn({2, 3, 4}, DType::F64).requires_grad_(), x2 = randn({2, 5, 4}, DType::F64).requires_grad_();
      auto f = [&](const std::vector<Tensor>& in) { return F::cdist(in[0], in[1], p, mode); };
      CHECK_MESSAGE(autograd::gradcheck(f, {x1, x2}, {}, &why), why);
      if (!std::isinf(p) && p != 1) CHECK_MESSAGE(autograd::gradgradcheck(f, {x1, x2}, {}, &why), why);
    }
    Tensor x = randn({5, 3}, DType::F64).requires_grad_();
    CHECK_MESSAGE(autograd::gradcheck([&](const std::vector<Tensor>& in) { return F::pdist(in[0], p); }, {x}, {}, &why),
                  why);
  }
  // Second derivatives where a coordinate difference is 0 (2 < p < 3: |d|^(p-2) has an
  // infinite slope there; the limit, 0, not 0 * inf) and at a zero distance through the
  // matrix product form: finite. (Finite differences converge as sqrt(eps) at such a point,
  // so gradgradcheck cannot judge it.)
  {
    Tensor x1 = tensor<double>({{0.5, 1.0}, {2.0, -1.0}}).requires_grad_();
    Tensor x2 = tensor<double>({{0.5, 3.0}, {1.0, 1.0}});
    Tensor g1 = autograd::grad({F::cdist(x1, x2, 2.5).sum()}, {x1}, {}, std::nullopt, true)[0];
    for (double v : values_of(autograd::grad({g1.sum()}, {x1})[0])) CHECK(std::isfinite(v));
    Tensor many = randn({27, 2}, DType::F64);
    Tensor same = many.clone().requires_grad_();
    Tensor g = autograd::grad({F::cdist(same, many).sum()}, {same}, {}, std::nullopt, true)[0];
    Tensor second = autograd::grad({g.sum()}, {same})[0];
    for (double v : values_of(second)) CHECK(std::isfinite(v));
  }
  // PyTorch's subgradient 0 where two rows are equal, on every path (the naive forms give NaN).
  for (int64_t mode : {1, 2}) {
    for (double p : {0.5, 2.0, 3.0}) {
      if (p != 2 && mode == 1) continue;
      CAPTURE(mode);
      CAPTURE(p);
      Tensor x1 = tensor<double>({{1.0, 2.0}, {0.5, -1.0}}).requires_grad_();
      Tensor x2 = tensor<double>({{1.0, 2.0}}).requires_grad_();
      F::cdist(x1, x2, p, mode).sum().backward();
      for (double g : values_of(x1.grad())) CHECK(std::isfinite(g));
      CHECK(values_of(x1.grad())[0] == 0);
      CHECK(values_of(x1.grad())[1] == 0);
      for (double g : values_of(x2.grad())) CHECK(std::isfinite(g));
    }
  }
  // pdist: pairs (0, 1) at distance 0 (gradient 0), (0, 2) and (1, 2) at sqrt(5).
  Tensor y = tensor<double>({{1.0, 2.0}, {1.0, 2.0}, {0.0, 0.0}}).requires_grad_();
  F::pdist(y).sum().backward();
  const double r5 = std::sqrt(5.0);
  check_close(values_of(y.grad()), {1 / r5, 2 / r5, 1 / r5, 2 / r5, -2 / r5, -4 / r5}, 1e-15);
}

TEST_CASE("pdist: the pairs i < j in order, every kind of p, blocks") {
  manual_seed(8);
  for (double p : {0.0, 1.0, 2.0, 2.5, kInf}) {
    CAPTURE(p);
    Tensor x = randn({6, 4}, DType::F64);
    x.narrow(0, 4, 1).copy_(x.narrow(0, 1, 1));
    std::vector<double> v = values_of(x), want;
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = i + 1; j < 6; ++j) want.push_back(dist(&v[static_cast<size_t>(i * 4)], &v[static_cast<size_t>(j * 4)], 4, p));
    check_close(values_of(F::pdist(x, p)), want, 1e-12);
  }
  // 3000 rows: blocks of 2^22 / 3000 = 1398 rows (three blocks), 4498500 pairs; each checked
  // pair against its two rows, in and across blocks, and every pair's position by row.
  Tensor big = randn({3000, 3}, DType::F64).requires_grad_();
  Tensor d = F::pdist(big);
  CHECK(d.sizes() == Shape{4498500});
  auto pair_at = [](int64_t i, int64_t j) { return i * 3000 - i * (i + 1) / 2 + (j - i - 1); };
  for (const auto& ij : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {2, 6}, {1397, 1398}, {1398, 2999},
                                                                  {2000, 2500}, {2998, 2999}}) {
    const int64_t i = ij.first, j = ij.second;
    CAPTURE(i);
    CAPTURE(j);
    CHECK(values_of(d.narrow(0, pair_at(i, j), 1))[0] ==
          doctest::Approx(values_of((big[i] - big[j]).norm(2.0))[0]).epsilon(1e-12));
  }
  // The gradient of the sum: each row gets the sum of the unit differences to every other row.
  d.sum().backward();
  Tensor rows = big.detach().narrow(0, 0, 40);
  Tensor unit = (rows.unsqueeze(1) - big.detach().unsqueeze(0));
  Tensor norms = unit.norm(2.0, {-1}, true);
  Tensor want_grad = (unit / norms.masked_fill(norms.eq(0.0), 1.0)).sum({1});
  check_close(values_of(big.grad().narrow(0, 0, 40)), values_of(want_grad), 1e-10);
  CHECK(F::pdist(randn({1, 3})).sizes() == Shape{0});
  CHECK(values_of(F::pdist(randn({3, 0}))) == std::vector<double>(3, 0.0));
}

TEST_CASE("cdist and pdist errors name the function and the shapes or values") {
  Tensor a = randn({3, 4}), b = randn({2, 5});
  CHECK_ERROR(F::cdist(a, b), "[cdist]", "same number of columns", "[3, 4]", "[2, 5]");
  CHECK_ERROR(F::cdist(randn({4}), a), "[cdist]", "at least 2 dims", "[4]");
  CHECK_ERROR(F::cdist(a, a, -1.0), "[cdist]", "non-negative p", "-1");
  CHECK_ERROR(F::cdist(a, a, std::nan("")), "[cdist]", "non-negative p", "nan");
  CHECK_ERROR(F::cdist(a, a.to(DType::F64)), "[cdist]", "one dtype", "f32", "f64");
  CHECK_ERROR(F::cdist(a.to(DType::I64), a.to(DType::I64)), "[cdist]", "floating-point");
  CHECK_ERROR(F::cdist(a, a, 2.0, 3), "[cdist]", "compute_mode", "3");
  CHECK_ERROR(F::cdist(randn({2, 3, 4}), randn({3, 3, 4})), "[cdist]", "[2]", "[3]");
  CHECK_ERROR(F::pdist(randn({2, 3, 4})), "[pdist]", "2-d", "[2, 3, 4]");
  CHECK_ERROR(F::pdist(a, -0.5), "[pdist]", "non-negative p", "-0.5");
  CHECK_ERROR(F::pdist(a.to(DType::I32)), "[pdist]", "floating-point", "i32");
}

}  // namespace test_distance_functions
