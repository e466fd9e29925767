// Direct 2-D convolution on the CPU (see include/ember/ops/direct_conv_ops.hpp): checks and
// threading; the kernels are in kernels_cpu/direct_conv.cpp. The forward runs in parallel over
// samples. The backward runs over fixed chunks of samples, each adding its weight and bias
// gradients into its own partial sums, which are added in chunk order at the end
// (ordered_sums.hpp): the same bits for any thread count.

#include <ember/core/device_hooks.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/direct_conv_ops.hpp>
#include <ember/runtime/threading.hpp>

#include "ordered_sums.hpp"

#include <algorithm>

namespace ember::ops {
namespace {

/// Samples per chunk of the backward (fixed, so that the partial sums do not depend on the
/// thread count).
constexpr int64_t kSamplesPerChunk = 4;

void check(const DirectConvGeometry& g, const TensorImpl& x, const TensorImpl& w, const char* op) {
  EMBER_CHECK(g.n >= 0 && g.c >= 1 && g.h >= 1 && g.w >= 1 && g.o >= 1 && g.kh >= 1 && g.kw >= 1 && g.pad_top >= 0 &&
                  g.pad_left >= 0 && g.oh >= 1 && g.ow >= 1 && g.padded_h() >= g.h + g.pad_top &&
                  g.padded_w() >= g.w + g.pad_left,
              "[{}] invalid geometry: input ({}, {}, {}, {}), kernel {}x{}, padding {}x{}, output {}x{}", op, g.n, g.c,
              g.h, g.w, g.kh, g.kw, g.pad_top, g.pad_left, g.oh, g.ow);
  EMBER_CHECK(g.taps() <= 32, "[{}] reads at most 32 inputs per output (channels x kernel elements), got {}", op,
              g.taps());
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[{}] supports f32 and f64, got {}", op, x.dtype);
  EMBER_CHECK(x.ndim() == 4 && x.sizes[0] == g.n && x.sizes[1] == g.c && x.sizes[2] == g.h && x.sizes[3] == g.w,
              "[{}] expects an input of shape ({}, {}, {}, {}), got {}", op, g.n, g.c, g.h, g.w, x.sizes);
  EMBER_CHECK(w.ndim() == 4 && w.sizes[0] == g.o && w.sizes[1] == g.c && w.sizes[2] == g.kh && w.sizes[3] == g.kw &&
                  w.dtype == x.dtype,
              "[{}] expects a weight of shape ({}, {}, {}, {}) and dtype {}, got {} ({})", op, g.o, g.c, g.kh, g.kw,
              x.dtype, w.sizes, w.dtype);
}

TensorRef scratch(const DirectConvGeometry& g, int64_t copies, DType dtype, const char* op) {
  const int64_t size[1] = {copies * (g.padded_sample() + g.kw)};
  return detail::make_tensor(size, dtype, Device::cpu(), op);
}

}  // namespace

TensorRef direct_conv_cpu(const DirectConvGeometry& g, const TensorImpl& x, const TensorImpl& w, const TensorImpl* b) {
  const char* op = "direct_conv";
  check(g, x, w, op);
  EMBER_CHECK(!b || (b->ndim() == 1 && b->sizes[0] == g.o && b->dtype == x.dtype),
              "[{}] expects a bias of shape ({}) and dtype {}, got {} ({})", op, g.o, x.dtype, b ? b->sizes : Shape{},
              b ? b->dtype : x.dtype);
  TensorRef xc = detail::contiguous_on_device(x, op), wc = detail::contiguous_on_device(w, op);
  TensorRef bc = b ? detail::contiguous_on_device(*b, op) : TensorRef();
  const int64_t sizes[4] = {g.n, g.o, g.oh, g.ow};
  TensorRef y = detail::make_tensor(sizes, x.dtype, x.device(), op);
  detail::parallel_for(g.n, 1, [&](int64_t n0, int64_t n1) {
    TensorRef s = scratch(g, 1, x.dtype, op);
    detail::Kernels<Cpu>::direct_conv(g, n0, n1, *xc, *wc, bc.get(), *y, *s);
  });
  return y;
}

DirectConvGrads direct_conv_backward_cpu(const DirectConvBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                         const TensorImpl& w) {
  const DirectConvGeometry& g = op.g;
  const char* name = "direct_conv_backward";
  check(g, x, w, name);
  EMBER_CHECK(dy.ndim() == 4 && dy.sizes[0] == g.n && dy.sizes[1] == g.o && dy.sizes[2] == g.oh &&
                  dy.sizes[3] == g.ow && dy.dtype == x.dtype,
              "[{}] expects a gradient of shape ({}, {}, {}, {}) and dtype {}, got {} ({})", name, g.n, g.o, g.oh,
              g.ow, x.dtype, dy.sizes, dy.dtype);
  TensorRef xc = detail::contiguous_on_device(x, name), wc = detail::contiguous_on_device(w, name),
            dyc = detail::contiguous_on_device(dy, name);
  DirectConvGrads grads;
  if (op.need_x) grads.dx = detail::make_tensor(x.sizes, x.dtype, x.device(), name);
  // Per chunk: its weight gradient (O x taps) then its bias gradient (O), summed afterwards.
  const int64_t chunks = (g.n + kSamplesPerChunk - 1) / kSamplesPerChunk, per_chunk = g.o * (g.taps() + 1);
  const int64_t psize[1] = {std::max<int64_t>(chunks, 1) * per_chunk};
  TensorRef partial = detail::make_tensor(psize, x.dtype, x.device(), name);
  detail::Kernels<Cpu>::fill(*partial, Scalar(0.0));
  detail::parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    TensorRef s = scratch(g, 2, x.dtype, name);
    for (int64_t k = c0; k < c1; ++k) {
      const int64_t n0 = k * kSamplesPerChunk, n1 = std::min(g.n, n0 + kSamplesPerChunk);
      const int64_t dws[2] = {g.o, g.taps()}, dwst[2] = {g.taps(), 1}, dbs[1] = {g.o}, dbst[1] = {1};
      TensorRef dw = detail::make_view(partial->storage, x.dtype, dws, dwst, k * per_chunk);
      TensorRef db = detail::make_view(partial->storage, x.dtype, dbs, dbst, k * per_chunk + g.o * g.taps());
      detail::Kernels<Cpu>::direct_conv_backward(g, n0, n1, *dyc, *xc, *wc, grads.dx.get(), op.need_w ? dw.get() : nullptr,
                                                 op.need_b ? db.get() : nullptr, *s);
    }
  });
  if (op.need_w) grads.dw = sum_in_order(*partial, chunks, per_chunk, 0, w.sizes, name);
  if (op.need_b) grads.db = sum_in_order(*partial, chunks, per_chunk, g.o * g.taps(), Shape{g.o}, name);
  return grads;
}

}  // namespace ember::ops
