#pragma once
/// Tensor factories: empty, zeros, ones, full, arange, linspace, eye, rand, randn, randint,
/// the _like forms, from_blob and tensors from nested initializer lists.

#include <ember/core/generator.hpp>
#include <ember/core/tensor.hpp>
#include <ember/core/tensor_instances.hpp>
#include <ember/dispatch/default_policy.hpp>

#include <cmath>
#include <concepts>
#include <functional>
#include <limits>
#include <memory>

#include <type_traits>

namespace ember {

namespace detail {
/// Reserves `n` random numbers from this thread's generator (the global one, or a
/// GeneratorGuard's) and returns where they start (src/tensor_api.cpp).
RandomState reserve_random(uint64_t n);
void fill_arange(TensorImpl& t, double start, double step);
/// start + i * step in int64 (exact beyond 2^53), converted to t's dtype.
void fill_arange_int(TensorImpl& t, int64_t start, int64_t step);
/// PyTorch's linspace: the first half counts up from start, the second down from end, so
/// both ends are exact.
void fill_linspace(TensorImpl& t, double start, double end, int64_t steps);
void fill_eye(detail::TensorImpl& t);
template <class P>
void ensure_backend(Device d, const char* op) {
  EMBER_CHECK(P::backends::has(d.type()), "[{}] device {} is not served by this policy's backends", op, d);
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
  if (!o.requires_grad()) return t;
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
  const DType dtype = o.dtype_or(value.default_dtype());
  detail::check_scalar_fits(value, dtype, "full");  // named here; fill_ checks again, cheaply
  BasicTensor<P> t = empty<P>(shape, plain.dtype(dtype));
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

// One size for a 1-d tensor, as libtorch's IntArrayRef takes one: zeros(5), randn(3).
template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> empty(I size, TensorOptions o = {}) {
  return empty<P>(Shape{static_cast<int64_t>(size)}, o);
}
template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> full(I size, Scalar value, TensorOptions o = {}) {
  return full<P>(Shape{static_cast<int64_t>(size)}, value, o);
}
template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> zeros(I size, TensorOptions o = {}) {
  return zeros<P>(Shape{static_cast<int64_t>(size)}, o);
}
template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> ones(I size, TensorOptions o = {}) {
  return ones<P>(Shape{static_cast<int64_t>(size)}, o);
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

/// Values start, start+step, ... below end. Integer arguments give i64, as in PyTorch. An
/// integer dtype with non-integer arguments takes the count from the arguments as given and
/// the values from start and step truncated, as PyTorch 2 and NumPy: arange(0.5, 5.5, 1.5,
/// kI64) is [0, 1, 2, 3] (libtorch 1.13 truncated all three first: [0, 1, 2, 3, 4]).
template <class P = DefaultPolicy>
BasicTensor<P> arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions o = {}) {
  const bool ints = start.is_integral() && end.is_integral() && step.is_integral();
  const DType dt = o.dtype_or(ints ? DType::I64 : kDefaultFloat);
  if (ints && is_integral(dt, false)) {  // exact in int64, beyond double's 2^53
    const int64_t si = start.to_int(), ei = end.to_int(), sti = step.to_int();
    EMBER_CHECK(sti != 0, "[arange] step must be nonzero");
    int64_t span = 0;
    EMBER_CHECK(!__builtin_sub_overflow(ei, si, &span), "[arange] range [{}, {}) overflows int64", si, ei);
    EMBER_CHECK(span == 0 || (span > 0) == (sti > 0), "[arange] range [{}, {}) with step {} is empty in the wrong direction",
                si, ei, sti);
    const int64_t n = span == 0 ? 0 : (span > 0 ? (span - 1) / sti + 1 : (span + 1) / sti + 1);
    return detail::on_cpu_then_move<P>({n}, o, dt, [&](detail::TensorImpl& t) { detail::fill_arange_int(t, si, sti); });
  }
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, "[arange] step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e) && std::isfinite(st), "[arange] unsupported range [{}, {}) step {}",
              s, e, st);
  EMBER_CHECK((e - s) / st >= 0, "[arange] range [{}, {}) with step {} is empty in the wrong direction", s, e, st);
  const double count = std::ceil((e - s) / st);
  EMBER_CHECK(count < 9.2e18, "[arange] range [{}, {}) with step {} has too many elements", s, e, st);  // < 2^63
  int64_t n = static_cast<int64_t>(count);
  if (is_integral(dt, false)) {
    // Start and step as integers (exactly, when given so); the end is only compared.
    EMBER_CHECK((start.is_integral() || std::abs(s) < 9.2e18) && (step.is_integral() || std::abs(st) < 9.2e18),
                "[arange] start {} or step {} does not fit int64", s, st);
    const int64_t si = start.is_integral() ? start.to_int() : static_cast<int64_t>(s);
    const int64_t sti = step.is_integral() ? step.to_int() : static_cast<int64_t>(st);
    // Truncation can step past the end by less than one step: the last value must fit.
    const __int128 last = static_cast<__int128>(si) + static_cast<__int128>(sti) * (n > 0 ? n - 1 : 0);
    EMBER_CHECK(last >= std::numeric_limits<int64_t>::min() && last <= std::numeric_limits<int64_t>::max(),
                "[arange] range [{}, {}) step {} overflows int64", s, e, st);
    return detail::on_cpu_then_move<P>({n}, o, dt, [&](detail::TensorImpl& t) { detail::fill_arange_int(t, si, sti); });
  }
  return detail::on_cpu_then_move<P>({n}, o, dt,
                                     [&](detail::TensorImpl& t) { detail::fill_arange(t, s, st); });
}
// A bool where an end, a count or a column count belongs is refused at compile time: it is
// what `TensorOptions().requires_grad()` (the getter, as libtorch's) gives where
// `.requires_grad(true)` was meant, and it would otherwise convert silently.
template <class P = DefaultPolicy, std::same_as<bool> B, class... Rest>
BasicTensor<P> arange(Scalar start, B end, Rest&&... rest) = delete;
template <class P = DefaultPolicy, std::same_as<bool> B, class... Rest>
BasicTensor<P> linspace(double start, double end, B steps, Rest&&... rest) = delete;
template <class P = DefaultPolicy, std::same_as<bool> B, class... Rest>
BasicTensor<P> eye(int64_t n, B m, Rest&&... rest) = delete;

template <class P = DefaultPolicy>
BasicTensor<P> arange(Scalar end, TensorOptions o = {}) {
  return arange<P>(end.is_floating() ? Scalar(0.0) : Scalar(int64_t{0}), end, int64_t{1}, o);
}
/// arange(start, end, options) without a step, as libtorch's arange(0, 10, kLong).
template <class P = DefaultPolicy>
BasicTensor<P> arange(Scalar start, Scalar end, TensorOptions o) {
  return arange<P>(start, end, int64_t{1}, o);
}

/// `steps` evenly spaced values from start to end inclusive (one step: just start, as PyTorch).
template <class P = DefaultPolicy>
BasicTensor<P> linspace(double start, double end, int64_t steps, TensorOptions o = {}) {
  EMBER_CHECK(steps >= 0, "[linspace] steps must be non-negative, got {}", steps);
  // As PyTorch: an end that the dtype cannot hold is refused (-2.5 is no u8 start), but only
  // an end that is used (start from one step on, end from two); an integer dtype steps in
  // double between the ends as converted (-2.5 to 7 in 4 steps: -2, 1, 4, 7).
  const DType dt = o.dtype_or(kDefaultFloat);
  if (steps >= 1) detail::check_scalar_fits(start, dt, "linspace");
  if (steps >= 2) detail::check_scalar_fits(end, dt, "linspace");
  const double from = is_floating(dt) ? start : std::trunc(start), to = is_floating(dt) ? end : std::trunc(end);
  return detail::on_cpu_then_move<P>({steps}, o, kDefaultFloat, [&](detail::TensorImpl& t) {
    detail::fill_linspace(t, from, to, steps);
  });
}

/// base ^ linspace(start, end, steps): `steps` values evenly spaced on a log scale, computed in
/// double and rounded once to the dtype. For an integer dtype, start and end are truncated to
/// integers first and the powers truncated after, as PyTorch's (logspace(0.5, 2.5, 3, 10, i64)
/// is [1, 10, 100]); powers beyond the dtype's range are not defined there either.
template <class P = DefaultPolicy>
BasicTensor<P> logspace(double start, double end, int64_t steps, double base = 10.0, TensorOptions o = {}) {
  EMBER_CHECK(steps >= 0, "[logspace] steps must be non-negative, got {}", steps);
  const DType dt = o.dtype_or(kDefaultFloat);
  EMBER_CHECK(dt != DType::Bool, "[logspace] has no bool form");
  const bool floating = is_floating(dt);
  const double from = floating ? start : std::trunc(start), to = floating ? end : std::trunc(end);
  const BasicTensor<P> e = linspace<P>(from, to, steps, TensorOptions(DType::F64));
  const BasicTensor<P> powers = e.scalar_like(base).pow(e).to(dt);
  const Device d = o.device_or(kCPU);
  return detail::with_grad_option<P>(d.is_cpu() ? powers : powers.to(d), o);
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
  const DType dt = o.dtype_or(DType::I64);
  if (is_integral(dt, true)) {  // the range must fit the dtype (randint(0, 300, u8) wrapped)
    int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    switch (dt) {
      case DType::Bool: lo = 0, hi = 1; break;
      case DType::U8: lo = 0, hi = 255; break;
      case DType::I8: lo = -128, hi = 127; break;
      case DType::I32: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(); break;
      default: break;
    }
    EMBER_CHECK(low >= lo && high - 1 <= hi,
                "[randint] range [{}, {}) does not fit {}", low, high, dt);
  }
  int64_t range = 0;
  EMBER_CHECK(!__builtin_sub_overflow(high, low, &range), "[randint] range [{}, {}) overflows int64", low, high);
  // An offset in [0, range) drawn in double, then added to low in int64: exact for ranges up
  // to 2^53 however large low is (low + u in double lost the low bits beyond 2^53).
  BasicTensor<P> u = detail::random_tensor<P>(shape, TensorOptions(DType::F64), false, 0.0, static_cast<double>(range),
                                              "randint");
  return u.floor().clamp_max(static_cast<double>(range - 1)).to(DType::I64).add(low).to(dt).to(o.device_or(kCPU));
}
/// randint(high, shape): values in [0, high), as libtorch's.
template <class P = DefaultPolicy>
BasicTensor<P> randint(int64_t high, const Shape& shape, TensorOptions o = {}) {
  return randint<P>(0, high, shape, o);
}
// libtorch's forms with a generator: the draws come from `gen` (core/generator.hpp). The
// generator is a constrained template parameter so that a braced `{}` for the options never
// matches it (GCC took Generator's explicit constructor as a candidate there).
template <class P = DefaultPolicy, std::same_as<Generator> G>
BasicTensor<P> rand(const Shape& shape, const G& gen, TensorOptions o = {}) {
  GeneratorGuard use(gen);
  return rand<P>(shape, o);
}
template <class P = DefaultPolicy, std::same_as<Generator> G>
BasicTensor<P> randn(const Shape& shape, const G& gen, TensorOptions o = {}) {
  GeneratorGuard use(gen);
  return randn<P>(shape, o);
}
template <class P = DefaultPolicy, std::same_as<Generator> G>
BasicTensor<P> randint(int64_t low, int64_t high, const Shape& shape, const G& gen, TensorOptions o = {}) {
  GeneratorGuard use(gen);
  return randint<P>(low, high, shape, o);
}
template <class P = DefaultPolicy, std::same_as<Generator> G>
BasicTensor<P> randint(int64_t high, const Shape& shape, const G& gen, TensorOptions o = {}) {
  GeneratorGuard use(gen);
  return randint<P>(0, high, shape, o);
}
template <class P = DefaultPolicy, SingleDim I, std::same_as<Generator> G>
BasicTensor<P> rand(I size, const G& gen, TensorOptions o = {}) {
  return rand<P>(Shape{static_cast<int64_t>(size)}, gen, o);
}
template <class P = DefaultPolicy, SingleDim I, std::same_as<Generator> G>
BasicTensor<P> randn(I size, const G& gen, TensorOptions o = {}) {
  return randn<P>(Shape{static_cast<int64_t>(size)}, gen, o);
}

template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> rand(I size, TensorOptions o = {}) {
  return rand<P>(Shape{static_cast<int64_t>(size)}, o);
}
template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> randn(I size, TensorOptions o = {}) {
  return randn<P>(Shape{static_cast<int64_t>(size)}, o);
}
template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> randint(int64_t low, int64_t high, I size, TensorOptions o = {}) {
  return randint<P>(low, high, Shape{static_cast<int64_t>(size)}, o);
}
// randint(high, size) and randint(high, size, options) as two forms: with a defaulted
// options parameter, randint(5, 10, {}) (a 0-d draw from [5, 10), as libtorch) would take
// {} for the options and draw 10 values from [0, 5).
template <class P = DefaultPolicy, SingleDim I>
BasicTensor<P> randint(int64_t high, I size) {
  return randint<P>(high, Shape{static_cast<int64_t>(size)});
}
template <class P = DefaultPolicy, SingleDim I, class O>
  requires std::convertible_to<O, TensorOptions>
BasicTensor<P> randint(int64_t high, I size, O o) {
  return randint<P>(high, Shape{static_cast<int64_t>(size)}, TensorOptions(o));
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
namespace detail {
/// Views of user memory need non-negative strides; `op` is the function the user called.
inline void check_view_strides(const Shape& strides, const char* op) {
  for (int64_t s : strides)
    EMBER_CHECK(s >= 0, "[{}] negative stride {} in {}: Ember's views need non-negative strides (copy first)", op,
                s, strides);
}
}  // namespace detail

template <class P = DefaultPolicy>
BasicTensor<P> from_blob(void* data, const Shape& shape, const Shape& strides, TensorOptions o = {},
                         void (*deleter)(void* ctx, void* data) = nullptr, void* ctx = nullptr) {
  EMBER_CHECK(shape.size() == strides.size(), "[from_blob] shape {} and strides {} differ in rank", shape, strides);
  detail::check_view_strides(strides, "from_blob");
  DType t = o.dtype_or(kDefaultFloat);
  int64_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 0) span = 0;
  int64_t n = checked_numel(shape, "from_blob");
  if (span != 0)
    for (size_t i = 0; i < shape.size(); ++i) span += (shape[i] - 1) * strides[i];
  EMBER_CHECK(data != nullptr || n == 0, "[from_blob] null data for shape {}", shape);
  // Every check comes before the storage, which owns `deleter` from then on: a failed call
  // never runs it (the caller still owns the memory).
  EMBER_CHECK(!o.requires_grad() || is_floating(t),
              "[from_blob] only floating-point tensors can require gradients, got {}", t);
  auto storage = detail::make_user_storage(data, static_cast<size_t>(span * itemsize(t)), o.device_or(kCPU),
                                           deleter, ctx);
  return detail::with_grad_option<P>(BasicTensor<P>(detail::make_view(storage, t, shape, strides, 0)), o);
}

namespace detail {
/// The deleter of from_blob's libtorch form: runs the user's function, then frees it.
inline void run_owned_deleter(void* fn, void* data) {
  std::unique_ptr<std::function<void(void*)>> owned(static_cast<std::function<void(void*)>*>(fn));
  if (*owned) (*owned)(data);
}
}  // namespace detail

/// libtorch's form: from_blob(data, sizes, [](void* p) { free(p); }, kFloat32). The deleter
/// runs once, when the last tensor using the memory goes away; never if the call fails.
template <class P = DefaultPolicy>
BasicTensor<P> from_blob(void* data, const Shape& shape, std::function<void(void*)> deleter, TensorOptions o = {}) {
  auto owned = std::make_unique<std::function<void(void*)>>(std::move(deleter));
  BasicTensor<P> t = from_blob<P>(data, shape, o, &detail::run_owned_deleter, owned.get());
  owned.release();  // the storage owns it now
  return t;
}
template <class P = DefaultPolicy>
BasicTensor<P> from_blob(void* data, const Shape& shape, const Shape& strides, std::function<void(void*)> deleter,
                         TensorOptions o = {}) {
  auto owned = std::make_unique<std::function<void(void*)>>(std::move(deleter));
  BasicTensor<P> t = from_blob<P>(data, shape, strides, o, &detail::run_owned_deleter, owned.get());
  owned.release();
  return t;
}

/// An uninitialised tensor with the given strides (in elements, none negative) over a buffer
/// just large enough for them, as torch::empty_strided.
template <class P = DefaultPolicy>
BasicTensor<P> empty_strided(const Shape& shape, const Shape& strides, TensorOptions o = {}) {
  EMBER_CHECK(shape.size() == strides.size(), "[empty_strided] shape {} and strides {} differ in rank", shape,
              strides);
  detail::check_view_strides(strides, "empty_strided");
  int64_t span = checked_numel(shape, "empty_strided") == 0 ? 0 : 1;
  for (size_t i = 0; span != 0 && i < shape.size(); ++i)
    EMBER_CHECK(!__builtin_add_overflow(span, detail::checked_mul(shape[i] - 1, strides[i], "empty_strided"), &span),
                "[empty_strided] shape {} with strides {} spans more elements than int64 holds", shape, strides);
  const BasicTensor<P> buffer = empty<P>({span}, o.requires_grad(false));
  return detail::with_grad_option<P>(
      BasicTensor<P>(detail::make_view(buffer.impl().storage, buffer.dtype(), shape, strides, 0)), o);
}

/// A 0-d tensor of the default float type (or o's dtype) holding s, as torch::scalar_tensor.
template <class P = DefaultPolicy>
BasicTensor<P> scalar_tensor(Scalar s, TensorOptions o = {}) {
  return full<P>({}, s, o.dtype(o.dtype_or(kDefaultFloat)));
}

namespace detail {
/// How tensor() stages a list's values before converting them to the dtype asked for: bool
/// as bytes, floating-point values as double, integers as int64 (every value of every C++
/// arithmetic type up to 64 bits but the unsigned ones above INT64_MAX, which are refused).
template <class T>
using list_stage_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t,
                                        std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>;

template <class T>
list_stage_t<T> stage_list_value(T v) {
  if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) >= 8)
    EMBER_CHECK(v <= static_cast<T>(std::numeric_limits<int64_t>::max()),
                "[tensor] {} does not fit int64, the widest integer dtype", v);
  return static_cast<list_stage_t<T>>(v);
}

/// The dtype a list of T becomes without TensorOptions: bool; u8 and i8 for the byte types
/// (as libtorch's torch::tensor keeps them); i64 for other integers; f64 for double (and long
/// double), the default float otherwise (PyTorch's rules, with C++'s float/double).
template <class T>
constexpr DType natural_list_dtype() {
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_floating_point_v<T>) return sizeof(T) >= 8 ? DType::F64 : kDefaultFloat;
  else return DType::I64;
}

template <class T, class P>
BasicTensor<P> tensor_from_staged(std::vector<list_stage_t<T>>& staged, const Shape& shape, TensorOptions o) {
  using S = list_stage_t<T>;
  const DType stage = std::is_same_v<S, uint8_t> ? DType::Bool : std::is_same_v<S, double> ? DType::F64 : DType::I64;
  BasicTensor<P> t =
      from_blob<P>(staged.data(), {static_cast<int64_t>(staged.size())}, TensorOptions(stage)).reshape(shape).clone();
  return with_grad_option<P>(t.to(o.dtype_or(natural_list_dtype<T>())).to(o.device_or(kCPU)), o);
}
}  // namespace detail

/// A 0-d tensor holding one value: tensor(2.5), as libtorch's torch::tensor(2.5) (the dtype
/// follows the rules for lists below).
template <class T, class P = DefaultPolicy>
  requires std::is_arithmetic_v<T>
BasicTensor<P> tensor(T value, TensorOptions o = {}) {
  std::vector<detail::list_stage_t<T>> staged{detail::stage_list_value(value)};
  return detail::tensor_from_staged<T, P>(staged, Shape{}, o);
}
/// A tensor from a flat list of values: tensor({1.f, 2.f, 3.f}).
template <class T, class P = DefaultPolicy>
  requires std::is_arithmetic_v<T>
BasicTensor<P> tensor(std::initializer_list<T> values, TensorOptions o = {}) {
  std::vector<detail::list_stage_t<T>> staged;
  staged.reserve(values.size());
  for (T v : values) staged.push_back(detail::stage_list_value(v));
  return detail::tensor_from_staged<T, P>(staged, {static_cast<int64_t>(staged.size())}, o);
}
/// A 1-d tensor from a std::vector of values (a copy), as libtorch's torch::tensor(ArrayRef).
template <class T, class P = DefaultPolicy>
  requires std::is_arithmetic_v<T>
BasicTensor<P> tensor(const std::vector<T>& values, TensorOptions o = {}) {
  std::vector<detail::list_stage_t<T>> staged;
  staged.reserve(values.size());
  for (T v : values) staged.push_back(detail::stage_list_value(v));
  return detail::tensor_from_staged<T, P>(staged, {static_cast<int64_t>(staged.size())}, o);
}
/// A 2-d tensor from nested lists: tensor({{1.f, 2.f}, {3.f, 4.f}}). Ragged rows are an error.
/// An empty list `{}` (which selects this overload) is a 1-d tensor of 0 elements, as
/// torch.tensor([]); `{{}}` is [1, 0].
template <class T, class P = DefaultPolicy>
  requires std::is_arithmetic_v<T>
BasicTensor<P> tensor(std::initializer_list<std::initializer_list<T>> rows, TensorOptions o = {}) {
  std::vector<detail::list_stage_t<T>> staged;
  const int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    EMBER_CHECK(static_cast<int64_t>(r.size()) == cols, "[tensor] ragged nested list: rows of {} and {} elements",
                cols, r.size());
    for (T v : r) staged.push_back(detail::stage_list_value(v));
  }
  const Shape shape = rows.size() == 0 ? Shape{0} : Shape{static_cast<int64_t>(rows.size()), cols};
  return detail::tensor_from_staged<T, P>(staged, shape, o);
}

// The common factories' DefaultPolicy instances are compiled into the library.
EMBER_TENSOR_FACTORY_INSTANCES(extern template)

}  // namespace ember
