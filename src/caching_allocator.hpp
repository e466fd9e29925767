#pragma once
// The binned cache shared by the CPU and CUDA allocators. Free blocks wait in a vector
// per size class; the vectors keep their capacity, so steady state allocates nothing.

#include <ember/core/allocator.hpp>
#include <ember/core/error.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::detail {

/// Device-wide: bytes charged (in use, plus the caches' unspent credit: see CachingAllocator)
/// and the high-water mark of bytes in use. Shared atomics, since a block may be freed on
/// another thread than the one that took it (so no thread alone knows the total).
struct DeviceCounters {
  std::atomic<int64_t> in_use{0}, peak{0};

  void on_use(int64_t n) {
    int64_t now = in_use.fetch_add(n, std::memory_order_relaxed) + n;
    int64_t p = peak.load(std::memory_order_relaxed);
    while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
    }
  }
};

/// One cache's own figures. Only the cache's user writes them (its thread for the CPU caches,
/// the holder of the device mutex for CUDA), so an update is a relaxed load and store, not a
/// locked read-modify-write: those cost ~20 ns of a 66 ns small op. allocator_stats reads
/// them from any thread (atomics, so that read is not a data race).
struct CacheStats {
  std::atomic<int64_t> cached{0}, count{0}, system{0}, credit{0};
  static void bump(std::atomic<int64_t>& s, int64_t n) {
    s.store(s.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

/// The figures of allocator_stats from a device's counters and the summed stats of its caches.
/// Exact whenever no other thread is allocating or freeing at that moment; a snapshot taken
/// while they do can be off by their credit (<= the credit limit each), so it is kept >= 0.
inline AllocatorStats make_stats(const DeviceCounters& d, int64_t cached, int64_t count, int64_t system,
                                 int64_t credit) {
  const int64_t in_use = d.in_use.load(std::memory_order_relaxed) - credit;
  return {in_use < 0 ? 0 : in_use, cached, count, system, d.peak.load(std::memory_order_relaxed)};
}

size_t size_class(size_t nbytes);

/// Credit: a cache that frees a block keeps its bytes charged to the device's counter, up to
/// `credit_limit` bytes, and spends that credit on its next allocations, so a loop of small ops
/// (free one 64-byte block, take another) updates no shared atomic: that fetch_add/fetch_sub
/// pair was ~9 ns of a ~48 ns op. Bytes in use = charged - the credit of all caches, so
/// allocator_stats stays exact. The peak is taken when a charge grows the counter and the
/// charging cache's own credit is spent, so it is exact in one thread; under concurrency it can
/// overstate by the other caches' credit (at most credit_limit each; pool workers settle theirs
/// after every task).
class CachingAllocator {
 public:
  using SysAlloc = void* (*)(size_t);
  using SysFree = void (*)(void*, size_t);

  CachingAllocator(SysAlloc a, SysFree f, DeviceCounters* c, int64_t credit_limit = 0)
      : alloc_(a), free_(f), counters_(c), credit_limit_(credit_limit) {}
  ~CachingAllocator() { release_cached(); }
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  Block allocate(size_t nbytes, const char* device_name) {
    size_t cap = size_class(nbytes == 0 ? 1 : nbytes);
    size_t bin = bin_index(cap);
    if (bin < bins_.size() && !bins_[bin].empty()) {
      void* p = bins_[bin].back();
      bins_[bin].pop_back();
      CacheStats::bump(stats_.cached, -static_cast<int64_t>(cap));
      CacheStats::bump(stats_.count, 1);
      charge(static_cast<int64_t>(cap));
      return {p, cap};
    }
    void* p = alloc_(cap);
    if (!p) {
      release_cached();  // retry once with the cache given back
      p = alloc_(cap);
    }
    EMBER_CHECK(p != nullptr, "[allocator] out of memory on {} allocating {} bytes", device_name, cap);
    CacheStats::bump(stats_.system, 1);
    CacheStats::bump(stats_.count, 1);
    charge(static_cast<int64_t>(cap));
    return {p, cap};
  }

  /// Blocks beyond `limit` cached bytes go back to the system instead of into a bin.
  void deallocate(Block b, size_t limit = SIZE_MAX) noexcept {
    CacheStats::bump(stats_.credit, static_cast<int64_t>(b.capacity));
    if (stats_.credit.load(std::memory_order_relaxed) > credit_limit_) settle_credit();
    if (cached_bytes() + b.capacity > limit) {
      free_(b.ptr, b.capacity);
      return;
    }
    size_t bin = bin_index(b.capacity);
#if EMBER_HAS_EXCEPTIONS
    try {
#endif
      if (bin >= bins_.size()) bins_.resize(bin + 1);
      bins_[bin].push_back(b.ptr);
#if EMBER_HAS_EXCEPTIONS
    } catch (...) {  // could not grow the bin: give the block back instead
      free_(b.ptr, b.capacity);
      return;
    }
#endif  // without exceptions a failed allocation here terminates, as everywhere else
    CacheStats::bump(stats_.cached, static_cast<int64_t>(b.capacity));
  }

  /// Gives this cache's unspent credit back to the device's counter (a thread ending, a pool
  /// worker after a task), so that it cannot inflate another thread's peak.
  void settle_credit() noexcept {
    const int64_t credit = stats_.credit.load(std::memory_order_relaxed);
    if (credit == 0) return;
    stats_.credit.store(0, std::memory_order_relaxed);
    counters_->in_use.fetch_sub(credit, std::memory_order_relaxed);
  }

  /// Bytes in this cache's bins.
  size_t cached_bytes() const { return static_cast<size_t>(stats_.cached.load(std::memory_order_relaxed)); }
  /// This cache's figures, readable from any thread.
  const CacheStats& stats() const { return stats_; }

  void release_cached() noexcept {
    for (size_t bin = 0; bin < bins_.size(); ++bin) {
      size_t cap = bin_capacity(bin);
      for (void* p : bins_[bin]) {
        free_(p, cap);
        CacheStats::bump(stats_.cached, -static_cast<int64_t>(cap));
      }
      bins_[bin].clear();
    }
  }

 private:
  // Takes `n` bytes into use: from this cache's credit when it covers them, else the rest
  // from the device's counter (which then records the peak).
  void charge(int64_t n) {
    const int64_t credit = stats_.credit.load(std::memory_order_relaxed);
    if (credit >= n) {
      stats_.credit.store(credit - n, std::memory_order_relaxed);
      return;
    }
    if (credit != 0) stats_.credit.store(0, std::memory_order_relaxed);
    counters_->on_use(n - credit);
  }

  // Bin index from a size class: classes <= 256 are multiples of 64 (bins 0..3); above,
  // four classes per power of two.
  static size_t bin_index(size_t cap) {
    if (cap <= 256) return cap / 64 - 1;
    size_t lg = 63 - __builtin_clzll(cap - 1);  // cap in (2^lg, 2^(lg+1)]
    size_t step = size_t{1} << (lg - 2);
    size_t k = (cap - (size_t{1} << lg)) / step;  // 1..4
    return 4 + (lg - 8) * 4 + (k - 1);
  }
  static size_t bin_capacity(size_t bin) {
    if (bin < 4) return (bin + 1) * 64;
    size_t lg = 8 + (bin - 4) / 4;
    size_t k = (bin - 4) % 4 + 1;
    return (size_t{1} << lg) + k * (size_t{1} << (lg - 2));
  }

  SysAlloc alloc_;
  SysFree free_;
  DeviceCounters* counters_;
  int64_t credit_limit_;
  std::vector<std::vector<void*>> bins_;
  CacheStats stats_;
};

}  // namespace ember::detail
