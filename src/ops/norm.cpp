// Layer normalisation on the CPU (see include/ember/ops/norm_ops.hpp). Rows are independent:
// the forward and the input gradient run in parallel over rows; the weight and bias
// gradients (sums over rows) run in parallel over blocks of columns, so no two tasks write
// the same element and no per-thread partial buffers are needed.
//
// The per-row statistics are two-pass (mean, then the mean squared deviation), as accurate as
// the composite var_mean. This file is compiled for the baseline instruction set; xsimd gives
// it that set's vectors (SSE2 on x86-64).

#include <ember/core/device_hooks.hpp>
#include <ember/ops/norm_ops.hpp>
#include <ember/runtime/threading.hpp>

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>

namespace ember::ops {
namespace {

template <class T>
using V = xsimd::batch<T>;

/// sum of x[0, n)
template <class T>
T row_sum(const T* x, int64_t n) {
  constexpr int64_t W = V<T>::size;
  V<T> acc(T(0));
  int64_t j = 0;
  for (; j + W <= n; j += W) acc += V<T>::load_unaligned(x + j);
  T s = xsimd::hadd(acc);
  for (; j < n; ++j) s += x[j];
  return s;
}

/// sum of (x - m)^2 over x[0, n)
template <class T>
T row_sq_dev(const T* x, int64_t n, T m) {
  constexpr int64_t W = V<T>::size;
  V<T> acc(T(0)), mv(m);
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    V<T> d = V<T>::load_unaligned(x + j) - mv;
    acc = xsimd::fma(d, d, acc);
  }
  T s = xsimd::hadd(acc);
  for (; j < n; ++j) s += (x[j] - m) * (x[j] - m);
  return s;
}

/// Rows of work per task: at least ~32k elements, so small inputs stay on one thread.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(cols, 1)); }

void check_param(const TensorImpl* p, const TensorImpl& x, int64_t cols, const char* what) {
  if (!p) return;
  EMBER_CHECK(p->numel == cols && p->dtype == x.dtype && p->device() == x.device(),
              "[layer_norm] {} must hold the {} normalised elements as {} on {}, got shape {} ({} on {})", what, cols,
              x.dtype, x.device(), p->sizes, p->dtype, p->device());
}

}  // namespace

LayerNormResult layer_norm_cpu(const LayerNorm& op, const TensorImpl& x, const TensorImpl* weight,
                               const TensorImpl* bias) {
  const int64_t cols = op.cols;
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[layer_norm] the fused kernel takes f32 or f64, got {}",
              x.dtype);
  EMBER_CHECK(cols >= 1 && x.numel % cols == 0, "[layer_norm] rows of {} do not tile an input of shape {}", cols,
              x.sizes);
  EMBER_CHECK(op.eps >= 0 && std::isfinite(op.eps), "[layer_norm] eps must be finite and >= 0, got {}", op.eps);
  check_param(weight, x, cols, "weight");
  check_param(bias, x, cols, "bias");
  const int64_t rows = x.numel / cols;
  TensorRef xc = detail::contiguous_on_device(x, "layer_norm");
  TensorRef wc = weight ? detail::contiguous_on_device(*weight, "layer_norm") : TensorRef();
  TensorRef bc = bias ? detail::contiguous_on_device(*bias, "layer_norm") : TensorRef();
  LayerNormResult r;
  r.y = detail::make_tensor(x.sizes, x.dtype, x.device(), "layer_norm");
  const int64_t stat_sizes[1] = {rows};
  r.mean = detail::make_tensor(stat_sizes, x.dtype, x.device(), "layer_norm");
  r.rstd = detail::make_tensor(stat_sizes, x.dtype, x.device(), "layer_norm");
  auto run = [&]<class T>(T*) {
    const T* xp = static_cast<const T*>(xc->data());
    const T* w = wc ? static_cast<const T*>(wc->data()) : nullptr;
    const T* b = bc ? static_cast<const T*>(bc->data()) : nullptr;
    T* y = static_cast<T*>(r.y->data());
    T* mean = static_cast<T*>(r.mean->data());
    T* rstd = static_cast<T*>(r.rstd->data());
    const T eps = static_cast<T>(op.eps), inv_n = T(1) / static_cast<T>(cols);
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
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return r;
}

LayerNormGrads layer_norm_backward_cpu(const LayerNormBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                       const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight) {
  const int64_t cols = op.cols, rows = cols ? x.numel / cols : 0;
  EMBER_CHECK(dy.sizes == x.sizes && dy.dtype == x.dtype && mean.numel == rows && rstd.numel == rows,
              "[layer_norm_backward] gradient {} ({}) does not match the input {} ({}) and its {} rows",
              dy.sizes, dy.dtype, x.sizes, x.dtype, rows);
  check_param(weight, x, cols, "weight");
  TensorRef dyc = detail::contiguous_on_device(dy, "layer_norm_backward");
  TensorRef xc = detail::contiguous_on_device(x, "layer_norm_backward");
  TensorRef wc = weight ? detail::contiguous_on_device(*weight, "layer_norm_backward") : TensorRef();
  LayerNormGrads g;
  const int64_t param_sizes[1] = {cols};
  if (op.need_x) g.dx = detail::make_tensor(x.sizes, x.dtype, x.device(), "layer_norm_backward");
  if (op.need_weight) g.dweight = detail::make_tensor(param_sizes, x.dtype, x.device(), "layer_norm_backward");
  if (op.need_bias) g.dbias = detail::make_tensor(param_sizes, x.dtype, x.device(), "layer_norm_backward");
  auto run = [&]<class T>(T*) {
    const T* d = static_cast<const T*>(dyc->data());
    const T* xp = static_cast<const T*>(xc->data());
    const T* w = wc ? static_cast<const T*>(wc->data()) : nullptr;
    const T* mp = static_cast<const T*>(mean.data());
    const T* rp = static_cast<const T*>(rstd.data());
    const T inv_n = T(1) / static_cast<T>(cols);
    constexpr int64_t W = V<T>::size;
    if (g.dx) {
      // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight.
      T* dx = static_cast<T*>(g.dx->data());
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
    if (g.dweight || g.dbias) {
      // Sums over rows, each task owning a block of columns.
      T* dw = g.dweight ? static_cast<T*>(g.dweight->data()) : nullptr;
      T* db = g.dbias ? static_cast<T*>(g.dbias->data()) : nullptr;
      const int64_t block = std::max<int64_t>(W, 32768 / std::max<int64_t>(rows, 1) / W * W);
      detail::parallel_for((cols + block - 1) / block, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t c0 = blk * block, c1 = std::min(cols, c0 + block);
          if (dw) std::fill(dw + c0, dw + c1, T(0));
          if (db) std::fill(db + c0, db + c1, T(0));
          for (int64_t i = 0; i < rows; ++i) {
            const T *dr = d + i * cols, *xr = xp + i * cols;
            const T m = mp[i], rs = rp[i];
            if (dw)  // separate loops, so each vectorises without a test per element
              for (int64_t j = c0; j < c1; ++j) dw[j] += dr[j] * ((xr[j] - m) * rs);
            if (db)
              for (int64_t j = c0; j < c1; ++j) db[j] += dr[j];
          }
        }
      });
    }
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return g;
}

}  // namespace ember::ops
