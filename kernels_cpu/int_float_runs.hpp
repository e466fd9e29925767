#pragma once
// Contiguous runs of conversions between 8/32-bit integers and f32, eight at a time in the
// AVX2 build (the per-ISA files are built at -O2, where GCC does not vectorise these loops).
// Each gives exactly the scalar convert() of elementwise.cpp: integers to float round to
// nearest; float to integer truncates toward zero, saturates at the type's range and maps
// NaN to 0. Returns how many leading elements it converted; the caller does the rest.

#include <cstdint>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ember::cpu::EMBER_CPU_ARCH {

template <class To, class From>
inline int64_t int_float_run(To* out, const From* x, int64_t n) {
  int64_t k = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<To, float> && (std::is_same_v<From, uint8_t> || std::is_same_v<From, int8_t>)) {
    for (; k + 8 <= n; k += 8) {  // images: u8 pixels to f32
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + k));
      const __m256i i = std::is_same_v<From, uint8_t> ? _mm256_cvtepu8_epi32(b) : _mm256_cvtepi8_epi32(b);
      _mm256_storeu_ps(out + k, _mm256_cvtepi32_ps(i));
    }
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, int32_t>) {
    for (; k + 8 <= n; k += 8)
      _mm256_storeu_ps(out + k, _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k))));
  } else if constexpr (std::is_same_v<To, uint8_t> && std::is_same_v<From, float>) {
    // max(x, 0) is 0 for NaN (maxps returns its second operand), then min with 255: in range,
    // so truncation and the unsigned packs cannot saturate differently from the scalar code.
    const __m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.f);
    for (; k + 8 <= n; k += 8) {
      const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(x + k), lo), hi);
      const __m256i i = _mm256_cvttps_epi32(v);
      const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), _mm_packus_epi16(w, w));
    }
  } else if constexpr (std::is_same_v<To, int32_t> && std::is_same_v<From, float>) {
    // cvttps gives INT_MIN for NaN and out of range: INT_MIN is right below the range; above
    // it (x >= 2^31) the result is INT_MAX, and NaN lanes are cleared to 0.
    const __m256 top = _mm256_set1_ps(2147483648.f);
    for (; k + 8 <= n; k += 8) {
      const __m256 v = _mm256_loadu_ps(x + k);
      __m256i i = _mm256_cvttps_epi32(v);
      const __m256i over = _mm256_castps_si256(_mm256_cmp_ps(v, top, _CMP_GE_OQ));
      i = _mm256_blendv_epi8(i, _mm256_set1_epi32(INT32_MAX), over);
      i = _mm256_and_si256(i, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), i);
    }
  }
#endif
  (void)out, (void)x, (void)n;
  return k;
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
