// linalg::eigh and eigvalsh: Eigen's self-adjoint eigensolver (tridiagonalisation + implicit QL),
// one object file of its own (kernels_cpu/linalg_blocks.hpp).
#include "linalg_blocks.hpp"

#include <Eigen/Eigenvalues>

#include <ember/linalg/kernels.hpp>

#include <atomic>
#include <cstdint>

namespace ember::detail::linalg_kernels {

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

template int64_t eigh<float>(const float*, float*, float*, int64_t, int64_t, bool);
template int64_t eigh<double>(const double*, double*, double*, int64_t, int64_t, bool);

}  // namespace ember::detail::linalg_kernels
