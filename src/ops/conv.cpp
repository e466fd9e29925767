// im2col / col2im on the CPU (see include/ember/ops/conv_ops.hpp). One (n, c) plane per task:
// im2col writes each column row (c, tap) in one pass over the output windows; col2im
// accumulates into its own plane, so tasks never write the same element.

#include <ember/ops/conv_ops.hpp>
#include <ember/runtime/threading.hpp>

#include <cmath>

namespace ember::ops {
namespace {

struct Plan {
  int nd;
  int64_t n, c;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
  int64_t in_plane = 1, out_plane = 1, taps = 1;
};

Plan make_plan(const ConvGeometry& g, int64_t n, int64_t c, const std::array<int64_t, 3>& in) {
  Plan p;
  p.nd = g.nd;
  p.n = n, p.c = c;
  for (int d = 0; d < g.nd; ++d) {
    p.in[d] = in[d];
    p.out[d] = g.out_size(d, in[d]);
    p.in_plane *= in[d];
    p.out_plane *= p.out[d];
  }
  p.taps = g.kernel_numel();
  return p;
}

/// Calls f(tap, l, src) for every (tap, window l), src = input offset in the plane or -1 (padding).
template <class F>
void for_each_tap(const ConvGeometry& g, const Plan& p, F&& f) {
  std::array<int64_t, 3> k{}, o{};
  for (int64_t tap = 0; tap < p.taps; ++tap) {
    // tap -> (k0, k1, k2), row-major over the kernel dims
    int64_t r = tap;
    for (int d = p.nd - 1; d >= 0; --d) k[d] = r % g.kernel[d], r /= g.kernel[d];
    int64_t l = 0;
    o = {0, 0, 0};
    for (;;) {
      int64_t src = 0;
      bool inside = true;
      for (int d = 0; d < p.nd; ++d) {
        int64_t i = o[d] * g.stride[d] - g.pad_before[d] + k[d] * g.dilation[d];
        if (i < 0 || i >= p.in[d]) {
          inside = false;
          break;
        }
        src = src * p.in[d] + i;
      }
      f(tap, l, inside ? src : -1);
      ++l;
      int d = p.nd - 1;
      while (d >= 0 && ++o[d] == p.out[d]) o[d--] = 0;
      if (d < 0) break;
    }
  }
}

template <class T>
void im2col_plane(const ConvGeometry& g, const Plan& p, const T* in, T* cols) {
  const T pad = static_cast<T>(g.pad_value);
  for_each_tap(g, p, [&](int64_t tap, int64_t l, int64_t src) { cols[tap * p.out_plane + l] = src >= 0 ? in[src] : pad; });
}

template <class T>
void col2im_plane(const ConvGeometry& g, const Plan& p, const T* cols, T* out) {
  for (int64_t i = 0; i < p.in_plane; ++i) out[i] = T(0);
  for_each_tap(g, p, [&](int64_t tap, int64_t l, int64_t dst) {
    if (dst >= 0) out[dst] += cols[tap * p.out_plane + l];
  });
}

std::array<int64_t, 3> spatial_of(const TensorImpl& x, int nd) {
  std::array<int64_t, 3> s{1, 1, 1};
  for (int d = 0; d < nd; ++d) s[d] = x.sizes[2 + d];
  return s;
}

TensorRef contiguous_of(const TensorImpl& x) {
  if (x.contiguous) return TensorRef::share(const_cast<TensorImpl*>(&x));
  TensorRef c = detail::make_tensor(x.sizes, x.dtype, x.device(), "im2col");
  detail::Kernels<Cpu>::copy(*c, x);
  return c;
}

}  // namespace

void check_geometry(const ConvGeometry& g, const char* op) {
  EMBER_CHECK(g.nd >= 1 && g.nd <= 3, "[{}] supports 1 to 3 spatial dims, got {}", op, g.nd);
  for (int d = 0; d < g.nd; ++d) {
    EMBER_CHECK(g.kernel[d] >= 1 && g.stride[d] >= 1 && g.dilation[d] >= 1,
                "[{}] kernel size, stride and dilation must be positive, got {}, {} and {} in spatial dim {}", op,
                g.kernel[d], g.stride[d], g.dilation[d], d);
    EMBER_CHECK(g.pad_before[d] >= 0 && g.pad_after[d] >= 0, "[{}] padding must be non-negative, got {} and {}", op,
                g.pad_before[d], g.pad_after[d]);
  }
}

TensorRef im2col_cpu(const ConvGeometry& g, const TensorImpl& x) {
  EMBER_CHECK(x.ndim() == g.nd + 2, "[im2col] expects (N, C) + {} spatial dims, got shape {}", g.nd, x.sizes);
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[im2col] supports f32 and f64, got {}", x.dtype);
  Plan p = make_plan(g, x.sizes[0], x.sizes[1], spatial_of(x, g.nd));
  for (int d = 0; d < g.nd; ++d)
    EMBER_CHECK(p.out[d] > 0, "[im2col] a window of {} (dilation {}) does not fit input size {} with padding {}+{}",
                g.kernel[d], g.dilation[d], p.in[d], g.pad_before[d], g.pad_after[d]);
  TensorRef xc = contiguous_of(x);
  const int64_t sizes[3] = {p.n, p.c * p.taps, p.out_plane};
  TensorRef out = detail::make_tensor(sizes, x.dtype, x.device(), "im2col");
  const int64_t planes = p.n * p.c, col_plane = p.taps * p.out_plane;
  auto run = [&]<class T>(T*) {
    const T* in = static_cast<const T*>(xc->data());
    T* cols = static_cast<T*>(out->data());
    detail::parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) im2col_plane(g, p, in + i * p.in_plane, cols + i * col_plane);
    });
  };
  if (x.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return out;
}

TensorRef col2im_cpu(const ConvGeometry& g, const std::array<int64_t, 3>& spatial, const TensorImpl& cols) {
  EMBER_CHECK(cols.ndim() == 3, "[col2im] expects columns of shape (N, C * taps, L), got {}", cols.sizes);
  EMBER_CHECK(cols.dtype == DType::F32 || cols.dtype == DType::F64, "[col2im] supports f32 and f64, got {}",
              cols.dtype);
  int64_t taps = g.kernel_numel();
  EMBER_CHECK(cols.sizes[1] % taps == 0, "[col2im] {} rows are not a multiple of the kernel's {} taps", cols.sizes[1],
              taps);
  Plan p = make_plan(g, cols.sizes[0], cols.sizes[1] / taps, spatial);
  EMBER_CHECK(cols.sizes[2] == p.out_plane,
              "[col2im] columns hold {} windows, but an image of the given size has {}", cols.sizes[2], p.out_plane);
  TensorRef cc = contiguous_of(cols);
  Shape sizes{p.n, p.c};
  for (int d = 0; d < g.nd; ++d) sizes.push_back(spatial[d]);
  TensorRef out = detail::make_tensor(sizes, cols.dtype, cols.device(), "col2im");
  const int64_t planes = p.n * p.c, col_plane = p.taps * p.out_plane;
  auto run = [&]<class T>(T*) {
    const T* in = static_cast<const T*>(cc->data());
    T* img = static_cast<T*>(out->data());
    detail::parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) col2im_plane(g, p, in + i * col_plane, img + i * p.in_plane);
    });
  };
  if (cols.dtype == DType::F32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  return out;
}

}  // namespace ember::ops
