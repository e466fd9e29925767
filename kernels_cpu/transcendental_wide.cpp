// The compute-bound f32 elementwise ops (exp, tanh, sigmoid, gelu, erf, ... and the gradients
// of gelu and silu) over contiguous tensors, and softmax over a contiguous tensor's last dim,
// for the AVX-512 build only.
//
// Why a separate file: every other elementwise op is memory-bound and gains nothing from
// 512-bit vectors, and a whole AVX-512 copy of elementwise.cpp (470 KB) would break the 2 MiB
// static footprint (tests/footprint). These ops spend ~20-60 instructions per vector, so on a
// CPU with two 512-bit FMA units (Intel Xeon since Skylake-SP) they run up to twice as fast as
// the AVX2 build: gelu over 64K floats 76 -> 50 us on such a Xeon (docs/benchmarks.md,
// "Sixteenth session").
// The functors are the AVX2 build's (functors.hpp), instantiated for f32 batches of 16.

#include "functors.hpp"
#include "lane_reduce.hpp"
#include "transcendental_wide.hpp"

#include <ember/core/config.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using B = xsimd::batch<float>;
constexpr int64_t W = static_cast<int64_t>(B::size);
static_assert(EMBER_GRAIN_SIZE % W == 0, "chunks must end on whole vectors: the tail is the tensor's own");

/// Chunks of the grain size, as the AVX2 build's loop splits them: vector and scalar lanes fall
/// on the same elements whatever the thread count.
template <class Body>
void over_chunks(int64_t n, const Body& body) {
  ember::detail::parallel_for(n, EMBER_GRAIN_SIZE, body);
}

template <ops::UnaryOp Op>
void unary_run(const ops::UnaryParams& p, float* out, const float* x, int64_t n) {
  const UnaryFn<Op> f{p};
  over_chunks(n, [&](int64_t b, int64_t e) {
    int64_t k = b;
    for (; k + W <= e; k += W) f(B::load_unaligned(x + k)).store_unaligned(out + k);
    for (; k < e; ++k) out[k] = f(x[k]);
  });
}

template <ops::BinaryOp Op>
void binary_run(float* out, const float* a, const float* b, int64_t n) {
  const BinaryFn<Op> f{};
  over_chunks(n, [&](int64_t lo, int64_t hi) {
    int64_t k = lo;
    for (; k + W <= hi; k += W) f(B::load_unaligned(a + k), B::load_unaligned(b + k)).store_unaligned(out + k);
    for (; k < hi; ++k) out[k] = f(a[k], b[k]);
  });
}

/// One contiguous line: max, exp and sum, scale; the steps of reduce.cpp's contiguous-row path
/// on 16 lanes, and the same scalar tail. Special lines need no test (as its strips): a NaN, or
/// a +inf (inf - inf), makes the sum NaN, and a line of -inf subtracts -inf from itself; each
/// gives the NaN line that path's element-by-element fallback gives.
void softmax_row(float* w, const float* r, int64_t len, bool log) {
  int64_t k = 0;
  B mb(-std::numeric_limits<float>::infinity());
  for (; k + W <= len; k += W) mb = xsimd::max(mb, B::load_unaligned(r + k));
  float m = max_lanes(mb);
  for (; k < len; ++k) m = std::max(m, r[k]);
  const B mv(m);
  B sb(0.f);
  for (k = 0; k + W <= len; k += W) {
    const B e = xsimd::exp(B::load_unaligned(r + k) - mv);
    if (!log) e.store_unaligned(w + k);
    sb += e;
  }
  float sum = sum_lanes(sb);
  for (; k < len; ++k) {
    const float e = std::exp(r[k] - m);
    if (!log) w[k] = e;
    sum += e;
  }
  if (log) {  // (x - m) - log(sum): m + log(sum) would round log(sum) away at |m| ~ 1e7
    const float lse = std::log(sum);
    const B lb(lse);
    for (k = 0; k + W <= len; k += W) ((B::load_unaligned(r + k) - mv) - lb).store_unaligned(w + k);
    for (; k < len; ++k) w[k] = (r[k] - m) - lse;
  } else {
    const B inv(1.f / sum);
    for (k = 0; k + W <= len; k += W) (B::load_unaligned(w + k) * inv).store_unaligned(w + k);
    for (; k < len; ++k) w[k] *= 1.f / sum;
  }
}

}  // namespace

void softmax_rows_f32(float* out, const float* x, int64_t rows, int64_t len, bool log) {
  ember::detail::parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)),
                              [&](int64_t r0, int64_t r1) {
                                for (int64_t r = r0; r < r1; ++r) softmax_row(out + r * len, x + r * len, len, log);
                              });
}

bool unary_f32(ops::UnaryOp op, const ops::UnaryParams& p, float* out, const float* x, int64_t n) {
  using U = ops::UnaryOp;
  switch (op) {
#define EMBER_WIDE(E) \
  case U::E:          \
    return unary_run<U::E>(p, out, x, n), true;
    EMBER_WIDE(Exp)
    EMBER_WIDE(Expm1)
    EMBER_WIDE(Log)
    EMBER_WIDE(Log1p)
    EMBER_WIDE(Sin)
    EMBER_WIDE(Cos)
    EMBER_WIDE(Tanh)
    EMBER_WIDE(Sigmoid)
    EMBER_WIDE(Elu)
    EMBER_WIDE(Selu)
    EMBER_WIDE(Celu)
    EMBER_WIDE(Gelu)
    EMBER_WIDE(GeluTanh)
    EMBER_WIDE(Silu)
    EMBER_WIDE(Mish)
    EMBER_WIDE(Softplus)
    EMBER_WIDE(Erf)
    EMBER_WIDE(Erfc)
#undef EMBER_WIDE
    default: return false;
  }
}

bool binary_f32(ops::BinaryOp op, float* out, const float* a, const float* b, int64_t n) {
  using O = ops::BinaryOp;
  switch (op) {
    case O::GeluBackward: return binary_run<O::GeluBackward>(out, a, b, n), true;
    case O::SiluBackward: return binary_run<O::SiluBackward>(out, a, b, n), true;
    default: return false;
  }
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
