#include <ember/core/allocator.hpp>
#include <ember/core/device_hooks.hpp>
#include <ember/core/error.hpp>

#include "caching_allocator.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace ember {
namespace detail {
namespace {

void* cpu_system_alloc(size_t n) { return std::aligned_alloc(EMBER_ALIGNMENT, n); }
void cpu_system_free(void* p, size_t) { std::free(p); }

DeviceCounters g_cpu_counters;
/// Freed bytes a thread's cache keeps charged for its next allocations (CachingAllocator):
/// enough for a run of small tensors, small enough to bound what it adds to a peak.
constexpr int64_t kCpuCreditLimit = 4096;
std::atomic<size_t> g_cpu_cache_limit{size_t{1} << 30};

/// The live per-thread CPU caches, for allocator_stats to sum their figures, and the counts of
/// caches whose threads have ended. Never destroyed: thread caches may unregister during
/// static destruction.
struct CpuCaches {
  std::mutex mu;
  std::vector<const CachingAllocator*> live;
  int64_t ended_count = 0, ended_system = 0;
};
CpuCaches& cpu_caches() {
  static CpuCaches* caches = new CpuCaches;
  return *caches;
}

/// Set when this thread's cache has been destroyed: at thread exit, and for the main thread
/// before static destructors run, so a static or thread_local Tensor can be freed after it.
/// Trivially destructible: it stays readable during static destruction.
thread_local bool t_cache_ended = false;

/// Serves a thread whose cache has ended: caches nothing, never destroyed, one lock.
struct OrphanCache {
  std::mutex mu;
  CachingAllocator cache{&cpu_system_alloc, &cpu_system_free, &g_cpu_counters, 0};
};
OrphanCache& orphan_cache() {
  static OrphanCache* orphans = new OrphanCache;
  return *orphans;
}

/// A thread's CPU cache, registered while its thread lives.
struct ThreadCache {
  CachingAllocator cache{&cpu_system_alloc, &cpu_system_free, &g_cpu_counters, kCpuCreditLimit};
  ThreadCache() {
    CpuCaches& r = cpu_caches();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.push_back(&cache);
  }
  ~ThreadCache() {
    cache.release_cached();
    CpuCaches& r = cpu_caches();
    std::lock_guard<std::mutex> lock(r.mu);  // settled under the lock: stats see it once
    cache.settle_credit();
    r.ended_count += cache.stats().count.load(std::memory_order_relaxed);
    r.ended_system += cache.stats().system.load(std::memory_order_relaxed);
    r.live.erase(std::find(r.live.begin(), r.live.end(), &cache));
    t_cache_ended = true;
  }
};

CachingAllocator& cpu_cache() {
  static thread_local ThreadCache t;
  return t.cache;
}

AllocatorStats cpu_stats() {
  CpuCaches& r = cpu_caches();
  std::lock_guard<std::mutex> lock(r.mu);
  int64_t cached = 0, count = r.ended_count, system = r.ended_system, credit = 0;
  for (const CachingAllocator* c : r.live) {
    cached += c->stats().cached.load(std::memory_order_relaxed);
    count += c->stats().count.load(std::memory_order_relaxed);
    system += c->stats().system.load(std::memory_order_relaxed);
    credit += c->stats().credit.load(std::memory_order_relaxed);
  }
  {  // allocations of threads whose cache had ended (static tensors at exit)
    OrphanCache& o = orphan_cache();
    std::lock_guard<std::mutex> orphan_lock(o.mu);
    count += o.cache.stats().count.load(std::memory_order_relaxed);
    system += o.cache.stats().system.load(std::memory_order_relaxed);
  }
  return make_stats(g_cpu_counters, cached, count, system, credit);
}

}  // namespace

size_t size_class(size_t nbytes) {
  if (nbytes <= 256) return nbytes <= 64 ? 64 : (nbytes + 63) & ~size_t{63};
  // Four classes per power of two: step = 2^(floor(log2 n) - 2).
  int lg = 63 - __builtin_clzll(nbytes);
  size_t step = size_t{1} << (lg - 2);
  return (nbytes + step - 1) & ~(step - 1);
}

Block cpu_allocate(size_t nbytes) {
  if (t_cache_ended) {
    OrphanCache& o = orphan_cache();
    std::lock_guard<std::mutex> lock(o.mu);
    return o.cache.allocate(nbytes, "cpu");
  }
  return cpu_cache().allocate(nbytes, "cpu");
}
void cpu_deallocate(Block block) noexcept {
  if (t_cache_ended) {  // straight back to the system, the counters kept exact
    OrphanCache& o = orphan_cache();
    std::lock_guard<std::mutex> lock(o.mu);
    o.cache.deallocate(block, 0);
    o.cache.settle_credit();
    return;
  }
  cpu_cache().deallocate(block, g_cpu_cache_limit.load(std::memory_order_relaxed));
}
void settle_cpu_credit() noexcept {
  if (!t_cache_ended) cpu_cache().settle_credit();
}

}  // namespace detail

AllocatorStats allocator_stats(Device device) {
  if (device.is_cpu()) return detail::cpu_stats();
  auto& h = detail::device_hooks(device.type());
  return h.stats ? h.stats(device.index()) : AllocatorStats{};
}

void empty_cache(Device device) {
  if (device.is_cpu()) {
    if (!detail::t_cache_ended) detail::cpu_cache().release_cached();
    return;
  }
  auto& h = detail::device_hooks(device.type());
  if (h.empty_cache) h.empty_cache(device.index());
}

void set_cpu_cache_limit(size_t bytes_per_thread) {
  detail::g_cpu_cache_limit.store(bytes_per_thread, std::memory_order_relaxed);
}
size_t cpu_cache_limit() { return detail::g_cpu_cache_limit.load(std::memory_order_relaxed); }

void reset_peak_stats(Device device) {
  if (device.is_cpu()) {
    // The charged bytes, not bytes in use: other threads' credit may still be spent without
    // touching the counter, and the peak must never read below what is in use.
    detail::settle_cpu_credit();
    detail::g_cpu_counters.peak.store(detail::g_cpu_counters.in_use.load());
  }
}

}  // namespace ember
