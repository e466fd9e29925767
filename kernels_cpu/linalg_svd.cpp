// linalg::svd and svdvals: Eigen's BDCSVD (divide and conquer; Jacobi below 16 columns), one
// object file of its own (kernels_cpu/linalg_blocks.hpp).
#include "linalg_blocks.hpp"

#include <Eigen/SVD>

#include <ember/linalg/kernels.hpp>

#include <algorithm>
#include <cstdint>

namespace ember::detail::linalg_kernels {

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

template void svd<float>(const float*, float*, float*, float*, int64_t, int64_t, int64_t, bool);
template void svd<double>(const double*, double*, double*, double*, int64_t, int64_t, int64_t, bool);

}  // namespace ember::detail::linalg_kernels
