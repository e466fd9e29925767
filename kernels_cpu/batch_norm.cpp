// Batch normalisation kernels (see include/ember/ops/norm_ops.hpp; checks and outputs in
// src/ops/batch_norm.cpp). Compiled once per instruction set, like elementwise.cpp.
//
// The input is contiguous (N, C, inner): channel c owns N planes of `inner` elements, C planes
// apart. Tasks are channels, so every statistic and gradient sum is made by one thread in a
// fixed order (results do not depend on the thread count) and no two tasks write the same
// element. Statistics are two-pass (mean, then the mean squared deviation). y = (x - mean) *
// (rstd * w) + b, dx = (dy - mean(dy) - (x - mean) * k) * rstd * w with k = sum((dy - mean(dy)) *
// (x - mean)) * rstd^2 / count.
//
// Note [Shifted sums in batch normalisation]
// Where a channel's spread is small next to its mean (or dy's next to mean(dy)), f32 sums and
// x - mean lose the digits that matter (Note [Normalisation in f64] in layer_norm.cpp). Here
// every sum is of values shifted by a pivot, so that it carries the spread's digits: the mean's
// pass sums x - x0, with x0 the mean of the first (up to) 64 values of the channel's first
// plane (x - x0 is exact where x is within 2x of x0, and about centred sums do not grow with an
// offset); the later passes take x - hi, with hi + lo the f64 mean (hi the nearest float), and
// dy - p (p the same kind of pivot, training only), and fold lo into the sums and the outputs'
// constants in f64. Runs of up to kChunk values of a plane are summed in T lanes, the runs'
// sums in f64 (shifted_sums.hpp); the statistics are kept in f64. This stays f32 arithmetic:
// f64 lanes, as layer_norm.cpp uses, made this layer's forward and backward 1.3-1.4x slower
// (its planes are large, its rows are not). On the tests' inputs the results come within a few
// f32 roundings of the largest f64 value (tests/nn/test_norm_accuracy.cpp). libtorch's CPU
// statistics behave as f64 sums: on a 4 x 4096 channel around 1000 with 64 outliers at 0 its
// variance was 3e-9 from the f64 one, this kernel's 3.7e-6 (SSE2, runs of 1024 then; 256 now).

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/runtime/threading.hpp>

#include "f64_lanes.hpp"
#include "shifted_sums.hpp"
#include "simd.hpp"

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

/// The backward's sums with dy and x shifted by pivots: sum(dy - p), sum(x - hi) and
/// sum((dy - p) * (x - hi)).
struct GradSums {
  double dy = 0, dev = 0, dot = 0;
};

template <class T>
void plane_grad_sums(const T* dy, const T* x, int64_t len, T hi, T p, GradSums& s) {
  constexpr int64_t W = V<T>::size;
  const V<T> hv(hi), pv(p);
  int64_t j = 0;
  for (int64_t c0 = 0; c0 < len; c0 += kChunk) {
    const int64_t c1 = std::min(len, c0 + kChunk);
    V<T> a(T(0)), c(T(0)), b(T(0));
    for (; j + W <= c1; j += W) {
      const V<T> d = V<T>::load_unaligned(dy + j) - pv, e = V<T>::load_unaligned(x + j) - hv;
      a += d, c += e, b = xsimd::fma(d, e, b);
    }
    s.dy += xsimd::hadd(a), s.dev += xsimd::hadd(c), s.dot += xsimd::hadd(b);
  }
  for (; j < len; ++j) {
    const T d = dy[j] - p, e = x[j] - hi;
    s.dy += d, s.dev += e, s.dot += d * e;
  }
}

template <class T>
void batch_norm_typed(TensorImpl& y_out, TensorImpl& mean_io, TensorImpl* var_out, TensorImpl& rstd_io,
                      const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias, double eps) {
  const Planes g(x);
  const T* xp = static_cast<const T*>(x.data());
  const T* w = weight ? static_cast<const T*>(weight->data()) : nullptr;
  const T* b = bias ? static_cast<const T*>(bias->data()) : nullptr;
  T* y = static_cast<T*>(y_out.data());
  double* mean = static_cast<double*>(mean_io.data());
  double* var = var_out ? static_cast<double*>(var_out->data()) : nullptr;
  double* rstd = static_cast<double*>(rstd_io.data());
  const double inv_count = 1.0 / static_cast<double>(g.n * g.inner);
  detail::parallel_for(g.c, g.grain(), [&](int64_t c0, int64_t c1) {
    constexpr int64_t W = V<T>::size;
    for (int64_t ch = c0; ch < c1; ++ch) {
      if (var) {  // training: this batch's statistics (Note [Shifted sums in batch normalisation])
        const T x0 = pivot(xp + g.at(0, ch), g.inner);
        double s = 0;
        for (int64_t i = 0; i < g.n; ++i) s += shifted_sum(xp + g.at(i, ch), g.inner, x0);
        const double m = x0 + s * inv_count;
        // sum((x - m)^2) = sum((x - hi)^2) - count * lo^2 for m = hi + lo, hi the float nearest m.
        const Split<T> ms(m);
        double q = 0;
        for (int64_t i = 0; i < g.n; ++i) q += sq_dev(xp + g.at(i, ch), g.inner, ms.hi);
        // (max(v, 0) keeps a NaN variance NaN, as the running one must become.)
        mean[ch] = m, var[ch] = std::max(q * inv_count - static_cast<double>(ms.lo) * ms.lo, 0.0);
        // A constant channel with eps = 0: rstd 0 (y = bias, zero gradients), as PyTorch's.
        rstd[ch] = var[ch] == 0 && eps == 0 ? 0.0 : 1.0 / std::sqrt(var[ch] + eps);
      }
      // y = (x - m.hi) * alpha + (bias - m.lo * alpha).
      const Split<T> m(mean[ch]);
      const double alpha = w ? rstd[ch] * w[ch] : rstd[ch];
      const T a = static_cast<T>(alpha), beta = static_cast<T>((b ? b[ch] : 0.0) - m.lo * alpha);
      const V<T> hv(m.hi), av(a), bv(beta);
      for (int64_t i = 0; i < g.n; ++i) {
        const T* xr = xp + g.at(i, ch);
        T* yr = y + g.at(i, ch);
        int64_t j = 0;
        for (; j + W <= g.inner; j += W) xsimd::fma(V<T>::load_unaligned(xr + j) - hv, av, bv).store_unaligned(yr + j);
        for (; j < g.inner; ++j) yr[j] = (xr[j] - m.hi) * a + beta;
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
  const double* mean = static_cast<const double*>(mean_t.data());
  const double* rstd = static_cast<const double*>(rstd_t.data());
  T* dx = dx_out ? static_cast<T*>(dx_out->data()) : nullptr;
  T* dw = dw_out ? static_cast<T*>(dw_out->data()) : nullptr;
  T* db = db_out ? static_cast<T*>(db_out->data()) : nullptr;
  const double count = static_cast<double>(g.n * g.inner);
  detail::parallel_for(g.c, g.grain(), [&](int64_t c0, int64_t c1) {
    constexpr int64_t W = V<T>::size;
    for (int64_t ch = c0; ch < c1; ++ch) {
      const Split<T> m(mean[ch]);
      const double rs = rstd[ch], scale = w ? rs * w[ch] : rs;
      // The dy pivot only where the sums are centred (training); evaluation's x - mean is not,
      // and a pivot there would turn dy * inf into (dy - p) * inf + p * inf: NaN.
      const T p = training ? pivot(d + g.at(0, ch), g.inner) : T(0);
      GradSums s;
      if (dw || db || (dx && training))
        for (int64_t i = 0; i < g.n; ++i) plane_grad_sums(d + g.at(i, ch), xp + g.at(i, ch), g.inner, m.hi, p, s);
      // With e = x - mean = (x - m.hi) - m.lo: sum(e) = s.dev - count * m.lo, sum((dy - p) * e) =
      // s.dot - m.lo * s.dy, sum(dy * e) = that + p * sum(e), sum(dy) = s.dy + p * count. The
      // small corrections only where every sum is finite (an inf or NaN dy or x: inf - inf, or
      // 0 * inf, would make a gradient NaN where PyTorch's is +-inf), and terms with a zero
      // factor are left out (a NaN where PyTorch's product does not meet the infinity).
      const bool finite = std::isfinite(s.dy) && std::isfinite(s.dev) && std::isfinite(s.dot);
      auto times = [](double a, double b) { return a == 0 || b == 0 ? 0.0 : a * b; };
      // In training, e's sum is 0 by the mean's definition; computed, it is only the f32 sums'
      // rounding (and the mean's), which p * sum(e) would scale by dy's offset: a weight
      // gradient cancelling to 7 from terms of ~300 was off by 3e-4 relative with it.
      const double sum_e = finite ? (training ? 0.0 : s.dev - count * m.lo) : s.dev;
      const double dot_e = finite ? s.dot - m.lo * s.dy : s.dot;
      if (dw) dw[ch] = static_cast<T>((dot_e + times(p, sum_e)) * rs);
      if (db && finite) db[ch] = static_cast<T>(s.dy + p * count);
      if (db && !finite) {  // sum(dy) itself: the f32 sums of dy - p can overflow to the wrong sign
        double t = 0;
        for (int64_t i = 0; i < g.n; ++i) t += sum_f64(d + g.at(i, ch), g.inner);
        db[ch] = static_cast<T>(t);
      }
      if (!dx) continue;
      const T st = static_cast<T>(scale);
      if (!training) {  // the statistics are constants: dx = dy * scale (an infinite x keeps it finite)
        for (int64_t i = 0; i < g.n; ++i) {
          const T* dr = d + g.at(i, ch);
          T* out = dx + g.at(i, ch);
          int64_t j = 0;
          for (; j + W <= g.inner; j += W) (V<T>::load_unaligned(dr + j) * V<T>(st)).store_unaligned(out + j);
          for (; j < g.inner; ++j) out[j] = dr[j] * st;
        }
        continue;
      }
      // dx = (dy - mean(dy) - e * k) * scale with mean(dy) = p + s.dy / count = gm.hi + gm.lo and
      // k = sum((dy - mean(dy)) * e) * rstd^2 / count = (dot_e - s.dy * sum_e / count) * rstd^2 /
      // count, as ((dy - gm.hi) * scale + c) - (x - m.hi) * k * scale with c = (m.lo * k - gm.lo) *
      // scale: the differences that cancel are exact, the small corrections folded into c.
      const Split<T> gm(p + s.dy / count);
      const double k = (dot_e - (finite ? s.dy * sum_e / count : 0.0)) * rs * rs / count;
      const T ks = static_cast<T>(k * scale), c = static_cast<T>((m.lo * k - gm.lo) * scale);
      if (!finite || !std::isfinite(ks) || !std::isfinite(c) || !std::isfinite(st)) {
        // Non-finite values (in dy, x or the weight): PyTorch's formula as written, element by
        // element, so that the infinities and NaNs land where its do.
        const double dy_mean = p + s.dy / count, mean_ch = mean[ch];
        for (int64_t i = 0; i < g.n; ++i) {
          const T *dr = d + g.at(i, ch), *xr = xp + g.at(i, ch);
          T* out = dx + g.at(i, ch);
          for (int64_t j = 0; j < g.inner; ++j) out[j] = static_cast<T>((dr[j] - dy_mean - (xr[j] - mean_ch) * k) * scale);
        }
        continue;
      }
      const V<T> mh(m.hi), gh(gm.hi), kv(ks), sv(st), cv(c);
      for (int64_t i = 0; i < g.n; ++i) {
        const T *dr = d + g.at(i, ch), *xr = xp + g.at(i, ch);
        T* out = dx + g.at(i, ch);
        int64_t j = 0;
        for (; j + W <= g.inner; j += W) {
          const V<T> t = xsimd::fma(V<T>::load_unaligned(dr + j) - gh, sv, cv);
          xsimd::fnma(V<T>::load_unaligned(xr + j) - mh, kv, t).store_unaligned(out + j);
        }
        for (; j < g.inner; ++j) out[j] = ((dr[j] - gm.hi) * st + c) - (xr[j] - m.hi) * ks;
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
