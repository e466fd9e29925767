#pragma once
/// Layer normalisation as one op: the composite form (var_mean, sub, add, rsqrt, two muls and
/// an add, and about twice that many ops backward) makes ~5 passes over the activations each
/// way; this makes two forward (row statistics, then the normalised output) and two backward.
/// Kernels: src/ops/norm.cpp (CPU, f32/f64). The derivative (autograd/derivatives_norm.hpp)
/// uses the fused backward for a plain backward and the composite formula, written with
/// differentiable ops, when the graph of the backward is recorded (create_graph).

#include <ember/ops/descriptors.hpp>
#include <ember/ops/index_ops.hpp>

namespace ember::ops {

/// Rows of `cols` elements (the normalised trailing dims of x, contiguous): y = (x - mean) *
/// rstd [* weight] [+ bias], with rstd = 1 / sqrt(biased var + eps). mean and rstd (one per
/// row: 1-d of x.numel / cols, x's dtype) are kept for the derivative.
struct LayerNormResult {
  TensorRef y, mean, rstd;
};
struct LayerNorm {
  int64_t cols = 1;
  double eps = 1e-5;
  const char* name() const { return "layer_norm"; }
  template <class BL>
  LayerNormResult run(const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias) const;
};

/// The fused derivative: dx, dweight, dbias (each computed only when asked for) from the output
/// gradient and what the forward kept. Runs only inside a plain backward (never recorded).
struct LayerNormGrads {
  TensorRef dx, dweight, dbias;
};
struct LayerNormBackward {
  int64_t cols = 1;
  bool need_x = true, need_weight = false, need_bias = false;
  const char* name() const { return "layer_norm_backward"; }
  template <class BL>
  LayerNormGrads run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& mean, const TensorImpl& rstd,
                     const TensorImpl* weight) const;
};

LayerNormResult layer_norm_cpu(const LayerNorm& op, const TensorImpl& x, const TensorImpl* weight,
                               const TensorImpl* bias);
LayerNormGrads layer_norm_backward_cpu(const LayerNormBackward& op, const TensorImpl& dy, const TensorImpl& x,
                                       const TensorImpl& mean, const TensorImpl& rstd, const TensorImpl* weight);

template <class BL>
LayerNormResult LayerNorm::run(const TensorImpl& x, const TensorImpl* weight, const TensorImpl* bias) const {
  return index_backend<BL>(x.device(), name(), [&] { return layer_norm_cpu(*this, x, weight, bias); });
}
template <class BL>
LayerNormGrads LayerNormBackward::run(const TensorImpl& dy, const TensorImpl& x, const TensorImpl& mean,
                                      const TensorImpl& rstd, const TensorImpl* weight) const {
  return index_backend<BL>(x.device(), name(), [&] { return layer_norm_backward_cpu(*this, dy, x, mean, rstd, weight); });
}

}  // namespace ember::ops
