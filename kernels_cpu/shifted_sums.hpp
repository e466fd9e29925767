#pragma once
// Sums of f32 (or f64) values shifted by a pivot near their mean, in the build's vectors, for
// the normalisation kernels (layer_norm.cpp, batch_norm.cpp; Note [Shifted sums in batch
// normalisation] there): where the values' spread is small next to their mean, x - pivot keeps
// the spread's digits (exact where x is within 2x of the pivot) and the sums carry them.
// Included inside a per-ISA build's translation unit.

#include "simd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ember::cpu::EMBER_CPU_ARCH {

/// A float split in two: hi + lo is the f64 value to ~2^-48 relative. lo is 0 where hi is not
/// finite (an infinite mean stays one, inf - inf would make it NaN).
template <class T>
struct Split {
  T hi, lo;
  explicit Split(double v) : hi(static_cast<T>(v)), lo(T(0)) {
    if (std::isfinite(hi)) lo = static_cast<T>(v - static_cast<double>(hi));
  }
};

/// Runs of at most this many elements are summed in T lanes and their sums added in f64, so
/// that a long plane's partial sums do not grow past its values (a 65536-element plane's bias
/// gradient was 10x further from the f64 one than libtorch's f64 sums without runs; 256 keeps
/// SSE2's lanes to 64 additions each).
constexpr int64_t kChunk = 256;

/// A pivot for sums over values that start at x: the mean of the first (up to) n <= 64, so that
/// the shifted values are about centred and T lanes' partial sums do not grow with an offset;
/// 0 where that is not finite (x - inf is NaN).
template <class T>
T pivot(const T* x, int64_t n) {
  n = std::min<int64_t>(n, 64);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j];
  const T p = static_cast<T>(n ? s / static_cast<double>(n) : 0.0);
  return std::isfinite(p) ? p : T(0);
}

/// The sum of f(x) over x[0, n): f's values (a batch for a batch, a T for a T) summed in T
/// lanes over runs of kChunk, the runs' sums in f64.
template <class T, class F>
double chunked_sum(const T* x, int64_t n, F f) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  static_assert(kChunk % W == 0, "runs start on a vector boundary");
  double s = 0;
  int64_t j = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = std::min(n, c0 + kChunk);
    V acc(T(0));
    for (; j + W <= c1; j += W) acc += f(V::load_unaligned(x + j));
    s += xsimd::hadd(acc);
  }
  for (; j < n; ++j) s += f(x[j]);
  return s;
}

/// sum(x - p) over x[0, n), in T lanes
template <class T>
double shifted_sum(const T* x, int64_t n, T p) {
  return chunked_sum(x, n, [p](const auto& v) { return v - p; });
}

/// sum((x - hi)^2) over x[0, n), in T lanes (x - hi is exact where x is near hi)
template <class T>
double sq_dev(const T* x, int64_t n, T hi) {
  return chunked_sum(x, n, [hi](const auto& v) {
    const auto d = v - hi;
    return d * d;
  });
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
