// The CUDA glue: cuda_ensure_initialized() installs the DeviceHooks of DeviceType::Cuda
// (memory from a per-device CachingAllocator over cudaMalloc/cudaFree, copies through
// cudaMemcpy, statistics). All work runs on each device's legacy default stream, so a block
// freed into the cache and handed out again is ordered after the work that used it.

#include "cuda_glue.hpp"

#include <ember/core/device_hooks.hpp>
#include <ember/dispatch/kernels.hpp>

#include "../src/caching_allocator.hpp"

#include <cuda_runtime_api.h>

#include <mutex>

namespace ember::cuda {

void check(cudaError_t e, const char* op, const char* call) {
  if (EMBER_LIKELY(e == cudaSuccess)) return;
  cudaGetLastError();  // clear a non-sticky error so that the next call starts clean
  EMBER_FAIL("[{}] CUDA call {} failed: {} ({})", op, call, cudaGetErrorString(e), cudaGetErrorName(e));
}

namespace {

constexpr int kMaxDevices = 64;
int g_device_count = 0;

/// Per-device allocator state. Allocated once and never destroyed: tensors released during
/// static destruction only return blocks to the cache, and no CUDA call runs after the
/// runtime has shut down.
struct DeviceMemory {
  std::mutex mu;
  detail::DeviceCounters counters;
  detail::CachingAllocator cache;
  DeviceMemory() : cache(&sys_alloc, &sys_free, &counters) {}

  // Called with `mu` held and the owning device current.
  static void* sys_alloc(size_t n) {
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, n);
    if (rc == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // out of memory is not sticky; the allocator retries or reports it
      return nullptr;
    }
    // Anything else (a sticky fault from an earlier kernel, a lost device) is not "out of
    // memory": report it by name.
    EMBER_CUDA_CHECK("allocate", rc);
    return p;
  }
  static void sys_free(void* p, size_t) {
    // A failure here (usually an earlier sticky fault) must not surface in the next,
    // unrelated launch check.
    if (cudaFree(p) != cudaSuccess) cudaGetLastError();
  }
};

DeviceMemory* g_memory[kMaxDevices] = {};

void check_index(int index, const char* op) {
  EMBER_CHECK(index >= 0 && index < g_device_count, "[{}] device cuda:{} requested, but this machine has {} CUDA {}",
              op, index, g_device_count, g_device_count == 1 ? "device" : "devices");
}

detail::Block cuda_allocate(size_t nbytes, int index) {
  check_index(index, "allocate");
  DeviceMemory& m = *g_memory[index];
  std::lock_guard<std::mutex> lock(m.mu);
  DeviceGuard guard(index);
  return m.cache.allocate(nbytes, "cuda");
}

void cuda_deallocate(detail::Block block, int index) {
  DeviceMemory& m = *g_memory[index];
  std::lock_guard<std::mutex> lock(m.mu);
  m.cache.deallocate(block);
}

void cuda_memcpy(void* dst, Device dst_dev, const void* src, Device src_dev, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_dev.is_cuda() && src_dev.is_cuda()) {
    if (dst_dev.index() == src_dev.index()) {
      DeviceGuard guard(dst_dev.index());
      EMBER_CUDA_CHECK("copy_", cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToDevice));
    } else {
      EMBER_CUDA_CHECK("copy_", cudaMemcpyPeer(dst, dst_dev.index(), src, src_dev.index(), nbytes));
    }
  } else if (dst_dev.is_cuda()) {
    DeviceGuard guard(dst_dev.index());
    EMBER_CUDA_CHECK("copy_", cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice));
  } else if (src_dev.is_cuda()) {
    DeviceGuard guard(src_dev.index());
    EMBER_CUDA_CHECK("copy_", cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost));
  } else {
    EMBER_FAIL("[copy_] the CUDA memcpy hook was asked for a host-to-host copy");
  }
}

AllocatorStats cuda_stats(int index) {
  if (index < 0 || index >= g_device_count) return {};
  DeviceMemory& m = *g_memory[index];
  std::lock_guard<std::mutex> lock(m.mu);
  const detail::CacheStats& s = m.cache.stats();
  return detail::make_stats(m.counters, s.cached.load(), s.count.load(), s.system.load(), s.credit.load());
}

void cuda_empty_cache(int index) {
  check_index(index, "empty_cache");
  DeviceMemory& m = *g_memory[index];
  std::lock_guard<std::mutex> lock(m.mu);
  DeviceGuard guard(index);
  EMBER_CUDA_CHECK("empty_cache", cudaDeviceSynchronize());  // no kernel may still use a block
  m.cache.release_cached();
}

void initialize() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    EMBER_FAIL("[cuda] no usable CUDA device: cudaGetDeviceCount failed: {} ({})", cudaGetErrorString(e),
               cudaGetErrorName(e));
  }
  EMBER_CHECK(n > 0, "[cuda] no CUDA device found (cudaGetDeviceCount returned 0)");
  g_device_count = n < kMaxDevices ? n : kMaxDevices;
  for (int i = 0; i < g_device_count; ++i) g_memory[i] = new DeviceMemory();
  detail::DeviceHooks& h = detail::device_hooks(DeviceType::Cuda);
  h.allocate = &cuda_allocate;
  h.deallocate = &cuda_deallocate;
  h.memcpy = &cuda_memcpy;
  h.copy = &detail::Kernels<Cuda>::copy;
  h.stats = &cuda_stats;
  h.empty_cache = &cuda_empty_cache;
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error: a later initialisation reports its own
    return 0;
  }
  return n;
}
bool is_available() { return device_count() > 0; }

DeviceGuard::DeviceGuard(int index) : index_(index) {
  EMBER_CUDA_CHECK("cuda", cudaGetDevice(&prev_));
  if (prev_ != index) EMBER_CUDA_CHECK("cuda", cudaSetDevice(index));
}

DeviceGuard::~DeviceGuard() {
  if (prev_ >= 0 && prev_ != index_ && cudaSetDevice(prev_) != cudaSuccess) cudaGetLastError();
}

void check_on_cuda(const detail::TensorImpl& t, const char* op, const char* what) {
  EMBER_CHECK(t.device().is_cuda(), "[{}] the CUDA kernel got {} on {}; expected tensors on one CUDA device", op,
              what, t.device());
}

}  // namespace ember::cuda

namespace ember::detail {

void cuda_ensure_initialized() {
  // call_once retries when initialize() throws, so a failure is reported on every use.
  static std::once_flag once;
  std::call_once(once, &ember::cuda::initialize);
}

}  // namespace ember::detail
