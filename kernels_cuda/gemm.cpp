// Kernels<Cuda>::gemm through cuBLAS. Ember's matrices are row-major views; cuBLAS is
// column-major, so C = A @ B is computed as C^T = B^T @ A^T: a row-major matrix with leading
// dimension ld is, read column-major, its transpose with the same ld (no copy). The views the
// op layer hands over (src/ops/matmul.cpp) have a unit stride in one of the two matrix dims
// and one batch stride (0 when broadcast); anything else is made contiguous on the device first.
// f32 runs in full f32 (no TF32), f64 in f64, f16/bf16 with f32 accumulation.

#include "cuda_glue.hpp"

#include <ember/dispatch/kernels.hpp>

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <mutex>

namespace ember::detail {
namespace {

constexpr int kMaxDevices = 64;

void check_cublas(cublasStatus_t s, const char* call) {
  if (EMBER_LIKELY(s == CUBLAS_STATUS_SUCCESS)) return;
  EMBER_FAIL("[matmul] cuBLAS call {} failed: {} ({})", call, cublasGetStatusString(s), static_cast<int>(s));
}

/// The cuBLAS handle of the current device (created on first use, kept for the process).
cublasHandle_t handle(int index) {
  static std::mutex mu;
  static cublasHandle_t handles[kMaxDevices] = {};
  EMBER_CHECK(index >= 0 && index < kMaxDevices, "[matmul] device index {} out of range", index);
  std::lock_guard<std::mutex> lock(mu);
  if (!handles[index]) {
    check_cublas(cublasCreate(&handles[index]), "cublasCreate");
    check_cublas(cublasSetStream(handles[index], cudaStream_t{}), "cublasSetStream");
  }
  return handles[index];
}

/// How cuBLAS reads one operand: `row_major` with leading dimension `ld`, batch stride `sb`.
struct Operand {
  const void* data = nullptr;
  bool row_major = true;
  int64_t ld = 0;
  int64_t sb = 0;
};

/// The operand's layout if cuBLAS can read it in place (rows x cols matrices, strides >= 0).
bool layout(const TensorImpl& x, Operand& o) {
  int64_t rows = x.sizes[1], cols = x.sizes[2];
  int64_t sb = x.strides[0], sr = x.strides[1], sc = x.strides[2];
  if (sb < 0 || sr < 0 || sc < 0) return false;
  o.data = x.data();
  o.sb = x.sizes[0] == 1 ? 0 : sb;
  if ((sc == 1 || cols == 1) && (rows == 1 || sr >= cols)) {
    o.row_major = true;
    // One row: its stride is never read (a row view of a huge tensor must not fail int32).
    o.ld = rows == 1 ? std::max<int64_t>(cols, 1) : std::max<int64_t>({sr, cols, 1});
    return true;
  }
  if ((sr == 1 || rows == 1) && (cols == 1 || sc >= rows)) {
    o.row_major = false;
    o.ld = cols == 1 ? std::max<int64_t>(rows, 1) : std::max<int64_t>({sc, rows, 1});
    return true;
  }
  return false;
}

/// A contiguous copy of x on its device (for layouts cuBLAS cannot read in place).
Ref<TensorImpl> dense(const TensorImpl& x) {
  Ref<TensorImpl> c = make_tensor(x.sizes, x.dtype, x.device(), "matmul");
  Kernels<Cuda>::copy(*c, x);
  return c;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

}  // namespace

void Kernels<Cuda>::gemm(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta) {
  ember::cuda::check_on_cuda(out, "matmul", "the output");
  ember::cuda::check_on_cuda(a, "matmul", "the first matrix");
  ember::cuda::check_on_cuda(b, "matmul", "the second matrix");
  EMBER_CHECK(a.device() == out.device() && b.device() == out.device(),
              "[matmul] expected tensors on one device, got {}, {} and {}", a.device(), b.device(), out.device());
  EMBER_CHECK(out.ndim() == 3 && a.ndim() == 3 && b.ndim() == 3, "[matmul] the CUDA GEMM expects 3-d views");
  EMBER_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, "[matmul] expected one dtype, got {}, {} and {}", a.dtype,
              b.dtype, out.dtype);
  cudaDataType type;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (out.dtype) {
    case DType::F32: type = CUDA_R_32F; break;
    case DType::F64: type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F; break;
    case DType::F16: type = CUDA_R_16F; break;
    case DType::BF16: type = CUDA_R_16BF; break;
    default: EMBER_FAIL("[matmul] the CUDA GEMM supports f16, bf16, f32 and f64, got {}", out.dtype);
  }
  int64_t batch = out.sizes[0], m = out.sizes[1], n = out.sizes[2], k = a.sizes[2];
  EMBER_CHECK(a.sizes[0] == batch && b.sizes[0] == batch && a.sizes[1] == m && b.sizes[1] == k && b.sizes[2] == n,
              "[matmul] GEMM shapes {} x {} -> {} do not match", a.sizes, b.sizes, out.sizes);
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0 && beta == 0.0) return Kernels<Cuda>::fill(out, 0);

  // The output: written in place when it is row-major with a unit column stride and
  // non-overlapping batches, else through a contiguous temporary.
  Operand oc;
  bool direct = layout(out, oc) && oc.row_major && (batch == 1 || oc.sb >= m * oc.ld) && out.strides[2] == 1;
  Ref<TensorImpl> tmp_out;
  TensorImpl* c = &out;
  if (!direct) {
    tmp_out = make_tensor(out.sizes, out.dtype, out.device(), "matmul");
    if (beta != 0.0) Kernels<Cuda>::copy(*tmp_out, out);
    c = tmp_out.get();
    layout(*c, oc);
  }
  Ref<TensorImpl> a_dense, b_dense;
  Operand oa, ob;
  if (!layout(a, oa)) {
    a_dense = dense(a);
    layout(*a_dense, oa);
  }
  if (!layout(b, ob)) {
    b_dense = dense(b);
    layout(*b_dense, ob);
  }
  EMBER_CHECK(fits_int(m) && fits_int(n) && fits_int(k) && fits_int(batch) && fits_int(oa.ld) && fits_int(ob.ld) &&
                  fits_int(oc.ld),
              "[matmul] GEMM dims {} x {} -> {} exceed cuBLAS's 32-bit sizes", a.sizes, b.sizes, out.sizes);

  ember::cuda::DeviceGuard guard(out.device().index());
  cublasHandle_t h = handle(out.device().index());
  // Column-major: C^T (n x m) = op(B^T) (n x k) @ op(A^T) (k x m).
  cublasOperation_t tb = ob.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  cublasOperation_t ta = oa.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = compute == CUBLAS_COMPUTE_64F ? static_cast<const void*>(&beta) : &beta_f;
  check_cublas(cublasGemmStridedBatchedEx(h, tb, ta, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                                          alpha_p, ob.data, type, static_cast<int>(ob.ld), ob.sb, oa.data, type,
                                          static_cast<int>(oa.ld), oa.sb, beta_p, c->data(), type,
                                          static_cast<int>(oc.ld), batch == 1 ? 0 : oc.sb, static_cast<int>(batch),
                                          compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
  if (!direct) Kernels<Cuda>::copy(out, *tmp_out);
}

}  // namespace ember::detail
