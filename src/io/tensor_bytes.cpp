#include "tensor_bytes.hpp"

#include "text.hpp"

#include <ember/core/device_hooks.hpp>
#include <ember/core/error.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ember::io::detail {

void release(Blob* b) noexcept {
  if (b->mapped) ::munmap(b->data, b->size);
  else std::free(b->data);
  delete b;
}

BlobRef map_file(const std::string& path, const char* op) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;  // before anything that might allocate
    EMBER_FAIL("{}cannot open: {}", Source{op, path}.prefix(), std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    EMBER_FAIL("{}cannot stat: {}", Source{op, path}.prefix(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    EMBER_FAIL("{}not a regular file", Source{op, path}.prefix());
  }
  auto* b = new Blob;
  BlobRef ref = BlobRef::adopt(b);
  b->size = static_cast<size_t>(st.st_size);
  if (b->size == 0) {  // mmap refuses length 0; the parsers report the file as too short
    ::close(fd);
    return ref;
  }
  void* p = ::mmap(nullptr, b->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file open
  EMBER_CHECK(p != MAP_FAILED, "{}cannot map its {} bytes: {}", Source{op, path}.prefix(), b->size,
              std::strerror(err));
  b->data = static_cast<uint8_t*>(p);
  b->mapped = true;
  return ref;
}

BlobRef alloc_blob(uint64_t size, const Source& src) {
  auto* b = new Blob;
  BlobRef ref = BlobRef::adopt(b);
  uint64_t rounded = (size + 63) / 64 * 64;
  void* p = size < UINT64_MAX - 64 ? std::aligned_alloc(64, rounded ? rounded : 64) : nullptr;
  EMBER_CHECK(p != nullptr, "{}cannot allocate {} bytes", src.prefix(), size);
  b->data = static_cast<uint8_t*>(p);
  b->size = size;
  return ref;
}

namespace {
void unref_blob(void* ctx, void*) { BlobRef::adopt(static_cast<Blob*>(ctx)); }
}  // namespace

Ref<TensorImpl> tensor_from_bytes(const BlobRef& owner, const uint8_t* data, DType dtype, IntArrayRef shape,
                                  bool column_major, std::optional<DType> to, const Source& src,
                                  std::string_view what) {
  using namespace ember::detail;
  const int64_t numel = checked_numel(shape, src.op);
  const size_t nbytes = static_cast<size_t>(numel * itemsize(dtype));
  if (numel == 0) return make_tensor(shape, to.value_or(dtype), kCPU, src.op);
  if (dtype == DType::Bool) check_bool_bytes(data, nbytes, src, what);

  Shape strides = contiguous_strides(shape);
  if (column_major) {
    int64_t acc = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      strides[i] = acc;
      acc *= std::max<int64_t>(shape[i], 1);
    }
  }
  Ref<Storage> storage;
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(itemsize(dtype)) == 0) {
    BlobRef keep = owner;  // released by the storage's deleter
    storage = make_user_storage(const_cast<uint8_t*>(data), nbytes, kCPU, &unref_blob, keep.leak());
    storage->movable = true;  // the file's bytes are Ember's: resize_ may move them
  } else {
    // Kernels may assume aligned elements; a file that does not align them costs a copy.
    storage = make_storage(nbytes, kCPU);
    std::memcpy(storage->data, data, nbytes);
  }
  Ref<TensorImpl> view = make_view(storage, dtype, shape, strides, 0);
  if (!to || *to == dtype) return view;
  Ref<TensorImpl> out = make_tensor(shape, *to, kCPU, src.op);
  copy_on_device(*out, *view);
  return out;
}

bool is_column_major_only(const TensorImpl& t) {
  if (t.contiguous || !t.device().is_cpu()) return false;
  int64_t expected = 1;
  for (int64_t i = 0; i < t.ndim(); ++i) {
    if (t.sizes[i] == 1) continue;
    if (t.strides[i] != expected) return false;
    expected *= t.sizes[i];
  }
  return true;
}

void for_tensor_bytes(const TensorImpl& t, bool column_major, const std::function<void(const void*, size_t)>& sink) {
  using namespace ember::detail;
  const size_t nbytes = static_cast<size_t>(t.numel * itemsize(t.dtype));
  if (nbytes == 0) return;
  if (t.device().is_cpu() && (column_major || t.contiguous)) return sink(t.data(), nbytes);
  Ref<TensorImpl> staging = make_tensor(t.sizes, t.dtype, kCPU, "save");
  copy_on_device(*staging, t);
  sink(staging->data(), nbytes);
}

}  // namespace ember::io::detail
