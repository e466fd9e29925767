#pragma once
// take ? a : b computed with bit operations, for trivially copyable values of 1, 2, 4 or 8
// bytes. GCC 12 keeps a ternary on floats as a branch, which mispredicts on about every
// other element of random data (5-8x slower where and max pooling were measured); the mask
// form has no branch and vectorises. Used by the where kernel and the max-pool kernels.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ember::detail {

/// The unsigned integer of N bytes (N = 1, 2, 4 or 8).
template <size_t N>
using UIntOfSize = std::conditional_t<N == 1, uint8_t, std::conditional_t<N == 2, uint16_t,
                                      std::conditional_t<N == 4, uint32_t, uint64_t>>>;

// Always inlined: the kernels are compiled once per instruction set, and an out-of-line copy
// of this template would be shared by all of them (see kernels_cpu/meson.build).
template <class T>
[[gnu::always_inline]] inline T bit_select(bool take, T a, T b) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8));
  using U = UIntOfSize<sizeof(T)>;
  const U mask = static_cast<U>(U(0) - static_cast<U>(take));
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & static_cast<U>(~mask))));
}

}  // namespace ember::detail
