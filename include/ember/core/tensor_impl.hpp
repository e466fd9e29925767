#pragma once
/// What a Tensor handle points at: storage, element offset, shape, strides and dtype.
/// Pooled per thread, so creating a tensor in a warm loop does not call operator new.

#include <ember/core/dtype.hpp>
#include <ember/core/shape.hpp>
#include <ember/core/storage.hpp>

namespace ember::autograd {
struct AutogradMeta;  // defined by the Autograd layer (autograd/node.hpp); null when a tensor needs no grad
}  // namespace ember::autograd

namespace ember::detail {

using autograd::AutogradMeta;

struct TensorImpl {
  std::atomic<int32_t> refcount_{1};
  DType dtype = DType::F32;
  bool contiguous = true;  ///< cached: strides are row-major for sizes
  /// A 0-d tensor made from a C++ number (t + 2.5): promotes like a Python scalar.
  bool wrapped_number = false;
  Ref<Storage> storage;
  int64_t offset = 0;  ///< in elements
  int64_t numel = 0;
  Shape sizes;
  Shape strides;
  AutogradMeta* autograd = nullptr;
  /// For a view made by a view op (narrow, select, ...): the tensor it views, followed to the
  /// root (never a view itself). Autograd needs it when a view is written in place: the root's
  /// history must then include the write, whether or not the root required grad before.
  Ref<TensorImpl> view_of;

  int64_t ndim() const { return sizes.ndim(); }
  Device device() const { return storage->device; }
  void* data() const { return static_cast<char*>(storage->data) + offset * itemsize(dtype); }
  /// Recomputes numel and the contiguity flag after sizes/strides changed.
  void refresh();
};

/// A new tensor of `sizes` (contiguous) with fresh storage on `device`.
Ref<TensorImpl> make_tensor(IntArrayRef sizes, DType dtype, Device device, const char* op = "empty");
/// A view: shares `storage`, with the given geometry.
Ref<TensorImpl> make_view(const Ref<Storage>& storage, DType dtype, IntArrayRef sizes,
                          IntArrayRef strides, int64_t offset);
void release(TensorImpl* t) noexcept;

/// Hook the Autograd layer installs to free AutogradMeta (keeps core free of autograd).
extern void (*g_grad_meta_deleter)(AutogradMeta*);

bool compute_contiguous(IntArrayRef sizes, IntArrayRef strides);

/// Gives `t` the elements of `src` (storage, dtype, geometry) in place, so that every handle
/// to t sees them: set_data and module.to(). t is no longer a view of its old root, nor a
/// wrapped number; its autograd identity is left to the caller. Cannot fail.
inline void adopt_elements(TensorImpl& t, const TensorImpl& src) {
  t.storage = src.storage;
  t.dtype = src.dtype;
  t.sizes = src.sizes;
  t.strides = src.strides;
  t.offset = src.offset;
  t.wrapped_number = false;
  t.view_of = {};
  t.refresh();
}

}  // namespace ember::detail
