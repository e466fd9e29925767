// Integer matrix products, as PyTorch's CPU matmul computes them for i8, u8, i32 and i64:
// exact products and sums that wrap modulo 2^bits. Wrapped sums do not depend on the order or
// on the accumulator's width (arithmetic modulo 2^32 truncated to 8 bits is arithmetic modulo
// 2^8), so i8, u8 and i32 accumulate in u32 lanes and any thread split gives the same bits.
// Compiled once per instruction set (kernels_cpu/meson.build).
//
// i8, u8 and i32: B is packed, a block of 2 vectors of columns at a time, into u32 lanes (any
// strides; the last block zero-padded), and 4 rows x 2 vectors of sums stay in registers over
// all of k: 8 vector multiply-adds per 4 broadcasts and 2 loads. i64 has no 64-bit vector
// multiply before AVX-512 and is rare, so it keeps a plain (row, k, column) loop.

#include <ember/core/config.hpp>
#include <ember/core/error.hpp>
#include <ember/core/tensor_impl.hpp>
#include <ember/runtime/threading.hpp>

#include "int_wrapping.hpp"

#include "simd.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;

/// alpha or beta as a value of T: an integer T can hold (PyTorch refuses the rest too).
template <class T>
int64_t integer_factor(double v, const char* name) {
  EMBER_CHECK(holds_integer<T>(v), "[matmul] integer matrices take an integer {} their dtype holds, got {}", name, v);
  return static_cast<int64_t>(v);
}

/// The operands of one product (one batch entry) with their element strides.
template <class T>
struct Product {
  const T* a;
  int64_t a_sr, a_sc;
  const T* b;
  int64_t b_sr, b_sc;
  T* c;
  int64_t c_sr, c_sc;
  int64_t n, k;
};

/// c = beta * c + alpha * sum, wrapping in T's unsigned type.
template <class T, class U>
void store_wrapped(T& c, U sum, U alpha, U beta) {
  const U old = beta == 0 ? U(0) : static_cast<U>(beta * static_cast<U>(c));  // beta 0 ignores c (as addmm)
  c = static_cast<T>(static_cast<U>(old + static_cast<U>(alpha * sum)));
}

/// Rows [i0, i1) of one product by the plain loop (i64; any T).
template <class T>
void rows_plain(const Product<T>& p, int64_t i0, int64_t i1, uint64_t alpha64, uint64_t beta64) {
  using U = std::make_unsigned_t<T>;
  const U alpha = static_cast<U>(alpha64), beta = static_cast<U>(beta64);
  static thread_local std::vector<U> acc_buf;  // a warm loop allocates nothing
  std::vector<U>& acc = acc_buf;
  acc.resize(static_cast<size_t>(p.n));
  for (int64_t i = i0; i < i1; ++i) {
    std::fill(acc.begin(), acc.end(), U(0));
    const T* arow = p.a + i * p.a_sr;
    for (int64_t q = 0; q < p.k; ++q) {
      const U av = static_cast<U>(arow[q * p.a_sc]);
      if (av == 0) continue;
      const T* brow = p.b + q * p.b_sr;
      for (int64_t j = 0; j < p.n; ++j) acc[j] = static_cast<U>(acc[j] + static_cast<U>(av * static_cast<U>(brow[j * p.b_sc])));
    }
    T* crow = p.c + i * p.c_sr;
    for (int64_t j = 0; j < p.n; ++j) store_wrapped(crow[j * p.c_sc], acc[j], alpha, beta);
  }
}

using Lanes = xsimd::batch<uint32_t>;
constexpr int64_t kW = static_cast<int64_t>(Lanes::size);
constexpr int64_t kPanel = 2 * kW;  // columns per packed block
constexpr int64_t kRows = 4;        // rows of sums kept in registers

/// R rows from row i of one packed block (columns j0 .. j0 + kPanel, `cols` of them real).
template <class T, int R>
void block_rows(const Product<T>& p, const uint32_t* panel, int64_t i, int64_t j0, int64_t cols, uint32_t alpha,
                uint32_t beta) {
  // The sums stay in registers only if these loops are unrolled, which -O2 leaves to us.
  Lanes s[R][2];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) s[r][0] = s[r][1] = Lanes(0u);
  const T* arow = p.a + i * p.a_sr;
  for (int64_t q = 0; q < p.k; ++q) {
    const Lanes b0 = Lanes::load_aligned(panel + q * kPanel), b1 = Lanes::load_aligned(panel + q * kPanel + kW);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const Lanes av(static_cast<uint32_t>(static_cast<std::make_unsigned_t<T>>(arow[r * p.a_sr + q * p.a_sc])));
      s[r][0] += av * b0;
      s[r][1] += av * b1;
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(64) uint32_t sum[kPanel];
    s[r][0].store_aligned(sum), s[r][1].store_aligned(sum + kW);
    T* crow = p.c + (i + r) * p.c_sr + j0 * p.c_sc;
    for (int64_t j = 0; j < cols; ++j) store_wrapped(crow[j * p.c_sc], sum[j], alpha, beta);
  }
}

/// Rows [i0, i1) and columns [c0, c1) (c0 a multiple of kPanel) of one product by packed
/// blocks of B (i8, u8, i32).
template <class T>
void rows_packed(const Product<T>& p, int64_t i0, int64_t i1, int64_t c0, int64_t c1, uint64_t alpha64,
                 uint64_t beta64) {
  // Sums modulo 2^32 carry every bit an 8- or 32-bit result keeps; alpha and beta likewise.
  const auto alpha = static_cast<uint32_t>(alpha64), beta = static_cast<uint32_t>(beta64);
  // Aligned by hand (xsimd's aligned_allocator throws, and Ember also builds without exceptions).
  static thread_local std::vector<uint32_t> panel_buf;
  panel_buf.resize(static_cast<size_t>(std::max<int64_t>(p.k, 1) * kPanel + 16));
  const auto at = reinterpret_cast<std::uintptr_t>(panel_buf.data());
  uint32_t* panel = panel_buf.data() + (64 - at % 64) % 64 / sizeof(uint32_t);
  for (int64_t j0 = c0; j0 < c1; j0 += kPanel) {
    const int64_t cols = std::min(kPanel, c1 - j0);
    for (int64_t q = 0; q < p.k; ++q) {
      const T* brow = p.b + q * p.b_sr + j0 * p.b_sc;
      uint32_t* dst = panel + q * kPanel;
      for (int64_t j = 0; j < cols; ++j) dst[j] = static_cast<uint32_t>(static_cast<std::make_unsigned_t<T>>(brow[j * p.b_sc]));
      for (int64_t j = cols; j < kPanel; ++j) dst[j] = 0;
    }
    int64_t i = i0;
    for (; i + kRows <= i1; i += kRows) block_rows<T, kRows>(p, panel, i, j0, cols, alpha, beta);
    switch (i1 - i) {
      case 3: block_rows<T, 3>(p, panel, i, j0, cols, alpha, beta); break;
      case 2: block_rows<T, 2>(p, panel, i, j0, cols, alpha, beta); break;
      case 1: block_rows<T, 1>(p, panel, i, j0, cols, alpha, beta); break;
      default: break;
    }
  }
}

template <class T>
void int_gemm_typed(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha_d, double beta_d) {
  const auto alpha = static_cast<uint64_t>(integer_factor<T>(alpha_d, "alpha"));
  const auto beta = static_cast<uint64_t>(integer_factor<T>(beta_d, "beta"));
  const size_t d = out.ndim() == 3 ? 1 : 0;
  const int64_t m = out.sizes[d], n = out.sizes[d + 1], k = a.sizes[d + 1];
  const int64_t batches = d ? out.sizes[0] : 1;
  if (batches * m * n == 0) return;  // nothing to write (and no column blocks to split)
  const int64_t sa0 = d ? a.strides[0] : 0, sb0 = d ? b.strides[0] : 0, sc0 = d ? out.strides[0] : 0;
  const T* ap = static_cast<const T*>(a.data());
  const T* bp = static_cast<const T*>(b.data());
  T* cp = static_cast<T*>(out.data());
  auto product = [&](int64_t bi) {
    return Product<T>{ap + bi * sa0, a.strides[d], a.strides[d + 1], bp + bi * sb0, b.strides[d], b.strides[d + 1],
                      cp + bi * sc0, out.strides[d], out.strides[d + 1], n, k};
  };
  // Tasks are (batch entry, run of rows, run of columns). The packed path splits the columns
  // into its blocks, so each block of B is packed once, and splits rows as well only when
  // there are fewer blocks than threads (each row task packs its block again); the plain
  // path splits rows. Consecutive tasks are grouped up to about EMBER_GRAIN_SIZE
  // multiply-adds per thread.
  constexpr bool packed = sizeof(T) <= 4;
  const int64_t threads = std::max<int64_t>(1, get_num_threads());
  const int64_t col_step = packed ? kPanel : std::max<int64_t>(n, 1);
  const int64_t col_chunks = packed ? (n + kPanel - 1) / kPanel : 1;
  const int64_t row_split = !packed ? threads : col_chunks >= threads ? 1 : (threads + col_chunks - 1) / col_chunks;
  const int64_t row_grain = std::max(kRows, (m + row_split - 1) / row_split);
  const int64_t row_chunks = (m + row_grain - 1) / row_grain;
  const int64_t task_work = std::min(row_grain, m) * std::max<int64_t>(k, 1) * std::min(col_step, n);
  const int64_t task_grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(task_work, 1));
  detail::parallel_for(batches * row_chunks * col_chunks, task_grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bi = t / (row_chunks * col_chunks), rc = t / col_chunks % row_chunks, cc = t % col_chunks;
      const int64_t i0 = rc * row_grain, i1 = std::min(m, i0 + row_grain);
      const Product<T> p = product(bi);
      if constexpr (packed) rows_packed(p, i0, i1, cc * col_step, std::min(n, (cc + 1) * col_step), alpha, beta);
      else rows_plain(p, i0, i1, alpha, beta);
    }
  });
}

}  // namespace

void int_gemm(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha, double beta) {
  switch (out.dtype) {
    case DType::I8: return int_gemm_typed<int8_t>(out, a, b, alpha, beta);
    case DType::U8: return int_gemm_typed<uint8_t>(out, a, b, alpha, beta);
    case DType::I32: return int_gemm_typed<int32_t>(out, a, b, alpha, beta);
    case DType::I64: return int_gemm_typed<int64_t>(out, a, b, alpha, beta);
    default: EMBER_FAIL("[matmul] the integer GEMM takes i8, u8, i32 or i64, got {}", out.dtype);
  }
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
