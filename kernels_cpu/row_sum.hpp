#pragma once
// Sums over x[0, n) with the build's vectors (direct_conv.cpp's bias gradient).
// Included inside a per-ISA build's translation unit.

#include "simd.hpp"

#include <cstdint>

namespace ember::cpu::EMBER_CPU_ARCH {

template <class T>
T row_sum(const T* x, int64_t n) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  V acc(T(0));
  int64_t j = 0;
  for (; j + W <= n; j += W) acc += V::load_unaligned(x + j);
  T s = xsimd::hadd(acc);
  for (; j < n; ++j) s += x[j];
  return s;
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
