// Depthwise 2-D convolution kernels (see include/ember/ops/depthwise_conv_ops.hpp; checks and
// outputs in src/ops/depthwise_conv.cpp). Compiled once per instruction set at -O3, like the
// other convolution kernels.
//
// Each (sample, channel) plane is read through a zero-padded copy in a per-thread buffer, so
// the taps need no bounds tests. With a column stride s > 1 each padded row is stored as
// phases (columns c, c + s, c + 2s, ... one after another; only the phases taps read), so
// that every tap reads consecutive elements whatever the stride: output column j of tap
// (kh, kw) reads padded column j * s + kw * dw, which is element j + (kw * dw) / s of phase
// (kw * dw) % s.
//
// The output rows (forward) and the input-gradient rows (backward, unit strides: a correlation
// of the zero-padded output gradient with the flipped kernel) keep a block of up to four
// vectors of outputs in registers over all taps and store it once; the weight gradient keeps
// up to nine taps' partial sums in registers over a whole plane. The forward runs planes in
// parallel; the backward runs channels in parallel (each channel's weight and bias gradients
// are sums over its planes, made by one task in sample order, so they do not depend on the
// thread count).

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/conv_ops.hpp>
#include <ember/runtime/threading.hpp>

#include "simd.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;

template <class T>
using V = xsimd::batch<T>;
template <class T>
constexpr int64_t kLanes = static_cast<int64_t>(V<T>::size);

struct Plane {
  int64_t h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, ph, pw;
  Plane(const ops::ConvGeometry& g, const TensorImpl& x)
      : h(x.sizes[2]), w(x.sizes[3]), oh(g.out_size(0, h)), ow(g.out_size(1, w)), kh(g.kernel[0]), kw(g.kernel[1]),
        sh(g.stride[0]), sw(g.stride[1]), dh(g.dilation[0]), dw(g.dilation[1]), pt(g.pad_before[0]),
        pl(g.pad_before[1]),
        // Rows and columns the windows reach (>= the padded input when the last stride overhangs).
        ph(std::max(h + g.pad_before[0] + g.pad_after[0], (oh - 1) * sh + (kh - 1) * dh + 1)),
        pw(std::max(w + g.pad_before[1] + g.pad_after[1], (ow - 1) * sw + (kw - 1) * dw + 1)) {}
};

/// The padded input plane: ph rows, each of `runs` runs of `phase` elements. At a column
/// stride s > 1 a run holds one phase, padded columns q * s + f for q = 0, 1, ..., and only
/// the phases some tap reads get a run (at most min(kw, s), so a stride wider than the image
/// costs nothing); at stride 1 a row is one run. `phase` leaves a vector's width of zeros
/// after the last column any tap reads, for the loads of a row's last, partial block.
template <class T>
struct PaddedInput {
  int64_t phase, runs = 0, row;
  const int64_t* run_phase;   // f of each run
  const int64_t* tap_column;  // per tap column e: where its reads start in a row
  /// `table` holds 2 * kw entries and must outlive the layout. Each task makes its own, in
  /// its thread's scratch: a table in the caller's could be rewritten while the tasks read
  /// it, by another convolution that a work-stealing executor runs on the waiting caller.
  PaddedInput(const Plane& p, int64_t* table) : phase((p.pw + p.sw - 1) / p.sw + kLanes<T>) {
    int64_t *f_of = table, *column = table + p.kw;
    for (int64_t e = 0; e < p.kw; ++e) {
      const int64_t f = e * p.dw % p.sw;
      int64_t r = 0;
      while (r < runs && f_of[r] != f) ++r;
      if (r == runs) f_of[runs++] = f;
      column[e] = r * phase + e * p.dw / p.sw;
    }
    row = runs * phase, run_phase = f_of, tap_column = column;
  }
  size_t size(const Plane& p) const { return static_cast<size_t>(p.ph * row); }
  /// Where each tap (kh, kw) reads the first output row's window in the padded plane `pad`.
  void taps(const Plane& p, const T* pad, const T** src) const {
    for (int64_t a = 0; a < p.kh; ++a)
      for (int64_t e = 0; e < p.kw; ++e) src[a * p.kw + e] = pad + a * p.dh * row + tap_column[e];
  }
  /// From one output row's windows to the next's: sh rows (0 for a single output row, where
  /// a huge stride times the row would overflow; with more rows it is inside the buffer).
  int64_t row_step(const Plane& p) const { return p.oh > 1 ? p.sh * row : 0; }
};

/// Per-thread scratch of at least n elements of T, in slot `Slot` (kept: a warm loop
/// allocates nothing).
template <class T, int Slot>
T* scratch(size_t n) {
  static thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

template <class T>
void pad_input(const Plane& p, const PaddedInput<T>& lay, const T* in, T* buf) {
  for (int64_t r = 0; r < p.ph; ++r) {
    T* dst = buf + r * lay.row;
    const int64_t ir = r - p.pt;
    if (ir < 0 || ir >= p.h) {
      std::fill(dst, dst + lay.row, T(0));
      continue;
    }
    const T* src = in + ir * p.w;
    if (p.sw == 1) {  // plain loops: a memmove call per row cost more than the copy at these widths
      for (int64_t c = 0; c < p.pl; ++c) dst[c] = T(0);
      for (int64_t c = 0; c < p.w; ++c) dst[p.pl + c] = src[c];
      for (int64_t c = p.pl + p.w; c < lay.row; ++c) dst[c] = T(0);
    } else {
      // Run r holds phase f: input columns q * sw + f - pl for q in [q0, q1).
      std::fill(dst, dst + lay.row, T(0));
      for (int64_t run = 0; run < lay.runs; ++run) {
        const int64_t f = lay.run_phase[run];
        const int64_t q0 = std::max<int64_t>(0, (p.pl - f + p.sw - 1) / p.sw);
        const int64_t q1 = std::min(lay.phase, (p.w + p.pl - f + p.sw - 1) / p.sw);
        for (int64_t q = q0; q < q1; ++q) dst[run * lay.phase + q] = src[q * p.sw + f - p.pl];
      }
    }
  }
}

/// R vectors of correlate_rows's outputs from column j in each of its Rows rows, the last
/// vector possibly partial.
template <class T, int Rows, int R>
void correlate_block(T* out, int64_t out_step, int64_t j, int64_t n, const T* const* src, int64_t src_step, const T* wt,
                     int64_t taps, T init) {
  constexpr int64_t W = kLanes<T>;
  V<T> acc[Rows][R];
  for (int q = 0; q < Rows; ++q)
    for (int r = 0; r < R; ++r) acc[q][r] = V<T>(init);
  for (int64_t t = 0; t < taps; ++t) {
    const V<T> wv(wt[t]);
    const T* s = src[t] + j;
    for (int q = 0; q < Rows; ++q)
      for (int r = 0; r < R; ++r) acc[q][r] = xsimd::fma(wv, V<T>::load_unaligned(s + q * src_step + r * W), acc[q][r]);
  }
  for (int q = 0; q < Rows; ++q)
    for (int r = 0; r < R; ++r) {
      T* o = out + q * out_step;
      const int64_t at = j + r * W;
      if (at + W <= n) {
        acc[q][r].store_unaligned(o + at);
      } else {
        alignas(64) T last[W];
        acc[q][r].store_aligned(last);
        std::copy(last, last + (n - at), o + at);
      }
    }
}

/// Rows (1 or 2) output rows of a depthwise correlation: row q's out[q * out_step + j] =
/// init + sum_t wt[t] * src[t][q * src_step + j] for j in [0, n). The sources must be readable
/// up to a vector's width past n. Blocks of 4 vectors per row, and the rest in one block:
/// two rows of four give eight independent chains of FMAs, enough to hide their latency
/// (one vector at a time, the chain over the taps waited on each FMA).
template <class T, int Rows>
void correlate_rows(T* out, int64_t out_step, int64_t n, const T* const* src, int64_t src_step, const T* wt,
                    int64_t taps, T init) {
  constexpr int64_t W = kLanes<T>;
  const int64_t vectors = (n + W - 1) / W;
  int64_t v = 0;
  for (; v + 4 <= vectors; v += 4) correlate_block<T, Rows, 4>(out, out_step, v * W, n, src, src_step, wt, taps, init);
  switch (vectors - v) {
    case 3: return correlate_block<T, Rows, 3>(out, out_step, v * W, n, src, src_step, wt, taps, init);
    case 2: return correlate_block<T, Rows, 2>(out, out_step, v * W, n, src, src_step, wt, taps, init);
    case 1: return correlate_block<T, Rows, 1>(out, out_step, v * W, n, src, src_step, wt, taps, init);
    default: return;
  }
}

/// All rows of a plane: output row i reads src[t] + i * src_step.
template <class T>
void correlate_plane(T* out, int64_t rows, int64_t n, const T* const* src, int64_t src_step, const T* wt, int64_t taps,
                     T init, const T** moved) {
  int64_t i = 0;
  for (; i < rows; i += 2) {
    for (int64_t t = 0; t < taps; ++t) moved[t] = src[t] + i * src_step;
    if (i + 2 <= rows) correlate_rows<T, 2>(out + i * n, n, n, moved, src_step, wt, taps, init);
    else correlate_rows<T, 1>(out + i * n, n, n, moved, src_step, wt, taps, init);
  }
}

template <class T>
void forward_typed(const ops::ConvGeometry& g, const TensorImpl& x, const TensorImpl& wt, const TensorImpl* b,
                   TensorImpl& y) {
  const Plane p(g, x);
  const int64_t n = x.sizes[0], c = x.sizes[1], taps = p.kh * p.kw;
  const T* xp = static_cast<const T*>(x.data());
  const T* wp = static_cast<const T*>(wt.data());
  const T* bp = b ? static_cast<const T*>(b->data()) : nullptr;
  T* yp = static_cast<T*>(y.data());
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(p.oh * p.ow * taps, 1));
  detail::parallel_for(n * c, grain, [&](int64_t b0, int64_t b1) {
    const PaddedInput<T> lay(p, scratch<int64_t, 0>(static_cast<size_t>(2 * p.kw)));
    T* pad = scratch<T, 0>(lay.size(p));
    const T** src = scratch<const T*, 0>(static_cast<size_t>(2 * taps));  // the taps at row 0, at row i
    for (int64_t plane = b0; plane < b1; ++plane) {
      const int64_t ch = plane % c;
      pad_input(p, lay, xp + plane * p.h * p.w, pad);
      lay.taps(p, pad, src);
      correlate_plane(yp + plane * p.oh * p.ow, p.oh, p.ow, src, lay.row_step(p), wp + ch * taps, taps,
                      bp ? bp[ch] : T(0), src + taps);
    }
  });
}

/// Adds, for G taps at once, sum over rows i and columns j of dy[i][j] * base[t][i * step + j]
/// into vacc[t] (lane-wise; columns up to the last whole vector) and tacc[t] (the rest), so
/// the partial sums stay in registers over the whole plane.
template <class T, int G>
void weight_grad_taps(const T* dy, int64_t oh, int64_t ow, const T* const* base, int64_t step, T* vacc, T* tacc) {
  constexpr int64_t W = kLanes<T>;
  const int64_t owv = ow / W * W;
  V<T> acc[G];
  for (int t = 0; t < G; ++t) acc[t] = V<T>(T(0));
  for (int64_t i = 0; i < oh; ++i) {
    const T* gr = dy + i * ow;
    const int64_t off = i * step;
    for (int64_t j = 0; j < owv; j += W) {
      const V<T> gv = V<T>::load_unaligned(gr + j);
      for (int t = 0; t < G; ++t) acc[t] = xsimd::fma(gv, V<T>::load_unaligned(base[t] + off + j), acc[t]);
    }
    for (int64_t j = owv; j < ow; ++j)
      for (int t = 0; t < G; ++t) tacc[t] += gr[j] * base[t][off + j];
  }
  for (int t = 0; t < G; ++t) (V<T>::load_unaligned(vacc + t * W) + acc[t]).store_unaligned(vacc + t * W);
}

constexpr int kTapGroup = 9;  // partial sums in registers, with the gradient and a load

/// weight_grad_taps for a group of `group` <= kTapGroup taps (G counted down to it).
template <class T, int G = kTapGroup>
void weight_grad_group(int64_t group, const T* dy, int64_t oh, int64_t ow, const T* const* base, int64_t step,
                       T* vacc, T* tacc) {
  if constexpr (G > 1) {
    if (group < G) return weight_grad_group<T, G - 1>(group, dy, oh, ow, base, step, vacc, tacc);
  }
  weight_grad_taps<T, G>(dy, oh, ow, base, step, vacc, tacc);
}

/// The input gradient of a plane at unit strides: dx[y][x] = sum over taps of the flipped
/// weight times the output gradient, zero-padded by (kernel - 1) * dilation on the top and
/// left, at row y + pt + a * dh and column x + pl + e * dw.
template <class T>
struct PaddedGrad {
  int64_t top, left, rows, row;
  explicit PaddedGrad(const Plane& p)
      : top((p.kh - 1) * p.dh), left((p.kw - 1) * p.dw), rows(std::max(top + p.oh, p.h + p.pt + top)),
        row(std::max(left + p.ow, p.w + p.pl + left) + kLanes<T>) {}
  size_t size() const { return static_cast<size_t>(rows * row); }
  void fill(const Plane& p, const T* gr, T* buf) const {
    for (int64_t r = 0; r < rows; ++r) {
      T* dst = buf + r * row;
      const int64_t i = r - top;
      if (i < 0 || i >= p.oh) {
        std::fill(dst, dst + row, T(0));
        continue;
      }
      for (int64_t c = 0; c < left; ++c) dst[c] = T(0);
      for (int64_t c = 0; c < p.ow; ++c) dst[left + c] = gr[i * p.ow + c];
      for (int64_t c = left + p.ow; c < row; ++c) dst[c] = T(0);
    }
  }
};

/// The input gradient of a plane at other strides: scattered into a padded plane, whose
/// interior is then copied out.
template <class T>
void input_grad_strided(const Plane& p, const T* gr, const T* wc, T* dpad, T* out) {
  std::fill(dpad, dpad + p.ph * p.pw, T(0));
  for (int64_t i = 0; i < p.oh; ++i) {
    const T* grow = gr + i * p.ow;
    for (int64_t a = 0; a < p.kh; ++a) {
      T* dst = dpad + (i * p.sh + a * p.dh) * p.pw;
      for (int64_t e = 0; e < p.kw; ++e) {
        const T wv = wc[a * p.kw + e];
        T* d = dst + e * p.dw;
        for (int64_t j = 0; j < p.ow; ++j) d[j * p.sw] += wv * grow[j];
      }
    }
  }
  for (int64_t r = 0; r < p.h; ++r)  // the interior (inside: ph >= h + pt, pw >= w + pl)
    for (int64_t col = 0; col < p.w; ++col) out[r * p.w + col] = dpad[(r + p.pt) * p.pw + p.pl + col];
}

template <class T>
void backward_typed(const ops::ConvGeometry& g, const TensorImpl& dy, const TensorImpl& x, const TensorImpl& wt,
                    TensorImpl* dx, TensorImpl* dwt, TensorImpl* db) {
  constexpr int64_t W = kLanes<T>;
  const Plane p(g, x);
  const PaddedGrad<T> glay(p);
  const bool unit = p.sh == 1 && p.sw == 1;
  const int64_t n = x.sizes[0], c = x.sizes[1], taps = p.kh * p.kw;
  const T* gp = static_cast<const T*>(dy.data());
  const T* xp = static_cast<const T*>(x.data());
  const T* wp = static_cast<const T*>(wt.data());
  T* dxp = dx ? static_cast<T*>(dx->data()) : nullptr;
  T* dwp = dwt ? static_cast<T*>(dwt->data()) : nullptr;
  T* dbp = db ? static_cast<T*>(db->data()) : nullptr;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n * p.oh * p.ow * taps, 1));
  detail::parallel_for(c, grain, [&](int64_t c0, int64_t c1) {
    const PaddedInput<T> lay(p, scratch<int64_t, 0>(static_cast<size_t>(2 * p.kw)));
    T* pad = scratch<T, 0>(lay.size(p));
    T* gpad = scratch<T, 1>(unit ? glay.size() : static_cast<size_t>(p.ph * p.pw));
    // Per tap: a vector of lane sums, a scalar sum of the columns past the last whole vector,
    // the flipped weight and a row pointer; then a row of bias partial sums.
    T* acc = scratch<T, 2>(static_cast<size_t>(taps * (W + 2) + p.ow));
    T *tail = acc + taps * W, *flipped = tail + taps, *bias_row = flipped + taps;
    const T** src = scratch<const T*, 0>(static_cast<size_t>(2 * taps));
    for (int64_t ch = c0; ch < c1; ++ch) {
      const T* wc = wp + ch * taps;
      for (int64_t t = 0; t < taps; ++t) flipped[t] = wc[taps - 1 - t];
      std::fill(acc, acc + taps * (W + 1), T(0));
      std::fill(bias_row, bias_row + p.ow, T(0));
      for (int64_t s = 0; s < n; ++s) {
        const int64_t plane = s * c + ch;
        const T* gr = gp + plane * p.oh * p.ow;
        if (dbp)
          for (int64_t i = 0; i < p.oh; ++i)
            for (int64_t j = 0; j < p.ow; ++j) bias_row[j] += gr[i * p.ow + j];
        if (dwp) {
          pad_input(p, lay, xp + plane * p.h * p.w, pad);
          lay.taps(p, pad, src);
          for (int64_t t = 0; t < taps; t += kTapGroup) {
            const int64_t group = std::min<int64_t>(kTapGroup, taps - t);
            weight_grad_group<T>(group, gr, p.oh, p.ow, src + t, lay.row_step(p), acc + t * W, tail + t);
          }
        }
        if (dxp) {
          T* out = dxp + plane * p.h * p.w;
          if (!unit) {
            input_grad_strided(p, gr, wc, gpad, out);
            continue;
          }
          glay.fill(p, gr, gpad);
          for (int64_t a = 0; a < p.kh; ++a)
            for (int64_t e = 0; e < p.kw; ++e) src[a * p.kw + e] = gpad + (p.pt + a * p.dh) * glay.row + p.pl + e * p.dw;
          correlate_plane(out, p.h, p.w, src, glay.row, flipped, taps, T(0), src + taps);
        }
      }
      if (dbp) {
        T sum = 0;
        for (int64_t j = 0; j < p.ow; ++j) sum += bias_row[j];
        dbp[ch] = sum;
      }
      if (dwp)
        for (int64_t t = 0; t < taps; ++t) dwp[ch * taps + t] = xsimd::hadd(V<T>::load_unaligned(acc + t * W)) + tail[t];
    }
  });
}

}  // namespace

void depthwise_conv(const ops::ConvGeometry& g, const TensorImpl& x, const TensorImpl& w, const TensorImpl* b,
                    TensorImpl& y) {
  if (x.dtype == DType::F32) forward_typed<float>(g, x, w, b, y);
  else forward_typed<double>(g, x, w, b, y);
}

void depthwise_conv_backward(const ops::ConvGeometry& g, const TensorImpl& dy, const TensorImpl& x,
                             const TensorImpl& w, TensorImpl* dx, TensorImpl* dw, TensorImpl* db) {
  if (x.dtype == DType::F32) backward_typed<float>(g, dy, x, w, dx, dw, db);
  else backward_typed<double>(g, dy, x, w, dx, dw, db);
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
