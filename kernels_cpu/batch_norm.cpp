// Batch normalisation kernels (see include/ember/ops/norm_ops.hpp; checks and outputs in
// src/ops/batch_norm.cpp). Compiled once per instruction set, like elementwise.cpp.
//
// The input is contiguous (N, C, inner): channel c owns N planes of `inner` elements, C planes
// apart. Tasks are channels, so every statistic and gradient sum is made by one thread in a
// fixed order (results do not depend on the thread count) and no two tasks write the same
// element. Statistics are two-pass (mean, then the mean squared deviation), as accurate as the
// composite var_mean. The arithmetic of the output and the input gradient is PyTorch's CPU
// kernel's: y = x * (rstd * w) + (b - mean * rstd * w), dx = (dy - mean(dy) - (x - mean) * k) *
// rstd * w with k = sum(dy * (x - mean)) * rstd^2 / count.

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

/// The geometry: n planes of `inner` per channel, channel c's plane i at (i * c + ch) * inner.
struct Planes {
  int64_t n, c, inner;
  explicit Planes(const TensorImpl& x)
      : n(x.sizes[0]), c(x.sizes[1]), inner(x.numel / std::max<int64_t>(x.sizes[0] * x.sizes[1], 1)) {}
  int64_t at(int64_t i, int64_t ch) const { return (i * c + ch) * inner; }
  /// Channels per task: at least ~32k elements, so small inputs stay on one thread.
  int64_t grain() const { return std::max<int64_t>(1, 32768 / std::max<int64_t>(n * inner, 1)); }
};

/// sums of dy and of dy * (x - m) over [0, len)
template <class T>
void plane_grad_sums(const T* dy, const T* x, int64_t len, T m, T& sum_dy, T& sum_dot) {
  constexpr int64_t W = V<T>::size;
  V<T> a(T(0)), b(T(0)), mv(m);
  int64_t j = 0;
  for (; j + W <= len; j += W) {
    const V<T> d = V<T>::load_unaligned(dy + j);
    a += d;
    b = xsimd::fma(d, V<T>::load_unaligned(x + j) - mv, b);
  }
  T sa = xsimd::hadd(a), sb = xsimd::hadd(b);
  for (; j < len; ++j) {
    sa += dy[j];
    sb += dy[j] * (x[j] - m);
  }
  sum_dy += sa, sum_dot += sb;
}

template <class T>
void batch_norm_typed(TensorImpl& y_out, TensorImpl& mean_io, TensorImpl* var_out, TensorImpl& rstd_io,
                      const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias, double eps_d) {
  const Planes g(x);
  const T* xp = static_cast<const T*>(x.data());
  const T* w = weight ? static_cast<const T*>(weight->data()) : nullptr;
  const T* b = bias ? static_cast<const T*>(bias->data()) : nullptr;
  T* y = static_cast<T*>(y_out.data());
  T* mean = static_cast<T*>(mean_io.data());
  T* var = var_out ? static_cast<T*>(var_out->data()) : nullptr;
  T* rstd = static_cast<T*>(rstd_io.data());
  const T eps = static_cast<T>(eps_d), inv_count = T(1) / static_cast<T>(g.n * g.inner);
  detail::parallel_for(g.c, g.grain(), [&](int64_t c0, int64_t c1) {
    constexpr int64_t W = V<T>::size;
    for (int64_t ch = c0; ch < c1; ++ch) {
      if (var) {  // training: this batch's statistics
        T s = 0;
        for (int64_t i = 0; i < g.n; ++i) s += row_sum(xp + g.at(i, ch), g.inner);
        const T m = s * inv_count;
        T q = 0;
        for (int64_t i = 0; i < g.n; ++i) q += row_sq_dev(xp + g.at(i, ch), g.inner, m);
        mean[ch] = m, var[ch] = q * inv_count;
        rstd[ch] = T(1) / std::sqrt(var[ch] + eps);
      }
      const T alpha = w ? rstd[ch] * w[ch] : rstd[ch];
      const T beta = (b ? b[ch] : T(0)) - mean[ch] * alpha;
      const V<T> av(alpha), bv(beta);
      for (int64_t i = 0; i < g.n; ++i) {
        const T* xr = xp + g.at(i, ch);
        T* yr = y + g.at(i, ch);
        int64_t j = 0;
        for (; j + W <= g.inner; j += W) xsimd::fma(V<T>::load_unaligned(xr + j), av, bv).store_unaligned(yr + j);
        for (; j < g.inner; ++j) yr[j] = xr[j] * alpha + beta;
      }
    }
  });
}

template <class T>
void batch_norm_backward_typed(TensorImpl* dx_out, TensorImpl* dw_out, TensorImpl* db_out, const TensorImpl& dy,
                               const TensorImpl& x, const TensorImpl& mean_t, const TensorImpl& rstd_t,
                               const TensorImpl* weight, bool training) {
  const Planes g(x);
  const T* d = static_cast<const T*>(dy.data());
  const T* xp = static_cast<const T*>(x.data());
  const T* w = weight ? static_cast<const T*>(weight->data()) : nullptr;
  const T* mean = static_cast<const T*>(mean_t.data());
  const T* rstd = static_cast<const T*>(rstd_t.data());
  T* dx = dx_out ? static_cast<T*>(dx_out->data()) : nullptr;
  T* dw = dw_out ? static_cast<T*>(dw_out->data()) : nullptr;
  T* db = db_out ? static_cast<T*>(db_out->data()) : nullptr;
  const T inv_count = T(1) / static_cast<T>(g.n * g.inner);
  detail::parallel_for(g.c, g.grain(), [&](int64_t c0, int64_t c1) {
    constexpr int64_t W = V<T>::size;
    for (int64_t ch = c0; ch < c1; ++ch) {
      const T m = mean[ch], rs = rstd[ch], scale = w ? rs * w[ch] : rs;
      T sum_dy = 0, sum_dot = 0;
      if (dw || db || (dx && training))
        for (int64_t i = 0; i < g.n; ++i) plane_grad_sums(d + g.at(i, ch), xp + g.at(i, ch), g.inner, m, sum_dy, sum_dot);
      if (dw) dw[ch] = sum_dot * rs;
      if (db) db[ch] = sum_dy;
      if (!dx) continue;
      // Evaluation: the statistics are constants, dx = dy * scale.
      const T k = training ? sum_dot * rs * rs * inv_count : T(0), dy_mean = training ? sum_dy * inv_count : T(0);
      const V<T> kv(k), mv(m), gm(dy_mean), sv(scale);
      for (int64_t i = 0; i < g.n; ++i) {
        const T *dr = d + g.at(i, ch), *xr = xp + g.at(i, ch);
        T* out = dx + g.at(i, ch);
        int64_t j = 0;
        for (; j + W <= g.inner; j += W) {
          const V<T> t = V<T>::load_unaligned(dr + j) - gm - (V<T>::load_unaligned(xr + j) - mv) * kv;
          (t * sv).store_unaligned(out + j);
        }
        for (; j < g.inner; ++j) out[j] = (dr[j] - dy_mean - (xr[j] - m) * k) * scale;
      }
    }
  });
}

}  // namespace

void batch_norm(TensorImpl& y, TensorImpl& mean, TensorImpl* var, TensorImpl& rstd, const TensorImpl& x,
                const TensorImpl* weight, const TensorImpl* bias, double eps) {
  if (x.dtype == DType::F32) batch_norm_typed<float>(y, mean, var, rstd, x, weight, bias, eps);
  else batch_norm_typed<double>(y, mean, var, rstd, x, weight, bias, eps);
}

void batch_norm_backward(TensorImpl* dx, TensorImpl* dweight, TensorImpl* dbias, const TensorImpl& dy,
                         const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight,
                         bool training) {
  if (x.dtype == DType::F32) batch_norm_backward_typed<float>(dx, dweight, dbias, dy, x, mean, rstd, weight, training);
  else batch_norm_backward_typed<double>(dx, dweight, dbias, dy, x, mean, rstd, weight, training);
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
