// The intra-op thread pool: a fixed set of workers woken per parallel region. Work is split
// into chunks claimed through one atomic word; the caller works too.

#include <ember/core/allocator.hpp>
#include <ember/core/error.hpp>
#include <ember/runtime/threading.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ember {
namespace {

// How long idle workers poll before sleeping (set_worker_spin_us).
std::atomic<int64_t> g_spin_us{50};

// True on pool workers and on a thread inside a region: nested regions run serially.
thread_local bool t_in_region = false;

/// What a parallel region runs: fn(ctx, begin, end) once per chunk of [0, n).
struct Region {
  void* ctx;
  void (*fn)(void*, int64_t, int64_t);
  int64_t n, chunk, nchunks;
  /// Chunks taken per claim: with thousands of small chunks (one image plane each), claiming
  /// them one at a time made the threads fight over the claim word and `done` (cnn_small_step's max
  /// pooling, 2048 chunks: slower at 2 threads than at 1). fn still runs once per chunk, so
  /// what a chunk computes never depends on this.
  int64_t claim = 1;
};

/// The workers and the one region they serve at a time. The region's description lives in the
/// pool, not in the caller's frame, and a thread reads it only after it has claimed chunks: a
/// region cannot end while chunks are claimed and not counted done, so what a claimant reads
/// is the region it claimed from, and no worker can touch a finished region. (The region used
/// to live in the caller's frame, and the caller waited at the end for every worker that might
/// still look at it: with the claim word, the done count and that wait each on their own
/// cache line, an empty two-thread region cost ~700 ns of cache-line hand-offs on a 2-core
/// Xeon VM; this way, ~500 ns.)
class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_.store(true);
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  /// Runs r with the workers; one caller at a time (parallel_for's region mutex).
  void run(const Region& r) {
    ctx_.store(r.ctx, std::memory_order_relaxed);
    fn_.store(r.fn, std::memory_order_relaxed);
    n_.store(r.n, std::memory_order_relaxed);
    chunk_.store(r.chunk, std::memory_order_relaxed);
    claim_.store(r.claim, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    // The claim word publishes the fields above to whoever claims from it. A worker still
    // claiming from the previous region may take this one's chunks: that is fine, it reads
    // the description after its claim.
    unclaimed_.store(static_cast<uint64_t>(r.nchunks) << 32, std::memory_order_release);
    generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    // Waits until no chunk is in flight, also when one of the caller's chunks throws: the
    // chunks it had claimed, and those nobody has, count as done (they will not run), and
    // those the workers claimed are waited for (fn's context lives in the caller's frame).
    struct Finish {
      Pool& pool;
      int64_t nchunks, pending = 0;  // the caller's claimed chunks not yet counted done
      ~Finish() {
        pool.done_.fetch_add(pending + pool.take_all(), std::memory_order_relaxed);
        wait_until([&] { return pool.done_.load(std::memory_order_acquire) >= nchunks; });
      }
    } finish{*this, r.nchunks};
    // A worker going to sleep raises sleepers_ before it re-reads the generation under m_, so
    // either it sees this region's generation or this reads its sleepers_ and wakes it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_relaxed) != 0) {
      std::lock_guard<std::mutex> l(m_);
      cv_.notify_all();
    }
    run_chunks(/*from_back=*/false, &finish.pending);
  }
  int size() const { return static_cast<int>(threads_.size()) + 1; }

 private:
  /// Claims up to claim_ chunks from one end: [first, last). False when none are left. The
  /// caller claims from the front and the workers from the back, so that with two threads each
  /// tends to do the same part of a repeated region (a batch-1 GEMV's half of the weight stays
  /// in the cache of the core that read it last).
  bool claim_chunks(bool from_back, int64_t& first, int64_t& last) {
    uint64_t cur = unclaimed_.load(std::memory_order_relaxed);
    // Possibly the previous region's: it only sets how many chunks one claim takes.
    const int64_t claim = claim_.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t front = static_cast<int64_t>(cur & 0xffffffffu), back = static_cast<int64_t>(cur >> 32);
      if (front >= back) return false;
      const int64_t take = std::min(claim, back - front);
      first = from_back ? back - take : front;
      last = first + take;
      const uint64_t next = from_back ? (static_cast<uint64_t>(front) | static_cast<uint64_t>(back - take) << 32)
                                      : (static_cast<uint64_t>(front + take) | static_cast<uint64_t>(back) << 32);
      if (unclaimed_.compare_exchange_weak(cur, next, std::memory_order_acquire, std::memory_order_relaxed))
        return true;
    }
  }
  /// Claims every chunk left (a caller's chunk threw): how many.
  int64_t take_all() {
    uint64_t cur = unclaimed_.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t front = static_cast<int64_t>(cur & 0xffffffffu), back = static_cast<int64_t>(cur >> 32);
      if (front >= back) return 0;
      if (unclaimed_.compare_exchange_weak(cur, static_cast<uint64_t>(back) | static_cast<uint64_t>(back) << 32,
                                           std::memory_order_relaxed))
        return back - front;
    }
  }
  /// Claims and runs chunks until none are left; `pending` (the caller's) holds the chunks
  /// claimed and not yet counted done.
  void run_chunks(bool from_back, int64_t* pending) {
    int64_t first, last;
    while (claim_chunks(from_back, first, last)) {
      if (pending) *pending = last - first;
      void* const ctx = ctx_.load(std::memory_order_relaxed);
      const auto fn = fn_.load(std::memory_order_relaxed);
      const int64_t n = n_.load(std::memory_order_relaxed), chunk = chunk_.load(std::memory_order_relaxed);
      for (int64_t k = first; k < last; ++k) fn(ctx, k * chunk, std::min(n, (k + 1) * chunk));
      if (pending) *pending = 0;
      // Release: the chunk's writes happen before the caller sees the region done.
      done_.fetch_add(last - first, std::memory_order_release);
    }
  }
  void loop() {
    t_in_region = true;
    uint64_t seen = 0;  // the generation at construction: a region (or the shutdown) published
                        // before this thread got here must still be seen as new
    for (;;) {
      // Poll briefly before sleeping: the regions of a training step come back to back, and
      // waking a sleeping thread costs tens of microseconds (more than a small op itself).
      // The clock is read once per 16 polls: reading it costs more than a poll in a VM.
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::microseconds(g_spin_us.load(std::memory_order_relaxed));
      for (unsigned i = 1; generation_.load(std::memory_order_acquire) == seen; ++i) {
        if (i % 16 == 0 && std::chrono::steady_clock::now() >= deadline) break;
        cpu_relax();
      }
      if (generation_.load() == seen && !stop_.load()) {
        std::unique_lock<std::mutex> l(m_);
        sleepers_.fetch_add(1);
        cv_.wait(l, [&] { return generation_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
      }
      if (stop_.load()) return;
      seen = generation_.load(std::memory_order_acquire);
      run_chunks(/*from_back=*/true, nullptr);
      detail::settle_cpu_credit();  // blocks freed in the task: not to linger in the peak
    }
  }
  /// The caller's waits are mostly short (a worker finishing its chunk): poll for a few
  /// microseconds (a pause is ~25 ns on Zen 4), then yield the core, which a descheduled worker
  /// may be waiting for when other threads share the cores.
  template <class Done>
  static void wait_until(const Done& done) {
    for (int i = 0; !done(); ++i) {
      if (i < 128) cpu_relax();
      else std::this_thread::yield();
    }
  }
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }

  std::vector<std::thread> threads_;
  // Each on its own cache line by who writes it: the caller, per region (the generation and
  // the description, which a claimant reads right after the generation); everyone (the claim
  // word; the done count); rarely (sleepers_, stop_). generation_/sleepers_ pair as in
  // Dekker's algorithm: each side writes one and then reads the other, with a full fence or
  // the sequentially consistent default order between.
  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped per region (and at shutdown)
  std::atomic<void*> ctx_{nullptr};
  std::atomic<void (*)(void*, int64_t, int64_t)> fn_{nullptr};
  std::atomic<int64_t> n_{0}, chunk_{1}, claim_{1};
  /// The chunks not yet claimed, [front, back), as front | back << 32.
  alignas(64) std::atomic<uint64_t> unclaimed_{0};
  alignas(64) std::atomic<int64_t> done_{0};  // chunks run (or given up), this region
  alignas(64) std::atomic<int> sleepers_{0};  // workers asleep (or about to be) on cv_
  std::atomic<bool> stop_{false};
  std::mutex m_;  // only for sleeping and waking
  std::condition_variable cv_;
};

/// One two-chunk region whose chunks each wait (briefly) until both have started: the time
/// the other thread takes to join, plus the hand-back; -1 when they did not meet in time (the
/// worker was not running, or ran on the caller's core: a sample of the machine's load or the
/// scheduler's placement, not of the hand-off). Both chunks meet only when two threads run
/// them at once: run one after the other, the first gives up waiting.
int64_t time_handoff_ns(Pool& pool) {
  struct Meeting {
    std::atomic<int> started{0}, met{0};
  } meeting;
  Region r;
  r.ctx = &meeting;
  r.fn = [](void* c, int64_t, int64_t) {
    auto& m = *static_cast<Meeting*>(c);
    m.started.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (m.started.load() < 2)
      if (std::chrono::steady_clock::now() > give_up) return;
    m.met.fetch_add(1);
  };
  r.n = 2;
  r.chunk = 1;
  r.nchunks = 2;
  const auto t0 = std::chrono::steady_clock::now();
  pool.run(r);
  if (meeting.met.load() < 2) return -1;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

/// The median of the samples where the other thread joined. When most did not (a loaded
/// machine), 50 us: splitting short work is then a loss anyway.
int64_t measure_region_overhead_ns(Pool& pool) {
  t_in_region = true;
  // A new worker may not have started yet, and often starts on the caller's core, where the
  // scheduler moves it to an idle one only after a few milliseconds (on a 2-core VM: ~2 ms,
  // during which every region timed out and the pool reported 50 us about half the times it
  // was made). So samples are taken until 31 joined, or for at most 30 ms, after 8 joined
  // ones in a row (workers polling).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  for (int in_a_row = 0; in_a_row < 8 && std::chrono::steady_clock::now() < give_up;)
    in_a_row = time_handoff_ns(pool) >= 0 ? in_a_row + 1 : 0;
  std::vector<int64_t> t;
  while (t.size() < 31 && std::chrono::steady_clock::now() < give_up)
    if (int64_t x = time_handoff_ns(pool); x >= 0) t.push_back(x);
  t_in_region = false;
  if (t.size() < 16) return 50'000;
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

std::atomic<int> g_threads{1};
std::atomic<int64_t> g_region_overhead_ns{0};
std::mutex g_region_mutex;  // one region at a time; a second concurrent caller runs serially
std::mutex g_pool_mutex;
std::unique_ptr<Pool> g_pool;
// The user's executor (null: Ember's own pool). Ops read it without a lock while another
// thread may install a different one, so each installed executor is a copy that is never
// freed: a region that loaded the old pointer keeps using a valid copy. Identical executors
// share one copy, so a program that switches back and forth does not grow the list.
// The list is allocated on first use and never destroyed, so that the pointer stays valid for
// ops run from static constructors and destructors (a namespace-scope deque is built after,
// and freed before, some of those run).
std::atomic<const Executor*> g_executor{nullptr};
std::deque<Executor>& installed_executors() {  // guarded by g_pool_mutex
  static auto* list = new std::deque<Executor>;
  return *list;
}

const Executor* user_executor() { return g_executor.load(std::memory_order_acquire); }
/// The threads a region may use under executor `e` (null: Ember's pool).
int threads_under(const Executor* e) { return e ? e->concurrency : g_threads.load(); }

}  // namespace

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, "[set_num_threads] need at least 1 thread, got {}", n);
  EMBER_CHECK(!t_in_region, "[set_num_threads] cannot be called from inside a parallel region (asked for {})", n);
  std::lock_guard<std::mutex> l(g_pool_mutex);
  // Taken (blocking) so that no region runs on a pool while it is replaced: another thread's
  // region in flight finishes first, and later ones see the new pool.
  std::lock_guard<std::mutex> regions(g_region_mutex);
  g_threads = n;
  if (!g_pool || g_pool->size() != n) {
    g_pool = n > 1 ? std::make_unique<Pool>(n - 1) : nullptr;
    g_region_overhead_ns = g_pool ? measure_region_overhead_ns(*g_pool) : 0;
  }
}

namespace detail {
int64_t region_overhead_ns() {
  if (const Executor* e = user_executor()) return e->concurrency > 1 ? 1000 : 0;
  return g_region_overhead_ns.load(std::memory_order_relaxed);
}
}  // namespace detail

void set_worker_spin_us(int64_t microseconds) {
  EMBER_CHECK(microseconds >= 0, "[set_worker_spin_us] the spin time must not be negative, got {}", microseconds);
  g_spin_us.store(microseconds, std::memory_order_relaxed);
}

int64_t get_worker_spin_us() { return g_spin_us.load(std::memory_order_relaxed); }

int get_num_threads() { return threads_under(user_executor()); }

void set_executor(Executor e) {
  std::lock_guard<std::mutex> l(g_pool_mutex);
  if (!e.run) {
    g_executor.store(nullptr, std::memory_order_release);
    return;
  }
  auto same = [&](const Executor& x) { return x.ctx == e.ctx && x.run == e.run && x.concurrency == e.concurrency; };
  std::deque<Executor>& list = installed_executors();
  auto it = std::find_if(list.begin(), list.end(), same);
  const Executor* copy = it != list.end() ? &*it : &list.emplace_back(e);
  g_executor.store(copy, std::memory_order_release);
}

namespace detail {

void parallel_for(int64_t n, int64_t grain, void* ctx, void (*fn)(void*, int64_t, int64_t)) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  // One read of the executor for the whole region: set_executor may run meanwhile.
  const Executor* executor = user_executor();
  const int threads = threads_under(executor);
  if (threads <= 1 || n <= grain) {
    fn(ctx, 0, n);
    return;
  }
  Region r;
  r.ctx = ctx;
  r.fn = fn;
  r.n = n;
  // Chunks are the grain (larger only past 2^31 chunks, which the claim word cannot count), so
  // the split never depends on the thread count.
  r.chunk = std::max(grain, (n - 1) / (int64_t(1) << 31) + 1);
  r.nchunks = (n + r.chunk - 1) / r.chunk;
  r.claim = std::max<int64_t>(1, r.nchunks / (16 * static_cast<int64_t>(threads)));  // ~16 claims per thread
  if (executor) {
    executor->run(executor->ctx, [](void* c, int64_t i) {
      auto* rr = static_cast<Region*>(c);
      int64_t b = i * rr->chunk, e = std::min(rr->n, b + rr->chunk);
      rr->fn(rr->ctx, b, e);
      detail::settle_cpu_credit();  // as the pool's workers do after a task
    }, &r, r.nchunks);
    return;
  }
  // A region started inside a chunk runs serially (and must not try to lock the mutex its own
  // thread holds).
  auto serially = [&] {
    for (int64_t c = 0; c < r.nchunks; ++c) fn(ctx, c * r.chunk, std::min(n, (c + 1) * r.chunk));
  };
  if (t_in_region) return serially();
  std::unique_lock<std::mutex> region_lock(g_region_mutex, std::try_to_lock);
  if (!region_lock.owns_lock() || !g_pool) return serially();  // g_pool is stable under the lock
  struct InRegion {  // restored when a chunk throws too
    InRegion() { t_in_region = true; }
    ~InRegion() { t_in_region = false; }
  } in_region;
  g_pool->run(r);
}

}  // namespace detail
}  // namespace ember
