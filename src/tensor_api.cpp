// Small non-template helpers behind BasicTensor and the factories.

#include <ember/core/device_hooks.hpp>
#include <ember/core/factories.hpp>
#include <ember/dispatch/default_policy.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <utility>

namespace ember::detail {

Scalar read_scalar(const TensorImpl& t, const char* op) {
  EMBER_CHECK(t.device().is_cpu(), "[{}] reads CPU tensors only, got {}", op, t.device());
  return visit_dtype(t.dtype, [&]<class T>() -> Scalar {
    T v = *static_cast<const T*>(t.data());
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return Scalar(static_cast<float>(v));
    else return Scalar(v);
  });
}

void check_scalar_fits(Scalar v, DType t, const char* op) {
  if (t == DType::Bool || t == DType::F64 || v.is_bool()) return;
  bool fits = true;
  if (is_floating(t)) {
    const double largest = t == DType::F32 ? std::numeric_limits<float>::max()
                           : t == DType::F16 ? 65504.0
                                              : 3.3895313892515355e38;  // bf16
    const double d = v.to_double();
    fits = !std::isfinite(d) || std::abs(d) <= largest;
  } else {
    struct Range {
      double lo, hi;
      bool is_unsigned;
    };
    const Range r = visit_dtype(t, [&]<class T>() -> Range {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return {static_cast<double>(std::numeric_limits<T>::lowest()), static_cast<double>(std::numeric_limits<T>::max()),
                std::is_unsigned_v<T>};
      } else {
        return {0.0, 0.0, false};
      }
    });
    if (v.is_integral()) {
      // int64 values compare exactly as int64 (doubles lose the low bits near 2^63).
      // Unsigned types also take -max..-1, which wrap (uint8: -1 is 255), as PyTorch.
      const int64_t i = v.to_int();
      const double lo = r.is_unsigned ? -r.hi : r.lo;
      fits = t == DType::I64 || (static_cast<double>(i) >= lo && static_cast<double>(i) <= r.hi);
    } else {
      // As libtorch 1.13 (c10::overflows): the value itself within [lowest, max] (2147483647.5
      // does not fit i32 though it truncates to max; -0.5 does not fit u8), NaN and infinities
      // refused; 2^63 (the double nearest INT64_MAX) is already out of int64. PyTorch 2.x
      // takes values below max + 1 too (127.9 for i8, truncated to 127); Ember keeps the
      // stricter rule, whose refusal names the value.
      const double d = v.to_double();
      fits = std::isfinite(d) && d >= r.lo && (t == DType::I64 ? d < 9223372036854775808.0 : d <= r.hi);
    }
  }
  EMBER_CHECK(fits, "[{}] value {} cannot be converted to {} without overflow", op,
              v.is_floating() ? fmt::format("{}", v.to_double()) : fmt::format("{}", v.to_int()), t);
}

Ref<TensorImpl> make_scalar_tensor(Scalar v, DType t, Device device) {
  Ref<TensorImpl> out = make_tensor(Shape{}, t, kCPU, "scalar");
  visit_dtype(t, [&]<class T>() { *static_cast<T*>(out->data()) = v.to<T>(); });
  out->wrapped_number = true;
  if (device.is_cpu()) return out;
  // A wrapped number is promoted on its own device; keep it on the tensor's device.
  Ref<TensorImpl> dev = make_tensor(Shape{}, t, device, "scalar");
  DeviceHooks& h = device_hooks(device.type());
  h.memcpy(dev->data(), device, out->data(), kCPU, static_cast<size_t>(itemsize(t)));
  dev->wrapped_number = true;
  return dev;
}

int64_t reduced_count(const TensorImpl& x, IntArrayRef dims, const char* op) {
  if (dims.empty()) return x.numel;
  int64_t n = 1;
  for (int64_t d : dims) n *= x.sizes[wrap_dim(d, x.ndim(), op)];
  return n;
}

Shape reduced_shape(const TensorImpl& x, IntArrayRef dims, bool keepdim, const char* op) {
  uint64_t mask = 0;
  for (int64_t d : dims) mask |= uint64_t{1} << wrap_dim(d, x.ndim(), op);
  if (dims.empty()) mask = ~uint64_t{0};
  Shape s;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (!(mask >> d & 1)) s.push_back(x.sizes[d]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

namespace {
/// t[i] = value(i) (a double) for every i, stored in t's dtype: each value computed from its
/// index, so no rounding accumulates.
template <class F>
void fill_by_index(TensorImpl& t, F value) {
  visit_dtype(t.dtype, [&]<class T>() {
    T* p = static_cast<T*>(t.data());
    for (int64_t i = 0; i < t.numel; ++i) {
      const double v = value(i);
      if constexpr (std::is_same_v<T, bool>) p[i] = v != 0;
      else if constexpr (std::is_integral_v<T>) {
        // As to(dtype): NaN is 0 and out-of-range values saturate (a plain cast is undefined).
        if (!(v == v)) p[i] = T(0);
        else if (v >= static_cast<double>(std::numeric_limits<T>::max())) p[i] = std::numeric_limits<T>::max();
        else if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) p[i] = std::numeric_limits<T>::lowest();
        else p[i] = static_cast<T>(v);
      } else if constexpr (std::is_same_v<T, double>) p[i] = v;
      else p[i] = T(static_cast<float>(v));  // float, f16, bf16
    }
  });
}
}  // namespace

void fill_arange(TensorImpl& t, double start, double step) {
  fill_by_index(t, [&](int64_t i) { return start + step * static_cast<double>(i); });
}

void fill_arange_int(TensorImpl& t, int64_t start, int64_t step) {
  // Stepping value by value: every value fits int64 (arange checks the last), where step * i
  // alone may not (start -9e18, step 4e18).
  visit_dtype(t.dtype, [&]<class T>() {
    T* p = static_cast<T*>(t.data());
    int64_t v = start;
    for (int64_t i = 0; i < t.numel; ++i) {
      p[i] = static_cast<T>(v);
      if (i + 1 < t.numel) v += step;
    }
  });
}

void fill_linspace(TensorImpl& t, double start, double end, int64_t steps) {
  const int64_t half = steps == 1 ? 1 : steps / 2;  // one step: its element counts from start, [a] as PyTorch
  if (t.dtype == DType::F32) {
    // In float arithmetic, as PyTorch's scalar f32 kernel computes it (double rounded once
    // differs in the last bit, and histogram's bin edges then put values in other bins than
    // PyTorch's). PyTorch 1.13's SIMD path (from 2 vectors on: 16 elements with AVX2's 8
    // floats) counts each vector block from its first element instead, so its last bits there
    // depend on the vector width.
    const auto s = static_cast<float>(start), e = static_cast<float>(end);
    const float step = steps > 1 ? (e - s) / static_cast<float>(steps - 1) : 0.0f;
    fill_by_index(t, [&](int64_t i) {
      return static_cast<double>(i < half ? s + step * static_cast<float>(i)
                                          : e - step * static_cast<float>(steps - 1 - i));
    });
    return;
  }
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  fill_by_index(t, [&](int64_t i) {
    return i < half ? start + step * static_cast<double>(i) : end - step * static_cast<double>(steps - 1 - i);
  });
}

void fill_eye(TensorImpl& t) {
  Kernels<Cpu>::fill(t, 0);
  int64_t n = std::min(t.sizes[0], t.sizes[1]);
  visit_dtype(t.dtype, [&]<class T>() {
    T* p = static_cast<T*>(t.data());
    for (int64_t i = 0; i < n; ++i) p[i * t.sizes[1] + i] = static_cast<T>(1.0f);
  });
}

namespace {
std::atomic<uint64_t> g_seed{0x853c49e6748fea9bULL};
std::atomic<uint64_t> g_offset{0};
}  // namespace

// A GeneratorGuard's generator on this thread, or null for the global one.
thread_local GeneratorState* t_generator = nullptr;

GeneratorState* exchange_thread_generator(GeneratorState* g) { return std::exchange(t_generator, g); }

RandomState reserve_random(uint64_t n) {
  // Each element uses one Philox counter; round to blocks of 4 so fills stay aligned.
  uint64_t take = (n + 3) / 4 * 4;
  if (t_generator != nullptr) return {t_generator->seed.load(), t_generator->offset.fetch_add(take)};
  return {g_seed.load(), g_offset.fetch_add(take)};
}

}  // namespace ember::detail

namespace ember {

void manual_seed(uint64_t seed) {
  detail::g_seed = seed;
  detail::g_offset = 0;
}
detail::RandomState get_rng_state() { return {detail::g_seed.load(), detail::g_offset.load()}; }
void set_rng_state(detail::RandomState s) {
  detail::g_seed = s.seed;
  detail::g_offset = s.offset;
}

}  // namespace ember
