#pragma once
/// Direct 2-D convolution for convolutions whose every output reads few inputs (channels x
/// kernel taps <= 32: a network's first layer over 1 or 3 channels). There, im2col + GEMM is
/// bound by memory, not arithmetic: it writes the column matrix, then the product, then the
/// output with the bias, and its backward permutes the gradient and runs a product only 9
/// columns wide. The direct kernels read each sample's (small) input from cache and write
/// the output once, bias included; the backward reads the output gradient once for the
/// weight and bias gradients together.
/// Stride 1, dilation 1, one group, zero padding, f32/f64 on the CPU; functional_conv.hpp
/// takes it for such convolutions under ConvAlgorithm::Auto (or ::Direct).
/// Kernels: kernels_cpu/direct_conv.cpp; checks and threading: src/ops/direct_conv.cpp.

#include <ember/ops/direct_conv_geometry.hpp>
#include <ember/ops/index_ops.hpp>

namespace ember::ops {

/// x (N, C, H, W), weight (O, C, kh, kw), optional bias (O) -> (N, O, OH, OW).
struct DirectConv {
  DirectConvGeometry g;
  const char* name() const { return "direct_conv"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& w, const TensorImpl* b) const;
};

/// Gradients of DirectConv for the given output gradient: dx (when need_x), dw (need_w), db
/// (need_b). dw and db are summed per chunk of samples in a fixed order, so they do not depend
/// on the thread count. Only DirectConv's plain backward calls it.
struct DirectConvGrads {
  TensorRef dx, dw, db;
};
struct DirectConvBackward {
  DirectConvGeometry g;
  bool need_x = true, need_w = true, need_b = true;
  const char* name() const { return "direct_conv_backward"; }
  template <class BL>
  DirectConvGrads run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& w) const;
};

// src/ops/direct_conv.cpp
TensorRef direct_conv_cpu(const DirectConvGeometry& g, const TensorImpl& x, const TensorImpl& w, const TensorImpl* b);
DirectConvGrads direct_conv_backward_cpu(const DirectConvBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                         const TensorImpl& w);

template <class BL>
TensorRef DirectConv::run(const TensorImpl& x, const TensorImpl& w, const TensorImpl* b) const {
  return index_backend<BL>(x.device(), name(), [&] { return direct_conv_cpu(g, x, w, b); });
}
template <class BL>
DirectConvGrads DirectConvBackward::run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& w) const {
  return index_backend<BL>(x.device(), name(), [&] { return direct_conv_backward_cpu(*this, dy, x, w); });
}

}  // namespace ember::ops
