// Samplers (include/ember/data/samplers.hpp). Each indices(epoch) is a pure function of the
// sampler's settings and the epoch; random ones build a fresh Generator(seed, epoch).

#include <ember/core/error.hpp>
#include <ember/data/generator.hpp>
#include <ember/data/samplers.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <numeric>
#include <utility>

namespace ember::data {

namespace {
/// A vector of n indices (zeros) or an Error naming `op`: a sampler size beyond memory must
/// fail as Ember's error, not escape as std::length_error or std::bad_alloc.
std::vector<int64_t> index_room(int64_t n, const char* op, bool filled) {
  std::vector<int64_t> v;
  EMBER_CHECK(n >= 0 && static_cast<uint64_t>(n) <= v.max_size(), "[{}] {} indices do not fit in memory", op, n);
#if EMBER_HAS_EXCEPTIONS
  try {
    if (filled) v.resize(static_cast<size_t>(n));
    else v.reserve(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    EMBER_CHECK(false, "[{}] out of memory for {} indices", op, n);
  }
#else
  if (filled) v.resize(static_cast<size_t>(n));
  else v.reserve(static_cast<size_t>(n));
#endif
  return v;
}
}  // namespace

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  EMBER_CHECK(n >= 0, "[random_permutation] n must be non-negative, got {}", n);
  std::vector<int64_t> p = index_room(n, "random_permutation", true);
  std::iota(p.begin(), p.end(), int64_t{0});
  Generator g(seed, static_cast<uint64_t>(epoch));
  // Fisher-Yates from the back: position i swaps with a uniform position in [0, i].
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[g.below(static_cast<uint64_t>(i) + 1)]);
  return p;
}

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  EMBER_CHECK(n >= 0, "[SequentialSampler] size must be non-negative, got {}", n);
}

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> p = index_room(n_, "SequentialSampler", true);
  std::iota(p.begin(), p.end(), int64_t{0});
  return p;
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed, bool replacement, std::optional<int64_t> num_samples)
    : n_(n), seed_(seed), replacement_(replacement), num_samples_(num_samples) {
  EMBER_CHECK(n >= 0, "[RandomSampler] size must be non-negative, got {}", n);
  EMBER_CHECK(!num_samples || *num_samples > 0, "[RandomSampler] num_samples must be positive (as PyTorch), got {}",
              num_samples.value_or(0));
  EMBER_CHECK(!num_samples || n > 0, "[RandomSampler] cannot draw {} samples from an empty dataset",
              num_samples.value_or(0));
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  if (!replacement_ && !num_samples_) return random_permutation(n_, seed_, epoch);
  const int64_t m = size();
  Generator g(seed_, static_cast<uint64_t>(epoch));
  std::vector<int64_t> out = index_room(m, "RandomSampler", false);
  if (replacement_) {
    for (int64_t k = 0; k < m; ++k) out.push_back(static_cast<int64_t>(g.below(static_cast<uint64_t>(n_))));
    return out;
  }
  // Permutations one after another (the first is random_permutation's), the last cut short.
  std::vector<int64_t> p = index_room(n_, "RandomSampler", true);
  while (static_cast<int64_t>(out.size()) < m) {
    std::iota(p.begin(), p.end(), int64_t{0});
    for (int64_t i = n_ - 1; i > 0; --i) std::swap(p[i], p[g.below(static_cast<uint64_t>(i) + 1)]);
    const int64_t take = std::min<int64_t>(n_, m - static_cast<int64_t>(out.size()));
    out.insert(out.end(), p.begin(), p.begin() + take);
  }
  return out;
}

SubsetSampler::SubsetSampler(std::vector<int64_t> indices, bool shuffle, uint64_t seed)
    : indices_(std::move(indices)), shuffle_(shuffle), seed_(seed) {
  for (size_t i = 0; i < indices_.size(); ++i)
    EMBER_CHECK(indices_[i] >= 0, "[SubsetSampler] index {} (at position {}) is negative", indices_[i], i);
}

std::vector<int64_t> SubsetSampler::indices(int64_t epoch) const {
  if (!shuffle_) return indices_;
  std::vector<int64_t> out;
  out.reserve(indices_.size());
  for (int64_t p : random_permutation(static_cast<int64_t>(indices_.size()), seed_, epoch))
    out.push_back(indices_[static_cast<size_t>(p)]);
  return out;
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                             uint64_t seed)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement), seed_(seed) {
  EMBER_CHECK(num_samples > 0, "[WeightedRandomSampler] num_samples must be positive (as PyTorch), got {}", num_samples);
  int64_t positive = 0;
  double largest = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    double w = weights_[i];
    EMBER_CHECK(std::isfinite(w) && w >= 0, "[WeightedRandomSampler] weight {} is {}; weights must be finite and >= 0",
                i, w);
    positive += w > 0;
    largest = std::max(largest, w);
  }
  // Only ratios matter: the prefix sums of the weights scaled to a largest of 1 cannot overflow
  // (1e308 x 3). (A ratio that underflows to 0 is drawn with probability 0, as it would be.)
  double total = 0;
  cumulative_.reserve(weights_.size());
  for (double w : weights_) cumulative_.push_back(total += largest > 0 ? w / largest : 0.0);
  EMBER_CHECK(num_samples == 0 || positive > 0,
              "[WeightedRandomSampler] all {} weights are zero; nothing can be drawn", weights_.size());
  EMBER_CHECK(replacement || num_samples <= positive,
              "[WeightedRandomSampler] cannot draw {} samples without replacement from {} indices of positive weight",
              num_samples, positive);
}

std::vector<int64_t> WeightedRandomSampler::indices(int64_t epoch) const {
  Generator g(seed_, static_cast<uint64_t>(epoch));
  std::vector<int64_t> out = index_room(num_samples_, "WeightedRandomSampler", false);
  if (num_samples_ == 0) return out;
  if (replacement_) {
    double total = cumulative_.back();
    // The last index of positive weight: where a draw rounded up to `total` belongs.
    auto last = static_cast<int64_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(),
                                                      std::nextafter(total, 0.0)) - cumulative_.begin());
    for (int64_t k = 0; k < num_samples_; ++k) {
      double x = g.uniform() * total;
      // First cumulative sum above x: index i is hit with probability w_i / total, never when w_i == 0.
      auto i = static_cast<int64_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin());
      out.push_back(std::min(i, last));
    }
    return out;
  }
  // Without replacement: give index i the key E_i / w_i with E_i ~ Exp(1); the indices in
  // increasing key order are successive draws proportional to the weights not yet drawn
  // (Efraimidis and Spirakis, 2006). Every index draws its key, so the list does not depend
  // on num_samples beyond its length.
  // Keys in log space, log E - log w: the same order as E / w, but finite for any positive
  // weight (E / 1e-310 overflows to inf, and ties would always favour the lowest indices).
  std::vector<std::pair<double, int64_t>> keys;
  keys.reserve(weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i) {
    double e = -std::log1p(-g.uniform());  // Exp(1); uniform() < 1 keeps it finite
    if (weights_[i] > 0) keys.emplace_back(std::log(e) - std::log(weights_[i]), static_cast<int64_t>(i));
  }
  EMBER_CHECK(static_cast<int64_t>(keys.size()) >= num_samples_,
              "[WeightedRandomSampler] {} indices of positive weight for {} draws without replacement", keys.size(),
              num_samples_);
  auto mid = keys.begin() + num_samples_;
  std::partial_sort(keys.begin(), mid, keys.end());  // ties broken by index: deterministic
  for (auto it = keys.begin(); it != mid; ++it) out.push_back(it->second);
  return out;
}

DistributedSampler::DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : n_(n), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed) {
  EMBER_CHECK(n >= 0, "[DistributedSampler] dataset size must be non-negative, got {}", n);
  EMBER_CHECK(num_replicas >= 1, "[DistributedSampler] num_replicas must be at least 1, got {}", num_replicas);
  EMBER_CHECK(rank >= 0 && rank < num_replicas, "[DistributedSampler] rank {} is outside [0, {})", rank,
              num_replicas);
  // As PyTorch: with drop_last, the tail that cannot be split evenly is dropped; otherwise the
  // list is padded up to the next multiple of num_replicas.
  // ceil((n - R) / R) = (n - 1) / R for n >= 1, and 0 when n < R; ceil(n / R) written so
  // that it cannot overflow.
  if (drop_last && n % num_replicas != 0)
    num_samples_ = (n - 1) / num_replicas;
  else
    num_samples_ = n / num_replicas + (n % num_replicas != 0);
  EMBER_CHECK(num_samples_ <= std::numeric_limits<int64_t>::max() / num_replicas,
              "[DistributedSampler] {} examples padded for {} replicas overflow int64", n, num_replicas);
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> all;
  if (shuffle_) {
    all = random_permutation(n_, seed_, epoch);
  } else {
    all = index_room(n_, "DistributedSampler", true);
    std::iota(all.begin(), all.end(), int64_t{0});
  }
  // Position i of the shared list, padded past n by repeating the list from its start as often
  // as needed (n may be below num_replicas); never built, as this rank reads only its share.
  // i < n + num_replicas: the padding is shorter than one round of replicas.
  std::vector<int64_t> mine = index_room(num_samples_, "DistributedSampler", false);
  for (int64_t k = 0; k < num_samples_; ++k) {
    const int64_t i = rank_ + k * num_replicas_;
    mine.push_back(all[static_cast<size_t>(i < n_ ? i : (i - n_) % n_)]);
  }
  return mine;
}

}  // namespace ember::data
