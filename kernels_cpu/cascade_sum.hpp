#pragma once
// Cascade summation: long floating-point sums as a binary tree of fixed-size blocks, so that
// rounding error grows with log2(n / block) rather than n. A sum of 2^20 floats added one by
// one into a single accumulator is off by ~1e-4 relative; by blocks and this cascade, ~1e-7,
// as PyTorch's cascade_sum. The kernels add each block of elements (a few dozen per
// accumulator, in SIMD lanes) and push the block's sum here.

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

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

/// Adds the range [0, n) into the accumulators `accs` through `accumulate(i0, i1)`. With
/// `cascade`, by blocks of `block`: after each block every accumulator's sum goes into its own
/// Cascade and restarts from `zero`, and at the end each holds its Cascade's total. Without,
/// in one pass (short sums, where rounding cannot grow much).
/// Always inlined: called out of line, it would keep the accumulators in memory (they are
/// passed by reference) and a GEMV's inner loop would store them at every step (2.3x slower).
template <class A, class F, class... Acc>
[[gnu::always_inline]] inline void add_by_blocks(int64_t n, int64_t block, bool cascade, const A& zero, F&& accumulate,
                                                 Acc&... accs) {
  if (!cascade) {
    accumulate(int64_t{0}, n);
    return;
  }
  std::tuple<Cascade<Acc>...> qs{Cascade<Acc>(zero)...};
  for (int64_t i0 = 0; i0 < n; i0 += block) {
    accumulate(i0, std::min(n, i0 + block));
    std::apply([&](auto&... q) { (q.push(std::exchange(accs, zero)), ...); }, qs);
  }
  std::apply([&](const auto&... q) { ((accs = q.total(accs)), ...); }, qs);
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
