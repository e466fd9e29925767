#pragma once
// Partial vectors: the first `count` lanes of an xsimd batch, for loops whose last few
// elements would otherwise run one at a time. A loop down the rows of a narrow matrix (x @ W
// with W of 8 columns) has no full vector at all, and its scalar columns ran one dependent
// chain each, several times slower than reading the same bytes in vectors.

#include "simd.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

// In the per-ISA namespace (Note [One definition per instruction set] in meson.build).
namespace ember::cpu::EMBER_CPU_ARCH {

/// Loads leave the other lanes zero and read nothing past the `count` elements; stores write
/// only those. The AVX2 and AVX-512 builds mask the lanes in hardware (AVX-512's masked loads
/// cost as much as plain ones); the baseline build goes through a small buffer.
template <class T>
class LeadingLanes {
 public:
  using V = xsimd::batch<T>;
  static constexpr int64_t kWidth = static_cast<int64_t>(V::size);

  /// 0 < count <= kWidth.
  explicit LeadingLanes(int64_t count) : count_(count) {
#if defined(__AVX512F__)
    if constexpr (kMasked16) mask16_ = static_cast<__mmask16>((1u << count) - 1);
#endif
#if defined(__AVX2__)
    if constexpr (kMasked8)
      mask256_ = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if constexpr (kMasked4) mask256_ = _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3));
#endif
  }

  V load(const T* p) const {
#if defined(__AVX512F__)
    if constexpr (kMasked16) return V(_mm512_maskz_loadu_ps(mask16_, p));
#endif
#if defined(__AVX2__)
    if constexpr (kMasked8) return V(_mm256_maskload_ps(p, mask256_));
    if constexpr (kMasked4) return V(_mm256_maskload_pd(p, mask256_));
#endif
    alignas(64) T buf[kWidth] = {};
    std::copy(p, p + count_, buf);
    return V::load_aligned(buf);
  }

  void store(T* p, const V& v) const {
#if defined(__AVX512F__)
    if constexpr (kMasked16) return _mm512_mask_storeu_ps(p, mask16_, v);
#endif
#if defined(__AVX2__)
    if constexpr (kMasked8) return _mm256_maskstore_ps(p, mask256_, v);
    if constexpr (kMasked4) return _mm256_maskstore_pd(p, mask256_, v);
#endif
    alignas(64) T buf[kWidth];
    v.store_aligned(buf);
    std::copy(buf, buf + count_, p);
  }

 private:
  static constexpr bool kIsFloat = std::is_same_v<T, float>;
#if defined(__AVX512F__)
  static constexpr bool kMasked16 = kIsFloat && kWidth == 16;
  __mmask16 mask16_ = 0;
#endif
#if defined(__AVX2__)
  static constexpr bool kMasked8 = kIsFloat && kWidth == 8;
  static constexpr bool kMasked4 = std::is_same_v<T, double> && kWidth == 4;
  __m256i mask256_ = _mm256_setzero_si256();
#endif
  int64_t count_;
};

}  // namespace ember::cpu::EMBER_CPU_ARCH
