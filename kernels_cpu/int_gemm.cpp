// Integer matrix products, as PyTorch's CPU matmul computes them for i8, u8, i32 and i64:
// exact products and sums that wrap modulo 2^bits. Wrapped sums do not depend on the order or
// on the accumulator's width, so the loop accumulates in T's unsigned type (no signed
// overflow, no undefined behaviour) and any thread split gives the same bits.
//
// A plain (row, k, column) loop, not a packed SIMD GEMM: integer products are rare in training
// and inference graphs (quantised models bring their own kernels), so this buys correctness
// and a small binary; B's rows are read contiguously when B is row-major.

#include "int_gemm.hpp"
#include "int_wrapping.hpp"

#include <ember/core/config.hpp>
#include <ember/core/error.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace ember::cpu {
namespace {

using detail::TensorImpl;

/// alpha or beta as a value of T: an integer T can hold (PyTorch refuses the rest too).
template <class T>
int64_t integer_factor(double v, const char* name) {
  EMBER_CHECK(holds_integer<T>(v), "[matmul] integer matrices take an integer {} their dtype holds, got {}", name, v);
  return static_cast<int64_t>(v);
}

template <class T>
void int_gemm_typed(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, double alpha_d, double beta_d) {
  using U = std::make_unsigned_t<T>;
  const U alpha = static_cast<U>(integer_factor<T>(alpha_d, "alpha"));
  const U beta = static_cast<U>(integer_factor<T>(beta_d, "beta"));
  const size_t d = out.ndim() == 3 ? 1 : 0;
  const int64_t m = out.sizes[d], n = out.sizes[d + 1], k = a.sizes[d + 1];
  const int64_t rows = (d ? out.sizes[0] : 1) * m;
  const int64_t sa0 = d ? a.strides[0] : 0, sb0 = d ? b.strides[0] : 0, sc0 = d ? out.strides[0] : 0;
  const int64_t a_sr = a.strides[d], a_sc = a.strides[d + 1], b_sr = b.strides[d], b_sc = b.strides[d + 1];
  const int64_t c_sr = out.strides[d], c_sc = out.strides[d + 1];
  const T* ap = static_cast<const T*>(a.data());
  const T* bp = static_cast<const T*>(b.data());
  T* cp = static_cast<T*>(out.data());
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / std::max<int64_t>(n * std::max<int64_t>(k, 1), 1));
  detail::parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    static thread_local std::vector<U> acc_buf;  // a warm loop allocates nothing
    std::vector<U>& acc = acc_buf;
    acc.resize(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t bi = r / m, i = r % m;
      std::fill(acc.begin(), acc.end(), U(0));
      const T* arow = ap + bi * sa0 + i * a_sr;
      for (int64_t p = 0; p < k; ++p) {
        const U av = static_cast<U>(arow[p * a_sc]);
        if (av == 0) continue;
        const T* brow = bp + bi * sb0 + p * b_sr;
        for (int64_t j = 0; j < n; ++j) acc[j] = static_cast<U>(acc[j] + static_cast<U>(av * static_cast<U>(brow[j * b_sc])));
      }
      T* crow = cp + bi * sc0 + i * c_sr;
      for (int64_t j = 0; j < n; ++j) {
        // beta == 0 ignores out's old contents (PyTorch's addmm does the same).
        const U old = beta == 0 ? U(0) : static_cast<U>(beta * static_cast<U>(crow[j * c_sc]));
        crow[j * c_sc] = static_cast<T>(static_cast<U>(old + static_cast<U>(alpha * acc[j])));
      }
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

}  // namespace ember::cpu
