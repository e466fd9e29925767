// softmax / log_softmax derivative on the CPU (see include/ember/ops/softmax_backward_op.hpp).
// The tensors are seen as (outer, n, inner) around the softmax dim. With inner = 1 (the last
// dim, the usual case) each row is two vector passes; otherwise W-wide strips of the inner
// dim accumulate their sums down the n steps in registers. Tasks are rows or strips, which
// never share outputs, so the result does not depend on the thread count.

#include <ember/core/device_hooks.hpp>
#include <ember/ops/softmax_backward_op.hpp>
#include <ember/runtime/threading.hpp>

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cmath>

namespace ember::ops {
namespace {

template <class T>
using V = xsimd::batch<T>;

/// One row (inner = 1): dx[0, n) from g and y.
template <class T>
void row(const T* g, const T* y, T* dx, int64_t n, bool log) {
  constexpr int64_t W = V<T>::size;
  V<T> acc(T(0));
  int64_t j = 0;
  if (log) {
    for (; j + W <= n; j += W) acc += V<T>::load_unaligned(g + j);
  } else {
    for (; j + W <= n; j += W) acc = xsimd::fma(V<T>::load_unaligned(g + j), V<T>::load_unaligned(y + j), acc);
  }
  T s = xsimd::hadd(acc);
  for (; j < n; ++j) s += log ? g[j] : g[j] * y[j];
  const V<T> vs(s);
  j = 0;
  if (log) {
    for (; j + W <= n; j += W)
      (V<T>::load_unaligned(g + j) - xsimd::exp(V<T>::load_unaligned(y + j)) * vs).store_unaligned(dx + j);
    for (; j < n; ++j) dx[j] = g[j] - std::exp(y[j]) * s;
  } else {
    for (; j + W <= n; j += W)
      (V<T>::load_unaligned(y + j) * (V<T>::load_unaligned(g + j) - vs)).store_unaligned(dx + j);
    for (; j < n; ++j) dx[j] = y[j] * (g[j] - s);
  }
}

/// `width` (<= W) lanes of the inner dim at g, y, dx (stride `inner` between the n steps).
template <class T>
void strip(const T* g, const T* y, T* dx, int64_t n, int64_t inner, int64_t width, bool log) {
  constexpr int64_t W = V<T>::size;
  if (width == W) {
    V<T> s(T(0));
    for (int64_t k = 0; k < n; ++k) {
      const V<T> gv = V<T>::load_unaligned(g + k * inner);
      s = log ? s + gv : xsimd::fma(gv, V<T>::load_unaligned(y + k * inner), s);
    }
    for (int64_t k = 0; k < n; ++k) {
      const V<T> gv = V<T>::load_unaligned(g + k * inner), yv = V<T>::load_unaligned(y + k * inner);
      (log ? gv - xsimd::exp(yv) * s : yv * (gv - s)).store_unaligned(dx + k * inner);
    }
    return;
  }
  for (int64_t i = 0; i < width; ++i) {
    T s = 0;
    for (int64_t k = 0; k < n; ++k) s += log ? g[k * inner + i] : g[k * inner + i] * y[k * inner + i];
    for (int64_t k = 0; k < n; ++k) {
      const int64_t at = k * inner + i;
      dx[at] = log ? g[at] - std::exp(y[at]) * s : y[at] * (g[at] - s);
    }
  }
}

template <class T>
void run(const SoftmaxBackward& op, const TensorImpl& g, const TensorImpl& y, TensorImpl& dx) {
  const int64_t n = y.sizes[static_cast<size_t>(op.dim)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < op.dim; ++d) outer *= y.sizes[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(op.dim) + 1; d < y.sizes.size(); ++d) inner *= y.sizes[d];
  const T* gp = static_cast<const T*>(g.data());
  const T* yp = static_cast<const T*>(y.data());
  T* dp = static_cast<T*>(dx.data());
  if (n == 0 || outer == 0 || inner == 0) return;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / n);
    detail::parallel_for(outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) row(gp + r * n, yp + r * n, dp + r * n, n, op.log);
    });
    return;
  }
  constexpr int64_t W = V<T>::size;
  const int64_t strips = (inner + W - 1) / W, tasks = outer * strips;
  const int64_t grain = std::max<int64_t>(1, EMBER_GRAIN_SIZE / (n * W));
  detail::parallel_for(tasks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / strips, i0 = t % strips * W, at = o * n * inner + i0;
      strip(gp + at, yp + at, dp + at, n, inner, std::min(W, inner - i0), op.log);
    }
  });
}

}  // namespace

TensorRef softmax_backward_cpu(const SoftmaxBackward& op, const TensorImpl& grad, const TensorImpl& out) {
  const char* name = op.name();
  EMBER_CHECK(grad.sizes == out.sizes, "[{}] gradient of shape {} does not match the output's shape {}", name,
              grad.sizes, out.sizes);
  EMBER_CHECK(grad.dtype == out.dtype && (out.dtype == DType::F32 || out.dtype == DType::F64),
              "[{}] supports f32 and f64 gradient and output of one dtype, got {} and {}", name, grad.dtype,
              out.dtype);
  EMBER_CHECK(op.dim >= 0 && op.dim < static_cast<int64_t>(out.ndim()), "[{}] dim {} is out of range for shape {}",
              name, op.dim, out.sizes);
  TensorRef g = detail::contiguous_on_device(grad, name), y = detail::contiguous_on_device(out, name);
  TensorRef dx = detail::make_tensor(out.sizes, out.dtype, out.device(), name);
  if (out.dtype == DType::F32) run<float>(op, *g, *y, *dx);
  else run<double>(op, *g, *y, *dx);
  return dx;
}

}  // namespace ember::ops
