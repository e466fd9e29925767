// Direct 2-D convolution kernels (ops/direct_conv_ops.hpp; checks and threading in
// src/ops/direct_conv.cpp). Compiled once per instruction set, like the other kernels.
//
// A sample's input is first copied into a zero-padded buffer (one channel after another, rows
// padded_w() apart), so that output (i, j)'s tap (c, u, v) is at a fixed offset from the
// buffer's row i, column j: every tap is one unaligned vector load per vector of outputs, with
// no bounds tests. The forward keeps four output channels' accumulators in registers over all
// taps (one load feeds four FMAs) and adds the bias once, writing each output once; the weight
// gradient keeps one accumulator per tap in registers while it walks an output channel's
// gradient once.

#include "arch_kernels.hpp"
#include "row_sum.hpp"

#include <xsimd/xsimd.hpp>

#include <algorithm>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;
using ops::DirectConvGeometry;

template <class T>
using V = xsimd::batch<T>;

/// The most taps (channels x kernel elements) a direct convolution has; the op enforces it.
constexpr int64_t kMaxTaps = 32;

/// Offsets of every tap (c, u, v) in the padded buffer.
void tap_offsets(const DirectConvGeometry& g, int64_t* off) {
  const int64_t wp = g.padded_w(), plane = g.padded_h() * wp;
  int64_t t = 0;
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t u = 0; u < g.kh; ++u)
      for (int64_t v = 0; v < g.kw; ++v) off[t++] = c * plane + u * wp + v;
}

/// Sample x (C, H, W) into the zero-padded buffer p (kw extra zeros at the end).
template <class T>
void pad_sample(const DirectConvGeometry& g, const T* x, T* p) {
  const int64_t wp = g.padded_w(), plane = g.padded_h() * wp;
  std::fill(p, p + g.padded_sample() + g.kw, T(0));
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t r = 0; r < g.h; ++r) {
      const T* src = x + (c * g.h + r) * g.w;
      std::copy(src, src + g.w, p + c * plane + (r + g.pad_top) * wp + g.pad_left);
    }
}

/// Output channels [o0, o0 + ob) (ob <= 4) of one sample: y[k] = b[k] + sum_t wt[t][k] * tap t.
template <class T>
void forward_block(const DirectConvGeometry& g, const T* p, const int64_t* off, const T (*wt)[4], const T* bias,
                   int64_t ob, T* y) {
  constexpr int64_t W = V<T>::size;
  const int64_t taps = g.taps(), wp = g.padded_w(), out_plane = g.oh * g.ow;
  for (int64_t i = 0; i < g.oh; ++i) {
    const T* row = p + i * wp;
    T* out = y + i * g.ow;
    // Vectors of W outputs; a last partial vector is computed as the row's last W outputs,
    // overlapping the one before (the same values written twice). A row narrower than a
    // vector goes element by element.
    const int64_t vectors = g.ow >= W ? (g.ow + W - 1) / W : 0;
    for (int64_t q = 0; q < vectors; ++q) {
      const int64_t j = std::min(q * W, g.ow - W);
      V<T> a0(bias[0]), a1(bias[1]), a2(bias[2]), a3(bias[3]);
      for (int64_t t = 0; t < taps; ++t) {
        const V<T> s = V<T>::load_unaligned(row + off[t] + j);
        a0 = xsimd::fma(V<T>(wt[t][0]), s, a0);
        a1 = xsimd::fma(V<T>(wt[t][1]), s, a1);
        a2 = xsimd::fma(V<T>(wt[t][2]), s, a2);
        a3 = xsimd::fma(V<T>(wt[t][3]), s, a3);
      }
      const V<T> acc[4] = {a0, a1, a2, a3};
      for (int64_t k = 0; k < ob; ++k) acc[k].store_unaligned(out + k * out_plane + j);
    }
    for (int64_t j = vectors ? g.ow : 0; j < g.ow; ++j)
      for (int64_t k = 0; k < ob; ++k) {
        T a = bias[k];
        for (int64_t t = 0; t < taps; ++t) a += wt[t][k] * row[off[t] + j];
        out[k * out_plane + j] = a;
      }
  }
}

/// Taps per pass of the weight gradient: their accumulators stay in registers (a run-time
/// count kept them on the stack, 3x slower); 3 divides the 9 or 27 taps of 3x3 kernels over
/// 1 or 3 channels.
constexpr int64_t kTapGroup = 3;

/// dw[t] += sum over the plane of dy * tap t, for taps [t0, t0 + nt) (nt <= kTapGroup; the
/// group's missing taps read tap t0 and are dropped).
template <class T>
void weight_grad_taps(const DirectConvGeometry& g, const T* p, const int64_t* off, int64_t t0, int64_t nt,
                      const T* dy, T* dw) {
  constexpr int64_t W = V<T>::size;
  const int64_t wp = g.padded_w();
  int64_t at[kTapGroup];
  for (int64_t q = 0; q < kTapGroup; ++q) at[q] = off[t0 + (q < nt ? q : 0)];
  V<T> acc[kTapGroup];
  T tail[kTapGroup] = {};
  for (int64_t q = 0; q < kTapGroup; ++q) acc[q] = V<T>(T(0));
  for (int64_t i = 0; i < g.oh; ++i) {
    const T* row = p + i * wp;
    const T* d = dy + i * g.ow;
    int64_t j = 0;
    for (; j + W <= g.ow; j += W) {
      const V<T> dv = V<T>::load_unaligned(d + j);
      for (int64_t q = 0; q < kTapGroup; ++q) acc[q] = xsimd::fma(dv, V<T>::load_unaligned(row + at[q] + j), acc[q]);
    }
    for (; j < g.ow; ++j)
      for (int64_t q = 0; q < kTapGroup; ++q) tail[q] += d[j] * row[at[q] + j];
  }
  for (int64_t q = 0; q < nt; ++q) dw[t0 + q] += xsimd::hadd(acc[q]) + tail[q];
}

template <class T>
void forward(const DirectConvGeometry& g, int64_t n0, int64_t n1, const T* x, const T* w, const T* b, T* y, T* p) {
  int64_t off[kMaxTaps];
  tap_offsets(g, off);
  const int64_t taps = g.taps(), out_plane = g.oh * g.ow;
  for (int64_t n = n0; n < n1; ++n) {
    pad_sample(g, x + n * g.c * g.h * g.w, p);
    for (int64_t o0 = 0; o0 < g.o; o0 += 4) {
      const int64_t ob = std::min<int64_t>(4, g.o - o0);
      T wt[kMaxTaps][4] = {}, bias[4] = {};
      for (int64_t k = 0; k < ob; ++k) {
        for (int64_t t = 0; t < taps; ++t) wt[t][k] = w[(o0 + k) * taps + t];
        bias[k] = b ? b[o0 + k] : T(0);
      }
      forward_block(g, p, off, wt, bias, ob, y + (n * g.o + o0) * out_plane);
    }
  }
}

template <class T>
void backward(const DirectConvGeometry& g, int64_t n0, int64_t n1, const T* dy, const T* x, const T* w, T* dx, T* dw,
              T* db, T* p, T* dp) {
  int64_t off[kMaxTaps];
  tap_offsets(g, off);
  const int64_t taps = g.taps(), out_plane = g.oh * g.ow, wp = g.padded_w(), plane = g.padded_h() * wp;
  for (int64_t n = n0; n < n1; ++n) {
    const T* dys = dy + n * g.o * out_plane;
    if (dw) pad_sample(g, x + n * g.c * g.h * g.w, p);
    if (dx) std::fill(dp, dp + g.padded_sample() + g.kw, T(0));
    for (int64_t o = 0; o < g.o; ++o) {
      const T* d = dys + o * out_plane;
      if (db) db[o] += row_sum(d, out_plane);
      if (dw)
        for (int64_t t0 = 0; t0 < taps; t0 += kTapGroup)
          weight_grad_taps(g, p, off, t0, std::min(kTapGroup, taps - t0), d, dw + o * taps);
      if (dx)
        for (int64_t t = 0; t < taps; ++t) {  // the adjoint of the forward's gather: a scatter-add per tap
          const T wv = w[o * taps + t];
          for (int64_t i = 0; i < g.oh; ++i) {
            T* dst = dp + off[t] + i * wp;
            const T* src = d + i * g.ow;
            for (int64_t j = 0; j < g.ow; ++j) dst[j] += wv * src[j];
          }
        }
    }
    if (dx)
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t r = 0; r < g.h; ++r) {
          const T* src = dp + c * plane + (r + g.pad_top) * wp + g.pad_left;
          std::copy(src, src + g.w, dx + ((n * g.c + c) * g.h + r) * g.w);
        }
  }
}

}  // namespace

void direct_conv(const DirectConvGeometry& g, int64_t n0, int64_t n1, const TensorImpl& x, const TensorImpl& w,
                 const TensorImpl* b, TensorImpl& y, TensorImpl& scratch) {
  auto run = [&]<class T>(T*) {
    forward(g, n0, n1, static_cast<const T*>(x.data()), static_cast<const T*>(w.data()),
            b ? static_cast<const T*>(b->data()) : nullptr, static_cast<T*>(y.data()), static_cast<T*>(scratch.data()));
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

void direct_conv_backward(const DirectConvGeometry& g, int64_t n0, int64_t n1, const TensorImpl& dy,
                          const TensorImpl& x, const TensorImpl& w, TensorImpl* dx, TensorImpl* dw, TensorImpl* db,
                          TensorImpl& scratch) {
  auto run = [&]<class T>(T*) {
    auto ptr = [](TensorImpl* t) { return t ? static_cast<T*>(t->data()) : nullptr; };
    T* p = static_cast<T*>(scratch.data());
    backward(g, n0, n1, static_cast<const T*>(dy.data()), static_cast<const T*>(x.data()), static_cast<const T*>(w.data()),
             ptr(dx), ptr(dw), ptr(db), p, p + g.padded_sample() + g.kw);
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
