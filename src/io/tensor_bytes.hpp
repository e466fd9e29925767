#pragma once
// Between file bytes and tensors: memory maps and heap buffers that tensors can view
// without a copy, and the bytes of a tensor in the order a writer needs them.

#include "format_common.hpp"

#include <ember/core/tensor_impl.hpp>

#include <functional>
#include <optional>
#include <string>

namespace ember::io::detail {

using ember::detail::Ref;
using ember::detail::TensorImpl;

/// Bytes that tensors may view: a file mapping or a heap buffer. Each tensor made over it
/// holds a reference (through its storage's deleter), so the bytes live as long as the
/// last tensor or reader that uses them.
struct Blob {
  std::atomic<int32_t> refcount_{1};
  uint8_t* data = nullptr;
  size_t size = 0;
  bool mapped = false;
  Bytes bytes() const { return {data, size}; }
};
void release(Blob* b) noexcept;
using BlobRef = Ref<Blob>;

/// Maps the whole file privately. The mapping is writable copy-on-write: the file is opened
/// read-only and never changes, but an in-place op on a loaded tensor works (it copies the
/// pages it touches) instead of crashing on a read-only page.
BlobRef map_file(const std::string& path, const char* op);
/// A 64-byte aligned heap buffer of `size` bytes.
BlobRef alloc_blob(uint64_t size, const Source& src);

/// A tensor of `shape` whose elements are at `data` (inside `owner`), row-major or
/// column-major. It views the bytes without a copy when `data` is aligned for the dtype,
/// and copies them otherwise; with `to`, it is converted instead. Bool bytes are checked.
Ref<TensorImpl> tensor_from_bytes(const BlobRef& owner, const uint8_t* data, DType dtype, IntArrayRef shape,
                                  bool column_major, std::optional<DType> to, const Source& src,
                                  std::string_view what);

/// True when `t` is laid out column-major and not row-major (numpy's fortran_order).
bool is_column_major_only(const TensorImpl& t);
/// Calls sink(data, n) with all of t's bytes: row-major, or column-major when
/// `column_major` (the caller checked is_column_major_only). A strided or non-CPU tensor
/// goes through a contiguous CPU copy.
void for_tensor_bytes(const TensorImpl& t, bool column_major, const std::function<void(const void*, size_t)>& sink);

}  // namespace ember::io::detail
