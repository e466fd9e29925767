#pragma once
// Vectors of doubles loaded from and stored to floats, for kernels that do an f32 row's
// arithmetic in f64 (layer_norm.cpp: its mean and its gradients cancel, see there).
// Included inside a per-ISA build's translation unit, after simd.hpp. xsimd 8's converting
// loads and stores go through a buffer on the stack, element by element; these are one
// conversion instruction each.

#include "simd.hpp"

#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace ember::cpu::EMBER_CPU_ARCH {

using VD = xsimd::batch<double>;

inline VD load_f64(const double* p) { return VD::load_unaligned(p); }
inline void store_f64(double* p, VD v) { v.store_unaligned(p); }

/// VD::size floats from p, widened.
inline VD load_f64(const float* p) {
#if defined(__AVX512F__)
  static_assert(VD::size == 8);
  return _mm512_cvtps_pd(_mm256_loadu_ps(p));
#elif defined(__AVX__)
  static_assert(VD::size == 4);
  return _mm256_cvtps_pd(_mm_loadu_ps(p));
#elif defined(__SSE2__)
  static_assert(VD::size == 2);
  return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#elif defined(__aarch64__)
  static_assert(VD::size == 2);
  return vcvt_f64_f32(vld1_f32(p));
#else
  alignas(64) double b[VD::size];
  for (std::size_t i = 0; i < VD::size; ++i) b[i] = p[i];
  return VD::load_aligned(b);
#endif
}

/// v rounded to floats (to nearest), stored at p[0, VD::size).
inline void store_f64(float* p, VD v) {
#if defined(__AVX512F__)
  _mm256_storeu_ps(p, _mm512_cvtpd_ps(v));
#elif defined(__AVX__)
  _mm_storeu_ps(p, _mm256_cvtpd_ps(v));
#elif defined(__SSE2__)
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_castps_si128(_mm_cvtpd_ps(v)));
#elif defined(__aarch64__)
  vst1_f32(p, vcvt_f32_f64(v));
#else
  alignas(64) double b[VD::size];
  v.store_aligned(b);
  for (std::size_t i = 0; i < VD::size; ++i) p[i] = static_cast<float>(b[i]);
#endif
}

/// The sum of x[0, n) in f64.
template <class T>
double sum_f64(const T* x, int64_t n) {
  constexpr int64_t W = VD::size;
  VD acc(0.0);
  int64_t j = 0;
  for (; j + W <= n; j += W) acc += load_f64(x + j);
  double s = xsimd::hadd(acc);
  for (; j < n; ++j) s += x[j];
  return s;
}

/// The sum of (x - m)^2 over x[0, n) in f64.
template <class T>
double sq_dev_f64(const T* x, int64_t n, double m) {
  constexpr int64_t W = VD::size;
  VD acc(0.0);
  const VD mv(m);
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    const VD d = load_f64(x + j) - mv;
    acc = xsimd::fma(d, d, acc);
  }
  double s = xsimd::hadd(acc);
  for (; j < n; ++j) s += (x[j] - m) * (x[j] - m);
  return s;
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
