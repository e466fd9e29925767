#pragma once
/// Intra-op parallelism. Ember starts no thread until asked: by default ops run on the
/// calling thread. `set_num_threads(n)` starts a pool of n-1 workers (the caller is the n-th);
/// or hand Ember your engine's executor with `set_executor`, and it will start none.

#include <cstdint>
#include <type_traits>

namespace ember {

/// Number of threads intra-op work may use (1 = the calling thread only). May be called while
/// other threads run ops (it waits for a parallel region in flight); not from inside one.
void set_num_threads(int n);
int get_num_threads();

/// How long an idle pool worker keeps polling for the next parallel region before it sleeps
/// (default 50 microseconds; OpenMP calls this the block time). Waking a sleeping worker costs
/// tens of microseconds in a VM, so a training loop on dedicated cores runs a few percent faster
/// at 2 threads with ~1000; a game or robot sharing its cores may prefer 0. Not negative.
void set_worker_spin_us(int64_t microseconds);
int64_t get_worker_spin_us();

/// A user executor: run(ctx, task, n) must call task(task_ctx, i) for every i in [0, n),
/// possibly concurrently, and return when all have finished.
struct Executor {
  void* ctx = nullptr;
  void (*run)(void* ctx, void (*task)(void* task_ctx, int64_t i), void* task_ctx, int64_t n) = nullptr;
  int concurrency = 1;  ///< how many tasks it can run at once
};
/// Installs `e` (or, with a default Executor{}, goes back to Ember's own pool). May be called
/// while other threads run ops: a parallel region already started finishes on the executor
/// it began with. Ember keeps a copy of each distinct executor installed (a few bytes each).
void set_executor(Executor e);

namespace detail {
/// Runs fn(begin, end) over [0, n) split into chunks of `grain` (the last may be shorter), in
/// parallel when more than one thread is configured: one call per chunk, its boundaries
/// depending only on n and grain. With one thread, or n <= grain, one call covers [0, n); so
/// a body whose result must not depend on the thread count splits its range by itself.
/// Threads claim several consecutive chunks at a time when there are many.
void parallel_for(int64_t n, int64_t grain, void* ctx, void (*fn)(void* ctx, int64_t begin, int64_t end));

/// What handing half of a region to another thread costs (ns): until the worker has started
/// its chunk and the caller has seen it finish. Measured when set_num_threads makes the pool
/// (the median of a few dozen two-chunk regions; 50 us when the workers mostly did not join
/// within that, on a loaded machine); 0 with one thread, and a guess of 1 us under
/// a user's executor. Splitting work shorter than a few times this loses (on a 2-core Xeon VM
/// it is ~0.5 us; on a Zen 4 one, ~0.3 us).
int64_t region_overhead_ns();

template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;  // lvalue callables too
  parallel_for(n, grain, const_cast<void*>(static_cast<const void*>(&f)),
               [](void* c, int64_t b, int64_t e) { (*static_cast<Fn*>(c))(b, e); });
}
}  // namespace detail

}  // namespace ember
