#pragma once
/// Depthwise 2-D convolution: groups == input channels == output channels, each channel
/// convolved with its own kernel (MobileNet's and EfficientNet's 3x3 layers). As im2col +
/// GEMM it is one product per channel with K = kernel taps (9): the column matrix is written
/// and read for a few multiply-adds per element. These kernels read each plane once through
/// a zero-padded copy in cache and write the output once, bias included; the backward reads
/// the output gradient once for all three gradients.
/// Any kernel size, stride, dilation and zero padding; f32/f64 on the CPU. functional_conv.hpp
/// takes it for such convolutions unless ConvAlgorithm::Im2col is forced.
/// Kernels: kernels_cpu/depthwise_conv.cpp; checks: src/ops/depthwise_conv.cpp.

#include <ember/ops/conv_ops.hpp>
#include <ember/ops/index_ops.hpp>

namespace ember::ops {

/// x (N, C, H, W), weight (C, 1, kh, kw), optional bias (C) -> (N, C, OH, OW).
struct DepthwiseConv {
  ConvGeometry g;
  const char* name() const { return "depthwise_conv"; }
  template <class BL>
  TensorRef run(const TensorImpl& x, const TensorImpl& w, const TensorImpl* b) const;
};

/// Gradients of DepthwiseConv for the output gradient dy: dx (when need_x), dw (need_w), db
/// (need_b). Only DepthwiseConv's plain backward calls it.
struct DepthwiseConvGrads {
  TensorRef dx, dw, db;
};
struct DepthwiseConvBackward {
  ConvGeometry g;
  bool need_x = true, need_w = true, need_b = true;
  const char* name() const { return "depthwise_conv_backward"; }
  template <class BL>
  DepthwiseConvGrads run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& w) const;
};

// src/ops/depthwise_conv.cpp
TensorRef depthwise_conv_cpu(const ConvGeometry& g, const TensorImpl& x, const TensorImpl& w, const TensorImpl* b);
DepthwiseConvGrads depthwise_conv_backward_cpu(const DepthwiseConvBackward& op, const TensorImpl& dy,
                                               const TensorImpl& x, const TensorImpl& w);

template <class BL>
TensorRef DepthwiseConv::run(const TensorImpl& x, const TensorImpl& w, const TensorImpl* b) const {
  return index_backend<BL>(x.device(), name(), [&] { return depthwise_conv_cpu(g, x, w, b); });
}
template <class BL>
DepthwiseConvGrads DepthwiseConvBackward::run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& w) const {
  return index_backend<BL>(x.device(), name(), [&] { return depthwise_conv_backward_cpu(*this, dy, x, w); });
}

}  // namespace ember::ops
