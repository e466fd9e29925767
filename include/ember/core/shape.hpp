#pragma once
/// Shapes and strides: a small vector of int64 with EMBER_MAX_INLINE_DIMS entries inline,
/// spilling to the heap only above that rank.

#include <ember/core/config.hpp>
#include <ember/core/error.hpp>
#include <ember/core/format_text.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ember {

/// A read-only view of dims, accepted wherever a shape is taken (`{2, 3}`, a Shape, a span).
using IntArrayRef = std::span<const int64_t>;

class Shape {
 public:
  static constexpr int kInline = EMBER_MAX_INLINE_DIMS;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.size()); }
  Shape(IntArrayRef dims) { assign(dims.data(), dims.size()); }  // NOLINT: implicit
  explicit Shape(size_t n, int64_t value = 0) {
    resize(n);
    std::fill(begin(), end(), value);
  }
  Shape(const Shape& o) { assign(o.data(), o.size()); }
  Shape(Shape&& o) noexcept { steal(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~Shape() { release(); }

  size_t size() const { return size_; }
  int64_t ndim() const { return static_cast<int64_t>(size_); }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t back() const { return data()[size_ - 1]; }
  operator IntArrayRef() const { return {data(), size_}; }  // NOLINT
  /// The dims as a std::vector (libtorch's `sizes().vec()`).
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  void resize(size_t n) {
    if (n > capacity()) grow(n);
    if (n > size_) std::fill(data() + size_, data() + n, 0);
    size_ = static_cast<uint32_t>(n);
  }
  /// Sets the size to n and leaves any new entries unset, for a caller that writes every one
  /// of them next: resize's zero fill compiles to a memset call or a `rep stos`, whose
  /// start-up costs more than the few dims it clears.
  void resize_for_overwrite(size_t n) {
    if (n > capacity()) grow(n);
    size_ = static_cast<uint32_t>(n);
  }
  void push_back(int64_t v) {
    if (size_ == capacity()) grow(size_ * 2);
    data()[size_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    int64_t* d = data();
    std::memmove(d + pos + 1, d + pos, (size_ - 1 - pos) * sizeof(int64_t));
    d[pos] = v;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    std::memmove(d + pos, d + pos + 1, (size_ - pos - 1) * sizeof(int64_t));
    --size_;
  }

  /// Replaces the contents with `dims` (no allocation up to kInline dims).
  void assign(IntArrayRef dims) { assign(dims.data(), dims.size()); }

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.size_ != b.size_) return false;
    const int64_t *pa = a.data(), *pb = b.data();
    for (uint32_t i = 0; i < a.size_; ++i)  // a plain loop: ranks are tiny, a memcmp call is not
      if (pa[i] != pb[i]) return false;
    return true;
  }

  /// "[2, 3, 4]"
  std::string str() const {
    std::string s = "[";
    for (size_t i = 0; i < size_; ++i) {
      if (i) s += ", ";
      s += std::to_string(data()[i]);
    }
    return s + "]";
  }

 private:
  size_t capacity() const { return heap_ ? cap_ : kInline; }
  void assign(const int64_t* src, size_t n) {
    if (n > capacity()) grow(n);
    size_ = static_cast<uint32_t>(n);
    int64_t* d = data();
    if (d != src)
      for (size_t i = 0; i < n; ++i) d[i] = src[i];  // ranks are tiny: a loop beats a memmove call
  }
  void grow(size_t n) {
    n = std::max<size_t>(n, kInline * 2);
    auto* p = static_cast<int64_t*>(std::malloc(n * sizeof(int64_t)));
    if (!p) detail::raise_error_cstr("[shape] out of memory");
    if (size_) std::memcpy(p, data(), size_ * sizeof(int64_t));
    release();
    heap_ = p;
    cap_ = static_cast<uint32_t>(n);
  }
  void release() {
    if (heap_) {  // most shapes are inline: skip the call into free()
      std::free(heap_);
      heap_ = nullptr;
    }
  }
  void steal(Shape& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.heap_ = nullptr;
    } else {
      heap_ = nullptr;
      std::memcpy(inline_, o.inline_, size_ * sizeof(int64_t));
    }
    o.size_ = 0;
  }

  int64_t inline_[kInline];
  int64_t* heap_ = nullptr;
  uint32_t size_ = 0;
  uint32_t cap_ = 0;
};

/// Product of dims: 0 when any dim is 0, whatever the others multiply to ([2^62, 2^62, 0] as
/// [0, 2^62, 2^62]); nullopt when it overflows int64. The element count of a shape read from
/// a file or built by a factory.
inline std::optional<int64_t> product_of_dims(IntArrayRef dims) {
  for (int64_t d : dims)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

/// Product of dims; fails naming `op` when it overflows int64 or a dim is negative.
inline int64_t checked_numel(IntArrayRef dims, const char* op) {
  // One pass (every op's output goes through here): a zero dim makes the product 0 even when
  // the other dims' product overflowed, as product_of_dims.
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (int64_t d : dims) {
    EMBER_CHECK(d >= 0, "[{}] negative dimension {} in shape {}", op, d, Shape(dims).str());
    empty |= d == 0;
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  if (empty) return 0;
  EMBER_CHECK(!overflow, "[{}] shape {} has more elements than int64 can count", op, Shape(dims).str());
  return n;
}

/// The stride after one of `acc` over a dim of size d: acc * max(d, 1), saturating at
/// INT64_MAX. Only an empty tensor's strides can saturate ([0, 2^62, 2^62]), and those never
/// address memory.
inline int64_t next_contiguous_stride(int64_t acc, int64_t d) {
  int64_t r;
  return __builtin_mul_overflow(acc, std::max<int64_t>(d, 1), &r) ? std::numeric_limits<int64_t>::max() : r;
}

/// Writes contiguous (row-major) strides for `dims` into `strides`, in place: no temporary
/// and no zero fill, for the paths that make a tensor or a view on every op. `dims` must not
/// point into `strides` (it is read while `strides` is written, and may move when it grows).
inline void set_contiguous_strides(Shape& strides, IntArrayRef dims) {
  strides.resize_for_overwrite(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = acc;
    acc = next_contiguous_stride(acc, dims[i]);
  }
}

/// Contiguous (row-major) strides for `dims`.
inline Shape contiguous_strides(IntArrayRef dims) {
  Shape s;
  set_contiguous_strides(s, dims);
  return s;
}

/// Wraps a possibly negative dim into [0, ndim); fails naming `op`.
inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = ndim == 0 ? 1 : ndim;  // 0-d tensors accept dim 0 and -1, as in PyTorch
  EMBER_CHECK(dim >= -n && dim < n, "[{}] dim {} out of range for a tensor of rank {}", op, dim, ndim);
  return dim < 0 ? dim + n : dim;
}

/// Streams "[2, 3]" (`std::cout << t.sizes()`, as libtorch's); src/print.cpp.
std::ostream& operator<<(std::ostream& os, const Shape& s);

namespace detail {
/// For ops that need a dimension to work along (chunk, split, unbind, ...).
inline void check_not_0d(int64_t ndim, const char* op) {
  EMBER_CHECK(ndim > 0, "[{}] expects a tensor with at least one dimension, got a 0-d tensor", op);
}
/// Each of `dims` valid for rank `ndim`, none named twice (as -1 and ndim - 1, say).
inline void check_distinct_dims(IntArrayRef dims, int64_t ndim, const char* op) {
  for (size_t i = 0; i < dims.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      EMBER_CHECK(wrap_dim(dims[i], ndim, op) != wrap_dim(dims[j], ndim, op), "[{}] dim {} appears more than once in {}",
                  op, dims[i], Shape(dims).str());
}
/// a * b and a + b for sizes computed from user input: an Error naming `op` when the result
/// overflows int64, never undefined behaviour.
inline int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r;
  EMBER_CHECK(!__builtin_mul_overflow(a, b, &r), "[{}] the size {} x {} overflows int64", op, a, b);
  return r;
}
inline int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r;
  EMBER_CHECK(!__builtin_add_overflow(a, b, &r), "[{}] the size {} + {} overflows int64", op, a, b);
  return r;
}
}  // namespace detail

}  // namespace ember

template <>
struct fmt::formatter<ember::Shape> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <class Ctx>
  auto format(const ember::Shape& v, Ctx& ctx) const {
    return ember::detail::format_text(v.str(), ctx);
  }
};
