#pragma once
// Reductions of a 512-bit f32 vector's lanes, for the AVX-512 build's kernels (gemm.cpp's
// GEMV dot products, transcendental_wide.cpp's softmax lines): halves combined down to one
// lane, cheaper than xsimd 8.1's reductions, which go through 256-bit vhaddps.

#if defined(__AVX512F__)
#include <immintrin.h>

namespace ember::cpu::EMBER_CPU_ARCH {

/// The sum of a 512-bit vector's two 256-bit halves. Zero-masked extracts: GCC 12's unmasked
/// ones (and _mm512_reduce_add_ps, the 512->256 cast) start from an "undefined" vector that
/// trips its own -Wmaybe-uninitialized; an all-ones mask compiles to the plain instruction.
inline __m256 add_halves(__m512 v) {
  return _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0), _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
}

/// The sum of the 16 lanes.
inline float sum_lanes(__m512 v) {
  const __m256 h = add_halves(v);
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}

/// The largest of the 16 lanes (the same steps with max; extracts masked as above).
inline float max_lanes(__m512 v) {
  const __m256 h = _mm256_max_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0), _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
#endif
