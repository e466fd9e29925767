// The bf16 GEMM for CPUs with AVX512_BF16 (AMD Zen 4 and later, Intel Cooper Lake and
// Sapphire Rapids and later): C = alpha * A @ B + beta * C with A, B and C bf16. On CPUs with
// AMX (Sapphire Rapids and later) products of 16 rows or more run AMX micro-tiles instead
// (product_rows_amx, below), about 8x faster.
//
// Without it a bf16 product is computed by copying both operands and the output to f32,
// running the f32 GEMM and rounding back: three extra passes over memory, so bf16 ran slower
// than f32. VDPBF16PS multiplies 16 pairs of bf16 and adds both products of each pair to an
// f32 lane, twice the multiply-adds per instruction of an f32 FMA; the products of two bf16
// values are exact in f32, so the sums are f32 sums as in the upcast path, in another order,
// rounded to bf16 once at the end. Like every VDPBF16PS user (oneDNN, hence PyTorch's bf16
// matmul on these CPUs), it flushes subnormals to zero: the instruction treats subnormal
// inputs as zero and flushes subnormal sums, and the conversion to bf16 flushes subnormal
// results (the upcast path on other CPUs keeps them).
//
// Structure (Goto's, as gemm_packed.hpp for f32): per task (a batch entry's block of columns),
// a KC x NC block of B is packed into NR-column panels of bf16 pairs, [k, k+1] interleaved the
// way VDPBF16PS reads them, and stays in L2; MC-row blocks of A are packed into MR-row panels
// of pairs; the micro-kernel keeps an MR x NR tile of C in 24 zmm registers for a whole KC
// slice while one B panel (KC x NR, 16 KB) stays in L1. Products longer than one slice keep
// their partial sums in an f32 scratch block, so C is rounded to bf16 once.

#include "arch_kernels.hpp"

#include <ember/core/error.hpp>
#include <ember/runtime/threading.hpp>

// GCC 12's AVX-512 headers build several intrinsics (the 512 -> 256-bit casts and extracts,
// the unmasked conversions) on a self-initialised "undefined" vector, and -Wmaybe-uninitialized
// reports that inside the header once they are inlined here. A false positive of the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace ember::cpu::avx512bf16 {
namespace {

using detail::TensorImpl;

constexpr int MR = 12;          // rows of C per micro-tile
static_assert(MR == 12, "pack_a's column-major path stores 8 + 4 rows per pair");
constexpr int64_t NR = 32;      // columns of C per micro-tile: two zmm of f32
constexpr int64_t KC = 1024;     // inner-dimension slice (even); a B panel is KC x NR x 2 B = 16 KB
constexpr int64_t MC = 8 * MR;  // rows of A per packed block (48 KB)
constexpr int64_t NC = 512;     // columns of B per packed block (KC x NC x 2 B = 256 KB, in L2)

/// An operand of bf16 bits: element (i, j) at p[i * sr + j * sc].
struct Operand {
  const uint16_t* p;
  int64_t sr, sc;
};

/// A grow-only, 64-byte-aligned scratch buffer per thread (no allocation once warm; no
/// exceptions, as Ember also builds without them).
struct Scratch {
  void* data = nullptr;
  size_t bytes = 0;
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { std::free(data); }
  template <class T>
  T* reserve(int64_t n) {
    const size_t want = (static_cast<size_t>(n) * sizeof(T) + 63) / 64 * 64;
    if (bytes < want) {
      std::free(data);
      data = std::aligned_alloc(64, want);
      bytes = data ? want : 0;
      EMBER_CHECK(data, "[matmul] could not allocate {} bytes of bf16 GEMM packing buffer", want);
    }
    return static_cast<T*>(data);
  }
};

/// The pair (x[k], x[k + 1]) as VDPBF16PS reads it (element k in the low half); the second is
/// zero past the inner dimension's end.
inline uint32_t pair_at(const uint16_t* x, int64_t step, bool second) {
  const uint32_t lo = x[0], hi = second ? x[step] : 0u;
  return lo | (hi << 16);
}

/// 16 x 16 transpose of 32-bit words: word c of r[i] becomes word i of r[c].
inline void transpose16(__m512i (&r)[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // Within each 128-bit lane L, u[4g + q] now holds words 4L + q of rows 4g .. 4g + 3.
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  // Word 4L + q of every row: lane L of u[q], u[4 + q], u[8 + q], u[12 + q].
  for (int q = 0; q < 4; ++q) {
    const __m512i a0 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x44), a1 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xEE);
    const __m512i b0 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x44);
    const __m512i b1 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xEE);
    r[q] = _mm512_shuffle_i32x4(a0, b0, 0x88);
    r[4 + q] = _mm512_shuffle_i32x4(a0, b0, 0xDD);
    r[8 + q] = _mm512_shuffle_i32x4(a1, b1, 0x88);
    r[12 + q] = _mm512_shuffle_i32x4(a1, b1, 0xDD);
  }
}

/// One NR-column panel of a B whose columns are contiguous along the inner dimension (a
/// Linear's weight W read as B = W^T): each column's pairs are adjacent words, so the panel is
/// a transpose of (columns x pairs) words, done 16 x 16 at a time. Columns from nr on are zero,
/// and so is the second half of a last pair past k1.
void pack_b_columns(uint32_t* panel, const Operand& b, int64_t k0, int64_t k1, int64_t col, int64_t nr,
                    int64_t pairs) {
  for (int64_t kp0 = 0; kp0 < pairs; kp0 += 16) {
    const int64_t at = k0 + 2 * kp0, elems = std::min<int64_t>(32, k1 - at);
    const __mmask32 mask = elems >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((1u << elems) - 1);
    const int64_t np = std::min<int64_t>(16, pairs - kp0);
    for (int64_t h = 0; h < 2; ++h) {
      __m512i r[16];
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t j = h * 16 + i;
        r[i] = j < nr ? _mm512_maskz_loadu_epi16(mask, b.p + at + (col + j) * b.sc) : _mm512_setzero_si512();
      }
      transpose16(r);
      for (int64_t c = 0; c < np; ++c) _mm512_store_si512(panel + (kp0 + c) * NR + h * 16, r[c]);
    }
  }
}

/// B rows [k0, k1) x columns [c0, c0 + cols) into NR-column panels: panel p holds, for each
/// pair kp, NR words (column j's pair), zero beyond the last column. Panels are panel_pairs
/// pairs apart (>= the pairs of [k0, k1)); the pairs between are zero (AMX reads whole tiles).
void pack_b(uint32_t* dst, const Operand& b, int64_t k0, int64_t k1, int64_t c0, int64_t cols, int64_t panel_pairs) {
  const int64_t pairs = (k1 - k0 + 1) / 2;
  for (int64_t p0 = 0; p0 < cols; p0 += NR) {
    const int64_t nr = std::min(NR, cols - p0);
    uint32_t* panel = dst + (p0 / NR) * panel_pairs * NR;
    if (panel_pairs > pairs) std::memset(panel + pairs * NR, 0, static_cast<size_t>((panel_pairs - pairs) * NR) * 4);
    if (b.sr == 1) {
      pack_b_columns(panel, b, k0, k1, c0 + p0, nr, pairs);
      continue;
    }
    for (int64_t kp = 0; kp < pairs; ++kp) {
      const int64_t k = k0 + 2 * kp;
      const bool second = k + 1 < k1;
      uint32_t* w = panel + kp * NR;
      const uint16_t* src = b.p + k * b.sr + (c0 + p0) * b.sc;
      if (b.sc == 1 && nr == NR && second) {
        // Row-major B: interleave 32 columns of row k with the same of row k + 1.
        const __m512i r0 = _mm512_loadu_si512(src), r1 = _mm512_loadu_si512(src + b.sr);
        const __m512i lo = _mm512_unpacklo_epi16(r0, r1), hi = _mm512_unpackhi_epi16(r0, r1);
        // unpack works within 128-bit lanes: lanes of lo hold columns 0-3, 8-11, 16-19, 24-27
        // (lane l: 8l..8l+3), hi the others; put them back in column order.
        const __m512i first = _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), hi);
        const __m512i second_half = _mm512_permutex2var_epi64(lo, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), hi);
        _mm512_store_si512(w, first);
        _mm512_store_si512(w + 16, second_half);
        continue;
      } else {
        for (int64_t j = 0; j < nr; ++j) w[j] = pair_at(src + j * b.sc, b.sr, second);
      }
      for (int64_t j = nr; j < NR; ++j) w[j] = 0;
    }
  }
}

/// A rows [r0, r0 + rows) x inner [k0, k1) into MR-row panels: panel p holds, for each pair
/// kp, MR words (row i's pair; rows past the block's end are not read by the kernel).
void pack_a(uint32_t* dst, const Operand& a, int64_t r0, int64_t rows, int64_t k0, int64_t k1) {
  const int64_t pairs = (k1 - k0 + 1) / 2;
  for (int64_t p0 = 0; p0 < rows; p0 += MR) {
    const int64_t mr = std::min<int64_t>(MR, rows - p0);
    uint32_t* panel = dst + (p0 / MR) * pairs * MR;
    if (a.sr == 1 && mr > 1) {
      // Column-major A (a transposed operand, as backward's g^T): each column's MR rows are
      // contiguous; interleave column k's with column k + 1's, 16 rows at a time.
      const __mmask16 rows = static_cast<__mmask16>((1u << mr) - 1);
      const uint16_t* col = a.p + (r0 + p0) + k0 * a.sc;
      for (int64_t kp = 0; kp < pairs; ++kp) {
        const int64_t k = k0 + 2 * kp;
        const __m256i c0 = _mm256_maskz_loadu_epi16(rows, col + 2 * kp * a.sc);
        const __m256i c1 = k + 1 < k1 ? _mm256_maskz_loadu_epi16(rows, col + (2 * kp + 1) * a.sc) : _mm256_setzero_si256();
        // unpack works within 128-bit lanes: lo holds rows 0-3 and 8-11, hi rows 4-7 and 12-15.
        const __m256i lo = _mm256_unpacklo_epi16(c0, c1), hi = _mm256_unpackhi_epi16(c0, c1);
        uint32_t* w = panel + kp * MR;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(w), _mm256_permute2x128_si256(lo, hi, 0x20));  // rows 0-7
        _mm_storeu_si128(reinterpret_cast<__m128i*>(w + 8), _mm256_extracti128_si256(lo, 1));          // rows 8-11
      }
      continue;
    }
    for (int64_t i = 0; i < mr; ++i) {
      const uint16_t* src = a.p + (r0 + p0 + i) * a.sr + k0 * a.sc;
      uint32_t* w = panel + i;
      if (a.sc == 1) {
        const int64_t whole = (k1 - k0) / 2;
        for (int64_t kp = 0; kp < whole; ++kp) std::memcpy(w + kp * MR, src + 2 * kp, 4);
        if (whole < pairs) w[whole * MR] = src[2 * whole];
      } else {
        for (int64_t kp = 0; kp < pairs; ++kp) w[kp * MR] = pair_at(src + 2 * kp * a.sc, a.sc, k0 + 2 * kp + 1 < k1);
      }
    }
  }
}

/// Where a micro-tile's result goes.
struct TileOut {
  uint16_t* c;        // C (bf16), row stride ldc
  int64_t ldc;
  float* partial;     // f32 partial sums (row stride NC), or null for a single-slice product
  bool first, last;   // the first / last KC slice
  float alpha, beta;
};

inline __m512 bf16_to_f32(__m256i x) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16)); }
inline __m256i f32_to_bf16(__m512 x) { return std::bit_cast<__m256i>(_mm512_cvtneps_pbh(x)); }

/// acc (one row, 16 columns from column `col`) into the tile's destination; `mask` selects the
/// columns inside C.
inline void store16(__m512 acc, const TileOut& o, int64_t row, int64_t col, __mmask16 mask) {
  if (!o.first) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mask, o.partial + row * NC + col));
  if (!o.last) {
    _mm512_mask_storeu_ps(o.partial + row * NC + col, mask, acc);
    return;
  }
  __m512 v = _mm512_mul_ps(acc, _mm512_set1_ps(o.alpha));
  uint16_t* cp = o.c + row * o.ldc + col;
  if (o.beta != 0.f) v = _mm512_fmadd_ps(_mm512_set1_ps(o.beta), bf16_to_f32(_mm256_maskz_loadu_epi16(mask, cp)), v);
  _mm256_mask_storeu_epi16(cp, mask, f32_to_bf16(v));
}

/// The lanes of a micro-tile row's two 16-column halves that fall inside C (ncols valid).
struct HalfMasks {
  __mmask16 lo, hi;
};
inline HalfMasks half_masks(int64_t ncols) {
  return {ncols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << ncols) - 1),
          ncols >= 32 ? __mmask16(0xFFFF) : ncols <= 16 ? __mmask16(0) : __mmask16((1u << (ncols - 16)) - 1)};
}
/// One row of an NR-column micro-tile (its two halves) into the tile's destination.
inline void store_row(__m512 lo, __m512 hi, const TileOut& o, int64_t row, int64_t col, HalfMasks m) {
  store16(lo, o, row, col, m.lo);
  if (m.hi) store16(hi, o, row, col + 16, m.hi);
}

/// The micro-kernel: R rows (R <= MR) x NR columns (ncols valid) over `pairs` pairs of the
/// inner dimension. `row`/`col` place the tile in C and in the partial block.
template <int R>
void tile(const uint32_t* a, const uint32_t* b, int64_t pairs, const TileOut& o, int64_t row, int64_t col,
          int64_t ncols) {
  __m512 c0[R], c1[R];
  for (int i = 0; i < R; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  for (int64_t kp = 0; kp < pairs; ++kp) {
    const __m512bh b0 = std::bit_cast<__m512bh>(_mm512_load_si512(b + kp * NR));
    const __m512bh b1 = std::bit_cast<__m512bh>(_mm512_load_si512(b + kp * NR + 16));
    const uint32_t* ak = a + kp * MR;
    for (int i = 0; i < R; ++i) {
      const __m512bh ai = std::bit_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(ak[i])));
      c0[i] = _mm512_dpbf16_ps(c0[i], ai, b0);
      c1[i] = _mm512_dpbf16_ps(c1[i], ai, b1);
    }
  }
  const HalfMasks m = half_masks(ncols);
  for (int i = 0; i < R; ++i) store_row(c0[i], c1[i], o, row + i, col, m);
}

using TileFn = void (*)(const uint32_t*, const uint32_t*, int64_t, const TileOut&, int64_t, int64_t, int64_t);
template <int... R>
constexpr auto make_tiles(std::integer_sequence<int, R...>) {
  return std::array<TileFn, sizeof...(R)>{&tile<R + 1>...};
}
constexpr auto kTiles = make_tiles(std::make_integer_sequence<int, MR>{});

thread_local Scratch t_pack_a, t_pack_b, t_partial;

/// C[:, c0:c1] = alpha * A @ B[:, c0:c1] + beta * C[:, c0:c1] for one product.
void product_rows(uint16_t* c, int64_t ldc, const Operand& a, const Operand& b, int64_t m, int64_t k, int64_t c0,
                  int64_t c1, float alpha, float beta) {
  const int64_t kc_pairs = KC / 2;
  uint32_t* pb = t_pack_b.reserve<uint32_t>(kc_pairs * NC);
  uint32_t* pa = t_pack_a.reserve<uint32_t>(kc_pairs * MC);
  const bool sliced = k > KC;
  float* partial = sliced ? t_partial.reserve<float>(m * NC) : nullptr;
  for (int64_t jc = c0; jc < c1; jc += NC) {
    const int64_t nc = std::min(NC, c1 - jc);
    for (int64_t pc = 0; pc < k; pc += KC) {
      const int64_t k1 = std::min(k, pc + KC), pairs = (k1 - pc + 1) / 2;
      pack_b(pb, b, pc, k1, jc, nc, pairs);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = std::min(MC, m - ic);
        pack_a(pa, a, ic, mc, pc, k1);
        // The partial block's rows are C's rows, its columns this NC block's.
        TileOut o{c + ic * ldc + jc, ldc, partial ? partial + ic * NC : nullptr, pc == 0, k1 == k, alpha, beta};
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const uint32_t* bp = pb + (jr / NR) * pairs * NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t mr = std::min<int64_t>(MR, mc - ir);
            kTiles[static_cast<size_t>(mr - 1)](pa + (ir / MR) * pairs * MR, bp, pairs, o, ir, jr,
                                                std::min(NR, nc - jr));
          }
        }
      }
    }
  }
}

// ---- AMX (Intel Sapphire Rapids and later) --------------------------------------------------
// Eight tile registers of 16 rows x 64 bytes; TDPBF16PS multiplies a 16 x 32 bf16 tile of A by
// a 32 x 16 tile of B stored as 16 rows of pairs (the layout pack_b already writes, NR = 32
// columns = two tiles side by side) into a 16 x 16 f32 tile of C: 16K multiply-adds per
// instruction, against 512 per VDPBF16PS (bf16_gemm_1024 at one thread on an AMX Xeon VM:
// 103 GFLOP/s with VDPBF16PS, below the f32 GEMM's 159). Numerics as VDPBF16PS: exact
// products, f32 sums (in another order), subnormals flushed. The micro-tile is 32 x 32 (two
// tiles of A, two of B, four of C); A is packed as rows of pairs, K padded to whole tiles with
// zeros in both operands (a garbage pad could hold a NaN, and NaN * 0 is NaN).

constexpr int64_t kAmxRows = 32;     // rows of C per micro-tile
constexpr int64_t kAmxMC = 128;      // rows of A per packed block (256 KB at a full slice)
constexpr int64_t kTilePairs = 16;   // pairs (32 elements of the inner dimension) per tile
// The packing buffers' sizes rest on these: a slice's pairs padded to whole tiles stay within
// KC / 2, a block's rows padded to whole micro-tiles within kAmxMC, and NC holds whole panels.
static_assert(KC / 2 % kTilePairs == 0 && kAmxMC % kAmxRows == 0 && NC % NR == 0);

/// LDTILECFG's 64-byte operand (palette 1: every tile 16 rows x 64 bytes here).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

/// A rows [r0, r0 + rows) x inner [k0, k1) as rows of pairs: row i at dst + i * pp words, the
/// pairs past the inner dimension zero, and rows up to the next multiple of kAmxRows zero.
void pack_a_rows(uint32_t* dst, const Operand& a, int64_t r0, int64_t rows, int64_t k0, int64_t k1, int64_t pp) {
  const int64_t pairs = (k1 - k0 + 1) / 2, padded_rows = (rows + kAmxRows - 1) / kAmxRows * kAmxRows;
  if (a.sc == 1) {
    for (int64_t i = 0; i < rows; ++i) {
      auto* w = reinterpret_cast<uint16_t*>(dst + i * pp);
      std::memcpy(w, a.p + (r0 + i) * a.sr + k0, static_cast<size_t>(k1 - k0) * 2);
      std::memset(w + (k1 - k0), 0, static_cast<size_t>(2 * pp - (k1 - k0)) * 2);
    }
  } else if (a.sr == 1) {
    // Column-major A (backward's g^T): each column's rows are contiguous. For 16 rows x 16
    // pairs: interleave columns k and k + 1 into one word per row, then transpose to rows.
    for (int64_t ib = 0; ib < rows; ib += 16) {
      const int64_t nrow = std::min<int64_t>(16, rows - ib);
      const __mmask16 live = static_cast<__mmask16>((1u << nrow) - 1);
      const uint16_t* col = a.p + (r0 + ib) + k0 * a.sc;
      for (int64_t kb = 0; kb < pp; kb += kTilePairs) {
        __m512i r[16];
        for (int64_t c = 0; c < 16; ++c) {
          const int64_t kp = kb + c, k = k0 + 2 * kp;
          if (kp >= pairs) {
            r[c] = _mm512_setzero_si512();
            continue;
          }
          const __m256i c0 = _mm256_maskz_loadu_epi16(live, col + 2 * kp * a.sc);
          const __m256i c1 = k + 1 < k1 ? _mm256_maskz_loadu_epi16(live, col + (2 * kp + 1) * a.sc) : _mm256_setzero_si256();
          // unpack works within 128-bit lanes: lo holds rows 0-3 and 8-11, hi rows 4-7 and 12-15.
          const __m256i lo = _mm256_unpacklo_epi16(c0, c1), hi = _mm256_unpackhi_epi16(c0, c1);
          r[c] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(lo, hi, 0x20)),
                                    _mm256_permute2x128_si256(lo, hi, 0x31), 1);
        }
        transpose16(r);  // r[i]: row ib + i's pairs kb .. kb + 15
        for (int64_t i = 0; i < nrow; ++i) _mm512_storeu_si512(dst + (ib + i) * pp + kb, r[i]);
      }
    }
  } else {
    for (int64_t i = 0; i < rows; ++i) {
      const uint16_t* src = a.p + (r0 + i) * a.sr + k0 * a.sc;
      uint32_t* w = dst + i * pp;
      for (int64_t kp = 0; kp < pp; ++kp)
        w[kp] = kp < pairs ? pair_at(src + 2 * kp * a.sc, a.sc, k0 + 2 * kp + 1 < k1) : 0u;
    }
  }
  if (padded_rows > rows) std::memset(dst + rows * pp, 0, static_cast<size_t>((padded_rows - rows) * pp) * 4);
}

/// One 32 x 32 micro-tile of C over `blocks` tiles of pairs into buf (32 rows of 32 floats).
/// a: the tile's first row of packed A (rows pp words apart); b: its NR-column panel of B.
[[gnu::target("amx-tile,amx-bf16")]] void amx_tile(const uint32_t* a, int64_t pp, const uint32_t* b, int64_t blocks,
                                                   float* buf) {
  // GCC 12's _tile_loadd names no memory operand: a barrier, so that the packed operands'
  // stores cannot move past the loads should this ever be inlined.
  __asm__ volatile("" ::: "memory");
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t a_stride = pp * 4, b_stride = NR * 4;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const uint32_t* ak = a + kb * kTilePairs;
    const uint32_t* bk = b + kb * kTilePairs * NR;
    _tile_loadd(4, ak, a_stride);
    _tile_loadd(5, ak + 16 * pp, a_stride);
    _tile_loadd(6, bk, b_stride);
    _tile_loadd(7, bk + 16, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, buf, 128);
  _tile_stored(1, buf + 16, 128);
  _tile_stored(2, buf + 16 * 32, 128);
  _tile_stored(3, buf + 16 * 32 + 16, 128);
}

[[gnu::target("amx-tile")]] void amx_configure() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  // GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes of the configuration, which
  // then dropped the stores of rows and colsb (tiles left unconfigured: the next tile
  // instruction faulted, SIGILL): a barrier makes the whole object written first.
  __asm__ volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}
[[gnu::target("amx-tile")]] void amx_release() { _tile_release(); }

/// product_rows with AMX micro-tiles (same blocking of B, same epilogue).
void product_rows_amx(uint16_t* c, int64_t ldc, const Operand& a, const Operand& b, int64_t m, int64_t k, int64_t c0,
                      int64_t c1, float alpha, float beta) {
  const int64_t kc_pairs = KC / 2;  // a multiple of kTilePairs
  uint32_t* pb = t_pack_b.reserve<uint32_t>(kc_pairs * NC);
  uint32_t* pa = t_pack_a.reserve<uint32_t>(kc_pairs * kAmxMC);
  const bool sliced = k > KC;
  float* partial = sliced ? t_partial.reserve<float>(m * NC) : nullptr;
  alignas(64) float buf[kAmxRows * NR];
  for (int64_t jc = c0; jc < c1; jc += NC) {
    const int64_t nc = std::min(NC, c1 - jc);
    for (int64_t pc = 0; pc < k; pc += KC) {
      const int64_t k1 = std::min(k, pc + KC), pairs = (k1 - pc + 1) / 2;
      const int64_t pp = (pairs + kTilePairs - 1) / kTilePairs * kTilePairs;
      pack_b(pb, b, pc, k1, jc, nc, pp);
      for (int64_t ic = 0; ic < m; ic += kAmxMC) {
        const int64_t mc = std::min(kAmxMC, m - ic);
        pack_a_rows(pa, a, ic, mc, pc, k1, pp);
        // After the packing's calls (memcpy, memset), which the ABI lets clobber tile state:
        // the loops below call only the micro-tile.
        amx_configure();
        TileOut o{c + ic * ldc + jc, ldc, partial ? partial + ic * NC : nullptr, pc == 0, k1 == k, alpha, beta};
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const HalfMasks m = half_masks(std::min(NR, nc - jr));
          for (int64_t ir = 0; ir < mc; ir += kAmxRows) {
            amx_tile(pa + ir * pp, pp, pb + (jr / NR) * pp * NR, pp / kTilePairs, buf);
            const int64_t rows = std::min(kAmxRows, mc - ir);
            for (int64_t i = 0; i < rows; ++i)
              store_row(_mm512_load_ps(buf + i * NR), _mm512_load_ps(buf + i * NR + 16), o, ir + i, jr, m);
          }
        }
      }
    }
  }
  amx_release();
}

/// Products longer than one slice keep an f32 partial block of (rows x NC): they go in
/// chunks of kSlicedRows rows (B is packed again per chunk, a few percent of the work), so
/// that block stays at 2 MB however tall the product is.
constexpr int64_t kSlicedRows = 11 * MC;
void product(uint16_t* c, int64_t ldc, const Operand& a, const Operand& b, int64_t m, int64_t k, int64_t c0,
             int64_t c1, float alpha, float beta, bool amx) {
  const auto rows = amx ? &product_rows_amx : &product_rows;
  if (k <= KC) return rows(c, ldc, a, b, m, k, c0, c1, alpha, beta);
  for (int64_t r0 = 0; r0 < m; r0 += kSlicedRows)
    rows(c + r0 * ldc, ldc, {a.p + r0 * a.sr, a.sr, a.sc}, b, std::min(kSlicedRows, m - r0), k, c0, c1, alpha, beta);
}

/// The four sums of s0..s3's lanes, in that order: one reduction for four columns.
inline __m128 sum4(__m512 s0, __m512 s1, __m512 s2, __m512 s3) {
  auto halves = [](__m512 v) {  // the upper 256 bits added to the lower
    return _mm512_castps512_ps256(_mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E)));
  };
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(halves(s0), halves(s1)), _mm256_hadd_ps(halves(s2), halves(s3)));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/// Few rows times a B whose columns are contiguous along the inner dimension (a Linear's
/// weight W read as B = W^T): dot products of A's rows with W's rows, read in place. Packing B
/// would cost as much as the product itself at batch 1. Four columns at a time, 32 bf16 of
/// the inner dimension per VDPBF16PS.
void rows_times_columns(uint16_t* c, int64_t ldc, const Operand& a, const Operand& b, int64_t m, int64_t k,
                        int64_t c0, int64_t c1, float alpha, float beta) {
  const int64_t whole = k / 32 * 32;
  const __mmask32 tail = static_cast<__mmask32>((uint64_t(1) << (k - whole)) - 1);
  auto load = [&](const uint16_t* p, int64_t at) {
    return std::bit_cast<__m512bh>(at < whole ? _mm512_loadu_si512(p + at) : _mm512_maskz_loadu_epi16(tail, p + at));
  };
  // y[0..n) = alpha * sums + beta * y, n <= 4 (the lanes past n are not stored).
  auto finish = [&](uint16_t* y, __m128 sums, int n) {
    const __mmask8 lanes = static_cast<__mmask8>((1u << n) - 1);
    __m128 v = _mm_mul_ps(sums, _mm_set1_ps(alpha));
    if (beta != 0.f) {
      const __m128i old = _mm_maskz_loadu_epi16(lanes, y);
      const __m128 old_f = _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(old), 16));
      v = _mm_fmadd_ps(_mm_set1_ps(beta), old_f, v);
    }
    _mm_mask_storeu_epi16(y, lanes, std::bit_cast<__m128i>(_mm_cvtneps_pbh(v)));
  };
  for (int64_t i = 0; i < m; ++i) {
    const uint16_t* x = a.p + i * a.sr;
    uint16_t* y = c + i * ldc;
    int64_t j = c0;
    for (; j + 4 <= c1; j += 4) {
      const uint16_t* w = b.p + j * b.sc;
      __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t at = 0; at < k; at += 32) {
        const __m512bh xv = load(x, at);
        s0 = _mm512_dpbf16_ps(s0, xv, load(w, at));
        s1 = _mm512_dpbf16_ps(s1, xv, load(w + b.sc, at));
        s2 = _mm512_dpbf16_ps(s2, xv, load(w + 2 * b.sc, at));
        s3 = _mm512_dpbf16_ps(s3, xv, load(w + 3 * b.sc, at));
      }
      finish(y + j, sum4(s0, s1, s2, s3), 4);
    }
    for (; j < c1; ++j) {
      __m512 s0 = _mm512_setzero_ps();
      for (int64_t at = 0; at < k; at += 32) s0 = _mm512_dpbf16_ps(s0, load(x, at), load(b.p + j * b.sc, at));
      const __m512 zero = _mm512_setzero_ps();
      finish(y + j, sum4(s0, zero, zero, zero), 1);
    }
  }
}

}  // namespace

bool gemm(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta, bool amx) {
  // Operands are (batch, rows, cols) or (rows, cols), as Kernels<Cpu>::gemm receives them.
  const size_t d = out.sizes.size() == 3 ? 1 : 0;
  const int64_t batch = d ? out.sizes[0] : 1, m = out.sizes[d], n = out.sizes[d + 1], k = a.sizes[d + 1];
  if (m == 0 || n == 0 || batch == 0) return true;
  if (k == 0 || (n > 1 && out.strides[d + 1] != 1)) return false;  // the general path handles these
  const int64_t sa0 = d ? a.strides[0] : 0, sb0 = d ? b.strides[0] : 0, sc0 = d ? out.strides[0] : 0;
  const int64_t ldc = out.strides[d];
  auto* cp = static_cast<uint16_t*>(out.data());
  const auto* ap = static_cast<const uint16_t*>(a.data());
  const auto* bp = static_cast<const uint16_t*>(b.data());
  const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
  // Up to four rows against a weight read in place (batch-1 inference): dot products.
  const bool dots = m <= 4 && (a.strides[d + 1] == 1 || k == 1) && (b.strides[d] == 1 || k == 1);
  // AMX from one whole tile of rows: below, most of each 32-row micro-tile would be padding.
  const bool tiles = amx && m >= 16;
  auto run = [&](int64_t bi, int64_t lo, int64_t hi) {
    const Operand ao{ap + bi * sa0, a.strides[d], a.strides[d + 1]}, bo{bp + bi * sb0, b.strides[d], b.strides[d + 1]};
    if (dots) return rows_times_columns(cp + bi * sc0, ldc, ao, bo, m, k, lo, hi, fa, fb);
    product(cp + bi * sc0, ldc, ao, bo, m, k, lo, hi, fa, fb, tiles);
  };
  const int threads = get_num_threads();
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  // As the f32 GEMM: below ~4 MFLOP in all the work is done before a thread would wake up.
  if (threads <= 1 || flops * static_cast<double>(batch) < 4e6) {
    for (int64_t bi = 0; bi < batch; ++bi) run(bi, 0, n);
  } else if (batch >= threads) {
    ember::detail::parallel_for(batch, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi) run(bi, 0, n);
    });
  } else {
    // One product split by columns, in whole micro-tiles: each thread packs only its own B.
    const int64_t block = std::max<int64_t>(NR, (n / threads + NR - 1) / NR * NR);
    const int64_t blocks = (n + block - 1) / block;
    for (int64_t bi = 0; bi < batch; ++bi)
      ember::detail::parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; ++blk) run(bi, blk * block, std::min(n, (blk + 1) * block));
      });
  }
  return true;
}

}  // namespace ember::cpu::avx512bf16
