#include <ember/core/allocator.hpp>
#include <ember/core/device_hooks.hpp>
#include <ember/core/error.hpp>

#include "caching_allocator.hpp"

#include <atomic>
#include <cstdlib>

namespace ember {
namespace detail {
namespace {

void* cpu_system_alloc(size_t n) { return std::aligned_alloc(EMBER_ALIGNMENT, n); }
void cpu_system_free(void* p, size_t) { std::free(p); }

DeviceCounters g_cpu_counters;
std::atomic<size_t> g_cpu_cache_limit{size_t{1} << 30};

CachingAllocator& cpu_cache() {
  static thread_local CachingAllocator cache(&cpu_system_alloc, &cpu_system_free, &g_cpu_counters);
  return cache;
}

}  // namespace

size_t size_class(size_t nbytes) {
  if (nbytes <= 256) return nbytes <= 64 ? 64 : (nbytes + 63) & ~size_t{63};
  // Four classes per power of two: step = 2^(floor(log2 n) - 2).
  int lg = 63 - __builtin_clzll(nbytes);
  size_t step = size_t{1} << (lg - 2);
  return (nbytes + step - 1) & ~(step - 1);
}

Block cpu_allocate(size_t nbytes) { return cpu_cache().allocate(nbytes, "cpu"); }
void cpu_deallocate(Block block) noexcept {
  cpu_cache().deallocate(block, g_cpu_cache_limit.load(std::memory_order_relaxed));
}

}  // namespace detail

AllocatorStats allocator_stats(Device device) {
  if (device.is_cpu()) return detail::g_cpu_counters.snapshot();
  auto& h = detail::device_hooks(device.type);
  return h.stats ? h.stats(device.index) : AllocatorStats{};
}

void empty_cache(Device device) {
  if (device.is_cpu()) {
    detail::cpu_cache().release_cached();
    return;
  }
  auto& h = detail::device_hooks(device.type);
  if (h.empty_cache) h.empty_cache(device.index);
}

void set_cpu_cache_limit(size_t bytes_per_thread) {
  detail::g_cpu_cache_limit.store(bytes_per_thread, std::memory_order_relaxed);
}
size_t cpu_cache_limit() { return detail::g_cpu_cache_limit.load(std::memory_order_relaxed); }

void reset_peak_stats(Device device) {
  if (device.is_cpu()) detail::g_cpu_counters.peak.store(detail::g_cpu_counters.in_use.load());
}

}  // namespace ember
