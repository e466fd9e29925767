// GEMM through Eigen's tuned product (compiled per instruction set like the other kernels, so
// the AVX2/FMA build uses Eigen's FMA micro-kernels). Rows of the output are split across
// Ember's thread pool for large products; each block is an independent Eigen product.

#include <ember/core/error.hpp>
#include <ember/core/tensor_impl.hpp>
#include <ember/runtime/threading.hpp>

#include <Eigen/Core>

#include <vector>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;
template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using Stride = Eigen::OuterStride<Eigen::Dynamic>;

/// C[r0:r1, c0:c1] = alpha * A[r0:r1, :] * B[:, c0:c1] + beta * C[r0:r1, c0:c1].
template <class T, class A, class B>
void product_block(T* c, int64_t ldc, const A& a, const B& b, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                   T alpha, T beta) {
  Eigen::Map<RowMat<T>, 0, Stride> C(c + r0 * ldc + c0, r1 - r0, c1 - c0, Stride(ldc));
  auto Bb = b.middleCols(c0, c1 - c0);
  auto assign = [&](auto&& Cx, const auto& Ax) {
    if (beta == T(0)) {
      if (alpha == T(1)) Cx.noalias() = Ax * Bb;
      else Cx.noalias() = alpha * (Ax * Bb);
    } else {
      Cx *= beta;
      Cx.noalias() += alpha * (Ax * Bb);
    }
  };
  // A single row (batch-1 inference through Linear) as a row vector: Eigen then runs a GEMV,
  // which reads B once in place; the general product would first copy B into packed panels.
  if (r1 - r0 == 1) assign(C.row(0), a.row(r0));
  else assign(C, a.middleRows(r0, r1 - r0));
}

template <class T>
void gemm_typed(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha_d, double beta_d) {
  int64_t batch = out.sizes[0], m = out.sizes[1], n = out.sizes[2], k = a.sizes[2];
  T alpha = static_cast<T>(alpha_d), beta = static_cast<T>(beta_d);
  T* cp = static_cast<T*>(out.data());
  const T* ap = static_cast<const T*>(a.data());
  const T* bp = static_cast<const T*>(b.data());
  int64_t ldc = out.strides[1];
  if (k == 0) {  // empty inner dim: out = beta * out
    for (int64_t i = 0; i < batch * m * n; ++i) cp[i] = beta == T(0) ? T(0) : cp[i] * beta;
    return;
  }
  auto with_layout = [&](const T* p, int64_t rows, int64_t cols, int64_t sr, int64_t sc, auto&& f) {
    if (sc == 1 || cols == 1) {
      Eigen::Map<const RowMat<T>, 0, Stride> M(p, rows, cols, Stride(std::max<int64_t>(sr, cols)));
      f(M);
    } else {
      Eigen::Map<const ColMat<T>, 0, Stride> M(p, rows, cols, Stride(std::max<int64_t>(sc, rows)));
      f(M);
    }
  };
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = get_num_threads();
  // Below ~4 MFLOP a product is done before threads would have woken up.
  const bool parallel = threads > 1 && flops * static_cast<double>(batch) > 4e6;
  auto product = [&](int64_t bi, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    with_layout(ap + bi * a.strides[0], m, k, a.strides[1], a.strides[2], [&](const auto& A) {
      with_layout(bp + bi * b.strides[0], k, n, b.strides[1], b.strides[2], [&](const auto& B) {
        product_block<T>(cp + bi * out.strides[0], ldc, A, B, r0, r1, c0, c1, alpha, beta);
      });
    });
  };
  if (parallel && batch >= threads) {
    // Many products (a batched matmul, a convolution's samples): one whole product per task.
    detail::parallel_for(batch, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi) product(bi, 0, m, 0, n);
    });
    return;
  }
  for (int64_t bi = 0; bi < batch; ++bi) {
    if (!parallel || flops < 4e6 || (m < 64 && n < 64)) {
      product(bi, 0, m, 0, n);
      continue;
    }
    // One block per thread along the longer side of C, in multiples of 32 so that every block
    // runs full micro-kernels. Splitting columns when C is wide keeps each thread's packed
    // copy of B to its own slice (a row split would pack all of B once per block).
    const bool by_cols = n >= m;
    const int64_t len = by_cols ? n : m;
    const int64_t block = std::max<int64_t>(32, (len / threads + 31) / 32 * 32);
    const int64_t nblocks = (len + block - 1) / block;
    detail::parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t lo = blk * block, hi = std::min(len, lo + block);
        if (by_cols) product(bi, 0, m, lo, hi);
        else product(bi, lo, hi, 0, n);
      }
    });
  }
}

}  // namespace

void gemm(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta) {
  switch (out.dtype) {
    case DType::F32: return gemm_typed<float>(out, a, b, alpha, beta);
#if !defined(EMBER_GEMM_F32_ONLY)
    case DType::F64: return gemm_typed<double>(out, a, b, alpha, beta);
#endif
    default: EMBER_FAIL("[matmul] the CPU GEMM supports f32 and f64 directly, got {}", out.dtype);
  }
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
