#pragma once
/// Test-side tensor I/O that does not go through Ember's kernels: typed buffers with guard
/// bytes wrapped by ember::from_blob at any strides, element reads by walking strides, and
/// double <-> dtype conversion. Used by the op-table tests.

#include <ember/ember.hpp>

#include "../../kernels_cpu/reference/reference.hpp"

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ember::test {

using ref::Dims;

/// Writes v to p as dtype t (a C++ cast; bool: v != 0).
inline void store(DType t, void* p, double v) {
  visit_dtype(t, [&]<class T>() {
    T x;
    if constexpr (std::is_same_v<T, bool>) x = v != 0;
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) x = T(static_cast<float>(v));
    else x = static_cast<T>(v);
    std::memcpy(p, &x, sizeof(T));
  });
}
inline double load(DType t, const void* p) {
  return visit_dtype(t, [&]<class T>() -> double {
    T x;
    std::memcpy(&x, p, sizeof(T));
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(x);
    else return static_cast<double>(x);
  });
}
/// v as stored in dtype t and read back (floating dtypes: rounded; integers: wrapped).
inline double round_to(DType t, double v) {
  if (is_integral(t)) {
    int bits = static_cast<int>(itemsize(t) * 8);
    return static_cast<double>(ref::wrap_int(static_cast<int64_t>(v), bits, t != DType::U8));
  }
  if (t == DType::Bool) return v != 0;
  unsigned char b[8];
  store(t, b, v);
  return load(t, b);
}
inline int dtype_bits(DType t) { return t == DType::Bool ? 1 : static_cast<int>(itemsize(t) * 8); }
inline bool dtype_signed(DType t) { return t != DType::U8 && t != DType::Bool; }
inline double finite_max(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

/// Element offsets (in elements, relative to the view's first element) in row-major order.
inline std::vector<int64_t> element_offsets(const Dims& shape, const Dims& strides) {
  int64_t n = ref::numel(shape);
  std::vector<int64_t> offs(static_cast<size_t>(n));
  if (n == 0) return offs;
  Dims idx(shape.size(), 0);
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    offs[static_cast<size_t>(i)] = o;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) {
        o += strides[d];
        break;
      }
      o -= (shape[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
  return offs;
}

/// Reads any CPU tensor's elements (row-major) as doubles by walking its strides.
inline ref::Array read(const Tensor& t) {
  Dims shape(t.sizes().begin(), t.sizes().end()), strides(t.strides().begin(), t.strides().end());
  ref::Array a(shape);
  if (a.numel() == 0) return a;
  auto offs = element_offsets(shape, strides);
  const char* base = static_cast<const char*>(t.raw_data());
  int64_t es = itemsize(t.dtype());
  for (size_t i = 0; i < offs.size(); ++i) a.v[i] = load(t.dtype(), base + offs[i] * es);
  return a;
}

/// A tensor over a test-owned buffer: any strides and storage offset, guard bytes before and
/// after, and a fill pattern in the gaps; `untouched()` checks that nothing outside the
/// view's elements changed.
class Guarded {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr unsigned char kPattern = 0xA5;

  Guarded(DType dtype, Dims shape, Dims strides, int64_t offset = 0)
      : dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)) {
    int64_t es = itemsize(dtype_);
    int64_t span = offset;
    bool empty = ref::numel(shape_) == 0;
    if (!empty) {
      span += 1;
      for (size_t d = 0; d < shape_.size(); ++d) span += (shape_[d] - 1) * strides_[d];
    }
    bytes_.assign(kGuard * 2 + static_cast<size_t>(span * es), kPattern);
    offs_ = element_offsets(shape_, strides_);
    for (auto& o : offs_) o += offset;
    in_view_.assign(bytes_.size(), false);
    for (int64_t o : offs_)
      for (int64_t b = 0; b < es; ++b) in_view_[kGuard + static_cast<size_t>(o * es + b)] = true;
    Shape s(shape_), st(strides_);
    tensor_ = from_blob(bytes_.data() + kGuard + offset * es, s, st, TensorOptions(dtype_));
    snapshot_ = bytes_;
  }
  /// Contiguous or with the last two dims transposed in memory.
  static Guarded make(DType t, const Dims& shape, bool transposed, int64_t gap = 1, int64_t offset = 0) {
    Dims st = layout_strides(shape, transposed, gap);
    return Guarded(t, shape, st, offset);
  }
  static Dims layout_strides(const Dims& shape, bool transposed, int64_t gap = 1) {
    Dims storage = shape;
    if (transposed && shape.size() >= 2) std::swap(storage[storage.size() - 1], storage[storage.size() - 2]);
    Dims st = ref::contiguous_strides(storage);
    for (auto& s : st) s *= gap;
    if (transposed && shape.size() >= 2) std::swap(st[st.size() - 1], st[st.size() - 2]);
    return st;
  }

  /// Writes values (row-major order of the view) and records the buffer state.
  void set(const std::vector<double>& values) {
    int64_t es = itemsize(dtype_);
    for (size_t i = 0; i < offs_.size(); ++i) store(dtype_, bytes_.data() + kGuard + offs_[i] * es, values[i]);
    snapshot_ = bytes_;
  }
  /// Records the current state as the baseline for untouched().
  void mark() { snapshot_ = bytes_; }
  bool untouched() const {
    for (size_t i = 0; i < bytes_.size(); ++i)
      if (!in_view_[i] && bytes_[i] != snapshot_[i]) return false;
    return true;
  }
  Tensor& tensor() { return tensor_; }
  ref::Array values() const { return read(tensor_); }

  Guarded(const Guarded&) = delete;
  Guarded(Guarded&&) = default;

 private:
  DType dtype_;
  Dims shape_, strides_;
  std::vector<unsigned char> bytes_, snapshot_;
  std::vector<bool> in_view_;
  std::vector<int64_t> offs_;
  Tensor tensor_;
};

/// Deterministic inputs: uniform in the domain, integers in the clipped integer domain.
struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool coin() { return integer(0, 1) == 1; }

  /// One value of dtype t from domain [lo, hi] (floating) / [ilo, ihi] (integer).
  double value(DType t, double lo, double hi, double ilo, double ihi) {
    if (t == DType::Bool) return static_cast<double>(integer(0, 1));
    if (is_integral(t)) {
      int64_t a = static_cast<int64_t>(std::ceil(ilo)), b = static_cast<int64_t>(std::floor(ihi));
      if (t == DType::U8) a = std::max<int64_t>(a, 0), b = std::min<int64_t>(b, 255);
      if (t == DType::I8) a = std::max<int64_t>(a, -128), b = std::min<int64_t>(b, 127);
      if (a > b) a = b = std::clamp<int64_t>(static_cast<int64_t>(std::nearbyint((ilo + ihi) / 2)), 0, 1);
      return static_cast<double>(integer(a, b));
    }
    return round_to(t, uniform(lo, hi));
  }
};

inline uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

inline std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

/// Compares got against ref (already rounded to the result dtype). Floating results: NaN
/// and infinities must agree exactly, finite values within tol * (1 + |ref| + scale[i]).
/// Returns an empty string on success, else a description of the first mismatch.
inline std::string compare(const ref::Array& got, const ref::Array& want, double tol,
                           const std::vector<double>* scale = nullptr) {
  if (got.shape != want.shape) return "shape " + dims_str(got.shape) + " != expected " + dims_str(want.shape);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.v[static_cast<size_t>(i)], w = want.v[static_cast<size_t>(i)];
    bool ok;
    if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
    else if (std::isinf(w) || std::isinf(g)) ok = g == w;
    else {
      double s = scale ? (*scale)[static_cast<size_t>(i)] : 0.0;
      ok = std::fabs(g - w) <= tol * (1 + std::fabs(w) + s);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (!bad) return {};
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld of %lld elements differ; first at %s: got %.17g, expected %.17g",
                static_cast<long long>(bad), static_cast<long long>(got.numel()),
                dims_str(ref::unravel(first, got.shape)).c_str(), got.v[static_cast<size_t>(first)],
                want.v[static_cast<size_t>(first)]);
  return buf;
}

/// Where both are zero, whether the signs agree (compare() counts -0 == +0).
inline std::string compare_zero_signs(const ref::Array& got, const ref::Array& want) {
  for (size_t i = 0; i < got.v.size() && i < want.v.size(); ++i)
    if (got.v[i] == 0 && want.v[i] == 0 && std::signbit(got.v[i]) != std::signbit(want.v[i]))
      return "zero of the wrong sign at " + dims_str(ref::unravel(static_cast<int64_t>(i), got.shape)) + ": got " +
             (std::signbit(got.v[i]) ? "-0" : "+0");
  return {};
}

}  // namespace ember::test
