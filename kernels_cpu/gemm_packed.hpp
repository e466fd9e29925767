#pragma once
// Ember's own f32 GEMM for the AVX2 and AVX-512 builds: C = alpha * A @ B + beta * C with C
// row-major and A, B of any strides. Included by gemm.cpp inside its per-ISA namespace.
//
// The structure is the usual one of packed GEMMs (Goto's algorithm, as in BLIS and OpenBLAS):
// B is copied into panels of NR columns laid out in the order the micro-kernel reads them, and
// the micro-kernel keeps an MR x NR tile of C in registers for a whole KC-long slice of the
// inner dimension. A is read in place when its layout allows (row-major, or transposed with a
// step stride that spreads over the L1 sets) and otherwise packed once per call into MR-row
// panels shared by all threads. Loop order (outer to inner):
//   task (rows x columns of C) -> KC slice (the task packs its KC x NC block of B, L2-sized)
//   -> MR panel of A (stays in L1) -> NR panel of B (streams from L2) -> micro-kernel.
// Why not Eigen's product (still used for f64 and the baseline build): measured in
// docs/benchmarks.md, Eigen's f32 kernels lost 10-25% on the shapes of small models' training
// steps (few output rows, long inner dimensions, transposed operands, batches of small
// products), and its 2048-square product ran ~12% below OpenBLAS.

#include <ember/core/error.hpp>
#include <ember/runtime/threading.hpp>

#include "simd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

// Inside the per-ISA namespace: each build's copy is its own symbol (Note [One definition per
// instruction set] in kernels_cpu/meson.build).
namespace ember::cpu::EMBER_CPU_ARCH::packed_gemm {

using V = xsimd::batch<float>;
constexpr int64_t W = static_cast<int64_t>(V::size);

/// Floats of B per packed block (1 MiB, within L2); its width NC is this over KC.
constexpr int64_t kPackedBFloats = int64_t(1) << 18;

/// Inner-dimension slice KC: an A panel (MR x KC) stays in L1 while B panels stream past it,
/// and C is read and written once per slice. Inner dimensions up to 512 are one slice; longer
/// ones are cut into equal slices of at most ~512 (multiples of 8 for the 8 x 8 packing).
/// Measured against 256 on 1024^2 and 2048^2: 5-8% faster (fewer passes over C).
inline int64_t slice_length(int64_t k) {
  constexpr int64_t kMaxSlice = 512;
  if (k <= kMaxSlice) return k;
  const int64_t slices = (k + kMaxSlice - 1) / kMaxSlice;
  return ((k + slices - 1) / slices + 7) / 8 * 8;
}
/// Packed A is kept whole for up to this many floats (8 MiB); taller A goes in row chunks.
constexpr int64_t kPackedAFloats = int64_t(2) << 20;

/// An operand: element (i, j) at p[i * sr + j * sc].
struct Operand {
  const float* p;
  int64_t sr, sc;
};

/// A grow-only, 64-byte-aligned scratch buffer, reused across calls so that a warmed-up loop
/// allocates nothing. (Not xsimd::aligned_allocator: it throws, and Ember also builds with
/// -fno-exceptions.)
struct Buffer {
  float* data = nullptr;
  int64_t capacity = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(data); }
};

inline float* reserve(Buffer& b, int64_t n) {
  if (b.capacity < n) {
    std::free(b.data);
    const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
    b.data = static_cast<float*>(std::aligned_alloc(64, bytes));
    b.capacity = b.data ? n : 0;
    EMBER_CHECK(b.data, "[matmul] could not allocate {} bytes of GEMM packing buffer", bytes);
  }
  return b.data;
}

/// C tile (mr x nr valid of MR x NR) = alpha * acc + beta * C; C is not read when beta is 0
/// (BLAS semantics: it may hold garbage or NaN then). With `row` (a Linear's bias, from the
/// tile's first column), C's prior value is taken to be that row in every row of the tile, and
/// C is not read: the same arithmetic as filling C with the bias first, without that pass over
/// C (a Linear forward 5-10% faster on the transformer benchmark's shapes). With `relu`, the
/// stored value is ReLU's of it (the last KC slice only), as the ReLU kernel computes it: NaN
/// and -0 pass, negatives become +0 (nn::functional::linear_relu).
template <int MR, int NV>
inline void store_tile(V (&acc)[MR][NV], float* c, int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta,
                       const float* row, bool relu = false) {
  const V va(alpha);
  if (mr == MR && nr == NV * W) {
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NV; ++j) {
        float* cp = c + i * ldc + j * W;
        V r = acc[i][j] * va;
        if (beta != 0.f) r = xsimd::fma(V(beta), V::load_unaligned(row ? row + j * W : cp), r);
        if (relu) r = xsimd::select(r < V(0.f), V(0.f), r);
        r.store_unaligned(cp);
      }
    return;
  }
  alignas(64) float tmp[MR][NV * W];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j].store_aligned(&tmp[i][j * W]);
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j) {
      float& y = c[i * ldc + j];
      // One fma, as full tiles round.
      const float v = beta == 0.f ? alpha * tmp[i][j] : std::fma(beta, row ? row[j] : y, alpha * tmp[i][j]);
      y = relu && v < 0.f ? 0.f : v;
    }
}

/// The micro-kernel: an MR x (NV vectors) tile of C over kc steps of A (MR floats per step)
/// and packed B (NV vectors per step). MR * NV accumulators plus NV loaded vectors fit the
/// register file (AVX-512: 6 x 4, 12 x 2 or 8 x 2 of 32 registers; AVX2: 6 x 2 of 16).
/// A is packed (step p at ap + p * MR), or read in place: from a row-major A (Rows: row i at
/// ap + i * lda; the broadcasts read MR rows as MR sequential streams, whose KC-long segments
/// stay in L1 across the B panels just as a packed panel would), or from a transposed A
/// (Steps: step p at ap + p * lda, the packed layout with a longer stride).
/// B's step p is at bp + p * ldb: packed (ldb = NV * W), or, for the 6-row tiles, a row-major
/// B read in place (see gemm's b_in_place). Its loads are unaligned ones, as fast as aligned
/// ones on aligned data. (Separate in-place instantiations of every kernel cost 44 KiB of the
/// static footprint; a run-time stride in the 12-row kernels, short of registers for their 12
/// row pointers, made them ~7% slower.)
enum class ALayout { Packed, Rows, Steps };

template <int MR, int NV, ALayout kA>
void micro_kernel(int64_t kc, const float* __restrict ap, int64_t lda, const float* __restrict bp, int64_t ldb,
                  float* c, int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta, const float* row,
                  bool relu = false) {
  V acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j] = V(0.f);
  for (int64_t p = 0; p < kc; ++p) {
    V b[NV];
    for (int j = 0; j < NV; ++j) b[j] = V::load_unaligned(bp + j * W);
    for (int i = 0; i < MR; ++i) {
      const V a(kA == ALayout::Rows ? ap[i * lda + p] : kA == ALayout::Steps ? ap[p * lda + i] : ap[p * MR + i]);
      for (int j = 0; j < NV; ++j) acc[i][j] = xsimd::fma(a, b[j], acc[i][j]);
    }
    bp += MR == 6 ? ldb : NV * W;
  }
  store_tile<MR, NV>(acc, c, ldc, mr, nr, alpha, beta, row, relu);
}

/// Transposes an 8 x 8 block held in eight 256-bit rows (AVX, present in both builds that use
/// this GEMM): packing a B with contiguous columns (a Linear's weight) is a transpose, and doing
/// it 8 x 8 in registers is ~2x faster than element by element (measured when row-major A was
/// still packed this way: element by element cost ~20% of a 1024x128x384 product).
inline void transpose8x8(__m256 (&r)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20), r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20), r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31), r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31), r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/// Stores the first `count` (< 8) lanes of v. AVX-512's masked store is an ordinary store;
/// AVX2's vmaskmovps is several times slower, but only the packing of a transposed A uses it.
inline void store_first(float* p, __m256 v, int64_t count) {
#if defined(__AVX512VL__)
  _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << count) - 1), v);
#else
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  _mm256_maskstore_ps(p, mask, v);
#endif
}

/// Loads the first `count` (< 8) lanes from p, zero in the rest; never reads past them.
inline __m256 load_first(const float* p, int64_t count) {
#if defined(__AVX512VL__)
  return _mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << count) - 1), p);
#else
  return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
#endif
}

/// For p in [0, 8 * (kc / 8)): out[p * ld + q] = src[q * stride + p] for q < 8: eight
/// contiguous source rows written interleaved, 8 x 8 blocks at a time. Returns the number of p
/// done (the caller finishes the rest).
inline int64_t transpose_rows(const float* src, int64_t stride, int64_t kc, float* out, int64_t ld) {
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    __m256 r[8];
    for (int64_t q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(src + q * stride + p);
    transpose8x8(r);
    for (int64_t q = 0; q < 8; ++q) _mm256_storeu_ps(out + (p + q) * ld, r[q]);
  }
  return p;
}

/// Packs rows [i0, i0 + rows) x inner [p0, p0 + kc) of A as out[p * MR + i], zero-padding
/// rows to MR.
template <int MR>
void pack_a_panel(const Operand& a, int64_t i0, int64_t rows, int64_t p0, int64_t kc, float* out) {
  const float* base = a.p + i0 * a.sr + p0 * a.sc;
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = base + i * a.sr;
    if (a.sc == 1)
      for (int64_t p = 0; p < kc; ++p) out[p * MR + i] = src[p];
    else
      for (int64_t p = 0; p < kc; ++p) out[p * MR + i] = src[p * a.sc];
  }
  for (int64_t i = rows; i < MR; ++i)
    for (int64_t p = 0; p < kc; ++p) out[p * MR + i] = 0.f;
}

/// Packs `count` consecutive panels (rows [i0, i0 + rows), panel q at out + q * MR * kc).
/// A transposed A (rows contiguous) is packed a step of the inner dimension at a time across
/// all the panels: its steps are a row stride apart, often a multiple of 2 KiB, so a panel at a
/// time would read each cache line once per panel through a handful of L1 sets (~20% of a
/// 512x128x1024 product); across panels each line is read once.
template <int MR>
void pack_a_panels(const Operand& a, int64_t i0, int64_t rows, int64_t p0, int64_t kc, float* out, int64_t count) {
  if (a.sr != 1 || a.sc == 1) {
    for (int64_t q = 0; q < count; ++q)
      pack_a_panel<MR>(a, i0 + q * MR, std::min<int64_t>(MR, rows - q * MR), p0, kc, out + q * MR * kc);
    return;
  }
  const float* base = a.p + i0 + p0 * a.sc;
  for (int64_t p = 0; p < kc; ++p) {
    const float* src = base + p * a.sc;
    for (int64_t q = 0; q < count; ++q) {
      float* dst = out + q * MR * kc + p * MR;
      const int64_t r = std::min<int64_t>(MR, rows - q * MR);
      for (int64_t i = 0; i < MR; i += 8) {
        const int64_t valid = std::clamp<int64_t>(r - i, 0, 8);
        const __m256 v = valid == 8 ? _mm256_loadu_ps(src + q * MR + i) : load_first(src + q * MR + i, valid);
        if (i + 8 <= MR) _mm256_storeu_ps(dst + i, v);
        else store_first(dst + i, v, MR - i);
      }
    }
  }
}

/// Packs inner [p0, p0 + kc) x columns [j0, j0 + cols) of B as out[p * NR + j], zero-padding
/// columns to NR.
template <int NR>
void pack_b_panel(const Operand& b, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float* out) {
  const float* base = b.p + p0 * b.sr + j0 * b.sc;
  if (cols == NR && b.sc == 1) {  // row-major B: vector copies
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t j = 0; j < NR; j += W) V::load_unaligned(base + p * b.sr + j).store_aligned(out + p * NR + j);
    return;
  }
  // Transposed B (a Linear's weight, or a convolution's columns in its weight gradient) has
  // contiguous columns. Reading all NR columns at once would be NR concurrent streams (more
  // than the prefetchers follow, and at power-of-two-ish strides a few cache sets), and one
  // column at a time would touch every line of the 64 KiB panel per column; so 16 columns
  // at a time, each step writing one line of the panel.
  constexpr int64_t kGroup = 16;
  for (int64_t j0g = 0; j0g < cols; j0g += kGroup) {
    const int64_t g = std::min(kGroup, cols - j0g);
    const float* src = base + j0g * b.sc;
    if (g == kGroup && b.sr == 1) {
      int64_t done = 0;
      for (int64_t j = 0; j < kGroup; j += 8) done = transpose_rows(src + j * b.sc, b.sc, kc, out + j0g + j, NR);
      for (int64_t p = done; p < kc; ++p)
        for (int64_t j = 0; j < kGroup; ++j) out[p * NR + j0g + j] = src[j * b.sc + p];
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = 0; j < g; ++j) out[p * NR + j0g + j] = src[j * b.sc + p * b.sr];
    }
  }
  for (int64_t j = cols; j < NR; ++j)
    for (int64_t p = 0; p < kc; ++p) out[p * NR + j] = 0.f;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// C[m x n] (row stride ldc) = alpha * A @ B + beta * C, with tile shape MR x NV vectors, C
/// taken to hold `row` in every row when it is given (store_tile). `threads` > 1 splits the
/// product into tasks over Ember's pool.
template <int MR, int NV>
void gemm(int64_t m, int64_t n, int64_t k, Operand a, Operand b, float* c, int64_t ldc, float alpha, float beta,
          int threads, const float* row, bool relu = false) {
  constexpr int64_t NR = NV * W;
  const int64_t KC = slice_length(k), kblocks = ceil_div(k, KC);
  const int64_t NC = std::max<int64_t>(NR, kPackedBFloats / KC / NR * NR);
  // Packed A of a row chunk: for each KC slice, its panels one after another; slice kb starts
  // at kb * KC * (panels * MR) because every slice before the last is KC long.
  // A row-major A is read in place (ALayout::Rows) except for a last, partial panel,
  // which each task packs with zero rows. Packing a row-major A cost ~8% of the transformer
  // benchmark's step, where C has only 128 columns to spread it over.
  // A transposed A (rows contiguous: each step's MR values together) is read in place too,
  // unless its step stride is a multiple of 512 bytes: then the KC steps of a panel fall into a
  // few L1 sets and are re-fetched from L2 for every B panel (measured: 10% slower on
  // 128x1024 @ 1024x512 with a 2 KiB stride; in place wins at 3136 bytes, the MNIST weight
  // gradient, mostly by dropping the packing pass that the threads would wait on).
  // With such a stride, each panel is packed right before its use instead (into the L1-sized
  // edge buffer, from lines still in L2 for the next panels): a separate packing pass over
  // all of A wrote and re-read the whole packed copy through memory (the weight gradients of
  // the transformer benchmark, 512x128x1024 with A transposed: 139 -> 143 GFLOP/s standalone,
  // its training step ~3% faster at one thread).
  const bool steps_direct = a.sr == 1 && a.sc != 1 && a.sc % 128 != 0;
  const bool steps_per_panel = a.sr == 1 && a.sc != 1 && !steps_direct;
  const bool direct = a.sc == 1 || steps_direct || steps_per_panel;
  // A row-major B is read in place by the micro-kernels, without the packing pass, when
  //  - its inner dimension is short (the Winograd products: 32 or 64 steps over a chunk's
  //    tiles): a panel of it (<= 64 rows of NR floats, <= 16 KiB) stays in L1 across the row
  //    panels just as a packed one does, and the packing pass (~8% of those products) is gone;
  //  - or C has few rows (<= 8 panels: a Linear's input gradient at batch 32): the packed copy
  //    would be read only that many times, and a panel longer than L1 streams from L2 either
  //    way. 16-48 rows x 128-1024 inner x 64-512 columns: 1.15-1.6x faster (the robotics MLP's
  //    32 x 256 @ 256 x 256: 49 -> 42 us). Not when a row of B is a page or longer: a
  //    panel's rows then sit in as many pages, or in one L1 set (48 x 4096 @ 4096 x 4096 ran
  //    3x slower); and only in the AVX-512 build, whose 64-column panels read 4 lines per
  //    row: the AVX2 build's 16-column panels (one line per row) ran 1.3-2.5x slower in place.
  // Partial panels are still packed (the kernels read whole vectors). Only with A read in place
  // too: a packed A is the path for large products, where packing is cheap relative to the
  // arithmetic.
  constexpr int64_t kFewRows = 48, kPageFloats = 1024;
  const bool b_in_place = MR == 6 && b.sc == 1 &&
                          (k <= 64 || (m <= kFewRows && b.sr < kPageFloats && NV * W >= 64)) && direct &&
                          !steps_per_panel;
  const int64_t chunk_panels =
      direct ? ceil_div(m, MR) : std::max<int64_t>(1, kPackedAFloats / (MR * std::max<int64_t>(k, 1)));
  static thread_local Buffer a_buffer;
  for (int64_t r0 = 0; r0 < m; r0 += chunk_panels * MR) {
    const int64_t rows = std::min(m - r0, chunk_panels * MR);
    const int64_t panels = ceil_div(rows, MR);
    float* ap = direct ? nullptr : reserve(a_buffer, panels * MR * k);
    auto a_panel = [&](int64_t kb, int64_t panel) {
      const int64_t kc = std::min(KC, k - kb * KC);
      return ap + kb * KC * panels * MR + panel * MR * kc;
    };
    // Packing tasks: one KC slice of up to 8 panels each.
    constexpr int64_t kGroup = 8;
    const int64_t groups = ceil_div(panels, kGroup);
    auto pack_a = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t kb = t / groups, panel = t % groups * kGroup;
        pack_a_panels<MR>(a, r0 + panel * MR, rows - panel * MR, kb * KC, std::min(KC, k - kb * KC),
                          a_panel(kb, panel), std::min(kGroup, panels - panel));
      }
    };
    // Tasks: column blocks of at most NC, narrowed so that every thread gets one; when C is
    // too narrow for that, row blocks too (each packs its own copy of its B block).
    // A read in place that is at least twice as tall as C is wide is split by rows instead:
    // each thread then reads only its share of A, and packs all of the smaller B. Split by
    // columns, every thread read all of A, which in a training step is typically a weight the
    // optimiser has just written, half of it from the other core's cache (a batch-128 Linear,
    // computed as the transposed product W @ X^T: 512 rows of A, 128 columns of C). The MNIST
    // MLP's step at two threads: ~13% faster; its forward Linears had scaled 1.2-1.4x in the
    // step against 1.7-1.8x standalone.
    // A transposed A packed panel by panel (steps_per_panel) is split by rows too unless C is
    // more than twice as wide as tall: split by columns, every thread packed all of A, a
    // gather across its 512-float rows, where split by rows each packs half of A and all of
    // B, read along its rows. The MNIST weight gradients at two threads (Zen 4): 512 x 128 @
    // 128 x 784 581 -> 508 us (1.71x -> 1.93x of one thread), 512 x 128 @ 128 x 512 379 -> 325
    // us; the MNIST step 442-446 -> 456-461 steps/s, the robotics step 5992-6076 -> 6345-6422.
    // Only while B fits in fewer blocks than there are threads: with a block or more per
    // thread, split by columns each thread packs A once per block of its own, as it would by
    // rows, and only its share of B. And only with two panels or more per thread, as 12-row
    // panels left threads idle (11 panels on 8 threads: 2 per task, 6 threads busy).
    // Column blocks are as even as whole panels allow, and on several threads a multiple of
    // the thread count: 784 columns in panels of 64 went 448 + 336 at two threads (seven
    // panels and the rest), and a product 1100 wide in blocks of at most 512 went 512 + 512
    // to one thread, 76 to the other. The blocks do not change any element's sum.
    const int64_t col_panels = ceil_div(n, NR);
    int64_t col_tasks = ceil_div(n, NC), row_tasks = 1;
    const bool split_rows =
        direct && panels >= threads &&
        (steps_per_panel ? 2 * rows >= n && col_tasks < threads && panels >= 2 * threads : rows >= 2 * n);
    if (threads > 1 && split_rows) {
      row_tasks = threads;
    } else if (threads > 1) {
      col_tasks = std::min(col_panels, ceil_div(col_tasks, threads) * threads);
      if (col_tasks < threads) row_tasks = std::min(panels, ceil_div(threads, col_tasks));
    }
    // Block c starts at the panel edge nearest c * n / col_tasks (at least c panels in, so
    // that no block is empty).
    auto col_start = [&](int64_t c) {
      if (c >= col_tasks) return n;
      return std::min(n, std::max(c * NR, (c * n / col_tasks + NR / 2) / NR * NR));
    };
    int64_t width = 0;  // the widest block
    for (int64_t c = 0; c < col_tasks; ++c) width = std::max(width, col_start(c + 1) - col_start(c));
    const int64_t panels_per_task = ceil_div(panels, row_tasks);
    row_tasks = ceil_div(panels, panels_per_task);
    auto compute = [&](int64_t t0, int64_t t1) {
      static thread_local Buffer b_buffer, edge_buffer;
      float* bp = reserve(b_buffer, KC * ceil_div(width, NR) * NR);
      float* edge = direct ? reserve(edge_buffer, KC * MR) : nullptr;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t pa = (t / col_tasks) * panels_per_task, pb = std::min(panels, pa + panels_per_task);
        const int64_t j0 = col_start(t % col_tasks), j1 = col_start(t % col_tasks + 1);
        for (int64_t kb = 0; kb < kblocks; ++kb) {
          const int64_t kc = std::min(KC, k - kb * KC);
          auto full_in_place = [&](int64_t j) { return b_in_place && j1 - j >= NR; };
          struct B_panel {
            const float* p;
            int64_t ld;
          };
          auto b_panel = [&](int64_t j) {
            return full_in_place(j) ? B_panel{b.p + kb * KC * b.sr + j, b.sr} : B_panel{bp + (j - j0) * kc, NR};
          };
          for (int64_t j = j0; j < j1; j += NR)
            if (!full_in_place(j)) pack_b_panel<NR>(b, kb * KC, kc, j, std::min(NR, j1 - j), bp + (j - j0) * kc);
          // Later slices add to C; only the first reads the prior value (or the row).
          const float beta_k = kb == 0 ? beta : 1.f;
          const float* row_k = kb == 0 ? row : nullptr;
          const bool relu_k = relu && kb == kblocks - 1;
          for (int64_t panel = pa; panel < pb; ++panel) {
            const int64_t i = panel * MR, mr = std::min<int64_t>(MR, rows - i);
            float* cp = c + (r0 + i) * ldc;
            if (direct && mr == MR && !steps_per_panel) {
              const float* a0 = a.p + (r0 + i) * a.sr + kb * KC * a.sc;
              for (int64_t j = j0; j < j1; j += NR) {
                const B_panel bj = b_panel(j);
                if (steps_direct)
                  micro_kernel<MR, NV, ALayout::Steps>(kc, a0, a.sc, bj.p, bj.ld, cp + j, ldc, mr,
                                                       std::min(NR, j1 - j), alpha, beta_k,
                                                       row_k ? row_k + j : nullptr, relu_k);
                else
                  micro_kernel<MR, NV, ALayout::Rows>(kc, a0, a.sr, bj.p, bj.ld, cp + j, ldc, mr,
                                                      std::min(NR, j1 - j), alpha, beta_k, row_k ? row_k + j : nullptr,
                                                      relu_k);
              }
              continue;
            }
            const float* apanel = direct ? nullptr : a_panel(kb, panel);
            if (direct) {
              pack_a_panels<MR>(a, r0 + i, mr, kb * KC, kc, edge, 1);
              apanel = edge;
            }
            for (int64_t j = j0; j < j1; j += NR) {
              const B_panel bj = b_panel(j);
              micro_kernel<MR, NV, ALayout::Packed>(kc, apanel, 0, bj.p, bj.ld, cp + j, ldc, mr, std::min(NR, j1 - j),
                                                    alpha, beta_k, row_k ? row_k + j : nullptr, relu_k);
            }
          }
        }
      }
    };
    const int64_t tasks = row_tasks * col_tasks;
    if (threads > 1 && tasks > 1) {
      if (!direct)
        ember::detail::parallel_for(groups * kblocks, std::max<int64_t>(1, ceil_div(groups * kblocks, threads)),
                                    [&](int64_t t0, int64_t t1) { pack_a(t0, t1); });
      ember::detail::parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) { compute(t0, t1); });
    } else {
      if (!direct) pack_a(0, groups * kblocks);
      compute(0, tasks);
    }
  }
}

/// Tile shapes (rows x vectors of columns) for this build, and the rule that picks one: the
/// shape that pads C least; 8 x 2 has too few accumulators to be as fast per FMA, so it must
/// save an eighth of the area to be chosen. (A quarter until 64-row products, such as the
/// attention backward's 64 x 32 per head, showed that the 12-row tile's partial last panel,
/// packed separately, costs more: that backward ~5% faster, the CNN step unchanged.)
/// A long product with a transposed A (`long_steps`: a weight gradient dY^T @ X over 512 or
/// more rows of a batch, C of 64 rows or more) takes the 12-row tile unless it pads C by more
/// than 5%: its steps come one cache line each, and the 12 x 2 tile needs half the B loads per
/// FMA of the 6 x 4 one. On the transformer benchmark's weight gradients (1024 steps, C 128-512
/// x 128-512) 12 x 2 ran 3-13% faster, also where it pads more (256 rows: 264 against 258).
/// Not below 64 rows (32 rows: 12 x 2 was 20-40% slower, its partial last panel a third of
/// the work; 48 rows: no clear winner), nor over short inner dimensions (96 x 64 x 512: 30%
/// slower); on a row-major A the two tiles run level.
#if defined(__AVX512F__)
enum class Tile { Wide6x4, Tall12x2, Small8x2 };
inline int64_t padded(int64_t m, int64_t n, int64_t mr, int64_t nv) { return ceil_div(m, mr) * mr * ceil_div(n, nv * W) * nv * W; }
inline Tile choose_tile(int64_t m, int64_t n, int64_t& area, bool long_steps = false) {
  const int64_t wide = padded(m, n, 6, 4), tall = padded(m, n, 12, 2), small = padded(m, n, 8, 2);
  if (small * 8 < std::min(wide, tall) * 7) return area = small, Tile::Small8x2;
  if (tall < wide || (long_steps && tall * 20 <= wide * 21)) return area = tall, Tile::Tall12x2;
  return area = wide, Tile::Wide6x4;
}
#else
enum class Tile { Avx2_6x2 };
inline Tile choose_tile(int64_t m, int64_t n, int64_t& area, bool = false) {
  area = ceil_div(m, 6) * 6 * ceil_div(n, 2 * W) * 2 * W;
  return Tile::Avx2_6x2;
}
#endif

inline void sgemm_tiled(Tile tile, int64_t m, int64_t n, int64_t k, Operand a, Operand b, float* c, int64_t ldc,
                        float alpha, float beta, int threads, const float* row = nullptr, bool relu = false) {
#if defined(__AVX512F__)
  if (tile == Tile::Small8x2) return gemm<8, 2>(m, n, k, a, b, c, ldc, alpha, beta, threads, row, relu);
  if (tile == Tile::Tall12x2) return gemm<12, 2>(m, n, k, a, b, c, ldc, alpha, beta, threads, row, relu);
  return gemm<6, 4>(m, n, k, a, b, c, ldc, alpha, beta, threads, row, relu);
#else
  (void)tile;
  return gemm<6, 2>(m, n, k, a, b, c, ldc, alpha, beta, threads, row, relu);
#endif
}

/// C[i, j] = alpha * ct[j * m + i] + beta * C[i, j] for an (n x m) row-major ct and rows i
/// in [i0, i1) (i0 a multiple of 8): C written back from its transposed product, 8 x 8 blocks
/// transposed in registers. beta uses one fma, as the micro-kernels do; C is not read at
/// beta 0, nor with `row` (C's prior value in every row, as in store_tile); `relu` as there.
inline void store_transposed(const float* ct, int64_t m, int64_t n, float* c, int64_t ldc, float alpha, float beta,
                             const float* row, int64_t i0, int64_t i1, bool relu) {
  auto store = [&](float& y, float v, int64_t j) {
    const float r = beta == 0.f ? alpha * v : std::fma(beta, row ? row[j] : y, alpha * v);
    y = relu && r < 0.f ? 0.f : r;
  };
  const int64_t m8 = m / 8 * 8, n8 = n / 8 * 8, i8 = std::min(i1, m8);
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int64_t j = 0; j < n8; j += 8)
    for (int64_t i = i0; i < i8; i += 8) {
      __m256 r[8];
      for (int64_t q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(ct + (j + q) * m + i);
      transpose8x8(r);  // r[q] = C[i + q, j .. j + 8)
      for (int64_t q = 0; q < 8; ++q) {
        float* y = c + (i + q) * ldc + j;
        __m256 v = _mm256_mul_ps(va, r[q]);
        if (beta != 0.f) v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row ? row + j : y), v);
        if (relu) v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
        _mm256_storeu_ps(y, v);
      }
    }
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = n8; j < n; ++j) store(c[i * ldc + j], ct[j * m + i], j);
    if (i >= m8)
      for (int64_t j = 0; j < n8; ++j) store(c[i * ldc + j], ct[j * m + i], j);
  }
}

/// C = alpha * A @ B + beta * C. A C narrower than a tile (a convolution's weight gradient
/// with 9 taps, a Linear with 8 outputs) wastes most of each tile's columns, so when the
/// transposed product C^T = B^T @ A^T pads at least a quarter less, that is computed into a
/// scratch buffer and written back transposed (conv1's weight gradient in the CNN benchmark,
/// 32 x 9 over 50176: 2.3 ms -> see the commit). The choice depends on the shape only, so
/// results do not depend on the thread count. With `row`, C's prior value is that row in
/// every row, and C is only written (store_tile). With `relu`, C is ReLU's of the result
/// (store_tile).
inline void sgemm(int64_t m, int64_t n, int64_t k, Operand a, Operand b, float* c, int64_t ldc, float alpha,
                  float beta, int threads, const float* row = nullptr, bool relu = false) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta * C (not read at beta 0)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.f ? 0.f : beta * (row ? row[j] : c[i * ldc + j]);
    if (relu)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = c[i * ldc + j] < 0.f ? 0.f : c[i * ldc + j];
    return;
  }
  // A wide C over few rows whose B has contiguous columns (a Linear's forward at a small
  // batch): packing B would transpose all k x n of it for only m rows of use. The transposed
  // product C^T = B^T @ A^T reads B^T (the weight, row-major) in place and packs only A^T
  // (k x m); C comes back through 8 x 8 transposes. Taken when that moves at most half as
  // many floats (the robotics MLP's 32 x 256 outputs: its training step 6% faster).
  // C^T = B^T @ A^T into a scratch buffer with tile `tile_t`, then C from it.
  auto transposed_product = [&](Tile tile_t) {
    static thread_local Buffer scratch;
    float* ct = reserve(scratch, n * m);
    sgemm_tiled(tile_t, n, m, k, {b.p, b.sc, b.sr}, {a.p, a.sc, a.sr}, ct, m, 1.f, 0.f, threads);
    // The write-back is split too, by C's rows in halves (caller first, as elementwise ops
    // split), where it is a few microseconds of work: done by the caller alone it was serial
    // time, and it left all of C in the caller's cache for the next op's other half (the
    // MNIST MLP's 128 x 512 Linears, followed by a ReLU).
    const int64_t blocks = ceil_div(m, 8);
    if (threads > 1 && m * n >= (int64_t(1) << 14) && blocks >= threads) {
      ember::detail::parallel_for(blocks, ceil_div(blocks, threads), [&](int64_t b0, int64_t b1) {
        store_transposed(ct, m, n, c, ldc, alpha, beta, row, b0 * 8, std::min(m, b1 * 8), relu);
      });
    } else {
      store_transposed(ct, m, n, c, ldc, alpha, beta, row, 0, m, relu);
    }
  };
  if (b.sr == 1 && b.sc != 1 && a.sc == 1 && m >= 8 && n >= 8 && 2 * m * (k + n) <= k * n) {
    int64_t area_w = 0;
    return transposed_product(choose_tile(n, m, area_w));
  }
  int64_t area = 0, area_t = 0;
  const Tile tile = choose_tile(m, n, area, /*long_steps=*/a.sr == 1 && a.sc != 1 && k >= 512 && m >= 64);
  if (n < 2 * W && m > n) {
    const Tile tile_t = choose_tile(n, m, area_t);
    if (area_t * 4 <= area * 3) return transposed_product(tile_t);
  }
  sgemm_tiled(tile, m, n, k, a, b, c, ldc, alpha, beta, threads, row, relu);
}

}  // namespace ember::cpu::EMBER_CPU_ARCH::packed_gemm
