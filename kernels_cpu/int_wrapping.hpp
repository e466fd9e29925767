// Integer +, - and * that wrap modulo 2^bits, as PyTorch's integer arithmetic does (and as the
// xsimd batch forms do). Computed in uint64_t, so signed overflow, which is undefined in C++,
// never happens; shared by the elementwise functors and the accumulating kernels (sums,
// products, scans, scatter_add, index_add). Also: whether a factor given as a double (alpha,
// beta) is a value of an integer type, before it is converted to one.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
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

/// Whether v is an integer that T holds (converting any other v to T is undefined or
/// truncating; PyTorch refuses such Scalars). 64-bit types keep a margin below 2^63, which
/// the double nearest to INT64_MAX would exceed.
template <class T>
inline bool holds_integer(double v) {
  const double lo = sizeof(T) < 8 ? static_cast<double>(std::numeric_limits<T>::lowest()) : -9.2e18;
  const double hi = sizeof(T) < 8 ? static_cast<double>(std::numeric_limits<T>::max()) : 9.2e18;
  return std::trunc(v) == v && v >= lo && v <= hi;
}

}  // namespace ember::cpu
