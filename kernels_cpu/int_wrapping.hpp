// Integer +, - and * that wrap modulo 2^bits, as PyTorch's integer arithmetic does (and as the
// xsimd batch forms do). Computed in uint64_t, so signed overflow, which is undefined in C++,
// never happens; shared by the elementwise functors and the accumulating kernels (sums,
// products, scans, scatter_add, index_add).
#pragma once

#include <cstdint>
#include <type_traits>

namespace ember::cpu {

template <class S>
inline S wrapping(S a, S b, char op) {
  const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
  return static_cast<S>(op == '+' ? x + y : op == '-' ? x - y : x * y);
}
/// a + b and a * b of an accumulator type: wrapping for integers, plain for floats.
template <class S>
inline S add_wrapping(S a, S b) {
  if constexpr (std::is_integral_v<S>) return wrapping(a, b, '+');
  else return a + b;
}
template <class S>
inline S mul_wrapping(S a, S b) {
  if constexpr (std::is_integral_v<S>) return wrapping(a, b, '*');
  else return a * b;
}

}  // namespace ember::cpu
