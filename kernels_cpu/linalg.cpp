// The factorisations behind ember::linalg (include/ember/linalg/kernels.hpp) other than eigh
// (linalg_eigh.cpp) and svd (linalg_svd.cpp): Eigen's blocked partial-pivoting LU, LLT and
// Householder QR, LAPACK's getrf order for lu_factor, triangular solves. Object files of their
// own: a program that never calls linalg links none of them (tests/footprint).
#include "linalg_blocks.hpp"

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <Eigen/QR>

#include <ember/linalg/kernels.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ember::detail::linalg_kernels {

template <class T>
void lu_det(const T* a, int64_t batch, int64_t n, T* sign, T* logabs, T* det) {
  for_each_block(batch, n * n * n, [&](int64_t begin, int64_t end) {
    Eigen::PartialPivLU<RowMat<T>> lu(n);
    for (int64_t i = begin; i < end; ++i) {
      if (n == 0) {
        sign[i] = 1, logabs[i] = 0, det[i] = 1;
        continue;
      }
      lu.compute(Eigen::Map<const RowMat<T>>(a + i * n * n, n, n));
      const RowMat<T>& f = lu.matrixLU();
      T s = static_cast<T>(lu.permutationP().determinant()), l = 0, d = s;
      for (int64_t j = 0; j < n; ++j) {
        const T u = f(j, j);
        d *= u;
        if (u < 0) s = -s;
        l += std::log(std::abs(u));
        if (u == 0) s = 0;
        if (std::isnan(u)) s = u;
      }
      sign[i] = s, logabs[i] = l, det[i] = d;
    }
  });
}

template <class T>
int64_t lu_solve(const T* a, const T* b, T* x, int64_t batch, int64_t n, int64_t k) {
  std::atomic<int64_t> failed{-1};
  for_each_block(batch, n * n * (n + k), [&](int64_t begin, int64_t end) {
    if (n == 0) return;
    Eigen::PartialPivLU<RowMat<T>> lu(n);
    for (int64_t i = begin; i < end; ++i) {
      lu.compute(Eigen::Map<const RowMat<T>>(a + i * n * n, n, n));
      if ((lu.matrixLU().diagonal().array() == T(0)).any()) {
        record_failure(failed, i);
        continue;
      }
      Eigen::Map<RowMat<T>> out(x + i * n * k, n, k);
      if (b == nullptr) out = lu.inverse();
      else out = lu.solve(Eigen::Map<const RowMat<T>>(b + i * n * k, n, k));
    }
  });
  return failed.load();
}

template <class T>
int64_t lu_factor(const T* a, T* lu, int32_t* pivots, int64_t batch, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  std::atomic<int64_t> failed{-1};
  // Right-looking, row-major: each step's update is a rank-1 change of contiguous row tails.
  // The pivot is the first largest |value| of the column by a strict >, as reference
  // LAPACK's idamax picks it (a NaN is taken only where it is the diagonal entry).
  for_each_block(batch, m * n * k, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* f = lu + i * m * n;
      std::copy(a + i * m * n, a + (i + 1) * m * n, f);
      int32_t* piv = pivots + i * k;
      bool singular = false;
      for (int64_t j = 0; j < k; ++j) {
        int64_t p = j;
        T best = std::abs(f[j * n + j]);
        for (int64_t r = j + 1; r < m; ++r) {
          const T v = std::abs(f[r * n + j]);
          if (v > best) best = v, p = r;
        }
        piv[j] = static_cast<int32_t>(p + 1);
        if (p != j) std::swap_ranges(f + j * n, f + (j + 1) * n, f + p * n);
        const T pivot = f[j * n + j];
        if (pivot == T(0)) {
          singular = true;  // getrf leaves this column as it is and goes on
          continue;
        }
        // As dgetrf2: the reciprocal only where it is finite (a subnormal pivot divides).
        const bool reciprocal = std::abs(pivot) >= std::numeric_limits<T>::min();
        const T inv = T(1) / pivot;
        for (int64_t r = j + 1; r < m; ++r) {
          T* row = f + r * n;
          const T l = reciprocal ? row[j] * inv : row[j] / pivot;
          row[j] = l;
          const T* urow = f + j * n;
          for (int64_t c = j + 1; c < n; ++c) row[c] -= l * urow[c];
        }
      }
      if (singular) record_failure(failed, i);
    }
  });
  return failed.load();
}

template <class T>
int64_t cholesky(const T* a, T* l, int64_t batch, int64_t n, bool upper) {
  std::atomic<int64_t> failed{-1};
  for_each_block(batch, n * n * n / 3, [&](int64_t begin, int64_t end) {
    if (n == 0) return;
    for (int64_t i = begin; i < end; ++i) {
      Eigen::Map<const RowMat<T>> A(a + i * n * n, n, n);
      Eigen::Map<RowMat<T>> out(l + i * n * n, n, n);
      // The factor of the given triangle, in place in the output: the upper triangle of A is
      // the lower one of A^T.
      if (upper) out = A.transpose();
      else out = A;
      Eigen::LLT<Eigen::Ref<RowMat<T>>, Eigen::Lower> llt(out);
      if (llt.info() == Eigen::Success && out.template triangularView<Eigen::Lower>().toDenseMatrix().allFinite()) {
        out.template triangularView<Eigen::StrictlyUpper>().setZero();
        if (upper) out.transposeInPlace();
        continue;
      }
      // Which leading minor fails, as LAPACK's potrf reports it (a NaN pivot fails too): the
      // unblocked column algorithm on the lower triangle.
      RowMat<T> c = upper ? RowMat<T>(A.transpose()) : RowMat<T>(A);
      c.template triangularView<Eigen::StrictlyUpper>().setZero();
      bool ok = true;
      for (int64_t j = 0; j < n && ok; ++j) {
        T d = c(j, j);
        for (int64_t p = 0; p < j; ++p) d -= c(j, p) * c(j, p);
        if (!(d > 0)) {
          record_failure(failed, i * (n + 1) + j);
          ok = false;
          break;
        }
        c(j, j) = std::sqrt(d);
        for (int64_t r = j + 1; r < n; ++r) {
          T v = c(r, j);
          for (int64_t p = 0; p < j; ++p) v -= c(r, p) * c(j, p);
          c(r, j) = v / c(j, j);
        }
      }
      if (!ok) continue;
      if (upper) out = c.transpose();  // every minor passed here: LLT stopped on rounding alone
      else out = c;
    }
  });
  return failed.load();
}

template <class T>
void qr(const T* a, T* q, T* r, int64_t batch, int64_t m, int64_t n, bool complete) {
  const int64_t k = std::min(m, n), q_cols = complete ? m : k, r_rows = complete ? m : k;
  for_each_block(batch, m * n * k, [&](int64_t begin, int64_t end) {
    Eigen::HouseholderQR<RowMat<T>> f(m, n);
    for (int64_t i = begin; i < end; ++i) {
      Eigen::Map<RowMat<T>> R(r + i * r_rows * n, r_rows, n);
      Eigen::Map<RowMat<T>> Q(q ? q + i * m * q_cols : nullptr, m, q_cols);
      R.setZero();
      if (k == 0) {
        if (q) Q.setIdentity();
        continue;
      }
      f.compute(Eigen::Map<const RowMat<T>>(a + i * m * n, m, n));
      R.topRows(std::min(r_rows, m)) =
          f.matrixQR().topRows(std::min(r_rows, m)).template triangularView<Eigen::Upper>();
      if (q) Q = f.householderQ() * RowMat<T>::Identity(m, q_cols);
    }
  });
}

template <class T>
void geqrf(const T* a, T* qr, T* tau, int64_t batch, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  for_each_block(batch, m * n * k, [&](int64_t begin, int64_t end) {
    if (k == 0) return;  // nothing to factor, nothing to write
    Eigen::HouseholderQR<RowMat<T>> f(m, n);
    for (int64_t i = begin; i < end; ++i) {
      f.compute(Eigen::Map<const RowMat<T>>(a + i * m * n, m, n));
      // Eigen keeps LAPACK's form: R on and above the diagonal, each reflector's essential
      // part below it (v(0) = 1 implied), H = I - tau v v^T with beta = -sign(alpha) |x|.
      Eigen::Map<RowMat<T>>(qr + i * m * n, m, n) = f.matrixQR();
      Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(tau + i * k, k) = f.hCoeffs();
    }
  });
}

template <class T>
void solve_triangular(const T* a, const T* b, T* x, int64_t batch, int64_t n, int64_t k, bool upper, bool unit) {
  for_each_block(batch, n * n * k, [&](int64_t begin, int64_t end) {
    if (n == 0 || k == 0) return;
    for (int64_t i = begin; i < end; ++i) {
      Eigen::Map<const RowMat<T>> A(a + i * n * n, n, n);
      Eigen::Map<RowMat<T>> X(x + i * n * k, n, k);
      X = Eigen::Map<const RowMat<T>>(b + i * n * k, n, k);
      if (upper && unit) A.template triangularView<Eigen::UnitUpper>().solveInPlace(X);
      else if (upper) A.template triangularView<Eigen::Upper>().solveInPlace(X);
      else if (unit) A.template triangularView<Eigen::UnitLower>().solveInPlace(X);
      else A.template triangularView<Eigen::Lower>().solveInPlace(X);
    }
  });
}

#define EMBER_LINALG_INSTANTIATE(T)                                                                     \
  template void lu_det<T>(const T*, int64_t, int64_t, T*, T*, T*);                                     \
  template int64_t lu_solve<T>(const T*, const T*, T*, int64_t, int64_t, int64_t);                     \
  template int64_t lu_factor<T>(const T*, T*, int32_t*, int64_t, int64_t, int64_t);                   \
  template int64_t cholesky<T>(const T*, T*, int64_t, int64_t, bool);                                  \
  template void qr<T>(const T*, T*, T*, int64_t, int64_t, int64_t, bool);                              \
  template void geqrf<T>(const T*, T*, T*, int64_t, int64_t, int64_t);                                 \
  template void solve_triangular<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool, bool);
EMBER_LINALG_INSTANTIATE(float)
EMBER_LINALG_INSTANTIATE(double)
#undef EMBER_LINALG_INSTANTIATE

}  // namespace ember::detail::linalg_kernels
