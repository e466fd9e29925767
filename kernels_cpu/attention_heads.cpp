// Fused f32 attention (ops/attention_heads.hpp) for the AVX2 and AVX-512 builds: one task per
// (batch entry, head) pair runs that head's products straight through the packed GEMM's
// micro-kernels, with the head's softmax between them.
//
// Why: src/ops/attention.cpp's general path makes each of a batch entry's products a full
// GEMM call (plan, views, B packed into its buffer, threads considered). At the sizes attention
// has in small models (64 x 64 x 32 per head) the transformer benchmark's attention ran at ~55
// GFLOP/s forward and ~68 backward, against ~100 for its other products. Here k^T and v^T are
// packed once per head into an L1-sized buffer, q, v, dO read in place, and nothing else is set
// up: 5-8% faster at head dim 32, ~10% / ~27% (forward / backward) at 16, level at 64, where
// the 6 x 4 tiles already ran near peak (docs/benchmarks.md, "Nineteenth session").
//
// The arithmetic is the general path's, element for element: each product is the same fma
// chain over the same steps (one KC slice: every dim <= 512; two or more queries and keys, so
// that no product is a GEMV there), scaled once at the store, and
// the softmax and its derivative are the same kernels (Kernels<Cpu>), so the results are
// bit-identical to it (tests/nn/test_attention.cpp compares them) and independent of the
// thread count.

#include "gemm_packed.hpp"

#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/attention_heads.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <limits>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using namespace packed_gemm;
using detail::TensorImpl;
using TensorRef = detail::Ref<TensorImpl>;

/// Rows per tile: the 6-row micro-kernels read B in place (a row stride per step), which is
/// what lets k^T, v and dO be used where they lie; columns per tile up to kMaxNV vectors.
constexpr int MR = 6;
constexpr int kMaxNV = W >= 16 ? 4 : 2;
/// Every dim at most one KC slice of the GEMM, so that its sums are single fma chains here too.
constexpr int64_t kMaxDim = 512;

template <int NV, ALayout kA>
void tile(int64_t steps, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t nr,
          float alpha) {
  micro_kernel<MR, NV, kA>(steps, a, lda, b, ldb, c, ldc, MR, nr, alpha, 0.f, nullptr);
}
template <int NV>
void tile_packed(int64_t steps, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t mr,
                 int64_t nr, float alpha) {
  micro_kernel<MR, NV, ALayout::Packed>(steps, a, 0, b, ldb, c, ldc, mr, nr, alpha, 0.f, nullptr);
}

/// Per-thread scratch: the transposed k or v, a packed B, and the edge panel.
struct Scratch {
  Buffer transposed, panel, edge;
};
Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}

#if defined(__AVX512F__)
/// product() for C at most two vectors wide (a head dim of 16 or 32): 12-row tiles, whose 24
/// accumulators keep both FMA units busy where 6 x 2 (12) left them half idle on the FMA
/// latency (6 x 2 ran at ~55% of the 6 x 4 tiles' rate on 64 x 32 x 64 head products). The
/// 12-row kernels read B packed, so B (steps x cols) is copied first: 8 KiB per product.
template <ALayout kA>
void product_narrow(int64_t rows, int64_t cols, int64_t steps, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float* c, int64_t ldc, float alpha) {
  constexpr int TR = 12;
  const int64_t nv = (cols + W - 1) / W, nr = nv * W;
  Scratch& sc = scratch();
  float* bp = reserve(sc.panel, steps * nr);
  float* edge = reserve(sc.edge, TR * steps);
  if (cols == nr) {  // whole vectors (a call to memmove per 128-byte row cost ~10% here)
    for (int64_t p = 0; p < steps; ++p)
      for (int64_t j = 0; j < nr; j += W) V::load_unaligned(b + p * ldb + j).store_aligned(bp + p * nr + j);
  } else {
    for (int64_t p = 0; p < steps; ++p)
      for (int64_t j = 0; j < nr; ++j) bp[p * nr + j] = j < cols ? b[p * ldb + j] : 0.f;
  }
  for (int64_t i = 0; i < rows; i += TR) {
    const int64_t mr = std::min<int64_t>(TR, rows - i);
    const float* ai = kA == ALayout::Rows ? a + i * lda : a + i;
    float* ci = c + i * ldc;
    if (mr < TR) {
      for (int64_t p = 0; p < steps; ++p)
        for (int64_t r = 0; r < TR; ++r)
          edge[p * TR + r] = r < mr ? (kA == ALayout::Rows ? ai[r * lda + p] : ai[p * lda + r]) : 0.f;
      if (nv == 1) micro_kernel<TR, 1, ALayout::Packed>(steps, edge, 0, bp, nr, ci, ldc, mr, cols, alpha, 0.f, nullptr);
      else micro_kernel<TR, 2, ALayout::Packed>(steps, edge, 0, bp, nr, ci, ldc, mr, cols, alpha, 0.f, nullptr);
    } else if (nv == 1) {
      micro_kernel<TR, 1, kA>(steps, ai, lda, bp, nr, ci, ldc, TR, cols, alpha, 0.f, nullptr);
    } else {
      micro_kernel<TR, 2, kA>(steps, ai, lda, bp, nr, ci, ldc, TR, cols, alpha, 0.f, nullptr);
    }
  }
}
#endif

/// C (rows x cols, row stride ldc) = alpha * A @ B. A (rows x steps) is read in layout kA (Rows:
/// element (i, p) at a[i * lda + p]; Steps: at a[p * lda + i]); a last, partial row panel is
/// packed with zero rows, as the GEMM does. B's step p is at
/// b + p * ldb and must be readable in whole vectors up to cols rounded up to W.
template <ALayout kA>
void product(int64_t rows, int64_t cols, int64_t steps, const float* a, int64_t lda, const float* b, int64_t ldb,
             float* c, int64_t ldc, float alpha) {
#if defined(__AVX512F__)
  if (cols <= 2 * W) return product_narrow<kA>(rows, cols, steps, a, lda, b, ldb, c, ldc, alpha);
#endif
  float* edge = reserve(scratch().edge, MR * steps);
  for (int64_t i = 0; i < rows; i += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - i);
    const float* ai = kA == ALayout::Rows ? a + i * lda : a + i;
    if (mr < MR) {
      for (int64_t p = 0; p < steps; ++p)
        for (int64_t r = 0; r < MR; ++r)
          edge[p * MR + r] = r < mr ? (kA == ALayout::Rows ? ai[r * lda + p] : ai[p * lda + r]) : 0.f;
    }
    for (int64_t j = 0; j < cols; j += kMaxNV * W) {
      const int64_t nr = std::min<int64_t>(kMaxNV * W, cols - j);
      const int64_t nv = (nr + W - 1) / W;
      float* cij = c + i * ldc + j;
      if (mr < MR) {
        switch (nv) {
          case 1: tile_packed<1>(steps, edge, b + j, ldb, cij, ldc, mr, nr, alpha); break;
          case 2: tile_packed<2>(steps, edge, b + j, ldb, cij, ldc, mr, nr, alpha); break;
#if defined(__AVX512F__)
          case 3: tile_packed<3>(steps, edge, b + j, ldb, cij, ldc, mr, nr, alpha); break;
          case 4: tile_packed<4>(steps, edge, b + j, ldb, cij, ldc, mr, nr, alpha); break;
#endif
        }
      } else {
        switch (nv) {
          case 1: tile<1, kA>(steps, ai, lda, b + j, ldb, cij, ldc, nr, alpha); break;
          case 2: tile<2, kA>(steps, ai, lda, b + j, ldb, cij, ldc, nr, alpha); break;
#if defined(__AVX512F__)
          case 3: tile<3, kA>(steps, ai, lda, b + j, ldb, cij, ldc, nr, alpha); break;
          case 4: tile<4, kA>(steps, ai, lda, b + j, ldb, cij, ldc, nr, alpha); break;
#endif
        }
      }
    }
  }
}

/// out (cols x ld, first `rows` columns used) = x^T for x (rows x cols, row stride sx), columns
/// rows .. ld zero: k^T or v^T as B panels whose steps are the head dim.
void transpose_into(const float* x, int64_t sx, int64_t rows, int64_t cols, float* out, int64_t ld) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    const int64_t done = transpose_rows(x + r * sx, sx, cols, out + r, ld);  // cols % 8 == 0: all
    for (int64_t c = done; c < cols; ++c)
      for (int64_t q = 0; q < 8; ++q) out[c * ld + r + q] = x[(r + q) * sx + c];
  }
  for (; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * ld + r] = x[r * sx + c];
  for (int64_t c = 0; c < cols; ++c) std::fill(out + c * ld + rows, out + (c + 1) * ld, 0.f);
}

/// The (L, S) probabilities of pair (b, h), as a view of the probs tensor.
TensorRef probs_view(const ops::AttentionHeads& a, int64_t b, int64_t h) {
  const int64_t sizes[2] = {a.l, a.s}, strides[2] = {a.s, 1};
  return detail::make_view(a.probs->storage, DType::F32, sizes, strides,
                           a.probs->offset + (b * a.heads + h) * a.l * a.s);
}

void head_forward(const ops::AttentionHeads& a, int64_t b, int64_t h) {
  Scratch& sc = scratch();
  const int64_t l = a.l, s = a.s, sp = (s + W - 1) / W * W;
  float* kt = reserve(sc.transposed, a.d * sp);
  TensorRef p = probs_view(a, b, h);
  float* pp = static_cast<float*>(p->data());
  transpose_into(a.k.at(b, h), a.k.sr, s, a.d, kt, sp);
  product<ALayout::Rows>(l, s, a.d, a.q.at(b, h), a.q.sr, kt, sp, pp, s, a.scale);
  if (a.causal)
    for (int64_t i = 0; i < l; ++i) std::fill(pp + i * s + std::min(i + 1, s), pp + (i + 1) * s, -std::numeric_limits<float>::infinity());
  detail::Kernels<Cpu>::softmax(*p, *p, 1, false);
  product<ALayout::Rows>(l, a.dv, s, pp, s, a.v.at(b, h), a.v.sr, a.out.at(b, h), a.out.sr, 1.f);
}

void head_backward(const ops::AttentionHeads& a, int64_t b, int64_t h) {
  Scratch& sc = scratch();
  const int64_t l = a.l, s = a.s, sp = (s + W - 1) / W * W;
  TensorRef p = probs_view(a, b, h);
  const float* pp = static_cast<const float*>(p->data());
  const float* dout = a.dout.at(b, h);
  if (a.dv_out.p)  // dV = P^T dO
    product<ALayout::Steps>(s, a.dv, l, pp, s, dout, a.dout.sr, a.dv_out.at(b, h), a.dv_out.sr, 1.f);
  if (!a.dq.p && !a.dk.p) return;
  // dS = P * (dP - rowsum(dP * P)), dP = dO V^T, written over dP.
  float* vt = reserve(sc.transposed, a.dv * sp);
  transpose_into(a.v.at(b, h), a.v.sr, s, a.dv, vt, sp);
  const int64_t ls[2] = {l, s};
  TensorRef ds = detail::make_tensor(ls, DType::F32, Device::cpu(), "scaled_dot_product_attention_backward");
  float* dsp = static_cast<float*>(ds->data());
  product<ALayout::Rows>(l, s, a.dv, dout, a.dout.sr, vt, sp, dsp, s, 1.f);
  detail::Kernels<Cpu>::softmax_backward(*ds, *ds, *p, 1, false);
  if (a.dq.p)  // dQ = scale * dS K
    product<ALayout::Rows>(l, a.d, s, dsp, s, a.k.at(b, h), a.k.sr, a.dq.at(b, h), a.dq.sr, a.scale);
  if (a.dk.p)  // dK = scale * dS^T Q
    product<ALayout::Steps>(s, a.d, l, dsp, s, a.q.at(b, h), a.q.sr, a.dk.at(b, h), a.dk.sr, a.scale);
}

/// Shapes the general path also runs as packed products: with one query or one key, some of
/// its products have one row and go to the GEMV kernels, whose sums are ordered differently.
bool supported(const ops::AttentionHeads& a) {
  return a.d % W == 0 && a.dv % W == 0 && a.l >= 2 && a.s >= 2 && a.d >= 1 && a.dv >= 1 && a.l <= kMaxDim &&
         a.s <= kMaxDim && a.d <= kMaxDim && a.dv <= kMaxDim;
}

template <class F>
void for_each_head(const ops::AttentionHeads& a, F&& f) {
  ember::detail::parallel_for(a.batch * a.heads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) f(a, t / a.heads, t % a.heads);
  });
}

}  // namespace

bool attention_heads(const ops::AttentionHeads& a) {
  if (!supported(a)) return false;
  for_each_head(a, head_forward);
  return true;
}

bool attention_heads_backward(const ops::AttentionHeads& a) {
  if (!supported(a)) return false;
  for_each_head(a, head_backward);
  return true;
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
