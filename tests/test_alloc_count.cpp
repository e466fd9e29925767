// A warmed-up loop of ops performs no call to the global allocation functions: tensors,
// storages and blocks all come from Ember's pools and caches. This binary replaces
// operator new/delete and malloc-family counters to check it.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <ember/ember.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

namespace {
std::atomic<long> g_news{0};
}

// GCC 12 inlines the replacements below into their callers and then warns that free() is
// called on memory from operator new (-Wmismatched-new-delete): both are these replacements,
// which allocate with malloc. Its diagnostics carry this file's lines, so the pragma holds.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace ember;

TEST_CASE("a warm loop of ops does not call operator new") {
  Tensor w = randn({16, 16}), x = randn({8, 16}), b = randn({16});
  auto step = [&] {
    Tensor h = x.matmul(w).add(b).relu();
    Tensor y = h.mul(h).sub(1.0).exp().sum(Shape{1});
    Tensor z = y.softmax(0).log().neg().mean();
    (void)z;
    Tensor v = x.transpose(0, 1).contiguous().view({-1});
    (void)v;
  };
  for (int i = 0; i < 3; ++i) step();  // warm up pools, caches and bins
  AllocatorStats before = allocator_stats();
  long news = g_news.load();
  for (int i = 0; i < 100; ++i) step();
  CHECK(g_news.load() - news == 0);
  AllocatorStats after = allocator_stats();
  CHECK(after.system_allocations == before.system_allocations);
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.allocation_count > before.allocation_count);
}

TEST_CASE("allocator statistics and empty_cache") {
  empty_cache();
  AllocatorStats s0 = allocator_stats();
  {
    Tensor t = empty({1024});
    AllocatorStats s1 = allocator_stats();
    CHECK(s1.bytes_in_use >= s0.bytes_in_use + 4096);
    CHECK(s1.peak_bytes_in_use >= s1.bytes_in_use);
    CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
  }
  AllocatorStats s2 = allocator_stats();
  CHECK(s2.bytes_cached >= 4096);
  empty_cache();
  CHECK(allocator_stats().bytes_cached == 0);
}

TEST_CASE("the per-thread CPU cache keeps at most its limit; frees beyond it go to the system") {
  empty_cache();
  const size_t old_limit = cpu_cache_limit();
  set_cpu_cache_limit(64 * 1024);
  {
    std::vector<Tensor> ts;
    for (int i = 0; i < 8; ++i) ts.push_back(empty({4096}));  // 8 x 16 KiB
  }
  AllocatorStats s = allocator_stats();
  CHECK(s.bytes_cached <= 64 * 1024);
  CHECK(s.bytes_cached >= 48 * 1024);  // the first frees were cached
  // Blocks freed on another thread (a data loader's worker pattern) obey the same limit there.
  std::vector<Tensor> made;
  for (int i = 0; i < 8; ++i) made.push_back(empty({4096}));
  std::thread([&] { made.clear(); }).join();  // that thread's cache dies with it, freeing all
  CHECK(allocator_stats().bytes_in_use <= s.bytes_in_use);
  set_cpu_cache_limit(0);
  empty_cache();
  { Tensor t = empty({4096}); }
  CHECK(allocator_stats().bytes_cached == 0);  // caching off
  set_cpu_cache_limit(old_limit);
  CHECK(cpu_cache_limit() == old_limit);
}

TEST_CASE("statistics sum every thread's cache, and keep the counts of threads that ended") {
  empty_cache();
  AllocatorStats s0 = allocator_stats();
  std::atomic<bool> allocated{false}, release{false};
  std::thread worker([&] {
    { std::vector<Tensor> ts; for (int i = 0; i < 5; ++i) ts.push_back(empty({2048})); }  // 5 x 8 KiB, then cached
    allocated = true;
    while (!release) std::this_thread::yield();
  });
  while (!allocated) std::this_thread::yield();
  AllocatorStats s1 = allocator_stats();  // the worker's cache is live: its figures count
  CHECK(s1.allocation_count - s0.allocation_count == 5);
  CHECK(s1.system_allocations - s0.system_allocations >= 1);
  CHECK(s1.bytes_cached - s0.bytes_cached >= 5 * 8192);
  CHECK(s1.bytes_in_use == s0.bytes_in_use);
  CHECK(s1.peak_bytes_in_use >= s0.bytes_in_use + 5 * 8192);
  release = true;
  worker.join();
  AllocatorStats s2 = allocator_stats();  // its cache went back to the system; its counts stay
  CHECK(s2.bytes_cached == s0.bytes_cached);
  CHECK(s2.allocation_count == s1.allocation_count);
  CHECK(s2.system_allocations == s1.system_allocations);
}

TEST_CASE("bytes in use and the peak stay exact while freed small blocks are reused") {
  // A freed block under 4 KiB stays charged to the device counter and pays for the thread's
  // next allocation (no shared atomic per small op); the figures must not show it.
  using namespace ember;
  reset_peak_stats();
  const AllocatorStats s0 = allocator_stats();
  CHECK(s0.peak_bytes_in_use == s0.bytes_in_use);
  {
    Tensor a = empty({16});                // 64 bytes
    { Tensor b = empty({16}); }            // 128 live at most so far, then b is credit
    CHECK(allocator_stats().bytes_in_use == s0.bytes_in_use + 64);
    Tensor c = empty({16});                // paid by b's credit
    Tensor d = empty({32});                // 128 more: a, c, d = 256 live
    CHECK(allocator_stats().bytes_in_use == s0.bytes_in_use + 256);
    { Tensor big = empty({4096}); }        // 16 KiB: above the credit limit, counted at once
    CHECK(allocator_stats().bytes_in_use == s0.bytes_in_use + 256);
    CHECK(allocator_stats().peak_bytes_in_use == s0.bytes_in_use + 256 + 16384);
  }
  CHECK(allocator_stats().bytes_in_use == s0.bytes_in_use);
  reset_peak_stats();
  {
    Tensor a = empty({16}), b = empty({16}), c = empty({16});
  }  // three blocks of credit
  {
    Tensor x = empty({48});                // 192 bytes: the whole credit, no new peak
    CHECK(allocator_stats().peak_bytes_in_use == s0.bytes_in_use + 192);
  }
  // Blocks freed by another thread are that thread's credit until it ends.
  std::vector<Tensor> made;
  for (int i = 0; i < 4; ++i) made.push_back(empty({16}));
  CHECK(allocator_stats().bytes_in_use == s0.bytes_in_use + 256);
  std::atomic<bool> freed{false}, release{false};
  std::thread other([&] {
    made.clear();
    freed = true;
    while (!release) std::this_thread::yield();
  });
  while (!freed) std::this_thread::yield();
  CHECK(allocator_stats().bytes_in_use == s0.bytes_in_use);
  release = true;
  other.join();
  CHECK(allocator_stats().bytes_in_use == s0.bytes_in_use);
  // A pool worker gives its credit back after each task: afterwards this thread's peak is
  // exact again.
  set_num_threads(2);
  Tensor big = randn({256, 1024});
  for (int i = 0; i < 4; ++i) (void)big.exp().sum();
  reset_peak_stats();
  const AllocatorStats s1 = allocator_stats();
  { Tensor t = empty({1024}); }  // 4 KiB: fits the credit
  CHECK(allocator_stats().peak_bytes_in_use == s1.bytes_in_use + 4096);
  set_num_threads(1);
}
