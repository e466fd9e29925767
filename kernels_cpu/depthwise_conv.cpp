// Depthwise 2-D convolution kernels (see include/ember/ops/depthwise_conv_ops.hpp; checks and
// outputs in src/ops/depthwise_conv.cpp). Compiled once per instruction set at -O3, like the
// other convolution kernels: the loops along an output row are left to the vectoriser.
//
// Each (sample, channel) plane is read through a zero-padded copy in a per-thread buffer, so
// the taps need no bounds tests: output row i, tap (kh, kw) reads padded row i * sh + kh * dh
// from column kw * dw, every sw-th element. The forward runs planes in parallel; the backward
// runs channels in parallel (each channel's weight and bias gradients are sums over its
// planes, made by one task in sample order, so they do not depend on the thread count).

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/conv_ops.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <vector>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;

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

/// A per-thread buffer of at least n elements (kept: a warm loop allocates nothing).
template <class T>
T* scratch(size_t n) {
  static thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

/// The zero-padded copy of one input plane.
template <class T>
void pad_plane(const Plane& p, const T* in, T* pad) {
  std::fill(pad, pad + p.ph * p.pw, T(0));
  for (int64_t r = 0; r < p.h && r + p.pt < p.ph; ++r) {
    const int64_t c0 = std::max<int64_t>(0, -p.pl), c1 = std::min(p.w, p.pw - p.pl);
    if (r + p.pt >= 0 && c1 > c0) std::copy(in + r * p.w + c0, in + r * p.w + c1, pad + (r + p.pt) * p.pw + p.pl + c0);
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
    T* pad = scratch<T>(static_cast<size_t>(p.ph * p.pw));
    for (int64_t plane = b0; plane < b1; ++plane) {
      const int64_t ch = plane % c;
      pad_plane(p, xp + plane * p.h * p.w, pad);
      const T* wc = wp + ch * taps;
      T* out = yp + plane * p.oh * p.ow;
      for (int64_t i = 0; i < p.oh; ++i) {
        T* row = out + i * p.ow;
        std::fill(row, row + p.ow, bp ? bp[ch] : T(0));
        for (int64_t a = 0; a < p.kh; ++a) {
          const T* src = pad + (i * p.sh + a * p.dh) * p.pw;
          for (int64_t e = 0; e < p.kw; ++e) {
            const T wv = wc[a * p.kw + e];
            const T* s = src + e * p.dw;
            if (p.sw == 1) {
              for (int64_t j = 0; j < p.ow; ++j) row[j] += wv * s[j];
            } else {
              for (int64_t j = 0; j < p.ow; ++j) row[j] += wv * s[j * p.sw];
            }
          }
        }
      }
    }
  });
}

template <class T>
void backward_typed(const ops::ConvGeometry& g, const TensorImpl& dy, const TensorImpl& x, const TensorImpl& wt,
                    TensorImpl* dx, TensorImpl* dwt, TensorImpl* db) {
  const Plane p(g, x);
  const int64_t n = x.sizes[0], c = x.sizes[1], taps = p.kh * p.kw;
  const T* gp = static_cast<const T*>(dy.data());
  const T* xp = static_cast<const T*>(x.data());
  const T* wp = static_cast<const T*>(wt.data());
  T* dxp = dx ? static_cast<T*>(dx->data()) : nullptr;
  T* dwp = dwt ? static_cast<T*>(dwt->data()) : nullptr;
  T* dbp = db ? static_cast<T*>(db->data()) : nullptr;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n * p.oh * p.ow * taps, 1));
  detail::parallel_for(c, grain, [&](int64_t c0, int64_t c1) {
    // One row of partial sums per tap and one for the bias.
    const size_t plane_pad = static_cast<size_t>(p.ph * p.pw), acc_size = static_cast<size_t>((taps + 1) * p.ow);
    // [0, plane_pad): x padded; then dx padded; then the partial sums.
    T* pad = scratch<T>(2 * plane_pad + acc_size);
    T* dpad = pad + plane_pad;
    T* acc = dpad + plane_pad;
    for (int64_t ch = c0; ch < c1; ++ch) {
      const T* wc = wp + ch * taps;
      // The weight and bias gradients accumulate lane-wise along output rows (vector loops; a
      // scalar sum would be one serial chain), then each row of partial sums is summed once.
      std::fill(acc, acc + acc_size, T(0));
      T* bias_row = acc + taps * p.ow;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t plane = s * c + ch;
        const T* gr = gp + plane * p.oh * p.ow;
        if (dbp)
          for (int64_t i = 0; i < p.oh; ++i)
            for (int64_t j = 0; j < p.ow; ++j) bias_row[j] += gr[i * p.ow + j];
        if (dwp) {
          pad_plane(p, xp + plane * p.h * p.w, pad);
          for (int64_t i = 0; i < p.oh; ++i) {
            const T* grow = gr + i * p.ow;
            for (int64_t a = 0; a < p.kh; ++a)
              for (int64_t e = 0; e < p.kw; ++e) {
                const T* src = pad + (i * p.sh + a * p.dh) * p.pw + e * p.dw;
                T* ar = acc + (a * p.kw + e) * p.ow;
                if (p.sw == 1) {
                  for (int64_t j = 0; j < p.ow; ++j) ar[j] += grow[j] * src[j];
                } else {
                  for (int64_t j = 0; j < p.ow; ++j) ar[j] += grow[j] * src[j * p.sw];
                }
              }
          }
        }
        if (dxp) {
          std::fill(dpad, dpad + plane_pad, T(0));
          for (int64_t i = 0; i < p.oh; ++i) {
            const T* grow = gr + i * p.ow;
            for (int64_t a = 0; a < p.kh; ++a) {
              T* dst = dpad + (i * p.sh + a * p.dh) * p.pw;
              for (int64_t e = 0; e < p.kw; ++e) {
                const T wv = wc[a * p.kw + e];
                T* d = dst + e * p.dw;
                if (p.sw == 1) {
                  for (int64_t j = 0; j < p.ow; ++j) d[j] += wv * grow[j];
                } else {
                  for (int64_t j = 0; j < p.ow; ++j) d[j * p.sw] += wv * grow[j];
                }
              }
            }
          }
          T* out = dxp + plane * p.h * p.w;  // the interior of the padded gradient (inside: ph >= h + pt)
          for (int64_t r = 0; r < p.h; ++r) std::copy(dpad + (r + p.pt) * p.pw + p.pl, dpad + (r + p.pt) * p.pw + p.pl + p.w, out + r * p.w);
        }
      }
      auto row_total = [&](const T* r) {
        T s = 0;
        for (int64_t j = 0; j < p.ow; ++j) s += r[j];
        return s;
      };
      if (dbp) dbp[ch] = row_total(bias_row);
      if (dwp)
        for (int64_t t = 0; t < taps; ++t) dwp[ch * taps + t] = row_total(acc + t * p.ow);
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
