// Elementwise kernels: unary, binary, where, copy (with dtype conversion), fill.
// This file is compiled once per instruction set (see kernels_cpu/meson.build); each build
// lives in its own namespace, EMBER_CPU_ARCH, and kernels_cpu/dispatch.cpp picks one at run time.

#include "functors.hpp"
#include "loops.hpp"

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

// ---- unary --------------------------------------------------------------------------------------
template <class T, class F>
void unary_loop(TensorImpl& out, const TensorImpl& x, const F& f) {
  const TensorImpl* ops[2] = {&out, &x};
  Loop<2> loop(ops);
  loop.run([&](char** p, const int64_t* s, int64_t n) {
    char* o = p[0];
    const char* i = p[1];
    if constexpr (is_simd_float_v<T> && F::kSimd) {
      if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
        using B = xsimd::batch<T>;
        constexpr int64_t W = B::size;
        auto* op = reinterpret_cast<T*>(o);
        auto* ip = reinterpret_cast<const T*>(i);
        int64_t k = 0;
        for (; k + W <= n; k += W) f(B::load_unaligned(ip + k)).store_unaligned(op + k);
        for (; k < n; ++k) op[k] = f(ip[k]);
        return;
      }
    }
    if (s[0] == sizeof(T) && s[1] == sizeof(T)) {  // contiguous scalar: let the compiler vectorise
      auto* op = reinterpret_cast<T*>(o);
      auto* ip = reinterpret_cast<const T*>(i);
      for (int64_t k = 0; k < n; ++k) op[k] = static_cast<T>(f(static_cast<compute_t<T>>(ip[k])));
      return;
    }
    for (int64_t k = 0; k < n; ++k)
      st<T>(o + k * s[0], static_cast<T>(f(static_cast<compute_t<T>>(ld<T>(i + k * s[1])))));
  });
}

template <class T, class P>
void predicate_loop(TensorImpl& out, const TensorImpl& x, P pred) {
  const TensorImpl* ops[2] = {&out, &x};
  Loop<2> loop(ops);
  loop.run([&](char** p, const int64_t* s, int64_t n) {
    for (int64_t k = 0; k < n; ++k)
      st<bool>(p[0] + k * s[0], pred(static_cast<compute_t<T>>(ld<T>(p[1] + k * s[1]))));
  });
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
  if constexpr (r == ops::UnaryRule::Float) {
    visit_float(x.dtype, [&]<class T>() { unary_loop<T>(out, x, f); });
  } else if constexpr (Op == ops::UnaryOp::Abs || Op == ops::UnaryOp::Clamp) {
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

template <class T, class F>
void binary_loop(TensorImpl& out, const TensorImpl& a, const TensorImpl& b, const F& f) {
  const TensorImpl* ops[3] = {&out, &a, &b};
  Loop<3> loop(ops);
  loop.run([&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t E = sizeof(T);
    if constexpr (is_simd_float_v<T> && F::kSimd) {
      using B = xsimd::batch<T>;
      constexpr int64_t W = B::size;
      auto* o = reinterpret_cast<T*>(p[0]);
      auto* x = reinterpret_cast<const T*>(p[1]);
      auto* y = reinterpret_cast<const T*>(p[2]);
      if (s[0] == E && s[1] == E && s[2] == E) {
        int64_t k = 0;
        for (; k + W <= n; k += W) f(B::load_unaligned(x + k), B::load_unaligned(y + k)).store_unaligned(o + k);
        for (; k < n; ++k) o[k] = f(x[k], y[k]);
        return;
      }
      if (s[0] == E && s[1] == E && s[2] == 0) {
        int64_t k = 0;
        B yb(*y);
        for (; k + W <= n; k += W) f(B::load_unaligned(x + k), yb).store_unaligned(o + k);
        for (; k < n; ++k) o[k] = f(x[k], *y);
        return;
      }
      if (s[0] == E && s[1] == 0 && s[2] == E) {
        int64_t k = 0;
        B xb(*x);
        for (; k + W <= n; k += W) f(xb, B::load_unaligned(y + k)).store_unaligned(o + k);
        for (; k < n; ++k) o[k] = f(*x, y[k]);
        return;
      }
    }
    if (s[0] == E && s[1] == E && s[2] == E) {
      auto* o = reinterpret_cast<T*>(p[0]);
      auto* x = reinterpret_cast<const T*>(p[1]);
      auto* y = reinterpret_cast<const T*>(p[2]);
      for (int64_t k = 0; k < n; ++k)
        o[k] = static_cast<T>(f(static_cast<compute_t<T>>(x[k]), static_cast<compute_t<T>>(y[k])));
      return;
    }
    for (int64_t k = 0; k < n; ++k)
      st<T>(p[0] + k * s[0], static_cast<T>(f(static_cast<compute_t<T>>(ld<T>(p[1] + k * s[1])),
                                              static_cast<compute_t<T>>(ld<T>(p[2] + k * s[2])))));
  });
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
  } else if constexpr (Op == ops::BinaryOp::Add || Op == ops::BinaryOp::Mul || Op == ops::BinaryOp::Maximum ||
                       Op == ops::BinaryOp::Minimum || Op == ops::BinaryOp::Pow) {
    visit_dtype(a.dtype, [&]<class T>() { binary_loop<T>(out, a, b, f); });
  } else {
    visit_numeric(a.dtype, [&]<class T>() { binary_loop<T>(out, a, b, f); });
  }
}

template <class T>
void compare_loop(ops::BinaryOp op, TensorImpl& out, const TensorImpl& a, const TensorImpl& b) {
  const TensorImpl* ops_[3] = {&out, &a, &b};
  Loop<3> loop(ops_);
  loop.run([&](char** p, const int64_t* s, int64_t n) {
    for (int64_t k = 0; k < n; ++k)
      st<bool>(p[0] + k * s[0], compare<compute_t<T>>(op, static_cast<compute_t<T>>(ld<T>(p[1] + k * s[1])),
                                                      static_cast<compute_t<T>>(ld<T>(p[2] + k * s[2]))));
  });
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
  // Workers set their own flag; integer faults are rare, so re-check serially when asked.
  if (t_integer_fault) EMBER_FAIL("[{}] integer division by zero or negative integer power", ops::name(op));
}

// ---- where, copy, fill ----------------------------------------------------------------------------
void where(TensorImpl& out, const TensorImpl& c, const TensorImpl& a, const TensorImpl& b) {
  visit_dtype(out.dtype, [&]<class T>() {
    const TensorImpl* ops_[4] = {&out, &c, &a, &b};
    Loop<4> loop(ops_);
    loop.run([&](char** p, const int64_t* s, int64_t n) {
      for (int64_t k = 0; k < n; ++k)
        st<T>(p[0] + k * s[0], ld<bool>(p[1] + k * s[1]) ? ld<T>(p[2] + k * s[2]) : ld<T>(p[3] + k * s[3]));
    });
  });
}

namespace {
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) return static_cast<float>(v) != 0.0f || (std::is_integral_v<From> && v != From(0));
  else if constexpr (is_reduced_v<To>) return To(static_cast<float>(v));
  else if constexpr (is_reduced_v<From>) return static_cast<To>(static_cast<float>(v));
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

void copy(TensorImpl& dst, const TensorImpl& src) {
  visit_dtype(dst.dtype, [&]<class To>() {
    visit_dtype(src.dtype, [&]<class From>() {
      const TensorImpl* ops_[2] = {&dst, &src};
      Loop<2> loop(ops_);
      loop.run([&](char** p, const int64_t* s, int64_t n) {
        if constexpr (std::is_same_v<To, From>) {
          if (s[0] == sizeof(To) && s[1] == sizeof(To)) {
            std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(To));
            return;
          }
          for (int64_t k = 0; k < n; ++k) std::memcpy(p[0] + k * s[0], p[1] + k * s[1], sizeof(To));
        } else {
          if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
            auto* o = reinterpret_cast<To*>(p[0]);
            auto* i = reinterpret_cast<const From*>(p[1]);
            for (int64_t k = 0; k < n; ++k) o[k] = convert<To>(i[k]);
            return;
          }
          for (int64_t k = 0; k < n; ++k) st<To>(p[0] + k * s[0], convert<To>(ld<From>(p[1] + k * s[1])));
        }
      });
    });
  });
}

void fill(TensorImpl& dst, Scalar v) {
  visit_dtype(dst.dtype, [&]<class T>() {
    T value = v.to<T>();
    const TensorImpl* ops_[1] = {&dst};
    Loop<1> loop(ops_);
    loop.run([&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T)) {
        auto* o = reinterpret_cast<T*>(p[0]);
        for (int64_t k = 0; k < n; ++k) o[k] = value;
        return;
      }
      for (int64_t k = 0; k < n; ++k) st<T>(p[0] + k * s[0], value);
    });
  });
}

}  // namespace ember::cpu::EMBER_CPU_ARCH
