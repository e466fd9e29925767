#pragma once
/// Window functions for spectral analysis and filter design, as libtorch's: hann_window,
/// hamming_window, blackman_window, bartlett_window and kaiser_window.
///
///   Tensor w = hann_window(512);                      // periodic (for a 512-point FFT frame)
///   Tensor s = kaiser_window(31, false, 8.6, kFloat64);   // symmetric, beta 8.6 (filter design)
///
/// `periodic` (the default, as PyTorch's) gives the first N points of the N + 1 point
/// symmetric window: the frame repeats with period N. A length of 1 gives [1], of 0 an empty
/// tensor. Each value is computed in double and rounded once to the requested floating dtype
/// (f32 by default); PyTorch evaluates the formula in that dtype, so f32 windows may differ from
/// its values by an ulp.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace ember {

namespace detail {
struct KeepWindow {
  template <class T>
  const T& operator()(const T& w) const {
    return w;
  }
};
/// The window of `length` points whose point i is value(i, m) for the symmetric window over
/// i = 0 .. m (m = length - 1, or length when periodic), in f64; `finish` maps that f64
/// tensor (kaiser_window: I0 over it) before it is rounded once to the requested dtype.
template <class P, class F, class Finish = KeepWindow>
BasicTensor<P> window(int64_t length, bool periodic, const TensorOptions& o, const char* op, F&& value,
                      Finish&& finish = {}) {
  EMBER_CHECK(length >= 0, "[{}] the window length must be >= 0, got {}", op, length);
  const DType t = o.dtype_or(kDefaultFloat);
  EMBER_CHECK(is_floating(t), "[{}] needs a floating dtype, got {}", op, t);
  BasicTensor<P> w = empty<P>({length}, TensorOptions(DType::F64));
  double* v = w.template data_ptr<double>();
  const int64_t m = periodic ? length : length - 1;
  for (int64_t i = 0; i < length; ++i) v[i] = length == 1 ? 1.0 : value(static_cast<double>(i), static_cast<double>(m));
  return with_grad_option<P>(BasicTensor<P>(finish(w)).to(o.device_or(kCPU), t), o);
}
/// alpha - beta cos(2 pi i / m): Hann (0.5, 0.5) and Hamming.
template <class P>
BasicTensor<P> raised_cosine(int64_t length, bool periodic, double alpha, double beta, const TensorOptions& o,
                             const char* op) {
  return window<P>(length, periodic, o, op,
                   [&](double i, double m) { return alpha - beta * std::cos(2 * std::numbers::pi * i / m); });
}
}  // namespace detail

/// 0.5 - 0.5 cos(2 pi n / m).
template <class P = DefaultPolicy>
BasicTensor<P> hann_window(int64_t length, bool periodic, TensorOptions o = {}) {
  return detail::raised_cosine<P>(length, periodic, 0.5, 0.5, o, "hann_window");
}
template <class P = DefaultPolicy>
BasicTensor<P> hann_window(int64_t length, TensorOptions o = {}) {
  return hann_window<P>(length, true, o);
}

/// alpha - beta cos(2 pi n / m), alpha 0.54 and beta 0.46 by default.
template <class P = DefaultPolicy>
BasicTensor<P> hamming_window(int64_t length, bool periodic, double alpha, double beta, TensorOptions o = {}) {
  return detail::raised_cosine<P>(length, periodic, alpha, beta, o, "hamming_window");
}
template <class P = DefaultPolicy>
BasicTensor<P> hamming_window(int64_t length, bool periodic, double alpha, TensorOptions o = {}) {
  return hamming_window<P>(length, periodic, alpha, 0.46, o);
}
template <class P = DefaultPolicy>
BasicTensor<P> hamming_window(int64_t length, bool periodic, TensorOptions o = {}) {
  return hamming_window<P>(length, periodic, 0.54, 0.46, o);
}
template <class P = DefaultPolicy>
BasicTensor<P> hamming_window(int64_t length, TensorOptions o = {}) {
  return hamming_window<P>(length, true, 0.54, 0.46, o);
}

/// 0.42 - 0.5 cos(2 pi n / m) + 0.08 cos(4 pi n / m).
template <class P = DefaultPolicy>
BasicTensor<P> blackman_window(int64_t length, bool periodic, TensorOptions o = {}) {
  return detail::window<P>(length, periodic, o, "blackman_window", [](double i, double m) {
    const double a = 2 * std::numbers::pi * i / m;
    return 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
  });
}
template <class P = DefaultPolicy>
BasicTensor<P> blackman_window(int64_t length, TensorOptions o = {}) {
  return blackman_window<P>(length, true, o);
}

/// The triangle 1 - |2n / m - 1|.
template <class P = DefaultPolicy>
BasicTensor<P> bartlett_window(int64_t length, bool periodic, TensorOptions o = {}) {
  return detail::window<P>(length, periodic, o, "bartlett_window",
                           [](double i, double m) { return 1 - std::abs(2 * i / m - 1); });
}
template <class P = DefaultPolicy>
BasicTensor<P> bartlett_window(int64_t length, TensorOptions o = {}) {
  return bartlett_window<P>(length, true, o);
}

/// I0(beta sqrt(1 - (2n / m - 1)^2)) / I0(beta), beta 12 by default (I0: the modified Bessel
/// function of the first kind, order 0, Ember's i0), in f64 and rounded once: a beta past
/// about 700 overflows I0 and the middle is NaN (PyTorch computes in the output dtype: an f32
/// window is NaN there from beta ~ 89). A NaN or infinite beta is refused (PyTorch gives NaN).
template <class P = DefaultPolicy>
BasicTensor<P> kaiser_window(int64_t length, bool periodic, double beta, TensorOptions o = {}) {
  constexpr const char* op = "kaiser_window";
  EMBER_CHECK(std::isfinite(beta), "[{}] beta must be finite, got {}", op, beta);
  beta = std::abs(beta);  // I0 is even: a negative beta gives the same window (PyTorch accepts it too)
  // I0's arguments in f64, then I0 over them at once (length 1: the window is [1]).
  return detail::window<P>(
      length, periodic, o, op,
      [&](double i, double m) {
        const double r = 2 * i / m - 1;
        return beta * std::sqrt(std::max(0.0, 1 - r * r));
      },
      [&](const BasicTensor<P>& args) {
        return length == 1 ? args : args.i0().div(full<P>({}, beta, TensorOptions(DType::F64)).i0());
      });
}
template <class P = DefaultPolicy>
BasicTensor<P> kaiser_window(int64_t length, bool periodic, TensorOptions o = {}) {
  return kaiser_window<P>(length, periodic, 12.0, o);
}
template <class P = DefaultPolicy>
BasicTensor<P> kaiser_window(int64_t length, TensorOptions o = {}) {
  return kaiser_window<P>(length, true, 12.0, o);
}

}  // namespace ember
