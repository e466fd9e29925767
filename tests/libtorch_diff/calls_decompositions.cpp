// ember-vs-libtorch, linear algebra (include/ember/linalg.hpp) against libtorch's torch::linalg:
// determinants, inverses, solves, Cholesky, QR, symmetric eigenvalues, singular values,
// pseudo-inverses, ranks, norms and the composites, on random batches (square ones made
// diagonally dominant, symmetric positive-definite ones as X X^T + n I, so that both
// libraries' roundings stay within the comparison's tolerance), invalid ones included; values,
// gradients (strided operands too) and, in f64, second-order gradients. Eigenvectors and
// singular vectors are unique only up to sign, so only sign-free results are compared.

#include "harness.hpp"

#include <string>
#include <vector>

namespace ediff {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

/// Random values in [-1, 1) plus `diagonal` on each matrix's diagonal.
Buf shifted(DT t, std::vector<int64_t> shape, double diagonal) {
  Buf b = random_buf(t, shape, {-1, 1}, false);
  const int64_t n = shape.back(), m = shape[shape.size() - 2];
  std::vector<Val> v;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const int64_t r = (i / n) % m, col = i % n;
    v.push_back({b.at(i) + (r == col ? diagonal : 0.0), 0});
  }
  return make_buf(t, v, shape);
}

/// b * k.
Buf times(const Buf& b, double k) {
  std::vector<Val> v;
  for (int64_t i = 0; i < b.numel(); ++i) v.push_back({b.at(i) * k, 0});
  return make_buf(b.dt, v, b.shape);
}

/// X X^T + n I for random X: symmetric positive-definite.
Buf spd(DT t, int64_t batch, int64_t n) {
  Buf x = random_buf(DT::F64, {batch, n, n}, {-1, 1}, false);
  std::vector<Val> v;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = i == j ? d(n) : 0.0;
        for (int64_t k = 0; k < n; ++k) s += x.at((b * n + i) * n + k) * x.at((b * n + j) * n + k);
        v.push_back({s, 0});
      }
  return make_buf(t, v, {batch, n, n});
}

}  // namespace

void decomposition_calls(Report& rep, const std::string& filter) {
  reseed("decompositions");
  for (DT t : {DT::F32, DT::F64}) {
    for (int n : {1, 2, 3, 5}) {
      const int b = pick(1, 3);
      const Buf a = shifted(t, {b, n, n}, d(n) + 1);
      const Buf rhs = random_operand(t, {b, n, 2});
      named_call(rep, filter, "linalg_det", {a}, {}, true, true);
      named_call(rep, filter, "linalg_slogdet", {a}, {}, true, true);
      named_call(rep, filter, "logdet", {a}, {}, true, true);
      named_call(rep, filter, "linalg_inv", {a}, {}, true, true);
      for (int left : {1, 0}) named_call(rep, filter, "linalg_solve", {a, left ? rhs : random_operand(t, {b, 2, n})}, {d(left)}, true, true);
      named_call(rep, filter, "linalg_solve", {a, random_operand(t, {n})}, {1}, true, true);  // a vector, broadcast
      named_call(rep, filter, "linalg_solve", {a, random_operand(t, {1, n, 3})}, {1}, true, true);
      for (int upper : {0, 1})
        for (int unit : {0, 1}) named_call(rep, filter, "linalg_solve_triangular", {a, rhs}, {d(upper), 1, d(unit)}, true, true);
      named_call(rep, filter, "linalg_solve_triangular", {a, random_operand(t, {b, 2, n})}, {1, 0, 0}, true, true);
      for (int p : {-3, -1, 0, 1, 2, 5}) named_call(rep, filter, "linalg_matrix_power", {a}, {d(p)}, true, true);
      for (int left : {1, 0})
        for (int adjoint : {0, 1})
          named_call(rep, filter, "linalg_lu_solve", {a, left ? rhs : random_operand(t, {b, 2, n})},
                     {d(left), d(adjoint)}, true, true);
      const Buf s = spd(t, b, n);
      for (int upper : {0, 1}) {
        named_call(rep, filter, "linalg_cholesky", {s}, {d(upper)}, true, true);
        named_call(rep, filter, "linalg_eigvalsh", {s}, {d(upper)}, true, true);
        named_call(rep, filter, "cholesky_solve", {rhs, shifted(t, {b, n, n}, d(n) + 1)}, {d(upper)}, true, true);
        named_call(rep, filter, "cholesky_inverse", {shifted(t, {b, n, n}, d(n) + 1)}, {d(upper)}, true, false);
      }
      named_call(rep, filter, "linalg_pinv", {s}, {1}, true, true);  // hermitian
      for (double ord : {-2.0, -1.0, 1.0, 2.0, 3.0, 10.0})  // 3: "fro", 10: inf; -10: -inf
        named_call(rep, filter, "linalg_matrix_norm", {a}, {ord}, true, true);
      named_call(rep, filter, "linalg_matrix_norm", {a}, {-10.0}, true, true);
      named_call(rep, filter, "linalg_matrix_norm", {a}, {4.0}, true, true);  // 4: "nuc"
      named_call(rep, filter, "linalg_cond", {a}, {}, true, true);
      named_call(rep, filter, "linalg_matrix_rank", {a}, {}, true, false);
    }
    for (auto shape : {std::vector<int64_t>{2, 5, 3}, std::vector<int64_t>{2, 3, 5}, std::vector<int64_t>{4, 4}}) {
      const Buf m = random_operand(t, shape);
      named_call(rep, filter, "linalg_svdvals", {m}, {}, true, true);
      named_call(rep, filter, "linalg_pinv", {m}, {0}, true, true);
      named_call(rep, filter, "linalg_qr", {m}, {}, true, true);  // Householder's signs: as LAPACK's
      named_call(rep, filter, "linalg_lstsq", {m, random_operand(t, {shape[shape.size() - 2]})}, {1}, true, false);
      for (const char* lu_op : {"linalg_lu_factor", "linalg_lu", "linalg_lu_U"})
        named_call(rep, filter, lu_op, {m}, {}, true, true);
      named_call(rep, filter, "linalg_matrix_rank", {m}, {}, true, false);
      std::vector<int64_t> rhs_shape = shape;
      rhs_shape.back() = 2;
      for (int driver = 0; driver < 4; ++driver)  // gelsy gelsd gels gelss
        named_call(rep, filter, "linalg_lstsq", {m, random_operand(t, rhs_shape)}, {d(driver)}, true,
                   shape[shape.size() - 2] >= shape.back());  // full column rank: a smooth solution
    }
    for (double scale : {0.1, 1.0, 4.0})  // norms below and above the Pade degrees' ranges
      named_call(rep, filter, "linalg_matrix_exp", {times(shifted(t, {2, 4, 4}, 0.0), scale)}, {}, true, true);
    // A rank-deficient matrix: rank and pseudo-inverse with the default tolerances.
    named_call(rep, filter, "linalg_matrix_rank",
               {make_buf(t, {{1, 0}, {2, 0}, {3, 0}, {2, 0}, {4, 0}, {6, 0}, {1, 0}, {0, 0}, {1, 0}}, {3, 3})}, {}, true,
               false);
    // Refused alike: non-square, 1-d, a singular matrix, one not positive-definite.
    named_call(rep, filter, "linalg_inv", {random_operand(t, {2, 3})}, {}, true, false);
    named_call(rep, filter, "linalg_det", {random_operand(t, {3})}, {}, true, false);
    named_call(rep, filter, "linalg_inv", {make_buf(t, {{1, 0}, {2, 0}, {2, 0}, {4, 0}}, {2, 2})}, {}, true, false);
    named_call(rep, filter, "linalg_cholesky", {make_buf(t, {{1, 0}, {2, 0}, {2, 0}, {1, 0}}, {2, 2})}, {0}, true, false);
    named_call(rep, filter, "linalg_solve", {shifted(t, {3, 3}, 4), random_operand(t, {4, 2})}, {1}, true, false);
    named_call(rep, filter, "linalg_cross", {random_operand(t, {4, 3}), random_operand(t, {4, 3})}, {-1}, true, true);
    named_call(rep, filter, "linalg_cross", {random_operand(t, {3, 2}), random_operand(t, {1, 2})}, {0}, true, true);
    named_call(rep, filter, "linalg_cross", {random_operand(t, {4, 2}), random_operand(t, {4, 2})}, {-1}, true, false);
    for (double ord : {0.0, 1.0, 2.0, 3.5, 10.0, -10.0})  // 10: inf, -10: -inf
      named_call(rep, filter, "linalg_vector_norm", {random_operand(t, {3, 4})}, {ord, 1}, true, ord != 0);
  }
  // Integer and half inputs: refused by both.
  named_call(rep, filter, "linalg_det", {random_operand(DT::I64, {2, 2})}, {}, true, false);
  named_call(rep, filter, "linalg_inv", {random_operand(DT::F16, {2, 2})}, {}, true, false);
}

}  // namespace ediff
