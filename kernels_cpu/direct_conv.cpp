// Direct 2-D convolution kernels (ops/direct_conv_ops.hpp; checks and threading in
// src/ops/direct_conv.cpp). Compiled once per instruction set, like the other kernels.
//
// A sample's input is first copied into a zero-padded buffer (one channel after another, rows
// padded_w() apart), so that output (i, j)'s tap (c, u, v) is at a fixed offset from the
// buffer's row i, column j: every tap is one unaligned vector load per vector of outputs, with
// no bounds tests. The forward keeps four output channels' accumulators in registers over all
// taps (one load feeds four FMAs) and adds the bias once, writing each output once; the weight
// gradient keeps a block of four output channels x three taps in registers while it walks
// those channels' gradients.

#include "arch_kernels.hpp"
#include "row_sum.hpp"

#include "simd.hpp"

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

/// The weight gradient's passes: kChannelGroup output channels x kTapGroup taps, their
/// accumulators in registers (12 + 3 tap vectors + 1 gradient vector: the 16 of AVX2). Each tap
/// vector loaded feeds kChannelGroup FMAs, as in the forward: one channel at a time (4 loads
/// per 3 FMAs) ran at ~23 GFLOP/s on cnn_small_step's first layer. 3 divides the 9 or 27 taps
/// of 3x3 kernels over 1 or 3 channels. (A run-time count kept accumulators on the stack, 3x
/// slower.)
constexpr int64_t kChannelGroup = 4;
constexpr int64_t kTapGroup = 3;

/// dw[k][t] += sum over the plane of dy[k] * tap t, for output channels k < ob (<=
/// kChannelGroup, planes `out_plane` apart from dy) and taps [t0, t0 + nt) (nt <= kTapGroup);
/// dw[k] is taps apart. A group's missing channels and taps repeat its first and are dropped.
template <class T>
void weight_grad_block(const DirectConvGeometry& g, const T* p, const int64_t* off, int64_t t0, int64_t nt,
                       const T* dy, int64_t ob, T* dw) {
  constexpr int64_t W = V<T>::size;
  const int64_t wp = g.padded_w(), out_plane = g.oh * g.ow, taps = g.taps();
  int64_t at[kTapGroup];
  for (int64_t q = 0; q < kTapGroup; ++q) at[q] = off[t0 + (q < nt ? q : 0)];
  const T* d[kChannelGroup];
  for (int64_t k = 0; k < kChannelGroup; ++k) d[k] = dy + (k < ob ? k : 0) * out_plane;
  V<T> acc[kChannelGroup][kTapGroup];
  T scalar[kChannelGroup][kTapGroup] = {};
  for (int64_t k = 0; k < kChannelGroup; ++k)
    for (int64_t q = 0; q < kTapGroup; ++q) acc[k][q] = V<T>(T(0));
  auto step = [&](const T* row, int64_t e, int64_t j, auto&& load) {
    V<T> tv[kTapGroup];
    for (int64_t q = 0; q < kTapGroup; ++q) tv[q] = load(row + at[q] + j);
    for (int64_t k = 0; k < kChannelGroup; ++k) {
      const V<T> dv = load(d[k] + e + j);
      for (int64_t q = 0; q < kTapGroup; ++q) acc[k][q] = xsimd::fma(dv, tv[q], acc[k][q]);
    }
  };
  // A row's last partial vector is its last W outputs with the lanes already counted zeroed,
  // in the gradient and in the taps (0 * an infinite input would be NaN).
  const int64_t rem = g.ow % W;
  alignas(64) T lane_index[W];
  for (int64_t l = 0; l < W; ++l) lane_index[l] = T(l);
  const auto keep = V<T>::load_aligned(lane_index) >= V<T>(T(W - rem));
  auto plain = [](const T* q) { return V<T>::load_unaligned(q); };
  auto masked = [&](const T* q) { return xsimd::select(keep, V<T>::load_unaligned(q), V<T>(T(0))); };
  for (int64_t i = 0; i < g.oh; ++i) {
    const T* row = p + i * wp;
    const int64_t e = i * g.ow;
    if (g.ow < W) {  // narrower than a vector: element by element
      for (int64_t j = 0; j < g.ow; ++j)
        for (int64_t k = 0; k < kChannelGroup; ++k)
          for (int64_t q = 0; q < kTapGroup; ++q) scalar[k][q] += d[k][e + j] * row[at[q] + j];
      continue;
    }
    for (int64_t j = 0; j + W <= g.ow; j += W) step(row, e, j, plain);
    if (rem) step(row, e, g.ow - W, masked);
  }
  for (int64_t k = 0; k < ob; ++k)
    for (int64_t q = 0; q < nt; ++q) dw[k * taps + t0 + q] += xsimd::hadd(acc[k][q]) + scalar[k][q];
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
    for (int64_t o0 = 0; o0 < g.o; o0 += kChannelGroup) {  // the bias sums while the block is in L1
      const int64_t ob = std::min(kChannelGroup, g.o - o0);
      if (dw)
        for (int64_t t0 = 0; t0 < taps; t0 += kTapGroup)
          weight_grad_block(g, p, off, t0, std::min(kTapGroup, taps - t0), dys + o0 * out_plane, ob, dw + o0 * taps);
      if (db)
        for (int64_t o = o0; o < o0 + ob; ++o) db[o] += row_sum(dys + o * out_plane, out_plane);
    }
    if (!dx) continue;
    for (int64_t o = 0; o < g.o; ++o) {
      const T* d = dys + o * out_plane;
      for (int64_t t = 0; t < taps; ++t) {  // the adjoint of the forward's gather: a scatter-add per tap
        const T wv = w[o * taps + t];
        for (int64_t i = 0; i < g.oh; ++i) {
          T* dst = dp + off[t] + i * wp;
          const T* src = d + i * g.ow;
          for (int64_t j = 0; j < g.ow; ++j) dst[j] += wv * src[j];
        }
      }
    }
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
