// im2col / col2im on the CPU (see include/ember/ops/conv_ops.hpp). One (n, c) plane per task:
// im2col writes each column row (c, tap) in one pass over the output windows; col2im
// accumulates into its own plane, so tasks never write the same element.
//
// Both walk "rows": a row is one tap and one position of the outer output dims, and spans the
// innermost output dim. Each row's valid window range [lo, hi) along that dim is computed once,
// so the inner loop is a plain strided copy (a memcpy at stride 1) with padding written only at
// the ends; no per-element bounds test or index arithmetic.

#include <ember/core/bit_select.hpp>
#include <ember/core/device_hooks.hpp>
#include <ember/ops/conv_algorithm.hpp>
#include <ember/ops/conv_ops.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ember {
namespace {
std::atomic<ConvAlgorithm> g_conv_algorithm{ConvAlgorithm::Auto};
}
void set_conv_algorithm(ConvAlgorithm algorithm) { g_conv_algorithm.store(algorithm, std::memory_order_relaxed); }
ConvAlgorithm conv_algorithm() { return g_conv_algorithm.load(std::memory_order_relaxed); }
}  // namespace ember

namespace ember::ops {
namespace {

struct Plan {
  int nd;
  int64_t n, c;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
  int64_t in_plane = 1, out_plane = 1, taps = 1;
};

/// `op` names the kernel in errors (im2col serves convolution and average pooling alike).
Plan make_plan(const ConvGeometry& g, int64_t n, int64_t c, const std::array<int64_t, 3>& in, const char* op) {
  Plan p;
  p.nd = g.nd;
  p.n = n, p.c = c;
  for (int d = 0; d < g.nd; ++d) {
    // check_geometry bounds the window; an input dim this long (a stride-0 view) would make
    // in + padding overflow.
    EMBER_CHECK(in[d] < (int64_t{1} << 62), "[{}] spatial size {} is too large", op, in[d]);
    p.in[d] = in[d];
    p.out[d] = g.out_size(d, in[d]);
    p.in_plane = detail::checked_mul(p.in_plane, in[d], op);
    p.out_plane = detail::checked_mul(p.out_plane, p.out[d], op);
    p.taps = detail::checked_mul(p.taps, g.kernel[d], op);
  }
  // The batch's planes and the column matrix's rows must be countable too.
  (void)detail::checked_mul(n, c, op);
  (void)detail::checked_mul(c, p.taps, op);
  return p;
}

/// Smallest integer >= a / b for b > 0 (any sign of a).
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/// Tap k along dim d: its offset from a window's start (`start`, k * dilation - padding) and
/// the output positions [lo, hi) at which it reads the input rather than padding.
struct Span {
  int64_t start, lo, hi;
};
Span tap_range(const ConvGeometry& g, const Plan& p, int d, int64_t k) {
  const int64_t shift = k * g.dilation[d] - g.pad_before[d];
  const int64_t lo = std::clamp<int64_t>(ceil_div(-shift, g.stride[d]), 0, p.out[d]);
  const int64_t hi = std::clamp<int64_t>(ceil_div(p.in[d] - shift, g.stride[d]), lo, p.out[d]);
  return {shift, lo, hi};
}

/// One row: window o reads input offset `src + o * stride` for o in [lo, hi) and padding
/// elsewhere; `inside` is false when an outer dim reads padding (the whole row is padding).
/// `src` itself may be negative (window 0 reading the left padding).
struct Row {
  bool inside;
  int64_t src, lo, hi;
};

/// Calls f(at, Row) for every (tap, outer output position), where `at` is where the row starts
/// in a plane's columns: a tap's rows are contiguous (out_plane elements), and consecutive taps
/// start `tap_stride` apart (out_plane, or N * out_plane when the batch is inside the columns).
template <class F>
void for_each_row(const ConvGeometry& g, const Plan& p, int64_t tap_stride, F&& f) {
  const int last = p.nd - 1;
  const int64_t in_last = p.in[last], width = p.out[last];
  std::array<int64_t, 3> k{}, o{};
  for (int64_t tap = 0; tap < p.taps; ++tap) {
    int64_t at = tap * tap_stride;
    int64_t r = tap;
    for (int d = last; d >= 0; --d) k[d] = r % g.kernel[d], r /= g.kernel[d];
    // Innermost dim: input index = o * stride + shift, inside the input on [lo, hi).
    const Span t = tap_range(g, p, last, k[last]);
    o = {0, 0, 0};
    for (;;) {
      int64_t base = 0;
      bool inside = true;
      for (int d = 0; d < last; ++d) {
        int64_t i = o[d] * g.stride[d] - g.pad_before[d] + k[d] * g.dilation[d];
        if (i < 0 || i >= p.in[d]) {
          inside = false;
          break;
        }
        base = base * p.in[d] + i;
      }
      f(at, Row{inside, base * in_last + t.start, t.lo, t.hi});
      at += width;
      int d = last - 1;
      while (d >= 0 && ++o[d] == p.out[d]) o[d--] = 0;
      if (d < 0) break;
    }
  }
}

/// dst[o] = src[2 * o] for o in [0, n): im2col's rows at stride 2 (every downsampling 3x3
/// convolution). f32 as even-lane shuffles of vector pairs, four outputs per two loads, instead
/// of one scalar load and store per element (src/ is built for the baseline ISA, SSE2 on
/// x86-64). The vector loop stops where it would read past src[2 * (n - 1)].
template <class T>
void gather_even(T* dst, const T* src, int64_t n) {
  int64_t o = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; o + 5 <= n; o += 4) {  // reads src[2o .. 2o + 7], all <= 2 (n - 1) - 1
      const __m128 a = _mm_loadu_ps(src + 2 * o), b = _mm_loadu_ps(src + 2 * o + 4);
      _mm_storeu_ps(dst + o, _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    }
  }
#endif
  for (; o < n; ++o) dst[o] = src[2 * o];
}

/// dst[2 * o] += src[o] for o in [0, n): col2im's rows at stride 2. f32 adds whole vectors with
/// src interleaved with -0.0, the identity of addition (x + -0.0 == x for every x, -0.0 and NaN
/// included), so the odd elements in between keep their bits. The vector loop stops where it
/// would touch past dst[2 * (n - 1)] (another task's plane may follow).
template <class T>
void scatter_add_even(T* dst, const T* src, int64_t n) {
  int64_t o = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m128 neg_zero = _mm_set1_ps(-0.0f);
    for (; o + 5 <= n; o += 4) {  // touches dst[2o .. 2o + 7], all <= 2 (n - 1) - 1
      const __m128 s = _mm_loadu_ps(src + o);
      T* d = dst + 2 * o;
      _mm_storeu_ps(d, _mm_add_ps(_mm_loadu_ps(d), _mm_unpacklo_ps(s, neg_zero)));
      _mm_storeu_ps(d + 4, _mm_add_ps(_mm_loadu_ps(d + 4), _mm_unpackhi_ps(s, neg_zero)));
    }
  }
#endif
  for (; o < n; ++o) dst[2 * o] += src[o];
}

template <class T>
void im2col_plane(const ConvGeometry& g, const Plan& p, const T* in, T* cols, int64_t tap_stride) {
  const T pad = static_cast<T>(g.pad_value);
  const int64_t width = p.out[p.nd - 1], stride = g.stride[p.nd - 1];
  for_each_row(g, p, tap_stride, [&](int64_t at, Row r) {
    T* dst = cols + at;
    if (!r.inside) {
      std::fill(dst, dst + width, pad);
      return;
    }
    std::fill(dst, dst + r.lo, pad);
    if (stride == 1) {
      if (r.hi > r.lo) std::memcpy(dst + r.lo, in + (r.src + r.lo), static_cast<size_t>(r.hi - r.lo) * sizeof(T));
    } else if (stride == 2) {
      if (r.hi > r.lo) gather_even(dst + r.lo, in + (r.src + 2 * r.lo), r.hi - r.lo);
    } else {
      for (int64_t o = r.lo; o < r.hi; ++o) dst[o] = in[r.src + o * stride];
    }
    std::fill(dst + r.hi, dst + width, pad);
  });
}

template <class T>
void col2im_plane(const ConvGeometry& g, const Plan& p, const T* cols, T* out, int64_t tap_stride) {
  std::fill(out, out + p.in_plane, T(0));
  const int64_t stride = g.stride[p.nd - 1];
  for_each_row(g, p, tap_stride, [&](int64_t at, Row r) {
    if (!r.inside || r.hi == r.lo) return;
    const T* src = cols + at;
    if (stride == 1) {
      T* dst = out + (r.src + r.lo);  // in bounds: window lo reads the input
      const T* s = src + r.lo;
      for (int64_t o = 0, e = r.hi - r.lo; o < e; ++o) dst[o] += s[o];
    } else if (stride == 2) {
      scatter_add_even(out + (r.src + 2 * r.lo), src + r.lo, r.hi - r.lo);
    } else {
      for (int64_t o = r.lo; o < r.hi; ++o) out[r.src + o * stride] += src[o];
    }
  });
}

/// Per output position along spatial dim d: where its window starts in the input (`start`) and
/// the taps [lo, hi) that land inside the input (the transpose of tap_range's view).
std::vector<Span> spans_of(const ConvGeometry& g, const Plan& p, int d) {
  std::vector<Span> v(static_cast<size_t>(p.out[d]));
  for (int64_t o = 0; o < p.out[d]; ++o) {
    int64_t start = o * g.stride[d] - g.pad_before[d], dil = g.dilation[d];
    int64_t lo = std::clamp<int64_t>(ceil_div(-start, dil), 0, g.kernel[d]);
    int64_t hi = std::clamp<int64_t>(ceil_div(p.in[d] - start, dil), lo, g.kernel[d]);
    v[static_cast<size_t>(o)] = {start, lo, hi};
  }
  return v;
}

/// Direct max pooling of one plane. Each window is scanned in PyTorch's order (row-major over
/// the taps), so the first maximum wins ties and a NaN wins over numbers. The innermost loop
/// runs along an output row for one tap, so neighbouring windows update independently
/// (no serial dependency from tap to tap of one window). `cols[kw]` is the range of output
/// columns whose tap kw lands inside the input. Returns false when some window reads only
/// padding.
template <class T>
bool max_pool_plane(const ConvGeometry& g, const Plan& p, const std::array<std::vector<Span>, 3>& sp,
                    const std::vector<Span>& cols, const T* in, T* val, int64_t* idx) {
  const int64_t h = p.in[1], w = p.in[2], ow_n = p.out[2];
  const int64_t dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2], sw = g.stride[2];
  bool ok = true;
  for (const Span& a : sp[0])
    for (const Span& b : sp[1]) {
      if (a.lo == a.hi || b.lo == b.hi) {  // the whole row reads padding: refused by the caller
        std::fill(val, val + ow_n, T(0));
        std::fill(idx, idx + ow_n, int64_t{-1});
        val += ow_n, idx += ow_n, ok = false;
        continue;
      }
      // Start each window at its first tap inside the input.
      const int64_t first_row = ((a.start + a.lo * dd) * h + b.start + b.lo * dh) * w;
      for (int64_t o = 0; o < ow_n; ++o) {
        const Span& c = sp[2][static_cast<size_t>(o)];
        if (c.lo == c.hi) {
          val[o] = T(0), idx[o] = -1, ok = false;
          continue;
        }
        idx[o] = first_row + c.start + c.lo * dw;
        val[o] = in[idx[o]];
      }
      for (int64_t kd = a.lo; kd < a.hi; ++kd)
        for (int64_t kh = b.lo; kh < b.hi; ++kh) {
          const int64_t row = ((a.start + kd * dd) * h + b.start + kh * dh) * w - g.pad_before[2];
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            const int64_t base = row + kw * dw;  // input index of output column 0's tap kw
            for (int64_t o = cols[static_cast<size_t>(kw)].lo, e = cols[static_cast<size_t>(kw)].hi; o < e; ++o) {
              const int64_t i = base + o * sw;
              const T v = in[i];
              const bool take = (v > val[o]) | (v != v);
              val[o] = detail::bit_select(take, v, val[o]);
              idx[o] = detail::bit_select(take, i, idx[o]);
            }
          }
        }
      val += ow_n, idx += ow_n;
    }
  return ok;
}

/// The common 2x2 window with stride 2 and no padding (every CNN's downsampling), with the
/// window kept in registers: max_pool_plane's tap-by-tap updates of val/idx in memory cost
/// ~4x more here (cnn_small_step: 4 ms of its max pooling -> ~1 ms). Same order and NaN rule.
/// `readable`: how many elements from `in` on may be read (the rest of the input tensor).
template <class T>
void max_pool_2x2_plane(const T* in, int64_t readable, int64_t w, int64_t oh_n, int64_t ow_n, T* val, int64_t* idx) {
  for (int64_t oh = 0; oh < oh_n; ++oh, val += ow_n, idx += ow_n) {
    const int64_t r0 = 2 * oh * w, r1 = r0 + w;
    int64_t ow = 0;
#if defined(__SSE2__)
    // f32: four windows at once, the even and odd columns of two rows split into four vectors
    // (one per tap), the taps compared in the scalar loop's order; the index is rebuilt from
    // the winning tap. A last group of fewer than four windows (a plane is often 7 or 14
    // windows wide) loads past the row end where the input tensor has room, the extra lanes
    // not stored, and runs on a zero-padded copy at the tensor's end. cnn_small_step's two
    // poolings (64 x 32 x 28 x 28 and 64 x 64 x 14 x 14, 1 thread): see the commit.
    if constexpr (std::is_same_v<T, float>) {
      const int64_t offset[4] = {0, 1, w, w + 1};  // of each tap from the window's start
      auto four = [&](const float* p0, const float* p1, int64_t ow, int64_t count) {
        const __m128 a0 = _mm_loadu_ps(p0), a1 = _mm_loadu_ps(p0 + 4);
        const __m128 b0 = _mm_loadu_ps(p1), b1 = _mm_loadu_ps(p1 + 4);
        const __m128 taps[4] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                                _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
        __m128 best = taps[0];
        __m128i which = _mm_setzero_si128();
        for (int t = 1; t < 4; ++t) {
          const __m128 v = taps[t];
          const __m128 take = _mm_or_ps(_mm_cmpgt_ps(v, best), _mm_cmpunord_ps(v, v));
          best = _mm_or_ps(_mm_and_ps(take, v), _mm_andnot_ps(take, best));
          const __m128i m = _mm_castps_si128(take);
          which = _mm_or_si128(_mm_and_si128(m, _mm_set1_epi32(t)), _mm_andnot_si128(m, which));
        }
        alignas(16) float v[4];
        alignas(16) int32_t tap[4];
        _mm_store_ps(v, best);
        _mm_store_si128(reinterpret_cast<__m128i*>(tap), which);
        for (int64_t l = 0; l < count; ++l) {
          val[ow + l] = v[l];
          idx[ow + l] = r0 + 2 * (ow + l) + offset[tap[l]];
        }
      };
      for (; ow + 4 <= ow_n; ow += 4) four(in + r0 + 2 * ow, in + r1 + 2 * ow, ow, 4);
      if (ow < ow_n) {  // lanes past the row: read, not stored
        const float *p0 = in + r0 + 2 * ow, *p1 = in + r1 + 2 * ow;
        alignas(16) float pad0[8], pad1[8];
        if (r1 + 2 * ow + 8 > readable) {  // the tensor's end: from a zero-padded copy
          std::fill(pad0, pad0 + 8, 0.f), std::fill(pad1, pad1 + 8, 0.f);
          std::copy(p0, in + r0 + 2 * ow_n, pad0);
          std::copy(p1, in + r1 + 2 * ow_n, pad1);
          p0 = pad0, p1 = pad1;
        }
        four(p0, p1, ow, ow_n - ow);
        ow = ow_n;
      }
    }
#endif
    for (; ow < ow_n; ++ow) {
      T best = in[r0 + 2 * ow];
      int64_t at = r0 + 2 * ow;
      auto tap = [&](int64_t i) {
        const T v = in[i];
        const bool take = (v > best) | (v != v);
        best = detail::bit_select(take, v, best);
        at = detail::bit_select(take, i, at);
      };
      tap(r0 + 2 * ow + 1);
      tap(r1 + 2 * ow);
      tap(r1 + 2 * ow + 1);
      val[ow] = best;
      idx[ow] = at;
    }
  }
}

bool is_plain_2x2(const ConvGeometry& g, const Plan& p) {
  for (int d = 0; d < 3; ++d)
    if (g.dilation[d] != 1 || g.pad_before[d] != 0 || g.pad_after[d] != 0) return false;
  return g.kernel[0] == 1 && g.stride[0] == 1 && p.in[0] == 1 && g.kernel[1] == 2 && g.kernel[2] == 2 &&
         g.stride[1] == 2 && g.stride[2] == 2 && 2 * p.out[1] <= p.in[1] && 2 * p.out[2] <= p.in[2];
}

/// Plane number `i` of the parallel loop over (sample, channel) planes: its image plane and
/// where its columns start. Without the batch in the columns, planes go in image order, each
/// writing one contiguous block of columns. With it, the samples of one channel go
/// consecutively: they fill the same rows side by side, so writes stream through memory
/// instead of jumping between rows N * L apart at every plane (1.6x slower im2col, measured).
struct PlaneBlocks {
  int64_t image, columns;
};
/// How far apart a plane's taps start in the columns (see for_each_row).
int64_t tap_stride(const Plan& p, bool batch_in_columns) { return batch_in_columns ? p.n * p.out_plane : p.out_plane; }
PlaneBlocks plane_blocks(const Plan& p, bool batch_in_columns, int64_t i) {
  if (!batch_in_columns) return {i * p.in_plane, i * p.taps * p.out_plane};
  const int64_t n = i % p.n, c = i / p.n;
  return {(n * p.c + c) * p.in_plane, c * p.taps * p.n * p.out_plane + n * p.out_plane};
}

/// tap_range of every tap along dim d.
std::vector<Span> taps_inside(const ConvGeometry& g, const Plan& p, int d) {
  std::vector<Span> v(static_cast<size_t>(g.kernel[d]));
  for (int64_t k = 0; k < g.kernel[d]; ++k) v[static_cast<size_t>(k)] = tap_range(g, p, d, k);
  return v;
}

std::array<int64_t, 3> spatial_of(const TensorImpl& x, int nd) {
  std::array<int64_t, 3> s{1, 1, 1};
  for (int d = 0; d < nd; ++d) s[d] = x.sizes[2 + d];
  return s;
}

}  // namespace

void check_geometry(const ConvGeometry& g, const char* op) {
  EMBER_CHECK(g.nd >= 1 && g.nd <= 3, "[{}] supports 1 to 3 spatial dims, got {}", op, g.nd);
  for (int d = 0; d < g.nd; ++d) {
    EMBER_CHECK(g.kernel[d] >= 1 && g.stride[d] >= 1 && g.dilation[d] >= 1,
                "[{}] kernel size, stride and dilation must be positive, got {}, {} and {} in spatial dim {}", op,
                g.kernel[d], g.stride[d], g.dilation[d], d);
    EMBER_CHECK(g.pad_before[d] >= 0 && g.pad_after[d] >= 0, "[{}] padding must be non-negative, got {} and {}", op,
                g.pad_before[d], g.pad_after[d]);
    // Far beyond any real layer, and small enough that dilation * (kernel - 1), in + padding
    // and the other window arithmetic cannot overflow int64.
    constexpr int64_t kLimit = int64_t{1} << 31;
    EMBER_CHECK(g.kernel[d] < kLimit && g.stride[d] < kLimit && g.dilation[d] < kLimit && g.pad_before[d] < kLimit &&
                    g.pad_after[d] < kLimit,
                "[{}] kernel size {}, stride {}, dilation {} and padding {}+{} must be below 2^31 (spatial dim {})", op,
                g.kernel[d], g.stride[d], g.dilation[d], g.pad_before[d], g.pad_after[d], d);
  }
}

TensorRef im2col_cpu(const ConvGeometry& g, const TensorImpl& x) {
  EMBER_CHECK(x.ndim() == g.nd + 2, "[im2col] expects (N, C) + {} spatial dims, got shape {}", g.nd, x.sizes);
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[im2col] supports f32 and f64, got {}", x.dtype);
  Plan p = make_plan(g, x.sizes[0], x.sizes[1], spatial_of(x, g.nd), "im2col");
  for (int d = 0; d < g.nd; ++d)
    EMBER_CHECK(p.out[d] > 0, "[im2col] a window of {} (dilation {}) does not fit input size {} with padding {}+{}",
                g.kernel[d], g.dilation[d], p.in[d], g.pad_before[d], g.pad_after[d]);
  TensorRef xc = detail::contiguous_on_device(x, "im2col");
  const bool bic = g.batch_in_columns;
  const int64_t sizes[3] = {bic ? p.c * p.taps : p.n, bic ? p.n : p.c * p.taps, p.out_plane};
  TensorRef out = detail::make_tensor(sizes, x.dtype, x.device(), "im2col");
  const int64_t planes = p.n * p.c;
  auto run = [&]<class T>(T*) {
    const T* in = static_cast<const T*>(xc->data());
    T* cols = static_cast<T*>(out->data());
    detail::parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const PlaneBlocks at = plane_blocks(p, bic, i);
        im2col_plane(g, p, in + at.image, cols + at.columns, tap_stride(p, bic));
      }
    });
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return out;
}

std::pair<TensorRef, TensorRef> max_pool_cpu(const ConvGeometry& g0, const TensorImpl& x) {
  EMBER_CHECK(x.ndim() == g0.nd + 2, "[max_pool] expects (N, C) + {} spatial dims, got shape {}", g0.nd, x.sizes);
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[max_pool] supports f32 and f64, got {}", x.dtype);
  // Right-align the spatial dims in three (leading dims of size 1), so one loop nest serves 1-3 dims.
  ConvGeometry g;
  g.nd = 3;
  std::array<int64_t, 3> in{1, 1, 1};
  for (int d = 0; d < g0.nd; ++d) {
    int j = 3 - g0.nd + d;
    g.kernel[j] = g0.kernel[d], g.stride[j] = g0.stride[d], g.dilation[j] = g0.dilation[d];
    g.pad_before[j] = g0.pad_before[d], g.pad_after[j] = g0.pad_after[d];
    in[j] = x.sizes[2 + d];
  }
  Plan p = make_plan(g, x.sizes[0], x.sizes[1], in, "max_pool");
  for (int d = 0; d < 3; ++d)
    EMBER_CHECK(p.out[d] > 0, "[max_pool] a window of {} (dilation {}) does not fit input size {} with padding {}+{}",
                g.kernel[d], g.dilation[d], p.in[d], g.pad_before[d], g.pad_after[d]);
  const std::array<std::vector<Span>, 3> sp{spans_of(g, p, 0), spans_of(g, p, 1), spans_of(g, p, 2)};
  const std::vector<Span> cols = taps_inside(g, p, 2);
  TensorRef xc = detail::contiguous_on_device(x, "max_pool");
  Shape sizes{p.n, p.c};
  for (int d = 0; d < g0.nd; ++d) sizes.push_back(p.out[3 - g0.nd + d]);
  TensorRef values = detail::make_tensor(sizes, x.dtype, x.device(), "max_pool");
  TensorRef indices = detail::make_tensor(sizes, DType::I64, x.device(), "max_pool");
  int64_t* idx = static_cast<int64_t*>(indices->data());
  std::atomic<bool> empty_window{false};  // checked after the parallel loop (workers must not throw)
  auto run = [&]<class T>(T*) {
    const T* src = static_cast<const T*>(xc->data());
    T* val = static_cast<T*>(values->data());
    const bool plain_2x2 = is_plain_2x2(g, p);
    detail::parallel_for(p.n * p.c, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (plain_2x2)
          max_pool_2x2_plane(src + i * p.in_plane, (p.n * p.c - i) * p.in_plane, p.in[2], p.out[1], p.out[2],
                             val + i * p.out_plane, idx + i * p.out_plane);
        else if (!max_pool_plane(g, p, sp, cols, src + i * p.in_plane, val + i * p.out_plane, idx + i * p.out_plane))
          empty_window = true;
      }
    });
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  EMBER_CHECK(!empty_window, "[max_pool] a window reads only padding (input {}, kernel {}, padding {}, dilation {})",
              x.sizes, g0.kernel[0], g0.pad_before[0], g0.dilation[0]);
  return {values, indices};
}

TensorRef max_pool_backward_cpu(int nd, const std::array<int64_t, 3>& spatial, const TensorImpl& grad,
                                const TensorImpl& indices) {
  EMBER_CHECK(grad.dtype == DType::F32 || grad.dtype == DType::F64, "[max_pool_backward] supports f32 and f64, got {}",
              grad.dtype);
  EMBER_CHECK(indices.dtype == DType::I64 && indices.sizes == grad.sizes && grad.ndim() == nd + 2,
              "[max_pool_backward] expects int64 indices shaped like the (N, C) + {} spatial dims gradient, got {} "
              "({}) and {}", nd, indices.sizes, indices.dtype, grad.sizes);
  Shape sizes{grad.sizes[0], grad.sizes[1]};
  int64_t in_plane = 1;
  for (int d = 0; d < nd; ++d) sizes.push_back(spatial[d]), in_plane *= spatial[d];
  const int64_t planes = grad.sizes[0] * grad.sizes[1], out_plane = planes ? grad.numel / planes : 0;
  TensorRef gc = detail::contiguous_on_device(grad, "max_pool_backward"),
            ic = detail::contiguous_on_device(indices, "max_pool_backward");
  TensorRef out = detail::make_tensor(sizes, grad.dtype, grad.device(), "max_pool_backward");
  const int64_t* idx = static_cast<const int64_t*>(ic->data());
  std::atomic<int64_t> bad{-1};
  auto run = [&]<class T>(T*) {
    const T* g = static_cast<const T*>(gc->data());
    T* o = static_cast<T*>(out->data());
    detail::parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        T* dst = o + pl * in_plane;
        std::fill(dst, dst + in_plane, T(0));
        for (int64_t l = pl * out_plane, end = l + out_plane; l < end; ++l) {
          const int64_t i = idx[l];
          if (i < 0 || i >= in_plane) {
            bad = i;
            continue;
          }
          dst[i] += g[l];
        }
      }
    });
  };
  if (grad.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  EMBER_CHECK(bad < 0, "[max_pool_backward] index {} is outside an input plane of {} elements", bad.load(), in_plane);
  return out;
}

TensorRef col2im_cpu(const ConvGeometry& g, const std::array<int64_t, 3>& spatial, const TensorImpl& cols) {
  const bool bic = g.batch_in_columns;
  EMBER_CHECK(cols.ndim() == 3, "[col2im] expects columns of shape {}, got {}", bic ? "(C * taps, N, L)" : "(N, C * taps, L)",
              cols.sizes);
  EMBER_CHECK(cols.dtype == DType::F32 || cols.dtype == DType::F64, "[col2im] supports f32 and f64, got {}",
              cols.dtype);
  int64_t taps = g.kernel_numel();
  const int64_t rows = cols.sizes[bic ? 0 : 1], batch = cols.sizes[bic ? 1 : 0];
  EMBER_CHECK(rows % taps == 0, "[col2im] {} rows are not a multiple of the kernel's {} taps", rows, taps);
  Plan p = make_plan(g, batch, rows / taps, spatial, "col2im");
  EMBER_CHECK(cols.sizes[2] == p.out_plane,
              "[col2im] columns hold {} windows, but an image of the given size has {}", cols.sizes[2], p.out_plane);
  TensorRef cc = detail::contiguous_on_device(cols, "col2im");
  Shape sizes{p.n, p.c};
  for (int d = 0; d < g.nd; ++d) sizes.push_back(spatial[d]);
  TensorRef out = detail::make_tensor(sizes, cols.dtype, cols.device(), "col2im");
  const int64_t planes = p.n * p.c;
  auto run = [&]<class T>(T*) {
    const T* in = static_cast<const T*>(cc->data());
    T* img = static_cast<T*>(out->data());
    detail::parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const PlaneBlocks at = plane_blocks(p, bic, i);
        col2im_plane(g, p, in + at.columns, img + at.image, tap_stride(p, bic));
      }
    });
  };
  if (cols.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return out;
}

}  // namespace ember::ops
