#pragma once
// Cascade summation: long floating-point sums as a binary tree of fixed-size blocks, so that
// rounding error grows with log2(n / block) rather than n. A sum of 2^20 floats added one by
// one into a single accumulator is off by ~1e-4 relative; by blocks and this cascade, ~1e-7,
// as PyTorch's cascade_sum. The kernels add each block of elements (a few dozen per
// accumulator, in SIMD lanes) and push the block's sum here.

#include <cstdint>

// In the per-ISA namespace (Note [One definition per instruction set] in meson.build).
namespace ember::cpu::EMBER_CPU_ARCH {

/// Level i holds the sum of 2^i consecutive blocks (a binary counter); `total` adds the
/// levels that are occupied. A (a scalar or an xsimd batch) needs only `+`.
template <class A>
class Cascade {
 public:
  explicit Cascade(const A& zero) : zero_(zero) {}
  void push(A block) {
    int i = 0;
    for (uint64_t c = count_; c & 1; c >>= 1, ++i) block = level_[i] + block;
    level_[i] = block;
    ++count_;
  }
  /// The sum of every block pushed, plus `rest` (a block not yet full). Only the levels up
  /// to the highest occupied one are visited: a reduction may take thousands of short totals.
  A total(const A& rest) const {
    if (count_ == 0) return rest;
    A s = zero_;
    int i = 0;
    for (uint64_t c = count_; c != 0; c >>= 1, ++i)
      if (c & 1) s = s + level_[i];
    return s + rest;
  }

 private:
  static constexpr int kLevels = 64;
  A zero_;
  A level_[kLevels];
  uint64_t count_ = 0;
};

}  // namespace ember::cpu::EMBER_CPU_ARCH
