// Elementwise kernels: unary, binary, where, copy (with dtype conversion), fill.
// This file is compiled once per instruction set (see kernels_cpu/meson.build); each build
// lives in its own namespace, EMBER_CPU_ARCH, and kernels_cpu/dispatch.cpp picks one at run time.

#include <bit>
#include "functors.hpp"
#include "loops.hpp"
#include "int_float_runs.hpp"
#include "reduced_float_runs.hpp"

#include <ember/core/bit_select.hpp>
#include <ember/core/error.hpp>
#include <ember/core/scalar.hpp>

namespace ember::cpu::EMBER_CPU_ARCH {
namespace {

using detail::TensorImpl;

template <class T>
inline constexpr bool is_simd_float_v = std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
inline constexpr bool is_reduced_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
using compute_t = std::conditional_t<is_reduced_v<T>, float, T>;

template <class T>
inline T ld(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
inline void st(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Note [Elementwise drivers]
// Op-specific code is only a contiguous "run" function over compute types (SIMD where the
// functor has a batch form). One driver per storage/compute dtype pair, shared by every op,
// adapts any geometry to it: runs whose output is contiguous and whose inputs are contiguous
// or broadcast (step 1 or 0) go straight to the run; anything else, and every f16/bf16 run,
// is gathered into chunks of kChunk compute-type elements, run, and scattered back. This keeps
// each op instantiated once per compute type (small binaries, quick builds).
constexpr int64_t kChunk = 256;

template <class SO, class SI, class CO, class CI, int NIN>
struct Driver {
  using Fn = void (*)(CO* out, const CI* const* in, const int64_t* step, int64_t n, const void* ctx);
  Fn fn;
  const void* ctx;
  static constexpr bool kDirect = std::is_same_v<SO, CO> && std::is_same_v<SI, CI>;

  void operator()(char** p, const int64_t* s, int64_t n) const {
    if constexpr (kDirect) {
      bool direct = s[0] == sizeof(SO);
      int64_t step[NIN];
      const CI* in[NIN];
      for (int i = 0; i < NIN; ++i) {
        step[i] = s[i + 1] == sizeof(SI) ? 1 : 0;
        direct &= s[i + 1] == sizeof(SI) || s[i + 1] == 0;
        in[i] = reinterpret_cast<const CI*>(p[i + 1]);
      }
      if (direct) {
        fn(reinterpret_cast<CO*>(p[0]), in, step, n, ctx);
        return;
      }
    }
    // Chunks: inputs that are contiguous or broadcast in storage type are read in place,
    // the rest gathered (f16/bf16 widened); a contiguous output is written in place.
    CI buf[NIN][kChunk];
    CO obuf[kChunk];
    const CI* in[NIN];
    int64_t step[NIN];
    bool gather[NIN];
    for (int i = 0; i < NIN; ++i) {
      gather[i] = !(std::is_same_v<SI, CI> && (s[i + 1] == sizeof(SI) || s[i + 1] == 0));
      step[i] = gather[i] || s[i + 1] != 0 ? 1 : 0;
    }
    const bool out_direct = std::is_same_v<SO, CO> && s[0] == sizeof(SO);
    for (int64_t base = 0; base < n; base += kChunk) {
      int64_t m = std::min(kChunk, n - base);
      for (int i = 0; i < NIN; ++i) {
        if (!gather[i]) {
          in[i] = reinterpret_cast<const CI*>(p[i + 1] + base * s[i + 1]);
          continue;
        }
        in[i] = buf[i];
        if constexpr (is_reduced_v<SI> && std::is_same_v<CI, float>) {
          if (s[i + 1] == sizeof(SI)) {
            widen_run<SI>(p[i + 1] + base * s[i + 1], buf[i], m);
            continue;
          }
        }
        for (int64_t k = 0; k < m; ++k) buf[i][k] = static_cast<CI>(ld<SI>(p[i + 1] + (base + k) * s[i + 1]));
      }
      if (out_direct) {
        fn(reinterpret_cast<CO*>(p[0] + base * s[0]), in, step, m, ctx);
        continue;
      }
      fn(obuf, in, step, m, ctx);
      if constexpr (is_reduced_v<SO> && std::is_same_v<CO, float>) {
        if (s[0] == sizeof(SO)) {
          narrow_run<SO>(obuf, p[0] + base * s[0], m);
          continue;
        }
      }
      for (int64_t k = 0; k < m; ++k) st<SO>(p[0] + (base + k) * s[0], static_cast<SO>(obuf[k]));
    }
  }
};

template <class T>
using widen_t = compute_t<T>;

// ---- unary --------------------------------------------------------------------------------------
/// Integer unary ops that run over xsimd batches (wrapping like the scalar code, |INT_MIN| and
/// -INT_MIN included): neg and abs of signed integers. Not in x86's size-first baseline build.
template <class C, class F>
constexpr bool int_unary_batch() {
#ifdef EMBER_KERNELS_SIZE_FIRST
  return false;
#else
  return std::is_integral_v<C> && std::is_signed_v<C> &&
         (std::is_same_v<F, UnaryFn<ops::UnaryOp::Neg>> || std::is_same_v<F, UnaryFn<ops::UnaryOp::Abs>>);
#endif
}

template <class C, class F>
void unary_run(C* out, const C* const* in, const int64_t* step, int64_t n, const void* ctx) {
  const F& f = *static_cast<const F*>(ctx);
  const C* x = in[0];
  int64_t k = 0;
  if (step[0] == 0) {  // a broadcast input: one value for the whole run
    C v = static_cast<C>(f(*x));
    for (; k < n; ++k) out[k] = v;
    return;
  }
  if constexpr ((is_simd_float_v<C> && F::kSimd) || int_unary_batch<C, F>()) {
    using B = xsimd::batch<C>;
    constexpr int64_t W = B::size;
    for (; k + W <= n; k += W) f(B::load_unaligned(x + k)).store_unaligned(out + k);
  }
  for (; k < n; ++k) out[k] = static_cast<C>(f(x[k]));
}

template <class T, class F>
void unary_loop(TensorImpl& out, const TensorImpl& x, const F& f) {
  using C = widen_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    if (out.numel <= EMBER_GRAIN_SIZE && out.contiguous && x.contiguous && x.numel == out.numel) {
      const C* in[1] = {static_cast<const C*>(x.data())};
      const int64_t step[1] = {1};
      unary_run<C, F>(static_cast<C*>(out.data()), in, step, out.numel, &f);
      return;
    }
  }
  const TensorImpl* ops[2] = {&out, &x};
  Driver<T, T, C, C, 1> d{&unary_run<C, F>, &f};
  Loop<2>(ops).run(d);
}

template <class C, class Pred>
void predicate_run(bool* out, const C* const* in, const int64_t* step, int64_t n, const void* ctx) {
  const Pred& pred = *static_cast<const Pred*>(ctx);
  for (int64_t k = 0; k < n; ++k) out[k] = pred(in[0][k * step[0]]);
}

template <class T, class P>
void predicate_loop(TensorImpl& out, const TensorImpl& x, P pred) {
  using C = widen_t<T>;
  const TensorImpl* ops[2] = {&out, &x};
  Driver<bool, T, bool, C, 1> d{&predicate_run<C, P>, &pred};
  Loop<2>(ops).run(d);
}

template <class F>
void visit_float(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::F16: return f.template operator()<Half>();
    case DType::BF16: return f.template operator()<BFloat16>();
    default: EMBER_FAIL("[kernel] expected a floating dtype, got {}", t);
  }
}
template <class F>
void visit_numeric(DType t, F&& f) {  // every dtype but bool
  if (t == DType::Bool) EMBER_FAIL("[kernel] bool is not supported here");
  visit_dtype(t, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) f.template operator()<T>();
  });
}
template <class F>
void visit_integral(DType t, F&& f) {  // integers and bool
  visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_integral_v<T>) f.template operator()<T>();
    else EMBER_FAIL("[kernel] expected an integer dtype, got {}", t);
  });
}

template <ops::UnaryOp Op>
void unary_dispatch(const ops::UnaryParams& p, TensorImpl& out, const TensorImpl& x) {
  UnaryFn<Op> f{p};
  constexpr ops::UnaryRule r = ops::rule(Op);
  if constexpr (Op == ops::UnaryOp::NanToNum) {
    // f16/bf16 compute in float: the default replacements for +-inf are the limits of the
    // storage type (65504 for f16), not float's.
    if (is_reduced_float(x.dtype)) {
      double mx = x.dtype == DType::F16 ? 65504.0 : 3.3895313892515355e38;
      if (!f.p.has_a) f.p.b = mx, f.p.has_a = true;
      if (!f.p.has_b) f.p.c = -mx, f.p.has_b = true;
    }
  }
  if constexpr (r == ops::UnaryRule::Float) {
    visit_float(x.dtype, [&]<class T>() { unary_loop<T>(out, x, f); });
  } else if constexpr (ops::takes_bool(Op)) {
    visit_dtype(x.dtype, [&]<class T>() { unary_loop<T>(out, x, f); });
  } else {
    visit_numeric(x.dtype, [&]<class T>() { unary_loop<T>(out, x, f); });
  }
}

}  // namespace

void unary(ops::UnaryOp op, const ops::UnaryParams& p, TensorImpl& out, const TensorImpl& x) {
  using U = ops::UnaryOp;
  switch (op) {
    case U::Isnan:
      return visit_dtype(x.dtype, [&]<class T>() {
        predicate_loop<T>(out, x, [](auto v) {
          if constexpr (std::is_floating_point_v<decltype(v)>) return v != v;
          else return false;
        });
      });
    case U::Isinf:
      return visit_dtype(x.dtype, [&]<class T>() {
        predicate_loop<T>(out, x, [](auto v) {
          if constexpr (std::is_floating_point_v<decltype(v)>) return std::isinf(v);
          else return false;
        });
      });
    case U::Isfinite:
      return visit_dtype(x.dtype, [&]<class T>() {
        predicate_loop<T>(out, x, [](auto v) {
          if constexpr (std::is_floating_point_v<decltype(v)>) return std::isfinite(v);
          else return true;
        });
      });
    case U::Signbit:  // -0 and NaNs with the sign bit count; unsigned integers and bool never
      return visit_dtype(x.dtype, [&]<class T>() {
        predicate_loop<T>(out, x, [](auto v) {
          if constexpr (std::is_floating_point_v<decltype(v)>) return std::signbit(v);
          else if constexpr (std::is_signed_v<decltype(v)>) return v < 0;
          else return false;
        });
      });
    case U::LogicalNot:
      return visit_dtype(x.dtype, [&]<class T>() {
        predicate_loop<T>(out, x, [](auto v) { return v == decltype(v)(0); });
      });
    case U::BitwiseNot:
      return visit_integral(x.dtype, [&]<class T>() { unary_loop<T>(out, x, BitwiseNotFn{}); });
    default:
      break;
  }
  switch (op) {
#define EMBER_UNARY_OP(E, n, r)                                                                                \
  case U::E:                                                                                                   \
    if constexpr (ops::UnaryRule::r != ops::UnaryRule::Pred && ops::UnaryRule::r != ops::UnaryRule::Logical && \
                  ops::UnaryRule::r != ops::UnaryRule::Int)                                                    \
      return unary_dispatch<U::E>(p, out, x);                                                                  \
    break;
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
  }
}

// ---- binary -------------------------------------------------------------------------------------
namespace {

/// pow(x, e) for a contiguous x and the exponents code writes most (x.pow(2), and 1 in its
/// gradient), as PyTorch's kernel special-cases them; returns false for any other exponent.
/// Values are pow's, edge cases included (pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf where
/// sqrt gives -0 and NaN); x * x * x rounds twice (within an ulp of pow).
template <class C>
bool pow_common_exponent(C* o, const C* x, C e, int64_t n) {
  using B = xsimd::batch<C>;
  constexpr int64_t W = B::size;
  constexpr C kInf = std::numeric_limits<C>::infinity();
  auto run = [&](auto f) {
    int64_t k = 0;
    for (; k + W <= n; k += W) f(B::load_unaligned(x + k)).store_unaligned(o + k);
    for (; k < n; ++k) o[k] = f(x[k]);
    return true;
  };
  if (e == C(2)) return run([](auto v) { return v * v; });
  if (e == C(3)) return run([](auto v) { return v * v * v; });
  if (e == C(1)) return run([](auto v) { return v; });
  if (e == C(0)) return run([](auto v) { return decltype(v)(C(1)); });  // pow(NaN, 0) = 1
  if (e == C(-1)) return run([](auto v) { return decltype(v)(C(1)) / v; });
  if (e == C(0.5)) {
    return run([](auto v) {
      using V = decltype(v);
      return vm::select(v == V(-kInf), V(kInf), vm::sqrt(v) + V(C(0)));
    });
  }
  return false;
}

/// A run where each input is contiguous (step 1) or a broadcast scalar (step 0).
/// Integer ops that run over xsimd batches (wrapping like the scalar code): add, sub and the
/// bitwise ops for every integer type, mul for i32 (one vpmulld; i64 and i8 have no such
/// instruction on AVX2). Not in x86's size-first baseline build.
template <class C, ops::BinaryOp Op>
constexpr bool int_batch_op() {
#ifdef EMBER_KERNELS_SIZE_FIRST
  return false;
#else
  if constexpr (!std::is_integral_v<C> || std::is_same_v<C, bool>) return false;
  using O = ops::BinaryOp;
  if constexpr (Op == O::Mul) return std::is_same_v<C, int32_t>;
  return Op == O::Add || Op == O::Sub || Op == O::BitwiseAnd || Op == O::BitwiseOr || Op == O::BitwiseXor;
#endif
}

template <class C, class F>
void binary_run(C* o, const C* const* in, const int64_t* step, int64_t n, const void* ctx) {
  const F f = *static_cast<const F*>(ctx);
  const C *x = in[0], *y = in[1];
  int64_t sx = step[0], sy = step[1], k = 0;
  if constexpr (is_simd_float_v<C> && F::kOp == ops::BinaryOp::Pow) {
    if (sx == 1 && sy == 0 && pow_common_exponent(o, x, *y, n)) return;
  }
  if constexpr ((is_simd_float_v<C> && F::kSimd) || int_batch_op<C, F::kOp>()) {
    using B = xsimd::batch<C>;
    constexpr int64_t W = B::size;
    if (sx == 1 && sy == 1) {
      for (; k + W <= n; k += W) f(B::load_unaligned(x + k), B::load_unaligned(y + k)).store_unaligned(o + k);
    } else if (sx == 1) {
      B yb(*y);
      for (; k + W <= n; k += W) f(B::load_unaligned(x + k), yb).store_unaligned(o + k);
    } else if (sy == 1) {
      B xb(*x);
      for (; k + W <= n; k += W) f(xb, B::load_unaligned(y + k)).store_unaligned(o + k);
    }
  } else {
    if (sx == 1 && sy == 1) {  // the common case, kept separate so the compiler vectorises it
      for (; k < n; ++k) o[k] = static_cast<C>(f(x[k], y[k]));
      return;
    }
  }
  for (; k < n; ++k) o[k] = static_cast<C>(f(x[k * sx], y[k * sy]));
}

template <class T, class F>
void binary_loop(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, const F& f) {
  using C = widen_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    // Small same-shape contiguous operands (the per-op-overhead case): straight to the run.
    if (out.numel <= EMBER_GRAIN_SIZE && out.contiguous && a.contiguous && b.contiguous && a.numel == out.numel &&
        b.numel == out.numel) {
      const C* in[2] = {static_cast<const C*>(a.data()), static_cast<const C*>(b.data())};
      const int64_t step[2] = {1, 1};
      binary_run<C, F>(static_cast<C*>(out.data()), in, step, out.numel, &f);
      return;
    }
  }
  const TensorImpl* ops[3] = {&out, &a, &b};
  Driver<T, T, C, C, 2> d{&binary_run<C, F>, &f};
  // Integer ops that can fault (division by zero) report it through a
  // thread_local flag, which only the calling thread's loop sets: run them without workers.
  constexpr bool kMayFault = std::is_integral_v<C> && (F::kOp == ops::BinaryOp::DivTrunc ||
                                                       F::kOp == ops::BinaryOp::DivFloor ||
                                                       F::kOp == ops::BinaryOp::Remainder ||
                                                       F::kOp == ops::BinaryOp::Fmod);
  Loop<3>(ops).run(d, kMayFault ? std::numeric_limits<int64_t>::max() : EMBER_GRAIN_SIZE);
}

template <ops::BinaryOp Op>
void binary_dispatch(TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  BinaryFn<Op> f;
  constexpr ops::BinaryRule r = ops::rule(Op);
  if constexpr (r == ops::BinaryRule::Bitwise) {
    visit_integral(a.dtype, [&]<class T>() {
      if constexpr (std::is_same_v<T, bool> && (Op == ops::BinaryOp::ShiftLeft || Op == ops::BinaryOp::ShiftRight))
        EMBER_FAIL("[{}] is not defined for bool", ops::name(Op));
      else binary_loop<T>(out, a, b, f);
    });
  } else if constexpr (r == ops::BinaryRule::Float || r == ops::BinaryRule::TrueDiv) {
    visit_float(a.dtype, [&]<class T>() { binary_loop<T>(out, a, b, f); });
  } else if constexpr (ops::takes_bool(Op) || Op == ops::BinaryOp::Pow) {
    visit_dtype(a.dtype, [&]<class T>() { binary_loop<T>(out, a, b, f); });
  } else {
    visit_numeric(a.dtype, [&]<class T>() { binary_loop<T>(out, a, b, f); });
  }
}

template <class C, ops::BinaryOp Op>
inline auto compare_batch(const xsimd::batch<C>& a, const xsimd::batch<C>& b) {
  using O = ops::BinaryOp;
  if constexpr (Op == O::Eq) return a == b;
  else if constexpr (Op == O::Ne) return !(a == b);  // xsimd's != is ordered: NaN != NaN would be false
  else if constexpr (Op == O::Lt) return a < b;
  else if constexpr (Op == O::Le) return a <= b;
  else if constexpr (Op == O::Gt) return a > b;
  else if constexpr (Op == O::Ge) return a >= b;
  else {  // logical ops: nonzero is true, NaN included (!(x == 0), not the ordered x != 0)
    const xsimd::batch<C> zero(C(0));
    const auto ta = !(a == zero), tb = !(b == zero);
    if constexpr (Op == O::LogicalAnd) return ta & tb;
    else if constexpr (Op == O::LogicalOr) return ta | tb;
    else return ta ^ tb;
  }
}

template <class C, ops::BinaryOp Op, int SA, int SB>
void compare_steps(bool* o, const C* a, const C* b, int64_t n) {
  int64_t k = 0;
  if constexpr (is_simd_float_v<C>) {
    // Compilers leave a float compare with a bool store scalar; compare whole batches
    // (IEEE semantics as the scalar form: NaN compares false, except !=; NaN is true).
    using Bt = xsimd::batch<C>;
    constexpr int64_t W = Bt::size;
    const Bt bs = SB == 0 ? Bt(b[0]) : Bt(C(0));
    for (; k + W <= n; k += W) {
      const Bt bv = SB == 0 ? bs : Bt::load_unaligned(b + k);
      compare_batch<C, Op>(Bt::load_unaligned(a + k), bv).store_unaligned(o + k);
    }
  }
  for (; k < n; ++k) o[k] = compare<C>(Op, a[k * SA], b[k * SB]);
}

template <class C, ops::BinaryOp Op>
void compare_run(bool* o, const C* const* in, const int64_t* step, int64_t n, const void*) {
  // Steps as constants, so that the compiler vectorises the common forms (x > 0: a tensor
  // against a broadcast scalar; two contiguous tensors).
  if (step[0] == 1 && step[1] == 0) return compare_steps<C, Op, 1, 0>(o, in[0], in[1], n);
  if (step[0] == 1 && step[1] == 1) return compare_steps<C, Op, 1, 1>(o, in[0], in[1], n);
  for (int64_t k = 0; k < n; ++k) o[k] = compare<C>(Op, in[0][k * step[0]], in[1][k * step[1]]);
}

template <class T>
void compare_loop(ops::BinaryOp op, TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  using C = widen_t<T>;
  using D = Driver<bool, T, bool, C, 2>;
  typename D::Fn fn = nullptr;
  switch (op) {
#define EMBER_CMP(E) \
  case ops::BinaryOp::E: fn = &compare_run<C, ops::BinaryOp::E>; break;
    EMBER_CMP(Eq) EMBER_CMP(Ne) EMBER_CMP(Lt) EMBER_CMP(Le) EMBER_CMP(Gt) EMBER_CMP(Ge)
    EMBER_CMP(LogicalAnd) EMBER_CMP(LogicalOr) EMBER_CMP(LogicalXor)
#undef EMBER_CMP
    default: EMBER_FAIL("[{}] is not a comparison", ops::name(op));
  }
  const TensorImpl* ops_[3] = {&out, &a, &b};
  Loop<3>(ops_).run(D{fn, nullptr});
}

}  // namespace

void binary(ops::BinaryOp op, TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  using O = ops::BinaryOp;
  t_integer_fault = false;
  switch (ops::rule(op)) {
    case ops::BinaryRule::Compare:
    case ops::BinaryRule::Logical:
      visit_dtype(a.dtype, [&]<class T>() { compare_loop<T>(op, out, a, b); });
      return;
    default:
      break;
  }
  switch (op) {
#define EMBER_BINARY_OP(E, n, r)                                                                             \
  case O::E:                                                                                                 \
    if constexpr (ops::BinaryRule::r != ops::BinaryRule::Compare && ops::BinaryRule::r != ops::BinaryRule::Logical) \
      binary_dispatch<O::E>(out, a, b);                                                                      \
    break;
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
  }
  // Ops that can fault on integers run on this thread only (see binary_loop), so the flag is complete.
  if (t_integer_fault) EMBER_FAIL("[{}] integer division by zero", ops::name(op));
}

// ---- where, copy, fill ----------------------------------------------------------------------------
namespace {
/// out[k] = m[k] ? x[k] : y[k] with x or y possibly a broadcast scalar (XS/YS false), as a bit
/// select (why: ember/core/bit_select.hpp).
template <class T, bool XS, bool YS>
void where_select(T* o, const uint8_t* m, const T* x, const T* y, int64_t n) {
  // The mask is formed here rather than through detail::bit_select's bool argument: this form
  // vectorises to ~15% faster code with GCC 12 (measured on 1M floats).
  using U = detail::UIntOfSize<sizeof(T)>;
  for (int64_t k = 0; k < n; ++k) {
    const U a = std::bit_cast<U>(XS ? x[k] : x[0]), b = std::bit_cast<U>(YS ? y[k] : y[0]);
    const U mask = static_cast<U>(U(0) - static_cast<U>(m[k] != 0));
    o[k] = std::bit_cast<T>(static_cast<U>((a & mask) | (b & static_cast<U>(~mask))));
  }
}
}  // namespace

void where(TensorImpl& out, const TensorImpl& c, const TensorImpl& a, const TensorImpl& b) {
  visit_dtype(out.dtype, [&]<class T>() {
    const TensorImpl* ops_[4] = {&out, &c, &a, &b};
    Loop<4> loop(ops_);
    loop.run([&](char** p, const int64_t* s, int64_t n) {
      constexpr int64_t e = sizeof(T);
      if (s[0] == e && s[1] == 1 && (s[2] == e || s[2] == 0) && (s[3] == e || s[3] == 0)) {
        // Contiguous output and mask, each branch contiguous or a broadcast scalar (relu's
        // and masked_fill's derivatives).
        T* o = reinterpret_cast<T*>(p[0]);
        const uint8_t* m = reinterpret_cast<const uint8_t*>(p[1]);
        const T* x = reinterpret_cast<const T*>(p[2]);
        const T* y = reinterpret_cast<const T*>(p[3]);
        if (s[2] && s[3]) where_select<T, true, true>(o, m, x, y, n);
        else if (s[2]) where_select<T, true, false>(o, m, x, y, n);
        else if (s[3]) where_select<T, false, true>(o, m, x, y, n);
        else where_select<T, false, false>(o, m, x, y, n);
        return;
      }
      for (int64_t k = 0; k < n; ++k)
        st<T>(p[0] + k * s[0], ld<bool>(p[1] + k * s[1]) ? ld<T>(p[2] + k * s[2]) : ld<T>(p[3] + k * s[3]));
    });
  });
}

namespace {
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    // Compared in From's own type: a double 1e-50 is true (through float it rounded to 0).
    if constexpr (is_reduced_v<From>) return static_cast<float>(v) != 0.0f;
    else return v != From(0);
  }
  else if constexpr (is_reduced_v<To>) return To(static_cast<float>(v));
  // f16/bf16 to an integer goes through float and then the saturating cast below (a direct
  // cast of 1000 or inf to i8 was undefined behaviour).
  else if constexpr (is_reduced_v<From>) return convert<To>(static_cast<float>(v));
  else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // Out-of-range float -> int is UB in C++; saturate NaN/overflow like a defined cast.
    if (!(v == v)) return To(0);
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (v <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace

namespace {
template <class To, class From>
void convert_run(To* out, const From* const* in, const int64_t* step, int64_t n, const void*) {
  const From* x = in[0];
  if constexpr (std::is_same_v<To, float> && is_reduced_v<From>) {
    if (step[0] == 1) return widen_run<From>(reinterpret_cast<const char*>(x), out, n);
  } else if constexpr (is_reduced_v<To> && std::is_same_v<From, float>) {
    if (step[0] == 1) return narrow_run<To>(x, reinterpret_cast<char*>(out), n);
  }
  if (step[0] == 1) {
    for (int64_t k = int_float_run(out, x, n); k < n; ++k) out[k] = convert<To>(x[k]);
  } else {
    To v = convert<To>(*x);
    for (int64_t k = 0; k < n; ++k) out[k] = v;
  }
}

/// A copy whose destination runs along a dim the source steps through with a large stride,
/// while another dim of the source is contiguous: x.t().contiguous(), permutes that move the
/// last dim. Walked in 8 x 8 tiles of those two dims, source rows outermost: a tile reads
/// eight source lines, which serve the next tiles of the same rows from L1, and eight lines
/// are what one L1 set holds when the source rows are a multiple of 4 KiB apart (a 1024-float
/// matrix). Measured on 1024^2 f32: element by element along the destination 3.8 ms, 32 x 32
/// tiles 3.2-3.8 ms (16 of their lines share a set), 8 x 8 tiles 0.6 ms; libtorch 0.7-1.2.
/// False when the layout is not of this kind.
template <class U>
bool copy_tiled(const Loop<2>& loop) {
  constexpr int64_t kTile = 8, e = sizeof(U);
  const int last = loop.ndim - 1;
  // A source broadcast along the rows (stride 0) is a fill per row: copy_bytes' own path.
  if (last < 1 || loop.strides[0][last] != e || loop.strides[1][last] == e || loop.strides[1][last] == 0) return false;
  int j = -1;  // the source's contiguous dim
  for (int d = last - 1; d >= 0 && j < 0; --d)
    if (loop.strides[1][d] == e) j = d;
  if (j < 0 || loop.sizes[last] < kTile || loop.sizes[j] < kTile) return false;
  // i: the destination's contiguous dim (source stride si); j: the source's (destination dj).
  const int64_t ni = loop.sizes[last], nj = loop.sizes[j];
  const int64_t dj = loop.strides[0][j] / e, si = loop.strides[1][last] / e;
  const int64_t tiles_i = (ni + kTile - 1) / kTile;
  int64_t outer = 1;
  for (int d = 0; d < last; ++d)
    if (d != j) outer *= loop.sizes[d];
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / (kTile * nj));
  detail::parallel_for(outer * tiles_i, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t o = t / tiles_i;
      const int64_t i0 = t % tiles_i * kTile, wi = std::min(kTile, ni - i0);
      char* dp = loop.base[0];
      const char* sp = loop.base[1];
      for (int d = last - 1; d >= 0; --d) {  // the other dims' position from o
        if (d == j) continue;
        const int64_t at = o % loop.sizes[d];
        o /= loop.sizes[d];
        dp += at * loop.strides[0][d];
        sp += at * loop.strides[1][d];
      }
      U* dst = reinterpret_cast<U*>(dp) + i0;
      const U* src = reinterpret_cast<const U*>(sp) + i0 * si;
      for (int64_t j0 = 0; j0 < nj; j0 += kTile) {
        const int64_t j1 = std::min(nj, j0 + kTile);
        for (int64_t jj = j0; jj < j1; ++jj) {
          U* drow = dst + jj * dj;
          if (wi == kTile) {
            for (int64_t ii = 0; ii < kTile; ++ii) drow[ii] = src[ii * si + jj];
          } else {
            for (int64_t ii = 0; ii < wi; ++ii) drow[ii] = src[ii * si + jj];
          }
        }
      }
    }
  });
  return true;
}

/// A copy whose rows (the innermost dim) are contiguous in both tensors but short: attention
/// heads split or merged (32-float rows), permutes that keep the last dim. Rows are stepped
/// by pointer increments and copied whole, without Loop::run's indirect call per row
/// ((16, 4, 64, 32).transpose(1, 2).contiguous(): 38-41 -> 23-24 us; libtorch 32-41).
/// False for other layouts and for rows long enough that the per-row cost does not show.
template <class U>
bool copy_short_rows(const Loop<2>& loop) {
  constexpr int64_t e = sizeof(U), kMaxRowBytes = 1024;
  const int last = loop.ndim - 1;
  if (last < 1 || loop.strides[0][last] != e || loop.strides[1][last] != e || loop.sizes[last] * e > kMaxRowBytes)
    return false;
  const int64_t width = loop.sizes[last], rows = loop.numel / width, n1 = loop.sizes[last - 1];
  const int64_t ds = loop.strides[0][last - 1], ss = loop.strides[1][last - 1];
  const size_t bytes = static_cast<size_t>(width * e);
  detail::parallel_for(rows, std::max<int64_t>(1, EMBER_GRAIN_SIZE / width), [&](int64_t r0, int64_t r1) {
    int64_t idx[kMaxLoopDims];  // position of row r over dims 0 .. last - 1
    int64_t rem = r0;
    for (int d = last - 1; d >= 0; --d) {
      idx[d] = rem % loop.sizes[d];
      rem /= loop.sizes[d];
    }
    char* dp = nullptr;
    const char* sp = nullptr;
    auto locate = [&] {
      dp = loop.base[0], sp = loop.base[1];
      for (int d = 0; d < last; ++d) dp += idx[d] * loop.strides[0][d], sp += idx[d] * loop.strides[1][d];
    };
    locate();
    for (int64_t r = r0; r < r1; ++r) {
      std::memcpy(dp, sp, bytes);
      if (++idx[last - 1] < n1) {
        dp += ds, sp += ss;
        continue;
      }
      idx[last - 1] = 0;
      for (int d = last - 1; d > 0; --d) {  // carry into the outer dims
        if (++idx[d - 1] < loop.sizes[d - 1]) break;
        idx[d - 1] = 0;
      }
      if (r + 1 < r1) locate();
    }
  });
  return true;
}

/// Same-dtype copies move bytes, so one routine per element size serves every dtype.
template <class U>
void copy_bytes(TensorImpl& dst, const TensorImpl& src) {
  const TensorImpl* ops_[2] = {&dst, &src};
  const Loop<2> loop(ops_);
  if (copy_tiled<U>(loop) || copy_short_rows<U>(loop)) return;
  loop.run([](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(U) && s[1] == sizeof(U)) {
      std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(U));
      return;
    }
    if (s[0] == sizeof(U) && s[1] == 0) {  // a broadcast value (an expanded tensor): a fill
      const U v = ld<U>(p[1]);
      if (v == U(0)) {  // an expanded zero (gradients start from one): memset
        std::memset(p[0], 0, static_cast<size_t>(n) * sizeof(U));
        return;
      }
      for (int64_t k = 0; k < n; ++k) st<U>(p[0] + k * static_cast<int64_t>(sizeof(U)), v);
      return;
    }
    for (int64_t k = 0; k < n; ++k) std::memcpy(p[0] + k * s[0], p[1] + k * s[1], sizeof(U));
  });
}
}  // namespace

void copy(TensorImpl& dst, const TensorImpl& src) {
  if (dst.dtype == src.dtype) {
    switch (itemsize(dst.dtype)) {
      case 1: return copy_bytes<uint8_t>(dst, src);
      case 2: return copy_bytes<uint16_t>(dst, src);
      case 4: return copy_bytes<uint32_t>(dst, src);
      default: return copy_bytes<uint64_t>(dst, src);
    }
  }
  visit_dtype(dst.dtype, [&]<class To>() {
    visit_dtype(src.dtype, [&]<class From>() {
      if constexpr (!std::is_same_v<To, From>) {
        const TensorImpl* ops_[2] = {&dst, &src};
        Loop<2>(ops_).run(Driver<To, From, To, From, 1>{&convert_run<To, From>, nullptr});
      }
    });
  });
}

void fill(TensorImpl& dst, Scalar v) {
  visit_dtype(dst.dtype, [&]<class T>() {
    T value = v.to<T>();
    const TensorImpl* ops_[1] = {&dst};
    Loop<1> loop(ops_);
    // All-zero bits (zeros(), every gradient buffer): memset. Otherwise whole vectors of the
    // value: this file is built at -O2, where GCC leaves a loop with a tail scalar.
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    bool zero = true;
    for (unsigned char b : bytes) zero &= b == 0;
    loop.run([&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T)) {
        auto* o = reinterpret_cast<T*>(p[0]);
        if (zero) {
          std::memset(static_cast<void*>(o), 0, static_cast<size_t>(n) * sizeof(T));
          return;
        }
        int64_t k = 0;
        if constexpr (is_simd_float_v<T>) {
          using B = xsimd::batch<T>;
          const B vb(value);
          for (; k + static_cast<int64_t>(B::size) <= n; k += B::size) vb.store_unaligned(o + k);
        }
        for (; k < n; ++k) o[k] = value;
        return;
      }
      for (int64_t k = 0; k < n; ++k) st<T>(p[0] + k * s[0], value);
    });
  });
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
