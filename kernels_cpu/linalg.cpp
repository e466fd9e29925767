// The factorisations behind ember::linalg (include/ember/linalg/kernels.hpp), through Eigen's
// dense decompositions: blocked partial-pivoting LU, LLT, Householder QR, the self-adjoint
// eigensolver (tridiagonalisation + implicit QL) and BDCSVD (divide and conquer; Jacobi below
// 16 columns). One object file of its own: a program that never calls linalg links none of it
// (tests/footprint).

// Eigen's templates outside a per-build namespace would merge with other builds' copies at
// link time (Note [One definition per instruction set] in kernels_cpu/meson.build).
#define Eigen EmberEigenLinalg
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <Eigen/QR>
#include <Eigen/SVD>

#include <ember/linalg/kernels.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>

namespace ember::detail::linalg_kernels {

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

/// Runs f(begin, end) over blocks of the batch's matrices, several per task when they are
/// small (about 2^16 multiply-adds per task at the least, counting ~1000 for each matrix's
/// fixed cost). Each block makes its decomposition's workspace once and reuses it for every
/// matrix of the block (a 6 x 6 solve is ~0.35 us, and allocating its LU took a third of it).
/// Eigen allocates: a std::bad_alloc on a pool thread is carried over and rethrown here (a
/// worker must not throw).
template <class F>
void for_each_block(int64_t batch, int64_t work_per_matrix, F&& f) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / (std::max<int64_t>(0, work_per_matrix) + 1024));
#if defined(__cpp_exceptions)
  std::atomic<bool> out_of_memory{false};
  parallel_for(batch, grain, [&](int64_t begin, int64_t end) {
    try {
      f(begin, end);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
  });
  if (out_of_memory) throw std::bad_alloc();
#else
  parallel_for(batch, grain, [&](int64_t begin, int64_t end) { f(begin, end); });
#endif
}

/// Keeps the smallest failing index seen by any task.
void record_failure(std::atomic<int64_t>& first, int64_t i) {
  int64_t seen = first.load();
  while ((seen < 0 || i < seen) && !first.compare_exchange_weak(seen, i)) {
  }
}

}  // namespace

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
int64_t eigh(const T* a, T* w, T* v, int64_t batch, int64_t n, bool upper) {
  std::atomic<int64_t> failed{-1};
  for_each_block(batch, 4 * n * n * n, [&](int64_t begin, int64_t end) {
    if (n == 0) return;
    Eigen::SelfAdjointEigenSolver<ColMat<T>> es(n);
    ColMat<T> m(n, n);
    for (int64_t i = begin; i < end; ++i) {
      Eigen::Map<const RowMat<T>> A(a + i * n * n, n, n);
      // The solver reads the lower triangle; the upper one of A is the lower one of A^T.
      if (upper) m = A.transpose();
      else m = A;
      es.compute(m, v ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
      if (es.info() != Eigen::Success) {
        record_failure(failed, i);
        continue;
      }
      Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(w + i * n, n) = es.eigenvalues();
      if (v) Eigen::Map<RowMat<T>>(v + i * n * n, n, n) = es.eigenvectors();
    }
  });
  return failed.load();
}

template <class T>
void svd(const T* a, T* u, T* s, T* vh, int64_t batch, int64_t m, int64_t n, bool full) {
  const int64_t k = std::min(m, n), u_cols = full ? m : k, vh_rows = full ? n : k;
  unsigned options = 0;
  if (u) options = full ? (Eigen::ComputeFullU | Eigen::ComputeFullV) : (Eigen::ComputeThinU | Eigen::ComputeThinV);
  for_each_block(batch, 8 * m * n * k, [&](int64_t begin, int64_t end) {
    if (k == 0) {
      for (int64_t i = begin; i < end; ++i) {
        if (u) Eigen::Map<RowMat<T>>(u + i * m * u_cols, m, u_cols).setIdentity();
        if (vh) Eigen::Map<RowMat<T>>(vh + i * vh_rows * n, vh_rows, n).setIdentity();
      }
      return;
    }
    Eigen::BDCSVD<ColMat<T>> f(m, n, options);
    ColMat<T> A(m, n);
    for (int64_t i = begin; i < end; ++i) {
      A = Eigen::Map<const RowMat<T>>(a + i * m * n, m, n);
      f.compute(A, options);
      Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(s + i * k, k) = f.singularValues();
      if (u) {
        Eigen::Map<RowMat<T>>(u + i * m * u_cols, m, u_cols) = f.matrixU();
        Eigen::Map<RowMat<T>>(vh + i * vh_rows * n, vh_rows, n) = f.matrixV().transpose();
      }
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
  template int64_t eigh<T>(const T*, T*, T*, int64_t, int64_t, bool);                                  \
  template void svd<T>(const T*, T*, T*, T*, int64_t, int64_t, int64_t, bool);                         \
  template void solve_triangular<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool, bool);
EMBER_LINALG_INSTANTIATE(float)
EMBER_LINALG_INSTANTIATE(double)
#undef EMBER_LINALG_INSTANTIATE

}  // namespace ember::detail::linalg_kernels
