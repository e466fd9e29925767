#pragma once
/// The memory behind one or more tensors (views share it). It comes from the device's
/// caching allocator, or is user memory (`from_blob`) released by a user deleter.

#include <ember/core/allocator.hpp>
#include <ember/core/device.hpp>
#include <ember/core/intrusive_ptr.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ember::detail {

struct Storage {
  std::atomic<int32_t> refcount_{1};
  /// Bumped by every in-place write; autograd compares it with what it saved.
  /// Shared by all views of this storage, as in PyTorch. See Note [Version counter].
  std::atomic<uint32_t> version{0};
  /// False for storage created under InferenceModeGuard: its writes are never versioned and
  /// autograd refuses to save it for backward.
  bool versioned = true;
  void* data = nullptr;
  size_t nbytes = 0;
  size_t capacity = 0;  ///< allocator block size; 0 for user memory
  Device device = kCPU;
  /// For user memory: called as deleter(ctx, data) when the last reference goes.
  void (*deleter)(void* ctx, void* data) = nullptr;
  void* deleter_ctx = nullptr;
  /// For memory Ember lent itself (a loaded file's bytes, a collated batch), not the user's:
  /// resize_ may move the data into allocator memory and release this memory early.
  bool movable = false;
};

/// Set by autograd::InferenceModeGuard on its thread; storage made meanwhile is unversioned.
inline thread_local bool t_inference_mode = false;

/// Records an in-place write (see Note [Version counter] in docs/design.md).
inline void bump_version(Storage& s) {
  if (s.versioned) s.version.fetch_add(1, std::memory_order_relaxed);
}

/// A storage of `nbytes` from `device`'s caching allocator.
Ref<Storage> make_storage(size_t nbytes, Device device);
/// A storage over user memory; `deleter` (may be null) runs when it is released.
Ref<Storage> make_user_storage(void* data, size_t nbytes, Device device,
                               void (*deleter)(void*, void*), void* ctx);
void release(Storage* s) noexcept;
/// Grows `s` to `nbytes` in place (tensor.resize_), its bytes kept and every tensor sharing it
/// seeing the new memory. The user's memory (from_blob) cannot grow (an error naming `op`);
/// movable memory moves into the allocator's.
void grow_storage(Storage& s, size_t nbytes, const char* op);

}  // namespace ember::detail
