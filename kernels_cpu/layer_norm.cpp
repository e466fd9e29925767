// Layer normalisation kernels (see include/ember/ops/norm_ops.hpp; checks and outputs in
// src/ops/norm.cpp). Compiled once per instruction set, like elementwise.cpp. Rows are
// independent: the forward and the input gradient run in parallel over rows; the weight and
// bias gradients (sums over rows) run in parallel over blocks of columns, so no two tasks
// write the same element and no per-thread partial buffers are needed. The per-row statistics
// are two-pass (mean, then the mean squared deviation), as accurate as the composite var_mean.

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/runtime/threading.hpp>

#include "simd.hpp"

#include "row_sum.hpp"

#include <algorithm>
#include <cmath>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;

template <class T>
using V = xsimd::batch<T>;

/// Rows of work per task: at least ~32k elements, so small inputs stay on one thread.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(cols, 1)); }

template <class T>
void layer_norm_typed(TensorImpl& y_out, TensorImpl& mean_out, TensorImpl& rstd_out, const TensorImpl& x,
                      const TensorImpl* weight, const TensorImpl* bias, int64_t cols, double eps_d) {
  const int64_t rows = x.numel / cols;
  const T* xp = static_cast<const T*>(x.data());
  const T* w = weight ? static_cast<const T*>(weight->data()) : nullptr;
  const T* b = bias ? static_cast<const T*>(bias->data()) : nullptr;
  T* y = static_cast<T*>(y_out.data());
  T* mean = static_cast<T*>(mean_out.data());
  T* rstd = static_cast<T*>(rstd_out.data());
  const T eps = static_cast<T>(eps_d), inv_n = T(1) / static_cast<T>(cols);
  detail::parallel_for(rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    constexpr int64_t W = V<T>::size;
    for (int64_t i = r0; i < r1; ++i) {
      const T* xr = xp + i * cols;
      T* yr = y + i * cols;
      const T m = row_sum(xr, cols) * inv_n;
      const T rs = T(1) / std::sqrt(row_sq_dev(xr, cols, m) * inv_n + eps);
      mean[i] = m, rstd[i] = rs;
      const V<T> mv(m), rv(rs);
      int64_t j = 0;
      for (; j + W <= cols; j += W) {
        V<T> v = (V<T>::load_unaligned(xr + j) - mv) * rv;
        if (w) v = v * V<T>::load_unaligned(w + j);
        if (b) v = v + V<T>::load_unaligned(b + j);
        v.store_unaligned(yr + j);
      }
      for (; j < cols; ++j) {
        T v = (xr[j] - m) * rs;
        if (w) v = v * w[j];
        if (b) v = v + b[j];
        yr[j] = v;
      }
    }
  });
}

template <class T>
void layer_norm_backward_typed(TensorImpl* dx_out, TensorImpl* dw_out, TensorImpl* db_out, const TensorImpl& dy,
                               const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                               const TensorImpl* weight, int64_t cols) {
  const int64_t rows = cols ? x.numel / cols : 0;
  const T* d = static_cast<const T*>(dy.data());
  const T* xp = static_cast<const T*>(x.data());
  const T* w = weight ? static_cast<const T*>(weight->data()) : nullptr;
  const T* mp = static_cast<const T*>(mean.data());
  const T* rp = static_cast<const T*>(rstd.data());
  const T inv_n = T(1) / static_cast<T>(cols);
  constexpr int64_t W = V<T>::size;
  if (dx_out) {
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight.
    T* dx = static_cast<T*>(dx_out->data());
    detail::parallel_for(rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        const T *dr = d + i * cols, *xr = xp + i * cols;
        const V<T> mv(mp[i]), rv(rp[i]);
        V<T> sa(T(0)), sb(T(0));
        int64_t j = 0;
        for (; j + W <= cols; j += W) {
          V<T> gv = V<T>::load_unaligned(dr + j);
          if (w) gv = gv * V<T>::load_unaligned(w + j);
          const V<T> xh = (V<T>::load_unaligned(xr + j) - mv) * rv;
          sa += gv;
          sb = xsimd::fma(gv, xh, sb);
        }
        T a = xsimd::hadd(sa), bsum = xsimd::hadd(sb);
        for (int64_t t = j; t < cols; ++t) {
          const T gv = w ? dr[t] * w[t] : dr[t];
          a += gv;
          bsum += gv * ((xr[t] - mp[i]) * rp[i]);
        }
        a *= inv_n, bsum *= inv_n;
        const V<T> av(a), bv(bsum);
        T* out = dx + i * cols;
        for (j = 0; j + W <= cols; j += W) {
          V<T> gv = V<T>::load_unaligned(dr + j);
          if (w) gv = gv * V<T>::load_unaligned(w + j);
          const V<T> xh = (V<T>::load_unaligned(xr + j) - mv) * rv;
          (rv * (gv - av - xh * bv)).store_unaligned(out + j);
        }
        for (; j < cols; ++j) {
          const T gv = w ? dr[j] * w[j] : dr[j];
          const T xh = (xr[j] - mp[i]) * rp[i];
          out[j] = rp[i] * (gv - a - xh * bsum);
        }
      }
    });
  }
  if (dw_out || db_out) {
    // Sums over rows, each task owning a block of columns.
    T* dw = dw_out ? static_cast<T*>(dw_out->data()) : nullptr;
    T* db = db_out ? static_cast<T*>(db_out->data()) : nullptr;
    const int64_t block = std::max<int64_t>(W, 32768 / std::max<int64_t>(rows, 1) / W * W);
    detail::parallel_for((cols + block - 1) / block, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t c0 = blk * block, c1 = std::min(cols, c0 + block);
        if (dw) std::fill(dw + c0, dw + c1, T(0));
        if (db) std::fill(db + c0, db + c1, T(0));
        for (int64_t i = 0; i < rows; ++i) {
          const T *dr = d + i * cols, *xr = xp + i * cols;
          const T m = mp[i], rs = rp[i];
          // Explicit vectors: this library builds at -O2, where GCC 12 leaves such loops scalar.
          const V<T> mv(m), rv(rs);
          int64_t j = c0;
          for (; j + W <= c1; j += W) {
            const V<T> dv = V<T>::load_unaligned(dr + j);
            if (dw) (V<T>::load_unaligned(dw + j) + dv * ((V<T>::load_unaligned(xr + j) - mv) * rv)).store_unaligned(dw + j);
            if (db) (V<T>::load_unaligned(db + j) + dv).store_unaligned(db + j);
          }
          for (; j < c1; ++j) {
            if (dw) dw[j] += dr[j] * ((xr[j] - m) * rs);
            if (db) db[j] += dr[j];
          }
        }
      }
    });
  }
}

}  // namespace

void layer_norm(TensorImpl& y, TensorImpl& mean, TensorImpl& rstd, const TensorImpl& x, const TensorImpl* weight,
                const TensorImpl* bias, int64_t cols, double eps) {
  if (x.dtype == DType::F32) layer_norm_typed<float>(y, mean, rstd, x, weight, bias, cols, eps);
  else layer_norm_typed<double>(y, mean, rstd, x, weight, bias, cols, eps);
}

void layer_norm_backward(TensorImpl* dx, TensorImpl* dweight, TensorImpl* dbias, const TensorImpl& dy,
                         const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight,
                         int64_t cols) {
  if (x.dtype == DType::F32) layer_norm_backward_typed<float>(dx, dweight, dbias, dy, x, mean, rstd, weight, cols);
  else layer_norm_backward_typed<double>(dx, dweight, dbias, dy, x, mean, rstd, weight, cols);
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
