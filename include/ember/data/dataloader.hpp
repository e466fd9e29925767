#pragma once
/// DataLoader: batches of a dataset, one epoch per iteration, optionally made ahead of time by
/// background workers.
///
///   data::TensorDataset ds({x, y});
///   data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(2));
///   for (int64_t epoch = 0; epoch < 10; ++epoch)
///     for (auto& batch : loader) train_step(batch[0], batch[1]);   // each epoch reshuffles
///
/// Determinism: the batches depend only on the dataset, the options (seed included) and the
/// epoch, never on num_workers or on timing. The sampler is a pure function of the epoch, and
/// random transforms draw from per-sample generators (Note [Per-sample seeds] in
/// data/generator.hpp), so num_workers = 0, 1 or 8 give bit-identical batches.
///
/// Epochs: each iteration (begin() or the first next() after the previous epoch ended) uses
/// epoch(), then advances it by one; set_epoch(e) chooses the epoch of the next iteration.
///
/// Workers: with num_workers > 0, that many threads make batches in order of batch index; at
/// most prefetch batches (default 2 x num_workers) are in flight or waiting, counting from
/// the next one the caller will take. An exception thrown while making a batch is rethrown
/// to the caller, intact, at that batch (from the iterator's first comparison or read, from
/// ++, or from next()); with the iterator (or next()) kept, the epoch goes on with the
/// following batch. Each begin() starts an epoch of its own (loops over one loader may nest,
/// as in PyTorch; next() keeps an epoch of its own too); when its last iterator goes, or the
/// loader is destroyed, mid-epoch, its workers stop after the sample each is reading and are
/// joined.
/// A DataLoader is used from one thread; the dataset's get() is called from the workers.

#include <ember/data/collate.hpp>
#include <ember/data/dataset.hpp>
#include <ember/data/samplers.hpp>
#include <ember/nn/options.hpp>

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace ember::data {

/// DataLoader settings, with fluent setters: DataLoaderOptions().batch_size(32).shuffle(true).
struct DataLoaderOptions {
  DataLoaderOptions() = default;
  explicit DataLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}
  /// Examples per batch.
  EMBER_ARG(int64_t, batch_size) = 1;
  /// Visit the dataset in a new random order each epoch (a RandomSampler over the seed).
  EMBER_ARG(bool, shuffle) = false;
  /// Drop the last batch when it would be smaller than batch_size.
  EMBER_ARG(bool, drop_last) = false;
  /// Background threads making batches; 0 makes them on the caller's thread.
  EMBER_ARG(int64_t, num_workers) = 0;
  /// Most batches made ahead of the caller (in flight or ready); 0 means 2 x num_workers.
  EMBER_ARG(int64_t, prefetch) = 0;
  /// Seeds the shuffle and every random transform (Note [Per-sample seeds]).
  EMBER_ARG(uint64_t, seed) = 0;
};

namespace detail {
/// The workers of one epoch and the bounded, in-order hand-off of their batches. Not
/// templated: the threading is compiled once (src/data/prefetch.cpp); the DataLoader gives
/// it a function that makes batch b into slot s.
class PrefetchQueue {
 public:
  /// Makes batch `batch` into slot `slot`; may return early (leaving the slot empty) once
  /// `stop` is set. An exception it throws is handed to the consumer at that batch.
  using Produce = std::function<void(int64_t batch, int64_t slot, const std::atomic<bool>& stop)>;

  /// Starts `num_workers` threads over batches 0..num_batches-1, with `capacity` slots.
  PrefetchQueue(int64_t num_workers, int64_t capacity, int64_t num_batches, Produce produce);
  /// Stops the workers (each finishes the sample it is reading) and joins them.
  ~PrefetchQueue();
  PrefetchQueue(const PrefetchQueue&) = delete;
  PrefetchQueue& operator=(const PrefetchQueue&) = delete;

  /// Waits for the next batch in order and returns its slot, or -1 after the last batch. If
  /// making that batch threw, the batch is skipped and the exception rethrown here.
  int64_t acquire();
  /// Hands back the slot of the last acquire() once its batch has been moved out.
  void release();
  /// Batches started so far (for tests of the prefetch bound).
  int64_t started() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// For each position of an epoch's index list, how many earlier positions hold the same
/// index (its repeat number; see Note [Per-sample seeds]); empty when no index repeats, as
/// with every sampler that draws without replacement. Indices outside [0, size) count as 0.
std::vector<uint32_t> repeat_numbers(const std::vector<int64_t>& indices, int64_t size);
}  // namespace detail

template <Dataset D, class Collate = Stack>
class DataLoader {
 public:
  using dataset_type = D;
  using example_type = example_t<D>;
  using batch_type = decltype(invoke_collate(std::declval<const Collate&>(), std::declval<std::vector<example_type>>(),
                                             std::declval<Generator&>()));

  class Iterator;

  /// Batches of `dataset` in sampler order: shuffled per epoch if options.shuffle().
  explicit DataLoader(D dataset, DataLoaderOptions options = {}, Collate collate = {})
      : DataLoader(std::move(dataset), options, nullptr, std::move(collate)) {}
  /// Batches of the indices `sampler` gives (options.shuffle() must then be false).
  DataLoader(D dataset, DataLoaderOptions options, std::shared_ptr<const Sampler> sampler, Collate collate = {});
  // Workers hold a pointer to the loader: it stays where it was made.
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Starts an epoch and returns an iterator at its first batch. Each begin() is an epoch of
  /// its own with its own workers, as each iter() of a PyTorch DataLoader: loops over one
  /// loader may nest. The epoch stops (its workers are joined) when its last iterator goes.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

  /// The next batch, starting an epoch when none is in progress; nullopt once the epoch is
  /// over (the call after that starts the next epoch). Independent of the iterators' epochs.
  std::optional<batch_type> next() {
    if (!run_) run_ = start_run();
    std::optional<batch_type> b = fetch(*run_);
    if (!b) run_.reset();
    return b;
  }

  /// The epoch the next iteration will use.
  int64_t epoch() const { return epoch_; }
  /// Chooses the epoch of the next iteration (the one in progress, if any, is unchanged).
  void set_epoch(int64_t epoch) {
    EMBER_CHECK(epoch >= 0, "[DataLoader] epoch must be non-negative, got {}", epoch);
    epoch_ = epoch;
  }
  /// Batches per epoch.
  int64_t size() const { return batches_for(sampler_->size()); }
  const D& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  const Sampler& sampler() const { return *sampler_; }
  /// Batches started so far by the workers of the epoch started last (0 without workers, or
  /// once that epoch has stopped).
  int64_t batches_started() const {
    std::shared_ptr<Run> r = latest_.lock();
    return r && r->queue ? r->queue->started() : 0;
  }
  /// Stops and joins the workers of every epoch still running, even those that iterators
  /// outliving the loader hold (such iterators must not be used any more).
  ~DataLoader() {
    for (std::weak_ptr<Run>& w : runs_)
      if (std::shared_ptr<Run> r = w.lock()) r->queue.reset();
  }

 private:
  struct Run {
    int64_t epoch = 0;
    std::vector<int64_t> indices;
    std::vector<uint32_t> repeat;  // see detail::repeat_numbers
    int64_t num_batches = 0;
    int64_t next_batch = 0;  // without workers: the next batch to make
    bool started = false;    // an iterator has made (or tried to make) the first batch
    std::optional<batch_type> current;
    std::vector<std::optional<batch_type>> slots;
    // Declared last, so destroyed first: the workers are joined before the slots they fill go.
    std::unique_ptr<detail::PrefetchQueue> queue;
  };

  /// Batches for n indices: the last one short unless drop_last (no n + bs - 1: bs may be huge).
  int64_t batches_for(int64_t n) const {
    const int64_t bs = options_.batch_size();
    return options_.drop_last() ? n / bs : n / bs + (n % bs != 0);
  }
  std::shared_ptr<Run> start_run();
  std::optional<batch_type> make_batch(const Run& run, int64_t b, const std::atomic<bool>* stop) const;
  std::optional<batch_type> fetch(Run& run);

  D dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<const Sampler> sampler_;
  Collate collate_;
  int64_t epoch_ = 0;
  std::vector<std::weak_ptr<Run>> runs_;  // every epoch started, to stop those still running
  std::weak_ptr<Run> latest_;
  std::shared_ptr<Run> run_;  // next()'s epoch; last: joined before the dataset and collate it uses go

 public:
  /// Input iterator over the batches of one epoch; compare with end() (a sentinel). Copies
  /// share the epoch.
  class Iterator {
   public:
    using value_type = batch_type;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::input_iterator_tag;

    Iterator() = default;
    /// The current batch (moving out of it is allowed).
    batch_type& operator*() const { return current(); }
    batch_type* operator->() const { return &current(); }
    Iterator& operator++() {
      first();
      EMBER_CHECK(run_, "[DataLoader] iterator advanced past the end of the epoch");
      fetch_next();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, std::default_sentinel_t) {
      it.first();
      return !it.run_;
    }

   private:
    friend class DataLoader;
    Iterator(DataLoader* loader, std::shared_ptr<Run> run) : loader_(loader), run_(std::move(run)) {}
    // The first batch is made when the iterator is first compared, read or advanced, not by
    // begin(): an exception from it then leaves this iterator (and its epoch) alive, and ++
    // goes on with the next batch, as after any other batch that threw.
    // The flag lives in the epoch, shared by copies of the iterator: one first batch for all.
    void first() const {
      if (!run_ || run_->started) return;
      run_->started = true;
      fetch_next();
    }
    void fetch_next() const {
      run_->current.reset();  // free the previous batch before making room for the next
      run_->current = loader_->fetch(*run_);
      if (!run_->current) run_.reset();  // the end: the epoch's workers are joined here
    }
    batch_type& current() const {
      first();
      EMBER_CHECK(run_ && run_->current,
                  "[DataLoader] no current batch (the epoch is over, or making the batch threw)");
      return *run_->current;
    }
    DataLoader* loader_ = nullptr;
    mutable std::shared_ptr<Run> run_;
  };
};

/// DataLoader(ds, options, std::make_shared<SomeSampler>(...)) takes the sampler, not a collate.
template <Dataset D, class S>
  requires std::derived_from<S, Sampler>
DataLoader(D, DataLoaderOptions, std::shared_ptr<S>) -> DataLoader<D, Stack>;

// implementation ---------------------------------------------------------------------------

template <Dataset D, class Collate>
DataLoader<D, Collate>::DataLoader(D dataset, DataLoaderOptions options, std::shared_ptr<const Sampler> sampler,
                                   Collate collate)
    : dataset_(std::move(dataset)), options_(options), sampler_(std::move(sampler)), collate_(std::move(collate)) {
  EMBER_CHECK(options_.batch_size() >= 1, "[DataLoader] batch_size must be at least 1, got {}", options_.batch_size());
  EMBER_CHECK(options_.num_workers() >= 0, "[DataLoader] num_workers must be non-negative, got {}",
              options_.num_workers());
  EMBER_CHECK(options_.prefetch() >= 0, "[DataLoader] prefetch must be non-negative, got {}", options_.prefetch());
  auto n = static_cast<int64_t>(dataset_.size());
  if (sampler_) {
    EMBER_CHECK(!options_.shuffle(), "[DataLoader] shuffle=true cannot be combined with a sampler (shuffle in the "
                                     "sampler instead)");
  } else if (options_.shuffle()) {
    sampler_ = std::make_shared<RandomSampler>(n, options_.seed());
  } else {
    sampler_ = std::make_shared<SequentialSampler>(n);
  }
}

template <Dataset D, class Collate>
auto DataLoader<D, Collate>::begin() -> Iterator {
  return Iterator(this, start_run());  // the first batch comes with the first use
}

template <Dataset D, class Collate>
auto DataLoader<D, Collate>::start_run() -> std::shared_ptr<Run> {
  std::erase_if(runs_, [](const std::weak_ptr<Run>& w) { return w.expired(); });
  auto run = std::make_shared<Run>();
  run->epoch = epoch_++;
  run->indices = sampler_->indices(run->epoch);
  run->repeat = detail::repeat_numbers(run->indices, static_cast<int64_t>(dataset_.size()));
  run->num_batches = batches_for(static_cast<int64_t>(run->indices.size()));
  int64_t workers = options_.num_workers();
  if (workers > 0 && run->num_batches > 0) {
    // At most one slot per batch of the epoch: a large prefetch asks for "all of them".
    int64_t capacity = std::min(options_.prefetch() > 0 ? options_.prefetch() : 2 * workers, run->num_batches);
    run->slots.resize(static_cast<size_t>(capacity));
    Run* r = run.get();
    run->queue = std::make_unique<detail::PrefetchQueue>(
        std::min(workers, run->num_batches), capacity, run->num_batches,
        [this, r](int64_t b, int64_t slot, const std::atomic<bool>& stop) {
          std::optional<batch_type> batch = make_batch(*r, b, &stop);
          if (!batch) return;
          // See Note [Batches cross threads] in data/collate.hpp.
          detail::for_each_tensor(*batch, [](Tensor& t) { t = detail::own_memory(t); });
          r->slots[static_cast<size_t>(slot)] = std::move(batch);
        });
  }
  runs_.push_back(run);
  latest_ = run;
  return run;
}

template <Dataset D, class Collate>
auto DataLoader<D, Collate>::make_batch(const Run& run, int64_t b, const std::atomic<bool>* stop) const
    -> std::optional<batch_type> {
  auto n = static_cast<int64_t>(run.indices.size()), bs = options_.batch_size();
  int64_t first = b * bs, last = std::min(first + bs, n);
  auto size = static_cast<int64_t>(dataset_.size());
  std::vector<example_type> examples;
  examples.reserve(static_cast<size_t>(last - first));
  for (int64_t p = first; p < last; ++p) {
    if (stop && stop->load(std::memory_order_relaxed)) return std::nullopt;
    int64_t i = run.indices[static_cast<size_t>(p)];
    EMBER_CHECK(i >= 0 && i < size, "[DataLoader] the sampler gave index {} (position {} of epoch {}), outside a "
                                    "dataset of {} examples", i, p, run.epoch, size);
    SampleContext ctx = SampleContext::make(options_.seed(), run.epoch, i,
                                            run.repeat.empty() ? 0 : run.repeat[static_cast<size_t>(p)]);
    examples.push_back(get_example(dataset_, i, ctx));
  }
  Generator rng(batch_seed(options_.seed(), static_cast<uint64_t>(run.epoch), static_cast<uint64_t>(b)));
  return invoke_collate(collate_, std::move(examples), rng);
}

template <Dataset D, class Collate>
auto DataLoader<D, Collate>::fetch(Run& r) -> std::optional<batch_type> {
  if (!r.queue) {
    if (r.next_batch >= r.num_batches) return std::nullopt;
    // Count the batch before making it: if it throws, the next call goes on with the next one.
    int64_t b = r.next_batch++;
    return make_batch(r, b, nullptr);
  }
  int64_t slot = r.queue->acquire();
  if (slot < 0) return std::nullopt;
  std::optional<batch_type> out = std::move(r.slots[static_cast<size_t>(slot)]);
  r.slots[static_cast<size_t>(slot)].reset();
  r.queue->release();
  return out;
}

}  // namespace ember::data
