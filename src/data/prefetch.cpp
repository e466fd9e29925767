// The DataLoader's workers (detail::PrefetchQueue in include/ember/data/dataloader.hpp).
//
// Why std::thread here and not Ember's executor (runtime/threading.hpp): parallel_for is a
// fork-join region. The caller blocks until every chunk is done, and only one region runs
// at a time (a second caller runs serially). Prefetching needs the opposite: work that goes
// on *while* the caller trains, outliving any one call. Running the loader inside the intra-op
// pool would also take the pool from the training step's own ops. So the loader owns its
// threads, for one epoch at most: they are joined when the epoch ends, when another epoch
// starts, or when the loader is destroyed. Ops called by the dataset on these threads still use
// the one executor for their own intra-op work.

#include <ember/core/error.hpp>
#include <ember/data/dataloader.hpp>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace ember::data::detail {

struct PrefetchQueue::Impl {
  Produce produce;
  int64_t capacity = 1, num_batches = 0;

  std::mutex m;
  std::condition_variable work_cv;   // workers wait for room (a slot freed) or stop
  std::condition_variable ready_cv;  // the consumer waits for the next batch in order
  int64_t next_claim = 0;            // the next batch a worker may start
  int64_t consumed = 0;              // batches handed to the consumer (or skipped by an error)
  bool acquired = false;             // the consumer holds slot consumed % capacity
  std::vector<char> ready;           // per slot: batch made (or failed)
#if EMBER_HAS_EXCEPTIONS
  std::vector<std::exception_ptr> errors;  // per slot: what making it threw
#endif
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;

  void worker() {
    for (;;) {
      int64_t b;
      {
        std::unique_lock<std::mutex> l(m);
        // The bound: batch b may start only while b < consumed + capacity, so no more than
        // `capacity` batches are ever in flight or waiting, and slot b % capacity is free.
        work_cv.wait(l, [&] { return stop || next_claim >= num_batches || next_claim < consumed + capacity; });
        if (stop || next_claim >= num_batches) return;
        b = next_claim++;
      }
      int64_t slot = b % capacity;
#if EMBER_HAS_EXCEPTIONS
      std::exception_ptr error;
      try {
        produce(b, slot, stop);
      } catch (...) {
        error = std::current_exception();
      }
#else
      produce(b, slot, stop);  // an error calls the installed handler, which does not return
#endif
      {
        std::lock_guard<std::mutex> l(m);
        if (stop) return;
        ready[static_cast<size_t>(slot)] = 1;
#if EMBER_HAS_EXCEPTIONS
        errors[static_cast<size_t>(slot)] = std::move(error);
#endif
      }
      ready_cv.notify_all();
    }
  }

  void shutdown() noexcept {
    {
      std::lock_guard<std::mutex> l(m);
      stop = true;
    }
    work_cv.notify_all();
    for (auto& t : threads)
      if (t.joinable()) t.join();
    threads.clear();
  }
};

PrefetchQueue::PrefetchQueue(int64_t num_workers, int64_t capacity, int64_t num_batches, Produce produce)
    : impl_(std::make_unique<Impl>()) {
  EMBER_CHECK(num_workers >= 1 && capacity >= 1, "[DataLoader] need at least one worker and one slot, got {} and {}",
              num_workers, capacity);
  Impl& q = *impl_;
  q.produce = std::move(produce);
  q.capacity = capacity;
  q.num_batches = num_batches;
  q.ready.assign(static_cast<size_t>(capacity), 0);
#if EMBER_HAS_EXCEPTIONS
  q.errors.resize(static_cast<size_t>(capacity));
  try {
#endif
    for (int64_t i = 0; i < num_workers; ++i) q.threads.emplace_back([&q] { q.worker(); });
#if EMBER_HAS_EXCEPTIONS
  } catch (...) {  // could not start a thread: stop the ones already running before failing
    q.shutdown();
    throw;
  }
#endif
}

PrefetchQueue::~PrefetchQueue() { impl_->shutdown(); }

int64_t PrefetchQueue::acquire() {
  Impl& q = *impl_;
  std::unique_lock<std::mutex> l(q.m);
  EMBER_CHECK(!q.acquired, "[DataLoader] internal: acquire() before the previous batch was released");
  if (q.consumed >= q.num_batches) return -1;
  auto slot = static_cast<size_t>(q.consumed % q.capacity);
  q.ready_cv.wait(l, [&] { return q.ready[slot] != 0; });
#if EMBER_HAS_EXCEPTIONS
  if (q.errors[slot]) {
    std::exception_ptr e = std::move(q.errors[slot]);
    q.errors[slot] = nullptr;
    q.ready[slot] = 0;
    ++q.consumed;
    l.unlock();
    q.work_cv.notify_all();
    std::rethrow_exception(e);
  }
#endif
  q.acquired = true;
  return static_cast<int64_t>(slot);
}

void PrefetchQueue::release() {
  Impl& q = *impl_;
  {
    std::lock_guard<std::mutex> l(q.m);
    EMBER_CHECK(q.acquired, "[DataLoader] internal: release() without acquire()");
    q.ready[static_cast<size_t>(q.consumed % q.capacity)] = 0;
    q.acquired = false;
    ++q.consumed;
  }
  q.work_cv.notify_all();
}

int64_t PrefetchQueue::started() const {
  std::lock_guard<std::mutex> l(impl_->m);
  return impl_->next_claim;
}

}  // namespace ember::data::detail
