// Layer normalisation kernels (see include/ember/ops/norm_ops.hpp; checks and outputs in
// src/ops/norm.cpp). Compiled once per instruction set, like elementwise.cpp. Rows are
// independent: the forward and the input gradient run in parallel over rows; the weight and
// bias gradients (sums over rows) run in parallel over blocks of columns, so no two tasks
// write the same element and no per-thread partial buffers are needed. The per-row statistics
// are two-pass (mean, then the mean squared deviation).
//
// Note [Normalisation in f64]
// In f32, x - mean loses the digits the f32 mean lacks where a row's spread is small next to
// its mean, and the input gradient subtracts the row's mean of g = dy * weight from each g,
// which loses most digits where the g of a row are large next to their spread (a loss
// weighting its outputs, a large weight); the xhat of an f32 mean also sum to ~1e-7 of their
// size instead of 0, which mean(g * xhat) multiplies by mean(g). libtorch computes in f32 (its
// input gradients were off by 6% of their largest value on rows around 1000 with a spread of
// 0.01, tests/nn/test_norm_accuracy.cpp's inputs). Here the statistics are f64 (and kept for
// the backward). The forward sums them in f64 lanes and takes y from x - hi, hi + lo being
// the f64 mean split into two floats (shifted_sums.hpp), in f32 arithmetic: rows of 128 take
// 1.7x the old f32 kernel's time (0.052 -> 0.087 ms for 1024 rows, one thread, AVX2). The backward forms g, xhat, its sums and each dx in f64 lanes (a product of two
// floats is exact there) and subtracts mean(g) * sum(xhat) from sum(g * xhat), so each f32
// gradient is the f64 one rounded, for two f64 vectors per f32 vector: 1.6x (0.068 -> 0.11 ms).
// Both together are ~1% of the transformer benchmark's step (inside its noise); long rows' weight
// gradients got faster with the column blocks below (8192 x 1024: 29 -> 21 ms backward).

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/runtime/threading.hpp>

#include "simd.hpp"

#include "f64_lanes.hpp"
#include "shifted_sums.hpp"

#include <algorithm>
#include <cmath>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;

/// Rows of work per task: at least ~32k elements, so small inputs stay on one thread.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(cols, 1)); }

template <class T>
void layer_norm_typed(TensorImpl& y_out, TensorImpl& mean_out, TensorImpl& rstd_out, const TensorImpl& x,
                      const TensorImpl* weight, const TensorImpl* bias, int64_t cols, double eps) {
  using V = xsimd::batch<T>;
  const int64_t rows = x.numel / cols;
  const T* xp = static_cast<const T*>(x.data());
  const T* w = weight ? static_cast<const T*>(weight->data()) : nullptr;
  const T* b = bias ? static_cast<const T*>(bias->data()) : nullptr;
  T* y = static_cast<T*>(y_out.data());
  double* mean = static_cast<double*>(mean_out.data());
  double* rstd = static_cast<double*>(rstd_out.data());
  const double inv_n = 1.0 / static_cast<double>(cols);
  detail::parallel_for(rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    constexpr int64_t W = V::size;
    for (int64_t i = r0; i < r1; ++i) {
      const T* xr = xp + i * cols;
      T* yr = y + i * cols;
      // The statistics in f64 lanes: the gradients depend on them (an f32 mean's error
      // showed in the weight's, summed over rows, and an f32 variance's where dx cancels).
      const double m = sum_f64(xr, cols) * inv_n;
      const double rs = 1.0 / std::sqrt(sq_dev_f64(xr, cols, m) * inv_n + eps);
      const Split<T> ms(m);
      mean[i] = m, rstd[i] = rs;
      // y = ((x - hi) * rstd - lo * rstd) [* w] [+ b]: x - hi exact where it cancels.
      const T a = static_cast<T>(rs), c = static_cast<T>(-ms.lo * rs);
      const V av(a), cv(c);
      int64_t j = 0;
      for (; j + W <= cols; j += W) {
        V v = xsimd::fma(V::load_unaligned(xr + j) - V(ms.hi), av, cv);
        if (w && b) v = xsimd::fma(v, V::load_unaligned(w + j), V::load_unaligned(b + j));
        else if (w) v = v * V::load_unaligned(w + j);
        else if (b) v = v + V::load_unaligned(b + j);
        v.store_unaligned(yr + j);
      }
      for (; j < cols; ++j) {
        T v = (xr[j] - ms.hi) * a + c;
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
  const double* mp = static_cast<const double*>(mean.data());
  const double* rp = static_cast<const double*>(rstd.data());
  if (dx_out) {
    // dx = rstd * (g - mean(g) - xhat * mean((g - mean(g)) * xhat)), g = dy * weight, with the
    // sums and the output in f64 (Note [Normalisation in f64]).
    T* dx = static_cast<T*>(dx_out->data());
    const double inv_nd = 1.0 / static_cast<double>(cols);
    detail::parallel_for(rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
      constexpr int64_t WD = VD::size;
      for (int64_t i = r0; i < r1; ++i) {
        const T *dr = d + i * cols, *xr = xp + i * cols;
        const double m = mp[i], rs = rp[i];
        const VD mv(m), rv(rs);
        auto g_at = [&](int64_t j) { return w ? static_cast<double>(dr[j]) * w[j] : static_cast<double>(dr[j]); };
        VD sg(0.0), sx(0.0), sgx(0.0);
        int64_t j = 0;
        for (; j + WD <= cols; j += WD) {
          VD gv = load_f64(dr + j);
          if (w) gv = gv * load_f64(w + j);
          const VD xh = (load_f64(xr + j) - mv) * rv;
          sg += gv, sx += xh, sgx = xsimd::fma(gv, xh, sgx);
        }
        double a = xsimd::hadd(sg), hx = xsimd::hadd(sx), hgx = xsimd::hadd(sgx);
        for (int64_t t = j; t < cols; ++t) {
          const double gv = g_at(t), xh = (xr[t] - m) * rs;
          a += gv, hx += xh, hgx += gv * xh;
        }
        const double gbar = a * inv_nd, b = (hgx - gbar * hx) * inv_nd;
        const VD gm(gbar), bv(b);
        T* out = dx + i * cols;
        for (j = 0; j + WD <= cols; j += WD) {
          VD gv = load_f64(dr + j);
          if (w) gv = gv * load_f64(w + j);
          const VD xh = (load_f64(xr + j) - mv) * rv;
          store_f64(out + j, rv * (gv - gm - xh * bv));
        }
        for (; j < cols; ++j) out[j] = static_cast<T>(rs * (g_at(j) - gbar - (xr[j] - m) * rs * b));
      }
    });
  }
  if (dw_out || db_out) {
    // Sums over rows, in f64 on the task's stack, each task owning blocks of columns.
    T* dw = dw_out ? static_cast<T*>(dw_out->data()) : nullptr;
    T* db = db_out ? static_cast<T*>(db_out->data()) : nullptr;
    // At least a cache line of T per row (fewer columns made every row's line be read by
    // several tasks: 8192 x 1024 took 1.4x as long with 4), at most 256 (the stack sums).
    constexpr int64_t WD = VD::size, kMaxBlock = 256, kMinBlock = std::max<int64_t>(WD, 64 / sizeof(T));
    const int64_t block = std::clamp<int64_t>(32768 / std::max<int64_t>(rows, 1) / WD * WD, kMinBlock, kMaxBlock);
    detail::parallel_for((cols + block - 1) / block, 1, [&](int64_t b0, int64_t b1) {
      alignas(64) double sw[kMaxBlock], sb[kMaxBlock];
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t c0 = blk * block, len = std::min(cols, c0 + block) - c0;
        std::fill(sw, sw + len, 0.0);
        std::fill(sb, sb + len, 0.0);
        for (int64_t i = 0; i < rows; ++i) {
          const T *dr = d + i * cols + c0, *xr = xp + i * cols + c0;
          const double m = mp[i], rs = rp[i];
          const VD mv(m), rv(rs);
          int64_t j = 0;
          for (; j + WD <= len; j += WD) {
            const VD dv = load_f64(dr + j);
            if (dw) (VD::load_aligned(sw + j) + dv * ((load_f64(xr + j) - mv) * rv)).store_aligned(sw + j);
            if (db) (VD::load_aligned(sb + j) + dv).store_aligned(sb + j);
          }
          for (; j < len; ++j) {
            sw[j] += dr[j] * ((xr[j] - m) * rs);
            sb[j] += dr[j];
          }
        }
        for (int64_t j = 0; j < len; ++j) {
          if (dw) dw[c0 + j] = static_cast<T>(sw[j]);
          if (db) db[c0 + j] = static_cast<T>(sb[j]);
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
