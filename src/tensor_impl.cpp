#include <ember/core/device_hooks.hpp>
#include <ember/core/tensor_impl.hpp>
#include <ember/dispatch/kernels.hpp>

#include "object_pool.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ember::detail {

void (*g_grad_meta_deleter)(AutogradMeta*) = nullptr;

DeviceHooks& device_hooks(DeviceType type) {
  static DeviceHooks hooks[kNumDeviceTypes];
  return hooks[static_cast<int>(type)];
}

void copy_on_device(TensorImpl& dst, const TensorImpl& src) {
  Device d = dst.device().is_cpu() ? src.device() : dst.device();
  if (d.is_cpu()) return Kernels<Cpu>::copy(dst, src);
  DeviceHooks& h = device_hooks(d.type());
  EMBER_CHECK(h.copy != nullptr, "[copy_] device {} requested, but no backend for it is compiled into this policy/build",
              d);
  h.copy(dst, src);
}

Ref<TensorImpl> contiguous_on_device(const TensorImpl& x, const char* op) {
  if (x.contiguous) return Ref<TensorImpl>::share(const_cast<TensorImpl*>(&x));
  Ref<TensorImpl> c = make_tensor(x.sizes, x.dtype, x.device(), op);
  copy_on_device(*c, x);
  return c;
}

Ref<Storage> make_storage(size_t nbytes, Device device) {
  Block b;
  if (device.is_cpu()) {
    b = cpu_allocate(nbytes);
  } else {
    DeviceHooks& h = device_hooks(device.type());
    EMBER_CHECK(h.allocate != nullptr,
                "[allocate] device {} requested, but no backend for it is compiled into this policy/build",
                device);
    b = h.allocate(nbytes, device.index());
  }
  Storage* s = ObjectPool<Storage>::create();
  s->data = b.ptr;
  s->nbytes = nbytes;
  s->capacity = b.capacity;
  s->device = device;
  s->versioned = !t_inference_mode;
  return Ref<Storage>::adopt(s);
}

Ref<Storage> make_user_storage(void* data, size_t nbytes, Device device, void (*deleter)(void*, void*),
                               void* ctx) {
  Storage* s = ObjectPool<Storage>::create();
  s->data = data;
  s->nbytes = nbytes;
  s->capacity = 0;
  s->device = device;
  s->deleter = deleter;
  s->deleter_ctx = ctx;
  s->versioned = !t_inference_mode;
  return Ref<Storage>::adopt(s);
}

void release(Storage* s) noexcept {
  if (s->capacity == 0) {
    if (s->deleter) s->deleter(s->deleter_ctx, s->data);
  } else if (s->device.is_cpu()) {
    cpu_deallocate({s->data, s->capacity});
  } else {
    device_hooks(s->device.type()).deallocate({s->data, s->capacity}, s->device.index());
  }
  ObjectPool<Storage>::destroy(s);
}

void grow_storage(Storage& s, size_t nbytes, const char* op) {
  if (nbytes <= s.nbytes) return;
  EMBER_CHECK(s.capacity != 0 || s.movable,
              "[{}] the tensor's memory is the user's (from_blob), {} bytes; it cannot grow to {} bytes", op, s.nbytes,
              nbytes);
  if (s.capacity == 0) {  // movable memory Ember lent: into an allocator block, then released
    EMBER_CHECK(s.device.is_cpu(), "[{}] movable storage on {} is not supported", op, s.device);
    const Block b = cpu_allocate(nbytes);
    if (s.nbytes > 0) std::memcpy(b.ptr, s.data, s.nbytes);
    // The storage is whole again before the old memory's deleter runs.
    void* const old_data = std::exchange(s.data, b.ptr);
    const auto deleter = std::exchange(s.deleter, nullptr);
    void* const ctx = std::exchange(s.deleter_ctx, nullptr);
    s.movable = false;
    s.nbytes = nbytes;
    s.capacity = b.capacity;
    if (deleter) deleter(ctx, old_data);
    return;
  }
  if (nbytes <= s.capacity) {  // the allocator's block already holds it
    s.nbytes = nbytes;
    return;
  }
  Block b;
  if (s.device.is_cpu()) {
    b = cpu_allocate(nbytes);
    if (s.nbytes > 0) std::memcpy(b.ptr, s.data, s.nbytes);
    cpu_deallocate({s.data, s.capacity});
  } else {
    DeviceHooks& h = device_hooks(s.device.type());
    b = h.allocate(nbytes, s.device.index());
    struct FreeOnThrow {  // a failed copy gives the new block back, the old one untouched
      DeviceHooks& h;
      Block b;
      int index;
      bool copied = false;
      ~FreeOnThrow() {
        if (!copied) h.deallocate(b, index);
      }
    } guard{h, b, s.device.index()};
    if (s.nbytes > 0) h.memcpy(b.ptr, s.device, s.data, s.device, s.nbytes);
    guard.copied = true;
    h.deallocate({s.data, s.capacity}, s.device.index());
  }
  s.data = b.ptr;
  s.nbytes = nbytes;
  s.capacity = b.capacity;
}

bool compute_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  // Empty: contiguous whatever the strides (checked first: the other dims' product may
  // overflow, [2^62, 2^62, 0] transposed).
  for (int64_t d : sizes)
    if (d == 0) return true;
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (sizes[i] == 0) return true;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

void TensorImpl::refresh() {
  // Zero-first (an empty view's other dims may multiply past int64, [2^62, 2^62, 0]
  // transposed); a non-empty view's product is bounded by its base's, checked when made.
  numel = *product_of_dims(sizes);
  contiguous = compute_contiguous(sizes, strides);
}

Ref<TensorImpl> make_tensor(IntArrayRef sizes, DType dtype, Device device, const char* op) {
  int64_t n = checked_numel(sizes, op);
  int64_t nbytes;
  EMBER_CHECK(!__builtin_mul_overflow(n, itemsize(dtype), &nbytes), "[{}] shape {} of {} is too large", op,
              Shape(sizes).str(), dtype);
  TensorImpl* t = ObjectPool<TensorImpl>::create();
  Ref<TensorImpl> ref = Ref<TensorImpl>::adopt(t);
  t->storage = make_storage(static_cast<size_t>(nbytes), device);
  t->dtype = dtype;
  // Fill the pooled impl's inline shapes in place (no temporaries to move through).
  t->sizes.assign(sizes);
  set_contiguous_strides(t->strides, sizes);
  t->numel = n;
  t->contiguous = true;
  return ref;
}

Ref<TensorImpl> make_view(const Ref<Storage>& storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                          int64_t offset) {
  TensorImpl* t = ObjectPool<TensorImpl>::create();
  t->storage = storage;
  t->dtype = dtype;
  t->sizes.assign(sizes);
  t->strides.assign(strides);
  t->offset = offset;
  t->refresh();
  return Ref<TensorImpl>::adopt(t);
}

void release(TensorImpl* t) noexcept {
  if (t->autograd) {
    if (g_grad_meta_deleter) g_grad_meta_deleter(t->autograd);
    t->autograd = nullptr;
  }
  ObjectPool<TensorImpl>::destroy(t);
}

}  // namespace ember::detail
