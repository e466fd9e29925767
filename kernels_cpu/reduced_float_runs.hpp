#pragma once
// Runs of f16/bf16 values converted to float and back, for the elementwise driver and copies.
// Eight at a time where the build can (F16C for f16 in the AVX2 build, integer shifts for
// bf16 with AVX2), one at a time otherwise. Every path gives Half/BFloat16's own conversions:
// round to nearest even, NaN stays NaN (F16C keeps the payload's top bits, the scalar code
// drops them; both are quiet NaNs).
//
// Pointers are bytes: f16 data from user memory (from_blob) need not be 2-byte aligned.

#include <ember/core/half.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace ember::cpu::EMBER_CPU_ARCH {

/// dst[0, n) = float(src[0, n)) for R = Half or BFloat16, src contiguous.
template <class R>
inline void widen_run(const char* src, float* dst, int64_t n) {
  int64_t k = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<R, Half>) {
    for (; k + 8 <= n; k += 8) {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * k));
      _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(h));
    }
  }
#endif
#if defined(__AVX2__)
  if constexpr (std::is_same_v<R, BFloat16>) {
    for (; k + 8 <= n; k += 8) {
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * k));
      __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
      _mm256_storeu_ps(dst + k, _mm256_castsi256_ps(w));
    }
  }
#endif
  for (; k < n; ++k) {
    R v;
    std::memcpy(&v, src + 2 * k, 2);
    dst[k] = static_cast<float>(v);
  }
}

/// dst[0, n) = R(src[0, n)) for R = Half or BFloat16, dst contiguous.
template <class R>
inline void narrow_run(const float* src, char* dst, int64_t n) {
  int64_t k = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<R, Half>) {
    for (; k + 8 <= n; k += 8) {
      __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + k), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * k), h);
    }
  }
#endif
#if defined(__AVX2__)
  if constexpr (std::is_same_v<R, BFloat16>) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000),
                  round = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
    for (; k + 8 <= n; k += 8) {
      __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + k));
      // As float_to_bf16_bits: x + 0x7fff + (bit 16 of x), top half; NaN: top half, quiet bit set.
      __m256i rounded = _mm256_srli_epi32(
          _mm256_add_epi32(x, _mm256_add_epi32(round, _mm256_and_si256(_mm256_srli_epi32(x, 16), one))), 16);
      __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
      __m256i as_nan = _mm256_or_si256(_mm256_srli_epi32(x, 16), quiet);
      __m256i r = _mm256_blendv_epi8(rounded, as_nan, nan);
      // 32-bit lanes (values < 2^16) to 16 bits: pack within each 128-bit half, then order them.
      __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * k), _mm256_castsi256_si128(packed));
    }
  }
#endif
  for (; k < n; ++k) {
    R v(src[k]);
    std::memcpy(dst + 2 * k, &v, 2);
  }
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
