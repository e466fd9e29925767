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

template <class T, class A, class B>
void product_rows(T* c, int64_t ldc, const A& a, const B& b, int64_t rows0, int64_t rows1, int64_t n, T alpha,
                  T beta) {
  Eigen::Map<RowMat<T>, 0, Stride> C(c + rows0 * ldc, rows1 - rows0, n, Stride(ldc));
  if (rows1 - rows0 == 1) {
    // A single row (batch-1 inference through Linear): a row vector times B is a GEMV, which
    // reads B once in place; the general product would first copy B into packed panels.
    auto Cr = C.row(0);
    auto Ar = a.row(rows0);
    if (beta == T(0)) {
      if (alpha == T(1)) Cr.noalias() = Ar * b;
      else Cr.noalias() = alpha * (Ar * b);
    } else {
      Cr *= beta;
      Cr.noalias() += alpha * (Ar * b);
    }
    return;
  }
  auto Ab = a.middleRows(rows0, rows1 - rows0);
  if (beta == T(0)) {
    if (alpha == T(1)) C.noalias() = Ab * b;
    else C.noalias() = alpha * (Ab * b);
  } else {
    C *= beta;
    C.noalias() += alpha * (Ab * b);
  }
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
  double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  int threads = get_num_threads();
  for (int64_t bi = 0; bi < batch; ++bi) {
    const T* abase = ap + bi * a.strides[0];
    const T* bbase = bp + bi * b.strides[0];
    T* cbase = cp + bi * out.strides[0];
    with_layout(abase, m, k, a.strides[1], a.strides[2], [&](const auto& A) {
      with_layout(bbase, k, n, b.strides[1], b.strides[2], [&](const auto& B) {
        if (threads > 1 && flops > 4e6 && m >= 64) {
          // Split rows into blocks of 32-multiples so every block is a full Eigen kernel.
          int64_t block = std::max<int64_t>(32, (m / (threads * 2) + 31) / 32 * 32);
          int64_t nblocks = (m + block - 1) / block;
          detail::parallel_for(nblocks, 1, [&](int64_t b0, int64_t b1) {
            for (int64_t blk = b0; blk < b1; ++blk)
              product_rows<T>(cbase, ldc, A, B, blk * block, std::min(m, (blk + 1) * block), n, alpha, beta);
          });
        } else {
          product_rows<T>(cbase, ldc, A, B, 0, m, n, alpha, beta);
        }
      });
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
