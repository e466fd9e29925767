#pragma once
/// The few per-device services the core needs (memory and copies). The CPU's are built
/// in; a non-CPU backend installs its own the first time the policy uses it, so that the
/// core never references CUDA symbols and a CPU-only binary links none.

#include <ember/core/allocator.hpp>
#include <ember/core/intrusive_ptr.hpp>

#include <cstddef>

namespace ember::detail {

struct TensorImpl;

struct DeviceHooks {
  Block (*allocate)(size_t nbytes, int index) = nullptr;
  void (*deallocate)(Block block, int index) = nullptr;
  /// Copies nbytes between host and this device (either direction) or within it.
  void (*memcpy)(void* dst, Device dst_dev, const void* src, Device src_dev, size_t nbytes) = nullptr;
  /// dst = src for tensors on this device (or one of them on the host): strided, converting.
  void (*copy)(TensorImpl& dst, const TensorImpl& src) = nullptr;
  AllocatorStats (*stats)(int index) = nullptr;
  void (*empty_cache)(int index) = nullptr;
};

/// Hooks of a device type; all null until its backend installed them.
DeviceHooks& device_hooks(DeviceType type);

/// dst = src through the backend that owns them (strided, converting). For the op layer's
/// internal copies (casts, contiguous staging), which must not assume the CPU.
void copy_on_device(TensorImpl& dst, const TensorImpl& src);

/// `x` itself (shared, no allocation) when it is contiguous, else a contiguous copy on its
/// device made by copy_on_device. For kernels that need dense rows; `op` names the copy in
/// allocation errors.
Ref<TensorImpl> contiguous_on_device(const TensorImpl& x, const char* op);

}  // namespace ember::detail
