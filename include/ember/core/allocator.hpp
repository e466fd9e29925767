#pragma once
/// Per-device caching allocators. Blocks are 64-byte aligned and binned by size class
/// (four classes per power of two, so at most 25% slack); freed blocks go back to their
/// bin and are reused, so a warmed-up training loop never calls the system allocator.
///
/// The CPU cache is per thread (no lock on the op path); a block freed on another thread
/// joins that thread's cache, up to a limit per thread (set_cpu_cache_limit, default 1 GiB):
/// beyond it freed blocks go back to the system, so producer/consumer threads (a data
/// loader's workers) cannot grow a consumer's cache without bound. Statistics are global per
/// device.

#include <ember/core/device.hpp>

#include <cstddef>
#include <cstdint>

namespace ember {

/// Counters of one device's allocator.
struct AllocatorStats {
  int64_t bytes_in_use = 0;       ///< bytes held by live storages (block capacity)
  int64_t bytes_cached = 0;       ///< bytes held in free bins, ready for reuse
  int64_t allocation_count = 0;   ///< blocks handed out so far (cache hits included)
  int64_t system_allocations = 0; ///< blocks obtained from the system (cache misses)
  int64_t peak_bytes_in_use = 0;  ///< high-water mark of bytes_in_use
};

/// Current counters of `device`'s allocator.
AllocatorStats allocator_stats(Device device = kCPU);

/// Returns the cached free blocks of `device` to the system (for the CPU: the calling
/// thread's cache). Blocks in use are untouched.
void empty_cache(Device device = kCPU);

/// Most bytes each thread's CPU cache keeps for reuse (default 1 GiB); blocks freed beyond it
/// are returned to the system. 0 disables caching (every free goes to the system). Applies to
/// frees from now on; a cache already larger shrinks as its blocks are reused.
void set_cpu_cache_limit(size_t bytes_per_thread);
size_t cpu_cache_limit();

/// Resets peak_bytes_in_use to the current bytes_in_use.
///
/// The peak is exact when one thread allocates. While several threads allocate at once it
/// can overstate by up to 4 KiB per other thread that user code runs (freed small blocks a
/// thread keeps charged to reuse without touching shared counters; the thread pool's workers
/// give theirs back after every task), and a bytes_in_use read while other threads allocate
/// can be off by as much; both are exact once they are idle.
void reset_peak_stats(Device device = kCPU);

namespace detail {

/// A block handed out by an allocator: where it is and how large it really is.
struct Block {
  void* ptr = nullptr;
  size_t capacity = 0;
};

/// Size class for a request of `nbytes` (>= nbytes, a multiple of 64).
size_t size_class(size_t nbytes);

Block cpu_allocate(size_t nbytes);
void cpu_deallocate(Block block) noexcept;
/// Gives the calling thread's CPU cache credit (freed bytes it would reuse next) back to the
/// device-wide counter; the thread pool's workers call it after each task.
void settle_cpu_credit() noexcept;

}  // namespace detail
}  // namespace ember
