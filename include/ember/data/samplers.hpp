#pragma once
/// Samplers: which dataset indices an epoch visits, in which order.
///
/// A sampler is a pure function of its settings and the epoch: `indices(epoch)` returns the
/// same list every time it is asked, on any thread. Random samplers own their generator
/// (seeded from (seed, epoch)), so reshuffling per epoch is deterministic and nothing depends
/// on ember::manual_seed or on what else drew random numbers.
///
///   auto s = std::make_shared<data::DistributedSampler>(ds.size(), world_size, rank);
///   data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(32), s);

#include <cstdint>
#include <optional>
#include <vector>

namespace ember::data {

/// The interface the DataLoader takes. One virtual call per epoch; nothing per sample.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices visited in epoch `epoch`, in order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  /// How many indices every epoch yields.
  virtual int64_t size() const = 0;
};

/// 0, 1, ..., n-1 every epoch.
class SequentialSampler final : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
};

/// A permutation of 0..n-1 (without replacement), a new one each epoch, from Generator(seed,
/// epoch) by Fisher-Yates. As PyTorch's RandomSampler, `num_samples` (default n) may ask for
/// more or fewer: without replacement, whole permutations one after another and the start of
/// one more; with `replacement`, independent uniform draws.
class RandomSampler final : public Sampler {
 public:
  explicit RandomSampler(int64_t n, uint64_t seed = 0, bool replacement = false,
                         std::optional<int64_t> num_samples = std::nullopt);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return num_samples_.value_or(n_); }

 private:
  int64_t n_;
  uint64_t seed_;
  bool replacement_;
  std::optional<int64_t> num_samples_;
};

/// The given indices, in order or (shuffle) permuted per epoch as RandomSampler does.
class SubsetSampler final : public Sampler {
 public:
  explicit SubsetSampler(std::vector<int64_t> indices, bool shuffle = false, uint64_t seed = 0);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }

 private:
  std::vector<int64_t> indices_;
  bool shuffle_;
  uint64_t seed_;
};

/// `num_samples` indices drawn with probability proportional to `weights` (which need not sum
/// to 1). With replacement an index may repeat; without, each draw is made among the indices
/// not yet drawn (so num_samples may not exceed the number of positive weights).
class WeightedRandomSampler final : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        uint64_t seed = 0);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return num_samples_; }

 private:
  std::vector<double> weights_;
  std::vector<double> cumulative_;  // for draws with replacement: prefix sums of the weights / largest
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

/// Rank `rank`'s share of a dataset of n examples split over `num_replicas` processes, as
/// PyTorch's DistributedSampler: every rank permutes 0..n-1 the same way (same seed and
/// epoch), the list is padded by repeating its start (or, with drop_last, cut) to a multiple
/// of num_replicas, and rank r takes positions r, r + num_replicas, ... So all ranks yield
/// size() indices and, without drop_last, together cover every index.
class DistributedSampler final : public Sampler {
 public:
  DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return num_samples_; }
  /// num_replicas * size(): the padded (or cut) length of the list all ranks share.
  int64_t total_size() const { return num_samples_ * num_replicas_; }

 private:
  int64_t n_, num_replicas_, rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t num_samples_;  // per rank; drop_last only changes this
};

/// A uniform permutation of 0..n-1 drawn from Generator(seed, epoch) (Fisher-Yates); what
/// RandomSampler, SubsetSampler and DistributedSampler shuffle with.
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace ember::data
