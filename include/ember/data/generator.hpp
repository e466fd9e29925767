#pragma once
/// data::Generator: the random numbers of the data pipeline (shuffles, weighted draws, random
/// transforms). It is a value the caller owns, never global state, so a sampler or a transform
/// gives the same answer for the same seed whatever thread runs it and whatever ran before.
///
/// Note [Per-sample seeds]: the DataLoader gives each sample its own generator, seeded by
/// sample_seed(seed, epoch, index), and each batch one seeded by batch_seed(seed, epoch, b).
/// A random transform therefore draws the same numbers for sample `index` of epoch `epoch`
/// whether it runs on the caller or on any of N workers, in any order: batches are
/// bit-identical for every num_workers. The seed depends on the dataset index, not on the
/// position in the epoch, so a DistributedSampler rank sees the same augmentation of a sample
/// as a single process would. A sample drawn again in the same epoch (a sampler with
/// replacement oversampling a rare class, a DistributedSampler's padding) draws from another
/// stream of that seed, its repeat number, so each copy gets its own augmentation.

#include <ember/core/error.hpp>

#include <cstdint>

namespace ember::data {

/// The splitmix64 output function (a bijective mixer of 64 bits): the hash behind Generator
/// and the seed derivations below.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A counter-based generator: draw i of Generator(seed, stream) is a hash of (seed, stream, i),
/// so a generator costs two words, copies freely and never shares state.
class Generator {
 public:
  /// Independent streams for the same seed (e.g. one per epoch) come from `stream`.
  explicit Generator(uint64_t seed = 0, uint64_t stream = 0)
      : key_(mix64(mix64(seed) ^ mix64(stream + 0x6a09e667f3bcc909ULL))) {}

  /// 64 uniform bits.
  uint64_t next_u64() { return mix64(key_ + kGamma * ++counter_); }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, n), without modulo bias (multiply-shift with rejection); n > 0.
  uint64_t below(uint64_t n);
  /// Uniform integer in [low, high); high > low.
  int64_t randint(int64_t low, int64_t high) {
    EMBER_CHECK(high > low, "[Generator::randint] high ({}) must be greater than low ({})", high, low);
    return low + static_cast<int64_t>(below(static_cast<uint64_t>(high) - static_cast<uint64_t>(low)));
  }
  /// True with probability p.
  bool bernoulli(double p) { return uniform() < p; }
  /// How many 64-bit draws this generator has made.
  uint64_t draws() const { return counter_; }

 private:
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;  // odd: the counter walks all 2^64 values
  uint64_t key_;
  uint64_t counter_ = 0;
};

/// The seed of sample `index` in epoch `epoch` (see Note [Per-sample seeds]).
constexpr uint64_t sample_seed(uint64_t seed, uint64_t epoch, uint64_t index) {
  return mix64(mix64(mix64(seed ^ 0x243f6a8885a308d3ULL) + epoch) ^ mix64(index + 0x13198a2e03707344ULL));
}
/// The seed of batch `batch` in epoch `epoch`, used by random batch transforms; a different
/// domain from sample_seed, so batch 3 and sample 3 draw unrelated numbers.
constexpr uint64_t batch_seed(uint64_t seed, uint64_t epoch, uint64_t batch) {
  return mix64(mix64(mix64(seed ^ 0xa4093822299f31d0ULL) + epoch) ^ mix64(batch + 0x082efa98ec4e6c89ULL));
}

// implementation ---------------------------------------------------------------------------

inline uint64_t Generator::below(uint64_t n) {
  EMBER_CHECK(n > 0, "[Generator::below] n must be positive, got 0");
  // Lemire's method: the high word of x * n is uniform on [0, n) once the low word has
  // cleared the (2^64 mod n) values that would bias it.
  unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
  auto low = static_cast<uint64_t>(m);
  if (low < n) {
    uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(next_u64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

}  // namespace ember::data
