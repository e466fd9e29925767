// Depthwise 2-D convolution on the CPU (see include/ember/ops/depthwise_conv_ops.hpp): checks
// and outputs; the kernels (threading included) are in kernels_cpu/depthwise_conv.cpp.

#include <ember/core/device_hooks.hpp>
#include <ember/dispatch/kernels.hpp>
#include <ember/ops/depthwise_conv_ops.hpp>

#include <algorithm>

namespace ember::ops {
namespace {

void check(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& w, const char* op) {
  EMBER_CHECK(x.dtype == DType::F32 || x.dtype == DType::F64, "[{}] supports f32 and f64, got {}", op, x.dtype);
  EMBER_CHECK(x.ndim() == 4 && g.nd == 2, "[{}] expects an (N, C, H, W) input, got shape {}", op, x.sizes);
  check_geometry(g, op);  // positive sizes, padding >= 0, all below 2^31 (no overflow in the windows)
  const int64_t c = x.sizes[1];
  EMBER_CHECK(w.ndim() == 4 && w.sizes[0] == c && w.sizes[1] == 1 && w.sizes[2] == g.kernel[0] &&
                  w.sizes[3] == g.kernel[1] && w.dtype == x.dtype,
              "[{}] expects a weight of shape ({}, 1, {}, {}) and dtype {}, got {} ({})", op, c, g.kernel[0],
              g.kernel[1], x.dtype, w.sizes, w.dtype);
  for (int d = 0; d < 2; ++d)  // sizes positive and padding non-negative: check_geometry above
    EMBER_CHECK(g.out_size(d, x.sizes[2 + d]) >= 1,
                "[{}] a window of {} (stride {}, dilation {}) does not fit input size {} with padding {}+{}", op,
                g.kernel[d], g.stride[d], g.dilation[d], x.sizes[2 + d], g.pad_before[d], g.pad_after[d]);
}

}  // namespace

TensorRef depthwise_conv_cpu(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& w, const TensorImpl* b) {
  const char* op = "depthwise_conv";
  check(g, x, w, op);
  EMBER_CHECK(!b || (b->ndim() == 1 && b->sizes[0] == x.sizes[1] && b->dtype == x.dtype),
              "[{}] expects a bias of shape ({}) and dtype {}, got {} ({})", op, x.sizes[1], x.dtype,
              b ? b->sizes : Shape{}, b ? b->dtype : x.dtype);
  TensorRef xc = detail::contiguous_on_device(x, op), wc = detail::contiguous_on_device(w, op);
  TensorRef bc = b ? detail::contiguous_on_device(*b, op) : TensorRef();
  const int64_t sizes[4] = {x.sizes[0], x.sizes[1], g.out_size(0, x.sizes[2]), g.out_size(1, x.sizes[3])};
  TensorRef y = detail::make_tensor(sizes, x.dtype, x.device(), op);
  if (x.numel > 0) {
    detail::Kernels<Cpu>::depthwise_conv(g, *xc, *wc, bc.get(), *y);
  } else if (y->numel > 0) {  // an empty image padded to a non-empty output: the bias, or 0
    const int64_t c = x.sizes[1], plane = y->numel / (x.sizes[0] * c);
    auto fill = [&]<class T>(T*) {
      T* yp = static_cast<T*>(y->data());
      const T* bp = bc ? static_cast<const T*>(bc->data()) : nullptr;
      for (int64_t k = 0; k < x.sizes[0] * c; ++k) std::fill(yp + k * plane, yp + (k + 1) * plane, bp ? bp[k % c] : T(0));
    };
    if (x.dtype == DType::F32) fill(static_cast<float*>(nullptr));
    else fill(static_cast<double*>(nullptr));
  }
  return y;
}

DepthwiseConvGrads depthwise_conv_backward_cpu(const DepthwiseConvBackward& op, const TensorImpl& dy,
                                               const TensorImpl& x, const TensorImpl& w) {
  const char* name = "depthwise_conv_backward";
  check(op.g, x, w, name);
  const int64_t oh = op.g.out_size(0, x.sizes[2]), ow = op.g.out_size(1, x.sizes[3]);
  EMBER_CHECK(dy.ndim() == 4 && dy.sizes[0] == x.sizes[0] && dy.sizes[1] == x.sizes[1] && dy.sizes[2] == oh &&
                  dy.sizes[3] == ow && dy.dtype == x.dtype,
              "[{}] expects a gradient of shape ({}, {}, {}, {}) and dtype {}, got {} ({})", name, x.sizes[0],
              x.sizes[1], oh, ow, x.dtype, dy.sizes, dy.dtype);
  TensorRef dyc = detail::contiguous_on_device(dy, name), xc = detail::contiguous_on_device(x, name);
  TensorRef wc = detail::contiguous_on_device(w, name);
  DepthwiseConvGrads r;
  if (op.need_x) r.dx = detail::make_tensor(x.sizes, x.dtype, x.device(), name);
  if (op.need_w) r.dw = detail::make_tensor(w.sizes, w.dtype, w.device(), name);
  const int64_t bias_size[1] = {x.sizes[1]};
  if (op.need_b) r.db = detail::make_tensor(bias_size, x.dtype, x.device(), name);
  if (x.sizes[0] > 0 && x.sizes[1] > 0) {
    detail::Kernels<Cpu>::depthwise_conv_backward(op.g, *dyc, *xc, *wc, r.dx.get(), r.dw.get(), r.db.get());
  } else {  // no samples: zero weight and bias gradients
    if (r.dw) detail::Kernels<Cpu>::fill(*r.dw, Scalar(0.0));
    if (r.db) detail::Kernels<Cpu>::fill(*r.db, Scalar(0.0));
  }
  return r;
}

}  // namespace ember::ops
