#pragma once
/// Tensor factories: empty, zeros, ones, full, arange, linspace, eye, rand, randn, randint,
/// the _like forms, from_blob and tensors from nested initializer lists.

#include <ember/core/tensor.hpp>
#include <ember/dispatch/default_policy.hpp>

#include <cmath>

#include <type_traits>

namespace ember {

namespace detail {
/// Counter-based random state: results depend only on (seed, offset), not on threads.
struct RandomState {
  uint64_t seed;
  uint64_t offset;
};
/// Reserves `n` random numbers and returns where they start (src/random.cpp).
RandomState reserve_random(uint64_t n);
void fill_arange(TensorImpl& t, double start, double step);
void fill_eye(detail::TensorImpl& t);
template <class P>
void ensure_backend(Device d, const char* op) {
  EMBER_CHECK(P::backends::has(d.type), "[{}] device {} is not served by this policy's backends", op, d);
  if constexpr (P::backends::has(DeviceType::Cuda)) {
    if (d.is_cuda()) cuda_ensure_initialized();
  }
}
}  // namespace detail

/// Seeds the global counter-based generator (Philox4x32-10) and resets its counter.
void manual_seed(uint64_t seed);
/// The generator's state, to save and restore (checkpoints).
detail::RandomState get_rng_state();
void set_rng_state(detail::RandomState s);

namespace detail {
/// Honours TensorOptions::requires_grad() once a factory has filled its tensor.
template <class P>
BasicTensor<P> with_grad_option(BasicTensor<P> t, const TensorOptions& o) {
  if (!o.get_requires_grad()) return t;
  if constexpr (has_layer<autograd::Autograd, typename P::layers>::value) {
    t.requires_grad_(true);
    return t;
  } else {
    EMBER_FAIL("[requires_grad] this policy has no autograd::Autograd layer: its tensors cannot require grad");
  }
}
}  // namespace detail

template <class P = DefaultPolicy>
BasicTensor<P> empty(const Shape& shape, TensorOptions o = {}) {
  Device d = o.device_or(kCPU);
  detail::ensure_backend<P>(d, "empty");
  return detail::with_grad_option<P>(BasicTensor<P>(detail::make_tensor(shape, o.dtype_or(kDefaultFloat), d, "empty")), o);
}

template <class P = DefaultPolicy>
BasicTensor<P> full(const Shape& shape, Scalar value, TensorOptions o = {}) {
  TensorOptions plain = o.requires_grad(false);
  BasicTensor<P> t = empty<P>(shape, o.has_dtype() ? plain : plain.dtype(value.default_dtype()));
  t.fill_(value);
  return detail::with_grad_option<P>(t, o);
}
template <class P = DefaultPolicy>
BasicTensor<P> zeros(const Shape& shape, TensorOptions o = {}) {
  return full<P>(shape, 0, o.dtype(o.dtype_or(kDefaultFloat)));
}
template <class P = DefaultPolicy>
BasicTensor<P> ones(const Shape& shape, TensorOptions o = {}) {
  return full<P>(shape, 1, o.dtype(o.dtype_or(kDefaultFloat)));
}

namespace detail {
template <class P>
BasicTensor<P> on_cpu_then_move(const Shape& shape, TensorOptions o, DType fallback, auto&& fill) {
  BasicTensor<P> t = empty<P>(shape, TensorOptions(o.dtype_or(fallback)));
  fill(t.impl());
  Device d = o.device_or(kCPU);
  return with_grad_option<P>(d.is_cpu() ? t : t.to(d), o);
}
}  // namespace detail

/// Values start, start+step, ... below end. Integer arguments give i64, as in PyTorch.
template <class P = DefaultPolicy>
BasicTensor<P> arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions o = {}) {
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, "[arange] step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e) && std::isfinite(st), "[arange] unsupported range [{}, {}) step {}",
              s, e, st);
  EMBER_CHECK((e - s) / st >= 0, "[arange] range [{}, {}) with step {} is empty in the wrong direction", s, e, st);
  const double count = std::ceil((e - s) / st);
  EMBER_CHECK(count < 9.2e18, "[arange] range [{}, {}) with step {} has too many elements", s, e, st);  // < 2^63
  int64_t n = static_cast<int64_t>(count);
  bool ints = start.is_integral() && end.is_integral() && step.is_integral();
  return detail::on_cpu_then_move<P>({n}, o, ints ? DType::I64 : kDefaultFloat,
                                     [&](detail::TensorImpl& t) { detail::fill_arange(t, s, st); });
}
template <class P = DefaultPolicy>
BasicTensor<P> arange(Scalar end, TensorOptions o = {}) {
  return arange<P>(end.is_floating() ? Scalar(0.0) : Scalar(int64_t{0}), end, int64_t{1}, o);
}

/// `steps` evenly spaced values from start to end inclusive.
template <class P = DefaultPolicy>
BasicTensor<P> linspace(double start, double end, int64_t steps, TensorOptions o = {}) {
  EMBER_CHECK(steps >= 0, "[linspace] steps must be non-negative, got {}", steps);
  double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  return detail::on_cpu_then_move<P>({steps}, o, kDefaultFloat, [&](detail::TensorImpl& t) {
    detail::fill_arange(t, start, step);
  });
}

template <class P = DefaultPolicy>
BasicTensor<P> eye(int64_t n, std::optional<int64_t> m_in = {}, TensorOptions o = {}) {
  const int64_t m = m_in.value_or(n);
  EMBER_CHECK(n >= 0 && m >= 0, "[eye] n and m must be non-negative, got {} and {}", n, m);
  return detail::on_cpu_then_move<P>({n, m}, o, kDefaultFloat, [&](detail::TensorImpl& t) { detail::fill_eye(t); });
}

namespace detail {
template <class P>
BasicTensor<P> random_tensor(const Shape& shape, TensorOptions o, bool normal, double p0, double p1, const char* op) {
  DType t = o.dtype_or(kDefaultFloat);
  EMBER_CHECK(is_floating(t), "[{}] needs a floating dtype, got {}", op, t);
  BasicTensor<P> out = empty<P>(shape, TensorOptions(t));
  RandomState rs = reserve_random(static_cast<uint64_t>(out.numel()));
  Kernels<Cpu>::fill_random(out.impl(), normal, p0, p1, rs.seed, rs.offset);
  Device d = o.device_or(kCPU);
  return with_grad_option<P>(d.is_cpu() ? out : out.to(d), o);
}
}  // namespace detail

/// Uniform on [0, 1).
template <class P = DefaultPolicy>
BasicTensor<P> rand(const Shape& shape, TensorOptions o = {}) {
  return detail::random_tensor<P>(shape, o, false, 0.0, 1.0, "rand");
}
/// Standard normal.
template <class P = DefaultPolicy>
BasicTensor<P> randn(const Shape& shape, TensorOptions o = {}) {
  return detail::random_tensor<P>(shape, o, true, 0.0, 1.0, "randn");
}
/// Integers uniform on [low, high), i64 by default.
template <class P = DefaultPolicy>
BasicTensor<P> randint(int64_t low, int64_t high, const Shape& shape, TensorOptions o = {}) {
  EMBER_CHECK(high > low, "[randint] high ({}) must be greater than low ({})", high, low);
  BasicTensor<P> u = detail::random_tensor<P>(shape, TensorOptions(DType::F64), false, static_cast<double>(low),
                                              static_cast<double>(high), "randint");
  return u.floor().clamp_max(static_cast<double>(high - 1)).to(o.dtype_or(DType::I64)).to(o.device_or(kCPU));
}

#define EMBER_LIKE_FACTORY(name)                                                                   \
  template <class P>                                                                               \
  BasicTensor<P> name##_like(const BasicTensor<P>& t, TensorOptions o = {}) {                      \
    return name<P>(t.sizes(), o.dtype(o.dtype_or(t.dtype())).device(o.device_or(t.device()))); \
  }
EMBER_LIKE_FACTORY(empty)
EMBER_LIKE_FACTORY(zeros)
EMBER_LIKE_FACTORY(ones)
EMBER_LIKE_FACTORY(rand)
EMBER_LIKE_FACTORY(randn)
#undef EMBER_LIKE_FACTORY
template <class P>
BasicTensor<P> full_like(const BasicTensor<P>& t, Scalar v, TensorOptions o = {}) {
  return full<P>(t.sizes(), v, o.dtype(o.dtype_or(t.dtype())).device(o.device_or(t.device())));
}

/// A tensor viewing user memory without a copy. `deleter(data)` runs when the last tensor
/// using the memory goes away (none: the caller keeps the memory alive).
template <class P = DefaultPolicy>
BasicTensor<P> from_blob(void* data, const Shape& shape, TensorOptions o = {},
                         void (*deleter)(void* ctx, void* data) = nullptr, void* ctx = nullptr) {
  return from_blob<P>(data, shape, contiguous_strides(shape), o, deleter, ctx);
}
template <class P = DefaultPolicy>
BasicTensor<P> from_blob(void* data, const Shape& shape, const Shape& strides, TensorOptions o = {},
                         void (*deleter)(void* ctx, void* data) = nullptr, void* ctx = nullptr) {
  EMBER_CHECK(shape.size() == strides.size(), "[from_blob] shape {} and strides {} differ in rank", shape, strides);
  DType t = o.dtype_or(kDefaultFloat);
  int64_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    EMBER_CHECK(strides[i] >= 0, "[from_blob] negative stride {} in {}", strides[i], strides);
    if (shape[i] == 0) span = 0;
  }
  int64_t n = checked_numel(shape, "from_blob");
  if (span != 0)
    for (size_t i = 0; i < shape.size(); ++i) span += (shape[i] - 1) * strides[i];
  EMBER_CHECK(data != nullptr || n == 0, "[from_blob] null data for shape {}", shape);
  auto storage = detail::make_user_storage(data, static_cast<size_t>(span * itemsize(t)), o.device_or(kCPU),
                                           deleter, ctx);
  return detail::with_grad_option<P>(BasicTensor<P>(detail::make_view(storage, t, shape, strides, 0)), o);
}

namespace detail {
template <class T>
struct NestedList {
  std::vector<T> values;
  Shape shape;
};
}  // namespace detail

/// A tensor from a flat list of values: tensor({1.f, 2.f, 3.f}).
template <class T, class P = DefaultPolicy>
  requires std::is_arithmetic_v<T>
BasicTensor<P> tensor(std::initializer_list<T> values, TensorOptions o = {}) {
  using S = std::conditional_t<std::is_same_v<T, bool>, bool,
                               std::conditional_t<std::is_floating_point_v<T>, std::conditional_t<sizeof(T) == 8, double, float>,
                                                  std::conditional_t<sizeof(T) == 8, int64_t, int32_t>>>;
  std::vector<S> buf(values.begin(), values.end());
  if constexpr (std::is_same_v<S, bool>) {
    std::vector<uint8_t> b(values.begin(), values.end());
    BasicTensor<P> t = from_blob<P>(b.data(), {static_cast<int64_t>(b.size())}, TensorOptions(DType::Bool)).clone();
    return detail::with_grad_option<P>(t.to(o.dtype_or(DType::Bool)).to(o.device_or(kCPU)), o);
  } else {
    DType natural = std::is_floating_point_v<T> ? kDefaultFloat : DType::I64;
    if constexpr (std::is_same_v<S, double>) natural = DType::F64;
    BasicTensor<P> t = from_blob<P>(buf.data(), {static_cast<int64_t>(buf.size())}, TensorOptions(dtype_of_v<S>)).clone();
    return detail::with_grad_option<P>(t.to(o.dtype_or(natural)).to(o.device_or(kCPU)), o);
  }
}
/// A 2-d tensor from nested lists: tensor({{1.f, 2.f}, {3.f, 4.f}}). Ragged rows are an error.
template <class T, class P = DefaultPolicy>
  requires std::is_arithmetic_v<T>
BasicTensor<P> tensor(std::initializer_list<std::initializer_list<T>> rows, TensorOptions o = {}) {
  std::vector<T> flat;
  int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    EMBER_CHECK(static_cast<int64_t>(r.size()) == cols, "[tensor] ragged nested list: rows of {} and {} elements",
                cols, r.size());
    flat.insert(flat.end(), r.begin(), r.end());
  }
  BasicTensor<P> t = tensor<T, P>(std::initializer_list<T>{}, o.requires_grad(false));
  if (!flat.empty()) {
    BasicTensor<P> f = from_blob<P>(flat.data(), {static_cast<int64_t>(flat.size())},
                                    TensorOptions(dtype_of_v<std::conditional_t<std::is_same_v<T, bool>, bool, T>>));
    t = f.clone().to(o.dtype_or(std::is_floating_point_v<T> ? (sizeof(T) == 8 ? DType::F64 : kDefaultFloat)
                                                             : (std::is_same_v<T, bool> ? DType::Bool : DType::I64)));
  } else {
    t = t.to(o.dtype_or(t.dtype()));
  }
  return detail::with_grad_option<P>(t.reshape({static_cast<int64_t>(rows.size()), cols}).to(o.device_or(kCPU)), o);
}

}  // namespace ember
